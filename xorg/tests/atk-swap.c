/* CaptureShield Xorg tests: a client of either byte order (tests/t-swap.sh).
 *
 * xcb speaks the host's byte order only, so this client writes the connection setup and
 * every request on the socket itself: byte order 'B' (most significant byte first: the
 * other order on a little-endian host, a byte-swapped client) or, with --host, 'l'.
 *
 *   atk-swap [--host] sweep S   every request the module wraps, with fields at their
 *                               limits, each followed by a round trip: prints
 *                               "sent=N errors=E alive=1" or "alive=0 at=NAME" (the server
 *                               closed the connection: it died) or "hung=1 at=NAME"
 *   atk-swap [--host] every S   random requests (content and length) of every request
 *                               listed on stdin ("EXTENSION OPCODE NAME"), each followed
 *                               by a round trip (CS_SWEEP_SEED, CS_SWEEP_K): "requests=N
 *                               kinds=N absent=N alive=1" or "alive=0 at=EXT:NAME"
 *   atk-swap [--host] read S    reads the secure window S every way the module guards:
 *                               root=, win=, copy= (red pixels read), title= (bytes of
 *                               S's WM_NAME), untag= (error code of rewriting its tag, 0 if
 *                               it worked), tag= (the tag's value after), namepix=, record=,
 *                               dbe= (error codes)
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int fd = -1, msb = 1;
static unsigned seq;
static uint32_t base, mask, root_win, root_visual, next_id;
static int root_depth, sw, sh, image_lsb;
static const char *cur = "setup";

/* ---- wire ---- */

static void
fail(const char *what)
{
    printf("%s at=%s\n", what, cur);
    fflush(stdout);
    exit(1);
}

static void
p16(uint8_t *b, int off, unsigned v)
{
    if (msb) {
        b[off] = (uint8_t) (v >> 8);
        b[off + 1] = (uint8_t) v;
    } else {
        b[off] = (uint8_t) v;
        b[off + 1] = (uint8_t) (v >> 8);
    }
}

static void
p32(uint8_t *b, int off, uint32_t v)
{
    if (msb) {
        p16(b, off, v >> 16);
        p16(b, off + 2, v & 0xffff);
    } else {
        p16(b, off, v & 0xffff);
        p16(b, off + 2, v >> 16);
    }
}

static unsigned
g16(const uint8_t *b, int off)
{
    return msb ? (unsigned) (b[off] << 8 | b[off + 1]) : (unsigned) (b[off] | b[off + 1] << 8);
}

static uint32_t
g32(const uint8_t *b, int off)
{
    return msb ? (uint32_t) g16(b, off) << 16 | g16(b, off + 2)
               : (uint32_t) g16(b, off) | (uint32_t) g16(b, off + 2) << 16;
}

static void
put(const void *buf, size_t len)
{
    const uint8_t *p = buf;

    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            fail("alive=0");
        p += n;
        len -= (size_t) n;
    }
}

