/* CaptureShield Xorg module: secure input (rule "input"). While a secure window (or a
 * window inside one) has the keyboard focus, key events reach only trusted clients and the
 * client owning every secure window the keys pass; other clients can neither read the key
 * state, take the keys with a grab, nor type or click into a secure window with XTEST or
 * SendEvent, and XKB events that tell which key went down (StateNotify, AccessXNotify,
 * ActionMessage, ControlsNotify, the indicator and extension device notifications, bells)
 * are held back from them. Refusals: CaptureNotify kind 8, once per client per focus
 * period. */
#include "input-int.h"
DevPrivateKeyRec cs_input_key_rec;
unsigned long cs_period;         /* bumped whenever the secure focus may change */
static XID cs_last_secure;              /* the secure window that had the focus last time */
int cs_xi_major, cs_xi_event;    /* XInputExtension major opcode, event base (0: none) */
int cs_xi_known;
static const ExtensionEntry *cs_xtest;  /* XTEST (NULL: absent), once cs_xtest_known */
static const ExtensionEntry *cs_ext;    /* this module's extension, once cs_xtest_known */
static int cs_xtest_known;

/* XInputExtension's numbers, once it is initialised (it may come after this module). */
void
cs_input_ext_slow(void)
{
    ExtensionEntry *ext;

    ext = CheckExtension("XInputExtension");
    if (!ext)
        return;
    cs_xi_major = ext->base;
    cs_xi_event = ext->eventBase;
    cs_xi_known = 1;
}

/* ---- where the keys go ---- */

static WindowPtr cs_kmemo_focus, cs_kmemo_sprite, cs_kmemo_win;
static unsigned long cs_kmemo_gen;

/* The window key events from `dev` go to now (NULL: nowhere / unknown). */
static WindowPtr
cs_key_window(DeviceIntPtr dev)
{
    WindowPtr focus, sprite = NULL;

    if (!dev || !dev->focus)
        return NULL;
    focus = dev->focus->win;
    if (focus == FollowKeyboardWin)
        focus = inputInfo.keyboard && inputInfo.keyboard->focus ?
            inputInfo.keyboard->focus->win : NoneWin;
    if (focus == NoneWin || focus == FollowKeyboardWin)
        return NULL;
    if (dev->spriteInfo && dev->spriteInfo->sprite)
        sprite = dev->spriteInfo->sprite->win;
    if (focus == PointerRootWin)
        return sprite;
    /* the core delivers to the window under the pointer when it is inside the focus; the
     * last answer is kept while cs_gen stays (a reparent or a destroy moves it on) */
    if (!sprite)
        return focus;
    if (focus != cs_kmemo_focus || sprite != cs_kmemo_sprite || cs_kmemo_gen != cs_gen) {
        cs_kmemo_focus = focus;
        cs_kmemo_sprite = sprite;
        cs_kmemo_gen = cs_gen;
        cs_kmemo_win = sprite == focus || IsParent(focus, sprite) ? sprite : focus;
    }
    return cs_kmemo_win;
}

/* The same, remembered for the last window asked about while cs_gen stays: cs_gen moves
 * on whenever a window's secure tag changes (cs_set_win_secure), a window is reparented
 * or destroyed (region.c), which is all that can change the answer for a window or free
 * it. Every key event asks for the window its keys go to, several times (the XTEST
 * request, the raw and device events of the slave and the master): one walk up the tree
 * per window and tree state instead. */
static WindowPtr cs_memo_win, cs_memo_secure;
static unsigned long cs_memo_gen;

static inline WindowPtr
cs_secure_of_memo(WindowPtr win)
{
    if (win != cs_memo_win || cs_memo_gen != cs_gen) {
        cs_memo_secure = cs_secure_of(win);
        cs_memo_win = win;
        cs_memo_gen = cs_gen;
    }
    return cs_memo_secure;
}

/* ---- the secure focus and the secure window under the pointer, remembered ----
 * Both answers depend on the master devices (which there are, their classes), each
 * master's focus window and sprite window, and the window tree with its secure tags
 * (cs_gen). In the usual case, the two core masters alone (they live as long as the
 * server generation), each answer is kept with the core devices' focus and sprite
 * windows, cs_gen and cs_devgen: master devices are created (AddInputDevice) and removed
 * (XIChangeHierarchy) only after an XACE_DEVICE_ACCESS check for DixCreateAccess or
 * DixDestroyAccess, and slaves are attached after one for DixManageAccess, which move
 * cs_devgen on (cs_device_hook), as does every other device access check but reads;
 * XIChangeHierarchy, ChangeDeviceControl or a "Device Enabled" property enable or disable
 * devices after such a check within the request, so from the check until the next block
 * handler nothing is kept (cs_hier_pending). A master gains a slave's classes without a
 * check, so the core pointer must have no key class and the core keyboard no button
 * class for an answer to be kept. */
unsigned long cs_devgen = 1;
Bool cs_hier_pending;
struct cs_memo_focus cs_fmemo, cs_pmemo;

/* the devices the answer was found from: the two core masters alone (see above) */
static inline void
cs_memo_keep(struct cs_memo_focus *m, int nmaster, int core, WindowPtr secure, WindowPtr win)
{
    DeviceIntPtr k = inputInfo.keyboard, p = inputInfo.pointer;

    m->gen = 0;
    if (nmaster != 2 || core != 2 || !k || !p || !k->focus || p->key || k->button ||
        cs_hier_pending)
        return;
    m->gen = cs_gen;
    m->devgen = cs_devgen;
    m->focus = k->focus->win;
    m->sprite = cs_sprite_win(k);
    m->psprite = cs_sprite_win(p);
    m->secure = secure;
    m->win = win;
}

