/* runner.h: runs the case matrix through one backend and feeds reporters.
 *
 * bc_run creates the backend once, then for each case in execution order:
 *   begin_case; `warmup` iterations (not recorded); reset the high-water marks
 *   (backend reset_peak_memory, process peak RSS via /proc/self/clear_refs);
 *   `iterations` measured iterations; read memory; end_case (always called
 *   once begin_case was called, also after a failure).
 * One iteration:
 *   [cache_acquire, if the previous iteration released the cache]
 *   expand_prompts, generate, post_process
 *   [cache_release, if the case's cache policy says release]
 * Each stage is timed with the monotonic clock. Per-iteration values are the
 * bc_field columns; a field the backend does not measure is NaN, never
 * invented:
 *   total_ms = prompt_expansion_ms + generation_ms + post_processing_ms
 *   tokens_per_second = num_generated_tokens / (generation_ms / 1000)
 *   generation_overhead_ms = generation_ms - prefill - decode (both measured)
 *   cache_acquire_ms / cache_release_ms: only when the hook ran.
 * A hook error fails the case (message "<hook>: <message>") and the run goes
 * on. When *stop becomes non-zero (SIGINT/SIGTERM), the current iteration
 * finishes, the current case keeps its measured iterations and is marked
 * skipped ("interrupted ..."), the remaining cases are skipped, and the
 * reporters are still closed with every case.
 * Reporters: open before the first case; case_started in execution order with
 * an ETA (mean case wall time so far x cases left; NaN before the first);
 * case_finished after each case (run->cases = the finished cases in requested
 * order); close with every case in requested order; destroy. A failing
 * reporter is reported through on_error and the others carry on.
 */
#ifndef BENCHCTL_RUNNER_H
#define BENCHCTL_RUNNER_H

#include <signal.h>
#include <stddef.h>

#include "benchctl/plugin.h"
#include "loader.h"

/* Column names of the per-iteration values, indexed by bc_field. */
extern const char *const bc_field_names[BC_FIELD_COUNT_V1_0];

typedef struct bc_runner_reporter {
    const bc_plugin *plugin;           /* a reporter */
    const bc_setting_value *settings;  /* resolved, plugin->desc->n_settings; live for the run */
    const char *where;                 /* where the config names it ("bench.cfg:28", "--reporter"),
                                          prefixed to its errors; may be NULL */
} bc_runner_reporter;

typedef struct bc_runner_config {
    const bc_plugin *backend;
    const bc_setting_value *backend_settings; /* resolved; live for the run */
    const char *backend_where;                /* "bench.cfg:7" (where the config names it), prefixed to create and
                                                 describe errors; may be NULL */
    const bc_case *cases;                     /* requested order (case.index == position) */
    size_t n_cases;
    uint32_t warmup, iterations;
    const bc_runner_reporter *reporters;
    size_t n_reporters;
    /* Run metadata for reporters (metadata.c). The runner fills backend,
     * n_fields, field_names, n_cases and cases. */
    bc_run_report run;
    volatile sig_atomic_t *stop; /* may be NULL */
    /* Called with a one-line message when a reporter fails; may be NULL. */
    void (*on_error)(void *ctx, const char *message);
    void *on_error_ctx;
} bc_runner_config;

/* What a run produced; everything is owned by the result. */
typedef struct bc_run_result {
    bc_case_report *cases; /* requested order, n_cases */
    size_t n_cases;
    double *values;        /* n_cases x iterations x n_fields; each case report points into it */
    bc_stats *stats;       /* n_cases x n_fields */
    char **messages;       /* n_cases, each case report's message */
    uint32_t n_failed;     /* cases with status failed */
    uint32_t n_skipped;
    int interrupted;       /* *stop was set */
    int reporter_failed;   /* some reporter hook failed */
} bc_run_result;

/* Runs everything. Returns non-OK only when the run could not start (the
 * backend's create or describe failed, out of memory); case failures are in
 * res. res must be freed with bc_run_result_free in every case. */
bc_status bc_run(const bc_runner_config *cfg, bc_run_result *res, bc_error *err);

/* 0 all ok; 130 interrupted; 1 a reporter failed; 3 a case failed. */
int bc_run_exit_status(const bc_run_result *res);

void bc_run_result_free(bc_run_result *res);

#endif
