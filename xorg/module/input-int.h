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
extern unsigned long cs_period;
extern int cs_xi_major, cs_xi_event;
extern int cs_xi_known;
extern unsigned long cs_devgen;
extern Bool cs_hier_pending;
struct cs_memo_focus {
    unsigned long gen, devgen;  /* gen 0: nothing kept */
    WindowPtr focus, sprite, psprite;   /* the core devices' focus and sprite windows then */
    WindowPtr secure, win;      /* the answer */
};
extern struct cs_memo_focus cs_fmemo, cs_pmemo;
extern ClientPtr cs_rmemo_client;
extern WindowPtr cs_rmemo_win;
extern unsigned long cs_rmemo_gen;
extern int cs_rmemo_owns;
void cs_input_ext_slow(void);
WindowPtr cs_focus_secure_slow(WindowPtr *keywin);
WindowPtr cs_pointer_secure_slow(WindowPtr *under);
int cs_key_reader_ok_slow(ClientPtr client, WindowPtr win);
void cs_input_report(ClientPtr client, XID what);
int cs_is_key_event(const xEvent *ev);
int cs_is_input_event(const xEvent *ev);
void cs_focus_reset(void);

/* xkb.c: the XKB events that tell which key went down, held back */
extern int cs_nxkb;
extern Bool cs_mieq_armed;
extern XID cs_xkb_keywin;
extern Bool cs_xkb_dirty;
extern Bool cs_xkb_work_queued;
extern Bool cs_xkb_any;
extern Bool cs_xkb_recheck;
extern Bool cs_xkb_timer_on;
void cs_xkb_sync_slow(Bool force);
Bool cs_xkb_work(ClientPtr client, void *closure);
void cs_xkb_forget(ClientPtr client);
void cs_xkb_arm(void);
void cs_xkb_close(void);
void cs_xkb_reset(void);

/* grabs.c: passive grabs hidden from a key press, the key event hooks */
extern Bool cs_devev_armed, cs_devev_sticky, cs_grab_seen;
extern int cs_nhidden;
extern Bool cs_dispatch_armed;
extern Bool cs_avail_armed;
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
    if (!cs_xi_known)
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

    return m->gen == cs_gen && m->devgen == cs_devgen && k && p && k->focus &&
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
    if (!cs_memo_holds(&cs_fmemo))
        return cs_focus_secure_slow(keywin);
    if (cs_fmemo.secure && keywin)
        *keywin = cs_fmemo.win;
    return cs_fmemo.secure;     /* cs_last_secure is up to date since it was kept */
}

/* The secure window under a master pointer now (NULL: none); *under: the window under it. */
static inline WindowPtr
cs_pointer_secure(WindowPtr *under)
{
    if (!cs_rule_on(CS_RULE_INPUT) || !cs_secure_count())
        return NULL;
    if (!cs_memo_holds(&cs_pmemo))
        return cs_pointer_secure_slow(under);
    if (cs_pmemo.secure)
        *under = cs_pmemo.win;
    return cs_pmemo.secure;
}

/* inline: the owner of the focused secure window, reading its keys, costs no call */
static inline int
cs_key_reader_ok(ClientPtr client, WindowPtr win)
{
    if (!client || client == serverClient)
        return 1;
    if (client == cs_rmemo_client && win == cs_rmemo_win && cs_rmemo_gen == cs_gen &&
        cs_rmemo_owns)
        return 1;
    return cs_key_reader_ok_slow(client, win);
}

/* Called for every key event (twice: slave and master, each on its raw and device event):
 * nothing held back, nothing to hold back and no XKB request since the last sync is the
 * usual case, and costs a few loads here */
static inline void
cs_xkb_sync(Bool force)
{
    if (cs_nxkb || cs_xkb_any || cs_xkb_dirty)
        cs_xkb_sync_slow(force);
}

#endif
