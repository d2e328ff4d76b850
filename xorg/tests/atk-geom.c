/* CaptureShield Xorg tests (t-geom.sh): request geometry at the protocol's limits, write
 * ordering (racing SHM readers, copies into one's own secure window) and RENDER sources
 * that move pixels (filters, transforms, repeat, alpha maps, masks).
 *
 *   atk-geom copy SX SY DX DY W H      CopyArea root (IncludeInferiors) -> own pixmap
 *   atk-geom plane SX SY DX DY W H     CopyPlane (red's lowest bit) the same way
 *   atk-geom getimage X Y W H          GetImage of the root
 *   atk-geom comp SX SY DX DY W H      RENDER Composite root picture -> own pixmap
 *   atk-geom shmget N                  N ShmGetImage of the victim's box; a thread reads
 *                                      the segment all the while
 *   atk-geom shmcopy N                 N CopyArea root -> SHM pixmap, the same thread
 *   atk-geom shmcomp N                 N RENDER Composite root -> SHM pixmap, the same
 *   atk-geom owncopy | owncomp         copy / composite the victim's box into an own
 *                                      secure window, then read that window back
 *   atk-geom conv | xform | repeat | reflect | alphamap | mask
 *                                      RENDER sources that move pixels into a box next to
 *                                      (or away from) the victim
 *   atk-geom planeown                  CopyPlane (plane 22) of the root, IncludeInferiors,
 *                                      into an own pixmap, over the victim and an own white
 *                                      window beside it; own=N: the white window's pixels
 *                                      (its set plane paints the red foreground)
 *   atk-geom tri | trap                Triangles / Trapezoids from a picture of an own
 *                                      window beside the victim, the source origin reaching
 *                                      left of the window onto the victim
 *   atk-geom compwin                   RENDER Composite (root, repeat pad) into an own
 *                                      window at y 300 with a destination origin y 32766:
 *                                      in fb the window's origin added to it wraps
 *   atk-geom fuzz N SEED               N random extreme-geometry requests; alive=1 when the
 *                                      server still answers
 * Prints "red=N err=E" (red pixels read back by the attacker; E: the first X error code),
 * plus "seen=N" (most red pixels a racing reader saw in one look) for the races. */
#include "csprobe.h"
#include <arpa/inet.h>
#include <pthread.h>

#define VX 100                  /* the victim's secure window (csprobe victim) */
#define VY 100
#define VW 200
#define VH 200

static int first_err;
static long blue_n;             /* blue pixels red_in saw (the plain window stays) */

static void
note(int e)
{
    if (e && !first_err)
        first_err = e;
}

static long
red_in(const uint8_t *data, int w, int h, int stride)
{
    long n = 0;
    int x, y;

    for (y = 0; y < h; y++) {
        const uint8_t *l = data + (size_t) y * stride;
        for (x = 0; x < w; x++) {
            n += (cs_px(l + 4 * x) & 0xffffff) == RED;
            blue_n += (cs_px(l + 4 * x) & 0xffffff) == BLUE;
        }
    }
    return n;
}

/* red pixels in drawable d (w x h), read with GetImage in strips */
static long
red_of(xcb_drawable_t d, int w, int h)
{
    long n = 0;
    int y, sh = 100;

    for (y = 0; y < h; y += sh) {
        int hh = h - y < sh ? h - y : sh;
        xcb_generic_error_t *e = NULL;
        xcb_get_image_reply_t *r = xcb_get_image_reply(
            c, xcb_get_image(c, XCB_IMAGE_FORMAT_Z_PIXMAP, d, 0, y, w, hh, ~0u), &e);
        if (!r) {
            note(e ? e->error_code : -1);
            free(e);
            return n;
        }
        n += red_in(xcb_get_image_data(r), w, hh, xcb_get_image_data_length(r) / hh);
        free(r);
    }
    return n;
}

static xcb_pixmap_t
black_pixmap(int w, int h)
{
    xcb_pixmap_t p = xcb_generate_id(c);
    xcb_gcontext_t g = xcb_generate_id(c);
    uint32_t v = 0;
    xcb_rectangle_t r = { 0, 0, w, h };

    xcb_create_pixmap(c, scr->root_depth, p, root, w, h);
    xcb_create_gc(c, g, p, XCB_GC_FOREGROUND, &v);
    xcb_poly_fill_rectangle(c, p, g, 1, &r);
    xcb_free_gc(c, g);
    return p;
}

