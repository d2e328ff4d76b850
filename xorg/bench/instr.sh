#!/usr/bin/env bash
# CaptureShield Xorg bench: the X server's instructions per request with the module and
# without it, side by side (valgrind callgrind on Xorg: perf has no hardware counters in
# this VM). For each operation a client sets up its windows, sends N/10 warm-up requests
# of the operation (not counted), then N counted ones: callgrind's counters are zeroed
# before them and dumped after the last reply. Per row: without, with, without, with
# (interleaved), each figure the mean of its two runs. Both servers run the same Xorg
# under the same valgrind with the same GLIBC_TUNABLES (malloc: no mmap under 4 MB, no
# trimming, 64 MB top pad), the same scene, the same client binary.
#
# What is counted ("counted", the ratio that is the figure; dispatched() below): the
# inclusive cost of every call the server's Dispatch loop makes (the request's ProcVector
# entry with the reply it writes, XACE's dispatch hook, input processing), minus, on
# both servers alike:
# - the server's socket I/O wherever it is called from: WaitForSomething (sleeping, its
#   wakeups, block and wakeup handlers, epoll, flushing), ReadRequestFromClient,
#   FlushAllOutput, and what WriteToClient calls (writev, copying what the socket did not
#   take into the output buffer, growing it; WriteToClient's own instructions count);
# - the allocator calls (malloc, calloc, realloc, free) of server code outside those.
# Added back: every module function called from inside the parts left out (its block
# and wakeup handlers). Never left out: a call made by a cs_* function (the module's code
# and everything it calls, allocations and I/O included, count in full).
# Why fair: the parts left out are the server's own code and glibc's, which the module
# does not wrap or change, and they are left out of both figures. Their cost per
# request swings between runs by more than the module's share, on either server: how
# many wakeups a round trip takes and whether a 1 MB reply is written at once or queued
# depends on when the client's next request and its reads reach the server (under
# valgrind the server is ~50 times slower than the client): GetImage 1x1 0 to ~500
# instructions of wakeup per request, GetImage 500x500 0 to 160,000 of copying; the path
# a calloc takes depends on the heap's layout, which differs between the two processes
# (GetImage 10x10's reply buffer: 111 to 361 instructions of _int_malloc per request on
# the same server). Leaving them out makes the denominator smaller, so the module's share
# looks larger, never smaller. "own" is the self cost of the module's functions per
# request (libcaptureshield.so), deterministic. "total" (everything from zeroing to dump)
# is printed next to it for reference; it is not deterministic. The wakeups left out
# above are then counted in full (wrow): round trips with the client pausing 2 ms after
# each reply, so that each request wakes the server once; per wakeup, WaitForSomething's
# inclusive cost (timers, BlockHandler and WakeupHandler with every handler, epoll,
# flushing), idle (a request the module has no hook in), with a client holding an XKB
# selection (as every GTK or Qt client does), and with that selection held back (another
# client's secure window has the focus); and the round-trip rows again with every
# wakeup counted ("full"). The last ops row: WaitForSomething's cost per call over the
# rows before it, whose wakeups vary in number.
#
# Then the cost as an attack (totals): an untrusted client maps 2,000 shaped secure
# windows of its own and loops "move one 1 px, read 1 pixel": the server's instructions
# per loop, another client's instructions per GetImage 1x1 with those windows mapped, and
# (native servers, no valgrind) that client's GetImage 1x1 round trip with and without
# the attacker looping.
# Figures only: nothing here is asserted. Env: CS_INSTR_SCALE (default 1) multiplies N;
# CS_INSTR_PARTS (ops attack attackloop rtt; default ops attack rtt) and CS_INSTR_ROWS (op
# names) pick parts and rows; CS_INSTR_KEEP=DIR keeps callgrind's dumps (cg.N.*, cg.W.*,
# in the order run) for callgrind_annotate.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$here/../../.build/xorg}
SCALE=${CS_INSTR_SCALE:-1}
TMP=$(mktemp -d /tmp/csinstr.XXXXXX)
chmod 755 "$TMP"
. "$here/../tests/xorg-lib.sh"
BG=()
cleanup() {
  local p
  for p in "${BG[@]}"; do kill "$p" 2>/dev/null || true; done
  stop_all_xorg
  # CS_INSTR_KEEP=DIR: keep callgrind's dumps (cg.W.*, cg.N.*) there for callgrind_annotate
  [ -n "${CS_INSTR_KEEP:-}" ] && { mkdir -p "$CS_INSTR_KEEP"; cp "$TMP"/cg.* "$CS_INSTR_KEEP"/ 2>/dev/null || true; }
  rm -rf "$TMP"
}
trap cleanup EXIT
for t in valgrind callgrind_control cc; do
  command -v "$t" >/dev/null || { echo "Error: $t missing (apt-get install valgrind gcc)" >&2; exit 1; }
done
[ -f "$OUT/libcaptureshield.so" ] && [ -x "$OUT/csprobe" ] ||
  { echo "Error: build first (make -C xorg module probes)" >&2; exit 1; }

