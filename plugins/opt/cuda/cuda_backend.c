/* cuda_backend.c: the CUDA device of the OPT engine (see cuda_backend.h and
 * ../device.h): the device, the model on it (uploaded from the plugin's host
 * weights) and each case's device side (cuda_rollout.h). */
#include "cuda_backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    snprintf(b->device, sizeof b->device, "cuda:%d", device_index);
    bc_error err = {0};
    (void)opt_cuda_backend_open(b, &err); /* a failure is reported by each case */
}

void opt_cuda_backend_free(opt_cuda_backend *b) {
    if (b->have_rollout) opt_cuda_rollout_free(&b->cr);
    b->have_rollout = 0;
    opt_cuda_model_destroy(b->m);
    b->m = NULL;
    opt_cuda_device_close(b->dev);
    b->dev = NULL;
}

/* ----------------------------------------------------------- device hooks */

static bc_status cuda_create(const eng_device_config *cfg, void **out, bc_error *err) {
    opt_cuda_backend *b = malloc(sizeof *b);
    if (!b) return bc_error_set(err, BC_ERR_NOMEM, "opt: out of memory");
    opt_cuda_backend_init(b, cfg->index, cfg->graphs);
    *out = b;
    return BC_OK;
}

static void cuda_destroy(void *ctx) {
    if (!ctx) return;
    opt_cuda_backend_free(ctx);
    free(ctx);
}

static bc_status cuda_open(void *ctx, bc_error *err) { return opt_cuda_backend_open(ctx, err); }

static void cuda_describe(void *ctx, eng_device_info *out) {
    opt_cuda_backend *b = ctx;
    *out = (eng_device_info){.device = b->device,
                             .device_name = b->name,
                             .driver = b->driver[0] ? b->driver : NULL,
                             .cpu_threads = -1};
}

static void cuda_plan(void *ctx, const eng_weights *base, const eng_rollout *ro, eng_device_plan *out) {
    (void)ctx;
    if (base->family != &opt_family) { /* begin_case refuses the case */
        *out = (eng_device_plan){.weights = -1, .device_peak = -1};
        return;
    }
    const opt_hparams *hp = &((const opt_weights *)base)->hp;
    const eng_dtype dt = base->dtype;
    const int shared = eng_rollout_shared_prefill(ro);
    const opt_cuda_plan p = opt_cuda_plan_rollout(hp, dt, ro->R, ro->Bp, ro->Tp, ro->Stot, shared);
    out->weights = (int64_t)p.weights;
    out->kv_cache = (int64_t)p.kv_cache;
    out->workspace = (int64_t)p.workspace;
    /* + the device length counter of each KV cache */
    out->device_peak = (int64_t)(p.weights + p.kv_cache + p.workspace + (size_t)(shared ? 2 : 1) * OPT_CUDA_ALIGN);
}

static double gib(int64_t bytes) { return (double)bytes / (1024.0 * 1024.0 * 1024.0); }

/* The device's total bytes, -1 when no device is open. */
static int64_t cuda_capacity(void *ctx, int64_t held_host, char *where, size_t where_len) {
    (void)held_host;
    opt_cuda_backend *b = ctx;
    size_t fr = 0, tot = 0;
    bc_error err = {0};
    if (!b->dev || opt_cuda_mem_get_info(b->dev, &fr, &tot, &err) != BC_OK) return -1;
    snprintf(where, where_len, "%s has %.1f GiB", b->name, gib((int64_t)tot));
    return (int64_t)tot;
}

static void cuda_end_case(void *ctx, eng_rollout *ro) {
    (void)ro;
    opt_cuda_backend *b = ctx;
    if (b->have_rollout) opt_cuda_rollout_free(&b->cr);
    b->have_rollout = 0;
}

/* Opens the device if needed, uploads w when it is not the one on the
 * device, and acquires ro's device cache. */
