/* CaptureShield Xorg tests: a window manager's frame around a secure window (rule frame). */
#include "csprobe.h"
#include <poll.h>
#include <signal.h>

#define YELLOW 0xffff00 /* the frame and title bar of the secure window */
#define CYAN 0x00ffff   /* the frame and title bar of the plain window */
#define TITLE "test.kdbx - KeePassXC"

/* a top-level window as an application makes it: not override-redirect, so its MapWindow
 * goes to the window manager as a MapRequest */
static xcb_window_t
appwin(int w, int h, uint32_t pixel)
{
    xcb_window_t id = xcb_generate_id(c);
    uint32_t vals[] = { pixel };

    xcb_create_window(c, XCB_COPY_FROM_PARENT, id, root, 0, 0, w, h, 0,
                      XCB_WINDOW_CLASS_INPUT_OUTPUT, XCB_COPY_FROM_PARENT, XCB_CW_BACK_PIXEL,
                      vals);
    return id;
}

static void
set_title(xcb_window_t w, const char *t)
{
    xcb_change_property(c, XCB_PROP_MODE_REPLACE, w, XCB_ATOM_WM_NAME, XCB_ATOM_STRING, 8,
                        strlen(t), t);
    xcb_change_property(c, XCB_PROP_MODE_REPLACE, w, atom("_NET_WM_NAME"),
                        atom("UTF8_STRING"), 8, strlen(t), t);
}

/* length of a window's property as this client reads it (-1: error) */
static int
proplen(xcb_window_t w, xcb_atom_t a)
{
    xcb_generic_error_t *e = NULL;
    xcb_get_property_reply_t *r = xcb_get_property_reply(
        c, xcb_get_property(c, 0, w, a, XCB_GET_PROPERTY_TYPE_ANY, 0, 1024), &e);
    int n = r ? xcb_get_property_value_length(r) : -1;

    free(r);
    free(e);
    return n;
}

/* the window manager frames a client window: a frame of `pixel` (x,y) around it with a
 * 20-pixel title bar child of the same colour, the client at (2,22) inside */
static xcb_window_t
frame(xcb_window_t client, int x, int y, int w, int h, uint32_t pixel, xcb_window_t *title)
{
    xcb_window_t f = mkwin(root, x, y, w + 4, h + 24, pixel, 0);

    *title = mkwin(f, 0, 0, w + 4, 20, pixel, 0);
    xcb_map_window(c, *title);
    xcb_reparent_window(c, client, f, 2, 22);
    xcb_map_window(c, client);
    xcb_map_window(c, f);
    return f;
}

/* `victim --framed`: two clients in one process. The application makes a red secure
 * 200x200 window S titled TITLE and a blue plain 100x100 window P; the window manager
 * (SubstructureRedirect on the root, owner of WM_S0) gets their MapRequests and frames
 * them: F1 (yellow, at 100,80) around S, F2 (cyan, at 450,80) around P. Prints the ids
 * and how long a title the window manager reads from S, then stays until killed. */
