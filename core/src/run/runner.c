/* runner.c: the measurement loop (see runner.h for the exact protocol).
 * Times are milliseconds from the monotonic clock; memory is bytes unless a
 * name says MiB. */
#define _GNU_SOURCE
#include "runner.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agreement.h"
#include "schedule.h"
#include "distributed.h"
#include "eta.h"
#include "host.h"
#include "hostload.h"
#include "matrix.h"

const char *const bc_field_names[BC_N_FIELDS] = {
    [BC_FIELD_PROMPT_EXPANSION_MS] = "prompt_expansion_ms",
    [BC_FIELD_GENERATION_MS] = "generation_ms",
    [BC_FIELD_POST_PROCESSING_MS] = "post_processing_ms",
    [BC_FIELD_TOTAL_MS] = "total_ms",
    [BC_FIELD_TOKENS_PER_SECOND] = "tokens_per_second",
    [BC_FIELD_NUM_GENERATED_TOKENS] = "num_generated_tokens",
    [BC_FIELD_PREFILL_FORWARD_MS] = "prefill_forward_ms",
    [BC_FIELD_DECODE_FORWARD_MS] = "decode_forward_ms",
    [BC_FIELD_GENERATION_OVERHEAD_MS] = "generation_overhead_ms",
    [BC_FIELD_NUM_DECODE_FORWARDS] = "num_decode_forwards",
    [BC_FIELD_CACHE_ACQUIRE_MS] = "cache_acquire_ms",
    [BC_FIELD_CACHE_RELEASE_MS] = "cache_release_ms",
    [BC_FIELD_TIME_TO_FIRST_TOKEN_MS] = "time_to_first_token_ms",
    [BC_FIELD_DECODE_MS_PER_TOKEN_P50] = "decode_ms_per_token_p50",
    [BC_FIELD_DECODE_MS_PER_TOKEN_P95] = "decode_ms_per_token_p95",
    [BC_FIELD_PREFILL_TOKENS_PER_SECOND] = "prefill_tokens_per_second",
    [BC_FIELD_DECODE_TOKENS_PER_SECOND] = "decode_tokens_per_second",
    [BC_FIELD_ENGINE_TOTAL_MS] = "engine_total_ms",
    [BC_FIELD_PROTOCOL_OVERHEAD_MS] = "protocol_overhead_ms",
    [BC_FIELD_PADDED_TOKEN_SLOTS] = "padded_token_slots",
    [BC_FIELD_PADDING_WASTE] = "padding_waste",
    [BC_FIELD_RESPONSE_LENGTH_MIN] = "response_length_min",
    [BC_FIELD_RESPONSE_LENGTH_P50] = "response_length_p50",
    [BC_FIELD_RESPONSE_LENGTH_P95] = "response_length_p95",
    [BC_FIELD_RESPONSE_LENGTH_MAX] = "response_length_max",
    [BC_FIELD_NUM_PREFILL_FORWARDS] = "num_prefill_forwards",
    [BC_FIELD_SCHEDULER_OVERHEAD_MS] = "scheduler_overhead_ms",
    [BC_FIELD_CACHE_MANAGEMENT_OVERHEAD_MS] = "cache_management_overhead_ms",
    [BC_FIELD_ACTIVE_BATCH_SIZE] = "active_batch_size",
    [BC_FIELD_CONTINUOUS_BATCH_SIZE] = "continuous_batch_size",
    [BC_FIELD_OCCUPANCY] = "occupancy",
    [BC_FIELD_KV_PAGES_PEAK] = "kv_pages_peak",
    [BC_FIELD_KV_BYTES_PEAK] = "kv_bytes_peak",
    [BC_FIELD_KV_FRAGMENTATION] = "kv_fragmentation",
    [BC_FIELD_KV_BYTES_SAVED] = "kv_bytes_saved",
    [BC_FIELD_LORA_FUSE_MS] = "lora_fuse_ms",
    [BC_FIELD_LORA_UNFUSE_MS] = "lora_unfuse_ms",
};

volatile sig_atomic_t bc_run_in_case_child;

static double ms_since(uint64_t t0) { return (double)(bc_now_ns() - t0) / 1e6; }

static int stop_level(const bc_runner_config *cfg) { return cfg->stop ? (int)*cfg->stop : 0; }

/* Resets the process peak RSS (VmHWM). Returns 0 on success. */
static int reset_peak_rss(void) {
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f) return -1;
    int ok = fputs("5", f) >= 0;
    ok &= fclose(f) == 0;
    return ok ? 0 : -1;
}

/* Process peak RSS in bytes from /proc/self/status VmHWM, -1 if unknown. */
static int64_t read_peak_rss(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    int64_t kib = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0) {
            long long v;
            if (sscanf(line + 6, "%lld", &v) == 1) kib = v;
            break;
        }
    fclose(f);
    return kib < 0 ? -1 : kib * 1024;
}

static void memory_unknown(bc_memory_stats *m) {
    *m = (bc_memory_stats){.struct_size = sizeof *m};
    m->weights_bytes = m->kv_cache_bytes = m->workspace_bytes = -1;
    m->host_peak_bytes = m->device_peak_bytes = m->device_free_bytes = m->device_total_bytes = -1;
    m->resident_bytes = -1;
}

static void generation_unknown(bc_generation_stats *g) {
    *g = (bc_generation_stats){.struct_size = sizeof *g};
    g->prefill_forward_ms = g->decode_forward_ms = g->first_token_ms = NAN;
    g->num_decode_forwards = g->num_generated_tokens = g->returned_response_length = -1;
    g->num_prefill_tokens = g->num_decode_tokens = -1;
    g->prompt_width_tokens = g->prompt_min_tokens = g->prompt_max_tokens = -1;
    g->engine_prompt_expansion_ms = g->engine_generation_ms = g->engine_post_processing_ms = NAN;
    g->token_rows = g->token_cols = g->token_stride = -1;
    g->padded_token_slots = g->num_prefill_forwards = g->continuous_batch_size = -1;
    g->response_length_min = g->response_length_p50 = g->response_length_p95 = g->response_length_max = NAN;
    g->scheduler_overhead_ms = g->cache_management_overhead_ms = g->active_batch_size = g->occupancy = NAN;
    g->kv_pages_peak = g->kv_bytes_peak = -1;
    g->kv_fragmentation = NAN;
    g->kv_bytes_saved = INT64_MIN; /* may be negative: a paged peak above the contiguous cache */
    g->lora_fuse_ms = g->lora_unfuse_ms = NAN;
    g->prompt_p50_tokens = g->prompt_pad_tokens = -1;
    g->schedule_rows = -1; /* step_active_rows, row_first_token_ms, row_done_step NULL */
}

/* The count as a field value, NaN when unknown (< 0). */
static double count_field(int64_t n) { return n >= 0 ? (double)n : NAN; }

/* count / (ms / 1000) when both are known and ms > 0, else NaN. */
static double per_second(int64_t count, double ms) {
    return count >= 0 && bc_is_measured(ms) && ms > 0 ? (double)count / (ms / 1000.0) : NAN;
}

