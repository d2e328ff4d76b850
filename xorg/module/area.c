/* CaptureShield Xorg module: the secret area computed from the window tree, per owner, with the
 * box bound. */
#include "cs-int.h"

/* Walks a subtree from the top of the stacking order down, collecting the part of each
 * secure window (with its descendants) that no window above it covers. Secure windows
 * owned by `exclude` are not secret to it but still cover what lies below them.
 * Windows owned by the server (the Composite overlay window, painted by the trusted
 * compositor), the windows inside them (`inert`: mutter's, kwin's and xfwm4's GL output
 * window is a child of the overlay window, and shows the secure window's pixels where
 * it covers it) and depth-32 windows (translucent under a compositor) cover nothing.
 * Any client may put windows into the overlay window: they then only make more of the
 * screen secret, never less. */
/* this file's state (cs-int.h) */
struct cs_area_state cs_area_st;
#define CS_ROK(call, dst) ((void) (cs_rgn_ok((call), (dst)) || (cs_area_st.oom = 1)))

/* ---- the bound: what another client's secure windows can cost ----
 *
 * A client may map thousands of shaped secure windows (or shaped windows of any kind over
 * one): exact, the secret area would hold thousands of rectangles, each window of a
 * computation would cost in proportion to them (a computation in proportion to their
 * square) and so would every other client's read that is cut against the area. So no
 * region the computation accumulates holds more than CS_MAX_BOXES rectangles. Past that
 * it is brought down to CS_BOUND_TO (so the next time is some windows away):
 * - the secret area (and what a compositor draws, the unrepainted area, the trail, the
 *   stale area) grows OUTWARD, a superset, so only more black in untrusted captures,
 *   never less: first each horizontal band of it becomes one box from its leftmost to its
 *   rightmost pixel; if that is still too many, the bands' edges are snapped outward to a
 *   grid of CS_GRID pixels, then 2×, 4×, ... that, merging bands;
 * - what covers what shrinks INWARD, a subset (less counts as covered, more as secret):
 *   its CS_BOUND_TO largest rectangles are kept.
 * Each window of a computation then costs O(CS_MAX_BOXES + its own shape's rectangles),
 * a computation O(windows × that), and a read's cut O(CS_MAX_BOXES). */
#define CS_MAX_BOXES 128
#define CS_BOUND_TO (CS_MAX_BOXES / 2)
#define CS_GRID 16

/* v snapped to a multiple of g (a power of 2) toward -inf (or +inf: `up`), kept within
 * lo..hi (the region's extents: every box lies inside them, so the result still holds
 * every box) */
static int
cs_snap(int v, int g, int up, int lo, int hi)
{
    v = up ? (v + g - 1) & ~(g - 1) : v & ~(g - 1);     /* g a power of 2: floor, ceil */
    return max(min(v, hi), lo);
}

static int
cs_box_area_cmp(const void *a, const void *b)
{
    const BoxRec *p = a, *q = b;
    long pa = (long) (p->x2 - p->x1) * (p->y2 - p->y1);
    long qa = (long) (q->x2 - q->x1) * (q->y2 - q->y1);

    return pa < qa ? 1 : pa > qa ? -1 : 0;
}

/* `r` made from the `n` boxes `nb` (pixman sorts them, merges overlaps, drops empty
 * ones); FALSE (r untouched) when out of memory */
static Bool
cs_region_from(RegionPtr r, BoxPtr nb, int n)
{
    RegionRec t;

    if (!RegionInitBoxes(&t, nb, n) || RegionBroken(&t)) {
        RegionUninit(&t);
        return FALSE;
    }
    RegionUninit(r);
    *r = t;
    return TRUE;
}

/* Past `most` rectangles: `r` grown (`outward`: a superset, within its extents) or shrunk
 * (a subset) to at most `to` (>= 1). Out of memory, or a grid past the coordinate range:
 * outward, its extents (more area); inward, empty. */
