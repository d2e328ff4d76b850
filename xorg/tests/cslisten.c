/* CaptureShield Xorg tests: what the listeners of the adversary suites share (atk-focus,
 * atk-ptr, atk-damage): the clock, "ready", listening until the typist is done, XTEST
 * input and XI2 selections on the root. */
#include "csprobe.h"
#include <poll.h>
#include <time.h>

long
cs_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

void
cs_ready(void)
{
    sync_();
    printf("ready\n");
    fflush(stdout);
}

/* Events to `on` for at most MS ms; when $CS_STOP_FILE appears (the typist or the user's
 * hand is done: its last round trip came back), 300 ms more. */
void
cs_listen(long ms, void (*on)(xcb_generic_event_t *))
{
    long end = cs_now_ms() + ms;
    const char *stop = getenv("CS_STOP_FILE");
    struct pollfd p = { xcb_get_file_descriptor(c), POLLIN, 0 };
    int stopping = 0;

    while (cs_now_ms() < end) {
        xcb_generic_event_t *ev;
        if (stop && !stopping && access(stop, F_OK) == 0) {
            stopping = 1;
            if (cs_now_ms() + 300 < end)
                end = cs_now_ms() + 300;
        }
        while ((ev = xcb_poll_for_event(c))) {
            if (on)
                on(ev);
            free(ev);
        }
        if (xcb_connection_has_error(c))
            return;
        poll(&p, 1, 20);
    }
}

/* XTEST FakeInput of a core event (no device): the error code, 0 for none */
int
cs_xtest_fake(int xtest, uint8_t type, uint8_t detail, int16_t x, int16_t y)
{
    return cs_xtest_fake_dev(xtest, type, detail, x, y, 0);
}

/* The same of an XI device event of device `deviceid` (0: a core event) */
int
cs_xtest_fake_dev(int xtest, uint8_t type, uint8_t detail, int16_t x, int16_t y, uint8_t deviceid)
{
    struct cs_xtest_req req = { (uint8_t) xtest, 2, 9, type, detail, 0, 0, root, 0, 0, x, y, 0, 0, 0,
                                deviceid };
    return raw_void(&req, sizeof(req));
}

/* XIQueryVersion 2.2 on XInputExtension's `major` (XI2 requests need it first) */
void
cs_xi_query_version(int major)
{
    struct { uint8_t major, minor; uint16_t len, vmaj, vmin; } qv =
        { (uint8_t) major, 47 /* XIQueryVersion */, 2, 2, 2 };
    struct iovec iov[3];
    xcb_protocol_request_t pr = { 1, NULL, 0, 0 };
    xcb_generic_error_t *e = NULL;

    iov[2].iov_base = &qv;
    iov[2].iov_len = sizeof(qv);
    free(xcb_wait_for_reply(c, xcb_send_request(c, XCB_REQUEST_RAW | XCB_REQUEST_CHECKED,
                                                &iov[2], &pr), &e));
    free(e);
}

/* XI 2.2, `mask` (XI2 event bits) of every master device selected on the root; *major gets
 * XInputExtension's major opcode. Returns the selection's error code. */
int
cs_xi2_select_root(uint32_t mask, int *major)
{
    struct {
        uint8_t major, minor;
        uint16_t len;
        uint32_t win;
        uint16_t nmasks, pad;
        uint16_t dev, mlen;
        uint8_t mask[4];        /* XI2 masks are bytes: event N is bit N % 8 of byte N / 8 */
    } sel;
    int i;

    *major = ext_major("XInputExtension");
    cs_xi_query_version(*major);
    memset(&sel, 0, sizeof(sel));
    sel.major = (uint8_t) *major;
    sel.minor = 46;             /* XISelectEvents */
    sel.len = sizeof(sel) / 4;
    sel.win = root;
    sel.nmasks = 1;
    sel.dev = 1;                /* XIAllMasterDevices */
    sel.mlen = 1;
    for (i = 0; i < 32; i++)
        if (mask & (1u << i))
            sel.mask[i / 8] |= (uint8_t) (1u << (i % 8));
    return raw_void(&sel, sizeof(sel));
}
