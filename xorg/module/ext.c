/* CaptureShield Xorg module: the CAPTURESHIELD extension requests (version, grants, events). */
#include "cs.h"
#include <string.h>
#include "../include/captureshieldproto.h"

static int cs_event_base;

static void
cs_swap_event(xEvent *from, xEvent *to)
{
    xCaptureShieldNotifyEvent *f = (xCaptureShieldNotifyEvent *) from;
    xCaptureShieldNotifyEvent *t = (xCaptureShieldNotifyEvent *) to;

    *t = *f;
    swaps(&t->sequenceNumber);
    swapl(&t->reader);
    swapl(&t->drawable);
    swapl(&t->time);
    swaps(&t->requestMinor);
    swapl(&t->pid);
}

/* One CaptureNotify to every trusted client that selected `mask`, except `skip`. `who` is
 * the client the event is about (reader or window owner; NULL: none), `req` the client
 * whose request caused it. */
static void
cs_notify(CARD32 mask, ClientPtr skip, int kind, ClientPtr who, XID drawable, ClientPtr req)
{
    xCaptureShieldNotifyEvent ev;
    int i;

    if (!cs_event_base)
        return;
    for (i = 1; i < currentMaxClients; i++) {
        ClientPtr c = clients[i];
        if (!c || c == skip || !(cs_event_mask(c) & mask) || !cs_client_trusted(c))
            continue;
        memset(&ev, 0, sizeof(ev));
        ev.type = cs_event_base + CaptureShieldNotify;
        ev.kind = kind;
        ev.sequenceNumber = c->sequence;
        ev.reader = who ? who->clientAsMask : 0;
        ev.drawable = drawable;
        ev.time = GetTimeInMillis();
        if (req) {
            ev.requestMajor = req->majorOp;
            ev.requestMinor = req->minorOp;
        }
        /* `who` is alive now: the daemon can read its /proc entry before a short-lived
           tool exits */
        ev.pid = who && GetClientPid(who) > 0 ? (CARD32) GetClientPid(who) : 0;
        WriteEventsToClient(c, 1, (xEvent *) &ev);
    }
}

void
cs_report(ClientPtr reader, XID drawable, int kind)
{
    cs_notify(CaptureShieldNotifyMask, reader, kind, reader, drawable, reader);
}

/* A window's tag was written (its app tag or the policy tag, valid or not) or it stopped
 * being secure: tell the trusted listeners that selected CaptureShieldSecureMask. Tags are
 * written rarely (once per window), so a daemon whose policy has no rules about windows
 * learns every tagged window from these events instead of having every window's events
 * delivered to it. */
void
cs_report_secure(WindowPtr win)
{
    cs_notify(CaptureShieldSecureMask, NULL, CaptureShieldKindSecure,
              clients[CLIENT_ID(win->drawable.id)], win->drawable.id, GetCurrentClient());
}

static int
cs_query_version(ClientPtr client)
{
    xCaptureShieldQueryVersionReply rep;

    REQUEST_SIZE_MATCH(xCaptureShieldQueryVersionReq);
    memset(&rep, 0, sizeof(rep));
    rep.type = X_Reply;
    rep.mode = cs_cfg.mode;
    rep.sequenceNumber = client->sequence;
    rep.length = 0;
    rep.majorVersion = CS_MAJOR_VERSION;
    rep.minorVersion = CS_MINOR_VERSION;
    rep.trust = cs_client_trust(client);
    if (client->swapped) {
        swaps(&rep.sequenceNumber);
        swaps(&rep.majorVersion);
        swaps(&rep.minorVersion);
    }
    WriteToClient(client, sizeof(rep), &rep);
    return Success;
}

static ClientPtr
cs_target(ClientPtr client, XID xid)
{
    int idx = CLIENT_ID(xid);

    if (idx <= 0 || idx >= currentMaxClients || !clients[idx] || clients[idx]->clientGone) {
        client->errorValue = xid;
        return NULL;
    }
    return clients[idx];
}

static int
cs_grant_req(ClientPtr client, Bool on)
{
    REQUEST(xCaptureShieldGrantReq);
    ClientPtr target;

    REQUEST_SIZE_MATCH(xCaptureShieldGrantReq);
    if (!cs_client_trusted(client))
        return BadAccess;
    if (!(target = cs_target(client, stuff->client)))
        return BadValue;
    return cs_grant(target, on);
}

