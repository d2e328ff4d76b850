/* CaptureShield Xorg module: which windows are secure (window manager frames included) and the cached secret region per screen. */
#include "cs-int.h"

#define CS_SECURE_NAME "_CAPTURE_SHIELD_SECURE"
#define CS_POLICY_NAME "_CAPTURE_SHIELD_POLICY"

/* Every change that can move the secret area goes through here: the cached region is
 * computed again at its next use, and cs_gen moves on, so what cs_win_clear said no
 * longer counts. */
unsigned long cs_gen = 1;

/* The secret area may have changed inside `b` only (as far as this change goes). */
static void
cs_dirty_box(struct cs_screen *cs, const BoxRec *b)
{
    RegionRec r;

    if (!cs_nsecure) {
        cs_set_dirty(cs);       /* nothing to keep: a secure window appearing marks all */
        return;
    }
    cs->dirty = TRUE;
    cs_gen++;
    if (cs->dfull || b->x1 >= b->x2 || b->y1 >= b->y2 ||
        RegionContainsRect(&cs->dreg, (BoxPtr) b) == rgnIN)
        return;
    RegionInit(&r, (BoxPtr) b, 1);
    if (!cs_rgn_ok(RegionUnion(&cs->dreg, &cs->dreg, &r), &cs->dreg))
        cs->dfull = TRUE;       /* out of memory: all of it */
    else
        cs_bound(&cs->dreg, 1);
    RegionUninit(&r);
}

void
cs_dirty_win(struct cs_screen *cs, WindowPtr w)
{
    cs_dirty_box(cs, RegionExtents(&w->borderSize));
}

DevPrivateKeyRec cs_screen_key_rec;     /* struct cs_screen; its head in cs.h */
DevPrivateKeyRec cs_pixmap_key_rec;
_Static_assert(offsetof(struct cs_screen, secret) == offsetof(struct cs_screen_head, secret) &&
               offsetof(struct cs_screen, dirty) == offsetof(struct cs_screen_head, dirty),
               "struct cs_screen begins with struct cs_screen_head");
DevPrivateKeyRec cs_window_key_rec;     /* struct cs_window; cs_win_secure in cs.h */
Atom cs_atom, cs_patom;
int cs_nsecure;                 /* secure windows in existence (cs.h) */
unsigned long cs_lazy, cs_refreshes;     /* tree changes left to the next read;
                                          * computations of the secret area */
static int (*cs_orig_reparent)(ClientPtr), (*cs_orig_sreparent)(ClientPtr);
static ClientPtr cs_reparenting;        /* the client whose ReparentWindow request runs */

Atom
cs_secure_atom(void)
{
    return cs_atom;
}

Atom
cs_policy_atom(void)
{
    return cs_patom;
}


/* The window's DBE back buffer, if it has one, is secret from now on. */
void
cs_taint_dbe(WindowPtr w)
{
    struct cs_window *cw = dixLookupPrivate(&w->devPrivates, &cs_window_key_rec);
    void *p;

    if (!cw->dbe_id)
        return;
    if (dixLookupResourceByType(&p, cw->dbe_id, cw->dbe_type, NullClient, DixReadAccess) !=
        Success || ((DrawablePtr) p)->type != DRAWABLE_PIXMAP) {
        cw->dbe_id = 0;         /* that buffer id was freed */
        return;
    }
    cw->dbe_secret = 1;
    cs_taint_pixmap_win(p, w);
}

/* The pixmap of a redirected window (Composite), which a compositor may have named, and
 * the window's DBE back buffer. */
void
cs_taint_if_redirected(WindowPtr w, PixmapPtr screen_pix)
{
    PixmapPtr pix;

    cs_taint_dbe(w);
    if (w->redirectDraw == RedirectDrawNone)
        return;
    pix = w->drawable.pScreen->GetWindowPixmap(w);
    if (pix && pix != screen_pix)
        cs_taint_pixmap_win(pix, w);
}

void
cs_taint_redirected_subtree(WindowPtr w, PixmapPtr screen_pix)
{
    WindowPtr c;

    cs_taint_if_redirected(w, screen_pix);
    for (c = w->firstChild; c; c = c->nextSib)
        cs_taint_redirected_subtree(c, screen_pix);
}

void
cs_set_win_secure(WindowPtr win, int on)
{
    unsigned char *p = dixLookupPrivate(&win->devPrivates, &cs_window_key_rec);
    ScreenPtr s = win->drawable.pScreen;
    WindowPtr a;

    if (!!*p == !!on)
        return;
    *p = on ? 1 : 0;
    cs_nsecure += on ? 1 : -1;
    cs_note_secure_owner(win, on ? 1 : -1);
    if (s->root && SCR(s)) {
        /* what changes: the window with what is inside it, and the window manager's
         * frames of it (the top-levels it was framed in, wherever it is now) */
        struct cs_screen *cs = SCR(s);
        WindowPtr c;
        cs_dirty_win(cs, win);
        for (c = s->root->firstChild; c; c = c->nextSib) {
            struct cs_window *ct = dixLookupPrivate(&c->devPrivates, &cs_window_key_rec);
            if (ct->framed == win->drawable.id)
                cs_dirty_win(cs, c);
        }
    } else {
        cs_mark_dirty();
    }
    cs_secure_changed(on, cs_nsecure);
    if (on && cs_rule_on(CS_RULE_STALE) && s->root)   /* from now on its pixels are secret
                                                         * wherever shown */
        cs_tree_changed(SCR(s), s->root, RegionExtents(&win->borderSize));
    if (on) {
        /* tagged after a compositor named a pixmap holding its pixels or after a DBE back
         * buffer was allocated (the policy tag is set on mapped windows): the pixmaps of
         * redirected windows it is in or that are in it, and their back buffers, become
         * secret, as NameWindowPixmap or AllocateBackBufferName would make them now */
        for (a = win->parent; a; a = a->parent)
            cs_taint_if_redirected(a, s->GetScreenPixmap(s));
        cs_taint_redirected_subtree(win, s->GetScreenPixmap(s));
    }
}