# ---- the workload client ----
cat >"$TMP/w.c" <<'EOF'
/* instr.sh workload: w OP N. Sets up its windows, then sends N requests of OP, then syncs. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/uio.h>
#include <xcb/xcb.h>
#include <xcb/xcbext.h>
#include <xcb/shm.h>

static xcb_connection_t *c;
static xcb_window_t root;

static void sync_(void) { free(xcb_get_input_focus_reply(c, xcb_get_input_focus(c), NULL)); }

static xcb_window_t
win(int x, int y, int w, int h, uint32_t px)
{
    xcb_window_t id = xcb_generate_id(c);
    uint32_t v[2] = { px, 1 };
    xcb_create_window(c, XCB_COPY_FROM_PARENT, id, root, x, y, w, h, 0,
                      XCB_WINDOW_CLASS_INPUT_OUTPUT, XCB_COPY_FROM_PARENT,
                      XCB_CW_BACK_PIXEL | XCB_CW_OVERRIDE_REDIRECT, v);
    xcb_map_window(c, id);
    return id;
}

static int
ext(const char *n)
{
    xcb_query_extension_reply_t *q =
        xcb_query_extension_reply(c, xcb_query_extension(c, strlen(n), n), NULL);
    int m = q && q->present ? q->major_opcode : -1;
    free(q);
    return m;
}

static void
raw(void *req, size_t len)
{
    struct iovec iov[3];
    xcb_protocol_request_t pr = { 1, NULL, 0, 1 };
    iov[2].iov_base = req;
    iov[2].iov_len = len;
    xcb_send_request(c, XCB_REQUEST_RAW, &iov[2], &pr);
}

static double
now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int
cmpd(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

/* 2,000 shaped secure windows of this (untrusted) client */
#define NW 2000
static xcb_window_t aw[NW];
static int ax[NW], ay[NW];

static void
attack_setup(void)
{
    int shape = ext("SHAPE"), i;
    xcb_intern_atom_reply_t *r = xcb_intern_atom_reply(c, xcb_intern_atom(c, 0, 22,
        "_CAPTURE_SHIELD_SECURE"), NULL);
    uint32_t one = 1;
    srand(1);
    for (i = 0; i < NW; i++) {
        struct {
            uint8_t major, minor; uint16_t len; uint8_t op, kind, order, pad;
            uint32_t win; int16_t x, y; xcb_rectangle_t r[2];
        } sr = { (uint8_t) shape, 1, 8, 0, 0, 0, 0, 0, 0, 0,
                 { { 0, 0, 24, 6 }, { 0, 0, 6, 24 } } };
        ax[i] = rand() % 780;
        ay[i] = rand() % 580;
        aw[i] = win(ax[i], ay[i], 24, 24, 0xff0000);
        xcb_change_property(c, XCB_PROP_MODE_REPLACE, aw[i], r->atom, XCB_ATOM_CARDINAL, 32, 1,
                            &one);
        sr.win = aw[i];
        if (shape > 0)
            raw(&sr, sizeof(sr));       /* ShapeRectangles Set Bounding: an L */
        if (i % 200 == 199)
            sync_();
    }
    free(r);
    sync_();
}

static void
attack_loop(long n)
{
    long k;
    for (k = 0; n < 0 || k < n; k++) {
        int i = (int) (k % NW);
        uint32_t g[2];
        ax[i] += (k / NW) % 2 ? -1 : 1;
        g[0] = (uint32_t) ax[i];
        g[1] = (uint32_t) ay[i];
        xcb_configure_window(c, aw[i], XCB_CONFIG_WINDOW_X | XCB_CONFIG_WINDOW_Y, g);
        free(xcb_get_image_reply(c, xcb_get_image(c, XCB_IMAGE_FORMAT_Z_PIXMAP, root, ax[i] + 2,
                                                  ay[i] + 2, 1, 1, ~0u), NULL));
    }
}