/* cs_focus_secure when no kept answer holds */
WindowPtr
cs_focus_secure_slow(WindowPtr *keywin)
{
    DeviceIntPtr d;
    WindowPtr w, s, found = NULL, foundwin = NULL;
    int nmaster = 0, core = 0;

    for (d = inputInfo.devices; d; d = d->next) {
        /* IsMaster, inline */
        if (d->type != MASTER_POINTER && d->type != MASTER_KEYBOARD)
            continue;
        nmaster++;
        core += d == inputInfo.keyboard || d == inputInfo.pointer;
        if (found || !d->key || !d->focus)
            continue;
        w = cs_key_window(d);
        s = cs_secure_of_memo(w);
        if (s) {
            found = s;
            foundwin = w;
        }
    }
    cs_memo_keep(&cs_fmemo, nmaster, core, found, foundwin);
    if (found) {
        if (keywin)
            *keywin = foundwin;
        if (found->drawable.id != cs_last_secure) {
            cs_last_secure = found->drawable.id;
            cs_period++;
        }
        return found;
    }
    if (cs_last_secure) {
        cs_last_secure = 0;
        cs_period++;
    }
    return NULL;
}

/* cs_pointer_secure when no kept answer holds */
WindowPtr
cs_pointer_secure_slow(WindowPtr *under)
{
    DeviceIntPtr d;
    WindowPtr s, found = NULL, foundwin = NULL;
    int nmaster = 0, core = 0;

    for (d = inputInfo.devices; d; d = d->next) {
        if (d->type != MASTER_POINTER && d->type != MASTER_KEYBOARD)
            continue;
        nmaster++;
        core += d == inputInfo.keyboard || d == inputInfo.pointer;
        if (found || !d->button || !d->spriteInfo || !d->spriteInfo->sprite)
            continue;
        s = cs_secure_of_memo(d->spriteInfo->sprite->win);
        if (s) {
            found = s;
            foundwin = d->spriteInfo->sprite->win;
        }
    }
    cs_memo_keep(&cs_pmemo, nmaster, core, found, foundwin);
    if (found)
        *under = foundwin;
    return found;
}

static ClientPtr
cs_owner(WindowPtr win)
{
    int idx = win ? CLIENT_ID(win->drawable.id) : 0;

    return idx > 0 && idx < currentMaxClients ? clients[idx] : NULL;
}

/* May `client` see the keys that go to `win` (or put input there)? Trusted clients may;
 * otherwise only a client that owns every secure window from `win` up to the root: a
 * client cannot make itself the reader by creating (and tagging) a window inside another
 * client's secure window, nor by reparenting that window into a secure window of its own
 * (both make the keys nobody's: they stay in the server). */
ClientPtr cs_rmemo_client;     /* the last ownership answer, while cs_gen stays */
WindowPtr cs_rmemo_win;          /* (a client that leaves has its windows destroyed, */
unsigned long cs_rmemo_gen;      /* which moves cs_gen on) */
int cs_rmemo_owns;

int
cs_key_reader_ok_slow(ClientPtr client, WindowPtr win)
{
    WindowPtr w;
    int owns = 1;

    if (client == cs_rmemo_client && win == cs_rmemo_win && cs_rmemo_gen == cs_gen)
        owns = cs_rmemo_owns;
    else {
        for (w = win; w; w = w->parent)
            if (cs_win_secure(w) && cs_owner(w) != client) {
                owns = 0;
                break;
            }
        cs_rmemo_client = client;
        cs_rmemo_win = win;
        cs_rmemo_gen = cs_gen;
        cs_rmemo_owns = owns;
    }
    return owns || cs_client_trusted(client);
}

/* One report per client per focus period. */
void
cs_input_report(ClientPtr client, XID what)
{
    struct cs_input_client *st;

    if (!client || client == serverClient)
        return;
    st = dixLookupPrivate(&client->devPrivates, &cs_input_key_rec);
    if (st->reported_period == cs_period + 1)
        return;
    st->reported_period = cs_period + 1;
    LogMessageVerb(X_INFO, 1, "CAPTURESHIELD: input refused to client %d (pid %d, request %d), window 0x%lx\n",
                   client->index, (int) GetClientPid(client), client->majorOp,
                   (unsigned long) what);
    cs_report(client, what, CS_KIND_INPUT);
}

/* this file's state, at each server generation's init (cs_input_init) */
void
cs_focus_reset(void)
{
    cs_last_secure = 0;
    cs_memo_win = cs_memo_secure = NULL;
    cs_memo_gen = 0;
    cs_rmemo_client = NULL;
    cs_rmemo_win = NULL;
    cs_rmemo_gen = 0;
    cs_kmemo_focus = cs_kmemo_sprite = cs_kmemo_win = NULL;
    cs_kmemo_gen = 0;
    memset(&cs_fmemo, 0, sizeof(cs_fmemo));
    cs_hier_pending = FALSE;
    memset(&cs_pmemo, 0, sizeof(cs_pmemo));
    cs_xi_known = cs_xi_major = cs_xi_event = 0;
}

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
#define CS_MAX_XKB 256
#define CS_ET_RAW_KEY_PRESS 20          /* enum EventType, the server's eventstr.h (not */
#define CS_ET_RAW_KEY_RELEASE 21        /* in the SDK): the same from 1.12 to 21.1 */
static struct cs_xkb_hidden {
    DeviceIntPtr dev;
    XkbInterestPtr in;
    XID resource;
    ClientPtr client;
    CARD16 ext_dev, state, access_x;
    CARD32 ctrls, i_state;
    BOOL bell, action;
} cs_xkb[CS_MAX_XKB];
int cs_nxkb;
Bool cs_mieq_armed;
XID cs_xkb_keywin;       /* the key window at the last sync (0: no secure focus) */
Bool cs_xkb_dirty;       /* an XKB request or a client gone since the last sync */
static Bool cs_xkb_open;        /* between init and close (a queued work proc may outlive) */
Bool cs_xkb_work_queued;
Bool cs_xkb_any;         /* at the last sync: some record selects key-revealing events */
/* DeviceEventCallback (see cs_devev_follow): on the list; on for good (a freezing grab
 * was made); following the secure focus (another grab was made) */
