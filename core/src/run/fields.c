/* fields.c: the run's field table, the host's descriptors and the merge of
 * the backends' declared metrics (see fields.h). */
#define _POSIX_C_SOURCE 200809L
#include "fields.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner.h"

#define HOST(field, n, u, b, h) [field] = {.name = n, .unit = u, .better = BC_BETTER_##b, .help = h}

const bc_metric_desc bc_host_field_descs[BC_N_FIELDS] = {
    HOST(BC_FIELD_PROMPT_EXPANSION_MS, "prompt_expansion_ms", "ms", LOWER, "the expand_prompts hook, host-timed"),
    HOST(BC_FIELD_GENERATION_MS, "generation_ms", "ms", LOWER, "the generate hook, host-timed"),
    HOST(BC_FIELD_POST_PROCESSING_MS, "post_processing_ms", "ms", LOWER, "the post_process hook, host-timed"),
    HOST(BC_FIELD_TOTAL_MS, "total_ms", "ms", LOWER, "the three stages of one rollout"),
    HOST(BC_FIELD_TOKENS_PER_SECOND, "tokens_per_second", "tokens/s", HIGHER,
         "generated tokens over generation_ms"),
    HOST(BC_FIELD_NUM_GENERATED_TOKENS, "num_generated_tokens", "tokens", NEITHER, "tokens produced, all rows"),
    HOST(BC_FIELD_PREFILL_FORWARD_MS, "prefill_forward_ms", "ms", LOWER, "the prefill forward, backend-timed"),
    HOST(BC_FIELD_DECODE_FORWARD_MS, "decode_forward_ms", "ms", LOWER, "the decode forwards, backend-timed"),
    HOST(BC_FIELD_GENERATION_OVERHEAD_MS, "generation_overhead_ms", "ms", LOWER,
         "generation_ms minus the prefill and decode forwards"),
    HOST(BC_FIELD_NUM_DECODE_FORWARDS, "num_decode_forwards", "forwards", NEITHER, "decode forwards run"),
    HOST(BC_FIELD_CACHE_ACQUIRE_MS, "cache_acquire_ms", "ms", LOWER, "the cache_acquire hook, when it ran"),
    HOST(BC_FIELD_CACHE_RELEASE_MS, "cache_release_ms", "ms", LOWER, "the cache_release hook, when it ran"),
    HOST(BC_FIELD_TIME_TO_FIRST_TOKEN_MS, "time_to_first_token_ms", "ms", LOWER,
         "prompt_expansion_ms plus the backend's first-token time"),
    HOST(BC_FIELD_DECODE_MS_PER_TOKEN_P50, "decode_ms_per_token_p50", "ms", LOWER,
         "median decode step of the rollout"),
    HOST(BC_FIELD_DECODE_MS_PER_TOKEN_P95, "decode_ms_per_token_p95", "ms", LOWER,
         "95th percentile decode step of the rollout"),
    HOST(BC_FIELD_PREFILL_TOKENS_PER_SECOND, "prefill_tokens_per_second", "tokens/s", HIGHER,
         "prefill token slots over prefill_forward_ms"),
    HOST(BC_FIELD_DECODE_TOKENS_PER_SECOND, "decode_tokens_per_second", "tokens/s", HIGHER,
         "decode tokens over decode_forward_ms"),
    HOST(BC_FIELD_ENGINE_TOTAL_MS, "engine_total_ms", "ms", LOWER,
         "an out-of-process engine's own three stage times, summed"),
    HOST(BC_FIELD_PROTOCOL_OVERHEAD_MS, "protocol_overhead_ms", "ms", LOWER,
         "the rollout's time outside the engine's own stages: the transport to it"),
    HOST(BC_FIELD_PADDED_TOKEN_SLOTS, "padded_token_slots", "tokens", NEITHER,
         "response token slots the batch held"),
    HOST(BC_FIELD_PADDING_WASTE, "padding_waste", "1", LOWER,
         "1 - num_generated_tokens / padded_token_slots"),
    HOST(BC_FIELD_RESPONSE_LENGTH_MIN, "response_length_min", "tokens", NEITHER, "shortest response of the rollout"),
    HOST(BC_FIELD_RESPONSE_LENGTH_P50, "response_length_p50", "tokens", NEITHER, "median response of the rollout"),
    HOST(BC_FIELD_RESPONSE_LENGTH_P95, "response_length_p95", "tokens", NEITHER,
         "95th percentile response of the rollout"),
    HOST(BC_FIELD_RESPONSE_LENGTH_MAX, "response_length_max", "tokens", NEITHER, "longest response of the rollout"),
    HOST(BC_FIELD_NUM_PREFILL_FORWARDS, "num_prefill_forwards", "forwards", NEITHER,
         "prefill forwards run (1 for a static batch)"),
    HOST(BC_FIELD_SCHEDULER_OVERHEAD_MS, "scheduler_overhead_ms", "ms", LOWER, "a continuous scheduler's own time"),
    HOST(BC_FIELD_CACHE_MANAGEMENT_OVERHEAD_MS, "cache_management_overhead_ms", "ms", LOWER,
         "the KV cache management's own time"),
    HOST(BC_FIELD_ACTIVE_BATCH_SIZE, "active_batch_size", "rows", HIGHER, "mean rows a decode step generated for"),
    HOST(BC_FIELD_CONTINUOUS_BATCH_SIZE, "continuous_batch_size", "rows", NEITHER,
         "rows decoding at once with continuous batching"),
    HOST(BC_FIELD_OCCUPANCY, "occupancy", "1", HIGHER, "active_batch_size over the rows that could decode"),
    HOST(BC_FIELD_KV_PAGES_PEAK, "kv_pages_peak", "pages", LOWER, "KV cache pages held at the peak"),
    HOST(BC_FIELD_KV_BYTES_PEAK, "kv_bytes_peak", "bytes", LOWER, "KV cache bytes held at the peak"),
    HOST(BC_FIELD_KV_FRAGMENTATION, "kv_fragmentation", "1", LOWER,
         "share of the peak's page slots holding no token"),
    HOST(BC_FIELD_KV_BYTES_SAVED, "kv_bytes_saved", "bytes", HIGHER,
         "bytes a contiguous cache of the case would take beyond the paged peak"),
    HOST(BC_FIELD_LORA_FUSE_MS, "lora_fuse_ms", "ms", LOWER, "a LoRA adapter's fuse before generation"),
    HOST(BC_FIELD_LORA_UNFUSE_MS, "lora_unfuse_ms", "ms", LOWER, "a LoRA adapter's unfuse after generation"),
    HOST(BC_FIELD_ROW_TTFT_MS_P50, "row_ttft_ms_p50", "ms", LOWER,
         "median over the rollout's rows of a row's time to its first token"),
    HOST(BC_FIELD_ROW_TTFT_MS_P90, "row_ttft_ms_p90", "ms", LOWER, "90th percentile over the rows of the time to first token"),
    HOST(BC_FIELD_ROW_TTFT_MS_P99, "row_ttft_ms_p99", "ms", LOWER, "99th percentile over the rows of the time to first token"),
    HOST(BC_FIELD_ROW_TPOT_MS_P50, "row_tpot_ms_p50", "ms", LOWER,
         "median over the rows of a row's time per output token after its first"),
    HOST(BC_FIELD_ROW_TPOT_MS_P90, "row_tpot_ms_p90", "ms", LOWER, "90th percentile over the rows of the time per output token"),
    HOST(BC_FIELD_ROW_TPOT_MS_P99, "row_tpot_ms_p99", "ms", LOWER, "99th percentile over the rows of the time per output token"),
    HOST(BC_FIELD_ROW_E2E_MS_P50, "row_e2e_ms_p50", "ms", LOWER,
         "median over the rows of a row's end-to-end latency, to its last token"),
    HOST(BC_FIELD_ROW_E2E_MS_P90, "row_e2e_ms_p90", "ms", LOWER, "90th percentile over the rows of the end-to-end latency"),
    HOST(BC_FIELD_ROW_E2E_MS_P99, "row_e2e_ms_p99", "ms", LOWER, "99th percentile over the rows of the end-to-end latency"),
    HOST(BC_FIELD_ROWS_PER_SECOND, "rows_per_second", "rows/s", HIGHER,
         "rows (samples: batch x samples_per_prompt) over total_ms"),
    HOST(BC_FIELD_SCORE_MS, "score_ms", "ms", LOWER, "the scorer's score hook over the rollout, host-timed"),
    HOST(BC_FIELD_SCORE_TOKENS_PER_SECOND, "score_tokens_per_second", "tokens/s", HIGHER,
         "prompt + response tokens the scoring forward processed, all rows, over score_ms"),
    HOST(BC_FIELD_LOGPROB_GAP_MEAN, "logprob_gap_mean", "nats", LOWER,
         "mean |rollout - scorer| log-probability over the rollout's response tokens"),
    HOST(BC_FIELD_LOGPROB_GAP_MAX, "logprob_gap_max", "nats", LOWER,
         "largest |rollout - scorer| log-probability of a response token"),
    HOST(BC_FIELD_KL_K3, "kl_k3", "nats", LOWER,
         "k3 estimate of KL(rollout || scorer): mean of r - 1 - log r, r = exp(lp_score - lp_rollout)"),
    HOST(BC_FIELD_IMPORTANCE_RATIO_MIN, "importance_ratio_min", "1", NEITHER,
         "smallest exp(lp_score - lp_rollout) over the response tokens"),
    HOST(BC_FIELD_IMPORTANCE_RATIO_MEAN, "importance_ratio_mean", "1", NEITHER,
         "mean exp(lp_score - lp_rollout) over the response tokens"),
    HOST(BC_FIELD_IMPORTANCE_RATIO_MAX, "importance_ratio_max", "1", NEITHER,
         "largest exp(lp_score - lp_rollout) over the response tokens"),
    HOST(BC_FIELD_REFIT_MS, "refit_ms", "ms", LOWER, "the refit hook before the rollout, host-timed, when it ran"),
    HOST(BC_FIELD_REFIT_BYTES, "refit_bytes", "bytes", NEITHER, "bytes of new weights the refit read from its source"),
    HOST(BC_FIELD_REFIT_GB_PER_S, "refit_gb_per_s", "GB/s", HIGHER, "refit_bytes over refit_ms"),
    HOST(BC_FIELD_REFIT_BOUND_SHARE, "refit_bound_share", "1", HIGHER,
         "refit_gb_per_s over the host's memcpy bandwidth (memcpy_gb_per_s)"),
    HOST(BC_FIELD_ROLLOUT_STEP_MS, "rollout_step_ms", "ms", LOWER,
         "refit_ms (when it ran) + total_ms + score_ms (when scoring): the rollout side of an RL step"),
    HOST(BC_FIELD_RL_RESPONSE_LENGTH_MEAN, "response_length/mean", "tokens", NEITHER,
         "mean response length over the rollout's rows (verl's name)"),
    HOST(BC_FIELD_RL_RESPONSE_LENGTH_MIN, "response_length/min", "tokens", NEITHER,
         "shortest response of the rollout (verl's name)"),
    HOST(BC_FIELD_RL_RESPONSE_LENGTH_MAX, "response_length/max", "tokens", NEITHER,
         "longest response of the rollout (verl's name)"),
    HOST(BC_FIELD_RL_RESPONSE_LENGTH_CLIP_RATIO, "response_length/clip_ratio", "1", NEITHER,
         "rows that reached the response length without end-of-sequence, over rows"),
    HOST(BC_FIELD_RL_TIMING_PER_TOKEN_MS_GEN, "timing_per_token_ms/gen", "ms", LOWER,
         "generation_ms over num_generated_tokens"),
    HOST(BC_FIELD_RL_SLOWEST_ROW_GENERATION_MS, "slowest_row/generation_ms", "ms", LOWER,
         "ms from generate's start to the last token of the row that finished last"),
    HOST(BC_FIELD_RL_SLOWEST_ROW_RESPONSE_LENGTH, "slowest_row/response_length", "tokens", NEITHER,
         "response length of the row that finished last"),
};

