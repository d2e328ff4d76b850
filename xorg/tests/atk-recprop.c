/* CaptureShield Xorg tests: RECORD and title/property attacks on a secure window (rules
 * record, properties, wmtitle). Commands:
 *   record SECS        records all clients (core requests, replies, events, errors) through
 *                      a RECORD context until EndOfData, the act's end marker or SECS; prints
 *                      "ready ..." once enabled (or refused), then the title bytes and red
 *                      pixels it received (`record SECS hold`: first prints the data
 *                      connection's base=XID and waits for a line on stdin)
 *   act                a victim: a 200x200 secure window, tagged first, then its title set
 *                      (24 bytes, also in _KEEPASS_DOCUMENT; WM_CLASS "keepass"), 40,000 red pixels put, the title drawn, read back; ends
 *                      with a marker request (`act stay`: then stays until killed)
 *   props TITLE WIN NAME...   how many bytes of TITLE each property of WIN gives this client
 *   getdel TITLE WIN NAME     the same with GetProperty delete=1
 *   list WIN NAME      ListProperties of WIN: nprops=N listed=0|1 (NAME among them)
 *   rotate TITLE WIN STASH    creates STASH on WIN, rotates WM_NAME into it, reads it
 *   wm TITLE WIN [KILL]       becomes the window manager (SubstructureRedirect on the root;
 *                      after KillClient(KILL) when given) and reads WIN's titles
 *   obapp              a secure window titled "test.kdbx - KeePassXC" under a real window
 *                      manager; prints S and its frame F, stays until killed
 *   rootmask           redirect=1 when a client holds SubstructureRedirect on the root */
#define _GNU_SOURCE
#include "csprobe.h"
#include <poll.h>
#include <signal.h>
#include <xcb/record.h>

#define TITLE24 "passwords.kdbx - KeePass" /* 24 bytes */
#define MARKER "RECPROP_END_OF_ACT_MARKER"

/* bytes of the longest substring of `t` (4 or more) found in buf, else 0 */
static int
title_bytes(const char *t, const uint8_t *buf, size_t n)
{
    int len, j, tl = strlen(t);

    for (len = tl; len >= 4; len--)
        for (j = 0; j + len <= tl; j++)
            if (memmem(buf, n, t + j, len))
                return len;
    return 0;
}

/* ---- record ---- */
static uint8_t *rbuf;
static size_t rlen, rcap;
static long rpixels;
static int renabled, rerr, rmarker, rended;

static void
rprint(int timeout)
{
    char line[256];
    int n = snprintf(line, sizeof(line),
                     "enabled=%d err=%d title=%d pixels=%ld marker=%d ended=%d timeout=%d\n",
                     renabled, rerr, title_bytes(TITLE24, rbuf, rlen), rpixels, rmarker,
                     rended, timeout);
    if (write(1, line, n) < 0)
        _exit(3);
}

static void
ralarm(int sig)
{
    (void) sig;
    rprint(1);
    _exit(0);
}

static void
radd(const uint8_t *d, size_t n)
{
    size_t i;

    /* recorded requests are in the recorded client's byte order (the victim: this
     * host's, least significant first), their image data in the server's (the same):
     * read so whatever this client's own order (cs_px) */
    for (i = 0; i + 4 <= n; i += 4)
        rpixels += (cs_px(d + i) & 0xffffff) == RED;
    if (rlen + n > rcap) {
        rcap = (rlen + n) * 2;
        rbuf = realloc(rbuf, rcap);
        if (!rbuf)
            die("out of memory");
    }
    memcpy(rbuf + rlen, d, n);
    rlen += n;
    if (memmem(rbuf + (rlen > n + 64 ? rlen - n - 64 : 0),
               rlen - (rlen > n + 64 ? rlen - n - 64 : 0), MARKER, strlen(MARKER)))
        rmarker = 1;
}

static int
record(int secs, int hold)
{
    xcb_connection_t *ctl, *data;
    xcb_record_context_t rc;
    xcb_record_range_t range;
    xcb_record_client_spec_t spec = XCB_RECORD_CS_ALL_CLIENTS;
    xcb_record_enable_context_cookie_t ck;
    xcb_generic_error_t *e;

