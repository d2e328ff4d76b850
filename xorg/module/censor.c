/* CaptureShield Xorg module: the read censor's init (the request wrappers of image.c,
 * copy.c and render.c) and its shared state. */
#include "censor-int.h"

/* this file's state (censor-int.h) */
struct cs_censor_state cs_censor_st = { .shm_major = -1, .render_major = -1 };

static Bool
cs_wrap(int major, int (*fn)(ClientPtr))
{
    return cs_wrap_proc(major, fn, &cs_censor_st.orig_proc[major], &cs_censor_st.orig_sproc[major]);
}

Bool
cs_censor_init(void)
{
    ExtensionEntry *e;
    RESTYPE t;
    int i;

    cs_copy_st.last_src = NULL;
    cs_copy_st.last_src_id = 0;
    cs_copy_st.last_src_clear = 0;
    cs_censor_st.shm_major = cs_censor_st.render_major = -1;
    cs_censor_st.picture_type = 0;
    if (!dixRegisterPrivateKey(&cs_getimage_key_rec, PRIVATE_SCREEN, 0))
        return FALSE;
    for (i = 0; i < screenInfo.numScreens; i++) {
        ScreenPtr s = screenInfo.screens[i];
        GetImageProcPtr *orig = CS_WRAP_SCREEN_OWN(s, GetImage, cs_GetImage);
        if (!orig)
            return FALSE;
        dixSetPrivate(&s->devPrivates, &cs_getimage_key_rec, orig);
    }
    for (t = 1; t <= lastResourceType; t++)
        if (!strcmp(LookupResourceName(t), "PICTURE"))
            cs_censor_st.picture_type = t;
    /* censor mode needs no request wrapper for GetImage/ShmGetImage: the screen
     * wrapper blanks what they read */
    if (cs_cfg.mode == CS_MODE_DENY && !cs_wrap(X_GetImage, cs_ProcGetImage))
        return FALSE;
    if (!cs_wrap(X_CopyArea, cs_ProcCopy) || !cs_wrap(X_CopyPlane, cs_ProcCopy))
        return FALSE;
    if (cs_cfg.mode == CS_MODE_DENY && (e = CheckExtension("MIT-SHM"))) {
        cs_censor_st.shm_major = e->base;
        if (!cs_wrap(cs_censor_st.shm_major, cs_ProcShm))
            return FALSE;
    }
    if ((e = CheckExtension("RENDER"))) {
        cs_censor_st.render_major = e->base;
        if (!cs_wrap(cs_censor_st.render_major, cs_ProcRender))
            return FALSE;
    }
    if (!cs_censor_st.picture_type)
        LogMessageVerb(X_WARNING, 0, "CAPTURESHIELD: RENDER picture type not found\n");
    return TRUE;
}
