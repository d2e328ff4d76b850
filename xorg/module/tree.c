/* CaptureShield Xorg module: the screen wrappers that follow the window tree (and the
 * ReparentWindow request), the per-screen state's init and close. */
#include "cs-int.h"

#define CS_SECURE_NAME "_CAPTURE_SHIELD_SECURE"
#define CS_POLICY_NAME "_CAPTURE_SHIELD_POLICY"

DevPrivateKeyRec cs_screen_key_rec;     /* struct cs_screen (cs-int.h) */
/* This file's state. */
static struct {
    int (*orig_reparent)(ClientPtr), (*orig_sreparent)(ClientPtr);
    ClientPtr reparenting;      /* the client whose ReparentWindow request runs */
    /* inside one of the geometry wrappers below (they mark the window's old and new
     * place) and inside ValidateTree (the clip changes it makes lie in the place it was
     * given) */
    int geom, in_vt;
} cs_tree_st;

/* ---- window tree changes mark the cache dirty ---- */

/* The window tree changed (its clip lists are final here). The secret area is computed
 * at once, not at the next read, when the next read could otherwise miss a place a
 * secure window was shown between two reads (the trail, stale areas: secret.c): while
 * something keeps unrepainted pixels or a compositor draws (cs_unpaint_source), while a
 * trail or stale area exists. Otherwise the area is only marked dirty and computed once
 * at the next read, however many changes came in between (a popup mapped and unmapped
 * costs a walk of the tree, no region computation; a client moving its own secure
 * windows again and again costs nothing until someone reads). */
static int
cs_ValidateTree(WindowPtr parent, WindowPtr child, VTKind kind)
{
    ScreenPtr s = parent->drawable.pScreen;
    struct cs_screen *cs = SCR(s);
    int r;

    /* what changed: the window mapped, unmapped or restacked (`child`; its subwindows lie
     * inside it); without one, a move, resize or reshape marks its own places (cs_tree_st.geom),
     * anything else may be anywhere */
    if (child)
        cs_dirty_win(cs, child);
    else if (!cs_tree_st.geom)
        cs_set_dirty(cs);
    cs_tree_st.in_vt++;
    CS_SCREEN_PROLOGUE(s, ValidateTree, cs->ValidateTree);
    r = s->ValidateTree(parent, child, kind);
    CS_SCREEN_EPILOGUE(s, ValidateTree, cs->ValidateTree, cs_ValidateTree);
    cs_tree_st.in_vt--;
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
        cs_refresh_st.lazy++;
    }
}

