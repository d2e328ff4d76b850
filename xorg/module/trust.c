/* CaptureShield Xorg module: who is trusted (server, admin-listed programs, run-time grants). */
#include "cs.h"
#include "client.h"
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


/* A trusted connection is re-checked (identity.c: the program, injected code, tracer, sole
 * holder of the connection) when its trust is used and the last check is older than this.
 * One check costs a scan of /proc/PID/fd of every process: 4.5-10 ms with 140 processes
 * (measured here), so at most 1 % of a core for a trusted client that reads all the time. */
#define CS_RECHECK_MS 1000

DevPrivateKeyRec cs_client_key_rec;

static int cs_reporting;          /* a refusal is being reported: no nested re-checks */
static OsTimerPtr cs_sweep_timer;  /* RECORD contexts of a client that lost trust end */

static CARD32
cs_sweep_later(OsTimerPtr timer, CARD32 now, void *arg)
{
    (void) timer;
    (void) now;
    (void) arg;
    cs_record_sweep();
    return 0;
}

/* Trust refused or lost: logged once per connection, reported to the daemon (kind 7,
 * drawable = the reason) */
static void
cs_refuse(ClientPtr client, struct cs_client *st, const struct cs_verdict *v, const char *when)
{
    int was = st->exe_trusted || st->granted;

    st->exe_trusted = 0;
    st->granted = 0;
    if (was) {  /* its RECORD contexts end too, outside this request (the sweep re-checks
                   trust itself); its windows stop covering under a compositor */
        cs_sweep_timer = TimerSet(cs_sweep_timer, 0, 1, cs_sweep_later, NULL);
        cs_mark_dirty();
    }
    if (st->refused)
        return;
    st->refused = 1;
    LogMessageVerb(X_WARNING, 0,
                   "CAPTURESHIELD: client %d (pid %d, %s) %s trust (%s): %s%s%s\n",
                   client->index, (int) v->pid, v->exe[0] ? v->exe : "?",
                   was ? "LOSES" : "refused", when, cs_reason_name(v->reason),
                   v->why[0] ? ": " : "", v->why);
    if (!cs_reporting) {
        cs_reporting = 1;
        cs_report(client, (XID) v->reason, CS_KIND_TRUST);
        cs_reporting = 0;
    }
}

static void
cs_identify(ClientPtr client, struct cs_client *st)
{
    struct cs_verdict v;
    int ok;

    st->identity_known = 1;
    memset(&v, 0, sizeof(v));
    if (!cs_rule_on(CS_RULE_IDENTITY))
        ok = cs_identity_path_only(client, &v);
    else
        ok = cs_identity_check(client, &v);
    if (ok) {
        st->exe_trusted = 1;
        st->role = v.role;
        st->dev = v.dev;
        st->ino = v.ino;
        st->checked_ms = GetTimeInMillis();
        st->first_use = 1;
        cs_mark_dirty();        /* its windows cover under a compositor (area.c) */
        LogMessageVerb(X_INFO, 0,
                       "CAPTURESHIELD: client %d (pid %d, %s) is trusted (%s)\n",
                       client->index, (int) v.pid, v.exe,
                       v.role == CS_ROLE_DAEMON ? "Daemon, watch" : "Trust list");
    } else if (v.reason != CS_REASON_NONE)
        cs_refuse(client, st, &v, v.role == CS_ROLE_DAEMON ? "Daemon program" : "Trust list");
}

/* Trust by identity (Trust list, Daemon, grant) still holds: re-checked when older than
 * CS_RECHECK_MS. A failed re-check ends the connection's trust for good. */
static int
cs_still_trusted(ClientPtr client, struct cs_client *st)
{
    struct cs_verdict v;
    CARD32 now;

    if (!cs_rule_on(CS_RULE_IDENTITY) || !cs_rule_on(CS_RULE_HANDOVER) || cs_reporting ||
        client->clientGone)
        return 1;
    now = GetTimeInMillis();
    /* the connection's first own request that uses its trust re-checks at once: a socket
       sent in flight (SCM_RIGHTS) before the connection was identified is held by its
       receiver by the time the receiver sends on it */
    if (st->first_use && GetCurrentClient() == client)
        st->first_use = 0;
    else if ((CARD32) (now - st->checked_ms) < CS_RECHECK_MS)
        return 1;
    memset(&v, 0, sizeof(v));
    v.role = st->role;
    v.dev = st->dev;
    v.ino = st->ino;
    {
        struct timespec t0, t1;
        int ok;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        ok = cs_identity_check(client, &v);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        LogMessageVerb(X_INFO, 7, "CAPTURESHIELD: client %d re-checked in %ld us\n",
                       client->index, (long) ((t1.tv_sec - t0.tv_sec) * 1000000 +
                                              (t1.tv_nsec - t0.tv_nsec) / 1000));
        if (ok) {
            st->checked_ms = now;
            return 1;
        }
    }
    cs_refuse(client, st, &v, "re-check");
    return 0;
}

enum cs_trust
cs_client_trust(ClientPtr client)
{
    struct cs_client *st;

    if (!client || client == serverClient || client->index == 0)
        return CS_TRUST_SERVER;
    st = cs_client_state(client);
    if (st->granted)
        return cs_still_trusted(client, st) ? CS_TRUST_GRANTED : CS_TRUST_NONE;
    if (!st->identity_known)
        cs_identify(client, st);
    if (st->exe_trusted && cs_still_trusted(client, st))
        return CS_TRUST_EXE;
    return CS_TRUST_NONE;
}

