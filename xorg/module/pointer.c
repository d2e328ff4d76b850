/* CaptureShield Xorg module: where the pointer is and what it does over a secure window
 * (rule pointer).
 *
 * An on-screen keyboard, a PIN pad or any secure window read by clicks gives its secret
 * away through the pointer: every position over it (QueryPointer polled, XIQueryPointer,
 * the motion history), every click with its coordinates (XI2 raw and device events on the
 * root, core and XI events selected on windows that contain it). While the pointer is
 * over a secure window, an untrusted client that does not own it gets:
 * - QueryPointer: the answer dix gives a client refused read access to the pointer
 *   (position 0,0, no child, no mask: ProcQueryPointer on XACE_DEVICE_ACCESS BadAccess);
 * - XIQueryPointer: the same answer, made here (dix would answer a refused read with an
 *   error, which ends toolkits that do not expect one: GTK 3 sends it at any time): root,
 *   no child, position 0,0, no button, no modifier, group 0;
 * - GetMotionEvents: no event (an empty motion history, as a server that keeps none);
 *   XI 1.x GetDeviceMotionEvents is not changed (a bound);
 * - no pointer event: button presses and releases, motion, enter and leave, core, XI 1.x
 *   and XI2, raw included, are not delivered to it (XACE_RECEIVE_ACCESS), except into a
 *   pointer grab it holds because the user pressed a button on its own passive grab (a
 *   window manager's click-to-focus, a drag it started: the user's own choice).
 * The window's owner and trusted clients get everything. A bound: a click that activates
 * a passive grab reaches the grab's client without XACE (dix's ActivatePassiveGrab), so
 * a client with a passive button grab on a window that holds the secure window (the root,
 * a frame) gets that first press, with its position. */
#include "input-int.h"

/* A pointer event: core 4-8, XI 1.x DeviceButtonPress/Release, DeviceMotionNotify,
 * ProximityIn/Out, XI2 ButtonPress .. Leave and the raw button, motion and touch events. */
static int
cs_is_pointer_event(const xEvent *ev)
{
    int type = ev->u.u.type & 0x7f;

    if (type >= ButtonPress && type <= LeaveNotify)
        return 1;
    if (type == GenericEvent) {
        const xGenericEvent *ge = (const xGenericEvent *) ev;
        int t = ge->evtype;
        return cs_focus_st.xi_major && ge->extension == cs_focus_st.xi_major &&
            ((t >= XI_ButtonPress && t <= XI_Leave) || t == XI_RawButtonPress ||
             t == XI_RawButtonRelease || t == XI_RawMotion ||
             (t >= XI_TouchBegin && t <= XI_TouchEnd) ||
             (t >= XI_RawTouchBegin && t <= XI_RawTouchEnd));
    }
    if (cs_focus_st.xi_event && type >= cs_focus_st.xi_event && type < cs_focus_st.xi_event + IEVENTS) {
        int t = type - cs_focus_st.xi_event;
        return t == XI_DeviceButtonPress || t == XI_DeviceButtonRelease ||
            t == XI_DeviceMotionNotify || t == XI_ProximityIn || t == XI_ProximityOut ||
            t == XI_DeviceValuator;
    }
    return 0;
}

/* The client holds a pointer grab that the user's press on its passive grab started. */
static int
cs_user_grab(ClientPtr client)
{
    DeviceIntPtr d;

    for (d = inputInfo.devices; d; d = d->next) {
        GrabPtr g = d->deviceGrab.grab;
        if (g && d->valuator && d->deviceGrab.fromPassiveGrab && SameClient(g, client))
            return 1;
    }
    return 0;
}

/* From cs_receive_hook (input.c), once a secure window exists: 1 when it refused. */
int
cs_pointer_receive_check(XaceReceiveAccessRec *rec)
{
    WindowPtr secure, under = NULL;
    int i;

    if (!cs_rule_on(CS_RULE_POINTER))
        return 0;
    for (i = 0; i < rec->count; i++)
        if (cs_is_pointer_event(&rec->events[i]))
            break;
    if (i == rec->count || !(secure = cs_pointer_secure(&under)))
        return 0;
    if (cs_key_reader_ok(rec->client, secure) || cs_user_grab(rec->client))
        return 0;
    rec->status = BadAccess;
    cs_input_report(rec->client, secure->drawable.id);
    return 1;
}

static int cs_pointer_read_refused(ClientPtr client);

static int
cs_req(ClientPtr client, int major, int minor)
{
    return client->majorOp == major && (minor < 0 || client->minorOp == minor);
}

/* From cs_device_hook (input.c), once a secure window exists and the access was granted
 * so far: 1 when it refused. */
