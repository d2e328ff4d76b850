/* CaptureShield Xorg tests: an X client that plays victim, capturer, attacker or trusted helper. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/uio.h>
#include <xcb/xcb.h>
#include <xcb/xcbext.h>
#include <xcb/shm.h>
#include <xcb/render.h>
#include <xcb/composite.h>
#include "captureshieldproto.h"

#define SW 800
#define SH 600
#define RED 0xff0000
#define GREEN 0x00ff00
#define BLUE 0x0000ff
#define CS_QV_ARG 1u /* client version 1.0: two little-endian CARD16 */

static xcb_connection_t *c;
static xcb_screen_t *scr;
static xcb_window_t root;

static void
die(const char *m)
{
    fprintf(stderr, "csprobe: %s\n", m);
    exit(2);
}

static void
conn(void)
{
    c = xcb_connect(NULL, NULL);
    if (xcb_connection_has_error(c))
        die("cannot connect");
    scr = xcb_setup_roots_iterator(xcb_get_setup(c)).data;
    root = scr->root;
}

static void
sync_(void)
{
    free(xcb_get_input_focus_reply(c, xcb_get_input_focus(c), NULL));
}

static int
check(xcb_void_cookie_t ck)
{
    xcb_generic_error_t *e = xcb_request_check(c, ck);
    int code = e ? e->error_code : 0;
    free(e);
    return code;
}

static xcb_atom_t
atom(const char *name)
{
    xcb_intern_atom_reply_t *r =
        xcb_intern_atom_reply(c, xcb_intern_atom(c, 0, strlen(name), name), NULL);
    xcb_atom_t a = r ? r->atom : 0;
    free(r);
    return a;
}

/* ---- pixel statistics over many captures ---- */
struct stats {
    long frames, refused, red_frames, red_max, black_min, black_max, blue_min;
};

static void
count(struct stats *s, const uint8_t *data, int w, int h, int stride)
{
    long red = 0, black = 0, blue = 0;
    int x, y;

    for (y = 0; y < h; y++) {
        const uint32_t *l = (const uint32_t *) (data + (size_t) y * stride);
        for (x = 0; x < w; x++) {
            uint32_t v = l[x] & 0xffffff;
            red += v == RED;
            black += v == 0;
            blue += v == BLUE;
        }
    }
    if (s->frames - s->refused == 0) {
        s->black_min = black;
        s->blue_min = blue;
    }
    s->frames++;
    s->red_frames += red > 0;
    if (red > s->red_max)
        s->red_max = red;
    if (black > s->black_max)
        s->black_max = black;
    if (black < s->black_min)
        s->black_min = black;
    if (blue < s->blue_min)
        s->blue_min = blue;
}

static void
refused(struct stats *s)
{
    s->frames++;
    s->refused++;
}

static void
print_stats(const struct stats *s)
{
    printf("frames=%ld refused=%ld red_max=%ld red_frames=%ld black_min=%ld black_max=%ld "
           "blue_min=%ld\n", s->frames, s->refused, s->red_max, s->red_frames, s->black_min,
           s->black_max, s->blue_min);
}

/* GetImage of a drawable into stats; returns the error code */
static int
getimage(struct stats *s, xcb_drawable_t d, int x, int y, int w, int h)
{
    xcb_generic_error_t *e = NULL;
    xcb_get_image_reply_t *r = xcb_get_image_reply(
        c, xcb_get_image(c, XCB_IMAGE_FORMAT_Z_PIXMAP, d, x, y, w, h, ~0u), &e);
    int code;

    if (!r) {
        code = e ? e->error_code : -1;
        free(e);
        refused(s);
        return code;
    }
    count(s, xcb_get_image_data(r), w, h, xcb_get_image_data_length(r) / h);
    free(r);
    return 0;
}

/* ---- the CAPTURESHIELD extension, raw requests ---- */
static int cs_major, cs_event;

