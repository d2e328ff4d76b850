/* CaptureShield Xorg tests (t-compositor.sh): what a compositor shows through windows over a
 * secure window.
 *   atk-comp over S OPACITY   maps an own 200x200 window exactly over S (at S's place) with
 *                             _NET_WM_WINDOW_OPACITY = OPACITY (0..1; -1: none), waits for
 *                             the compositor, then reads the root 10 times over 1 s
 *   atk-comp read S           reads the root 10 times over 1 s, no window of its own
 * Both print "exact=N tinted=N own=N": the most pixels of S's area in one read that are
 * exactly S's red (0xff0000), that carry red (R >= 0x30: S blended with what lies over
 * it; nothing else on these screens has red: the root is green, the victim's other window
 * blue, the attacker's 0x123456), and that are the attacker's own window's colour */
#include "csprobe.h"
#include <time.h>

static void
nap(int ms)
{
    struct timespec t = { ms / 1000, (long) (ms % 1000) * 1000000L };
    nanosleep(&t, NULL);
}

static void
reads(int sx, int sy)
{
    long exact = 0, tinted = 0, own = 0;
    int i;

    for (i = 0; i < 10; i++) {
        xcb_get_image_reply_t *r = xcb_get_image_reply(
            c, xcb_get_image(c, XCB_IMAGE_FORMAT_Z_PIXMAP, root, (int16_t) sx, (int16_t) sy,
                             200, 200, 0xffffffff), NULL);
        long e = 0, t = 0, o = 0;
        if (r) {
            const uint8_t *p = xcb_get_image_data(r);
            int n = xcb_get_image_data_length(r) / 4, k;
            for (k = 0; k < n; k++) {
                uint32_t v = cs_px(p + 4 * k) & 0xffffff;
                int R = (int) (v >> 16);
                if (v == 0xff0000)
                    e++;
                if (R >= 0x30)
                    t++;
                if (v == 0x123456)
                    o++;
            }
            free(r);
        }
        exact = e > exact ? e : exact;
        tinted = t > tinted ? t : tinted;
        own = o > own ? o : own;
        nap(100);
    }
    printf("exact=%ld tinted=%ld own=%ld\n", exact, tinted, own);
}

int
main(int argc, char **argv)
{
    xcb_window_t s;
    xcb_translate_coordinates_reply_t *t;
    int sx, sy;

    if (argc < 3 || (strcmp(argv[1], "over") && strcmp(argv[1], "read")) ||
        (!strcmp(argv[1], "over") && argc < 4)) {
        fprintf(stderr, "usage: atk-comp over S OPACITY | read S\n");
        return 64;
    }
    conn();
    s = (xcb_window_t) strtoul(argv[2], NULL, 0);
    t = xcb_translate_coordinates_reply(c, xcb_translate_coordinates(c, s, root, 0, 0), NULL);
    if (!t)
        die("no such window");
    sx = t->dst_x;
    sy = t->dst_y;
    free(t);
    if (!strcmp(argv[1], "over")) {
        double op = atof(argv[3]);
        xcb_window_t w = mkwin(root, sx, sy, 200, 200, 0x123456, 0);
        if (op >= 0) {
            uint32_t v = (uint32_t) (op * 4294967295.0);
            xcb_change_property(c, XCB_PROP_MODE_REPLACE, w, atom("_NET_WM_WINDOW_OPACITY"),
                                XCB_ATOM_CARDINAL, 32, 1, &v);
        }
        xcb_map_window(c, w);
        wait_mapped(w);
        nap(500);       /* the compositor's next frames */
    }
    reads(sx, sy);
    return 0;
}
