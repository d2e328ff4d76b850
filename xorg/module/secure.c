/* CaptureShield Xorg module: which windows are secure: the tags, window manager frames, whose
 * secure windows a window holds or lies in. */
#include "cs-int.h"

DevPrivateKeyRec cs_window_key_rec;     /* struct cs_window; cs_win_secure in cs.h */
Atom cs_atom, cs_patom;
int cs_nsecure;                 /* secure windows in existence (cs.h) */

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

    if (cs_win_secure(win) || cs_win_views(win))
        return 1;
    for (c = win->firstChild; c; c = c->nextSib)
        if (cs_subtree_has_secure(c))
            return 1;
    return 0;
}

int
cs_win_has_secure(WindowPtr win)
{
    WindowPtr a;

    if (!cs_nsecure)
        return 0;
    for (a = win->parent; a; a = a->parent)
        if (cs_win_views(a))
            return 1;           /* inside a window with secure views: maybe under one */
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
    cs_set_win_secure(win, on || cs_win_pending(win));
    /* kind 6 (1.2): a tag was written, valid or not (a daemon treats a malformed one as
     * secure, fail safe), or the window stopped being secure */
    if (tagged || (on || cs_win_pending(win)) != was)
        cs_report_secure(win);
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
