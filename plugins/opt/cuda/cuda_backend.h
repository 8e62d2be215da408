/* cuda_backend.h: the CUDA device of the OPT engine (../device.h's
 * opt_device_cuda): the device, the model on it and the case's device side
 * (cuda_rollout.h) behind the device hooks. The plugin keeps what is
 * device-independent (settings, host weights, prompts, expansion, the
 * rollout loop, post-processing, save_tokens).
 *
 * The device is opened at create (for the run report's device name), but a
 * failure there is not fatal: open (the plugin's prepare) and every
 * begin_case retry and fail with one line ("no CUDA device: ..."), which
 * the host reports as "backend could not start".
 */
#ifndef OPT_CUDA_BACKEND_H
#define OPT_CUDA_BACKEND_H

#include "cuda_rollout.h"

typedef struct opt_cuda_backend {
    int index;                 /* device_index setting */
    int use_graphs;            /* cuda_graphs setting */
    opt_cuda_device *dev;      /* owned; NULL until opened */
    opt_cuda_model *m;         /* owned; weights of `uploaded` on the device */
    const void *uploaded;      /* host arena the device weights were copied from ... */
    eng_dtype uploaded_dtype;  /* ... and its dtype */
    int have_rollout;
    opt_cuda_rollout cr;       /* the case's device side; borrows the plugin's eng_rollout */
    opt_cuda_plan case_plan;   /* what the case holds on the device */
    char device[32];           /* "cuda:N" */
    char name[600];            /* device name, or why there is none */
    char driver[64];
} opt_cuda_backend;

/* Fills b from the settings and tries to open the device (never fails). */
void opt_cuda_backend_init(opt_cuda_backend *b, int device_index, int use_graphs);
/* Opens the device if it is not open yet: BC_ERR_DEVICE, "no CUDA device: ..."
 * without one. */
bc_status opt_cuda_backend_open(opt_cuda_backend *b, bc_error *err);
void opt_cuda_backend_free(opt_cuda_backend *b);

#endif
