/* CaptureShield Xorg tests (t-views.sh): secure views, a part of a window secret.
 *   atk-views app MODE      a 400x300 green top-level at 50,50 with a 200x100 red area at
 *                           100,100 in it; MODE child: the red area is a child window tagged
 *                           _CAPTURE_SHIELD_SECURE (childplain: not tagged; childview: not
 *                           tagged, the top-level declares its rectangle); views: drawn into the top-level, which
 *                           declares it in _CAPTURE_SHIELD_VIEWS (both before mapping);
 *                           plain: drawn, nothing declared. Prints "T=0x.. C=0x.." and reads
 *                           commands on stdin, answering one line each:
 *                             "move X Y"  the red area repainted at X,Y (the rest green),
 *                                         the property updated: "moved"
 *                             "bad"       _CAPTURE_SHIELD_VIEWS set to 3 items: "bad"
 *                             "policy"    the app writes _CAPTURE_SHIELD_POLICY_VIEWS on its
 *                                         own window: "policy_err=E"
 *   atk-views shot          GetImage of the whole root: "err=E red=N green=N black=N"
 *   atk-views write W NAME  ChangeProperty NAME (CARDINAL/32, 0 0 400 300) on window W:
 *                           "err=E" */
#include "csprobe.h"

static xcb_window_t top, child;
static xcb_gcontext_t gc;

static void
views_set(const char *name, int x, int y, int n)
{
    uint32_t v[4] = { (uint32_t) x, (uint32_t) y, 200, 100 };

    xcb_change_property(c, XCB_PROP_MODE_REPLACE, top, atom(name), XCB_ATOM_CARDINAL, 32, n, v);
}

static void
paint(int x, int y)
{
    xcb_rectangle_t all = { 0, 0, 400, 300 }, red = { (int16_t) x, (int16_t) y, 200, 100 };
    uint32_t fg = GREEN;

    xcb_change_gc(c, gc, XCB_GC_FOREGROUND, &fg);
    xcb_poly_fill_rectangle(c, top, gc, 1, &all);
    fg = RED;
    xcb_change_gc(c, gc, XCB_GC_FOREGROUND, &fg);
    xcb_poly_fill_rectangle(c, top, gc, 1, &red);
}

static int
app(const char *mode)
{
    char line[64];
    int views = !strcmp(mode, "views") || !strcmp(mode, "childview"), x, y;

    conn();
    top = mkwin(root, 50, 50, 400, 300, GREEN, 0);
    gc = xcb_generate_id(c);
    xcb_create_gc(c, gc, top, 0, NULL);
    if (!strncmp(mode, "child", 5)) {
        child = mkwin(top, 100, 100, 200, 100, RED, 0);
        if (!strcmp(mode, "child"))
            set_secure(child, 1);
        xcb_map_window(c, child);
    }
    if (views)
        views_set("_CAPTURE_SHIELD_VIEWS", 100, 100, 4);
    xcb_map_window(c, top);
    wait_mapped(top);
    if (!child)
        paint(100, 100);
    sync_();
    printf("T=0x%x C=0x%x\n", top, child);
    fflush(stdout);
    while (fgets(line, sizeof(line), stdin)) {
        if (sscanf(line, "move %d %d", &x, &y) == 2) {
            /* as a toolkit does: the new layout drawn, then the property updated */
            paint(x, y);
            if (views)
                views_set("_CAPTURE_SHIELD_VIEWS", x, y, 4);
            sync_();
            printf("moved\n");
        } else if (!strncmp(line, "bad", 3)) {
            views_set("_CAPTURE_SHIELD_VIEWS", 0, 0, 3);
            sync_();
            printf("bad\n");
        } else if (!strncmp(line, "policy", 6)) {
            uint32_t v[4] = { 0, 0, 10, 10 };
            int e = check(xcb_change_property_checked(c, XCB_PROP_MODE_REPLACE, top,
                                                      atom("_CAPTURE_SHIELD_POLICY_VIEWS"),
                                                      XCB_ATOM_CARDINAL, 32, 4, v));
            printf("policy_err=%d\n", e);
        }
        fflush(stdout);
    }
    return 0;
}

static int
shot(void)
{
    xcb_generic_error_t *e = NULL;
    xcb_get_image_reply_t *r;
    long red = 0, green = 0, black = 0;
    int x, y, stride;
    const uint8_t *d;

    conn();
    r = xcb_get_image_reply(c, xcb_get_image(c, XCB_IMAGE_FORMAT_Z_PIXMAP, root, 0, 0, SW, SH,
                                             ~0u), &e);
    if (!r) {
        printf("err=%d red=-1 green=-1 black=-1\n", e ? e->error_code : -1);
        return 0;
    }
    d = xcb_get_image_data(r);
    stride = xcb_get_image_data_length(r) / SH;
    for (y = 0; y < SH; y++)
        for (x = 0; x < SW; x++) {
            uint32_t v = cs_px(d + (size_t) y * stride + 4 * (size_t) x) & 0xffffff;
            red += v == RED;
            green += v == GREEN;
            black += v == 0;
        }
    printf("err=0 red=%ld green=%ld black=%ld\n", red, green, black);
    free(r);
    return 0;
}

static int
write_(xcb_window_t w, const char *name)
{
    uint32_t v[4] = { 0, 0, 400, 300 };

    conn();
    printf("err=%d\n", check(xcb_change_property_checked(c, XCB_PROP_MODE_REPLACE, w, atom(name),
                                                         XCB_ATOM_CARDINAL, 32, 4, v)));
    return 0;
}

int
main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 3 && !strcmp(argv[1], "app"))
        return app(argv[2]);
    if (argc == 2 && !strcmp(argv[1], "shot"))
        return shot();
    if (argc == 4 && !strcmp(argv[1], "write"))
        return write_((xcb_window_t) strtoul(argv[2], NULL, 0), argv[3]);
    fprintf(stderr, "usage: atk-views app child|childplain|childview|views|plain | shot | write W NAME\n");
    return 2;
}
