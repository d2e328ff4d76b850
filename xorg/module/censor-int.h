/* CaptureShield Xorg module: declarations internal to the module, shared by the files of
 * the read censor (image.c, copy.c, render.c, censor.c; not part of cs.h). */
#ifndef CAPTURESHIELD_CENSOR_INT_H
#define CAPTURESHIELD_CENSOR_INT_H

#include "cs.h"
#include "servermd.h"
#include "picturestr.h"
#include "registry.h"
#include <string.h>
#include <byteswap.h>
#include <X11/extensions/shmproto.h>
#include <X11/extensions/renderproto.h>
/* Shared between the files of the read censor; each is defined in the file named. */

/* censor.c: the requests' previous procs, the RENDER picture type */
struct cs_censor_state {
    int (*orig_proc[256])(ClientPtr);   /* the requests' previous procs */
    int (*orig_sproc[256])(ClientPtr);  /* the same for byte-swapped clients */
    int shm_major, render_major;
    RESTYPE picture_type;       /* RENDER's picture resource type (0: not found) */
};
extern struct cs_censor_state cs_censor_st;

/* image.c: the screen's GetImage; GetImage and ShmGetImage in deny mode */
extern DevPrivateKeyRec cs_getimage_key_rec;
void cs_GetImage(DrawablePtr draw, int sx, int sy, int w, int h, unsigned int format,
                 unsigned long planemask, char *out);
int cs_ProcGetImage(ClientPtr c);
int cs_ProcShm(ClientPtr c);

/* copy.c: CopyArea and CopyPlane */
struct cs_copy_state {
    XID last_src_id;            /* the last window found as a copy source (cs_copy_drawable) */
    WindowPtr last_src;
    unsigned long last_src_clear;       /* cs_gen when last_src was found clear
                                         * (cs_win_clear), 0: not found clear */
    XID last_dst_id;            /* the last window a copy went into (cs_clamp_copy),
                                 * forgotten in the same way (cs_forget_window) */
    WindowPtr last_dst;
};
extern struct cs_copy_state cs_copy_st;
int cs_ProcCopy(ClientPtr c);

/* render.c: RENDER */
int cs_ProcRender(ClientPtr c);

/* A request's fields in the server's byte order, and the previous proc. */

static inline CARD16
g16(ClientPtr c, int off)
{
    CARD16 v;
    memcpy(&v, (char *) c->requestBuffer + off, 2);
    return cs_req_swapped(c) ? bswap_16(v) : v;
}

static inline CARD32
g32(ClientPtr c, int off)
{
    CARD32 v;
    memcpy(&v, (char *) c->requestBuffer + off, 4);
    return cs_req_swapped(c) ? bswap_32(v) : v;
}

static inline int
g8(ClientPtr c, int off)
{
    return ((unsigned char *) c->requestBuffer)[off];
}

static inline int
cs_call_orig(ClientPtr c)
{
    int major = g8(c, 0);
    return c->swapped ? cs_censor_st.orig_sproc[major](c) : cs_censor_st.orig_proc[major](c);
}


static inline void
p16(ClientPtr c, int off, int v)
{
    CARD16 u = (CARD16) v;

    if (cs_req_swapped(c))
        u = bswap_16(u);
    memcpy((char *) c->requestBuffer + off, &u, 2);
}

#endif
