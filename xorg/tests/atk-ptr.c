/* CaptureShield Xorg tests (t-pointer.sh): the pointer over a secure window.
 *   atk-ptr poll MS X Y W H     QueryPointer as often as it can for MS ms (until
 *                               $CS_STOP_FILE, plus 300 ms): "polls=N inside=N
 *                               positions=N" (answers inside the rectangle X,Y WxH; how
 *                               many different positions inside)
 *   atk-ptr xipoll MS X Y W H   the same with XIQueryPointer of the core pointer (GTK 3's
 *                               way): "xipolls=N xierr=E xiinside=N xipositions=N"
 *   atk-ptr xi2 MS              XI 2.2 raw button presses and raw motion of every master
 *                               device selected on the root: "select_err=E
 *                               raw_buttons=N raw_motion=N"
 *   atk-ptr motion MS X Y W H   core PointerMotion selected on the root (events the
 *                               windows under the pointer do not take propagate there):
 *                               "motion_inside=N"
 *   atk-ptr history X Y W H     GetMotionEvents of the root since 0: "hist_err=E
 *                               hist_inside=N"
 *   atk-ptr user X Y W H N      XTEST (run as the trusted program: the user's hand): N
 *                               moves over the rectangle, a click after each: "sent=N
 *                               err=E"
 * Listeners print "ready" before they listen. */
#include "csprobe.h"

static int rx, ry, rw, rh;

static int
inside(int x, int y)
{
    return x >= rx && y >= ry && x < rx + rw && y < ry + rh;
}

/* the end of listening for poll_ (it calls no event handler): MS ms, or 300 ms after
 * $CS_STOP_FILE appears */
static long end_ms;
static int stopping;

static int
listening(void)
{
    const char *stop = getenv("CS_STOP_FILE");

    if (stop && !stopping && access(stop, F_OK) == 0) {
        stopping = 1;
        if (cs_now_ms() + 300 < end_ms)
            end_ms = cs_now_ms() + 300;
    }
    return cs_now_ms() < end_ms;
}

static int
poll_(long ms)
{
    long polls = 0, in = 0, npos = 0;
    static int seen[64][2];

    conn();
    cs_ready();
    end_ms = cs_now_ms() + ms;
    while (listening()) {
        xcb_query_pointer_reply_t *r =
            xcb_query_pointer_reply(c, xcb_query_pointer(c, root), NULL);
        polls++;
        if (r && inside(r->root_x, r->root_y)) {
            int k;
            in++;
            for (k = 0; k < npos && k < 64; k++)
                if (seen[k][0] == r->root_x && seen[k][1] == r->root_y)
                    break;
            if (k == npos && npos < 64) {
                seen[npos][0] = r->root_x;
                seen[npos][1] = r->root_y;
                npos++;
            }
        }
        free(r);
        usleep(1000);
    }
    printf("polls=%ld inside=%ld positions=%ld\n", polls, in, npos);
    return 0;
}

static int xi_major;

/* XIQueryVersion 2.2, then XIQueryPointer of the core pointer (device 2) on the root as
 * often as it can, as poll_ does */
static int
xipoll(long ms)
{
    long polls = 0, in = 0, npos = 0, err = 0;
    static int seen[64][2];
    struct iovec iov[3];
    xcb_protocol_request_t pr = { 1, NULL, 0, 0 };
    xcb_generic_error_t *e = NULL;
    void *r;

    conn();
    xi_major = ext_major("XInputExtension");
    if (xi_major < 0)
        die("no XInputExtension");
    cs_xi_query_version(xi_major);
    cs_ready();
    end_ms = cs_now_ms() + ms;
    while (listening()) {
        struct { uint8_t major, minor; uint16_t len; uint32_t win; uint16_t dev, pad; } q =
            { xi_major, 40, 3, root, 2, 0 };
        iov[2].iov_base = &q;
        iov[2].iov_len = sizeof(q);
        r = xcb_wait_for_reply(c, xcb_send_request(c, XCB_REQUEST_RAW | XCB_REQUEST_CHECKED,
                                                   &iov[2], &pr), &e);
        polls++;
        if (e) {
            err = e->error_code;
            free(e);
            e = NULL;
        }
        if (r) {
            /* root_x, root_y: FP1616 at bytes 16 and 20 */
            int32_t fx, fy;
            int x, y, k;
            memcpy(&fx, (uint8_t *) r + 16, 4);
            memcpy(&fy, (uint8_t *) r + 20, 4);
            x = fx >> 16;
            y = fy >> 16;
            if (inside(x, y)) {
                in++;
                for (k = 0; k < npos && k < 64; k++)
                    if (seen[k][0] == x && seen[k][1] == y)
                        break;
                if (k == npos && npos < 64) {
                    seen[npos][0] = x;
                    seen[npos][1] = y;
                    npos++;
                }
            }
            free(r);
        }
        usleep(1000);
    }
    printf("xipolls=%ld xierr=%ld xiinside=%ld xipositions=%ld\n", polls, err, in, npos);
    return 0;
}
static long raw_buttons, raw_motion, motion_in;