    signal(SIGALRM, ralarm);
    alarm(secs);
    conn();
    ctl = c;
    data = xcb_connect(NULL, NULL);
    if (xcb_connection_has_error(data))
        die("cannot connect");
    memset(&range, 0, sizeof(range));
    range.core_requests.first = 1;
    range.core_requests.last = 127;
    range.core_replies.first = 1;
    range.core_replies.last = 127;
    range.delivered_events.first = 2;
    range.delivered_events.last = 127;
    range.errors.first = 0;
    range.errors.last = 255;
    if (hold) {
        /* the data connection's resource base (for a grant), then a line on stdin; the
         * data connection creates the context too (one connection to grant) */
        char line[16];
        printf("base=0x%x\n", xcb_generate_id(data));
        fflush(stdout);
        if (!fgets(line, sizeof(line), stdin))
            die("record: no go line");
        c = data;
    }
    rc = xcb_generate_id(c);
    rerr = check(xcb_record_create_context_checked(c, rc, 0, 1, 1, &spec, &range));
    c = ctl;
    if (rerr) {
        printf("ready refused at=create\n");
        fflush(stdout);
        rprint(0);
        return 0;
    }
    ck = xcb_record_enable_context(data, rc);
    xcb_flush(data);
    for (;;) {
        xcb_record_enable_context_reply_t *r = xcb_record_enable_context_reply(data, ck, &e);
        if (!r) {
            rerr = e ? e->error_code : -1;
            free(e);
            if (!renabled) {
                printf("ready refused at=enable\n");
                fflush(stdout);
            }
            break;
        }
        if (r->category == 4) {         /* StartOfData */
            renabled = 1;
            printf("ready enabled\n");
            fflush(stdout);
        } else if (r->category == 5) {  /* EndOfData */
            rended = 1;
            free(r);
            break;
        } else if (r->category <= 1) {  /* FromServer, FromClient */
            radd(xcb_record_enable_context_data(r),
                 xcb_record_enable_context_data_length(r));
        }
        free(r);
        if (rmarker)
            break;
    }
    alarm(0);
    rprint(0);
    /* end the context if it still runs (the module may have freed it already) */
    xcb_record_disable_context(ctl, rc);
    xcb_record_free_context(ctl, rc);
    sync_();
    return 0;
}

/* ---- act: the victim ---- */
static int
act(int stay)
{
    xcb_window_t s;
    xcb_gcontext_t gc;
    uint32_t *img, black = 0;
    xcb_get_property_reply_t *r;
    int i;

    conn();
    s = mkwin(root, 300, 300, 200, 200, GREEN, 0);
    set_secure(s, 1);
    xcb_map_window(c, s);
    wait_mapped(s);
    xcb_change_property(c, XCB_PROP_MODE_REPLACE, s, XCB_ATOM_WM_NAME, XCB_ATOM_STRING, 8,
                        strlen(TITLE24), TITLE24);
    /* an application's own property naming the document, and WM_CLASS (allow-listed) */
    xcb_change_property(c, XCB_PROP_MODE_REPLACE, s, atom("_KEEPASS_DOCUMENT"),
                        XCB_ATOM_STRING, 8, strlen(TITLE24), TITLE24);
    xcb_change_property(c, XCB_PROP_MODE_REPLACE, s, XCB_ATOM_WM_CLASS, XCB_ATOM_STRING, 8,
                        16, "keepass\0KeePass");
    img = malloc(200 * 200 * 4);
    if (!img)
        die("out of memory");
    for (i = 0; i < 200 * 200; i++)
        img[i] = RED;
    gc = xcb_generate_id(c);
    xcb_create_gc(c, gc, s, XCB_GC_FOREGROUND, &black);
    xcb_put_image(c, XCB_IMAGE_FORMAT_Z_PIXMAP, s, gc, 200, 200, 0, 0, 0, scr->root_depth,
                  200 * 200 * 4, (const uint8_t *) img);
    free(img);
    {
        /* PolyText8: one text item (length, delta, string) */
        uint8_t items[2 + sizeof(TITLE24)];
        items[0] = strlen(TITLE24);
        items[1] = 0;
        memcpy(items + 2, TITLE24, strlen(TITLE24));
        xcb_poly_text_8(c, s, gc, 10, 20, 2 + strlen(TITLE24), items);
    }
    r = xcb_get_property_reply(c, xcb_get_property(c, 0, s, XCB_ATOM_WM_NAME,
                                                   XCB_ATOM_STRING, 0, 64), NULL);
    free(r);
    sync_();
    free(xcb_intern_atom_reply(c, xcb_intern_atom(c, 0, strlen(MARKER), MARKER), NULL));
    printf("S=0x%x\n", s);
    while (stay)
        pause();
    return 0;
}