static void
cs_init(void)
{
    xcb_query_extension_reply_t *r = xcb_query_extension_reply(
        c, xcb_query_extension(c, strlen(CAPTURESHIELD_NAME), CAPTURESHIELD_NAME), NULL);
    if (!r || !r->present)
        die("no CAPTURESHIELD extension");
    cs_major = r->major_opcode;
    cs_event = r->first_event;
    free(r);
}

static unsigned
cs_send(int minor, uint32_t arg, int isvoid, void **reply, int *err)
{
    struct {
        uint8_t major, minor;
        uint16_t len;
        uint32_t arg;
    } req = { cs_major, minor, 2, arg };
    struct iovec iov[3];
    xcb_protocol_request_t pr = { 1, NULL, 0, isvoid };
    xcb_generic_error_t *e = NULL;
    unsigned seq;

    if (minor == X_CaptureShieldQueryVersion)
        req.arg = CS_QV_ARG;
    iov[2].iov_base = &req;
    iov[2].iov_len = sizeof(req);
    seq = xcb_send_request(c, XCB_REQUEST_RAW | XCB_REQUEST_CHECKED, &iov[2], &pr);
    if (isvoid) {
        xcb_void_cookie_t ck = { seq };
        e = xcb_request_check(c, ck);
    } else {
        *reply = xcb_wait_for_reply(c, seq, &e);
    }
    *err = e ? e->error_code : 0;
    free(e);
    return seq;
}

/* any raw void request (header included); returns the error code */
static int
raw_void(void *req, size_t len)
{
    struct iovec iov[3];
    xcb_protocol_request_t pr = { 1, NULL, 0, 1 };
    xcb_void_cookie_t ck;

    iov[2].iov_base = req;
    iov[2].iov_len = len;
    ck.sequence = xcb_send_request(c, XCB_REQUEST_RAW | XCB_REQUEST_CHECKED, &iov[2], &pr);
    return check(ck);
}

static int
ext_major(const char *name)
{
    xcb_query_extension_reply_t *q = xcb_query_extension_reply(
        c, xcb_query_extension(c, strlen(name), name), NULL);
    int m = q && q->present ? q->major_opcode : -1;
    free(q);
    return m;
}

/* DOUBLE-BUFFER AllocateBackBufferName(window, buffer, Untouched) */
static int
dbe_alloc(xcb_window_t w, uint32_t buf)
{
    struct { uint8_t major, minor; uint16_t len; uint32_t win, buf; uint8_t action, pad[3]; }
        req = { ext_major("DOUBLE-BUFFER"), 1, 4, w, buf, 2, {0} };
    return raw_void(&req, sizeof(req));
}

/* DOUBLE-BUFFER SwapBuffers(1 window, Untouched): the back buffer gets the old front */
static int
dbe_swap(xcb_window_t w)
{
    struct { uint8_t major, minor; uint16_t len; uint32_t n, win; uint8_t action, pad[3]; }
        req = { ext_major("DOUBLE-BUFFER"), 3, 4, 1, w, 2, {0} };
    return raw_void(&req, sizeof(req));
}

/* ---- victim: a red secure window S (100,100 200x200) under a blue plain window A
 * (250,250 100x100), over a green root. Prints their ids once both are exposed. ---- */
static xcb_window_t
mkwin(xcb_window_t parent, int x, int y, int w, int h, uint32_t pixel, int bg_none)
{
    xcb_window_t w_ = xcb_generate_id(c);
    uint32_t vals[3];
    uint32_t mask;

    if (bg_none) {
        mask = XCB_CW_OVERRIDE_REDIRECT | XCB_CW_EVENT_MASK;
        vals[0] = 1;
        vals[1] = XCB_EVENT_MASK_EXPOSURE | XCB_EVENT_MASK_STRUCTURE_NOTIFY;
    } else {
        mask = XCB_CW_BACK_PIXEL | XCB_CW_OVERRIDE_REDIRECT | XCB_CW_EVENT_MASK;
        vals[0] = pixel;
        vals[1] = 1;
        vals[2] = XCB_EVENT_MASK_EXPOSURE | XCB_EVENT_MASK_STRUCTURE_NOTIFY;
    }
    xcb_create_window(c, XCB_COPY_FROM_PARENT, w_, parent, x, y, w, h, 0,
                      XCB_WINDOW_CLASS_INPUT_OUTPUT, XCB_COPY_FROM_PARENT, mask, vals);
    return w_;
}

