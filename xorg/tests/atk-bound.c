/* CaptureShield Xorg tests (t-bound.sh): the cost bound (issue 25 point 10). An attacker
 * maps thousands of shaped secure windows of its own over a victim's secure window; the
 * module then bounds the secret region (region.c, CS_MAX_BOXES) and must still give no
 * secret pixel to another untrusted client, and the screen must stay as it is.
 *   atk-bound victim           red 200x200 secure window at 300,200 over a blue root;
 *                              prints "S=0x.." and waits
 *   atk-bound flood N MOVES [plain|over]
 *                              N secure windows (plain: untagged, 3 px to the right; over:
 *                              untagged, over the victim's window only) 24x24, each shaped as an L of two
 *                              rectangles (6 px wide arms), green, at pseudo-random places
 *                              (seed 1) over the screen; then MOVES times: move one 1 px
 *                              and GetImage 1x1 of the root there (each a tree change the
 *                              module computes again); prints "ready n=N" and holds them
 *                              until stdin closes; a line "go K" on stdin: K more such
 *                              loops, then "done K" (xorg/bench/bound.sh counts them)
 *   atk-bound read1 K          K GetImage 1x1 of the root at 400,300
 *   atk-bound children         the number of the root's children
 *   atk-bound getimage [WIN]   GetImage of the root (800x600) or of WIN (200x200): pixel
 *                              statistics (red: the victim's pixels)
 */
#include "csprobe.h"

#define ARM 6
#define SIDE 24
#define DARK_GREEN 0x008000

static int
do_victim(void)
{
    uint32_t blue = BLUE;
    xcb_window_t s;

    xcb_change_window_attributes(c, root, XCB_CW_BACK_PIXEL, &blue);
    xcb_clear_area(c, 0, root, 0, 0, 0, 0);
    s = mkwin(root, 300, 200, 200, 200, RED, 0);
    set_secure(s, 1);
    xcb_map_window(c, s);
    wait_mapped(s);
    printf("S=0x%x\n", s);
    fflush(stdout);
    for (;;) {
        xcb_generic_event_t *ev = xcb_wait_for_event(c);
        if (!ev)
            return 0;
        free(ev);
    }
}

