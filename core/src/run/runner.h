/* runner.h: runs the case matrix through one backend and feeds reporters.
 *
 * The caller creates and describes the backend instance (context.c), so the
 * same instance that checked every case runs them. bc_run then:
 *   prepare (once per instance that runs a selected case; a failure means
 *   the backend could not start: bc_run returns it and no reporter is
 *   opened, so nothing measured is lost);
 *   opens the reporters; runs the cases in the plan's order (plan.h:
 *   instance by instance, grouped by each backend's own rebuild_axes,
 *   largest effective batch first within a group); per case:
 *   read the host's load (hostload.h); begin_case; `warmup` iterations (not
 *   recorded); reset the high-water marks (backend reset_peak_memory,
 *   process peak RSS via /proc/self/clear_refs); measured iterations until
 *   the stop rule says (below); read memory (after the last iteration's
 *   cache policy ran: what the backend holds between rollouts); end_case
 *   (always called once begin_case was called, also after a failure); read
 *   the host's load again (load average at both ends, steal share between).
 * The stop rule, checked after each measured iteration n (1-based), first
 * match wins (the reason goes in the case report's stop_reason):
 *   stable          adaptive, target_rel_ci > 0, n >= min_iterations and
 *                   total_ms_rel_ci <= target_rel_ci (needs n >= 6, stats.h)
 *   fixed / max_iterations   n reached iterations (fixed) or max_iterations
 *   max_seconds     max_seconds_per_case > 0 and the case's wall time,
 *                   begin_case and warmup included, reached it (so at least
 *                   one measured iteration always runs; the cap wins over
 *                   min_iterations)
 *   interrupted     *stop is set (below)
 * A hook failure stops the case with stop_reason failed.
 * One iteration:
 *   [refit, when run.refit says (per_rollout: every one; per_case: the
 *    first measured one)]
 *   [cache_acquire, if the previous iteration released the cache]
 *   expand_prompts, generate, post_process
 *   [read_rollout, when the backend has it; then the scorer's score, when
 *    the run scores]
 *   [cache_release, if the case's cache policy says release]
 * Each stage is timed with the monotonic clock. Per-iteration values are the
 * bc_field columns; a field the backend does not measure is NaN, never
 * invented:
 *   total_ms = prompt_expansion_ms + generation_ms + post_processing_ms
 *   tokens_per_second = num_generated_tokens / (generation_ms / 1000)
 *   generation_overhead_ms = generation_ms - prefill - decode (both measured)
 *   cache_acquire_ms / cache_release_ms: only when the hook ran
 *   time_to_first_token_ms = prompt_expansion_ms + the backend's first_token_ms
 *   decode_ms_per_token_p50/p95: over the rollout's decode steps
 *   prefill_tokens_per_second = num_prefill_tokens / prefill_forward_ms
 *   decode_tokens_per_second = num_decode_tokens / decode_forward_ms
 *   padding_waste = 1 - num_generated_tokens / padded_token_slots; the other
 *   fields from padded_token_slots to lora_unfuse_ms are the backend's as it
 *   gave them
 *   row_ttft_ms_p50 .. row_e2e_ms_p99: each row's time to first token, time
 *   per output token and end-to-end latency from the backend's schedule,
 *   p50/p90/p99 over the rows (rowlat.h); rows_per_second = rows / total_ms
 *   score_ms .. importance_ratio_max: the score stage and the logprob gap
 *   on the rollout's own response tokens (score.h)
 *   refit_ms, refit_bytes (source_bytes), refit_gb_per_s = refit_bytes /
 *   refit_ms, refit_bound_share = refit_gb_per_s / memcpy_gb_per_s: only
 *   when the refit ran; rollout_step_ms = refit_ms (when it ran) + total_ms
 *   + score_ms (when scoring), with scoring or refit on
 *   response_length/{mean,min,max,clip_ratio}: from read_rollout, else
 *   from bc_generation_stats (mean = num_generated_tokens / rows; no
 *   clip_ratio); timing_per_token_ms/gen = generation_ms /
 *   num_generated_tokens; slowest_row/{generation_ms,response_length}: the
 *   row whose last token came last in the schedule (rowlat.h)
 * then the backend's declared metrics (bc_plugin_desc.metrics, then its
 * instance's more_metrics rows; fields.h maps them to columns): read_metrics
 * after post_process for the per-iteration ones, after the last measured
 * iteration for the per-case ones (into that iteration's row); a value that
 * is not finite fails the case, naming the metric.
 * A hook error fails the case (message "<hook>: <message>", error_code the
 * hook's status) and the run goes on. Interrupts (*stop, set by the signal
 * handler): 1 = the current iteration finishes; 2 or more = the iteration is
 * abandoned after the hook that is running. Either way the current case keeps
 * its measured iterations and is marked skipped, the remaining cases are
 * skipped, and the reporters are still closed with every case.
 * Reporters: open before the first case; case_started in execution order with
 * an ETA (eta.h: a cost model fitted on the cases finished so far; NaN
 * before the first); iteration_finished (since ABI 2.1, when the reporter
 * has it) after every completed iteration, warmup ones flagged, with the
 * ETA updated from the running case too; case_finished after each case
 * (run->cases = the finished cases in requested order); close with every
 * case in requested order; destroy. A failing reporter is reported through
 * on_error and the others carry on.
 */
