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
extern unsigned long cs_bounded;
extern int cs_nobound;
void cs_bound(RegionPtr r, int outward);
Bool cs_compute_in(WindowPtr top, RegionPtr secret, ClientPtr exclude, RegionPtr drawn,
                   BoxPtr within);
Bool cs_compute_owners(struct cs_screen *cs, WindowPtr root, RegionPtr secret, RegionPtr drawn,
                       RegionPtr within);
Bool cs_compute(WindowPtr top, RegionPtr secret, ClientPtr exclude, RegionPtr drawn);

/* trail.c: unrepainted areas, the compositor trail, the residue */
extern Bool cs_compositing;
int cs_residue(void);
int cs_untrusted_manual(WindowPtr win);
void cs_unpainted_begin(WindowPtr root, RegionPtr unpainted);
void cs_unpainted_end(void);
void cs_note_unpainted(WindowPtr win, RegionPtr mine, int server_owned);
void cs_trail_add(struct cs_screen *cs, BoxPtr box);
int cs_unpaint_source(WindowPtr root);

/* refresh.c: the cached area marked dirty and computed again */
extern unsigned long cs_lazy, cs_refreshes;
extern int cs_verify;
void cs_dirty_win(struct cs_screen *cs, WindowPtr w);
void cs_refresh(struct cs_screen *cs, WindowPtr root);

/* tree.c: the screen wrappers for the window tree */
void cs_tree_changed(struct cs_screen *cs, WindowPtr root, BoxPtr b);

#endif
