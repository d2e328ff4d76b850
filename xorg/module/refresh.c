/* CaptureShield Xorg module: the cached secret area per screen: marked dirty where it may have
 * changed, computed again in full or incrementally (verify mode). */
#include "cs-int.h"

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

/* this file's state (cs-int.h) */
struct cs_refresh_state cs_refresh_st;

void
cs_mark_dirty(void)
{
    int i;

    for (i = 0; i < screenInfo.numScreens; i++)
        if (SCR(screenInfo.screens[i]))
            cs_set_dirty(SCR(screenInfo.screens[i]));
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
        cs_trail_st.compositing = TRUE;
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
    cs_refresh_st.refreshes++;
    LogMessageVerb(X_INFO, 7, "CAPTURESHIELD: secret area computed (%lu computations, %lu "
                   "tree changes left to a read, %lu regions bounded)\n", cs_refresh_st.refreshes,
                   cs_refresh_st.lazy, cs_area_st.bounded);
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

/* Verify mode: the exact area (no bound, computed in full) must lie inside the cached
 * one; a pixel that does not is logged and made secret (fail closed). */
static void
cs_verify_area(struct cs_screen *cs, WindowPtr root, const char *how)
{
    RegionRec exact, miss;

    RegionNull(&exact);
    RegionNull(&miss);
    cs_area_st.nobound = 1;
    cs_compute(root, &exact, NULL, NULL);
    cs_area_st.nobound = 0;
    RegionSubtract(&miss, &exact, &cs->secret);
    cs_refresh_st.verified++;
    if (RegionNotEmpty(&miss)) {
        BoxPtr e = RegionExtents(&miss);
        cs_refresh_st.mismatch++;
        LogMessageVerb(X_ERROR, 0, "CAPTURESHIELD: verify: the %s secret area misses %d "
                       "rectangles of the exact one (within %d,%d-%d,%d); made secret\n",
                       how, (int) RegionNumRects(&miss), e->x1, e->y1, e->x2, e->y2);
        RegionUnion(&cs->secret, &cs->secret, &miss);
    }
    LogMessageVerb(X_INFO, 7, "CAPTURESHIELD: verify: %lu checks (%lu incremental), %lu "
                   "mismatches (last: %s, %d owners, %d rectangles, exact %d)\n",
                   cs_refresh_st.verified, cs_refresh_st.incr, cs_refresh_st.mismatch, how,
                   cs->nown, (int) RegionNumRects(&cs->secret), (int) RegionNumRects(&exact));
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
        cs_refresh_st.incr++;
        RegionEmpty(&cs->dreg);
        LogMessageVerb(X_INFO, 7, "CAPTURESHIELD: secret area computed incrementally (%lu "
                       "times, %lu computations in full, %lu regions bounded)\n",
                       cs_refresh_st.incr, cs_refresh_st.refreshes, cs_area_st.bounded);
    }
    if (cs_refresh_st.verify && !cs->dirty)
        cs_verify_area(cs, root, how);
}