Bool cs_devev_armed, cs_devev_sticky, cs_grab_seen;
static unsigned long cs_xkb_gen;  /* cs_gen at the last sync */
Bool cs_xkb_recheck;     /* the trust of the selecting clients is due a re-check */
static OsTimerPtr cs_xkb_timer; /* sets cs_xkb_recheck while a secure window has the focus */
Bool cs_xkb_timer_on;
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
    struct cs_xkb_hidden *h = &cs_xkb[i];
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
    cs_xkb[i] = cs_xkb[--cs_nxkb];
    return dev;
}

static int
cs_xkb_held(XkbInterestPtr in)
{
    int i;

    for (i = 0; i < cs_nxkb; i++)
        if (cs_xkb[i].in == in && cs_xkb[i].client == in->client &&
            cs_xkb[i].resource == in->resource)
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
        if (cs_nxkb == CS_MAX_XKB) {
            struct cs_xkb_hidden lost;

            /* never let the events through: this client loses them for good */
            LogMessageVerb(X_WARNING, 0, "CAPTURESHIELD: too many XKB selections to hold "
                           "back; client %d loses its XKB state events\n",
                           in->client->index);
            memset(&lost, 0, sizeof(lost));
            cs_xkb_save(&lost, in);
            continue;
        }
        memset(&cs_xkb[cs_nxkb], 0, sizeof(cs_xkb[0]));
        cs_xkb[cs_nxkb].dev = d;
        cs_xkb[cs_nxkb].in = in;
        cs_xkb[cs_nxkb].resource = in->resource;
        cs_xkb[cs_nxkb].client = in->client;
        cs_xkb_save(&cs_xkb[cs_nxkb], in);
        cs_nxkb++;
    }
}

