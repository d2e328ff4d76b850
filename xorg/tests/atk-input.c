/* CaptureShield Xorg tests: secure input (t-input.sh). A victim window that has the keyboard
 * focus and counts the keys it gets; a typist (XTEST: the user's keyboard when run as a
 * trusted program, an attack otherwise); listeners that try to learn the keys (XI2 raw
 * events, QueryKeymap polling, a passive AnyKey grab, an active keyboard grab, KeyPress
 * selected on the victim, XKB events that carry key codes or the modifier and LED state);
 * SendEvent into the victim; a shortcut grab (Control+key). */
#include "csprobe.h"
#include <poll.h>
#include <time.h>
#include <X11/extensions/XKBproto.h>

#define NKEYS 13
static const uint8_t keycodes[NKEYS] = { 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 38, 39, 40 };

static int xkb_base;
static int xkb_setup(int dev, int slow, unsigned mask, int *supported);

/* ---- victim SECURE: a 200x200 window at 100,100 (secure if SECURE=1) that takes the
 * focus, and selects XKB StateNotify (as Qt and GTK do); commands on stdin: "count" prints
 * keys=N buttons=M xkb_state=S (StateNotify naming a key; and resets), "focus" takes the
 * focus again ---- */
static void
victim_event(const xcb_generic_event_t *ev, long *keys, long *buttons, long *xkb_state)
{
    const uint8_t *b = (const uint8_t *) ev;

    if ((ev->response_type & 0x7f) == XCB_KEY_PRESS)
        (*keys)++;
    else if ((ev->response_type & 0x7f) == XCB_BUTTON_PRESS)
        (*buttons)++;
    else if ((ev->response_type & 0x7f) == xkb_base && b[1] == XkbStateNotify &&
             ((const xkbStateNotify *) b)->keycode)
        (*xkb_state)++;
}

static int
victim_input(int secure)
{
    xcb_window_t w;
    uint32_t mask = XCB_EVENT_MASK_KEY_PRESS | XCB_EVENT_MASK_BUTTON_PRESS |
        XCB_EVENT_MASK_EXPOSURE | XCB_EVENT_MASK_STRUCTURE_NOTIFY;
    long keys = 0, buttons = 0, xkb_state = 0;
    char line[64];
    struct pollfd p[2];
    int supported;

    conn();
    if (xkb_setup(XkbUseCoreKbd, 0, XkbStateNotifyMask, &supported) || !supported)
        die("victim: no XKB");
    w = mkwin(root, 100, 100, 200, 200, RED, 0);
    xcb_change_window_attributes(c, w, XCB_CW_EVENT_MASK, &mask);
    if (secure)
        set_secure(w, 1);
    xcb_map_window(c, w);
    wait_mapped(w);
    xcb_set_input_focus(c, XCB_INPUT_FOCUS_POINTER_ROOT, w, XCB_CURRENT_TIME);
    sync_();
    printf("win=0x%x base=0x%x\n", w, xcb_get_setup(c)->resource_id_base);
    fflush(stdout);
    p[0].fd = xcb_get_file_descriptor(c);
    p[0].events = POLLIN;
    p[1].fd = 0;
    p[1].events = POLLIN;
    for (;;) {
        xcb_generic_event_t *ev;

        while ((ev = xcb_poll_for_event(c))) {
            victim_event(ev, &keys, &buttons, &xkb_state);
            free(ev);
        }
        if (xcb_connection_has_error(c))
            return 1;
        if (poll(p, 2, 100) < 0)
            continue;
        if (p[1].revents) {
            if (!fgets(line, sizeof(line), stdin))
                return 0;
            if (!strncmp(line, "count", 5)) {
                sync_();
                while ((ev = xcb_poll_for_event(c))) {
                    victim_event(ev, &keys, &buttons, &xkb_state);
                    free(ev);
                }
                printf("keys=%ld buttons=%ld xkb_state=%ld\n", keys, buttons, xkb_state);
                fflush(stdout);
                keys = buttons = xkb_state = 0;
            } else if (!strncmp(line, "focus", 5)) {
                xcb_set_input_focus(c, XCB_INPUT_FOCUS_POINTER_ROOT, w, XCB_CURRENT_TIME);
                sync_();
                printf("focused\n");
                fflush(stdout);
            }
        }
    }
}

/* ---- type [MODKEY]: NKEYS keys through XTEST, each pressed and released with pauses (a
 * poller sees each one down); MODKEY held around each (37: Control_L) ---- */