/* The fields generate's stats give (row has the run's fields, total_ms set). */
static void fields_from_generation(const bc_generation_stats *g, double gen_ms, double expand_ms, double *row) {
    if (g->num_generated_tokens >= 0) {
        row[BC_FIELD_NUM_GENERATED_TOKENS] = (double)g->num_generated_tokens;
        row[BC_FIELD_TOKENS_PER_SECOND] = per_second(g->num_generated_tokens, gen_ms);
    }
    row[BC_FIELD_PREFILL_FORWARD_MS] = g->prefill_forward_ms;
    row[BC_FIELD_DECODE_FORWARD_MS] = g->decode_forward_ms;
    if (bc_is_measured(g->prefill_forward_ms) && bc_is_measured(g->decode_forward_ms))
        row[BC_FIELD_GENERATION_OVERHEAD_MS] = gen_ms - g->prefill_forward_ms - g->decode_forward_ms;
    if (g->num_decode_forwards >= 0) row[BC_FIELD_NUM_DECODE_FORWARDS] = (double)g->num_decode_forwards;
    if (bc_is_measured(g->first_token_ms)) row[BC_FIELD_TIME_TO_FIRST_TOKEN_MS] = expand_ms + g->first_token_ms;
    if (g->decode_step_ms && g->n_decode_steps > 0) {
        double s[BC_N_STATS];
        if (bc_stats_compute(g->decode_step_ms, g->n_decode_steps, 1, s, NULL) == BC_OK) {
            row[BC_FIELD_DECODE_MS_PER_TOKEN_P50] = s[BC_STAT_P50];
            row[BC_FIELD_DECODE_MS_PER_TOKEN_P95] = s[BC_STAT_P95];
        }
    }
    row[BC_FIELD_PREFILL_TOKENS_PER_SECOND] = per_second(g->num_prefill_tokens, g->prefill_forward_ms);
    row[BC_FIELD_DECODE_TOKENS_PER_SECOND] = per_second(g->num_decode_tokens, g->decode_forward_ms);
    row[BC_FIELD_PADDED_TOKEN_SLOTS] = count_field(g->padded_token_slots);
    row[BC_FIELD_RESPONSE_LENGTH_MIN] = g->response_length_min;
    row[BC_FIELD_RESPONSE_LENGTH_P50] = g->response_length_p50;
    row[BC_FIELD_RESPONSE_LENGTH_P95] = g->response_length_p95;
    row[BC_FIELD_RESPONSE_LENGTH_MAX] = g->response_length_max;
    row[BC_FIELD_NUM_PREFILL_FORWARDS] = count_field(g->num_prefill_forwards);
    row[BC_FIELD_SCHEDULER_OVERHEAD_MS] = g->scheduler_overhead_ms;
    row[BC_FIELD_CACHE_MANAGEMENT_OVERHEAD_MS] = g->cache_management_overhead_ms;
    row[BC_FIELD_ACTIVE_BATCH_SIZE] = g->active_batch_size;
    row[BC_FIELD_CONTINUOUS_BATCH_SIZE] = count_field(g->continuous_batch_size);
    row[BC_FIELD_OCCUPANCY] = g->occupancy;
    row[BC_FIELD_KV_PAGES_PEAK] = count_field(g->kv_pages_peak);
    row[BC_FIELD_KV_BYTES_PEAK] = count_field(g->kv_bytes_peak);
    row[BC_FIELD_KV_FRAGMENTATION] = g->kv_fragmentation;
    if (g->kv_bytes_saved != INT64_MIN) row[BC_FIELD_KV_BYTES_SAVED] = (double)g->kv_bytes_saved;
    if (bc_is_measured(g->engine_prompt_expansion_ms) && bc_is_measured(g->engine_generation_ms) &&
        bc_is_measured(g->engine_post_processing_ms))
        row[BC_FIELD_ENGINE_TOTAL_MS] = g->engine_prompt_expansion_ms + g->engine_generation_ms +
                                        g->engine_post_processing_ms;
    row[BC_FIELD_LORA_FUSE_MS] = g->lora_fuse_ms;
    row[BC_FIELD_LORA_UNFUSE_MS] = g->lora_unfuse_ms;
}

/* The fields the host derives from others of the row, once the backend's
 * figures (bc_generation_stats and declared metrics) are in. */
static void derived_fields(double *row) {
    double slots = row[BC_FIELD_PADDED_TOKEN_SLOTS], tokens = row[BC_FIELD_NUM_GENERATED_TOKENS];
    if (slots > 0 && bc_is_measured(tokens)) row[BC_FIELD_PADDING_WASTE] = 1.0 - tokens / slots;
    if (bc_is_measured(row[BC_FIELD_ENGINE_TOTAL_MS]))
        row[BC_FIELD_PROTOCOL_OVERHEAD_MS] = row[BC_FIELD_TOTAL_MS] - row[BC_FIELD_ENGINE_TOTAL_MS];
}

size_t bc_runner_backend_index(const bc_runner_backend *backends, size_t n, const bc_case *c) {
    if (n < 2 || !BC_HAS(c, bc_case, backend) || !c->backend) return 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(backends[i].label, c->backend) == 0 &&
            bc_matrix_case_has_settings(c, backends[i].setting_values, backends[i].n_settings))
            return i;
    return 0;
}

/* The backend (its index in cfg->backends) that runs case c; 0 with one. */
static size_t backend_index(const bc_runner_config *cfg, const bc_case *c) {
    return bc_runner_backend_index(cfg->backends, cfg->n_backends, c);
}

static const bc_plugin *backend_plugin(const bc_runner_config *cfg, const bc_case *c) {
    return cfg->n_backends ? cfg->backends[backend_index(cfg, c)].plugin : cfg->backend;
}

static void *backend_instance(const bc_runner_config *cfg, const bc_case *c) {
    return cfg->n_backends ? cfg->backends[backend_index(cfg, c)].instance : cfg->backend_instance;
}

/* Where one iteration stopped, when it did not complete. */
typedef struct iteration_out {
    const char *hook;        /* the hook that failed, or NULL */
    int abandoned;           /* a second interrupt: stopped after a hook */
    bc_generation_stats gen; /* what generate reported */
} iteration_out;

/* The values of the declared metrics of scope that case c's backend gives
 * (read_metrics), into their columns of row; NaN stays. */
static bc_status declared_metrics(const bc_runner_config *cfg, const bc_run_result *res, void *inst, const bc_case *c,
                                  bc_metric_scope scope, double *row, bc_error *err) {
    const bc_fields_backend *fb = &res->fields.backends[backend_index(cfg, c)];
    if (fb->n_rows == 0) return BC_OK;
    double v[BC_METRICS_MAX_PER_BACKEND];
    for (uint32_t i = 0; i < fb->n_rows; i++) v[i] = NAN;
    bc_status st = backend_plugin(cfg, c)->backend.read_metrics(inst, scope, v, fb->n_rows, err);
    if (st != BC_OK) return st;
    for (uint32_t i = 0; i < fb->n_rows; i++) {
        if (fb->scope[i] != scope || isnan(v[i])) continue;
        if (!isfinite(v[i]))
            return bc_error_set(err, BC_ERR_INVALID, "metric '%s' is %g, not a finite number",
                                res->fields.names[fb->column[i]], v[i]);
        row[fb->column[i]] = v[i];
    }
    return BC_OK;
}

/* One rollout. row (res->n_fields) gets the values. On a hook error returns
 * it, with out->hook naming the hook. */
static bc_status one_iteration(const bc_runner_config *cfg, const bc_run_result *res, void *inst, const bc_case *c,
                               int *released, double *row, iteration_out *out, bc_error *err) {
    const bc_backend_ops *ops = &backend_plugin(cfg, c)->backend;
    for (uint32_t f = 0; f < res->n_fields; f++) row[f] = NAN;
    out->hook = NULL;
    out->abandoned = 0;
    bc_status st;
    uint64_t t0;
    if (*released && ops->cache_acquire) {
        t0 = bc_now_ns();
        if ((st = ops->cache_acquire(inst, err)) != BC_OK) return out->hook = "cache_acquire", st;
        row[BC_FIELD_CACHE_ACQUIRE_MS] = ms_since(t0);
        *released = 0;
    }
    t0 = bc_now_ns();
    if ((st = ops->expand_prompts(inst, err)) != BC_OK) return out->hook = "expand_prompts", st;
    double expand_ms = ms_since(t0);
    if (stop_level(cfg) >= 2) return out->abandoned = 1, BC_OK;

    generation_unknown(&out->gen);
    t0 = bc_now_ns();
    if ((st = ops->generate(inst, &out->gen, err)) != BC_OK) return out->hook = "generate", st;
    double gen_ms = ms_since(t0);
    if (stop_level(cfg) >= 2) return out->abandoned = 1, BC_OK;

    t0 = bc_now_ns();
    if ((st = ops->post_process(inst, err)) != BC_OK) return out->hook = "post_process", st;
    double post_ms = ms_since(t0);

    if (c->release_cache && ops->cache_release) {
        t0 = bc_now_ns();
        if ((st = ops->cache_release(inst, err)) != BC_OK) return out->hook = "cache_release", st;
        row[BC_FIELD_CACHE_RELEASE_MS] = ms_since(t0);
        *released = 1;
    }

    row[BC_FIELD_PROMPT_EXPANSION_MS] = expand_ms;
    row[BC_FIELD_GENERATION_MS] = gen_ms;
    row[BC_FIELD_POST_PROCESSING_MS] = post_ms;
    row[BC_FIELD_TOTAL_MS] = expand_ms + gen_ms + post_ms;
    fields_from_generation(&out->gen, gen_ms, expand_ms, row);
    if ((st = declared_metrics(cfg, res, inst, c, BC_METRIC_PER_ITERATION, row, err)) != BC_OK)
        return out->hook = "read_metrics", st;
    derived_fields(row);
    return BC_OK;
}