#ifndef BENCHCTL_RUNNER_H
#define BENCHCTL_RUNNER_H

#include <signal.h>
#include <stddef.h>

#include "benchctl/plugin.h"
#include "fields.h"
#include "loader.h"
#include "stats.h"

/* The host's own per-iteration fields, in report order (their descriptors:
 * fields.h). A run's columns are these, then the backends' declared
 * metrics (bc_run_result.fields). */
typedef enum bc_field {
    BC_FIELD_PROMPT_EXPANSION_MS = 0,
    BC_FIELD_GENERATION_MS,
    BC_FIELD_POST_PROCESSING_MS,
    BC_FIELD_TOTAL_MS,
    BC_FIELD_TOKENS_PER_SECOND,
    BC_FIELD_NUM_GENERATED_TOKENS,
    BC_FIELD_PREFILL_FORWARD_MS,
    BC_FIELD_DECODE_FORWARD_MS,
    BC_FIELD_GENERATION_OVERHEAD_MS,
    BC_FIELD_NUM_DECODE_FORWARDS,
    BC_FIELD_CACHE_ACQUIRE_MS,
    BC_FIELD_CACHE_RELEASE_MS,
    BC_FIELD_TIME_TO_FIRST_TOKEN_MS,
    BC_FIELD_DECODE_MS_PER_TOKEN_P50,
    BC_FIELD_DECODE_MS_PER_TOKEN_P95,
    BC_FIELD_PREFILL_TOKENS_PER_SECOND,
    BC_FIELD_DECODE_TOKENS_PER_SECOND,
    BC_FIELD_ENGINE_TOTAL_MS,       /* a worker backend's engine's own stage times, summed */
    BC_FIELD_PROTOCOL_OVERHEAD_MS,  /* total_ms - engine_total_ms: the transport to the engine */
    BC_FIELD_PADDED_TOKEN_SLOTS,
    BC_FIELD_PADDING_WASTE,
    BC_FIELD_RESPONSE_LENGTH_MIN,
    BC_FIELD_RESPONSE_LENGTH_P50,
    BC_FIELD_RESPONSE_LENGTH_P95,
    BC_FIELD_RESPONSE_LENGTH_MAX,
    BC_FIELD_NUM_PREFILL_FORWARDS,
    BC_FIELD_SCHEDULER_OVERHEAD_MS,
    BC_FIELD_CACHE_MANAGEMENT_OVERHEAD_MS,
    BC_FIELD_ACTIVE_BATCH_SIZE,
    BC_FIELD_CONTINUOUS_BATCH_SIZE,
    BC_FIELD_OCCUPANCY,
    BC_FIELD_KV_PAGES_PEAK,
    BC_FIELD_KV_BYTES_PEAK,
    BC_FIELD_KV_FRAGMENTATION,
    BC_FIELD_KV_BYTES_SAVED,
    BC_FIELD_LORA_FUSE_MS,          /* a LoRA actor's fuse before generation, inside generate */
    BC_FIELD_LORA_UNFUSE_MS,        /* and its unfuse after it */
    /* per-row latencies over the rollout's rows, from the schedule (rowlat.h) */
    BC_FIELD_ROW_TTFT_MS_P50,
    BC_FIELD_ROW_TTFT_MS_P90,
    BC_FIELD_ROW_TTFT_MS_P99,
    BC_FIELD_ROW_TPOT_MS_P50,
    BC_FIELD_ROW_TPOT_MS_P90,
    BC_FIELD_ROW_TPOT_MS_P99,
    BC_FIELD_ROW_E2E_MS_P50,
    BC_FIELD_ROW_E2E_MS_P90,
    BC_FIELD_ROW_E2E_MS_P99,
    BC_FIELD_ROWS_PER_SECOND,       /* rows (batch x samples) over total_ms */
    /* the score stage (score.c): the scorer's forward over the rollout's
     * rows, and the gap between the rollout's and the scorer's logprobs */
    BC_FIELD_SCORE_MS,
    BC_FIELD_SCORE_TOKENS_PER_SECOND,
    BC_FIELD_LOGPROB_GAP_MEAN,
    BC_FIELD_LOGPROB_GAP_MAX,
    BC_FIELD_KL_K3,
    BC_FIELD_IMPORTANCE_RATIO_MIN,
    BC_FIELD_IMPORTANCE_RATIO_MEAN,
    BC_FIELD_IMPORTANCE_RATIO_MAX,
    /* run.refit: the refit hook before a rollout */
    BC_FIELD_REFIT_MS,
    BC_FIELD_REFIT_BYTES,
    BC_FIELD_REFIT_GB_PER_S,
    BC_FIELD_REFIT_BOUND_SHARE,
    BC_FIELD_ROLLOUT_STEP_MS,       /* refit_ms + total_ms + score_ms: the rollout side of an RL step */
    /* the RL frameworks' names (verl's), from read_rollout or the stats */
    BC_FIELD_RL_RESPONSE_LENGTH_MEAN,
    BC_FIELD_RL_RESPONSE_LENGTH_MIN,
    BC_FIELD_RL_RESPONSE_LENGTH_MAX,
    BC_FIELD_RL_RESPONSE_LENGTH_CLIP_RATIO,
    BC_FIELD_RL_TIMING_PER_TOKEN_MS_GEN,
    BC_FIELD_RL_SLOWEST_ROW_GENERATION_MS,
    BC_FIELD_RL_SLOWEST_ROW_RESPONSE_LENGTH,
    BC_N_FIELDS
} bc_field;

