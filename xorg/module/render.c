/* CaptureShield Xorg module: RENDER with window pictures as sources, masks or alpha maps:
 * the destination area blanked (censor) or the request refused. */
#include "censor-int.h"

/* ---- RENDER: pictures of windows as sources, masks or alpha maps ---- */

static PicturePtr
cs_picture(ClientPtr c, XID id)
{
    void *p = NULL;

    if (!id || !cs_censor_st.picture_type ||
        dixLookupResourceByType(&p, id, cs_censor_st.picture_type, serverClient,
                                DixReadAccess) != Success)
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
