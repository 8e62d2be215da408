/* ckpt_file.h: one checkpoint weights file, whatever its format: the
 * format-neutral tensor (name, dtype, shape, where its bytes are) and the
 * file that owns a table of them. The per-format openers (safetensors.h,
 * ptbin.h) fill an eng_ck_file; the sharded file set over them is
 * ckpt_set.h; a family's loader (ckpt_load.c) reads only these types
 * (docs/checkpoints.md).
 *
 * Tensor data is not copied: eng_ck_tensor.data points into the file's
 * mapping (or into a buffer the file owns, such as an inflated zip entry)
 * and may be unaligned, so read it with memcpy.
 */
#ifndef ENG_CKPT_FILE_H
#define ENG_CKPT_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "benchctl/plugin.h"

#define ENG_CK_MAX_DIMS 8

/* Every dtype a checkpoint format may name (the safetensors list, a superset
 * of what torch storages the pytorch reader accepts), so any valid file
 * parses; the loader (ckpt_load.c) accepts only F32, F16 and BF16. */
typedef enum eng_ck_dtype {
    ENG_CK_BOOL, ENG_CK_U8, ENG_CK_I8, ENG_CK_F8_E5M2, ENG_CK_F8_E4M3,
    ENG_CK_I16, ENG_CK_U16, ENG_CK_F16, ENG_CK_BF16,
    ENG_CK_I32, ENG_CK_U32, ENG_CK_F32,
    ENG_CK_I64, ENG_CK_U64, ENG_CK_F64
} eng_ck_dtype;

const char *eng_ck_dtype_name(eng_ck_dtype t);            /* "F32", ... ("?" if unknown) */
size_t eng_ck_dtype_size(eng_ck_dtype t);                 /* bytes per element (0 if unknown) */
int eng_ck_dtype_parse(const char *name, eng_ck_dtype *out); /* 1 when name is one of the names above */

/* One tensor of one file. */
typedef struct eng_ck_tensor {
    const char *name;  /* owned by the file */
    const char *path;  /* the file it lives in, for error messages */
    eng_ck_dtype dtype;
    int ndim;
    int64_t shape[ENG_CK_MAX_DIMS];
    uint64_t numel;
    const void *data;  /* nbytes bytes owned by the file; maybe unaligned */
    uint64_t nbytes;   /* numel * eng_ck_dtype_size(dtype) */
} eng_ck_tensor;

/* One weights file. Owns its path, its mapping (NULL when parsed from
 * caller memory), the tensor table (sorted by name, names unique), the name
 * strings and any buffers its opener made for tensor data. */
typedef struct eng_ck_file {
    char *path;
    void *map;
    size_t map_bytes;
    eng_ck_tensor *tensors;
    size_t n_tensors;
    char *names;   /* all tensor names, NUL-separated */
    void **owned;  /* [n_owned] buffers tensors point into (inflated zip entries) */
    size_t n_owned;
} eng_ck_file;

/* A format's opener: parses bytes[0, len) (a whole file) into f; tensor
 * data points into bytes (which must outlive f) or into f->owned. path is
 * for messages, every one of which names it. On failure f is left empty
 * (safe to close). Each is also its format's fuzz entry point. */
typedef bc_status (*eng_ck_parse_fn)(eng_ck_file *f, const char *path, const void *bytes, size_t len, bc_error *err);

/* For openers: zeroes f and copies path into it. */
bc_status eng_ck_file_begin(eng_ck_file *f, const char *path, bc_error *err);
/* For openers: allocates f's table of n tensors and names_bytes of names. */
bc_status eng_ck_file_alloc(eng_ck_file *f, size_t n, size_t names_bytes, bc_error *err);
/* For openers, last: sorts f's table by name; a name held twice is
 * BC_ERR_FORMAT naming the file and the tensor. */
bc_status eng_ck_file_sort(eng_ck_file *f, bc_error *err);

/* Maps path read-only (fileio.h's checks: a regular file of at most
 * ENG_WEIGHTS_MAX_BYTES) and parses it with parse; f owns the mapping. */
bc_status eng_ck_file_open(eng_ck_file *f, eng_ck_parse_fn parse, const char *path, bc_error *err);
/* The tensor called name, or NULL. */
const eng_ck_tensor *eng_ck_file_find(const eng_ck_file *f, const char *name);
/* Unmaps and frees; f is left zeroed. Safe on a zeroed or failed f. */
void eng_ck_file_close(eng_ck_file *f);

#endif
