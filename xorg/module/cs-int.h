/* CaptureShield Xorg module: declarations internal to the module, shared by the files of
 * the secret area per screen and by image.c's GetImage fast path (not part of cs.h). */
#ifndef CAPTURESHIELD_CS_INT_H
#define CAPTURESHIELD_CS_INT_H

#include "cs.h"
#include <X11/Xatom.h>
#include "inputstr.h"

struct cs_screen {
    RegionRec secret;           /* visible secure area in screen coordinates, with `trail` */
    Bool dirty;
    RegionRec drawn;            /* the part of it a compositor draws (manual redirection) */
    RegionRec trail;            /* where a compositor may still show a secure window */
    OsTimerPtr trail_timer;     /* empties `trail` TrailMs after it last grew */
    RegionRec vis;              /* the visible secure area alone (secret.c) */
    RegionRec stale;            /* where secure pixels were shown and nothing repainted since */
    Bool lazy;                  /* tree changes since the last computation were left to the
                                 * next read (cs_ValidateTree): `vis` may be older than the
                                 * last change */
    BoxRec swept;               /* then: the box around everything those changes touched */
    /* Per owner (the client of each secure window, or of a frame of one): its part of the
     * visible secure area, each bounded on its own (cs_bound), `secret` their union. */
    struct cs_owner *own;
    int nown, aown;
    /* What changed since the last computation: `dfull` all of it, else the area `dreg`
     * (old and new places of the windows that changed): the next computation redoes
     * that area only (cs_refresh_inc), `incs` such computations since the last full one. */
    Bool dfull;
    RegionRec dreg;
    unsigned incs;
    ValidateTreeProcPtr ValidateTree;
    MoveWindowProcPtr MoveWindow;
    ResizeWindowProcPtr ResizeWindow;
    ChangeBorderWidthProcPtr ChangeBorderWidth;
    SetShapeProcPtr SetShape;
    ClipNotifyProcPtr ClipNotify;
    PositionWindowProcPtr PositionWindow;
    RealizeWindowProcPtr RealizeWindow;
    UnrealizeWindowProcPtr UnrealizeWindow;
    DestroyWindowProcPtr DestroyWindow;
    DestroyPixmapProcPtr DestroyPixmap;
    ReparentWindowProcPtr ReparentWindow;
};

/* Per window: the tag (first, read as a byte by cs_win_secure) and its DOUBLE-BUFFER back
 * buffer (the first id allocated on it), to mark it secret when the window is tagged later
 * and again when DBE reallocates it (cs_PositionWindow). */
struct cs_window {
    unsigned char secure;
    unsigned char dbe_secret;
    XID dbe_id;
    RESTYPE dbe_type;
    XID framed;                 /* on a child of the root: the other client's window that the
                                 * window manager last reparented into its subtree (it frames
                                 * that window), 0: none */
    unsigned char umanual;      /* an untrusted client redirected it manually (secret.c) */
    unsigned char umanual_sub;  /* ... or its subwindows */
    unsigned char pending;      /* held secure until the daemon classifies it (pending.c) */
    unsigned char classified;   /* the daemon wrote or deleted its policy tag (pending.c) */
    unsigned char views;        /* secure views (views.c): CS_VIEWS_NONE, _RECTS, _WHOLE */
};

/* A tainted pixmap (cs_taint_pixmap): `flag` 1 holds the resource hook, 2 holds nothing;
 * `reader` the one untrusted client that may still use it (the owner of every secure
 * window whose pixels it holds), -1 nobody, 0 unknown (the id's owner, as before). */
struct cs_pixmap {
    unsigned char flag;
    int reader;
};

struct cs_owner {
    int id;                     /* client index */
    RegionRec r;
};

/* Anything may have changed: the next computation is a full one. */
static inline void
cs_set_dirty(struct cs_screen *cs)
{
    cs->dirty = TRUE;
    cs->dfull = TRUE;
    cs_gen++;
}

/* the screen's struct cs_screen, in a screen private (freed at CloseScreen) */
extern DevPrivateKeyRec cs_screen_key_rec;
#define SCR(s) ((struct cs_screen *) dixLookupPrivate(&(s)->devPrivates, &cs_screen_key_rec))

/* dixLookupPrivate of a pointer-sized screen private (a key registered with size 0 at
 * init, which fails without it), without its size test and assertions: 10 instructions
 * less in GetImage's common case, which looks up two */
static inline void *
cs_priv_ptr(PrivatePtr privates, DevPrivateKey key)
{
    return *(void **) ((char *) privates + key->offset);
}

/* The fast path of the read queries, inline and without a call, so that GetImage's
 * common case (image.c) costs no stack frame and no call but the screen's own GetImage,
 * and cs_read_clear's (reads.c) none but tail calls:
 * CS_READ_CLEAR: the box x,y,w,h of `draw` is a window read from the framebuffer (no
 *   redirected ancestor) while windows are secure, the secret area is computed and the
 *   box misses it (it is empty, or the box misses its extents): no client gets a secret
 *   pixel from it;
 * CS_READ_UNKNOWN: such a read, but the window is in a redirected one or the area is to
 *   be computed (cs_read_clear: 0);
 * CS_READ_RECTS: such a read within the area's extents: its rectangles tell;
 * CS_READ_OTHER: anything else (an empty box, a pause, not a window, no secure window). */
