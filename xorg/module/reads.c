/* CaptureShield Xorg module: read queries: may a read return a secret pixel, and which part of it
 * is secret. */
#include "cs-int.h"

/* The window whose pixels a read of `win` returns: the nearest redirected ancestor (its
 * own pixmap) or the root (the framebuffer). */
static WindowPtr
cs_domain(WindowPtr win)
{
    for (; win->parent; win = win->parent)
        if (win->redirectDraw != RedirectDrawNone)
            return win;
    return win;
}

/* No read from `win` can return a secret pixel, to any client, for as long as cs_gen
 * stays what it is now: the window is drawn into the framebuffer (no redirected
 * ancestor), lies inside no secure window, and all of its inside misses the visible
 * secure area. A read from a window never goes outside its inside (CopyArea clips its
 * source to the window's clip list, or to its inside with IncludeInferiors). Anything
 * that could change one of these marks the screen dirty, which moves cs_gen on. */
int
cs_win_clear(WindowPtr win)
{
    struct cs_screen *cs = SCR(win->drawable.pScreen);
    WindowPtr dom = cs_domain(win);
    BoxRec inside;

    if (dom->parent || cs_win_in_secure(win))
        return 0;
    if (cs->dirty)
        cs_refresh(cs, dom);
    /* a window's far edge can lie past the coordinate range (but then off every screen) */
    inside.x1 = win->drawable.x;
    inside.y1 = win->drawable.y;
    inside.x2 = min(inside.x1 + (int) win->drawable.width, MAXSHORT);
    inside.y2 = min(inside.y1 + (int) win->drawable.height, MAXSHORT);
    return !RegionNotEmpty(&cs->secret) || RegionContainsRect(&cs->secret, &inside) == rgnOUT;
}

/* The box x,y,w,h (computed in int) clamped to the 16-bit coordinate space, as mi clamps
 * its boxes: a request's box reaches past it (INT16 origin plus CARD16 size, plus the
 * drawable's origin), where a BoxRec would wrap. */
void
cs_box_clamp(BoxPtr b, int x, int y, int w, int h)
{
    b->x1 = max(min(x, MAXSHORT), MINSHORT);
    b->y1 = max(min(y, MAXSHORT), MINSHORT);
    b->x2 = max(min(x + w, MAXSHORT), MINSHORT);
    b->y2 = max(min(y + h, MAXSHORT), MINSHORT);
}

/* 1: a read of the box x,y,w,h of `draw` returns no secret pixel to any client now
 * (what cs_secret_for_read answers 0 to before it looks at the client: its fast path);
 * 0: not known, ask cs_secret_for_read. Costs no allocation and no call into the
 * client's state, so a read that misses every secure pixel pays for no trust check. */
static int __attribute__((noinline))
cs_read_clear_rects(struct cs_screen *cs, int x, int y, int w, int h)
{
    BoxRec box;

    cs_box_clamp(&box, x, y, w, h);
    return RegionContainsRect(&cs->secret, &box) == rgnOUT;
}

/* everything but a framebuffer window read while windows are secure and the area is
 * computed */
static int __attribute__((noinline))
cs_read_clear_slow(DrawablePtr draw, int x, int y, int w, int h)
{
    WindowPtr dom;
    struct cs_screen *cs;

    if (w <= 0 || h <= 0 || cs_cfg.paused)
        return 1;
    if (draw->type != DRAWABLE_WINDOW)
        return !(draw->type == DRAWABLE_PIXMAP && cs_rule_on(CS_RULE_PIXMAP) &&
                 cs_pixmap_tainted((PixmapPtr) draw));
    if (!cs_nsecure && !cs_residue())
        return 1;
    dom = cs_domain((WindowPtr) draw);
    cs = SCR(draw->pScreen);
    if (dom->parent || cs->dirty)
        return 0;
    if (!RegionNotEmpty(&cs->secret))
        return 1;
    return cs_read_clear_rects(cs, draw->x + x, draw->y + y, w, h);
}

/* The common answer first (cs_read_clear_fast, inline), with no call but tail calls (so
 * no stack frame): a window read from the framebuffer while windows are secure and the
 * secret area is computed. */
int
cs_read_clear(DrawablePtr draw, int x, int y, int w, int h)
{
    switch (cs_read_clear_fast(draw, x, y, w, h)) {
    case CS_READ_CLEAR:
        return 1;
    case CS_READ_UNKNOWN:
        return 0;
    case CS_READ_RECTS:
        return cs_read_clear_rects(SCR(draw->pScreen), draw->x + x, draw->y + y, w, h);
    default:
        return cs_read_clear_slow(draw, x, y, w, h);
    }
}

