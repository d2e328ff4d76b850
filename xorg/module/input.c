/* CaptureShield Xorg module: secure input (rule "input"). While a secure window (or a
 * window inside one) has the keyboard focus, key events reach only trusted clients and the
 * client owning every secure window the keys pass; other clients can neither read the key
 * state, take the keys with a grab, nor type or click into a secure window with XTEST or
 * SendEvent, and XKB events that tell which key went down (StateNotify, AccessXNotify,
 * ActionMessage, ControlsNotify, the indicator and extension device notifications, bells)
 * are held back from them. Refusals: CaptureNotify kind 8, once per client per focus
 * period. */
#include "input-int.h"

/* This file's state. */
static struct {
    const ExtensionEntry *xtest;        /* XTEST (NULL: absent), once xtest_known */
    const ExtensionEntry *ext;          /* this module's extension, once xtest_known */
    int xtest_known;
    Bool block_on;              /* cs_input_block is registered */
    Bool open;                  /* between init and close */
} cs_input_st;

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
    if (i == rec->count) {
        /* no key event (a delivery is of one kind): a pointer event over a secure window
         * is refused there (pointer.c) */
        cs_pointer_receive_check(rec);
        return;
    }
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
        cs_focus_st.devgen++;
        cs_focus_st.hier_pending = TRUE;
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
                cs_grabs_st.devev_sticky = TRUE;
                cs_input_want_block();  /* the raw key handler may go */
            }
            else if (rec->status == Success)
                rec->status = BadAlloc;
        } else if (!cs_grabs_st.grab_seen) {
            cs_grabs_st.grab_seen = TRUE;
            cs_xkb_arm();               /* the raw key handler follows the focus */
            cs_devev_follow();
            if (cs_focus_secure(NULL) && !cs_grabs_st.devev_armed && rec->status == Success)
                rec->status = BadAlloc;
        }
    }
    if (rec->access_mode & DixSetFocusAccess) {
        cs_focus_st.period++;            /* the focus may move: a new period for reports */
        if (cs_xkb_st.n || cs_xkb_st.any)
            cs_input_want_block();      /* selections held back or given back to match */
    }
    if (rec->status != Success || !client || client == serverClient || !rec->dev ||
        !cs_secure_count())
        return;
    cs_input_ext();
    /* the keyboard's meaning (keymap.c) and the pointer's position (pointer.c) */
    if (cs_keymap_check(rec) || cs_pointer_device_check(rec))
        return;
    /* moving the focus (core SetInputFocus, XI SetDeviceFocus, XISetFocus) or warping the
     * pointer (WarpPointer, XIWarpPointer) away from a secure window: the keys would
     * follow. The window manager (the SubstructureRedirect holder) keeps doing both. */
    focus = (rec->access_mode & DixSetFocusAccess) && rec->dev->key;
    warp = (rec->access_mode & DixWriteAccess) &&
        (cs_request_is(client, X_WarpPointer, -1) ||
         (cs_focus_st.xi_major && cs_request_is(client, cs_focus_st.xi_major, X_XIWarpPointer)));
    if (focus || warp) {
        secure = cs_focus_secure(&keywin);
        if (!secure && warp)
            secure = cs_pointer_secure(&keywin);
        if (!secure || cs_key_reader_ok(client, keywin) || cs_wmfocus_allowed(client))
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
         (cs_focus_st.xi_major && (cs_request_is(client, cs_focus_st.xi_major, X_GrabDevice) ||
                          cs_request_is(client, cs_focus_st.xi_major, X_XIGrabDevice))));
    /* the key state: core QueryKeymap (answered "no key down" on BadAccess), XI
     * QueryDeviceState */
    read = (rec->access_mode & DixReadAccess) &&
        (cs_request_is(client, X_QueryKeymap, -1) ||
         (cs_focus_st.xi_major && cs_request_is(client, cs_focus_st.xi_major, X_QueryDeviceState)));
    if (!grab && !read)
        return;
    secure = cs_focus_secure(&keywin);
    if (!secure || cs_key_reader_ok(client, keywin))
        return;
    rec->status = BadAccess;
    cs_input_report(client, secure->drawable.id);
}

/* The block handler is registered only while it has work (cs_input_want_block, called
 * wherever work appears), and removes itself once none is left: a wakeup with nothing
 * to do costs the server nothing here. Its work, and what its absence would mean:
 * - cs_grabs_st.nhidden: hidden passive grabs, put back (every request and key event puts them
 *   back first as well, through the dispatch hooks);
 * - cs_focus_st.hier_pending: the request that changed devices is over, answers may be kept
 *   again (absent: none is kept, every key finds the focus again);
 * - cs_grabs_st.avail_armed: the replay hook, dropped once nothing is frozen (absent: it stays,
 *   each key event costs more);
 * - cs_xkb_st.dirty: an XKB request or a client gone since the last sync; cs_xkb_st.recheck:
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
static void cs_input_block(void *data, void *timeout);
static void cs_input_wakeup(void *data, int result);

static inline Bool
cs_input_block_due(void)
{
    Bool want = cs_xkb_st.n || cs_xkb_st.any || cs_xkb_st.dirty ||
        (cs_grabs_st.grab_seen && !cs_grabs_st.devev_sticky);

    return cs_grabs_st.nhidden || cs_focus_st.hier_pending || cs_grabs_st.avail_armed ||
        cs_xkb_st.dirty || cs_xkb_st.recheck || want != cs_xkb_st.mieq_armed ||
        (cs_xkb_st.keywin && !cs_xkb_st.timer_on);     /* no timer: look at every wakeup */
}

