/* CaptureShield Xorg module: secure input, grabs: passive key grabs hidden from a key press
 * they must not take, the key event hooks (DeviceEventCallback, XACE_KEY_AVAIL). */
#include "input-int.h"

/* this file's state (input-int.h) */
struct cs_grabs_state cs_grabs_st;

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
void
cs_restore_grabs(void)
{
    int i;

    for (i = 0; i < cs_grabs_st.nhidden; i++) {
        void *p = NULL;
        GrabPtr g;

        if (dixLookupResourceByType(&p, cs_grabs_st.hidden[i].wid, RT_WINDOW, NullClient,
                                    DixUnknownAccess) != Success || p != cs_grabs_st.hidden[i].win)
            continue;
        for (g = wPassiveGrabs(cs_grabs_st.hidden[i].win); g; g = g->next)
            if (g == cs_grabs_st.hidden[i].grab && g->type == 0) {
                g->type = cs_grabs_st.hidden[i].type;
                break;
            }
    }
    cs_grabs_st.nhidden = 0;
    /* no request pays for the hook while nothing is hidden */
    if (cs_grabs_st.dispatch_armed && DeleteCallback(&XaceHooks[XACE_CORE_DISPATCH],
                                            cs_core_dispatch_hook, NULL))
        cs_grabs_st.dispatch_armed = FALSE;
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
        return cs_focus_st.xi_event && g->type == cs_focus_st.xi_event + XI_DeviceKeyPress;
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
        if (cs_grabs_st.nhidden == CS_MAX_HIDDEN) {
            /* never leave a grab able to take the key: refuse it for good */
            LogMessageVerb(X_WARNING, 0, "CAPTURESHIELD: too many passive grabs to hide; "
                           "grab 0x%lx disabled\n", (unsigned long) g->resource);
            g->type = 0;
            continue;
        }
        if (!cs_grabs_st.dispatch_armed) {
            /* every request restores hidden grabs first; without the hook, no hiding */
            if (!AddCallback(&XaceHooks[XACE_CORE_DISPATCH], cs_core_dispatch_hook, NULL)) {
                g->type = 0;    /* fail closed: this grab stays off */
                continue;
            }
            cs_grabs_st.dispatch_armed = TRUE;
        }
        cs_grabs_st.hidden[cs_grabs_st.nhidden].grab = g;
        cs_grabs_st.hidden[cs_grabs_st.nhidden].win = win;
        cs_grabs_st.hidden[cs_grabs_st.nhidden].wid = win->drawable.id;
        cs_grabs_st.hidden[cs_grabs_st.nhidden].type = g->type;
        cs_grabs_st.nhidden++;
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
    if (cs_grabs_st.nhidden || cs_grabs_st.dispatch_armed)
        cs_restore_grabs();
    if (rec->event && (rec->event->u.u.type & 0x7f) == KeyPress)
        cs_key_press(rec->keybd);
}

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

    if (!cs_grabs_st.avail_armed)
        return;
    DeleteCallback(l, cs_key_avail_hook, NULL);
    cs_grabs_st.avail_armed = FALSE;
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
    if (cs_grabs_st.nhidden || cs_grabs_st.dispatch_armed)
        cs_restore_grabs();
    /* a head that is not the one above: handled as a key press (fail closed) */
    if (ev && ev->header == CS_ET_INTERNAL && ev->type != CS_ET_KEYPRESS)
        return;
    if (!info->device)
        return;
    if (info->device->deviceGrab.sync.frozen) {
        /* its processInputProc is EnqueueEvent (FreezeThaw): the press is queued, to be
         * replayed later without this callback */
        if (!cs_grabs_st.avail_armed) {
            if (AddCallback(&XaceHooks[XACE_KEY_AVAIL], cs_key_avail_hook, NULL)) {
                cs_grabs_st.avail_armed = TRUE;
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
    if (cs_grabs_st.devev_armed)
        return TRUE;
    if (!AddCallback(&DeviceEventCallback, cs_device_event, NULL)) {
        LogMessageVerb(X_ERROR, 0, "CAPTURESHIELD: cannot arm the key event hook; grab "
                       "refused\n");
        return FALSE;
    }
    cs_grabs_st.devev_armed = TRUE;
    return TRUE;
}

/* registered exactly while a secure window has the focus (only after non-freezing grabs;
 * hidden grabs are restored by the dispatch hooks and the block handler either way) */
void
cs_devev_follow(void)
{
    CallbackListPtr *l = &DeviceEventCallback;
    Bool want = cs_focus_secure(NULL) != NULL;

    if (want == cs_grabs_st.devev_armed)
        return;
    if (want) {
        if (!cs_devev_arm())
            LogMessageVerb(X_ERROR, 0, "CAPTURESHIELD: cannot arm the key event hook\n");
        return;
    }
    DeleteCallback(l, cs_device_event, NULL);
    cs_grabs_st.devev_armed = FALSE;
    /* an empty list still costs every input event a call */
    if (*l && !(*l)->list && !(*l)->inCallback)
        DeleteCallbackList(l);
}

/* this file's state, at each server generation's init (cs_input_init) */
void
cs_grabs_reset(void)
{
    cs_grabs_st.nhidden = 0;
    cs_grabs_st.dispatch_armed = FALSE;
    cs_grabs_st.avail_armed = FALSE;
    cs_grabs_st.devev_armed = FALSE;
    cs_grabs_st.devev_sticky = FALSE;
    cs_grabs_st.grab_seen = FALSE;
}
