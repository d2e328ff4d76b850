/* CaptureShield Xorg module: who is trusted (server, admin-listed programs, run-time grants). */
#include "cs.h"
#include "client.h"
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Per X client state. Client privates are zeroed for every new connection, so a grant,
 * a selected event mask or a cached identity never outlives the X client it belongs to,
 * whatever PID or resource base a later client gets. */
struct cs_client {
    unsigned char identity_known;
    unsigned char exe_trusted;
    unsigned char granted;
    unsigned char redirect_logged;
    int owned_secure;           /* secure windows this client owns */
    CARD32 event_mask;
    unsigned long reported_seq; /* cs_report_once: sequence + 1 of the last reported request */
};

static DevPrivateKeyRec cs_client_key_rec;

static struct cs_client *
cs_client_state(ClientPtr client)
{
    return dixLookupPrivate(&client->devPrivates, &cs_client_key_rec);
}

static void
cs_identify(ClientPtr client, struct cs_client *st)
{
    char link[64], exe[PATH_MAX];
    pid_t pid;
    ssize_t n;
    int i;

    st->identity_known = 1;
    pid = GetClientPid(client);
    if (pid <= 0)
        return;                 /* not a local connection: no identity, not trusted */
    snprintf(link, sizeof(link), "/proc/%d/exe", (int) pid);
    n = readlink(link, exe, sizeof(exe) - 1);
    if (n <= 0)
        return;
    exe[n] = '\0';
    for (i = 0; i < cs_cfg.ntrust; i++)
        if (!strcmp(exe, cs_cfg.trust[i])) {
            st->exe_trusted = 1;
            LogMessageVerb(X_INFO, 0,
                           "CAPTURESHIELD: client %d (pid %d, %s) is trusted (Trust list)\n",
                           client->index, (int) pid, exe);
            return;
        }
}

enum cs_trust
cs_client_trust(ClientPtr client)
{
    struct cs_client *st;

    if (!client || client == serverClient || client->index == 0)
        return CS_TRUST_SERVER;
    st = cs_client_state(client);
    if (st->granted)
        return CS_TRUST_GRANTED;
    if (!st->identity_known)
        cs_identify(client, st);
    return st->exe_trusted ? CS_TRUST_EXE : CS_TRUST_NONE;
}

int
cs_client_trusted(ClientPtr client)
{
    return cs_client_trust(client) != CS_TRUST_NONE;
}

int
cs_client_trusted_strict(ClientPtr client)
{
    enum cs_trust t;

    if (!client || client == serverClient || client->index == 0)
        return 1;
    if (!cs_client_state(client)->identity_known)
        cs_identify(client, cs_client_state(client));
    t = cs_client_state(client)->exe_trusted ? CS_TRUST_EXE : CS_TRUST_NONE;
    return t != CS_TRUST_NONE;
}

int
cs_grant(ClientPtr target, Bool on)
{
    if (!target || target == serverClient || target->clientGone)
        return BadValue;
    cs_client_state(target)->granted = on ? 1 : 0;
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

int
cs_client_owns_secure(ClientPtr client)
{
    if (!client || client == serverClient)
        return 0;
    return cs_client_state(client)->owned_secure > 0;
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

Bool
cs_trust_init(void)
{
    if (!dixRegisterPrivateKey(&cs_client_key_rec, PRIVATE_CLIENT, sizeof(struct cs_client)))
        return FALSE;
    return cs_add_callback(&ClientStateCallback, cs_client_state_cb, NULL);
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
