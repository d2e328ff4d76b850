/* CaptureShield Xorg module: secret before the tag (rule pending).
 *
 * A window the daemon's policy makes secure (a class rule, the built-in list) gets the
 * daemon's tag, `_CAPTURE_SHIELD_POLICY`, only after the daemon saw it mapped and read its
 * facts: until then it was an ordinary window, and a recorder reading the root in a loop
 * got its first frames (1 to 6 frames of 40,000 px in 3 of 10 runs), a RECORD context its
 * title. So, while a daemon with rules about windows runs (it says so with the root
 * property `_CAPTURE_SHIELD_CLASSIFY` = 1, which only trusted clients may write: rule
 * daemon), a top-level window an untrusted client maps (its MapWindow of an InputOutput
 * child of the root; not the window manager's frames, not a trusted client's windows) is
 * secure until the daemon classifies it (MapSubwindows of the root holds each such window
 * it maps, whoever sends it): any write or deletion of its
 * `_CAPTURE_SHIELD_POLICY` (0: not secure, 1: secure; only trusted clients may write it)
 * ends the wait. Being secure, it is censored for untrusted readers, its title hidden
 * and untrusted RECORD refused (rule record), from its first frame; the user and trusted
 * readers see it as always.
 *
 * Fail closed: with no answer (the daemon stopped, hung or gone) the window stays secret.
 * Deleting `_CAPTURE_SHIELD_CLASSIFY` (the daemon's clean stop) ends the mode and the wait
 * of every window still waiting. A window classified once is not held again when it is
 * mapped again (the daemon follows it). */
#include "cs-int.h"

static struct {
    Atom classify;              /* _CAPTURE_SHIELD_CLASSIFY */
    Bool on;                    /* the daemon classifies (the root property is non-zero) */
    int waiting;                /* windows held secure until classified */
    CsProcPtr orig, sorig;      /* MapWindow */
    CsProcPtr suborig, subsorig;    /* MapSubwindows */
} cs_pending_st;

static struct cs_window *
cs_cw(WindowPtr win)
{
    return dixLookupPrivate(&win->devPrivates, &cs_window_key_rec);
}

int
cs_win_pending(WindowPtr win)
{
    return cs_pending_st.waiting && cs_cw(win)->pending;
}

/* The daemon wrote or deleted the window's policy tag: classified. The caller re-reads
 * the tags (cs_update_secure) afterwards. */
void
cs_pending_classified(WindowPtr win)
{
    struct cs_window *cw = cs_cw(win);

    cw->classified = 1;
    if (cw->pending) {
        cw->pending = 0;
        cs_pending_st.waiting--;
    }
}

static void
cs_pending_release_all(void)
{
    int i;

    for (i = 0; i < screenInfo.numScreens && cs_pending_st.waiting > 0; i++) {
        WindowPtr c;
        for (c = screenInfo.screens[i]->root->firstChild; c; c = c->nextSib) {
            struct cs_window *cw = cs_cw(c);
            if (cw->pending) {
                cw->pending = 0;
                cs_pending_st.waiting--;
                cs_update_secure(c);
            }
        }
    }
    cs_pending_st.waiting = 0;
}

/* A root property named `prop` was written or deleted on `root` (hooks.c). */
void
cs_pending_root_property(WindowPtr root, Atom prop)
{
    PropertyPtr p;
    Bool on = FALSE;

    if (prop != cs_pending_st.classify || root->parent)
        return;
    if (dixLookupProperty(&p, root, prop, serverClient, DixReadAccess) == Success &&
        p->type == XA_CARDINAL && p->format == 32 && p->size >= 1 && ((CARD32 *) p->data)[0])
        on = TRUE;
    if (on == cs_pending_st.on)
        return;
    cs_pending_st.on = on;
    LogMessageVerb(X_INFO, 0, "CAPTURESHIELD: the daemon %s classifying new windows: %s\n",
                   on ? "is" : "stopped",
                   on ? "untrusted clients' new top-levels are secure until it classifies them"
                      : "no window waits any more");
    if (!on)
        cs_pending_release_all();
}

/* `win`, a top-level about to be mapped by an untrusted client that is not the window
 * manager, held secure until the daemon classifies it (once). */
static void
cs_pending_hold(WindowPtr win)
{
    struct cs_window *cw = cs_cw(win);

    if (win->drawable.class != InputOutput || win->overrideRedirect || win->mapped ||
        cw->classified || cw->pending)
        return;
    cw->pending = 1;
    cs_pending_st.waiting++;
    cs_set_win_secure(win, 1);
    cs_record_sweep();          /* untrusted RECORD contexts end (rule record) */
}

static int
cs_pending_applies(ClientPtr c)
{
    return cs_pending_st.on && cs_rule_on(CS_RULE_PENDING) && c->req_len == 2 &&
        !cs_client_trusted(c) && !cs_client_is_wm(c);
}

static int
cs_ProcMapWindow(ClientPtr c)
{
    WindowPtr win;

    if (cs_pending_applies(c) &&
        dixLookupWindow(&win, ((xResourceReq *) c->requestBuffer)->id, serverClient,
                        DixGetAttrAccess) == Success &&
        win->parent && !win->parent->parent && CLIENT_ID(win->drawable.id) == c->index)
        cs_pending_hold(win);
    return c->swapped ? cs_pending_st.sorig(c) : cs_pending_st.orig(c);
}

/* MapSubwindows of the root maps every unmapped top-level, any client's: each one whose
 * owner is untrusted and not the window manager is held as its own MapWindow would be. */
static int
cs_ProcMapSubwindows(ClientPtr c)
{
    WindowPtr win, child;

    if (cs_pending_applies(c) &&
        dixLookupWindow(&win, ((xResourceReq *) c->requestBuffer)->id, serverClient,
                        DixGetAttrAccess) == Success && !win->parent)
        for (child = win->firstChild; child; child = child->nextSib) {
            ClientPtr owner = clients[CLIENT_ID(child->drawable.id)];
            if (owner && !cs_client_trusted(owner) && !cs_client_is_wm(owner))
                cs_pending_hold(child);
        }
    return c->swapped ? cs_pending_st.subsorig(c) : cs_pending_st.suborig(c);
}

/* From the hooks step (hooks.c). */
Bool
cs_pending_init(void)
{
    cs_pending_st.classify = MakeAtom("_CAPTURE_SHIELD_CLASSIFY",
                                      strlen("_CAPTURE_SHIELD_CLASSIFY"), TRUE);
    cs_pending_st.on = FALSE;
    cs_pending_st.waiting = 0;
    return cs_wrap_proc(X_MapWindow, cs_ProcMapWindow, &cs_pending_st.orig,
                        &cs_pending_st.sorig) &&
        cs_wrap_proc(X_MapSubwindows, cs_ProcMapSubwindows, &cs_pending_st.suborig,
                     &cs_pending_st.subsorig);
}
