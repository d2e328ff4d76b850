/* CaptureShield Xorg module: secure input, where the keys go: the key window, the secure focus
 * and the secure window under the pointer (remembered), who may read the keys, which events
 * carry them, the refusal reports. */
#include "input-int.h"

DevPrivateKeyRec cs_input_key_rec;
/* this file's state (input-int.h) */
struct cs_focus_state cs_focus_st = { .devgen = 1 };

/* XInputExtension's numbers, once it is initialised (it may come after this module). */
void
cs_input_ext_slow(void)
{
    ExtensionEntry *ext;

    ext = CheckExtension("XInputExtension");
    if (!ext)
        return;
    cs_focus_st.xi_major = ext->base;
    cs_focus_st.xi_event = ext->eventBase;
    cs_focus_st.xi_known = 1;
}

/* ---- where the keys go ---- */

/* The window key events from `dev` go to now (NULL: nowhere / unknown). */
static WindowPtr
cs_key_window(DeviceIntPtr dev)
{
    WindowPtr focus, sprite = NULL;

    if (!dev || !dev->focus)
        return NULL;
    focus = dev->focus->win;
    if (focus == FollowKeyboardWin)
        focus = inputInfo.keyboard && inputInfo.keyboard->focus ?
            inputInfo.keyboard->focus->win : NoneWin;
    if (focus == NoneWin || focus == FollowKeyboardWin)
        return NULL;
    if (dev->spriteInfo && dev->spriteInfo->sprite)
        sprite = dev->spriteInfo->sprite->win;
    if (focus == PointerRootWin)
        return sprite;
    /* the core delivers to the window under the pointer when it is inside the focus; the
     * last answer is kept while cs_gen stays (a reparent or a destroy moves it on) */
    if (!sprite)
        return focus;
    if (focus != cs_focus_st.kmemo_focus || sprite != cs_focus_st.kmemo_sprite ||
        cs_focus_st.kmemo_gen != cs_gen) {
        cs_focus_st.kmemo_focus = focus;
        cs_focus_st.kmemo_sprite = sprite;
        cs_focus_st.kmemo_gen = cs_gen;
        cs_focus_st.kmemo_win = sprite == focus || IsParent(focus, sprite) ? sprite : focus;
    }
    return cs_focus_st.kmemo_win;
}

/* The same, remembered for the last window asked about while cs_gen stays: cs_gen moves
 * on whenever a window's secure tag changes (cs_set_win_secure), a window is reparented
 * or destroyed (tree.c), which is all that can change the answer for a window or free
 * it. Every key event asks for the window its keys go to, several times (the XTEST
 * request, the raw and device events of the slave and the master): one walk up the tree
 * per window and tree state instead (cs_focus_st.memo_*). */
static inline WindowPtr
cs_secure_of_memo(WindowPtr win)
{
    if (win != cs_focus_st.memo_win || cs_focus_st.memo_gen != cs_gen) {
        cs_focus_st.memo_secure = cs_secure_of(win);
        cs_focus_st.memo_win = win;
        cs_focus_st.memo_gen = cs_gen;
    }
    return cs_focus_st.memo_secure;
}

/* ---- the secure focus and the secure window under the pointer, remembered ----
 * Both answers depend on the master devices (which there are, their classes), each
 * master's focus window and sprite window, and the window tree with its secure tags
 * (cs_gen). In the usual case, the two core masters alone (they live as long as the
 * server generation), each answer is kept with the core devices' focus and sprite
 * windows, cs_gen and cs_focus_st.devgen: master devices are created (AddInputDevice) and removed
 * (XIChangeHierarchy) only after an XACE_DEVICE_ACCESS check for DixCreateAccess or
 * DixDestroyAccess, and slaves are attached after one for DixManageAccess, which move
 * cs_focus_st.devgen on (cs_device_hook), as does every other device access check but reads;
 * XIChangeHierarchy, ChangeDeviceControl or a "Device Enabled" property enable or disable
 * devices after such a check within the request, so from the check until the next block
 * handler nothing is kept (cs_focus_st.hier_pending). A master gains a slave's classes without a
 * check, so the core pointer must have no key class and the core keyboard no button
 * class for an answer to be kept. */

