/* CaptureShield Xorg module: what the kernel says about a client's process, for its identity
 * (identity.c): files root's alone, mount namespace, tracers, environment, mappings, and
 * who else holds its end of the X connection (sock_diag). */
#include "identity-int.h"

/* ---- reading /proc ---- */

/* Reads up to size-1 bytes of a /proc file; returns the length (-1: unreadable). */
ssize_t
cs_read_file(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    size_t got = 0;
    ssize_t n;

    if (fd < 0)
        return -1;
    while (got < size - 1 && (n = read(fd, buf + got, size - 1 - got)) > 0)
        got += n;
    close(fd);
    buf[got] = '\0';
    return (ssize_t) got;
}

/* root's and writable by root only (strict: no group write at all) */
int
cs_root_only(const struct stat *st, int strict)
{
    if (st->st_uid != 0 || (st->st_mode & S_IWOTH))
        return 0;
    if (st->st_mode & S_IWGRP)
        return !strict && st->st_gid == 0;
    return 1;
}

/* The file at the canonical path `path` and every directory above it are root's and
 * writable by root only. */
int
cs_path_root_only(const char *path, int strict)
{
    char p[PATH_MAX], *slash;
    struct stat st;

    if (strlen(path) >= sizeof(p) || path[0] != '/')
        return 0;
    strcpy(p, path);
    for (;;) {
        if (stat(p[0] ? p : "/", &st) < 0 || !cs_root_only(&st, strict))
            return 0;
        if (!p[0])
            return 1;
        slash = strrchr(p, '/');
        *slash = '\0';
    }
}

int
cs_same_mntns(pid_t pid)
{
    char link[64], a[64], b[64];
    ssize_t na, nb;

    snprintf(link, sizeof(link), "/proc/%d/ns/mnt", (int) pid);
    na = readlink(link, a, sizeof(a) - 1);
    nb = readlink("/proc/self/ns/mnt", b, sizeof(b) - 1);
    return na > 0 && nb > 0 && na == nb && !memcmp(a, b, na);
}

/* No thread of pid is traced. */
int
cs_untraced(pid_t pid)
{
    char path[96], buf[4096], *t;
    struct dirent *de;
    DIR *d;
    int ok = 1, seen = 0;

    snprintf(path, sizeof(path), "/proc/%d/task", (int) pid);
    if (!(d = opendir(path)))
        return 0;
    while (ok && (de = readdir(d))) {
        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%d/task/%.20s/status", (int) pid, de->d_name);
        if (cs_read_file(path, buf, sizeof(buf)) <= 0)
            continue;           /* the thread ended */
        seen++;
        t = strstr(buf, "\nTracerPid:");
        if (!t || atoi(t + 11) != 0)
            ok = 0;
    }
    closedir(d);
    return ok && seen;
}

static int cs_env_entry_clean(const char *e, const char **why);

/* LD_PRELOAD, LD_AUDIT (any value) or an LD_LIBRARY_PATH with an empty or relative entry
 * or a directory not root's in the initial environment. A process that scrubbed its
 * environment after the loader ran still shows the strings here (unsetenv moves pointers,
 * not the strings); one that overwrote them has code of its own mapped: cs_maps_clean. */
int
cs_env_clean(pid_t pid, const char **why)
{
    char path[64], *buf = NULL, *e;
    size_t size = 0, n = 0;
    ssize_t r;
    int fd, ok = 1;

    /* all of it: a variable after megabytes of padding counts as much as the first */
    snprintf(path, sizeof(path), "/proc/%d/environ", (int) pid);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
        *why = "environ unreadable";
        return 0;
    }
    do {
        if (n + 1 >= size) {
            char *nb = size < (64u << 20) ? realloc(buf, size ? size * 2 : 65536) : NULL;
            if (!nb) {
                free(buf);
                close(fd);
                *why = "environ too large";
                return 0;
            }
            buf = nb;
            size = size ? size * 2 : 65536;
        }
        r = read(fd, buf + n, size - 1 - n);
        if (r > 0)
            n += r;
    } while (r > 0);
    close(fd);
    buf[n] = '\0';
    for (e = buf; ok && e < buf + n; e += strlen(e) + 1)
        ok = cs_env_entry_clean(e, why);
    free(buf);
    return ok;
}

