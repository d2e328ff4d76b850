/* CaptureShield Xorg tests: the probe's victim window and its capture paths. */
#include "csprobe.h"

int
victim(int argc, char **argv)
{
    int mover = argc > 0 && !strcmp(argv[0], "--mover");
    int late = argc > 0 && (!strcmp(argv[0], "--name-then-tag") ||
                            !strcmp(argv[0], "--dbe-then-tag"));
    int name = argc > 0 && (!strcmp(argv[0], "--name-pixmap") ||
                            !strcmp(argv[0], "--name-then-tag"));
    int dbe = argc > 0 && (!strcmp(argv[0], "--dbe") || !strcmp(argv[0], "--dbe-then-tag"));
    uint32_t green = GREEN;
    xcb_window_t s, a = 0;
    xcb_pixmap_t pix = 0;
    int i;

    if (argc > 0 && !strcmp(argv[0], "--framed"))
        return framed();
    conn();
    xcb_change_window_attributes(c, root, XCB_CW_BACK_PIXEL, &green);
    xcb_clear_area(c, 0, root, 0, 0, 0, 0);
    s = mkwin(root, 100, 100, 200, 200, RED, 0);
    if (!late)
        set_secure(s, 1);       /* tagged before it is ever mapped */
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
    if (late)
        set_secure(s, 1);       /* as the daemon's policy tag comes to a mapped window */
    sync_();
    {
        /* the owner reads its own secure window through the root */
        struct stats own = { 0 };
        getimage(&own, root, 0, 0, SW, SH);
        printf("OWN=%ld ", own.red_max);
    }
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


int
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