static void
cs_bound_to(RegionPtr r, int outward, int most, int to)
{
    BoxRec ext;
    BoxPtr b, nb;
    int grid, i, k, n;

    if (RegionNumRects(r) <= most || RegionBroken(r) || cs_area_st.nobound)
        return;
    cs_area_st.bounded++;
    ext = *RegionExtents(r);
    if (!outward) {
        n = RegionNumRects(r);
        if (!(nb = malloc(n * sizeof(BoxRec))))
            goto fail;
        memcpy(nb, RegionRects(r), n * sizeof(BoxRec));
        qsort(nb, n, sizeof(BoxRec), cs_box_area_cmp);
        k = cs_region_from(r, nb, to);  /* disjoint boxes of r: a subset */
        free(nb);
        if (!k)
            goto fail;
        return;
    }
    if (to <= 1)
        goto fail;              /* its extents */
    /* grid 0: each band one box; then the bands' edges snapped to CS_GRID, 2x, 4x, ...
     * (snapped bands overlap: pixman splits them into more bands of several boxes, which
     * the next pass makes one box each) */
    for (grid = 0; RegionNumRects(r) > to; grid = grid ? grid * 2 : CS_GRID) {
        if (grid > 65536)
            goto fail;
        b = RegionRects(r);
        n = RegionNumRects(r);
        if (!(nb = malloc(n * sizeof(BoxRec))))
            goto fail;
        for (i = k = 0; i < n; i++) {
            if (k && nb[k - 1].y1 == b[i].y1 && nb[k - 1].y2 == b[i].y2) {
                nb[k - 1].x2 = b[i].x2;     /* same band: boxes sorted by x */
                continue;
            }
            nb[k++] = b[i];
        }
        if (grid)
            for (i = 0; i < k; i++) {
                nb[i].y1 = cs_snap(nb[i].y1, grid, 0, ext.y1, ext.y2);
                nb[i].y2 = cs_snap(nb[i].y2, grid, 1, ext.y1, ext.y2);
            }
        i = cs_region_from(r, nb, k);
        free(nb);
        if (!i)
            goto fail;
    }
    return;
 fail:
    if (outward)
        RegionReset(r, &ext);
    else
        RegionEmpty(r);
}

void
cs_bound(RegionPtr r, int outward)
{
    cs_bound_to(r, outward, CS_MAX_BOXES, CS_BOUND_TO);
}

/* ---- per owner ---- */

/* The owner's area, created empty when new; NULL: out of memory. */
static RegionPtr
cs_owner_region(struct cs_screen *cs, int id)
{
    int i;

    for (i = 0; i < cs->nown; i++)
        if (cs->own[i].id == id)
            return &cs->own[i].r;
    if (cs->nown == cs->aown) {
        int a = cs->aown ? cs->aown * 2 : 8;
        struct cs_owner *o = cs_malloc(a * sizeof(*o));
        if (!o)
            return NULL;
        if (cs->nown)
            memcpy(o, cs->own, cs->nown * sizeof(*o));
        free(cs->own);
        cs->own = o;
        cs->aown = a;
    }
    cs->own[cs->nown].id = id;
    RegionNull(&cs->own[cs->nown].r);
    return &cs->own[cs->nown++].r;
}

/* `out` becomes the union of the owners' areas (owners with none are dropped). Past
 * CS_MAX_BOXES, the owner with the most rectangles is coarsened further (outward, within
 * its own area's extents), then the next, ...; only when every owner is down to one box
 * is the union itself bounded. So one client's many pieces never make another client's
 * window black outside the extents of that client's own visible secure area, unless
 * more than about CS_MAX_BOXES clients each own visible secure windows. FALSE: out of
 * memory (`out` is then broken). */
static Bool
cs_union_owners(struct cs_screen *cs, RegionPtr out)
{
    int i, k, most;

    for (i = k = 0; i < cs->nown; i++) {
        if (RegionNotEmpty(&cs->own[i].r) || RegionBroken(&cs->own[i].r))
            cs->own[k++] = cs->own[i];  /* a broken one makes the union fail below */
        else
            RegionUninit(&cs->own[i].r);
    }
    cs->nown = k;
    for (;;) {
        RegionEmpty(out);
        for (i = 0; i < cs->nown; i++)
            if (!cs_rgn_ok(RegionUnion(out, out, &cs->own[i].r), out))
                return FALSE;
        if (RegionNumRects(out) <= CS_MAX_BOXES || cs_area_st.nobound)
            return TRUE;
        for (i = 0, k = -1, most = 1; i < cs->nown; i++)
            if (RegionNumRects(&cs->own[i].r) > most) {
                most = RegionNumRects(&cs->own[i].r);
                k = i;
            }
        if (k < 0) {
            cs_bound(out, 1);
            return TRUE;
        }
        most /= 4;
        cs_bound_to(&cs->own[k].r, 1, most, max(most, 1));
    }
}

