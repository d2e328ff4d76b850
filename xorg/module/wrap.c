/* CaptureShield Xorg module: every wrapper the module installs, recorded so it can be undone
 * (request vectors, screen procs, callbacks, per-screen and module cleanups).
 *
 * The X server runs the extension's init once per server generation (without -noreset it
 * resets whenever the last client leaves), and keeps the core request vectors from one
 * generation to the next: a wrapper left in ProcVector would be wrapped again by the next
 * generation's init and call itself. So each generation's wrappers are undone:
 * - request vectors and callbacks at the extension's CloseDown (cs_wrap_close_down, before
 *   the server frees the resources; no request runs after it);
 * - screen procs at each screen's CloseScreen (after every window and pixmap is gone,
 *   which still pass through the screen wrappers), in reverse order, as Xext and
 *   composite do, followed by the per-screen cleanups (cs_on_close_screen);
 * - everything at once when the init fails half-way (cs_wrap_undo), so that a failed
 *   init leaves no wrapper behind. */
#include "cs.h"
#include <string.h>
#include <stdlib.h>

/* From xf86Opt.h (not includable without the whole xf86 DDX header set). */
extern char *xf86FindOptionValue(void *options, const char *name);

#define CS_MAX_PROCS 64
#define CS_MAX_CALLBACKS 32
#define CS_MAX_SCREEN_PROCS 32
#define CS_MAX_CLOSERS 16

int cs_fail_alloc;
static const char *cs_fail_init;

static struct {
    int major;
    CsProcPtr fn, orig, sorig;
} cs_procs[CS_MAX_PROCS];
static int cs_nprocs;

static struct {
    CallbackListPtr *list;
    CallbackProcPtr fn;
    void *data;
} cs_cbs[CS_MAX_CALLBACKS];
static int cs_ncbs;

static void (*cs_closers[CS_MAX_CLOSERS])(void);
static int cs_nclosers;
static void (*cs_screen_closers[CS_MAX_CLOSERS])(ScreenPtr);
static int cs_nscreen_closers;

/* Per screen, allocated at its first wrapper and freed at its CloseScreen (the private
 * holds only the pointer: screen privates move when a key is registered later). */
struct cs_wrap_screen {
    CloseScreenProcPtr CloseScreen;
    int n;
    struct {
        CsFn *slot;             /* the field of the ScreenRec */
        CsFn *saved;            /* where the wrapper keeps the previous value */
        CsFn fn;                /* the wrapper */
        CsFn own;               /* storage for `saved` when the caller has none */
    } e[CS_MAX_SCREEN_PROCS];
};
static DevPrivateKeyRec cs_wrap_screen_key;

void
cs_wrap_options(void *opts)
{
    const char *v;

    if (!opts)
        return;
    if ((v = xf86FindOptionValue(opts, "FailInit")) && *v) {
        cs_fail_init = strdup(v);
        LogMessageVerb(X_WARNING, 0, "CAPTURESHIELD: TEST OPTION FailInit \"%s\": that "
                       "initialisation step will fail\n", v);
    }
    if ((v = xf86FindOptionValue(opts, "FailAlloc")) && strcmp(v, "0") && strcasecmp(v, "off")) {
        cs_fail_alloc = 1;
        LogMessageVerb(X_WARNING, 0, "CAPTURESHIELD: TEST OPTION FailAlloc: the module's "
                       "blanking allocations fail\n");
    }
}

Bool
cs_fail_step(const char *step)
{
    return cs_fail_init && !strcasecmp(cs_fail_init, step);
}

Bool
cs_wrap_begin(void)
{
    cs_nprocs = cs_ncbs = cs_nclosers = cs_nscreen_closers = 0;
    return dixRegisterPrivateKey(&cs_wrap_screen_key, PRIVATE_SCREEN, 0);
}