/* Sets a case's message (owned by res). */
static void set_message(bc_run_result *res, size_t k, const char *fmt, ...) BC_PRINTF(3, 4);
static void set_message(bc_run_result *res, size_t k, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *msg = NULL;
    if (vasprintf(&msg, fmt, ap) < 0) msg = NULL;
    va_end(ap);
    if (!msg) return; /* keeps the previous message ("" at worst) */
    free(res->messages[k]);
    res->messages[k] = msg;
    res->cases[k].message = msg;
}

/* Records what the last completed iteration said about the prompts. */
static void note_generation(bc_case_report *cr, const bc_generation_stats *g) {
    cr->returned_response_length = g->returned_response_length;
    cr->prompt_width_tokens = g->prompt_width_tokens;
    cr->prompt_min_tokens = g->prompt_min_tokens;
    cr->prompt_max_tokens = g->prompt_max_tokens;
    cr->prompt_p50_tokens = g->prompt_p50_tokens;
    cr->prompt_pad_tokens = g->prompt_pad_tokens;
}

/* The stop rule's bounds: [lo, hi] measured iterations. */
static void iteration_bounds(const bc_runner_config *cfg, uint32_t *lo, uint32_t *hi) {
    if (cfg->max_iterations > 0) {
        *hi = cfg->max_iterations;
        *lo = cfg->min_iterations < 1 ? 1 : cfg->min_iterations > *hi ? *hi : cfg->min_iterations;
    } else {
        *lo = *hi = cfg->iterations;
    }
}

/* Marks case k skipped by an interrupt, with how far it got (hi: the most
 * measured iterations it could have run; 0 before they started). */
static void mark_interrupted(const bc_runner_config *cfg, bc_run_result *res, size_t k, const char *during,
                             uint32_t done, uint32_t hi) {
    res->cases[k].status = BC_CASE_SKIPPED;
    res->cases[k].error_code = BC_ERR_INTERRUPTED;
    res->cases[k].stop_reason = BC_STOP_INTERRUPTED;
    const char *sp = during[0] ? " " : "";
    if (hi && cfg->max_iterations > 0)
        set_message(res, k, "interrupted%s%s after %u measured iterations (at most %u)", sp, during, done, hi);
    else if (hi)
        set_message(res, k, "interrupted%s%s after %u of %u measured iterations", sp, during, done, hi);
    else
        set_message(res, k, "interrupted %s", during);
}

/* One open reporter. */
typedef struct reporter_slot {
    const bc_runner_reporter *r;
    void *inst;     /* owned by the plugin; destroyed by the runner */
    int open;       /* open succeeded */
    int journaling; /* case_finished still called */
    int progress;   /* iteration_finished still called */
} reporter_slot;

/* What the cases of one run share while it goes: the reporters, the report
 * they see, the execution order and the cost model of the ETA. */
typedef struct run_state {
    const bc_runner_config *cfg;
    bc_run_result *res;
    reporter_slot *slots;
    const bc_run_report *run; /* the finished cases so far */
    const size_t *order;      /* execution order */
    size_t position;          /* of the running case in order */
    bc_eta eta;               /* fitted on the finished cases */
    int child_fd;             /* >= 0 in an isolated case's child: events go to the parent over it */
    double *row;              /* res->n_fields: a warmup iteration's values, an event's; bc_run's */
} run_state;

static void report_error(const bc_runner_config *cfg, bc_run_result *res, const reporter_slot *s, const char *hook,
                         const bc_error *err) {
    res->reporter_failed = 1;
    if (!cfg->on_error) return;
    const char *name = s->r->plugin->desc->name, *msg = err->message[0] ? err->message : "failed";
    char line[1400];
    snprintf(line, sizeof line, "%.500s%sreporter '%s': %s: %s", s->r->where ? s->r->where : "",
             s->r->where ? ": " : "", name, hook, msg);
    cfg->on_error(cfg->on_error_ctx, line);
}

/* Whether the stable rule applies (adaptive, with a target). */
static int has_target(const bc_runner_config *cfg) { return cfg->max_iterations > 0 && cfg->target_rel_ci > 0; }

/* Measured iterations a case not yet run is expected to take (eta.h). */
static uint32_t expected_iterations(const bc_runner_config *cfg, const bc_eta *e) {
    uint32_t lo, hi;
    iteration_bounds(cfg, &lo, &hi);
    return bc_eta_expected_iterations(e, lo, hi, has_target(cfg) ? lo : hi);
}

/* The modelled wall ms of case c from its start, with e (NAN without data). */
static double predict_case_ms(const bc_runner_config *cfg, const bc_eta *e, const bc_case *c) {
    double per = bc_eta_iteration_ms(e, bc_eta_units(e, c));
    double ms = per * ((double)cfg->warmup + (double)expected_iterations(cfg, e));
    if (cfg->max_seconds_per_case > 0 && ms > cfg->max_seconds_per_case * 1000.0 + per)
        ms = cfg->max_seconds_per_case * 1000.0 + per;
    return ms;
}

/* Seconds the cases at positions from..n-1 of the order should take, with e. */
static double predict_rest_s(const run_state *rs, const bc_eta *e, size_t from) {
    double ms = 0.0;
    for (size_t i = from; i < rs->cfg->n_cases; i++) ms += predict_case_ms(rs->cfg, e, &rs->cfg->cases[rs->order[i]]);
    return ms / 1000.0;
}

/* The ETA during the running case, after warmup_done + measured_done of its
 * iterations took elapsed_ms (rel_ci: its CI so far): the case itself is a
 * point of the fit, its remaining iterations at its own pace, then the cases
 * after it. */
static double eta_running(const run_state *rs, const bc_case *c, uint32_t warmup_done, uint32_t measured_done,
                          double elapsed_ms, double rel_ci) {
    const bc_runner_config *cfg = rs->cfg;
    uint32_t done = warmup_done + measured_done, lo, hi;
    if (done == 0) return NAN;
    iteration_bounds(cfg, &lo, &hi);
    bc_eta e = rs->eta;
    double per = elapsed_ms / done;
    bc_eta_add_point(&e, bc_eta_units(&e, c), per);
    uint32_t expect = expected_iterations(cfg, &rs->eta);
    if (has_target(cfg))
        expect = bc_eta_iterations_to_target(measured_done, rel_ci, cfg->target_rel_ci, lo, hi, expect);
    uint32_t left = cfg->warmup - warmup_done;
    if (expect > measured_done) left += expect - measured_done;
    else if (measured_done < hi) left += 1;
    double case_ms = per * left;
    if (cfg->max_seconds_per_case > 0 && elapsed_ms + case_ms > cfg->max_seconds_per_case * 1000.0 + per)
        case_ms = cfg->max_seconds_per_case * 1000.0 + per - elapsed_ms;
    if (case_ms < 0) case_ms = 0;
    return case_ms / 1000.0 + predict_rest_s(rs, &e, rs->position + 1);
}

/* ------------------------------------------------ per-case process isolation
 *
 * With cfg->isolation, each case runs in a forked child (after prepare, so
 * the backend's state is inherited copy-on-write). The child runs the case
 * exactly as run_case does and sends frames to the parent over a pipe:
 *   frame  = uint32 type, uint32 payload length, payload
 *   EVENT  = frame_event: one finished iteration (warmup or measured)
 *   RESULT = the case report (raw struct, same binary), the memory stats
 *            (raw struct), n_iterations x n_fields doubles, the message
 * The parent forwards EVENTs to the reporters and keeps their values, so a
 * child that dies keeps the iterations it finished. The child's stderr goes
 * through a second pipe: passed on to ours, its tail kept for the message. */
enum { FRAME_EVENT = 1, FRAME_RESULT = 2, STDERR_TAIL = 1024, STDERR_LINES = 5 };

typedef struct frame_event {
    int32_t warmup;
    uint32_t iteration;
    double elapsed_ms, rel_ci; /* followed on the wire by the row's n_fields values */
} frame_event;