/* Column names of the per-iteration values, indexed by bc_field. */
extern const char *const bc_field_names[BC_N_FIELDS];

typedef struct bc_runner_reporter {
    const bc_plugin *plugin;      /* a reporter */
    const bc_settings *settings;  /* resolved; live for the run */
    const char *where;            /* where the config names it ("bench.cfg:28", "--reporter"),
                                     prefixed to its errors; may be NULL */
} bc_runner_reporter;

/* A case an earlier run finished (run --resume), taken as it was recorded
 * instead of being run again: its report's measured fields and memory, and
 * its values, n_iterations x n_fields in the earlier run's field order
 * (field_names), which the runner maps to its own columns by name (NaN
 * where the earlier run had no such field). */
typedef struct bc_prior_case {
    const bc_case_report *report;
    const double *values;
    uint32_t n_iterations;
    const char *const *field_names;
    uint32_t n_fields;
} bc_prior_case;

/* One backend instance of a run with a backends list or axes over backend
 * settings (context.h): the plan (plan.h) says which cases it runs. */
typedef struct bc_runner_backend {
    const char *label;
    const bc_plugin *plugin;
    void *instance;     /* created and described by the caller, destroyed by it after bc_run */
    const char *where;  /* "bench.cfg:7", prefixed to prepare errors; may be NULL */
    const char *const *setting_values; /* borrowed; NULL with n_settings 0 */
    size_t n_settings;
    const bc_backend_info *info; /* what describe said (vocab_size checks the rollout's ids); may be NULL */
} bc_runner_backend;

