/* CaptureShield Xorg module: XACE hooks (named pixmaps, the tag, titles, DRI, DBE), forced backgrounds and tag tracking. */
#include "cs.h"
#include <string.h>
#include <byteswap.h>
#include <X11/extensions/composite.h>

static int cs_composite_major = -1, cs_dri2_major = -1, cs_dri3_major = -1, cs_dbe_major = -1;
static int (*cs_orig_prop[256])(ClientPtr);
static int (*cs_orig_sprop[256])(ClientPtr);
static int (*cs_orig_armed[256])(ClientPtr);
static int (*cs_orig_sarmed[256])(ClientPtr);
static int (*cs_orig_create_window)(ClientPtr);
static int (*cs_orig_screate_window)(ClientPtr);
static Atom cs_title_atoms[6];  /* WM_NAME, WM_ICON_NAME, _NET_WM_NAME and the like */
static Atom cs_wm_state, cs_net_wm_state, cs_net_current_desktop;
static int cs_hook_refs;        /* reasons the resource hook is armed, see cs_hook_hold */

static inline CARD32
r32(ClientPtr c, int off)
{
    CARD32 v;
    memcpy(&v, (char *) c->requestBuffer + off, 4);
    return cs_req_swapped(c) ? bswap_32(v) : v;
}

/* Is `client` trusted for `win`: trusted outright, or the owner of the secure window
 * that holds it. */
static int
cs_trusted_for(ClientPtr client, WindowPtr win)
{
    WindowPtr s;

    if (cs_client_trusted(client))
        return 1;
    if (cs_rule_on(CS_RULE_OWNSECURE) && cs_win_foreign_secure(win, client))
        return 0;               /* another client's secure window in or around it */
    for (s = win; s && !cs_win_secure(s); s = s->parent)
        ;
    return s && CLIENT_ID(s->drawable.id) == client->index;
}

/* The resource-access hook. It is not registered all the time (see cs_hook_hold): only
 * while a Composite, DRI2, DRI3 or DOUBLE-BUFFER request runs, while a tainted pixmap
 * exists and while a secure window exists (the resources of its owner, secret.c). */
static void cs_resource_check(XaceResourceAccessRec *rec);

/* The client whose wrapped Composite, DRI2, DRI3 or DOUBLE-BUFFER request runs
 * (cs_ProcArmed), NULL: none. */
static ClientPtr cs_armed_client;

static void
cs_resource_hook(CallbackListPtr *list, void *data, void *call)
{
    XaceResourceAccessRec *rec = call;
    ClientPtr client = rec->client;

    (void) list;
    (void) data;
    if (rec->status != Success || !client)
        return;
    /* the common cases, in a few instructions (the hook runs for every resource lookup
     * while a secure window exists): a window looked up outside a Composite, DRI2, DRI3
     * or DOUBLE-BUFFER request (see below), and a client's own resource that is no
     * drawable (its GC, font, colormap...: no rule concerns it) */
    if (rec->rtype == RT_WINDOW ? client != cs_armed_client :
        (!(rec->rtype & RC_DRAWABLE) && CLIENT_ID(rec->id) == client->index))
        return;
    cs_resource_check(rec);
}

