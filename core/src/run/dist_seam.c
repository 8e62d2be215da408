/* dist_seam.c: the runner's seam (seam.h) for a distributed run
 * (distributed.h, docs/scale.md), one table per mode:
 *   replicate  every rank runs every case: a barrier before each iteration,
 *              an agreement after every step (failures, interrupts, rank
 *              0's stop rule), per-rank times gathered after each case;
 *   shard      the case at execution position i runs on rank i % world_size;
 *              after each round of world_size positions every rank gets
 *              every case of the round.
 * A collective that fails (a rank missed distributed.timeout_s) fails the
 * case in progress and every later one on each rank still running; the
 * reports are written and bc_dist_close ends the job (distributed.c). */
#include <stdio.h>

#include "distributed.h"
#include "runner.h"
#include "seam.h"

/* Ends the job after this rank failed where the others go on. */
static void dist_abort(void *ctx, int status, const bc_error *why) {
    bc_dist *d = ctx;
    d->comm->host.log(&d->comm->host, BC_LOG_ERROR, "rank %d: %s; ending the job", (int)d->rank,
                      why && why->message[0] ? why->message : "failed");
    bc_dist_abort(d, status);
}

static bc_status dist_start(void *ctx, const bc_runner_config *cfg, bc_error *err) {
    bc_dist *d = ctx;
    if (cfg->isolation || cfg->prior) /* the same on every rank: no rank waits for another */
        return bc_error_set(err, BC_ERR_SETTING, "a distributed run cannot use %s",
                            cfg->isolation ? "run.isolation = \"process\"" : "--resume");
    d->agreed_stop = 0;
    d->round_case = -1;
    bc_status st = bc_dist_results_alloc(d, cfg->n_cases, err);
    if (st != BC_OK) dist_abort(d, 1, err);
    return st;
}

static bc_status dist_agree(void *ctx, bc_status local, bc_error *err) {
    return bc_dist_agree_status(ctx, local, err);
}

static int replicate_runs(void *ctx, size_t position) {
    (void)ctx, (void)position;
    return 1;
}

static void replicate_before_iteration(void *ctx) {
    bc_error err = {0};
    bc_dist_barrier(ctx, &err); /* a failing one is kept: the step after it fails (bc_dist_agree) */
}

static void replicate_after_step(void *ctx, bc_status *st, const char **hook, bc_error *err,
                                 volatile sig_atomic_t *stop, int32_t *stop_rule) {
    bc_dist *d = ctx;
    d->agreed_stop = bc_dist_agree(d, st, hook, err, stop, stop_rule);
}

/* The level every rank agreed on: a signal after the agreement waits for
 * the next one, so that every rank stops at the same iteration. */
static int replicate_stop_level(void *ctx, volatile sig_atomic_t *stop) {
    (void)stop;
    return ((bc_dist *)ctx)->agreed_stop;
}

static size_t replicate_after_case(void *ctx, bc_run_result *res, size_t position, int64_t k, int ran,
                                   volatile sig_atomic_t *stop) {
    (void)position, (void)stop;
    if (!ran || k < 0) return 0;
    bc_dist_replicate_collect(ctx, res, (size_t)k);
    return 1;
}

static int shard_runs(void *ctx, size_t position) {
    const bc_dist *d = ctx;
    return position % (size_t)d->world_size == (size_t)d->rank;
}

static void shard_before_iteration(void *ctx) { (void)ctx; }

/* Each rank its own cases; after a failed collective they fail too, so
 * that the run ends soon with every case accounted for. */
static void shard_after_step(void *ctx, bc_status *st, const char **hook, bc_error *err, volatile sig_atomic_t *stop,
                             int32_t *stop_rule) {
    bc_dist *d = ctx;
    (void)stop, (void)stop_rule;
    if (!d->broken[0] || *st != BC_OK) return;
    *st = BC_ERR_IO;
    bc_error_set(err, BC_ERR_IO, "%s", d->broken);
    snprintf(d->failed_hook, sizeof d->failed_hook, "distributed collective");
    *hook = d->failed_hook;
}

static int shard_stop_level(void *ctx, volatile sig_atomic_t *stop) {
    (void)ctx;
    return stop ? (int)*stop : 0;
}

/* Once every rank handled its position of the round, the round's cases are
 * everyone's. */
static size_t shard_after_case(void *ctx, bc_run_result *res, size_t position, int64_t k, int ran,
                               volatile sig_atomic_t *stop) {
    (void)ran; /* a case skipped before it started is sent too */
    bc_dist *d = ctx;
    size_t world = (size_t)d->world_size;
    if (k >= 0) d->round_case = k;
    if (position % world != world - 1 && position + 1 != d->n_cases) return 0;
    bc_dist_shard_exchange(d, res, d->round_case, stop);
    d->round_case = -1;
    return position % world + 1;
}

void bc_dist_seam(bc_dist *d, bc_run_seam *seam) {
    int shard = d->mode == BC_DIST_SHARD;
    *seam = (bc_run_seam){
        .ctx = d,
        .report = &d->report,
        .tokens_here = !shard, /* a case and its first backend's run may sit on different ranks */
        .start = dist_start,
        .agree = dist_agree,
        .runs = shard ? shard_runs : replicate_runs,
        .before_iteration = shard ? shard_before_iteration : replicate_before_iteration,
        .after_step = shard ? shard_after_step : replicate_after_step,
        .stop_level = shard ? shard_stop_level : replicate_stop_level,
        .after_case = shard ? shard_after_case : replicate_after_case,
        .abort = dist_abort,
    };
}
