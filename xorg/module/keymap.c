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

static void
cs_keymap_hook(CallbackListPtr *list, void *data, void *call)
{
    XaceDeviceAccessRec *rec = call;
    WindowPtr secure, keywin = NULL;

    (void) list;
    (void) data;
    if (!(rec->access_mode & CS_KEYMAP_MODES) || rec->status != Success ||
        !rec->client || rec->client == serverClient || !cs_secure_count() ||
        !cs_rule_on(CS_RULE_KEYMAP))
        return;
    secure = cs_focus_secure(&keywin);
    if (!secure || cs_key_reader_ok(rec->client, keywin))
        return;
    rec->status = BadAccess;
    cs_input_report(rec->client, secure->drawable.id);
}

/* From cs_input_init, after the input hooks (the same generation's device checks). */
Bool
cs_keymap_init(void)
{
    return cs_add_callback(&XaceHooks[XACE_DEVICE_ACCESS], cs_keymap_hook, NULL);
}
