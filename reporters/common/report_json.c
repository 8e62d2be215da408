/* report_json.c: run metadata and case objects of the JSON report (see
 * report_json.h and docs/reporters.md). */
#include "report_json.h"

#include <math.h>
#include <string.h>

static int starts_with(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

static int ends_with(const char *s, const char *suffix) {
    size_t ls = strlen(s), lx = strlen(suffix);
    return ls >= lx && strcmp(s + ls - lx, suffix) == 0;
}

static void string_list(bc_jw *w, const char *const *items, uint32_t n) {
    bc_jw_begin_array(w);
    for (uint32_t i = 0; items && i < n; i++) bc_jw_string(w, items[i]);
    bc_jw_end_array(w);
}

/* [{name, unit, better, scope, help}] for every field, in field order (a
 * host from 2.4 on). */
static void write_metrics(bc_jw *w, const bc_run_report *run) {
    bc_jw_begin_array(w);
    for (uint32_t f = 0; f < run->n_fields; f++) {
        const bc_metric_desc *d = bc_run_field_desc(run, f);
        bc_jw_begin_object(w);
        bc_jw_key_string(w, "name", run->field_names[f]);
        bc_jw_key_string(w, "unit", d ? d->unit : NULL);
        bc_jw_key_string(w, "better", d ? bc_metric_better_name(d->better) : NULL);
        bc_jw_key_string(w, "scope", d ? bc_metric_scope_name(d->scope) : NULL);
        bc_jw_key_string(w, "help", d ? d->help : NULL);
        bc_jw_end_object(w);
    }
    bc_jw_end_array(w);
}

/* A string that may be missing: NULL and "" both write null. */
static void key_string_or_null(bc_jw *w, const char *key, const char *s) {
    bc_jw_key_string(w, key, s && *s ? s : NULL);
}

uint32_t bc_rj_schema_version(const bc_run_report *run) {
    return run->schema_version ? run->schema_version : BC_RJ_SCHEMA_VERSION;
}

void bc_rj_seed_keys(bc_jw *w, const bc_run_report *run) {
    bc_jw_key_string(w, "model", BC_RUN_BACKEND(run, model, NULL));
    bc_jw_key_string(w, "device", BC_RUN_BACKEND(run, device, NULL));
    bc_jw_key_uint(w, "warmup", run->warmup);
    bc_jw_key_uint(w, "iterations", run->iterations);
    bc_jw_key_double(w, "temperature", BC_RUN_SAMPLING(run, temperature, NAN));
    bc_jw_key_double(w, "top_p", BC_RUN_SAMPLING(run, top_p, NAN));
}

/* The backend's resolved settings as {name: value}, typed as declared;
 * null when the host passes none. Both arrays are walked with their
 * element sizes. */
static void write_backend_settings(bc_jw *w, const bc_run_report *run) {
    if (!run->backend_settings || !run->backend_values || !run->backend_setting_size) {
        bc_jw_null(w);
        return;
    }
    bc_jw_begin_object(w);
    for (uint32_t i = 0; i < run->n_backend_settings && i < run->backend_values->count; i++) {
        const bc_setting_desc *d = bc_run_backend_setting(run, i);
        const bc_setting_value *v = bc_setting_at(run->backend_values, i);
        switch (d->type) {
        case BC_SETTING_INT: bc_jw_key_int(w, d->name, v->i); break;
        case BC_SETTING_FLOAT: bc_jw_key_double(w, d->name, v->f); break;
        case BC_SETTING_BOOL: bc_jw_key_bool(w, d->name, v->i != 0); break;
        default: bc_jw_key_string(w, d->name, v->s); break;
        }
    }
    bc_jw_end_object(w);
}

/* Where the run ran, beyond the accelerator: the CPU's model and topology
 * and, when the work ran on it, the backend's kernels and threads. */
static void write_environment(bc_jw *w, const bc_run_report *run) {
    bc_jw_begin_object(w);
    bc_jw_key(w, "cpu");
    bc_jw_begin_object(w);
    key_string_or_null(w, "model", run->cpu_model);
    key_string_or_null(w, "kernels", BC_RUN_BACKEND(run, cpu_kernels, NULL));
    bc_jw_key_int_or_null(w, "threads", BC_RUN_BACKEND(run, cpu_threads, -1));
    /* sysfs topology (since 2.5); null where unknown */
    int topo = BC_HAS(run, bc_run_report, cpu_topology_note);
    bc_jw_key_int_or_null(w, "logical_cpus", topo && run->cpu_logical ? (int64_t)run->cpu_logical : -1);
    bc_jw_key_int_or_null(w, "physical_cores", topo && run->cpu_cores ? (int64_t)run->cpu_cores : -1);
    bc_jw_key_int_or_null(w, "packages", topo && run->cpu_packages ? (int64_t)run->cpu_packages : -1);
    bc_jw_key_int_or_null(w, "threads_per_core",
                          topo && run->cpu_threads_per_core ? (int64_t)run->cpu_threads_per_core : -1);
    key_string_or_null(w, "topology_note", topo ? run->cpu_topology_note : NULL);
    bc_jw_end_object(w);
    /* the quiet-machine check (since 2.5); null where it did not run */
    key_string_or_null(w, "quiet_check", BC_HAS(run, bc_run_report, quiet_check) ? run->quiet_check : NULL);
    /* the host's memcpy bandwidth, measured with run.refit on (since 2.6); null otherwise */
    bc_jw_key_double(w, "memcpy_gb_per_s", BC_HAS(run, bc_run_report, memcpy_gb_per_s) ? run->memcpy_gb_per_s : NAN);
    bc_jw_end_object(w);
}

/* The score stage's scorer (since 2.6): its label, precision and what its
 * describe said; null when the run scores nothing. */
static void write_scorer(bc_jw *w, const bc_run_report *run) {
    if (!BC_HAS(run, bc_run_report, scorer_precision) || !run->scorer_name) {
        bc_jw_null(w);
        return;
    }
    const bc_backend_info *b = run->scorer;
    bc_jw_begin_object(w);
    bc_jw_key_string(w, "backend", run->scorer_name);
    key_string_or_null(w, "precision", run->scorer_precision);
    key_string_or_null(w, "model", b && BC_HAS(b, bc_backend_info, model) ? b->model : NULL);
    key_string_or_null(w, "device", b && BC_HAS(b, bc_backend_info, device) ? b->device : NULL);
    key_string_or_null(w, "family", b && BC_HAS(b, bc_backend_info, model_family) ? b->model_family : NULL);
    bc_jw_key_int_or_null(w, "parameters", b && BC_HAS(b, bc_backend_info, n_parameters) ? b->n_parameters : -1);
    bc_jw_key_int_or_null(w, "vocab_size", b && BC_HAS(b, bc_backend_info, vocab_size) ? b->vocab_size : -1);
    bc_jw_end_object(w);
}

/* The model's shape as the backend described it; null where unknown. */
static void write_model_shape(bc_jw *w, const bc_run_report *run) {
    bc_jw_begin_object(w);
    key_string_or_null(w, "family", BC_RUN_BACKEND(run, model_family, NULL));
    bc_jw_key_int_or_null(w, "parameters", BC_RUN_BACKEND(run, n_parameters, -1));
    bc_jw_key_int_or_null(w, "layers", BC_RUN_BACKEND(run, n_layers, -1));
    bc_jw_key_int_or_null(w, "hidden_size", BC_RUN_BACKEND(run, hidden_size, -1));
    bc_jw_key_int_or_null(w, "heads", BC_RUN_BACKEND(run, n_heads, -1));
    bc_jw_key_int_or_null(w, "ffn_size", BC_RUN_BACKEND(run, ffn_size, -1));
    bc_jw_key_int_or_null(w, "vocab_size", BC_RUN_BACKEND(run, vocab_size, -1));
    bc_jw_key_int_or_null(w, "max_positions", BC_RUN_BACKEND(run, max_positions, -1));
    bc_jw_end_object(w);
}

static void write_sampling(bc_jw *w, const bc_run_report *run) {
    if (!run->sampling) {
        bc_jw_null(w);
        return;
    }
    bc_jw_begin_object(w);
    bc_jw_key_double(w, "temperature", BC_RUN_SAMPLING(run, temperature, NAN));
    bc_jw_key_double(w, "top_p", BC_RUN_SAMPLING(run, top_p, NAN));
    bc_jw_key_int(w, "top_k", BC_RUN_SAMPLING(run, top_k, 0));
    bc_jw_key_uint(w, "seed", BC_RUN_SAMPLING(run, seed, 0));
    bc_jw_end_object(w);
}

static void write_plugins(bc_jw *w, const bc_run_report *run) {
    bc_jw_begin_array(w);
    for (uint32_t i = 0; run->plugins && i < run->n_plugins; i++) {
        const bc_plugin_ref *p = bc_run_plugin(run, i);
        bc_jw_begin_object(w);
        bc_jw_key_string(w, "kind", p->kind);
        bc_jw_key_string(w, "name", p->name);
        bc_jw_key_string(w, "version", p->version);
        bc_jw_key_string(w, "path", p->path);
        bc_jw_key_uint(w, "abi_major", p->abi_major);
        bc_jw_key_uint(w, "abi_minor", p->abi_minor);
        bc_jw_end_object(w);
    }
    bc_jw_end_array(w);
}

/* The rule that stopped each case's measured iterations (a fixed count:
 * min_iterations == max_iterations, target_rel_ci null); null from a host
 * before 2.1. */
static void write_stopping(bc_jw *w, const bc_run_report *run) {
    if (!BC_HAS(run, bc_run_report, max_seconds_per_case)) {
        bc_jw_null(w);
        return;
    }
    bc_jw_begin_object(w);
    bc_jw_key_uint(w, "min_iterations", run->min_iterations);
    bc_jw_key_uint(w, "max_iterations", run->max_iterations);
    bc_jw_key_double(w, "target_rel_ci", run->target_rel_ci);
    bc_jw_key_double(w, "max_seconds_per_case", run->max_seconds_per_case);
    bc_jw_end_object(w);
}

/* null when every case of the matrix ran, else how the command line chose. */
static void write_selection(bc_jw *w, const bc_run_report *run) {
    const char *cases = BC_RUN_FIELD(run, selected_cases, NULL), *only = BC_RUN_FIELD(run, selected_only, NULL);
    if (!cases && !only) {
        bc_jw_null(w);
        return;
    }
    bc_jw_begin_object(w);
    bc_jw_key_string(w, "cases", cases);
    bc_jw_key_string(w, "only", only);
    bc_jw_key_uint(w, "matrix_cases", BC_RUN_FIELD(run, n_matrix_cases, 0));
    bc_jw_end_object(w);
}

/* The run's distributed block (docs/reporters.md, docs/scale.md). */
static void write_distributed_run(bc_jw *w, const bc_distributed *d) {
    bc_jw_begin_object(w);
    bc_jw_key_uint(w, "world_size", d->world_size);
    bc_jw_key_string(w, "mode", d->mode);
    bc_jw_key_string(w, "comm", d->comm);
    bc_jw_key(w, "ranks");
    bc_jw_begin_array(w);
    for (uint32_t r = 0; d->ranks && r < d->world_size; r++) {
        const bc_rank_info *ri = bc_dist_rank(d, r);
        bc_jw_begin_object(w);
        bc_jw_key_int(w, "rank", ri->rank);
        bc_jw_key_string(w, "host", ri->host);
        bc_jw_key_int(w, "local_rank", ri->local_rank);
        bc_jw_key_string(w, "device", ri->device);
        bc_jw_end_object(w);
    }
    bc_jw_end_array(w);
    bc_jw_end_object(w);
}

/* n doubles as a JSON array (null for NaN); null when x is NULL. */
static void double_list(bc_jw *w, const double *x, uint32_t n) {
    if (!x) {
        bc_jw_null(w);
        return;
    }
    bc_jw_begin_array(w);
    for (uint32_t i = 0; i < n; i++) bc_jw_double(w, x[i]);
    bc_jw_end_array(w);
}

/* A case's distributed block: who ran it (shard), the aggregates and the
 * per-rank arrays (replicate). */
static void write_distributed_case(bc_jw *w, const bc_run_report *run, const bc_case_distributed *cd) {
    const bc_distributed *d = BC_RUN_FIELD(run, distributed, NULL);
    int shard = d && d->mode && strcmp(d->mode, "shard") == 0;
    bc_jw_begin_object(w);
    bc_jw_key_uint(w, "n_ranks", cd->n_ranks);
    if (shard) {
        bc_jw_key_int(w, "rank", cd->rank);
        bc_jw_key_string(w, "host", cd->host);
    } else {
        bc_jw_key_double(w, "step_tokens_per_second", cd->step_tokens_per_second);
        bc_jw_key_double(w, "ideal_tokens_per_second", cd->ideal_tokens_per_second);
        bc_jw_key_double(w, "straggler_efficiency", cd->straggler_efficiency);
        bc_jw_key_double(w, "straggler_tax_ms", cd->straggler_tax_ms);
        bc_jw_key_double(w, "rank_time_min_ms", cd->rank_time_min_ms);
        bc_jw_key_double(w, "rank_time_mean_ms", cd->rank_time_mean_ms);
        bc_jw_key_double(w, "rank_time_max_ms", cd->rank_time_max_ms);
        bc_jw_key_double(w, "rank_time_std_ms", cd->rank_time_std_ms);
        bc_jw_key_int_or_null(w, "slowest_rank", cd->slowest_rank);
        bc_jw_key_string(w, "slowest_host", cd->slowest_host);
        bc_jw_key_double(w, "peak_memory_max_mib", cd->peak_memory_max_mib);
        bc_jw_key_double(w, "peak_memory_sum_mib", cd->peak_memory_sum_mib);
        bc_jw_key(w, "lengths_forced");
        if (cd->full_length < 0) bc_jw_null(w);
        else bc_jw_bool(w, cd->full_length);
    }
    bc_jw_key(w, "rank_time_ms");
    double_list(w, cd->rank_time_ms, cd->n_ranks);
    bc_jw_key(w, "rank_tokens_per_second");
    double_list(w, cd->rank_tokens_per_second, cd->n_ranks);
    bc_jw_key(w, "rank_peak_memory_mib");
    double_list(w, cd->rank_peak_memory_mib, cd->n_ranks);
    bc_jw_end_object(w);
}

void bc_rj_run_metadata(bc_jw *w, const bc_run_report *run) {
    bc_jw_key_string(w, "benchctl_version", run->benchctl_version);
    bc_jw_key_string(w, "git_commit", run->git_commit);
    bc_jw_key_string(w, "backend", run->backend_name);
    bc_jw_key(w, "backend_settings");
    write_backend_settings(w, run);
    if (run->backend_settings && BC_ELEM_HAS(run->backend_setting_size, bc_setting_desc, flags)) {
        bc_jw_key(w, "workload_settings"); /* the ones marked BC_SETTING_WORKLOAD */
        bc_jw_begin_array(w);
        for (uint32_t i = 0; i < run->n_backend_settings; i++)
            if (bc_run_backend_setting(run, i)->flags & BC_SETTING_WORKLOAD)
                bc_jw_string(w, bc_run_backend_setting(run, i)->name);
        bc_jw_end_array(w);
    }
    bc_jw_key(w, "scorer");
    write_scorer(w, run);
    key_string_or_null(w, "refit", BC_HAS(run, bc_run_report, refit) ? run->refit : NULL);
    key_string_or_null(w, "gpu", BC_RUN_BACKEND(run, device_name, NULL));
    key_string_or_null(w, "driver", BC_RUN_BACKEND(run, driver, NULL));
    bc_jw_key_string(w, "cpu_model", run->cpu_model);
    bc_jw_key_string(w, "hostname", run->hostname);
    bc_jw_key(w, "environment");
    write_environment(w, run);
    bc_jw_key(w, "model_shape");
    write_model_shape(w, run);
    bc_jw_key_string(w, "config_path", run->config_path);
    bc_jw_key_string(w, "config_sha256", run->config_sha256);
    bc_jw_key_string(w, "start_time", run->start_time_utc);
    bc_jw_key(w, "sampling");
    write_sampling(w, run);
    bc_jw_key(w, "precisions");
    string_list(w, run->precisions, run->n_precisions);
    bc_jw_key(w, "cache_policies");
    string_list(w, run->cache_policies, run->n_cache_policies);
    bc_jw_key(w, "fields");
    string_list(w, run->field_names, run->n_fields);
    if (bc_run_field_desc(run, 0)) {
        bc_jw_key(w, "metrics");
        write_metrics(w, run);
    }
    bc_jw_key(w, "stats");
    string_list(w, run->stat_names, run->n_stats);
    bc_jw_key(w, "plugins");
    write_plugins(w, run);
    bc_jw_key(w, "stopping");
    write_stopping(w, run);
    bc_jw_key(w, "selection");
    write_selection(w, run);
    const bc_distributed *d = BC_RUN_FIELD(run, distributed, NULL);
    if (d) {
        bc_jw_key(w, "distributed");
        write_distributed_run(w, d);
    }
}

/* {"name": value, ...} for the statistics called names[0..n-1], looked up
 * in the run's table (null for one the host does not compute). */
static void stats_object(bc_jw *w, const bc_run_report *run, const bc_case_report *cr, int field,
                         const char *const *names, uint32_t n) {
    bc_jw_begin_object(w);
    for (uint32_t s = 0; s < n; s++)
        bc_jw_key_double(w, names[s], bc_case_stat(run, cr, field, bc_run_stat_index(run, names[s])));
    bc_jw_end_object(w);
}

/* What a field's summary holds. */
typedef enum summary_kind { SUMMARY_NONE, SUMMARY_RATE, SUMMARY_COST } summary_kind;

/* The kind of field f, from its descriptor: better = higher (a rate, a
 * share) {mean, p50}; lower (a time, a size, a waste) {mean, p50, p95};
 * neither (a count or length that describes the case) left out, its
 * statistics being in extended.stats. For the seed's fields this is the
 * seed's summary; a value of a newer minor gets the whole summary. A host
 * before 2.4 describes no field: then the seed's rule by name (rates end
 * in "tokens_per_second", counts start "num_"). */
static summary_kind field_summary(const bc_run_report *run, uint32_t f) {
    const bc_metric_desc *d = bc_run_field_desc(run, f);
    if (d) return d->better == BC_BETTER_HIGHER ? SUMMARY_RATE : d->better == BC_BETTER_NEITHER ? SUMMARY_NONE : SUMMARY_COST;
    const char *name = run->field_names[f];
    if (starts_with(name, "num_")) return SUMMARY_NONE;
    return ends_with(name, "tokens_per_second") ? SUMMARY_RATE : SUMMARY_COST;
}

/* The seed's summary: {mean, p50} or {mean, p50, p95} per field, by its
 * kind (field_summary). */
static void write_summary(bc_jw *w, const bc_run_report *run, const bc_case_report *cr) {
    static const char *const cost[] = {"mean", "p50", "p95"};
    static const char *const rate[] = {"mean", "p50"};
    bc_jw_begin_object(w);
    for (uint32_t f = 0; f < run->n_fields; f++) {
        summary_kind kind = field_summary(run, f);
        if (kind == SUMMARY_NONE) continue;
        bc_jw_key(w, run->field_names[f]);
        if (kind == SUMMARY_RATE)
            stats_object(w, run, cr, (int)f, rate, 2);
        else
            stats_object(w, run, cr, (int)f, cost, 3);
    }
    bc_jw_end_object(w);
}

static void write_profiles(bc_jw *w, const bc_run_report *run, const bc_case_report *cr) {
    const bc_case *c = cr->c;
    bc_jw_begin_array(w);
    for (uint32_t it = 0; cr->values && it < cr->n_iterations; it++) {
        const double *row = cr->values + (size_t)it * run->n_fields;
        bc_jw_begin_object(w);
        for (uint32_t f = 0; f < run->n_fields; f++) bc_jw_key_double(w, run->field_names[f], row[f]);
        bc_jw_key_uint(w, "batch_size", c->batch_size);
        bc_jw_key_uint(w, "num_samples_per_prompt", c->samples_per_prompt);
        bc_jw_key_uint(w, "prompt_length", c->prompt_length);
        /* The length actually returned, as the seed's profile records it;
         * null when the backend did not say. */
        bc_jw_key_int_or_null(w, "response_length", cr->returned_response_length);
        bc_jw_end_object(w);
    }
    bc_jw_end_array(w);
}

/* Every statistic of the run's table for every field. */
static void write_all_stats(bc_jw *w, const bc_run_report *run, const bc_case_report *cr) {
    bc_jw_begin_object(w);
    for (uint32_t f = 0; f < run->n_fields; f++) {
        bc_jw_key(w, run->field_names[f]);
        stats_object(w, run, cr, (int)f, run->stat_names, run->n_stats);
    }
    bc_jw_end_object(w);
}

static void write_memory(bc_jw *w, const bc_case_report *cr) {
    bc_jw_begin_object(w);
    bc_jw_key_int_or_null(w, "weights_bytes", BC_CASE_MEMORY(cr, weights_bytes));
    bc_jw_key_int_or_null(w, "kv_cache_bytes", BC_CASE_MEMORY(cr, kv_cache_bytes));
    bc_jw_key_int_or_null(w, "workspace_bytes", BC_CASE_MEMORY(cr, workspace_bytes));
    bc_jw_key_int_or_null(w, "host_peak_bytes", BC_CASE_MEMORY(cr, host_peak_bytes));
    bc_jw_key_int_or_null(w, "device_peak_bytes", BC_CASE_MEMORY(cr, device_peak_bytes));
    bc_jw_key_int_or_null(w, "device_total_bytes", BC_CASE_MEMORY(cr, device_total_bytes));
    bc_jw_key_int_or_null(w, "resident_bytes", BC_CASE_MEMORY(cr, resident_bytes));
    bc_jw_key_int_or_null(w, "held_between_rollouts_bytes", cr->held_between_rollouts_bytes);
    bc_jw_key_int_or_null(w, "peak_rss_bytes", cr->peak_rss_bytes);
    bc_jw_key_int_or_null(w, "device_free_before_bytes", cr->device_free_before_bytes);
    bc_jw_key_int_or_null(w, "device_free_after_bytes", cr->device_free_after_bytes);
    bc_jw_end_object(w);
}

/* How busy the machine was around the case; null where unknown. */
static void write_host_load(bc_jw *w, const bc_run_report *run, const bc_case_report *cr) {
    bc_jw_begin_object(w);
    bc_jw_key_double(w, "load_avg_start", BC_CASE_FIELD(run, cr, load_avg_start, NAN));
    bc_jw_key_double(w, "load_avg_end", BC_CASE_FIELD(run, cr, load_avg_end, NAN));
    bc_jw_key_double(w, "cpu_steal_share", BC_CASE_FIELD(run, cr, cpu_steal_share, NAN));
    bc_jw_end_object(w);
}

/* The last measured rollout's schedule: the rows of each decode step, each
 * row's first token and completion step. */
static void write_schedule(bc_jw *w, const bc_case_schedule *sc) {
    bc_jw_begin_object(w);
    bc_jw_key(w, "step_active_rows");
    bc_jw_begin_array(w);
    for (uint32_t i = 0; i < sc->n_steps; i++) bc_jw_int(w, sc->step_active_rows[i]);
    bc_jw_end_array(w);
    bc_jw_key(w, "row_first_token_ms");
    bc_jw_begin_array(w);
    for (int64_t r = 0; r < sc->n_rows; r++) bc_jw_double(w, sc->row_first_token_ms[r]);
    bc_jw_end_array(w);
    bc_jw_key(w, "row_done_step");
    bc_jw_begin_array(w);
    for (int64_t r = 0; r < sc->n_rows; r++) bc_jw_int(w, sc->row_done_step[r]);
    bc_jw_end_array(w);
    bc_jw_end_object(w);
}

static void write_extended(bc_jw *w, const bc_run_report *run, const bc_case_report *cr) {
    bc_jw_begin_object(w);
    bc_jw_key_uint(w, "n_iterations", cr->n_iterations);
    bc_jw_key_double(w, "total_ms_rel_ci", BC_CASE_FIELD(run, cr, total_ms_rel_ci, NAN));
    double agreement = BC_CASE_FIELD(run, cr, token_agreement, NAN); /* (2.2) only where checked */
    if (!isnan(agreement)) bc_jw_key_double(w, "token_agreement", agreement);
    bc_jw_key_double(w, "wall_ms", cr->wall_ms);
    bc_jw_key(w, "host_load");
    write_host_load(w, run, cr);
    bc_jw_key_uint(w, "effective_batch", bc_case_effective_batch(cr->c));
    bc_jw_key(w, "stats");
    write_all_stats(w, run, cr);
    bc_jw_key(w, "memory");
    write_memory(w, cr);
    const bc_case_schedule *sc = BC_CASE_FIELD(run, cr, schedule, NULL); /* (2.2) where the backend kept one */
    if (sc) {
        bc_jw_key(w, "schedule");
        write_schedule(w, sc);
    }
    bc_jw_end_object(w);
}

void bc_rj_case(bc_jw *w, const bc_run_report *run, const bc_case_report *cr, int with_profiles,
                const char *record) {
    const bc_case *c = cr->c;
    bc_jw_begin_object(w);
    if (record) bc_jw_key_string(w, "record", record);
    bc_jw_key_uint(w, "index", c->index);
    bc_jw_key_uint(w, "batch_size", c->batch_size);
    bc_jw_key_uint(w, "samples_per_prompt", c->samples_per_prompt);
    bc_jw_key_uint(w, "prompt_length", c->prompt_length);
    bc_jw_key_int_or_null(w, "prompt_width_tokens", cr->prompt_width_tokens);
    bc_jw_key_int_or_null(w, "prompt_min_tokens", cr->prompt_min_tokens);
    bc_jw_key_int_or_null(w, "prompt_max_tokens", cr->prompt_max_tokens);
    bc_jw_key_int_or_null(w, "prompt_p50_tokens", BC_CASE_FIELD(run, cr, prompt_p50_tokens, -1)); /* (2.2) */
    bc_jw_key_int_or_null(w, "prompt_pad_tokens", BC_CASE_FIELD(run, cr, prompt_pad_tokens, -1)); /* (2.2) */
    bc_jw_key_uint(w, "requested_response_length", c->response_length);
    bc_jw_key_int_or_null(w, "returned_response_length", cr->returned_response_length);
    bc_jw_key_double(w, "peak_memory_mb", cr->peak_memory_mib); /* MiB; the seed's key */
    bc_jw_key_double(w, "held_between_rollouts_mib", bc_bytes_to_mib(cr->held_between_rollouts_bytes));
    bc_jw_key(w, "summary");
    write_summary(w, run, cr);
    if (with_profiles) {
        bc_jw_key(w, "profiles");
        write_profiles(w, run, cr);
    }
    bc_jw_key_string(w, "precision", c->precision);
    bc_jw_key_string(w, "dtype", bc_case_dtype(c));
    bc_jw_key_string(w, "cache_policy", c->cache_policy);
    if (bc_case_backend(c)) bc_jw_key_string(w, "backend", bc_case_backend(c)); /* (2.2) */
    if (bc_case_n_settings(c)) { /* (2.3) */
        bc_jw_key(w, "backend_settings");
        bc_jw_begin_object(w);
        for (uint32_t i = 0; i < bc_case_n_settings(c); i++) bc_jw_key_string(w, c->setting_names[i], c->setting_values[i]);
        bc_jw_end_object(w);
    }
    bc_jw_key_bool(w, "release_inference_cache", c->release_cache);
    bc_jw_key_bool(w, "rebuilt", cr->rebuilt != 0);
    bc_jw_key_string(w, "status", bc_case_status_name(cr->status));
    if (BC_CASE_FIELD(run, cr, resumed, 0)) bc_jw_key_bool(w, "resumed", 1); /* (2.5) taken from the journal */
    bc_jw_key_string(w, "stop_reason", bc_case_stop_reason(run, cr));
    bc_jw_key_string(w, "error_code", cr->error_code != BC_OK ? bc_status_name(cr->error_code) : NULL);
    bc_jw_key_string(w, "message", cr->message ? cr->message : "");
    bc_jw_key(w, "extended");
    write_extended(w, run, cr);
    const bc_case_distributed *cd = BC_CASE_FIELD(run, cr, distributed, NULL);
    if (cd) {
        bc_jw_key(w, "distributed");
        write_distributed_case(w, run, cd);
    }
    bc_jw_end_object(w);
}
