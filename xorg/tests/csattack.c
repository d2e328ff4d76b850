/* CaptureShield Xorg tests: the probe's attacks, protocol requests, daemon stand-in and sessions. */
#include "csprobe.h"

/* ---- attacks ---- */
void
move(xcb_window_t w, int x, int y)
{
    uint32_t v[2] = { x, y };
    xcb_configure_window(c, w, XCB_CONFIG_WINDOW_X | XCB_CONFIG_WINDOW_Y, v);
}

/* DRI2CreateDrawable (minor 3) of w: the error code, 0 when allowed, -1 without DRI2 */
static int
dri2_create(xcb_window_t w)
{
    int major = ext_major("DRI2");
    struct { uint8_t major, minor; uint16_t len; uint32_t d; } req = { major, 3, 2, w };

    if (major < 0)
        return -1;
    return raw_void(&req, sizeof(req));
}

/* own background-None window over (mapped on top of) or under S, then read it */
int
attack(int argc, char **argv)
{
    const char *kind;
    xcb_window_t s, p;
    struct stats st = { 0 };

    if (argc < 2)
        die("attack over|over-change|under|reparent|copy-cache S | attack tile|copy|picture PIXMAP | "
            "attack untag S | attack mixed S N | attack reuse-id S | attack dbe-resize BUF S");
    kind = argv[0];
    s = strtoul(argv[1], NULL, 0);
    conn();
    if (!s)
        s = root;               /* "root" */
    if (!strcmp(kind, "over")) {
        p = mkwin(root, 100, 100, 200, 200, 0, 1);
        xcb_map_window(c, p);
        wait_mapped(p);
        getimage(&st, p, 0, 0, 200, 200);
    } else if (!strcmp(kind, "over-change")) {
        /* created with an opaque background, set to None afterwards (before mapping): the
         * window itself must carry forcedBG, not just start opaque */
        uint32_t none = XCB_BACK_PIXMAP_NONE;
        p = mkwin(root, 100, 100, 200, 200, BLUE, 0);
        xcb_change_window_attributes(c, p, XCB_CW_BACK_PIXMAP, &none);
        xcb_map_window(c, p);
        wait_mapped(p);
        getimage(&st, p, 0, 0, 200, 200);
    } else if (!strcmp(kind, "mixed")) {
        /* guarded requests on S (DBE back buffer, NameWindowPixmap, DRI2), each after many
         * ordinary requests (new windows, copies, reads: the resource hook is not armed for
         * them): every guarded one must be refused */
        int n = argc > 2 ? atoi(argv[2]) : 20, i, k, dbe = 0, name = 0, dri2 = 0;
        xcb_pixmap_t own = xcb_generate_id(c);
        xcb_gcontext_t gc = xcb_generate_id(c);
        struct stats junk = { 0 };
        xcb_create_pixmap(c, scr->root_depth, own, root, 200, 200);
        xcb_create_gc(c, gc, own, 0, NULL);
        xcb_composite_redirect_subwindows(c, root, XCB_COMPOSITE_REDIRECT_AUTOMATIC);
        for (i = 0; i < n; i++) {
            xcb_pixmap_t np = xcb_generate_id(c), buf = xcb_generate_id(c);
            for (k = 0; k < 20; k++) {
                xcb_window_t w = mkwin(root, 10 + k, 10 + i, 20, 20, BLUE, 0);
                xcb_copy_area(c, root, own, gc, 0, 0, 0, 0, 200, 200);
                xcb_poly_fill_rectangle(c, own, gc, 1, &(xcb_rectangle_t) { 0, 0, 10, 10 });
                xcb_destroy_window(c, w);
            }
            getimage(&junk, own, 0, 0, 10, 10);
            if (dbe_alloc(s, buf)) {
                dbe++;
            } else {
                dbe_swap(s);
                getimage(&st, buf, 0, 0, 200, 200);
            }
            if (check(xcb_composite_name_window_pixmap_checked(c, s, np))) {
                name++;
            } else {
                getimage(&st, np, 0, 0, 200, 200);
                xcb_free_pixmap(c, np);
            }
            dri2 += dri2_create(s) > 0;
        }
        printf("rounds=%d dbe_refused=%d name_refused=%d dri2_refused=%d red_max=%ld\n", n, dbe,
               name, dri2, st.red_max);
        return 0;
    } else if (!strcmp(kind, "reuse-id")) {
        /* the module remembers the last copy source by id: a copied-from window destroyed,
         * another window made (it likely gets the freed memory), the id reused for a
         * window inside S showing S's red (background ParentRelative), copied from again:
         * censored (all black) */
        xcb_window_t x, y;
        xcb_pixmap_t own = xcb_generate_id(c);
        xcb_gcontext_t gc = xcb_generate_id(c);
        uint32_t vals[3] = { XCB_BACK_PIXMAP_PARENT_RELATIVE, 1,
                             XCB_EVENT_MASK_EXPOSURE | XCB_EVENT_MASK_STRUCTURE_NOTIFY };
        xcb_create_pixmap(c, scr->root_depth, own, root, 100, 100);
        xcb_create_gc(c, gc, own, 0, NULL);
        p = mkwin(root, 600, 450, 100, 100, BLUE, 0);
        xcb_map_window(c, p);
        wait_mapped(p);
        xcb_copy_area(c, p, own, gc, 0, 0, 0, 0, 100, 100);
        xcb_destroy_window(c, p);
        y = mkwin(root, 600, 450, 100, 100, BLUE, 0);
        xcb_map_window(c, y);
        wait_mapped(y);
        x = p;                  /* the id just freed */
        xcb_create_window(c, XCB_COPY_FROM_PARENT, x, s, 0, 0, 100, 100, 0,
                          XCB_WINDOW_CLASS_INPUT_OUTPUT, XCB_COPY_FROM_PARENT,
                          XCB_CW_BACK_PIXMAP | XCB_CW_OVERRIDE_REDIRECT | XCB_CW_EVENT_MASK,
                          vals);
        xcb_map_window(c, x);
        wait_mapped(x);
        if (check(xcb_copy_area_checked(c, x, own, gc, 0, 0, 0, 0, 100, 100)))
            refused(&st);
        else
            getimage(&st, own, 0, 0, 100, 100);
    } else if (!strcmp(kind, "copy-cache")) {
        /* the module lets copies from a source it found clear of secret pixels through
         * unchecked until something moves: a copy from an own window away from S makes it
         * clear, then S is brought inside it (reparented; unmapped, the window found clear
         * again, and mapped there again): each copy after that, IncludeInferiors, must be
         * censored */
        xcb_pixmap_t own = xcb_generate_id(c);
        xcb_gcontext_t gc = xcb_generate_id(c);
        uint32_t inf = XCB_SUBWINDOW_MODE_INCLUDE_INFERIORS;
        p = mkwin(root, 400, 300, 300, 250, BLUE, 0);
        xcb_map_window(c, p);
        wait_mapped(p);
        xcb_create_pixmap(c, scr->root_depth, own, root, 300, 250);
        xcb_create_gc(c, gc, own, XCB_GC_SUBWINDOW_MODE, &inf);
        xcb_copy_area(c, p, own, gc, 0, 0, 0, 0, 300, 250);
        xcb_reparent_window(c, s, p, 10, 10);
        sync_();
        xcb_copy_area(c, p, own, gc, 0, 0, 0, 0, 300, 250);
        getimage(&st, own, 0, 0, 300, 250);
        xcb_unmap_window(c, s);
        sync_();
        xcb_copy_area(c, p, own, gc, 0, 0, 0, 0, 300, 250);
        xcb_map_window(c, s);
        sync_();
        xcb_copy_area(c, p, own, gc, 0, 0, 0, 0, 300, 250);
        getimage(&st, own, 0, 0, 300, 250);
        xcb_reparent_window(c, s, root, 100, 100);
        sync_();
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
    } else if (!strcmp(kind, "render-other")) {
        /* RENDER requests other than Composite that read a source picture: s is a window */
        xcb_render_picture_t src = xcb_generate_id(c), dst = xcb_generate_id(c);
        xcb_render_pictformat_t f = root_format();
        xcb_pixmap_t own = xcb_generate_id(c);
        uint32_t inf = XCB_SUBWINDOW_MODE_INCLUDE_INFERIORS;
        xcb_render_trapezoid_t t = { 0, 0, { {0, 0}, {0, 600 << 16} },
                                     { {800 << 16, 0}, {800 << 16, 600 << 16} } };
        int e1, e2;
        xcb_create_pixmap(c, scr->root_depth, own, root, SW, SH);
        xcb_render_create_picture(c, src, s, f, XCB_RENDER_CP_SUBWINDOW_MODE, &inf);
        xcb_render_create_picture(c, dst, own, f, 0, NULL);
        t.bottom = 600 << 16;
        e1 = check(xcb_render_trapezoids_checked(c, XCB_RENDER_PICT_OP_SRC, src, dst, 0, 0, 0,
                                                 1, &t));
        e2 = check(xcb_render_create_cursor_checked(c, xcb_generate_id(c), src, 0, 0));
        printf("trapezoids_err=%d cursor_err=%d\n", e1, e2);
        return 0;
    } else if (!strcmp(kind, "dbe-read")) {
        getimage(&st, s, 0, 0, 200, 200);       /* s: the victim's back buffer */
    } else if (!strcmp(kind, "dbe-resize") && argc > 2) {
        /* s: the victim's back buffer; argv[2]: its secure window, resized by us (any
         * client may), so that DBE reallocates the buffer with the old contents */
        xcb_window_t sw = strtoul(argv[2], NULL, 0);
        uint32_t wh[2] = { 201, 200 };
        xcb_configure_window(c, sw, XCB_CONFIG_WINDOW_WIDTH | XCB_CONFIG_WINDOW_HEIGHT, wh);
        sync_();
        wh[0] = 200;
        xcb_configure_window(c, sw, XCB_CONFIG_WINDOW_WIDTH | XCB_CONFIG_WINDOW_HEIGHT, wh);
        sync_();
        getimage(&st, s, 0, 0, 200, 200);
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
int
proto(int argc, char **argv)
{
    void *rep = NULL;
    int err;

    if (argc < 1)
        die("proto version|grant XID|revoke XID|trust XID|protect 0|1|select [MASK]|dri2 WINDOW");
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
    } else if (!strcmp(argv[0], "protect") && argc > 1) {
        cs_send(X_CaptureShieldSetProtection, strtoul(argv[1], NULL, 0), 1, NULL, &err);
        printf("err=%d\n", err);
    } else if (!strcmp(argv[0], "select")) {
        cs_send(X_CaptureShieldSelectInput,
                argc > 1 ? strtoul(argv[1], NULL, 0) : CaptureShieldNotifyMask, 1, NULL, &err);
        printf("err=%d\n", err);
    } else if (!strcmp(argv[0], "dri2") && argc > 1) {
        /* DRI2CreateDrawable: the lookup of the drawable is what the module guards */
        int e = dri2_create(strtoul(argv[1], NULL, 0));
        if (e < 0)
            printf("dri2=absent\n");
        else
            printf("err=%d\n", e);
    } else {
        die("unknown proto command");
    }
    free(rep);
    return 0;
}

/* ---- the shield's own channels, attacked by an untrusted client ---- */
int
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

/* ---- listen [N [MASK]]: a trusted daemon's view of N CaptureNotify events ---- */
int
listen_(int argc, char **argv)
{
    int want = argc > 0 ? atoi(argv[0]) : 1, got = 0, err;
    unsigned mask = argc > 1 ? (unsigned) strtoul(argv[1], NULL, 0) : CaptureShieldNotifyMask;
    xcb_generic_event_t *ev;

    conn();
    cs_init();
    cs_send(X_CaptureShieldSelectInput, mask, 1, NULL, &err);
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
int
session(void)
{
    char line[64];
    xcb_window_t last = 0;

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
            last = w;
            printf("win=0x%x\n", w);
        } else if (!strncmp(line, "policy", 6)) {
            policy_try(last);          /* the owner of the window tries to untag it */
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


/* ---- a compositor of our own ----
 * compositor S A: redirects the root's subwindows manually, paints into a window of its
 * own inside the Composite overlay window (as mutter, kwin and xfwm4 do) the images of
 * the victim's secure window S and of A above it, each where X says it is; prints
 * "painted". On a line "move" from stdin it moves S away and paints nothing (its image
 * stays where S was, as a compositor's animation or stale image does) and prints
 * "moved"; it exits at end of input. Run trusted (it names S's pixmap). */
int
compositor(int argc, char **argv)
{
    xcb_window_t win[2], cow, out;
    xcb_gcontext_t gc;
    char line[64];
    int i;

    if (argc < 2)
        die("compositor S A");
    win[0] = strtoul(argv[0], NULL, 0);
    win[1] = strtoul(argv[1], NULL, 0);
    conn();
    xcb_composite_query_version_reply_t *v =
        xcb_composite_query_version_reply(c, xcb_composite_query_version(c, 0, 4), NULL);
    free(v);
    xcb_composite_redirect_subwindows(c, root, XCB_COMPOSITE_REDIRECT_MANUAL);
    xcb_composite_get_overlay_window_reply_t *o =
        xcb_composite_get_overlay_window_reply(c, xcb_composite_get_overlay_window(c, root), NULL);
    if (!o)
        die("compositor: no overlay window");
    cow = o->overlay_win;
    free(o);
    out = mkwin(cow, 0, 0, SW, SH, GREEN, 0);
    xcb_map_window(c, out);
    wait_mapped(out);
    gc = xcb_generate_id(c);
    xcb_create_gc(c, gc, out, 0, NULL);
    for (i = 0; i < 2; i++) {         /* bottom (S) to top (A) */
        xcb_pixmap_t pix = xcb_generate_id(c);
        xcb_get_geometry_reply_t *g =
            xcb_get_geometry_reply(c, xcb_get_geometry(c, win[i]), NULL);
        if (!g || check(xcb_composite_name_window_pixmap_checked(c, win[i], pix)))
            die("compositor: cannot name a window's pixmap");
        xcb_copy_area(c, pix, out, gc, 0, 0, g->x, g->y, g->width, g->height);
        free(g);
    }
    sync_();
    printf("painted\n");
    fflush(stdout);
    while (fgets(line, sizeof(line), stdin)) {
        if (!strncmp(line, "move", 4)) {
            move(win[0], 450, 350);
            sync_();
            printf("moved\n");
            fflush(stdout);
        }
    }
    return 0;
}