/* The host fields a backend may declare under their names (their values are
 * the backend's, as the 2.3 bc_generation_stats fields of those names
 * were); the others the host times or derives itself (the row fields from
 * the schedule, rowlat.h). */
static int declarable(int field) {
    return field >= BC_FIELD_ENGINE_TOTAL_MS && field != BC_FIELD_PROTOCOL_OVERHEAD_MS &&
           field != BC_FIELD_PADDING_WASTE && field < BC_FIELD_ROW_TTFT_MS_P50;
}

const bc_metric_desc *bc_host_field_desc(const char *name) {
    for (int i = 0; name && i < BC_N_FIELDS; i++)
        if (strcmp(bc_host_field_descs[i].name, name) == 0) return &bc_host_field_descs[i];
    return NULL;
}

int bc_metric_desc_invalid(const bc_metric_desc *d, char *why, size_t cap) {
    const char *n = d->name;
    size_t len = n ? strnlen(n, BC_METRIC_NAME_MAX + 1) : 0;
    if (len == 0 || len > BC_METRIC_NAME_MAX)
        return snprintf(why, cap, "a metric name must have 1 to %d characters", BC_METRIC_NAME_MAX), 1;
    for (size_t i = 0; i < len; i++)
        if (!((n[i] >= 'a' && n[i] <= 'z') || (n[i] >= '0' && n[i] <= '9') || n[i] == '_'))
            return snprintf(why, cap, "metric '%s': a name has only a-z, 0-9 and _", n), 1;
    if (!d->unit || !d->unit[0]) return snprintf(why, cap, "metric '%s' has no unit", n), 1;
    if ((unsigned)d->better > BC_BETTER_LOWER)
        return snprintf(why, cap, "metric '%s': better %u is none of neither, higher, lower", n, (unsigned)d->better), 1;
    if ((unsigned)d->scope > BC_METRIC_PER_CASE)
        return snprintf(why, cap, "metric '%s': scope %u is none of iteration, case", n, (unsigned)d->scope), 1;
    return 0;
}