/* run.refit (the values of config.h's BC_CFG_REFIT_*). */
enum { BC_RUN_REFIT_OFF = 0, BC_RUN_REFIT_PER_ROLLOUT = 1, BC_RUN_REFIT_PER_CASE = 2 };

struct bc_plan;
struct bc_run_seam;

typedef struct bc_runner_config {
    const bc_plugin *backend;
    void *backend_instance;      /* created and described by the caller, destroyed by it after bc_run */
    const char *backend_where;   /* "bench.cfg:7", prefixed to prepare errors; may be NULL */
    /* Every backend instance, when there may be more than one (the first is
     * backend above); n_backends 0: backend runs every case. */
    const bc_runner_backend *backends;
    size_t n_backends;
    const bc_case *cases;        /* requested order (case.index: position in the whole matrix) */
    size_t n_cases;
    /* The plan of cases (plan.h; context.c builds it): the instance in
     * backends that runs each case, their execution order and rebuild
     * groups. NULL: bc_run plans the cases on backend alone, by its
     * rebuild_axes (n_backends must then be 0 or 1). */
    const struct bc_plan *plan;
    uint32_t warmup;
    uint32_t iterations;         /* the fixed count, when max_iterations is 0 */
    /* Adaptive iterations when max_iterations > 0: at least min_iterations
     * (>= 1), at most max_iterations, stopping early once stable when
     * target_rel_ci > 0 (see the stop rule above). */
    uint32_t min_iterations, max_iterations;
    double target_rel_ci;
    double max_seconds_per_case; /* > 0: caps a case's wall time (fixed or adaptive) */
    const bc_runner_reporter *reporters;
    size_t n_reporters;
    /* prior[k], when not NULL, is case k as an earlier run finished it: the
     * case is not run again; its report is taken as recorded, and handed to
     * journaling reporters like a case that just finished. May be NULL. */
    const bc_prior_case *const *prior;
    /* The run report's header (context.c fills it, including backend). The
     * runner fills n_fields, field_names, n_stats, stat_names, n_cases,
     * case_report_size, cases, the stop rule's fields (iterations,
     * min_iterations, ...) and, when 0, n_matrix_cases (= n_cases). */
    bc_run_report run;
    volatile sig_atomic_t *stop; /* may be NULL */
    /* Per-case process isolation (run.isolation = "process"): each case runs
     * in a forked child after prepare; a child that crashes, exits, or runs
     * past case_timeout_s (> 0; killed with SIGKILL) fails that case with the
     * signal or status and the tail of its stderr, and the run goes on.
     * Each increment of *stop during a case is passed on to its child as a
     * signal, SIGTERM and SIGINT in turn, whose handlers (inherited from the
     * caller, cli/cmd_run.c's) must increment *stop there. */
    int isolation;
    double case_timeout_s;
    /* What a run over several processes adds to the loop (seam.h): the
     * hooks the loop calls before and after each iteration and case. NULL:
     * one process (bc_seam_local). A distributed run's (distributed.h,
     * docs/scale.md): replicate, every rank runs every case, iterations
     * start after a barrier and the ranks agree after each (failures, stop
     * rule, interrupts), per-rank times are gathered after each case;
     * shard, the case at execution position i runs on rank i % world_size,
     * and after each round of world_size cases every rank gets the round's
     * cases. Only the caller's rank 0 passes reporters. Not with isolation
     * or prior. */
    const struct bc_run_seam *seam;
    /* The score stage (bench.cfg's score group, docs/config.md): a second
     * backend instance, created and described by the caller (destroyed by
     * it after bc_run), prepared by bc_run once after the rollout
     * backends; per case begin_case with the rollout case's shape and
     * score_precision (its ops score_precision_ops), end_case after the
     * rollout backend's. Every iteration, after post_process (and before
     * the cache policy's release), the rollout backend's read_rollout,
     * then the scorer's score, host-timed (score.h has the fields). NULL:
     * no scoring. The caller has checked the hooks (score, read_rollout). */
    const bc_runner_backend *scorer;
    const char *score_precision;
    const bc_precision_ops *score_precision_ops;
    /* run.refit (BC_RUN_REFIT_*): the rollout backend's refit hook, timed,
     * before every rollout (per_rollout, warmup included) or before the
     * case's first measured one (per_case); with it on, bc_run measures
     * the host's memcpy bandwidth once before the first case
     * (memcpy_bound.h; memcpy_probe_bytes, 0: its default) for the run
     * report's memcpy_gb_per_s and refit_bound_share. */
    int refit;
    size_t memcpy_probe_bytes;
    /* Called with a one-line message when a reporter fails; may be NULL. */
    void (*on_error)(void *ctx, const char *message);
    void *on_error_ctx;
} bc_runner_config;

