/* CaptureShield Xorg module: secret (tainted) pixmaps: pixmaps holding a secure window's pixels,
 * DOUBLE-BUFFER back buffers, and whom they stay readable to. */
#include "cs-int.h"

DevPrivateKeyRec cs_pixmap_key_rec;

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
    CS_SCREEN_PROLOGUE(s, DestroyPixmap, cs->DestroyPixmap);
    r = s->DestroyPixmap(pix);
    CS_SCREEN_EPILOGUE(s, DestroyPixmap, cs->DestroyPixmap, cs_DestroyPixmap);
    return r;
}