static xcb_gcontext_t
inferiors_gc(xcb_drawable_t d)
{
    xcb_gcontext_t g = xcb_generate_id(c);
    uint32_t v[3] = { RED, 0, XCB_SUBWINDOW_MODE_INCLUDE_INFERIORS };

    xcb_create_gc(c, g, d, XCB_GC_FOREGROUND | XCB_GC_BACKGROUND | XCB_GC_SUBWINDOW_MODE, v);
    return g;
}

static xcb_render_picture_t
picture(xcb_drawable_t d, xcb_render_pictformat_t f, int inferiors)
{
    xcb_render_picture_t p = xcb_generate_id(c);
    uint32_t v = XCB_SUBWINDOW_MODE_INCLUDE_INFERIORS;

    xcb_render_create_picture(c, p, d, f, inferiors ? XCB_RENDER_CP_SUBWINDOW_MODE : 0, &v);
    return p;
}

static int
comp(uint8_t op, xcb_render_picture_t s, xcb_render_picture_t m, xcb_render_picture_t d,
     int sx, int sy, int mx, int my, int dx, int dy, int w, int h)
{
    return check(xcb_render_composite_checked(c, op, s, m, d, sx, sy, mx, my, dx, dy, w, h));
}

/* ---- the racing reader ---- */
static volatile int stop;
static volatile long seen;
static const uint8_t *shm_mem;
static int shm_w, shm_h;

static volatile long hits;

/* looks at one pixel inside the victim's visible area as fast as it can; on red, counts
 * the whole segment at once */
static void *
reader(void *arg)
{
    const volatile uint8_t *px = shm_mem + ((size_t) (VY + 50) * shm_w + VX + 50) * 4;
    (void) arg;
    while (!stop) {
        /* red in the server's image byte order (cs_px): bytes 00 00 ff */
        if (px[0] == 0 && px[1] == 0 && px[2] == 0xff) {
            long n = red_in(shm_mem, shm_w, shm_h, shm_w * 4);
            hits++;
            if (n > seen)
                seen = n;
            if (!n)
                seen = seen ? seen : 1;
        }
    }
    return NULL;
}

static int
race(const char *kind, int n)
{
    int shmid, i;
    uint8_t *mem;
    xcb_shm_seg_t seg = xcb_generate_id(c);
    pthread_t t;
    xcb_pixmap_t sp = 0;
    xcb_gcontext_t g = 0;
    xcb_render_picture_t rs = 0, rd = 0;

    /* the whole screen: the server takes long enough over it for the reader to look */
    shm_w = SW;
    shm_h = SH;
    shmid = shmget(IPC_PRIVATE, (size_t) shm_w * shm_h * 4, IPC_CREAT | 0600);
    if (shmid < 0 || (mem = shmat(shmid, NULL, 0)) == (void *) -1)
        die("shm");
    shmctl(shmid, IPC_RMID, NULL);
    memset(mem, 0, (size_t) shm_w * shm_h * 4);
    shm_mem = mem;
    note(check(xcb_shm_attach_checked(c, seg, shmid, 0)));
    if (strcmp(kind, "shmget")) {
        sp = xcb_generate_id(c);
        note(check(xcb_shm_create_pixmap_checked(c, sp, root, shm_w, shm_h, scr->root_depth,
                                                 seg, 0)));
        g = inferiors_gc(sp);
        if (!strcmp(kind, "shmcomp")) {
            xcb_render_pictformat_t f = root_format();
            rs = picture(root, f, 1);
            rd = picture(sp, f, 0);
        }
    }
    pthread_create(&t, NULL, reader, NULL);
    for (i = 0; i < n; i++) {
        if (rs) {
            note(comp(XCB_RENDER_PICT_OP_SRC, rs, 0, rd, 0, 0, 0, 0, 0, 0, SW, SH));
        } else if (sp) {
            note(check(xcb_copy_area_checked(c, root, sp, g, 0, 0, 0, 0, SW, SH)));
        } else {
            xcb_generic_error_t *e = NULL;
            free(xcb_shm_get_image_reply(c, xcb_shm_get_image(c, root, 0, 0, SW, SH, ~0u,
                                                              XCB_IMAGE_FORMAT_Z_PIXMAP,
                                                              seg, 0), &e));
            note(e ? e->error_code : 0);
            free(e);
        }
    }
    stop = 1;
    pthread_join(t, NULL);
    printf("seen=%ld hits=%ld red=%ld err=%d\n", seen, hits, red_in(mem, shm_w, shm_h, shm_w * 4), first_err);
    return 0;
}