static int
type_keys(int modkey)
{
    int xtest, i, err = 0, e, sent = 0;

    conn();
    xtest = ext_major("XTEST");
    if (xtest < 0)
        die("no XTEST");
    for (i = 0; i < NKEYS; i++) {
        if (modkey)
            cs_xtest_fake(xtest, XCB_KEY_PRESS, modkey, 0, 0);
        e = cs_xtest_fake(xtest, XCB_KEY_PRESS, keycodes[i], 0, 0);
        usleep(15000);
        cs_xtest_fake(xtest, XCB_KEY_RELEASE, keycodes[i], 0, 0);
        if (modkey)
            cs_xtest_fake(xtest, XCB_KEY_RELEASE, modkey, 0, 0);
        usleep(15000);
        if (e)
            err = e;
        else
            sent++;
    }
    sync_();
    printf("sent=%d err=%d\n", sent, err);
    return 0;
}

/* ---- mpxtype KBD XKBD WIN: a second master keyboard KBD (xinput create-master) takes
 * the focus to WIN (XI SetDeviceFocus), then NKEYS keys through XTEST on its XTEST
 * keyboard XKBD (XI DeviceKeyPress/Release with that device id) ---- */
static int
mpx_type(int kbd, int xkbd, xcb_window_t win)
{
    xcb_query_extension_reply_t *q;
    int xi, xi_event, xtest, i, err = 0, e, sent = 0, ferr;
    struct {
        uint8_t major, minor;
        uint16_t len;
        uint32_t focus, time;
        uint8_t revert, device;
        uint16_t pad;
    } sf;

    conn();
    q = xcb_query_extension_reply(c, xcb_query_extension(c, 15, "XInputExtension"), NULL);
    if (!q || !q->present)
        die("no XInputExtension");
    xi = q->major_opcode;
    xi_event = q->first_event;
    free(q);
    xtest = ext_major("XTEST");
    sf.major = xi;
    sf.minor = 21;              /* X_SetDeviceFocus */
    sf.len = 4;
    sf.focus = win;
    sf.time = 0;
    sf.revert = 1;              /* RevertToPointerRoot */
    sf.device = (uint8_t) kbd;
    sf.pad = 0;
    ferr = raw_void(&sf, sizeof(sf));
    for (i = 0; i < NKEYS; i++) {
        e = cs_xtest_fake_dev(xtest, xi_event + 1, keycodes[i], 0, 0, (uint8_t) xkbd);   /* DeviceKeyPress */
        usleep(15000);
        cs_xtest_fake_dev(xtest, xi_event + 2, keycodes[i], 0, 0, (uint8_t) xkbd);       /* DeviceKeyRelease */
        usleep(15000);
        if (e)
            err = e;
        else
            sent++;
    }
    sync_();
    printf("focus_err=%d sent=%d err=%d\n", ferr, sent, err);
    return 0;
}

/* ---- click N: pointer to 200,200 (inside the victim), N button-1 clicks ---- */
static int
click(int n)
{
    int xtest, i, err = 0, e, sent = 0, merr;

    conn();
    xtest = ext_major("XTEST");
    merr = cs_xtest_fake(xtest, XCB_MOTION_NOTIFY, 0, 200, 200);
    for (i = 0; i < n; i++) {
        e = cs_xtest_fake(xtest, XCB_BUTTON_PRESS, 1, 0, 0);
        cs_xtest_fake(xtest, XCB_BUTTON_RELEASE, 1, 0, 0);
        if (e)
            err = e;
        else
            sent++;
    }
    sync_();
    printf("sent=%d err=%d motion_err=%d\n", sent, err, merr);
    return 0;
}

/* ---- sendevent WIN: NKEYS synthetic KeyPress events sent to WIN ---- */
static int
sendevent(xcb_window_t w)
{
    int i, err = 0, e, sent = 0;

    conn();
    for (i = 0; i < NKEYS; i++) {
        xcb_key_press_event_t ev;

        memset(&ev, 0, sizeof(ev));
        ev.response_type = XCB_KEY_PRESS;
        ev.detail = keycodes[i];
        ev.root = root;
        ev.event = w;
        ev.same_screen = 1;
        e = check(xcb_send_event_checked(c, 0, w, XCB_EVENT_MASK_KEY_PRESS, (char *) &ev));
        if (e)
            err = e;
        else
            sent++;
    }
    printf("sent=%d err=%d\n", sent, err);
    return 0;
}

/* listeners: set up, print "ready", count for MS milliseconds, print the counts */
static long n_key, n_raw;
static int xi_major;

