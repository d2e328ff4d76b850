/* CaptureShield Xorg module: blanks or refuses reads of secure pixels (GetImage, copies, RENDER). */
#include "censor-int.h"

/* per screen: where wrap.c keeps the screen's previous GetImage */
DevPrivateKeyRec cs_getimage_key_rec;
#define CS_ORIG_GETIMAGE(s) \
    (*(GetImageProcPtr *) dixLookupPrivate(&(s)->devPrivates, &cs_getimage_key_rec))
int (*cs_orig_proc[256])(ClientPtr);
int (*cs_orig_sproc[256])(ClientPtr);
static int cs_shm_major = -1, cs_render_major = -1;
RESTYPE cs_picture_type;

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

/* dixLookupPrivate of a pointer-sized screen private (a key registered with size 0 at
 * init, which fails without it), without its size test and assertions: 10 instructions
 * less in GetImage's common case, which looks up two */
static inline void *
cs_priv_ptr(PrivatePtr privates, DevPrivateKey key)
{
    return *(void **) ((char *) privates + key->offset);
}

/* 1: the box x,y,w,h of `draw` is a window read from the framebuffer (no redirected
 * ancestor) while windows are secure, the secret area is computed and the box misses it
 * (it is empty, or the box misses its extents): no client gets a secret pixel from it (what cs_read_clear answers 1 to first).
 * 0: not known here, ask cs_read_clear. Inline and without a call, so that GetImage's
 * common case costs no stack frame and no call but the screen's own GetImage. */
static inline int
cs_read_clear_quick(DrawablePtr draw, int x, int y, int w, int h)
{
    WindowPtr win;
    struct cs_screen_head *cs;
    const BoxRec *e;

    if (w <= 0 || h <= 0 || cs_cfg.paused || draw->type != DRAWABLE_WINDOW || !cs_nsecure)
        return 0;
    for (win = (WindowPtr) draw; win->parent; win = win->parent)
        if (win->redirectDraw != RedirectDrawNone)
            return 0;
    cs = cs_priv_ptr(draw->pScreen->devPrivates, &cs_screen_key_rec);
    if (cs->dirty)
        return 0;
    if (!RegionNotEmpty(&cs->secret))
        return 1;
    x += draw->x;
    y += draw->y;
    /* in int; the extents lie in the 16-bit range */
    e = RegionExtents(&cs->secret);
    return x >= e->x2 || x + w <= e->x1 || y >= e->y2 || y + h <= e->y1;
}

