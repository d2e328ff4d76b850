/* CaptureShield Xorg tests: a seeded generator of random and extreme capture requests
 * (t-fuzz.sh). One process, three X clients: the victim (a red secure window with a
 * secret title, its own pixmaps, back buffer and SHM pixmap) and the attacker (plus the
 * attacker's RECORD reader). Every case is one read attempt through a path an untrusted
 * client has; what the attacker got back (reply, its own pixmap read back, its SHM
 * memory, recorded protocol) is searched for secret pixels (any red bits: nothing the
 * attacker draws has a red component) and title bytes. A refusal (any X error) is not a
 * leak. Usage: atk-fuzz [CASES]; CS_FUZZ_SEED replays a run; CS_FUZZ_LIST=N prints N
 * leak examples per request kind. */
#include "csprobe.h"
#include <poll.h>
#include <time.h>
#include <xcb/record.h>

#define BATCH 24            /* cases sent before their replies are read */
#define DW 64               /* attacker destination pixmaps and window: DW x DW */
#define SLOT (64 * 1024)    /* SHM bytes per case */
#define BIG (800 * 600 * 4) /* one full-screen SHM read per batch */
#define NCK 8

static xcb_connection_t *cv, *ca, *cr;      /* victim, attacker, attacker's RECORD reader */
static uint64_t rs;
static unsigned long ncase;
static int stock_safe;      /* CS_FUZZ_STOCK_SAFE: no copies the stock server dies on */

static uint32_t
rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (uint32_t) (rs >> 11);
}

static int
rr(int lo, int hi)
{
    return lo + (int) (rnd() % (uint32_t) (hi - lo + 1));
}

static int
pct(int p)
{
    return (int) (rnd() % 100) < p;
}

static int
pick(const int *w, int n)
{
    int i, t = 0, r;

    for (i = 0; i < n; i++)
        t += w[i];
    r = rr(0, t - 1);
    for (i = 0; i < n; i++) {
        if (r < w[i])
            return i;
        r -= w[i];
    }
    return n - 1;
}

/* ---- request kinds, main paths and counters ---- */
enum kind { K_GI_Z, K_GI_XY, K_SHMGI, K_SHMPIX, K_COPYAREA, K_COPYPLANE, K_COMPOSITE,
    K_RENDEROPS, K_NAMEPIX, K_DBE, K_PROP, K_ROTATE, K_RECORD, NK };
static const char *const kname[NK] = { "getimage_z", "getimage_xy", "shmgetimage",
    "shmpixmap_copy", "copyarea", "copyplane", "render_composite", "render_trap_tri",
    "namewindowpixmap", "dbe_swap", "getproperty_title", "rotateproperties",
    "record" };
static const int kpath[NK] = { 0, 0, 1, 1, 2, 2, 3, 3, 4, 5, 6, 6, 7 };
static const char *const pname[] = { "getimage", "shm", "copy", "render", "namewindowpixmap",
    "dbe", "title", "record" };
#define NPATH 8
static const int kweight[NK] = { 14, 6, 8, 6, 16, 6, 18, 6, 4, 4, 6, 3, 0 };

struct kstat {
    long cases, refused, errors, leak_cases, leak_px, title_bytes;
};
static struct kstat ks[NK];

/* leak classes: kind, source, destination, geometry class and victim state */
#define NCLASS 512
static struct lclass {
    char key[96];
    long cases, px, bytes;
    unsigned long first;
    char ex[240];
} lc[NCLASS];
static int nlc, list_n = 3;
static int shown[NK];

/* ---- the scene ---- */
enum src { S_ROOT, S_VW, S_C, S_C2, S_VP, S_VB, S_ADB, S_VSHM, S_NPV, S_NPC, S_N, S_AW1, NS };
static const char *const sname[NS] = { "root", "victim_win", "atk_redirected_parent",
    "atk_parent", "victim_pixmap", "victim_backbuf", "atk_backbuf_alias", "victim_shmpixmap",
    "named_victim", "named_parent", "atk_bgnone", "atk_win" };
static const int sweight[NS] = { 24, 14, 10, 6, 7, 7, 6, 5, 6, 6, 6, 5 };
static uint32_t sid[NS];
static struct kstat bysrc[NS + 2];  /* leaks per source, + solid fill, + RECORD */
static int serr[NS];        /* error creating the source (0: usable) */

static xcb_window_t vroot, VW, C, C2, AW1, AW1c, AWD, AW2, N;
static xcb_pixmap_t VP, VB, ADB, ADB2, VSHM, P24, P32;
static xcb_gcontext_t gcv, gca, gcf, gcf32;
static xcb_render_pictformat_t f24, f32, fa8;
static xcb_render_picture_t pp24, pp32, ppwd;
static uint8_t *amem, *vmem;
static uint32_t aseg, vseg;
static int shm_ok;
static int dbe_major, record_major;
static uint32_t rctx;
static unsigned rseq;
static char title[64];
static int title_len;
static xcb_atom_t a_title[5], a_utf8, a_atk[2], a_secure;
static char filters[16][32];
static int nfilters;
static int img_lsb;

/* where things are, as the attacker would know it by asking */
static struct {
    int x, y, w, h, mapped;
    xcb_window_t parent;
    int above;
} v = { 100, 100, 200, 200, 1, 0, 1 };
static struct { int x, y, w, h; } g_c, g_c2, g_aw1, g_awd, g_aw2, g_n;
static int n_mapped;

static void
fail(const char *m)
{
    fprintf(stderr, "atk-fuzz: %s\n", m);
    exit(2);
}

static xcb_atom_t
atom_on(xcb_connection_t *x, const char *name)
{
    xcb_intern_atom_reply_t *r =
        xcb_intern_atom_reply(x, xcb_intern_atom(x, 0, strlen(name), name), NULL);
    xcb_atom_t a = r ? r->atom : 0;

    free(r);
    return a;
}

static void
sync_on(xcb_connection_t *x)
{
    free(xcb_get_input_focus_reply(x, xcb_get_input_focus(x), NULL));
}

static int
chk(xcb_connection_t *x, xcb_void_cookie_t ck)
{
    xcb_generic_error_t *e = xcb_request_check(x, ck);
    int code = e ? e->error_code : 0;

    free(e);
    return code;
}

static void
drain_events(xcb_connection_t *x)
{
    xcb_generic_event_t *ev;

    while ((ev = xcb_poll_for_event(x)))
        free(ev);
}

/* a raw request on connection x (CHECKED: an error comes back on its cookie) */
static unsigned
raw_req(xcb_connection_t *x, void *req, size_t len, int isvoid)
{
    struct iovec iov[3];
    xcb_protocol_request_t pr = { 1, NULL, 0, isvoid };

    iov[2].iov_base = req;
    iov[2].iov_len = len;
    return xcb_send_request(x, XCB_REQUEST_RAW | XCB_REQUEST_CHECKED, &iov[2], &pr);
}

static unsigned
dbe_alloc_on(xcb_connection_t *x, xcb_window_t w, uint32_t buf)
{
    struct { uint8_t major, minor; uint16_t len; uint32_t win, buf; uint8_t action, pad[3]; }
        req = { dbe_major, 1, 4, w, buf, 2, {0} };
    return raw_req(x, &req, sizeof(req), 1);
}

static unsigned
dbe_swap_on(xcb_connection_t *x, xcb_window_t w)
{
    struct { uint8_t major, minor; uint16_t len; uint32_t n, win; uint8_t action, pad[3]; }
        req = { dbe_major, 3, 4, 1, w, 2, {0} };
    return raw_req(x, &req, sizeof(req), 1);
}

static int
ext_on(xcb_connection_t *x, const char *name)
{
    xcb_query_extension_reply_t *q = xcb_query_extension_reply(
        x, xcb_query_extension(x, strlen(name), name), NULL);
    int m = q && q->present ? q->major_opcode : -1;

    free(q);
    return m;
}

/* ---- secret detection ---- */

/* Secret pixels. With every plane read, a pixel is secret when its red is above its green
 * and its blue: nothing else in the scene has that (the attacker paints only colours with
 * green or blue at least their red, the module's forced background is white, its censor
 * black), and blending such colours with non-negative weights keeps it so. With a
 * planemask, a pixel is secret when it equals red under the mask and no other colour of
 * the scene does; `base` is what the unmasked planes hold (the destination's fill). */
static const uint32_t scene_px[] = { 0, 0xffffff, GREEN, 0x008000, BLUE, 0x00ffff, 0x008080,
    0x000080 };

static int
secret_px(uint32_t w, uint32_t pm, uint32_t base)
{
    uint32_t r, m = pm & 0xffffff;
    size_t i;

    w &= 0xffffff;
    if (m == 0xffffff)
        return ((w >> 16) & 0xff) > ((w >> 8) & 0xff) && ((w >> 16) & 0xff) > (w & 0xff);
    r = ((RED & m) | (base & ~m)) & 0xffffff;
    if (w != r)
        return 0;
    for (i = 0; i < sizeof(scene_px) / sizeof(scene_px[0]); i++)
        if ((((scene_px[i] & m) | (base & ~m)) & 0xffffff) == r)
            return 0;
    return 1;
}

/* CopyPlane: a set plane looks the same for red and white; pixels that came from where
 * the (white) background-None window is are not counted */
static struct { int on, ox, oy, x0, y0, x1, y1; } excl;