/* ---- an own secure window the attacker may read back ---- */
static int
own(int composite)
{
    xcb_window_t w = mkwin(root, 450, 300, VW, VH, GREEN, 0);
    long red;

    set_secure(w, 1);
    xcb_map_window(c, w);
    wait_mapped(w);
    if (composite) {
        xcb_render_pictformat_t f = root_format();
        note(comp(XCB_RENDER_PICT_OP_SRC, picture(root, f, 1), 0, picture(w, f, 0),
                  VX, VY, 0, 0, 0, 0, VW, VH));
    } else {
        note(check(xcb_copy_area_checked(c, root, w, inferiors_gc(w), VX, VY, 0, 0, VW, VH)));
    }
    red = red_of(w, VW, VH);
    printf("red=%ld err=%d\n", red, first_err);
    return 0;
}

/* ---- RENDER sources that move pixels ---- */
static int
set_filter(xcb_render_picture_t p, const char *name, int n, const xcb_render_fixed_t *v)
{
    /* Xorg's SProcRenderSetPictureFilter does not swap the filter's values: a client of
     * the other byte order that knows it sends them in the server's order (least
     * significant byte first here), as an attacker would */
    static xcb_render_fixed_t w[2 + 401];
    int i;

    if (htonl(1) == 1 && n <= (int) (sizeof(w) / sizeof(w[0]))) {
        for (i = 0; i < n; i++)
            w[i] = (xcb_render_fixed_t) __builtin_bswap32((uint32_t) v[i]);
        v = w;
    }
    return check(xcb_render_set_picture_filter_checked(c, p, strlen(name), name, n, v));
}

static int
render_move(const char *kind)
{
    xcb_render_pictformat_t f = root_format();
    xcb_render_picture_t src = picture(root, f, 1), dst;
    xcb_pixmap_t pix = black_pixmap(VW, VH);
    /* the box right of the victim: only a source that moves pixels brings red into it */
    int sx = VX + VW, sy = VY;

    dst = picture(pix, f, 0);
    if (!strcmp(kind, "conv") || !strcmp(kind, "mask")) {
        /* a 1 x 401 kernel with one 1 at its end: each pixel takes the one 200 to its left */
        static xcb_render_fixed_t k[2 + 401];
        xcb_render_picture_t from = src;
        k[0] = 401 << 16;
        k[1] = 1 << 16;
        k[2] = 1 << 16;
        if (!strcmp(kind, "mask")) {
            /* the root as a component-alpha mask of a white source: the mask's colours */
            uint32_t ca = 1;
            xcb_render_color_t white = { 0xffff, 0xffff, 0xffff, 0xffff };
            xcb_render_picture_t solid = xcb_generate_id(c);
            xcb_render_create_solid_fill(c, solid, white);
            xcb_render_change_picture(c, src, XCB_RENDER_CP_COMPONENT_ALPHA, &ca);
            note(set_filter(from, "convolution", 2 + 401, k));
            note(comp(XCB_RENDER_PICT_OP_SRC, solid, from, dst, 0, 0, sx, sy, 0, 0, VW, VH));
        } else {
            note(set_filter(from, "convolution", 2 + 401, k));
            note(comp(XCB_RENDER_PICT_OP_SRC, from, 0, dst, sx, sy, 0, 0, 0, 0, VW, VH));
        }
    } else if (!strcmp(kind, "xform")) {
        /* x' = x - 200: the box right of the victim shows the victim */
        xcb_render_transform_t t = { 1 << 16, 0, -(VW << 16), 0, 1 << 16, 0, 0, 0, 1 << 16 };
        note(check(xcb_render_set_picture_transform_checked(c, src, t)));
        note(comp(XCB_RENDER_PICT_OP_SRC, src, 0, dst, sx, sy, 0, 0, 0, 0, VW, VH));
    } else if (!strcmp(kind, "repeat") || !strcmp(kind, "reflect")) {
        /* normal: x + 800 reads x; reflect: 1600 - 1 - x reads x */
        uint32_t rep = !strcmp(kind, "repeat") ? XCB_RENDER_REPEAT_NORMAL
            : XCB_RENDER_REPEAT_REFLECT;
        int x = rep == XCB_RENDER_REPEAT_NORMAL ? SW + VX : 2 * SW - VX - VW;
        xcb_render_change_picture(c, src, XCB_RENDER_CP_REPEAT, &rep);
        note(comp(XCB_RENDER_PICT_OP_SRC, src, 0, dst, x, VY, 0, 0, 0, 0, VW, VH));
    } else if (!strcmp(kind, "alphamap")) {
        /* an alpha map on the destination (and an opaque one on a pixmap source layer):
         * the victim's own box, read through pictures with alpha maps */
        xcb_render_query_pict_formats_reply_t *r =
            xcb_render_query_pict_formats_reply(c, xcb_render_query_pict_formats(c), NULL);
        xcb_render_pictforminfo_iterator_t it = xcb_render_query_pict_formats_formats_iterator(r);
        xcb_render_pictformat_t a8 = 0;
        xcb_pixmap_t ap = xcb_generate_id(c);
        xcb_render_picture_t am;
        uint32_t v;
        for (; it.rem; xcb_render_pictforminfo_next(&it))
            if (it.data->depth == 8 && it.data->direct.alpha_mask == 0xff &&
                !it.data->direct.red_mask)
                a8 = it.data->id;
        free(r);
        xcb_create_pixmap(c, 8, ap, root, VW, VH);
        am = picture(ap, a8, 0);
        v = am;
        note(check(xcb_render_change_picture_checked(c, dst, XCB_RENDER_CP_ALPHA_MAP, &v)));
        note(comp(XCB_RENDER_PICT_OP_SRC, src, 0, dst, VX, VY, 0, 0, 0, 0, VW, VH));
    } else {
        die("render kind");
    }
    printf("red=%ld err=%d\n", red_of(pix, VW, VH), first_err);
    return 0;
}