int
framed(void)
{
    xcb_connection_t *app, *wm;
    xcb_window_t s, p, f1 = 0, f2 = 0, t1 = 0, t2 = 0, wmcheck;
    uint32_t green = GREEN, mask = XCB_EVENT_MASK_SUBSTRUCTURE_REDIRECT |
        XCB_EVENT_MASK_SUBSTRUCTURE_NOTIFY;
    xcb_generic_event_t *ev;
    int requests = 0, wm_title;

    conn();
    wm = c;
    xcb_change_window_attributes(c, root, XCB_CW_BACK_PIXEL, &green);
    xcb_clear_area(c, 0, root, 0, 0, 0, 0);
    if (check(xcb_change_window_attributes_checked(c, root, XCB_CW_EVENT_MASK, &mask)))
        die("framed: another window manager runs");
    wmcheck = mkwin(root, -1, -1, 1, 1, 0, 0);
    xcb_set_selection_owner(c, wmcheck, atom("WM_S0"), XCB_CURRENT_TIME);
    sync_();

    conn();
    app = c;
    s = appwin(200, 200, RED);
    set_secure(s, 1);
    set_title(s, TITLE);
    p = appwin(100, 100, BLUE);
    set_title(p, "plain window");
    xcb_map_window(c, s);
    xcb_map_window(c, p);
    sync_();

    c = wm;
    while (requests < 2 && (ev = xcb_wait_for_event(c))) {
        if ((ev->response_type & 0x7f) == XCB_MAP_REQUEST) {
            xcb_window_t w = ((xcb_map_request_event_t *) ev)->window;
            if (w == s)
                f1 = frame(s, 100, 80, 200, 200, YELLOW, &t1);
            else if (w == p)
                f2 = frame(p, 450, 80, 100, 100, CYAN, &t2);
            requests++;
        }
        free(ev);
    }
    sync_();
    wm_title = proplen(s, XCB_ATOM_WM_NAME);
    c = app;
    sync_();
    printf("S=0x%x P=0x%x F1=0x%x T1=0x%x F2=0x%x T2=0x%x WMTITLE=%d\n", s, p, f1, t1, f2, t2,
           wm_title);
    for (;;)
        pause();
    return 0;
}

/* `frame app`: an application under a real window manager: maps a red secure 200x200
 * window S titled TITLE, waits until the window manager has reparented it, S is mapped
 * and its frame F is viewable, prints S and F, then stays until killed. */
static int
app(void)
{
    xcb_window_t s, f;
    uint32_t mask = XCB_EVENT_MASK_STRUCTURE_NOTIFY;
    xcb_generic_event_t *ev;
    int reparented = 0, mapped = 0, i;

    conn();
    s = appwin(200, 200, RED);
    xcb_change_window_attributes(c, s, XCB_CW_EVENT_MASK, &mask);
    set_secure(s, 1);
    set_title(s, TITLE);
    xcb_map_window(c, s);
    xcb_flush(c);
    /* a window manager that has just taken WM_S0 sometimes misses the first MapRequest:
     * the window is mapped again (a new MapRequest) every 2 s until it is framed */
    for (i = 0; !(reparented && mapped); ) {
        struct pollfd pfd = { xcb_get_file_descriptor(c), POLLIN, 0 };
        if (xcb_connection_has_error(c))
            die("connection lost");
        if (!(ev = xcb_poll_for_event(c))) {
            if (poll(&pfd, 1, 100) == 0 && ++i % 20 == 0 && !reparented) {
                xcb_map_window(c, s);
                xcb_flush(c);
            }
            continue;
        }
        uint8_t t = ev->response_type & 0x7f;
        if (t == XCB_REPARENT_NOTIFY && ((xcb_reparent_notify_event_t *) ev)->parent != root)
            reparented = 1;
        if (t == XCB_MAP_NOTIFY && ((xcb_map_notify_event_t *) ev)->window == s)
            mapped = 1;
        free(ev);
    }
    f = toplevel(s);
    wait_viewable(f, 1000);
    printf("S=0x%x F=0x%x\n", s, f);
    for (;;)
        pause();
    return 0;
}

