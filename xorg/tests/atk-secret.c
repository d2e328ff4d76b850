/* CaptureShield Xorg tests (t-secret.sh): one definition of what is secret. A victim that
 * keeps its secure window's pixels in its own pixmap, SHM segment and picture, and the
 * attacks on every place those pixels are or were shown. */
#include "csprobe.h"

static void
move_to(xcb_window_t w, int x, int y)
{
    uint32_t v[2] = { x, y };
    xcb_configure_window(c, w, XCB_CONFIG_WINDOW_X | XCB_CONFIG_WINDOW_Y, v);
}

/* read lines from stdin until one starting with `want` (or EOF) */
static void
wait_line(const char *want)
{
    char line[64];

    while (fgets(line, sizeof(line), stdin))
        if (!strncmp(line, want, strlen(want)))
            return;
    exit(0);
}

/* ---- victim [--untagged]: the 200x200 red secure window S at 100,100 (tagged before it
 * is mapped unless --untagged), its double buffer BUF (a red pixmap copied into S), an
 * MIT-SHM segment SEG holding the same red image and a picture PIC of BUF. Prints the ids,
 * then obeys lines on stdin: "tag" (tags S, prints "tagged"). ---- */
static int
victim_(int argc, char **argv)
{
    int untagged = argc > 0 && !strcmp(argv[0], "--untagged");
    uint32_t green = GREEN, red = RED;
    xcb_window_t s;
    xcb_pixmap_t buf;
    xcb_gcontext_t gc;
    xcb_shm_seg_t seg;
    xcb_render_picture_t pic;
    xcb_rectangle_t r = { 0, 0, 200, 200 };
    uint32_t *mem;
    int shmid, i;
    char line[64];

    conn();
    xcb_change_window_attributes(c, root, XCB_CW_BACK_PIXEL, &green);
    xcb_clear_area(c, 0, root, 0, 0, 0, 0);
    s = mkwin(root, 100, 100, 200, 200, RED, 0);
    if (!untagged)
        set_secure(s, 1);
    xcb_map_window(c, s);
    wait_mapped(s);
    buf = xcb_generate_id(c);
    gc = xcb_generate_id(c);
    xcb_create_pixmap(c, scr->root_depth, buf, root, 200, 200);
    xcb_create_gc(c, gc, buf, XCB_GC_FOREGROUND, &red);
    xcb_poly_fill_rectangle(c, buf, gc, 1, &r);
    xcb_copy_area(c, buf, s, gc, 0, 0, 0, 0, 200, 200);
    shmid = shmget(IPC_PRIVATE, 200 * 200 * 4, IPC_CREAT | 0600);
    if (shmid < 0)
        die("victim: shmget");
    mem = shmat(shmid, NULL, 0);
    if (mem == (void *) -1)
        die("victim: shmat");
    for (i = 0; i < 200 * 200; i++)
        mem[i] = RED;
    seg = xcb_generate_id(c);
    if (check(xcb_shm_attach_checked(c, seg, shmid, 0)))
        die("victim: ShmAttach");
    shmctl(shmid, IPC_RMID, NULL);
    pic = xcb_generate_id(c);
    xcb_render_create_picture(c, pic, buf, root_format(), 0, NULL);
    sync_();
    printf("S=0x%x BUF=0x%x SEG=0x%x PIC=0x%x BASE=0x%x\n", s, buf, seg, pic,
           xcb_get_setup(c)->resource_id_base);
    fflush(stdout);
    while (fgets(line, sizeof(line), stdin)) {
        if (!strncmp(line, "tag", 3)) {
            set_secure(s, 1);
            sync_();
            printf("tagged\n");
            fflush(stdout);
        }
    }
    return 0;
}

/* GetImage of d (w x h at 0,0) into st */
static void
rd(struct stats *st, xcb_drawable_t d, int x, int y, int w, int h)
{
    getimage(st, d, x, y, w, h);
}

static xcb_pixmap_t
own_pixmap(xcb_gcontext_t *gc)
{
    xcb_pixmap_t p = xcb_generate_id(c);

    xcb_create_pixmap(c, scr->root_depth, p, root, 200, 200);
    if (gc) {
        *gc = xcb_generate_id(c);
        xcb_create_gc(c, *gc, p, 0, NULL);
    }
    return p;
}

/* NameWindowPixmap of w into a new id: the id, 0 when refused */
static xcb_pixmap_t
name_pixmap(xcb_window_t w)
{
    xcb_pixmap_t p = xcb_generate_id(c);

    if (check(xcb_composite_name_window_pixmap_checked(c, w, p)))
        return 0;
    return p;
}

