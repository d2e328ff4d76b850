/* CaptureShield Xorg tests: the daemon's policy tag (_CAPTURE_SHIELD_POLICY) set, changed and deleted. */
#include "csprobe.h"

/* Tries to delete and to clear the policy tag on w; prints the errors and the tag left. */
void
policy_try(xcb_window_t w)
{
    uint32_t zero = 0, v = 0;
    xcb_atom_t a = atom("_CAPTURE_SHIELD_POLICY");
    int e1 = check(xcb_delete_property_checked(c, w, a));
    int e2 = check(xcb_change_property_checked(c, XCB_PROP_MODE_REPLACE, w, a,
                                               XCB_ATOM_CARDINAL, 32, 1, &zero));
    xcb_get_property_reply_t *r =
        xcb_get_property_reply(c, xcb_get_property(c, 0, w, a, XCB_ATOM_ANY, 0, 1), NULL);

    if (r && xcb_get_property_value_length(r) == 4)
        v = *(uint32_t *) xcb_get_property_value(r);
    printf("delete_err=%d change_err=%d tag=%u\n", e1, e2, v);
    free(r);
}

/* policy set WIN VALUE | policy try WIN | policy classify VALUE (the root's
 * _CAPTURE_SHIELD_CLASSIFY: 0 deletes it) */
int
policy(int argc, char **argv)
{
    xcb_window_t w;

    if (argc < 2)
        die("policy set WIN VALUE | policy try WIN | policy classify VALUE");
    conn();
    if (!strcmp(argv[0], "classify")) {
        uint32_t v = strtoul(argv[1], NULL, 0);
        xcb_atom_t a = atom("_CAPTURE_SHIELD_CLASSIFY");
        int e = v ? check(xcb_change_property_checked(c, XCB_PROP_MODE_REPLACE, root, a,
                                                      XCB_ATOM_CARDINAL, 32, 1, &v))
                  : check(xcb_delete_property_checked(c, root, a));
        printf("err=%d\n", e);
        return 0;
    }
    w = strtoul(argv[1], NULL, 0);
    if (!strcmp(argv[0], "set") && argc > 2) {
        uint32_t v = strtoul(argv[2], NULL, 0);
        int e = check(xcb_change_property_checked(c, XCB_PROP_MODE_REPLACE, w,
                                                  atom("_CAPTURE_SHIELD_POLICY"),
                                                  XCB_ATOM_CARDINAL, 32, 1, &v));
        printf("err=%d\n", e);
    } else if (!strcmp(argv[0], "try")) {
        policy_try(w);
    } else {
        die("unknown policy command");
    }
    return 0;
}
