/* CaptureShield Xorg module: CopyArea and CopyPlane from a window: the copied-in secure area
 * of the destination blanked (censor) or the copy refused (deny); copy geometry clamped. */
#include "censor-int.h"

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

/* this file's state (censor-int.h) */
struct cs_copy_state cs_copy_st;

/* The drawable `id` of a copy, from the last source or destination window when it is one
 * of them (a client copying within or between its windows again and again: no resource
 * table walk), else looked up with no client (no XACE hook) and remembered if a window. */
static DrawablePtr cs_copy_lookup(XID id, int is_src);

static inline DrawablePtr
cs_copy_drawable(XID id, int is_src)
{
    if (id == cs_copy_st.last_src_id && cs_copy_st.last_src)
        return &cs_copy_st.last_src->drawable;
    if (id == cs_copy_st.last_dst_id && cs_copy_st.last_dst)
        return &cs_copy_st.last_dst->drawable;
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
            cs_copy_st.last_src_id = id;
            cs_copy_st.last_src = p;
            cs_copy_st.last_src_clear = 0;
        } else {
            cs_copy_st.last_dst_id = id;
            cs_copy_st.last_dst = p;
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
 * screen's DestroyWindow first (cs_forget_window, from tree.c). */
void
cs_forget_window(WindowPtr win)
{
    if (win == cs_copy_st.last_src) {
        cs_copy_st.last_src = NULL;
        cs_copy_st.last_src_id = 0;
        cs_copy_st.last_src_clear = 0;
    }
    if (win == cs_copy_st.last_dst) {
        cs_copy_st.last_dst = NULL;
        cs_copy_st.last_dst_id = 0;
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

    if (cs_req_swapped(c) || c->req_len < 7 || !cs_copy_st.last_src ||
        r->srcDrawable != cs_copy_st.last_src_id || cs_copy_st.last_src_clear != cs_gen)
        return cs_ProcCopy_full(c);
    s = &cs_copy_st.last_src->drawable;
    if (r->dstDrawable == cs_copy_st.last_src_id)
        d = s;
    else if (r->dstDrawable == cs_copy_st.last_dst_id && cs_copy_st.last_dst)
        d = &cs_copy_st.last_dst->drawable;
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
    return cs_censor_st.orig_proc[r->reqType](c);
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
    if (src_id == cs_copy_st.last_src_id && cs_copy_st.last_src &&
        cs_copy_st.last_src_clear == cs_gen)
        return cs_call_orig(c);
    if (!cs_secure_count() || !cs_rule_on(CS_RULE_COPYAREA) || cs_client_trusted(c))
        return cs_call_orig(c);
    if (src_id == cs_copy_st.last_src_id && cs_copy_st.last_src) {
        src = &cs_copy_st.last_src->drawable;
    } else {
        if (dixLookupResourceByType(&p, src_id, RT_WINDOW, NullClient, DixReadAccess) !=
            Success || ((DrawablePtr) p)->type != DRAWABLE_WINDOW)
            return cs_call_orig(c);
        cs_copy_st.last_src_id = src_id;
        cs_copy_st.last_src = p;
        cs_copy_st.last_src_clear = 0;
        src = p;
    }
    if (cs_win_clear(cs_copy_st.last_src)) {
        cs_copy_st.last_src_clear = cs_gen;
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
