/* runfile_case.c: one case of a run file (runfile_internal.h): its axes,
 * number format and cache behaviour, status and message, measurements
 * (profiles, statistics computed from them), memory, schedule and
 * distributed block, and its key across runs (runfile.h). */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runfile_internal.h"
#include "stats.h"

/* A schedule entry: a number within int32, else -1 (unknown). */
static int32_t count32(const json_t *v) {
    double d = json_is_number(v) ? json_number_value(v) : -1;
    return d >= INT32_MIN && d <= INT32_MAX ? (int32_t)d : -1;
}

/* extended.schedule (schedule.h) into s; a schedule that is not three
 * arrays of numbers, the two per-row ones of one length, is left out (s
 * empty). BC_ERR_NOMEM only on no memory. */
static bc_status read_schedule(const json_t *o, bc_schedule_store *s) {
    const json_t *steps = json_object_get(o, "step_active_rows"), *first = json_object_get(o, "row_first_token_ms");
    const json_t *done = json_object_get(o, "row_done_step");
    if (!json_is_array(steps) || !json_is_array(first) || !json_is_array(done) ||
        json_array_size(first) != json_array_size(done) || json_array_size(steps) > UINT32_MAX)
        return BC_OK;
    if (!bc_schedule_alloc(s, (uint32_t)json_array_size(steps), (int64_t)json_array_size(first)))
        return json_array_size(first) > 0 ? BC_ERR_NOMEM : BC_OK;
    size_t i;
    const json_t *v;
    json_array_foreach(steps, i, v) s->steps[i] = count32(v);
    json_array_foreach(first, i, v) s->first_ms[i] = json_is_number(v) ? json_number_value(v) : NAN;
    json_array_foreach(done, i, v) s->done[i] = count32(v);
    return BC_OK;
}

/* n numbers of the JSON array at key into out (NAN for null or missing). */
static void get_numbers(const json_t *obj, const char *key, double *out, size_t n) {
    const json_t *a = json_object_get(obj, key);
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_is_array(a) ? json_array_get(a, i) : NULL;
        out[i] = json_is_number(v) ? json_number_value(v) : NAN;
    }
}

/* A case's "distributed" block, when there is one. */
static bc_status read_distributed_case(const bc_runfile *rf, const json_t *cd, bc_runfile_case *out, bc_error *err) {
    if (!json_is_object(cd)) return BC_OK;
    bc_case_distributed *d = &out->dist;
    size_t n = (size_t)bc_rf_int(cd, "n_ranks", 0);
    if (n > 1u << 20) n = 0; /* not a count a run could have */
    out->dist_arrays = malloc((3 * n + 1) * sizeof *out->dist_arrays);
    if (!out->dist_arrays) return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", rf->path);
    get_numbers(cd, "rank_time_ms", out->dist_arrays, n);
    get_numbers(cd, "rank_tokens_per_second", out->dist_arrays + n, n);
    get_numbers(cd, "rank_peak_memory_mib", out->dist_arrays + 2 * n, n);
    out->dist_host = bc_rf_string(cd, "host");
    out->dist_slowest_host = bc_rf_string(cd, "slowest_host");
    const json_t *forced = json_object_get(cd, "lengths_forced");
    *d = (bc_case_distributed){
        .struct_size = sizeof *d,
        .n_ranks = (uint32_t)n,
        .rank = (int32_t)bc_rf_int(cd, "rank", -1),
        .host = out->dist_host,
        .step_tokens_per_second = bc_rf_number(cd, "step_tokens_per_second", NAN),
        .ideal_tokens_per_second = bc_rf_number(cd, "ideal_tokens_per_second", NAN),
        .straggler_efficiency = bc_rf_number(cd, "straggler_efficiency", NAN),
        .straggler_tax_ms = bc_rf_number(cd, "straggler_tax_ms", NAN),
        .rank_time_min_ms = bc_rf_number(cd, "rank_time_min_ms", NAN),
        .rank_time_mean_ms = bc_rf_number(cd, "rank_time_mean_ms", NAN),
        .rank_time_max_ms = bc_rf_number(cd, "rank_time_max_ms", NAN),
        .rank_time_std_ms = bc_rf_number(cd, "rank_time_std_ms", NAN),
        .slowest_rank = (int32_t)bc_rf_int(cd, "slowest_rank", -1),
        .slowest_host = out->dist_slowest_host,
        .peak_memory_max_mib = bc_rf_number(cd, "peak_memory_max_mib", NAN),
        .peak_memory_sum_mib = bc_rf_number(cd, "peak_memory_sum_mib", NAN),
        .full_length = json_is_boolean(forced) ? json_is_true(forced) : -1,
        .rank_time_ms = out->dist_arrays,
        .rank_tokens_per_second = out->dist_arrays + n,
        .rank_peak_memory_mib = out->dist_arrays + 2 * n,
    };
    return BC_OK;
}