static long
red_pixels(const uint8_t *d, size_t len, int xy, int depth, int w, int h, uint32_t pm,
           uint32_t cpm, uint32_t base)
{
    long n = 0;
    int x, y, b, k;

    if (depth < 24 || w <= 0 || h <= 0)
        return 0;
    if (!xy) {
        size_t stride = (size_t) w * 4;
        for (y = 0; y < h && (size_t) (y + 1) * stride <= len; y++) {
            const uint8_t *l = d + (size_t) y * stride;
            for (x = 0; x < w; x++) {
                if (excl.on && x + excl.ox >= excl.x0 && x + excl.ox < excl.x1 &&
                    y + excl.oy >= excl.y0 && y + excl.oy < excl.y1)
                    continue;
                n += secret_px(cs_px(l + 4 * x), cpm, base);
            }
        }
        return n;
    } else {
        /* XY: one bitmap per plane in pm, most significant first; pad 32 */
        size_t stride = (size_t) ((w + 31) / 32) * 4, plane = stride * h;
        uint32_t dm = depth >= 32 ? 0xffffffffu : (1u << depth) - 1;
        static uint32_t px[65536];
        if (w > 65536)
            return 0;
        for (y = 0; y < h; y++) {
            memset(px, 0, (size_t) w * 4);
            k = 0;
            for (b = 31; b >= 0; b--) {
                size_t off = plane * k + stride * y;
                if (!((pm & dm) & (1u << b)))
                    continue;
                k++;
                if (off + stride > len)
                    continue;
                for (x = 0; x < w; x++) {
                    int bit = img_lsb ? (d[off + x / 8] >> (x % 8)) & 1 :
                        (d[off + x / 8] >> (7 - x % 8)) & 1;
                    px[x] |= (uint32_t) bit << b;
                }
            }
            for (x = 0; x < w; x++)
                n += secret_px(px[x], pm & dm, 0);
        }
        return n;
    }
}

/* title bytes in a property value read at byte offset off */
static long
title_bytes_at(const uint8_t *d, long len, long off)
{
    long i, n = 0;

    for (i = 0; i < len && off + i < title_len; i++)
        n += off + i >= 0 && d[i] == (uint8_t) title[off + i];
    return n >= 4 || (n > 0 && n == len) ? n : 0;
}

/* title bytes anywhere in a byte stream (recorded protocol) */
static long
title_in(const uint8_t *d, size_t len)
{
    long n = 0;
    size_t i;

    for (i = 0; i + 12 <= len; i++)
        if (!memcmp(d + i, title, 12)) {
            size_t j = 12;
            while (i + j < len && (int) j < title_len && d[i + j] == (uint8_t) title[j])
                j++;
            n += (long) j;
            i += j - 1;
        }
    return n;
}

/* ---- one case ---- */
enum rb { RB_NONE, RB_IMAGE, RB_SHMIMG, RB_SHMMEM, RB_PROP, RB_PROP2 };
struct kcase {
    int kind, rb, nck, xy, w, h, depth, src;
    uint32_t pm, cpm, base;     /* read planes; planes and fill the secret test assumes */
    int excl, ox, oy, ex0, ey0, ex1, ey1;
    size_t shm_off;
    long prop_off;
    unsigned rb_seq, rb_seq2;
    xcb_void_cookie_t ck[NCK];
    uint32_t frees[6];      /* 0: end; tagged by the high bits of frees_kind */
    int frees_kind[6], nfree;
    char key[96], desc[240];
};

static void
add_ck(struct kcase *k, xcb_void_cookie_t ck)
{
    if (k->nck < NCK)
        k->ck[k->nck++] = ck;
}

enum { F_PIXMAP, F_PICTURE };
static void
add_free(struct kcase *k, uint32_t id, int what)
{
    if (k->nfree < 6) {
        k->frees[k->nfree] = id;
        k->frees_kind[k->nfree++] = what;
    }
}

static const char *
vstate(void)
{
    static char b[48];
    int ax = v.x + (v.parent == C ? g_c.x : v.parent == C2 ? g_c2.x : 0);
    int ay = v.y + (v.parent == C ? g_c.y : v.parent == C2 ? g_c2.y : 0);
    int on = ax < SW && ay < SH && ax + v.w > 0 && ay + v.h > 0;

    snprintf(b, sizeof(b), "in=%s,%s,%s,%s",
             v.parent == C ? "atk_redirected" : v.parent == C2 ? "atk_parent" : "root",
             v.mapped ? "mapped" : "unmapped", v.above ? "top" : "bottom",
             on ? "onscreen" : "offscreen");
    return b;
}

/* victim's absolute position */
static void
vabs(int *x, int *y)
{
    *x = v.x + (v.parent == C ? g_c.x : v.parent == C2 ? g_c2.x : 0);
    *y = v.y + (v.parent == C ? g_c.y : v.parent == C2 ? g_c2.y : 0);
}

/* the secret's rectangle in source s's coordinates, and s's size */
static void
src_rect(int s, int *rx, int *ry, int *rw, int *rh, int *sw, int *sh)
{
    int ax, ay;

    vabs(&ax, &ay);
    *rw = v.w;
    *rh = v.h;
    *sw = SW;
    *sh = SH;
    switch (s) {
    case S_ROOT:
        *rx = ax;
        *ry = ay;
        break;
    case S_VW: case S_VB: case S_ADB: case S_NPV:
        *rx = *ry = 0;
        *sw = v.w;
        *sh = v.h;
        break;
    case S_VP:
        *rx = *ry = 0;
        *sw = *sh = *rw = *rh = 200;
        break;
    case S_VSHM:
        *rx = *ry = 0;
        *sw = *sh = *rw = *rh = 128;
        break;
    case S_C: case S_NPC:
        *rx = ax - g_c.x;
        *ry = ay - g_c.y;
        *sw = g_c.w;
        *sh = g_c.h;
        break;
    case S_C2:
        *rx = ax - g_c2.x;
        *ry = ay - g_c2.y;
        *sw = g_c2.w;
        *sh = g_c2.h;
        break;
    case S_N:
        *rx = ax - g_n.x;
        *ry = ay - g_n.y;
        *sw = g_n.w;
        *sh = g_n.h;
        break;
    default:
        *rx = ax - g_aw1.x;
        *ry = ay - g_aw1.y;
        *sw = g_aw1.w;
        *sh = g_aw1.h;
        break;
    }
}

static const int xcoord[] = { -32768, -32767, -32000, -1, 0, 1, 32767, 32766, 32000, 16384 };
static const int xsize[] = { 0, 1, 65535, 65534, 32768, 32767, 32769, 65280, 2 };

/* geometry: a source rectangle (x, y, w, h) over the secret, the drawable or the
 * protocol's limits; sets *ext when a value came from the limits */
static void
geom(int s, int maxw, int maxh, int *x, int *y, int *w, int *h, int *ext)
{
    int rx, ry, rw, rh, sw, sh, m = pick((const int[]) { 55, 25, 20 }, 3);
    int inside = pct(50);

    src_rect(s, &rx, &ry, &rw, &rh, &sw, &sh);
    *w = pct(85) ? rr(1, maxw) : rr(1, maxw * 2);
    *h = pct(85) ? rr(1, maxh) : rr(1, maxh * 2);
    if (m == 0) {           /* over the secret */
        *x = rr(rx - *w + 1, rx + rw - 1);
        *y = rr(ry - *h + 1, ry + rh - 1);
    } else if (m == 1) {    /* anywhere in the drawable, a little beyond */
        *x = rr(-20, sw);
        *y = rr(-20, sh);
    } else {                /* the protocol's limits */
        *ext = 1;
        if (pct(60))
            *x = pct(70) ? xcoord[rr(0, 9)] : rr(-32768, 32767);
        else
            *x = rr(rx - *w + 1, rx + rw - 1);
        if (pct(60))
            *y = pct(70) ? xcoord[rr(0, 9)] : rr(-32768, 32767);
        else
            *y = rr(ry - *h + 1, ry + rh - 1);
        if (pct(50))
            *w = pct(70) ? xsize[rr(0, 8)] : rr(0, 65535);
        if (pct(50))
            *h = pct(70) ? xsize[rr(0, 8)] : rr(0, 65535);
    }
    if (m < 2 && inside) {  /* inside the drawable, as GetImage wants it */
        if (*x < 0)
            *x = 0;
        if (*y < 0)
            *y = 0;
        if (*x >= sw)
            *x = sw - 1;
        if (*y >= sh)
            *y = sh - 1;
        if (*x + *w > sw)
            *w = sw - *x;
        if (*y + *h > sh)
            *h = sh - *y;
        if (*w < 1)
            *w = 1;
        if (*h < 1)
            *h = 1;
    }
    *x = (int16_t) *x;
    *y = (int16_t) *y;
    *w = (uint16_t) *w;
    *h = (uint16_t) *h;
}

static int
pick_src(void)
{
    return pick(sweight, NS);
}

static uint32_t
pick_pm(void)
{
    switch (rr(0, 6)) {
    case 0: return 0xff0000;
    case 1: return 0x00ffff;
    case 2: return 1u << rr(0, 31);
    case 3: return rnd() | (rnd() << 16);
    case 4: return 0;
    default: return ~0u;
    }
}