/* Writes all n bytes; 0 on success. */
static int write_all(int fd, const void *buf, size_t n) {
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int send_frame(int fd, uint32_t type, const void *a, size_t na, const void *b, size_t nb, const void *c,
                      size_t nc, const void *d, size_t nd) {
    uint32_t head[2] = {type, (uint32_t)(na + nb + nc + nd)};
    return write_all(fd, head, sizeof head) || write_all(fd, a, na) || write_all(fd, b, nb) || write_all(fd, c, nc) ||
           write_all(fd, d, nd);
}

static void child_send_event(int fd, int warmup, uint32_t iteration, const double *row, uint32_t n_fields,
                             double elapsed_ms, double rel_ci) {
    frame_event ev = {.warmup = warmup, .iteration = iteration, .elapsed_ms = elapsed_ms, .rel_ci = rel_ci};
    if (send_frame(fd, FRAME_EVENT, &ev, sizeof ev, row, n_fields * sizeof *row, NULL, 0, NULL, 0))
        syscall(SYS_exit_group, 1);
}

/* Tells the reporters that have iteration_finished about one iteration. */
static void iteration_event(run_state *rs, const bc_case *c, int warmup, uint32_t iteration, const double *row,
                            double elapsed_ms, double rel_ci) {
    const bc_runner_config *cfg = rs->cfg;
    if (rs->child_fd >= 0) {
        child_send_event(rs->child_fd, warmup, iteration, row, rs->res->n_fields, elapsed_ms, rel_ci);
        return;
    }
    int any = 0;
    for (size_t r = 0; r < cfg->n_reporters && !any; r++) any = rs->slots[r].progress;
    if (!any) return;
    uint32_t lo, hi;
    iteration_bounds(cfg, &lo, &hi);
    bc_iteration_event ev = {
        .struct_size = sizeof ev, .c = c, .position = (uint32_t)rs->position, .n_cases = (uint32_t)cfg->n_cases,
        .warmup = warmup, .iteration = iteration,
        .n_min = warmup ? cfg->warmup : lo, .n_max = warmup ? cfg->warmup : hi,
        .values = row, .case_elapsed_ms = elapsed_ms, .rel_ci = rel_ci,
        .eta_s = eta_running(rs, c, warmup ? iteration + 1 : cfg->warmup, warmup ? 0 : iteration + 1, elapsed_ms,
                             rel_ci)};
    for (size_t r = 0; r < cfg->n_reporters; r++) {
        reporter_slot *s = &rs->slots[r];
        if (!s->progress) continue;
        bc_error rerr = {0};
        if (s->r->plugin->reporter.iteration_finished(s->inst, rs->run, &ev, &rerr) != BC_OK) {
            report_error(cfg, rs->res, s, "iteration_finished", &rerr);
            s->progress = 0;
        }
    }
}

/* Why the measured iterations stop after the n-th, or BC_STOP_NONE to go on. */
static bc_stop_reason stop_rule(const bc_runner_config *cfg, uint32_t n, double rel_ci, double elapsed_ms) {
    uint32_t lo, hi;
    iteration_bounds(cfg, &lo, &hi);
    int adaptive = cfg->max_iterations > 0;
    if (adaptive && cfg->target_rel_ci > 0 && n >= lo && rel_ci <= cfg->target_rel_ci) return BC_STOP_STABLE;
    if (n >= hi) return adaptive ? BC_STOP_MAX_ITERATIONS : BC_STOP_FIXED;
    if (cfg->max_seconds_per_case > 0 && elapsed_ms >= cfg->max_seconds_per_case * 1000.0) return BC_STOP_MAX_SECONDS;
    return BC_STOP_NONE;
}

/* The relative CI of total_ms over case k's first n measured iterations. */
static double case_rel_ci(const bc_run_result *res, size_t k, uint32_t n) {
    bc_error err = {0};
    return bc_stats_median_rel_ci(res->cases[k].values + BC_FIELD_TOTAL_MS, n, res->n_fields, &err);
}

/* Case k's statistics and CI from its measured values. */
void bc_run_case_stats(bc_run_result *res, size_t k) {
    bc_case_report *cr = &res->cases[k];
    const size_t nf = res->n_fields;
    const double *values = res->values + k * (size_t)res->rows_per_case * nf;
    cr->total_ms_rel_ci = case_rel_ci(res, k, cr->n_iterations);
    for (size_t f = 0; f < nf; f++) {
        double *out = res->stats + (k * nf + f) * BC_N_STATS;
        bc_stats_compute(values + f, cr->n_iterations, nf, out, NULL); /* out is n = 0 on failure */
    }
}

/* Runs case k (requested index) with the backend instance. */
static void run_case(run_state *rs, size_t k) {
    const bc_runner_config *cfg = rs->cfg;
    bc_run_result *res = rs->res;
    const bc_case *c = &cfg->cases[k];
    const bc_backend_ops *ops = &backend_plugin(cfg, c)->backend;
    void *inst = backend_instance(cfg, c);
    bc_case_report *cr = &res->cases[k];
    const size_t nf = res->n_fields;
    double *values = res->values + k * (size_t)res->rows_per_case * nf;
    bc_dist *dist = cfg->dist && cfg->dist->mode == BC_DIST_REPLICATE ? cfg->dist : NULL;
    double *row = rs->row;
    bc_error err = {0};
    iteration_out it_out = {0};
    const char *hook = NULL;
    bc_status st;
    int released = 0;
    uint32_t lo, hi;
    iteration_bounds(cfg, &lo, &hi);
    bc_hostload load_start, load_end;
    bc_hostload_read(&load_start);
    uint64_t t_case = bc_now_ns();

    cr->status = BC_CASE_OK;
    st = ops->begin_case(inst, c, &err);
    hook = st != BC_OK ? "begin_case" : NULL;
    int stop_agreed = 0; /* distributed: the interrupt level every rank saw at the last agreement */
    if (dist) stop_agreed = bc_dist_agree(dist, &st, &hook, &err, cfg->stop, NULL); /* fails everywhere or nowhere */
    if (st != BC_OK) goto done;
    for (uint32_t w = 0; w < cfg->warmup; w++) {
        if (dist) bc_dist_barrier(dist, &err);
        st = one_iteration(cfg, res, inst, c, &released, row, &it_out, &err);
        if (dist) stop_agreed = bc_dist_agree(dist, &st, &it_out.hook, &err, cfg->stop, NULL);
        if (st != BC_OK) {
            hook = it_out.hook;
            goto done;
        }
        if (!it_out.abandoned) iteration_event(rs, c, 1, w, row, ms_since(t_case), NAN);
        if (dist ? stop_agreed : stop_level(cfg)) { /* a signal after the agreement waits for the next */
            mark_interrupted(cfg, res, k, "during warmup", 0, 0);
            goto done;
        }
    }
    if (ops->reset_peak_memory) ops->reset_peak_memory(inst);
    int rss_reset = reset_peak_rss() == 0;
    bc_memory_stats before;
    memory_unknown(&before);
    if (ops->read_memory && (st = ops->read_memory(inst, &before, &err)) != BC_OK) {
        hook = "read_memory";
        goto done;
    }
    cr->device_free_before_bytes = before.device_free_bytes;
    for (uint32_t it = 0; it < hi; it++) {
        double *out = values + (size_t)it * nf;
        if (dist) bc_dist_barrier(dist, &err); /* the ranks start together, outside the timed stages */
        st = one_iteration(cfg, res, inst, c, &released, out, &it_out, &err);
        double elapsed = ms_since(t_case);
        double rel = st == BC_OK && has_target(cfg) ? case_rel_ci(res, k, it + 1) : NAN;
        int32_t rule = st == BC_OK ? (int32_t)stop_rule(cfg, it + 1, rel, elapsed) : BC_STOP_NONE;
        if (dist) stop_agreed = bc_dist_agree(dist, &st, &it_out.hook, &err, cfg->stop, &rule); /* rank 0's rule */
        if (st != BC_OK) {
            hook = it_out.hook;
            goto done;
        }
        if (it_out.abandoned) { /* the other ranks stop after this iteration too (stop_agreed) */
            for (size_t f = 0; f < nf; f++) out[f] = NAN;
            mark_interrupted(cfg, res, k, "twice (the iteration in progress was abandoned),", it, hi);
            break;
        }
        cr->n_iterations = it + 1;
        note_generation(cr, &it_out.gen);
        bc_agreement_keep(&res->tokens[k], c, &it_out.gen);
        cr->schedule = bc_schedule_keep(&res->schedules[k], &it_out.gen);
        iteration_event(rs, c, 0, it, out, elapsed, rel);
        cr->stop_reason = (bc_stop_reason)rule;
        if (cr->stop_reason != BC_STOP_NONE) break;
        if (dist ? stop_agreed : stop_level(cfg)) { /* a signal after the agreement waits for the next */
            mark_interrupted(cfg, res, k, "", it + 1, hi);
            break;
        }
    }
    if (cr->n_iterations > 0 && (st = declared_metrics(cfg, res, inst, c, BC_METRIC_PER_CASE,
                                                        values + (size_t)(cr->n_iterations - 1) * nf, &err)) != BC_OK) {
        hook = "read_metrics";
        goto done;
    }
    bc_memory_stats *after = &res->memory[k];
    if (ops->read_memory && (st = ops->read_memory(inst, after, &err)) != BC_OK) {
        hook = "read_memory";
        goto done;
    }
    cr->device_free_after_bytes = after->device_free_bytes;
    cr->held_between_rollouts_bytes = after->resident_bytes;
    if (after->device_peak_bytes >= 0)
        cr->peak_memory_mib = (double)after->device_peak_bytes / (1024.0 * 1024.0);
    else if (after->host_peak_bytes >= 0)
        cr->peak_memory_mib = (double)after->host_peak_bytes / (1024.0 * 1024.0);
    cr->peak_rss_bytes = rss_reset ? read_peak_rss() : -1;
    st = BC_OK;
done:
    if (st != BC_OK && hook) {
        cr->status = BC_CASE_FAILED;
        cr->error_code = st;
        cr->stop_reason = BC_STOP_FAILED;
        set_message(res, k, "%s: %s", hook, err.message[0] ? err.message : "failed");
    }
    ops->end_case(inst);
    cr->wall_ms = ms_since(t_case);
    bc_hostload_read(&load_end);
    cr->load_avg_start = load_start.load_avg_1m;
    cr->load_avg_end = load_end.load_avg_1m;
    cr->cpu_steal_share = bc_hostload_steal_share(&load_start, &load_end);
    bc_run_case_stats(res, k);
    if (dist) bc_dist_replicate_collect(dist, res, k);
}

/* The child's stderr: passed through to ours, the last STDERR_TAIL bytes kept. */
typedef struct stderr_tail {
    char buf[STDERR_TAIL];
    size_t n;
} stderr_tail;

static void tail_add(stderr_tail *t, const char *data, size_t n) {
    if (write_all(STDERR_FILENO, data, n)) { /* ours is gone: keep the tail anyway */
    }
    if (n >= sizeof t->buf) {
        memcpy(t->buf, data + n - sizeof t->buf, sizeof t->buf);
        t->n = sizeof t->buf;
        return;
    }
    if (t->n + n > sizeof t->buf) {
        size_t drop = t->n + n - sizeof t->buf;
        memmove(t->buf, t->buf + drop, t->n - drop);
        t->n -= drop;
    }
    memcpy(t->buf + t->n, data, n);
    t->n += n;
}

/* The last STDERR_LINES non-empty lines of the tail, joined by " | ", into out. */
static void tail_lines(const stderr_tail *t, char *out, size_t cap) {
    out[0] = '\0';
    size_t end = t->n, starts[STDERR_LINES], ends[STDERR_LINES], found = 0;
    while (end > 0 && found < STDERR_LINES) {
        while (end > 0 && (t->buf[end - 1] == '\n' || t->buf[end - 1] == '\r')) end--;
        if (end == 0) break;
        size_t start = end;
        while (start > 0 && t->buf[start - 1] != '\n') start--;
        starts[found] = start, ends[found] = end, found++;
        end = start;
    }
    size_t used = 0;
    for (size_t i = found; i-- > 0 && used + 1 < cap;) {
        int w = snprintf(out + used, cap - used, "%s%.*s", used ? " | " : "", (int)(ends[i] - starts[i]),
                         t->buf + starts[i]);
        if (w < 0) break;
        used += (size_t)w;
        if (used >= cap) used = cap - 1;
    }
    for (char *c = out; *c; c++)
        if ((unsigned char)*c < 0x20) *c = ' '; /* one line */
}

/* Parent: handles one complete frame from the child. Returns 1 for RESULT. */
static int parent_frame(run_state *rs, size_t k, uint32_t type, const unsigned char *p, size_t n,
                        uint32_t *n_measured) {
    bc_run_result *res = rs->res;
    bc_case_report *cr = &res->cases[k];
    const size_t nf = res->n_fields;
    double *values = res->values + k * (size_t)res->rows_per_case * nf;
    if (type == FRAME_EVENT && n == sizeof(frame_event) + nf * sizeof(double)) {
        frame_event ev;
        memcpy(&ev, p, sizeof ev);
        memcpy(rs->row, p + sizeof ev, nf * sizeof(double));
        if (!ev.warmup && ev.iteration < res->rows_per_case) {
            memcpy(values + (size_t)ev.iteration * nf, rs->row, nf * sizeof(double));
            *n_measured = ev.iteration + 1;
        }
        iteration_event(rs, cr->c, ev.warmup, ev.iteration, rs->row, ev.elapsed_ms, ev.rel_ci);
        return 0;
    }
    if (type != FRAME_RESULT || n < sizeof(bc_case_report) + sizeof(bc_memory_stats)) return 0;
    bc_case_report got;
    memcpy(&got, p, sizeof got);
    p += sizeof got, n -= sizeof got;
    memcpy(&res->memory[k], p, sizeof res->memory[k]);
    p += sizeof res->memory[k], n -= sizeof res->memory[k];
    if (got.n_iterations > res->rows_per_case || n < (size_t)got.n_iterations * nf * sizeof(double)) return 0;
    size_t nv = (size_t)got.n_iterations * nf * sizeof(double);
    memcpy(values, p, nv);
    p += nv, n -= nv;
    /* the scalars are the child's; the pointers stay the parent's */
    got.c = cr->c;
    got.values = cr->values;
    got.stats = cr->stats;
    got.memory = &res->memory[k];
    got.message = cr->message;
    got.schedule = NULL; /* the child's, which stayed there */
    *cr = got;
    if (n) set_message(res, k, "%.*s", (int)(n > 4096 ? 4096 : n), (const char *)p);
    return 1;
}

/* A signal's name: "SIGSEGV", or "signal 42". */
static const char *signal_str(int sig, char *buf, size_t n) {
    const char *abbrev = sigabbrev_np(sig);
    if (abbrev) snprintf(buf, n, "SIG%s", abbrev);
    else snprintf(buf, n, "signal %d", sig);
    return buf;
}

/* Runs case k in a forked child (the protocol above); the parent keeps the
 * reporters, forwards interrupts, enforces cfg->case_timeout_s and turns a
 * child that dies into a failed case. */
static void run_case_isolated(run_state *rs, size_t k) {
    const bc_runner_config *cfg = rs->cfg;
    bc_run_result *res = rs->res;
    bc_case_report *cr = &res->cases[k];
    int rp[2] = {-1, -1}, ep[2] = {-1, -1};
    bc_hostload load_start, load_end;
    bc_hostload_read(&load_start);
    uint64_t t_case = bc_now_ns();
    if (pipe(rp) != 0 || pipe(ep) != 0) {
        int e = errno;
        for (int i = 0; i < 2; i++) {
            if (rp[i] >= 0) close(rp[i]);
            if (ep[i] >= 0) close(ep[i]);
        }
        cr->status = BC_CASE_FAILED, cr->error_code = BC_ERR_INTERNAL, cr->stop_reason = BC_STOP_FAILED;
        set_message(res, k, "isolation: cannot create a pipe: %s", strerror(e));
        return;
    }
    fflush(NULL); /* the child must not write our buffered output again */
    pid_t parent = getpid();
    /* Signals are held from reading the stop level until the child is in its
     * own process group: the child starts with exactly the level the parent
     * counts as already forwarded, and one that comes meanwhile is forwarded
     * once, not lost (it would be if it came between fork and reading the
     * level) and not also inherited. */
    sigset_t all, old_mask;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, &old_mask);
    int forwarded = stop_level(cfg);
    pid_t pid = fork();
    if (pid > 0) setpgid(pid, pid); /* also in the child: whichever runs first */
    if (pid != 0) sigprocmask(SIG_SETMASK, &old_mask, NULL);
    if (pid < 0) {
        int e = errno;
        close(rp[0]), close(rp[1]), close(ep[0]), close(ep[1]);
        cr->status = BC_CASE_FAILED, cr->error_code = BC_ERR_INTERNAL, cr->stop_reason = BC_STOP_FAILED;
        set_message(res, k, "isolation: cannot fork: %s", strerror(e));
        return;
    }
    if (pid == 0) { /* the child: run the case, send the result, leave without cleanup */
        close(rp[0]), close(ep[0]);
        bc_run_in_case_child = 1;
        setpgid(0, 0); /* terminal signals reach the parent only; it forwards them */
        sigprocmask(SIG_SETMASK, &old_mask, NULL);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) syscall(SYS_exit_group, 1);
        signal(SIGPIPE, SIG_DFL);
        if (dup2(ep[1], STDERR_FILENO) < 0) syscall(SYS_exit_group, 1);
        close(ep[1]);
        rs->child_fd = rp[1];
        run_case(rs, k);
        double *values = res->values + k * (size_t)res->rows_per_case * res->n_fields;
        const char *msg = cr->message ? cr->message : "";
        int bad = send_frame(rp[1], FRAME_RESULT, cr, sizeof *cr, &res->memory[k], sizeof res->memory[k], values,
                             (size_t)cr->n_iterations * res->n_fields * sizeof(double), msg, strlen(msg));
        fflush(NULL);
        syscall(SYS_exit_group, bad ? 1 : 0);
    }
    close(rp[1]), close(ep[1]);
    fcntl(rp[0], F_SETFL, fcntl(rp[0], F_GETFL) | O_NONBLOCK);
    fcntl(ep[0], F_SETFL, fcntl(ep[0], F_GETFL) | O_NONBLOCK);

    stderr_tail tail = {.n = 0};
    unsigned char *buf = NULL; /* received bytes not yet parsed, owned here */
    size_t used = 0, cap = 0;
    uint32_t n_measured = 0;
    int got_result = 0, timed_out = 0, exited = 0, status = 0;
    int open_r = 1, open_e = 1;
    while (!exited || open_r || open_e) {
        int level = stop_level(cfg);
        /* one per signal we got, alternating SIGTERM and SIGINT: two of the
         * same sent back to back merge into one if the child has not run its
         * handler in between, and a second interrupt would be lost */
        for (; forwarded < level; forwarded++) kill(pid, forwarded % 2 ? SIGINT : SIGTERM);
        int wait_ms = 100;
        if (cfg->case_timeout_s > 0 && !timed_out) {
            double left = cfg->case_timeout_s * 1000.0 - ms_since(t_case);
            if (left <= 0) {
                kill(pid, SIGKILL);
                timed_out = 1;
            } else if (left < wait_ms) {
                wait_ms = (int)left + 1;
            }
        }
        if (!open_r && !open_e && !exited) { /* both pipes closed: the child is ending */
            if (cfg->case_timeout_s <= 0 || timed_out) {
                if (waitpid(pid, &status, 0) == pid) exited = 1;
                continue;
            }
            wait_ms = 1;
        }
        struct pollfd fds[2] = {{.fd = open_r ? rp[0] : -1, .events = POLLIN},
                                {.fd = open_e ? ep[0] : -1, .events = POLLIN}};
        int ready = poll(fds, 2, exited ? 0 : wait_ms);
        if (ready < 0 && errno != EINTR) break;
        int got_any = 0;
        for (int i = 0; i < 2 && ready > 0; i++) {
            if (!fds[i].revents) continue;
            char chunk[16384];
            ssize_t r = read(fds[i].fd, chunk, sizeof chunk);
            if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
            if (r <= 0) {
                if (i == 0) open_r = 0;
                else open_e = 0;
                continue;
            }
            got_any = 1;
            if (i == 1) {
                tail_add(&tail, chunk, (size_t)r);
                continue;
            }
            if (used + (size_t)r > cap) {
                size_t ncap = cap ? cap * 2 : 65536;
                while (ncap < used + (size_t)r) ncap *= 2;
                unsigned char *grown = realloc(buf, ncap);
                if (!grown) {
                    kill(pid, SIGKILL);
                    open_r = 0;
                    continue;
                }
                buf = grown, cap = ncap;
            }
            memcpy(buf + used, chunk, (size_t)r);
            used += (size_t)r;
            size_t at = 0;
            while (used - at >= 8) {
                uint32_t head[2];
                memcpy(head, buf + at, sizeof head);
                if (used - at - 8 < head[1]) break;
                got_result |= parent_frame(rs, k, head[0], buf + at + 8, head[1], &n_measured);
                at += 8 + (size_t)head[1];
            }
            memmove(buf, buf + at, used - at);
            used -= at;
        }
        if (!exited && waitpid(pid, &status, WNOHANG) == pid) exited = 1;
        /* a child gone whose pipes a grandchild still holds: stop once drained */
        if (exited && !got_any) break;
    }
    if (!exited) waitpid(pid, &status, 0);
    close(rp[0]), close(ep[0]);
    free(buf);

    int clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (got_result && clean && !timed_out) {
        bc_run_case_stats(res, k); /* from the values the child sent */
        return;
    }
    /* the child died: the case failed, with what it measured before */
    char why[160], sig[32], lines[STDERR_TAIL + 64];
    if (timed_out)
        snprintf(why, sizeof why, "timed out after run.case_timeout_s = %g s; its process was killed", cfg->case_timeout_s);
    else if (WIFSIGNALED(status))
        snprintf(why, sizeof why, "its process was killed by %s (%s)%s", signal_str(WTERMSIG(status), sig, sizeof sig),
                 strsignal(WTERMSIG(status)),
                 WTERMSIG(status) == SIGKILL ? "; the kernel's out-of-memory killer sends SIGKILL" : "");
    else if (WIFEXITED(status) && !got_result)
        snprintf(why, sizeof why, "its process exited with status %d before sending its results", WEXITSTATUS(status));
    else
        snprintf(why, sizeof why, "its process exited with status %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    tail_lines(&tail, lines, sizeof lines);
    cr->status = BC_CASE_FAILED;
    cr->error_code = BC_ERR_INTERNAL;
    cr->stop_reason = BC_STOP_FAILED;
    if (!got_result) cr->n_iterations = n_measured;
    cr->wall_ms = ms_since(t_case);
    bc_hostload_read(&load_end);
    cr->load_avg_start = load_start.load_avg_1m;
    cr->load_avg_end = load_end.load_avg_1m;
    cr->cpu_steal_share = bc_hostload_steal_share(&load_start, &load_end);
    set_message(res, k, "case process: %s%s%s", why, lines[0] ? "; its stderr ended: " : "", lines);
    bc_run_case_stats(res, k);
}