static void __attribute__((noinline))
cs_resource_check(XaceResourceAccessRec *rec)
{
    ClientPtr client = rec->client;

    if (rec->rtype == RT_WINDOW && client->majorOp != cs_composite_major &&
        client->majorOp != cs_dri2_major && client->majorOp != cs_dri3_major &&
        client->majorOp != cs_dbe_major)
        return;                 /* the common case, a window looked up by a request none of
                                 * the rules below concerns (no rule refuses a window as
                                 * another client's resource) */
    if (CLIENT_ID(rec->id) != client->index && cs_foreign_resource_refused(rec)) {
        /* a pixmap, GC, picture or SHM segment of a secure window's owner (secret.c) */
        client->errorValue = rec->id;
        cs_report(client, rec->id, CS_KIND_DENIED);
        rec->status = BadAccess;
        return;
    }
    if (!(rec->rtype & RC_DRAWABLE))
        return;                 /* GCs, fonts, colormaps...: no rule below concerns them */

    if (rec->rtype == RT_WINDOW && (rec->access_mode & DixCreateAccess))
        return;                 /* a window being created, not one looked up (forced
                                 * backgrounds: cs_ProcCreateWindow) */

    if ((rec->rtype & RC_DRAWABLE) && rec->rtype != RT_PIXMAP && rec->rtype != RT_WINDOW &&
        (rec->access_mode & DixCreateAccess) && rec->ptype == RT_WINDOW && rec->parent &&
        rec->res && ((DrawablePtr) rec->res)->type == DRAWABLE_PIXMAP) {
        /* a DOUBLE-BUFFER back buffer (created as the server, inside a DBE request): secret
         * like the window, also after DBE reallocates it or when the window is tagged
         * later (taint.c) */
        cs_note_dbe_buffer(rec->parent, rec->id, rec->rtype, rec->res,
                           cs_win_has_secure(rec->parent));
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
            cs_taint_pixmap_win(rec->res, win);
            return;
        }
        if (cs_cfg.paused && cs_rule_on(CS_RULE_TAINT)) {
            /* allowed while protection is paused, secret once it resumes */
            cs_taint_pixmap_win(rec->res, win);
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
        !cs_client_trusted(client) && !cs_pixmap_reader(rec->res, client, rec->id)) {
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
             client->minorOp == X_CompositeRedirectSubwindows)) {
            cs_note_redirect(client, rec->res);
            /* manual redirection by an untrusted client: nothing paints there (secret.c) */
            if (client->req_len >= 3 &&
                ((CARD8 *) client->requestBuffer)[8] == CompositeRedirectManual &&
                !cs_client_trusted(client))
                cs_note_manual_redirect(rec->res,
                                        client->minorOp == X_CompositeRedirectSubwindows, 1);
        }
        if (major == cs_composite_major && !cs_client_trusted(client) &&
            (client->minorOp == X_CompositeUnredirectWindow ||
             client->minorOp == X_CompositeUnredirectSubwindows) &&
            client->req_len >= 3 &&
            ((CARD8 *) client->requestBuffer)[8] == CompositeRedirectManual)
            cs_note_manual_redirect(rec->res,
                                    client->minorOp == X_CompositeUnredirectSubwindows, 0);
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

/* ---- arming the resource hook ----
 *
 * A registered XACE_RESOURCE_ACCESS callback costs every resource lookup of every request
 * (XaceHook's argument marshalling, CallCallbacks and the call: CopyArea looks up three
 * resources); with no callback list at all XaceHook returns at once (where the SECURITY
 * extension is initialised, as in Debian's Xorg, its callback is always on the list and
 * what remains saved is this callback's call per lookup). So the hook is registered only
 * while it can have work: cs_hook_hold/cs_hook_release count the reasons (a wrapped
 * Composite, DRI2, DRI3 or DOUBLE-BUFFER request in flight; each tainted pixmap, from
 * cs_taint_pixmap until the pixmap is destroyed, taint.c). When the count drops to zero
 * the callback is deleted, and the list itself when nobody else (SECURITY, SELinux) has a
 * callback on it, since an empty list still costs the marshalling. */
Bool
cs_hook_hold(void)
{
    if (cs_hook_refs++ > 0)
        return TRUE;
    if (!AddCallback(&XaceHooks[XACE_RESOURCE_ACCESS], cs_resource_hook, NULL)) {
        cs_hook_refs--;
        return FALSE;
    }
    /* verbosity 5: the tests read these lines (-logverbose 5); not written by default */
    LogMessageVerb(X_INFO, 5, "CAPTURESHIELD: resource hook armed\n");
    return TRUE;
}

void
cs_hook_release(void)
{
    CallbackListPtr *l = &XaceHooks[XACE_RESOURCE_ACCESS];

    if (cs_hook_refs <= 0 || --cs_hook_refs > 0)
        return;
    DeleteCallback(l, cs_resource_hook, NULL);
    /* while the list runs, DeleteCallback only marks the entry; the list stays */
    if (*l && !(*l)->list && !(*l)->inCallback)
        DeleteCallbackList(l);
    LogMessageVerb(X_INFO, 5, "CAPTURESHIELD: resource hook disarmed\n");
}

/* Composite, DRI2, DRI3, DOUBLE-BUFFER: the hook is armed while the request runs (its
 * window lookups, NameWindowPixmap and back-buffer creation are what the rules above
 * watch). Without the hook the request would escape them, so it is not run then. */
static int
cs_ProcArmed(ClientPtr c)
{
    int major = ((xReq *) c->requestBuffer)->reqType, r;
    ClientPtr was = cs_armed_client;

    if (!cs_hook_hold())
        return BadAlloc;
    cs_armed_client = c;
    r = c->swapped ? cs_orig_sarmed[major](c) : cs_orig_armed[major](c);
    cs_armed_client = was;
    cs_hook_release();
    return r;
}

