/* CaptureShield Xorg module: the screen's GetImage (censor mode: the secure area of a read
 * black; the backstop of every path that reads through it) and GetImage and ShmGetImage
 * refused in deny mode. */
#include "censor-int.h"
#include "cs-int.h"

/* per screen: where wrap.c keeps the screen's previous GetImage */
DevPrivateKeyRec cs_getimage_key_rec;
#define CS_ORIG_GETIMAGE(s) \
    (*(GetImageProcPtr *) dixLookupPrivate(&(s)->devPrivates, &cs_getimage_key_rec))
/* ---- screen GetImage: the backstop for every path that reads through it ---- */

static void
cs_blank_z(char *buf, int stride, int bpp, BoxPtr b)
{
    int y;

    for (y = b->y1; y < b->y2; y++) {
        char *line = buf + (size_t) y * stride;
        if (bpp >= 8)
            memset(line + (size_t) b->x1 * (bpp / 8), 0, (size_t) (b->x2 - b->x1) * (bpp / 8));
        else
            memset(line, 0, stride);   /* sub-byte pixels: blank the whole line */
    }
}

static void
cs_blank_xy(char *buf, int stride, BoxPtr b)
{
    int x, y;

    for (y = b->y1; y < b->y2; y++) {
        unsigned char *line = (unsigned char *) buf + (size_t) y * stride;
        for (x = b->x1; x < b->x2; x++) {
            if (screenInfo.bitmapBitOrder == LSBFirst)
                line[x >> 3] &= ~(1 << (x & 7));
            else
                line[x >> 3] &= ~(0x80 >> (x & 7));
        }
    }
}

/* Bytes pScreen->GetImage writes for a w x h image: ZPixmap lines padded for the depth;
 * XYPixmap one bitmap per plane in planemask (miGetImage). */
static size_t
cs_image_len(DrawablePtr draw, int w, int h, unsigned int format, unsigned long planemask,
             size_t *plane_len)
{
    unsigned long planes = planemask;
    size_t n = 0;

    if (format == ZPixmap) {
        *plane_len = (size_t) PixmapBytePad(w, draw->depth) * h;
        return *plane_len;
    }
    if (draw->depth < 8 * (int) sizeof(planes))
        planes &= (1UL << draw->depth) - 1;
    *plane_len = (size_t) BitmapBytePad(w) * h;
    for (; planes; planes &= planes - 1)
        n++;
    return n * *plane_len;
}

/* Blanks the secret part of what a read of draw at sx,sy (w x h) put into buf. */
static void
cs_blank_image(DrawablePtr draw, int sx, int sy, int w, unsigned int format, char *buf,
               size_t len, size_t plane_len, RegionPtr secret)
{
    int i, n = RegionNumRects(secret);
    BoxPtr b = RegionRects(secret);
    int stride = format == ZPixmap ? PixmapBytePad(w, draw->depth) : BitmapBytePad(w);
    size_t p;

    for (i = 0; i < n; i++) {
        BoxRec r = { b[i].x1 - sx, b[i].y1 - sy, b[i].x2 - sx, b[i].y2 - sy };
        if (format == ZPixmap)
            cs_blank_z(buf, stride, BitsPerPixel(draw->depth), &r);
        else
            for (p = 0; plane_len && p + plane_len <= len; p += plane_len)
                cs_blank_xy(buf + p, stride, &r);
    }
}

/* The secret part is found before the read. When there is one, the real read goes into a
 * private buffer, is blanked there and only then copied to `out`: `out` can be memory the
 * client sees while the request runs (ShmGetImage writes into the client's segment), so
 * no secret pixel is ever written there, not even for a moment. No buffer: all black. */
static void
cs_GetImage_censored(DrawablePtr draw, int sx, int sy, int w, int h, unsigned int format,
                     unsigned long planemask, char *out);

static void __attribute__((noinline))
cs_GetImage_slow(DrawablePtr draw, int sx, int sy, int w, int h, unsigned int format,
                 unsigned long planemask, char *out)
{
    ScreenPtr s = draw->pScreen;

    /* the box misses every secret pixel, whoever reads (no client looked up, no region) */
    if (!cs_rule_on(CS_RULE_GETIMAGE) || cs_read_clear(draw, sx, sy, w, h)) {
        CS_SCREEN_PROLOGUE(s, GetImage, CS_ORIG_GETIMAGE(s));
        s->GetImage(draw, sx, sy, w, h, format, planemask, out);
        CS_SCREEN_REWRAP(s, GetImage, cs_GetImage);
        return;
    }
    cs_GetImage_censored(draw, sx, sy, w, h, format, planemask, out);
}