/* a picture of source s (or a solid fill when s < 0); NULL id on a refused source */
static xcb_render_picture_t
mk_pic(struct kcase *k, int s, int ca_, int allow_amap, char *d, size_t dn)
{
    xcb_render_picture_t p = xcb_generate_id(ca);
    uint32_t vals[8], mask = 0;
    int n = 0, rep = rr(0, 3), sub = pct(50), amap = allow_amap && pct(12);
    xcb_render_picture_t am = 0;
    char tmp[128];

    if (amap) {
        int as = pick_src();
        am = mk_pic(k, as, 0, 0, tmp, sizeof(tmp));
    }
    if (pct(70)) { mask |= XCB_RENDER_CP_REPEAT; vals[n++] = rep; }
    if (amap && am) {
        mask |= XCB_RENDER_CP_ALPHA_MAP | XCB_RENDER_CP_ALPHA_X_ORIGIN |
            XCB_RENDER_CP_ALPHA_Y_ORIGIN;
        vals[n++] = am;
        vals[n++] = (uint32_t) (int16_t) rr(-300, 300);
        vals[n++] = (uint32_t) (int16_t) rr(-300, 300);
    }
    if (sub) { mask |= XCB_RENDER_CP_SUBWINDOW_MODE; vals[n++] = 1; }
    if (ca_) { mask |= XCB_RENDER_CP_COMPONENT_ALPHA; vals[n++] = 1; }
    add_ck(k, xcb_render_create_picture_checked(ca, p, sid[s], f24, mask, vals));
    add_free(k, p, F_PICTURE);
    snprintf(d, dn, "%s(rep=%d%s%s%s)", sname[s], mask & XCB_RENDER_CP_REPEAT ? rep : 0,
             sub ? ",inferiors" : "", ca_ ? ",ca" : "", amap && am ? ",alphamap" : "");
    if (pct(40)) {      /* a transform */
        xcb_render_transform_t t = { 65536, 0, 0, 0, 65536, 0, 0, 0, 65536 };
        int tk = rr(0, 4);
        if (tk == 0) {
            t.matrix13 = rr(-400, 400) * 65536;
            t.matrix23 = rr(-400, 400) * 65536;
        } else if (tk == 1) {
            t.matrix11 = rr(8192, 8 * 65536);
            t.matrix22 = rr(8192, 8 * 65536);
            t.matrix13 = rr(-200, 200) * 65536;
            t.matrix23 = rr(-200, 200) * 65536;
        } else if (tk == 2) {
            t.matrix11 = 0; t.matrix12 = 65536; t.matrix21 = -65536; t.matrix22 = 0;
            t.matrix13 = rr(0, 800) * 65536;
        } else if (tk == 3) {
            t.matrix13 = (int32_t) (rnd() | (rnd() << 16));
            t.matrix23 = (int32_t) (rnd() | (rnd() << 16));
            t.matrix11 = pct(50) ? 65536 : (int32_t) rnd();
        } else {
            t.matrix11 = t.matrix22 = rr(1, 4096);      /* a huge zoom */
        }
        add_ck(k, xcb_render_set_picture_transform_checked(ca, p, t));
        snprintf(d + strlen(d), dn - strlen(d), "+transform%d", tk);
    }
    if (pct(40) && nfilters) {
        const char *f = filters[rr(0, nfilters - 1)];
        xcb_render_fixed_t kv[2 + 81];
        int nv = 0;
        if (!strcmp(f, "convolution") || pct(30)) {
            int kw = pct(70) ? rr(1, 4) * 2 + 1 : rr(1, 9), kh = pct(70) ? kw : rr(1, 9), i;
            f = "convolution";
            kv[nv++] = kw * 65536;
            kv[nv++] = kh * 65536;
            for (i = 0; i < kw * kh; i++)
                kv[nv++] = pct(80) ? rr(0, 65536) : (int32_t) (rnd() & 0x7fffffff);
            snprintf(d + strlen(d), dn - strlen(d), "+conv%dx%d", kw, kh);
        } else {
            snprintf(d + strlen(d), dn - strlen(d), "+%s", f);
        }
        add_ck(k, xcb_render_set_picture_filter_checked(ca, p, strlen(f), f, nv, kv));
    }
    return p;
}

static xcb_render_picture_t
mk_solid(struct kcase *k, int white)
{
    xcb_render_picture_t p = xcb_generate_id(ca);
    xcb_render_color_t col = { 0, (uint16_t) rr(0, 0xffff), (uint16_t) rr(0, 0xffff),
        (uint16_t) rr(0, 0xffff) };

    if (white)
        col.red = col.green = col.blue = col.alpha = 0xffff;
    add_ck(k, xcb_render_create_solid_fill_checked(ca, p, col));
    add_free(k, p, F_PICTURE);
    return p;
}

/* destination: 0 pixmap, 1 window, 2 depth-32 pixmap; filled first (no red) */
static void
reset_dst(int dst)
{
    xcb_rectangle_t r = { 0, 0, DW, DW };

    xcb_poly_fill_rectangle(ca, dst == 0 ? P24 : dst == 1 ? AWD : P32, dst == 2 ? gcf32 : gcf,
                            1, &r);
}

static void
read_dst(struct kcase *k, int dst)
{
    k->rb = RB_IMAGE;
    k->xy = 0;
    k->w = k->h = DW;
    k->pm = k->cpm = ~0u;
    k->base = 0;
    k->depth = dst == 2 ? 32 : 24;
    k->rb_seq = xcb_get_image(ca, XCB_IMAGE_FORMAT_Z_PIXMAP, dst == 0 ? P24 : dst == 1 ? AWD : P32,
                              0, 0, DW, DW, ~0u).sequence;
    /* the destination window is on screen: once read back, what the case put there (white
     * copied from the background-None window, a CopyPlane's red foreground, blends) is
     * painted over, so that no later read of the root finds the attacker's own colours
     * there and counts them as secret (seed 1796402875, case 8598: white copied from N
     * into it, then CopyPlane of the root over it painted its set plane red) */
    if (dst == 1)
        reset_dst(1);
}

static const char *const dname[] = { "atk_pixmap", "atk_window", "atk_pixmap32" };