/* No background None for untrusted windows: what lies under or over a secure window is
 * painted, never kept (as the SECURITY extension does). Set on the new window right after
 * the real request made it, before any request can map or paint it, with the state the
 * core gives a forcedBG window (CreateWindow's XaceBackgroundNoneState: a white pixel).
 * Other windows are created by the server (Composite overlay, screen savers) for which
 * the rule never held. Later CWBackPixmap None on the window honours forcedBG in the core. */
static int
cs_ProcCreateWindow(ClientPtr c)
{
    XID wid = c->req_len >= 8 ? r32(c, 4) : 0;
    int r = c->swapped ? cs_orig_screate_window(c) : cs_orig_create_window(c);
    void *p;

    if (r == Success && wid && cs_rule_on(CS_RULE_FORCEDBG) && !cs_client_trusted(c) &&
        dixLookupResourceByType(&p, wid, RT_WINDOW, NullClient, DixGetAttrAccess) ==
        Success) {
        WindowPtr win = p;
        win->forcedBG = TRUE;
        if (win->backgroundState == None) {
            win->backgroundState = BackgroundPixel;
            win->background.pixel = win->drawable.pScreen->whitePixel;
        }
    }
    return r;
}

static int
cs_title_atom(Atom a)
{
    size_t i;

    for (i = 0; i < sizeof(cs_title_atoms) / sizeof(cs_title_atoms[0]); i++)
        if (a == cs_title_atoms[i])
            return 1;
    return 0;
}

/* Properties of a secure window that clients other than its owner may read: what window
 * managers, pagers, panels, compositors and drag and drop need, none of which carries
 * what the window shows (its title, icon name, command line, toolkit object paths...).
 * WM_CLASS, WM_CLIENT_MACHINE, _NET_WM_PID and _NET_WM_ICON do tell which program it is. */
static const char *const cs_allowed_names[] = {
    "WM_CLASS", "WM_HINTS", "WM_NORMAL_HINTS", "WM_SIZE_HINTS", "WM_PROTOCOLS",
    "WM_TRANSIENT_FOR", "WM_CLIENT_LEADER", "WM_STATE", "WM_WINDOW_ROLE",
    "WM_COLORMAP_WINDOWS", "WM_CLIENT_MACHINE",
    "_NET_WM_STATE", "_NET_WM_WINDOW_TYPE", "_NET_WM_DESKTOP", "_NET_WM_PID",
    "_NET_WM_USER_TIME", "_NET_WM_USER_TIME_WINDOW", "_NET_WM_SYNC_REQUEST_COUNTER",
    "_NET_FRAME_EXTENTS", "_NET_WM_ALLOWED_ACTIONS", "_NET_WM_ICON", "_NET_WM_ICON_GEOMETRY",
    "_NET_WM_STRUT", "_NET_WM_STRUT_PARTIAL", "_NET_WM_OPAQUE_REGION",
    "_NET_WM_BYPASS_COMPOSITOR", "_NET_WM_WINDOW_OPACITY", "_NET_WM_FULLSCREEN_MONITORS",
    "_NET_STARTUP_ID", "_MOTIF_WM_HINTS", "_GTK_FRAME_EXTENTS", "_GTK_THEME_VARIANT",
    "_GTK_HIDE_TITLEBAR_WHEN_MAXIMIZED", "_XEMBED_INFO", "XdndAware", "XdndProxy",
    "XdndTypeList", "XdndActionList",
    "_CAPTURE_SHIELD_SECURE", "_CAPTURE_SHIELD_POLICY",
};
static Atom cs_allowed_atoms[sizeof(cs_allowed_names) / sizeof(cs_allowed_names[0])];

static int
cs_prop_allowed(Atom a)
{
    size_t i;

    for (i = 0; i < sizeof(cs_allowed_atoms) / sizeof(cs_allowed_atoms[0]); i++)
        if (a == cs_allowed_atoms[i])
            return 1;
    return 0;
}

/* Is property `name` of `win` hidden from `client` (rule properties)? When `win` is, is
 * inside or frames a secure window of another client (cs_win_title_secret): every
 * property but the allow-list above, to untrusted clients other than `win`'s owner; a
 * window manager is exempt only when trusted. Rule "properties" off: only the six title
 * atoms, and not to the window's owner either; rule "wmtitle" off: any window manager
 * (SubstructureRedirect on a root) is exempt. */