/* ---- CopyPlane of the root over the victim and an own white window ---- */
/* The generator's seed 1796402875, case 8598: CopyPlane (plane 22) of the root with
 * IncludeInferiors into a pixmap painted the red foreground where the attacker's own
 * window held white (a set plane, like red's). Here both are in the box: the victim's
 * part must come out unset (black), the own white window's part set (red) */
static int
plane_own(void)
{
    xcb_window_t w = mkwin(root, VX + VW + 20, VY, 60, 60, 0xffffff, 0);
    xcb_pixmap_t pix = black_pixmap(SW, SH);
    xcb_gcontext_t g = inferiors_gc(pix);
    long red = 0, own = 0;
    int x, y, bx = VX - 10, by = VY - 10, bw = VW + 100, bh = VH + 20;

    xcb_map_window(c, w);
    wait_mapped(w);
    note(check(xcb_copy_plane_checked(c, root, pix, g, bx, by, 0, 0, bw, bh, 1u << 22)));
    for (y = 0; y < bh; y += 10) {
        xcb_get_image_reply_t *r = xcb_get_image_reply(
            c, xcb_get_image(c, XCB_IMAGE_FORMAT_Z_PIXMAP, pix, 0, y, bw, 10, ~0u), NULL);
        const uint8_t *d;
        if (!r)
            break;
        d = xcb_get_image_data(r);
        for (x = 0; x < bw * 10; x++) {
            int sx = bx + x % bw, sy = by + y + x / bw;
            if ((cs_px(d + 4 * x) & 0xffffff) != RED)
                continue;
            if (sx >= VX && sx < VX + VW && sy >= VY && sy < VY + VH)
                red++;
            else if (sx >= VX + VW + 20 && sx < VX + VW + 80 && sy >= VY && sy < VY + 60)
                own++;
        }
        free(r);
    }
    printf("red=%ld own=%ld err=%d\n", red, own, first_err);
    return 0;
}

/* ---- Triangles / Trapezoids: the source read wherever the shapes put it ---- */
/* The generator's seed 1, case 4147: Triangles from a picture of the reader's own window
 * with a negative source origin read the secure window beside it (fb reads a window
 * source through the whole pixmap it is drawn in). Here the own window is right of the
 * victim and the source origin VW + 20 to its left: the shapes cover VW x VH (Triangles
 * with OVER: with SRC each triangle clears the rest of its box). */
