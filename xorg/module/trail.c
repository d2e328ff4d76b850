/* CaptureShield Xorg module: what stays secret where no secure window is now: areas nobody
 * repaints (stale), the compositor trail, the residue of both. */
#include "cs-int.h"

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

/* ---- what the server does not repaint (secret.c describes the rule) ---- */

/* this file's state (cs-int.h) */
struct cs_trail_state cs_trail_st;

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

    cs_trail_st.unp = unpainted;
    cs_trail_st.unp_comp = FALSE;
    for (c = root->firstChild; c && !cs_trail_st.unp_comp; c = c->nextSib)
        if (c->redirectDraw == RedirectDrawManual && !cs_untrusted_manual(c))
            cs_trail_st.unp_comp = TRUE;
}

void
cs_unpainted_end(void)
{
    cs_trail_st.unp = NULL;
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

    if (!cs_trail_st.unp)
        return;
    for (w = win; w->backgroundState == ParentRelative && w->parent; w = w->parent)
        ;
    if (w->backgroundState != None)
        return;
    if (server_owned && win->parent && !win->parent->parent && cs_trail_st.unp_comp &&
        win != win->drawable.pScreen->screensaver.pWindow)
        return;
    RegionNull(&r);
    RegionCopy(&r, mine);
    for (c = win->firstChild; c; c = c->nextSib)
        if (c->realized && c->drawable.class == InputOutput)
            RegionSubtract(&r, &r, &c->borderSize);
    RegionUnion(cs_trail_st.unp, cs_trail_st.unp, &r);
    cs_bound(cs_trail_st.unp, 1);
    RegionUninit(&r);
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

    if (!cs_trail_st.compositing || !cs_nsecure)
        return;
    for (i = 0; i < screenInfo.numScreens; i++)
        if (SCR(screenInfo.screens[i])) {
            WindowPtr root = screenInfo.screens[i]->root;
            if (root)
                cs_trail_add(SCR(screenInfo.screens[i]), RegionExtents(&root->winSize));
        }
}

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
