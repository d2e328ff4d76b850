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

#endif