/* A screen still holds secret pixels where no secure window is now: trail or stale. */
int
cs_residue(void)
{
    int i;

    for (i = 0; i < screenInfo.numScreens; i++) {
        struct cs_screen *cs = SCR(screenInfo.screens[i]);
        if (cs && (RegionNotEmpty(&cs->stale) || RegionNotEmpty(&cs->trail)))
            return 1;
    }
    return 0;
}

int
cs_secure_count_slow(void)
{
    /* callers only test it for zero: the residue walk only when no window is secure */
    return cs_cfg.paused ? 0 : cs_nsecure ? cs_nsecure : cs_residue();
}

int
cs_win_in_secure(WindowPtr win)
{
    for (; win; win = win->parent)
        if (cs_win_secure(win))
            return 1;
    return 0;
}

static int
cs_subtree_has_secure(WindowPtr win)
{
    WindowPtr c;

    if (cs_win_secure(win))
        return 1;
    for (c = win->firstChild; c; c = c->nextSib)
        if (cs_subtree_has_secure(c))
            return 1;
    return 0;
}

int
cs_win_has_secure(WindowPtr win)
{
    if (!cs_nsecure)
        return 0;
    return cs_win_in_secure(win) || cs_subtree_has_secure(win);
}

/* The client is the window manager: it holds SubstructureRedirect on a root (at most one
 * client can, the core refuses a second one). */
int
cs_client_is_wm(ClientPtr client)
{
    OtherClientsPtr oc;
    int i;

    for (i = 0; i < screenInfo.numScreens; i++)
        for (oc = wOtherClients(screenInfo.screens[i]->root); oc; oc = oc->next)
            if ((oc->mask & SubstructureRedirectMask) && CLIENT_ID(oc->resource) == client->index)
                return 1;
    return 0;
}

/* The window manager's frame of a secure window: `top`, a child of the root, is where the
 * window manager (cs_client_is_wm) last reparented a window of another client, S
 * (cs_window.framed), and S is secure and secret to `reader` (NULL: to everyone untrusted;
 * else not its own windows). The frame's decorations (title bar, border) show what S is
 * (its title), so the whole frame is secret. The frame stays secret when someone moves S
 * out of it, since the window manager's title is still drawn there, until S is destroyed
 * or untagged. Only the window manager's reparenting counts: any client can reparent a
 * window of its own into any other window, and must not make that window's decorations
 * or contents vanish from captures (README, denial of capture). Called when the cached
 * region is recomputed, not per request: one resource lookup per framed top-level. */
int
cs_win_frames_secure(WindowPtr top, ClientPtr reader)
{
    struct cs_window *cw;
    void *p;
    WindowPtr s;

    if (!cs_nsecure || !top->parent || top->parent->parent || !cs_rule_on(CS_RULE_FRAME))
        return 0;
    cw = dixLookupPrivate(&top->devPrivates, &cs_window_key_rec);
    if (!cw->framed ||
        dixLookupResourceByType(&p, cw->framed, RT_WINDOW, NullClient, DixGetAttrAccess) !=
        Success)
        return 0;
    s = p;
    return cs_win_secure(s) && (!reader || CLIENT_ID(s->drawable.id) != reader->index);
}

/* The title of `win` (WM_NAME and the like) is secret to `reader`: the window is or is
 * inside a secure window it does not own, or lies in the frame of one. */
int
cs_win_title_secret(WindowPtr win, ClientPtr reader)
{
    WindowPtr w, top = NULL;

    if (!cs_nsecure)
        return 0;
    for (w = win; w && w->parent; w = w->parent) {
        if (cs_win_secure(w) && CLIENT_ID(w->drawable.id) != reader->index)
            return 1;
        top = w;
    }
    return top && cs_win_frames_secure(top, reader);
}

/* Re-reads the tags (_CAPTURE_SHIELD_SECURE, _CAPTURE_SHIELD_POLICY) after a property
 * request touched one: the window is secure when either is non-zero. */
void
cs_update_secure(WindowPtr win)
{
    PropertyPtr prop;
    int on = 0, tagged = 0, was = cs_win_secure(win);

    for (prop = wUserProps(win); prop && !on; prop = prop->next)
        if (prop->propertyName == cs_atom || prop->propertyName == cs_patom) {
            tagged = 1;
            if (prop->type == XA_CARDINAL && prop->size > 0) {
                const unsigned char *b = prop->data;
                int i, n = prop->size * (prop->format / 8);
                for (i = 0; i < n; i++)
                    if (b[i])
                        on = 1;
            }
        }
    cs_set_win_secure(win, on);
    /* kind 6 (1.2): a tag was written, valid or not (a daemon treats a malformed one as
     * secure, fail safe), or the window stopped being secure */
    if (tagged || on != was)
        cs_report_secure(win);
}

int
cs_pixmap_tainted(PixmapPtr pix)
{
    return *(unsigned char *) dixLookupPrivate(&pix->devPrivates, &cs_pixmap_key_rec);
}

/* A tainted pixmap is refused by the resource hook to everyone but trusted clients and
 * its owner, in any request, so the hook stays armed while one exists: each tainted
 * pixmap holds it (flag 1) until cs_DestroyPixmap releases it. Inside the hook (armed)
 * holding it once more only counts; elsewhere (a window tagged, DBE reallocating a back
 * buffer) it may have to register the callback, which fails only without memory: then
 * the pixmap is still marked (flag 2, holds nothing; GetImage of it stays censored, other
 * uses are refused only while the hook is armed for another reason) and the failure
 * logged. */
void
cs_taint_pixmap(PixmapPtr pix)
{
    unsigned char *p = dixLookupPrivate(&pix->devPrivates, &cs_pixmap_key_rec);

    if (*p)
        return;
    if (cs_hook_hold()) {
        *p = 1;
    } else {
        *p = 2;
        LogMessageVerb(X_ERROR, 0, "CAPTURESHIELD: cannot arm the resource hook for a "
                       "secret pixmap\n");
    }
}

/* The one client owning every secure window in `win`, around it or in its window
 * manager frame: its index, -1 when there are several (or none: a secure window gone). */