enum cs_read_fast { CS_READ_UNKNOWN = 0, CS_READ_CLEAR = 1, CS_READ_RECTS, CS_READ_OTHER };
static inline enum cs_read_fast
cs_read_clear_fast(DrawablePtr draw, int x, int y, int w, int h)
{
    WindowPtr win;
    struct cs_screen *cs;
    const BoxRec *e;

    if (w <= 0 || h <= 0 || cs_cfg.paused || draw->type != DRAWABLE_WINDOW || !cs_nsecure)
        return CS_READ_OTHER;
    for (win = (WindowPtr) draw; win->parent; win = win->parent)
        if (win->redirectDraw != RedirectDrawNone)
            return CS_READ_UNKNOWN;
    cs = cs_priv_ptr(draw->pScreen->devPrivates, &cs_screen_key_rec);
    if (cs->dirty)
        return CS_READ_UNKNOWN;
    if (!RegionNotEmpty(&cs->secret))
        return CS_READ_CLEAR;
    x += draw->x;
    y += draw->y;
    /* the box (in int) misses the secret area's extents (which lie in the 16-bit range):
     * so does the box clamped to that range */
    e = RegionExtents(&cs->secret);
    if (x >= e->x2 || x + w <= e->x1 || y >= e->y2 || y + h <= e->y1)
        return CS_READ_CLEAR;
    return CS_READ_RECTS;
}

/* Shared between the files of the secret area; each is defined in the file named. */

/* secure.c: which windows are secure */
extern Atom cs_atom, cs_patom;
void cs_set_win_secure(WindowPtr win, int on);

/* taint.c: secret pixmaps and DBE back buffers */
extern DevPrivateKeyRec cs_pixmap_key_rec;
void cs_taint_dbe(WindowPtr w);
void cs_taint_if_redirected(WindowPtr w, PixmapPtr screen_pix);
void cs_taint_redirected_subtree(WindowPtr w, PixmapPtr screen_pix);
Bool cs_DestroyPixmap(PixmapPtr pix);

/* area.c: the secret area computed from the window tree, per owner, bounded */
struct cs_area_state {
    int oom;                    /* a region operation of the current computation ran out of
                                 * memory (cs_compute then makes the whole domain secret:
                                 * fail closed) */
    unsigned long bounded;      /* times a region was bounded (log level 7) */
    int nobound;                /* the exact area is being computed (verify mode) */
    struct cs_screen *split;    /* while the secret area is computed per owner
                                 * (cs_compute_owners): the screen whose owners' areas get
                                 * each secure window's visible part */
    Bool composited;            /* during a computation: a trusted compositor paints the
                                 * screen (rule opacity, area.c) */
};
extern struct cs_area_state cs_area_st;
void cs_bound(RegionPtr r, int outward);
Bool cs_compute_in(WindowPtr top, RegionPtr secret, ClientPtr exclude, RegionPtr drawn,
                   BoxPtr within);
Bool cs_compute_owners(struct cs_screen *cs, WindowPtr root, RegionPtr secret, RegionPtr drawn,
                       RegionPtr within);
Bool cs_compute(WindowPtr top, RegionPtr secret, ClientPtr exclude, RegionPtr drawn);

/* trail.c: unrepainted areas, the compositor trail, the residue */
struct cs_trail_state {
    RegionPtr unp;              /* while the screen's secret area is computed: the part of
                                 * the screen no one repaints (NULL otherwise) */
    Bool unp_comp;              /* ... and whether a trusted compositor paints the overlay
                                 * window */
    Bool compositing;           /* a secure window was seen under manual redirection */
};
extern struct cs_trail_state cs_trail_st;
int cs_residue(void);
int cs_untrusted_manual(WindowPtr win);
void cs_unpainted_begin(WindowPtr root, RegionPtr unpainted);
void cs_unpainted_end(void);
void cs_note_unpainted(WindowPtr win, RegionPtr mine, int server_owned);
void cs_trail_add(struct cs_screen *cs, BoxPtr box);
int cs_unpaint_source(WindowPtr root);

/* refresh.c: the cached area marked dirty and computed again */
struct cs_refresh_state {
    unsigned long lazy, refreshes;      /* tree changes left to the next read;
                                         * computations of the secret area */
    unsigned long incr, verified, mismatch;     /* incremental computations; verify mode's
                                                 * checks and misses */
    int verify;                 /* env CS_VERIFY_REGION=1 (tests): each computation is
                                 * checked against an exact full one */
};
extern struct cs_refresh_state cs_refresh_st;
void cs_dirty_win(struct cs_screen *cs, WindowPtr w);
void cs_refresh(struct cs_screen *cs, WindowPtr root);

/* tree.c: the screen wrappers for the window tree */
void cs_tree_changed(struct cs_screen *cs, WindowPtr root, BoxPtr b);

#endif
