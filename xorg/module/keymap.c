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
 * that bound. */
#include "input-int.h"

#define CS_KEYMAP_MODES (DixManageAccess | DixSetAttrAccess | DixSetPropAccess | \
                         DixCreateAccess | DixDestroyAccess | DixAddAccess | DixRemoveAccess)

/* From cs_device_hook (input.c), once a secure window exists and the access was
 * granted so far: 1 when it refused. */
int
cs_keymap_check(XaceDeviceAccessRec *rec)
{
    WindowPtr secure, keywin = NULL;

    if (!(rec->access_mode & CS_KEYMAP_MODES) || !cs_rule_on(CS_RULE_KEYMAP))
        return 0;
    secure = cs_focus_secure(&keywin);
    if (!secure || cs_key_reader_ok(rec->client, keywin))
        return 0;
    rec->status = BadAccess;
    cs_input_report(rec->client, secure->drawable.id);
    return 1;
}