int
main(int argc, char **argv)
{
    const char *op = argv[1];
    long n = argc > 2 ? atol(argv[2]) : 0, i, nreq;
    int pass;
    xcb_window_t a, b;
    xcb_gcontext_t gc;
    uint32_t v = 0x00ff00;
    xcb_shm_seg_t seg = 0;
    int xtest;
    long pause_us = getenv("CS_PAUSE_US") ? atol(getenv("CS_PAUSE_US")) : 0;

    c = xcb_connect(NULL, NULL);
    if (xcb_connection_has_error(c))
        return 2;
    root = xcb_setup_roots_iterator(xcb_get_setup(c)).data->root;
    if (!strcmp(op, "attack")) {        /* attack N: setup, N loops; N < 0: forever */
        attack_setup();
        printf("ready\n");
        fflush(stdout);
        if (argc > 3 && !strcmp(argv[3], "hold"))  /* keep the windows, idle */
            pause();
        if (argc > 3) {                 /* attack N wait: loop on a line, "done", exit on EOF */
            char line[16];
            if (!fgets(line, sizeof(line), stdin))
                return 0;
            attack_loop(n);
            sync_();
            printf("done\n");
            fflush(stdout);
            while (fgets(line, sizeof(line), stdin))
                ;
            return 0;
        }
        attack_loop(n);
        sync_();
        return 0;
    }
    a = win(0, 0, 500, 500, 0x0000ff);
    b = win(520, 20, 200, 200, 0x00ff00);
    gc = xcb_generate_id(c);
    xcb_create_gc(c, gc, a, XCB_GC_FOREGROUND, &v);
    xcb_change_property(c, XCB_PROP_MODE_REPLACE, a, XCB_ATOM_WM_NAME, XCB_ATOM_STRING, 8, 5,
                        "bench");
    if (!strcmp(op, "shmget500")) {
        int id = shmget(IPC_PRIVATE, 500 * 500 * 4, IPC_CREAT | 0600);
        seg = xcb_generate_id(c);
        shmat(id, NULL, 0);
        xcb_shm_attach(c, seg, id, 0);
        sync_();
        shmctl(id, IPC_RMID, NULL);
    }
    xtest = !strncmp(op, "xtestkey", 8) ? ext("XTEST") : -1;
    if (!strcmp(op, "xtestkeysec")) {
        /* a secure window of this client's own, focused, reading its keys: the keys this
         * client types reach it (the case where the input rules act) */
        xcb_intern_atom_reply_t *r = xcb_intern_atom_reply(c, xcb_intern_atom(c, 0, 22,
            "_CAPTURE_SHIELD_SECURE"), NULL);
        uint32_t one = 1, km = XCB_EVENT_MASK_KEY_PRESS | XCB_EVENT_MASK_KEY_RELEASE;
        xcb_window_t s = win(100, 100, 200, 200, 0xff0000);

        xcb_change_property(c, XCB_PROP_MODE_REPLACE, s, r->atom, XCB_ATOM_CARDINAL, 32, 1,
                            &one);
        xcb_change_window_attributes(c, s, XCB_CW_EVENT_MASK, &km);
        sync_();
        xcb_set_input_focus(c, XCB_INPUT_FOCUS_POINTER_ROOT, s, XCB_CURRENT_TIME);
        free(r);
    }
    if (!strncmp(op, "wakexkb", 7)) {
        /* what every GTK or Qt client holds: an XKB selection of StateNotify (UseExtension,
         * then SelectEvents on the core keyboard, all its details) */
        int xkb = ext("XKEYBOARD");
        struct { uint8_t major, minor; uint16_t len; uint16_t wmaj, wmin; } ue =
            { (uint8_t) xkb, 0, 2, 1, 0 };
        struct { uint8_t major, minor; uint16_t len; uint16_t dev, which, clear, all, amap, map; }
            se = { (uint8_t) xkb, 1, 4, 0x100, 1 << 2, 0, 1 << 2, 0, 0 };
        const char *f = getenv("CS_FOCUS");
        if (xkb > 0) {
            raw(&ue, sizeof(ue));
            raw(&se, sizeof(se));
        }
        /* wakexkbsec: another client's secure window (the probe's) has the focus, so
         * this (untrusted) client's selection is held back */
        if (!strcmp(op, "wakexkbsec") && f)
            xcb_set_input_focus(c, XCB_INPUT_FOCUS_POINTER_ROOT, (xcb_window_t) strtoul(f, NULL, 0),
                                XCB_CURRENT_TIME);
    }
    if (!strcmp(op, "xtestkeygrab"))    /* a window manager's shortcut: Super+F12 on the root */
        xcb_grab_key(c, 0, root, XCB_MOD_MASK_4, 96, XCB_GRAB_MODE_ASYNC, XCB_GRAB_MODE_ASYNC);
    sync_();
    /* OP N wait: first a warm-up pass (N/10 + 2 requests, an even number: XTEST presses
     * and releases pair up), not counted, so that both servers' heaps, output buffers and
     * caches are in the state the counted requests find them in; then "ready", and the
     * counted pass from a line on stdin */
    nreq = n;
    for (pass = argc > 3 ? 0 : 1; pass < 2; pass++) {
    n = pass ? nreq : (nreq / 20) * 2 + 2;
    if (pass == 1 && argc > 3) {
        char line[16];
        printf("ready\n");
        fflush(stdout);
        if (!fgets(line, sizeof(line), stdin))
            return 0;
    }
    if (!strcmp(op, "rtt")) {           /* rtt N: GetImage 1x1 round trips, microseconds */
        double *t = calloc(n, sizeof(double)), t0;
        for (i = 0; i < n; i++) {
            t0 = now_us();
            free(xcb_get_image_reply(c, xcb_get_image(c, XCB_IMAGE_FORMAT_Z_PIXMAP, root, 400,
                                                      300, 1, 1, ~0u), NULL));
            t[i] = now_us() - t0;
        }
        qsort(t, n, sizeof(double), cmpd);
        printf("median_us=%.0f p99_us=%.0f\n", t[n / 2], t[n * 99 / 100]);
        return 0;
    }
    if (!strcmp(op, "getimage10p") || !strcmp(op, "getimage1rootp") || !strcmp(op, "getpropp")) {
        /* the same requests 100 in flight (replies read in batches): the server reads
         * many requests per wakeup, so its per-wakeup work (which varies from run to run
         * with when the client's next request arrives) no longer counts per request */
        enum { B = 100 };
        unsigned int ck[B];
        long k0 = 0, k;
        for (i = 0; i < n; i++) {
            if (op[3] == 'p')
                ck[i % B] = xcb_get_property(c, 0, a, XCB_ATOM_WM_NAME, XCB_ATOM_STRING, 0,
                                             10).sequence;
            else if (!strcmp(op, "getimage10p"))
                ck[i % B] = xcb_get_image(c, XCB_IMAGE_FORMAT_Z_PIXMAP, a, 10, 10, 10, 10,
                                          ~0u).sequence;
            else
                ck[i % B] = xcb_get_image(c, XCB_IMAGE_FORMAT_Z_PIXMAP, root, 400, 300, 1, 1,
                                          ~0u).sequence;
            if (i % B == B - 1 || i == n - 1) {
                for (k = k0; k <= i; k++) {
                    if (op[3] == 'p') {
                        xcb_get_property_cookie_t q = { ck[k % B] };
                        free(xcb_get_property_reply(c, q, NULL));
                    } else {
                        xcb_get_image_cookie_t q = { ck[k % B] };
                        free(xcb_get_image_reply(c, q, NULL));
                    }
                }
                k0 = i + 1;
            }
        }
        n = 0;
    }
    for (i = 0; i < n; i++) {
        if (!strcmp(op, "copyarea10"))
            xcb_copy_area(c, a, b, gc, 10, 10, 20, 20, 10, 10);
        else if (!strcmp(op, "getimage10"))
            free(xcb_get_image_reply(c, xcb_get_image(c, XCB_IMAGE_FORMAT_Z_PIXMAP, a, 10, 10,
                                                      10, 10, ~0u), NULL));
        else if (!strcmp(op, "getimage500"))
            free(xcb_get_image_reply(c, xcb_get_image(c, XCB_IMAGE_FORMAT_Z_PIXMAP, a, 0, 0,
                                                      500, 500, ~0u), NULL));
        else if (!strcmp(op, "getimage1root"))
            free(xcb_get_image_reply(c, xcb_get_image(c, XCB_IMAGE_FORMAT_Z_PIXMAP, root, 400,
                                                      300, 1, 1, ~0u), NULL));
        else if (!strcmp(op, "shmget500"))
            free(xcb_shm_get_image_reply(c, xcb_shm_get_image(c, a, 0, 0, 500, 500, ~0u,
                                         XCB_IMAGE_FORMAT_Z_PIXMAP, seg, 0), NULL));
        else if (!strcmp(op, "fill10")) {
            xcb_rectangle_t r = { 30, 30, 10, 10 };
            xcb_poly_fill_rectangle(c, a, gc, 1, &r);
        } else if (!strcmp(op, "mapunmap")) {
            static xcb_window_t pop;
            if (!pop) {                 /* a 100x100 popup over the window (counted once) */
                pop = win(100, 100, 100, 100, 0xffffff);
                xcb_unmap_window(c, pop);
            }
            xcb_map_window(c, pop);     /* one map and one unmap: one "request" here */
            xcb_unmap_window(c, pop);
        } else if (!strcmp(op, "noop"))
            xcb_no_operation(c);
        else if (!strncmp(op, "wake", 4))  /* a round trip the module has no hook in */
            free(xcb_get_atom_name_reply(c, xcb_get_atom_name(c, XCB_ATOM_PRIMARY), NULL));
        else if (!strcmp(op, "getprop"))
            free(xcb_get_property_reply(c, xcb_get_property(c, 0, a, XCB_ATOM_WM_NAME,
                                                            XCB_ATOM_STRING, 0, 10), NULL));
        else if (!strncmp(op, "xtestkey", 8) && xtest > 0) {
            struct {
                uint8_t major, minor; uint16_t len; uint8_t type, detail, pad[2];
                uint32_t time, root; uint8_t pad2[8]; int16_t x, y; uint8_t pad3[7], dev;
            } f = { (uint8_t) xtest, 2, 9, (uint8_t) (i % 2 ? 3 : 2), 38, { 0 }, 0, 0,
                    { 0 }, 0, 0, { 0 }, 0 };
            raw(&f, sizeof(f));         /* XTEST FakeInput: key press, then release */
        }
        if (pause_us)                   /* CS_PAUSE_US: the server goes idle after each */
            usleep(pause_us);
        if (i % 1000 == 999) {
            xcb_generic_event_t *ev;

            sync_();
            while ((ev = xcb_poll_for_queued_event(c)))     /* the keys read back */
                free(ev);
        }
    }
    sync_();
    }
    if (argc > 3) {
        char line[16];
        printf("done\n");
        fflush(stdout);
        while (fgets(line, sizeof(line), stdin))
            ;
    }
    return 0;
}
EOF
cc -O2 -Wall -o "$TMP/w" "$TMP/w.c" -lxcb -lxcb-shm

