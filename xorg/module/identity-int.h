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

#endif
