/* report_json.c: run metadata and case objects of the JSON report (see
 * report_json.h and docs/reporters.md). */
#include "report_json.h"

#include <string.h>

const char *bc_case_status_name(bc_case_status s) {
    switch (s) {
    case BC_CASE_OK: return "ok";
    case BC_CASE_FAILED: return "failed";
    case BC_CASE_SKIPPED: return "skipped";
    }
    return "unknown";
}

const char *bc_case_dtype(const bc_case *c) {
    if (!c) return NULL;
    if (c->precision_ops && c->precision_ops->dtype) return c->precision_ops->dtype;
    return c->precision;
}

int bc_run_field_index(const bc_run_report *run, const char *name) {
    if (!run->field_names) return -1;
    for (uint32_t f = 0; f < run->n_fields; f++)
        if (run->field_names[f] && strcmp(run->field_names[f], name) == 0) return (int)f;
    return -1;
}

static int ends_with(const char *s, const char *suffix) {
    size_t ls = strlen(s), lx = strlen(suffix);
    return ls >= lx && strcmp(s + ls - lx, suffix) == 0;
}

static void string_list(bc_jw *w, const char *const *items, uint32_t n) {
    bc_jw_begin_array(w);
    for (uint32_t i = 0; items && i < n; i++) bc_jw_string(w, items[i]);
    bc_jw_end_array(w);
}

uint32_t bc_rj_schema_version(const bc_run_report *run) {
    return run->schema_version ? run->schema_version : BC_REPORT_SCHEMA_VERSION;
}

void bc_rj_seed_keys(bc_jw *w, const bc_run_report *run) {
    bc_jw_key(w, "model");
    bc_jw_string(w, run->backend.model);
    bc_jw_key(w, "device");
    bc_jw_string(w, run->backend.device);
    bc_jw_key(w, "warmup");
    bc_jw_uint(w, run->warmup);
    bc_jw_key(w, "iterations");
    bc_jw_uint(w, run->iterations);
    bc_jw_key(w, "temperature");
    bc_jw_double(w, run->sampling.temperature);
    bc_jw_key(w, "top_p");
    bc_jw_double(w, run->sampling.top_p);
}

void bc_rj_run_metadata(bc_jw *w, const bc_run_report *run) {
    bc_jw_key(w, "benchctl_version");
    bc_jw_string(w, run->benchctl_version);
    bc_jw_key(w, "git_commit");
    bc_jw_string(w, run->git_commit);
    bc_jw_key(w, "backend");
    bc_jw_string(w, run->backend_name);
    bc_jw_key(w, "gpu");
    bc_jw_string(w, run->backend.device_name);
    bc_jw_key(w, "driver");
    bc_jw_string(w, run->backend.driver);
    bc_jw_key(w, "cpu_model");
    bc_jw_string(w, run->cpu_model);
    bc_jw_key(w, "hostname");
    bc_jw_string(w, run->hostname);
    bc_jw_key(w, "config_path");
    bc_jw_string(w, run->config_path);
    bc_jw_key(w, "config_sha256");
    bc_jw_string(w, run->config_sha256);
    bc_jw_key(w, "start_time");
    bc_jw_string(w, run->start_time_utc);
    bc_jw_key(w, "sampling");
    bc_jw_begin_object(w);
    bc_jw_key(w, "temperature");
    bc_jw_double(w, run->sampling.temperature);
    bc_jw_key(w, "top_p");
    bc_jw_double(w, run->sampling.top_p);
    bc_jw_key(w, "top_k");
    bc_jw_int(w, run->sampling.top_k);
    bc_jw_key(w, "seed");
    bc_jw_uint(w, run->sampling.seed);
    bc_jw_end_object(w);
    bc_jw_key(w, "precisions");
    string_list(w, run->precisions, run->n_precisions);
    bc_jw_key(w, "cache_policies");
    string_list(w, run->cache_policies, run->n_cache_policies);
    bc_jw_key(w, "fields");
    string_list(w, run->field_names, run->n_fields);
    bc_jw_key(w, "plugins");
    bc_jw_begin_array(w);
    for (uint32_t i = 0; run->plugins && i < run->n_plugins; i++) {
        const bc_plugin_ref *p = &run->plugins[i];
        bc_jw_begin_object(w);
        bc_jw_key(w, "kind");
        bc_jw_string(w, p->kind);
        bc_jw_key(w, "name");
        bc_jw_string(w, p->name);
        bc_jw_key(w, "version");
        bc_jw_string(w, p->version);
        bc_jw_key(w, "path");
        bc_jw_string(w, p->path);
        bc_jw_end_object(w);
    }
    bc_jw_end_array(w);
}

