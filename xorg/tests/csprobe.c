/* CaptureShield Xorg tests: an X client that plays victim, capturer, attacker or trusted helper. */
#include "csprobe.h"

xcb_connection_t *c;
xcb_screen_t *scr;
xcb_window_t root;
void
die(const char *m)
{
    fprintf(stderr, "csprobe: %s\n", m);
    exit(2);
}

void
conn(void)
{
    c = xcb_connect(NULL, NULL);
    if (xcb_connection_has_error(c))
        die("cannot connect");
    scr = xcb_setup_roots_iterator(xcb_get_setup(c)).data;
    root = scr->root;
}

void
sync_(void)
{
    free(xcb_get_input_focus_reply(c, xcb_get_input_focus(c), NULL));
}

int
check(xcb_void_cookie_t ck)
{
    xcb_generic_error_t *e = xcb_request_check(c, ck);
    int code = e ? e->error_code : 0;
    free(e);
    return code;
}

xcb_atom_t
atom(const char *name)
{
    xcb_intern_atom_reply_t *r =
        xcb_intern_atom_reply(c, xcb_intern_atom(c, 0, strlen(name), name), NULL);
    xcb_atom_t a = r ? r->atom : 0;
    free(r);
    return a;
}

/* ---- pixel statistics over many captures ---- */

void
count(struct stats *s, const uint8_t *data, int w, int h, int stride)
{
    long red = 0, black = 0, blue = 0;
    int x, y;

    for (y = 0; y < h; y++) {
        const uint8_t *l = data + (size_t) y * stride;
        for (x = 0; x < w; x++) {
            uint32_t v = cs_px(l + 4 * x) & 0xffffff;
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

void
refused(struct stats *s)
{
    s->frames++;
    s->refused++;
}

void
print_stats(const struct stats *s)
{
    printf("frames=%ld refused=%ld red_max=%ld red_frames=%ld black_min=%ld black_max=%ld "
           "blue_min=%ld\n", s->frames, s->refused, s->red_max, s->red_frames, s->black_min,
           s->black_max, s->blue_min);
}

/* GetImage of a drawable into stats; returns the error code */
int
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
int cs_major, cs_event;

void
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

unsigned
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
int
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

int
ext_major(const char *name)
{
    xcb_query_extension_reply_t *q = xcb_query_extension_reply(
        c, xcb_query_extension(c, strlen(name), name), NULL);
    int m = q && q->present ? q->major_opcode : -1;
    free(q);
    return m;
}

/* DOUBLE-BUFFER AllocateBackBufferName(window, buffer, Untouched) */
int
dbe_alloc(xcb_window_t w, uint32_t buf)
{
    struct { uint8_t major, minor; uint16_t len; uint32_t win, buf; uint8_t action, pad[3]; }
        req = { ext_major("DOUBLE-BUFFER"), 1, 4, w, buf, 2, {0} };
    return raw_void(&req, sizeof(req));
}

/* DOUBLE-BUFFER SwapBuffers(1 window, Untouched): the back buffer gets the old front */
int
dbe_swap(xcb_window_t w)
{
    struct { uint8_t major, minor; uint16_t len; uint32_t n, win; uint8_t action, pad[3]; }
        req = { ext_major("DOUBLE-BUFFER"), 3, 4, 1, w, 2, {0} };
    return raw_void(&req, sizeof(req));
}

/* ---- victim: a red secure window S (100,100 200x200) under a blue plain window A
 * (250,250 100x100), over a green root. Prints their ids once both are exposed. ---- */
xcb_window_t
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

/* the child of the root that holds `w` (a window manager's frame, or `w` itself) */
xcb_window_t
toplevel(xcb_window_t w)
{
    for (;;) {
        xcb_query_tree_reply_t *t = xcb_query_tree_reply(c, xcb_query_tree(c, w), NULL);
        xcb_window_t parent = t ? t->parent : root;
        free(t);
        if (parent == root || parent == XCB_NONE)
            return w;
        w = parent;
    }
}

/* polls (up to `tries` x 10 ms) until `w` is viewable */
void
wait_viewable(xcb_window_t w, int tries)
{
    int i;

    for (i = 0; i < tries; i++) {
        xcb_get_window_attributes_reply_t *a =
            xcb_get_window_attributes_reply(c, xcb_get_window_attributes(c, w), NULL);
        int viewable = a && a->map_state == XCB_MAP_STATE_VIEWABLE;
        free(a);
        if (viewable)
            return;
        usleep(10000);
    }
}

void
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

void
set_secure(xcb_window_t w, uint32_t v)
{
    xcb_change_property(c, XCB_PROP_MODE_REPLACE, w, atom("_CAPTURE_SHIELD_SECURE"),
                        XCB_ATOM_CARDINAL, 32, 1, &v);
}

/* ---- captures ---- */
xcb_render_pictformat_t
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


#ifndef CSPROBE_LIB
int
main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2)
        die("usage: csprobe victim|capture|attack|proto|listen|policy|frame|session|compositor ...");
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
    if (!strcmp(argv[1], "policy"))
        return policy(argc - 2, argv + 2);
    if (!strcmp(argv[1], "frame"))
        return frame_cmd(argc - 2, argv + 2);
    if (!strcmp(argv[1], "compositor"))
        return compositor(argc - 2, argv + 2);
    if (!strcmp(argv[1], "session"))
        return session();
    die("unknown command");
    return 2;
}
#endif
