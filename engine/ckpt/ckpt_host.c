/* ckpt_host.c: a checkpoint's tensors in host memory (ckpt_host.h): one
 * file of the set, its table and names, one data buffer it owns.
 */
#define _POSIX_C_SOURCE 200809L
#include "ckpt_host.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t align64(size_t n) { return (n + 63) / 64 * 64; }

bc_status eng_ck_host_begin(eng_ck_host_builder *b, eng_ck_set *s, size_t n, size_t names_bytes, size_t data_bytes,
                            const char *source, bc_error *err) {
    memset(b, 0, sizeof *b);
    memset(s, 0, sizeof *s);
    s->files = calloc(1, sizeof *s->files);
    s->source = strdup(source);
    if (!s->files || !s->source) {
        eng_ck_set_close(s);
        return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", source);
    }
    s->n_files = 1;
    eng_ck_file *f = &s->files[0];
    bc_status st = eng_ck_file_begin(f, source, err);
    if (st == BC_OK) st = eng_ck_file_alloc(f, n, names_bytes, err);
    if (st == BC_OK) {
        f->owned = calloc(1, sizeof *f->owned);
        b->data = aligned_alloc(64, align64(data_bytes ? data_bytes : 1));
        if (!f->owned || !b->data) {
            free(b->data);
            st = bc_error_set(err, BC_ERR_NOMEM, "%s: no memory for %zu bytes of weights", source, data_bytes);
        } else {
            f->owned[0] = b->data;
            f->n_owned = 1;
        }
    }
    if (st != BC_OK) {
        eng_ck_set_close(s);
        return st;
    }
    b->file = f;
    b->names_cap = names_bytes;
    b->data_cap = align64(data_bytes ? data_bytes : 1);
    b->n_cap = n;
    return BC_OK;
}

void *eng_ck_host_add(eng_ck_host_builder *b, const char *name, eng_ck_dtype dtype, int ndim, const int64_t *shape) {
    eng_ck_file *f = b->file;
    const size_t len = strlen(name) + 1;
    if (f->n_tensors == b->n_cap || b->names_used + len > b->names_cap || ndim < 1 || ndim > ENG_CK_MAX_DIMS)
        return NULL;
    uint64_t numel = 1;
    for (int d = 0; d < ndim; d++) numel *= (uint64_t)shape[d];
    const uint64_t nbytes = numel * eng_ck_dtype_size(dtype);
    if (b->data_used + nbytes > b->data_cap) return NULL;
    const size_t off = b->data_used;
    eng_ck_tensor *t = &f->tensors[f->n_tensors++];
    char *nm = f->names + b->names_used;
    memcpy(nm, name, len);
    b->names_used += len;
    *t = (eng_ck_tensor){.name = nm, .path = f->path, .dtype = dtype, .ndim = ndim, .numel = numel, .nbytes = nbytes,
                         .data = b->data + off};
    for (int d = 0; d < ndim; d++) t->shape[d] = shape[d];
    b->data_used += align64((size_t)nbytes);
    return b->data + off;
}

bc_status eng_ck_host_finish(eng_ck_host_builder *b, eng_ck_set *s, bc_error *err) {
    eng_ck_file *f = b->file;
    bc_status st = eng_ck_file_sort(f, err);
    if (st == BC_OK) {
        s->by_name = malloc((f->n_tensors ? f->n_tensors : 1) * sizeof *s->by_name);
        if (!s->by_name) st = bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", s->source);
    }
    if (st != BC_OK) {
        eng_ck_set_close(s);
        return st;
    }
    for (size_t i = 0; i < f->n_tensors; i++) s->by_name[i] = &f->tensors[i];
    s->n_tensors = f->n_tensors;
    return BC_OK;
}

bc_status eng_ck_host_copy(eng_ck_set *out, const eng_ck_set *src, const char *source, bc_error *err) {
    size_t names = 0, data = 0;
    for (size_t i = 0; i < src->n_tensors; i++) {
        names += strlen(src->by_name[i]->name) + 1;
        data += align64((size_t)src->by_name[i]->nbytes);
    }
    eng_ck_host_builder b;
    bc_status st = eng_ck_host_begin(&b, out, src->n_tensors, names, data, source, err);
    if (st != BC_OK) return st;
    for (size_t i = 0; i < src->n_tensors; i++) {
        const eng_ck_tensor *t = src->by_name[i];
        void *dst = eng_ck_host_add(&b, t->name, t->dtype, t->ndim > 0 ? t->ndim : 1, t->ndim > 0 ? t->shape : (int64_t[]){1});
        if (!dst) {
            eng_ck_set_close(out);
            return bc_error_set(err, BC_ERR_INTERNAL, "%s: tensor '%s' does not fit the host copy", source, t->name);
        }
        memcpy(dst, t->data, (size_t)t->nbytes);
    }
    return eng_ck_host_finish(&b, out, err);
}

uint64_t eng_ck_set_bytes(const eng_ck_set *s) {
    uint64_t n = 0;
    for (size_t i = 0; i < s->n_tensors; i++) n += s->by_name[i]->nbytes;
    return n;
}

bc_status eng_ck_host_write_safetensors(const eng_ck_set *s, const char *path, bc_error *err) {
    size_t cap = 64 + s->n_tensors * 64, at = 0;
    for (size_t i = 0; i < s->n_tensors; i++) cap += strlen(s->by_name[i]->name) + 24 * (size_t)s->by_name[i]->ndim;
    char *hdr = malloc(cap);
    if (!hdr) return bc_error_set(err, BC_ERR_NOMEM, "%s: no memory for the header", path);
    uint64_t off = 0;
    at += (size_t)snprintf(hdr + at, cap - at, "{");
    for (size_t i = 0; i < s->n_tensors && at < cap; i++) {
        const eng_ck_tensor *t = s->by_name[i];
        at += (size_t)snprintf(hdr + at, cap - at, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[", i ? "," : "", t->name,
                               eng_ck_dtype_name(t->dtype));
        for (int d = 0; d < t->ndim && at < cap; d++)
            at += (size_t)snprintf(hdr + at, cap - at, "%s%lld", d ? "," : "", (long long)t->shape[d]);
        if (at < cap)
            at += (size_t)snprintf(hdr + at, cap - at, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                                   (unsigned long long)(off + t->nbytes));
        off += t->nbytes;
    }
    if (at < cap) at += (size_t)snprintf(hdr + at, cap - at, "}");
    while (at < cap && at % 8) hdr[at++] = ' ';
    if (at >= cap) {
        free(hdr);
        return bc_error_set(err, BC_ERR_INTERNAL, "%s: header larger than planned", path);
    }
    FILE *f = fopen(path, "wb");
    if (!f) {
        free(hdr);
        return bc_error_set(err, BC_ERR_IO, "%s: %s", path, strerror(errno));
    }
    unsigned char len[8];
    for (int b = 0; b < 8; b++) len[b] = (unsigned char)((uint64_t)at >> (8 * b));
    int ok = fwrite(len, 1, 8, f) == 8 && fwrite(hdr, 1, at, f) == at;
    for (size_t i = 0; ok && i < s->n_tensors; i++)
        ok = fwrite(s->by_name[i]->data, 1, (size_t)s->by_name[i]->nbytes, f) == (size_t)s->by_name[i]->nbytes;
    free(hdr);
    if (fclose(f) != 0) ok = 0;
    return ok ? BC_OK : bc_error_set(err, BC_ERR_IO, "%s: write failed: %s", path, strerror(errno));
}