static void
wait_mapped(xcb_window_t w)
{
    xcb_generic_event_t *ev;
    int mapped = 0;

    xcb_flush(c);
    while (!mapped && (ev = xcb_wait_for_event(c))) {
        if ((ev->response_type & 0x7f) == XCB_MAP_NOTIFY &&
            ((xcb_map_notify_event_t *) ev)->window == w)
            mapped = 1;
        free(ev);
    }
    sync_();
}

static void
set_secure(xcb_window_t w, uint32_t v)
{
    xcb_change_property(c, XCB_PROP_MODE_REPLACE, w, atom("_CAPTURE_SHIELD_SECURE"),
                        XCB_ATOM_CARDINAL, 32, 1, &v);
}

static int
victim(int argc, char **argv)
{
    int mover = argc > 0 && !strcmp(argv[0], "--mover");
    int name = argc > 0 && !strcmp(argv[0], "--name-pixmap");
    int dbe = argc > 0 && !strcmp(argv[0], "--dbe");
    uint32_t green = GREEN;
    xcb_window_t s, a = 0;
    xcb_pixmap_t pix = 0;
    int i;

    conn();
    xcb_change_window_attributes(c, root, XCB_CW_BACK_PIXEL, &green);
    xcb_clear_area(c, 0, root, 0, 0, 0, 0);
    s = mkwin(root, 100, 100, 200, 200, RED, 0);
    set_secure(s, 1);           /* tagged before it is ever mapped */
    xcb_map_window(c, s);
    wait_mapped(s);
    if (!mover) {
        a = mkwin(root, 250, 250, 100, 100, BLUE, 0);
        xcb_map_window(c, a);
        wait_mapped(a);
    }
    if (name) {
        pix = xcb_generate_id(c);
        xcb_composite_redirect_window(c, s, XCB_COMPOSITE_REDIRECT_AUTOMATIC);
        if (check(xcb_composite_name_window_pixmap_checked(c, s, pix)))
            die("victim: NameWindowPixmap of its own window failed");
    }
    if (dbe) {
        pix = xcb_generate_id(c);
        if (dbe_alloc(s, pix))
            die("victim: DBE AllocateBackBufferName failed");
    }
    sync_();
    printf("S=0x%x A=0x%x PIX=0x%x BASE=0x%x\n", s, a, pix,
           xcb_get_setup(c)->resource_id_base);
    fflush(stdout);
    if (mover) {
        for (i = 0;; i++) {
            uint32_t g[4] = { 50 + (i * 7) % 500, 50 + (i * 5) % 350, 100 + (i * 3) % 150,
                100 + (i * 11) % 150 };
            xcb_configure_window(c, s, XCB_CONFIG_WINDOW_X | XCB_CONFIG_WINDOW_Y |
                                 XCB_CONFIG_WINDOW_WIDTH | XCB_CONFIG_WINDOW_HEIGHT, g);
            if (i % 4 == 0)
                sync_();
            if (xcb_connection_has_error(c))
                return 0;
        }
    }
    for (;;) {
        xcb_generic_event_t *ev = xcb_wait_for_event(c);
        if (!ev)
            return 0;
        free(ev);
    }
}

