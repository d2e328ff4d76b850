/* CaptureShield Xorg module: declarations internal to the module, shared by the files of
 * client identity (identity.c, process.c; not part of cs.h). */
#ifndef CAPTURESHIELD_IDENTITY_INT_H
#define CAPTURESHIELD_IDENTITY_INT_H

#include "cs.h"
#include "client.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>

/* process.c: what /proc and sock_diag say about a client's process, for identity.c */
ssize_t cs_read_file(const char *path, char *buf, size_t size);
int cs_root_only(const struct stat *st, int strict);
int cs_path_root_only(const char *path, int strict);
int cs_same_mntns(pid_t pid);
int cs_untraced(pid_t pid);
int cs_env_clean(pid_t pid, const char **why);
int cs_maps_clean(pid_t pid, const char **why, char *what, size_t whatlen);
int cs_sole_holder(ClientPtr client, pid_t pid, const char **why);

#endif
