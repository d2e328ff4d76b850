/* CaptureShield Xorg module: one definition of what is secret (with secure.c, area.c) and the
 * rule on the resources of a secure window's owner.
 *
 * Secret are the pixels of secure windows, of their descendants and of the window
 * manager's frame around them, wherever they are or were shown, for as long as they can
 * still be read:
 * - on the screen where X shows them (area.c, cs_visit). "Own" exempts only what the
 *   reader owns: a secure window of another client inside the reader's own window,
 *   secure or not, stays secret to it (rule ownsecure).
 * - where they were shown and nothing repainted since (rule stale): under a window with
 *   background None (the Composite overlay window when no trusted compositor paints it,
 *   the screen saver window with attributes a client chose), and under a window an
 *   untrusted client redirected manually, which X treats as transparent (the windows
 *   under it keep drawing into the framebuffer) and nobody paints. The secret area is
 *   computed at each change of the window tree (ValidateTree), not at the next read, so
 *   every place a secure window was shown between two reads counts, and so does the
 *   compositor's trail.
 * - in pixmaps: the pixmaps of redirected windows holding them, whenever they came to
 *   hold them (named before the window was tagged, before it was reparented into a
 *   redirected window, or while protection was paused: rule taint), and DBE back buffers.
 *   Such a pixmap is usable only by trusted clients and by the owner of the secure
 *   windows it shows, not by whoever owns the pixmap's id.
 * - in the owner's own resources (rule resources): an untrusted client may not use
 *   another client's pixmaps (DBE buffers included), GCs (their tiles), pictures, glyph
 *   sets, MIT-SHM segments, GLX drawables or contexts while that client owns a secure
 *   window. Windows are not in the list (their rules are the screen's), nor what holds
 *   no pixels (cursors, colormaps, fonts, XSync counters a window manager uses). The application
 *   draws its secure window from these (double buffers, SHM images, RENDER pictures,
 *   glyphs), and any client can find their ids by scanning the resource id range.
 *   Refused with BadAccess in both modes (no partial censoring of a resource). The
 *   resource hook is armed while a secure window exists; the rule costs one comparison
 *   (the resource's owner is the requester) for a client's own resources. */
#include "cs.h"
#include "registry.h"
#include <string.h>

#define CS_NTYPES 5
static RESTYPE cs_types[CS_NTYPES];     /* by name (0: absent), see cs_find_types */
static int cs_holding;          /* the rule holds the resource hook */

static void
cs_find_types(void)
{
    static const char *const names[CS_NTYPES] = { "PICTURE", "ShmSeg", "GLYPHSET",
        "GLXDrawable", "GLXContext" };
    RESTYPE t;
    size_t i;

    memset(cs_types, 0, sizeof(cs_types));
    for (t = 1; t <= lastResourceType; t++) {
        const char *n = LookupResourceName(t);
        for (i = 0; n && i < sizeof(names) / sizeof(names[0]); i++)
            if (!strcmp(n, names[i]))
                cs_types[i] = t;
    }
}

/* The number of secure windows went from 0 to 1 (on) or from 1 to 0: the resources
 * rule needs the resource hook armed while any exists. */
void
cs_secure_changed(int on, int nsecure)
{
    cs_wmfocus_secure_changed(nsecure);     /* the user's clicks followed (wmfocus.c) */
    if (!cs_rule_on(CS_RULE_RESOURCES))
        return;
    if (on && nsecure == 1) {
        /* types found again each time: a server reset registers them anew */
        cs_find_types();
        cs_holding = cs_hook_hold();
        if (!cs_holding)
            LogMessageVerb(X_ERROR, 0, "CAPTURESHIELD: cannot arm the resource hook for "
                           "the resources of secure windows' owners\n");
    } else if (!on && nsecure == 0 && cs_holding) {
        cs_holding = 0;
        cs_hook_release();
    }
}

static int
cs_listed(RESTYPE t)
{
    int i;

    for (i = 0; i < CS_NTYPES; i++)
        if (t && t == cs_types[i])
            return 1;
    return 0;
}

/* The resource hook's first rule: `rec` is a resource of another client (the caller
 * checked CLIENT_ID). Refused when that client owns a secure window, the resource can
 * hold its pixels and the requester is untrusted. */
int
cs_foreign_resource_refused(XaceResourceAccessRec *rec)
{
    ClientPtr client = rec->client, owner;
    int idx = CLIENT_ID(rec->id);
    RESTYPE t = rec->rtype;

    if (idx <= 0 || idx >= currentMaxClients || !cs_rule_on(CS_RULE_RESOURCES) ||
        cs_cfg.paused || rec->access_mode == DixGetAttrAccess)
        return 0;
    if (!(owner = clients[idx]) || !cs_client_owns_secure(owner))
        return 0;
    if (!(t == RT_PIXMAP || t == RT_GC ||
          ((t & RC_DRAWABLE) && t != RT_WINDOW && rec->res &&
           ((DrawablePtr) rec->res)->type == DRAWABLE_PIXMAP) ||
          cs_listed(t)))
        return 0;
    return !cs_client_trusted(client);
}