static int
cs_select_input(ClientPtr client)
{
    REQUEST(xCaptureShieldSelectInputReq);

    REQUEST_SIZE_MATCH(xCaptureShieldSelectInputReq);
    if (!cs_client_trusted(client))
        return BadAccess;
    if (stuff->mask & ~(CaptureShieldNotifyMask | CaptureShieldSecureMask)) {
        client->errorValue = stuff->mask;
        return BadValue;
    }
    cs_set_event_mask(client, stuff->mask);
    return Success;
}

static int
cs_set_protection(ClientPtr client)
{
    REQUEST(xCaptureShieldSetProtectionReq);

    REQUEST_SIZE_MATCH(xCaptureShieldSetProtectionReq);
    if (!cs_client_trusted(client))
        return BadAccess;
    if (stuff->on > 1) {
        client->errorValue = stuff->on;
        return BadValue;
    }
    if (cs_cfg.paused != !stuff->on)
        LogMessageVerb(X_INFO, 0, "CAPTURESHIELD: protection %s by client %d\n",
                       stuff->on ? "resumed" : "PAUSED", client->index);
    cs_cfg.paused = !stuff->on;
    cs_mark_dirty();
    cs_record_sweep();
    return Success;
}

static int
cs_get_client_trust(ClientPtr client)
{
    REQUEST(xCaptureShieldGetClientTrustReq);
    xCaptureShieldGetClientTrustReply rep;
    ClientPtr target;

    REQUEST_SIZE_MATCH(xCaptureShieldGetClientTrustReq);
    if (!(target = cs_target(client, stuff->client)))
        return BadValue;
    memset(&rep, 0, sizeof(rep));
    rep.type = X_Reply;
    rep.sequenceNumber = client->sequence;
    rep.trust = cs_client_trust(target);
    rep.base = target->clientAsMask;
    if (client->swapped) {
        swaps(&rep.sequenceNumber);
        swapl(&rep.base);
    }
    WriteToClient(client, sizeof(rep), &rep);
    return Success;
}

static int
cs_dispatch(ClientPtr client)
{
    REQUEST(xReq);

    switch (stuff->data) {
    case X_CaptureShieldQueryVersion:
        return cs_query_version(client);
    case X_CaptureShieldGrant:
        return cs_grant_req(client, TRUE);
    case X_CaptureShieldRevoke:
        return cs_grant_req(client, FALSE);
    case X_CaptureShieldSelectInput:
        return cs_select_input(client);
    case X_CaptureShieldGetClientTrust:
        return cs_get_client_trust(client);
    case X_CaptureShieldSetProtection:
        return cs_set_protection(client);
    default:
        return BadRequest;
    }
}

static int
cs_sdispatch(ClientPtr client)
{
    REQUEST(xReq);

    swaps(&stuff->length);
    switch (stuff->data) {
    case X_CaptureShieldQueryVersion:
        if (client->req_len == 2) {
            xCaptureShieldQueryVersionReq *r = (void *) stuff;
            swaps(&r->majorVersion);
            swaps(&r->minorVersion);
        }
        break;
    default:
        if (client->req_len == 2)
            swapl(&((xCaptureShieldGrantReq *) stuff)->client);
        break;
    }
    return cs_dispatch(client);
}

/* The server resets or exits: every wrapper of this generation goes (wrap.c); the screen
 * procs follow at each CloseScreen. */
static void
cs_close_down(ExtensionEntry *e)
{
    (void) e;
    if (cs_event_base)
        EventSwapVector[cs_event_base + CaptureShieldNotify] = NotImplemented;
    cs_event_base = 0;
    cs_wrap_close_down();
}

Bool
cs_ext_init(void)
{
    ExtensionEntry *e;

    cs_event_base = 0;
    e = AddExtension(CS_NAME, CaptureShieldNumberEvents, 0, cs_dispatch, cs_sdispatch,
                     cs_close_down, StandardMinorOpcode);
    if (!e)
        return FALSE;
    cs_event_base = e->eventBase;
    EventSwapVector[cs_event_base + CaptureShieldNotify] = (EventSwapPtr) cs_swap_event;
    return TRUE;
}
