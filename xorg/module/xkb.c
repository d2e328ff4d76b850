/* CaptureShield Xorg module: secure input, the XKB events that tell which key went down: held
 * back from the clients that may not read the keys while a secure window has the focus. */
#include "input-int.h"

/* ---- XKB events that tell which key went down ----
 * XKB writes its events straight to the clients (WriteToClient: no XACE hook sees them),
 * each to the clients whose XkbInterest on the device selected it. So while a secure window
 * has the focus, the masks of the key-revealing events are cleared in the XkbInterest of
 * every client that may not read those keys, and given back when the focus leaves (then
 * one StateNotify with the current state goes out, so layout and modifier trackers catch
 * up). The state is brought up to date before XKB handles each key (a mieq handler for the
 * raw key events, which the server queues in front of every key event), at every
 * key press (DeviceEventCallback), after each XKB request (a work proc) and in the block handler; it stays
 * while the focus stays, so the events XKB sends from its timers (AccessX slow keys, key
 * repeat) are held back too. A record
 * given back is first found again in its device's interest list (never touched when the
 * client, the device or the record is gone). */
#define CS_ET_RAW_KEY_PRESS 20          /* enum EventType, the server's eventstr.h (not */
#define CS_ET_RAW_KEY_RELEASE 21        /* in the SDK): the same from 1.12 to 21.1 */
/* this file's state (input-int.h) */
struct cs_xkb_state cs_xkb_st;
/* as trust.c's CS_RECHECK_MS: how long a trusted client's identity check holds */
#define CS_XKB_RECHECK_MS 1000

static int
cs_xkb_selects_keys(XkbInterestPtr in)
{
    return in->extDevNotifyMask || in->stateNotifyMask || in->accessXNotifyMask ||
        in->ctrlsNotifyMask || in->iStateNotifyMask || in->bellNotifyMask ||
        in->actionMessageMask;
}

/* h's record, if it is still in its device's list */
static XkbInterestPtr
cs_xkb_find(const struct cs_xkb_hidden *h)
{
    DeviceIntPtr d;
    XkbInterestPtr in;
    int pass;

    for (pass = 0; pass < 2; pass++)
        for (d = pass ? inputInfo.off_devices : inputInfo.devices; d; d = d->next) {
            if (d != h->dev)
                continue;
            for (in = d->xkb_interest; in; in = in->next)
                if (in == h->in && in->resource == h->resource && in->client == h->client)
                    return in;
        }
    return NULL;
}

/* Holds back in's masks, adding them to h's. What the client selected meanwhile (an
 * XkbSelectEvents while held back works on the cleared masks) is kept; what it deselected
 * meanwhile comes back with the rest. */
static void
cs_xkb_save(struct cs_xkb_hidden *h, XkbInterestPtr in)
{
    h->ext_dev |= in->extDevNotifyMask;
    h->state |= in->stateNotifyMask;
    h->access_x |= in->accessXNotifyMask;
    h->ctrls |= in->ctrlsNotifyMask;
    h->i_state |= in->iStateNotifyMask;
    h->bell |= in->bellNotifyMask;
    h->action |= in->actionMessageMask;
    in->extDevNotifyMask = in->stateNotifyMask = in->accessXNotifyMask = 0;
    in->ctrlsNotifyMask = in->iStateNotifyMask = 0;
    in->bellNotifyMask = in->actionMessageMask = FALSE;
}

/* gives entry i back (if its record still exists) and drops it; returns the device */
static DeviceIntPtr
cs_xkb_give_back(int i)
{
    struct cs_xkb_hidden *h = &cs_xkb_st.held[i];
    XkbInterestPtr in = cs_xkb_find(h);
    DeviceIntPtr dev = NULL;

    if (in) {
        in->extDevNotifyMask |= h->ext_dev;
        in->stateNotifyMask |= h->state;
        in->accessXNotifyMask |= h->access_x;
        in->ctrlsNotifyMask |= h->ctrls;
        in->iStateNotifyMask |= h->i_state;
        in->bellNotifyMask |= h->bell;
        in->actionMessageMask |= h->action;
        dev = h->dev;
    }
    cs_xkb_st.held[i] = cs_xkb_st.held[--cs_xkb_st.n];
    return dev;
}

static int
cs_xkb_held(XkbInterestPtr in)
{
    int i;

    for (i = 0; i < cs_xkb_st.n; i++)
        if (cs_xkb_st.held[i].in == in && cs_xkb_st.held[i].client == in->client &&
            cs_xkb_st.held[i].resource == in->resource)
            return 1;
    return 0;
}