static bc_status result_alloc(const bc_runner_config *cfg, bc_run_result *res, bc_error *err) {
    size_t n = cfg->n_cases;
    uint32_t lo, hi;
    iteration_bounds(cfg, &lo, &hi);
    res->n_cases = n;
    res->rows_per_case = hi; /* every case may run the most iterations the rule allows */
    const size_t nf = res->n_fields;
    res->cases = calloc(n ? n : 1, sizeof *res->cases);
    if (n && (size_t)hi > SIZE_MAX / sizeof(double) / nf / n)
        return bc_error_set(err, BC_ERR_NOMEM, "runner: %zu cases x %u iterations do not fit in memory", n, hi);
    res->values = calloc(n * (size_t)hi * nf + 1, sizeof *res->values);
    res->stats = calloc(n * nf * BC_N_STATS + 1, sizeof *res->stats);
    res->memory = calloc(n ? n : 1, sizeof *res->memory);
    res->messages = calloc(n ? n : 1, sizeof *res->messages);
    res->tokens = calloc(n ? n : 1, sizeof *res->tokens);
    res->schedules = calloc(n ? n : 1, sizeof *res->schedules);
    if (!res->cases || !res->values || !res->stats || !res->memory || !res->messages || !res->tokens ||
        !res->schedules)
        return bc_error_set(err, BC_ERR_NOMEM, "runner: out of memory for %zu cases", n);
    for (size_t k = 0; k < n; k++) {
        bc_case_report *cr = &res->cases[k];
        cr->struct_size = sizeof *cr;
        cr->c = &cfg->cases[k];
        cr->status = BC_CASE_SKIPPED;
        cr->error_code = BC_OK;
        cr->message = "";
        cr->values = res->values + k * (size_t)hi * nf;
        cr->stats = res->stats + k * nf * BC_N_STATS;
        cr->returned_response_length = -1;
        cr->prompt_width_tokens = cr->prompt_min_tokens = cr->prompt_max_tokens = -1;
        cr->prompt_p50_tokens = cr->prompt_pad_tokens = -1;
        cr->peak_memory_mib = NAN;
        memory_unknown(&res->memory[k]);
        cr->memory = &res->memory[k];
        cr->held_between_rollouts_bytes = -1;
        cr->peak_rss_bytes = -1;
        cr->device_free_before_bytes = cr->device_free_after_bytes = -1;
        cr->wall_ms = NAN;
        cr->stop_reason = BC_STOP_NONE;
        cr->total_ms_rel_ci = cr->load_avg_start = cr->load_avg_end = cr->cpu_steal_share = NAN;
        cr->token_agreement = NAN;
        for (size_t f = 0; f < nf; f++) {
            double *s = res->stats + (k * nf + f) * BC_N_STATS;
            s[BC_STAT_N] = 0.0;
            for (int j = 1; j < BC_N_STATS; j++) s[j] = NAN;
        }
    }
    return BC_OK;
}