/* What a run produced; everything is owned by the result. */
typedef struct bc_run_result {
    bc_case_report *cases;   /* requested order, n_cases */
    size_t n_cases;
    uint32_t rows_per_case;  /* the most measured iterations a case may run */
    /* The run's columns: the host's BC_N_FIELDS fields, then the backends'
     * declared metrics (fields.h); n_fields is fields.n. */
    bc_fields fields;
    uint32_t n_fields;
    double *values;          /* n_cases x rows_per_case x n_fields; each case report points into it */
    double *stats;           /* n_cases x n_fields x BC_N_STATS */
    bc_memory_stats *memory; /* n_cases; case report k's memory */
    char **messages;         /* n_cases, each case report's message */
    struct bc_case_tokens *tokens; /* n_cases: each case's last tokens, for the token agreement (agreement.h) */
    struct bc_schedule_store *schedules; /* n_cases: each case's last schedule (schedule.h); case report k's */
    uint32_t n_failed;       /* cases with status failed */
    uint32_t n_skipped;
    uint32_t n_rebuilds;     /* cases that built costly backend state (rebuilt = 1) */
    uint32_t n_resumed;      /* cases taken from the run being resumed (cfg->prior) */
    int interrupted;         /* *stop was set */
    int reporter_failed;     /* some reporter hook failed */
} bc_run_result;

/* 1 in the forked child of an isolated case (run.isolation = "process"),
 * for the exit guard (cli/exit_guard.c) to word its note; 0 elsewhere. */
extern volatile sig_atomic_t bc_run_in_case_child;

/* Runs everything. Returns non-OK only when the run could not start (the
 * backend's prepare failed: "backend could not start"; out of memory); case
 * failures are in res. res must be freed with bc_run_result_free in every
 * case. */
bc_status bc_run(const bc_runner_config *cfg, bc_run_result *res, bc_error *err);

/* Recomputes case k's statistics and relative CI from its measured values
 * (res->values) and n_iterations. */
void bc_run_case_stats(bc_run_result *res, size_t k);

/* 0 all ok; 130 interrupted; 1 a reporter failed; 3 a case failed. */
int bc_run_exit_status(const bc_run_result *res);

void bc_run_result_free(bc_run_result *res);

#endif