static void
cs_xkb_hide_on(DeviceIntPtr d, WindowPtr keywin)
{
    XkbInterestPtr in;

    for (in = d->xkb_interest; in; in = in->next) {
        if (!in->client || in->client->clientGone || !cs_xkb_selects_keys(in) ||
            cs_key_reader_ok(in->client, keywin) || cs_xkb_held(in))
            continue;
        if (cs_xkb_st.n == CS_MAX_XKB) {
            struct cs_xkb_hidden lost;

            /* never let the events through: this client loses them for good */
            LogMessageVerb(X_WARNING, 0, "CAPTURESHIELD: too many XKB selections to hold "
                           "back; client %d loses its XKB state events\n",
                           in->client->index);
            memset(&lost, 0, sizeof(lost));
            cs_xkb_save(&lost, in);
            continue;
        }
        memset(&cs_xkb_st.held[cs_xkb_st.n], 0, sizeof(cs_xkb_st.held[0]));
        cs_xkb_st.held[cs_xkb_st.n].dev = d;
        cs_xkb_st.held[cs_xkb_st.n].in = in;
        cs_xkb_st.held[cs_xkb_st.n].resource = in->resource;
        cs_xkb_st.held[cs_xkb_st.n].client = in->client;
        cs_xkb_save(&cs_xkb_st.held[cs_xkb_st.n], in);
        cs_xkb_st.n++;
    }
}

/* Does any client (any record on any device) select an event cs_xkb_save would hold
 * back? Selections change by XKB requests alone, which set cs_xkb_st.dirty. */
static Bool
cs_xkb_any_selects(void)
{
    DeviceIntPtr d;
    XkbInterestPtr in;
    int pass;

    for (pass = 0; pass < 2; pass++)
        for (d = pass ? inputInfo.off_devices : inputInfo.devices; d; d = d->next)
            for (in = d->xkb_interest; in; in = in->next)
                if (cs_xkb_selects_keys(in))
                    return TRUE;
    return FALSE;
}

/* while a secure window has the focus: the trust re-check (see the end of cs_xkb_sync_slow) */
static CARD32
cs_xkb_tick(OsTimerPtr timer, CARD32 now, void *arg)
{
    (void) timer;
    (void) now;
    (void) arg;
    if (!cs_xkb_st.open || !cs_xkb_st.keywin) {
        cs_xkb_st.timer_on = FALSE;
        return 0;
    }
    cs_xkb_st.recheck = TRUE;
    cs_input_want_block();
    return CS_XKB_RECHECK_MS;
}

/* Brings the held-back selections up to date with the focus now. Each key pays only for
 * finding the focus (the delivery hook does the same): the selections are looked at when
 * the key window changed, after an XKB request (selections are made by requests only) or
 * a client left, when the tree changed (cs_gen: owners and tags), and with `force`
 * (the block handler, once per CS_XKB_RECHECK_MS while a secure window has the focus:
 * for a trusted client whose trust lapsed meanwhile). */
void
cs_xkb_sync_slow(Bool force)
{
    WindowPtr secure, keywin = NULL;
    DeviceIntPtr d, back[8];
    XID kid;
    int i, j, nback = 0, pass;

    /* nothing held back and nothing to hold back (no record selects such events, which
     * stays so until an XKB request sets cs_xkb_st.dirty): no need to know the focus */
    if (cs_xkb_st.dirty)
        cs_xkb_st.any = cs_xkb_any_selects();
    if (!cs_xkb_st.n && (!cs_xkb_st.any || !cs_secure_count())) {
        cs_xkb_st.dirty = FALSE;
        cs_xkb_st.keywin = 0;
        return;
    }
    secure = cs_focus_secure(&keywin);
    kid = secure && keywin ? keywin->drawable.id : 0;
    /* the same key window in the same tree (owners, tags) and no XKB request: the same
     * clients may read its keys, unless a trusted one's trust lapsed (force) */
    if (!force && !cs_xkb_st.dirty && kid == cs_xkb_st.keywin && cs_gen == cs_xkb_st.gen)
        return;
    cs_xkb_st.dirty = FALSE;
    cs_xkb_st.keywin = kid;
    cs_xkb_st.gen = cs_gen;
    for (i = cs_xkb_st.n - 1; i >= 0; i--) {
        if (secure && !cs_key_reader_ok(cs_xkb_st.held[i].client, keywin)) {
            XkbInterestPtr in = cs_xkb_find(&cs_xkb_st.held[i]);

            if (in)
                cs_xkb_save(&cs_xkb_st.held[i], in);    /* selected again meanwhile: held */
            else
                cs_xkb_st.held[i] = cs_xkb_st.held[--cs_xkb_st.n];
            continue;
        }
        d = cs_xkb_give_back(i);
        for (j = 0; d && j < nback && back[j] != d; j++);
        if (d && j == nback && nback < (int) (sizeof(back) / sizeof(back[0])))
            back[nback++] = d;
    }
    if (secure)
        for (pass = 0; pass < 2; pass++)
            for (d = pass ? inputInfo.off_devices : inputInfo.devices; d; d = d->next)
                if (d->xkb_interest)
                    cs_xkb_hide_on(d, keywin);
    /* the state as it is now, to the clients that missed its changes */
    for (j = 0; j < nback; j++)
        if (back[j]->key && back[j]->key->xkbInfo) {
            xkbStateNotify sn;

            memset(&sn, 0, sizeof(sn));
            sn.changed = XkbAllStateComponentsMask;
            XkbSendStateNotify(back[j], &sn);
        }
    /* selections given back select again; held ones count in cs_xkb_st.n */
    cs_xkb_st.any = cs_xkb_any_selects();
    /* A trusted client's trust lapses when its identity re-check fails, which happens
     * when its trust is asked for (cs_key_reader_ok) and its last check is
     * CS_XKB_RECHECK_MS old: while a secure window has the focus, the timer has the
     * selections looked at that often (no wakeup pays for it). Without the timer, every
     * wakeup looks (cs_input_block_due). */
    if (kid && !cs_xkb_st.timer_on) {
        cs_xkb_st.timer = TimerSet(cs_xkb_st.timer, 0, CS_XKB_RECHECK_MS, cs_xkb_tick, NULL);
        cs_xkb_st.timer_on = cs_xkb_st.timer != NULL;
    }
    /* the block handler sets or unsets the raw key handler to match */
    cs_input_want_block();
}