static void
on_xi2(xcb_generic_event_t *ev)
{
    xcb_ge_generic_event_t *ge = (xcb_ge_generic_event_t *) ev;

    if ((ev->response_type & 0x7f) != XCB_GE_GENERIC || ge->extension != xi_major)
        return;
    if (ge->event_type == 15)           /* XI_RawButtonPress */
        raw_buttons++;
    else if (ge->event_type == 17)      /* XI_RawMotion */
        raw_motion++;
}

static int
xi2(long ms)
{
    int err;

    conn();
    err = cs_xi2_select_root((1u << 15) | (1u << 17), &xi_major);   /* RawButtonPress, RawMotion */
    cs_ready();
    cs_listen(ms, on_xi2);
    printf("select_err=%d raw_buttons=%ld raw_motion=%ld\n", err, raw_buttons, raw_motion);
    return 0;
}

static void
on_motion(xcb_generic_event_t *ev)
{
    if ((ev->response_type & 0x7f) == XCB_MOTION_NOTIFY) {
        xcb_motion_notify_event_t *m = (xcb_motion_notify_event_t *) ev;
        if (inside(m->root_x, m->root_y))
            motion_in++;
    }
}

static int
motion(long ms)
{
    uint32_t mask = XCB_EVENT_MASK_POINTER_MOTION;

    conn();
    xcb_change_window_attributes(c, root, XCB_CW_EVENT_MASK, &mask);
    cs_ready();
    cs_listen(ms, on_motion);
    printf("motion_inside=%ld\n", motion_in);
    return 0;
}

static int
history(void)
{
    xcb_generic_error_t *e = NULL;
    xcb_get_motion_events_reply_t *r;
    long in = 0;

    conn();
    r = xcb_get_motion_events_reply(c, xcb_get_motion_events(c, root, 1, 0), &e);   /* from time 1 to now */
    if (r) {
        xcb_timecoord_t *t = xcb_get_motion_events_events(r);
        int k, n = xcb_get_motion_events_events_length(r);
        for (k = 0; k < n; k++)
            if (inside(t[k].x, t[k].y))
                in++;
    }
    printf("hist_err=%d hist_inside=%ld\n", e ? e->error_code : 0, in);
    free(r);
    free(e);
    return 0;
}

static int
user(int n)
{
    int xtest, i, err = 0, sent = 0;

    conn();
    xtest = ext_major("XTEST");
    if (xtest < 0)
        die("no XTEST");
    for (i = 0; i < n; i++) {
        int e = cs_xtest_fake(xtest, XCB_MOTION_NOTIFY, 0, (int16_t) (rx + 10 + (i * 37) % (rw - 20)),
                     (int16_t) (ry + 10 + (i * 23) % (rh - 20)));
        usleep(20000);
        if (!e)
            e = cs_xtest_fake(xtest, XCB_BUTTON_PRESS, 1, 0, 0);
        cs_xtest_fake(xtest, XCB_BUTTON_RELEASE, 1, 0, 0);
        usleep(20000);
        if (e)
            err = e;
        else
            sent++;
    }
    sync_();
    printf("sent=%d err=%d\n", sent, err);
    return 0;
}

static void
rect(char **a)
{
    rx = atoi(a[0]);
    ry = atoi(a[1]);
    rw = atoi(a[2]);
    rh = atoi(a[3]);
}

int
main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 6 && !strcmp(argv[1], "poll")) {
        rect(argv + 3);
        return poll_(atol(argv[2]));
    }
    if (argc > 6 && !strcmp(argv[1], "xipoll")) {
        rect(argv + 3);
        return xipoll(atol(argv[2]));
    }
    if (argc > 2 && !strcmp(argv[1], "xi2"))
        return xi2(atol(argv[2]));
    if (argc > 6 && !strcmp(argv[1], "motion")) {
        rect(argv + 3);
        return motion(atol(argv[2]));
    }
    if (argc > 5 && !strcmp(argv[1], "history")) {
        rect(argv + 2);
        return history();
    }
    if (argc > 6 && !strcmp(argv[1], "user")) {
        rect(argv + 2);
        return user(atoi(argv[6]));
    }
    fprintf(stderr, "usage: atk-ptr poll MS X Y W H | xipoll MS X Y W H | xi2 MS | motion MS X Y W H | "
            "history X Y W H | user X Y W H N\n");
    return 64;
}