/* Case k as an earlier run recorded it (bc_prior_case): values (as many as
 * fit), statistics recomputed from them, and the recorded measurements. */
static void adopt_prior(const bc_runner_config *cfg, bc_run_result *res, size_t k) {
    const bc_prior_case *p = cfg->prior[k];
    const bc_case_report *from = p->report;
    bc_case_report *cr = &res->cases[k];
    uint32_t n_it = p->n_iterations < res->rows_per_case ? p->n_iterations : res->rows_per_case;
    const size_t nf = res->n_fields;
    double *values = res->values + k * (size_t)res->rows_per_case * nf;
    for (size_t f = 0; f < nf; f++) { /* the earlier run's columns, by name */
        int g = bc_find_name_(p->field_names, p->n_fields, res->fields.names[f]);
        for (uint32_t it = 0; it < n_it; it++)
            values[(size_t)it * nf + f] = g < 0 ? NAN : p->values[(size_t)it * p->n_fields + (size_t)g];
        bc_stats_compute(values + f, n_it, nf, res->stats + (k * nf + f) * BC_N_STATS, NULL);
    }
    cr->status = BC_CASE_OK;
    cr->error_code = BC_OK;
    cr->n_iterations = n_it;
    cr->returned_response_length = from->returned_response_length;
    cr->prompt_width_tokens = from->prompt_width_tokens;
    cr->prompt_min_tokens = from->prompt_min_tokens;
    cr->prompt_max_tokens = from->prompt_max_tokens;
    cr->prompt_p50_tokens = from->prompt_p50_tokens;
    cr->prompt_pad_tokens = from->prompt_pad_tokens;
    cr->peak_memory_mib = from->peak_memory_mib;
    if (from->memory) res->memory[k] = *from->memory;
    res->memory[k].struct_size = sizeof res->memory[k];
    cr->held_between_rollouts_bytes = from->held_between_rollouts_bytes;
    cr->peak_rss_bytes = from->peak_rss_bytes;
    cr->device_free_before_bytes = from->device_free_before_bytes;
    cr->device_free_after_bytes = from->device_free_after_bytes;
    cr->wall_ms = from->wall_ms;
    cr->rebuilt = from->rebuilt;
    cr->total_ms_rel_ci = from->total_ms_rel_ci;
    cr->load_avg_start = from->load_avg_start;
    cr->load_avg_end = from->load_avg_end;
    cr->cpu_steal_share = from->cpu_steal_share;
    cr->stop_reason = from->stop_reason;
    if (BC_ELEM_HAS(from->struct_size, bc_case_report, token_agreement)) cr->token_agreement = from->token_agreement;
    if (BC_ELEM_HAS(from->struct_size, bc_case_report, schedule))
        cr->schedule = bc_schedule_copy(&res->schedules[k], from->schedule);
}