static void
on_key(xcb_generic_event_t *ev)
{
    if ((ev->response_type & 0x7f) == XCB_KEY_PRESS)
        n_key++;
}

static void
on_xi2(xcb_generic_event_t *ev)
{
    xcb_ge_generic_event_t *ge = (xcb_ge_generic_event_t *) ev;

    if ((ev->response_type & 0x7f) != XCB_GE_GENERIC || ge->extension != xi_major)
        return;
    if (ge->event_type == 2)        /* XI_KeyPress */
        n_key++;
    else if (ge->event_type == 13)  /* XI_RawKeyPress */
        n_raw++;
}

/* xi2 MS: XI 2.2, KeyPress and RawKeyPress of all master devices selected on the root */
static int
xi2(long ms)
{
    int err;

    conn();
    err = cs_xi2_select_root((1u << 2) | (1u << 13), &xi_major);     /* KeyPress, RawKeyPress */
    cs_ready();
    cs_listen(ms, on_xi2);
    printf("select_err=%d xi2_keys=%ld raw_keys=%ld\n", err, n_key, n_raw);
    return 0;
}

/* keymap MS: QueryKeymap every millisecond; counts the keys seen going down */
static int
keymap(long ms)
{
    uint8_t last[32] = { 0 };
    long end, presses = 0, polls = 0;
    const char *stop = getenv("CS_STOP_FILE");
    int i, stopping = 0;

    conn();
    cs_ready();
    end = cs_now_ms() + ms;
    while (cs_now_ms() < end) {
        xcb_query_keymap_reply_t *r;

        if (stop && !stopping && access(stop, F_OK) == 0) {
            stopping = 1;
            if (cs_now_ms() + 300 < end)
                end = cs_now_ms() + 300;
        }
        r = xcb_query_keymap_reply(c, xcb_query_keymap(c), NULL);
        if (!r)
            break;
        polls++;
        for (i = 0; i < 256; i++)
            if ((r->keys[i / 8] & (1 << (i % 8))) && !(last[i / 8] & (1 << (i % 8))))
                presses++;
        memcpy(last, r->keys, 32);
        free(r);
        usleep(1000);
    }
    printf("polls=%ld keymap_presses=%ld\n", polls, presses);
    return 0;
}

/* xkb MS [DEV [SLOWMS]]: XKB initialised, then every XKB event that tells about keys
 * selected on DEV (default: the core keyboard), with all details: StateNotify,
 * ControlsNotify, IndicatorStateNotify, BellNotify, ActionMessage, AccessXNotify,
 * ExtensionDeviceNotify. Counts them by kind, and those that name a key code. SLOWMS > 0:
 * it turns on AccessX slow keys with that delay on DEV (every press gives an AccessXNotify
 * naming the key, and XKB's timer another when it accepts the key), and off at the end. */
static int xkb_major;
static long n_xkb, n_xkb_keyed, n_xkb_kind[16];

static void
on_xkb(xcb_generic_event_t *ev)
{
    const uint8_t *b = (const uint8_t *) ev;
    int kc = 0;

    if ((ev->response_type & 0x7f) != xkb_base)
        return;
    n_xkb++;
    n_xkb_kind[b[1] & 15]++;
    switch (b[1]) {
    case XkbStateNotify:
        kc = ((const xkbStateNotify *) b)->keycode;
        break;
    case XkbControlsNotify:
        kc = ((const xkbControlsNotify *) b)->keycode;
        break;
    case XkbActionMessage:
        kc = ((const xkbActionMessage *) b)->keycode;
        break;
    case XkbAccessXNotify:
        kc = ((const xkbAccessXNotify *) b)->keycode;
        break;
    }
    if (kc)
        n_xkb_keyed++;
}

/* XkbSetControls on DEV: slow keys on with DELAY ms, or off (DELAY 0) */
static int
xkb_slow_keys(int major, int dev, int delay)
{
    xkbSetControlsReq sc;

    memset(&sc, 0, sizeof(sc));
    sc.reqType = major;
    sc.xkbReqType = X_kbSetControls;
    sc.length = sizeof(sc) / 4;
    sc.deviceSpec = dev;
    sc.affectEnabledCtrls = XkbSlowKeysMask;
    sc.enabledCtrls = delay ? XkbSlowKeysMask : 0;
    sc.changeCtrls = delay ? XkbSlowKeysMask : 0;
    sc.slowKeysDelay = delay;
    return raw_void(&sc, sizeof(sc));
}

/* XKB initialised and `mask`'s events selected on DEV with all details (slow keys on
 * first when SLOW > 0); sets xkb_base; returns the first error (0: none) */
