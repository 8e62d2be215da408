/* ckpt_load.h: a family's checkpoint tensors, loaded by name (ckpt_load.c):
 * a loader over an opened file set marks each tensor it takes, checks its
 * dtype (F32, F16, BF16) and shape against what config.json needs, converts
 * it to the run's dtype (matrices) or fp32 (vectors) and refuses a weight
 * that is not finite, in the file or after conversion. Errors name the file
 * and the tensor. A family's loader walks its tensor names, then refuses
 * any tensor left unused.
 */
#ifndef ENG_CKPT_LOAD_H
#define ENG_CKPT_LOAD_H

#include "ckpt_set.h"
#include "weights.h"

typedef struct eng_ck_loader {
    const eng_ck_set *set;
    const char *prefix; /* "model.decoder." or "decoder." */
    eng_dtype dtype;    /* the run's dtype for matrices */
    int check_only;     /* 1: check names, dtypes and shapes; convert nothing */
    unsigned char *used; /* [set->n_tensors]: 1 once loaded, to find unexpected ones */
} eng_ck_loader;

/* Opens dir's tensors into set and c (prefix unset), marking none used;
 * check_only: names, dtypes and shapes are checked, nothing converted. */
bc_status eng_ck_loader_open(eng_ck_loader *c, eng_ck_set *set, const char *dir, eng_dtype dtype, int check_only,
                             bc_error *err);
/* A loader over a set already open (a directory's, or host memory's,
 * ckpt_host.h), marking none used; eng_ck_loader_end frees its marks (the
 * set stays the caller's). */
bc_status eng_ck_loader_over(eng_ck_loader *c, const eng_ck_set *set, eng_dtype dtype, int check_only, bc_error *err);
void eng_ck_loader_end(eng_ck_loader *c);
/* Frees what eng_ck_loader_open opened. */
void eng_ck_loader_close(eng_ck_loader *c, eng_ck_set *set);
/* The first tensor left unused, refused as not part of the `what` model
 * config.json describes; BC_OK when every tensor was taken. */
bc_status eng_ck_all_used(const eng_ck_loader *c, const char *what, bc_error *err);

/* The tensor called name, marked used; NULL if absent. */
const eng_ck_tensor *eng_ck_take(eng_ck_loader *c, const char *name);
/* Element i of src (F32, F16 or BF16) as a float. */
float eng_ck_read_f32(const unsigned char *src, eng_dtype t, size_t i);
/* Finds prefix + suffix, checks its dtype and shape [d0] (d1 < 0) or
 * [d0, d1], and returns it with its dtype. */
bc_status eng_ck_get(eng_ck_loader *c, const char *prefix, const char *suffix, int d0, int d1,
                     const eng_ck_tensor **out, eng_dtype *src_dtype, bc_error *err);
/* c->prefix + suffix into the matrix m [rows, cols] in c->dtype (checked
 * only with check_only). */
bc_status eng_ck_matrix(eng_ck_loader *c, const char *suffix, eng_matrix *m, int rows, int cols, bc_error *err);
/* c->prefix + suffix into the fp32 vector v[n]. */
bc_status eng_ck_vector(eng_ck_loader *c, const char *suffix, float *v, int n, bc_error *err);

/* Quick and without reading any file: dir is a directory holding
 * config.json and weights (model.safetensors, model.safetensors.index.json,
 * pytorch_model.bin or pytorch_model.bin.index.json). BC_ERR_NOT_FOUND
 * naming what is missing (with a hint), BC_ERR_IO when dir cannot be read. */
bc_status eng_ck_check_files(const char *dir, bc_error *err);

#endif
