/* CaptureShield Xorg tests: declarations shared by the probe's source files. */
#ifndef CSPROBE_H
#define CSPROBE_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/uio.h>
#include <xcb/xcb.h>
#include <xcb/xcbext.h>

/* A pixel of image data (GetImage, SHM, a recorded reply): the server's image byte order,
 * least significant byte first for Xorg on this machine's CPUs, whatever the client's own
 * byte order (the probes also run byte-swapped, built for a big-endian CPU under qemu). */
static inline uint32_t
cs_px(const uint8_t *p)
{
    return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 | (uint32_t) p[3] << 24;
}

static inline void
cs_put_px(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t) v;
    p[1] = (uint8_t) (v >> 8);
    p[2] = (uint8_t) (v >> 16);
    p[3] = (uint8_t) (v >> 24);
}
#include <xcb/shm.h>
#include <xcb/render.h>
#include <xcb/composite.h>
#include "captureshieldproto.h"

#define SW 800
#define SH 600
#define RED 0xff0000
#define GREEN 0x00ff00
#define BLUE 0x0000ff
#define CS_QV_ARG 1u /* client version 1.0: two little-endian CARD16 */

extern xcb_connection_t *c;
extern xcb_screen_t *scr;
extern xcb_window_t root;
extern int cs_major, cs_event;

struct stats {
    long frames, refused, red_frames, red_max, black_min, black_max, blue_min;
};

void die(const char *m);
void conn(void);
void sync_(void);
int check(xcb_void_cookie_t ck);
xcb_atom_t atom(const char *name);
void count(struct stats *s, const uint8_t *data, int w, int h, int stride);
void refused(struct stats *s);
void print_stats(const struct stats *s);
int getimage(struct stats *s, xcb_drawable_t d, int x, int y, int w, int h);
void cs_init(void);
unsigned cs_send(int minor, uint32_t arg, int isvoid, void **reply, int *err);
int raw_void(void *req, size_t len);
int ext_major(const char *name);
int dbe_alloc(xcb_window_t w, uint32_t buf);
int dbe_swap(xcb_window_t w);
xcb_window_t mkwin(xcb_window_t parent, int x, int y, int w, int h, uint32_t pixel, int bg_none);
void wait_mapped(xcb_window_t w);
xcb_window_t toplevel(xcb_window_t w);
void wait_viewable(xcb_window_t w, int tries);
void set_secure(xcb_window_t w, uint32_t v);
xcb_render_pictformat_t root_format(void);

/* cslisten.c: what the adversary suites' listeners share */
long cs_now_ms(void);
void cs_ready(void);
void cs_listen(long ms, void (*on)(xcb_generic_event_t *));
/* XTEST FakeInput (minor 2, 9 units) */
struct cs_xtest_req {
    uint8_t major, minor;
    uint16_t len;
    uint8_t type, detail;
    uint16_t pad0;
    uint32_t time, root, pad1, pad2;
    int16_t x, y;
    uint32_t pad3;
    uint16_t pad4;
    uint8_t pad5, deviceid;
};
int cs_xtest_fake(int xtest, uint8_t type, uint8_t detail, int16_t x, int16_t y);
int cs_xtest_fake_dev(int xtest, uint8_t type, uint8_t detail, int16_t x, int16_t y,
                      uint8_t deviceid);
void cs_xi_query_version(int major);
int cs_xi2_select_root(uint32_t mask, int *major);

int victim(int argc, char **argv);
int capture(int argc, char **argv);
int attack(int argc, char **argv);
int proto(int argc, char **argv);
int daemon_(int argc, char **argv);
int listen_(int argc, char **argv);
int session(void);
int policy(int argc, char **argv);
void policy_try(xcb_window_t w);
int framed(void);
int frame_cmd(int argc, char **argv);
int compositor(int argc, char **argv);

#endif