/* One NAME=VALUE entry of the environment. */
static int
cs_env_entry_clean(const char *e, const char **why)
{
    if (!strncmp(e, "LD_PRELOAD=", 11) && e[11]) {
        *why = "LD_PRELOAD";
        return 0;
    }
    if (!strncmp(e, "LD_AUDIT=", 9) && e[9]) {
        *why = "LD_AUDIT";
        return 0;
    }
    if (!strncmp(e, "LD_LIBRARY_PATH=", 16) && e[16]) {    /* "" is ignored by ld.so */
        const char *p = e + 16, *q;
        do {
            char dir[PATH_MAX], real[PATH_MAX];
            size_t len;
            q = strchr(p, ':');
            len = q ? (size_t) (q - p) : strlen(p);
            if (len == 0 || p[0] != '/' || len >= sizeof(dir)) {
                *why = "LD_LIBRARY_PATH (empty or relative entry)";
                return 0;
            }
            memcpy(dir, p, len);
            dir[len] = '\0';
            /* a missing directory may be created later by whoever may write its parent */
            if (!realpath(dir, real) || !cs_path_root_only(real, 0)) {
                *why = "LD_LIBRARY_PATH (directory not root's)";
                return 0;
            }
            p = q + 1;
        } while (q);
    }
    return 1;
}

/* Every file-backed executable mapping is root's and not writable by others, and none is
 * of a deleted file (memfd included). Anonymous executable memory is not judged (a bound:
 * see README). The file is stat'ed through /proc/PID/map_files, i.e. the mapped inode
 * itself, whatever its path now names. */
int
cs_maps_clean(pid_t pid, const char **why, char *what, size_t whatlen)
{
    char path[96], line[PATH_MAX + 256];
    FILE *f;
    int ok = 1;

    snprintf(path, sizeof(path), "/proc/%d/maps", (int) pid);
    if (!(f = fopen(path, "re"))) {
        *why = "maps unreadable";
        return 0;
    }
    while (ok && fgets(line, sizeof(line), f)) {
        unsigned long lo, hi, ino;
        char perms[8], *file, *nl;
        struct stat st;
        int off = 0;

        if (sscanf(line, "%lx-%lx %7s %*s %*s %lu %n", &lo, &hi, perms, &ino, &off) < 4 ||
            !off || perms[2] != 'x')
            continue;
        file = line + off;
        if ((nl = strchr(file, '\n')))
            *nl = '\0';
        if (file[0] != '/')
            continue;           /* [vdso], [vsyscall], anonymous */
        snprintf(path, sizeof(path), "/proc/%d/map_files/%lx-%lx", (int) pid, lo, hi);
        if (stat(path, &st) < 0 && (errno != EPERM && errno != EACCES ? 1 : stat(file, &st) < 0))
            st.st_ino = 0;      /* map_files needs CAP_SYS_ADMIN (a rootless server): the
                                   path in our namespace, checked to be the mapped inode */
        if (strstr(file, " (deleted)") || st.st_ino != ino || !cs_root_only(&st, 0)) {
            *why = "executable mapping not root's";
            snprintf(what, whatlen, "%s", file);
            ok = 0;
        }
    }
    fclose(f);
    return ok;
}

