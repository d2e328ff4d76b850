/* CaptureShield Xorg module: declarations internal to the module, shared by the files of
 * secure input (rule "input"; not part of cs.h). */
#ifndef CAPTURESHIELD_INPUT_INT_H
#define CAPTURESHIELD_INPUT_INT_H

#include "cs.h"
#include "inputstr.h"
#include "dix.h"
#include "mi.h"
#include "xkbsrv.h"
#include <string.h>
#include <X11/extensions/XI.h>
#include <X11/extensions/XIproto.h>
#include <X11/extensions/XI2.h>
#include <X11/extensions/XI2proto.h>

/* Per X client: the focus period of its last report (at most one report per period). */
struct cs_input_client {
    unsigned long reported_period;      /* period + 1; 0: none */
};

#endif