# ---- servers under callgrind ----
# the same malloc settings on both servers: no mmap for buffers under 4 MB (a 1 MB
# GetImage reply buffer comes from the heap every time, not sometimes from a fresh,
# already zeroed mmap), the heap never trimmed and grown 64 MB at a time
cat >"$TMP/xorg-cg" <<EOF
#!/bin/sh
GLIBC_TUNABLES=glibc.malloc.mmap_threshold=4194304:glibc.malloc.trim_threshold=1073741824:glibc.malloc.top_pad=67108864
export GLIBC_TUNABLES
exec valgrind --tool=callgrind --callgrind-out-file="\$CG_OUT" --dump-instr=no /usr/lib/xorg/Xorg "\$@"
EOF
chmod +x "$TMP/xorg-cg"
write_conf "$TMP/with.conf" 1
write_conf "$TMP/without.conf" 0
# no GLX on either (loading swrast under valgrind takes longer than start_xorg waits)
sed -i 's/^Section "Module"$/Section "Module"\n  Disable "glx"/' "$TMP/with.conf" "$TMP/without.conf"
CG_OUT=$TMP/cg.W XORG_BIN=$TMP/xorg-cg start_xorg W "$TMP/with.conf"
PID_W=${XORG_PIDS[-1]}
CG_OUT=$TMP/cg.N XORG_BIN=$TMP/xorg-cg start_xorg N "$TMP/without.conf"
PID_N=${XORG_PIDS[-1]}
# the same scene on both: the probe's red secure window and a plain one, another client's
for d in "$XDISPLAY_W" "$XDISPLAY_N"; do
  DISPLAY=$d "$OUT/csprobe" victim >"$TMP/victim$d" &
  BG+=($!)