static bc_case_status status_from(const char *s) {
    if (!s || strcmp(s, "ok") == 0) return BC_CASE_OK;
    return strcmp(s, "failed") == 0 ? BC_CASE_FAILED : BC_CASE_SKIPPED;
}

/* The code bc_status_name gives name, BC_OK for none, BC_ERR_INTERNAL for a
 * name this host does not know. */
static bc_status status_code_from(const char *name) {
    if (!name) return BC_OK;
    for (int code = 0; code < 64; code++)
        if (strcmp(bc_status_name((bc_status)code), name) == 0) return (bc_status)code;
    return BC_ERR_INTERNAL;
}

/* "retain"/"release" from the case's (or the run's) release_inference_cache. */
static const char *release_word(const json_t *c, const json_t *top) {
    const json_t *v = json_object_get(c, "release_inference_cache");
    if (!json_is_boolean(v)) v = json_object_get(top, "release_inference_cache");
    return json_is_boolean(v) ? (json_is_true(v) ? "release" : "retain") : NULL;
}

/* The case's key (runfile.h): axes, number format and cache behaviour. */
char *bc_runfile_key(uint32_t batch_size, uint32_t samples_per_prompt, uint32_t prompt_length,
                     uint32_t response_length, const char *dtype, const char *cache) {
    char *key = NULL;
    if (asprintf(&key, "batch_size=%u samples_per_prompt=%u prompt_length=%u response_length=%u dtype=%s cache=%s",
                 batch_size, samples_per_prompt, prompt_length, response_length, dtype ? dtype : "?",
                 cache ? cache : "?") < 0)
        return NULL;
    return key;
}

char *bc_runfile_key_settings(char *key, const char *const *names, const char *const *values, size_t n) {
    for (size_t i = 0; key && i < n; i++) {
        char *with = NULL;
        if (asprintf(&with, "%s %s=%s", key, names[i], values[i]) < 0) with = NULL;
        free(key);
        key = with;
    }
    return key;
}

char *bc_runfile_key_backend(char *key, const char *backend) {
    char *with = NULL;
    if (key && asprintf(&with, "%s backend=%s", key, backend ? backend : "?") < 0) with = NULL;
    free(key);
    return with;
}

bc_status bc_rf_key_by_backend(bc_runfile *rf, bc_error *err) {
    const char **names = NULL;
    size_t n = bc_runfile_axis_values(rf, "backend", &names);
    free(names);
    if (n < 2) return BC_OK;
    for (size_t k = 0; k < rf->n_cases; k++)
        if (!(rf->cases[k].key = bc_runfile_key_backend(rf->cases[k].key, rf->cases[k].backend)))
            return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", rf->path);
    return BC_OK;
}

static char *case_key(const bc_runfile_case *c, const char *release) {
    return bc_runfile_key(c->batch_size, c->samples_per_prompt, c->prompt_length, c->response_length,
                          c->dtype ? c->dtype : c->precision, release ? release : c->cache_policy);
}

/* A case's "backend_settings" (2.3): the settings the matrix varied, each
 * value as text (a string as it is, anything else as JSON writes it). */
