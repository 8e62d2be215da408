/* png_check.c: checks that a PNG screenshot shows a rendered page, for the
 * html reporter's screenshot test (html_screenshot.sh). Decodes the PNG
 * itself (8-bit RGB or RGBA, not interlaced: what Chromium writes) with
 * zlib, then checks, and prints, each of:
 *
 *   --min-bytes N        the file is at least N bytes
 *   --min-colours N      at least N distinct RGB colours
 *   --background RRGGBB  the top-left pixel has this colour (light or dark page)
 *   --min-ink F          at least the fraction F of pixels differ from the background
 *   --colour RRGGBB:N    at least N pixels have exactly this colour (a chart's
 *                        fill: a stage bar, a series' points), repeatable
 *
 * Exit status: 0 when every check holds, 1 when one fails, 2 for a PNG it
 * cannot read or bad usage.
 *
 *   png_check shot.png --min-bytes 30000 --min-colours 200 --colour 2f7fd8:500
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

typedef struct image {
    uint32_t w, h;
    unsigned char *rgb; /* w * h * 3 */
} image;

static uint32_t be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static unsigned char *slurp(const char *path, size_t *len) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    size_t cap = 1 << 20, n = 0, got;
    unsigned char *buf = malloc(cap);
    while (buf && (got = fread(buf + n, 1, cap - n, fp)) > 0) {
        n += got;
        if (n == cap) {
            unsigned char *b = realloc(buf, cap * 2);
            if (!b) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = b;
            cap *= 2;
        }
    }
    fclose(fp);
    *len = n;
    return buf;
}

static int paeth(int a, int b, int c) {
    int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
    if (pa <= pb && pa <= pc) return a;
    return pb <= pc ? b : c;
}

/* Decodes data[len] into img; returns NULL on success, else why not. */
static const char *decode(const unsigned char *data, size_t len, image *img) {
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    if (len < 8 || memcmp(data, sig, 8) != 0) return "not a PNG";
    size_t pos = 8, zlen = 0;
    unsigned char *z = malloc(len);
    uint32_t bpp = 0;
    int have_header = 0;
    if (!z) return "out of memory";
    while (pos + 12 <= len) {
        uint32_t n = be32(data + pos);
        const unsigned char *type = data + pos + 4, *body = data + pos + 8;
        if (n > len - pos - 12) {
            free(z);
            return "truncated chunk";
        }
        if (memcmp(type, "IHDR", 4) == 0 && n >= 13) {
            img->w = be32(body);
            img->h = be32(body + 4);
            if (body[8] != 8 || (body[9] != 2 && body[9] != 6) || body[12] != 0) {
                free(z);
                return "not 8-bit RGB/RGBA without interlace";
            }
            bpp = body[9] == 6 ? 4 : 3;
            have_header = 1;
        } else if (memcmp(type, "IDAT", 4) == 0) {
            memcpy(z + zlen, body, n);
            zlen += n;
        } else if (memcmp(type, "IEND", 4) == 0) {
            break;
        }
        pos += 12 + (size_t)n;
    }
    if (!have_header || img->w == 0 || img->h == 0 || img->w > 20000 || img->h > 100000) {
        free(z);
        return "no usable IHDR";
    }
    size_t stride = (size_t)img->w * bpp, raw_len = (stride + 1) * img->h;
    unsigned char *raw = malloc(raw_len);
    uLongf out_len = (uLongf)raw_len;
    if (!raw || uncompress(raw, &out_len, z, (uLong)zlen) != Z_OK || out_len != raw_len) {
        free(z);
        free(raw);
        return "image data does not inflate";
    }
    free(z);
    unsigned char *px = malloc(stride * img->h);
    img->rgb = malloc((size_t)img->w * img->h * 3);
    if (!px || !img->rgb) {
        free(raw);
        free(px);
        return "out of memory";
    }
    for (uint32_t y = 0; y < img->h; y++) {
        const unsigned char *in = raw + y * (stride + 1) + 1;
        unsigned char *out = px + y * stride, *up = y ? out - stride : NULL;
        int filter = raw[y * (stride + 1)];
        for (size_t i = 0; i < stride; i++) {
            int a = i >= bpp ? out[i - bpp] : 0, b = up ? up[i] : 0, c = (up && i >= bpp) ? up[i - bpp] : 0;
            int pred = 0;
            switch (filter) {
            case 0: pred = 0; break;
            case 1: pred = a; break;
            case 2: pred = b; break;
            case 3: pred = (a + b) / 2; break;
            case 4: pred = paeth(a, b, c); break;
            default:
                free(raw);
                free(px);
                return "bad filter type";
            }
            out[i] = (unsigned char)(in[i] + pred);
        }
    }
    for (size_t i = 0; i < (size_t)img->w * img->h; i++) memcpy(img->rgb + i * 3, px + i * bpp, 3);
    free(raw);
    free(px);
    return NULL;
}

