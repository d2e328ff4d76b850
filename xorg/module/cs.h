/* CaptureShield Xorg module: declarations shared by the module's source files. */
#ifndef CAPTURESHIELD_CS_H
#define CAPTURESHIELD_CS_H

#ifdef HAVE_XORG_CONFIG_H
#include <xorg-config.h>
#endif
#include <xorg-server.h>
#include <X11/X.h>
#include <X11/Xproto.h>
#include "misc.h"
#include "os.h"
#include "dixstruct.h"
#include "extnsionst.h"
#include "scrnintstr.h"
#include "windowstr.h"
#include "pixmapstr.h"
#include "gcstruct.h"
#include "regionstr.h"
#include "privates.h"
#include "resource.h"
#include "property.h"
#include "propertyst.h"
#include "xace.h"
#include "xacestr.h"
#include <limits.h>
#include <sys/types.h>
#include <stdlib.h>

/* CLIENT_ID without a call: resource.h's calls ResourceClientBits() at every use (a hook
 * runs it for each resource lookup). The number of client bits is fixed when the server
 * starts (-maxclients); module.c sets cs_client_shift at each generation's init, before
 * any wrapper or hook of the module is installed. Same value as resource.h's. */
extern int cs_client_shift;
#undef CLIENT_ID
#define CLIENT_ID(id) \
    ((int) (((XID) (id) & ((1U << RESOURCE_AND_CLIENT_COUNT) - 1)) >> cs_client_shift))

/* Are the fields of the request being dispatched still in the client's byte order? Only
 * for a byte-swapped client's extension request: a core request reaches the module's
 * wrapper after SProcXxx swapped it, an extension request before the extension's own
 * swapped dispatcher does (wrap.c, cs_wrap_proc). Hooks and screen procs always see
 * host order. */
static inline int
cs_req_swapped(ClientPtr c)
{
    return c->swapped && ((const xReq *) c->requestBuffer)->reqType >= EXTENSION_BASE;
}

#define CS_NAME "CAPTURESHIELD"
#define CS_MAJOR_VERSION 1
#define CS_MINOR_VERSION 2

#define CS_VISIBLE __attribute__((visibility("default")))

enum cs_mode { CS_MODE_CENSOR = 0, CS_MODE_DENY = 1 };

