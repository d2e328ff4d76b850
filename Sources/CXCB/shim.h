// CXCB: the C edge of CaptureShield. Only headers of libxcb and the extensions the
// watcher uses, plus a few inline shims for what Swift cannot express directly.
#ifndef CXCB_SHIM_H
#define CXCB_SHIM_H

#include <xcb/xcb.h>
#include <xcb/xcbext.h>  /* xcb_poll_for_reply: RECORD streams many replies to one request */
#include <xcb/xproto.h>
#include <xcb/composite.h>
#include <xcb/record.h>
#include <xcb/res.h>
#include <xcb/xfixes.h>
#include <xcb/shape.h>
#include <xcb/damage.h>
#include <xcb/shm.h>
#include <xcb/render.h>
#include <stdlib.h>

/// Why: xcb_generic_event_t's response_type carries the "sent by SendEvent" flag in
/// bit 7; Swift code should not repeat the magic mask.
static inline uint8_t CXCB_event_type(const xcb_generic_event_t *ev) {
  return ev->response_type & 0x7f;
}

/// Why: libxcb returns malloc'd replies/events; Swift must free them with the same
/// allocator, and `free` through an UnsafeMutableRawPointer reads better here.
static inline void CXCB_free(void *p) { free(p); }

#endif