static uint32_t rgb_at(const image *img, size_t i) {
    const unsigned char *p = img->rgb + i * 3;
    return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static int parse_hex(const char *s, uint32_t *rgb) {
    char *end;
    unsigned long v = strtoul(s, &end, 16);
    if (end != s + 6 || v > 0xFFFFFF) return -1;
    *rgb = (uint32_t)v;
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: png_check FILE.png [--min-bytes N] [--min-colours N] [--background RRGGBB] "
                        "[--min-ink F] [--colour RRGGBB:N ...]\n");
        return 2;
    }
    size_t len = 0;
    unsigned char *data = slurp(argv[1], &len);
    if (!data) {
        fprintf(stderr, "png_check: %s: cannot read\n", argv[1]);
        return 2;
    }
    image img = {0, 0, NULL};
    const char *why = decode(data, len, &img);
    free(data);
    if (why) {
        fprintf(stderr, "png_check: %s: %s\n", argv[1], why);
        free(img.rgb);
        return 2;
    }
    size_t n_px = (size_t)img.w * img.h;
    unsigned char *seen = calloc(1u << 21, 1); /* one bit per 24-bit colour */
    if (!seen) return 2;
    uint32_t colours = 0;
    for (size_t i = 0; i < n_px; i++) {
        uint32_t c = rgb_at(&img, i);
        if (!(seen[c >> 3] & (1u << (c & 7)))) seen[c >> 3] |= (unsigned char)(1u << (c & 7)), colours++;
    }
    free(seen);
    uint32_t bg = rgb_at(&img, 0);
    printf("png_check: %s: %zu bytes, %ux%u, %u colours, background %06x\n", argv[1], len, img.w, img.h, colours, bg);

    int failed = 0;
    for (int a = 2; a < argc; a++) {
        const char *opt = argv[a], *val = a + 1 < argc ? argv[a + 1] : NULL;
        if (!val) {
            fprintf(stderr, "png_check: %s needs a value\n", opt);
            return 2;
        }
        a++;
        if (strcmp(opt, "--min-bytes") == 0) {
            size_t want = strtoul(val, NULL, 10);
            int ok = len >= want;
            printf("  %s file size %zu >= %zu\n", ok ? "ok  " : "FAIL", len, want);
            failed |= !ok;
        } else if (strcmp(opt, "--min-colours") == 0) {
            uint32_t want = (uint32_t)strtoul(val, NULL, 10);
            int ok = colours >= want;
            printf("  %s distinct colours %u >= %u\n", ok ? "ok  " : "FAIL", colours, want);
            failed |= !ok;
        } else if (strcmp(opt, "--background") == 0) {
            uint32_t want;
            if (parse_hex(val, &want) != 0) return 2;
            int ok = bg == want;
            printf("  %s background %06x == %06x\n", ok ? "ok  " : "FAIL", bg, want);
            failed |= !ok;
        } else if (strcmp(opt, "--min-ink") == 0) {
            double want = strtod(val, NULL);
            size_t ink = 0;
            for (size_t i = 0; i < n_px; i++) ink += rgb_at(&img, i) != bg;
            int ok = (double)ink >= want * (double)n_px;
            printf("  %s pixels other than the background %.4f >= %.4f\n", ok ? "ok  " : "FAIL",
                   (double)ink / (double)n_px, want);
            failed |= !ok;
        } else if (strcmp(opt, "--colour") == 0) {
            uint32_t want;
            if (strlen(val) < 8 || val[6] != ':' || parse_hex(val, &want) != 0) return 2;
            size_t min = strtoul(val + 7, NULL, 10), count = 0;
            for (size_t i = 0; i < n_px; i++) count += rgb_at(&img, i) == want;
            int ok = count >= min;
            printf("  %s pixels of %06x: %zu >= %zu\n", ok ? "ok  " : "FAIL", want, count, min);
            failed |= !ok;
        } else {
            fprintf(stderr, "png_check: unknown option %s\n", opt);
            return 2;
        }
    }
    free(img.rgb);
    return failed ? 1 : 0;
}