static void
cs_ClipNotify(WindowPtr win, int dx, int dy)
{
    ScreenPtr s = win->drawable.pScreen;
    struct cs_screen *cs = SCR(s);

    if (!cs_tree_st.in_vt)
        cs_set_dirty(cs);       /* not from ValidateTree: where is not known */
    if (cs->ClipNotify) {
        CS_SCREEN_PROLOGUE(s, ClipNotify, cs->ClipNotify);
        s->ClipNotify(win, dx, dy);
        CS_SCREEN_EPILOGUE(s, ClipNotify, cs->ClipNotify, cs_ClipNotify);
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
    if (!cs_tree_st.geom && win->realized)
        cs_set_dirty(cs);
    CS_SCREEN_PROLOGUE(s, PositionWindow, cs->PositionWindow);
    r = s->PositionWindow(win, x, y);
    CS_SCREEN_EPILOGUE(s, PositionWindow, cs->PositionWindow, cs_PositionWindow);
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
    CS_SCREEN_PROLOGUE(s, RealizeWindow, cs->RealizeWindow);
    r = s->RealizeWindow(win);
    CS_SCREEN_EPILOGUE(s, RealizeWindow, cs->RealizeWindow, cs_RealizeWindow);
    return r;
}

static Bool
cs_UnrealizeWindow(WindowPtr win)
{
    ScreenPtr s = win->drawable.pScreen;
    struct cs_screen *cs = SCR(s);
    Bool r;

    cs_dirty_win(cs, win);
    CS_SCREEN_PROLOGUE(s, UnrealizeWindow, cs->UnrealizeWindow);
    r = s->UnrealizeWindow(win);
    CS_SCREEN_EPILOGUE(s, UnrealizeWindow, cs->UnrealizeWindow, cs_UnrealizeWindow);
    return r;
}

static Bool
cs_DestroyWindow(WindowPtr win)
{
    ScreenPtr s = win->drawable.pScreen;
    struct cs_screen *cs = SCR(s);
    Bool r;

    cs_pending_classified(win);         /* no longer waits */
    cs_set_win_secure(win, 0);
    cs_forget_views(win);
    cs_forget_window(win);
    if (win->realized)
        cs_dirty_win(cs, win);
    CS_SCREEN_PROLOGUE(s, DestroyWindow, cs->DestroyWindow);
    r = s->DestroyWindow(win);
    CS_SCREEN_EPILOGUE(s, DestroyWindow, cs->DestroyWindow, cs_DestroyWindow);
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
    cs_tree_st.geom++;
    CS_SCREEN_PROLOGUE(s, MoveWindow, cs->MoveWindow);
    s->MoveWindow(win, x, y, sib, kind);
    CS_SCREEN_EPILOGUE(s, MoveWindow, cs->MoveWindow, cs_MoveWindow);
    cs_tree_st.geom--;
    cs_dirty_win(cs, win);
}

static void
cs_ResizeWindow(WindowPtr win, int x, int y, unsigned int w, unsigned int h, WindowPtr sib)
{
    ScreenPtr s = win->drawable.pScreen;
    struct cs_screen *cs = SCR(s);

    cs_dirty_win(cs, win);
    cs_tree_st.geom++;
    CS_SCREEN_PROLOGUE(s, ResizeWindow, cs->ResizeWindow);
    s->ResizeWindow(win, x, y, w, h, sib);
    CS_SCREEN_EPILOGUE(s, ResizeWindow, cs->ResizeWindow, cs_ResizeWindow);
    cs_tree_st.geom--;
    cs_dirty_win(cs, win);
}

static void
cs_ChangeBorderWidth(WindowPtr win, unsigned int width)
{
    ScreenPtr s = win->drawable.pScreen;
    struct cs_screen *cs = SCR(s);

    cs_dirty_win(cs, win);
    cs_tree_st.geom++;
    CS_SCREEN_PROLOGUE(s, ChangeBorderWidth, cs->ChangeBorderWidth);
    s->ChangeBorderWidth(win, width);
    CS_SCREEN_EPILOGUE(s, ChangeBorderWidth, cs->ChangeBorderWidth, cs_ChangeBorderWidth);
    cs_tree_st.geom--;
    cs_dirty_win(cs, win);
}

static void
cs_SetShape(WindowPtr win, int kind)
{
    ScreenPtr s = win->drawable.pScreen;
    struct cs_screen *cs = SCR(s);

    cs_dirty_win(cs, win);
    cs_tree_st.geom++;
    CS_SCREEN_PROLOGUE(s, SetShape, cs->SetShape);
    s->SetShape(win, kind);
    CS_SCREEN_EPILOGUE(s, SetShape, cs->SetShape, cs_SetShape);
    cs_tree_st.geom--;
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
    if (top != win && top->parent && cs_tree_st.reparenting &&
        cs_client_is_wm(cs_tree_st.reparenting)) {
        struct cs_window *ct = dixLookupPrivate(&top->devPrivates, &cs_window_key_rec);
        struct cs_window *cw = dixLookupPrivate(&win->devPrivates, &cs_window_key_rec);
        /* a window of another client is framed here; a window manager's own window (a
         * wrapper it reparented the client into while the wrapper was a top-level) brings
         * the window it frames along */
        if (CLIENT_ID(win->drawable.id) != cs_tree_st.reparenting->index)
            ct->framed = win->drawable.id;
        else if (cw->framed)
            ct->framed = cw->framed;
    }
    CS_SCREEN_PROLOGUE(s, ReparentWindow, cs->ReparentWindow);
    if (s->ReparentWindow)
        s->ReparentWindow(win, prior);
    CS_SCREEN_EPILOGUE(s, ReparentWindow, cs->ReparentWindow, cs_ReparentWindow);
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
    ClientPtr prev = cs_tree_st.reparenting;
    int r;

    cs_tree_st.reparenting = c;
    r = c->swapped ? cs_tree_st.orig_sreparent(c) : cs_tree_st.orig_reparent(c);
    cs_tree_st.reparenting = prev;
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
    if (!cs_views_init())
        return FALSE;
    cs_nsecure = 0;
    cs_trail_st.compositing = FALSE;
    cs_tree_st.geom = cs_tree_st.in_vt = 0;
    cs_refresh_st.verify = getenv("CS_VERIFY_REGION") && !strcmp(getenv("CS_VERIFY_REGION"), "1");
    if (cs_refresh_st.verify)
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
    cs_tree_st.reparenting = NULL;
    return cs_wrap_proc(X_ReparentWindow, cs_ProcReparentWindow, &cs_tree_st.orig_reparent,
                        &cs_tree_st.orig_sreparent);
}
