/* CaptureShield Xorg tests: counts red/black/blue pixels in XWD, PPM, BMP or raw RGB24 captures. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct stats {
    long frames, red_frames, red_max, black_min, black_max, blue_min;
};

static void
add(struct stats *s, long red, long black, long blue)
{
    if (s->frames == 0) {
        s->black_min = black;
        s->blue_min = blue;
    }
    s->frames++;
    if (red)
        s->red_frames++;
    if (red > s->red_max)
        s->red_max = red;
    if (black > s->black_max)
        s->black_max = black;
    if (black < s->black_min)
        s->black_min = black;
    if (blue < s->blue_min)
        s->blue_min = blue;
}

static unsigned char *
slurp(const char *path, size_t *len)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    size_t cap = 1 << 20, n = 0, r;
    unsigned char *b = malloc(cap);

    if (!f || !b) {
        perror(path);
        exit(2);
    }
    while ((r = fread(b + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap)
            b = realloc(b, cap *= 2);
    }
    if (f != stdin)
        fclose(f);
    *len = n;
    return b;
}

static void
count_rgb(const unsigned char *p, long npix, int step, int r_off, int g_off, int b_off,
          struct stats *s)
{
    long i, red = 0, black = 0, blue = 0;

    for (i = 0; i < npix; i++, p += step) {
        int r = p[r_off], g = p[g_off], b = p[b_off];
        if (r == 255 && g == 0 && b == 0)
            red++;
        else if (r == 0 && g == 0 && b == 0)
            black++;
        else if (r == 0 && g == 0 && b == 255)
            blue++;
    }
    add(s, red, black, blue);
}

static uint32_t
be32(const unsigned char *p)
{
    return (uint32_t) p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3];
}

static int
do_xwd(const unsigned char *b, size_t len, struct stats *s)
{
    uint32_t hsize, w, h, bpp, bpl, ncolors, order, y;
    const unsigned char *px;

    if (len < 100)
        return -1;
    hsize = be32(b);
    w = be32(b + 16);
    h = be32(b + 20);
    order = be32(b + 28);
    bpp = be32(b + 44);
    bpl = be32(b + 48);
    ncolors = be32(b + 76);
    px = b + hsize + ncolors * 12;
    if (bpp != 32 || px + (size_t) bpl * h > b + len)
        return -1;
    {
        long red = 0, black = 0, blue = 0;
        for (y = 0; y < h; y++) {
            const unsigned char *l = px + (size_t) y * bpl;
            uint32_t x;
            for (x = 0; x < w; x++) {
                const unsigned char *q = l + 4 * x;
                uint32_t v = order == 0 ? (uint32_t) q[0] | q[1] << 8 | q[2] << 16
                                        : (uint32_t) q[3] | q[2] << 8 | q[1] << 16;
                v &= 0xffffff;
                if (v == 0xff0000)
                    red++;
                else if (v == 0)
                    black++;
                else if (v == 0x0000ff)
                    blue++;
            }
        }
        add(s, red, black, blue);
    }
    return 0;
}

static const unsigned char *
ppm_token(const unsigned char *p, const unsigned char *end, long *v)
{
    for (;;) {
        while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
            p++;
        if (p < end && *p == '#') {
            while (p < end && *p != '\n')
                p++;
            continue;
        }
        break;
    }
    *v = 0;
    while (p < end && *p >= '0' && *p <= '9')
        *v = *v * 10 + (*p++ - '0');
    return p;
}

static int
do_ppm(const unsigned char *b, size_t len, struct stats *s)
{
    const unsigned char *p = b, *end = b + len;

    while (p + 2 < end && p[0] == 'P' && p[1] == '6') {
        long w, h, max;
        p = ppm_token(p + 2, end, &w);
        p = ppm_token(p, end, &h);
        p = ppm_token(p, end, &max);
        p++;
        if (max != 255 || p + 3 * w * h > end)
            return -1;
        count_rgb(p, w * h, 3, 0, 1, 2, s);
        p += 3 * w * h;
    }
    return s->frames ? 0 : -1;
}

static int
do_bmp(const unsigned char *b, size_t len, struct stats *s)
{
    uint32_t off, bpp, stride, y;
    int32_t w, h;
    long red = 0, black = 0, blue = 0;

    if (len < 54 || b[0] != 'B' || b[1] != 'M')
        return -1;
    off = b[10] | b[11] << 8 | b[12] << 16 | (uint32_t) b[13] << 24;
    memcpy(&w, b + 18, 4);
    memcpy(&h, b + 22, 4);
    bpp = b[28] | b[29] << 8;
    if (h < 0)
        h = -h;
    if (bpp != 24 && bpp != 32)
        return -1;
    stride = ((w * bpp / 8) + 3) & ~3u;
    if (off + (size_t) stride * h > len)
        return -1;
    for (y = 0; y < (uint32_t) h; y++) {
        struct stats row = { 0 };
        count_rgb(b + off + (size_t) y * stride, w, bpp / 8, 2, 1, 0, &row);
        red += row.red_max;
        black += row.black_max;
        blue += row.blue_min;
    }
    add(s, red, black, blue);
    return 0;
}

int
main(int argc, char **argv)
{
    struct stats s = { 0 };
    int i;

    if (argc < 3) {
        fprintf(stderr, "usage: cscount xwd|ppm|bmp FILE...  |  cscount raw W H FILE\n");
        return 2;
    }
    if (!strcmp(argv[1], "raw")) {
        long w = atol(argv[2]), h = atol(argv[3]), fs = w * h * 3;
        size_t len, o;
        unsigned char *b = slurp(argv[4], &len);
        for (o = 0; fs > 0 && o + fs <= len; o += fs)
            count_rgb(b + o, w * h, 3, 0, 1, 2, &s);
    } else {
        for (i = 2; i < argc; i++) {
            size_t len;
            unsigned char *b = slurp(argv[i], &len);
            int r = !strcmp(argv[1], "xwd") ? do_xwd(b, len, &s)
                  : !strcmp(argv[1], "ppm") ? do_ppm(b, len, &s) : do_bmp(b, len, &s);
            if (r) {
                fprintf(stderr, "cscount: cannot parse %s\n", argv[i]);
                return 2;
            }
            free(b);
        }
    }
    printf("frames=%ld refused=0 red_max=%ld red_frames=%ld black_min=%ld black_max=%ld blue_min=%ld\n",
           s.frames, s.red_max, s.red_frames, s.black_min, s.black_max, s.blue_min);
    return 0;
}
