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

#endif