static int
xkb_setup(int dev, int slow, unsigned mask, int *supported)
{
    const xcb_query_extension_reply_t *x;
    xkbUseExtensionReq ue;
    xkbSelectEventsReq se;
    struct iovec iov[3];
    xcb_protocol_request_t pr = { 1, NULL, 0, 0 };
    xcb_generic_error_t *e = NULL;
    xkbUseExtensionReply *r;
    int err;

    x = xcb_get_extension_data(c, &(xcb_extension_t) { "XKEYBOARD", 0 });
    if (!x || !x->present)
        die("no XKEYBOARD");
    xkb_base = x->first_event;
    xkb_major = x->major_opcode;
    memset(&ue, 0, sizeof(ue));
    ue.reqType = x->major_opcode;
    ue.xkbReqType = X_kbUseExtension;
    ue.length = sizeof(ue) / 4;
    ue.wantedMajor = XkbMajorVersion;
    ue.wantedMinor = XkbMinorVersion;
    iov[2].iov_base = &ue;
    iov[2].iov_len = sizeof(ue);
    r = xcb_wait_for_reply(c, xcb_send_request(c, XCB_REQUEST_RAW | XCB_REQUEST_CHECKED,
                                               &iov[2], &pr), &e);
    *supported = r ? r->supported : 0;
    free(r);
    free(e);
    memset(&se, 0, sizeof(se));
    se.reqType = x->major_opcode;
    se.xkbReqType = X_kbSelectEvents;
    se.length = sizeof(se) / 4;
    se.deviceSpec = dev;
    se.affectWhich = mask;
    se.selectAll = mask;
    err = slow > 0 ? xkb_slow_keys(x->major_opcode, dev, slow) : 0;
    if (!err)                   /* (after: no ControlsNotify for its own change) */
        err = raw_void(&se, sizeof(se));
    return err;
}

static int
xkb(long ms, int dev, int slow)
{
    int err, supported;
    unsigned mask = XkbStateNotifyMask | XkbControlsNotifyMask | XkbIndicatorStateNotifyMask |
        XkbBellNotifyMask | XkbActionMessageMask | XkbAccessXNotifyMask |
        XkbExtensionDeviceNotifyMask;

    conn();
    err = xkb_setup(dev, slow, mask, &supported);
    cs_ready();
    cs_listen(ms, on_xkb);
    if (slow > 0)
        xkb_slow_keys(xkb_major, dev, 0);
    printf("xkb_supported=%d xkb_err=%d xkb_events=%ld xkb_keyed=%ld xkb_state=%ld "
           "xkb_ctrls=%ld xkb_indicator=%ld xkb_bell=%ld xkb_action=%ld xkb_accessx=%ld "
           "xkb_extdev=%ld\n", supported, err, n_xkb, n_xkb_keyed,
           n_xkb_kind[XkbStateNotify], n_xkb_kind[XkbControlsNotify],
           n_xkb_kind[XkbIndicatorStateNotify], n_xkb_kind[XkbBellNotify],
           n_xkb_kind[XkbActionMessage], n_xkb_kind[XkbAccessXNotify],
           n_xkb_kind[XkbExtensionDeviceNotify]);
    return 0;
}

/* xi1wait MS: waits (at most MS ms) until some client selected XI 1.x events on the root
 * (GetSelectedExtensionEvents: `xinput test` does so once it listens); prints
 * xi1_listening=1 or 0 */
static int
xi1wait(long ms)
{
    struct { uint8_t major, minor; uint16_t len; uint32_t win; } req;
    long end;
    int major, listening = 0;

    conn();
    major = ext_major("XInputExtension");
    end = cs_now_ms() + ms;
    while (!listening && cs_now_ms() < end) {
        struct iovec iov[3];
        xcb_protocol_request_t pr = { 1, NULL, 0, 0 };
        xcb_generic_error_t *e = NULL;
        uint8_t *r;

        req.major = major;
        req.minor = 7;          /* X_GetSelectedExtensionEvents */
        req.len = 2;
        req.win = root;
        iov[2].iov_base = &req;
        iov[2].iov_len = sizeof(req);
        r = xcb_wait_for_reply(c, xcb_send_request(c, XCB_REQUEST_RAW | XCB_REQUEST_CHECKED,
                                                   &iov[2], &pr), &e);
        if (r && (r[10] | r[11]))   /* all_clients_count (CARD16) */
            listening = 1;
        free(r);
        free(e);
        if (!listening)
            usleep(20000);
    }
    printf("xi1_listening=%d\n", listening);
    return 0;
}