/* the devices the answer was found from: the two core masters alone (see above) */
static inline void
cs_memo_keep(struct cs_memo_focus *m, int nmaster, int core, WindowPtr secure, WindowPtr win)
{
    DeviceIntPtr k = inputInfo.keyboard, p = inputInfo.pointer;

    m->gen = 0;
    if (nmaster != 2 || core != 2 || !k || !p || !k->focus || p->key || k->button ||
        cs_focus_st.hier_pending)
        return;
    m->gen = cs_gen;
    m->devgen = cs_focus_st.devgen;
    m->focus = k->focus->win;
    m->sprite = cs_sprite_win(k);
    m->psprite = cs_sprite_win(p);
    m->secure = secure;
    m->win = win;
}

/* cs_focus_secure when no kept answer holds */
WindowPtr
cs_focus_secure_slow(WindowPtr *keywin)
{
    DeviceIntPtr d;
    WindowPtr w, s, found = NULL, foundwin = NULL;
    int nmaster = 0, core = 0;

    for (d = inputInfo.devices; d; d = d->next) {
        /* IsMaster, inline */
        if (d->type != MASTER_POINTER && d->type != MASTER_KEYBOARD)
            continue;
        nmaster++;
        core += d == inputInfo.keyboard || d == inputInfo.pointer;
        if (found || !d->key || !d->focus)
            continue;
        w = cs_key_window(d);
        s = cs_secure_of_memo(w);
        if (s) {
            found = s;
            foundwin = w;
        }
    }
    cs_memo_keep(&cs_focus_st.fmemo, nmaster, core, found, foundwin);
    if (found) {
        if (keywin)
            *keywin = foundwin;
        if (found->drawable.id != cs_focus_st.last_secure) {
            cs_focus_st.last_secure = found->drawable.id;
            cs_focus_st.period++;
        }
        return found;
    }
    if (cs_focus_st.last_secure) {
        cs_focus_st.last_secure = 0;
        cs_focus_st.period++;
    }
    return NULL;
}

/* cs_pointer_secure when no kept answer holds */
WindowPtr
cs_pointer_secure_slow(WindowPtr *under)
{
    DeviceIntPtr d;
    WindowPtr s, found = NULL, foundwin = NULL;
    int nmaster = 0, core = 0;

    for (d = inputInfo.devices; d; d = d->next) {
        if (d->type != MASTER_POINTER && d->type != MASTER_KEYBOARD)
            continue;
        nmaster++;
        core += d == inputInfo.keyboard || d == inputInfo.pointer;
        if (found || !d->button || !d->spriteInfo || !d->spriteInfo->sprite)
            continue;
        s = cs_secure_of_memo(d->spriteInfo->sprite->win);
        if (s) {
            found = s;
            foundwin = d->spriteInfo->sprite->win;
        }
    }
    cs_memo_keep(&cs_focus_st.pmemo, nmaster, core, found, foundwin);
    if (found)
        *under = foundwin;
    return found;
}

static ClientPtr
cs_owner(WindowPtr win)
{
    int idx = win ? CLIENT_ID(win->drawable.id) : 0;

    return idx > 0 && idx < currentMaxClients ? clients[idx] : NULL;
}

/* May `client` see the keys that go to `win` (or put input there)? Trusted clients may;
 * otherwise only a client that owns every secure window from `win` up to the root: a
 * client cannot make itself the reader by creating (and tagging) a window inside another
 * client's secure window, nor by reparenting that window into a secure window of its own
 * (both make the keys nobody's: they stay in the server). */