static void
gen_case(struct kcase *k, int slot, int *big_used)
{
    int s = pick_src(), x, y, w, h, ext = 0, dx, dy, dst;
    char sd[160] = "";

    memset(k, 0, sizeof(*k));
    k->kind = pick(kweight, NK);
    if (!shm_ok && (k->kind == K_SHMGI || k->kind == K_SHMPIX))
        k->kind = K_COPYAREA;
    if (serr[s] && k->kind != K_PROP && k->kind != K_ROTATE && k->kind != K_NAMEPIX &&
        k->kind != K_DBE) {
        /* the source itself was refused (e.g. NameWindowPixmap): nothing to read */
        k->rb = RB_NONE;
        snprintf(k->key, sizeof(k->key), "%s %s", kname[k->kind], sname[s]);
        snprintf(k->desc, sizeof(k->desc), "source %s unavailable (error %d)", sname[s],
                 serr[s]);
        k->nck = -serr[s];
        return;
    }
    switch (k->kind) {
    case K_GI_Z:
    case K_GI_XY:
    case K_SHMGI:
        geom(s, pct(3) ? SW : 96, pct(3) ? SH : 96, &x, &y, &w, &h, &ext);
        k->xy = k->kind == K_GI_XY || (k->kind == K_SHMGI && pct(20));
        k->pm = k->cpm = pick_pm();
        k->w = w;
        k->h = h;
        k->depth = 24;
        if (k->kind == K_SHMGI) {
            size_t need = (size_t) w * h * 4;
            k->rb = RB_SHMIMG;
            if (need > SLOT && !*big_used && need <= BIG) {
                *big_used = 1;
                k->shm_off = (size_t) BATCH * SLOT;
            } else {
                k->shm_off = (size_t) slot * SLOT;
            }
            memset(amem + k->shm_off, 0, need > SLOT && k->shm_off < (size_t) BATCH * SLOT ?
                   SLOT : need > BIG ? BIG : need);
            k->rb_seq = xcb_shm_get_image(ca, sid[s], x, y, w, h, k->pm,
                                          k->xy ? XCB_IMAGE_FORMAT_XY_PIXMAP :
                                          XCB_IMAGE_FORMAT_Z_PIXMAP, aseg,
                                          (uint32_t) k->shm_off).sequence;
        } else {
            k->rb = RB_IMAGE;
            k->rb_seq = xcb_get_image(ca, k->xy ? XCB_IMAGE_FORMAT_XY_PIXMAP :
                                      XCB_IMAGE_FORMAT_Z_PIXMAP, sid[s], x, y, w, h,
                                      k->pm).sequence;
        }
        snprintf(sd, sizeof(sd), "%s %s(%d,%d %dx%d) planes=0x%x", k->xy ? "XY" : "Z",
                 sname[s], x, y, w, h, k->pm);
        snprintf(k->key, sizeof(k->key), "%s %s %s", kname[k->kind], sname[s],
                 ext ? "limits" : "normal");
        break;
    case K_SHMPIX:
    case K_COPYAREA:
    case K_COPYPLANE: {
        uint32_t vals[5], mask, pmv = pct(20) && k->kind != K_COPYPLANE ? pick_pm() : ~0u;
        int sub = pct(50), plane = 16, gx = pct(50);
        xcb_drawable_t dd;
        geom(s, 128, 128, &x, &y, &w, &h, &ext);
        if (stock_safe && (s == S_ROOT || s == S_VW || s == S_C || s == S_C2 || s == S_N ||
                           s == S_AW1)) {
            /* stock Xorg 21.1.7 segfaults (fbCopyNtoN) copying from a redirected window
             * with a source box past 32767, e.g. 2x65535: not asked of the controls */
            if (x + w > 32767)
                w = x < 32767 ? 32767 - x : 1;
            if (y + h > 32767)
                h = y < 32767 ? 32767 - y : 1;
        }
        dx = pct(80) ? rr(-16, DW - 1) : xcoord[rr(0, 9)];
        dy = pct(80) ? rr(-16, DW - 1) : xcoord[rr(0, 9)];
        if (k->kind == K_SHMPIX) {
            xcb_pixmap_t sp = xcb_generate_id(ca);
            dst = 3;
            k->shm_off = (size_t) slot * SLOT;
            memset(amem + k->shm_off, 0, DW * DW * 4);
            add_ck(k, xcb_shm_create_pixmap_checked(ca, sp, vroot, DW, DW, 24, aseg,
                                                    (uint32_t) k->shm_off));
            add_free(k, sp, F_PIXMAP);
            dd = sp;
        } else {
            dst = pct(75) ? 0 : 1;
            reset_dst(dst);
            dd = dst == 0 ? P24 : AWD;
        }
        mask = XCB_GC_PLANE_MASK | XCB_GC_FOREGROUND | XCB_GC_BACKGROUND |
            XCB_GC_SUBWINDOW_MODE | XCB_GC_GRAPHICS_EXPOSURES;
        if (k->kind == K_COPYPLANE)
            plane = pct(80) ? rr(16, 23) : pct(50) ? rr(0, 31) : rr(24, 31);
        vals[0] = pmv;
        /* a set plane paints red only when the plane is one of the red bits */
        vals[1] = plane >= 16 && plane <= 23 ? RED : GREEN;
        vals[2] = 0;
        vals[3] = sub;
        vals[4] = gx;
        xcb_change_gc(ca, gca, mask, vals);
        if (k->kind == K_COPYPLANE)
            add_ck(k, xcb_copy_plane_checked(ca, sid[s], dd, gca, x, y, dx, dy, w, h,
                                             1u << plane));
        else
            add_ck(k, xcb_copy_area_checked(ca, sid[s], dd, gca, x, y, dx, dy, w, h));
        if (dst == 3) {
            k->rb = RB_SHMMEM;
            k->w = k->h = DW;
            k->depth = 24;
            k->rb_seq = xcb_get_input_focus(ca).sequence;
        } else {
            read_dst(k, dst);
        }
        k->cpm = pmv;
        k->base = dst == 3 ? 0 : BLUE;
        if (k->kind == K_COPYPLANE && n_mapped &&
            (s == S_ROOT || s == S_VW || s == S_C || s == S_C2 || s == S_AW1 || s == S_N)) {
            int sax = 0, say = 0;
            if (s == S_VW)
                vabs(&sax, &say);
            else if (s == S_C || s == S_C2 || s == S_AW1 || s == S_N) {
                sax = s == S_C ? g_c.x : s == S_C2 ? g_c2.x : s == S_AW1 ? g_aw1.x : g_n.x;
                say = s == S_C ? g_c.y : s == S_C2 ? g_c2.y : s == S_AW1 ? g_aw1.y : g_n.y;
            }
            k->excl = 1;
            k->ox = sax + x - dx;
            k->oy = say + y - dy;
            k->ex0 = g_n.x;
            k->ey0 = g_n.y;
            k->ex1 = g_n.x + g_n.w;
            k->ey1 = g_n.y + g_n.h;
        }
        snprintf(sd, sizeof(sd), "%s(%d,%d %dx%d) -> %s(%d,%d) %s planemask=0x%x%s",
                 sname[s], x, y, w, h, dst == 3 ? "atk_shmpixmap" : dname[dst], dx, dy,
                 sub ? "IncludeInferiors" : "ClipByChildren", pmv,
                 k->kind == K_COPYPLANE ? " plane" : "");
        if (k->kind == K_COPYPLANE)
            snprintf(sd + strlen(sd), sizeof(sd) - strlen(sd), "=%d", plane);
        snprintf(k->key, sizeof(k->key), "%s %s->%s %s %s", kname[k->kind], sname[s],
                 dst == 3 ? "atk_shmpixmap" : dname[dst], sub ? "inferiors" : "clip",
                 ext ? "limits" : "normal");
        break;
    }
    case K_COMPOSITE:
    case K_RENDEROPS: {
        int mk = k->kind == K_COMPOSITE ? pick((const int[]) { 55, 10, 35 }, 3) : 0;
        int ms = pick_src(), cam = pct(50), solid_src = k->kind == K_COMPOSITE && pct(12);
        int op = pct(85) ? (const int[]) { 1, 3, 12 }[rr(0, 2)] : rr(0, 13);
        xcb_render_picture_t sp, mp = 0, dp;
        char md[160] = "none";
        int mx, my, msw, msh, mrw, mrh;
        dst = pick((const int[]) { 70, 20, 10 }, 3);
        reset_dst(dst);
        dp = dst == 0 ? pp24 : dst == 1 ? ppwd : pp32;
        geom(s, 128, 128, &x, &y, &w, &h, &ext);
        if (mk == 2 && serr[ms])
            mk = 0;
        if (mk == 2) {
            mp = mk_pic(k, ms, cam, 0, md, sizeof(md));
            src_rect(ms, &mx, &my, &mrw, &mrh, &msw, &msh);
            mx = pct(70) ? rr(mx - 64, mx + mrw) : rr(-32768, 32767);
            my = pct(70) ? rr(my - 64, my + mrh) : rr(-32768, 32767);
        } else {
            if (mk == 1) {
                mp = mk_solid(k, 0);
                strcpy(md, "solid");
            }
            mx = rr(-10, 10);
            my = rr(-10, 10);
        }
        if (solid_src) {
            /* a white source shows a component-alpha mask's red channel; anything
             * else this client paints has no red */
            sp = mk_solid(k, mk == 2 && cam);
            snprintf(sd, sizeof(sd), "solid%s", mk == 2 && cam ? "(white)" : "");
            s = NS;
        } else {
            sp = mk_pic(k, s, 0, 1, sd, sizeof(sd));
        }
        dx = pct(85) ? rr(-16, DW - 1) : xcoord[rr(0, 9)];
        dy = pct(85) ? rr(-16, DW - 1) : xcoord[rr(0, 9)];
        if (k->kind == K_COMPOSITE) {
            add_ck(k, xcb_render_composite_checked(ca, op, sp, mp, dp, x, y, mx, my, dx, dy,
                                                   w, h));
            snprintf(k->desc, sizeof(k->desc), "Composite op=%d src=%s(%d,%d) mask=%s(%d,%d)"
                     " -> %s(%d,%d) %dx%d", op, sd, x, y, md, mx, my, dname[dst], dx, dy, w, h);
        } else {
            int t = rr(0, 3), i;
            xcb_render_pictformat_t mf = pct(50) ? fa8 : 0;
            int fx = dx * 65536, fy = dy * 65536, fw = (int) (w > 4096 ? 4096 : w) * 65536,
                fh = (int) (h > 4096 ? 4096 : h) * 65536;
            if (t == 0) {
                xcb_render_trapezoid_t tr = { fy, fy + fh, { { fx, fy }, { fx, fy + fh } },
                    { { fx + fw, fy }, { fx + fw, fy + fh } } };
                add_ck(k, xcb_render_trapezoids_checked(ca, op, sp, dp, mf, x, y, 1, &tr));
            } else {
                xcb_render_pointfix_t pts[4] = { { fx, fy }, { fx + fw, fy }, { fx, fy + fh },
                    { fx + fw, fy + fh } };
                xcb_render_triangle_t tri[2] = { { pts[0], pts[1], pts[2] },
                    { pts[1], pts[3], pts[2] } };
                if (t == 1)
                    add_ck(k, xcb_render_triangles_checked(ca, op, sp, dp, mf, x, y, 2, tri));
                else if (t == 2)
                    add_ck(k, xcb_render_tri_strip_checked(ca, op, sp, dp, mf, x, y, 4, pts));
                else {
                    for (i = 0; i < 4; i++)
                        pts[i] = (xcb_render_pointfix_t[]) { { fx, fy }, { fx + fw, fy },
                            { fx + fw, fy + fh }, { fx, fy + fh } }[i];
                    add_ck(k, xcb_render_tri_fan_checked(ca, op, sp, dp, mf, x, y, 4, pts));
                }
            }
            snprintf(k->desc, sizeof(k->desc), "%s op=%d src=%s(%d,%d) -> %s(%d,%d) %dx%d%s",
                     (const char *[]) { "Trapezoids", "Triangles", "TriStrip", "TriFan" }[t],
                     op, sd, x, y, dname[dst], dx, dy, w, h, mf ? " maskformat=a8" : "");
        }
        read_dst(k, dst);
        snprintf(k->key, sizeof(k->key), "%s %s%s%s%s %s", kname[k->kind],
                 s == NS ? "solid" : sname[s], strstr(sd, "conv") ? "+conv" :
                 strstr(sd, "transform") ? "+transform" : "",
                 mk == 2 ? (cam ? " mask_ca=" : " mask=") : "", mk == 2 ? sname[ms] : "",
                 ext ? "limits" : "normal");
        sd[0] = '\0';
        break;
    }
    case K_NAMEPIX: {
        static const int tw[] = { S_VW, S_C, S_C2, S_AW1, S_ROOT };
        int t = tw[rr(0, 4)];
        xcb_pixmap_t np = xcb_generate_id(ca);
        s = t;
        add_ck(k, xcb_composite_name_window_pixmap_checked(ca, sid[t], np));
        add_free(k, np, F_PIXMAP);
        geom(t == S_C ? S_NPC : t == S_VW ? S_NPV : t, 128, 128, &x, &y, &w, &h, &ext);
        k->rb = RB_IMAGE;
        k->w = w;
        k->h = h;
        k->depth = 24;
        k->pm = k->cpm = ~0u;
        k->rb_seq = xcb_get_image(ca, XCB_IMAGE_FORMAT_Z_PIXMAP, np, x, y, w, h, ~0u).sequence;
        snprintf(sd, sizeof(sd), "NameWindowPixmap(%s) then GetImage(%d,%d %dx%d)", sname[t],
                 x, y, w, h);
        snprintf(k->key, sizeof(k->key), "%s %s %s", kname[k->kind], sname[t],
                 ext ? "limits" : "normal");
        break;
    }
    case K_DBE: {
        /* the attacker's own double-buffered window over the secret; its back buffer
         * gets the old front on an Untouched swap; or the victim's, swapped by us */
        int victim_win = pct(30);
        xcb_void_cookie_t ck;
        if (!victim_win) {
            int ax, ay;
            uint32_t g[2];
            vabs(&ax, &ay);
            g[0] = (uint32_t) (ax + rr(-90, v.w - 10));
            g[1] = (uint32_t) (ay + rr(-90, v.h - 10));
            g_aw2.x = (int) g[0];
            g_aw2.y = (int) g[1];
            xcb_configure_window(ca, AW2, XCB_CONFIG_WINDOW_X | XCB_CONFIG_WINDOW_Y, g);
            if (pct(50))
                xcb_configure_window(ca, AW2, XCB_CONFIG_WINDOW_STACK_MODE,
                                     (uint32_t[]) { pct(50) ? XCB_STACK_MODE_ABOVE :
                                                    XCB_STACK_MODE_BELOW });
        }
        s = victim_win ? S_ADB : S_AW1;
        ck.sequence = dbe_swap_on(ca, victim_win ? VW : AW2);
        add_ck(k, ck);
        k->rb = RB_IMAGE;
        k->w = k->h = 100;
        k->depth = 24;
        k->pm = k->cpm = ~0u;
        k->rb_seq = xcb_get_image(ca, XCB_IMAGE_FORMAT_Z_PIXMAP, victim_win ? ADB : ADB2, 0, 0,
                                  100, 100, ~0u).sequence;
        snprintf(sd, sizeof(sd), "SwapBuffers(%s, Untouched) then GetImage(back buffer)",
                 victim_win ? "victim_win" : "atk_win_over_secret");
        snprintf(k->key, sizeof(k->key), "%s %s", kname[k->kind],
                 victim_win ? "victim_win" : "atk_win_over_secret");
        break;
    }
    case K_PROP: {
        int a = rr(0, 4), del = pct(8);
        uint32_t off = pct(80) ? (uint32_t) rr(0, 8) : (uint32_t[]) { 0xffffffffu, 0x7fffffff,
            0x40000000, 1000 }[rr(0, 3)];
        uint32_t len = pct(70) ? (uint32_t) rr(0, 64) : (uint32_t[]) { 0xffffffffu, 0x7fffffff,
            0, 1 }[rr(0, 3)];
        xcb_atom_t type = pct(60) ? XCB_GET_PROPERTY_TYPE_ANY : pct(50) ? XCB_ATOM_STRING : a_utf8;
        k->rb = RB_PROP;
        s = S_VW;
        k->prop_off = (long) off * 4;
        k->rb_seq = xcb_get_property(ca, del, VW, a_title[a], type, off, len).sequence;
        snprintf(sd, sizeof(sd), "GetProperty(victim_win, title atom %d, offset %u, length %u,"
                 " delete %d, type %u)", a, off, len, del, type);
        snprintf(k->key, sizeof(k->key), "%s atom%d%s", kname[k->kind], a, del ? " delete" : "");
        break;
    }
    case K_ROTATE: {
        xcb_atom_t at[3];
        int a = rr(0, 4), delta = rr(-2, 2);
        at[0] = a_title[a];
        at[1] = a_atk[0];
        at[2] = a_atk[1];
        xcb_change_property(ca, XCB_PROP_MODE_REPLACE, VW, a_atk[0], XCB_ATOM_STRING, 8, 1, "x");
        xcb_change_property(ca, XCB_PROP_MODE_REPLACE, VW, a_atk[1], XCB_ATOM_STRING, 8, 1, "y");
        add_ck(k, xcb_rotate_properties_checked(ca, VW, 3, delta ? delta : 1, at));
        k->rb = RB_PROP2;
        s = S_VW;
        k->prop_off = 0;
        k->rb_seq = xcb_get_property(ca, 0, VW, a_atk[0], XCB_GET_PROPERTY_TYPE_ANY, 0, 64).sequence;
        k->rb_seq2 = xcb_get_property(ca, 0, VW, a_atk[1], XCB_GET_PROPERTY_TYPE_ANY, 0, 64).sequence;
        snprintf(sd, sizeof(sd), "RotateProperties(victim_win, [title atom %d, A, B], %d) then"
                 " GetProperty A, B", a, delta ? delta : 1);
        snprintf(k->key, sizeof(k->key), "%s atom%d", kname[k->kind], a);
        break;
    }
    default:
        k->rb = RB_NONE;
        break;
    }
    if (sd[0])
        snprintf(k->desc, sizeof(k->desc), "%s", sd);
    k->src = s;
    snprintf(k->key + strlen(k->key), sizeof(k->key) - strlen(k->key), " in=%s",
             v.parent == C ? "atk_redirected" : v.parent == C2 ? "atk_parent" : "root");
}