static void __attribute__((noinline))
cs_GetImage_slow(DrawablePtr draw, int sx, int sy, int w, int h, unsigned int format,
                 unsigned long planemask, char *out)
{
    ScreenPtr s = draw->pScreen;

    /* the box misses every secret pixel, whoever reads (no client looked up, no region) */
    if (!cs_rule_on(CS_RULE_GETIMAGE) || cs_read_clear(draw, sx, sy, w, h)) {
        s->GetImage = CS_ORIG_GETIMAGE(s);
        s->GetImage(draw, sx, sy, w, h, format, planemask, out);
        s->GetImage = cs_GetImage;
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
    if (cs_read_clear_quick(draw, sx, sy, w, h)) {
        s->GetImage = *(GetImageProcPtr *) cs_priv_ptr(s->devPrivates, &cs_getimage_key_rec);
        s->GetImage(draw, sx, sy, w, h, format, planemask, out);
        s->GetImage = cs_GetImage;
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
    s->GetImage = CS_ORIG_GETIMAGE(s);
    s->GetImage(draw, sx, sy, w, h, format, planemask, buf);
    s->GetImage = cs_GetImage;
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

/* ---- CopyArea / CopyPlane: blank the copied-in secure area in the destination ---- */

/* The blanking of a copy, made ready before the copy runs: when memory runs out the copy
 * is refused (BadAlloc) instead of leaving the secret pixels in the destination. */
struct cs_blank {
    DrawablePtr dst;            /* NULL: nothing to blank */
    GCPtr scratch;
    xRectangle *rects;
    int n;
};

static int
cs_blank_prepare(ClientPtr c, XID dst_id, XID gc_id, RegionPtr rgn, struct cs_blank *bl)
{
    DrawablePtr dst;
    GCPtr gc;
    int i, n = RegionNumRects(rgn), status;
    BoxPtr b = RegionRects(rgn);
    ChangeGCVal v[2];

    memset(bl, 0, sizeof(*bl));
    if (dixLookupDrawable(&dst, dst_id, serverClient, 0, DixWriteAccess) != Success ||
        dixLookupGC(&gc, gc_id, serverClient, DixReadAccess) != Success)
        return Success;         /* the real request reports the error */
    /* a copy into the reader's own secure window is blanked like any other: its owner
     * may read it back */
    if (!cs_rule_on(CS_RULE_BLANKFIRST) && dst->type == DRAWABLE_WINDOW &&
        cs_win_sealed((WindowPtr) dst, c))
        return Success;
    bl->rects = cs_malloc(sizeof(xRectangle) * (n ? n : 1));
    if (!bl->rects)
        return BadAlloc;
    /* a private GC: a shared scratch GC would keep the copied clip for its next user */
    bl->scratch = cs_fail_alloc ? NULL : CreateGC(dst, 0, NULL, &status, (XID) 0, serverClient);
    if (!bl->scratch) {
        free(bl->rects);
        bl->rects = NULL;
        return BadAlloc;
    }
    /* the clip copy can fail (memory): the fill is then unclipped, blacker, not lighter */
    CopyGC(gc, bl->scratch, GCSubwindowMode | GCClipMask | GCClipXOrigin | GCClipYOrigin);
    v[0].val = 0;               /* black */
    v[1].val = GXcopy;
    ChangeGC(NullClient, bl->scratch, GCForeground, &v[0]);
    ChangeGC(NullClient, bl->scratch, GCFunction, &v[1]);
    for (i = 0; i < n; i++) {
        bl->rects[i].x = b[i].x1;
        bl->rects[i].y = b[i].y1;
        bl->rects[i].width = b[i].x2 - b[i].x1;
        bl->rects[i].height = b[i].y2 - b[i].y1;
    }
    bl->n = n;
    bl->dst = dst;
    return Success;
}

/* fill (if `fill`) and free */
static void
cs_blank_finish(struct cs_blank *bl, Bool fill)
{
    if (bl->dst && fill) {
        ValidateGC(bl->dst, bl->scratch);
        bl->scratch->ops->PolyFillRect(bl->dst, bl->scratch, bl->n, bl->rects);
    }
    if (bl->scratch)
        FreeGC(bl->scratch, 0);
    free(bl->rects);
}

/* One axis of a copy: the part t in [0, n) for which every coordinate the server derives
 * (s + t and d + t, relative to the drawables and absolute) lies in the 16-bit range, so
 * that no BoxRec in mi (miDoCopy, miHandleExposures) or here wraps. */
static void
cs_clamp_axis(int *s, int *d, int *n, int so, int dorg)
{
    int base[4] = { *s, so + *s, *d, dorg + *d };
    int lo = 0, hi = *n, i;

    for (i = 0; i < 4; i++) {
        lo = max(lo, MINSHORT - base[i]);
        hi = min(hi, MAXSHORT - base[i]);
    }
    if (lo >= hi) {
        *s = *d = *n = 0;
        return;
    }
    *s += lo;
    *d += lo;
    *n = hi - lo;
}

XID cs_last_src_id;
WindowPtr cs_last_src;
/* cs_gen when cs_last_src was found clear (cs_win_clear), 0: not found clear. */
unsigned long cs_last_src_clear;

/* The last window a copy went into (cs_clamp_copy), forgotten in the same way. */
static XID cs_last_dst_id;
static WindowPtr cs_last_dst;

/* The drawable `id` of a copy, from the last source or destination window when it is one
 * of them (a client copying within or between its windows again and again: no resource
 * table walk), else looked up with no client (no XACE hook) and remembered if a window. */
static DrawablePtr cs_copy_lookup(XID id, int is_src);

static inline DrawablePtr
cs_copy_drawable(XID id, int is_src)
{
    if (id == cs_last_src_id && cs_last_src)
        return &cs_last_src->drawable;
    if (id == cs_last_dst_id && cs_last_dst)
        return &cs_last_dst->drawable;
    return cs_copy_lookup(id, is_src);
}

static DrawablePtr __attribute__((noinline))
cs_copy_lookup(XID id, int is_src)
{
    void *p;

    if (dixLookupResourceByClass(&p, id, RC_DRAWABLE, NullClient, DixReadAccess) != Success)
        return NULL;
    if (((DrawablePtr) p)->type == DRAWABLE_WINDOW) {
        if (is_src) {
            cs_last_src_id = id;
            cs_last_src = p;
            cs_last_src_clear = 0;
        } else {
            cs_last_dst_id = id;
            cs_last_dst = p;
        }
    }
    return p;
}

/* A CopyArea or CopyPlane request's fields (CopyPlane's request starts like CopyArea's),
 * decoded once: straight from the request when it is in the server's byte order. */
struct cs_copy_args {
    XID src, dst, gc;
    int sx, sy, dx, dy, w, h;
};

static void
cs_copy_decode(ClientPtr c, struct cs_copy_args *a)
{
    const xCopyAreaReq *r = (const xCopyAreaReq *) c->requestBuffer;

    if (!cs_req_swapped(c)) {
        a->src = r->srcDrawable;
        a->dst = r->dstDrawable;
        a->gc = r->gc;
        a->sx = r->srcX;
        a->sy = r->srcY;
        a->dx = r->dstX;
        a->dy = r->dstY;
        a->w = r->width;
        a->h = r->height;
        return;
    }
    a->src = g32(c, 4);
    a->dst = g32(c, 8);
    a->gc = g32(c, 12);
    a->sx = (INT16) g16(c, 16);
    a->sy = (INT16) g16(c, 18);
    a->dx = (INT16) g16(c, 20);
    a->dy = (INT16) g16(c, 22);
    a->w = g16(c, 24);
    a->h = g16(c, 26);
}

/* MINSHORT <= v && v + n <= MAXSHORT, for 0 <= n <= 65535, in one comparison */
#define CS_SPAN_OK(v, n) ((unsigned) ((v) - MINSHORT) <= (unsigned) (MAXSHORT - MINSHORT - (n)))

/* CopyArea / CopyPlane geometry clamped in the request itself, before anyone reads it:
 * what lies past the 16-bit range exists in no drawable, so the copy does the same, and
 * neither the secret computed here nor the server's own boxes wrap. Every client's
 * request passes here (the stock server was seen to crash on such copies). `a` follows
 * the request. */
static void
cs_clamp_copy(ClientPtr c, struct cs_copy_args *a)
{
    DrawablePtr s, d;
    int sx = a->sx, sy = a->sy, dx = a->dx, dy = a->dy, w = a->w, h = a->h;

    if (!(s = cs_copy_drawable(a->src, 1)) || !(d = cs_copy_drawable(a->dst, 0)))
        return;                 /* the real request reports the error */
    /* the common case: every coordinate already in range, the request stays as it is
     * (sx, sy, dx, dy are INT16 and w, h >= 0: the near ends are in range on their own) */
    if (w && h && sx + w <= MAXSHORT && dx + w <= MAXSHORT && sy + h <= MAXSHORT &&
        dy + h <= MAXSHORT && CS_SPAN_OK(s->x + sx, w) && CS_SPAN_OK(d->x + dx, w) &&
        CS_SPAN_OK(s->y + sy, h) && CS_SPAN_OK(d->y + dy, h))
        return;
    cs_clamp_axis(&sx, &dx, &w, s->x, d->x);
    cs_clamp_axis(&sy, &dy, &h, s->y, d->y);
    if (!w || !h)
        sx = sy = dx = dy = w = h = 0;
    p16(c, 16, sx);
    p16(c, 18, sy);
    p16(c, 20, dx);
    p16(c, 22, dy);
    p16(c, 24, w);
    p16(c, 26, h);
    a->sx = sx;
    a->sy = sy;
    a->dx = dx;
    a->dy = dy;
    a->w = w;
    a->h = h;
}

/* Takes `rgn` (destination coordinates) out of the GC's clip for one request; *saved gets
 * what cs_gc_restore puts back. FALSE: no memory (nothing changed). */
static Bool
cs_gc_exclude(GCPtr gc, RegionPtr rgn, RegionPtr *saved, DDXPointRec *org)
{
    BoxRec all = { MINSHORT, MINSHORT, MAXSHORT, MAXSHORT };
    RegionPtr clip = RegionCreate(&all, 1);

    *saved = NULL;
    *org = gc->clipOrg;
    if (!clip)
        return FALSE;
    if (gc->clientClip) {
        *saved = RegionCreate(NullBox, 0);
        if (!*saved || !RegionCopy(*saved, gc->clientClip) ||
            !RegionCopy(clip, gc->clientClip)) {
            if (*saved)
                RegionDestroy(*saved);
            RegionDestroy(clip);
            return FALSE;
        }
        RegionTranslate(rgn, -org->x, -org->y);
    } else {
        gc->clipOrg.x = gc->clipOrg.y = 0;
    }
    RegionSubtract(clip, clip, rgn);
    if (gc->clientClip)
        RegionTranslate(rgn, org->x, org->y);
    (*gc->funcs->ChangeClip) (gc, CT_REGION, clip, 0);
    gc->stateChanges |= GCClipMask | GCClipXOrigin | GCClipYOrigin;
    gc->serialNumber |= GC_CHANGE_SERIAL_BIT;
    return TRUE;
}

static void
cs_gc_restore(GCPtr gc, RegionPtr saved, DDXPointRec org)
{
    (*gc->funcs->ChangeClip) (gc, saved ? CT_REGION : CT_NONE, saved, 0);
    gc->clipOrg = org;
    gc->stateChanges |= GCClipMask | GCClipXOrigin | GCClipYOrigin;
    gc->serialNumber |= GC_CHANGE_SERIAL_BIT;
}

/* The last window found as a copy source, by id: a client copies from the same window
 * again and again, and the cache spares the resource table walk. An id names the same
 * window until the window is destroyed, and every destroyed window passes through the
 * screen's DestroyWindow first (cs_forget_window, from region.c). */
void
cs_forget_window(WindowPtr win)
{
    if (win == cs_last_src) {
        cs_last_src = NULL;
        cs_last_src_id = 0;
        cs_last_src_clear = 0;
    }
    if (win == cs_last_dst) {
        cs_last_dst = NULL;
        cs_last_dst_id = 0;
    }
}

/* The copy's source is looked up here only for an untrusted client while a window is
 * secure, and with no client, so that no XACE hook runs for this lookup (the real request
 * does its own, with its access checks); a trusted client's copy, or any copy while no
 * window is secure, costs a few comparisons. Only window sources are censored here:
 * pixmap sources hold secret pixels only when tainted, which the resource hook refuses.
 * Deny mode refuses before the real request runs. CopyPlane's request starts like
 * CopyArea's. The fields are decoded first: the real request swaps a swapped one in
 * place. */
static int cs_ProcCopy_full(ClientPtr c);

/* The common case first, in a small function: a request in the server's byte order
 * between the last windows (cs_copy_drawable's cache), geometry in range (cs_clamp_copy
 * would leave it as it is), from the last source found clear at this cs_gen. Exactly
 * what cs_ProcCopy_full does then (the real request at once), with no decoding into
 * locals and no stack frame; anything else goes there. */
int
cs_ProcCopy(ClientPtr c)
{
    const xCopyAreaReq *r = (const xCopyAreaReq *) c->requestBuffer;
    DrawablePtr s, d;
    int w, h;

    if (cs_req_swapped(c) || c->req_len < 7 || !cs_last_src || r->srcDrawable != cs_last_src_id ||
        cs_last_src_clear != cs_gen)
        return cs_ProcCopy_full(c);
    s = &cs_last_src->drawable;
    if (r->dstDrawable == cs_last_src_id)
        d = s;
    else if (r->dstDrawable == cs_last_dst_id && cs_last_dst)
        d = &cs_last_dst->drawable;
    else
        return cs_ProcCopy_full(c);
    w = r->width;
    h = r->height;
    if (cs_rule_on(CS_RULE_GEOMETRY) &&
        !(w && h && r->srcX + w <= MAXSHORT && r->dstX + w <= MAXSHORT &&
          r->srcY + h <= MAXSHORT && r->dstY + h <= MAXSHORT &&
          CS_SPAN_OK(s->x + r->srcX, w) && CS_SPAN_OK(d->x + r->dstX, w) &&
          CS_SPAN_OK(s->y + r->srcY, h) && CS_SPAN_OK(d->y + r->dstY, h)))
        return cs_ProcCopy_full(c);
    return cs_orig_proc[r->reqType](c);
}

static int __attribute__((noinline))
cs_ProcCopy_full(ClientPtr c)
{
    XID src_id, dst_id, gc_id;
    int sx, sy, dx, dy, w, h, r;
    void *p;
    DrawablePtr src;
    RegionRec secret;
    struct cs_blank bl;
    struct cs_copy_args a;

    if (c->req_len < 7)
        return cs_call_orig(c);
    cs_copy_decode(c, &a);
    if (cs_rule_on(CS_RULE_GEOMETRY))
        cs_clamp_copy(c, &a);
    src_id = a.src;
    /* the same source again, and nothing moved since it was found clear: the copy can
     * read nothing secret, whoever asks (the common case: a client copying inside its own
     * window, a terminal scrolling) */
    if (src_id == cs_last_src_id && cs_last_src && cs_last_src_clear == cs_gen)
        return cs_call_orig(c);
    if (!cs_secure_count() || !cs_rule_on(CS_RULE_COPYAREA) || cs_client_trusted(c))
        return cs_call_orig(c);
    if (src_id == cs_last_src_id && cs_last_src) {
        src = &cs_last_src->drawable;
    } else {
        if (dixLookupResourceByType(&p, src_id, RT_WINDOW, NullClient, DixReadAccess) !=
            Success || ((DrawablePtr) p)->type != DRAWABLE_WINDOW)
            return cs_call_orig(c);
        cs_last_src_id = src_id;
        cs_last_src = p;
        cs_last_src_clear = 0;
        src = p;
    }
    if (cs_win_clear(cs_last_src)) {
        cs_last_src_clear = cs_gen;
        return cs_call_orig(c);
    }
    dst_id = a.dst;
    gc_id = a.gc;
    sx = a.sx;
    sy = a.sy;
    dx = a.dx;
    dy = a.dy;
    w = a.w;
    h = a.h;
    RegionNull(&secret);
    if (!cs_secret_for_read(c, src, sx, sy, w, h, &secret)) {
        RegionUninit(&secret);
        return cs_call_orig(c);
    }
    if (cs_cfg.mode == CS_MODE_DENY) {
        RegionUninit(&secret);
        c->errorValue = src_id;
        cs_report(c, src_id, CS_KIND_DENIED);
        return BadAccess;
    }
    /* the copy itself carries no secret pixel: the secret part is clipped out of the
     * destination for this request (a racing reader of an SHM pixmap sees none), then
     * filled black */
    RegionTranslate(&secret, dx - sx, dy - sy);
    /* the blanking is made ready first: out of memory, the copy is refused (BadAlloc) */
    r = cs_blank_prepare(c, dst_id, gc_id, &secret, &bl);
    if (r != Success) {
        RegionUninit(&secret);
        cs_report(c, src_id, CS_KIND_DENIED);
        return r;
    }
    if (cs_rule_on(CS_RULE_BLANKFIRST)) {
        GCPtr gc;
        RegionPtr saved;
        DDXPointRec org;

        if (dixLookupGC(&gc, gc_id, NullClient, DixReadAccess) != Success) {
            RegionUninit(&secret);
            cs_blank_finish(&bl, FALSE);
            c->errorValue = gc_id;
            return BadGC;
        }
        if (cs_fail_alloc || !cs_gc_exclude(gc, &secret, &saved, &org)) {
            RegionUninit(&secret);
            cs_blank_finish(&bl, FALSE);
            return BadAlloc;
        }
        r = cs_call_orig(c);
        cs_gc_restore(gc, saved, org);
    } else {
        r = cs_call_orig(c);
    }
    RegionUninit(&secret);
    cs_blank_finish(&bl, r == Success);
    if (r == Success)
        cs_report(c, src_id, CS_KIND_CENSORED);
    return r;
}

/* ---- RENDER: pictures of windows as sources, masks or alpha maps ---- */

static PicturePtr
cs_picture(ClientPtr c, XID id)
{
    void *p = NULL;

    if (!id || !cs_picture_type ||
        dixLookupResourceByType(&p, id, cs_picture_type, serverClient, DixReadAccess) != Success)
        return NULL;
    return p;
}

/* Secret part (in picture coordinates, read box x,y,w,h) of reading picture `pic`;
 * a transformed, repeating or filtered picture counts as wholly secret if any of it is. */
static int
cs_picture_secret(ClientPtr c, PicturePtr pic, int x, int y, int w, int h, RegionPtr out,
                  int *whole)
{
    DrawablePtr d;
    int hit = 0;

    *whole = 0;
    if (!pic)
        return 0;
    if (pic->alphaMap && cs_picture_secret(c, pic->alphaMap, 0, 0, 32767, 32767, out, whole)) {
        *whole = 1;
        hit = 1;
    }
    d = pic->pDrawable;
    if (!d || d->type != DRAWABLE_WINDOW)
        return hit;
    /* a transform, a repeat or a filter with a kernel (anything but nearest) reads pixels
     * outside the read box into it: fb makes a window picture's image of the whole pixmap
     * the window is drawn in (the screen's, or a redirected ancestor's), so a repeat or a
     * transform reaches any pixel of it, not only the window's (the generator found reads of a
     * secure window beside the reader's own window) */
    if (pic->transform || pic->repeat ||
        (cs_rule_on(CS_RULE_FILTER) && pic->filter != PictFilterNearest &&
         pic->filter != PictFilterFast)) {
        if (cs_secret_for_read(c, d, -65536, -65536, 131072, 131072, out)) {
            *whole = 1;
            return 1;
        }
        return hit;
    }
    if (hit)
        return 1;
    return cs_secret_for_read(c, d, x, y, w, h, out);
}

static int
cs_render_refuse(ClientPtr c, XID id)
{
    c->errorValue = id;
    cs_report(c, id, CS_KIND_DENIED);
    return BadAccess;
}

/* Takes `rgn` (destination coordinates) out of the picture's clip for one request; *saved
 * and *org get what to put back (SetPictureClipRegion). FALSE: no memory. */
static Bool
cs_pict_exclude(PicturePtr pic, RegionPtr rgn, RegionPtr *saved, DDXPointRec *org)
{
    BoxRec all = { MINSHORT, MINSHORT, MAXSHORT, MAXSHORT };
    RegionRec clip;
    int r;

    *saved = NULL;
    *org = pic->clipOrigin;
    RegionInit(&clip, &all, 1);
    if (pic->clientClip) {
        *saved = RegionCreate(NullBox, 0);
        if (!*saved || !RegionCopy(*saved, pic->clientClip) ||
            !RegionCopy(&clip, pic->clientClip)) {
            if (*saved)
                RegionDestroy(*saved);
            *saved = NULL;
            RegionUninit(&clip);
            return FALSE;
        }
        RegionTranslate(&clip, org->x, org->y);
    }
    RegionSubtract(&clip, &clip, rgn);
    r = SetPictureClipRegion(pic, 0, 0, &clip);
    RegionUninit(&clip);
    if (r != Success && *saved) {
        RegionDestroy(*saved);
        *saved = NULL;
    }
    return r == Success;
}

/* One axis of a request over n pixels: the part t in [lo, lo + result) of [0, n) for
 * which base[i] + t lies in the 16-bit range for every base. */
static int
cs_clamp_range(const int *base, int nb, int n, int *lo)
{
    int l = 0, h = n, i;

    for (i = 0; i < nb; i++) {
        l = max(l, MINSHORT - base[i]);
        h = min(h, MAXSHORT - base[i]);
    }
    *lo = l < h ? l : 0;
    return l < h ? h - l : 0;
}

/* A picture whose pixel t of the request is read at its origin + t (no repeat, no
 * transform): its coordinates, relative and absolute, are kept in range as well. */
static int
cs_pict_linear(PicturePtr p)
{
    return p && p->pDrawable && !p->repeat && !p->transform;
}

/* Composite geometry clamped in the request itself, as CopyArea's (cs_clamp_copy): fb adds
 * the drawables' origins to the request's INT16 origins in INT16, so a destination box
 * past 32767 wraps (the generator's seed 1796399438, case 30371: a destination origin
 * y 32766 of an own window at y 400 with height 41944 drew the whole window while the
 * module blanked one line at 32766). What lies past the 16-bit range exists in no
 * drawable: the composite keeps the part where the destination's coordinates, and a
 * linearly read source's and mask's, fit, with the source and mask origins moved along. */
static void
cs_clamp_composite(ClientPtr c, PicturePtr *p)
{
    int bx[9], by[9], nb = 0, i, lx, ly, w, h;

    for (i = 0; i < 3; i++) {
        int ox = (INT16) g16(c, 20 + 4 * i), oy = (INT16) g16(c, 22 + 4 * i);
        DrawablePtr d = p[i] ? p[i]->pDrawable : NULL;
        if (i < 2 && !cs_pict_linear(p[i]))
            continue;
        bx[nb] = ox;
        by[nb++] = oy;
        if (!d)
            continue;
        /* on the screen, and in the pixmap the window is drawn in (fb's offsets) */
        bx[nb] = ox + d->x;
        by[nb++] = oy + d->y;
#ifdef COMPOSITE
        if (d->type == DRAWABLE_WINDOW) {
            PixmapPtr px = d->pScreen->GetWindowPixmap((WindowPtr) d);
            if (px) {
                bx[nb] = ox + d->x - px->screen_x;
                by[nb++] = oy + d->y - px->screen_y;
            }
        }
#endif
    }
    w = cs_clamp_range(bx, nb, g16(c, 32), &lx);
    h = cs_clamp_range(by, nb, g16(c, 34), &ly);
    if (w == g16(c, 32) && h == g16(c, 34))
        return;                 /* the common case: every coordinate already in range */
    if (!w || !h)
        lx = ly = w = h = 0;
    for (i = 0; i < 3; i++) {
        p16(c, 20 + 4 * i, (INT16) g16(c, 20 + 4 * i) + lx);
        p16(c, 22 + 4 * i, (INT16) g16(c, 22 + 4 * i) + ly);
    }
    p16(c, 32, w);
    p16(c, 34, h);
}

static int
cs_render_composite(ClientPtr c)
{
    XID src_id, mask_id, dst_id;
    int xs, ys;
    int xm, ym, xd, yd, w, h;
    RegionRec s1, s2;
    int hs, hm, ws, wm, r;
    PicturePtr dst;
    BoxRec all;
    RegionPtr saved = NULL;
    DDXPointRec org;
    xRectangle *rects = NULL;
    int i, n = 0;
    PicturePtr pic[3];

    src_id = g32(c, 8);
    mask_id = g32(c, 12);
    dst_id = g32(c, 16);
    pic[0] = cs_picture(c, src_id);
    pic[1] = cs_picture(c, mask_id);
    pic[2] = cs_picture(c, dst_id);
    if (cs_rule_on(CS_RULE_GEOMETRY))
        cs_clamp_composite(c, pic);
    xs = (INT16) g16(c, 20);
    ys = (INT16) g16(c, 22);
    xm = (INT16) g16(c, 24);
    ym = (INT16) g16(c, 26);
    xd = (INT16) g16(c, 28);
    yd = (INT16) g16(c, 30);
    w = g16(c, 32);
    h = g16(c, 34);
    RegionNull(&s1);
    RegionNull(&s2);
    hs = cs_picture_secret(c, pic[0], xs, ys, w, h, &s1, &ws);
    hm = cs_picture_secret(c, pic[1], xm, ym, w, h, &s2, &wm);
    if (!hs && !hm) {
        RegionUninit(&s1);
        RegionUninit(&s2);
        return cs_call_orig(c);
    }
    if (cs_cfg.mode == CS_MODE_DENY) {
        RegionUninit(&s1);
        RegionUninit(&s2);
        return cs_render_refuse(c, hs ? src_id : mask_id);
    }
    dst = pic[2];
    cs_box_clamp(&all, xd, yd, w, h);
    if (hs) {
        if (ws)
            RegionReset(&s1, &all);
        else
            RegionTranslate(&s1, xd - xs, yd - ys);
    }
    if (hm) {
        if (wm)
            RegionReset(&s2, &all);
        else
            RegionTranslate(&s2, xd - xm, yd - ym);
        if (!cs_rgn_ok(RegionUnion(&s1, &s1, &s2), &s1))
            RegionReset(&s1, &all);
    }
    /* the blanking is made ready before the request runs: out of memory, the request is
     * refused (BadAlloc) rather than leaving the pixels in the destination */
    if (dst && (cs_rule_on(CS_RULE_BLANKFIRST) ||
                !(dst->pDrawable && dst->pDrawable->type == DRAWABLE_WINDOW &&
                  cs_win_sealed((WindowPtr) dst->pDrawable, c)))) {
        BoxPtr b = RegionRects(&s1);
        n = RegionNumRects(&s1);
        rects = cs_malloc(sizeof(xRectangle) * (n ? n : 1));
        if (!rects) {
            RegionUninit(&s1);
            RegionUninit(&s2);
            cs_report(c, hs ? src_id : mask_id, CS_KIND_DENIED);
            return BadAlloc;
        }
        for (i = 0; i < n; i++) {
            rects[i].x = b[i].x1;
            rects[i].y = b[i].y1;
            rects[i].width = b[i].x2 - b[i].x1;
            rects[i].height = b[i].y2 - b[i].y1;
        }
    }
    /* the composite itself writes no secret pixel: the secret part is clipped out of the
     * destination for this request (a racing reader of an SHM pixmap sees none), then
     * filled black, into the reader's own secure window too (its owner reads it back) */
    if (cs_rule_on(CS_RULE_BLANKFIRST)) {
        if (!dst || !dst->pDrawable) {
            RegionUninit(&s1);
            RegionUninit(&s2);
            free(rects);
            return cs_render_refuse(c, hs ? src_id : mask_id);
        }
        if (cs_fail_alloc || !cs_pict_exclude(dst, &s1, &saved, &org)) {
            RegionUninit(&s1);
            RegionUninit(&s2);
            free(rects);
            return BadAlloc;
        }
        r = cs_call_orig(c);
        SetPictureClipRegion(dst, org.x, org.y, saved);
        if (saved)
            RegionDestroy(saved);
    } else {
        r = cs_call_orig(c);
    }
    if (r == Success) {
        xRenderColor black = { 0, 0, 0, 0xffff };
        if (rects)
            CompositeRects(PictOpSrc, dst, &black, n, rects);
        cs_report(c, hs ? src_id : mask_id, CS_KIND_CENSORED);
    }
    free(rects);
    RegionUninit(&s1);
    RegionUninit(&s2);
    return r;
}

int
cs_ProcRender(ClientPtr c)
{
    int minor = g8(c, 1), whole;
    RegionRec tmp;
    XID src_id;
    int hit;

    if (!cs_secure_count() || !cs_rule_on(CS_RULE_RENDER) || cs_client_trusted(c))
        return cs_call_orig(c);
    switch (minor) {
    case X_RenderComposite:
        if (c->req_len < 9)
            break;
        return cs_render_composite(c);
    case X_RenderTrapezoids:
    case X_RenderTriangles:
    case X_RenderTriStrip:
    case X_RenderTriFan:
    case X_RenderCompositeGlyphs8:
    case X_RenderCompositeGlyphs16:
    case X_RenderCompositeGlyphs32:
    case X_RenderCreateCursor:
        /* sources drawn through geometry, glyphs or into a cursor: refused outright when
         * any of the pixmap the source window is drawn in is secret. The source is read
         * at its origin plus the shapes' offset from their first point, in any direction
         * (negative too), and fb reads a window source through the whole pixmap, past
         * the window's edges, unclipped (the generator read a secure window beside the
         * reader's own through Triangles with a source origin of -70,-186: seed 1) */
        if (c->req_len < 3)
            break;
        src_id = g32(c, 8);    /* src follows op (or cid) in all of these */
        RegionNull(&tmp);
        hit = cs_picture_secret(c, cs_picture(c, src_id), -65536, -65536, 131072, 131072,
                                &tmp, &whole);
        RegionUninit(&tmp);
        if (hit)
            return cs_render_refuse(c, src_id);
        break;
    default:
        break;
    }
    return cs_call_orig(c);
}

static Bool
cs_wrap(int major, int (*fn)(ClientPtr))
{
    return cs_wrap_proc(major, fn, &cs_orig_proc[major], &cs_orig_sproc[major]);
}

Bool
cs_censor_init(void)
{
    ExtensionEntry *e;
    RESTYPE t;
    int i;

    cs_last_src = NULL;
    cs_last_src_id = 0;
    cs_last_src_clear = 0;
    cs_shm_major = cs_render_major = -1;
    cs_picture_type = 0;
    if (!dixRegisterPrivateKey(&cs_getimage_key_rec, PRIVATE_SCREEN, 0))
        return FALSE;
    for (i = 0; i < screenInfo.numScreens; i++) {
        ScreenPtr s = screenInfo.screens[i];
        GetImageProcPtr *orig = CS_WRAP_SCREEN_OWN(s, GetImage, cs_GetImage);
        if (!orig)
            return FALSE;
        dixSetPrivate(&s->devPrivates, &cs_getimage_key_rec, orig);
    }
    for (t = 1; t <= lastResourceType; t++)
        if (!strcmp(LookupResourceName(t), "PICTURE"))
            cs_picture_type = t;
    /* censor mode needs no request wrapper for GetImage/ShmGetImage: the screen
     * wrapper blanks what they read */
    if (cs_cfg.mode == CS_MODE_DENY && !cs_wrap(X_GetImage, cs_ProcGetImage))
        return FALSE;
    if (!cs_wrap(X_CopyArea, cs_ProcCopy) || !cs_wrap(X_CopyPlane, cs_ProcCopy))
        return FALSE;
    if (cs_cfg.mode == CS_MODE_DENY && (e = CheckExtension("MIT-SHM"))) {
        cs_shm_major = e->base;
        if (!cs_wrap(cs_shm_major, cs_ProcShm))
            return FALSE;
    }
    if ((e = CheckExtension("RENDER"))) {
        cs_render_major = e->base;
        if (!cs_wrap(cs_render_major, cs_ProcRender))
            return FALSE;
    }
    if (!cs_picture_type)
        LogMessageVerb(X_WARNING, 0, "CAPTURESHIELD: RENDER picture type not found\n");
    return TRUE;
}
