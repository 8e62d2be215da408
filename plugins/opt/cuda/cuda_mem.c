/* cuda_mem.c: the device allocator's accounting (see cuda_mem.h). */
#include "cuda_mem.h"

#include <string.h>

const char *opt_cuda_mem_kind_name(opt_cuda_mem_kind k) {
    switch (k) {
    case OPT_CUDA_MEM_WEIGHTS: return "weights";
    case OPT_CUDA_MEM_KV: return "kv_cache";
    case OPT_CUDA_MEM_WORKSPACE: return "workspace";
    default: return "?";
    }
}

void opt_cuda_mem_init(opt_cuda_mem *m, const opt_cuda_alloc_iface *io) {
    memset(m, 0, sizeof *m);
    m->io = *io;
}

bc_status opt_cuda_mem_alloc(opt_cuda_mem *m, opt_cuda_mem_kind kind, size_t bytes, void **p, const char *what,
                             bc_error *err) {
    *p = NULL;
    if ((unsigned)kind >= OPT_CUDA_MEM_KINDS || bytes == 0)
        return bc_error_set(err, BC_ERR_INTERNAL, "device allocation of %zu bytes for %s: bad kind %d or size", bytes,
                            what, (int)kind);
    char msg[160] = "";
    if (m->io.alloc(m->io.ctx, p, bytes, msg, sizeof msg) != 0 || !*p) {
        *p = NULL;
        return bc_error_set(err, BC_ERR_NOMEM, "device out of memory: cannot allocate %zu bytes for %s (%s; %zu held): %s",
                            bytes, what, opt_cuda_mem_kind_name(kind), m->current, msg[0] ? msg : "no reason given");
    }
    m->held[kind] += bytes;
    m->current += bytes;
    if (m->current > m->peak) m->peak = m->current;
    m->n_allocs++;
    return BC_OK;
}

void opt_cuda_mem_free(opt_cuda_mem *m, opt_cuda_mem_kind kind, void *p, size_t bytes) {
    if (!p) return;
    m->io.free(m->io.ctx, p);
    m->n_frees++;
    if ((unsigned)kind >= OPT_CUDA_MEM_KINDS || bytes > m->held[kind]) {
        m->n_bad_frees++;
        if ((unsigned)kind < OPT_CUDA_MEM_KINDS) {
            m->current -= m->held[kind];
            m->held[kind] = 0;
        }
        return;
    }
    m->held[kind] -= bytes;
    m->current -= bytes;
}

void opt_cuda_mem_reset_peak(opt_cuda_mem *m) { m->peak = m->current; }