/* grabkey MS [KEY MODS]: passive GrabKey on the root (default AnyKey, AnyModifier) */
static int
grabkey(long ms, int key, int mods)
{
    int err;

    conn();
    err = check(xcb_grab_key_checked(c, 1, root, mods, key, XCB_GRAB_MODE_ASYNC,
                                     XCB_GRAB_MODE_ASYNC));
    cs_ready();
    cs_listen(ms, on_key);
    printf("grab_err=%d grabbed_keys=%ld\n", err, n_key);
    return 0;
}

/* grabfrozen MS: a passive GrabKey of AnyKey/AnyModifier on the root, and the keyboard
 * frozen by an active GrabPointer in keyboard mode Sync: the keys typed meanwhile are
 * queued; once the typist is done (CS_STOP_FILE), AllowEvents AsyncKeyboard makes the
 * server replay them, matching each press against the passive grabs again */
static int
grabfrozen(long ms)
{
    xcb_grab_pointer_reply_t *r;
    const char *stop = getenv("CS_STOP_FILE");
    long end;
    int err, status = -1;

    conn();
    err = check(xcb_grab_key_checked(c, 1, root, XCB_MOD_MASK_ANY, XCB_GRAB_ANY,
                                     XCB_GRAB_MODE_ASYNC, XCB_GRAB_MODE_ASYNC));
    r = xcb_grab_pointer_reply(c, xcb_grab_pointer(c, 0, root, 0, XCB_GRAB_MODE_ASYNC,
                                                   XCB_GRAB_MODE_SYNC, XCB_NONE, XCB_NONE,
                                                   XCB_CURRENT_TIME), NULL);
    if (r)
        status = r->status;
    free(r);
    cs_ready();
    end = cs_now_ms() + ms;
    while (stop && access(stop, F_OK) != 0 && cs_now_ms() < end)
        usleep(10000);
    xcb_allow_events(c, XCB_ALLOW_ASYNC_KEYBOARD, XCB_CURRENT_TIME);
    xcb_flush(c);
    cs_listen(end - cs_now_ms(), on_key);
    printf("grab_err=%d pointer_grab=%d grabbed_keys=%ld\n", err, status, n_key);
    return 0;
}

/* grabkbd MS: active GrabKeyboard on the root */
static int
grabkbd(long ms)
{
    xcb_generic_error_t *e = NULL;
    xcb_grab_keyboard_reply_t *r = NULL;
    int status = -1, err = 0;

    conn();
    r = xcb_grab_keyboard_reply(c, xcb_grab_keyboard(c, 1, root, XCB_CURRENT_TIME,
                                                     XCB_GRAB_MODE_ASYNC,
                                                     XCB_GRAB_MODE_ASYNC), &e);
    if (r)
        status = r->status;
    if (e)
        err = e->error_code;
    free(r);
    free(e);
    cs_ready();
    cs_listen(ms, on_key);
    printf("grab_status=%d grab_err=%d grabbed_keys=%ld\n", status, err, n_key);
    return 0;
}

/* select WIN MS: KeyPress selected on another client's window (as `xev -id` does) */
static int
select_(xcb_window_t w, long ms)
{
    uint32_t mask = XCB_EVENT_MASK_KEY_PRESS;
    int err;

    conn();
    err = check(xcb_change_window_attributes_checked(c, w, XCB_CW_EVENT_MASK, &mask));
    cs_ready();
    cs_listen(ms, on_key);
    printf("select_err=%d selected_keys=%ld\n", err, n_key);
    return 0;
}

/* nest WIN MS TAG: an InputOnly child of another client's window WIN covering it, KeyPress
 * selected, tagged secure if TAG=1 (with the pointer in it, the core gives it the keys:
 * the window under the pointer when it is inside the focus) */
static int
nest(xcb_window_t w, long ms, int tag)
{
    xcb_window_t ch;
    uint32_t mask = XCB_EVENT_MASK_KEY_PRESS;
    int err;

    conn();
    ch = xcb_generate_id(c);
    err = check(xcb_create_window_checked(c, 0, ch, w, 0, 0, 200, 200, 0,
                                          XCB_WINDOW_CLASS_INPUT_ONLY, XCB_COPY_FROM_PARENT,
                                          XCB_CW_EVENT_MASK, &mask));
    if (tag)
        set_secure(ch, 1);
    xcb_map_window(c, ch);
    cs_ready();
    cs_listen(ms, on_key);
    printf("nest_err=%d nested_keys=%ld\n", err, n_key);
    return 0;
}