/* ---- captures ---- */
static xcb_render_pictformat_t
root_format(void)
{
    xcb_render_query_pict_formats_reply_t *r =
        xcb_render_query_pict_formats_reply(c, xcb_render_query_pict_formats(c), NULL);
    xcb_render_pictscreen_iterator_t si;
    xcb_render_pictformat_t f = 0;

    for (si = xcb_render_query_pict_formats_screens_iterator(r); si.rem;
         xcb_render_pictscreen_next(&si)) {
        xcb_render_pictdepth_iterator_t di = xcb_render_pictscreen_depths_iterator(si.data);
        for (; di.rem; xcb_render_pictdepth_next(&di)) {
            xcb_render_pictvisual_iterator_t vi = xcb_render_pictdepth_visuals_iterator(di.data);
            for (; vi.rem; xcb_render_pictvisual_next(&vi))
                if (vi.data->visual == scr->root_visual)
                    f = vi.data->format;
        }
    }
    free(r);
    return f;
}

static int
capture(int argc, char **argv)
{
    const char *kind;
    int n, i, x = 0, y = 0, w = SW, h = SH;
    xcb_window_t target = 0;
    struct stats s = { 0 };
    xcb_pixmap_t pix;
    xcb_gcontext_t gc;
    uint32_t inferiors = XCB_SUBWINDOW_MODE_INCLUDE_INFERIORS;
    int shmid = -1;
    uint8_t *shmaddr = NULL;
    xcb_shm_seg_t seg = 0;

    if (argc < 2)
        die("capture KIND N [WINDOW]");
    kind = argv[0];
    n = atoi(argv[1]);
    conn();
    if (argc > 2) {
        xcb_get_geometry_reply_t *g;
        target = strtoul(argv[2], NULL, 0);
        g = xcb_get_geometry_reply(c, xcb_get_geometry(c, target), NULL);
        if (!g)
            die("no such window");
        w = g->width;
        h = g->height;
        free(g);
    } else {
        target = root;
    }
    pix = xcb_generate_id(c);
    xcb_create_pixmap(c, scr->root_depth, pix, root, w, h);
    gc = xcb_generate_id(c);
    xcb_create_gc(c, gc, pix, XCB_GC_SUBWINDOW_MODE, &inferiors);
    if (!strncmp(kind, "shm", 3)) {
        shmid = shmget(IPC_PRIVATE, (size_t) w * h * 4, IPC_CREAT | 0600);
        shmaddr = shmat(shmid, NULL, 0);
        shmctl(shmid, IPC_RMID, NULL);
        seg = xcb_generate_id(c);
        xcb_shm_attach(c, seg, shmid, 0);
    }
    for (i = 0; i < n; i++) {
        if (!strcmp(kind, "getimage")) {
            getimage(&s, target, x, y, w, h);
        } else if (!strcmp(kind, "xyplane")) {
            /* XYPixmap GetImage of the red MSB plane: a set bit is a red-ish pixel */
            xcb_generic_error_t *e = NULL;
            xcb_get_image_reply_t *r = xcb_get_image_reply(
                c, xcb_get_image(c, XCB_IMAGE_FORMAT_XY_PIXMAP, target, 0, 0, w, h, 1u << 23),
                &e);
            if (!r) {
                refused(&s);
            } else {
                const uint8_t *d = xcb_get_image_data(r);
                int len = xcb_get_image_data_length(r), k, bits = 0;
                for (k = 0; k < len; k++)
                    bits += __builtin_popcount(d[k]);
                s.frames++;
                s.red_frames += bits > 0;
                if (bits > s.red_max)
                    s.red_max = bits;
                free(r);
            }
            free(e);
        } else if (!strcmp(kind, "copyarea") || !strcmp(kind, "copyplane")) {
            uint32_t fgbg[2] = { RED, 0 };
            int e;
            if (!strcmp(kind, "copyarea")) {
                e = check(xcb_copy_area_checked(c, target, pix, gc, 0, 0, 0, 0, w, h));
            } else {
                xcb_change_gc(c, gc, XCB_GC_FOREGROUND | XCB_GC_BACKGROUND, fgbg);
                e = check(xcb_copy_plane_checked(c, target, pix, gc, 0, 0, 0, 0, w, h, 1u << 23));
            }
            if (e)
                refused(&s);
            else
                getimage(&s, pix, 0, 0, w, h);
        } else if (!strcmp(kind, "render")) {
            xcb_render_picture_t src = xcb_generate_id(c), dst = xcb_generate_id(c);
            xcb_render_pictformat_t f = root_format();
            int e;
            xcb_render_create_picture(c, src, target, f, XCB_RENDER_CP_SUBWINDOW_MODE,
                                      &inferiors);
            xcb_render_create_picture(c, dst, pix, f, 0, NULL);
            e = check(xcb_render_composite_checked(c, XCB_RENDER_PICT_OP_SRC, src, 0, dst,
                                                   0, 0, 0, 0, 0, 0, w, h));
            if (e)
                refused(&s);
            else
                getimage(&s, pix, 0, 0, w, h);
            xcb_render_free_picture(c, src);
            xcb_render_free_picture(c, dst);
        } else if (!strcmp(kind, "shmget")) {
            xcb_generic_error_t *e = NULL;
            xcb_shm_get_image_reply_t *r = xcb_shm_get_image_reply(
                c, xcb_shm_get_image(c, target, 0, 0, w, h, ~0u, XCB_IMAGE_FORMAT_Z_PIXMAP,
                                     seg, 0), &e);
            if (!r)
                refused(&s);
            else
                count(&s, shmaddr, w, h, w * 4);
            free(r);
            free(e);
        } else if (!strcmp(kind, "shmpixmap")) {
            xcb_pixmap_t sp = xcb_generate_id(c);
            xcb_shm_create_pixmap(c, sp, root, w, h, scr->root_depth, seg, 0);
            memset(shmaddr, 0x55, (size_t) w * h * 4);
            if (check(xcb_copy_area_checked(c, target, sp, gc, 0, 0, 0, 0, w, h)))
                refused(&s);
            else
                count(&s, shmaddr, w, h, w * 4);
            xcb_free_pixmap(c, sp);
        } else if (!strcmp(kind, "namepixmap")) {
            xcb_pixmap_t np = xcb_generate_id(c);
            if (i == 0)
                xcb_composite_redirect_subwindows(c, root, XCB_COMPOSITE_REDIRECT_AUTOMATIC);
            if (check(xcb_composite_name_window_pixmap_checked(c, target, np))) {
                refused(&s);
            } else {
                getimage(&s, np, 0, 0, w, h);
                xcb_free_pixmap(c, np);
            }
        } else {
            die("unknown capture kind");
        }
    }
    print_stats(&s);
    if (shmaddr)
        shmdt(shmaddr);
    xcb_disconnect(c);
    return 0;
}