static int
attack_(int argc, char **argv)
{
    const char *kind;
    xcb_window_t s;
    struct stats st = { 0 };
    xcb_gcontext_t gc;
    xcb_pixmap_t own;

    if (argc < 2)
        die("usage: atk-secret attack KIND ID");
    kind = argv[0];
    s = strtoul(argv[1], NULL, 0);
    conn();
    free(xcb_composite_query_version_reply(c, xcb_composite_query_version(c, 0, 4), NULL));
    if (!strcmp(kind, "reparent-own")) {
        /* S reparented into a secure window of our own, then that window and the root
         * (the part where S is) read */
        xcb_window_t w = mkwin(root, 50, 50, 400, 400, BLUE, 0);
        set_secure(w, 1);
        xcb_map_window(c, w);
        wait_mapped(w);
        xcb_reparent_window(c, s, w, 50, 50);
        sync_();
        rd(&st, w, 50, 50, 200, 200);
        rd(&st, root, 100, 100, 200, 200);
        {
            /* and the pixmap of our window, S inside */
            xcb_pixmap_t p;
            xcb_composite_redirect_window(c, w, XCB_COMPOSITE_REDIRECT_AUTOMATIC);
            if (!(p = name_pixmap(w)))
                refused(&st);
            else
                rd(&st, p, 50, 50, 200, 200);
        }
    } else if (!strcmp(kind, "copy-own")) {
        /* the root (S in it) copied into a secure window of our own, by CopyArea and by
         * RENDER Composite, and that window read back */
        xcb_window_t w = mkwin(root, 500, 350, 200, 200, BLUE, 0);
        xcb_render_picture_t src = xcb_generate_id(c), dst = xcb_generate_id(c);
        uint32_t inf = XCB_SUBWINDOW_MODE_INCLUDE_INFERIORS;
        set_secure(w, 1);
        xcb_map_window(c, w);
        wait_mapped(w);
        gc = xcb_generate_id(c);
        xcb_create_gc(c, gc, w, XCB_GC_SUBWINDOW_MODE, &inf);
        if (check(xcb_copy_area_checked(c, root, w, gc, 100, 100, 0, 0, 200, 200)))
            refused(&st);
        else
            rd(&st, w, 0, 0, 200, 200);
        xcb_render_create_picture(c, src, root, root_format(), XCB_RENDER_CP_SUBWINDOW_MODE, &inf);
        xcb_render_create_picture(c, dst, w, root_format(), 0, NULL);
        if (check(xcb_render_composite_checked(c, XCB_RENDER_PICT_OP_SRC, src, 0, dst, 100, 100,
                                               0, 0, 0, 0, 200, 200)))
            refused(&st);
        else
            rd(&st, w, 0, 0, 200, 200);
    } else if (!strcmp(kind, "pixmap")) {
        /* s: the owner's double buffer; read directly, and copied into our own pixmap */
        rd(&st, s, 0, 0, 200, 200);
        own = own_pixmap(&gc);
        if (check(xcb_copy_area_checked(c, s, own, gc, 0, 0, 0, 0, 200, 200)))
            refused(&st);
        else
            rd(&st, own, 0, 0, 200, 200);
    } else if (!strcmp(kind, "shmpixmap")) {
        /* s: the owner's SHM segment, made a pixmap of ours */
        xcb_pixmap_t p = xcb_generate_id(c);
        if (check(xcb_shm_create_pixmap_checked(c, p, root, 200, 200, scr->root_depth, s, 0)))
            refused(&st);
        else
            rd(&st, p, 0, 0, 200, 200);
    } else if (!strcmp(kind, "shmput")) {
        /* s: the owner's SHM segment, put into our own pixmap; and ShmGetImage into it */
        xcb_shm_get_image_reply_t *g;
        xcb_generic_error_t *e = NULL;
        own = own_pixmap(&gc);
        if (check(xcb_shm_put_image_checked(c, own, gc, 200, 200, 0, 0, 200, 200, 0, 0,
                                            scr->root_depth, XCB_IMAGE_FORMAT_Z_PIXMAP, 0, s, 0)))
            refused(&st);
        else
            rd(&st, own, 0, 0, 200, 200);
        g = xcb_shm_get_image_reply(c, xcb_shm_get_image(c, own, 0, 0, 10, 10, ~0u,
                                                         XCB_IMAGE_FORMAT_Z_PIXMAP, s, 0), &e);
        printf("shmget_err=%d ", e ? e->error_code : 0);
        free(g);
        free(e);
    } else if (!strcmp(kind, "picture")) {
        /* s: the owner's picture of its double buffer, composited into our own */
        xcb_render_picture_t dst = xcb_generate_id(c);
        own = own_pixmap(NULL);
        xcb_render_create_picture(c, dst, own, root_format(), 0, NULL);
        if (check(xcb_render_composite_checked(c, XCB_RENDER_PICT_OP_SRC, s, 0, dst, 0, 0, 0, 0,
                                               0, 0, 200, 200)))
            refused(&st);
        else
            rd(&st, own, 0, 0, 200, 200);
    } else if (!strncmp(kind, "overlay-", 8) || !strncmp(kind, "saver-", 6) ||
               !strcmp(kind, "manual-over")) {
        /* freeze the framebuffer over S (the Composite overlay window, the screen saver,
         * or a window of our own that nothing paints), then move, unmap or destroy S and
         * read where it was */
        const char *what = strchr(kind, '-') + 1;
        xcb_window_t w = 0;
        if (kind[0] == 'o') {
            xcb_composite_get_overlay_window_reply_t *o = xcb_composite_get_overlay_window_reply(
                c, xcb_composite_get_overlay_window(c, root), NULL);
            if (!o)
                die("no overlay window");
            free(o);
        } else if (kind[0] == 's') {
            /* MIT-SCREEN-SAVER: our attributes for the server's screen saver window,
             * background None (the server creates it, so no forced background) */
            int m = ext_major("MIT-SCREEN-SAVER");
            struct { uint8_t major, minor; uint16_t len; uint32_t d; int16_t x, y;
                     uint16_t w, h, bw; uint8_t cls, depth; uint32_t visual, mask, bg; }
                req = { m, 3, 8, root, 0, 0, SW, SH, 0, 1, 0, 0, XCB_CW_BACK_PIXMAP, 0 };
            if (m < 0 || raw_void(&req, sizeof(req)))
                die("MIT-SCREEN-SAVER SetAttributes failed");
            xcb_force_screen_saver(c, XCB_SCREEN_SAVER_ACTIVE);
        } else {
            w = mkwin(root, 100, 100, 200, 200, BLUE, 0);
            xcb_composite_redirect_window(c, w, XCB_COMPOSITE_REDIRECT_MANUAL);
            xcb_map_window(c, w);
            wait_mapped(w);
        }
        sync_();
        if (!strcmp(what, "move"))
            move_to(s, 500, 350);
        else if (!strcmp(what, "unmap"))
            xcb_unmap_window(c, s);
        else if (!strcmp(what, "destroy"))
            xcb_destroy_window(c, s);
        sync_();
        rd(&st, root, 100, 100, 200, 200);
        if (kind[0] == 's')
            xcb_force_screen_saver(c, XCB_SCREEN_SAVER_RESET);
        sync_();
    } else if (!strcmp(kind, "name-reparent")) {
        /* a window of ours, redirected, its pixmap named while nothing secure is in it;
         * then S reparented into it */
        xcb_window_t w = mkwin(root, 50, 50, 400, 400, BLUE, 0);
        xcb_pixmap_t p;
        xcb_composite_redirect_window(c, w, XCB_COMPOSITE_REDIRECT_AUTOMATIC);
        xcb_map_window(c, w);
        wait_mapped(w);
        if (!(p = name_pixmap(w)))
            die("cannot name our own window's pixmap");
        xcb_reparent_window(c, s, w, 50, 50);
        sync_();
        rd(&st, p, 50, 50, 200, 200);
    } else if (!strcmp(kind, "name-wait")) {
        /* S (untagged, or protection paused) redirected and its pixmap named; "named" is
         * printed, then on a line "go" (S tagged, protection resumed) the pixmap read */
        xcb_pixmap_t p;
        xcb_composite_redirect_window(c, s, XCB_COMPOSITE_REDIRECT_AUTOMATIC);
        sync_();
        p = name_pixmap(s);
        printf("named=%d\n", p != 0);
        fflush(stdout);
        wait_line("go");
        if (!p) {
            refused(&st);
        } else {
            /* copied into a pixmap of ours (a pixmap source is not censored, only
             * refused when secret) */
            own = own_pixmap(&gc);
            if (check(xcb_copy_area_checked(c, p, own, gc, 0, 0, 0, 0, 200, 200)))
                refused(&st);
            else
                rd(&st, own, 0, 0, 200, 200);
        }
    } else if (!strcmp(kind, "lag")) {
        /* under a compositor: a window of ours mapped over S and the root read at once */
        xcb_window_t w = mkwin(root, 100, 100, 200, 200, BLUE, 0);
        xcb_map_window(c, w);
        rd(&st, root, 100, 100, 200, 200);
    } else {
        die("unknown attack");
    }
    print_stats(&st);
    return 0;
}

int
main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 2 && !strcmp(argv[1], "victim"))
        return victim_(argc - 2, argv + 2);
    if (argc >= 2 && !strcmp(argv[1], "attack"))
        return attack_(argc - 2, argv + 2);
    die("usage: atk-secret victim [--untagged] | attack KIND ID");
    return 2;
}