/* steal MS: a window of its own takes the keyboard focus (SetInputFocus) */
static int
steal(long ms)
{
    xcb_window_t w;
    uint32_t mask = XCB_EVENT_MASK_KEY_PRESS | XCB_EVENT_MASK_STRUCTURE_NOTIFY;
    int err;

    conn();
    w = mkwin(root, 600, 400, 50, 50, BLUE, 0);
    xcb_change_window_attributes(c, w, XCB_CW_EVENT_MASK, &mask);
    xcb_map_window(c, w);
    wait_mapped(w);
    err = check(xcb_set_input_focus_checked(c, XCB_INPUT_FOCUS_POINTER_ROOT, w,
                                            XCB_CURRENT_TIME));
    cs_ready();
    cs_listen(ms, on_key);
    printf("focus_err=%d stolen_keys=%ld\n", err, n_key);
    return 0;
}

/* warp X Y: WarpPointer to X,Y on the root */
static int
warp(int x, int y)
{
    conn();
    printf("warp_err=%d\n", check(xcb_warp_pointer_checked(c, XCB_NONE, root, 0, 0, 0, 0,
                                                            x, y)));
    return 0;
}

/* bench N SECURE: a window of its own (secure if SECURE=1) takes the focus; N keys pressed
 * and released through XTEST in batches of 50, each batch's key events read back;
 * prints the key events (press + release) per second the server passed */
static int
bench(long n, int secure)
{
    xcb_window_t w;
    uint32_t mask = XCB_EVENT_MASK_KEY_PRESS | XCB_EVENT_MASK_KEY_RELEASE |
        XCB_EVENT_MASK_STRUCTURE_NOTIFY;
    int xtest;
    long sent = 0, got = 0, t0, t1;

    conn();
    xtest = ext_major("XTEST");
    w = mkwin(root, 100, 100, 200, 200, RED, 0);
    xcb_change_window_attributes(c, w, XCB_CW_EVENT_MASK, &mask);
    if (secure)
        set_secure(w, 1);
    xcb_map_window(c, w);
    wait_mapped(w);
    xcb_set_input_focus(c, XCB_INPUT_FOCUS_POINTER_ROOT, w, XCB_CURRENT_TIME);
    sync_();
    t0 = cs_now_ms();
    while (sent < n) {
        int i;

        for (i = 0; i < 50 && sent < n; i++, sent++) {
            struct cs_xtest_req req = { xtest, 2, 9, XCB_KEY_PRESS, keycodes[sent % NKEYS], 0, 0,
                                        root, 0, 0, 0, 0, 0, 0, 0, 0 };
            struct iovec iov[3];
            xcb_protocol_request_t pr = { 1, NULL, 0, 1 };

            iov[2].iov_base = &req;
            iov[2].iov_len = sizeof(req);
            xcb_send_request(c, XCB_REQUEST_RAW, &iov[2], &pr);
            req.type = XCB_KEY_RELEASE;
            iov[2].iov_base = &req;     /* xcb consumed the vector */
            iov[2].iov_len = sizeof(req);
            xcb_send_request(c, XCB_REQUEST_RAW, &iov[2], &pr);
        }
        /* the round trip: the server processed the batch's input before answering, so
         * its events are read ahead of the reply (a few the server drops itself, e.g.
         * around the XTEST device's keymap switch, are not waited for) */
        free(xcb_get_input_focus_reply(c, xcb_get_input_focus(c), NULL));
        for (;;) {
            xcb_generic_event_t *ev = xcb_poll_for_queued_event(c);

            if (!ev)
                break;
            if ((ev->response_type & 0x7f) == XCB_KEY_PRESS ||
                (ev->response_type & 0x7f) == XCB_KEY_RELEASE)
                got++;
            else if (ev->response_type == 0)
                die("X error during the bench");
            free(ev);
        }
        if (xcb_connection_has_error(c))
            die("connection lost");
    }
    t1 = cs_now_ms();
    printf("sent=%ld events=%ld ms=%ld events_per_s=%.0f\n", 2 * n, got, t1 - t0,
           t1 > t0 ? got * 1000.0 / (t1 - t0) : 0.0);
    return 0;
}

/* a raw request with a reply (header included); returns the error code (0: a reply) */
static int
raw_reply(void *req, size_t len)
{
    struct iovec iov[3];
    xcb_protocol_request_t pr = { 1, NULL, 0, 0 };
    xcb_generic_error_t *e = NULL;
    void *r;
    int err;

    iov[2].iov_base = req;
    iov[2].iov_len = len;
    r = xcb_wait_for_reply(c, xcb_send_request(c, XCB_REQUEST_RAW | XCB_REQUEST_CHECKED,
                                               &iov[2], &pr), &e);
    err = e ? e->error_code : (r ? 0 : -1);
    free(r);
    free(e);
    return err;
}