/* Rules that the test-only option "DisableRules" can switch off one by one. */
enum cs_rule {
    CS_RULE_GETIMAGE = 1 << 0,         /* screen GetImage censor / GetImage+ShmGetImage deny */
    CS_RULE_COPYAREA = 1 << 1,         /* CopyArea / CopyPlane from a window */
    CS_RULE_RENDER = 1 << 2,           /* RENDER pictures of windows */
    CS_RULE_NAMEPIXMAP = 1 << 3,       /* Composite NameWindowPixmap */
    CS_RULE_PIXMAP = 1 << 4,           /* tainted (named) pixmaps: copy, picture, tile, stipple */
    CS_RULE_FORCEDBG = 1 << 5,         /* opaque background for untrusted windows */
    CS_RULE_PROPERTY = 1 << 6,         /* the tag belongs to the window's owner */
    CS_RULE_DRI = 1 << 7,              /* DRI2/DRI3 on secure windows */
    CS_RULE_DAEMON = 1 << 8,           /* selections, KillClient, root properties, SendEvent */
    CS_RULE_DBE = 1 << 9,              /* DOUBLE-BUFFER back buffers of secure windows */
    CS_RULE_FRAME = 1 << 10,           /* the window manager's frame of a secure window */
    CS_RULE_TITLE = 1 << 11,           /* title properties of secure windows (GetProperty) */
    CS_RULE_OVERLAY = 1 << 12,         /* windows in the Composite overlay window cover nothing */
    CS_RULE_GEOMETRY = 1 << 13,        /* copy geometry clamped to the 16-bit range first */
    CS_RULE_BLANKFIRST = 1 << 14,      /* no secret pixel is written, then blanked */
    CS_RULE_FILTER = 1 << 15,          /* RENDER filters with a kernel move pixels */
    CS_RULE_OWNSECURE = 1 << 16,       /* others' secure windows inside a reader's own stay secret */
    CS_RULE_RESOURCES = 1 << 17,       /* pixmaps, pictures, GCs, SHM segments of secure owners */
    CS_RULE_STALE = 1 << 18,           /* unrepainted areas; the trail computed at tree changes */
    CS_RULE_TAINT = 1 << 19,           /* pixmaps named before a reparent, a tag, during a pause */
    CS_RULE_RECORD = 1 << 20,          /* no untrusted RECORD while a secure window exists */
    CS_RULE_PROPS = 1 << 21,           /* secure windows: only allow-listed properties readable */
    CS_RULE_WMTITLE = 1 << 22,         /* a window manager reads titles only when trusted */
    CS_RULE_INPUT = 1 << 23,           /* keys, grabs, XTEST, SendEvent of a focused secure window */
    CS_RULE_TRUSTUSER = 1 << 24,       /* Trust programs: trusted only when run by DaemonUsers */
    CS_RULE_OPACITY = 1 << 25,         /* under a compositor no untrusted window covers */
    CS_RULE_KEYMAP = 1 << 26,          /* no untrusted keymap/device change at a secure focus */
    CS_RULE_IDENTITY = 1 << 27,        /* trust by kernel identity (off: the exe path string) */
    CS_RULE_HANDOVER = 1 << 28,        /* sole holder of the connection + re-checks on use */
    CS_RULE_DAEMONROLE = 1 << 29,      /* Daemon program: only "watch" run by DaemonUsers */
    CS_RULE_WMFOCUS = 1 << 30,         /* the WM moves a secure focus only at the user's input */
    CS_RULE_POINTER = 1ULL << 31,      /* no pointer position or event over a secure window */
    CS_RULE_DAMAGE = 1ULL << 32,       /* no DAMAGE report of a secure area to untrusted clients */
    CS_RULE_PENDING = 1ULL << 33,      /* new top-levels secure until the daemon classifies them */
    CS_RULE_VIEWS = 1ULL << 34,        /* secure views: rectangles of a window (views.c) */
    CS_RULE_MODIFIERS = 1ULL << 35,    /* no modifier state while a secure window has the focus */
};

/* Why a client is trusted (wire values of GetClientTrust). */
enum cs_trust {
    CS_TRUST_NONE = 0,
    CS_TRUST_SERVER = 1,
    CS_TRUST_EXE = 2,
    CS_TRUST_GRANTED = 3,
};

/* Kinds of the CaptureNotify event. */
enum cs_kind {
    CS_KIND_CENSORED = 0, CS_KIND_DENIED = 1,
    CS_KIND_SELECTION = 2, CS_KIND_KILL = 3, CS_KIND_PROPERTY = 4, CS_KIND_COMMAND = 5,
    CS_KIND_TRUST = 7,          /* trust refused or lost (identity.c); drawable = cs_reason */
    CS_KIND_INPUT = 8,          /* secure input refused (input.c) */
};

struct cs_config {
    enum cs_mode mode;
    unsigned long long disabled; /* cs_rule bits switched off (tests only) */
    char **trust;               /* absolute paths of trusted programs */
    int ntrust;
    int paused;                 /* SetProtection 0: reads of secure windows are not censored */
    int trail_ms;               /* how long a compositor may still show a secure window
                                 * where it was (Option "TrailMs", trail.c) */
};

extern struct cs_config cs_cfg;

static inline int
cs_rule_on(unsigned long long rule)
{
    return !(cs_cfg.disabled & rule);
}

/* options.c */
void cs_parse_options(void *opts);
const char *cs_mode_name(void);

/* trust.c */
Bool cs_trust_init(void);
enum cs_trust cs_client_trust(ClientPtr client);
/* Per X client state (trust.c), a client private. Client privates are zeroed for every
 * new connection, so a grant, a selected event mask or a cached identity never outlives
 * the X client it belongs to, whatever PID or resource base a later client gets. */
