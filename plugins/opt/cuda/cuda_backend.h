/* cuda_backend.h: what the opt plugin (../opt_plugin.c) calls when its
 * `device` setting is "cuda": the device, the model on it and the rollout's
 * device side, behind the plugin's hooks. The plugin keeps doing what is
 * device-independent (settings, host weights, prompts, expansion,
 * post-processing, save_tokens) and forwards the rest here.
 *
 * The device is opened at init (for the run report's device name), but a
 * failure there is not fatal: opt_cuda_backend_open (the plugin's prepare,
 * and every begin_case) retries and fails with one line ("no CUDA device:
 * ..."), which the host reports as "backend could not start".
 * Structs from the host (bc_memory_stats, bc_backend_info) are written with
 * BC_SET, only as far as the host's struct reaches.
 */
#ifndef OPT_CUDA_BACKEND_H
#define OPT_CUDA_BACKEND_H

#include "cuda_rollout.h"

typedef struct opt_cuda_backend {
    int index;                 /* device_index setting */
    int use_graphs;            /* cuda_graphs setting */
    opt_cuda_device *dev;      /* owned; NULL until the first case opens it */
    opt_cuda_model *m;         /* owned; weights of `uploaded` on the device */
    const void *uploaded;      /* host arena the device weights were copied from ... */
    opt_dtype uploaded_dtype;  /* ... and its dtype */
    int have_rollout;
    opt_cuda_rollout cr;       /* the case's device side; borrows the plugin's opt_rollout */
    opt_cuda_plan case_plan;   /* what the case holds on the device */
    char name[600];            /* device name, or why there is none */
    char driver[64];
} opt_cuda_backend;

/* Fills b from the settings and tries to open the device (never fails). */
void opt_cuda_backend_init(opt_cuda_backend *b, int device_index, int use_graphs);
/* Opens the device if it is not open yet: BC_ERR_DEVICE, "no CUDA device: ..."
 * without one (the plugin asks in prepare and before it builds the host
 * weights). */
bc_status opt_cuda_backend_open(opt_cuda_backend *b, bc_error *err);
/* Opens the device if needed, uploads w when it is not the one on the
 * device, and acquires ro's device cache. */
bc_status opt_cuda_backend_begin_case(opt_cuda_backend *b, const opt_weights *w, opt_rollout *ro, bc_error *err);
/* The case's generate stage; the results and timings land in the borrowed
 * opt_rollout, as on the CPU. */
bc_status opt_cuda_backend_generate(opt_cuda_backend *b, bc_error *err);
bc_status opt_cuda_backend_cache_acquire(opt_cuda_backend *b, bc_error *err);
void opt_cuda_backend_cache_release(opt_cuda_backend *b);
void opt_cuda_backend_reset_peak(opt_cuda_backend *b);
/* Device bytes per kind, what is held now (resident_bytes), the device
 * high-water mark and cudaMemGetInfo; host_peak_bytes is left to the caller. */
bc_status opt_cuda_backend_read_memory(opt_cuda_backend *b, bc_memory_stats *out, bc_error *err);
/* The device's total bytes, -1 when no device is open. */
int64_t opt_cuda_backend_total_bytes(opt_cuda_backend *b);
/* The device plan of a case (for `benchctl plan`), without a device. */
void opt_cuda_backend_plan_memory(const opt_hparams *hp, opt_dtype dt, const opt_rollout *ro, bc_memory_stats *out);
/* Frees the case's device side (before the plugin frees ro). */
void opt_cuda_backend_end_case(opt_cuda_backend *b);
void opt_cuda_backend_free(opt_cuda_backend *b);
/* "cuda:0", the device's name (or why there is none), the driver version. */
void opt_cuda_backend_describe(opt_cuda_backend *b, bc_backend_info *info, char *device, size_t device_len);

#endif
