/* CaptureShield Xorg tests (t-bound.sh): the cost bound. An attacker
 * maps thousands of shaped secure windows of its own over a victim's secure window; the
 * module then bounds the secret region (area.c, CS_MAX_BOXES) and must still give no
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
 *   atk-bound flood N MOVES right
 *                              N secure windows as above, all at x 600..776 (the right
 *                              quarter of the screen, right of the victim)
 *   atk-bound bystander X Y W H
 *                              a plain yellow window of a third client at X,Y WxH over
 *                              everything; prints "W=0x.." and waits
 *   atk-bound box X Y W H      GetImage of the box of the root: "err= px= yellow= red=
 *                              black=" (pixel counts)
 *   atk-bound shuffle K        another client changes K of the root's 24x24 children
 *                              (moves 1 px either way, raises, lowers, unmaps and maps
 *                              again, resizes, jumps onto the victim and back), reading
 *                              1x1 of the root there after each change (so the module
 *                              computes the secret area after each); "shuffled K"
 *   atk-bound tagger K         a 60x60 window at 350,250 (over the victim) whose tag it sets
 *                              and clears K times; after each, another connection reads
 *                              1x1 of the root there; "tagged K"
 *   atk-bound raise W H        raises the root's children of size WxH (another client may)
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
        } else if (plain == 3) {        /* "right": x 600..776 */
            x[i] = 600 + rand() % (SW - 600 - SIDE + 1);
            y[i] = rand() % (SH - SIDE + 1);
        } else {
            x[i] = rand() % (SW - 20) + 3 * plain;        /* plain: not the same places */
            y[i] = rand() % (SH - 20);
        }
        w[i] = xcb_generate_id(c);
        xcb_create_window(c, XCB_COPY_FROM_PARENT, w[i], root, x[i], y[i], SIDE, SIDE, 0,
                          XCB_WINDOW_CLASS_INPUT_OUTPUT, XCB_COPY_FROM_PARENT,
                          XCB_CW_BACK_PIXEL | XCB_CW_OVERRIDE_REDIRECT, v);
        if (plain != 1 && plain != 2)
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

#define YELLOW 0xffff00

static int
do_bystander(int x, int y, int wd, int ht)
{
    xcb_window_t w = mkwin(root, x, y, wd, ht, YELLOW, 0);

    xcb_map_window(c, w);
    wait_mapped(w);
    printf("W=0x%x\n", w);
    fflush(stdout);
    for (;;) {
        xcb_generic_event_t *ev = xcb_wait_for_event(c);
        if (!ev)
            return 0;
        free(ev);
    }
}

static int
do_box(int x, int y, int wd, int ht)
{
    xcb_generic_error_t *e = NULL;
    xcb_get_image_reply_t *r = xcb_get_image_reply(
        c, xcb_get_image(c, XCB_IMAGE_FORMAT_Z_PIXMAP, root, x, y, wd, ht, ~0u), &e);
    long yellow = 0, red = 0, black = 0;
    int i, j, stride;
    const uint8_t *d;

    if (!r) {
        printf("err=%d px=0 yellow=0 red=0 black=0\n", e ? e->error_code : -1);
        free(e);
        return 0;
    }
    d = xcb_get_image_data(r);
    stride = xcb_get_image_data_length(r) / ht;
    for (j = 0; j < ht; j++)
        for (i = 0; i < wd; i++) {
            uint32_t v;
            memcpy(&v, d + j * stride + i * 4, 4);
            v &= 0xffffff;
            yellow += v == YELLOW;
            red += v == RED;
            black += v == 0;
        }
    free(r);
    printf("err=0 px=%ld yellow=%ld red=%ld black=%ld\n", (long) wd * ht, yellow, red, black);
    return 0;
}

static void
read_at(int x, int y)
{
    free(xcb_get_image_reply(c, xcb_get_image(c, XCB_IMAGE_FORMAT_Z_PIXMAP, root, x, y, 1, 1,
                                              ~0u), NULL));
}