static void
note_leak(struct kcase *k, long px, long bytes)
{
    int i;
    struct kstat *st = &ks[k->kind];

    st->leak_cases++;
    st->leak_px += px;
    st->title_bytes += bytes;
    bysrc[k->kind == K_RECORD ? NS + 1 : k->src].leak_cases++;
    bysrc[k->kind == K_RECORD ? NS + 1 : k->src].leak_px += px;
    bysrc[k->kind == K_RECORD ? NS + 1 : k->src].title_bytes += bytes;
    for (i = 0; i < nlc; i++)
        if (!strcmp(lc[i].key, k->key))
            break;
    if (i == nlc && nlc < NCLASS) {
        nlc++;
        snprintf(lc[i].key, sizeof(lc[i].key), "%s", k->key);
        lc[i].first = ncase;
        snprintf(lc[i].ex, sizeof(lc[i].ex), "%s", k->desc);
    }
    if (i < NCLASS) {
        lc[i].cases++;
        lc[i].px += px;
        lc[i].bytes += bytes;
    }
    if (shown[k->kind] < list_n) {
        shown[k->kind]++;
        printf("LEAK case=%lu kind=%s red=%ld title_bytes=%ld: %s; victim %s\n", ncase,
               kname[k->kind], px, bytes, k->desc, vstate());
    }
}

static long
prop_bytes(unsigned seq, long off, int *err)
{
    xcb_generic_error_t *e = NULL;
    xcb_get_property_reply_t *r = xcb_get_property_reply(ca, (xcb_get_property_cookie_t) { seq },
                                                          &e);
    long n = 0;

    if (!r) {
        *err = e ? e->error_code : -1;
        free(e);
        return 0;
    }
    if (r->type != XCB_NONE)
        n = title_bytes_at(xcb_get_property_value(r), xcb_get_property_value_length(r), off);
    free(r);
    return n;
}

static void
collect(struct kcase *k)
{
    int i, err = 0, refusedp = 0;
    long px = 0, bytes = 0;

    if (k->nck < 0) {
        ks[k->kind].cases++;
        if (-k->nck == XCB_ACCESS)
            ks[k->kind].refused++;
        else
            ks[k->kind].errors++;
        return;
    }
    excl.on = k->excl;
    excl.ox = k->ox;
    excl.oy = k->oy;
    excl.x0 = k->ex0;
    excl.y0 = k->ey0;
    excl.x1 = k->ex1;
    excl.y1 = k->ey1;
    switch (k->rb) {
    case RB_IMAGE: {
        xcb_generic_error_t *e = NULL;
        xcb_get_image_reply_t *r = xcb_get_image_reply(ca, (xcb_get_image_cookie_t) { k->rb_seq },
                                                       &e);
        if (r) {
            px = red_pixels(xcb_get_image_data(r), xcb_get_image_data_length(r), k->xy,
                            r->depth, k->w, k->h, k->pm, k->cpm, k->base);
            free(r);
        } else {
            err = e ? e->error_code : -1;
            free(e);
        }
        break;
    }
    case RB_SHMIMG: {
        xcb_generic_error_t *e = NULL;
        xcb_shm_get_image_reply_t *r =
            xcb_shm_get_image_reply(ca, (xcb_shm_get_image_cookie_t) { k->rb_seq }, &e);
        if (r) {
            size_t len = r->size;
            if (len > (k->shm_off >= (size_t) BATCH * SLOT ? BIG : SLOT))
                len = k->shm_off >= (size_t) BATCH * SLOT ? BIG : SLOT;
            px = red_pixels(amem + k->shm_off, len, k->xy, r->depth, k->w, k->h, k->pm, k->cpm,
                            k->base);
            free(r);
        } else {
            err = e ? e->error_code : -1;
            free(e);
        }
        break;
    }
    case RB_SHMMEM:
        free(xcb_get_input_focus_reply(ca, (xcb_get_input_focus_cookie_t) { k->rb_seq }, NULL));
        px = red_pixels(amem + k->shm_off, DW * DW * 4, 0, 24, DW, DW, ~0u, k->cpm, k->base);
        break;
    case RB_PROP:
        bytes = prop_bytes(k->rb_seq, k->prop_off, &err);
        break;
    case RB_PROP2:
        bytes = prop_bytes(k->rb_seq, 0, &err);
        bytes += prop_bytes(k->rb_seq2, 0, &err);
        break;
    default:
        break;
    }
    for (i = 0; i < k->nck; i++) {
        int e = chk(ca, k->ck[i]);
        if (e == XCB_ACCESS)
            refusedp = 1;
        else if (e && !err)
            err = e;
    }
    if (err == XCB_ACCESS)
        refusedp = 1;
    for (i = 0; i < k->nfree; i++) {
        if (k->frees_kind[i] == F_PIXMAP)
            xcb_free_pixmap(ca, k->frees[i]);
        else
            xcb_render_free_picture(ca, k->frees[i]);
    }
    ks[k->kind].cases++;
    if (refusedp)
        ks[k->kind].refused++;
    else if (err)
        ks[k->kind].errors++;
    if (px || bytes)
        note_leak(k, px, bytes);
}