static bc_status read_case_settings(bc_runfile *rf, const json_t *obj, bc_runfile_case *out, bc_error *err) {
    if (!json_is_object(obj) || json_object_size(obj) == 0) return BC_OK;
    size_t n = json_object_size(obj);
    out->setting_names = calloc(n, sizeof *out->setting_names);
    out->setting_values = calloc(n, sizeof *out->setting_values);
    if (!out->setting_names || !out->setting_values) return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", rf->path);
    const char *name;
    const json_t *v;
    json_object_foreach((json_t *)obj, name, v) {
        size_t i = out->n_settings++;
        out->setting_names[i] = strdup(name);
        out->setting_values[i] = json_is_string(v) ? strdup(json_string_value(v)) : json_dumps(v, JSON_ENCODE_ANY);
        if (!out->setting_names[i] || !out->setting_values[i])
            return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", rf->path);
    }
    return BC_OK;
}

/* One case object (a JSON report's cases[k] or a journal's case record). */
static bc_status read_case(bc_runfile *rf, const json_t *top, const json_t *c, size_t position, bc_runfile_case *out,
                           bc_error *err) {
    memset(out, 0, sizeof *out);
    if (!json_is_object(c)) return bc_error_set(err, BC_ERR_FORMAT, "%s: case %zu is not an object", rf->path, position);
    out->index = (uint32_t)bc_rf_int(c, "index", (int64_t)position);
    out->batch_size = (uint32_t)bc_rf_int(c, "batch_size", 0);
    out->samples_per_prompt = (uint32_t)bc_rf_int(c, "samples_per_prompt", 1);
    out->prompt_length = (uint32_t)bc_rf_int(c, "prompt_length", 0);
    out->response_length = (uint32_t)bc_rf_int(c, "requested_response_length", bc_rf_int(c, "response_length", 0));
    out->precision = bc_rf_string(c, "precision");
    out->dtype = bc_rf_string(c, "dtype");
    if (!out->dtype) out->dtype = bc_rf_string(top, "dtype");
    if (!out->precision && out->dtype) out->precision = strdup(out->dtype);
    const char *release = release_word(c, top);
    out->cache_policy = bc_rf_string(c, "cache_policy");
    if (!out->cache_policy && release) out->cache_policy = strdup(release);
    out->release_cache = release ? strcmp(release, "release") == 0 : -1;
    out->status = status_from(json_string_value(json_object_get(c, "status")));
    out->error_code = status_code_from(json_string_value(json_object_get(c, "error_code")));
    out->backend = bc_rf_string(c, "backend");
    bc_status sst = read_case_settings(rf, json_object_get(c, "backend_settings"), out, err);
    if (sst != BC_OK) return sst;
    out->message = bc_rf_string(c, "message");
    if (!out->message) out->message = strdup("");
    out->returned_response_length = bc_rf_int(c, "returned_response_length", -1);
    out->prompt_width_tokens = bc_rf_int(c, "prompt_width_tokens", -1);
    out->prompt_min_tokens = bc_rf_int(c, "prompt_min_tokens", -1);
    out->prompt_max_tokens = bc_rf_int(c, "prompt_max_tokens", -1);
    out->prompt_p50_tokens = bc_rf_int(c, "prompt_p50_tokens", -1);
    out->prompt_pad_tokens = bc_rf_int(c, "prompt_pad_tokens", -1);
    out->peak_memory_mib = bc_rf_number(c, "peak_memory_mb", NAN);
    out->held_between_rollouts_mib = bc_rf_number(c, "held_between_rollouts_mib", NAN);
    const json_t *ext = json_object_get(c, "extended"), *mem = json_object_get(ext, "memory");
    out->wall_ms = bc_rf_number(ext, "wall_ms", NAN);
    out->weights_bytes = bc_rf_int(mem, "weights_bytes", -1);
    out->kv_cache_bytes = bc_rf_int(mem, "kv_cache_bytes", -1);
    out->workspace_bytes = bc_rf_int(mem, "workspace_bytes", -1);
    out->host_peak_bytes = bc_rf_int(mem, "host_peak_bytes", -1);
    out->device_peak_bytes = bc_rf_int(mem, "device_peak_bytes", -1);
    out->device_total_bytes = bc_rf_int(mem, "device_total_bytes", -1);
    out->resident_bytes = bc_rf_int(mem, "resident_bytes", -1);
    out->peak_rss_bytes = bc_rf_int(mem, "peak_rss_bytes", -1);
    out->device_free_before_bytes = bc_rf_int(mem, "device_free_before_bytes", -1);
    out->device_free_after_bytes = bc_rf_int(mem, "device_free_after_bytes", -1);
    out->rebuilt = json_is_true(json_object_get(c, "rebuilt"));
    out->resumed = json_is_true(json_object_get(c, "resumed"));
    const char *reason = json_string_value(json_object_get(c, "stop_reason"));
    out->stop_reason = BC_STOP_NONE;
    for (int r = BC_STOP_FIXED; reason && r <= BC_STOP_FAILED; r++)
        if (strcmp(reason, bc_stop_reason_name((bc_stop_reason)r)) == 0) out->stop_reason = (bc_stop_reason)r;
    const json_t *load = json_object_get(ext, "host_load");
    out->total_ms_rel_ci = bc_rf_number(ext, "total_ms_rel_ci", NAN);
    out->token_agreement = bc_rf_number(ext, "token_agreement", NAN);
    if (read_schedule(json_object_get(ext, "schedule"), &out->schedule) != BC_OK)
        return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", rf->path);
    out->load_avg_start = bc_rf_number(load, "load_avg_start", NAN);
    out->load_avg_end = bc_rf_number(load, "load_avg_end", NAN);
    out->cpu_steal_share = bc_rf_number(load, "cpu_steal_share", NAN);
    out->key = bc_runfile_key_settings(case_key(out, release), (const char *const *)out->setting_names,
                                       (const char *const *)out->setting_values, out->n_settings);
    if (!out->message || !out->key) return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", rf->path);
    bc_status dst = read_distributed_case(rf, json_object_get(c, "distributed"), out, err);
    if (dst != BC_OK) return dst;

    const json_t *profiles = json_object_get(c, "profiles");
    size_t n_it = json_is_array(profiles) ? json_array_size(profiles) : 0;
    size_t nf = rf->n_fields;
    out->values = malloc((n_it * nf + 1) * sizeof *out->values);
    out->stats = malloc((nf * BC_N_STATS + 1) * sizeof *out->stats);
    if (!out->values || !out->stats) return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", rf->path);
    for (size_t it = 0; it < n_it; it++) {
        const json_t *p = json_array_get(profiles, it);
        for (size_t f = 0; f < nf; f++) out->values[it * nf + f] = bc_rf_number(p, rf->field_names[f], NAN);
    }
    out->n_iterations = (uint32_t)n_it;
    for (size_t f = 0; f < nf; f++)
        if (bc_stats_compute(out->values + f, n_it, nf, out->stats + f * BC_N_STATS, err) != BC_OK) return err->code;
    return BC_OK;
}

/* Appends one case to rf. */
bc_status bc_rf_add_case(bc_runfile *rf, const json_t *top, const json_t *c, bc_error *err) {
    if (rf->n_cases == rf->cases_cap) { /* doubling: a journal of 10^5 cases is not copied 10^5 times */
        size_t cap = rf->cases_cap ? rf->cases_cap * 2 : 16;
        bc_runfile_case *grown = realloc(rf->cases, cap * sizeof *grown);
        if (!grown) return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", rf->path);
        rf->cases = grown, rf->cases_cap = cap;
    }
    bc_status st = read_case(rf, top, c, rf->n_cases, &rf->cases[rf->n_cases], err);
    rf->n_cases++; /* freed by bc_runfile_free either way */
    return st;
}
