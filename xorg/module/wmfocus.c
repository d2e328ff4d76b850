/* CaptureShield Xorg module: the window manager moves the focus away from a secure window
 * only at the user's own input (rule wmfocus).
 *
 * Untrusted clients may not move the focus (or warp the pointer) away from a focused
 * secure window (input.c), but the window manager, the client that holds
 * SubstructureRedirect on a root, may: it focuses new windows, answers
 * _NET_ACTIVE_WINDOW, follows Alt+Tab and clicks. An attacker used that: with no window
 * manager running it selected SubstructureRedirect itself and took the focus (13 of 13
 * keys); under openbox it just mapped a window, and openbox focused it (13 of 13).
 *
 * The user's own input is what may move the focus away: a button press with the pointer
 * outside the focused secure window (a click on another window, a title bar, a panel).
 * Keys are not: those typed go to the secure window, and a key the window manager grabs
 * (Alt+Tab) is pressed while typing into it as well (a bound: under the module a
 * shortcut does not take the focus away from a secure window, a click does). Events sent
 * with SendEvent and input injected by an untrusted client (XTEST, refused while a secure
 * window has the focus: input.c) are not the user's. The window manager's focus change
 * or pointer warp away from the secure window is allowed within CS_USER_INPUT_MS of such
 * a click and refused otherwise (SetInputFocus answers Success and changes nothing, as
 * dix does for a refused focus; reported as refused input). */
#include "input-int.h"

#define CS_USER_INPUT_MS 1000

static CARD32 cs_user_ms;
static Bool cs_user_seen;
static Bool cs_wm_armed;        /* the DeviceEventCallback below is registered */

/* The head of a server-internal event (dix's eventstr.h is not in the SDK): the byte
 * ET_Internal, then enum EventType, where ET_ButtonPress is the core ButtonPress. */
struct cs_wm_head {
    unsigned char header;
    int type;
};

/* DeviceEventCallback: every input event as the server processes it, before any delivery
 * (a click that activates a passive grab, as a window manager's click-to-focus grab, is
 * delivered without XACE_RECEIVE_ACCESS). A button press while a secure window has the
 * focus, with the pointer outside it, is the user's own input. */
static void
cs_wmfocus_device(CallbackListPtr *list, void *data, void *call)
{
    DeviceEventInfoRec *info = call;
    const struct cs_wm_head *ev = (const void *) info->event;
    WindowPtr secure, w;

    (void) list;
    (void) data;
    if (!ev || ev->header != 0xff || ev->type != ButtonPress || !info->device ||
        !cs_secure_count() || !(secure = cs_focus_secure(NULL)))
        return;
    for (w = GetSpriteWindow(info->device); w; w = w->parent)
        if (w == secure)
            return;                     /* a click inside the secure window */
    cs_user_ms = GetTimeInMillis();
    cs_user_seen = TRUE;
    LogMessageVerb(X_INFO, 5, "CAPTURESHIELD: a click outside the focused secure window "
                   "(device %d): the window manager may move the focus for %d ms\n",
                   info->device->id, CS_USER_INPUT_MS);
}

int
cs_wmfocus_allowed(ClientPtr client)
{
    if (!cs_client_is_wm(client))
        return 0;
    if (!cs_rule_on(CS_RULE_WMFOCUS))
        return 1;
    if (!cs_wm_armed) {
        /* a window manager that came after the secure windows: the clicks are followed
         * from now on; this move is refused (no click of the user's was seen) */
        cs_wmfocus_secure_changed(cs_secure_count());
        return 0;
    }
    return cs_user_seen && (CARD32) (GetTimeInMillis() - cs_user_ms) <= CS_USER_INPUT_MS;
}

/* A client holds SubstructureRedirect on a root: a window manager runs. */
static Bool
cs_wm_runs(void)
{
    int i;

    for (i = 0; i < screenInfo.numScreens; i++) {
        OtherClientsPtr oc;
        for (oc = wOtherClients(screenInfo.screens[i]->root); oc; oc = oc->next)
            if (oc->mask & SubstructureRedirectMask)
                return TRUE;
    }
    return FALSE;
}

/* DeviceEventCallback costs every input event (the server's call of the list, about 85
 * instructions per key press and release, and this function's first test), so it is
 * registered only while a secure window exists and a window manager runs: from
 * cs_secure_changed (secret.c), and from cs_wmfocus_allowed when a window manager that
 * came later asks. Not registered (out of memory): no click counts, the window manager
 * cannot move a secure focus (fail closed). */
void
cs_wmfocus_secure_changed(int nsecure)
{
    Bool want = nsecure > 0 && cs_rule_on(CS_RULE_WMFOCUS) && cs_rule_on(CS_RULE_INPUT) &&
        (cs_wm_armed || cs_wm_runs());

    if (want == cs_wm_armed)
        return;
    if (want) {
        cs_wm_armed = AddCallback(&DeviceEventCallback, cs_wmfocus_device, NULL);
        return;
    }
    DeleteCallback(&DeviceEventCallback, cs_wmfocus_device, NULL);
    cs_wm_armed = FALSE;
    /* an empty list still makes the server call it for every event */
    if (DeviceEventCallback && !DeviceEventCallback->list && !DeviceEventCallback->inCallback)
        DeleteCallbackList(&DeviceEventCallback);
}

static void
cs_wmfocus_close(void)
{
    cs_wmfocus_secure_changed(0);
}

/* From cs_input_init, after the input hooks. */
Bool
cs_wmfocus_init(void)
{
    cs_user_seen = FALSE;
    cs_user_ms = 0;
    cs_wm_armed = FALSE;
    if (!cs_on_close(cs_wmfocus_close))
        return FALSE;
    cs_wmfocus_secure_changed(cs_secure_count());
    return TRUE;
}
