/* ckpt_host.h: a checkpoint's tensors in host memory, as an eng_ck_set the
 * loader (ckpt_load.h) reads like a directory's: what an RL trainer hands
 * to inference, the weights in the checkpoint's layout and dtype (refit,
 * docs/engine.md). One owned buffer holds every tensor's bytes, each on a
 * 64-byte boundary; eng_ck_set_close frees it all.
 */
#ifndef ENG_CKPT_HOST_H
#define ENG_CKPT_HOST_H

#include "ckpt_set.h"

/* Building a host set: begin with the counts, add each tensor (its bytes
 * written by the caller at the pointer add returns), finish. */
typedef struct eng_ck_host_builder {
    eng_ck_file *file;   /* the set's one file (owned by the set once finished) */
    size_t names_cap, names_used, data_cap, data_used, n_cap;
    unsigned char *data; /* owned by file->owned[0] */
} eng_ck_host_builder;

/* Room for n tensors, names_bytes of names (NULs included) and data_bytes
 * of data (each tensor rounded up to 64 bytes); source names the set in
 * messages ("host weights (...)"). */
bc_status eng_ck_host_begin(eng_ck_host_builder *b, eng_ck_set *s, size_t n, size_t names_bytes, size_t data_bytes,
                            const char *source, bc_error *err);
/* The next tensor; returns where its numel * size bytes go (NULL: no room,
 * an internal error the caller's counts caused). */
void *eng_ck_host_add(eng_ck_host_builder *b, const char *name, eng_ck_dtype dtype, int ndim, const int64_t *shape);
/* Sorts the tensors and makes the set's index (a name twice: BC_ERR_FORMAT). */
bc_status eng_ck_host_finish(eng_ck_host_builder *b, eng_ck_set *s, bc_error *err);
/* Every tensor of src copied into host memory, as stored (dtype, shape). */
bc_status eng_ck_host_copy(eng_ck_set *out, const eng_ck_set *src, const char *source, bc_error *err);
/* s written as one safetensors file at path (its tensors in name order,
 * as stored): how a trainer's weights become a checkpoint the readers
 * open (refit_source = "checkpoint" reads them back). BC_ERR_IO naming
 * path. */
bc_status eng_ck_host_write_safetensors(const eng_ck_set *s, const char *path, bc_error *err);
/* The bytes of every tensor of s. */
uint64_t eng_ck_set_bytes(const eng_ck_set *s);

#endif