static bc_status cuda_begin_case(void *ctx, const eng_weights *base, eng_rollout *ro, bc_error *err) {
    opt_cuda_backend *b = ctx;
    cuda_end_case(b, ro);
    bc_status st = opt_cuda_backend_open(b, err);
    if (st != BC_OK) return st;
    if (base->family != &opt_family)
        return bc_error_set(err, BC_ERR_UNSUPPORTED, "device cuda runs the opt family only, not %s",
                            base->family ? base->family->name : "(none)");
    const opt_weights *w = (const opt_weights *)base;
    if (b->m && (b->uploaded != w->base.arena || b->uploaded_dtype != w->base.dtype)) {
        opt_cuda_model_destroy(b->m);
        b->m = NULL;
    }
    if (!b->m) {
        st = opt_cuda_model_create(&b->m, b->dev, w, err);
        if (st != BC_OK) return st;
        b->uploaded = w->base.arena;
        b->uploaded_dtype = w->base.dtype;
    }
    opt_cuda_rollout_init(&b->cr, ro, b->dev, b->m, b->use_graphs);
    b->have_rollout = 1;
    b->case_plan = opt_cuda_rollout_plan(&b->cr);
    return opt_cuda_rollout_acquire(&b->cr, err);
}

static bc_status cuda_generate(void *ctx, eng_rollout *ro, bc_error *err) {
    opt_cuda_backend *b = ctx;
    if (!b->have_rollout || b->cr.ro != ro) return bc_error_set(err, BC_ERR_INTERNAL, "opt cuda: generate outside a case");
    return eng_rollout_run(ro, &opt_cuda_steps, &b->cr, err);
}

static bc_status cuda_cache_acquire(void *ctx, eng_rollout *ro, bc_error *err) {
    (void)ro;
    opt_cuda_backend *b = ctx;
    if (!b->have_rollout) return bc_error_set(err, BC_ERR_INTERNAL, "opt cuda: cache_acquire outside a case");
    return opt_cuda_rollout_acquire(&b->cr, err);
}

static void cuda_cache_release(void *ctx, eng_rollout *ro) {
    (void)ro;
    opt_cuda_backend *b = ctx;
    if (b->have_rollout) opt_cuda_rollout_release(&b->cr);
}

static void cuda_reset_peak(void *ctx) {
    opt_cuda_backend *b = ctx;
    if (b->dev) opt_cuda_mem_reset_peak(opt_cuda_device_mem(b->dev));
}

/* Device bytes per kind, what is held now, the device high-water mark and
 * cudaMemGetInfo. */
static bc_status cuda_read_memory(void *ctx, const eng_rollout *ro, eng_device_memory *out, bc_error *err) {
    (void)ro;
    opt_cuda_backend *b = ctx;
    *out = (eng_device_memory){.weights = -1,
                               .device_resident = -1,
                               .device_peak = -1,
                               .device_free = -1,
                               .device_total = -1};
    if (!b->dev) return BC_OK;
    const opt_cuda_mem *m = opt_cuda_device_mem(b->dev);
    out->weights = (int64_t)m->held[OPT_CUDA_MEM_WEIGHTS];
    /* the case's cache as planned (the harness reads memory after a release too) */
    out->kv_cache = b->have_rollout ? (int64_t)b->case_plan.kv_cache : 0;
    out->workspace = b->have_rollout ? (int64_t)b->case_plan.workspace : 0;
    out->device_peak = (int64_t)m->peak;
    out->device_resident = (int64_t)m->current; /* without the cache after a release */
    size_t fr = 0, tot = 0;
    bc_status st = opt_cuda_mem_get_info(b->dev, &fr, &tot, err);
    if (st != BC_OK) return st;
    out->device_free = (int64_t)fr;
    out->device_total = (int64_t)tot;
    return BC_OK;
}

/* The cache is on the device. */
static int64_t cuda_host_bytes(void *ctx, const eng_rollout *ro) {
    (void)ctx, (void)ro;
    return 0;
}

static const eng_device_ops cuda_ops = {
    .name = "cuda",
    .create = cuda_create,
    .destroy = cuda_destroy,
    .open = cuda_open,
    .describe = cuda_describe,
    .plan = cuda_plan,
    .capacity = cuda_capacity,
    .begin_case = cuda_begin_case,
    .generate = cuda_generate,
    .cache_acquire = cuda_cache_acquire,
    .cache_release = cuda_cache_release,
    .end_case = cuda_end_case,
    .reset_peak = cuda_reset_peak,
    .host_bytes = cuda_host_bytes,
    .read_memory = cuda_read_memory,
};

const eng_device_ops *const opt_device_cuda = &cuda_ops;
