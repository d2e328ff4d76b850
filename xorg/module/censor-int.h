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
extern int (*cs_orig_proc[256])(ClientPtr);
extern int (*cs_orig_sproc[256])(ClientPtr);
extern RESTYPE cs_picture_type;

/* image.c: the screen's GetImage; GetImage and ShmGetImage in deny mode */
extern DevPrivateKeyRec cs_getimage_key_rec;
void cs_GetImage(DrawablePtr draw, int sx, int sy, int w, int h, unsigned int format,
                 unsigned long planemask, char *out);
int cs_ProcGetImage(ClientPtr c);
int cs_ProcShm(ClientPtr c);

/* copy.c: CopyArea and CopyPlane */
extern XID cs_last_src_id;
extern WindowPtr cs_last_src;
extern unsigned long cs_last_src_clear;
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
    return c->swapped ? cs_orig_sproc[major](c) : cs_orig_proc[major](c);
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