int
cs_pointer_device_check(XaceDeviceAccessRec *rec)
{
    ClientPtr client = rec->client;

    if (!(rec->access_mode & DixReadAccess) || !cs_rule_on(CS_RULE_POINTER))
        return 0;
    /* only where dix answers a refused read without an error (QueryPointer: position 0,0):
     * an error to XIQueryPointer or a motion history request, which toolkits send at any
     * time and do not expect to fail, ends many of them (Xlib's default error handler);
     * those two are answered below (cs_ProcXI, cs_ProcGetMotionEvents) */
    if (!cs_req(client, X_QueryPointer, -1) || !cs_pointer_read_refused(client))
        return 0;
    rec->status = BadAccess;
    return 1;
}

/* ---- the answers made here: XIQueryPointer and GetMotionEvents ---- */

static struct {
    int xi_major;
    CsProcPtr xi_orig, xi_sorig, motion_orig;
} cs_pointer_st;

/* A read of the pointer's position by `client` now: refused (and reported) while the
 * pointer is over a secure window it may not read. */
static int
cs_pointer_read_refused(ClientPtr client)
{
    WindowPtr secure, under = NULL;

    if (!cs_rule_on(CS_RULE_POINTER) || !cs_secure_count() || cs_client_trusted(client))
        return 0;
    cs_input_ext();
    if (!(secure = cs_pointer_secure(&under)) || cs_key_reader_ok(client, secure))
        return 0;
    cs_input_report(client, secure->drawable.id);
    return 1;
}

static int
cs_ProcXI(ClientPtr client)
{
    const xXIQueryPointerReq *req = (const xXIQueryPointerReq *) client->requestBuffer;
    xXIQueryPointerReply rep;
    DeviceIntPtr dev;
    WindowPtr win;
    CARD16 deviceid;
    Window wid;

    if (client->minorOp != X_XIQueryPointer || client->req_len != sizeof(*req) >> 2)
        goto pass;
    deviceid = req->deviceid;
    wid = req->win;
    if (cs_req_swapped(client)) {
        deviceid = bswap_16(deviceid);
        wid = bswap_32(wid);
    }
    /* what dix checks first, with the server's rights: its errors stay its own */
    if (dixLookupDevice(&dev, deviceid, serverClient, DixReadAccess) != Success ||
        !dev->valuator || IsKeyboardDevice(dev) || (!IsMaster(dev) && !IsFloating(dev)) ||
        dixLookupWindow(&win, wid, serverClient, DixGetAttrAccess) != Success ||
        !cs_pointer_read_refused(client))
        goto pass;
    memset(&rep, 0, sizeof(rep));
    rep.repType = X_Reply;
    rep.RepType = X_XIQueryPointer;
    rep.sequenceNumber = client->sequence;
    rep.root = win->drawable.pScreen->root->drawable.id;
    rep.same_screen = xTrue;
    if (client->swapped) {
        swaps(&rep.sequenceNumber);
        swapl(&rep.root);
    }
    WriteToClient(client, sizeof(rep), &rep);
    return Success;
pass:
    /* XIQueryPointer's modifiers and group: CS_RULE_MODIFIERS (modstate.c) */
    return cs_modstate_call(client, client->minorOp == X_XIQueryPointer,
                            cs_req_swapped(client) ? cs_pointer_st.xi_sorig :
                            cs_pointer_st.xi_orig);
}

static int
cs_ProcGetMotionEvents(ClientPtr client)
{
    const xGetMotionEventsReq *req = (const xGetMotionEventsReq *) client->requestBuffer;
    xGetMotionEventsReply rep;
    WindowPtr win;

    if (client->req_len != sizeof(*req) >> 2 ||
        dixLookupWindow(&win, req->window, serverClient, DixGetAttrAccess) != Success ||
        !cs_pointer_read_refused(client))
        return cs_pointer_st.motion_orig(client);
    memset(&rep, 0, sizeof(rep));
    rep.type = X_Reply;
    rep.sequenceNumber = client->sequence;
    if (client->swapped)
        swaps(&rep.sequenceNumber);
    WriteToClient(client, sizeof(rep), &rep);
    return Success;
}

/* From cs_input_init: the XInputExtension's dispatcher (both byte orders) and the core
 * GetMotionEvents (ProcVector: a swapped client's request comes swapped by then). */
Bool
cs_pointer_init(void)
{
    ExtensionEntry *e;

    memset(&cs_pointer_st, 0, sizeof(cs_pointer_st));
    if (!cs_wrap_proc(X_GetMotionEvents, cs_ProcGetMotionEvents, &cs_pointer_st.motion_orig, NULL))
        return FALSE;
    if (!(e = CheckExtension("XInputExtension")))
        return TRUE;
    cs_pointer_st.xi_major = e->base;
    return cs_wrap_proc(e->base, cs_ProcXI, &cs_pointer_st.xi_orig, &cs_pointer_st.xi_sorig);
}