int
cs_secret_for_read(ClientPtr client, DrawablePtr draw, int x, int y, int w, int h,
                   RegionPtr out)
{
    WindowPtr win, dom;
    struct cs_screen *cs;
    BoxRec box;
    RegionRec tmp;
    RegionPtr src;
    int ox, oy;

    if (w <= 0 || h <= 0 || cs_cfg.paused)
        return 0;
    if (draw->type != DRAWABLE_WINDOW) {
        if (draw->type == DRAWABLE_PIXMAP && cs_rule_on(CS_RULE_PIXMAP) &&
            cs_pixmap_tainted((PixmapPtr) draw)) {
            cs_box_clamp(&box, x, y, w, h);
            RegionReset(out, &box);
            return 1;
        }
        return 0;
    }
    if (!cs_nsecure && !cs_residue())
        return 0;
    win = (WindowPtr) draw;
    ox = draw->x;
    oy = draw->y;
    cs_box_clamp(&box, ox + x, oy + y, w, h);
    dom = cs_domain(win);
    cs = SCR(draw->pScreen);
    if (!dom->parent && !cs->dirty) {
        /* fast path: a framebuffer read whose box misses every visible secure pixel
         * (even inside a covered secure window the framebuffer holds other pixels).
         * Rectangle by rectangle, not only the extents: a window stacked over part of
         * a secure one (a terminal, x11perf) reads inside the extents of what stays
         * visible of it, and a region intersection there costs an allocation per copy. */
        if (!RegionNotEmpty(&cs->secret) || RegionContainsRect(&cs->secret, &box) == rgnOUT)
            return 0;
    }
    if (cs_win_in_secure(win)) {
        /* the window's own owner is trusted for it (and for its children it owns) */
        WindowPtr s = win;
        while (s && !cs_win_secure(s))
            s = s->parent;
        if (s && cs_rule_on(CS_RULE_OWNSECURE)) {
            /* inside the reader's own secure window: a secure window of another client
             * around that one makes all of it secret */
            WindowPtr a;
            for (a = s->parent; a; a = a->parent)
                if (cs_win_secure(a) && CLIENT_ID(a->drawable.id) != client->index)
                    s = a;
        }
        if (!s || CLIENT_ID(s->drawable.id) != client->index) {
            cs_box_clamp(&box, x, y, w, h);
            RegionReset(out, &box);
            return 1;
        }
    }
    RegionNull(&tmp);
    if (dom->parent || cs_client_owns_secure(client)) {
        /* the trail and stale areas count for this client too: computed first when
         * there can be one (the condition under which cs_tree_changed computes at once);
         * otherwise the screen's area is left to the next read that needs it, so a
         * client moving its own secure windows and reading pays for its own windows
         * inside its read box only, not for a computation of the whole screen each time */
        if (!dom->parent && cs->dirty &&
            (RegionNotEmpty(&cs->drawn) || RegionNotEmpty(&cs->trail) ||
             RegionNotEmpty(&cs->stale) || cs_unpaint_source(dom)))
            cs_refresh(cs, dom);
        /* the reader's own area, inside the read box only: a client owning many
         * secure windows pays for its reads in proportion to their number, not to its
         * square */
        if (!cs_compute_in(dom, &tmp, client, NULL, &box))
            RegionReset(&tmp, RegionExtents(&dom->borderSize));
        if (!dom->parent && RegionNotEmpty(&cs->trail) &&
            !cs_rgn_ok(RegionUnion(&tmp, &tmp, &cs->trail), &tmp))
            RegionReset(&tmp, RegionExtents(&dom->borderSize));
        if (!dom->parent && RegionNotEmpty(&cs->stale) &&
            !cs_rgn_ok(RegionUnion(&tmp, &tmp, &cs->stale), &tmp))
            RegionReset(&tmp, RegionExtents(&dom->borderSize));
        src = &tmp;
    } else {
        if (cs->dirty)
            cs_refresh(cs, dom);
        src = &cs->secret;
    }
    /* fast exit: the read box misses the secret area's extents */
    {
        BoxPtr e = RegionExtents(src);
        if (!RegionNotEmpty(src) || e->x2 <= box.x1 || e->x1 >= box.x2 ||
            e->y2 <= box.y1 || e->y1 >= box.y2) {
            RegionUninit(&tmp);
            return 0;
        }
    }
    RegionReset(out, &box);
    if (!cs_rgn_ok(RegionIntersect(out, out, src), out))
        RegionReset(out, &box);         /* out of memory: all of the read is secret */
    RegionUninit(&tmp);
    if (!RegionNotEmpty(out))
        return 0;
    RegionTranslate(out, -ox, -oy);
    return 1;
}