int
cs_key_reader_ok_slow(ClientPtr client, WindowPtr win)
{
    WindowPtr w;
    int owns = 1;

    if (client == cs_focus_st.rmemo_client && win == cs_focus_st.rmemo_win &&
        cs_focus_st.rmemo_gen == cs_gen)
        owns = cs_focus_st.rmemo_owns;
    else {
        for (w = win; w; w = w->parent)
            if (cs_win_secure(w) && cs_owner(w) != client) {
                owns = 0;
                break;
            }
        cs_focus_st.rmemo_client = client;
        cs_focus_st.rmemo_win = win;
        cs_focus_st.rmemo_gen = cs_gen;
        cs_focus_st.rmemo_owns = owns;
    }
    return owns || cs_client_trusted(client);
}

/* One report per client per focus period. */
void
cs_input_report(ClientPtr client, XID what)
{
    struct cs_input_client *st;

    if (!client || client == serverClient)
        return;
    st = dixLookupPrivate(&client->devPrivates, &cs_input_key_rec);
    if (st->reported_period == cs_focus_st.period + 1)
        return;
    st->reported_period = cs_focus_st.period + 1;
    LogMessageVerb(X_INFO, 1, "CAPTURESHIELD: input refused to client %d (pid %d, request %d), window 0x%lx\n",
                   client->index, (int) GetClientPid(client), client->majorOp,
                   (unsigned long) what);
    cs_report(client, what, CS_KIND_INPUT);
}

/* this file's state, at each server generation's init (cs_input_init) */
void
cs_focus_reset(void)
{
    cs_focus_st.last_secure = 0;
    cs_focus_st.memo_win = cs_focus_st.memo_secure = NULL;
    cs_focus_st.memo_gen = 0;
    cs_focus_st.rmemo_client = NULL;
    cs_focus_st.rmemo_win = NULL;
    cs_focus_st.rmemo_gen = 0;
    cs_focus_st.kmemo_focus = cs_focus_st.kmemo_sprite = cs_focus_st.kmemo_win = NULL;
    cs_focus_st.kmemo_gen = 0;
    memset(&cs_focus_st.fmemo, 0, sizeof(cs_focus_st.fmemo));
    cs_focus_st.hier_pending = FALSE;
    memset(&cs_focus_st.pmemo, 0, sizeof(cs_focus_st.pmemo));
    cs_focus_st.xi_known = cs_focus_st.xi_major = cs_focus_st.xi_event = 0;
}

/* ---- which events carry keys ---- */

int
cs_is_key_event(const xEvent *ev)
{
    int type = ev->u.u.type & 0x7f;

    if (type == KeyPress || type == KeyRelease || type == KeymapNotify)
        return 1;
    if (type == GenericEvent) {
        const xGenericEvent *ge = (const xGenericEvent *) ev;

        return cs_focus_st.xi_major && ge->extension == cs_focus_st.xi_major &&
            (ge->evtype == XI_KeyPress || ge->evtype == XI_KeyRelease ||
             ge->evtype == XI_RawKeyPress || ge->evtype == XI_RawKeyRelease);
    }
    if (cs_focus_st.xi_event && type >= cs_focus_st.xi_event &&
        type < cs_focus_st.xi_event + IEVENTS) {
        int t = type - cs_focus_st.xi_event;

        return t == XI_DeviceKeyPress || t == XI_DeviceKeyRelease ||
            t == XI_DeviceStateNotify || t == XI_DeviceKeystateNotify;
    }
    return 0;
}

/* Events a client may not send into a secure window (SendEvent). */
int
cs_is_input_event(const xEvent *ev)
{
    int type = ev->u.u.type & 0x7f;

    if (type >= KeyPress && type <= MotionNotify)
        return 1;
    if (cs_focus_st.xi_event && type >= cs_focus_st.xi_event &&
        type < cs_focus_st.xi_event + IEVENTS) {
        int t = type - cs_focus_st.xi_event;

        return t >= XI_DeviceKeyPress && t <= XI_DeviceMotionNotify;
    }
    return 0;
}
