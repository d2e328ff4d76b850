/* CaptureShield Xorg module: declarations internal to the module, shared by the files of
 * secure input (rule "input"; not part of cs.h). */
#ifndef CAPTURESHIELD_INPUT_INT_H
#define CAPTURESHIELD_INPUT_INT_H

#include "cs.h"
#include "inputstr.h"
#include "dix.h"
#include "mi.h"
#include "xkbsrv.h"
#include <string.h>
#include <X11/extensions/XI.h>
#include <X11/extensions/XIproto.h>
#include <X11/extensions/XI2.h>
#include <X11/extensions/XI2proto.h>

/* Per X client: the focus period of its last report (at most one report per period). */
struct cs_input_client {
    unsigned long reported_period;      /* period + 1; 0: none */
};

/* Shared between the files of secure input; each is defined in the file named. */

/* focus.c: where the keys go, who may read them, which events carry them */
extern DevPrivateKeyRec cs_input_key_rec;
struct cs_memo_focus {
    unsigned long gen, devgen;  /* gen 0: nothing kept */
    WindowPtr focus, sprite, psprite;   /* the core devices' focus and sprite windows then */
    WindowPtr secure, win;      /* the answer */
};
/* focus.c's state */
struct cs_focus_state {
    unsigned long period;       /* bumped whenever the secure focus may change */
    XID last_secure;            /* the secure window that had the focus last time */
    int xi_major, xi_event;     /* XInputExtension major opcode, event base (0: none) */
    int xi_known;
    WindowPtr kmemo_focus, kmemo_sprite, kmemo_win;     /* cs_key_window's last answer */
    unsigned long kmemo_gen;
    WindowPtr memo_win, memo_secure;    /* cs_secure_of_memo's last answer */
    unsigned long memo_gen;
    unsigned long devgen;       /* devices may have changed (focus.c: "remembered") */
    Bool hier_pending;
    struct cs_memo_focus fmemo, pmemo;  /* the kept focus and pointer answers */
    ClientPtr rmemo_client;     /* the last ownership answer, while cs_gen stays */
    WindowPtr rmemo_win;        /* (a client that leaves has its windows destroyed, */
    unsigned long rmemo_gen;    /* which moves cs_gen on) */
    int rmemo_owns;
};
extern struct cs_focus_state cs_focus_st;
void cs_input_ext_slow(void);
WindowPtr cs_focus_secure_slow(WindowPtr *keywin);
WindowPtr cs_pointer_secure_slow(WindowPtr *under);
int cs_key_reader_ok_slow(ClientPtr client, WindowPtr win);
void cs_input_report(ClientPtr client, XID what);
int cs_is_key_event(const xEvent *ev);
int cs_is_input_event(const xEvent *ev);
void cs_focus_reset(void);

/* xkb.c: the XKB events that tell which key went down, held back */
#define CS_MAX_XKB 256
/* xkb.c's state */
struct cs_xkb_state {
    struct cs_xkb_hidden {
        DeviceIntPtr dev;
        XkbInterestPtr in;
        XID resource;
        ClientPtr client;
        CARD16 ext_dev, state, access_x;
        CARD32 ctrls, i_state;
        BOOL bell, action;
    } held[CS_MAX_XKB];
    int n;
    Bool mieq_armed;
    XID keywin;                 /* the key window at the last sync (0: no secure focus) */
    Bool dirty;                 /* an XKB request or a client gone since the last sync */
    Bool open;                  /* between init and close (a queued work proc may outlive) */
    Bool work_queued;
    Bool any;                   /* at the last sync: some record selects key-revealing events */
    unsigned long gen;          /* cs_gen at the last sync */
    Bool recheck;               /* the trust of the selecting clients is due a re-check */
    OsTimerPtr timer;           /* sets recheck while a secure window has the focus */
    Bool timer_on;
};
extern struct cs_xkb_state cs_xkb_st;
void cs_xkb_sync_slow(Bool force);
Bool cs_xkb_work(ClientPtr client, void *closure);
void cs_xkb_forget(ClientPtr client);
void cs_xkb_arm(void);
void cs_xkb_close(void);
void cs_xkb_reset(void);

/* grabs.c: passive grabs hidden from a key press, the key event hooks */
#define CS_MAX_HIDDEN 64
/* grabs.c's state */
struct cs_grabs_state {
    /* DeviceEventCallback (see cs_devev_follow): on the list; on for good (a freezing
     * grab was made); following the secure focus (another grab was made) */
    Bool devev_armed, devev_sticky, grab_seen;
    struct {
        GrabPtr grab;
        WindowPtr win;
        XID wid;
        CARD8 type;
    } hidden[CS_MAX_HIDDEN];    /* passive grabs hidden from a key press */
    int nhidden;
    Bool dispatch_armed;        /* cs_core_dispatch_hook is on the list: grabs are hidden */
    Bool avail_armed;           /* cs_key_avail_hook is on the list */
};
extern struct cs_grabs_state cs_grabs_st;
int cs_in_shortcut_grab(ClientPtr client);
void cs_restore_grabs(void);
int cs_any_frozen(void);
void cs_avail_disarm(void);
void cs_device_event(CallbackListPtr *list, void *data, void *call);
Bool cs_devev_arm(void);
void cs_devev_follow(void);
void cs_grabs_reset(void);