/* Wraps request `major` with `fn`; *orig gets the proc a host-order request goes on to,
 * *sorig the one a byte-swapped client's request goes on to.
 *
 * Exactly one wrapper invocation per request, from either byte order:
 * - a core request (major < EXTENSION_BASE) is wrapped in ProcVector only. The core's
 *   SProcXxx (dix/swapreq.c) swaps a swapped client's request in place and then calls
 *   ProcVector[X_Xxx], so the wrapper runs once, after the swap, on host-order fields,
 *   and goes on to the real ProcXxx (*sorig == *orig). A wrapper in SwappedProcVector too
 *   would run twice and its call of SProcXxx would swap the request back: the server
 *   recursed until it crashed (CreateWindow, ChangeProperty, RotateProperties, CopyArea)
 *   or spun (GetProperty).
 * - an extension's major is wrapped in both vectors: the extension's swapped dispatcher
 *   swaps and dispatches to its own procs, never back through ProcVector, so the wrapper
 *   runs once, before the swap, on the fields as the client sent them.
 * cs_req_swapped() (cs.h) tells a wrapper which of the two it sees. */
Bool
cs_wrap_proc(int major, CsProcPtr fn, CsProcPtr *orig, CsProcPtr *sorig)
{
    Bool ext = major >= EXTENSION_BASE;

    if (major <= 0 || major > 255 || cs_nprocs == CS_MAX_PROCS || !ProcVector[major])
        return FALSE;
    cs_procs[cs_nprocs].major = major;
    cs_procs[cs_nprocs].fn = fn;
    cs_procs[cs_nprocs].orig = ProcVector[major];
    cs_procs[cs_nprocs].sorig = SwappedProcVector[major];
    if (orig)
        *orig = ProcVector[major];
    if (sorig)
        *sorig = ext ? SwappedProcVector[major] : ProcVector[major];
    ProcVector[major] = fn;
    if (ext)
        SwappedProcVector[major] = fn;
    cs_nprocs++;
    return TRUE;
}

Bool
cs_add_callback(CallbackListPtr *list, CallbackProcPtr fn, void *data)
{
    if (cs_ncbs == CS_MAX_CALLBACKS || !AddCallback(list, fn, data))
        return FALSE;
    cs_cbs[cs_ncbs].list = list;
    cs_cbs[cs_ncbs].fn = fn;
    cs_cbs[cs_ncbs].data = data;
    cs_ncbs++;
    return TRUE;
}

Bool
cs_on_close(void (*fn)(void))
{
    if (cs_nclosers == CS_MAX_CLOSERS)
        return FALSE;
    cs_closers[cs_nclosers++] = fn;
    return TRUE;
}

Bool
cs_on_close_screen(void (*fn)(ScreenPtr))
{
    if (cs_nscreen_closers == CS_MAX_CLOSERS)
        return FALSE;
    cs_screen_closers[cs_nscreen_closers++] = fn;
    return TRUE;
}

static struct cs_wrap_screen *
cs_ws(ScreenPtr s)
{
    return dixLookupPrivate(&s->devPrivates, &cs_wrap_screen_key);
}

/* Undoes the screen's wrappers (newest first), runs the per-screen cleanups and puts
 * CloseScreen back; returns how many procs it restored. */
static int
cs_unwrap_screen(ScreenPtr s)
{
    struct cs_wrap_screen *ws = cs_ws(s);
    int i, n;

    if (!ws) {
        /* never wrapped (an init that failed before it): its state may exist */
        for (i = cs_nscreen_closers - 1; i >= 0; i--)
            cs_screen_closers[i](s);
        return 0;
    }
    for (i = ws->n - 1; i >= 0; i--) {
        if (*ws->e[i].slot != ws->e[i].fn)
            LogMessageVerb(X_INFO, 3, "CAPTURESHIELD: screen %d: a wrapper over the "
                           "module's was not removed; restoring the module's original\n",
                           s->myNum);
        *ws->e[i].slot = *ws->e[i].saved;
    }
    for (i = cs_nscreen_closers - 1; i >= 0; i--)
        cs_screen_closers[i](s);
    s->CloseScreen = ws->CloseScreen;
    n = ws->n;
    free(ws);
    dixSetPrivate(&s->devPrivates, &cs_wrap_screen_key, NULL);
    return n;
}