/* ---- attacks ---- */
static void
move(xcb_window_t w, int x, int y)
{
    uint32_t v[2] = { x, y };
    xcb_configure_window(c, w, XCB_CONFIG_WINDOW_X | XCB_CONFIG_WINDOW_Y, v);
}

/* own background-None window over (mapped on top of) or under S, then read it */
static int
attack(int argc, char **argv)
{
    const char *kind;
    xcb_window_t s, p;
    struct stats st = { 0 };

    if (argc < 2)
        die("attack over|under|reparent S | attack tile|copy|picture PIXMAP | attack untag S");
    kind = argv[0];
    s = strtoul(argv[1], NULL, 0);
    conn();
    if (!strcmp(kind, "over")) {
        p = mkwin(root, 100, 100, 200, 200, 0, 1);
        xcb_map_window(c, p);
        wait_mapped(p);
        getimage(&st, p, 0, 0, 200, 200);
    } else if (!strcmp(kind, "under")) {
        uint32_t below = XCB_STACK_MODE_BELOW;
        p = mkwin(root, 100, 100, 200, 200, 0, 1);
        xcb_configure_window(c, p, XCB_CONFIG_WINDOW_STACK_MODE, &below);
        xcb_map_window(c, p);
        wait_mapped(p);
        move(s, 500, 300);      /* a foreign window: any X client may move it */
        sync_();
        getimage(&st, p, 0, 0, 200, 200);
        move(s, 100, 100);
    } else if (!strcmp(kind, "reparent")) {
        uint32_t below = XCB_STACK_MODE_BELOW;
        p = mkwin(root, 0, 0, SW, SH, 0, 1);
        xcb_configure_window(c, p, XCB_CONFIG_WINDOW_STACK_MODE, &below);
        xcb_map_window(c, p);
        wait_mapped(p);
        xcb_reparent_window(c, s, p, 100, 100);
        sync_();
        xcb_unmap_window(c, s);
        sync_();
        getimage(&st, p, 0, 0, SW, SH);
        xcb_reparent_window(c, s, root, 100, 100);
        xcb_map_window(c, s);
        sync_();
    } else if (!strcmp(kind, "tile") || !strcmp(kind, "copy") || !strcmp(kind, "picture")) {
        xcb_pixmap_t own = xcb_generate_id(c);
        xcb_gcontext_t gc = xcb_generate_id(c);
        int e;
        xcb_create_pixmap(c, scr->root_depth, own, root, 200, 200);
        if (!strcmp(kind, "tile")) {
            uint32_t v[2] = { XCB_FILL_STYLE_TILED, s };
            xcb_rectangle_t r = { 0, 0, 200, 200 };
            e = check(xcb_create_gc_checked(c, gc, own, XCB_GC_FILL_STYLE | XCB_GC_TILE, v));
            if (!e)
                e = check(xcb_poly_fill_rectangle_checked(c, own, gc, 1, &r));
        } else if (!strcmp(kind, "copy")) {
            xcb_create_gc(c, gc, own, 0, NULL);
            e = check(xcb_copy_area_checked(c, s, own, gc, 0, 0, 0, 0, 200, 200));
        } else {
            xcb_render_picture_t src = xcb_generate_id(c), dst = xcb_generate_id(c);
            xcb_render_pictformat_t f = root_format();
            e = check(xcb_render_create_picture_checked(c, src, s, f, 0, NULL));
            xcb_render_create_picture(c, dst, own, f, 0, NULL);
            if (!e)
                e = check(xcb_render_composite_checked(c, XCB_RENDER_PICT_OP_SRC, src, 0, dst,
                                                       0, 0, 0, 0, 0, 0, 200, 200));
        }
        if (e)
            refused(&st);
        else
            getimage(&st, own, 0, 0, 200, 200);
    } else if (!strcmp(kind, "dbe-read")) {
        getimage(&st, s, 0, 0, 200, 200);       /* s: the victim's back buffer */
    } else if (!strcmp(kind, "dbe-alloc")) {
        xcb_pixmap_t buf = xcb_generate_id(c);
        if (dbe_alloc(s, buf) || dbe_swap(s))
            refused(&st);
        else
            getimage(&st, buf, 0, 0, 200, 200);
    } else if (!strcmp(kind, "untag")) {
        uint32_t zero = 0;
        xcb_atom_t a = atom("_CAPTURE_SHIELD_SECURE");
        int e1 = check(xcb_delete_property_checked(c, s, a));
        int e2 = check(xcb_change_property_checked(c, XCB_PROP_MODE_REPLACE, s, a,
                                                   XCB_ATOM_CARDINAL, 32, 1, &zero));
        xcb_get_property_reply_t *r =
            xcb_get_property_reply(c, xcb_get_property(c, 1, s, a, XCB_ATOM_ANY, 0, 1), NULL);
        int e3 = check(xcb_delete_property_checked(c, s, a));
        uint32_t v = r && xcb_get_property_value_length(r) == 4
                   ? *(uint32_t *) xcb_get_property_value(r) : 0;
        xcb_get_property_reply_t *r2 =
            xcb_get_property_reply(c, xcb_get_property(c, 0, s, a, XCB_ATOM_ANY, 0, 1), NULL);
        uint32_t v2 = r2 && xcb_get_property_value_length(r2) == 4
                    ? *(uint32_t *) xcb_get_property_value(r2) : 0;
        printf("delete_err=%d change_err=%d getdelete_tag=%u tag=%u\n", e1, e2, v, v2);
        (void) e3;
        free(r);
        free(r2);
        return 0;
    } else {
        die("unknown attack");
    }
    print_stats(&st);
    return 0;
}