static int
cs_secure_owner_in(WindowPtr win, int owner)
{
    WindowPtr c;

    if (cs_win_secure(win)) {
        int o = CLIENT_ID(win->drawable.id);
        if (owner && owner != o)
            return -1;
        owner = o;
    }
    for (c = win->firstChild; c && owner >= 0; c = c->nextSib)
        owner = cs_secure_owner_in(c, owner);
    return owner;
}

static int
cs_secure_owner(WindowPtr win)
{
    WindowPtr a;
    int owner = cs_secure_owner_in(win, 0);

    for (a = win->parent; a && owner >= 0; a = a->parent)
        if (cs_win_secure(a)) {
            int o = CLIENT_ID(a->drawable.id);
            if (owner && owner != o)
                return -1;
            owner = o;
        }
    return owner > 0 ? owner : -1;
}

/* cs_taint_pixmap for a pixmap holding `win`'s pixels: only the owner of the secure
 * windows shown in it may still use it (not whoever named it: secret.c, taint gaps). */
void
cs_taint_pixmap_win(PixmapPtr pix, WindowPtr win)
{
    struct cs_pixmap *p = dixLookupPrivate(&pix->devPrivates, &cs_pixmap_key_rec);
    int owner;

    cs_taint_pixmap(pix);
    if (!cs_rule_on(CS_RULE_TAINT))
        return;
    owner = cs_secure_owner(win);
    if (!p->reader)
        p->reader = owner;
    else if (p->reader != owner)
        p->reader = -1;
}

/* May `client` (untrusted) use tainted `pix`, named by resource `id`? */
int
cs_pixmap_reader(PixmapPtr pix, ClientPtr client, XID id)
{
    struct cs_pixmap *p = dixLookupPrivate(&pix->devPrivates, &cs_pixmap_key_rec);

    if (p->reader && cs_rule_on(CS_RULE_TAINT))
        return client->index == p->reader;
    return id && CLIENT_ID(id) == client->index;
}

/* A DOUBLE-BUFFER back buffer (resource `id` of type `type`) was allocated on `win`,
 * secret if `secret`: remembered, since DBE replaces the pixmap when the window is resized
 * and the window may be tagged later. */
void
cs_note_dbe_buffer(WindowPtr win, XID id, RESTYPE type, PixmapPtr pix, int secret)
{
    struct cs_window *w = dixLookupPrivate(&win->devPrivates, &cs_window_key_rec);

    w->dbe_id = id;
    w->dbe_type = type;
    w->dbe_secret = secret;
    if (secret)
        cs_taint_pixmap_win(pix, win);
}

void
cs_mark_dirty(void)
{
    int i;

    for (i = 0; i < screenInfo.numScreens; i++)
        if (SCR(screenInfo.screens[i]))
            cs_set_dirty(SCR(screenInfo.screens[i]));
}

/* ---- what the server does not repaint (secret.c describes the rule) ---- */

/* While the screen's secret area is computed: the part of the screen no one repaints
 * (NULL otherwise), and whether a trusted compositor paints the overlay window. */
static RegionPtr cs_unp;
static Bool cs_unp_comp;

/* `win` was redirected manually by an untrusted client (or is a child of a window whose
 * subwindows one redirected): nothing paints where it is. */
int
cs_untrusted_manual(WindowPtr win)
{
    struct cs_window *cw, *cp;

    if (win->redirectDraw != RedirectDrawManual || !cs_rule_on(CS_RULE_STALE))
        return 0;
    cw = dixLookupPrivate(&win->devPrivates, &cs_window_key_rec);
    if (cw->umanual)
        return 1;
    if (!win->parent)
        return 0;
    cp = dixLookupPrivate(&win->parent->devPrivates, &cs_window_key_rec);
    return cp->umanual_sub;
}

void
cs_note_manual_redirect(WindowPtr win, int subwindows, int on)
{
    struct cs_window *cw = dixLookupPrivate(&win->devPrivates, &cs_window_key_rec);

    if (subwindows)
        cw->umanual_sub = on;
    else
        cw->umanual = on;
    cs_mark_dirty();
}

void
cs_unpainted_begin(WindowPtr root, RegionPtr unpainted)
{
    WindowPtr c;

    cs_unp = unpainted;
    cs_unp_comp = FALSE;
    for (c = root->firstChild; c && !cs_unp_comp; c = c->nextSib)
        if (c->redirectDraw == RedirectDrawManual && !cs_untrusted_manual(c))
            cs_unp_comp = TRUE;
}

void
cs_unpainted_end(void)
{
    cs_unp = NULL;
}

/* `win` (its visible part `mine`, drawn into the framebuffer) has background None: no
 * exposure repaints it, the pixels under it stay. The overlay window (the server's
 * window in the root with background None other than the screen saver) is painted by
 * the compositor when a trusted one redirects the root's windows. */
void
cs_note_unpainted(WindowPtr win, RegionPtr mine, int server_owned)
{
    WindowPtr w, c;
    RegionRec r;

    if (!cs_unp)
        return;
    for (w = win; w->backgroundState == ParentRelative && w->parent; w = w->parent)
        ;
    if (w->backgroundState != None)
        return;
    if (server_owned && win->parent && !win->parent->parent && cs_unp_comp &&
        win != win->drawable.pScreen->screensaver.pWindow)
        return;
    RegionNull(&r);
    RegionCopy(&r, mine);
    for (c = win->firstChild; c; c = c->nextSib)
        if (c->realized && c->drawable.class == InputOutput)
            RegionSubtract(&r, &r, &c->borderSize);
    RegionUnion(cs_unp, cs_unp, &r);
    cs_bound(cs_unp, 1);
    RegionUninit(&r);
}

/* `win`, an ancestor or a descendant is a secure window `client` does not own. */
static int
cs_subtree_foreign(WindowPtr win, int idx)
{
    WindowPtr c;

    if (cs_win_secure(win) && CLIENT_ID(win->drawable.id) != idx)
        return 1;
    for (c = win->firstChild; c; c = c->nextSib)
        if (cs_subtree_foreign(c, idx))
            return 1;
    return 0;
}

/* What is drawn into `win` stays where `reader` cannot read it back: inside a secure
 * window of another client (not one of its own: rule ownsecure). */
