/* CaptureShield Xorg module: XACE hooks (forced backgrounds, named pixmaps, the tag, DRI) and tag tracking. */
#include "cs.h"
#include <string.h>
#include <byteswap.h>
#include <X11/extensions/composite.h>

static int cs_composite_major = -1, cs_dri2_major = -1, cs_dri3_major = -1, cs_dbe_major = -1;
static int (*cs_orig_prop[256])(ClientPtr);
static int (*cs_orig_sprop[256])(ClientPtr);

static inline CARD32
r32(ClientPtr c, int off)
{
    CARD32 v;
    memcpy(&v, (char *) c->requestBuffer + off, 4);
    return c->swapped ? bswap_32(v) : v;
}

/* Is `client` trusted for `win`: trusted outright, or the owner of the secure window
 * that holds it. */
static int
cs_trusted_for(ClientPtr client, WindowPtr win)
{
    WindowPtr s;

    if (cs_client_trusted(client))
        return 1;
    for (s = win; s && !cs_win_secure(s); s = s->parent)
        ;
    return s && CLIENT_ID(s->drawable.id) == client->index;
}

static void
cs_resource_hook(CallbackListPtr *list, void *data, void *call)
{
    XaceResourceAccessRec *rec = call;
    ClientPtr client = rec->client;

    (void) list;
    (void) data;
    if (rec->status != Success || !client)
        return;
    if (client == cs_copy_client)
        cs_copy_lookup(rec);    /* CopyArea/CopyPlane source, see censor.c */
    if (!(rec->rtype & RC_DRAWABLE))
        return;                 /* GCs, fonts, colormaps...: no rule below concerns them */

    if (rec->rtype == RT_WINDOW && (rec->access_mode & DixCreateAccess)) {
        /* no background None for untrusted windows: what lies under or over a secure
         * window is painted, never kept (as the SECURITY extension does) */
        if (cs_rule_on(CS_RULE_FORCEDBG) && !cs_client_trusted(client))
            ((WindowPtr) rec->res)->forcedBG = TRUE;
        return;
    }

    if ((rec->rtype & RC_DRAWABLE) && rec->rtype != RT_PIXMAP && rec->rtype != RT_WINDOW &&
        (rec->access_mode & DixCreateAccess) && rec->ptype == RT_WINDOW && rec->parent &&
        rec->res && ((DrawablePtr) rec->res)->type == DRAWABLE_PIXMAP) {
        /* a DOUBLE-BUFFER back buffer (created as the server): secret like the window */
        if (cs_win_has_secure(rec->parent))
            cs_taint_pixmap(rec->res);
        return;
    }

    if (rec->rtype == RT_PIXMAP && (rec->access_mode & DixCreateAccess) &&
        rec->ptype == RT_WINDOW && rec->parent) {
        /* Composite NameWindowPixmap */
        WindowPtr win = rec->parent;
        if (!cs_win_has_secure(win))
            return;
        if (cs_trusted_for(client, win)) {
            /* a trusted client (compositor) or the secure window's owner: allowed, but
             * the pixmap is now secret to everyone else */
            cs_taint_pixmap(rec->res);
            return;
        }
        if (cs_rule_on(CS_RULE_NAMEPIXMAP) && !cs_cfg.paused) {
            client->errorValue = win->drawable.id;
            cs_report(client, win->drawable.id, CS_KIND_DENIED);
            rec->status = BadAccess;
        }
        return;
    }

    if ((rec->rtype & RC_DRAWABLE) && rec->rtype != RT_WINDOW && rec->res &&
        ((DrawablePtr) rec->res)->type == DRAWABLE_PIXMAP &&
        rec->access_mode != DixGetAttrAccess &&
        cs_rule_on(CS_RULE_PIXMAP) && !cs_cfg.paused && cs_pixmap_tainted(rec->res) &&
        !cs_client_trusted(client) && CLIENT_ID(rec->id) != client->index) {
        /* a pixmap a trusted client named from a secure window: copy source, picture,
         * GC tile or stipple, DRI3 export... nobody else may touch it */
        client->errorValue = rec->id;
        cs_report(client, rec->id, CS_KIND_DENIED);
        rec->status = BadAccess;
        return;
    }

    if (rec->rtype == RT_WINDOW && rec->res) {
        int major = client->majorOp;
        if (major == cs_composite_major &&
            (client->minorOp == X_CompositeRedirectWindow ||
             client->minorOp == X_CompositeRedirectSubwindows))
            cs_note_redirect(client, rec->res);
        if (major > 0 && !cs_cfg.paused && (((major == cs_dri2_major || major == cs_dri3_major) &&
                            cs_rule_on(CS_RULE_DRI)) ||
                           (major == cs_dbe_major && cs_rule_on(CS_RULE_DBE))) &&
            cs_win_has_secure(rec->res) && !cs_trusted_for(client, rec->res)) {
            client->errorValue = rec->id;
            cs_report(client, rec->id, CS_KIND_DENIED);
            rec->status = BadAccess;
        }
    }
}