static int
do_flood(int n, int moves, int plain)
{
    int shape = ext_major("SHAPE"), i, k;
    xcb_atom_t tag = atom("_CAPTURE_SHIELD_SECURE");
    xcb_window_t *w = calloc(n, sizeof(*w));
    int *x = calloc(n, sizeof(int)), *y = calloc(n, sizeof(int));
    uint32_t one = 1;
    char line[16];

    if (shape < 0 || !w || !x || !y)
        die("no SHAPE or no memory");
    srand(1);
    for (i = 0; i < n; i++) {
        struct {
            uint8_t major, minor;
            uint16_t len;
            uint8_t op, kind, order, pad;
            uint32_t win;
            int16_t x, y;
            xcb_rectangle_t r[2];
        } sr = { (uint8_t) shape, 1, 8, 0, 0, 0, 0, 0, 0, 0,
                 { { 0, 0, SIDE, ARM }, { 0, 0, ARM, SIDE } } };
        uint32_t v[2] = { DARK_GREEN, 1 };

        if (plain == 2) {       /* "over": over the victim only (300,200 200x200) */
            x[i] = 290 + rand() % 200;
            y[i] = 190 + rand() % 200;
        } else {
            x[i] = rand() % (SW - 20) + 3 * plain;        /* plain: not the same places */
            y[i] = rand() % (SH - 20);
        }
        w[i] = xcb_generate_id(c);
        xcb_create_window(c, XCB_COPY_FROM_PARENT, w[i], root, x[i], y[i], SIDE, SIDE, 0,
                          XCB_WINDOW_CLASS_INPUT_OUTPUT, XCB_COPY_FROM_PARENT,
                          XCB_CW_BACK_PIXEL | XCB_CW_OVERRIDE_REDIRECT, v);
        if (!plain)
            xcb_change_property(c, XCB_PROP_MODE_REPLACE, w[i], tag, XCB_ATOM_CARDINAL, 32, 1,
                                &one);
        sr.win = w[i];
        raw_void(&sr, sizeof(sr));      /* ShapeRectangles Set Bounding: an L */
        xcb_map_window(c, w[i]);
        if (i % 200 == 199)
            sync_();
    }
    sync_();
    for (k = 0; k < moves; k++) {
        uint32_t g[2];

        i = k % n;
        x[i] += 1;
        g[0] = (uint32_t) x[i];
        g[1] = (uint32_t) y[i];
        xcb_configure_window(c, w[i], XCB_CONFIG_WINDOW_X | XCB_CONFIG_WINDOW_Y, g);
        free(xcb_get_image_reply(c, xcb_get_image(c, XCB_IMAGE_FORMAT_Z_PIXMAP, root, x[i] + 2,
                                                  y[i] + 2, 1, 1, ~0u), NULL));
    }
    sync_();
    printf("ready n=%d moves=%d\n", n, moves);
    fflush(stdout);
    while (fgets(line, sizeof(line), stdin)) {
        /* "go K": K more loops, then "done" (a bench counts the server's instructions) */
        if (strncmp(line, "go ", 3))
            continue;
        moves = atoi(line + 3);
        for (k = 0; k < moves; k++) {
            uint32_t g[2];

            i = k % n;
            x[i] += k / n % 2 ? -1 : 1;
            g[0] = (uint32_t) x[i];
            g[1] = (uint32_t) y[i];
            xcb_configure_window(c, w[i], XCB_CONFIG_WINDOW_X | XCB_CONFIG_WINDOW_Y, g);
            free(xcb_get_image_reply(c, xcb_get_image(c, XCB_IMAGE_FORMAT_Z_PIXMAP, root,
                                                      x[i] + 2, y[i] + 2, 1, 1, ~0u), NULL));
        }
        sync_();
        printf("done %d\n", moves);
        fflush(stdout);
    }
    return 0;
}

/* K GetImage 1x1 of the root at 400,300 (another client's reads, for a bench) */
static int
do_read1(int k)
{
    int i;

    for (i = 0; i < k; i++)
        free(xcb_get_image_reply(c, xcb_get_image(c, XCB_IMAGE_FORMAT_Z_PIXMAP, root, 400, 300,
                                                  1, 1, ~0u), NULL));
    printf("read %d\n", k);
    return 0;
}

int
main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2)
        die("usage: atk-bound victim|flood N MOVES|getimage [WIN]");
    conn();
    if (!strcmp(argv[1], "victim"))
        return do_victim();
    if (!strcmp(argv[1], "flood") && argc > 3)
        return do_flood(atoi(argv[2]), atoi(argv[3]),
                        argc > 4 ? !strcmp(argv[4], "plain") ? 1 : !strcmp(argv[4], "over") * 2 : 0);
    if (!strcmp(argv[1], "children")) {
        xcb_query_tree_reply_t *t = xcb_query_tree_reply(c, xcb_query_tree(c, root), NULL);
        printf("%d\n", t ? t->children_len : -1);
        free(t);
        return 0;
    }
    if (!strcmp(argv[1], "read1") && argc > 2)
        return do_read1(atoi(argv[2]));
    if (!strcmp(argv[1], "getimage")) {
        struct stats st = { 0 };
        xcb_drawable_t d = argc > 2 ? strtoul(argv[2], NULL, 0) : root;
        int wd = argc > 2 ? 200 : SW, ht = argc > 2 ? 200 : SH;
        int e = getimage(&st, d, 0, 0, wd, ht);
        printf("err=%d ", e);
        print_stats(&st);
        return 0;
    }
    die("unknown command");
    return 2;
}
