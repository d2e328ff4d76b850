/* CaptureShield Xorg module: the modifier state while a secure window has the focus (rule
 * modifiers).
 *
 * Keys typed into a focused secure window reach it alone (input.c), but the modifiers they
 * hold down are part of a state any client may ask for, with the pointer anywhere: XKB
 * GetState (base and latched modifiers and groups: Shift down for every capital letter
 * typed, polled every millisecond), core QueryPointer's mask and XIQueryPointer's
 * modifiers and group. While a secure window has the focus, an untrusted client that does
 * not own it gets these answered as if no key were held: base and latched modifiers and
 * groups 0; locked ones (Caps Lock, Num Lock) as they are (the keyboard's LEDs show them
 * anyway: a bound). The keyboards' XKB state is swapped for the duration of the request
 * and put back right after it: a request runs to its end before the server processes any
 * input, so nothing else sees the swapped state. Pointer buttons are the pointer rule's. */
#include "input-int.h"
#include <X11/extensions/XKBproto.h>

static struct {
    DeviceIntPtr dev[MAXDEVICES];
    XkbStateRec saved[MAXDEVICES];
    int n;
    CsProcPtr qp_orig, xkb_orig, xkb_sorig;
} cs_modstate_st;

/* Before a request that answers with the modifier state: 1 when the keyboards' state was
 * swapped for `client` (cs_modstate_restore puts it back). */
static int
cs_modstate_hide(ClientPtr client)
{
    WindowPtr keywin = NULL;
    DeviceIntPtr d;

    if (!cs_rule_on(CS_RULE_MODIFIERS) || !cs_secure_count() || cs_client_trusted(client))
        return 0;
    cs_input_ext();
    if (!cs_focus_secure(&keywin) || cs_key_reader_ok(client, keywin))
        return 0;
    cs_modstate_st.n = 0;
    for (d = inputInfo.devices; d && cs_modstate_st.n < MAXDEVICES; d = d->next) {
        XkbStatePtr s;

        if (!d->key || !d->key->xkbInfo)
            continue;
        s = &d->key->xkbInfo->state;
        cs_modstate_st.dev[cs_modstate_st.n] = d;
        cs_modstate_st.saved[cs_modstate_st.n++] = *s;
        s->base_mods = s->latched_mods = 0;
        s->base_group = s->latched_group = 0;
        s->mods = s->lookup_mods = s->grab_mods = s->locked_mods;
        s->compat_state = s->compat_lookup_mods = s->compat_grab_mods = s->locked_mods;
        s->group = s->locked_group;
    }
    return 1;
}

static void
cs_modstate_restore(void)
{
    int i;

    for (i = 0; i < cs_modstate_st.n; i++)
        if (cs_modstate_st.dev[i]->key && cs_modstate_st.dev[i]->key->xkbInfo)
            cs_modstate_st.dev[i]->key->xkbInfo->state = cs_modstate_st.saved[i];
    cs_modstate_st.n = 0;
}

/* `proc` run for `client`, with the modifier state hidden for it when `answers` (the
 * request answers with that state) and the rule says so. */
int
cs_modstate_call(ClientPtr client, int answers, CsProcPtr proc)
{
    int hide = answers && cs_modstate_hide(client), r;

    r = proc(client);
    if (hide)
        cs_modstate_restore();
    return r;
}

static int
cs_ProcQueryPointer(ClientPtr client)
{
    return cs_modstate_call(client, 1, cs_modstate_st.qp_orig);
}

static int
cs_ProcXkbModstate(ClientPtr client)
{
    return cs_modstate_call(client, client->minorOp == X_kbGetState,
                            cs_req_swapped(client) ? cs_modstate_st.xkb_sorig :
                            cs_modstate_st.xkb_orig);
}

/* From cs_input_init: core QueryPointer (ProcVector: a swapped client's request comes
 * swapped by then) and the XKEYBOARD dispatcher (both byte orders); XIQueryPointer is
 * pointer.c's (cs_ProcXI). */
Bool
cs_modstate_init(void)
{
    memset(&cs_modstate_st, 0, sizeof(cs_modstate_st));
    if (!cs_wrap_proc(X_QueryPointer, cs_ProcQueryPointer, &cs_modstate_st.qp_orig, NULL))
        return FALSE;
    if (XkbReqCode <= 0)
        return TRUE;
    return cs_wrap_proc(XkbReqCode, cs_ProcXkbModstate, &cs_modstate_st.xkb_orig,
                        &cs_modstate_st.xkb_sorig);
}