int
cs_client_trusted_strict(ClientPtr client)
{
    struct cs_client *st;

    if (!client || client == serverClient || client->index == 0)
        return 1;
    st = cs_client_state(client);
    if (!st->identity_known)
        cs_identify(client, st);
    return st->exe_trusted && !st->granted && cs_still_trusted(client, st);
}

int
cs_grant(ClientPtr target, Bool on)
{
    struct cs_client *st;

    if (!target || target == serverClient || target->clientGone)
        return BadValue;
    st = cs_client_state(target);
    if (on && cs_rule_on(CS_RULE_IDENTITY)) {
        /* the grantee passes the same kernel checks as a Trust program (its own program,
           whatever it is): no injected code, tracer, other namespace, handed-over socket */
        struct cs_verdict v;
        memset(&v, 0, sizeof(v));
        v.role = CS_ROLE_GRANT;
        if (st->refused || !cs_identity_check(target, &v)) {
            if (st->refused && v.reason == CS_REASON_NONE)
                snprintf(v.why, sizeof(v.why), "trust was refused earlier");
            else
                st->refused = 0;        /* log and report this refusal too */
            cs_refuse(target, st, &v, "grant");
            return BadAccess;
        }
        if (!st->exe_trusted) {
            st->role = CS_ROLE_GRANT;
            st->dev = v.dev;
            st->ino = v.ino;
        }
        st->checked_ms = GetTimeInMillis();
    }
    if (st->granted != (on ? 1 : 0))
        cs_mark_dirty();        /* its windows cover, or stop covering, under a compositor */
    st->granted = on ? 1 : 0;
    if (!on)
        cs_record_sweep();      /* its RECORD contexts end if a window is secure */
    LogMessageVerb(X_INFO, 0, "CAPTURESHIELD: client %d %s\n", target->index,
                   on ? "granted trust" : "grant revoked");
    return Success;
}

void
cs_note_secure_owner(WindowPtr win, int delta)
{
    int idx = CLIENT_ID(win->drawable.id);

    if (idx > 0 && idx < currentMaxClients && clients[idx])
        cs_client_state(clients[idx])->owned_secure += delta;
}

void
cs_set_event_mask(ClientPtr client, CARD32 mask)
{
    cs_client_state(client)->event_mask = mask;
}

CARD32
cs_event_mask(ClientPtr client)
{
    if (!client || client == serverClient || client->clientGone)
        return 0;
    return cs_client_state(client)->event_mask;
}

void
cs_note_redirect(ClientPtr client, WindowPtr win)
{
    struct cs_client *st;

    if (cs_client_trusted(client))
        return;
    st = cs_client_state(client);
    if (st->redirect_logged)
        return;
    st->redirect_logged = 1;
    LogMessageVerb(X_WARNING, 0,
                   "CAPTURESHIELD: untrusted client %d (pid %d) redirects windows (window 0x%lx):"
                   " if it is the compositor, trust it or the user stops seeing secure windows\n",
                   client->index, (int) GetClientPid(client),
                   (unsigned long) win->drawable.id);
}

static void
cs_client_state_cb(CallbackListPtr *list, void *data, void *call)
{
    NewClientInfoRec *info = call;
    ClientPtr client = info->client;
    struct cs_client *st;

    (void) list;
    (void) data;
    st = cs_client_state(client);
    switch (client->clientState) {
    case ClientStateRunning:
        /* identify now: the PID and /proc entry are surest while the client is fresh */
        if (!st->identity_known)
            cs_identify(client, st);
        break;
    case ClientStateGone:
    case ClientStateRetained:
        if (st->granted)
            LogMessageVerb(X_INFO, 0, "CAPTURESHIELD: client %d gone, its grant ends\n",
                           client->index);
        memset(st, 0, sizeof(*st));
        break;
    default:
        break;
    }
}

static void
cs_trust_close(void)
{
    TimerFree(cs_sweep_timer);
    cs_sweep_timer = NULL;
}

Bool
cs_trust_init(void)
{
    cs_sweep_timer = NULL;
    cs_reporting = 0;
    if (!dixRegisterPrivateKey(&cs_client_key_rec, PRIVATE_CLIENT, sizeof(struct cs_client)))
        return FALSE;
    return cs_on_close(cs_trust_close) &&
        cs_add_callback(&ClientStateCallback, cs_client_state_cb, NULL);
}

/* Whether a censored read by `client`'s current request is still to be reported (GetImage
 * reads in strips: one report per request). Kept per connection, as client privates are
 * zeroed for each new one. A static "last client and sequence" was fooled by the next
 * client that got the same ClientPtr and sent its GetImage at the same sequence number,
 * as every run of the same tool does: that read went unreported. */
int
cs_report_once(ClientPtr client)
{
    struct cs_client *st = cs_client_state(client);
    unsigned long tag = client->sequence + 1;  /* 0: nothing reported on this connection */

    if (st->reported_seq == tag)
        return 0;
    st->reported_seq = tag;
    return 1;
}
