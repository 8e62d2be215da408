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
    bc_jw_key_string(w, "model", run->backend.model);
    bc_jw_key_string(w, "device", run->backend.device);
    bc_jw_key_uint(w, "warmup", run->warmup);
    bc_jw_key_uint(w, "iterations", run->iterations);
    bc_jw_key_double(w, "temperature", run->sampling.temperature);
    bc_jw_key_double(w, "top_p", run->sampling.top_p);
}

/* The backend's resolved settings as {name: value}, typed as declared;
 * null from a host older than ABI 1.1, which does not pass them. */
static void write_backend_settings(bc_jw *w, const bc_run_report *run) {
    if (!bc_run_report_has(run, n_backend_settings) || !run->backend_settings || !run->backend_values) {
        bc_jw_null(w);
        return;
    }
    bc_jw_begin_object(w);
    for (uint32_t i = 0; i < run->n_backend_settings; i++) {
        const bc_setting_desc *d = &run->backend_settings[i];
        const bc_setting_value *v = &run->backend_values[i];
        switch (d->type) {
        case BC_SETTING_INT: bc_jw_key_int(w, d->name, v->i); break;
        case BC_SETTING_FLOAT: bc_jw_key_double(w, d->name, v->f); break;
        case BC_SETTING_BOOL: bc_jw_key_bool(w, d->name, v->i != 0); break;
        default: bc_jw_key_string(w, d->name, v->s); break;
        }
    }
    bc_jw_end_object(w);
}

void bc_rj_run_metadata(bc_jw *w, const bc_run_report *run) {
    bc_jw_key_string(w, "benchctl_version", run->benchctl_version);
    bc_jw_key_string(w, "git_commit", run->git_commit);
    bc_jw_key_string(w, "backend", run->backend_name);
    bc_jw_key(w, "backend_settings");
    write_backend_settings(w, run);
    bc_jw_key_string(w, "gpu", run->backend.device_name);
    bc_jw_key_string(w, "driver", run->backend.driver);
    bc_jw_key_string(w, "cpu_model", run->cpu_model);
    bc_jw_key_string(w, "hostname", run->hostname);
    bc_jw_key_string(w, "config_path", run->config_path);
    bc_jw_key_string(w, "config_sha256", run->config_sha256);
    bc_jw_key_string(w, "start_time", run->start_time_utc);
    bc_jw_key(w, "sampling");
    bc_jw_begin_object(w);
    bc_jw_key_double(w, "temperature", run->sampling.temperature);
    bc_jw_key_double(w, "top_p", run->sampling.top_p);
    bc_jw_key_int(w, "top_k", run->sampling.top_k);
    bc_jw_key_uint(w, "seed", run->sampling.seed);
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
        bc_jw_key_string(w, "kind", p->kind);
        bc_jw_key_string(w, "name", p->name);
        bc_jw_key_string(w, "version", p->version);
        bc_jw_key_string(w, "path", p->path);
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
            bc_jw_key_double(w, "mean", s->mean);
            bc_jw_key_double(w, "p50", s->p50);
            bc_jw_key_double(w, "p95", s->p95);
            bc_jw_end_object(w);
        } else if (strcmp(name, "tokens_per_second") == 0) {
            bc_jw_key(w, name);
            bc_jw_begin_object(w);
            bc_jw_key_double(w, "mean", s->mean);
            bc_jw_key_double(w, "p50", s->p50);
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
            bc_jw_key_double(w, run->field_names[f], row[f]);
        }
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

static void write_extended(bc_jw *w, const bc_run_report *run, const bc_case_report *cr) {
    bc_jw_begin_object(w);
    bc_jw_key_uint(w, "n_iterations", cr->n_iterations);
    bc_jw_key_double(w, "wall_ms", cr->wall_ms);
    bc_jw_key_uint(w, "effective_batch", bc_case_effective_batch(cr->c));
    bc_jw_key(w, "stats");
    bc_jw_begin_object(w);
    for (uint32_t f = 0; cr->stats && f < run->n_fields; f++) {
        const bc_stats *s = &cr->stats[f];
        bc_jw_key(w, run->field_names[f]);
        bc_jw_begin_object(w);
        bc_jw_key_uint(w, "n", s->n);
        bc_jw_key_double(w, "mean", s->mean);
        bc_jw_key_double(w, "p50", s->p50);
        bc_jw_key_double(w, "p95", s->p95);
        bc_jw_key_double(w, "min", s->min);
        bc_jw_key_double(w, "max", s->max);
        bc_jw_key_double(w, "stddev", s->stddev);
        bc_jw_end_object(w);
    }
    bc_jw_end_object(w);
    const bc_memory_stats *m = &cr->memory;
    bc_jw_key(w, "memory");
    bc_jw_begin_object(w);
    bc_jw_key_int_or_null(w, "weights_bytes", m->weights_bytes);
    bc_jw_key_int_or_null(w, "kv_cache_bytes", m->kv_cache_bytes);
    bc_jw_key_int_or_null(w, "workspace_bytes", m->workspace_bytes);
    bc_jw_key_int_or_null(w, "host_peak_bytes", m->host_peak_bytes);
    bc_jw_key_int_or_null(w, "device_peak_bytes", m->device_peak_bytes);
    bc_jw_key_int_or_null(w, "device_total_bytes", m->device_total_bytes);
    bc_jw_key_int_or_null(w, "peak_rss_bytes", cr->peak_rss_bytes);
    bc_jw_key_int_or_null(w, "device_free_before_bytes", cr->device_free_before_bytes);
    bc_jw_key_int_or_null(w, "device_free_after_bytes", cr->device_free_after_bytes);
    bc_jw_end_object(w);
    bc_jw_end_object(w);
}

void bc_rj_case(bc_jw *w, const bc_run_report *run, const bc_case_report *cr, int with_profiles,
                const char *record) {
    const bc_case *c = cr->c;
    bc_jw_begin_object(w);
    if (record) {
        bc_jw_key_string(w, "record", record);
    }
    bc_jw_key_uint(w, "index", c->index);
    bc_jw_key_uint(w, "batch_size", c->batch_size);
    bc_jw_key_uint(w, "samples_per_prompt", c->samples_per_prompt);
    bc_jw_key_uint(w, "prompt_length", c->prompt_length);
    bc_jw_key_uint(w, "requested_response_length", c->response_length);
    bc_jw_key_int_or_null(w, "returned_response_length", cr->returned_response_length);
    bc_jw_key_double(w, "peak_memory_mb", cr->peak_memory_mb);
    bc_jw_key(w, "summary");
    write_summary(w, run, cr);
    if (with_profiles) {
        bc_jw_key(w, "profiles");
        write_profiles(w, run, cr);
    }
    bc_jw_key_string(w, "precision", c->precision);
    bc_jw_key_string(w, "dtype", bc_case_dtype(c));
    bc_jw_key_string(w, "cache_policy", c->cache_policy);
    bc_jw_key_bool(w, "release_inference_cache", c->release_cache);
    bc_jw_key_string(w, "status", bc_case_status_name(cr->status));
    bc_jw_key_string(w, "message", cr->message ? cr->message : "");
    bc_jw_key(w, "extended");
    write_extended(w, run, cr);
    bc_jw_end_object(w);
}