/* ---- protocol ---- */
static int
proto(int argc, char **argv)
{
    void *rep = NULL;
    int err;

    if (argc < 1)
        die("proto version|grant XID|revoke XID|trust XID|select|dri2 WINDOW");
    conn();
    cs_init();
    if (!strcmp(argv[0], "version")) {
        xCaptureShieldQueryVersionReply *r;
        cs_send(X_CaptureShieldQueryVersion, 0, 0, &rep, &err);
        r = rep;
        if (!r)
            die("QueryVersion failed");
        printf("version=%u.%u mode=%u trust=%u\n", r->majorVersion, r->minorVersion, r->mode,
               r->trust);
    } else if (!strcmp(argv[0], "trust") && argc > 1) {
        xCaptureShieldGetClientTrustReply *r;
        cs_send(X_CaptureShieldGetClientTrust, strtoul(argv[1], NULL, 0), 0, &rep, &err);
        r = rep;
        printf("err=%d trust=%d\n", err, r ? r->trust : -1);
    } else if ((!strcmp(argv[0], "grant") || !strcmp(argv[0], "revoke")) && argc > 1) {
        cs_send(!strcmp(argv[0], "grant") ? X_CaptureShieldGrant : X_CaptureShieldRevoke,
                strtoul(argv[1], NULL, 0), 1, NULL, &err);
        printf("err=%d\n", err);
    } else if (!strcmp(argv[0], "select")) {
        cs_send(X_CaptureShieldSelectInput, CaptureShieldNotifyMask, 1, NULL, &err);
        printf("err=%d\n", err);
    } else if (!strcmp(argv[0], "dri2") && argc > 1) {
        /* DRI2CreateDrawable (minor 3): the lookup of the drawable is what the module guards */
        xcb_query_extension_reply_t *q = xcb_query_extension_reply(
            c, xcb_query_extension(c, 4, "DRI2"), NULL);
        struct { uint8_t major, minor; uint16_t len; uint32_t d; } req;
        struct iovec iov[3];
        xcb_protocol_request_t pr = { 1, NULL, 0, 1 };
        xcb_generic_error_t *e;
        xcb_void_cookie_t ck;
        if (!q || !q->present) {
            printf("dri2=absent\n");
            return 0;
        }
        req.major = q->major_opcode;
        req.minor = 3;
        req.len = 2;
        req.d = strtoul(argv[1], NULL, 0);
        iov[2].iov_base = &req;
        iov[2].iov_len = sizeof(req);
        ck.sequence = xcb_send_request(c, XCB_REQUEST_RAW | XCB_REQUEST_CHECKED, &iov[2], &pr);
        e = xcb_request_check(c, ck);
        printf("err=%d\n", e ? e->error_code : 0);
        free(e);
    } else {
        die("unknown proto command");
    }
    free(rep);
    return 0;
}