static char *dup_or_empty(const char *s) { return strdup(s ? s : ""); }

/* Appends a column for d (strings copied). */
static bc_status add_column(bc_fields *f, const bc_metric_desc *d, bc_error *err) {
    if (f->n >= BC_FIELDS_MAX)
        return bc_error_set(err, BC_ERR_INVALID, "the run has more than %d fields", BC_FIELDS_MAX);
    bc_metric_desc *descs = realloc(f->descs, (f->n + 1) * sizeof *descs);
    if (descs) f->descs = descs;
    const char **names = descs ? realloc(f->names, (f->n + 1) * sizeof *names) : NULL;
    if (names) f->names = names;
    if (!descs || !names) return bc_error_set(err, BC_ERR_NOMEM, "fields: out of memory");
    bc_metric_desc c = {.better = d->better, .scope = d->scope};
    c.name = dup_or_empty(d->name), c.unit = dup_or_empty(d->unit), c.help = dup_or_empty(d->help);
    if (!c.name || !c.unit || !c.help) {
        free((char *)c.name), free((char *)c.unit), free((char *)c.help);
        return bc_error_set(err, BC_ERR_NOMEM, "fields: out of memory");
    }
    f->descs[f->n] = c;
    f->names[f->n] = c.name;
    f->n++;
    return BC_OK;
}

