/* seam.c: the runner's seam for one process (seam.h): nothing to agree
 * with, every case here. */
#include "seam.h"

static bc_status local_start(void *ctx, const struct bc_runner_config *cfg, bc_error *err) {
    (void)ctx, (void)cfg, (void)err;
    return BC_OK;
}

static bc_status local_agree(void *ctx, bc_status local, bc_error *err) {
    (void)ctx, (void)err;
    return local;
}

static int local_runs(void *ctx, size_t position) {
    (void)ctx, (void)position;
    return 1;
}

static void local_before_iteration(void *ctx) { (void)ctx; }

static void local_after_step(void *ctx, bc_status *st, const char **hook, bc_error *err, volatile sig_atomic_t *stop,
                             int32_t *stop_rule) {
    (void)ctx, (void)st, (void)hook, (void)err, (void)stop, (void)stop_rule;
}

static int local_stop_level(void *ctx, volatile sig_atomic_t *stop) {
    (void)ctx;
    return stop ? (int)*stop : 0;
}

static size_t local_after_case(void *ctx, struct bc_run_result *res, size_t position, int64_t k, int ran,
                               volatile sig_atomic_t *stop) {
    (void)ctx, (void)res, (void)position, (void)k, (void)stop;
    return ran ? 1 : 0;
}

static void local_abort(void *ctx, int status, const bc_error *why) { (void)ctx, (void)status, (void)why; }

const bc_run_seam bc_seam_local = {
    .ctx = NULL,
    .report = NULL,
    .tokens_here = 1,
    .start = local_start,
    .agree = local_agree,
    .runs = local_runs,
    .before_iteration = local_before_iteration,
    .after_step = local_after_step,
    .stop_level = local_stop_level,
    .after_case = local_after_case,
    .abort = local_abort,
};
