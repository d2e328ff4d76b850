/* CaptureShield Xorg module: the keyboard's meaning while a secure window has the focus
 * (rule keymap).
 *
 * Keys typed into a focused secure window reach it alone (input.c). A client that cannot
 * listen to them can still change what they do: XKB SetMap/SetControls (xkbcomp, xkbset)
 * turn each key into a pointer move with MouseKeys, which QueryPointer then decodes; core
 * ChangeKeyboardMapping, SetModifierMapping and SetPointerMapping, XI device key, button
 * and modifier mappings, feedback controls and device properties, XKB names, indicators,
 * compatibility maps and device info change them too; XIChangeHierarchy can attach the
 * keyboard to a master of its own. Every one of these asks XACE_DEVICE_ACCESS for
 * DixManageAccess, DixSetAttrAccess, DixSetPropAccess or, for devices made or removed,
 * DixCreateAccess / DixDestroyAccess / DixAddAccess / DixRemoveAccess, before it changes
 * anything. While a secure window has a master keyboard's focus, an untrusted client that
 * does not own it gets BadAccess for them (reported as refused input, CaptureNotify kind
 * 8); its owner and trusted clients (the daemon, the session's Trust programs) keep them.
 * A change made before the secure window got the focus stays: docs/security.md names
 * that bound.
 *
 * Two requests ask for DixSetAttrAccess on a device without changing what a key or a
 * button does, and every GTK 3 and Qt 5 program sends them: XIChangeCursor (the cursor a
 * window shows for a pointer; GTK sets it on every hover) and XkbPerClientFlags (the
 * client's own flags, detectable auto-repeat at start). Refused, they ended any such
 * program with an X error while a secure window had the focus (zenity died at start
 * when the window manager's frame of its own window had it). They pass, but for
 * XkbPerClientFlags' auto-reset controls: the server sets those controls (MouseKeys,
 * ...) when the client goes away, a change of the keyboard made later. */
#include "input-int.h"
#include <X11/extensions/XKBproto.h>

#define CS_KEYMAP_MODES (DixManageAccess | DixSetAttrAccess | DixSetPropAccess | \
                         DixCreateAccess | DixDestroyAccess | DixAddAccess | DixRemoveAccess)

/* XIChangeCursor, or XkbPerClientFlags that leaves the auto-reset controls alone (the
 * request's fields are in host order here: the swapped client's SProc ran first). */
static int
cs_keymap_harmless(ClientPtr client)
{
    if (cs_focus_st.xi_major && client->majorOp == cs_focus_st.xi_major)
        return client->minorOp == X_XIChangeCursor;
    if (client->majorOp == XkbReqCode && client->minorOp == X_kbPerClientFlags &&
        client->req_len == sizeof(xkbPerClientFlagsReq) >> 2) {
        const xkbPerClientFlagsReq *req = (const xkbPerClientFlagsReq *) client->requestBuffer;
        return !(req->change & XkbPCF_AutoResetControlsMask);
    }
    return 0;
}

/* From cs_device_hook (input.c), once a secure window exists and the access was
 * granted so far: 1 when it refused. */
int
cs_keymap_check(XaceDeviceAccessRec *rec)
{
    WindowPtr secure, keywin = NULL;

    if (!(rec->access_mode & CS_KEYMAP_MODES) || !cs_rule_on(CS_RULE_KEYMAP) ||
        cs_keymap_harmless(rec->client))
        return 0;
    secure = cs_focus_secure(&keywin);
    if (!secure || cs_key_reader_ok(rec->client, keywin))
        return 0;
    rec->status = BadAccess;
    cs_input_report(rec->client, secure->drawable.id);
    return 1;
}
