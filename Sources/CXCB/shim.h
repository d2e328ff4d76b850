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
#include <xcb/randr.h>  /* output names: Xwayland's are XWAYLAND0, ... (shieldctl doctor) */
#include <xcb/render.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/epoll.h>  /* the copied-text guard: its two connections as one descriptor */

/// Why: xcb_generic_event_t's response_type carries the "sent by SendEvent" flag in
/// bit 7; Swift code should not repeat the magic mask.
static inline uint8_t CXCB_event_type(const xcb_generic_event_t *ev) {
  return ev->response_type & 0x7f;
}

/// Why: the same bit says another client sent the event (SendEvent), not the server. Any
/// client can SendEvent any event to a window we listen on, so the daemon, the copied-text
/// guard and the module-event decoder all ask this before trusting an event.
static inline int CXCB_event_sent(const xcb_generic_event_t *ev) {
  return (ev->response_type & 0x80) != 0;
}

/// Why: libxcb returns malloc'd replies/events; Swift must free them with the same
/// allocator, and `free` through an UnsafeMutableRawPointer reads better here.
static inline void CXCB_free(void *p) { free(p); }

/// Why: the CaptureShield Xorg module's extension (xorg/PROTOCOL.md) has no xcb-proto
/// XML, so no generated xcb functions. Every one of its requests is 8 bytes: major opcode,
/// minor opcode, length 2, one CARD32. This sends one as a raw request (libxcb fills in the
/// sequence number) and returns the sequence number, for `xcb_wait_for_reply` when
/// `has_reply` (0 on a broken connection). Swift cannot build the iovec array libxcb wants.
static inline unsigned int CXCB_shield_ext_request(xcb_connection_t *c, uint8_t major, uint8_t minor,
                                                   uint32_t arg, int has_reply) {
  uint8_t req[8];
  uint16_t length = 2;
  req[0] = major;
  req[1] = minor;
  memcpy(req + 2, &length, 2);
  memcpy(req + 4, &arg, 4);
  struct iovec parts[4];
  parts[2].iov_base = req;
  parts[2].iov_len = sizeof req;
  parts[3].iov_base = 0;
  parts[3].iov_len = 0;
  xcb_protocol_request_t xr = {.count = 2, .ext = 0, .opcode = minor, .isvoid = !has_reply};
  return xcb_send_request(c, XCB_REQUEST_RAW | (has_reply ? XCB_REQUEST_CHECKED : 0), parts + 2, &xr);
}

#endif