static void
cs_property_hook(CallbackListPtr *list, void *data, void *call)
{
    XacePropertyAccessRec *rec = call;
    PropertyPtr prop;

    (void) list;
    (void) data;
    if (rec->status != Success || !rec->ppProp || !(prop = *rec->ppProp))
        return;
    if (cs_root_property_refused(rec->client, rec->pWin, prop->propertyName,
                                 rec->access_mode)) {
        rec->client->errorValue = prop->propertyName;
        rec->status = BadAccess;
        return;
    }
    if ((prop->propertyName != cs_secure_atom() && prop->propertyName != cs_policy_atom()) ||
        !cs_rule_on(CS_RULE_PROPERTY))
        return;
    if (!(rec->access_mode & (DixWriteAccess | DixDestroyAccess | DixCreateAccess |
                              DixSetAttrAccess | DixBlendAccess)))
        return;
    if (prop->propertyName == cs_policy_atom()) {
        /* the daemon's policy tag: only the server and Trust-list programs set it, never
         * the window's owner or a granted client */
        if (!cs_client_trusted_strict(rec->client)) {
            rec->client->errorValue = rec->pWin->drawable.id;
            rec->status = BadAccess;
        }
        return;
    }
    if (cs_client_trusted(rec->client) ||
        CLIENT_ID(rec->pWin->drawable.id) == rec->client->index)
        return;
    rec->client->errorValue = rec->pWin->drawable.id;
    rec->status = BadAccess;
}

/* ---- the tag: re-read after every request that can change it ---- */

static int
cs_ProcProperty(ClientPtr c)
{
    int major = ((xReq *) c->requestBuffer)->reqType;
    XID wid = 0;
    Atom prop = None;
    int recheck = 0, r;
    WindowPtr win;

    if (c->req_len >= 3) {
        wid = r32(c, 4);
        switch (major) {
        case X_ChangeProperty:
        case X_DeleteProperty:
            prop = r32(c, 8);
            recheck = prop == cs_secure_atom() || prop == cs_policy_atom();
            break;
        case X_GetProperty:
            prop = r32(c, 8);
            recheck = ((xReq *) c->requestBuffer)->data &&
                (prop == cs_secure_atom() || prop == cs_policy_atom());
            break;
        case X_RotateProperties:
            recheck = 1;
            break;
        }
    }
    r = c->swapped ? cs_orig_sprop[major](c) : cs_orig_prop[major](c);
    if (recheck && dixLookupWindow(&win, wid, serverClient, DixGetAttrAccess) == Success)
        cs_update_secure(win);
    return r;
}

Bool
cs_hooks_init(void)
{
    static const int majors[] = { X_ChangeProperty, X_DeleteProperty, X_GetProperty,
        X_RotateProperties };
    ExtensionEntry *e;
    size_t i;

    if ((e = CheckExtension(COMPOSITE_NAME)))
        cs_composite_major = e->base;
    if ((e = CheckExtension("DRI2")))
        cs_dri2_major = e->base;
    if ((e = CheckExtension("DRI3")))
        cs_dri3_major = e->base;
    if ((e = CheckExtension("DOUBLE-BUFFER")))
        cs_dbe_major = e->base;
    LogMessageVerb(X_INFO, 0, "CAPTURESHIELD: DRI2 %s, DRI3 %s on this server\n",
                   cs_dri2_major > 0 ? "present (guarded)" : "absent",
                   cs_dri3_major > 0 ? "present (guarded)" : "absent");
    for (i = 0; i < sizeof(majors) / sizeof(majors[0]); i++) {
        cs_orig_prop[majors[i]] = ProcVector[majors[i]];
        cs_orig_sprop[majors[i]] = SwappedProcVector[majors[i]];
        ProcVector[majors[i]] = cs_ProcProperty;
        SwappedProcVector[majors[i]] = cs_ProcProperty;
    }
    if (!AddCallback(&XaceHooks[XACE_RESOURCE_ACCESS], cs_resource_hook, NULL) ||
        !AddCallback(&XaceHooks[XACE_PROPERTY_ACCESS], cs_property_hook, NULL))
        return FALSE;
    return TRUE;
}