/* ---- the shield's own channels, attacked by an untrusted client ---- */
static int
daemon_(int argc, char **argv)
{
    int e = -1;

    if (argc < 1)
        die("daemon selection|rootprop|kill XID|sendevent WINDOW");
    conn();
    if (!strcmp(argv[0], "selection")) {
        xcb_window_t w = mkwin(root, 0, 0, 1, 1, 0, 0);
        e = check(xcb_set_selection_owner_checked(c, w, atom("_CAPTURE_SHIELD_S0"),
                                                  XCB_CURRENT_TIME));
    } else if (!strcmp(argv[0], "rootprop")) {
        uint32_t v = 0;
        e = check(xcb_change_property_checked(c, XCB_PROP_MODE_REPLACE, root,
                                              atom("_CAPTURE_SHIELD_POLICY"),
                                              XCB_ATOM_CARDINAL, 32, 1, &v));
    } else if (!strcmp(argv[0], "kill") && argc > 1) {
        e = check(xcb_kill_client_checked(c, strtoul(argv[1], NULL, 0)));
    } else if (!strcmp(argv[0], "sendevent") && argc > 1) {
        xcb_client_message_event_t ev;
        memset(&ev, 0, sizeof(ev));
        ev.response_type = XCB_CLIENT_MESSAGE;
        ev.format = 32;
        ev.window = strtoul(argv[1], NULL, 0);
        ev.type = atom("_CAPTURE_SHIELD_COMMAND");
        e = check(xcb_send_event_checked(c, 0, ev.window, 0, (const char *) &ev));
    } else {
        die("unknown daemon command");
    }
    printf("err=%d\n", e);
    return 0;
}