/* ---- RECORD: the attacker records the victim's requests and replies ---- */
static void
record_setup(void)
{
    struct {
        uint8_t major, minor;
        uint16_t len;
        uint32_t ctx;
        uint8_t hdr, pad[3];
        uint32_t nclients, nranges, client;
        xcb_record_range_t range;
    } req;
    struct { uint8_t major, minor; uint16_t len; uint32_t ctx; } en;
    xcb_void_cookie_t ck;
    int e;

    record_major = ext_on(ca, "RECORD");
    if (record_major < 0)
        return;
    memset(&req, 0, sizeof(req));
    rctx = xcb_generate_id(ca);
    req.major = record_major;
    req.minor = 1;  /* CreateContext */
    req.len = sizeof(req) / 4;
    req.ctx = rctx;
    req.nclients = 1;
    req.nranges = 1;
    req.client = VW;
    req.range.core_requests.first = XCB_CHANGE_PROPERTY;
    req.range.core_requests.last = XCB_CHANGE_PROPERTY;
    req.range.core_replies.first = XCB_GET_PROPERTY;
    req.range.core_replies.last = XCB_GET_IMAGE;
    ck.sequence = raw_req(ca, &req, sizeof(req), 1);
    e = chk(ca, ck);
    if (e) {
        printf("record: CreateContext error %d\n", e);
        serr[0] = serr[0];
        rctx = 0;
        return;
    }
    en.major = record_major;
    en.minor = 5;   /* EnableContext: one reply per recorded element, on its own client */
    en.len = 2;
    en.ctx = rctx;
    rseq = raw_req(cr, &en, sizeof(en), 0);
    xcb_flush(cr);
}

static void
record_drain(int wait_ms)
{
    void *rep;
    xcb_generic_error_t *e;
    struct kcase k;

    if (!rseq)
        return;
    for (;;) {
        rep = NULL;
        e = NULL;
        if (xcb_connection_has_error(cr)) {
            printf("record: reader connection closed\n");
            rseq = 0;
            return;
        }
        if (!xcb_poll_for_reply(cr, rseq, &rep, &e)) {
            struct pollfd p = { xcb_get_file_descriptor(cr), POLLIN, 0 };
            xcb_generic_event_t *ev = xcb_poll_for_event(cr);   /* reads the socket */
            if (ev) {
                free(ev);
                continue;
            }
            if (xcb_poll_for_reply(cr, rseq, &rep, &e))
                goto got;
            if (wait_ms <= 0 || poll(&p, 1, wait_ms) <= 0)
                return;
            wait_ms -= 50;
            continue;
        }
got:
        if (e) {
            ks[K_RECORD].refused++;
            printf("record: EnableContext error %d\n", e->error_code);
            free(e);
            rseq = 0;
            return;
        }
        if (rep) {
            const uint8_t *d = rep;
            uint32_t len = *(const uint32_t *) (d + 4) * 4;
            long px = 0, bytes = title_in(d + 32, len);
            uint32_t i;
            for (i = 0; i + 4 <= len; i += 4)
                /* a request's field (the client's byte order) or image data (the
                 * server's) */
                px += *(const uint32_t *) (d + 32 + i) == 0x00ff0000 ||
                    cs_px(d + 32 + i) == 0x00ff0000;
            if (px || bytes) {
                memset(&k, 0, sizeof(k));
                k.kind = K_RECORD;
                snprintf(k.key, sizeof(k.key), "record victim's ChangeProperty/GetImage");
                snprintf(k.desc, sizeof(k.desc), "RECORD context on the victim client: "
                         "category %d, %u bytes", d[1], len);
                note_leak(&k, px, bytes);
            }
            free(rep);
        }
    }
}

/* ---- the victim and the attacker's windows between cases ---- */
static void
victim_titles(void)
{
    int i;

    for (i = 0; i < 5; i++)
        xcb_change_property(cv, XCB_PROP_MODE_REPLACE, VW, a_title[i],
                            i == 1 || i == 3 || i == 4 ? a_utf8 : XCB_ATOM_STRING, 8,
                            title_len, title);
}

static void
victim_paint(void)
{
    xcb_rectangle_t r = { 0, 0, 400, 400 };

    xcb_clear_area(cv, 0, VW, 0, 0, 0, 0);
    if (!serr[S_VB])
        xcb_poly_fill_rectangle(cv, VB, gcv, 1, &r);
}

static void
epoch(void)
{
    uint32_t g[4];
    int ax, ay, e;

    /* the victim moves, restacks, maps, unmaps, gets reparented */
    if (pct(35)) {
        int pw = v.parent == C ? g_c.w : v.parent == C2 ? g_c2.w : SW;
        int ph = v.parent == C ? g_c.h : v.parent == C2 ? g_c2.h : SH;
        v.x = pct(95) ? rr(-v.w + 10, pw - 10) : xcoord[rr(0, 9)];
        v.y = pct(95) ? rr(-v.h + 10, ph - 10) : xcoord[rr(0, 9)];
        g[0] = (uint32_t) v.x;
        g[1] = (uint32_t) v.y;
        xcb_configure_window(cv, VW, XCB_CONFIG_WINDOW_X | XCB_CONFIG_WINDOW_Y, g);
    }
    if (pct(10)) {
        v.w = rr(20, 300);
        v.h = pct(50) ? v.w : rr(20, 300);
        g[0] = v.w;
        g[1] = v.h;
        xcb_configure_window(cv, VW, XCB_CONFIG_WINDOW_WIDTH | XCB_CONFIG_WINDOW_HEIGHT, g);
    }
    if (pct(25)) {
        v.above = pct(60);
        g[0] = v.above ? XCB_STACK_MODE_ABOVE : XCB_STACK_MODE_BELOW;
        xcb_configure_window(cv, VW, XCB_CONFIG_WINDOW_STACK_MODE, g);
    }
    if (v.mapped && pct(6)) {
        xcb_unmap_window(cv, VW);
        v.mapped = 0;
    } else if (!v.mapped && pct(70)) {
        xcb_map_window(cv, VW);
        v.mapped = 1;
    }
    if (pct(10)) {
        xcb_window_t np = (xcb_window_t[]) { vroot, C, C2 }[rr(0, 2)];
        int by_atk = pct(70);
        int nx = rr(-50, 250), ny = rr(-50, 250);
        sync_on(cv);
        e = chk(by_atk ? ca : cv, xcb_reparent_window_checked(by_atk ? ca : cv, VW, np, nx, ny));
        if (!e) {
            v.parent = np;
            v.x = nx;
            v.y = ny;
            v.above = 1;
        }
        sync_on(ca);
    }
    victim_paint();
    victim_titles();
    if (pct(30))    /* the victim reads itself (RECORD sees the reply) */
        free(xcb_get_image_reply(cv, xcb_get_image(cv, XCB_IMAGE_FORMAT_Z_PIXMAP, VW, 0, 0, 8,
                                                   8, ~0u), NULL));
    sync_on(cv);
    ks[K_RECORD].cases++;
    drain_events(cv);

    /* the attacker rearranges its windows */
    if (pct(30)) {
        g_c.x = rr(-100, 600);
        g_c.y = rr(-100, 400);
        g[0] = (uint32_t) g_c.x;
        g[1] = (uint32_t) g_c.y;
        xcb_configure_window(ca, C, XCB_CONFIG_WINDOW_X | XCB_CONFIG_WINDOW_Y, g);
    }
    if (pct(30)) {
        g_c2.x = rr(-100, 600);
        g_c2.y = rr(-100, 400);
        g[0] = (uint32_t) g_c2.x;
        g[1] = (uint32_t) g_c2.y;
        g[2] = pct(50) ? XCB_STACK_MODE_ABOVE : XCB_STACK_MODE_BELOW;
        xcb_configure_window(ca, C2, XCB_CONFIG_WINDOW_X | XCB_CONFIG_WINDOW_Y |
                             XCB_CONFIG_WINDOW_STACK_MODE, g);
    }
    if (pct(30)) {
        g_aw1.x = rr(0, 680);
        g_aw1.y = rr(0, 480);
        g[0] = (uint32_t) g_aw1.x;
        g[1] = (uint32_t) g_aw1.y;
        g[2] = pct(50) ? XCB_STACK_MODE_ABOVE : XCB_STACK_MODE_BELOW;
        xcb_configure_window(ca, AW1, XCB_CONFIG_WINDOW_X | XCB_CONFIG_WINDOW_Y |
                             XCB_CONFIG_WINDOW_STACK_MODE, g);
    }
    if (pct(20)) {
        g_awd.x = rr(0, SW - DW);
        g_awd.y = rr(0, SH - DW);
        g[0] = (uint32_t) g_awd.x;
        g[1] = (uint32_t) g_awd.y;
        g[2] = pct(50) ? XCB_STACK_MODE_ABOVE : XCB_STACK_MODE_BELOW;
        xcb_configure_window(ca, AWD, XCB_CONFIG_WINDOW_X | XCB_CONFIG_WINDOW_Y |
                             XCB_CONFIG_WINDOW_STACK_MODE, g);
    }
    if (pct(40)) {
        /* a window with background None mapped over the secret keeps what was there */
        vabs(&ax, &ay);
        if (n_mapped)
            xcb_unmap_window(ca, N);
        g_n.x = ax + rr(-100, v.w - 20);
        g_n.y = ay + rr(-100, v.h - 20);
        g[0] = (uint32_t) g_n.x;
        g[1] = (uint32_t) g_n.y;
        g[2] = XCB_STACK_MODE_ABOVE;
        xcb_configure_window(ca, N, XCB_CONFIG_WINDOW_X | XCB_CONFIG_WINDOW_Y |
                             XCB_CONFIG_WINDOW_STACK_MODE, g);
        xcb_map_window(ca, N);
        n_mapped = 1;
        if (pct(50)) {      /* then the secret moves away under it */
            g[0] = (uint32_t) (v.x + rr(-300, 300));
            g[1] = (uint32_t) (v.y + rr(-300, 300));
            xcb_configure_window(ca, VW, XCB_CONFIG_WINDOW_X | XCB_CONFIG_WINDOW_Y, g);
            v.x = (int) g[0];
            v.y = (int) g[1];
        }
    }
    /* named pixmaps of the victim and of the redirected parent, for this epoch */
    if (sid[S_NPV])
        xcb_free_pixmap(ca, sid[S_NPV]);
    if (sid[S_NPC])
        xcb_free_pixmap(ca, sid[S_NPC]);
    sid[S_NPV] = xcb_generate_id(ca);
    sid[S_NPC] = xcb_generate_id(ca);
    {
        xcb_void_cookie_t c1 = xcb_composite_name_window_pixmap_checked(ca, VW, sid[S_NPV]);
        xcb_void_cookie_t c2 = xcb_composite_name_window_pixmap_checked(ca, C, sid[S_NPC]);
        serr[S_NPV] = chk(ca, c1);
        serr[S_NPC] = chk(ca, c2);
    }
    drain_events(ca);
}