/* The inode of the peer of the unix socket with inode `ino` (sock_diag). */
static int
cs_peer_inode(unsigned long ino, unsigned long *peer)
{
    struct {
        struct nlmsghdr nlh;
        struct unix_diag_req r;
    } req;
    union {
        struct nlmsghdr nlh;
        char buf[8192];
    } rep;
    struct sockaddr_nl sa;
    struct nlmsghdr *h;
    ssize_t n;
    int s, found = 0;

    s = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (s < 0)
        return 0;
    memset(&req, 0, sizeof(req));
    req.nlh.nlmsg_len = sizeof(req);
    req.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    req.nlh.nlmsg_flags = NLM_F_REQUEST;
    req.r.sdiag_family = AF_UNIX;
    req.r.udiag_states = ~0U;
    req.r.udiag_ino = ino;
    req.r.udiag_show = UDIAG_SHOW_PEER;
    req.r.udiag_cookie[0] = req.r.udiag_cookie[1] = ~0U;
    memset(&sa, 0, sizeof(sa));
    sa.nl_family = AF_NETLINK;
    /* the kernel answers inside sendto: the receive never waits */
    if (sendto(s, &req, sizeof(req), 0, (struct sockaddr *) &sa, sizeof(sa)) != sizeof(req) ||
        (n = recv(s, &rep, sizeof(rep), MSG_DONTWAIT)) <= 0) {
        close(s);
        return 0;
    }
    for (h = &rep.nlh; NLMSG_OK(h, (size_t) n); h = NLMSG_NEXT(h, n)) {
        struct unix_diag_msg *m;
        struct rtattr *a;
        int len;
        if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY)
            break;
        m = NLMSG_DATA(h);
        if (m->udiag_ino != ino)
            continue;
        len = h->nlmsg_len - NLMSG_LENGTH(sizeof(*m));
        for (a = (struct rtattr *) (m + 1); RTA_OK(a, len); a = RTA_NEXT(a, len))
            if (a->rta_type == UNIX_DIAG_PEER && RTA_PAYLOAD(a) >= sizeof(uint32_t)) {
                *peer = *(uint32_t *) RTA_DATA(a);
                found = *peer != 0;
            }
    }
    close(s);
    return found;
}

/* Does process `pid` hold an fd naming `target` ("socket:[N]")? */
static int
cs_proc_holds(const char *pid, const char *target)
{
    char path[64], link[64];
    struct dirent *de;
    ssize_t n;
    size_t tl = strlen(target);
    DIR *d;
    int fd, held = 0;

    snprintf(path, sizeof(path), "/proc/%.20s/fd", pid);
    if ((fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        return 0;
    if (!(d = fdopendir(fd))) {
        close(fd);
        return 0;
    }
    while (!held && (de = readdir(d))) {
        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        n = readlinkat(fd, de->d_name, link, sizeof(link) - 1);
        held = n == (ssize_t) tl && !memcmp(link, target, tl);
    }
    closedir(d);
    return held;
}

/* The client's end of the connection is held by `pid` (its threads share its fds) and by
 * no other process. */
int
cs_sole_holder(ClientPtr client, pid_t pid, const char **why)
{
    char target[48], me[24];
    unsigned long peer = 0;
    struct stat st;
    struct dirent *de;
    int fd = GetClientFd(client), other = 0;
    DIR *d;

    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode) ||
        !cs_peer_inode((unsigned long) st.st_ino, &peer)) {
        *why = "connection's peer socket unknown";
        return 0;
    }
    snprintf(target, sizeof(target), "socket:[%lu]", peer);
    snprintf(me, sizeof(me), "%d", (int) pid);
    if (!cs_proc_holds(me, target)) {
        *why = "the connecting process no longer holds the connection";
        return 0;
    }
    if (!(d = opendir("/proc"))) {
        *why = "/proc unreadable";
        return 0;
    }
    while (!other && (de = readdir(d))) {
        if (de->d_name[0] < '0' || de->d_name[0] > '9' || !strcmp(de->d_name, me))
            continue;
        other = cs_proc_holds(de->d_name, target);
        if (other)
            snprintf(target, sizeof(target), "pid %.20s holds it too", de->d_name);
    }
    closedir(d);
    if (other) {
        static char msg[64];
        snprintf(msg, sizeof(msg), "%s", target);
        *why = msg;
        return 0;
    }
    return 1;
}