/* ---- listen: a trusted daemon's view of CaptureNotify events ---- */
static int
listen_(int argc, char **argv)
{
    int want = argc > 0 ? atoi(argv[0]) : 1, got = 0, err;
    xcb_generic_event_t *ev;

    conn();
    cs_init();
    cs_send(X_CaptureShieldSelectInput, CaptureShieldNotifyMask, 1, NULL, &err);
    printf("ready err=%d\n", err);
    fflush(stdout);
    while (got < want && (ev = xcb_wait_for_event(c))) {
        if ((ev->response_type & 0x7f) == cs_event + CaptureShieldNotify) {
            xCaptureShieldNotifyEvent *n = (void *) ev;
            printf("event kind=%u reader=0x%x drawable=0x%x major=%u minor=%u\n", n->kind,
                   n->reader, n->drawable, n->requestMajor, n->requestMinor);
            fflush(stdout);
            got++;
        }
        free(ev);
    }
    return 0;
}

/* ---- session: commands on stdin (base, cap, reconnect, quit), for grant tests ---- */
static int
session(void)
{
    char line[64];

    conn();
    while (fgets(line, sizeof(line), stdin)) {
        if (!strncmp(line, "base", 4)) {
            printf("base=0x%x\n", xcb_get_setup(c)->resource_id_base);
        } else if (!strncmp(line, "cap", 3)) {
            struct stats s = { 0 };
            getimage(&s, root, 0, 0, SW, SH);
            print_stats(&s);
        } else if (!strncmp(line, "win", 3)) {
            xcb_window_t w = mkwin(root, 0, 0, 1, 1, 0, 0);
            sync_();
            printf("win=0x%x\n", w);
        } else if (!strncmp(line, "events", 6)) {
            xcb_generic_event_t *ev;
            int n = 0;
            sync_();
            while ((ev = xcb_poll_for_event(c))) {
                n += (ev->response_type & 0x7f) == XCB_CLIENT_MESSAGE;
                free(ev);
            }
            printf("client_messages=%d\n", n);
        } else if (!strncmp(line, "reconnect", 9)) {
            xcb_disconnect(c);
            conn();
            printf("reconnected base=0x%x\n", xcb_get_setup(c)->resource_id_base);
        } else if (!strncmp(line, "quit", 4)) {
            break;
        }
        fflush(stdout);
    }
    xcb_disconnect(c);
    return 0;
}

int
main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2)
        die("usage: csprobe victim|capture|attack|proto|listen|session ...");
    if (!strcmp(argv[1], "victim"))
        return victim(argc - 2, argv + 2);
    if (!strcmp(argv[1], "capture"))
        return capture(argc - 2, argv + 2);
    if (!strcmp(argv[1], "attack"))
        return attack(argc - 2, argv + 2);
    if (!strcmp(argv[1], "proto"))
        return proto(argc - 2, argv + 2);
    if (!strcmp(argv[1], "listen"))
        return listen_(argc - 2, argv + 2);
    if (!strcmp(argv[1], "daemon"))
        return daemon_(argc - 2, argv + 2);
    if (!strcmp(argv[1], "session"))
        return session();
    die("unknown command");
    return 2;
}
