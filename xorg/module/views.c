/* CaptureShield Xorg module: secure views (rule views). An app declares rectangles of its
 * window secret with _CAPTURE_SHIELD_VIEWS (the window's owner only), the daemon with
 * _CAPTURE_SHIELD_POLICY_VIEWS (the server, Trust and Daemon programs only): CARDINAL/32,
 * 4n items x, y, width, height in window coordinates; empty or absent: no views. The area
 * of those rectangles, clipped to the window, is secret like a secure window's (area.c's
 * cs_visit asks cs_views_region), and the window counts as secure for the resource, pixmap,
 * DRI and DBE rules while it has views. Any other type, format or length fails safe: the
 * whole window is secure (CS_VIEWS_WHOLE). */
#include "cs-int.h"

#define CS_VIEWS_NAME "_CAPTURE_SHIELD_VIEWS"
#define CS_PVIEWS_NAME "_CAPTURE_SHIELD_POLICY_VIEWS"

static Atom cs_vatom, cs_pvatom;

Bool
cs_views_init(void)
{
    cs_vatom = MakeAtom(CS_VIEWS_NAME, strlen(CS_VIEWS_NAME), TRUE);
    cs_pvatom = MakeAtom(CS_PVIEWS_NAME, strlen(CS_PVIEWS_NAME), TRUE);
    return cs_vatom != None && cs_pvatom != None;
}

int
cs_views_atom(Atom a)
{
    return a != None && (a == cs_vatom || a == cs_pvatom);
}

int
cs_win_views(WindowPtr win)
{
    return ((struct cs_window *) dixLookupPrivate(&win->devPrivates, &cs_window_key_rec))->views;
}

/* A view property's state: CS_VIEWS_NONE (empty), CS_VIEWS_RECTS or CS_VIEWS_WHOLE
 * (malformed) */
static int
cs_views_kind(PropertyPtr prop)
{
    if (prop->type != XA_CARDINAL || prop->format != 32 || prop->size % 4)
        return CS_VIEWS_WHOLE;
    return prop->size ? CS_VIEWS_RECTS : CS_VIEWS_NONE;
}

/* Re-reads both view properties after a property request touched one (hooks.c). */
void
cs_update_views(WindowPtr win)
{
    struct cs_window *cw = dixLookupPrivate(&win->devPrivates, &cs_window_key_rec);
    ScreenPtr s = win->drawable.pScreen;
    PropertyPtr prop;
    int kind = CS_VIEWS_NONE, was = cw->views;

    if (cs_rule_on(CS_RULE_VIEWS))
        for (prop = wUserProps(win); prop; prop = prop->next)
            if (cs_views_atom(prop->propertyName))
                kind = max(kind, cs_views_kind(prop));
    cw->views = kind;
    if (!!kind != !!was) {
        /* a window with views counts as a secure one: the area is computed, the owner's
         * resources are guarded (rule resources), the resource hook is held */
        cs_nsecure += kind ? 1 : -1;
        cs_note_secure_owner(win, kind ? 1 : -1);
        cs_secure_changed(!!kind, cs_nsecure);
    }
    if (kind != was || kind == CS_VIEWS_RECTS) {
        if (s->root && SCR(s))
            cs_dirty_win(SCR(s), win);
        else
            cs_mark_dirty();
    }
}

/* The window is destroyed: its views go with it. */
void
cs_forget_views(WindowPtr win)
{
    struct cs_window *cw = dixLookupPrivate(&win->devPrivates, &cs_window_key_rec);

    if (!cw->views)
        return;
    cw->views = CS_VIEWS_NONE;
    cs_nsecure--;
    cs_note_secure_owner(win, -1);
    cs_secure_changed(0, cs_nsecure);
}

/* `out` (initialised) gets the window's views in screen coordinates, clipped to the window
 * (its inside, as the user sees them); the caller intersects with what is visible. */
void
cs_views_region(WindowPtr win, RegionPtr out)
{
    PropertyPtr prop;

    RegionEmpty(out);
    for (prop = wUserProps(win); prop; prop = prop->next) {
        const CARD32 *v = prop->data;
        long i;
        if (!cs_views_atom(prop->propertyName) || cs_views_kind(prop) != CS_VIEWS_RECTS)
            continue;
        for (i = 0; i + 3 < prop->size; i += 4) {
            /* CARD32 items: coordinates beyond the 16-bit range are clamped, so a huge
             * width still reaches the window's edge */
            long x = (long) win->drawable.x + (INT32) v[i];
            long y = (long) win->drawable.y + (INT32) v[i + 1];
            long x2 = x + min((long) v[i + 2], 65535L), y2 = y + min((long) v[i + 3], 65535L);
            BoxRec b;
            RegionRec r;
            if (x2 <= x || y2 <= y)
                continue;
            b.x1 = max(min(x, 32767L), -32768L);
            b.y1 = max(min(y, 32767L), -32768L);
            b.x2 = max(min(x2, 32767L), -32768L);
            b.y2 = max(min(y2, 32767L), -32768L);
            if (b.x2 <= b.x1 || b.y2 <= b.y1)
                continue;
            RegionInit(&r, &b, 1);
            RegionUnion(out, out, &r);
            RegionUninit(&r);
        }
    }
    RegionIntersect(out, out, &win->winSize);
}

/* Rule views: only the window's owner (or a trusted client, as for the tag) writes
 * _CAPTURE_SHIELD_VIEWS on it; only the server, Trust and Daemon programs write
 * _CAPTURE_SHIELD_POLICY_VIEWS. Nonzero: refused. */
int
cs_views_write_refused(ClientPtr client, WindowPtr win, Atom name)
{
    if (!cs_views_atom(name) || !cs_rule_on(CS_RULE_VIEWS))
        return 0;
    if (name == cs_pvatom)
        return !cs_client_trusted_strict(client);
    return !cs_client_trusted(client) && CLIENT_ID(win->drawable.id) != client->index;
}