int
cs_win_sealed(WindowPtr win, ClientPtr reader)
{
    for (; win; win = win->parent)
        if (cs_win_secure(win) && (!cs_rule_on(CS_RULE_OWNSECURE) ||
                                   CLIENT_ID(win->drawable.id) != reader->index))
            return 1;
    return 0;
}

int
cs_win_foreign_secure(WindowPtr win, ClientPtr client)
{
    WindowPtr a;

    if (!cs_nsecure)
        return 0;
    for (a = win->parent; a; a = a->parent)
        if (cs_win_secure(a) && CLIENT_ID(a->drawable.id) != client->index)
            return 1;
    return cs_subtree_foreign(win, client->index);
}

/* Walks a subtree from the top of the stacking order down, collecting the part of each
 * secure window (with its descendants) that no window above it covers. Secure windows
 * owned by `exclude` are not secret to it but still cover what lies below them.
 * Windows owned by the server (the Composite overlay window, painted by the trusted
 * compositor), the windows inside them (`inert`: mutter's, kwin's and xfwm4's GL output
 * window is a child of the overlay window, and shows the secure window's pixels where
 * it covers it) and depth-32 windows (translucent under a compositor) cover nothing.
 * Any client may put windows into the overlay window: they then only make more of the
 * screen secret, never less. */
/* A region operation of the current computation ran out of memory (cs_compute then makes
 * the whole domain secret: fail closed). */
static int cs_oom;
#define CS_ROK(call, dst) ((void) (cs_rgn_ok((call), (dst)) || (cs_oom = 1)))

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

unsigned long cs_bounded;       /* times a region was bounded (log level 7) */
int cs_nobound;                  /* the exact area is being computed (verify mode) */

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

    if (RegionNumRects(r) <= most || RegionBroken(r) || cs_nobound)
        return;
    cs_bounded++;
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

/* While the secret area is computed per owner (cs_compute_owners): the screen whose
 * owners' areas get each secure window's visible part. */
static struct cs_screen *cs_split;

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
        if (RegionNumRects(out) <= CS_MAX_BOXES || cs_nobound)
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

