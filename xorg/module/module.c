/* CaptureShield Xorg module: loader entry point, extension registration and the log line. */
#include "cs.h"
#include "xf86Module.h"
#include "extension.h"

struct cs_config cs_cfg;

static void
cs_extension_init(void)
{
    if (!cs_trust_init() || !cs_region_init() || !cs_hooks_init() ||
        !cs_censor_init() || !cs_defences_init() || !cs_ext_init() ||
        !cs_input_init()) {
        LogMessageVerb(X_ERROR, 0, "CAPTURESHIELD: initialisation failed, NOT active\n");
        return;
    }
    LogMessageVerb(X_INFO, 0,
                   "CAPTURESHIELD: active, mode %s, %d trusted program(s)%s\n",
                   cs_mode_name(), cs_cfg.ntrust,
                   cs_cfg.disabled ? ", SOME RULES DISABLED (test option DisableRules)" : "");
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