/* What the screen shows is what counts (rule opacity). Under a compositor a window is
 * drawn as the compositor likes: translucent by _NET_WM_WINDOW_OPACITY or its own
 * inactive-opacity, with shadows, fading or blur, none of which the server sees. So while
 * a trusted compositor paints the screen, a window covers a secure window only when its
 * owner is trusted (the server, a Trust program, the daemon, a granted client): an
 * untrusted reader gets black wherever an untrusted window, its own included, lies over
 * a secure one. Read without side effects (no identification, no re-check): a client not
 * identified yet counts as untrusted, which only makes more of the screen secret; a
 * change of trust marks the area dirty (trust.c). */
static int
cs_covers_composited(WindowPtr win)
{
    ClientPtr c;
    const struct cs_client *st;

    if (!cs_area_st.composited || !cs_rule_on(CS_RULE_OPACITY))
        return 1;
    c = clients[CLIENT_ID(win->drawable.id)];
    if (!c || c == serverClient || c->index == 0)
        return 1;
    st = cs_client_state(c);
    return st->identity_known && (st->exe_trusted || st->granted);
}

static Bool
cs_compositor_paints(ScreenPtr s)
{
    WindowPtr c;

    for (c = s->root ? s->root->firstChild : NULL; c; c = c->nextSib)
        if (c->redirectDraw == RedirectDrawManual && !cs_untrusted_manual(c))
            return TRUE;
    return FALSE;
}

/* What of `area` (screen coordinates, part of `win`) no window above covers becomes secret:
 * the owner's area, or `secret`; and `drawn` when a compositor draws it. */
static void
cs_add_secret(WindowPtr win, RegionPtr area, RegionPtr covered, RegionPtr secret,
              RegionPtr drawn, int manual)
{
    RegionRec vis;

    RegionNull(&vis);
    CS_ROK(RegionSubtract(&vis, area, covered), &vis);
    if (cs_area_st.split) {
        /* its owner's area, bounded on its own (cs_union_owners) */
        RegionPtr o = cs_owner_region(cs_area_st.split, CLIENT_ID(win->drawable.id));
        if (!o)
            cs_area_st.oom = 1;
        else {
            CS_ROK(RegionUnion(o, o, &vis), o);
            cs_bound(o, 1);
        }
    } else {
        CS_ROK(RegionUnion(secret, secret, &vis), secret);
        cs_bound(secret, 1);
    }
    if (drawn && (manual || win->redirectDraw == RedirectDrawManual)) {
        RegionUnion(drawn, drawn, &vis);
        cs_bound(drawn, 1);
    }
    RegionUninit(&vis);
}

static void
cs_visit(WindowPtr win, RegionPtr clip, RegionPtr covered, RegionPtr secret, ClientPtr exclude,
         int inert, RegionPtr drawn, int manual)
{
    RegionRec mine, inner;
    WindowPtr c;
    int occludes, secure, hide, server_owned, views;

    RegionNull(&mine);
    CS_ROK(RegionIntersect(&mine, &win->borderSize, clip), &mine);
    if (!RegionNotEmpty(&mine)) {
        RegionUninit(&mine);
        return;
    }
    server_owned = CLIENT_ID(win->drawable.id) == 0;
    occludes = !inert && !server_owned && win->drawable.depth != 32 && cs_covers_composited(win);
    secure = cs_win_secure(win);
    views = secure ? CS_VIEWS_NONE : cs_win_views(win);
    if (views == CS_VIEWS_WHOLE)
        secure = 1;             /* malformed views: the whole window, fail safe (views.c) */
    hide = secure && (!exclude || CLIENT_ID(win->drawable.id) != exclude->index);
    if (!secure && cs_win_frames_secure(win, exclude))
        secure = hide = 1;      /* a window manager's frame of a secure window */
    if (!manual && cs_untrusted_manual(win)) {
        /* redirected by an untrusted client, nothing paints its area: X treats it as
         * transparent (mivaltree.c), the windows under it keep drawing into the
         * framebuffer, and those inside it draw into its pixmap only */
        occludes = 0;
        inert = 1;
    }
    if (!manual && win->redirectDraw != RedirectDrawManual)
        cs_note_unpainted(win, &mine, server_owned);
    if (secure && !hide && cs_rule_on(CS_RULE_OWNSECURE))
        secure = 0;             /* the reader's own: what it holds of others stays secret */
    if (secure) {
        if (hide)
            cs_add_secret(win, &mine, covered, secret, drawn, manual);
        CS_ROK(RegionUnion(covered, covered, &mine), covered);
        cs_bound(covered, 0);
        RegionUninit(&mine);
        return;
    }
    RegionNull(&inner);
    CS_ROK(RegionIntersect(&inner, &win->winSize, clip), &inner);
    if (views == CS_VIEWS_RECTS && (!exclude || CLIENT_ID(win->drawable.id) != exclude->index)) {
        /* secure views: the rectangles with whatever the window's descendants show there,
         * as a secure window's are secret with its descendants (views.c) */
        RegionRec v;
        RegionNull(&v);
        cs_views_region(win, &v);
        CS_ROK(RegionIntersect(&v, &v, &inner), &v);
        if (RegionNotEmpty(&v)) {
            cs_add_secret(win, &v, covered, secret, drawn, manual);
            if (occludes) {
                CS_ROK(RegionUnion(covered, covered, &v), covered);
                cs_bound(covered, 0);
            }
        }
        RegionUninit(&v);
    }
    for (c = win->firstChild; c; c = c->nextSib)
        if (c->realized && c->drawable.class == InputOutput)
            cs_visit(c, &inner, covered, secret, exclude,
                     inert || (server_owned && win->parent && cs_rule_on(CS_RULE_OVERLAY)), drawn,
                     manual || win->redirectDraw == RedirectDrawManual);
    RegionUninit(&inner);
    if (occludes) {
        CS_ROK(RegionUnion(covered, covered, &mine), covered);
        cs_bound(covered, 0);
    }
    RegionUninit(&mine);
}

