/* ckpt_export.c: a host set of float32 tensors written as a checkpoint
 * directory (ckpt_export.h), for the refit tests.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ckpt_export.h"

void write_checkpoint(const char *dir, const eng_ck_set *set, const char *config) {
    char path[600], *hdr = malloc(1 << 20);
    assert_non_null(hdr);
    size_t at = (size_t)snprintf(hdr, 1 << 20, "{"), off = 0;
    for (size_t i = 0; i < set->n_tensors; i++) {
        const eng_ck_tensor *t = set->by_name[i];
        at += (size_t)snprintf(hdr + at, (1 << 20) - at, "%s\"%s\":{\"dtype\":\"F32\",\"shape\":[%lld", i ? "," : "",
                               t->name, (long long)t->shape[0]);
        if (t->ndim == 2) at += (size_t)snprintf(hdr + at, (1 << 20) - at, ",%lld", (long long)t->shape[1]);
        at += (size_t)snprintf(hdr + at, (1 << 20) - at, "],\"data_offsets\":[%zu,%zu]}", off, off + (size_t)t->nbytes);
        off += (size_t)t->nbytes;
    }
    at += (size_t)snprintf(hdr + at, (1 << 20) - at, "}");
    while (at % 8) hdr[at++] = ' ';
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    const uint64_t n = at;
    unsigned char len[8];
    for (int b = 0; b < 8; b++) len[b] = (unsigned char)(n >> (8 * b));
    assert_int_equal(fwrite(len, 1, 8, f), 8);
    assert_int_equal(fwrite(hdr, 1, at, f), at);
    for (size_t i = 0; i < set->n_tensors; i++)
        assert_int_equal(fwrite(set->by_name[i]->data, 1, set->by_name[i]->nbytes, f), set->by_name[i]->nbytes);
    assert_int_equal(fclose(f), 0);
    free(hdr);
    char buf[1 << 14];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *in = fopen(config, "rb"), *out = fopen(path, "wb");
    assert_non_null(in);
    assert_non_null(out);
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, in)) > 0) assert_int_equal(fwrite(buf, 1, k, out), k);
    fclose(in);
    assert_int_equal(fclose(out), 0);
}

void remove_checkpoint(const char *dir) {
    char path[600];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    remove(path);
    snprintf(path, sizeof path, "%s/config.json", dir);
    remove(path);
    remove(dir);
}