done
for i in $(seq 300); do
  [ -s "$TMP/victim$XDISPLAY_W" ] && [ -s "$TMP/victim$XDISPLAY_N" ] && break
  sleep 0.1
done

# counted SERVER N CMD...: the server's instructions (callgrind Ir) per request while
# CMD (a workload started with "wait") sends its N requests: counters zeroed once it is
# set up, dumped once its last reply came; its setup and exit are not counted
counted() {
  local s=$1 n=$2 pid disp p f before i; shift 2
  pid=PID_$s; disp=XDISPLAY_$s
  rm -f "$TMP/go$s" "$TMP/st$s"
  mkfifo "$TMP/go$s"
  DISPLAY=${!disp} "$@" <"$TMP/go$s" >"$TMP/st$s" &
  p=$!
  exec 8>"$TMP/go$s"
  for i in $(seq 3000); do grep -qs ready "$TMP/st$s" && break; sleep 0.1; done
  callgrind_control -z "${!pid}" >/dev/null 2>&1
  echo go >&8
  for i in $(seq 12000); do grep -qs done "$TMP/st$s" && break; sleep 0.1; done
  before=$(ls "$TMP"/cg."$s".* 2>/dev/null | wc -l)
  callgrind_control -d "${!pid}" >/dev/null 2>&1
  for i in $(seq 100); do
    [ "$(ls "$TMP"/cg."$s".* 2>/dev/null | wc -l)" -gt "$before" ] && break
    sleep 0.05
  done
  exec 8>&-
  wait "$p" 2>/dev/null || true
  f=$(ls -t "$TMP"/cg."$s".* | head -1)
  if [ -n "${CNT_RAW:-}" ]; then         # wrow: the whole line, kept out of wake.$s
    dispatched "$f" "$n"
  else
    dispatched "$f" "$n" | tee -a "$TMP/wake.$s" | cut -d' ' -f1,2
  fi
  if [ "$s" = W ]; then own_ir "$f" "$n" >>"$TMP/own.$s"; fi
}
# dispatched DUMP N: "COUNTED TOTAL WFS NWFS MWFS": COUNTED and TOTAL instructions per
# request as the header says; WFS the inclusive cost of the calls to WaitForSomething,
# NWFS their number, MWFS the module's block and wakeup handlers in them. Dispatch, a
# static function, is found as the caller of ReadRequestFromClient; the server code the
# I/O reaches (a closure over the call graph) is not searched for allocator calls again.
dispatched() {
  awk -v n="$2" '
    function nm(s,   id, rest) {
      if (match(s, /^\([0-9]+\)/)) {
        id = substr(s, 2, RLENGTH - 2); rest = substr(s, RLENGTH + 2)
        if (rest != "") names[id] = rest
        return names[id]
      }
      return s
    }
    function io(f) {
      return f == "WaitForSomething" || f == "ReadRequestFromClient" || f == "FlushAllOutput"
    }
    function mem(f) { return f == "malloc" || f == "calloc" || f == "realloc" || f == "free" }
    /^summary:/ { total = $2; next }
    /^fn=/ { fn = nm(substr($0, 4)); next }
    /^cfn=/ { cfn = nm(substr($0, 5)); next }
    /^calls=/ { call = 1; ncalls = substr($1, 7) + 0; next }
    /^[0-9+*-]/ {
      if (call) {
        call = 0; e[fn SUBSEP cfn] += $2
        if (cfn == "WaitForSomething") { wfs += $2; nwfs += ncalls }
        if (fn == "BlockHandler" || fn == "WakeupHandler") if (cfn ~ /^cs_/) mwfs += $2
      }
      next
    }
    END {
      for (k in e) {
        split(k, p, SUBSEP)
        if (p[2] == "ReadRequestFromClient" && e[k] > best) { best = e[k]; d = p[1] }
        kids[p[1]] = kids[p[1]] SUBSEP p[2]
      }
      # what the I/O reaches (its allocations are left out with it already)
      nq = 0
      for (f in kids) if (io(f) || f == "WriteToClient") { under[f] = 1; q[nq++] = f }
      for (i = 0; i < nq; i++) {
        m = split(kids[q[i]], c, SUBSEP)
        for (j = 2; j <= m; j++) if (!(c[j] in under) && c[j] !~ /^cs_/) { under[c[j]] = 1; q[nq++] = c[j] }
      }
      for (k in e) {
        split(k, p, SUBSEP)
        if (p[1] == d && !io(p[2]))
          cnt += e[k]
        else if (io(p[2]) && p[1] != d && !io(p[1]) && p[1] !~ /^cs_/)
          cnt -= e[k]
        if (p[1] == "WriteToClient" && p[2] !~ /^cs_/)
          cnt -= e[k]
        if (mem(p[2]) && !mem(p[1]) && p[1] !~ /^cs_/ && !(p[1] in under))
          cnt -= e[k]
        if (p[2] ~ /^cs_/ && p[1] !~ /^cs_/ && (p[1] in under || p[1] == "BlockHandler" ||
                                                  p[1] == "WakeupHandler"))
          cnt += e[k]
      }
      printf "%.1f %.1f %.0f %.0f %.0f\n", cnt / n, total / n, wfs, nwfs, mwfs
    }' "$1"
}
# own_ir DUMP N: the instructions spent in the module's own code (self cost of its
# functions, the object libcaptureshield.so) per request; not the server code it calls
# or causes (callback lists, region operations, conversions for its hooks)
own_ir() {
  local id
  id=$(cat "$TMP"/cg.W* | sed -n 's/^c\{0,1\}ob=(\([0-9]*\)) .*libcaptureshield\.so$/\1/p' | head -1)
  awk -v id="$id" -v n="$2" '
    /^ob=\(/ { s = $0; sub(/^ob=\(/, "", s); sub(/\).*/, "", s); ob = s; next }
    /^calls=/ { skip = 1; next }
    /^[0-9+*-]/ { if (skip) { skip = 0; next } if (ob == id) sum += $2; next }
    END { printf "%.0f\n", sum / n }' "$1"
}
# per SERVER OP N: instructions per request, the mean of two runs (counted, total)
per() {
  local a b
  a=$(counted "$1" "$3" "$TMP/w" "$2" "$3" wait)
  b=$(counted "$1" "$3" "$TMP/w" "$2" "$3" wait)
  echo "$a $b" | awk '{ printf "%.0f %.0f\n", ($1 + $3) / 2, ($2 + $4) / 2 }'
}

PARTS=${CS_INSTR_PARTS:-ops attack rtt}
has() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }
if has ops; then
echo "# Xorg 21.1.7, dummy driver, 800x600x24, both servers under callgrind with the same"
echo "# GLIBC_TUNABLES; another client's red secure window and a plain window mapped on both."
echo "# Server instructions per request (callgrind Ir) while a client sends N requests after N/10"
echo "# warm-up ones; without, with, without, with (interleaved), the means of the two."
echo "# counted: the dispatch of the requests, the module's code in full, the server's socket"
echo "# I/O and wakeups left out on both (see dispatched()); total: everything, I/O included"
echo "# own: instructions in the module's own functions per request (self cost, with)"
printf '%-40s %6s %9s %9s %6s %9s %9s %6s %5s\n' operation N without with ratio \
  tot.wo tot.wi ratio own
