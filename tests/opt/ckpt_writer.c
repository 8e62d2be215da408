/* ckpt_writer.c: small checkpoint files for the reader tests (ckpt_writer.h):
 * a zip writer, torch's state-dict pickle of one tensor, and one-tensor
 * shards in each format.
 */
#define _POSIX_C_SOURCE 200809L

#include "ckpt_writer.h"

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

static void put(buf *b, const void *src, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}
static void put16(buf *b, unsigned v) {
    unsigned char x[2] = {(unsigned char)v, (unsigned char)(v >> 8)};
    put(b, x, 2);
}
static void put32(buf *b, uint32_t v) {
    put16(b, v & 0xFFFF);
    put16(b, v >> 16);
}

static void put64(buf *b, uint64_t v) {
    put32(b, (uint32_t)v);
    put32(b, (uint32_t)(v >> 32));
}

buf make_zip_ex(const zentry *e, int n, int compress_it, int zip64) {
    buf z = {0}, cd = {0};
    for (int i = 0; i < n; i++) {
        const void *data = e[i].data;
        size_t cn = e[i].n;
        unsigned char *c = NULL;
        if (compress_it) {
            c = malloc(e[i].n * 2 + 64);
            z_stream s;
            memset(&s, 0, sizeof s);
            assert_int_equal(deflateInit2(&s, 9, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY), Z_OK);
            s.next_in = (Bytef *)(uintptr_t)e[i].data;
            s.avail_in = (uInt)e[i].n;
            s.next_out = c;
            s.avail_out = (uInt)(e[i].n * 2 + 64);
            assert_int_equal(deflate(&s, Z_FINISH), Z_STREAM_END);
            cn = s.total_out;
            deflateEnd(&s);
            data = c;
        }
        uint32_t off = (uint32_t)z.n, crc = (uint32_t)crc32(0, e[i].data, (uInt)e[i].n);
        size_t nl = strlen(e[i].name);
        put32(&z, 0x04034b50u); put16(&z, 20); put16(&z, 0); put16(&z, compress_it ? 8 : 0); put32(&z, 0);
        put32(&z, crc); put32(&z, (uint32_t)cn); put32(&z, (uint32_t)e[i].n); put16(&z, (unsigned)nl); put16(&z, 0);
        put(&z, e[i].name, nl);
        put(&z, data, cn);
        put32(&cd, 0x02014b50u); put16(&cd, 20); put16(&cd, 20); put16(&cd, 0); put16(&cd, compress_it ? 8 : 0);
        put32(&cd, 0); put32(&cd, crc);
        put32(&cd, zip64 ? 0xFFFFFFFFu : (uint32_t)cn);
        put32(&cd, zip64 ? 0xFFFFFFFFu : (uint32_t)e[i].n);
        put16(&cd, (unsigned)nl); put16(&cd, zip64 ? 28 : 0); put16(&cd, 0); put16(&cd, 0); put16(&cd, 0);
        put32(&cd, 0);
        put32(&cd, zip64 ? 0xFFFFFFFFu : off);
        put(&cd, e[i].name, nl);
        if (zip64) {
            put16(&cd, 1); put16(&cd, 24); put64(&cd, e[i].n); put64(&cd, cn); put64(&cd, off);
        }
        free(c);
    }
    uint32_t cd_off = (uint32_t)z.n;
    put(&z, cd.p, cd.n);
    if (zip64) {
        uint64_t e64 = z.n;
        put32(&z, 0x06064b50u); put64(&z, 44); put16(&z, 45); put16(&z, 45); put32(&z, 0); put32(&z, 0);
        put64(&z, (uint64_t)n); put64(&z, (uint64_t)n); put64(&z, cd.n); put64(&z, cd_off);
        put32(&z, 0x07064b50u); put32(&z, 0); put64(&z, e64); put32(&z, 1);
    }
    put32(&z, 0x06054b50u); put16(&z, 0); put16(&z, 0);
    put16(&z, zip64 ? 0xFFFF : (unsigned)n); put16(&z, zip64 ? 0xFFFF : (unsigned)n);
    put32(&z, zip64 ? 0xFFFFFFFFu : (uint32_t)cd.n); put32(&z, zip64 ? 0xFFFFFFFFu : cd_off); put16(&z, 0);
    free(cd.p);
    return z;
}

buf make_zip(const zentry *e, int n, int compress_it) { return make_zip_ex(e, n, compress_it, 0); }

/* A state dict {"w": tensor of 2 F32 at storage offset `off` in a 4-element
 * storage}, as torch's protocol-2 pickle spells it. */
size_t make_pickle(unsigned char *p, int off, const char *mod, const char *name) {
    size_t n = 0;
#define B(s) (memcpy(p + n, s, sizeof s - 1), n += sizeof s - 1)
    B("\x80\x02}q\x00(X\x01\x00\x00\x00wq\x01");
    if (mod) {
        p[n++] = 'c';
        memcpy(p + n, mod, strlen(mod)), n += strlen(mod);
        p[n++] = '\n';
        memcpy(p + n, name, strlen(name)), n += strlen(name);
        p[n++] = '\n';
    } else {
        B("ctorch._utils\n_rebuild_tensor_v2\n");
    }
    B("q\x02((X\x07\x00\x00\x00storageq\x03" "ctorch\nFloatStorage\nq\x04X\x01\x00\x00\x00" "0X\x03\x00\x00\x00" "cpuK\x04tQK");
    p[n++] = (unsigned char)off;
    B("K\x02\x85K\x01\x85\x89" "ccollections\nOrderedDict\n)Rtq\x05Ru.");
#undef B
    return n;
}

const float STORAGE[4] = {1.5f, -2.0f, 3.25f, 4.0f};


void write_file(const char *dir, const char *name, const void *p, size_t n) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(p, 1, n, fp), n);
    fclose(fp);
}

void write_pt_shard(const char *dir, const char *file, char tensor) {
    unsigned char pkl[512];
    size_t n = make_pickle(pkl, 0, NULL, NULL);
    for (size_t i = 0; i + 5 < n; i++) /* the one tensor name, "w" */
        if (pkl[i] == 'X' && pkl[i + 1] == 1 && pkl[i + 5] == 'w') pkl[i + 5] = (unsigned char)tensor;
    zentry e[] = {{"archive/data.pkl", pkl, n}, {"archive/data/0", STORAGE, 16}};
    buf z = make_zip(e, 2, 0);
    write_file(dir, file, z.p, z.n);
    free(z.p);
}

void write_st_shard(const char *dir, const char *file, char tensor) {
    char header[80];
    int hl = snprintf(header, sizeof header, "{\"%c\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
                      tensor);
    unsigned char bytes[8 + sizeof header + 8];
    for (int i = 0; i < 8; i++) bytes[i] = (unsigned char)((uint64_t)hl >> (8 * i));
    memcpy(bytes + 8, header, (size_t)hl);
    memcpy(bytes + 8 + hl, STORAGE, 8);
    write_file(dir, file, bytes, 8 + (size_t)hl + 8);
}

int make_temp_dir(char *dir, size_t cap, const char *stem) {
    int n = snprintf(dir, cap, "/tmp/%s_XXXXXX", stem);
    return n > 0 && (size_t)n < cap && mkdtemp(dir) ? 0 : -1;
}

void remove_flat_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char p[512];
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
        closedir(d);
    }
    rmdir(dir);
}