struct cs_client {
    unsigned char identity_known;
    unsigned char exe_trusted;
    unsigned char granted;
    unsigned char redirect_logged;
    int owned_secure;           /* secure windows this client owns */
    CARD32 event_mask;
    unsigned long reported_seq; /* cs_report_once: sequence + 1 of the last reported request */
    /* rule identity: the identity trust was given to (identity.c), re-checked on use */
    unsigned char refused;      /* trust refused or lost: for good on this connection */
    int role;                   /* enum cs_role */
    dev_t dev;
    ino_t ino;
    CARD32 checked_ms;          /* last successful check */
    unsigned char first_use;    /* trusted, not used yet: the first use re-checks */
};
extern DevPrivateKeyRec cs_client_key_rec;

static inline struct cs_client *
cs_client_state(ClientPtr client)
{
    return dixLookupPrivate(&client->devPrivates, &cs_client_key_rec);
}

/* A client whose identity is known, not trusted and not granted: cs_client_trust answers
 * CS_TRUST_NONE for it with no side effect (no identification, no re-check), so the
 * untrusted reader of every request pays no call. Anything else goes to cs_client_trust
 * (identification, the rate-limited re-check of a trusted client). */
static inline int
cs_client_trusted(ClientPtr client)
{
    if (client && client != serverClient && client->index != 0) {
        const struct cs_client *st = cs_client_state(client);
        if (st->identity_known && !st->exe_trusted && !st->granted)
            return 0;
    }
    return cs_client_trust(client) != CS_TRUST_NONE;
}
int cs_client_trusted_strict(ClientPtr client);    /* server or Trust list (not granted) */
int cs_grant(ClientPtr target, Bool on);
void cs_note_secure_owner(WindowPtr win, int delta);
static inline int
cs_client_owns_secure(ClientPtr client)
{
    return client && client != serverClient && cs_client_state(client)->owned_secure > 0;
}
void cs_set_event_mask(ClientPtr client, CARD32 mask);
CARD32 cs_event_mask(ClientPtr client);
void cs_note_redirect(ClientPtr client, WindowPtr win);

/* identity.c: who a client is, from the kernel (rule identity) */
enum cs_role { CS_ROLE_NONE = 0, CS_ROLE_TRUST, CS_ROLE_DAEMON, CS_ROLE_GRANT };
enum cs_reason {
    CS_REASON_NONE = 0, CS_REASON_INJECTED, CS_REASON_HANDOVER, CS_REASON_NAMESPACE,
    CS_REASON_TRACER, CS_REASON_PATH_OWNER, CS_REASON_DAEMON_ARGV, CS_REASON_DAEMON_UID,
    CS_REASON_GONE, CS_REASON_EXE_CHANGED, CS_REASON_TRUST_UID,
};
struct cs_verdict {
    enum cs_role role;          /* in: NONE (look up), GRANT, or the role to re-check */
    dev_t dev;                  /* in/out: the program's file */
    ino_t ino;
    pid_t pid;
    enum cs_reason reason;
    char why[160];
    char exe[PATH_MAX];
};
void cs_identity_add(enum cs_role role, const char *path);
void cs_identity_daemon_users(const char *list);
int cs_identity_check(ClientPtr client, struct cs_verdict *v);
int cs_identity_path_only(ClientPtr client, struct cs_verdict *v);
const char *cs_reason_name(enum cs_reason r);

/* the secret area per screen (secure.c, taint.c, area.c, trail.c, refresh.c, reads.c, tree.c) */
Bool cs_region_init(void);
/* the window's tag: the first byte of its window private (secure.c, struct cs_window) */
extern DevPrivateKeyRec cs_window_key_rec;
static inline int
cs_win_secure(WindowPtr win)
{
    return *(unsigned char *) dixLookupPrivate(&win->devPrivates, &cs_window_key_rec);
}
/* secure views (views.c): rectangles of a window secret like a secure window */
enum { CS_VIEWS_NONE = 0, CS_VIEWS_RECTS = 1, CS_VIEWS_WHOLE = 2 };
Bool cs_views_init(void);
int cs_views_atom(Atom a);
int cs_win_views(WindowPtr win);
void cs_update_views(WindowPtr win);
void cs_forget_views(WindowPtr win);
void cs_views_region(WindowPtr win, RegionPtr out);
int cs_views_write_refused(ClientPtr client, WindowPtr win, Atom name);
int cs_win_in_secure(WindowPtr win);    /* the window or one of its ancestors is secure */
int cs_win_has_secure(WindowPtr win);   /* the window, an ancestor or a descendant is secure */
void cs_update_secure(WindowPtr win);
int cs_client_is_wm(ClientPtr client);  /* holds SubstructureRedirect on a root */
int cs_win_frames_secure(WindowPtr top, ClientPtr reader);
int cs_win_title_secret(WindowPtr win, ClientPtr reader);
void cs_mark_dirty(void);
int cs_secure_count_slow(void);
extern int cs_nsecure;          /* secure windows in existence (secure.c) */
/* Nonzero while something is secret: a secure window exists or a residue (stale area,
 * trail) remains; 0 while protection is paused. */