/* reads exactly len bytes; 10 s without a byte is a hung server */
static void
get(void *buf, size_t len)
{
    uint8_t *p = buf;

    while (len) {
        struct pollfd pf = { fd, POLLIN, 0 };
        ssize_t n;
        int r = poll(&pf, 1, 10000);
        if (r == 0)
            fail("hung=1");
        if (r < 0 && errno == EINTR)
            continue;
        n = read(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            fail("alive=0");
        p += n;
        len -= (size_t) n;
    }
}

/* Sends a request of `words` 4-byte units (the length field is written here). */
static unsigned
req(uint8_t *b, int words)
{
    p16(b, 2, (unsigned) words);
    put(b, (size_t) words * 4);
    return ++seq & 0xffff;
}

struct reply {
    int error;          /* X error code, 0 for a reply */
    uint8_t *data;      /* the whole reply: 32 bytes + 4 * length */
    size_t len;
};

/* Waits for the reply or error of request `s`; events and other requests' errors are
 * skipped (errors of void requests before it are counted). */
static long nerrors;

static struct reply
wait_for(unsigned s)
{
    struct reply r = { 0, NULL, 0 };

    for (;;) {
        uint8_t h[32];
        unsigned rs;
        get(h, 32);
        rs = g16(h, 2);
        if (h[0] == 0) {
            nerrors++;
            if (rs == s) {
                r.error = h[1] ? h[1] : 256;
                return r;
            }
            continue;
        }
        if (h[0] != 1)
            continue;   /* an event */
        {
            size_t extra = (size_t) g32(h, 4) * 4;
            uint8_t *d = malloc(32 + extra);
            if (!d) {
                printf("error=out-of-memory\n");
                exit(2);
            }
            memcpy(d, h, 32);
            if (extra)
                get(d + 32, extra);
            if (rs == s) {
                r.data = d;
                r.len = 32 + extra;
                return r;
            }
            free(d);
        }
    }
}

/* A round trip (GetInputFocus): every earlier request has been handled. */
static void
sync_(void)
{
    uint8_t b[4] = { 43, 0 };
    struct reply r = wait_for(req(b, 1));
    free(r.data);
}

/* Error code of a void request, 0 when it succeeded. */
static int
checked(uint8_t *b, int words)
{
    unsigned s = req(b, words);
    long before = nerrors;
    uint8_t g[4] = { 43, 0 };
    unsigned sy = req(g, 1);
    for (;;) {
        uint8_t h[32];
        get(h, 32);
        if (h[0] == 0) {
            nerrors++;
            if (g16(h, 2) == s)
                return h[1];
            continue;
        }
        if (h[0] == 1) {
            size_t extra = (size_t) g32(h, 4) * 4;
            uint8_t *d = malloc(extra + 1);
            if (extra)
                get(d, extra);
            free(d);
            if (g16(h, 2) == sy)
                return nerrors > before ? -1 : 0;
        }
    }
}

static void
connect_(void)
{
    const char *disp = getenv("DISPLAY");
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    uint8_t setup[12] = { 0 }, h[8];
    uint8_t *d;
    size_t extra;
    int vlen, nformats;
    size_t off;

    if (!disp || disp[0] != ':') {
        printf("error=DISPLAY must be :N\n");
        exit(2);
    }
    snprintf(a.sun_path, sizeof(a.sun_path), "/tmp/.X11-unix/X%d", atoi(disp + 1));
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *) &a, sizeof(a)) < 0) {
        printf("error=cannot connect to %s\n", a.sun_path);
        exit(2);
    }
    setup[0] = msb ? 'B' : 'l';
    p16(setup, 2, 11);
    p16(setup, 4, 0);
    put(setup, 12);
    get(h, 8);
    if (h[0] != 1) {
        printf("error=setup refused (status %d)\n", h[0]);
        exit(2);
    }
    extra = (size_t) g16(h, 6) * 4;
    d = malloc(extra);
    get(d, extra);
    base = g32(d, 4);
    mask = g32(d, 8);
    vlen = (int) g16(d, 16);
    image_lsb = d[22] == 0;    /* image-byte-order: pixels come in the server's order */
    nformats = d[21];
    off = 32 + (size_t) ((vlen + 3) & ~3) + (size_t) nformats * 8;
    root_win = g32(d, off);
    sw = (int) g16(d, off + 20);
    sh = (int) g16(d, off + 22);
    root_visual = g32(d, off + 32);
    root_depth = d[off + 38];
    free(d);
    next_id = 1;
}

static uint32_t
new_id(void)
{
    return base | (next_id++ & mask);
}

static uint32_t
intern(const char *name)
{
    uint8_t b[64] = { 16, 0 };
    size_t n = strlen(name);
    struct reply r;
    uint32_t a;

    p16(b, 4, (unsigned) n);
    memcpy(b + 8, name, n);
    r = wait_for(req(b, (int) (2 + (n + 3) / 4)));
    a = r.data ? g32(r.data, 8) : 0;
    free(r.data);
    return a;
}

/* major opcode of an extension, 0 when the server does not have it */
static int
ext(const char *name)
{
    uint8_t b[64] = { 98, 0 };
    size_t n = strlen(name);
    struct reply r;
    int major = 0;

    p16(b, 4, (unsigned) n);
    memcpy(b + 8, name, n);
    r = wait_for(req(b, (int) (2 + (n + 3) / 4)));
    if (r.data && r.data[8])
        major = r.data[9];
    free(r.data);
    return major;
}

/* ---- requests ---- */

