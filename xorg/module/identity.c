/* CaptureShield Xorg module: a client's identity from the kernel (rule identity).
 *
 * A Trust or Daemon entry is a file (st_dev, st_ino), recorded at option parse time; a
 * client is that program only if its /proc/PID/exe is that file AND nothing borrowed it:
 * the file and every directory above it are root's and not writable by others, the
 * process is in the server's mount namespace, no thread is traced, its environment asks
 * the loader for no foreign code (LD_PRELOAD, LD_AUDIT, unsafe LD_LIBRARY_PATH), every
 * executable file mapping is root's and not writable by others (code loaded by other
 * means: a scrubbed LD_PRELOAD, dlopen through a debugger), and no other process holds the
 * client's end of the X connection (a connection handed over by fork or SCM_RIGHTS). */
#include "identity-int.h"

struct cs_ident {
    enum cs_role role;
    dev_t dev;
    ino_t ino;
    char *path;                 /* as configured, resolved (path-only trust, logs) */
};

/* This file's state: the Trust and Daemon entries, DaemonUsers. */
static struct {
    struct cs_ident *idents;
    int nidents;
    uid_t *daemon_uids;
    int ndaemon_uids;
    int daemon_seat;            /* DaemonUsers holds "seat" (default "0,seat") */
    int daemon_root;
} cs_identity_st = { .daemon_seat = 1, .daemon_root = 1 };

const char *
cs_reason_name(enum cs_reason r)
{
    static const char *const names[] = {
        [CS_REASON_NONE] = "none",
        [CS_REASON_INJECTED] = "injected code",
        [CS_REASON_HANDOVER] = "handover",
        [CS_REASON_NAMESPACE] = "namespace",
        [CS_REASON_TRACER] = "tracer",
        [CS_REASON_PATH_OWNER] = "path owner",
        [CS_REASON_DAEMON_ARGV] = "daemon argv",
        [CS_REASON_DAEMON_UID] = "daemon uid",
        [CS_REASON_GONE] = "process gone or unreadable",
        [CS_REASON_EXE_CHANGED] = "exe changed",
        [CS_REASON_TRUST_UID] = "trust uid",
    };

    if ((unsigned) r < sizeof(names) / sizeof(names[0]) && names[r])
        return names[r];
    return "unknown";
}

/* ---- configuration ---- */

void
cs_identity_add(enum cs_role role, const char *path)
{
    struct cs_ident *n;
    struct stat st;

    n = realloc(cs_identity_st.idents, sizeof(*n) * (cs_identity_st.nidents + 1));
    if (!n)
        return;
    cs_identity_st.idents = n;
    n = &cs_identity_st.idents[cs_identity_st.nidents];
    memset(n, 0, sizeof(*n));
    n->role = role;
    n->path = strdup(path);
    if (!n->path)
        return;
    if (stat(path, &st) < 0 || !S_ISREG(st.st_mode)) {
        /* kept for path-only trust (DisableRules identity); never matches a process */
        LogMessageVerb(X_WARNING, 0,
                       "CAPTURESHIELD: %s entry %s is not an existing file: no process matches it\n",
                       role == CS_ROLE_DAEMON ? "Daemon" : "Trust", path);
        n->ino = 0;
    } else {
        n->dev = st.st_dev;
        n->ino = st.st_ino;
        LogMessageVerb(X_INFO, 0, "CAPTURESHIELD: %s program %s is file %lu:%lu\n",
                       role == CS_ROLE_DAEMON ? "daemon" : "trusted", path,
                       (unsigned long) st.st_dev, (unsigned long) st.st_ino);
    }
    cs_identity_st.nidents++;
}