static inline int
cs_secure_count(void)
{
    if (cs_nsecure && !cs_cfg.paused)
        return cs_nsecure;
    return cs_secure_count_slow();
}
/* A secure window's state changed in a way a compositor animates: the whole screen is
 * secret for TrailMs (trail.c, "the trail"). */
void cs_settle(void);
/* The secret part of the box (x,y,w,h) in drawable coordinates of a read by client.
 * Returns 0 (out left empty) when nothing secret; 1 when out holds the secret part in
 * drawable coordinates. */
/* Bumped whenever the secret area may have changed (refresh.c). */
extern unsigned long cs_gen;
/* 1: no read from win returns a secret pixel to anyone while cs_gen stays the same. */
int cs_win_clear(WindowPtr win);
int cs_secret_for_read(ClientPtr client, DrawablePtr draw, int x, int y, int w, int h,
                       RegionPtr out);
/* 1: no client reads a secret pixel in that box now (no client state looked at); 0: ask
 * cs_secret_for_read. */
int cs_read_clear(DrawablePtr draw, int x, int y, int w, int h);
void cs_box_clamp(BoxPtr b, int x, int y, int w, int h);   /* in int, to the 16-bit range */
int cs_pixmap_tainted(PixmapPtr pix);
void cs_taint_pixmap(PixmapPtr pix);    /* holds the resource hook while the pixmap lives */
void cs_note_dbe_buffer(WindowPtr win, XID id, RESTYPE type, PixmapPtr pix, int secret);
Atom cs_secure_atom(void);
Atom cs_policy_atom(void);
/* secret.c, secure.c, taint.c: one definition of what is secret */
void cs_taint_pixmap_win(PixmapPtr pix, WindowPtr win);    /* secret but to win's owner */
int cs_pixmap_reader(PixmapPtr pix, ClientPtr client, XID id);
int cs_win_foreign_secure(WindowPtr win, ClientPtr client);
int cs_win_sealed(WindowPtr win, ClientPtr reader);     /* in a secure window it can't read */
void cs_note_manual_redirect(WindowPtr win, int subwindows, int on);
void cs_secure_changed(int on, int nsecure);
int cs_foreign_resource_refused(XaceResourceAccessRec *rec);

/* censor.c (init), copy.c (cs_forget_window) */
Bool cs_censor_init(void);
void cs_forget_window(WindowPtr win);    /* a window is being destroyed */

/* hooks.c */
Bool cs_hooks_init(void);
Bool cs_hook_hold(void);        /* arm the resource hook (one more reason); FALSE: failed */
void cs_hook_release(void);     /* one reason less; the last one disarms it */

/* record.c */
Bool cs_record_init(void);
void cs_record_sweep(void);     /* a window became secure or trust was lost */

/* defences.c */
Bool cs_defences_init(void);
int cs_root_property_refused(ClientPtr client, WindowPtr win, Atom name, Mask mode);

/* ext.c */
Bool cs_ext_init(void);
void cs_report(ClientPtr reader, XID drawable, int kind);
int cs_report_once(ClientPtr client);   /* one report per request (trust.c) */
void cs_report_secure(WindowPtr win);  /* kind 6 (1.2): `win`'s tag was written */

/* wmfocus.c: the user's clicks followed while a secure window exists */
void cs_wmfocus_secure_changed(int nsecure);

/* pending.c: secret before the tag (rule pending) */
Bool cs_pending_init(void);
int cs_win_pending(WindowPtr win);
void cs_pending_classified(WindowPtr win);
void cs_pending_root_property(WindowPtr root, Atom prop);