/* Does any client (any record on any device) select an event cs_xkb_save would hold
 * back? Selections change by XKB requests alone, which set cs_xkb_dirty. */
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
    if (!cs_xkb_open || !cs_xkb_keywin) {
        cs_xkb_timer_on = FALSE;
        return 0;
    }
    cs_xkb_recheck = TRUE;
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
     * stays so until an XKB request sets cs_xkb_dirty): no need to know the focus */
    if (cs_xkb_dirty)
        cs_xkb_any = cs_xkb_any_selects();
    if (!cs_nxkb && (!cs_xkb_any || !cs_secure_count())) {
        cs_xkb_dirty = FALSE;
        cs_xkb_keywin = 0;
        return;
    }
    secure = cs_focus_secure(&keywin);
    kid = secure && keywin ? keywin->drawable.id : 0;
    /* the same key window in the same tree (owners, tags) and no XKB request: the same
     * clients may read its keys, unless a trusted one's trust lapsed (force) */
    if (!force && !cs_xkb_dirty && kid == cs_xkb_keywin && cs_gen == cs_xkb_gen)
        return;
    cs_xkb_dirty = FALSE;
    cs_xkb_keywin = kid;
    cs_xkb_gen = cs_gen;
    for (i = cs_nxkb - 1; i >= 0; i--) {
        if (secure && !cs_key_reader_ok(cs_xkb[i].client, keywin)) {
            XkbInterestPtr in = cs_xkb_find(&cs_xkb[i]);

            if (in)
                cs_xkb_save(&cs_xkb[i], in);    /* selected again meanwhile: held */
            else
                cs_xkb[i] = cs_xkb[--cs_nxkb];
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
    /* selections given back select again; held ones count in cs_nxkb */
    cs_xkb_any = cs_xkb_any_selects();
    /* A trusted client's trust lapses when its identity re-check fails, which happens
     * when its trust is asked for (cs_key_reader_ok) and its last check is
     * CS_XKB_RECHECK_MS old: while a secure window has the focus, the timer has the
     * selections looked at that often (no wakeup pays for it). Without the timer, every
     * wakeup looks (cs_input_block_due). */
    if (kid && !cs_xkb_timer_on) {
        cs_xkb_timer = TimerSet(cs_xkb_timer, 0, CS_XKB_RECHECK_MS, cs_xkb_tick, NULL);
        cs_xkb_timer_on = cs_xkb_timer != NULL;
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
    cs_xkb_work_queued = FALSE;
    if (cs_xkb_open)
        cs_xkb_sync(FALSE);
    return TRUE;
}

/* the clients that are gone keep nothing here (their records are freed with them) */
void
cs_xkb_forget(ClientPtr client)
{
    int i;

    for (i = cs_nxkb - 1; i >= 0; i--)
        if (cs_xkb[i].client == client)
            cs_xkb[i] = cs_xkb[--cs_nxkb];
}

/* mieq: every key event is preceded by its raw event; bring the XKB selections up to date
 * before XKB handles the key, then go on as mieq does without a handler (for raw events
 * it does nothing else) */
static void
cs_raw_key_handler(int screen, InternalEvent *ev, DeviceIntPtr dev)
{
    (void) screen;
    if (cs_grab_seen && !cs_devev_sticky)
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
    Bool want = cs_nxkb || cs_xkb_any || cs_xkb_dirty || (cs_grab_seen && !cs_devev_sticky);

    if (want == cs_mieq_armed)
        return;
    mieqSetHandler(CS_ET_RAW_KEY_PRESS, want ? cs_raw_key_handler : NULL);
    mieqSetHandler(CS_ET_RAW_KEY_RELEASE, want ? cs_raw_key_handler : NULL);
    cs_mieq_armed = want;
}

void
cs_xkb_close(void)
{
    if (cs_mieq_armed) {
        mieqSetHandler(CS_ET_RAW_KEY_PRESS, NULL);
        mieqSetHandler(CS_ET_RAW_KEY_RELEASE, NULL);
    }
    cs_mieq_armed = FALSE;
    cs_xkb_open = FALSE;
    TimerFree(cs_xkb_timer);
    cs_xkb_timer = NULL;
    cs_xkb_timer_on = FALSE;
    while (cs_nxkb)
        cs_xkb_give_back(cs_nxkb - 1);
}

/* this file's state, at each server generation's init (cs_input_init) */
void
cs_xkb_reset(void)
{
    cs_nxkb = 0;
    cs_mieq_armed = FALSE;
    cs_xkb_keywin = 0;
    cs_xkb_dirty = TRUE;
    cs_xkb_any = FALSE;
    cs_xkb_open = TRUE;
    cs_xkb_gen = 0;
    cs_xkb_recheck = FALSE;
    cs_xkb_timer = NULL;
    cs_xkb_timer_on = FALSE;
    cs_xkb_work_queued = FALSE;
}

/* ---- which events carry keys ---- */

int
cs_is_key_event(const xEvent *ev)
{
    int type = ev->u.u.type & 0x7f;

    if (type == KeyPress || type == KeyRelease || type == KeymapNotify)
        return 1;
    if (type == GenericEvent) {
        const xGenericEvent *ge = (const xGenericEvent *) ev;

        return cs_xi_major && ge->extension == cs_xi_major &&
            (ge->evtype == XI_KeyPress || ge->evtype == XI_KeyRelease ||
             ge->evtype == XI_RawKeyPress || ge->evtype == XI_RawKeyRelease);
    }
    if (cs_xi_event && type >= cs_xi_event && type < cs_xi_event + IEVENTS) {
        int t = type - cs_xi_event;

        return t == XI_DeviceKeyPress || t == XI_DeviceKeyRelease ||
            t == XI_DeviceStateNotify || t == XI_DeviceKeystateNotify;
    }
    return 0;
}

/* Events a client may not send into a secure window (SendEvent). */
int
cs_is_input_event(const xEvent *ev)
{
    int type = ev->u.u.type & 0x7f;

    if (type >= KeyPress && type <= MotionNotify)
        return 1;
    if (cs_xi_event && type >= cs_xi_event && type < cs_xi_event + IEVENTS) {
        int t = type - cs_xi_event;

        return t >= XI_DeviceKeyPress && t <= XI_DeviceMotionNotify;
    }
    return 0;
}

static int cs_grab_is_shortcut(GrabPtr g);

/* `client` holds a keyboard grab that an allowed shortcut grab activated (the keys
 * pressed while the shortcut's key is down go to it, as without the module). */
int
cs_in_shortcut_grab(ClientPtr client)
{
    DeviceIntPtr d;

    for (d = inputInfo.devices; d; d = d->next) {
        GrabPtr g = d->deviceGrab.grab;

        if (g && d->key && d->deviceGrab.fromPassiveGrab && SameClient(g, client) &&
            cs_grab_is_shortcut(g))
            return 1;
    }
    return 0;
}

/* ---- 1. delivery of key events ---- */

static void
cs_receive_hook(CallbackListPtr *list, void *data, void *call)
{
    XaceReceiveAccessRec *rec = call;
    WindowPtr secure, keywin = NULL;
    int i;

    (void) list;
    (void) data;
    if (rec->status != Success || !rec->client || !cs_secure_count())
        return;
    cs_input_ext();
    for (i = 0; i < rec->count; i++)
        if (cs_is_key_event(&rec->events[i]))
            break;
    if (i == rec->count)
        return;
    secure = cs_focus_secure(&keywin);
    if (!secure || cs_key_reader_ok(rec->client, keywin) ||
        cs_in_shortcut_grab(rec->client))
        return;
    rec->status = BadAccess;
    cs_input_report(rec->client, secure->drawable.id);
}

/* ---- 2. grabs; QueryKeymap / QueryDeviceState; focus periods ---- */

static int
cs_request_is(ClientPtr client, int major, int minor)
{
    return client->majorOp == major && (minor < 0 || client->minorOp == minor);
}

static void
cs_device_hook(CallbackListPtr *list, void *data, void *call)
{
    XaceDeviceAccessRec *rec = call;
    WindowPtr secure, keywin = NULL;
    ClientPtr client = rec->client;
    int grab, read, focus, warp;

    (void) list;
    (void) data;
    /* a device may be created, removed, attached, enabled or disabled (its property),
     * now or later in this request: no kept answer of cs_focus_secure /
     * cs_pointer_secure counts any more, and none is kept until the block handler */
    if (rec->access_mode & ~(DixReadAccess | DixGetAttrAccess | DixGetFocusAccess |
                             DixUseAccess)) {
        cs_devgen++;
        cs_hier_pending = TRUE;
        cs_input_want_block();
    }
    /* every grab, active or passive, of any kind, is made after this check
     * (AddPassiveGrabToList, GrabDevice), with DixFreezeAccess when it can freeze a
     * device: from the first such grab on, every key event goes through cs_device_event;
     * from the first other grab on, the key events while a secure window has the focus
     * (cs_devev_follow). A grab that cannot be followed is not made. */
    if (rec->access_mode & DixGrabAccess) {
        if (rec->access_mode & DixFreezeAccess) {
            if (cs_devev_arm()) {
                cs_devev_sticky = TRUE;
                cs_input_want_block();  /* the raw key handler may go */
            }
            else if (rec->status == Success)
                rec->status = BadAlloc;
        } else if (!cs_grab_seen) {
            cs_grab_seen = TRUE;
            cs_xkb_arm();               /* the raw key handler follows the focus */
            cs_devev_follow();
            if (cs_focus_secure(NULL) && !cs_devev_armed && rec->status == Success)
                rec->status = BadAlloc;
        }
    }
    if (rec->access_mode & DixSetFocusAccess) {
        cs_period++;            /* the focus may move: a new period for reports */
        if (cs_nxkb || cs_xkb_any)
            cs_input_want_block();      /* selections held back or given back to match */
    }
    if (rec->status != Success || !client || client == serverClient || !rec->dev ||
        !cs_secure_count())
        return;
    cs_input_ext();
    /* moving the focus (core SetInputFocus, XI SetDeviceFocus, XISetFocus) or warping the
     * pointer (WarpPointer, XIWarpPointer) away from a secure window: the keys would
     * follow. The window manager (the SubstructureRedirect holder) keeps doing both. */
    focus = (rec->access_mode & DixSetFocusAccess) && rec->dev->key;
    warp = (rec->access_mode & DixWriteAccess) &&
        (cs_request_is(client, X_WarpPointer, -1) ||
         (cs_xi_major && cs_request_is(client, cs_xi_major, X_XIWarpPointer)));
    if (focus || warp) {
        secure = cs_focus_secure(&keywin);
        if (!secure && warp)
            secure = cs_pointer_secure(&keywin);
        if (!secure || cs_key_reader_ok(client, keywin) || cs_client_is_wm(client))
            return;
        rec->status = BadAccess;
        cs_input_report(client, secure->drawable.id);
        return;
    }
    if (!rec->dev->key)
        return;
    /* active keyboard grabs (core GrabKeyboard, XI GrabDevice, XI2 XIGrabDevice) */
    grab = (rec->access_mode & DixGrabAccess) &&
        (cs_request_is(client, X_GrabKeyboard, -1) ||
         (cs_xi_major && (cs_request_is(client, cs_xi_major, X_GrabDevice) ||
                          cs_request_is(client, cs_xi_major, X_XIGrabDevice))));
    /* the key state: core QueryKeymap (answered "no key down" on BadAccess), XI
     * QueryDeviceState */
    read = (rec->access_mode & DixReadAccess) &&
        (cs_request_is(client, X_QueryKeymap, -1) ||
         (cs_xi_major && cs_request_is(client, cs_xi_major, X_QueryDeviceState)));
    if (!grab && !read)
        return;
    secure = cs_focus_secure(&keywin);
    if (!secure || cs_key_reader_ok(client, keywin))
        return;
    rec->status = BadAccess;
    cs_input_report(client, secure->drawable.id);
}

/* Passive key grabs. The core activates a passive grab before any delivery hook runs and
 * hands it the key directly, so a grab that must not activate is hidden from the match
 * for the one key event: its type is cleared just before the core checks the grabs
 * and restored before anything else can look at it (the next key event, the next
 * request, the block handler, a client leaving). A grab taken back is found again
 * through its window's XID and the window's grab list, so a grab or window freed
 * meanwhile is never touched.
 *
 * "Just before the core checks the grabs": ProcessDeviceEvent runs the XACE_KEY_AVAIL
 * hook, then DeviceEventCallback, then CheckDeviceGrabs. XACE_KEY_AVAIL makes the server
 * convert every key event to a core event in a fresh allocation (about 450 instructions
 * per XTEST key request, 5 % of it), DeviceEventCallback costs a call. So the grabs are
 * hidden from DeviceEventCallback (cs_device_event), except for key events the server
 * replays after a freeze (a synchronous grab: their DeviceEventCallback ran when they
 * were queued, none runs at the replay): a key press queued while a device is frozen
 * arms XACE_KEY_AVAIL (cs_key_avail_hook) until no device is frozen any more (the block
 * handler), which is when the queue is empty again. */
#define CS_MAX_HIDDEN 64
static struct {
    GrabPtr grab;
    WindowPtr win;
    XID wid;
    CARD8 type;
} cs_hidden[CS_MAX_HIDDEN];
int cs_nhidden;

Bool cs_dispatch_armed;  /* cs_core_dispatch_hook is on the list: grabs are hidden */

void
cs_restore_grabs(void)
{
    int i;

    for (i = 0; i < cs_nhidden; i++) {
        void *p = NULL;
        GrabPtr g;

        if (dixLookupResourceByType(&p, cs_hidden[i].wid, RT_WINDOW, NullClient,
                                    DixUnknownAccess) != Success || p != cs_hidden[i].win)
            continue;
        for (g = wPassiveGrabs(cs_hidden[i].win); g; g = g->next)
            if (g == cs_hidden[i].grab && g->type == 0) {
                g->type = cs_hidden[i].type;
                break;
            }
    }
    cs_nhidden = 0;
    /* no request pays for the hook while nothing is hidden */
    if (cs_dispatch_armed && DeleteCallback(&XaceHooks[XACE_CORE_DISPATCH],
                                            cs_core_dispatch_hook, NULL))
        cs_dispatch_armed = FALSE;
}

/* A window manager's shortcut: one key with a fixed set of modifiers holding Control,
 * Mod1 (Alt) or Mod4 (Super). Text is typed without those; AnyKey or AnyModifier grabs
 * would take every key. */
static int
cs_grab_is_shortcut(GrabPtr g)
{
    unsigned any = g->grabtype == XI2 ? (unsigned) XIAnyModifier : (unsigned) AnyModifier;

    if (g->detail.exact == AnyKey || g->modifiersDetail.exact == any ||
        g->modifiersDetail.pMask)
        return 0;
    return (g->modifiersDetail.exact & (ControlMask | Mod1Mask | Mod4Mask)) != 0;
}

static int
cs_grab_is_key(GrabPtr g)
{
    switch (g->grabtype) {
    case CORE:
        return g->type == KeyPress;
    case XI2:
        return g->type == XI_KeyPress;
    case XI:
        return cs_xi_event && g->type == cs_xi_event + XI_DeviceKeyPress;
    default:
        return 0;
    }
}

static void
cs_hide_grabs_on(WindowPtr win, WindowPtr secure, WindowPtr keywin)
{
    GrabPtr g;

    for (g = wPassiveGrabs(win); g; g = g->next) {
        ClientPtr owner;

        if (!cs_grab_is_key(g) || cs_grab_is_shortcut(g))
            continue;
        owner = clients[CLIENT_ID(g->resource)];
        if (!owner || cs_key_reader_ok(owner, keywin))
            continue;
        if (cs_nhidden == CS_MAX_HIDDEN) {
            /* never leave a grab able to take the key: refuse it for good */
            LogMessageVerb(X_WARNING, 0, "CAPTURESHIELD: too many passive grabs to hide; "
                           "grab 0x%lx disabled\n", (unsigned long) g->resource);
            g->type = 0;
            continue;
        }
        if (!cs_dispatch_armed) {
            /* every request restores hidden grabs first; without the hook, no hiding */
            if (!AddCallback(&XaceHooks[XACE_CORE_DISPATCH], cs_core_dispatch_hook, NULL)) {
                g->type = 0;    /* fail closed: this grab stays off */
                continue;
            }
            cs_dispatch_armed = TRUE;
        }
        cs_hidden[cs_nhidden].grab = g;
        cs_hidden[cs_nhidden].win = win;
        cs_hidden[cs_nhidden].wid = win->drawable.id;
        cs_hidden[cs_nhidden].type = g->type;
        cs_nhidden++;
        cs_input_want_block();
        g->type = 0;
        cs_input_report(owner, secure->drawable.id);
    }
}

/* A key press of `dev` is about to be matched against the passive grabs: hide those
 * that must not take it. */
static void
cs_key_press(DeviceIntPtr dev)
{
    WindowPtr secure, keywin = NULL;
    int i;

    /* the XKB selections follow the focus before XKB handles the key (and the raw key
     * handler did so already on the usual path) */
    cs_xkb_sync(FALSE);
    if (!dev || dev->deviceGrab.grab || !cs_secure_count())
        return;
    secure = cs_focus_secure(&keywin);
    if (!secure)
        return;
    cs_input_ext();
    /* the windows CheckDeviceGrabs looks at: the focus trace, then the sprite trace */
    if (dev->focus)
        for (i = 0; i < dev->focus->traceGood; i++)
            cs_hide_grabs_on(dev->focus->trace[i], secure, keywin);
    if (dev->spriteInfo && dev->spriteInfo->sprite)
        for (i = 0; i < dev->spriteInfo->sprite->spriteTraceGood; i++)
            cs_hide_grabs_on(dev->spriteInfo->sprite->spriteTrace[i], secure, keywin);
}

/* XACE_KEY_AVAIL, armed only while key presses may be replayed (see above) */
static void
cs_key_avail_hook(CallbackListPtr *list, void *data, void *call)
{
    XaceKeyAvailRec *rec = call;

    (void) list;
    (void) data;
    if (cs_nhidden || cs_dispatch_armed)
        cs_restore_grabs();
    if (rec->event && (rec->event->u.u.type & 0x7f) == KeyPress)
        cs_key_press(rec->keybd);
}

Bool cs_avail_armed;     /* cs_key_avail_hook is on the list */

int
cs_any_frozen(void)
{
    DeviceIntPtr d;

    for (d = inputInfo.devices; d; d = d->next)
        if (d->deviceGrab.sync.frozen)
            return 1;
    return 0;
}

void
cs_avail_disarm(void)
{
    CallbackListPtr *l = &XaceHooks[XACE_KEY_AVAIL];

    if (!cs_avail_armed)
        return;
    DeleteCallback(l, cs_key_avail_hook, NULL);
    cs_avail_armed = FALSE;
    /* an empty list still makes the server convert each key event (XaceHookIsSet) */
    if (*l && !(*l)->list && !(*l)->inCallback)
        DeleteCallbackList(l);
}

/* The head of every server-internal event (dix's eventstr.h, not in the SDK): the byte
 * ET_Internal, then the type from its enum EventType, which keeps ET_KeyPress equal to
 * the core KeyPress. */
struct cs_internal_head {
    unsigned char header;
    int type;
};
#define CS_ET_INTERNAL 0xff
#define CS_ET_KEYPRESS KeyPress

/* DeviceEventCallback: every input event, when it is processed (ProcessDeviceEvent, just
 * before CheckDeviceGrabs) or queued because its device is frozen (EnqueueEvent). */
void
cs_device_event(CallbackListPtr *list, void *data, void *call)
{
    DeviceEventInfoRec *info = call;
    const struct cs_internal_head *ev = (const void *) info->event;

    (void) list;
    (void) data;
    if (cs_nhidden || cs_dispatch_armed)
        cs_restore_grabs();
    /* a head that is not the one above: handled as a key press (fail closed) */
    if (ev && ev->header == CS_ET_INTERNAL && ev->type != CS_ET_KEYPRESS)
        return;
    if (!info->device)
        return;
    if (info->device->deviceGrab.sync.frozen) {
        /* its processInputProc is EnqueueEvent (FreezeThaw): the press is queued, to be
         * replayed later without this callback */
        if (!cs_avail_armed) {
            if (AddCallback(&XaceHooks[XACE_KEY_AVAIL], cs_key_avail_hook, NULL)) {
                cs_avail_armed = TRUE;
                cs_input_want_block();
            } else
                LogMessageVerb(X_ERROR, 0, "CAPTURESHIELD: cannot arm the key hook for "
                               "replayed key events\n");
        }
        return;
    }
    cs_key_press(info->device);
}

/* DeviceEventCallback costs every input event (the callback list's call and this
 * module's), so it is registered only while it can have work (see cs_device_hook):
 * - before any grab there is no passive grab to hide and no frozen device whose queued
 *   keys could be replayed: not registered;
 * - after a grab that can freeze a device (sync mode): registered for good, since a key
 *   queued while no secure window had the focus may be replayed when one has it;
 * - after other grabs only: registered while a secure window has the focus, checked by
 *   the raw key mieq handler before each key event (every key event comes after its raw
 *   event, both from mieq; no key is replayed without a freezing grab).
 * The XKB selections follow the focus through the raw key handler in every case. */

Bool
cs_devev_arm(void)
{
    if (cs_devev_armed)
        return TRUE;
    if (!AddCallback(&DeviceEventCallback, cs_device_event, NULL)) {
        LogMessageVerb(X_ERROR, 0, "CAPTURESHIELD: cannot arm the key event hook; grab "
                       "refused\n");
        return FALSE;
    }
    cs_devev_armed = TRUE;
    return TRUE;
}

/* registered exactly while a secure window has the focus (only after non-freezing grabs;
 * hidden grabs are restored by the dispatch hooks and the block handler either way) */
void
cs_devev_follow(void)
{
    CallbackListPtr *l = &DeviceEventCallback;
    Bool want = cs_focus_secure(NULL) != NULL;

    if (want == cs_devev_armed)
        return;
    if (want) {
        if (!cs_devev_arm())
            LogMessageVerb(X_ERROR, 0, "CAPTURESHIELD: cannot arm the key event hook\n");
        return;
    }
    DeleteCallback(l, cs_device_event, NULL);
    cs_devev_armed = FALSE;
    /* an empty list still costs every input event a call */
    if (*l && !(*l)->list && !(*l)->inCallback)
        DeleteCallbackList(l);
}

/* this file's state, at each server generation's init (cs_input_init) */
void
cs_grabs_reset(void)
{
    cs_nhidden = 0;
    cs_dispatch_armed = FALSE;
    cs_avail_armed = FALSE;
    cs_devev_armed = FALSE;
    cs_devev_sticky = FALSE;
    cs_grab_seen = FALSE;
}

/* The block handler is registered only while it has work (cs_input_want_block, called
 * wherever work appears), and removes itself once none is left: a wakeup with nothing
 * to do costs the server nothing here. Its work, and what its absence would mean:
 * - cs_nhidden: hidden passive grabs, put back (every request and key event puts them
 *   back first as well, through the dispatch hooks);
 * - cs_hier_pending: the request that changed devices is over, answers may be kept
 *   again (absent: none is kept, every key finds the focus again);
 * - cs_avail_armed: the replay hook, dropped once nothing is frozen (absent: it stays,
 *   each key event costs more);
 * - cs_xkb_dirty: an XKB request or a client gone since the last sync; cs_xkb_recheck:
 *   the trust re-check (the timer, every CS_XKB_RECHECK_MS while a secure window has
 *   the focus); a focus change requested (SetInputFocus) while a selection exists. Absent: the
 *   raw key handler (set while any selection can matter, cs_xkb_arm, by the dispatch
 *   hook itself before the XKB request runs) and the work proc queued by that request
 *   sync before any key reaches XKB, so no key event is sent to a client that may not
 *   read it. Held selections are given back when the focus leaves: at the next key, the
 *   next SetInputFocus or XKB request, or the timer's next tick (at most
 *   CS_XKB_RECHECK_MS later; the client then gets one StateNotify with the state as it
 *   is), not looked for at every wakeup. Likewise a secure window that gets the focus
 *   otherwise (the focus window unmapped, the pointer moved under PointerRoot focus, a
 *   tag set on the focus window): the selections are held back at the next key event,
 *   before XKB sees it (the block handler did so at the next wakeup before); what XKB
 *   sends meanwhile from its own timers for a key pressed before (AccessX, repeat) is
 *   not held back.
 * - the raw key handler set or unset to match (cs_xkb_arm; absent: it stays set,
 *   each key pays a sync test).
 * So a missed arm costs time or delays a give-back, never lets a key through. The
 * registration is one flag and one entry; RemoveBlockAndWakeupHandlers from inside
 * the handler marks the entry deleted. */
static Bool cs_block_on;        /* cs_input_block is registered */
static Bool cs_input_open;      /* between init and close */

static void cs_input_block(void *data, void *timeout);
static void cs_input_wakeup(void *data, int result);

static inline Bool
cs_input_block_due(void)
{
    Bool want = cs_nxkb || cs_xkb_any || cs_xkb_dirty || (cs_grab_seen && !cs_devev_sticky);

    return cs_nhidden || cs_hier_pending || cs_avail_armed || cs_xkb_dirty ||
        cs_xkb_recheck || want != cs_mieq_armed ||
        (cs_xkb_keywin && !cs_xkb_timer_on);     /* no timer: look at every wakeup */
}

void
cs_input_want_block(void)
{
    if (cs_block_on || !cs_input_open)
        return;
    if (RegisterBlockAndWakeupHandlers(cs_input_block, cs_input_wakeup, NULL))
        cs_block_on = TRUE;
    else
        LogMessageVerb(X_ERROR, 0, "CAPTURESHIELD: cannot register the input block "
                       "handler\n");
}

static void
cs_input_block(void *data, void *timeout)
{
    Bool force;

    (void) data;
    (void) timeout;
    force = cs_xkb_recheck || (cs_xkb_keywin && !cs_xkb_timer_on);
    if (cs_nhidden)
        cs_restore_grabs();
    if (cs_hier_pending) {              /* the request that changed devices is over */
        cs_hier_pending = FALSE;
        cs_devgen++;
    }
    /* nothing frozen: no key event is queued for a replay */
    if (cs_avail_armed && !cs_any_frozen())
        cs_avail_disarm();
    cs_xkb_recheck = FALSE;
    if (cs_xkb_dirty || cs_nxkb || cs_xkb_any || force)
        cs_xkb_sync(force);
    cs_xkb_arm();
    if (!cs_input_block_due()) {
        RemoveBlockAndWakeupHandlers(cs_input_block, cs_input_wakeup, NULL);
        cs_block_on = FALSE;
    }
}

/* the server calls every wakeup handler it has (no NULL): an empty one */
static void
cs_input_wakeup(void *data, int result)
{
    (void) data;
    (void) result;
}

static void
cs_input_client_cb(CallbackListPtr *list, void *data, void *call)
{
    NewClientInfoRec *ci = call;

    (void) list;
    (void) data;
    if (ci && ci->client && ci->client->clientState == ClientStateGone) {
        cs_xkb_forget(ci->client);
        cs_xkb_dirty = TRUE;
        cs_input_want_block();
    }
    if (cs_nhidden)
        cs_restore_grabs();
}

/* ---- 3. XTEST into a secure window; every request first restores hidden grabs ---- */

static void
cs_dispatch_hook(CallbackListPtr *list, void *data, void *call)
{
    XaceExtAccessRec *rec = call;
    const ExtensionEntry *ext = rec->ext;
    ClientPtr client = rec->client;
    const xReq *req;
    WindowPtr secure, keywin = NULL;
    int type;

    (void) list;
    (void) data;
    if (cs_nhidden)
        cs_restore_grabs();
    if (!cs_xtest_known) {
        /* every extension is initialised before the first request is dispatched */
        cs_xtest = CheckExtension("XTEST");
        cs_ext = CheckExtension(CS_NAME);
        cs_xtest_known = 1;
    }
    if (!ext)
        return;
    if (ext != cs_xtest) {
        /* XKB selections change only by XKB requests; trust by the module's own (Grant) */
        if (ext->base == XkbReqCode || ext == cs_ext) {
            cs_xkb_dirty = TRUE;
            cs_xkb_arm();
            cs_input_want_block();
            if (!cs_xkb_work_queued && cs_secure_count() &&
                QueueWorkProc(cs_xkb_work, serverClient, NULL))
                cs_xkb_work_queued = TRUE;
        }
        return;
    }
    if (rec->status != Success || !client ||
        client->req_len < (sizeof(xReq) + sizeof(xEvent)) / 4)
        return;
    req = (const xReq *) client->requestBuffer;
    if (req->data != 2 /* X_XTestFakeInput */)
        return;
    type = ((const xEvent *) (req + 1))->u.u.type & 0x7f;
    if (type >= LASTEvent) {            /* an XI 1.x event (core types come first) */
        cs_input_ext();
        if (cs_xi_event && type >= cs_xi_event && type < cs_xi_event + IEVENTS)
            type = type - cs_xi_event - XI_DeviceKeyPress + KeyPress;
    }
    /* presses and motion while a secure window has the focus or is under the pointer
     * (motion would take the pointer, and with it the keys or a click, elsewhere);
     * releases never type, and refusing one would leave a key held down, repeating */
    if ((type != KeyPress && type != ButtonPress && type != MotionNotify) ||
        !cs_secure_count())
        return;
    secure = cs_focus_secure(&keywin);
    if (!secure)
        secure = cs_pointer_secure(&keywin);
    if (!secure || cs_key_reader_ok(client, keywin))
        return;
    rec->status = BadAccess;
    cs_input_report(client, secure->drawable.id);
}

void
cs_core_dispatch_hook(CallbackListPtr *list, void *data, void *call)
{
    (void) list;
    (void) data;
    (void) call;
    if (cs_nhidden)
        cs_restore_grabs();
}

/* SendEvent (core and XI) of input events into a secure window; called from the one
 * XACE_SEND_ACCESS callback (defences.c), which the server also calls, without a client,
 * for every key event it delivers to a focus window: one callback costs less there */
void
cs_input_send_check(XaceSendAccessRec *rec)
{
    WindowPtr secure;
    int i;

    if (rec->status != Success || !rec->client || !rec->pWin || !cs_secure_count() ||
        !cs_rule_on(CS_RULE_INPUT))
        return;
    cs_input_ext();
    for (i = 0; i < rec->count; i++)
        if (cs_is_input_event(&rec->events[i]))
            break;
    if (i == rec->count)
        return;
    secure = cs_secure_of(rec->pWin);
    if (!secure || cs_key_reader_ok(rec->client, rec->pWin))
        return;
    rec->status = BadAccess;
    cs_input_report(rec->client, secure->drawable.id);
}

static void
cs_input_close(void)
{
    if (cs_block_on)
        RemoveBlockAndWakeupHandlers(cs_input_block, cs_input_wakeup, NULL);
    cs_block_on = FALSE;
    cs_input_open = FALSE;
    cs_avail_disarm();
    if (cs_dispatch_armed)
        DeleteCallback(&XaceHooks[XACE_CORE_DISPATCH], cs_core_dispatch_hook, NULL);
    cs_dispatch_armed = FALSE;
    if (cs_devev_armed)
        DeleteCallback(&DeviceEventCallback, cs_device_event, NULL);
    cs_devev_armed = FALSE;
    cs_xkb_close();
}

Bool
cs_input_init(void)
{
    cs_grabs_reset();
    cs_xkb_reset();
    cs_focus_reset();
    cs_block_on = FALSE;
    cs_input_open = FALSE;
    cs_xtest = NULL;
    cs_ext = NULL;
    cs_xtest_known = 0;
    cs_input_ext();
    if (!dixRegisterPrivateKey(&cs_input_key_rec, PRIVATE_CLIENT,
                               sizeof(struct cs_input_client)))
        return FALSE;
    if (!cs_add_callback(&XaceHooks[XACE_RECEIVE_ACCESS], cs_receive_hook, NULL) ||
        !cs_add_callback(&XaceHooks[XACE_DEVICE_ACCESS], cs_device_hook, NULL) ||
        !cs_add_callback(&XaceHooks[XACE_EXT_DISPATCH], cs_dispatch_hook, NULL) ||
        !cs_add_callback(&ClientStateCallback, cs_input_client_cb, NULL))
        return FALSE;
    /* the first sync (cs_xkb_dirty) and the raw key handler once the server runs
     * (mieqInit clears the handlers after this): the block handler from the start. It
     * goes at close down (the server drops it at a reset too, but a failed init must
     * leave nothing) and the on-demand hooks with it. */
    if (!RegisterBlockAndWakeupHandlers(cs_input_block, cs_input_wakeup, NULL))
        return FALSE;
    cs_block_on = TRUE;
    cs_input_open = TRUE;
    return cs_on_close(cs_input_close);
}