void
cs_input_want_block(void)
{
    if (cs_input_st.block_on || !cs_input_st.open)
        return;
    if (RegisterBlockAndWakeupHandlers(cs_input_block, cs_input_wakeup, NULL))
        cs_input_st.block_on = TRUE;
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
    force = cs_xkb_st.recheck || (cs_xkb_st.keywin && !cs_xkb_st.timer_on);
    if (cs_grabs_st.nhidden)
        cs_restore_grabs();
    if (cs_focus_st.hier_pending) {              /* the request that changed devices is over */
        cs_focus_st.hier_pending = FALSE;
        cs_focus_st.devgen++;
    }
    /* nothing frozen: no key event is queued for a replay */
    if (cs_grabs_st.avail_armed && !cs_any_frozen())
        cs_avail_disarm();
    cs_xkb_st.recheck = FALSE;
    if (cs_xkb_st.dirty || cs_xkb_st.n || cs_xkb_st.any || force)
        cs_xkb_sync(force);
    cs_xkb_arm();
    if (!cs_input_block_due()) {
        RemoveBlockAndWakeupHandlers(cs_input_block, cs_input_wakeup, NULL);
        cs_input_st.block_on = FALSE;
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
        cs_xkb_st.dirty = TRUE;
        cs_input_want_block();
    }
    if (cs_grabs_st.nhidden)
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
    if (cs_grabs_st.nhidden)
        cs_restore_grabs();
    if (!cs_input_st.xtest_known) {
        /* every extension is initialised before the first request is dispatched */
        cs_input_st.xtest = CheckExtension("XTEST");
        cs_input_st.ext = CheckExtension(CS_NAME);
        cs_input_st.xtest_known = 1;
    }
    if (!ext)
        return;
    if (ext != cs_input_st.xtest) {
        /* XKB selections change only by XKB requests; trust by the module's own (Grant) */
        if (ext->base == XkbReqCode || ext == cs_input_st.ext) {
            cs_xkb_st.dirty = TRUE;
            cs_xkb_arm();
            cs_input_want_block();
            if (!cs_xkb_st.work_queued && cs_secure_count() &&
                QueueWorkProc(cs_xkb_work, serverClient, NULL))
                cs_xkb_st.work_queued = TRUE;
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
        if (cs_focus_st.xi_event && type >= cs_focus_st.xi_event &&
            type < cs_focus_st.xi_event + IEVENTS)
            type = type - cs_focus_st.xi_event - XI_DeviceKeyPress + KeyPress;
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
    if (cs_grabs_st.nhidden)
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
    if (cs_input_st.block_on)
        RemoveBlockAndWakeupHandlers(cs_input_block, cs_input_wakeup, NULL);
    cs_input_st.block_on = FALSE;
    cs_input_st.open = FALSE;
    cs_avail_disarm();
    if (cs_grabs_st.dispatch_armed)
        DeleteCallback(&XaceHooks[XACE_CORE_DISPATCH], cs_core_dispatch_hook, NULL);
    cs_grabs_st.dispatch_armed = FALSE;
    if (cs_grabs_st.devev_armed)
        DeleteCallback(&DeviceEventCallback, cs_device_event, NULL);
    cs_grabs_st.devev_armed = FALSE;
    cs_xkb_close();
}

Bool
cs_input_init(void)
{
    cs_grabs_reset();
    cs_xkb_reset();
    cs_focus_reset();
    cs_input_st.block_on = FALSE;
    cs_input_st.open = FALSE;
    cs_input_st.xtest = NULL;
    cs_input_st.ext = NULL;
    cs_input_st.xtest_known = 0;
    cs_input_ext();
    if (!dixRegisterPrivateKey(&cs_input_key_rec, PRIVATE_CLIENT,
                               sizeof(struct cs_input_client)))
        return FALSE;
    if (!cs_add_callback(&XaceHooks[XACE_RECEIVE_ACCESS], cs_receive_hook, NULL) ||
        !cs_add_callback(&XaceHooks[XACE_DEVICE_ACCESS], cs_device_hook, NULL) ||
        !cs_add_callback(&XaceHooks[XACE_EXT_DISPATCH], cs_dispatch_hook, NULL) ||
        !cs_add_callback(&ClientStateCallback, cs_input_client_cb, NULL))
        return FALSE;
    /* the first sync (cs_xkb_st.dirty) and the raw key handler once the server runs
     * (mieqInit clears the handlers after this): the block handler from the start. It
     * goes at close down (the server drops it at a reset too, but a failed init must
     * leave nothing) and the on-demand hooks with it. */
    if (!RegisterBlockAndWakeupHandlers(cs_input_block, cs_input_wakeup, NULL))
        return FALSE;
    cs_input_st.block_on = TRUE;
    cs_input_st.open = TRUE;
    return cs_on_close(cs_input_close) && cs_wmfocus_init() && cs_pointer_init() &&
        cs_modstate_init();
}
