/* CaptureShield Xorg module: declarations internal to the module, shared by the files of
 * the secret area per screen (not part of cs.h). */
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
#define SCR(s) ((struct cs_screen *) dixLookupPrivate(&(s)->devPrivates, &cs_screen_key_rec))
#endif