void
cs_GetImage(DrawablePtr draw, int sx, int sy, int w, int h, unsigned int format,
            unsigned long planemask, char *out)
{
    ScreenPtr s = draw->pScreen;

    /* the common case (a box clear of the secret area's extents) inline */
    if (cs_read_clear_fast(draw, sx, sy, w, h) == CS_READ_CLEAR) {
        CS_SCREEN_PROLOGUE(s, GetImage,
                           *(GetImageProcPtr *) cs_priv_ptr(s->devPrivates, &cs_getimage_key_rec));
        s->GetImage(draw, sx, sy, w, h, format, planemask, out);
        CS_SCREEN_REWRAP(s, GetImage, cs_GetImage);
        return;
    }
    cs_GetImage_slow(draw, sx, sy, w, h, format, planemask, out);
}

static void __attribute__((noinline))
cs_GetImage_censored(DrawablePtr draw, int sx, int sy, int w, int h, unsigned int format,
                     unsigned long planemask, char *out)
{
    ScreenPtr s = draw->pScreen;
    ClientPtr client = GetCurrentClient();
    RegionRec secret;
    size_t len = 0, plane_len = 0;
    char *buf = out;
    int hit = 0;

    RegionNull(&secret);
    if (cs_rule_on(CS_RULE_GETIMAGE) && !cs_client_trusted(client) &&
        cs_secret_for_read(client, draw, sx, sy, w, h, &secret)) {
        hit = 1;
        len = cs_image_len(draw, w, h, format, planemask, &plane_len);
        if (cs_rule_on(CS_RULE_BLANKFIRST))
            buf = len ? cs_malloc(len) : NULL;
        if (!buf) {
            memset(out, 0, len);
            goto done;
        }
        if (buf != out)
            memcpy(buf, out, len);      /* a partial planemask keeps what `out` held */
    }
    CS_SCREEN_PROLOGUE(s, GetImage, CS_ORIG_GETIMAGE(s));
    s->GetImage(draw, sx, sy, w, h, format, planemask, buf);
    CS_SCREEN_REWRAP(s, GetImage, cs_GetImage);
    if (hit) {
        cs_blank_image(draw, sx, sy, w, format, buf, len, plane_len, &secret);
        if (buf != out) {
            memcpy(out, buf, len);
            free(buf);
        }
    }
done:
    /* one event per request, not per strip or plane */
    if (hit && cs_report_once(client))
        cs_report(client, draw->id, CS_KIND_CENSORED);
    RegionUninit(&secret);
}

/* ---- deny mode: GetImage and ShmGetImage refused before any reply ---- */

static int
cs_deny_read(ClientPtr c, XID id, int x, int y, int w, int h)
{
    DrawablePtr draw;
    RegionRec secret;
    int hit;

    if (dixLookupDrawable(&draw, id, c, 0, DixReadAccess) != Success)
        return Success;         /* the real request reports the error */
    RegionNull(&secret);
    hit = cs_secret_for_read(c, draw, x, y, w, h, &secret);
    RegionUninit(&secret);
    if (!hit)
        return Success;
    c->errorValue = id;
    cs_report(c, id, CS_KIND_DENIED);
    return BadAccess;
}

int
cs_ProcGetImage(ClientPtr c)
{
    if (c->req_len >= 5 && cs_cfg.mode == CS_MODE_DENY && cs_rule_on(CS_RULE_GETIMAGE) &&
        !cs_client_trusted(c)) {
        int r = cs_deny_read(c, g32(c, 4), (INT16) g16(c, 8), (INT16) g16(c, 10),
                             g16(c, 12), g16(c, 14));
        if (r != Success)
            return r;
    }
    return cs_call_orig(c);
}

int
cs_ProcShm(ClientPtr c)
{
    if (g8(c, 1) == X_ShmGetImage && c->req_len >= 8 && cs_cfg.mode == CS_MODE_DENY &&
        cs_rule_on(CS_RULE_GETIMAGE) && !cs_client_trusted(c)) {
        int r = cs_deny_read(c, g32(c, 4), (INT16) g16(c, 8), (INT16) g16(c, 10),
                             g16(c, 12), g16(c, 14));
        if (r != Success)
            return r;
    }
    return cs_call_orig(c);
}