/* ---- properties ---- */
static int
propbytes(const char *title, xcb_window_t w, const char *name, int del, int *err)
{
    xcb_generic_error_t *e = NULL;
    xcb_get_property_reply_t *r = xcb_get_property_reply(
        c, xcb_get_property(c, del, w, atom(name), XCB_GET_PROPERTY_TYPE_ANY, 0, 4096), &e);
    int n = 0;

    *err = e ? e->error_code : 0;
    if (r)
        n = title_bytes(title, xcb_get_property_value(r), xcb_get_property_value_length(r));
    free(r);
    free(e);
    return n;
}

static int
props(int argc, char **argv, int del)
{
    xcb_window_t w;
    int i, err;

    if (argc < 3)
        die("usage: props TITLE WIN NAME...");
    conn();
    w = strtoul(argv[1], NULL, 0);
    for (i = 2; i < argc; i++) {
        int n = propbytes(argv[0], w, argv[i], del, &err);
        printf("%s%s=%d", i > 2 ? " " : "", argv[i], n);
    }
    printf("\n");
    return 0;
}

static int
list(xcb_window_t w, const char *name)
{
    xcb_list_properties_reply_t *r;
    xcb_atom_t a;
    int i, n = 0, listed = 0;

    conn();
    a = atom(name);
    r = xcb_list_properties_reply(c, xcb_list_properties(c, w), NULL);
    if (r) {
        xcb_atom_t *l = xcb_list_properties_atoms(r);
        n = xcb_list_properties_atoms_length(r);
        for (i = 0; i < n; i++)
            listed |= l[i] == a;
    }
    free(r);
    printf("nprops=%d listed=%d\n", n, listed);
    return 0;
}

static int
rotate(const char *title, xcb_window_t w, const char *stash)
{
    xcb_atom_t atoms[2];
    int err, rerr, n;

    conn();
    atoms[0] = XCB_ATOM_WM_NAME;
    atoms[1] = atom(stash);
    xcb_change_property(c, XCB_PROP_MODE_REPLACE, w, atoms[1], XCB_ATOM_STRING, 8, 1, "x");
    rerr = check(xcb_rotate_properties_checked(c, w, 2, 1, atoms));
    n = propbytes(title, w, stash, 0, &err);
    printf("err=%d stash=%d\n", rerr, n);
    return 0;
}

static int
wm(const char *title, xcb_window_t w, xcb_window_t kill)
{
    uint32_t mask = XCB_EVENT_MASK_SUBSTRUCTURE_REDIRECT;
    int err = 0, i, e1, e2, a, b;

    conn();
    if (kill) {
        xcb_kill_client(c, kill);
        sync_();
    }
    for (i = 0; i < 50; i++) {
        err = check(xcb_change_window_attributes_checked(c, root, XCB_CW_EVENT_MASK, &mask));
        if (!err)
            break;
        usleep(100000);         /* the killed window manager's connection closing */
    }
    a = propbytes(title, w, "WM_NAME", 0, &e1);
    b = propbytes(title, w, "_NET_WM_NAME", 0, &e2);
    printf("redirect_err=%d wm_name=%d net_wm_name=%d\n", err, a, b);
    return 0;
}

/* `obapp`: an application under a real window manager (as csprobe's `frame app`): maps a
 * red secure 200x200 window titled "test.kdbx - KeePassXC" (WM_NAME, _NET_WM_NAME), waits
 * until the window manager has reparented and mapped it, prints S (the window) and F (its
 * frame), stays until killed. Not framed within 2 s (openbox, just started, sometimes
 * drops a MapRequest that arrives during its startup): unmaps and maps it again. */