/* ---- setup ---- */
static xcb_window_t
win_on(xcb_connection_t *x, xcb_window_t parent, int wx, int wy, int w, int h, int bg, int none)
{
    xcb_window_t id = xcb_generate_id(x);
    uint32_t vals[2] = { (uint32_t) bg, 1 };

    if (none)
        xcb_create_window(x, XCB_COPY_FROM_PARENT, id, parent, wx, wy, w, h, 0,
                          XCB_WINDOW_CLASS_INPUT_OUTPUT, XCB_COPY_FROM_PARENT,
                          XCB_CW_OVERRIDE_REDIRECT, &vals[1]);
    else
        xcb_create_window(x, XCB_COPY_FROM_PARENT, id, parent, wx, wy, w, h, 0,
                          XCB_WINDOW_CLASS_INPUT_OUTPUT, XCB_COPY_FROM_PARENT,
                          XCB_CW_BACK_PIXEL | XCB_CW_OVERRIDE_REDIRECT, vals);
    return id;
}

static void
formats(void)
{
    xcb_render_query_pict_formats_reply_t *r =
        xcb_render_query_pict_formats_reply(ca, xcb_render_query_pict_formats(ca), NULL);
    xcb_render_pictforminfo_iterator_t fi;
    xcb_render_query_filters_reply_t *q;
    xcb_str_iterator_t si;

    if (!r)
        fail("no RENDER");
    for (fi = xcb_render_query_pict_formats_formats_iterator(r); fi.rem;
         xcb_render_pictforminfo_next(&fi)) {
        xcb_render_pictforminfo_t *f = fi.data;
        if (f->type != XCB_RENDER_PICT_TYPE_DIRECT)
            continue;
        if (f->depth == 32 && f->direct.alpha_mask == 0xff && f->direct.red_shift == 16)
            f32 = f->id;
        if (f->depth == 24 && f->direct.red_shift == 16 && f->direct.alpha_mask == 0)
            f24 = f->id;
        if (f->depth == 8 && f->direct.alpha_mask == 0xff && !f->direct.red_mask)
            fa8 = f->id;
    }
    free(r);
    q = xcb_render_query_filters_reply(ca, xcb_render_query_filters(ca, vroot), NULL);
    if (q) {
        for (si = xcb_render_query_filters_filters_iterator(q); si.rem && nfilters < 16;
             xcb_str_next(&si)) {
            int n = xcb_str_name_length(si.data);
            if (n > 31)
                n = 31;
            memcpy(filters[nfilters], xcb_str_name(si.data), n);
            filters[nfilters++][n] = '\0';
        }
        free(q);
    }
    if (!f24 || !f32 || !fa8)
        fail("picture formats missing");
}

