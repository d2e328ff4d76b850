/* CaptureShield Xorg tests (t-damage.sh): what DAMAGE tells about a secure window.
 *   atk-damage victim          a 200x200 red secure window at 100,100 (tagged before it is
 *                              mapped); prints "S=0x.." and reads commands on stdin:
 *                              "draw N" fills a 10x16 caret N times inside it (as a field
 *                              does at each key press), 30 ms apart; prints "drawn=N"
 *   atk-damage listen MS D X Y W H
 *                              a DAMAGE object (level raw rectangles) on drawable D;
 *                              counts for MS ms (until $CS_STOP_FILE, plus 300 ms) the
 *                              reports whose box meets the rectangle X,Y WxH (in D's
 *                              coordinates): "create_err=E reports=N inside=N"
 * The listener prints "ready" once its object exists. */
#include "csprobe.h"

static int
victim_(void)
{
    xcb_window_t s;
    uint32_t black = 0;
    xcb_gcontext_t gc;
    char line[64];

    conn();
    s = mkwin(root, 100, 100, 200, 200, RED, 0);
    set_secure(s, 1);
    xcb_map_window(c, s);
    wait_mapped(s);
    gc = xcb_generate_id(c);
    xcb_create_gc(c, gc, s, XCB_GC_FOREGROUND, &black);
    sync_();
    printf("S=0x%x\n", s);
    fflush(stdout);
    while (fgets(line, sizeof(line), stdin)) {
        int n = 0, i;
        if (sscanf(line, "draw %d", &n) != 1)
            continue;
        for (i = 0; i < n; i++) {
            xcb_rectangle_t r = { (int16_t) (20 + 11 * (i % 15)), 90, 10, 16 };
            uint32_t fg = (i & 1) ? RED : 0;
            xcb_change_gc(c, gc, XCB_GC_FOREGROUND, &fg);
            xcb_poly_fill_rectangle(c, s, gc, 1, &r);
            sync_();
            usleep(30000);
        }
        printf("drawn=%d\n", n);
        fflush(stdout);
    }
    return 0;
}

static int damage_event, rx, ry, rw, rh;
static long reports, in;

/* a DamageNotify: its box meets the rectangle? */
static void
on_damage(xcb_generic_event_t *ev)
{
    const uint8_t *b = (const uint8_t *) ev;
    int16_t ax, ay;
    uint16_t aw, ah;

    if ((ev->response_type & 0x7f) != damage_event)
        return;
    memcpy(&ax, b + 16, 2);
    memcpy(&ay, b + 18, 2);
    memcpy(&aw, b + 20, 2);
    memcpy(&ah, b + 22, 2);
    reports++;
    if (ax < rx + rw && ay < ry + rh && ax + aw > rx && ay + ah > ry)
        in++;
}

static int
dmg_listen(long ms, xcb_drawable_t d)
{
    const xcb_query_extension_reply_t *x;
    struct { uint8_t major, minor; uint16_t len; uint32_t vmaj, vmin; } qv;
    struct { uint8_t major, minor; uint16_t len; uint32_t damage, drawable; uint8_t level, pad[3]; } cr;
    struct iovec iov[3];
    xcb_protocol_request_t pr = { 1, NULL, 0, 1 };
    xcb_generic_error_t *e = NULL;
    void *r;
    int err;
    conn();
    x = xcb_get_extension_data(c, &(xcb_extension_t) { "DAMAGE", 0 });
    if (!x || !x->present)
        die("no DAMAGE");
    qv.major = x->major_opcode;
    qv.minor = 0;               /* DamageQueryVersion: 1.1 */
    qv.len = 3;
    qv.vmaj = 1;
    qv.vmin = 1;
    iov[2].iov_base = &qv;
    iov[2].iov_len = sizeof(qv);
    r = xcb_wait_for_reply(c, xcb_send_request(c, XCB_REQUEST_RAW | XCB_REQUEST_CHECKED,
                                               &iov[2], &pr), &e);
    free(r);
    free(e);
    cr.major = x->major_opcode;
    cr.minor = 1;               /* DamageCreate */
    cr.len = 4;
    cr.damage = xcb_generate_id(c);
    cr.drawable = d;
    cr.level = 0;               /* raw rectangles: one report per drawing */
    memset(cr.pad, 0, sizeof(cr.pad));
    err = raw_void(&cr, sizeof(cr));
    damage_event = x->first_event;
    cs_ready();
    cs_listen(ms, on_damage);
    printf("create_err=%d reports=%ld inside=%ld\n", err, reports, in);
    return 0;
}

int
main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 1 && !strcmp(argv[1], "victim"))
        return victim_();
    if (argc > 7 && !strcmp(argv[1], "listen")) {
        rx = atoi(argv[4]);
        ry = atoi(argv[5]);
        rw = atoi(argv[6]);
        rh = atoi(argv[7]);
        return dmg_listen(atol(argv[2]), (xcb_drawable_t) strtoul(argv[3], NULL, 0));
    }
    fprintf(stderr, "usage: atk-damage victim | listen MS DRAWABLE X Y W H\n");
    return 64;
}