/* modpoll MS: the modifier state polled every ms for MS ms (until $CS_STOP_FILE, plus
 * 300 ms) three ways: XKB GetState (base modifiers), core QueryPointer (mask), XI 2.2
 * XIQueryPointer (base modifiers); prints how many answers had Shift down in each:
 * "mod_getstate=N mod_qp=N mod_xiqp=N mod_polls=N" */
static int
modpoll(long ms)
{
    long polls = 0, gs = 0, qp = 0, xq = 0, end = cs_now_ms() + ms, stop_at = 0;
    const char *stop = getenv("CS_STOP_FILE");
    int supported, xi;
    struct iovec iov[3];
    xcb_protocol_request_t pr = { 1, NULL, 0, 0 };

    conn();
    xi = ext_major("XInputExtension");
    if (xi < 0 || xkb_setup(XkbUseCoreKbd, 0, 0, &supported) || !supported)
        die("no XInputExtension or XKB");
    cs_xi_query_version(xi);
    cs_ready();
    while (cs_now_ms() < end) {
        xkbGetStateReq gsr;
        struct { uint8_t major, minor; uint16_t len; uint32_t win; uint16_t dev, pad; } xq_req =
            { xi, 40, 3, root, 2, 0 };
        xkbGetStateReply *g;
        xcb_query_pointer_reply_t *q;
        uint8_t *x;

        if (!stop_at && stop && access(stop, F_OK) == 0)
            stop_at = cs_now_ms() + 300;
        if (stop_at && cs_now_ms() > stop_at)
            break;
        memset(&gsr, 0, sizeof(gsr));
        gsr.reqType = xkb_major;
        gsr.xkbReqType = X_kbGetState;
        gsr.length = sizeof(gsr) / 4;
        gsr.deviceSpec = XkbUseCoreKbd;
        iov[2].iov_base = &gsr;
        iov[2].iov_len = sizeof(gsr);
        g = xcb_wait_for_reply(c, xcb_send_request(c, XCB_REQUEST_RAW, &iov[2], &pr), NULL);
        if (g && (g->baseMods & XCB_MOD_MASK_SHIFT))
            gs++;
        free(g);
        q = xcb_query_pointer_reply(c, xcb_query_pointer(c, root), NULL);
        if (q && (q->mask & XCB_MOD_MASK_SHIFT))
            qp++;
        free(q);
        iov[2].iov_base = &xq_req;
        iov[2].iov_len = sizeof(xq_req);
        x = xcb_wait_for_reply(c, xcb_send_request(c, XCB_REQUEST_RAW, &iov[2], &pr), NULL);
        /* mods.base_mods: the CARD32 at byte 36 */
        if (x) {
            uint32_t base;
            memcpy(&base, x + 36, 4);
            if (base & XCB_MOD_MASK_SHIFT)
                xq++;
        }
        free(x);
        polls++;
        usleep(1000);
    }
    printf("mod_getstate=%ld mod_qp=%ld mod_xiqp=%ld mod_polls=%ld\n", gs, qp, xq, polls);
    return 0;
}

/* ordinary: what every GTK 3 and Qt 5 program sends, whatever has the focus: XIChangeCursor
 * on a window of its own (GTK on every hover), XkbPerClientFlags for detectable
 * auto-repeat (at start); then XkbPerClientFlags with auto-reset MouseKeys on (a change of
 * the keyboard when this client goes away). Prints each one's error code (0: done). */
