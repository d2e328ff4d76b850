/* CaptureShield Xorg tests (t-focus.sh): the focus moved away from a secure window through
 * the window manager's role.
 *   atk-focus wmsteal MS       selects SubstructureRedirect on the root (becomes the window
 *                              manager when none runs), maps a window of its own and gives
 *                              it the focus; counts the keys it gets for MS ms: prints
 *                              "wm_err=E focus_err=E stolen_keys=N"
 *   atk-focus mapnew MS        maps an ordinary window (no override-redirect: the window
 *                              manager manages it and, as openbox does, focuses it); counts
 *                              its keys: prints "ready win=0x..", then "stolen_keys=N"
 *   atk-focus click X Y        XTEST: the pointer to X,Y, button 1 pressed and released
 *                              (run as the trusted program: the user's own click); prints
 *                              "click_err=E"
 * Each listener prints "ready" once its window is mapped. */
#include "csprobe.h"
#include <poll.h>
#include <time.h>

static long n_key;

static long
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

static void
ready(void)
{
    sync_();
    printf("ready\n");
    fflush(stdout);
}

/* key presses for at most MS ms; when $CS_STOP_FILE appears (the typist is done), 300 ms more */
static void
pump(long ms)
{
    long end = now_ms() + ms;
    const char *stop = getenv("CS_STOP_FILE");
    struct pollfd p = { xcb_get_file_descriptor(c), POLLIN, 0 };
    int stopping = 0;

    while (now_ms() < end) {
        xcb_generic_event_t *ev;
        if (stop && !stopping && access(stop, F_OK) == 0) {
            stopping = 1;
            if (now_ms() + 300 < end)
                end = now_ms() + 300;
        }
        while ((ev = xcb_poll_for_event(c))) {
            if ((ev->response_type & 0x7f) == XCB_KEY_PRESS)
                n_key++;
            free(ev);
        }
        if (xcb_connection_has_error(c))
            return;
        poll(&p, 1, 20);
    }
}

static xcb_window_t
ordinary_window(int x, int y)
{
    xcb_window_t w = xcb_generate_id(c);
    uint32_t vals[2] = { BLUE, XCB_EVENT_MASK_KEY_PRESS | XCB_EVENT_MASK_STRUCTURE_NOTIFY };

    xcb_create_window(c, XCB_COPY_FROM_PARENT, w, root, (int16_t) x, (int16_t) y, 150, 100, 0,
                      XCB_WINDOW_CLASS_INPUT_OUTPUT, XCB_COPY_FROM_PARENT,
                      XCB_CW_BACK_PIXEL | XCB_CW_EVENT_MASK, vals);
    return w;
}

static int
wmsteal(long ms)
{
    uint32_t mask = XCB_EVENT_MASK_SUBSTRUCTURE_REDIRECT;
    xcb_window_t w;
    int wm_err, focus_err;

    conn();
    wm_err = check(xcb_change_window_attributes_checked(c, root, XCB_CW_EVENT_MASK, &mask));
    w = ordinary_window(600, 400);
    xcb_map_window(c, w);
    wait_mapped(w);
    focus_err = check(xcb_set_input_focus_checked(c, XCB_INPUT_FOCUS_POINTER_ROOT, w,
                                                  XCB_CURRENT_TIME));
    ready();
    pump(ms);
    printf("wm_err=%d focus_err=%d stolen_keys=%ld\n", wm_err, focus_err, n_key);
    return 0;
}

static int
mapnew(long ms)
{
    xcb_window_t w;

    conn();
    w = ordinary_window(500, 350);
    xcb_map_window(c, w);
    wait_mapped(w);
    sync_();
    printf("ready win=0x%x\n", w);
    fflush(stdout);
    pump(ms);
    printf("stolen_keys=%ld\n", n_key);
    return 0;
}

static int
fake(int xtest, uint8_t type, uint8_t detail, int16_t x, int16_t y)
{
    struct {
        uint8_t major, minor;
        uint16_t len;
        uint8_t type, detail;
        uint16_t pad0;
        uint32_t time, root, pad1, pad2;
        int16_t x, y;
        uint32_t pad3;
        uint16_t pad4;
        uint8_t pad5, deviceid;
    } req = { (uint8_t) xtest, 2, 9, type, detail, 0, 0, root, 0, 0, x, y, 0, 0, 0, 0 };
    return raw_void(&req, sizeof(req));
}

static int
click(int x, int y)
{
    int xtest, err;

    conn();
    xtest = ext_major("XTEST");
    if (xtest < 0)
        die("no XTEST");
    err = fake(xtest, XCB_MOTION_NOTIFY, 0, (int16_t) x, (int16_t) y);
    if (!err)
        err = fake(xtest, XCB_BUTTON_PRESS, 1, 0, 0);
    fake(xtest, XCB_BUTTON_RELEASE, 1, 0, 0);
    sync_();
    printf("click_err=%d\n", err);
    return 0;
}

int
main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 2 && !strcmp(argv[1], "wmsteal"))
        return wmsteal(atol(argv[2]));
    if (argc > 2 && !strcmp(argv[1], "mapnew"))
        return mapnew(atol(argv[2]));
    if (argc > 3 && !strcmp(argv[1], "click"))
        return click(atoi(argv[2]), atoi(argv[3]));
    fprintf(stderr, "usage: atk-focus wmsteal MS | mapnew MS | click X Y\n");
    return 64;
}
