/* CaptureShield Xorg tests (t-focus.sh): the focus moved away from a secure window through
 * the window manager's role.
 *   atk-focus wmsteal MS       selects SubstructureRedirect on the root (becomes the window
 *                              manager when none runs), maps a window of its own and gives
 *                              it the focus; counts the keys it gets for MS ms: prints
 *                              "wm_err=E focus_err=E stolen_keys=N"
 *   atk-focus mapsub MS        the same, mapped by MapSubwindows of the root
 *   atk-focus mapnew MS        maps an ordinary window (no override-redirect: the window
 *                              manager manages it and, as openbox does, focuses it); counts
 *                              its keys: prints "ready win=0x..", then "stolen_keys=N"
 *   atk-focus click X Y        XTEST: the pointer to X,Y, button 1 pressed and released
 *                              (run as the trusted program: the user's own click); prints
 *                              "click_err=E"
 * Each listener prints "ready" once its window is mapped. */
#include "csprobe.h"

static long n_key;

static void
on_key(xcb_generic_event_t *ev)
{
    if ((ev->response_type & 0x7f) == XCB_KEY_PRESS)
        n_key++;
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
    cs_ready();
    cs_listen(ms, on_key);
    printf("wm_err=%d focus_err=%d stolen_keys=%ld\n", wm_err, focus_err, n_key);
    return 0;
}

static int
mapnew(long ms, int sub)
{
    xcb_window_t w;

    conn();
    w = ordinary_window(500, 350);
    if (sub)
        xcb_map_subwindows(c, root);   /* maps every unmapped top-level, this one too */
    else
        xcb_map_window(c, w);
    wait_mapped(w);
    sync_();
    printf("ready win=0x%x\n", w);
    fflush(stdout);
    cs_listen(ms, on_key);
    printf("stolen_keys=%ld\n", n_key);
    return 0;
}

static int
click(int x, int y)
{
    int xtest, err;

    conn();
    xtest = ext_major("XTEST");
    if (xtest < 0)
        die("no XTEST");
    err = cs_xtest_fake(xtest, XCB_MOTION_NOTIFY, 0, (int16_t) x, (int16_t) y);
    if (!err)
        err = cs_xtest_fake(xtest, XCB_BUTTON_PRESS, 1, 0, 0);
    cs_xtest_fake(xtest, XCB_BUTTON_RELEASE, 1, 0, 0);
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
        return mapnew(atol(argv[2]), 0);
    if (argc > 2 && !strcmp(argv[1], "mapsub"))
        return mapnew(atol(argv[2]), 1);
    if (argc > 3 && !strcmp(argv[1], "click"))
        return click(atoi(argv[2]), atoi(argv[3]));
    fprintf(stderr, "usage: atk-focus wmsteal MS | mapnew MS | mapsub MS | click X Y\n");
    return 64;
}