/* The seed's summary: latency fields (names ending in "_ms") get
 * {mean, p50, p95}; tokens_per_second gets {mean, p50}; other fields
 * (counts) are only in extended.stats. */
static void write_summary(bc_jw *w, const bc_run_report *run, const bc_case_report *cr) {
    bc_jw_begin_object(w);
    for (uint32_t f = 0; cr->stats && f < run->n_fields; f++) {
        const char *name = run->field_names[f];
        const bc_stats *s = &cr->stats[f];
        if (ends_with(name, "_ms")) {
            bc_jw_key(w, name);
            bc_jw_begin_object(w);
            bc_jw_key(w, "mean");
            bc_jw_double(w, s->mean);
            bc_jw_key(w, "p50");
            bc_jw_double(w, s->p50);
            bc_jw_key(w, "p95");
            bc_jw_double(w, s->p95);
            bc_jw_end_object(w);
        } else if (strcmp(name, "tokens_per_second") == 0) {
            bc_jw_key(w, name);
            bc_jw_begin_object(w);
            bc_jw_key(w, "mean");
            bc_jw_double(w, s->mean);
            bc_jw_key(w, "p50");
            bc_jw_double(w, s->p50);
            bc_jw_end_object(w);
        }
    }
    bc_jw_end_object(w);
}

static void write_profiles(bc_jw *w, const bc_run_report *run, const bc_case_report *cr) {
    const bc_case *c = cr->c;
    bc_jw_begin_array(w);
    for (uint32_t it = 0; cr->values && it < cr->n_iterations; it++) {
        const double *row = cr->values + (size_t)it * run->n_fields;
        bc_jw_begin_object(w);
        for (uint32_t f = 0; f < run->n_fields; f++) {
            bc_jw_key(w, run->field_names[f]);
            bc_jw_double(w, row[f]);
        }
        bc_jw_key(w, "batch_size");
        bc_jw_uint(w, c->batch_size);
        bc_jw_key(w, "num_samples_per_prompt");
        bc_jw_uint(w, c->samples_per_prompt);
        bc_jw_key(w, "prompt_length");
        bc_jw_uint(w, c->prompt_length);
        /* The length actually returned, as the seed's profile records it;
         * null when the backend did not say. */
        bc_jw_key(w, "response_length");
        bc_jw_int_or_null(w, cr->returned_response_length);
        bc_jw_end_object(w);
    }
    bc_jw_end_array(w);
}