/* another client changes the attacker's windows, reading after each change */
static int
do_shuffle(int k)
{
    xcb_query_tree_reply_t *t = xcb_query_tree_reply(c, xcb_query_tree(c, root), NULL);
    xcb_window_t *kids, *w;
    int i, n = 0, nk;

    if (!t)
        die("QueryTree");
    kids = xcb_query_tree_children(t);
    nk = xcb_query_tree_children_length(t);
    w = calloc(nk + 1, sizeof(*w));
    for (i = 0; i < nk; i++) {
        xcb_get_geometry_reply_t *g =
            xcb_get_geometry_reply(c, xcb_get_geometry(c, kids[i]), NULL);
        if (g && g->width == SIDE && g->height == SIDE)
            w[n++] = kids[i];
        free(g);
    }
    free(t);
    if (!n)
        die("no 24x24 windows");
    for (i = 0; i < k; i++) {
        xcb_window_t v = w[(i * 37) % n];
        xcb_get_geometry_reply_t *g = xcb_get_geometry_reply(c, xcb_get_geometry(c, v), NULL);
        uint32_t a[2];
        int x, y;

        if (!g)
            continue;
        x = g->x;
        y = g->y;
        free(g);
        switch (i % 6) {
        case 0:
        case 1:
            a[0] = (uint32_t) (x + (i % 2 ? -1 : 1));
            a[1] = (uint32_t) y;
            xcb_configure_window(c, v, XCB_CONFIG_WINDOW_X | XCB_CONFIG_WINDOW_Y, a);
            break;
        case 2:
            a[0] = i % 4 ? XCB_STACK_MODE_ABOVE : XCB_STACK_MODE_BELOW;
            xcb_configure_window(c, v, XCB_CONFIG_WINDOW_STACK_MODE, a);
            break;
        case 3:
            xcb_unmap_window(c, v);
            read_at(x + 2, y + 2);
            xcb_map_window(c, v);
            break;
        case 4:
            a[0] = SIDE + 8;
            a[1] = SIDE + 8;
            xcb_configure_window(c, v, XCB_CONFIG_WINDOW_WIDTH | XCB_CONFIG_WINDOW_HEIGHT, a);
            read_at(x + 2, y + 2);
            a[0] = a[1] = SIDE;
            xcb_configure_window(c, v, XCB_CONFIG_WINDOW_WIDTH | XCB_CONFIG_WINDOW_HEIGHT, a);
            break;
        case 5:
            a[0] = 390;
            a[1] = 290;
            xcb_configure_window(c, v, XCB_CONFIG_WINDOW_X | XCB_CONFIG_WINDOW_Y, a);
            read_at(392, 292);
            a[0] = (uint32_t) x;
            a[1] = (uint32_t) y;
            xcb_configure_window(c, v, XCB_CONFIG_WINDOW_X | XCB_CONFIG_WINDOW_Y, a);
            break;
        }
        read_at(x + 2, y + 2);
    }
    sync_();
    free(w);
    printf("shuffled %d of %d windows\n", k, n);
    return 0;
}

static int
do_tagger(int k)
{
    xcb_connection_t *c2 = xcb_connect(NULL, NULL);
    xcb_window_t w = mkwin(root, 350, 250, 60, 60, GREEN, 0);
    int i;

    if (xcb_connection_has_error(c2))
        die("second connection");
    xcb_map_window(c, w);
    wait_mapped(w);
    for (i = 0; i < k; i++) {
        set_secure(w, i % 2 ? 0 : 1);
        sync_();
        free(xcb_get_image_reply(c2, xcb_get_image(c2, XCB_IMAGE_FORMAT_Z_PIXMAP, root, 360, 260,
                                                   1, 1, ~0u), NULL));
    }
    xcb_destroy_window(c, w);
    sync_();
    xcb_disconnect(c2);
    printf("tagged %d\n", k);
    return 0;
}

static int
do_raise(int wd, int ht)
{
    xcb_query_tree_reply_t *t = xcb_query_tree_reply(c, xcb_query_tree(c, root), NULL);
    xcb_window_t *kids;
    int i, n = 0;
    uint32_t above = XCB_STACK_MODE_ABOVE;

    if (!t)
        die("QueryTree");
    kids = xcb_query_tree_children(t);
    for (i = 0; i < xcb_query_tree_children_length(t); i++) {
        xcb_get_geometry_reply_t *g =
            xcb_get_geometry_reply(c, xcb_get_geometry(c, kids[i]), NULL);
        if (g && g->width == wd && g->height == ht) {
            xcb_configure_window(c, kids[i], XCB_CONFIG_WINDOW_STACK_MODE, &above);
            n++;
        }
        free(g);
    }
    free(t);
    sync_();
    printf("raised=%d\n", n);
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
                        argc < 5 ? 0 : !strcmp(argv[4], "plain") ? 1 :
                        !strcmp(argv[4], "over") ? 2 : !strcmp(argv[4], "right") ? 3 : 0);
    if (!strcmp(argv[1], "bystander") && argc > 5)
        return do_bystander(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
    if (!strcmp(argv[1], "box") && argc > 5)
        return do_box(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
    if (!strcmp(argv[1], "tagger") && argc > 2)
        return do_tagger(atoi(argv[2]));
    if (!strcmp(argv[1], "raise") && argc > 3)
        return do_raise(atoi(argv[2]), atoi(argv[3]));
    if (!strcmp(argv[1], "shuffle") && argc > 2)
        return do_shuffle(atoi(argv[2]));
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