static void
setup(void)
{
    xcb_screen_t *s;
    uint32_t vals[2], one = 1;
    xcb_void_cookie_t ck;
    const xcb_setup_t *su;
    int i;
    static const char *const tn[5] = { "WM_NAME", "_NET_WM_NAME", "WM_ICON_NAME",
        "_NET_WM_ICON_NAME", "_NET_WM_VISIBLE_NAME" };

    cv = xcb_connect(NULL, NULL);
    ca = xcb_connect(NULL, NULL);
    cr = xcb_connect(NULL, NULL);
    if (xcb_connection_has_error(cv) || xcb_connection_has_error(ca) ||
        xcb_connection_has_error(cr))
        fail("cannot connect");
    su = xcb_get_setup(ca);
    img_lsb = su->bitmap_format_bit_order == XCB_IMAGE_ORDER_LSB_FIRST;
    s = xcb_setup_roots_iterator(su).data;
    vroot = s->root;
    dbe_major = ext_on(ca, "DOUBLE-BUFFER");
    for (i = 0; i < 5; i++)
        a_title[i] = atom_on(cv, tn[i]);
    a_utf8 = atom_on(cv, "UTF8_STRING");
    a_secure = atom_on(cv, "_CAPTURE_SHIELD_SECURE");
    a_atk[0] = atom_on(ca, "CSFUZZ_A");
    a_atk[1] = atom_on(ca, "CSFUZZ_B");
    title_len = snprintf(title, sizeof(title), "Passwords.kdbx - KeePassXC #%08x%08x",
                         (unsigned) (rs >> 32), (unsigned) rs);

    /* the attacker's windows: C redirected (Composite, automatic), C2 plain, AW1 with a
     * child, AWD its destination window, AW2 double-buffered, N background None */
    g_c = (typeof(g_c)) { 420, 250, 300, 300 };
    g_c2 = (typeof(g_c2)) { 20, 300, 260, 260 };
    g_aw1 = (typeof(g_aw1)) { 300, 40, 120, 120 };
    g_awd = (typeof(g_awd)) { 700, 500, DW, DW };
    g_aw2 = (typeof(g_aw2)) { 0, 0, 100, 100 };
    g_n = (typeof(g_n)) { 150, 150, 150, 150 };
    C = win_on(ca, vroot, g_c.x, g_c.y, g_c.w, g_c.h, GREEN, 0);
    C2 = win_on(ca, vroot, g_c2.x, g_c2.y, g_c2.w, g_c2.h, 0x008000, 0);
    AW1 = win_on(ca, vroot, g_aw1.x, g_aw1.y, g_aw1.w, g_aw1.h, BLUE, 0);
    AW1c = win_on(ca, AW1, 10, 10, 50, 50, 0x00ffff, 0);
    AWD = win_on(ca, vroot, g_awd.x, g_awd.y, DW, DW, 0x008080, 0);
    AW2 = win_on(ca, vroot, 0, 0, 100, 100, 0x000080, 0);
    N = win_on(ca, vroot, g_n.x, g_n.y, g_n.w, g_n.h, 0, 1);
    xcb_composite_redirect_window(ca, C, XCB_COMPOSITE_REDIRECT_AUTOMATIC);
    xcb_map_window(ca, AW1c);
    xcb_map_window(ca, C);
    xcb_map_window(ca, C2);
    xcb_map_window(ca, AW1);
    xcb_map_window(ca, AWD);
    xcb_map_window(ca, AW2);
    P24 = xcb_generate_id(ca);
    P32 = xcb_generate_id(ca);
    xcb_create_pixmap(ca, 24, P24, vroot, DW, DW);
    xcb_create_pixmap(ca, 32, P32, vroot, DW, DW);
    gca = xcb_generate_id(ca);
    gcf = xcb_generate_id(ca);
    gcf32 = xcb_generate_id(ca);
    vals[0] = BLUE;
    vals[1] = 0;
    xcb_create_gc(ca, gca, vroot, XCB_GC_FOREGROUND | XCB_GC_GRAPHICS_EXPOSURES, vals);
    xcb_create_gc(ca, gcf, vroot, XCB_GC_FOREGROUND | XCB_GC_GRAPHICS_EXPOSURES, vals);
    vals[0] = 0xff0000ff;
    xcb_create_gc(ca, gcf32, P32, XCB_GC_FOREGROUND | XCB_GC_GRAPHICS_EXPOSURES, vals);
    formats();
    pp24 = xcb_generate_id(ca);
    pp32 = xcb_generate_id(ca);
    ppwd = xcb_generate_id(ca);
    xcb_render_create_picture(ca, pp24, P24, f24, 0, NULL);
    xcb_render_create_picture(ca, pp32, P32, f32, 0, NULL);
    xcb_render_create_picture(ca, ppwd, AWD, f24, XCB_RENDER_CP_SUBWINDOW_MODE, &one);
    aseg = xcb_generate_id(ca);
    {
        int id = shmget(IPC_PRIVATE, (size_t) BATCH * SLOT + BIG, IPC_CREAT | 0600);
        amem = id >= 0 ? shmat(id, NULL, 0) : NULL;
        if (id >= 0)
            shmctl(id, IPC_RMID, NULL);
        shm_ok = amem && amem != (void *) -1 &&
            !chk(ca, xcb_shm_attach_checked(ca, aseg, (uint32_t) id, 0));
    }
    sync_on(ca);

    /* the victim: a red secure window with a title, its pixmap, back buffer, SHM pixmap */
    VW = win_on(cv, vroot, v.x, v.y, v.w, v.h, RED, 0);
    xcb_change_property(cv, XCB_PROP_MODE_REPLACE, VW, a_secure, XCB_ATOM_CARDINAL, 32, 1, &one);
    victim_titles();
    xcb_map_window(cv, VW);
    v.parent = vroot;
    gcv = xcb_generate_id(cv);
    vals[0] = RED;
    vals[1] = 0;
    xcb_create_gc(cv, gcv, vroot, XCB_GC_FOREGROUND | XCB_GC_GRAPHICS_EXPOSURES, vals);
    VP = xcb_generate_id(cv);
    xcb_create_pixmap(cv, 24, VP, vroot, 200, 200);
    xcb_poly_fill_rectangle(cv, VP, gcv, 1, (xcb_rectangle_t[]) { { 0, 0, 200, 200 } });
    VB = xcb_generate_id(cv);
    ck.sequence = dbe_alloc_on(cv, VW, VB);
    serr[S_VB] = dbe_major < 0 ? -1 : chk(cv, ck);
    vseg = xcb_generate_id(cv);
    VSHM = xcb_generate_id(cv);
    {
        int id = shmget(IPC_PRIVATE, 128 * 128 * 4, IPC_CREAT | 0600);
        vmem = id >= 0 ? shmat(id, NULL, 0) : NULL;
        if (id >= 0)
            shmctl(id, IPC_RMID, NULL);
        if (vmem && vmem != (void *) -1 &&
            !chk(cv, xcb_shm_attach_checked(cv, vseg, (uint32_t) id, 0)) &&
            !chk(cv, xcb_shm_create_pixmap_checked(cv, VSHM, vroot, 128, 128, 24, vseg, 0))) {
            for (i = 0; i < 128 * 128; i++)
                cs_put_px((uint8_t *) vmem + 4 * i, RED);
        } else {
            serr[S_VSHM] = -1;
        }
    }
    victim_paint();
    sync_on(cv);

    /* the attacker learns the victim's ids (as it would from QueryTree, a property or a
     * guess at the victim's resource base) and tries to hold what it can */
    ADB = xcb_generate_id(ca);
    ADB2 = xcb_generate_id(ca);
    ck.sequence = dbe_alloc_on(ca, VW, ADB);
    serr[S_ADB] = dbe_major < 0 ? -1 : chk(ca, ck);
    ck.sequence = dbe_alloc_on(ca, AW2, ADB2);
    chk(ca, ck);
    chk(ca, xcb_composite_redirect_window_checked(ca, VW, XCB_COMPOSITE_REDIRECT_AUTOMATIC));
    sid[S_ROOT] = vroot;
    sid[S_VW] = VW;
    sid[S_C] = C;
    sid[S_C2] = C2;
    sid[S_VP] = VP;
    sid[S_VB] = VB;
    sid[S_ADB] = ADB;
    sid[S_VSHM] = VSHM;
    sid[S_N] = N;
    sid[S_AW1] = AW1;
    record_setup();
    sync_on(ca);
    drain_events(ca);
    drain_events(cv);
}

int
main(int argc, char **argv)
{
    unsigned long cases = argc > 1 ? strtoul(argv[1], NULL, 10) : 10000, i;
    const char *e = getenv("CS_FUZZ_SEED");
    unsigned long long seed;
    struct kcase *batch = calloc(BATCH, sizeof(*batch));
    struct kstat tot = { 0 }, pt[NPATH];
    long alive;
    int k, j, trace = getenv("CS_FUZZ_TRACE") != NULL;

    setvbuf(stdout, NULL, _IOLBF, 0);
    seed = e && *e ? strtoull(e, NULL, 0) : (unsigned long long) time(NULL) ^ (getpid() << 16);
    stock_safe = getenv("CS_FUZZ_STOCK_SAFE") != NULL;
    if (getenv("CS_FUZZ_LIST"))
        list_n = atoi(getenv("CS_FUZZ_LIST"));
    rs = seed * 0x9e3779b97f4a7c15ull + 1;
    printf("seed=%llu (replay: CS_FUZZ_SEED=%llu)\n", seed, seed);
    setup();
    for (i = 0; i < cases;) {
        int n = 0, big = 0;
        epoch();
        for (; n < BATCH && i + n < cases; n++) {
            ncase = i + n;
            gen_case(&batch[n], n, &big);
            if (trace) {
                /* one case at a time, named before it is sent: a crash names its case */
                fprintf(stderr, "case %lu: %s %s; victim %s\n", ncase, kname[batch[n].kind],
                        batch[n].desc, vstate());
                collect(&batch[n]);
                if (xcb_connection_has_error(ca)) {
                    fprintf(stderr, "case %lu: the server closed the connection\n", ncase);
                    n++;
                    break;
                }
            }
        }
        xcb_flush(ca);
        for (j = 0; j < n && !trace; j++) {
            ncase = i + j;
            collect(&batch[j]);
        }
        i += n;
        record_drain(0);
        if (xcb_connection_has_error(ca) || xcb_connection_has_error(cv)) {
            printf("connection lost after case %lu\n", i);
            break;
        }
    }
    sync_on(cv);
    record_drain(300);
    memset(pt, 0, sizeof(pt));
    for (k = 0; k < NK; k++) {
        struct kstat *s = &ks[k], *p = &pt[kpath[k]];
        printf("kind=%s cases=%ld refused=%ld errors=%ld leak_cases=%ld leaked_px=%ld "
               "title_bytes=%ld seed=%llu\n", kname[k], s->cases, s->refused, s->errors,
               s->leak_cases, s->leak_px, s->title_bytes, seed);
        p->cases += s->cases;
        p->refused += s->refused;
        p->leak_cases += s->leak_cases;
        p->leak_px += s->leak_px;
        p->title_bytes += s->title_bytes;
        tot.cases += k == K_RECORD ? 0 : s->cases;
        tot.refused += s->refused;
        tot.errors += s->errors;
        tot.leak_cases += s->leak_cases;
        tot.leak_px += s->leak_px;
        tot.title_bytes += s->title_bytes;
    }
    for (k = 0; k < NPATH; k++)
        printf("path=%s cases=%ld leak_cases=%ld leaked_px=%ld title_bytes=%ld\n", pname[k],
               pt[k].cases, pt[k].leak_cases, pt[k].leak_px, pt[k].title_bytes);
    for (k = 0; k < NS + 2; k++)
        if (bysrc[k].leak_cases)
            printf("source=%s leak_cases=%ld leaked_px=%ld title_bytes=%ld\n",
                   k == NS ? "solid_fill" : k == NS + 1 ? "record" : sname[k],
                   bysrc[k].leak_cases, bysrc[k].leak_px, bysrc[k].title_bytes);
    if (nlc) {
        printf("leak classes (kind source[->dest] [mode] geometry victim-state: cases, red px,"
               " title bytes, first case; example):\n");
        for (k = 0; k < nlc; k++)
            printf("  CLASS %s: cases=%ld red=%ld title=%ld first=%lu; e.g. %s\n", lc[k].key,
                   lc[k].cases, lc[k].px, lc[k].bytes, lc[k].first, lc[k].ex);
    }
    {
        xcb_connection_t *t = xcb_connect(NULL, NULL);
        xcb_get_input_focus_reply_t *r = xcb_connection_has_error(t) ? NULL :
            xcb_get_input_focus_reply(t, xcb_get_input_focus(t), NULL);
        alive = r != NULL;
        free(r);
        xcb_disconnect(t);
    }
    printf("seed=%llu cases=%ld refused=%ld errors=%ld leak_cases=%ld leaked_px=%ld "
           "title_bytes=%ld classes=%d alive=%ld\n", seed, tot.cases, tot.refused, tot.errors,
           tot.leak_cases, tot.leak_px, tot.title_bytes, nlc, alive);
    return 0;
}