static int
shapes(int trap)
{
    xcb_render_pictformat_t f = root_format();
    int wx = VX + VW + 20;
    xcb_window_t w = mkwin(root, wx, VY, VW, VH, GREEN, 0);
    xcb_pixmap_t pix = black_pixmap(VW, VH);
    xcb_render_picture_t src, dst = picture(pix, f, 0);
    int32_t W = VW << 16, H = VH << 16;

    xcb_map_window(c, w);
    wait_mapped(w);
    src = picture(w, f, 1);
    if (trap) {
        xcb_render_trapezoid_t t = { 0, H, { { 0, 0 }, { 0, H } }, { { W, 0 }, { W, H } } };
        note(check(xcb_render_trapezoids_checked(c, XCB_RENDER_PICT_OP_SRC, src, dst, 0,
                                                 VX - wx, 0, 1, &t)));
    } else {
        xcb_render_triangle_t t[2] = { { { 0, 0 }, { W, 0 }, { 0, H } },
            { { W, 0 }, { W, H }, { 0, H } } };
        note(check(xcb_render_triangles_checked(c, XCB_RENDER_PICT_OP_OVER, src, dst, 0,
                                                VX - wx, 0, 2, t)));
    }
    printf("red=%ld err=%d\n", red_of(pix, VW, VH), first_err);
    return 0;
}

/* ---- Composite whose destination origin wraps with the window's origin ---- */
/* The generator's seed 1796399438, case 30371. fb adds the window's y (300) to the
 * destination origin 32766 in INT16: -32470, so the 41944 lines drawn cover the whole
 * window, from the source's line -32670 + 32770 = 100 on (the victim's top). */
static int
comp_win(void)
{
    xcb_render_pictformat_t f = root_format();
    xcb_window_t w = mkwin(root, 450, 300, 300, 300, GREEN, 0);
    xcb_render_picture_t src = picture(root, f, 1), dst;
    uint32_t pad = XCB_RENDER_REPEAT_PAD;

    xcb_map_window(c, w);
    wait_mapped(w);
    dst = picture(w, f, 0);
    xcb_render_change_picture(c, src, XCB_RENDER_CP_REPEAT, &pad);
    note(comp(XCB_RENDER_PICT_OP_SRC, src, 0, dst, VX, -32670, 0, 0, 0, 32766, 300, 41944));
    printf("red=%ld err=%d\n", red_of(w, 300, 300), first_err);
    return 0;
}

/* ---- random requests at the protocol's limits ---- */
static int
pick16(unsigned *seed)
{
    static const int edge[] = { -32768, -32767, -32000, -1, 0, 1, 100, 799, 32000, 32766, 32767 };
    int r = rand_r(seed) % 3;
    if (r == 0)
        return edge[rand_r(seed) % (sizeof(edge) / sizeof(edge[0]))];
    if (r == 1)
        return (rand_r(seed) % 1600) - 800;
    return (rand_r(seed) % 65536) - 32768;
}

static int
pickw(unsigned *seed)
{
    static const int edge[] = { 0, 1, 200, 32767, 32768, 40000, 65534, 65535 };
    int r = rand_r(seed) % 3;
    if (r == 0)
        return edge[rand_r(seed) % (sizeof(edge) / sizeof(edge[0]))];
    if (r == 1)
        return rand_r(seed) % 1000;
    return rand_r(seed) % 65536;
}