static int
cs_prop_hidden(ClientPtr client, WindowPtr win, Atom name)
{
    if (!cs_rule_on(CS_RULE_TITLE))
        return 0;
    /* the cheap answers first: a client reading its own window's properties (most
     * GetProperty requests) costs one comparison */
    if (cs_rule_on(CS_RULE_PROPS)) {
        if (CLIENT_ID(win->drawable.id) == client->index)
            return 0;
    } else if (!cs_title_atom(name))
        return 0;
    if (!cs_secure_count() || cs_client_trusted(client))
        return 0;               /* (cs_secure_count is 0 while protection is paused) */
    if (cs_rule_on(CS_RULE_PROPS) && cs_prop_allowed(name))
        return 0;
    if (!cs_rule_on(CS_RULE_WMTITLE) && cs_client_is_wm(client))
        return 0;
    return cs_win_title_secret(win, client);
}

/* the access modes that change a property (root_property_refused and the tag's rule
 * look at these; the trail at a subset) */
#define CS_PROP_CHANGE (DixWriteAccess | DixDestroyAccess | DixCreateAccess | \
                        DixSetAttrAccess | DixBlendAccess)

static void cs_property_hook_slow(CallbackListPtr *list, void *data, void *call);

/* The common case without a stack frame: a client reading a property of its own window
 * (no rule below concerns it, as cs_property_hook_slow's read branch says, whatever the
 * status and property); the rest there, by a tail call. */
static void
cs_property_hook(CallbackListPtr *list, void *data, void *call)
{
    XacePropertyAccessRec *rec = call;

    if (!(rec->access_mode & CS_PROP_CHANGE) &&
        CLIENT_ID(rec->pWin->drawable.id) == rec->client->index && cs_rule_on(CS_RULE_PROPS))
        return;
    cs_property_hook_slow(list, data, call);
}

static void __attribute__((noinline))
cs_property_hook_slow(CallbackListPtr *list, void *data, void *call)
{
    XacePropertyAccessRec *rec = call;
    PropertyPtr prop;

    (void) list;
    (void) data;
    if (rec->status != Success || !rec->ppProp || !(prop = *rec->ppProp))
        return;
    if (!(rec->access_mode & CS_PROP_CHANGE)) {
        /* a read (GetProperty without delete, ListProperties): of the rules below only
         * the hidden properties concern it (the trail, the root's and the tag's rules
         * concern changes); a client reading its own window's: none (cs_prop_hidden's
         * first answer, without the call) */
        if (CLIENT_ID(rec->pWin->drawable.id) == rec->client->index &&
            cs_rule_on(CS_RULE_PROPS))
            return;
        if ((rec->access_mode & (DixReadAccess | DixGetAttrAccess)) &&
            cs_prop_hidden(rec->client, rec->pWin, prop->propertyName) &&
            ((rec->access_mode & DixReadAccess) || cs_rule_on(CS_RULE_PROPS)))
            rec->status = BadMatch;     /* as below */
        return;
    }
    if ((rec->access_mode & (DixWriteAccess | DixCreateAccess | DixDestroyAccess)) &&
        (((prop->propertyName == cs_wm_state || prop->propertyName == cs_net_wm_state) &&
          cs_win_title_secret(rec->pWin, serverClient)) ||
         (prop->propertyName == cs_net_current_desktop && !rec->pWin->parent)))
        cs_settle();            /* the compositor may animate it: trail.c, "the trail" */
    if (cs_root_property_refused(rec->client, rec->pWin, prop->propertyName,
                                 rec->access_mode)) {
        rec->client->errorValue = prop->propertyName;
        rec->status = BadAccess;
        return;
    }
    if ((rec->access_mode & (DixReadAccess | DixGetAttrAccess)) &&
        cs_prop_hidden(rec->client, rec->pWin, prop->propertyName)) {
        if (!(rec->access_mode & DixWriteAccess)) {
            /* GetProperty (with or without delete) answers as for a window without the
             * property (dix's NullPropertyReply on BadMatch); ListProperties leaves its
             * name out (GetAttr) */
            if ((rec->access_mode & DixReadAccess) || cs_rule_on(CS_RULE_PROPS)) {
                rec->status = BadMatch;
                return;
            }
        } else if (cs_rule_on(CS_RULE_PROPS)) {
            /* RotateProperties (read and write): would move the value under a name the
             * client may read */
            rec->client->errorValue = prop->propertyName;
            cs_report(rec->client, rec->pWin->drawable.id, CS_KIND_DENIED);
            rec->status = BadAccess;
            return;
        }
    }
    if ((rec->access_mode & CS_PROP_CHANGE) &&
        cs_views_write_refused(rec->client, rec->pWin, prop->propertyName)) {
        rec->client->errorValue = rec->pWin->drawable.id;
        rec->status = BadAccess;        /* rule views (views.c) */
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
        switch (major) {
        case X_ChangeProperty:
        case X_DeleteProperty:
            prop = r32(c, 8);
            recheck = prop == cs_secure_atom() || prop == cs_policy_atom() || cs_views_atom(prop);
            wid = r32(c, 4);    /* also for a root property (pending.c) */
            break;
        case X_GetProperty:
            /* only a GetProperty with delete can remove the tag */
            if (((xReq *) c->requestBuffer)->data) {
                prop = r32(c, 8);
                recheck = prop == cs_secure_atom() || prop == cs_policy_atom() ||
                    cs_views_atom(prop);
            }
            break;
        case X_RotateProperties:
            recheck = 1;
            break;
        }
        if (recheck)
            wid = r32(c, 4);
    }
    r = c->swapped ? cs_orig_sprop[major](c) : cs_orig_prop[major](c);
    if (r == Success && prop != None && wid &&
        dixLookupWindow(&win, wid, serverClient, DixGetAttrAccess) == Success) {
        if (!win->parent)
            cs_pending_root_property(win, prop);
        else if (prop == cs_policy_atom())
            cs_pending_classified(win);     /* the daemon's answer (only it may write it) */
    }
    if (recheck && dixLookupWindow(&win, wid, serverClient, DixGetAttrAccess) == Success) {
        cs_update_secure(win);
        cs_update_views(win);
        cs_record_sweep();      /* no untrusted RECORD while a window is secure */
    }
    return r;
}