/* Opens every reporter; a failure is reported and the others carry on. */
static void open_reporters(const bc_runner_config *cfg, const bc_run_report *run, reporter_slot *slots,
                           bc_run_result *res) {
    for (size_t r = 0; r < cfg->n_reporters; r++) {
        reporter_slot *s = &slots[r];
        s->r = &cfg->reporters[r];
        const bc_plugin *p = s->r->plugin;
        bc_error rerr = {0};
        if (p->reporter.open(&p->host, s->r->settings, run, &s->inst, &rerr) != BC_OK) {
            report_error(cfg, res, s, "open", &rerr);
            continue;
        }
        s->open = 1;
        s->journaling = 1;
        s->progress = p->reporter.iteration_finished != NULL; /* NULL from a 2.0 plugin (loader.h) */
    }
}

/* Tells the journaling reporters case k finished. */
static void journal_case(const bc_runner_config *cfg, const bc_run_report *run, reporter_slot *slots,
                         bc_run_result *res, size_t k) {
    for (size_t r = 0; r < cfg->n_reporters; r++) {
        reporter_slot *s = &slots[r];
        if (!s->journaling || !s->r->plugin->reporter.case_finished) continue;
        bc_error rerr = {0};
        if (s->r->plugin->reporter.case_finished(s->inst, run, &res->cases[k], &rerr) != BC_OK) {
            report_error(cfg, res, s, "case_finished", &rerr);
            s->journaling = 0;
        }
    }
}

/* Closes and destroys every reporter. */
static void close_reporters(const bc_runner_config *cfg, const bc_run_report *run, reporter_slot *slots,
                            bc_run_result *res) {
    for (size_t r = 0; r < cfg->n_reporters; r++) {
        reporter_slot *s = &slots[r];
        if (s->open) {
            bc_error rerr = {0};
            if (s->r->plugin->reporter.close(s->inst, run, &rerr) != BC_OK) report_error(cfg, res, s, "close", &rerr);
        }
        if (s->inst) s->r->plugin->reporter.destroy(s->inst);
    }
}

/* The run's columns (fields.h): the host's fields, then each backend's
 * metric table, its descriptor's rows and then its instance's more_metrics
 * rows; res->fields.backends[b] is backend b's (cfg->backends order). */
static bc_status build_fields(const bc_runner_config *cfg, bc_run_result *res, bc_error *err) {
    bc_status st = bc_fields_init(&res->fields, err);
    size_t nb = cfg->n_backends ? cfg->n_backends : 1;
    for (size_t b = 0; st == BC_OK && b < nb; b++) {
        const bc_plugin *p = cfg->n_backends ? cfg->backends[b].plugin : cfg->backend;
        void *inst = cfg->n_backends ? cfg->backends[b].instance : cfg->backend_instance;
        char who[160];
        snprintf(who, sizeof who, "backend '%s'", cfg->n_backends ? cfg->backends[b].label : p->desc->name);
        if ((st = bc_fields_begin_backend(&res->fields, err)) != BC_OK) break;
        st = bc_fields_add_rows(&res->fields, who, p->desc->metrics, p->desc->n_metrics, p->desc->metric_size, err);
        if (st == BC_OK && p->backend.more_metrics) {
            const bc_metric_desc *rows = NULL;
            uint32_t n_rows = 0, row_size = 0;
            if ((st = p->backend.more_metrics(inst, &rows, &n_rows, &row_size, err)) != BC_OK) break;
            st = bc_fields_add_rows(&res->fields, who, rows, n_rows, row_size, err);
        }
        if (st == BC_OK && res->fields.backends[b].n_rows && !p->backend.read_metrics)
            st = bc_error_set(err, BC_ERR_INVALID, "%s declares metrics but has no read_metrics hook", who);
    }
    res->n_fields = res->fields.n;
    return st;
}