static int
fuzz(int n, unsigned seed)
{
    xcb_render_pictformat_t f = root_format();
    /* windows at the far edges of the coordinate space, one of them as large as allowed */
    xcb_window_t far1 = mkwin(root, -32768, -32768, 65535, 65535, GREEN, 0);
    xcb_window_t far2 = mkwin(root, 32000, 32000, 800, 600, GREEN, 0);
    xcb_window_t near = mkwin(root, 0, 0, 800, 600, GREEN, 0);
    xcb_pixmap_t pix = black_pixmap(800, 600);
    xcb_drawable_t d[5];
    xcb_render_picture_t p[5];
    xcb_gcontext_t g[5], gc[5];
    long red = 0;
    int i, alive;
    uint32_t below = XCB_STACK_MODE_BELOW;
    int trace = getenv("ATK_TRACE") != NULL;

    xcb_configure_window(c, far1, XCB_CONFIG_WINDOW_STACK_MODE, &below);
    xcb_configure_window(c, near, XCB_CONFIG_WINDOW_STACK_MODE, &below);
    xcb_map_window(c, far1);
    xcb_map_window(c, far2);
    xcb_map_window(c, near);
    d[0] = root;
    d[1] = far1;
    d[2] = far2;
    d[3] = near;
    d[4] = pix;
    for (i = 0; i < 5; i++) {
        g[i] = inferiors_gc(d[i]);
        gc[i] = xcb_generate_id(c);
        xcb_create_gc(c, gc[i], d[i], 0, NULL);     /* ClipByChildren, exposures on */
        p[i] = picture(d[i], f, 1);
    }
    sync_();
    for (i = 0; i < n; i++) {
        int k = rand_r(&seed) % 5, s = rand_r(&seed) % 5, t = rand_r(&seed) % 5;
        int sx = pick16(&seed), sy = pick16(&seed), dx = pick16(&seed), dy = pick16(&seed);
        int w = pickw(&seed), h = pickw(&seed);
        xcb_gcontext_t gg = rand_r(&seed) % 2 ? g[t ? t : 4] : gc[t ? t : 4];
        if (t == 0)
            t = 4;              /* no writes into the root: the victim stays visible */
        switch (k) {
        case 0:
        case 1:
            xcb_copy_area(c, d[s], d[t], gg, sx, sy, dx, dy, w, h);
            break;
        case 2:
            xcb_copy_plane(c, d[s], d[t], gg, sx, sy, dx, dy, w, h, 1u << 16);
            break;
        case 3:
            free(xcb_get_image_reply(c, xcb_get_image(c, XCB_IMAGE_FORMAT_Z_PIXMAP, d[s],
                                                      sx, sy, w % 801, h % 601, ~0u), NULL));
            break;
        default:
            xcb_render_composite(c, XCB_RENDER_PICT_OP_SRC, p[s], 0, p[t], sx, sy, 0, 0,
                                 dx, dy, w, h);
            break;
        }
        if (trace) {
            fprintf(stderr, "%d k=%d s=%d t=%d %d %d %d %d %d %d\n", i, k, s, t, sx, sy, dx,
                    dy, w, h);
            sync_();
            if (xcb_connection_has_error(c))
                break;
        } else if (i % 50 == 49) {
            sync_();
        }
    }
    xcb_flush(c);
    {
        xcb_get_input_focus_reply_t *r =
            xcb_get_input_focus_reply(c, xcb_get_input_focus(c), NULL);
        alive = r != NULL && !xcb_connection_has_error(c);
        free(r);
    }
    if (alive)
        red = red_of(pix, 800, 600);
    printf("alive=%d red=%ld\n", alive, red);
    return 0;
}