bc_status bc_fields_init(bc_fields *f, bc_error *err) {
    *f = (bc_fields){0};
    for (int i = 0; i < BC_N_FIELDS; i++) {
        if (strcmp(bc_host_field_descs[i].name, bc_field_names[i]) != 0)
            return bc_error_set(err, BC_ERR_INTERNAL, "fields: descriptor %d is '%s', the field '%s'", i,
                                bc_host_field_descs[i].name, bc_field_names[i]);
        bc_status st = add_column(f, &bc_host_field_descs[i], err);
        if (st != BC_OK) return st;
    }
    return BC_OK;
}

bc_status bc_fields_begin_backend(bc_fields *f, bc_error *err) {
    bc_fields_backend *b = realloc(f->backends, (f->n_backends + 1) * sizeof *b);
    if (!b) return bc_error_set(err, BC_ERR_NOMEM, "fields: out of memory");
    f->backends = b;
    f->backends[f->n_backends++] = (bc_fields_backend){0};
    return BC_OK;
}

int bc_fields_index(const bc_fields *f, const char *name) {
    for (uint32_t i = 0; i < f->n; i++)
        if (strcmp(f->names[i], name) == 0) return (int)i;
    return -1;
}

bc_status bc_fields_add_rows(bc_fields *f, const char *who, const bc_metric_desc *rows, uint32_t n_rows,
                             uint32_t row_size, bc_error *err) {
    if (n_rows == 0) return BC_OK;
    if (!f->n_backends) return bc_error_set(err, BC_ERR_INTERNAL, "fields: rows before a backend");
    bc_fields_backend *b = &f->backends[f->n_backends - 1];
    if (!rows || !BC_ELEM_HAS(row_size, bc_metric_desc, help))
        return bc_error_set(err, BC_ERR_ABI, "%s: metric rows of %u bytes, ABI 2.4 rows are at least %zu", who,
                            row_size, BC_SIZE_THROUGH(bc_metric_desc, help));
    if (n_rows > BC_METRICS_MAX_PER_BACKEND || b->n_rows + n_rows > BC_METRICS_MAX_PER_BACKEND)
        return bc_error_set(err, BC_ERR_INVALID, "%s declares more than %d metrics", who, BC_METRICS_MAX_PER_BACKEND);
    uint32_t *col = realloc(b->column, (b->n_rows + n_rows) * sizeof *col);
    if (col) b->column = col;
    bc_metric_scope *sc = col ? realloc(b->scope, (b->n_rows + n_rows) * sizeof *sc) : NULL;
    if (sc) b->scope = sc;
    if (!col || !sc) return bc_error_set(err, BC_ERR_NOMEM, "fields: out of memory");
    for (uint32_t i = 0; i < n_rows; i++) {
        const bc_metric_desc *d = BC_AT(bc_metric_desc, rows, row_size, i);
        char why[160];
        if (bc_metric_desc_invalid(d, why, sizeof why)) return bc_error_set(err, BC_ERR_INVALID, "%s: %s", who, why);
        for (uint32_t j = 0; j < b->n_rows; j++)
            if (strcmp(f->names[b->column[j]], d->name) == 0)
                return bc_error_set(err, BC_ERR_INVALID, "%s declares metric '%s' twice", who, d->name);
        int at = bc_fields_index(f, d->name);
        if (at >= 0 && at < BC_N_FIELDS && !declarable(at))
            return bc_error_set(err, BC_ERR_INVALID, "%s: metric '%s' is a field the host measures itself", who,
                                d->name);
        if (at >= 0) {
            const bc_metric_desc *have = &f->descs[at];
            if (strcmp(have->unit, d->unit) != 0 || have->better != d->better || have->scope != d->scope)
                return bc_error_set(err, BC_ERR_INVALID,
                                    "%s: metric '%s' (%s, %s is better, per %s) is already a field in %s, %s is "
                                    "better, per %s",
                                    who, d->name, d->unit, bc_metric_better_name(d->better),
                                    bc_metric_scope_name(d->scope), have->unit, bc_metric_better_name(have->better),
                                    bc_metric_scope_name(have->scope));
        } else {
            bc_status st = add_column(f, d, err);
            if (st != BC_OK) return st;
            at = (int)f->n - 1;
        }
        b->column[b->n_rows] = (uint32_t)at;
        b->scope[b->n_rows] = d->scope;
        b->n_rows++;
    }
    return BC_OK;
}

void bc_fields_free(bc_fields *f) {
    for (uint32_t i = 0; f->descs && i < f->n; i++) {
        free((char *)f->descs[i].name), free((char *)f->descs[i].unit), free((char *)f->descs[i].help);
    }
    free(f->descs);
    free(f->names);
    for (size_t b = 0; b < f->n_backends; b++) free(f->backends[b].column), free(f->backends[b].scope);
    free(f->backends);
    *f = (bc_fields){0};
}
