/* CaptureShield Xorg tests (t-life.sh): a victim and the attacks, on the screen that DISPLAY
 * names (csprobe's conn() always takes screen 0), for servers that reset and servers with
 * two screens.
 *   atk-life victim            red 200x200 secure window at 100,100, blue 100x100 at 250,250;
 *                              prints "S=0x.. A=0x.. screen=N" and waits
 *   atk-life getimage [WIN]    GetImage of the root (800x600) or of WIN: pixel statistics
 *   atk-life copyarea          CopyArea root (IncludeInferiors) -> own pixmap, then GetImage
 *   atk-life render            RENDER Composite root picture -> own picture, then GetImage
 *   atk-life chprop            ChangeProperty on a window of its own; prints err=
 *   atk-life untag S           DeleteProperty + ChangeProperty of S's tag; prints errors, tag
 */
#include "csprobe.h"

static int screen_no;

static void
conn_screen(void)
{
    xcb_screen_iterator_t it;
    int i;

    c = xcb_connect(NULL, &screen_no);
    if (xcb_connection_has_error(c))
        die("cannot connect");
    it = xcb_setup_roots_iterator(xcb_get_setup(c));
    for (i = 0; i < screen_no && it.rem; i++)
        xcb_screen_next(&it);
    if (!it.rem)
        die("no such screen");
    scr = it.data;
    root = scr->root;
}

static int
do_victim(void)
{
    uint32_t green = GREEN;
    xcb_window_t s, a;

    xcb_change_window_attributes(c, root, XCB_CW_BACK_PIXEL, &green);
    xcb_clear_area(c, 0, root, 0, 0, 0, 0);
    s = mkwin(root, 100, 100, 200, 200, RED, 0);
    set_secure(s, 1);
    xcb_map_window(c, s);
    wait_mapped(s);
    a = mkwin(root, 250, 250, 100, 100, BLUE, 0);
    xcb_map_window(c, a);
    wait_mapped(a);
    printf("S=0x%x A=0x%x screen=%d\n", s, a, screen_no);
    fflush(stdout);
    for (;;) {
        xcb_generic_event_t *ev = xcb_wait_for_event(c);
        if (!ev)
            return 0;
        free(ev);
    }
}

static int
do_copy(int render)
{
    struct stats st = { 0 };
    uint32_t inferiors = XCB_SUBWINDOW_MODE_INCLUDE_INFERIORS;
    xcb_pixmap_t pix = xcb_generate_id(c);
    int e;

    xcb_create_pixmap(c, scr->root_depth, pix, root, SW, SH);
    if (render) {
        xcb_render_picture_t src = xcb_generate_id(c), dst = xcb_generate_id(c);
        xcb_render_pictformat_t f = root_format();
        xcb_render_create_picture(c, src, root, f, XCB_RENDER_CP_SUBWINDOW_MODE, &inferiors);
        xcb_render_create_picture(c, dst, pix, f, 0, NULL);
        e = check(xcb_render_composite_checked(c, XCB_RENDER_PICT_OP_SRC, src, 0, dst,
                                               0, 0, 0, 0, 0, 0, SW, SH));
    } else {
        xcb_gcontext_t gc = xcb_generate_id(c);
        xcb_create_gc(c, gc, pix, XCB_GC_SUBWINDOW_MODE, &inferiors);
        e = check(xcb_copy_area_checked(c, root, pix, gc, 0, 0, 0, 0, SW, SH));
    }
    if (e)
        refused(&st);
    else
        getimage(&st, pix, 0, 0, SW, SH);
    printf("err=%d ", e);
    print_stats(&st);
    return 0;
}

int
main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2)
        die("usage: atk-life victim|getimage [WIN]|copyarea|render|chprop|untag S");
    conn_screen();
    if (!strcmp(argv[1], "victim"))
        return do_victim();
    if (!strcmp(argv[1], "getimage")) {
        struct stats st = { 0 };
        xcb_drawable_t d = argc > 2 ? strtoul(argv[2], NULL, 0) : root;
        int w = argc > 2 ? 200 : SW, h = argc > 2 ? 200 : SH;
        int e = getimage(&st, d, 0, 0, w, h);
        printf("err=%d ", e);
        print_stats(&st);
        return 0;
    }
    if (!strcmp(argv[1], "copyarea"))
        return do_copy(0);
    if (!strcmp(argv[1], "render"))
        return do_copy(1);
    if (!strcmp(argv[1], "chprop")) {
        xcb_window_t w = mkwin(root, 0, 0, 10, 10, 0, 0);
        uint32_t v = 7;
        int e = check(xcb_change_property_checked(c, XCB_PROP_MODE_REPLACE, w, atom("CS_LIFE"),
                                                  XCB_ATOM_CARDINAL, 32, 1, &v));
        printf("err=%d\n", e);
        return 0;
    }
    if (!strcmp(argv[1], "untag") && argc > 2) {
        xcb_window_t s = strtoul(argv[2], NULL, 0);
        xcb_atom_t a = atom("_CAPTURE_SHIELD_SECURE");
        uint32_t zero = 0, v = 0;
        int e1 = check(xcb_delete_property_checked(c, s, a));
        int e2 = check(xcb_change_property_checked(c, XCB_PROP_MODE_REPLACE, s, a,
                                                   XCB_ATOM_CARDINAL, 32, 1, &zero));
        xcb_get_property_reply_t *r =
            xcb_get_property_reply(c, xcb_get_property(c, 0, s, a, XCB_ATOM_ANY, 0, 1), NULL);
        if (r && xcb_get_property_value_length(r) == 4)
            v = *(uint32_t *) xcb_get_property_value(r);
        printf("delete_err=%d change_err=%d tag=%u\n", e1, e2, v);
        free(r);
        return 0;
    }
    die("unknown command");
    return 2;
}