int
main(int argc, char **argv)
{
    const char *m = argc > 1 ? argv[1] : "";
    int a[6] = { 0 }, i;

    for (i = 0; i < 6 && i + 2 < argc; i++)
        a[i] = atoi(argv[i + 2]);
    conn();
    if (!strcmp(m, "copy") || !strcmp(m, "plane")) {
        xcb_pixmap_t pix = black_pixmap(SW, SH);
        xcb_gcontext_t g = inferiors_gc(pix);
        if (!strcmp(m, "copy"))
            note(check(xcb_copy_area_checked(c, root, pix, g, a[0], a[1], a[2], a[3], a[4],
                                             a[5])));
        else
            note(check(xcb_copy_plane_checked(c, root, pix, g, a[0], a[1], a[2], a[3], a[4],
                                              a[5], 1u << 16)));
        long red = red_of(pix, SW, SH);
        printf("red=%ld blue=%ld err=%d\n", red, blue_n, first_err);
    } else if (!strcmp(m, "farcopy")) {
        /* a window (65535 x 65535, below the others) at WX,WY; CopyArea from it at SX,SY
         * (W x H) into an own pixmap, GC ClipByChildren; alive=1: the server answers */
        xcb_window_t w = mkwin(root, a[0], a[1], 65535, 65535, GREEN, 0);
        xcb_pixmap_t pix = black_pixmap(SW, SH);
        xcb_gcontext_t g = xcb_generate_id(c);
        uint32_t below = XCB_STACK_MODE_BELOW;
        xcb_get_input_focus_reply_t *r;
        xcb_configure_window(c, w, XCB_CONFIG_WINDOW_STACK_MODE, &below);
        xcb_map_window(c, w);
        xcb_create_gc(c, g, pix, 0, NULL);
        xcb_copy_area(c, w, pix, g, a[2], a[3], 0, 0, a[4], a[5]);
        r = xcb_get_input_focus_reply(c, xcb_get_input_focus(c), NULL);
        printf("alive=%d\n", r != NULL);
        free(r);
    } else if (!strcmp(m, "selfcopy")) {
        /* CopyArea of an own pixmap onto itself (no clip): mi's source box is 16-bit */
        xcb_pixmap_t pix = black_pixmap(SW, SH);
        xcb_gcontext_t g = xcb_generate_id(c);
        xcb_get_input_focus_reply_t *r;
        xcb_create_gc(c, g, pix, 0, NULL);
        xcb_copy_area(c, pix, pix, g, a[0], a[1], a[2], a[3], a[4], a[5]);
        r = xcb_get_input_focus_reply(c, xcb_get_input_focus(c), NULL);
        printf("alive=%d\n", r != NULL);
        free(r);
    } else if (!strcmp(m, "getimage-xy")) {
        /* GetImage XYPixmap of the root, all 24 planes: pixels put back together */
        xcb_generic_error_t *e = NULL;
        xcb_get_image_reply_t *r = xcb_get_image_reply(
            c, xcb_get_image(c, XCB_IMAGE_FORMAT_XY_PIXMAP, root, a[0], a[1], a[2], a[3],
                             0xffffff), &e);
        long red = 0, blue = 0;
        if (r) {
            const uint8_t *d = xcb_get_image_data(r);
            int stride = (a[2] + 31) / 32 * 4, x, y, p;
            int lsb = xcb_get_setup(c)->bitmap_format_bit_order == XCB_IMAGE_ORDER_LSB_FIRST;
            for (y = 0; y < a[3]; y++)
                for (x = 0; x < a[2]; x++) {
                    uint32_t v = 0;
                    for (p = 0; p < 24; p++) {
                        uint8_t b = d[(size_t) p * stride * a[3] + (size_t) y * stride + x / 8];
                        int bit = lsb ? (b >> (x & 7)) & 1 : (b >> (7 - (x & 7))) & 1;
                        v |= (uint32_t) bit << (23 - p);
                    }
                    red += v == RED;
                    blue += v == BLUE;
                }
            free(r);
        }
        note(e ? e->error_code : 0);
        free(e);
        printf("red=%ld blue=%ld err=%d\n", red, blue, first_err);
    } else if (!strcmp(m, "getimage")) {
        struct stats s = { 0 };
        note(getimage(&s, root, a[0], a[1], a[2], a[3]));
        printf("red=%ld err=%d\n", s.red_max, first_err);
    } else if (!strcmp(m, "comp")) {
        xcb_render_pictformat_t f = root_format();
        xcb_pixmap_t pix = black_pixmap(SW, SH);
        note(comp(XCB_RENDER_PICT_OP_SRC, picture(root, f, 1), 0, picture(pix, f, 0),
                  a[0], a[1], 0, 0, a[2], a[3], a[4], a[5]));
        long red = red_of(pix, SW, SH);
        printf("red=%ld blue=%ld err=%d\n", red, blue_n, first_err);
    } else if (!strcmp(m, "shmget") || !strcmp(m, "shmcopy") || !strcmp(m, "shmcomp")) {
        return race(m, a[0] > 0 ? a[0] : 200);
    } else if (!strcmp(m, "owncopy") || !strcmp(m, "owncomp")) {
        return own(!strcmp(m, "owncomp"));
    } else if (!strcmp(m, "planeown")) {
        return plane_own();
    } else if (!strcmp(m, "compwin")) {
        return comp_win();
    } else if (!strcmp(m, "tri") || !strcmp(m, "trap")) {
        return shapes(!strcmp(m, "trap"));
    } else if (!strcmp(m, "fuzz")) {
        return fuzz(a[0], (unsigned) a[1]);
    } else {
        return render_move(m);
    }
    return 0;
}
