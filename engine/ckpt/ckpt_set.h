/* ckpt_set.h: a checkpoint directory's tensors, single file or sharded,
 * whatever the format (docs/checkpoints.md). One reader for every format:
 *
 *   - the format: safetensors when the directory has model.safetensors or
 *     model.safetensors.index.json, else pytorch when it has
 *     pytorch_model.bin or pytorch_model.bin.index.json;
 *   - the files: the format's index when present (a regular file of at most
 *     ENG_INDEX_JSON_MAX_BYTES, fileio.h), else its single file. The index's
 *     "weight_map" is an object of tensor name -> plain file name in the
 *     directory (no '/', '.' or '..'); its distinct files, at most
 *     ENG_CK_MAX_SHARDS, are opened in byte order of their names;
 *   - the tensors: every name unique across the files ("is in both"); every
 *     weight_map entry in the file it names; every tensor of every shard
 *     listed in weight_map.
 * Errors are one line naming the file (the index, or the shard) and the
 * tensor: BC_ERR_FORMAT for what the files say, BC_ERR_IO for a file that
 * cannot be opened or is not there, BC_ERR_NOMEM.
 */
#ifndef ENG_CKPT_SET_H
#define ENG_CKPT_SET_H

#include "ckpt_file.h"

#define ENG_CK_MAX_SHARDS 4096 /* files one index may name (each is an mmap) */

/* A checkpoint format: its file names and its opener. */
typedef struct eng_ck_format {
    const char *name;        /* "safetensors", "pytorch" */
    const char *single_file; /* "model.safetensors" */
    const char *index_file;  /* "model.safetensors.index.json" */
    eng_ck_parse_fn parse;
} eng_ck_format;

extern const eng_ck_format eng_ck_safetensors; /* safetensors.h */
extern const eng_ck_format eng_ck_pytorch;     /* ptbin.h */

typedef struct eng_ck_set {
    const eng_ck_format *format;
    eng_ck_file *files;             /* [n_files], sorted by file name */
    size_t n_files;
    const eng_ck_tensor **by_name;  /* [n_tensors]: every tensor of every file, sorted by name */
    size_t n_tensors;
    char *source;                   /* the index or the single file, for messages */
} eng_ck_set;

/* 1 when dir/name exists (as anything; opening it applies fileio.h's checks). */
int eng_ck_dir_has(const char *dir, const char *name);
/* The format whose index or single file dir holds (the order above), or
 * NULL. Reads no file. */
const eng_ck_format *eng_ck_format_of_dir(const char *dir);

/* Opens dir's tensors in the format the directory holds (above); a
 * directory with no weights file is BC_ERR_IO naming dir and the four
 * names looked for. On failure s is left empty (safe to close). */
bc_status eng_ck_set_open_dir(eng_ck_set *s, const char *dir, bc_error *err);
/* The same in a given format: its index when present, else its single file. */
bc_status eng_ck_set_open_format(eng_ck_set *s, const eng_ck_format *format, const char *dir, bc_error *err);
/* The tensor called name, or NULL. */
const eng_ck_tensor *eng_ck_set_find(const eng_ck_set *s, const char *name);
/* Its index in s->by_name, or s->n_tensors when there is none. */
size_t eng_ck_set_slot(const eng_ck_set *s, const char *name);
/* Closes every file; s is left zeroed. Safe on a zeroed or failed s. */
void eng_ck_set_close(eng_ck_set *s);

#endif