bc_status bc_run(const bc_runner_config *cfg, bc_run_result *res, bc_error *err) {
    *res = (bc_run_result){0};
    bc_status st = build_fields(cfg, res, err);
    if (st == BC_OK) st = result_alloc(cfg, res, err);
    if (st != BC_OK) return st;
    if (cfg->dist && (cfg->isolation || cfg->prior))
        return bc_error_set(err, BC_ERR_SETTING, "a distributed run cannot use %s",
                            cfg->isolation ? "run.isolation = \"process\"" : "--resume");
    if (cfg->dist && (st = bc_dist_results_alloc(cfg->dist, cfg->n_cases, err)) != BC_OK) return st;
    size_t n = cfg->n_cases;
    size_t *order = calloc(n ? n : 1, sizeof *order);                   /* execution order, owned here */
    bc_case_report *finished = calloc(n ? n : 1, sizeof *finished);     /* scratch for case_finished */
    unsigned char *done = calloc(n ? n : 1, 1);                         /* done[k]: case k finished */
    reporter_slot *slots = calloc(cfg->n_reporters + 1, sizeof *slots); /* owned here */
    double *row = calloc(res->n_fields, sizeof *row);                   /* run_state's, owned here */
    if (!order || !finished || !done || !slots || !row) {
        free(order), free(finished), free(done), free(slots), free(row);
        return bc_error_set(err, BC_ERR_NOMEM, "runner: out of memory");
    }
    uint32_t axes = bc_matrix_rebuild_axes(cfg->backend->backend.rebuild_axes);
    for (size_t b = 1; b < cfg->n_backends; b++) axes |= bc_matrix_rebuild_axes(cfg->backends[b].plugin->backend.rebuild_axes);
    bc_matrix_execution_order(cfg->cases, n, axes, order);

    const bc_runner_backend one = {.plugin = cfg->backend, .instance = cfg->backend_instance, .where = cfg->backend_where};
    for (size_t b = 0; b < (cfg->n_backends ? cfg->n_backends : 1); b++) {
        const bc_runner_backend *rb = cfg->n_backends ? &cfg->backends[b] : &one;
        const bc_plugin *be = rb->plugin;
        /* an instance none of the (selected) cases runs on is not prepared */
        int runs_a_case = !cfg->n_backends;
        for (size_t k = 0; k < n && !runs_a_case; k++) runs_a_case = backend_index(cfg, &cfg->cases[k]) == b;
        if (!runs_a_case) continue;
        st = be->backend.prepare ? be->backend.prepare(rb->instance, err) : BC_OK;
        if (cfg->dist) st = bc_dist_agree_status(cfg->dist, st, err); /* every rank starts, or none */
        if (st == BC_OK) continue;
        char msg[sizeof err->message + 512];
        snprintf(msg, sizeof msg, "%.300s%sbackend '%s' could not start: prepare: %s", rb->where ? rb->where : "",
                 rb->where ? ": " : "", be->desc->name, err->message);
        char hint[sizeof err->hint];
        memcpy(hint, err->hint, sizeof hint);
        bc_error_set(err, st, "%s", msg);
        memcpy(err->hint, hint, sizeof hint);
        free(order), free(finished), free(done), free(slots), free(row);
        return st;
    }

    uint32_t lo, hi;
    iteration_bounds(cfg, &lo, &hi);
    bc_run_report run = cfg->run;
    run.struct_size = sizeof run;
    run.iterations = hi;
    run.min_iterations = lo;
    run.max_iterations = hi;
    run.target_rel_ci = cfg->max_iterations > 0 && cfg->target_rel_ci > 0 ? cfg->target_rel_ci : NAN;
    run.max_seconds_per_case = cfg->max_seconds_per_case > 0 ? cfg->max_seconds_per_case : NAN;
    if (run.n_matrix_cases == 0) run.n_matrix_cases = (uint32_t)n;
    run.n_fields = res->n_fields;
    run.field_names = res->fields.names;
    run.field_descs = res->fields.descs;
    run.field_desc_size = sizeof *res->fields.descs;
    run.n_host_fields = BC_N_FIELDS;
    run.n_stats = BC_N_STATS;
    run.stat_names = bc_stat_names;
    run.case_report_size = sizeof(bc_case_report);
    run.n_cases = 0;
    run.cases = finished;
    run.distributed = cfg->dist ? &cfg->dist->report : NULL;
    open_reporters(cfg, &run, slots, res);

    run_state rs = {.cfg = cfg, .res = res, .slots = slots, .run = &run, .order = order, .child_fd = -1,
                     .row = row};
    bc_dist *shard = cfg->dist && cfg->dist->mode == BC_DIST_SHARD ? cfg->dist : NULL;
    size_t world = shard ? (size_t)shard->world_size : 1, mine = shard ? (size_t)shard->rank : 0;
    int64_t round_case = -1; /* shard: the case this rank ran in the current round */
    for (size_t i = 0; i < n; i++) {
        size_t k = order[i];
        const bc_case *c = &cfg->cases[k];
        if (shard && i % world != mine) goto round_end; /* another rank's case */
        if (cfg->prior && cfg->prior[k]) { /* finished by the run being resumed */
            adopt_prior(cfg, res, k);
            res->n_resumed++;
            done[k] = 1;
            run.n_cases = 0;
            for (size_t j = 0; j < n; j++)
                if (done[j]) finished[run.n_cases++] = res->cases[j];
            journal_case(cfg, &run, slots, res, k);
            continue;
        }
        /* the first case run after a resumed one builds the backend's state */
        res->cases[k].rebuilt = i < world || (cfg->prior && cfg->prior[order[i - world]]) ||
                                !bc_matrix_same_group(&cfg->cases[order[i - world]], c, axes);
        res->n_rebuilds += (uint32_t)res->cases[k].rebuilt;
        int stop_now = stop_level(cfg);
        if (cfg->dist && !shard) { /* replicate: every rank runs the case, or none */
            bc_status ok = BC_OK;
            const char *no_hook = NULL;
            bc_error no_err = {0};
            stop_now = bc_dist_agree(cfg->dist, &ok, &no_hook, &no_err, cfg->stop, NULL);
        }
        if (stop_now) {
            res->interrupted = 1;
            mark_interrupted(cfg, res, k, "before the case started", 0, 0);
            res->cases[k].stop_reason = BC_STOP_NONE; /* it never ran */
            round_case = (int64_t)k;
            goto round_end;
        }
        rs.position = i;
        double eta_s = predict_rest_s(&rs, &rs.eta, i);
        for (size_t r = 0; r < cfg->n_reporters; r++)
            if (slots[r].open && slots[r].r->plugin->reporter.case_started)
                slots[r].r->plugin->reporter.case_started(slots[r].inst, c, (uint32_t)i, (uint32_t)n, eta_s);
        if (cfg->isolation) run_case_isolated(&rs, k);
        else run_case(&rs, k);
        if (stop_level(cfg)) res->interrupted = 1;
        const bc_case_report *cr = &res->cases[k];
        bc_eta_add(&rs.eta, bc_eta_units(&rs.eta, c), cfg->warmup, cr->n_iterations, cr->wall_ms,
                   cr->prompt_width_tokens);
        if (shard) {
            round_case = (int64_t)k;
            goto round_end;
        }
        done[k] = 1;
        run.n_cases = 0;
        for (size_t j = 0; j < n; j++)
            if (done[j]) finished[run.n_cases++] = res->cases[j];
        journal_case(cfg, &run, slots, res, k);
        continue;
    round_end: /* shard: once every rank ran its case of the round, all of them are everyone's */
        if (!shard || (i % world != world - 1 && i != n - 1)) continue;
        bc_dist_shard_exchange(shard, res, round_case, cfg->stop);
        if (stop_level(cfg)) res->interrupted = 1;
        round_case = -1;
        for (size_t j = i - i % world; j <= i; j++) {
            done[order[j]] = 1;
            run.n_cases = 0;
            for (size_t q = 0; q < n; q++)
                if (done[q]) finished[run.n_cases++] = res->cases[q];
            journal_case(cfg, &run, slots, res, order[j]);
        }
    }
    for (size_t k = 0; k < n; k++) {
        if (res->cases[k].status == BC_CASE_FAILED) res->n_failed++;
        if (res->cases[k].status == BC_CASE_SKIPPED) res->n_skipped++;
    }

    /* shard: a case and its first backend's run may sit on different ranks,
     * whose tokens stay there; token_agreement stays NAN (docs/config.md) */
    if (!shard) bc_agreement_compute(cfg->cases, n, res->tokens, res->cases);
    run.n_cases = (uint32_t)n;
    run.cases = res->cases;
    close_reporters(cfg, &run, slots, res);
    free(order), free(finished), free(done), free(slots), free(row);
    return BC_OK;
}

int bc_run_exit_status(const bc_run_result *res) {
    if (res->interrupted) return 130;
    if (res->reporter_failed) return 1;
    if (res->n_failed) return 3;
    return 0;
}

void bc_run_result_free(bc_run_result *res) {
    if (res->messages)
        for (size_t k = 0; k < res->n_cases; k++) free(res->messages[k]);
    free(res->messages);
    free(res->cases);
    free(res->values);
    free(res->stats);
    free(res->memory);
    bc_agreement_free(res->tokens, res->n_cases);
    bc_schedule_free(res->schedules, res->n_cases);
    bc_fields_free(&res->fields);
    *res = (bc_run_result){0};
}