static uint32_t
create_window(uint32_t parent, int x, int y, int w, int h, int bg_none)
{
    uint8_t b[40] = { 1, 0 };
    uint32_t id = new_id();

    b[1] = 0;   /* depth CopyFromParent */
    p32(b, 4, id);
    p32(b, 8, parent);
    p16(b, 12, (unsigned) x);
    p16(b, 14, (unsigned) y);
    p16(b, 16, (unsigned) w);
    p16(b, 18, (unsigned) h);
    p16(b, 20, 0);
    p16(b, 22, 1);      /* InputOutput */
    p32(b, 24, 0);      /* visual CopyFromParent */
    p32(b, 28, 1);      /* CWBackPixmap */
    p32(b, 32, bg_none ? 0 : 1);   /* None, or ParentRelative */
    req(b, 9);
    return id;
}

static void
simple(int major, uint32_t id)
{
    uint8_t b[8] = { (uint8_t) major, 0 };
    p32(b, 4, id);
    req(b, 2);
}

static void
change_property(uint32_t w, uint32_t prop, uint32_t type, int format, int mode, uint32_t n)
{
    size_t bytes = (size_t) n * (size_t) (format / 8);
    size_t words = 6 + (bytes + 3) / 4;
    uint8_t *b = calloc(words, 4);

    b[0] = 18;
    b[1] = (uint8_t) mode;
    p32(b, 4, w);
    p32(b, 8, prop);
    p32(b, 12, type);
    b[16] = (uint8_t) format;
    p32(b, 20, n);
    memset(b + 24, 0x41, bytes);
    if (format == 32 && n >= 1)
        p32(b, 24, 0);
    req(b, (int) words);
    free(b);
}

static struct reply
get_property(uint32_t w, uint32_t prop, int del, uint32_t off, uint32_t len)
{
    uint8_t b[24] = { 20, (uint8_t) del };
    p32(b, 4, w);
    p32(b, 8, prop);
    p32(b, 12, 0);      /* AnyPropertyType */
    p32(b, 16, off);
    p32(b, 20, len);
    return wait_for(req(b, 6));
}

static void
rotate(uint32_t w, const uint32_t *atoms, int n, int delta)
{
    uint8_t b[64] = { 114, 0 };
    int i;
    p32(b, 4, w);
    p16(b, 8, (unsigned) n);
    p16(b, 10, (unsigned) delta);
    for (i = 0; i < n; i++)
        p32(b, 12 + 4 * i, atoms[i]);
    req(b, 3 + n);
}

static uint32_t
create_pixmap(int w, int h)
{
    uint8_t b[16] = { 53, (uint8_t) root_depth };
    uint32_t id = new_id();
    p32(b, 4, id);
    p32(b, 8, root_win);
    p16(b, 12, (unsigned) w);
    p16(b, 14, (unsigned) h);
    req(b, 4);
    return id;
}

/* a GC on drawable d with subwindow-mode IncludeInferiors */
static uint32_t
create_gc(uint32_t d)
{
    uint8_t b[20] = { 55, 0 };
    uint32_t id = new_id();
    p32(b, 4, id);
    p32(b, 8, d);
    p32(b, 12, 1u << 15);      /* GCSubwindowMode */
    p32(b, 16, 1);              /* IncludeInferiors */
    req(b, 5);
    return id;
}

static void
copy(int major, uint32_t src, uint32_t dst, uint32_t gc, int sx, int sy, int dx, int dy, int w,
     int h)
{
    uint8_t b[32] = { (uint8_t) major, 0 };
    p32(b, 4, src);
    p32(b, 8, dst);
    p32(b, 12, gc);
    p16(b, 16, (unsigned) sx);
    p16(b, 18, (unsigned) sy);
    p16(b, 20, (unsigned) dx);
    p16(b, 22, (unsigned) dy);
    p16(b, 24, (unsigned) w);
    p16(b, 26, (unsigned) h);
    if (major == 63) {
        p32(b, 28, 1);          /* bit plane */
        req(b, 8);
    } else {
        req(b, 7);
    }
}