/* `drawn`, when given, gets the part of `secret` that a compositor draws. `within`
 * (screen coordinates, may be NULL): only the part of `secret` inside it is wanted, and
 * only that part is computed (a window outside it costs one small intersection, and
 * what covers what is kept inside it only). Out of memory: the whole of `top` is secret
 * and FALSE is returned. */
static Bool
cs_compute_rgn(WindowPtr top, RegionPtr secret, ClientPtr exclude, RegionPtr drawn,
               RegionPtr within)
{
    RegionRec covered, clip;

    RegionEmpty(secret);
    if (drawn)
        RegionEmpty(drawn);
    if (!top->realized)
        return TRUE;
    cs_area_st.oom = 0;
    cs_area_st.composited = cs_compositor_paints(top->drawable.pScreen);
    RegionNull(&covered);
    RegionNull(&clip);
    CS_ROK(RegionCopy(&clip, &top->borderSize), &clip);
    if (within && !cs_area_st.oom)
        CS_ROK(RegionIntersect(&clip, &clip, within), &clip);
    if (!cs_area_st.oom)
        cs_visit(top, &clip, &covered, secret, exclude, 0, drawn, 0);
    RegionUninit(&covered);
    RegionUninit(&clip);
    if (cs_area_st.oom) {
        RegionReset(secret, RegionExtents(&top->borderSize));
        if (drawn)
            RegionEmpty(drawn);
        return FALSE;
    }
    return TRUE;
}

Bool
cs_compute_in(WindowPtr top, RegionPtr secret, ClientPtr exclude, RegionPtr drawn,
              BoxPtr within)
{
    RegionRec w;
    Bool r;

    if (!within)
        return cs_compute_rgn(top, secret, exclude, drawn, NULL);
    RegionInit(&w, within, 1);
    r = cs_compute_rgn(top, secret, exclude, drawn, &w);
    RegionUninit(&w);
    return r;
}

/* The screen's secret area per owner, then their union into `secret`: all of it
 * (`within` NULL), or only inside `within`, the owners' areas outside it kept as they
 * were. FALSE: out of memory (the caller makes the whole screen secret and computes all
 * of it again next time). */
Bool
cs_compute_owners(struct cs_screen *cs, WindowPtr root, RegionPtr secret, RegionPtr drawn,
                  RegionPtr within)
{
    Bool ok;
    int i;

    for (i = 0; i < cs->nown; i++)
        if (within)
            RegionSubtract(&cs->own[i].r, &cs->own[i].r, within);
        else
            RegionEmpty(&cs->own[i].r);
    cs_area_st.split = cs;
    ok = cs_compute_rgn(root, secret, NULL, drawn, within);
    cs_area_st.split = NULL;
    if (!ok || !cs_union_owners(cs, secret)) {
        RegionReset(secret, RegionExtents(&root->borderSize));
        cs->dfull = TRUE;
        return FALSE;
    }
    return TRUE;
}

Bool
cs_compute(WindowPtr top, RegionPtr secret, ClientPtr exclude, RegionPtr drawn)
{
    return cs_compute_in(top, secret, exclude, drawn, NULL);
}
