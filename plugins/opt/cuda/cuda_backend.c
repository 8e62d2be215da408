/* cuda_backend.c: the opt plugin's hooks on a CUDA device (see cuda_backend.h). */
#include "cuda_backend.h"

#include <stdio.h>
#include <string.h>

static int shared(const opt_rollout *ro) { return ro->p.shared_prefill && ro->Sp > 1; }

/* Opens the device once; on failure keeps the reason as the device name. */
bc_status opt_cuda_backend_open(opt_cuda_backend *b, bc_error *err) {
    if (b->dev) return BC_OK;
    bc_status st = opt_cuda_device_open(&b->dev, b->index, err);
    if (st != BC_OK) {
        snprintf(b->name, sizeof b->name, "%s", err->message);
        return st;
    }
    snprintf(b->name, sizeof b->name, "%s", opt_cuda_device_name(b->dev));
    opt_cuda_driver_version(b->driver, sizeof b->driver);
    return BC_OK;
}

void opt_cuda_backend_init(opt_cuda_backend *b, int device_index, int use_graphs) {
    memset(b, 0, sizeof *b);
    b->index = device_index;
    b->use_graphs = use_graphs;
    bc_error err = {0};
    (void)opt_cuda_backend_open(b, &err); /* a failure is reported by each case */
}

void opt_cuda_backend_end_case(opt_cuda_backend *b) {
    if (b->have_rollout) opt_cuda_rollout_free(&b->cr);
    b->have_rollout = 0;
}

bc_status opt_cuda_backend_begin_case(opt_cuda_backend *b, const opt_weights *w, opt_rollout *ro, bc_error *err) {
    opt_cuda_backend_end_case(b);
    bc_status st = opt_cuda_backend_open(b, err);
    if (st != BC_OK) return st;
    if (b->m && (b->uploaded != w->arena || b->uploaded_dtype != w->dtype)) {
        opt_cuda_model_destroy(b->m);
        b->m = NULL;
    }
    if (!b->m) {
        st = opt_cuda_model_create(&b->m, b->dev, w, err);
        if (st != BC_OK) return st;
        b->uploaded = w->arena;
        b->uploaded_dtype = w->dtype;
    }
    opt_cuda_rollout_init(&b->cr, ro, b->dev, b->m, b->use_graphs);
    b->have_rollout = 1;
    b->case_plan = opt_cuda_rollout_plan(&b->cr);
    return opt_cuda_rollout_acquire(&b->cr, err);
}

bc_status opt_cuda_backend_generate(opt_cuda_backend *b, bc_error *err) {
    if (!b->have_rollout) return bc_error_set(err, BC_ERR_INTERNAL, "opt cuda: generate outside a case");
    return opt_cuda_rollout_generate(&b->cr, err);
}

bc_status opt_cuda_backend_cache_acquire(opt_cuda_backend *b, bc_error *err) {
    if (!b->have_rollout) return bc_error_set(err, BC_ERR_INTERNAL, "opt cuda: cache_acquire outside a case");
    return opt_cuda_rollout_acquire(&b->cr, err);
}

void opt_cuda_backend_cache_release(opt_cuda_backend *b) {
    if (b->have_rollout) opt_cuda_rollout_release(&b->cr);
}

void opt_cuda_backend_reset_peak(opt_cuda_backend *b) {
    if (b->dev) opt_cuda_mem_reset_peak(opt_cuda_device_mem(b->dev));
}

bc_status opt_cuda_backend_read_memory(opt_cuda_backend *b, bc_memory_stats *out, bc_error *err) {
    if (!b->dev) {
        BC_SET(out, bc_memory_stats, device_peak_bytes, -1);
        BC_SET(out, bc_memory_stats, device_free_bytes, -1);
        BC_SET(out, bc_memory_stats, device_total_bytes, -1);
        return BC_OK; /* resident_bytes: the caller's host figure */
    }
    const opt_cuda_mem *m = opt_cuda_device_mem(b->dev);
    BC_SET(out, bc_memory_stats, weights_bytes, (int64_t)m->held[OPT_CUDA_MEM_WEIGHTS]);
    /* the case's cache as planned (the harness reads memory after a release too) */
    BC_SET(out, bc_memory_stats, kv_cache_bytes, b->have_rollout ? (int64_t)b->case_plan.kv_cache : 0);
    BC_SET(out, bc_memory_stats, workspace_bytes, b->have_rollout ? (int64_t)b->case_plan.workspace : 0);
    BC_SET(out, bc_memory_stats, device_peak_bytes, (int64_t)m->peak);
    BC_SET(out, bc_memory_stats, resident_bytes, (int64_t)m->current); /* without the cache after a release */
    size_t fr = 0, tot = 0;
    bc_status st = opt_cuda_mem_get_info(b->dev, &fr, &tot, err);
    if (st != BC_OK) return st;
    BC_SET(out, bc_memory_stats, device_free_bytes, (int64_t)fr);
    BC_SET(out, bc_memory_stats, device_total_bytes, (int64_t)tot);
    return BC_OK;
}

int64_t opt_cuda_backend_total_bytes(opt_cuda_backend *b) {
    size_t fr = 0, tot = 0;
    bc_error err = {0};
    if (!b->dev || opt_cuda_mem_get_info(b->dev, &fr, &tot, &err) != BC_OK) return -1;
    return (int64_t)tot;
}

void opt_cuda_backend_plan_memory(const opt_hparams *hp, opt_dtype dt, const opt_rollout *ro, bc_memory_stats *out) {
    opt_cuda_plan p = opt_cuda_plan_rollout(hp, dt, ro->R, ro->Bp, ro->Tp, ro->Stot, shared(ro));
    BC_SET(out, bc_memory_stats, weights_bytes, (int64_t)p.weights);
    BC_SET(out, bc_memory_stats, kv_cache_bytes, (int64_t)p.kv_cache);
    BC_SET(out, bc_memory_stats, workspace_bytes, (int64_t)p.workspace);
    /* + the device length counter of each KV cache */
    BC_SET(out, bc_memory_stats, device_peak_bytes,
           (int64_t)(p.weights + p.kv_cache + p.workspace + (size_t)(shared(ro) ? 2 : 1) * OPT_CUDA_ALIGN));
    BC_SET(out, bc_memory_stats, device_free_bytes, -1);
    BC_SET(out, bc_memory_stats, device_total_bytes, -1);
}

void opt_cuda_backend_free(opt_cuda_backend *b) {
    opt_cuda_backend_end_case(b);
    opt_cuda_model_destroy(b->m);
    b->m = NULL;
    opt_cuda_device_close(b->dev);
    b->dev = NULL;
}

void opt_cuda_backend_describe(opt_cuda_backend *b, bc_backend_info *info, char *device, size_t device_len) {
    snprintf(device, device_len, "cuda:%d", b->index);
    BC_SET(info, bc_backend_info, device, device);
    BC_SET(info, bc_backend_info, device_name, b->name);
    BC_SET(info, bc_backend_info, driver, b->driver[0] ? b->driver : NULL);
}
