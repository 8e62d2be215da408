/* safetensors.h: a strict reader for Hugging Face .safetensors files, single
 * or sharded (model.safetensors.index.json), memory-mapped.
 *
 * File layout (https://github.com/huggingface/safetensors):
 *   [8 bytes]  N, the JSON header's length, little-endian u64
 *   [N bytes]  JSON object: "name": {"dtype": "F32", "shape": [..],
 *              "data_offsets": [begin, end]}, plus an optional
 *              "__metadata__": {string: string}
 *   [rest]     the data section; offsets are relative to its start
 *
 * The header is untrusted input. opt_st_parse refuses, with a message that
 * names the file and (where there is one) the tensor: a file shorter than 8
 * bytes, N > OPT_ST_MAX_HEADER_BYTES or beyond the end of the file, bad JSON
 * or duplicate keys, a root that is not an object, an unknown dtype, a shape
 * that is not a list of non-negative integers (at most OPT_ST_MAX_DIMS), data
 * offsets that are not [begin <= end] inside the data section, a byte count
 * that is not numel * element size, tensors that overlap or leave holes in the
 * data section, and a __metadata__ that is not an object of strings.
 *
 * Tensor data is not copied: opt_st_tensor.data points into the mapping and
 * may be unaligned, so read it with memcpy.
 */
#ifndef OPT_SAFETENSORS_H
#define OPT_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "benchctl/plugin.h"

#define OPT_ST_MAX_HEADER_BYTES ((uint64_t)100 * 1000 * 1000) /* 100 MB */
#define OPT_ST_MAX_DIMS 8
#define OPT_ST_MAX_SHARDS 4096 /* files one index may name (each is an mmap) */

/* Every dtype the safetensors format defines, so any valid file parses; the
 * checkpoint loader accepts only F32, F16 and BF16. */
typedef enum opt_st_dtype {
    OPT_ST_BOOL, OPT_ST_U8, OPT_ST_I8, OPT_ST_F8_E5M2, OPT_ST_F8_E4M3,
    OPT_ST_I16, OPT_ST_U16, OPT_ST_F16, OPT_ST_BF16,
    OPT_ST_I32, OPT_ST_U32, OPT_ST_F32,
    OPT_ST_I64, OPT_ST_U64, OPT_ST_F64
} opt_st_dtype;

const char *opt_st_dtype_name(opt_st_dtype t); /* "F32", ... */
size_t opt_st_dtype_size(opt_st_dtype t);      /* bytes per element */

typedef struct opt_st_tensor {
    const char *name;      /* owned by the file (a copy of the JSON key) */
    const char *path;      /* the file it lives in, for error messages */
    opt_st_dtype dtype;
    int ndim;
    int64_t shape[OPT_ST_MAX_DIMS];
    uint64_t numel;
    const void *data;      /* nbytes bytes inside the mapping; maybe unaligned */
    uint64_t nbytes;
} opt_st_tensor;

/* One .safetensors file. Owns its mapping (or nothing, for opt_st_parse on
 * caller memory), its tensor table (sorted by name) and the name strings. */
typedef struct opt_st_file {
    char *path;
    void *map;             /* NULL after opt_st_parse; the mmap otherwise */
    size_t map_bytes;
    uint64_t header_bytes; /* N */
    opt_st_tensor *tensors;
    size_t n_tensors;
    char *names;           /* all tensor names, NUL-separated */
} opt_st_file;

/* Parses bytes[0, len) (a whole file) into f; tensor data points into bytes,
 * which must outlive f. path is used in messages only. On failure f is left
 * empty (safe to close). This is the fuzz target's entry point. */
bc_status opt_st_parse(opt_st_file *f, const char *path, const void *bytes, size_t len, bc_error *err);

/* mmaps path read-only and parses it. */
/* Maps path read-only (MAP_PRIVATE); *map is NULL and *len 0 for an empty
 * file. The caller owns the mapping and munmaps it. Shared with ptbin.c. */
bc_status opt_map_readonly(const char *path, void **map, size_t *len, bc_error *err);

bc_status opt_st_open(opt_st_file *f, const char *path, bc_error *err);
/* The tensor called name, or NULL. */
const opt_st_tensor *opt_st_find(const opt_st_file *f, const char *name);
/* Unmaps and frees; f is left zeroed. Safe on a zeroed or failed f. */
void opt_st_close(opt_st_file *f);

/* A checkpoint's tensors: model.safetensors, or the shards named by
 * model.safetensors.index.json's weight_map. Every tensor name is unique
 * across the set; each weight_map entry must be in the file it names. The
 * index file is at most OPT_ST_MAX_HEADER_BYTES and names at most
 * OPT_ST_MAX_SHARDS files. */
typedef struct opt_st_set {
    opt_st_file *files;
    size_t n_files;
    const opt_st_tensor **by_name; /* every tensor of every file, sorted by name */
    size_t n_tensors;
    char *source;                  /* the file the set came from, for messages */
} opt_st_set;

/* Opens dir/model.safetensors.index.json if it exists, else
 * dir/model.safetensors. */
bc_status opt_st_set_open_dir(opt_st_set *s, const char *dir, bc_error *err);
const opt_st_tensor *opt_st_set_find(const opt_st_set *s, const char *name);
void opt_st_set_close(opt_st_set *s);

#endif