static Bool
cs_CloseScreen(ScreenPtr s)
{
    int n = cs_unwrap_screen(s);

    LogMessageVerb(X_INFO, 0, "CAPTURESHIELD: screen %d closed, %d screen procs restored\n",
                   s->myNum, n);
    return s->CloseScreen(s);
}

CsFn *
cs_wrap_screen(ScreenPtr s, CsFn *slot, CsFn *saved, CsFn fn)
{
    struct cs_wrap_screen *ws = cs_ws(s);

    if (!ws) {
        if (!(ws = calloc(1, sizeof(*ws))))
            return NULL;
        dixSetPrivate(&s->devPrivates, &cs_wrap_screen_key, ws);
        ws->CloseScreen = s->CloseScreen;
        s->CloseScreen = cs_CloseScreen;
    }
    if (ws->n == CS_MAX_SCREEN_PROCS)
        return NULL;
    if (!saved)
        saved = &ws->e[ws->n].own;
    ws->e[ws->n].slot = slot;
    ws->e[ws->n].saved = saved;
    ws->e[ws->n].fn = fn;
    *saved = *slot;
    *slot = fn;
    ws->n++;
    return saved;
}

/* Request vectors and callbacks, newest first; then the module cleanups. */
static void
cs_unwrap_procs(int *nprocs, int *ncbs)
{
    int i;

    for (i = cs_nprocs - 1; i >= 0; i--) {
        int m = cs_procs[i].major;
        if (ProcVector[m] != cs_procs[i].fn)
            LogMessageVerb(X_WARNING, 0, "CAPTURESHIELD: request %d: a wrapper over the "
                           "module's was not removed; restoring the module's original\n", m);
        ProcVector[m] = cs_procs[i].orig;
        if (m >= EXTENSION_BASE)
            SwappedProcVector[m] = cs_procs[i].sorig;
    }
    for (i = cs_ncbs - 1; i >= 0; i--)
        DeleteCallback(cs_cbs[i].list, cs_cbs[i].fn, cs_cbs[i].data);
    for (i = cs_nclosers - 1; i >= 0; i--)
        cs_closers[i]();
    *nprocs = cs_nprocs;
    *ncbs = cs_ncbs;
    cs_nprocs = cs_ncbs = cs_nclosers = 0;
}

void
cs_wrap_close_down(void)
{
    int np, nc;

    cs_unwrap_procs(&np, &nc);
    LogMessageVerb(X_INFO, 0, "CAPTURESHIELD: closing down (server generation %lu): %d "
                   "request vectors restored, %d callbacks deleted\n", serverGeneration, np, nc);
}

void
cs_wrap_undo(const char *step)
{
    int i, np, nc, ns = 0;

    cs_unwrap_procs(&np, &nc);
    for (i = 0; i < screenInfo.numScreens; i++)
        ns += cs_unwrap_screen(screenInfo.screens[i]);
    cs_nscreen_closers = 0;
    LogMessageVerb(X_ERROR, 0, "CAPTURESHIELD: initialisation failed at step %s, NOT active "
                   "(undone: %d request vectors, %d screen procs, %d callbacks)\n",
                   step, np, ns, nc);
}

void
cs_wrap_summary(void)
{
    int i, ns = 0;

    for (i = 0; i < screenInfo.numScreens; i++)
        if (cs_ws(screenInfo.screens[i]))
            ns += cs_ws(screenInfo.screens[i])->n;
    LogMessageVerb(X_INFO, 0, "CAPTURESHIELD: server generation %lu: %d request vectors, "
                   "%d screen procs on %d screen(s), %d callbacks wrapped\n", serverGeneration,
                   cs_nprocs, ns, screenInfo.numScreens, cs_ncbs);
}