/* GetProperty without delete changes nothing: the real request at once */
static int
cs_ProcGetProperty(ClientPtr c)
{
    if (!((xReq *) c->requestBuffer)->data)
        return c->swapped ? cs_orig_sprop[X_GetProperty](c) : cs_orig_prop[X_GetProperty](c);
    return cs_ProcProperty(c);
}

Bool
cs_hooks_init(void)
{
    static const int majors[] = { X_ChangeProperty, X_DeleteProperty, X_GetProperty,
        X_RotateProperties };
    int *const armed[] = { &cs_composite_major, &cs_dri2_major, &cs_dri3_major, &cs_dbe_major };
    ExtensionEntry *e;
    size_t i;

    cs_composite_major = cs_dri2_major = cs_dri3_major = cs_dbe_major = -1;
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
    for (i = 0; i < sizeof(majors) / sizeof(majors[0]); i++)
        if (!cs_wrap_proc(majors[i], majors[i] == X_GetProperty ? cs_ProcGetProperty :
                          cs_ProcProperty, &cs_orig_prop[majors[i]], &cs_orig_sprop[majors[i]]))
            return FALSE;
    {
        static const char *const names[] = { "WM_NAME", "WM_ICON_NAME", "_NET_WM_NAME",
            "_NET_WM_VISIBLE_NAME", "_NET_WM_ICON_NAME", "_NET_WM_VISIBLE_ICON_NAME" };
        for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
            cs_title_atoms[i] = MakeAtom(names[i], strlen(names[i]), TRUE);
        for (i = 0; i < sizeof(cs_allowed_names) / sizeof(cs_allowed_names[0]); i++)
            cs_allowed_atoms[i] = MakeAtom(cs_allowed_names[i], strlen(cs_allowed_names[i]),
                                           TRUE);
        cs_wm_state = MakeAtom("WM_STATE", strlen("WM_STATE"), TRUE);
        cs_net_wm_state = MakeAtom("_NET_WM_STATE", strlen("_NET_WM_STATE"), TRUE);
        cs_net_current_desktop = MakeAtom("_NET_CURRENT_DESKTOP",
                                          strlen("_NET_CURRENT_DESKTOP"), TRUE);
    }
    if (!cs_wrap_proc(X_CreateWindow, cs_ProcCreateWindow, &cs_orig_create_window,
                      &cs_orig_screate_window))
        return FALSE;
    /* the resource hook is armed on demand (cs_hook_hold), not registered here */
    cs_hook_refs = 0;
    cs_armed_client = NULL;
    for (i = 0; i < sizeof(armed) / sizeof(armed[0]); i++) {
        if (*armed[i] <= 0)
            continue;
        if (!cs_wrap_proc(*armed[i], cs_ProcArmed, &cs_orig_armed[*armed[i]],
                          &cs_orig_sarmed[*armed[i]]))
            return FALSE;
    }
    if (!cs_record_init() || !cs_damage_init() || !cs_pending_init())
        return FALSE;
    return cs_add_callback(&XaceHooks[XACE_PROPERTY_ACCESS], cs_property_hook, NULL);
}