void
cs_identity_daemon_users(const char *list)
{
    char *copy = strdup(list), *save = NULL, *tok;

    if (!copy)
        return;
    cs_identity_st.daemon_seat = 0;
    cs_identity_st.daemon_root = 0;
    for (tok = strtok_r(copy, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
        uid_t *n;
        char *end;
        unsigned long u = strtoul(tok, &end, 10);
        if (!strcmp(tok, "seat")) {
            cs_identity_st.daemon_seat = 1;
            continue;
        }
        if (*tok && *end) {
            struct passwd *pw = getpwnam(tok);
            if (!pw) {
                LogMessageVerb(X_WARNING, 0,
                               "CAPTURESHIELD: DaemonUsers: unknown user \"%s\" ignored\n", tok);
                continue;
            }
            u = pw->pw_uid;
        }
        n = realloc(cs_identity_st.daemon_uids, sizeof(*n) * (cs_identity_st.ndaemon_uids + 1));
        if (!n)
            break;
        cs_identity_st.daemon_uids = n;
        cs_identity_st.daemon_uids[cs_identity_st.ndaemon_uids++] = (uid_t) u;
    }
    free(copy);
}

static int
cs_uid_of(pid_t pid, uid_t *uid)
{
    char path[64], buf[4096], *u;
    unsigned r, e, s, f;

    snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
    if (cs_read_file(path, buf, sizeof(buf)) <= 0 || !(u = strstr(buf, "\nUid:")) ||
        sscanf(u + 5, "%u %u %u %u", &r, &e, &s, &f) != 4 || r != e || r != s || r != f)
        return 0;
    *uid = r;
    return 1;
}

static int
cs_seat_uid(uid_t *uid)
{
    char buf[4096], *a;

    if (cs_read_file("/run/systemd/seats/seat0", buf, sizeof(buf)) <= 0)
        return 0;
    a = strstr(buf, "ACTIVE_UID=");
    if (!a || (a != buf && a[-1] != '\n'))
        return 0;
    *uid = (uid_t) strtoul(a + 11, NULL, 10);
    return 1;
}

static int
cs_daemon_user(uid_t uid)
{
    uid_t seat;
    int i;

    if (cs_identity_st.daemon_root && uid == 0)
        return 1;
    for (i = 0; i < cs_identity_st.ndaemon_uids; i++)
        if (cs_identity_st.daemon_uids[i] == uid)
            return 1;
    return cs_identity_st.daemon_seat && cs_seat_uid(&seat) && seat == uid;
}

/* argv[1] of pid is exactly "watch" */
static int
cs_daemon_argv(pid_t pid)
{
    char path[64], buf[256];
    ssize_t n;
    size_t l0;

    snprintf(path, sizeof(path), "/proc/%d/cmdline", (int) pid);
    if ((n = cs_read_file(path, buf, sizeof(buf))) <= 0)
        return 0;
    l0 = strlen(buf);
    return (ssize_t) (l0 + 1 + 6) <= n && !memcmp(buf + l0 + 1, "watch", 6);
}

/* ---- the verdict ---- */

/* Who `client` is, checked. `v->role` in: CS_ROLE_NONE: look its exe up in the Trust and
 * Daemon entries; CS_ROLE_GRANT: whatever its exe is (a grant: v->dev/ino set to it);
 * otherwise a re-check: the exe must still be v->dev/ino. Returns 1 when trusted; 0 with
 * v->reason CS_REASON_NONE when the exe is simply not a trusted program, or with the
 * reason trust was refused (v->why: details). */
int
cs_identity_check(ClientPtr client, struct cs_verdict *v)
{
    char link[64];
    struct stat st, st2;
    pid_t pid = GetClientPid(client);
    const char *why = NULL;
    ssize_t n;
    int i;

    v->reason = CS_REASON_NONE;
    v->why[0] = '\0';
    v->exe[0] = '\0';
    v->pid = pid;
    if (pid <= 0) {
        if (v->role != CS_ROLE_NONE) {
            v->reason = CS_REASON_GONE;
            snprintf(v->why, sizeof(v->why), "not a local connection");
        }
        return 0;
    }
    snprintf(link, sizeof(link), "/proc/%d/exe", (int) pid);
    n = readlink(link, v->exe, sizeof(v->exe) - 1);
    v->exe[n > 0 ? n : 0] = '\0';
    if (stat(link, &st) < 0) {
        if (v->role != CS_ROLE_NONE)
            v->reason = CS_REASON_GONE;
        return 0;
    }
    if (v->role == CS_ROLE_NONE) {
        for (i = 0; i < cs_identity_st.nidents; i++) {
            struct stat now;
            if (cs_identity_st.idents[i].ino && cs_identity_st.idents[i].dev == st.st_dev &&
                cs_identity_st.idents[i].ino == st.st_ino)
                break;
            /* the entry's path names this file now, in the server's namespace (the program
               was upgraded since the server started); the path's owners are checked below */
            if (stat(cs_identity_st.idents[i].path, &now) == 0 && now.st_dev == st.st_dev &&
                now.st_ino == st.st_ino && !strcmp(v->exe, cs_identity_st.idents[i].path))
                break;
        }
        if (i == cs_identity_st.nidents) {
            /* not a trusted program; one that only bears a Trust path's name is reported */
            for (i = 0; i < cs_identity_st.nidents; i++)
                if (!strcmp(v->exe, cs_identity_st.idents[i].path)) {
                    v->role = cs_identity_st.idents[i].role;
                    v->reason = cs_same_mntns(pid) ? CS_REASON_EXE_CHANGED
                        : CS_REASON_NAMESPACE;
                    snprintf(v->why, sizeof(v->why), "bears the name %s but is another file",
                             cs_identity_st.idents[i].path);
                    break;
                }
            return 0;
        }
        v->role = cs_identity_st.idents[i].role;
        v->dev = st.st_dev;
        v->ino = st.st_ino;
    } else if (v->role == CS_ROLE_GRANT && !v->ino) {
        v->dev = st.st_dev;
        v->ino = st.st_ino;
    } else if (st.st_dev != v->dev || st.st_ino != v->ino) {
        v->reason = CS_REASON_EXE_CHANGED;
        return 0;
    }

    /* the order: the cheap reads first, the /proc scan last */
    if (!cs_same_mntns(pid)) {
        v->reason = CS_REASON_NAMESPACE;
        snprintf(v->why, sizeof(v->why), "another mount namespace");
        return 0;
    }
    if (!cs_root_only(&st, 1) || !v->exe[0] || strstr(v->exe, " (deleted)") ||
        !cs_path_root_only(v->exe, 1)) {
        v->reason = CS_REASON_PATH_OWNER;
        snprintf(v->why, sizeof(v->why), "the program or a directory above it is not root's"
                 " or is writable by others");
        return 0;
    }
    if (!cs_untraced(pid)) {
        v->reason = CS_REASON_TRACER;
        snprintf(v->why, sizeof(v->why), "a thread is traced");
        return 0;
    }
    if (!cs_env_clean(pid, &why)) {
        v->reason = CS_REASON_INJECTED;
        snprintf(v->why, sizeof(v->why), "%s", why);
        return 0;
    }
    {
        char what[128];
        if (!cs_maps_clean(pid, &why, what, sizeof(what))) {
            v->reason = CS_REASON_INJECTED;
            snprintf(v->why, sizeof(v->why), "%s: %s", why, what);
            return 0;
        }
    }
    if (v->role == CS_ROLE_DAEMON && cs_rule_on(CS_RULE_DAEMONROLE)) {
        uid_t uid;
        if (!cs_daemon_argv(pid)) {
            v->reason = CS_REASON_DAEMON_ARGV;
            snprintf(v->why, sizeof(v->why), "the daemon program runs without argv[1] \"watch\"");
            return 0;
        }
        if (!cs_uid_of(pid, &uid) || !cs_daemon_user(uid)) {
            v->reason = CS_REASON_DAEMON_UID;
            snprintf(v->why, sizeof(v->why), "the daemon program runs as a uid not in DaemonUsers");
            return 0;
        }
    }
    if (cs_rule_on(CS_RULE_HANDOVER) && !cs_sole_holder(client, pid, &why)) {
        v->reason = CS_REASON_HANDOVER;
        snprintf(v->why, sizeof(v->why), "%s", why);
        return 0;
    }
    /* a Trust program is the session's, not another user's: run by another uid (its own
     * copy of the compositor, with that program's own logging and debugging features) it
     * is an ordinary client. Checked after the others, so a refusal names what was
     * tampered with first. */
    if (v->role == CS_ROLE_TRUST && cs_rule_on(CS_RULE_TRUSTUSER)) {
        uid_t uid;
        if (!cs_uid_of(pid, &uid) || !cs_daemon_user(uid)) {
            v->reason = CS_REASON_TRUST_UID;
            snprintf(v->why, sizeof(v->why), "the trusted program runs as a uid not in "
                     "DaemonUsers (another user's copy)");
            return 0;
        }
    }
    /* the process did not exec something else meanwhile */
    if (stat(link, &st2) < 0 || st2.st_dev != st.st_dev || st2.st_ino != st.st_ino) {
        v->reason = CS_REASON_EXE_CHANGED;
        return 0;
    }
    return 1;
}

/* Path-only trust (DisableRules identity: trust by path string alone). */
int
cs_identity_path_only(ClientPtr client, struct cs_verdict *v)
{
    char link[64];
    pid_t pid = GetClientPid(client);
    ssize_t n;
    int i;

    v->reason = CS_REASON_NONE;
    v->pid = pid;
    v->exe[0] = '\0';
    if (pid <= 0)
        return 0;
    snprintf(link, sizeof(link), "/proc/%d/exe", (int) pid);
    n = readlink(link, v->exe, sizeof(v->exe) - 1);
    if (n <= 0)
        return 0;
    v->exe[n] = '\0';
    for (i = 0; i < cs_identity_st.nidents; i++)
        if (!strcmp(v->exe, cs_identity_st.idents[i].path)) {
            v->role = cs_identity_st.idents[i].role;
            return 1;
        }
    return 0;
}