static int
obapp(void)
{
    const char *t = "test.kdbx - KeePassXC";
    xcb_window_t s = 0, f, parent = 0;
    uint32_t vals[] = { RED, XCB_EVENT_MASK_STRUCTURE_NOTIFY };
    int tries, reparented = 0, mapped = 0;

    conn();
    s = xcb_generate_id(c);
    xcb_create_window(c, XCB_COPY_FROM_PARENT, s, root, 0, 0, 200, 200, 0,
                      XCB_WINDOW_CLASS_INPUT_OUTPUT, XCB_COPY_FROM_PARENT,
                      XCB_CW_BACK_PIXEL | XCB_CW_EVENT_MASK, vals);
    set_secure(s, 1);
    xcb_change_property(c, XCB_PROP_MODE_REPLACE, s, XCB_ATOM_WM_NAME, XCB_ATOM_STRING, 8,
                        strlen(t), t);
    xcb_change_property(c, XCB_PROP_MODE_REPLACE, s, atom("_NET_WM_NAME"), atom("UTF8_STRING"),
                        8, strlen(t), t);
    for (tries = 0; tries < 15 && !(reparented && mapped); tries++) {
        struct pollfd pfd = { xcb_get_file_descriptor(c), POLLIN, 0 };
        int waited = 0;
        if (tries) {
            xcb_unmap_window(c, s);
            mapped = 0;
        }
        xcb_map_window(c, s);
        xcb_flush(c);
        while (!(reparented && mapped) && waited < 2000) {
            xcb_generic_event_t *ev = xcb_poll_for_event(c);
            if (!ev) {
                poll(&pfd, 1, 100);
                waited += 100;
                continue;
            }
            if ((ev->response_type & 0x7f) == XCB_REPARENT_NOTIFY &&
                ((xcb_reparent_notify_event_t *) ev)->window == s) {
                parent = ((xcb_reparent_notify_event_t *) ev)->parent;
                reparented = parent != root;
            }
            if ((ev->response_type & 0x7f) == XCB_MAP_NOTIFY &&
                ((xcb_map_notify_event_t *) ev)->window == s)
                mapped = 1;
            free(ev);
        }
    }
    if (!(reparented && mapped))
        die("obapp: the window manager did not frame the window");
    f = toplevel(s);        /* the frame */
    wait_viewable(f, 500);
    printf("S=0x%x F=0x%x\n", s, f);
    for (;;)
        pause();
    return 0;
}

/* whether some client holds SubstructureRedirect on the root (a window manager runs) */
static int
rootmask(void)
{
    xcb_get_window_attributes_reply_t *a;

    conn();
    a = xcb_get_window_attributes_reply(c, xcb_get_window_attributes(c, root), NULL);
    printf("redirect=%d\n",
           a && (a->all_event_masks & XCB_EVENT_MASK_SUBSTRUCTURE_REDIRECT) ? 1 : 0);
    free(a);
    return 0;
}

int
main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 3 && !strcmp(argv[1], "record"))
        return record(atoi(argv[2]), argc >= 4 && !strcmp(argv[3], "hold"));
    if (argc >= 2 && !strcmp(argv[1], "obapp"))
        return obapp();
    if (argc >= 2 && !strcmp(argv[1], "rootmask"))
        return rootmask();
    if (argc >= 2 && !strcmp(argv[1], "act"))
        return act(argc >= 3 && !strcmp(argv[2], "stay"));
    if (argc >= 2 && !strcmp(argv[1], "props"))
        return props(argc - 2, argv + 2, 0);
    if (argc >= 2 && !strcmp(argv[1], "getdel"))
        return props(argc - 2, argv + 2, 1);
    if (argc >= 4 && !strcmp(argv[1], "list"))
        return list(strtoul(argv[2], NULL, 0), argv[3]);
    if (argc >= 5 && !strcmp(argv[1], "rotate"))
        return rotate(argv[2], strtoul(argv[3], NULL, 0), argv[4]);
    if (argc >= 4 && !strcmp(argv[1], "wm"))
        return wm(argv[2], strtoul(argv[3], NULL, 0),
                  argc >= 5 ? strtoul(argv[4], NULL, 0) : 0);
    die("usage: atk-recprop record SECS | act | props|getdel TITLE WIN NAME... | "
        "list WIN NAME | rotate TITLE WIN STASH | wm TITLE WIN [KILL] | obapp | rootmask");
    return 2;
}