/* input.c: the hooks and the block handler */
void cs_input_want_block(void);
void cs_core_dispatch_hook(CallbackListPtr *list, void *data, void *call);

/* Inline, so that the usual answer costs no call; every file of secure input calls them. */

static inline void
cs_input_ext(void)
{
    if (!cs_focus_st.xi_known)
        cs_input_ext_slow();
}

/* The secure window `win` is or lies in (the innermost one), or NULL. */
static inline WindowPtr
cs_secure_of(WindowPtr win)
{
    for (; win; win = win->parent)
        if (cs_win_secure(win))
            return win;
    return NULL;
}

static inline WindowPtr
cs_sprite_win(DeviceIntPtr d)
{
    return d->spriteInfo && d->spriteInfo->sprite ? d->spriteInfo->sprite->win : NULL;
}

/* the kept answer m still holds */
static inline int
cs_memo_holds(const struct cs_memo_focus *m)
{
    DeviceIntPtr k = inputInfo.keyboard, p = inputInfo.pointer;

    return m->gen == cs_gen && m->devgen == cs_focus_st.devgen && k && p && k->focus &&
        k->focus->win == m->focus && cs_sprite_win(k) == m->sprite &&
        cs_sprite_win(p) == m->psprite && !p->key && !k->button;
}

/* The secure window that has a master keyboard's focus now (NULL: none); *keywin: the
 * window the keys go to. Inline: the kept answer costs no call. */
static inline WindowPtr
cs_focus_secure(WindowPtr *keywin)
{
    if (!cs_rule_on(CS_RULE_INPUT) || !cs_secure_count())
        return NULL;
    if (!cs_memo_holds(&cs_focus_st.fmemo))
        return cs_focus_secure_slow(keywin);
    if (cs_focus_st.fmemo.secure && keywin)
        *keywin = cs_focus_st.fmemo.win;
    return cs_focus_st.fmemo.secure;   /* last_secure is up to date since it was kept */
}

/* The secure window under a master pointer now (NULL: none); *under: the window under it. */
static inline WindowPtr
cs_pointer_secure(WindowPtr *under)
{
    if (!cs_rule_on(CS_RULE_INPUT) || !cs_secure_count())
        return NULL;
    if (!cs_memo_holds(&cs_focus_st.pmemo))
        return cs_pointer_secure_slow(under);
    if (cs_focus_st.pmemo.secure)
        *under = cs_focus_st.pmemo.win;
    return cs_focus_st.pmemo.secure;
}

/* inline: the owner of the focused secure window, reading its keys, costs no call */
static inline int
cs_key_reader_ok(ClientPtr client, WindowPtr win)
{
    if (!client || client == serverClient)
        return 1;
    if (client == cs_focus_st.rmemo_client && win == cs_focus_st.rmemo_win &&
        cs_focus_st.rmemo_gen == cs_gen &&
        cs_focus_st.rmemo_owns)
        return 1;
    return cs_key_reader_ok_slow(client, win);
}

/* Called for every key event (twice: slave and master, each on its raw and device event):
 * nothing held back, nothing to hold back and no XKB request since the last sync is the
 * usual case, and costs a few loads here */
static inline void
cs_xkb_sync(Bool force)
{
    if (cs_xkb_st.n || cs_xkb_st.any || cs_xkb_st.dirty)
        cs_xkb_sync_slow(force);
}

/* keymap.c: no untrusted keymap or device change while a secure window has the focus
 * (rule keymap); from cs_device_hook: 1 when it refused */
int cs_keymap_check(XaceDeviceAccessRec *rec);

/* wmfocus.c: may the window manager move the focus away from a secure window now (it is
 * the WM, and the user's own click came within the bound; rule wmfocus) */
Bool cs_wmfocus_init(void);
int cs_wmfocus_allowed(ClientPtr client);

/* pointer.c: no pointer position or event over a secure window for untrusted clients
 * (rule pointer); from cs_receive_hook and cs_device_hook: 1 when it refused */
int cs_pointer_receive_check(XaceReceiveAccessRec *rec);
int cs_pointer_device_check(XaceDeviceAccessRec *rec);
Bool cs_pointer_init(void);
/* modstate.c: no modifier state while a secure window has the focus (rule modifiers) */
int cs_modstate_call(ClientPtr client, int answers, CsProcPtr proc);
Bool cs_modstate_init(void);

#endif