/* damage.c: DAMAGE reports of untrusted clients lose the secret area (rule damage) */
Bool cs_damage_init(void);

/* input.c */
Bool cs_input_init(void);
void cs_input_send_check(XaceSendAccessRec *rec);   /* from defences.c's send hook */

/* wrap.c: every wrapper the module installs is recorded there and undone at the server's
 * reset or exit (request vectors and callbacks at the extension's CloseDown, screen procs
 * at each CloseScreen) and when the init fails half-way. Call these from the init
 * functions (they run once per server generation). */
typedef int (*CsProcPtr)(ClientPtr);
typedef void (*CsFn)(void);
/* ProcVector[major] and SwappedProcVector[major] become fn; the previous entries go to
 * *orig and *sorig (either may be NULL) for the wrapper to call. FALSE: nothing done. */
Bool cs_wrap_proc(int major, CsProcPtr fn, CsProcPtr *orig, CsProcPtr *sorig);
/* AddCallback, deleted again at close down. */
Bool cs_add_callback(CallbackListPtr *list, CallbackProcPtr fn, void *data);
/* Screen proc `field` of `s` becomes `fn`; the previous value is kept in `saved` (an
 * lvalue in memory that lives until the screen closes), restored at CloseScreen. Returns
 * where it is kept (NULL: failed, nothing wrapped). CS_WRAP_SCREEN_OWN: the previous
 * value is kept by wrap.c, at the address returned. */
CsFn *cs_wrap_screen(ScreenPtr s, CsFn *slot, CsFn *saved, CsFn fn);
#define CS_WRAP_SCREEN(s, field, saved, fn) \
    ((void) sizeof((saved) = (s)->field = (fn)), \
     cs_wrap_screen((s), (CsFn *) &(s)->field, (CsFn *) &(saved), (CsFn) (fn)) != NULL)
#define CS_WRAP_SCREEN_OWN(s, field, fn) \
    ((void) sizeof((s)->field = (fn)), \
     (__typeof__((s)->field) *) cs_wrap_screen((s), (CsFn *) &(s)->field, NULL, (CsFn) (fn)))
/* A screen wrapper's call of the proc it wraps, in the style of mi's and Xext's
 * SCREEN_PROLOGUE/EPILOGUE: the prologue puts the previous proc, kept in `saved` (an
 * lvalue), back into the screen for the call; the epilogue keeps in `saved` what the
 * screen holds after it (a proc may have wrapped or unwrapped itself meanwhile) and puts
 * the wrapper back. CS_SCREEN_REWRAP only puts the wrapper back (image.c's GetImage,
 * whose previous proc wrap.c keeps: CS_WRAP_SCREEN_OWN). */
#define CS_SCREEN_PROLOGUE(s, field, saved) ((s)->field = (saved))
#define CS_SCREEN_REWRAP(s, field, wrapper) ((s)->field = (wrapper))
#define CS_SCREEN_EPILOGUE(s, field, saved, wrapper) \
    ((saved) = (s)->field, CS_SCREEN_REWRAP(s, field, wrapper))
/* Cleanups: at close down (or a failed init), and per screen at its CloseScreen after
 * its procs are restored (free per-screen state, timers). */
Bool cs_on_close(void (*fn)(void));
Bool cs_on_close_screen(void (*fn)(ScreenPtr));
Bool cs_wrap_begin(void);
void cs_wrap_close_down(void);
void cs_wrap_undo(const char *step);
void cs_wrap_summary(void);
void cs_wrap_options(void *opts);
Bool cs_fail_step(const char *step);    /* test-only Option "FailInit" names this step */
/* Test-only Option "FailAlloc": the module's blanking allocations fail (they must then
 * fail closed: BadAlloc or black). */
extern int cs_fail_alloc;
static inline void *
cs_malloc(size_t n)
{
    return cs_fail_alloc ? NULL : malloc(n);
}
/* A region operation's result (`ok`, its destination `r`): FALSE when it ran out of
 * memory (pixman leaves `r` broken, i.e. empty: treat as "everything secret"). */
static inline Bool
cs_rgn_ok(Bool ok, RegionPtr r)
{
    if (cs_fail_alloc)
        RegionBreak(r);
    return ok && !RegionBroken(r);
}

#endif
