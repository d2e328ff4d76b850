/* CaptureShield Xorg module: the xorg.conf options Mode, Trust, Daemon, DaemonUsers, TrailMs and
 * (tests only) DisableRules; the test options FailInit and FailAlloc are read in wrap.c. */
#include "cs.h"
#include <string.h>
#include <stdlib.h>
#include <limits.h>

/* From xf86Opt.h (not includable without the whole xf86 DDX header set). */
extern char *xf86FindOptionValue(void *options, const char *name);

static const struct {
    const char *name;
    unsigned long long bit;
} cs_rule_names[] = {
    {"getimage", CS_RULE_GETIMAGE}, {"copyarea", CS_RULE_COPYAREA},
    {"render", CS_RULE_RENDER}, {"namewindowpixmap", CS_RULE_NAMEPIXMAP},
    {"pixmap", CS_RULE_PIXMAP}, {"forcedbg", CS_RULE_FORCEDBG},
    {"property", CS_RULE_PROPERTY}, {"dri", CS_RULE_DRI}, {"daemon", CS_RULE_DAEMON},
    {"dbe", CS_RULE_DBE}, {"frame", CS_RULE_FRAME}, {"title", CS_RULE_TITLE},
    {"overlay", CS_RULE_OVERLAY},
    {"identity", CS_RULE_IDENTITY}, {"handover", CS_RULE_HANDOVER},
    {"daemonrole", CS_RULE_DAEMONROLE}, {"trustuser", CS_RULE_TRUSTUSER},
    {"opacity", CS_RULE_OPACITY}, {"keymap", CS_RULE_KEYMAP},
    {"wmfocus", CS_RULE_WMFOCUS}, {"pointer", CS_RULE_POINTER},
    {"damage", CS_RULE_DAMAGE}, {"pending", CS_RULE_PENDING},
    {"views", CS_RULE_VIEWS}, {"modifiers", CS_RULE_MODIFIERS},
    {"record", CS_RULE_RECORD}, {"properties", CS_RULE_PROPS}, {"wmtitle", CS_RULE_WMTITLE},
    {"input", CS_RULE_INPUT},
    {"ownsecure", CS_RULE_OWNSECURE}, {"resources", CS_RULE_RESOURCES},
    {"stale", CS_RULE_STALE}, {"taint", CS_RULE_TAINT},
    {"geometry", CS_RULE_GEOMETRY},
    {"blankfirst", CS_RULE_BLANKFIRST},
    {"filter", CS_RULE_FILTER},
};

const char *
cs_mode_name(void)
{
    return cs_cfg.mode == CS_MODE_DENY ? "deny" : "censor";
}

static void
parse_trust(const char *list)
{
    char *copy = strdup(list), *save = NULL, *tok;

    if (!copy)
        return;
    for (tok = strtok_r(copy, ":", &save); tok; tok = strtok_r(NULL, ":", &save)) {
        char **n, real[PATH_MAX];
        if (tok[0] != '/') {
            LogMessageVerb(X_WARNING, 0,
                           "CAPTURESHIELD: ignoring Trust entry \"%s\" (not an absolute path)\n",
                           tok);
            continue;
        }
        n = realloc(cs_cfg.trust, sizeof(char *) * (cs_cfg.ntrust + 1));
        if (!n)
            break;
        cs_cfg.trust = n;
        /* /proc/PID/exe is reported resolved: resolve symlinks in the entry too */
        if (realpath(tok, real)) {
            if (strcmp(real, tok))
                LogMessageVerb(X_INFO, 0, "CAPTURESHIELD: Trust entry %s resolves to %s\n",
                               tok, real);
            tok = real;
        }
        cs_cfg.trust[cs_cfg.ntrust++] = strdup(tok);
        LogMessageVerb(X_INFO, 0, "CAPTURESHIELD: trusted program: %s\n", tok);
        cs_identity_add(CS_ROLE_TRUST, tok);    /* identity.c: its (st_dev, st_ino) */
    }
    free(copy);
}

/* Option "Daemon": the daemon's program (shieldctl), trusted only as "watch" run by one of
 * Option "DaemonUsers" (identity.c) */
static void
parse_daemon(const char *list)
{
    char *copy = strdup(list), *save = NULL, *tok;

    if (!copy)
        return;
    for (tok = strtok_r(copy, ":", &save); tok; tok = strtok_r(NULL, ":", &save)) {
        char real[PATH_MAX];
        if (tok[0] != '/') {
            LogMessageVerb(X_WARNING, 0,
                           "CAPTURESHIELD: ignoring Daemon entry \"%s\" (not an absolute path)\n",
                           tok);
            continue;
        }
        cs_identity_add(CS_ROLE_DAEMON, realpath(tok, real) ? real : tok);
    }
    free(copy);
}

static void
parse_disabled(const char *list)
{
    char *copy = strdup(list), *save = NULL, *tok;
    size_t i;

    if (!copy)
        return;
    for (tok = strtok_r(copy, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
        for (i = 0; i < sizeof(cs_rule_names) / sizeof(cs_rule_names[0]); i++)
            if (!strcasecmp(tok, cs_rule_names[i].name))
                cs_cfg.disabled |= cs_rule_names[i].bit;
    }
    free(copy);
}

void
cs_parse_options(void *opts)
{
    const char *v;

    cs_cfg.mode = CS_MODE_CENSOR;
    cs_cfg.trail_ms = 1000;
    if (!opts)
        return;
    v = xf86FindOptionValue(opts, "TrailMs");
    if (v) {
        char *end;
        long ms = strtol(v, &end, 10);
        if (*v && !*end && ms >= 0 && ms <= 60000)
            cs_cfg.trail_ms = (int) ms;
        else
            LogMessageVerb(X_WARNING, 0,
                           "CAPTURESHIELD: TrailMs \"%s\" is not 0..60000, using 1000\n", v);
    }
    v = xf86FindOptionValue(opts, "Mode");
    if (v && !strcasecmp(v, "deny"))
        cs_cfg.mode = CS_MODE_DENY;
    else if (v && strcasecmp(v, "censor"))
        LogMessageVerb(X_WARNING, 0,
                       "CAPTURESHIELD: unknown Mode \"%s\", using censor\n", v);
    v = xf86FindOptionValue(opts, "Trust");
    if (v)
        parse_trust(v);
    v = xf86FindOptionValue(opts, "Daemon");
    if (v)
        parse_daemon(v);
    v = xf86FindOptionValue(opts, "DaemonUsers");
    if (v)
        cs_identity_daemon_users(v);
    v = xf86FindOptionValue(opts, "DisableRules");
    if (v)
        parse_disabled(v);
}
