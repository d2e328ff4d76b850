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
 *   XIQueryPointer and the motion histories are not refused (dix would answer them with
 *   an error, which ends toolkits that do not expect one: a bound);
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
    WindowPtr secure, under = NULL;

    if (!(rec->access_mode & DixReadAccess) || !cs_rule_on(CS_RULE_POINTER))
        return 0;
    /* only where dix answers a refused read without an error (QueryPointer: position 0,0):
     * an error to XIQueryPointer or a motion history request, which toolkits send at any
     * time and do not expect to fail, ends many of them (Xlib's default error handler) */
    if (!cs_req(client, X_QueryPointer, -1))
        return 0;
    if (!(secure = cs_pointer_secure(&under)) || cs_key_reader_ok(client, secure))
        return 0;
    rec->status = BadAccess;
    cs_input_report(client, secure->drawable.id);
    return 1;
}