static void write_extended(bc_jw *w, const bc_run_report *run, const bc_case_report *cr) {
    bc_jw_begin_object(w);
    bc_jw_key(w, "n_iterations");
    bc_jw_uint(w, cr->n_iterations);
    bc_jw_key(w, "wall_ms");
    bc_jw_double(w, cr->wall_ms);
    bc_jw_key(w, "effective_batch");
    bc_jw_uint(w, bc_case_effective_batch(cr->c));
    bc_jw_key(w, "stats");
    bc_jw_begin_object(w);
    for (uint32_t f = 0; cr->stats && f < run->n_fields; f++) {
        const bc_stats *s = &cr->stats[f];
        bc_jw_key(w, run->field_names[f]);
        bc_jw_begin_object(w);
        bc_jw_key(w, "n");
        bc_jw_uint(w, s->n);
        bc_jw_key(w, "mean");
        bc_jw_double(w, s->mean);
        bc_jw_key(w, "p50");
        bc_jw_double(w, s->p50);
        bc_jw_key(w, "p95");
        bc_jw_double(w, s->p95);
        bc_jw_key(w, "min");
        bc_jw_double(w, s->min);
        bc_jw_key(w, "max");
        bc_jw_double(w, s->max);
        bc_jw_key(w, "stddev");
        bc_jw_double(w, s->stddev);
        bc_jw_end_object(w);
    }
    bc_jw_end_object(w);
    const bc_memory_stats *m = &cr->memory;
    bc_jw_key(w, "memory");
    bc_jw_begin_object(w);
    bc_jw_key(w, "weights_bytes");
    bc_jw_int_or_null(w, m->weights_bytes);
    bc_jw_key(w, "kv_cache_bytes");
    bc_jw_int_or_null(w, m->kv_cache_bytes);
    bc_jw_key(w, "workspace_bytes");
    bc_jw_int_or_null(w, m->workspace_bytes);
    bc_jw_key(w, "host_peak_bytes");
    bc_jw_int_or_null(w, m->host_peak_bytes);
    bc_jw_key(w, "device_peak_bytes");
    bc_jw_int_or_null(w, m->device_peak_bytes);
    bc_jw_key(w, "device_total_bytes");
    bc_jw_int_or_null(w, m->device_total_bytes);
    bc_jw_key(w, "peak_rss_bytes");
    bc_jw_int_or_null(w, cr->peak_rss_bytes);
    bc_jw_key(w, "device_free_before_bytes");
    bc_jw_int_or_null(w, cr->device_free_before_bytes);
    bc_jw_key(w, "device_free_after_bytes");
    bc_jw_int_or_null(w, cr->device_free_after_bytes);
    bc_jw_end_object(w);
    bc_jw_end_object(w);
}

void bc_rj_case(bc_jw *w, const bc_run_report *run, const bc_case_report *cr, int with_profiles,
                const char *record) {
    const bc_case *c = cr->c;
    bc_jw_begin_object(w);
    if (record) {
        bc_jw_key(w, "record");
        bc_jw_string(w, record);
    }
    bc_jw_key(w, "index");
    bc_jw_uint(w, c->index);
    bc_jw_key(w, "batch_size");
    bc_jw_uint(w, c->batch_size);
    bc_jw_key(w, "samples_per_prompt");
    bc_jw_uint(w, c->samples_per_prompt);
    bc_jw_key(w, "prompt_length");
    bc_jw_uint(w, c->prompt_length);
    bc_jw_key(w, "requested_response_length");
    bc_jw_uint(w, c->response_length);
    bc_jw_key(w, "returned_response_length");
    bc_jw_int_or_null(w, cr->returned_response_length);
    bc_jw_key(w, "peak_memory_mb");
    bc_jw_double(w, cr->peak_memory_mb);
    bc_jw_key(w, "summary");
    write_summary(w, run, cr);
    if (with_profiles) {
        bc_jw_key(w, "profiles");
        write_profiles(w, run, cr);
    }
    bc_jw_key(w, "precision");
    bc_jw_string(w, c->precision);
    bc_jw_key(w, "dtype");
    bc_jw_string(w, bc_case_dtype(c));
    bc_jw_key(w, "cache_policy");
    bc_jw_string(w, c->cache_policy);
    bc_jw_key(w, "release_inference_cache");
    bc_jw_bool(w, c->release_cache);
    bc_jw_key(w, "status");
    bc_jw_string(w, bc_case_status_name(cr->status));
    bc_jw_key(w, "message");
    bc_jw_string(w, cr->message ? cr->message : "");
    bc_jw_key(w, "extended");
    write_extended(w, run, cr);
    bc_jw_end_object(w);
}