static unsigned
get_image_req(uint32_t d, int x, int y, int w, int h)
{
    uint8_t b[20] = { 73, 2 };  /* ZPixmap */
    p32(b, 4, d);
    p16(b, 8, (unsigned) x);
    p16(b, 10, (unsigned) y);
    p16(b, 12, (unsigned) w);
    p16(b, 14, (unsigned) h);
    p32(b, 16, 0xffffffff);
    return req(b, 5);
}

/* red pixels in a 32-bpp ZPixmap reply (the client's byte order); -code on an error */
static long
red_pixels(uint32_t d, int x, int y, int w, int h)
{
    struct reply r = wait_for(get_image_req(d, x, y, w, h));
    long n = 0;
    size_t i;

    if (!r.data)
        return -r.error;
    for (i = 32; i + 4 <= r.len; i += 4) {
        const uint8_t *p = r.data + i;
        uint32_t v = image_lsb ? (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16
                               : (uint32_t) p[3] | (uint32_t) p[2] << 8 | (uint32_t) p[1] << 16;
        if (v == 0xff0000)
            n++;
    }
    free(r.data);
    return n;
}

/* an extension request of `words` units: major, minor, then 32-bit fields */
static int
ext_req(int major, int minor, const uint32_t *f, int n)
{
    uint8_t b[64] = { (uint8_t) major, (uint8_t) minor };
    int i;
    for (i = 0; i < n; i++)
        p32(b, 4 + 4 * i, f[i]);
    return checked(b, 1 + n);
}

/* ---- the sweep: every request the module wraps, each followed by a round trip ---- */

static long sent;
#define STEP(name) do { cur = (name); sent++; } while (0)
#define ROUND() sync_()

static int
sweep(uint32_t s)
{
    uint32_t own, pix, gc, sec = intern("_CAPTURE_SHIELD_SECURE"), pol = intern("_CAPTURE_SHIELD_POLICY");
    uint32_t wm_name = 39, string = 31, cardinal = 6;
    uint32_t atoms[3];
    int render = ext("RENDER"), comp = ext("Composite"), record = ext("RECORD");
    int shm = ext("MIT-SHM"), dbe = ext("DOUBLE-BUFFER"), dri2 = ext("DRI2"), dri3 = ext("DRI3");
    int i, geo[][4] = { { 0, 0, 200, 200 }, { -32768, -32768, 65535, 65535 },
                        { 32767, 32767, 65535, 65535 }, { -1, -1, 1, 1 }, { 0, 0, 0, 0 } };

    STEP("CreateWindow");
    own = create_window(root_win, 100, 100, 200, 200, 1);
    ROUND();
    STEP("CreateWindow(extreme)");
    create_window(root_win, -32768, -32768, 65535, 65535, 1);
    create_window(root_win, 32767, 32767, 1, 1, 0);
    ROUND();
    STEP("MapWindow");
    simple(8, own);
    ROUND();
    STEP("ReparentWindow(own into secure)");
    {
        uint8_t b[16] = { 7, 0 };
        p32(b, 4, own);
        p32(b, 8, s);
        p16(b, 12, 10);
        p16(b, 14, 10);
        req(b, 4);
        ROUND();
        STEP("ReparentWindow(secure into own)");
        p32(b, 4, s);
        p32(b, 8, own);
        req(b, 4);
        ROUND();
        STEP("ReparentWindow(back)");
        p32(b, 4, own);
        p32(b, 8, root_win);
        p16(b, 12, 0x8000);
        p16(b, 14, 0x7fff);
        req(b, 4);
        ROUND();
    }
    for (i = 0; i < 3; i++) {
        int fmt = i == 0 ? 8 : i == 1 ? 16 : 32;
        STEP("ChangeProperty(secure window, title)");
        change_property(s, wm_name, string, fmt, 0, 24);
        ROUND();
        STEP("ChangeProperty(own, long)");
        change_property(own, wm_name, string, fmt, 2, 4000);
        ROUND();
        STEP("ChangeProperty(tag)");
        change_property(s, sec, cardinal, fmt, 0, 1);
        change_property(s, pol, cardinal, fmt, 1, 1);
        change_property(own, sec, cardinal, fmt, 0, 1);
        change_property(own, pol, cardinal, fmt, 2, 1);
        ROUND();
        STEP("ChangeProperty(zero length)");
        change_property(s, sec, cardinal, fmt, 0, 0);
        change_property(root_win, intern("_CAPTURE_SHIELD_GRANT"), cardinal, fmt, 0, 1);
        ROUND();
    }
    STEP("GetProperty");
    free(get_property(s, wm_name, 0, 0, 1000).data);
    free(get_property(s, wm_name, 0, 0xffffffff, 0xffffffff).data);
    free(get_property(s, sec, 1, 0, 1).data);
    free(get_property(s, pol, 1, 0, 0xffffffff).data);
    free(get_property(own, wm_name, 1, 0, 0xffffffff).data);
    free(get_property(own, sec, 1, 2, 1).data);
    STEP("ListProperties");
    {
        uint8_t b[8] = { 21, 0 };
        p32(b, 4, s);
        free(wait_for(req(b, 2)).data);
        p32(b, 4, root_win);
        free(wait_for(req(b, 2)).data);
    }
    STEP("DeleteProperty");
    {
        uint8_t b[12] = { 19, 0 };
        p32(b, 4, s);
        p32(b, 8, sec);
        req(b, 3);
        p32(b, 8, wm_name);
        req(b, 3);
        p32(b, 4, own);
        req(b, 3);
        ROUND();
    }
    STEP("RotateProperties");
    atoms[0] = wm_name;
    atoms[1] = sec;
    atoms[2] = pol;
    rotate(s, atoms, 2, 1);
    rotate(s, atoms, 3, 0x8000);
    change_property(own, sec, cardinal, 32, 0, 1);
    change_property(own, wm_name, string, 8, 0, 3);
    rotate(own, atoms, 2, 0xffff);
    rotate(own, atoms, 0, 1);
    ROUND();
    pix = create_pixmap(sw, sh);
    gc = create_gc(pix);
    for (i = 0; i < (int) (sizeof(geo) / sizeof(geo[0])); i++) {
        STEP("CopyArea");
        copy(62, root_win, pix, gc, geo[i][0], geo[i][1], 0, 0, geo[i][2], geo[i][3]);
        copy(62, s, pix, gc, geo[i][0], geo[i][1], geo[i][0], geo[i][1], geo[i][2], geo[i][3]);
        copy(62, s, own, gc, 0, 0, 0, 0, geo[i][2], geo[i][3]);
        ROUND();
        STEP("CopyPlane");
        copy(63, root_win, pix, gc, geo[i][0], geo[i][1], 0, 0, geo[i][2], geo[i][3]);
        copy(63, s, pix, gc, 0, 0, geo[i][0], geo[i][1], geo[i][2], geo[i][3]);
        ROUND();
        STEP("GetImage");
        red_pixels(s, geo[i][0], geo[i][1], geo[i][2] > 300 ? 300 : geo[i][2],
                   geo[i][3] > 300 ? 300 : geo[i][3]);
        red_pixels(root_win, geo[i][0], geo[i][1], geo[i][2] > 300 ? 300 : geo[i][2],
                   geo[i][3] > 300 ? 300 : geo[i][3]);
    }
    if (render) {
        uint32_t f[8] = { 0, 0, 0, 0, 0, 0, 0, 0 };
        STEP("RENDER");
        f[0] = 0;
        f[1] = 11;
        ext_req(render, 0, f, 2);                       /* QueryVersion */
        f[0] = new_id(); f[1] = s; f[2] = 0; f[3] = 0;
        ext_req(render, 4, f, 4);                       /* CreatePicture, no format */
        f[0] = 3; f[1] = f[0]; f[2] = 0; f[3] = 0; f[4] = 0; f[5] = 0; f[6] = 0; f[7] = 0;
        ext_req(render, 8, f, 8);                       /* Composite of no pictures */
        f[0] = 3; f[1] = 0x11; f[2] = 0x22; f[3] = 0; f[4] = 0;
        for (i = 10; i <= 13; i++)
            ext_req(render, i, f, 5);                   /* Trapezoids .. TriFan */
        ext_req(render, 27, f, 4);                      /* CreateCursor */
    }
    if (comp) {
        uint32_t f[2];
        STEP("Composite");
        f[0] = 0; f[1] = 4;
        ext_req(comp, 0, f, 2);
        f[0] = s; f[1] = new_id();
        ext_req(comp, 6, f, 2);                         /* NameWindowPixmap of S */
        f[0] = own; f[1] = 0x00000001;
        ext_req(comp, 1, f, 2);                         /* RedirectWindow own, manual */
        f[0] = own; f[1] = new_id();
        ext_req(comp, 6, f, 2);
        f[0] = root_win;
        ext_req(comp, 7, f, 1);                         /* GetOverlayWindow */
    }
    if (record) {
        uint32_t f[8] = { 0 };
        STEP("RECORD");
        f[0] = 1; f[1] = 13;
        ext_req(record, 0, f, 2);
        f[0] = new_id(); f[1] = 0; f[2] = 0; f[3] = 0;
        ext_req(record, 1, f, 4);                       /* CreateContext */
        f[0] = new_id();
        ext_req(record, 5, f, 1);                       /* EnableContext of no context */
    }
    if (shm) {
        uint32_t f[6] = { s, 0, 0x00c800c8, 0xffffffff, 0x02000000, 0 };
        STEP("MIT-SHM");
        ext_req(shm, 0, f, 0);
        ext_req(shm, 4, f, 6);                          /* GetImage into no segment */
    }
    if (dbe) {
        uint32_t f[3] = { s, 0, 0 };
        STEP("DOUBLE-BUFFER");
        f[1] = new_id();
        ext_req(dbe, 1, f, 3);                          /* AllocateBackBufferName on S */
        f[0] = own;
        ext_req(dbe, 1, f, 3);
    }
    if (dri2) {
        /* QueryVersion only: on a screen without DRI2 (the dummy driver) stock Xorg 21.1.7
         * aborts on any DRI2 request that names a drawable (an assertion in
         * dixLookupPrivate: the DRI2 screen key was never registered), module or not */
        uint32_t f[2] = { 1, 4 };
        STEP("DRI2");
        ext_req(dri2, 0, f, 2);
    }
    if (dri3) {
        uint32_t f[2] = { s, 0 };
        STEP("DRI3");
        ext_req(dri3, 4, f, 1);                         /* BufferFromPixmap */
    }
    cur = "end";
    ROUND();
    printf("sent=%ld errors=%ld alive=1 render=%d composite=%d record=%d shm=%d dbe=%d "
           "dri2=%d dri3=%d\n", sent, nerrors, render > 0, comp > 0, record > 0, shm > 0,
           dbe > 0, dri2 > 0, dri3 > 0);
    return 0;
}

/* ---- reads of S, each as the module guards it ---- */

static int
read_(uint32_t s)
{
    uint32_t sec = intern("_CAPTURE_SHIELD_SECURE"), pix, gc;
    long rootr, winr, copyr;
    int untag, tag = -1, namepix = -1, record_ = -1, dbe_ = -1, title = 0, comp, record, dbe;
    struct reply r;

    rootr = red_pixels(root_win, 0, 0, sw, sh);
    winr = red_pixels(s, 0, 0, 200, 200);
    pix = create_pixmap(sw, sh);
    gc = create_gc(pix);
    {
        /* black first: a new pixmap's memory is not cleared */
        uint8_t b[20] = { 70, 0 };
        p32(b, 4, pix);
        p32(b, 8, gc);
        p16(b, 16, (unsigned) sw);
        p16(b, 18, (unsigned) sh);
        req(b, 5);
    }
    copy(62, root_win, pix, gc, 0, 0, 0, 0, sw, sh);
    copyr = red_pixels(pix, 0, 0, sw, sh);
    r = get_property(s, 39, 0, 0, 1000);
    if (r.data)
        title = (int) g32(r.data, 16) * (r.data[1] / 8);
    free(r.data);
    {
        uint8_t b[28] = { 18, 0 };
        p32(b, 4, s);
        p32(b, 8, sec);
        p32(b, 12, 6);
        b[16] = 32;
        p32(b, 20, 1);
        p32(b, 24, 0);
        untag = checked(b, 7);
    }
    r = get_property(s, sec, 0, 0, 1);
    if (r.data && g32(r.data, 16) >= 1)
        tag = (int) g32(r.data, 32);
    free(r.data);
    if ((record = ext("RECORD"))) {
        uint32_t f[4] = { new_id(), 0, 0, 0 };
        record_ = ext_req(record, 1, f, 4);
    }
    if ((dbe = ext("DOUBLE-BUFFER"))) {
        uint32_t f[3] = { s, new_id(), 0 };
        dbe_ = ext_req(dbe, 1, f, 3);
    }
    if ((comp = ext("Composite"))) {
        /* last: redirecting S's parent changes how the server draws it */
        uint32_t f[2] = { root_win, 0 };
        ext_req(comp, 2, f, 2);                 /* RedirectSubwindows(root, automatic) */
        f[0] = s;
        f[1] = new_id();
        namepix = ext_req(comp, 6, f, 2);
    }
    printf("root=%ld win=%ld copy=%ld title=%d untag=%d tag=%d namepix=%d record=%d dbe=%d\n",
           rootr, winr, copyr, title, untag, tag, namepix, record_, dbe_);
    return 0;
}

/* ---- every: random requests of every request the inventory lists ---- */

static uint64_t rs_state;

static uint32_t
rnd32(void)
{
    rs_state ^= rs_state << 13;
    rs_state ^= rs_state >> 7;
    rs_state ^= rs_state << 17;
    return (uint32_t) (rs_state >> 11);
}

/* Lines "EXTENSION OPCODE NAME" on stdin (core: extension "core"): for each request the
 * server offers, K requests of random content and length (1 to 24 units, and 1, 2 and
 * the longest with all bytes 0xff), each followed by a round trip. Prints "requests=N
 * kinds=N absent=N alive=1", or "alive=0 at=NAME" / "hung=1 at=NAME" (fail()). Seed and K:
 * CS_SWEEP_SEED, CS_SWEEP_K. */
static int
every(void)
{
    char line[256], extname[128], name[128], last_ext[128] = "";
    int opcode, major = 0, k, K = getenv("CS_SWEEP_K") ? atoi(getenv("CS_SWEEP_K")) : 8;
    long nreq = 0, kinds = 0, absent = 0;
    static uint8_t b[24 * 4];

    rs_state = getenv("CS_SWEEP_SEED") ? strtoull(getenv("CS_SWEEP_SEED"), NULL, 0) : 20261207;
    if (!rs_state)
        rs_state = 1;
    while (fgets(line, sizeof(line), stdin)) {
        if (sscanf(line, "%127s %d %127s", extname, &opcode, name) != 3)
            continue;
        if (strcmp(extname, last_ext)) {
            snprintf(last_ext, sizeof(last_ext), "%s", extname);
            major = strcmp(extname, "core") ? ext(extname) : -1;
        }
        if (major == 0) {
            absent++;
            continue;
        }
        kinds++;
        for (k = 0; k < K; k++) {
            int words, i;
            static char what[300];

            snprintf(what, sizeof(what), "%s:%s", extname, name);
            cur = what;
            words = k == 0 ? 1 : k == 1 ? 2 : k == 2 ? 24 : 1 + (int) (rnd32() % 24);
            for (i = 0; i < words * 4; i++)
                b[i] = k == 2 ? 0xff : (uint8_t) rnd32();
            b[0] = (uint8_t) (major < 0 ? opcode : major);
            if (major > 0)
                b[1] = (uint8_t) opcode;
            req(b, words);
            nreq++;
            sync_();
        }
    }
    cur = "end";
    printf("requests=%ld kinds=%ld absent=%ld alive=1\n", nreq, kinds, absent);
    return 0;
}

int
main(int argc, char **argv)
{
    int a = 1;
    uint32_t s;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (a < argc && !strcmp(argv[a], "--host")) {
        uint16_t one = 1;
        msb = *(uint8_t *) &one == 0;   /* the host's own order */
        a++;
    } else {
        uint16_t one = 1;
        msb = *(uint8_t *) &one == 1;   /* the other order */
    }
    if (argc - a != 2) {
        fprintf(stderr, "usage: atk-swap [--host] sweep|read WINDOW\n");
        return 64;
    }
    s = (uint32_t) strtoul(argv[a + 1], NULL, 0);
    connect_();
    if (!strcmp(argv[a], "sweep"))
        return sweep(s);
    if (!strcmp(argv[a], "read"))
        return read_(s);
    if (!strcmp(argv[a], "every"))
        return every();
    fprintf(stderr, "usage: atk-swap [--host] sweep|read WINDOW\n");
    return 64;
}