static void
cs_visit(WindowPtr win, RegionPtr clip, RegionPtr covered, RegionPtr secret, ClientPtr exclude,
         int inert, RegionPtr drawn, int manual)
{
    RegionRec mine, inner;
    WindowPtr c;
    int occludes, secure, hide, server_owned;

    RegionNull(&mine);
    CS_ROK(RegionIntersect(&mine, &win->borderSize, clip), &mine);
    if (!RegionNotEmpty(&mine)) {
        RegionUninit(&mine);
        return;
    }
    server_owned = CLIENT_ID(win->drawable.id) == 0;
    occludes = !inert && !server_owned && win->drawable.depth != 32;
    secure = cs_win_secure(win);
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
        if (hide) {
            RegionRec vis;
            RegionNull(&vis);
            CS_ROK(RegionSubtract(&vis, &mine, covered), &vis);
            if (cs_split) {
                /* its owner's area, bounded on its own (cs_union_owners) */
                RegionPtr o = cs_owner_region(cs_split, CLIENT_ID(win->drawable.id));
                if (!o)
                    cs_oom = 1;
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
        CS_ROK(RegionUnion(covered, covered, &mine), covered);
        cs_bound(covered, 0);
        RegionUninit(&mine);
        return;
    }
    RegionNull(&inner);
    CS_ROK(RegionIntersect(&inner, &win->winSize, clip), &inner);
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
    cs_oom = 0;
    RegionNull(&covered);
    RegionNull(&clip);
    CS_ROK(RegionCopy(&clip, &top->borderSize), &clip);
    if (within && !cs_oom)
        CS_ROK(RegionIntersect(&clip, &clip, within), &clip);
    if (!cs_oom)
        cs_visit(top, &clip, &covered, secret, exclude, 0, drawn, 0);
    RegionUninit(&covered);
    RegionUninit(&clip);
    if (cs_oom) {
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
    cs_split = cs;
    ok = cs_compute_rgn(root, secret, NULL, drawn, within);
    cs_split = NULL;
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

/* ---- the trail: where a compositor may still show a secure window ----
 *
 * A compositor draws a window from its pixmap wherever and whenever it likes, not where
 * X says the window is: mutter animates minimising, restoring and workspace switches
 * (the window flies toward a corner or slides off the screen), and shows the old,
 * full-screen image for a moment after a window left full screen. So for TrailMs after
 * a change, an untrusted read also finds black where the compositor may still show it:
 * the box around the secure area a compositor drew before and after a change of its
 * geometry, and the whole screen after a change that starts such an animation (a secure
 * window's WM_STATE or _NET_WM_STATE, the root's _NET_CURRENT_DESKTOP: cs_settle).
 * Where X draws the window itself (no compositor) there is no trail. */
Bool cs_compositing;     /* a secure window was seen under manual redirection */

static CARD32
cs_trail_expire(OsTimerPtr timer, CARD32 now, void *arg)
{
    struct cs_screen *cs = arg;

    RegionEmpty(&cs->trail);
    cs_set_dirty(cs);
    return 0;
}

void
cs_trail_add(struct cs_screen *cs, BoxPtr box)
{
    RegionRec r;

    if (cs_cfg.trail_ms <= 0 || box->x1 >= box->x2 || box->y1 >= box->y2)
        return;
    RegionInit(&r, box, 1);
    if (!cs_rgn_ok(RegionUnion(&cs->trail, &cs->trail, &r), &cs->trail)) {
        BoxRec all = { -MAXSHORT, -MAXSHORT, MAXSHORT, MAXSHORT };
        RegionReset(&cs->trail, &all);  /* out of memory: all of it, for TrailMs */
    }
    cs_bound(&cs->trail, 1);
    RegionUninit(&r);
    cs->trail_timer = TimerSet(cs->trail_timer, 0, cs_cfg.trail_ms, cs_trail_expire, cs);
    cs_set_dirty(cs);
}

void
cs_settle(void)
{
    int i;

    if (!cs_compositing || !cs_nsecure)
        return;
    for (i = 0; i < screenInfo.numScreens; i++)
        if (SCR(screenInfo.screens[i])) {
            WindowPtr root = screenInfo.screens[i]->root;
            if (root)
                cs_trail_add(SCR(screenInfo.screens[i]), RegionExtents(&root->winSize));
        }
}

/* Computes the screen's secret area again (`root`: its root window), with the trail. */
static void
cs_refresh_full(struct cs_screen *cs, WindowPtr root)
{
    RegionRec old;
    Bool ok;

    RegionRec unpainted;

    RegionNull(&old);
    RegionNull(&unpainted);
    ok = cs_rgn_ok(RegionCopy(&old, &cs->drawn), &old);
    cs_unpainted_begin(root, &unpainted);
    ok = cs_compute_owners(cs, root, &cs->secret, &cs->drawn, NULL) && ok;
    cs_unpainted_end();
    if (RegionNotEmpty(&cs->drawn))
        cs_compositing = TRUE;
    if (RegionNotEmpty(&old) && !RegionEqual(&old, &cs->drawn)) {
        RegionUnion(&old, &old, &cs->drawn);
        cs_trail_add(cs, RegionExtents(&old));
    }
    RegionUninit(&old);
    /* stale: what was shown as secret and lies where nothing repainted it since */
    if (cs->lazy && cs_rule_on(CS_RULE_STALE) && RegionNotEmpty(&unpainted)) {
        /* changes were left to this computation while nothing kept unrepainted pixels,
         * and now something does (a background changed to None, no tree change): where
         * a secure window was shown in between is not known, only that it lies in `vis`
         * or in what those changes touched; all of it counts (fail safe: over-censors
         * that box's unrepainted part until it is repainted) */
        RegionRec sw;
        RegionInit(&sw, &cs->swept, 1);
        RegionUnion(&cs->vis, &cs->vis, &sw);
        RegionUninit(&sw);
    }
    cs->lazy = FALSE;
    cs_refreshes++;
    LogMessageVerb(X_INFO, 7, "CAPTURESHIELD: secret area computed (%lu computations, %lu "
                   "tree changes left to a read, %lu regions bounded)\n", cs_refreshes,
                   cs_lazy, cs_bounded);
    if (cs_rule_on(CS_RULE_STALE)) {
        RegionUnion(&cs->stale, &cs->stale, &cs->vis);
        RegionIntersect(&cs->stale, &cs->stale, &unpainted);
        cs_bound(&cs->stale, 1);
    } else {
        RegionEmpty(&cs->stale);
    }
    RegionUninit(&unpainted);
    RegionCopy(&cs->vis, &cs->secret);
    if (RegionNotEmpty(&cs->stale))
        RegionUnion(&cs->secret, &cs->secret, &cs->stale);
    if (RegionNotEmpty(&cs->trail))
        ok = cs_rgn_ok(RegionUnion(&cs->secret, &cs->secret, &cs->trail), &cs->secret) && ok;
    if (ok)
        cs_bound(&cs->secret, 1);
    if (!ok) {
        /* out of memory: the whole screen is secret, computed again at the next read */
        RegionReset(&cs->secret, RegionExtents(&root->borderSize));
        cs->dfull = TRUE;
        return;
    }
    cs->dirty = FALSE;
    cs->dfull = FALSE;
    cs->incs = 0;
    RegionEmpty(&cs->dreg);
}

/* An incremental computation keeps an owner's coarsened area (cs_bound) outside what
 * changed; a full one every CS_FULL_EVERY of them gives the coarsening back. */
#define CS_FULL_EVERY 64

static unsigned long cs_incr, cs_verified, cs_mismatch;
int cs_verify;           /* env CS_VERIFY_REGION=1 (tests): each computation is
                          * checked against an exact full one */

/* Verify mode: the exact area (no bound, computed in full) must lie inside the cached
 * one; a pixel that does not is logged and made secret (fail closed). */
static void
cs_verify_area(struct cs_screen *cs, WindowPtr root, const char *how)
{
    RegionRec exact, miss;

    RegionNull(&exact);
    RegionNull(&miss);
    cs_nobound = 1;
    cs_compute(root, &exact, NULL, NULL);
    cs_nobound = 0;
    RegionSubtract(&miss, &exact, &cs->secret);
    cs_verified++;
    if (RegionNotEmpty(&miss)) {
        BoxPtr e = RegionExtents(&miss);
        cs_mismatch++;
        LogMessageVerb(X_ERROR, 0, "CAPTURESHIELD: verify: the %s secret area misses %d "
                       "rectangles of the exact one (within %d,%d-%d,%d); made secret\n",
                       how, (int) RegionNumRects(&miss), e->x1, e->y1, e->x2, e->y2);
        RegionUnion(&cs->secret, &cs->secret, &miss);
    }
    LogMessageVerb(X_INFO, 7, "CAPTURESHIELD: verify: %lu checks (%lu incremental), %lu "
                   "mismatches (last: %s, %d owners, %d rectangles, exact %d)\n",
                   cs_verified, cs_incr, cs_mismatch, how, cs->nown,
                   (int) RegionNumRects(&cs->secret), (int) RegionNumRects(&exact));
    RegionUninit(&exact);
    RegionUninit(&miss);
}

/* The secret area computed again where it may have changed: in full after a change that
 * could be anywhere (cs_set_dirty), while a trail, stale, compositor-drawn or
 * unrepainted area exists (those follow the whole screen), and every CS_FULL_EVERY
 * times; else only inside `dreg`, the old and new places of the windows that changed
 * (cs_dirty_box): the owners' areas outside it are kept. A change of a window's place,
 * size, shape, mapping or stacking changes what is visible of any window only where it
 * was or is, and a window's subwindows lie inside it. */
void
cs_refresh(struct cs_screen *cs, WindowPtr root)
{
    const char *how = "full";

    if (cs->dfull || cs->incs >= CS_FULL_EVERY || RegionNotEmpty(&cs->drawn) ||
        RegionNotEmpty(&cs->trail) || RegionNotEmpty(&cs->stale) || cs_unpaint_source(root)) {
        cs_refresh_full(cs, root);
    } else {
        how = "incremental";
        if (!cs_compute_owners(cs, root, &cs->secret, NULL, &cs->dreg)) {
            cs_refresh_full(cs, root);  /* out of memory: all of it, as a full one does */
            return;
        }
        /* nothing keeps unrepainted pixels, no trail: the stale area stays empty */
        RegionCopy(&cs->vis, &cs->secret);
        cs->lazy = FALSE;
        cs->dirty = FALSE;
        cs->incs++;
        cs_incr++;
        RegionEmpty(&cs->dreg);
        LogMessageVerb(X_INFO, 7, "CAPTURESHIELD: secret area computed incrementally (%lu "
                       "times, %lu computations in full, %lu regions bounded)\n", cs_incr,
                       cs_refreshes, cs_bounded);
    }
    if (cs_verify && !cs->dirty)
        cs_verify_area(cs, root, how);
}

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

/* The common answer first, with no call but tail calls (so no stack frame): a window
 * read from the framebuffer while windows are secure and the secret area is computed. */
int
cs_read_clear(DrawablePtr draw, int x, int y, int w, int h)
{
    WindowPtr dom;
    struct cs_screen *cs;
    BoxPtr e;

    if (w <= 0 || h <= 0 || cs_cfg.paused || draw->type != DRAWABLE_WINDOW || !cs_nsecure)
        return cs_read_clear_slow(draw, x, y, w, h);
    dom = cs_domain((WindowPtr) draw);
    cs = SCR(draw->pScreen);
    if (dom->parent || cs->dirty)
        return 0;
    if (!RegionNotEmpty(&cs->secret))
        return 1;
    x += draw->x;
    y += draw->y;
    /* the box (in int) misses the secret area's extents (which lie in the 16-bit range):
     * so does the box clamped to that range */
    e = RegionExtents(&cs->secret);
    if (x >= e->x2 || x + w <= e->x1 || y >= e->y2 || y + h <= e->y1)
        return 1;
    return cs_read_clear_rects(cs, x, y, w, h);
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

/* ---- window tree changes mark the cache dirty ---- */

/* Something on the screen keeps pixels nobody repaints, or a compositor draws windows
 * where it likes: a realized window with background None (ParentRelative resolved) or
 * under manual redirection (trusted or not). Then every place a secure window is shown
 * between two reads counts (stale, trail) and the secret area follows each change of
 * the tree. A plain walk, no region operation: a few instructions per realized window. */
int
cs_unpaint_source(WindowPtr root)
{
    WindowPtr w = root, b;

    while (w) {
        if (w->realized && w->drawable.class == InputOutput) {
            if (w->redirectDraw == RedirectDrawManual)
                return 1;
            for (b = w; b->backgroundState == ParentRelative && b->parent; b = b->parent)
                ;
            if (b->backgroundState == None)
                return 1;
            if (w->firstChild) {
                w = w->firstChild;
                continue;
            }
        }
        while (w != root && !w->nextSib)
            w = w->parent;
        w = w == root ? NULL : w->nextSib;
    }
    return 0;
}

/* The window tree changed (its clip lists are final here). The secret area is computed
 * at once, not at the next read, when the next read could otherwise miss a place a
 * secure window was shown between two reads (the trail, stale areas: secret.c): while
 * something keeps unrepainted pixels or a compositor draws (cs_unpaint_source), while a
 * trail or stale area exists. Otherwise the area is only marked dirty and computed once
 * at the next read, however many changes came in between (a popup mapped and unmapped
 * costs a walk of the tree, no region computation; a client moving its own secure
 * windows again and again costs nothing until someone reads). */
/* Inside one of the geometry wrappers below (they mark the window's old and new place)
 * and inside ValidateTree (the clip changes it makes lie in the place it was given). */
static int cs_geom, cs_in_vt;

static int
cs_ValidateTree(WindowPtr parent, WindowPtr child, VTKind kind)
{
    ScreenPtr s = parent->drawable.pScreen;
    struct cs_screen *cs = SCR(s);
    int r;

    /* what changed: the window mapped, unmapped or restacked (`child`; its subwindows lie
     * inside it); without one, a move, resize or reshape marks its own places (cs_geom),
     * anything else may be anywhere */
    if (child)
        cs_dirty_win(cs, child);
    else if (!cs_geom)
        cs_set_dirty(cs);
    cs_in_vt++;
    s->ValidateTree = cs->ValidateTree;
    r = s->ValidateTree(parent, child, kind);
    cs->ValidateTree = s->ValidateTree;
    s->ValidateTree = cs_ValidateTree;
    cs_in_vt--;
    if (!cs_rule_on(CS_RULE_STALE) || !s->root ||
        !(cs_nsecure || RegionNotEmpty(&cs->vis) || RegionNotEmpty(&cs->stale)))
        return r;
    cs_tree_changed(cs, s->root, RegionExtents(child ? &child->borderSize : &parent->winSize));
    return r;
}

/* The secret area may have changed inside `b`: computed now when a later computation
 * could miss where a secure window was shown (cs_ValidateTree), else marked dirty. */
void
cs_tree_changed(struct cs_screen *cs, WindowPtr root, BoxPtr b)
{
    if (RegionNotEmpty(&cs->drawn) || RegionNotEmpty(&cs->trail) ||
        RegionNotEmpty(&cs->stale) || cs_unpaint_source(root)) {
        cs_refresh(cs, root);
        cs_gen++;
    } else {
        if (!cs->lazy)
            cs->swept = *b;
        else {
            cs->swept.x1 = min(cs->swept.x1, b->x1);
            cs->swept.y1 = min(cs->swept.y1, b->y1);
            cs->swept.x2 = max(cs->swept.x2, b->x2);
            cs->swept.y2 = max(cs->swept.y2, b->y2);
        }
        cs->lazy = TRUE;
        cs->dirty = TRUE;       /* where: marked by the caller */
        cs_gen++;
        cs_lazy++;
    }
}

static void
cs_ClipNotify(WindowPtr win, int dx, int dy)
{
    ScreenPtr s = win->drawable.pScreen;
    struct cs_screen *cs = SCR(s);

    if (!cs_in_vt)
        cs_set_dirty(cs);       /* not from ValidateTree: where is not known */
    if (cs->ClipNotify) {
        s->ClipNotify = cs->ClipNotify;
        s->ClipNotify(win, dx, dy);
        cs->ClipNotify = s->ClipNotify;
        s->ClipNotify = cs_ClipNotify;
    }
}

static Bool
cs_PositionWindow(WindowPtr win, int x, int y)
{
    ScreenPtr s = win->drawable.pScreen;
    struct cs_screen *cs = SCR(s);
    struct cs_window *w = dixLookupPrivate(&win->devPrivates, &cs_window_key_rec);
    Bool r;

    /* inside a move or resize: marked by it; an unrealized window shows nothing */
    if (!cs_geom && win->realized)
        cs_set_dirty(cs);
    s->PositionWindow = cs->PositionWindow;
    r = s->PositionWindow(win, x, y);
    cs->PositionWindow = s->PositionWindow;
    s->PositionWindow = cs_PositionWindow;
    /* DBE (wrapped below) gives a resized window new buffer pixmaps, with the old contents
     * copied in and every buffer id pointed at them: the new back buffer is as secret */
    if (w->dbe_id && w->dbe_secret)
        cs_taint_dbe(win);
    return r;
}

static Bool
cs_RealizeWindow(WindowPtr win)
{
    ScreenPtr s = win->drawable.pScreen;
    struct cs_screen *cs = SCR(s);
    Bool r;

    cs_dirty_win(cs, win);
    s->RealizeWindow = cs->RealizeWindow;
    r = s->RealizeWindow(win);
    cs->RealizeWindow = s->RealizeWindow;
    s->RealizeWindow = cs_RealizeWindow;
    return r;
}

static Bool
cs_UnrealizeWindow(WindowPtr win)
{
    ScreenPtr s = win->drawable.pScreen;
    struct cs_screen *cs = SCR(s);
    Bool r;

    cs_dirty_win(cs, win);
    s->UnrealizeWindow = cs->UnrealizeWindow;
    r = s->UnrealizeWindow(win);
    cs->UnrealizeWindow = s->UnrealizeWindow;
    s->UnrealizeWindow = cs_UnrealizeWindow;
    return r;
}

static Bool
cs_DestroyWindow(WindowPtr win)
{
    ScreenPtr s = win->drawable.pScreen;
    struct cs_screen *cs = SCR(s);
    Bool r;

    cs_set_win_secure(win, 0);
    cs_forget_window(win);
    if (win->realized)
        cs_dirty_win(cs, win);
    s->DestroyWindow = cs->DestroyWindow;
    r = s->DestroyWindow(win);
    cs->DestroyWindow = s->DestroyWindow;
    s->DestroyWindow = cs_DestroyWindow;
    return r;
}

/* A window's place, size, border or shape changes: the secret area may change where it
 * was and where it is (its subwindows lie inside it), nowhere else. */
static void
cs_MoveWindow(WindowPtr win, int x, int y, WindowPtr sib, VTKind kind)
{
    ScreenPtr s = win->drawable.pScreen;
    struct cs_screen *cs = SCR(s);

    cs_dirty_win(cs, win);
    cs_geom++;
    s->MoveWindow = cs->MoveWindow;
    s->MoveWindow(win, x, y, sib, kind);
    cs->MoveWindow = s->MoveWindow;
    s->MoveWindow = cs_MoveWindow;
    cs_geom--;
    cs_dirty_win(cs, win);
}

static void
cs_ResizeWindow(WindowPtr win, int x, int y, unsigned int w, unsigned int h, WindowPtr sib)
{
    ScreenPtr s = win->drawable.pScreen;
    struct cs_screen *cs = SCR(s);

    cs_dirty_win(cs, win);
    cs_geom++;
    s->ResizeWindow = cs->ResizeWindow;
    s->ResizeWindow(win, x, y, w, h, sib);
    cs->ResizeWindow = s->ResizeWindow;
    s->ResizeWindow = cs_ResizeWindow;
    cs_geom--;
    cs_dirty_win(cs, win);
}

static void
cs_ChangeBorderWidth(WindowPtr win, unsigned int width)
{
    ScreenPtr s = win->drawable.pScreen;
    struct cs_screen *cs = SCR(s);

    cs_dirty_win(cs, win);
    cs_geom++;
    s->ChangeBorderWidth = cs->ChangeBorderWidth;
    s->ChangeBorderWidth(win, width);
    cs->ChangeBorderWidth = s->ChangeBorderWidth;
    s->ChangeBorderWidth = cs_ChangeBorderWidth;
    cs_geom--;
    cs_dirty_win(cs, win);
}

static void
cs_SetShape(WindowPtr win, int kind)
{
    ScreenPtr s = win->drawable.pScreen;
    struct cs_screen *cs = SCR(s);

    cs_dirty_win(cs, win);
    cs_geom++;
    s->SetShape = cs->SetShape;
    s->SetShape(win, kind);
    cs->SetShape = s->SetShape;
    s->SetShape = cs_SetShape;
    cs_geom--;
    cs_dirty_win(cs, win);
}

/* A window changed parent: when the window manager (its ReparentWindow request) put a
 * window of another client into a child of the root, that child is its frame
 * (cs_win_frames_secure). */
static void
cs_ReparentWindow(WindowPtr win, WindowPtr prior)
{
    ScreenPtr s = win->drawable.pScreen;
    struct cs_screen *cs = SCR(s);
    WindowPtr top = win;

    cs_set_dirty(cs);
    while (top->parent && top->parent->parent)
        top = top->parent;
    if (top != win && top->parent && cs_reparenting && cs_client_is_wm(cs_reparenting)) {
        struct cs_window *ct = dixLookupPrivate(&top->devPrivates, &cs_window_key_rec);
        struct cs_window *cw = dixLookupPrivate(&win->devPrivates, &cs_window_key_rec);
        /* a window of another client is framed here; a window manager's own window (a
         * wrapper it reparented the client into while the wrapper was a top-level) brings
         * the window it frames along */
        if (CLIENT_ID(win->drawable.id) != cs_reparenting->index)
            ct->framed = win->drawable.id;
        else if (cw->framed)
            ct->framed = cw->framed;
    }
    s->ReparentWindow = cs->ReparentWindow;
    if (s->ReparentWindow)
        s->ReparentWindow(win, prior);
    cs->ReparentWindow = s->ReparentWindow;
    s->ReparentWindow = cs_ReparentWindow;
    if (cs_rule_on(CS_RULE_TAINT) && cs_win_has_secure(win)) {
        /* secure pixels moved into (or a window moved into secure pixels under) redirected
         * windows whose pixmaps may have been named before: those pixmaps are secret now,
         * as NameWindowPixmap would make them */
        WindowPtr a;
        for (a = win->parent; a; a = a->parent)
            cs_taint_if_redirected(a, s->GetScreenPixmap(s));
        cs_taint_redirected_subtree(win, s->GetScreenPixmap(s));
    }
}

static int
cs_ProcReparentWindow(ClientPtr c)
{
    ClientPtr prev = cs_reparenting;
    int r;

    cs_reparenting = c;
    r = c->swapped ? cs_orig_sreparent(c) : cs_orig_reparent(c);
    cs_reparenting = prev;
    return r;
}

/* The last reference to a tainted pixmap goes: one reason less to keep the resource hook
 * armed. Every layer frees a pixmap when DestroyPixmap finds refcnt 1 (fb, exa, glamor);
 * the flag is cleared at the same time, so a pixmap never releases the hook twice. */
Bool
cs_DestroyPixmap(PixmapPtr pix)
{
    ScreenPtr s = pix->drawable.pScreen;
    struct cs_screen *cs = SCR(s);
    Bool r;

    if (pix->refcnt == 1) {
        struct cs_pixmap *p = dixLookupPrivate(&pix->devPrivates, &cs_pixmap_key_rec);
        if (p->flag == 1)
            cs_hook_release();
        p->flag = 0;
        p->reader = 0;
    }
    s->DestroyPixmap = cs->DestroyPixmap;
    r = s->DestroyPixmap(pix);
    cs->DestroyPixmap = s->DestroyPixmap;
    s->DestroyPixmap = cs_DestroyPixmap;
    return r;
}

/* CloseScreen (after its procs were restored, wrap.c): the screen's state goes, with
 * its trail timer. */
static void
cs_close_screen(ScreenPtr s)
{
    struct cs_screen *cs = SCR(s);

    if (!cs)
        return;
    TimerFree(cs->trail_timer);
    while (cs->nown > 0)
        RegionUninit(&cs->own[--cs->nown].r);
    free(cs->own);
    RegionUninit(&cs->dreg);
    RegionUninit(&cs->secret);
    RegionUninit(&cs->drawn);
    RegionUninit(&cs->trail);
    RegionUninit(&cs->vis);
    RegionUninit(&cs->stale);
    free(cs);
    dixSetPrivate(&s->devPrivates, &cs_screen_key_rec, NULL);
}

Bool
cs_region_init(void)
{
    int i;

    if (!dixRegisterPrivateKey(&cs_screen_key_rec, PRIVATE_SCREEN, 0) ||
        !dixRegisterPrivateKey(&cs_window_key_rec, PRIVATE_WINDOW, sizeof(struct cs_window)) ||
        !dixRegisterPrivateKey(&cs_pixmap_key_rec, PRIVATE_PIXMAP, sizeof(struct cs_pixmap)))
        return FALSE;
    cs_atom = MakeAtom(CS_SECURE_NAME, strlen(CS_SECURE_NAME), TRUE);
    cs_patom = MakeAtom(CS_POLICY_NAME, strlen(CS_POLICY_NAME), TRUE);
    cs_nsecure = 0;
    cs_compositing = FALSE;
    cs_geom = cs_in_vt = 0;
    cs_verify = getenv("CS_VERIFY_REGION") && !strcmp(getenv("CS_VERIFY_REGION"), "1");
    if (cs_verify)
        LogMessageVerb(X_WARNING, 0, "CAPTURESHIELD: CS_VERIFY_REGION=1: each secret area "
                       "computed is checked against an exact one (slow; tests only)\n");
    if (!cs_on_close_screen(cs_close_screen))
        return FALSE;
    for (i = 0; i < screenInfo.numScreens; i++) {
        ScreenPtr s = screenInfo.screens[i];
        struct cs_screen *cs = calloc(1, sizeof(*cs));
        if (!cs)
            return FALSE;
        dixSetPrivate(&s->devPrivates, &cs_screen_key_rec, cs);
        RegionNull(&cs->secret);
        RegionNull(&cs->drawn);
        RegionNull(&cs->trail);
        RegionNull(&cs->dreg);
        cs_set_dirty(cs);
        RegionNull(&cs->vis);
        RegionNull(&cs->stale);
        if (!CS_WRAP_SCREEN(s, ClipNotify, cs->ClipNotify, cs_ClipNotify) ||
            !CS_WRAP_SCREEN(s, PositionWindow, cs->PositionWindow, cs_PositionWindow) ||
            !CS_WRAP_SCREEN(s, RealizeWindow, cs->RealizeWindow, cs_RealizeWindow) ||
            !CS_WRAP_SCREEN(s, UnrealizeWindow, cs->UnrealizeWindow, cs_UnrealizeWindow) ||
            !CS_WRAP_SCREEN(s, DestroyWindow, cs->DestroyWindow, cs_DestroyWindow) ||
            !CS_WRAP_SCREEN(s, DestroyPixmap, cs->DestroyPixmap, cs_DestroyPixmap) ||
            !CS_WRAP_SCREEN(s, ReparentWindow, cs->ReparentWindow, cs_ReparentWindow) ||
            !CS_WRAP_SCREEN(s, ValidateTree, cs->ValidateTree, cs_ValidateTree) ||
            !CS_WRAP_SCREEN(s, MoveWindow, cs->MoveWindow, cs_MoveWindow) ||
            !CS_WRAP_SCREEN(s, ResizeWindow, cs->ResizeWindow, cs_ResizeWindow) ||
            !CS_WRAP_SCREEN(s, ChangeBorderWidth, cs->ChangeBorderWidth, cs_ChangeBorderWidth) ||
            !CS_WRAP_SCREEN(s, SetShape, cs->SetShape, cs_SetShape))
            return FALSE;
    }
    cs_reparenting = NULL;
    return cs_wrap_proc(X_ReparentWindow, cs_ProcReparentWindow, &cs_orig_reparent,
                        &cs_orig_sreparent);
}