/* counts the colours of a full GetImage of `d` (root if 0) by this client */
static void
shot(xcb_drawable_t d)
{
    xcb_get_geometry_reply_t *g;
    xcb_get_image_reply_t *r;
    xcb_generic_error_t *e = NULL;
    long red = 0, yellow = 0, cyan = 0, blue = 0, black = 0, n = 0;
    int x, y, w, h, stride;

    d = d ? d : root;
    g = xcb_get_geometry_reply(c, xcb_get_geometry(c, d), NULL);
    if (!g)
        die("frameshot: no such drawable");
    w = g->width;
    h = g->height;
    free(g);
    r = xcb_get_image_reply(c, xcb_get_image(c, XCB_IMAGE_FORMAT_Z_PIXMAP, d, 0, 0, w, h, ~0u),
                            &e);
    if (!r) {
        printf("err=%d red=0 yellow=0 cyan=0 blue=0 black=0 nonblack=0 other=0 pixels=0\n",
               e ? e->error_code : -1);
        free(e);
        return;
    }
    stride = xcb_get_image_data_length(r) / h;
    for (y = 0; y < h; y++) {
        const uint8_t *l = xcb_get_image_data(r) + (size_t) y * stride;
        for (x = 0; x < w; x++) {
            uint32_t v = cs_px(l + 4 * x) & 0xffffff;
            red += v == RED;
            yellow += v == YELLOW;
            cyan += v == CYAN;
            blue += v == BLUE;
            black += v == 0;
            n++;
        }
    }
    free(r);
    /* other: neither black nor red (a real window manager's decorations) */
    printf("err=0 red=%ld yellow=%ld cyan=%ld blue=%ld black=%ld nonblack=%ld other=%ld pixels=%ld\n",
           red, yellow, cyan, blue, black, n - black, n - black - red, n);
}

/* `frame app`: see app(). `frame wm`: the owner of WM_S0.
 * `frame shot [DRAWABLE]`: colours of a GetImage of the root (or DRAWABLE).
 * `frame title WINDOW`: lengths of WM_NAME and _NET_WM_NAME as this client reads them.
 * `frame attack PARENT`: an untrusted client reparents a 10x10 red secure window of its own
 * into PARENT (another client's window or frame) at 0,0; a second connection (neither
 * trusted nor the owner) then counts the root's colours.
 * `frame unmap WINDOW`: unmaps WINDOW (as a window manager does when it shades or
 * iconifies a client window while its frame may stay).
 * `frame move WINDOW X Y`: reparents WINDOW (another client's) to the root at X,Y. */
int
frame_cmd(int argc, char **argv)
{
    if (argc >= 1 && !strcmp(argv[0], "app"))
        return app();
    if (argc >= 1 && !strcmp(argv[0], "wm")) {
        /* the owner of WM_S0 (a window manager is ready once it owns it) */
        xcb_get_selection_owner_reply_t *r;
        conn();
        r = xcb_get_selection_owner_reply(c, xcb_get_selection_owner(c, atom("WM_S0")), NULL);
        printf("owner=0x%x\n", r ? r->owner : 0);
        free(r);
        return 0;
    }
    if (argc >= 1 && !strcmp(argv[0], "shot")) {
        conn();
        shot(argc >= 2 ? strtoul(argv[1], NULL, 0) : 0);
        return 0;
    }
    if (argc >= 2 && !strcmp(argv[0], "title")) {
        xcb_window_t w = strtoul(argv[1], NULL, 0);
        conn();
        printf("wm_name=%d net_wm_name=%d\n", proplen(w, XCB_ATOM_WM_NAME),
               proplen(w, atom("_NET_WM_NAME")));
        return 0;
    }
    if (argc >= 2 && !strcmp(argv[0], "attack")) {
        xcb_window_t parent = strtoul(argv[1], NULL, 0), x;
        int err;
        conn();
        x = mkwin(root, 0, 0, 10, 10, RED, 0);
        set_secure(x, 1);
        err = check(xcb_reparent_window_checked(c, x, parent, 0, 0));
        xcb_map_window(c, x);
        sync_();
        printf("reparent_err=%d ", err);
        conn();         /* another client reads */
        shot(0);
        return 0;
    }
    if (argc >= 2 && !strcmp(argv[0], "unmap")) {
        conn();
        printf("err=%d\n", check(xcb_unmap_window_checked(c, strtoul(argv[1], NULL, 0))));
        return 0;
    }
    if (argc >= 4 && !strcmp(argv[0], "move")) {
        conn();
        printf("err=%d\n", check(xcb_reparent_window_checked(c, strtoul(argv[1], NULL, 0), root,
                                                             atoi(argv[2]), atoi(argv[3]))));
        return 0;
    }
    die("usage: frame app | wm | shot [DRAWABLE] | title WINDOW | attack PARENT | unmap WINDOW | "
        "move WINDOW X Y");
    return 2;
}