# CS_INSTR_ROWS="op ...": only those rows (the workload op names: xtestkey, getprop, ...)
ROWS=${CS_INSTR_ROWS:-}
row() {
  local label=$1 op=$2 n=$(( $3 * SCALE )) a b c d own
  [ -z "$ROWS" ] || case " $ROWS " in *" $op "*) ;; *) return 0 ;; esac
  rm -f "$TMP/own.W"
  a=$(counted N "$n" "$TMP/w" "$op" "$n" wait)
  b=$(counted W "$n" "$TMP/w" "$op" "$n" wait)
  c=$(counted N "$n" "$TMP/w" "$op" "$n" wait)
  d=$(counted W "$n" "$TMP/w" "$op" "$n" wait)
  own=$(awk '{ s += $1 } END { if (NR) printf "%.0f", s / NR }' "$TMP/own.W")
  echo "$a $b $c $d" | awk -v l="$label" -v n="$n" -v own="$own" '{
    wo = ($1 + $5) / 2; wi = ($3 + $7) / 2; two = ($2 + $6) / 2; twi = ($4 + $8) / 2
    printf "%-40s %6s %9.0f %9.0f %6.3f %9.0f %9.0f %6.3f %5s\n", l, n, wo, wi, wo / wi,
      two, twi, two / twi, own }'
}
row "CopyArea 10x10 win->win" copyarea10 20000
row "GetImage 10x10 (own window)" getimage10 5000
row "GetImage 500x500 (own window)" getimage500 40
row "ShmGetImage 500x500 (own window)" shmget500 40
row "PolyFillRectangle 10x10" fill10 20000
row "NoOperation" noop 100000
row "GetProperty (WM_NAME, own window)" getprop 10000
row "XTEST FakeInput key (press/release)" xtestkey 2000
row "XTEST key into own focused secure window" xtestkeysec 2000
row "XTEST key, a shortcut grab on the root" xtestkeygrab 2000
row "GetImage 1x1 of the root" getimage1root 5000
row "Map + Unmap of a popup (per pair)" mapunmap 2000
row "GetImage 10x10, 100 in flight" getimage10p 5000
row "GetProperty, 100 in flight" getpropp 10000
row "GetImage 1x1 of the root, 100 in flight" getimage1rootp 5000
# the wakeups left out above, on their own: WaitForSomething's inclusive cost per call
# (poll, timers, block and wakeup handlers, flushing output), over every run above;
# with the module its block and wakeup handlers are in it ("own": their cost per wakeup)
wake() {
  awk '{ w += $3; n += $4; m += $5 } END { if (n) printf "%.0f %d %.0f\n", w / n, n, m / n }' "$TMP/wake.$1"
}
# wrow LABEL OP N: the wakeups counted in full. The client waits 2 ms after each reply,
# so the server goes idle and is woken by each request (wk/rq about 1). Per run: WaitForSomething's inclusive
# cost per call (the server's wait: its timers, BlockHandler and WakeupHandler with every
# handler in them, epoll, flushing), and "full": counted plus every WaitForSomething of
# the run, per request (the module's handlers, in both, once). Without, with, without,
# with; the means of two. wk/rq: WaitForSomething calls per request (with).
wrow() {
  local label=$1 op=$2 n=$(( $3 * SCALE )) a b c d
  [ -z "$ROWS" ] || case " $ROWS " in *" $op "*) ;; *) return 0 ;; esac
  a=$(CNT_RAW=1 counted N "$n" env CS_FOCUS="$FOCUS_N" CS_PAUSE_US=2000 "$TMP/w" "$op" "$n" wait)
  b=$(CNT_RAW=1 counted W "$n" env CS_FOCUS="$FOCUS_W" CS_PAUSE_US=2000 "$TMP/w" "$op" "$n" wait)
  c=$(CNT_RAW=1 counted N "$n" env CS_FOCUS="$FOCUS_N" CS_PAUSE_US=2000 "$TMP/w" "$op" "$n" wait)
  d=$(CNT_RAW=1 counted W "$n" env CS_FOCUS="$FOCUS_W" CS_PAUSE_US=2000 "$TMP/w" "$op" "$n" wait)
  echo "$a $b $c $d" | awk -v l="$label" -v n="$n" '
    function wk(i) { return $(i + 2) / $(i + 3) }
    function full(i) { return $i + ($(i + 2) - $(i + 4)) / n }
    {
      wo = (wk(1) + wk(11)) / 2; wi = (wk(6) + wk(16)) / 2
      fo = (full(1) + full(11)) / 2; fi = (full(6) + full(16)) / 2
      printf "%-40s %6s %5.2f %7.0f %7.0f %6.3f %9.0f %9.0f %6.3f %5.0f\n", l, n,
        ($9 + $19) / 2 / n, wo, wi, wo / wi, fo, fi, fo / fi, ($10 + $20) / ($9 + $19)
    }'
}
FOCUS_W=$(sed -n 's/.*S=\(0x[0-9a-f]*\).*/\1/p' "$TMP/victim$XDISPLAY_W" | head -1)
FOCUS_N=$(sed -n 's/.*S=\(0x[0-9a-f]*\).*/\1/p' "$TMP/victim$XDISPLAY_N" | head -1)
echo
echo "# the wakeups counted in full (see wrow): wake: WaitForSomething's inclusive cost per"
echo "# call; full: counted plus every wakeup, per request; mod: the module's block and"
echo "# wakeup handlers per wakeup (with)"
printf '%-40s %6s %5s %7s %7s %6s %9s %9s %6s %5s\n' operation N wk/rq wake.wo wake.wi ratio \
  full.wo full.wi ratio mod