/* After an XKB request, before XKB's timers can send anything (the server runs its work
 * queue first when it waits for input): a selection the request made is held back at once */
Bool
cs_xkb_work(ClientPtr client, void *closure)
{
    (void) client;
    (void) closure;
    cs_xkb_st.work_queued = FALSE;
    if (cs_xkb_st.open)
        cs_xkb_sync(FALSE);
    return TRUE;
}

/* the clients that are gone keep nothing here (their records are freed with them) */
void
cs_xkb_forget(ClientPtr client)
{
    int i;

    for (i = cs_xkb_st.n - 1; i >= 0; i--)
        if (cs_xkb_st.held[i].client == client)
            cs_xkb_st.held[i] = cs_xkb_st.held[--cs_xkb_st.n];
}

/* mieq: every key event is preceded by its raw event; bring the XKB selections up to date
 * before XKB handles the key, then go on as mieq does without a handler (for raw events
 * it does nothing else) */
static void
cs_raw_key_handler(int screen, InternalEvent *ev, DeviceIntPtr dev)
{
    (void) screen;
    if (cs_grabs_st.grab_seen && !cs_grabs_st.devev_sticky)
        cs_devev_follow();
    cs_xkb_sync(FALSE);
    dev->public.processInputProc(ev, dev);
}

void
cs_xkb_arm(void)
{
    /* The handler is set while it can have work: something held back, something to hold
     * back, or an XKB request (or a client gone) not yet synced; without it mieq hands
     * the raw events to the device as the handler would, and no XKB selection exists
     * that the focus could matter to. It is set again (from the dispatch hook) before an
     * XKB request runs, so before any key event the request's selection could see.
     * mieqInit (InitInput, after the extensions) clears the handlers: set them once the
     * server runs (the block handler, the dispatch hook). */
    Bool want = cs_xkb_st.n || cs_xkb_st.any || cs_xkb_st.dirty ||
        (cs_grabs_st.grab_seen && !cs_grabs_st.devev_sticky);

    if (want == cs_xkb_st.mieq_armed)
        return;
    mieqSetHandler(CS_ET_RAW_KEY_PRESS, want ? cs_raw_key_handler : NULL);
    mieqSetHandler(CS_ET_RAW_KEY_RELEASE, want ? cs_raw_key_handler : NULL);
    cs_xkb_st.mieq_armed = want;
}

void
cs_xkb_close(void)
{
    if (cs_xkb_st.mieq_armed) {
        mieqSetHandler(CS_ET_RAW_KEY_PRESS, NULL);
        mieqSetHandler(CS_ET_RAW_KEY_RELEASE, NULL);
    }
    cs_xkb_st.mieq_armed = FALSE;
    cs_xkb_st.open = FALSE;
    TimerFree(cs_xkb_st.timer);
    cs_xkb_st.timer = NULL;
    cs_xkb_st.timer_on = FALSE;
    while (cs_xkb_st.n)
        cs_xkb_give_back(cs_xkb_st.n - 1);
}

/* this file's state, at each server generation's init (cs_input_init) */
void
cs_xkb_reset(void)
{
    cs_xkb_st.n = 0;
    cs_xkb_st.mieq_armed = FALSE;
    cs_xkb_st.keywin = 0;
    cs_xkb_st.dirty = TRUE;
    cs_xkb_st.any = FALSE;
    cs_xkb_st.open = TRUE;
    cs_xkb_st.gen = 0;
    cs_xkb_st.recheck = FALSE;
    cs_xkb_st.timer = NULL;
    cs_xkb_st.timer_on = FALSE;
    cs_xkb_st.work_queued = FALSE;
}
