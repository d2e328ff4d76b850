/* CaptureShield Xorg tests (t-trust.sh): code an attacker loads into a trusted program.
 * Built by the suite with cc as an LD_PRELOAD / LD_AUDIT library and as a fake
 * libxcb-composite.so.0 (a filter of the real one) found through LD_LIBRARY_PATH. Its
 * constructor runs inside the trusted process before the program's main: it (optionally
 * after scrubbing LD_PRELOAD from the environment) connects to $DISPLAY, reads the screen,
 * prints "injected red=N" and ends the process. Built with -DINJECT_NOOP it does nothing:
 * foreign code that only sits in a trusted process (loaded there through a debugger). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <xcb/xcb.h>

unsigned int
la_version(unsigned int v)
{
    return v;   /* LD_AUDIT: accept the interface version */
}

__attribute__((constructor)) static void
inject(void)
{
    xcb_connection_t *c;
    xcb_get_image_reply_t *r;
    xcb_screen_t *s;
    long red = 0;
    int i, n;

#ifdef INJECT_NOOP
    return;
#endif
    if (getenv("INJECT_SCRUB")) {
        unsetenv("LD_PRELOAD");
        unsetenv("LD_AUDIT");
        unsetenv("LD_LIBRARY_PATH");
    }
    c = xcb_connect(NULL, NULL);
    if (xcb_connection_has_error(c)) {
        printf("injected error=connect\n");
        fflush(stdout);
        _exit(3);
    }
    s = xcb_setup_roots_iterator(xcb_get_setup(c)).data;
    r = xcb_get_image_reply(c, xcb_get_image(c, XCB_IMAGE_FORMAT_Z_PIXMAP, s->root, 0, 0,
                                             s->width_in_pixels, s->height_in_pixels, ~0u),
                            NULL);
    if (r) {
        const unsigned *p = (const unsigned *) xcb_get_image_data(r);
        n = xcb_get_image_data_length(r) / 4;
        for (i = 0; i < n; i++)
            red += (p[i] & 0xffffff) == 0xff0000;
        free(r);
    }
    printf("injected red=%ld\n", r ? red : -1L);
    fflush(stdout);
    _exit(0);
}