wrow "GetAtomName round trip (idle wakeup)"   wake 2000
wrow "the same, a client with an XKB selection" wakexkb 2000
wrow "the same, its selection held (sec. focus)" wakexkbsec 2000
wrow "GetImage 1x1 of the root, round trip" getimage1root 2000
wrow "GetProperty (WM_NAME), round trip" getprop 2000
echo
if [ -s "$TMP/wake.N" ] && [ -s "$TMP/wake.W" ]; then
  read -r wwo nwo _ < <(wake N)
  read -r wwi nwi mwi < <(wake W)
  printf '%-40s %6s %9s %9s %6.3f %9s %9s %6s %5s\n' "per wakeup (WaitForSomething)" \
    "$nwo/$nwi" "$wwo" "$wwi" "$(awk -v a="$wwo" -v b="$wwi" 'BEGIN { print a / b }')" - - - "$mwi"
fi
fi

# ---- cost as an attack ----
echo
echo "# attack: an untrusted client maps 2,000 shaped (L) secure windows of its own, then"
echo "# loops: move one window 1 px, GetImage 1x1 of the root where it is"
printf '%-52s %12s %12s %8s\n' measure without with ratio
attack_row() {
  local label=$1 wo wi
  shift
  wo=$("$@" N)
  wi=$("$@" W)
  printf '%-52s %12s %12s %8s\n' "$label" "$wo" "$wi" \
    "$(awk -v a="$wo" -v b="$wi" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "-" }')"
}
# the attacker's loop: instructions per iteration (2 requests), counted from after its
# 2,000 windows are mapped until its last reply; few iterations with the module (each
# costs tens of ms natively, ~50 times that under callgrind)
atk_per() {
  local n
  n=$([ "$1" = W ] && echo $(( 4 * SCALE )) || echo $(( 100 * SCALE )))
  counted "$1" "$n" "$TMP/w" attack "$n" wait | cut -d' ' -f2
}
# the same, each loop after the first 4 (the first read after the setup builds the
# secret region of all 2,000 windows once): (I(3n) - I(n)) / 2n
atk_marginal() {
  local n a b
  n=$([ "$1" = W ] && echo $(( 4 * SCALE )) || echo $(( 100 * SCALE )))
  a=$(counted "$1" "$n" "$TMP/w" attack "$n" wait | cut -d' ' -f2)
  b=$(counted "$1" $(( 3 * n )) "$TMP/w" attack $(( 3 * n )) wait | cut -d' ' -f2)
  awk -v a="$a" -v b="$b" -v n="$n" 'BEGIN { printf "%.0f", (b * 3 * n - a * n) / (2 * n) }'
}
# another client's GetImage 1x1 while the 2,000 windows are mapped (attacker idle)
other_per() {
  local s=$1 disp p r
  disp=XDISPLAY_$s
  DISPLAY=${!disp} "$TMP/w" attack 0 hold >"$TMP/hold$s" &
  p=$!
  for r in $(seq 600); do [ -s "$TMP/hold$s" ] && break; sleep 0.1; done
  # with the module each of these costs millions of instructions: few of them
  r=$(per "$s" getimage1root $(( $([ "$s" = W ] && echo 20 || echo 1000) * SCALE )))
  kill "$p"; wait "$p" 2>/dev/null || true
  echo "${r#* }"
}
if has attack; then
attack_row "attacker: instructions per move+read loop" atk_per
attack_row "other client: instructions per GetImage 1x1 (root)" other_per
fi
if has attackloop; then
attack_row "attacker: per loop after the first 4 (marginal)" atk_marginal
fi
has rtt || exit 0