static int
ordinary(void)
{
    xkbPerClientFlagsReq pcf;
    xcb_window_t w;
    xcb_cursor_t cur;
    xcb_font_t font;
    int xi, supported, cursor_err, pcf_err, reset_err;

    conn();
    xi = ext_major("XInputExtension");
    if (xi < 0)
        die("no XInputExtension");
    if (xkb_setup(XkbUseCoreKbd, 0, 0, &supported) || !supported)
        die("no XKB");
    w = mkwin(root, 0, 0, 10, 10, RED, 0);
    font = xcb_generate_id(c);
    xcb_open_font(c, font, strlen("cursor"), "cursor");
    cur = xcb_generate_id(c);
    xcb_create_glyph_cursor(c, cur, font, font, 68, 69, 0, 0, 0, 0xffff, 0xffff, 0xffff);
    {
        struct {
            uint8_t major, minor;
            uint16_t len;
            uint32_t win, cursor;
            uint16_t deviceid, pad;
        } req = { xi, 42 /* XIChangeCursor */, 4, w, cur, 2 /* the core pointer */, 0 };
        cursor_err = raw_void(&req, sizeof(req));
    }
    memset(&pcf, 0, sizeof(pcf));
    pcf.reqType = xkb_major;
    pcf.xkbReqType = X_kbPerClientFlags;
    pcf.length = sizeof(pcf) / 4;
    pcf.deviceSpec = XkbUseCoreKbd;
    pcf.change = XkbPCF_DetectableAutoRepeatMask;
    pcf.value = XkbPCF_DetectableAutoRepeatMask;
    pcf_err = raw_reply(&pcf, sizeof(pcf));
    pcf.change = XkbPCF_AutoResetControlsMask;
    pcf.value = XkbPCF_AutoResetControlsMask;
    pcf.ctrlsToChange = XkbMouseKeysMask;
    pcf.autoCtrls = XkbMouseKeysMask;
    pcf.autoCtrlValues = XkbMouseKeysMask;
    reset_err = raw_reply(&pcf, sizeof(pcf));
    printf("cursor_err=%d pcf_err=%d autoreset_err=%d\n", cursor_err, pcf_err, reset_err);
    return 0;
}

int
main(int argc, char **argv)
{
    if (argc < 2)
        die("usage: atk-input victim SECURE | type [MODKEY] | mpxtype KBD XKBD WIN | click N | sendevent WIN | "
            "xi2 MS | keymap MS | grabkey MS [KEY MODS] | grabfrozen MS | grabkbd MS | select WIN MS | "
            "nest WIN MS TAG | steal MS | warp X Y | bench N SECURE | xkb MS [DEV [SLOWMS]] | xi1wait MS | ordinary | modpoll MS");
    if (!strcmp(argv[1], "victim") && argc > 2)
        return victim_input(atoi(argv[2]));
    if (!strcmp(argv[1], "type"))
        return type_keys(argc > 2 ? atoi(argv[2]) : 0);
    if (!strcmp(argv[1], "mpxtype") && argc > 4)
        return mpx_type(atoi(argv[2]), atoi(argv[3]), strtoul(argv[4], NULL, 0));
    if (!strcmp(argv[1], "click") && argc > 2)
        return click(atoi(argv[2]));
    if (!strcmp(argv[1], "sendevent") && argc > 2)
        return sendevent(strtoul(argv[2], NULL, 0));
    if (!strcmp(argv[1], "xi2") && argc > 2)
        return xi2(atol(argv[2]));
    if (!strcmp(argv[1], "keymap") && argc > 2)
        return keymap(atol(argv[2]));
    if (!strcmp(argv[1], "grabkey") && argc > 2)
        return grabkey(atol(argv[2]), argc > 4 ? atoi(argv[3]) : 0,
                       argc > 4 ? (int) strtoul(argv[4], NULL, 0) : XCB_MOD_MASK_ANY);
    if (!strcmp(argv[1], "grabfrozen") && argc > 2)
        return grabfrozen(atol(argv[2]));
    if (!strcmp(argv[1], "grabkbd") && argc > 2)
        return grabkbd(atol(argv[2]));
    if (!strcmp(argv[1], "steal") && argc > 2)
        return steal(atol(argv[2]));
    if (!strcmp(argv[1], "warp") && argc > 3)
        return warp(atoi(argv[2]), atoi(argv[3]));
    if (!strcmp(argv[1], "nest") && argc > 4)
        return nest(strtoul(argv[2], NULL, 0), atol(argv[3]), atoi(argv[4]));
    if (!strcmp(argv[1], "bench") && argc > 3)
        return bench(atol(argv[2]), atoi(argv[3]));
    if (!strcmp(argv[1], "ordinary"))
        return ordinary();
    if (!strcmp(argv[1], "modpoll") && argc > 2)
        return modpoll(atol(argv[2]));
    if (!strcmp(argv[1], "xi1wait") && argc > 2)
        return xi1wait(atol(argv[2]));
    if (!strcmp(argv[1], "xkb") && argc > 2)
        return xkb(atol(argv[2]), argc > 3 ? atoi(argv[3]) : XkbUseCoreKbd,
                   argc > 4 ? atoi(argv[4]) : 0);
    if (!strcmp(argv[1], "select") && argc > 3)
        return select_(strtoul(argv[2], NULL, 0), atol(argv[3]));
    die("unknown command");
    return 2;
}
