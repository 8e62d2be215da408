/* ckpt_load.c: loading a checkpoint's tensors by name into a family's
 * weights (ckpt_load.h): dtype and shape checks, conversion to the run's
 * dtype, and the finite check, over an opened file set (ckpt_set.h).
 */
#include "ckpt_load.h"

#include "float_bits.h"
#include "precision.h"

#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>


/* The tensor called name, marked used; NULL if absent. */
const eng_ck_tensor *eng_ck_take(eng_ck_loader *c, const char *name) {
    size_t i = eng_ck_set_slot(c->set, name);
    if (i == c->set->n_tensors) return NULL;
    c->used[i] = 1;
    return c->set->by_name[i];
}

static const char *ck_dtype_ok(eng_ck_dtype t, eng_dtype *out) {
    switch (t) {
    case ENG_CK_F32: *out = ENG_F32; return "F32";
    case ENG_CK_F16: *out = ENG_F16; return "F16";
    case ENG_CK_BF16: *out = ENG_BF16; return "BF16";
    default: return NULL;
    }
}

float eng_ck_read_f32(const unsigned char *src, eng_dtype t, size_t i) {
    if (t == ENG_F32) {
        float f;
        memcpy(&f, src + 4 * i, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, src + 2 * i, 2);
    return t == ENG_F16 ? prec_f16_to_f32(h) : prec_bf16_to_f32(h);
}

/* Converts n elements src (type st, maybe unaligned) into dst (type dt),
 * through the formats' precision ops (precision.h). */
static void ck_convert(void *dst, eng_dtype dt, const void *src, eng_dtype st, size_t n) {
    eng_convert_values(dst, dt, src, st, n);
}

/* The index of the first element of src (n elements of type t) that is NaN
 * or infinite, or n when all are finite. Bits only: an all-ones exponent.
 * Blocks without an early exit, so the compiler vectorises the common case
 * (all finite): about 40-50 ms per 250 MB here (docs/checkpoints.md). */
#define CK_FINITE_BLOCK 4096
static size_t ck_first_nonfinite(const void *src, eng_dtype t, size_t n) {
    if (eng_dtype_is_int8(t)) return n; /* integers: always finite */
    const unsigned char *p = src;
    const size_t w = t == ENG_F32 ? 4 : 2;
    const uint32_t mask = t == ENG_F32 ? 0x7f800000u : t == ENG_F16 ? 0x7c00u : 0x7f80u;
    for (size_t b0 = 0; b0 < n; b0 += CK_FINITE_BLOCK) {
        const size_t e = n - b0 < CK_FINITE_BLOCK ? n : b0 + CK_FINITE_BLOCK;
        unsigned bad = 0;
        if (w == 4) {
            for (size_t i = b0; i < e; i++) {
                uint32_t u;
                memcpy(&u, p + 4 * i, 4);
                bad |= (u & mask) == mask;
            }
        } else {
            for (size_t i = b0; i < e; i++) {
                uint16_t h;
                memcpy(&h, p + 2 * i, 2);
                bad |= (h & mask) == mask;
            }
        }
        if (!bad) continue;
        for (size_t i = b0; i < e; i++) {
            uint32_t u = 0;
            if (w == 4) memcpy(&u, p + 4 * i, 4);
            else {
                uint16_t h;
                memcpy(&h, p + 2 * i, 2);
                u = h;
            }
            if ((u & mask) == mask) return i;
        }
    }
    return n;
}

/* Weights must be finite, in the file and after conversion to the run's
 * dtype (an fp32 weight above 65504 becomes inf in float16). cols is 1 for
 * a vector. */
static bc_status ck_check_finite(const eng_ck_tensor *t, const char *prefix, const char *suffix, const void *src,
                                 eng_dtype sd, const void *dst, eng_dtype dd, size_t n, size_t cols, bc_error *err) {
    size_t i = ck_first_nonfinite(src, sd, n);
    const char *why = "in the file";
    if (i == n) {
        i = ck_first_nonfinite(dst, dd, n);
        why = dd == ENG_F16 ? "after conversion to float16 (its largest value is 65504)" : "after conversion";
    }
    if (i == n) return BC_OK;
    const float v = eng_ck_read_f32(src, sd, i);
    char at[64];
    if (cols > 1) snprintf(at, sizeof at, "[%zu, %zu]", i / cols, i % cols);
    else snprintf(at, sizeof at, "[%zu]", i);
    return bc_error_set(err, BC_ERR_FORMAT, "%s: tensor '%s%s' element %s is %g %s; the weights must be finite", t->path,
                        prefix, suffix, at, (double)v, why);
}

static void ck_shape_str(char *buf, size_t cap, int ndim, const int64_t *shape) {
    size_t at = (size_t)snprintf(buf, cap, "[");
    for (int d = 0; d < ndim && at < cap; d++)
        at += (size_t)snprintf(buf + at, cap - at, "%s%lld", d ? ", " : "", (long long)shape[d]);
    if (at < cap) snprintf(buf + at, cap - at, "]");
}

/* Finds prefix + suffix, checks dtype and shape [d0] or [d0, d1] (d1 < 0:
 * a vector), and returns it in *out. */
bc_status eng_ck_get(eng_ck_loader *c, const char *prefix, const char *suffix, int d0, int d1, const eng_ck_tensor **out,
                        eng_dtype *src_dtype, bc_error *err) {
    char name[256];
    snprintf(name, sizeof name, "%s%s", prefix, suffix);
    const eng_ck_tensor *t = eng_ck_take(c, name);
    if (!t) return bc_error_set(err, BC_ERR_FORMAT, "%s: tensor '%s' is missing", c->set->source, name);
    if (!ck_dtype_ok(t->dtype, src_dtype))
        return bc_error_set(err, BC_ERR_FORMAT, "%s: tensor '%s' has dtype %s; expected F32, F16 or BF16", t->path, name,
                            eng_ck_dtype_name(t->dtype));
    int64_t want[2] = {d0, d1};
    int want_nd = d1 < 0 ? 1 : 2;
    if (t->ndim != want_nd || t->shape[0] != want[0] || (want_nd == 2 && t->shape[1] != want[1])) {
        char got_s[128], want_s[64];
        ck_shape_str(got_s, sizeof got_s, t->ndim, t->shape);
        ck_shape_str(want_s, sizeof want_s, want_nd, want);
        return bc_error_set(err, BC_ERR_FORMAT, "%s: tensor '%s' has shape %s; config.json needs %s", t->path, name,
                            got_s, want_s);
    }
    *out = t;
    return BC_OK;
}

bc_status eng_ck_matrix(eng_ck_loader *c, const char *suffix, eng_matrix *m, int rows, int cols, bc_error *err) {
    const eng_ck_tensor *t;
    eng_dtype sd;
    bc_status st = eng_ck_get(c, c->prefix, suffix, rows, cols, &t, &sd, err);
    if (st != BC_OK || c->check_only) return st;
    if (!m->data || m->rows != rows || m->cols != cols || m->dtype != c->dtype)
        return bc_error_set(err, BC_ERR_INTERNAL, "%s: tensor '%s%s': the weights hold a [%d, %d] %s matrix",
                            t->path, c->prefix, suffix, m->rows, m->cols, eng_dtype_name(m->dtype));
    eng_convert_matrix(m->data, c->dtype, t->data, sd, (size_t)rows, (size_t)cols);
    return ck_check_finite(t, c->prefix, suffix, t->data, sd, m->data, c->dtype, (size_t)rows * (size_t)cols,
                           (size_t)cols, err);
}

bc_status eng_ck_vector(eng_ck_loader *c, const char *suffix, float *v, int n, bc_error *err) {
    const eng_ck_tensor *t;
    eng_dtype sd;
    bc_status st = eng_ck_get(c, c->prefix, suffix, n, -1, &t, &sd, err);
    if (st != BC_OK || c->check_only) return st;
    if (!v) return bc_error_set(err, BC_ERR_INTERNAL, "%s: tensor '%s%s': no fp32 slot in the weights", t->path,
                                c->prefix, suffix);
    ck_convert(v, ENG_F32, t->data, sd, (size_t)n);
    return ck_check_finite(t, c->prefix, suffix, t->data, sd, v, ENG_F32, (size_t)n, 1, err);
}

bc_status eng_ck_check_files(const char *dir, bc_error *err) {
    struct stat sb;
    if (stat(dir, &sb) != 0) {
        const int e = errno;
        if (e != ENOENT && e != ENOTDIR) return bc_error_set(err, BC_ERR_IO, "checkpoint %s: %s", dir, strerror(e));
        bc_error_set(err, BC_ERR_NOT_FOUND, "checkpoint %s: no such directory", dir);
        return bc_error_hint(err, "checkpoint names a local Hugging Face model directory (config.json + weights)");
    }
    if (!S_ISDIR(sb.st_mode)) {
        bc_error_set(err, BC_ERR_NOT_FOUND, "checkpoint %s: not a directory", dir);
        return bc_error_hint(err, "checkpoint names the model's directory, not one of its files");
    }
    if (!eng_ck_dir_has(dir, "config.json")) {
        bc_error_set(err, BC_ERR_NOT_FOUND, "checkpoint %s: no config.json in the directory", dir);
        return bc_error_hint(err, "a Hugging Face checkpoint directory holds config.json next to its weights");
    }
    if (eng_ck_format_of_dir(dir)) return BC_OK;
    bc_error_set(err, BC_ERR_NOT_FOUND,
                 "checkpoint %s: no weights (model.safetensors, a sharded model.safetensors.index.json, or "
                 "pytorch_model.bin)",
                 dir);
    return bc_error_hint(err, "download the weights next to config.json (docs/checkpoints.md)");
}

bc_status eng_ck_loader_over(eng_ck_loader *c, const eng_ck_set *set, eng_dtype dtype, int check_only, bc_error *err) {
    *c = (eng_ck_loader){.set = set, .dtype = dtype, .check_only = check_only,
                         .used = calloc(set->n_tensors ? set->n_tensors : 1, 1)};
    if (!c->used) return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", set->source);
    return BC_OK;
}

void eng_ck_loader_end(eng_ck_loader *c) {
    free(c->used);
    c->used = NULL;
}

bc_status eng_ck_loader_open(eng_ck_loader *c, eng_ck_set *set, const char *dir, eng_dtype dtype, int check_only,
                             bc_error *err) {
    memset(c, 0, sizeof *c);
    bc_status st = eng_ck_set_open_dir(set, dir, err);
    if (st != BC_OK) return st;
    if ((st = eng_ck_loader_over(c, set, dtype, check_only, err)) != BC_OK) eng_ck_set_close(set);
    return st;
}

void eng_ck_loader_close(eng_ck_loader *c, eng_ck_set *set) {
    eng_ck_loader_end(c);
    eng_ck_set_close(set);
}

bc_status eng_ck_all_used(const eng_ck_loader *c, const char *what, bc_error *err) {
    /* A tensor not used usually means a config.json that does not match the
     * weights (more layers, say): refuse rather than ignore it. */
    for (size_t i = 0; i < c->set->n_tensors; i++)
        if (!c->used[i])
            return bc_error_set(err, BC_ERR_FORMAT, "%s: tensor '%s' is not part of the %s model config.json describes",
                                c->set->by_name[i]->path, c->set->by_name[i]->name, what);
    return BC_OK;
}
