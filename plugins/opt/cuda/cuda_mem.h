/* cuda_mem.h: the device allocator's exact accounting, in plain C (no CUDA
 * headers), so CI tests it on a machine without a GPU.
 *
 * Every device allocation of the OPT engine goes through opt_cuda_mem_alloc
 * with a kind (weights, KV cache, workspace) and is returned with
 * opt_cuda_mem_free and the same kind and size. The counters say, in bytes,
 * what is held now per kind, in all, and the high-water mark since the last
 * opt_cuda_mem_reset_peak. The allocation itself is behind an interface:
 * cudaMalloc/cudaFree on a device (cuda_device.cu), a host mock in tests.
 */
#ifndef OPT_CUDA_MEM_H
#define OPT_CUDA_MEM_H

#include <stddef.h>
#include <stdint.h>

#include "benchctl/plugin.h"

typedef enum opt_cuda_mem_kind {
    OPT_CUDA_MEM_WEIGHTS = 0,
    OPT_CUDA_MEM_KV = 1,
    OPT_CUDA_MEM_WORKSPACE = 2,
    OPT_CUDA_MEM_KINDS = 3
} opt_cuda_mem_kind;

const char *opt_cuda_mem_kind_name(opt_cuda_mem_kind k); /* "weights", "kv_cache", "workspace" */

/* How bytes are obtained. alloc returns 0 and sets *p, or non-zero and writes
 * a reason (e.g. cudaGetErrorString) into msg[msg_len]. Required: both. */
typedef struct opt_cuda_alloc_iface {
    void *ctx;
    int (*alloc)(void *ctx, void **p, size_t bytes, char *msg, size_t msg_len);
    void (*free)(void *ctx, void *p);
} opt_cuda_alloc_iface;

typedef struct opt_cuda_mem {
    opt_cuda_alloc_iface io;
    size_t held[OPT_CUDA_MEM_KINDS]; /* bytes held now, per kind */
    size_t current;                  /* sum of held[] */
    size_t peak;                     /* high-water mark of current */
    int64_t n_allocs, n_frees;
    int64_t n_bad_frees;             /* frees of more than a kind holds (a bug; counted, never underflows) */
} opt_cuda_mem;

void opt_cuda_mem_init(opt_cuda_mem *m, const opt_cuda_alloc_iface *io);
/* Allocates bytes (> 0) of kind; what names the buffer in the error:
 * "device out of memory: cannot allocate N bytes for <what> (<kind>; M held): <reason>". */
bc_status opt_cuda_mem_alloc(opt_cuda_mem *m, opt_cuda_mem_kind kind, size_t bytes, void **p, const char *what,
                             bc_error *err);
/* Frees p (NULL is a no-op) that was allocated with kind and bytes. */
void opt_cuda_mem_free(opt_cuda_mem *m, opt_cuda_mem_kind kind, void *p, size_t bytes);
/* Starts a new high-water mark at the current use (at the start of a case). */
void opt_cuda_mem_reset_peak(opt_cuda_mem *m);

#endif
