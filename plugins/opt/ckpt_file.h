/* ckpt_file.h: one checkpoint weights file, whatever its format: the
 * format-neutral tensor (name, dtype, shape, where its bytes are) and the
 * file that owns a table of them. The per-format openers (safetensors.h,
 * ptbin.h) fill an opt_ck_file; the sharded file set over them is
 * ckpt_set.h; the OPT loader (checkpoint.c) reads only these types
 * (docs/checkpoints.md).
 *
 * Tensor data is not copied: opt_ck_tensor.data points into the file's
 * mapping (or into a buffer the file owns, such as an inflated zip entry)
 * and may be unaligned, so read it with memcpy.
 */
#ifndef OPT_CKPT_FILE_H
#define OPT_CKPT_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "benchctl/plugin.h"

#define OPT_CK_MAX_DIMS 8

/* Every dtype a checkpoint format may name (the safetensors list, a superset
 * of what torch storages the pytorch reader accepts), so any valid file
 * parses; the OPT loader accepts only F32, F16 and BF16. */
typedef enum opt_ck_dtype {
    OPT_CK_BOOL, OPT_CK_U8, OPT_CK_I8, OPT_CK_F8_E5M2, OPT_CK_F8_E4M3,
    OPT_CK_I16, OPT_CK_U16, OPT_CK_F16, OPT_CK_BF16,
    OPT_CK_I32, OPT_CK_U32, OPT_CK_F32,
    OPT_CK_I64, OPT_CK_U64, OPT_CK_F64
} opt_ck_dtype;

const char *opt_ck_dtype_name(opt_ck_dtype t);            /* "F32", ... ("?" if unknown) */
size_t opt_ck_dtype_size(opt_ck_dtype t);                 /* bytes per element (0 if unknown) */
int opt_ck_dtype_parse(const char *name, opt_ck_dtype *out); /* 1 when name is one of the names above */

/* One tensor of one file. */
typedef struct opt_ck_tensor {
    const char *name;  /* owned by the file */
    const char *path;  /* the file it lives in, for error messages */
    opt_ck_dtype dtype;
    int ndim;
    int64_t shape[OPT_CK_MAX_DIMS];
    uint64_t numel;
    const void *data;  /* nbytes bytes owned by the file; maybe unaligned */
    uint64_t nbytes;   /* numel * opt_ck_dtype_size(dtype) */
} opt_ck_tensor;

/* One weights file. Owns its path, its mapping (NULL when parsed from
 * caller memory), the tensor table (sorted by name, names unique), the name
 * strings and any buffers its opener made for tensor data. */
typedef struct opt_ck_file {
    char *path;
    void *map;
    size_t map_bytes;
    opt_ck_tensor *tensors;
    size_t n_tensors;
    char *names;   /* all tensor names, NUL-separated */
    void **owned;  /* [n_owned] buffers tensors point into (inflated zip entries) */
    size_t n_owned;
} opt_ck_file;

/* A format's opener: parses bytes[0, len) (a whole file) into f; tensor
 * data points into bytes (which must outlive f) or into f->owned. path is
 * for messages, every one of which names it. On failure f is left empty
 * (safe to close). Each is also its format's fuzz entry point. */
typedef bc_status (*opt_ck_parse_fn)(opt_ck_file *f, const char *path, const void *bytes, size_t len, bc_error *err);

/* For openers: zeroes f and copies path into it. */
bc_status opt_ck_file_begin(opt_ck_file *f, const char *path, bc_error *err);
/* For openers: allocates f's table of n tensors and names_bytes of names. */
bc_status opt_ck_file_alloc(opt_ck_file *f, size_t n, size_t names_bytes, bc_error *err);
/* For openers, last: sorts f's table by name; a name held twice is
 * BC_ERR_FORMAT naming the file and the tensor. */
bc_status opt_ck_file_sort(opt_ck_file *f, bc_error *err);

/* Maps path read-only (fileio.h's checks: a regular file of at most
 * OPT_WEIGHTS_MAX_BYTES) and parses it with parse; f owns the mapping. */
bc_status opt_ck_file_open(opt_ck_file *f, opt_ck_parse_fn parse, const char *path, bc_error *err);
/* The tensor called name, or NULL. */
const opt_ck_tensor *opt_ck_file_find(const opt_ck_file *f, const char *name);
/* Unmaps and frees; f is left zeroed. Safe on a zeroed or failed f. */
void opt_ck_file_close(opt_ck_file *f);

#endif
