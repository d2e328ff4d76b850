/* CaptureShield Xorg module: loader entry point, extension registration and the log line. */
#include "cs.h"
#include "xf86Module.h"
#include "extension.h"
#include <string.h>

struct cs_config cs_cfg;
int cs_client_shift = RESOURCE_AND_CLIENT_COUNT - 8;    /* set again at each init */

/* One step of the init per source file. Each generation (the server runs this again after
 * every reset) starts clean: the steps reset their state and record their wrappers in
 * wrap.c; if one fails, every wrapper already installed is removed again, so the module is
 * either wholly active or wholly inactive, never half. */
static const struct {
    const char *name;
    Bool (*init)(void);
} cs_steps[] = {
    {"trust", cs_trust_init}, {"region", cs_region_init}, {"hooks", cs_hooks_init},
    {"censor", cs_censor_init}, {"defences", cs_defences_init}, {"input", cs_input_init},
    {"ext", cs_ext_init},
};

static void
cs_extension_init(void)
{
    size_t i;

    cs_cfg.paused = 0;          /* a pause (SetProtection 0) ends with its generation */
    cs_client_shift = RESOURCE_AND_CLIENT_COUNT - ResourceClientBits();
    if (!cs_wrap_begin()) {
        LogMessageVerb(X_ERROR, 0, "CAPTURESHIELD: initialisation failed at step wrap, "
                       "NOT active\n");
        return;
    }
    for (i = 0; i < sizeof(cs_steps) / sizeof(cs_steps[0]); i++) {
        /* FailInit (tests): the step fails after it did its work, which must be undone;
         * the extension step fails before AddExtension, which cannot be undone */
        Bool ext = !strcmp(cs_steps[i].name, "ext");
        if ((ext && cs_fail_step("ext")) || !cs_steps[i].init() ||
            (!ext && cs_fail_step(cs_steps[i].name))) {
            cs_wrap_undo(cs_steps[i].name);
            return;
        }
    }
    LogMessageVerb(X_INFO, 0,
                   "CAPTURESHIELD: active, mode %s, %d trusted program(s)%s\n",
                   cs_mode_name(), cs_cfg.ntrust,
                   cs_cfg.disabled ? ", SOME RULES DISABLED (test option DisableRules)" : "");
    cs_wrap_summary();
}

static const ExtensionModule cs_ext_module[] = {
    {cs_extension_init, CS_NAME, NULL},
};

static void *
cs_setup(void *module, void *opts, int *errmaj, int *errmin)
{
    static Bool done;

    (void) module;
    (void) errmaj;
    (void) errmin;
    if (done)
        return (void *) 1;
    done = TRUE;
    cs_parse_options(opts);
    cs_wrap_options(opts);
    LoadExtensionList(cs_ext_module, 1, FALSE);
    return (void *) 1;
}

/* The extension ABI the module was built for: the SDK's, which the loader compares with the
 * server's (a different major: the module is refused, with a log line). CS_TEST_ABI_MAJOR
 * declares another major, for tests/abi.sh only. */
#ifdef CS_TEST_ABI_MAJOR
#define CS_ABI_VERSION SET_ABI_VERSION(CS_TEST_ABI_MAJOR, 0)
#else
#define CS_ABI_VERSION ABI_EXTENSION_VERSION
#endif

static XF86ModuleVersionInfo cs_version = {
    "captureshield",
    "CaptureShield",
    MODINFOSTRING1,
    MODINFOSTRING2,
    XORG_VERSION_CURRENT,
    CS_MAJOR_VERSION, CS_MINOR_VERSION, 0,
    ABI_CLASS_EXTENSION,
    CS_ABI_VERSION,
    MOD_CLASS_EXTENSION,
    {0, 0, 0, 0}
};

CS_VISIBLE XF86ModuleData captureshieldModuleData = { &cs_version, cs_setup, NULL };