# native servers (no valgrind) for round-trip times
stop_all_xorg
for p in "${BG[@]}"; do kill "$p" 2>/dev/null || true; done
BG=()
start_xorg W2 "$TMP/with.conf"
start_xorg N2 "$TMP/without.conf"
for d in "$XDISPLAY_W2" "$XDISPLAY_N2"; do
  DISPLAY=$d "$OUT/csprobe" victim >"$TMP/v2$d" &
  BG+=($!)
done
sleep 1
# rtt SERVER attack|quiet: "median_us=M p99_us=P" of GetImage 1x1 round trips (2000;
# 200 under attack)
rtt() {
  local disp=XDISPLAY_$1 p="" r out
  if [ "$2" = attack ]; then
    DISPLAY=${!disp} "$TMP/w" attack -1 >"$TMP/atk$1" &
    p=$!
    for r in $(seq 600); do [ -s "$TMP/atk$1" ] && break; sleep 0.1; done
  fi
  out=$(DISPLAY=${!disp} "$TMP/w" rtt "$([ "$2" = attack ] && echo 200 || echo 2000)")
  [ -n "$p" ] && { kill "$p"; wait "$p" 2>/dev/null || true; }
  echo "$out"
}
echo
echo "# another client's GetImage 1x1 round trip (native servers; 2 shared cores, so only a"
echo "# rough figure)"
for s in N2 W2; do
  for m in quiet attack; do
    printf '%-8s %-7s %-8s %s\n' "$([ "$s" = N2 ] && echo without || echo with)" module "$m" \
      "$(rtt "$s" "$m")"
  done
done
