/* runfile_header.c: the run of a run file (runfile_internal.h): its
 * environment, backend settings, plugins, distributed block, fields and
 * their descriptors, from a report's top level or a journal's "run" record. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fields.h"
#include "runfile_internal.h"

/* The text of a value: strings unquoted, everything else as JSON. */
static char *value_text(const json_t *v) {
    if (json_is_string(v)) return strdup(json_string_value(v));
    if (!v || json_is_null(v)) return strdup("null");
    return json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
}

/* The top-level "distributed" block, when there is one. */
static bc_status read_distributed_run(bc_runfile *rf, const json_t *d, bc_error *err) {
    if (!json_is_object(d)) return BC_OK;
    rf->has_distributed = 1;
    rf->dist_mode = bc_rf_string(d, "mode");
    rf->dist_comm = bc_rf_string(d, "comm");
    rf->dist_world_size = (uint32_t)bc_rf_int(d, "world_size", 0);
    const json_t *ranks = json_object_get(d, "ranks");
    size_t n = json_is_array(ranks) ? json_array_size(ranks) : 0;
    rf->ranks = calloc(n ? n : 1, sizeof *rf->ranks);
    if (!rf->ranks) return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", rf->path);
    rf->n_ranks = n;
    for (size_t r = 0; r < n; r++) {
        const json_t *ri = json_array_get(ranks, r);
        rf->ranks[r] = (bc_rank_info){.rank = (int32_t)bc_rf_int(ri, "rank", (int64_t)r),
                                      .local_rank = (int32_t)bc_rf_int(ri, "local_rank", -1),
                                      .host = bc_rf_string(ri, "host"), .device = bc_rf_string(ri, "device")};
    }
    return BC_OK;
}

bc_status bc_rf_read_header(bc_runfile *rf, const json_t *top, bc_error *err) {
    bc_status st_dist;
    rf->schema_version = (int)bc_rf_int(top, "schema_version", 0);
    rf->model = bc_rf_string(top, "model");
    rf->device = bc_rf_string(top, "device");
    rf->gpu = bc_rf_string(top, "gpu");
    rf->driver = bc_rf_string(top, "driver");
    rf->backend = bc_rf_string(top, "backend");
    rf->benchctl_version = bc_rf_string(top, "benchctl_version");
    rf->git_commit = bc_rf_string(top, "git_commit");
    rf->config_sha256 = bc_rf_string(top, "config_sha256");
    rf->start_time = bc_rf_string(top, "start_time");
    rf->cpu_model = bc_rf_string(top, "cpu_model");
    rf->hostname = bc_rf_string(top, "hostname");
    rf->config_path = bc_rf_string(top, "config_path");
    const json_t *sampling = json_object_get(top, "sampling");
    rf->has_sampling = json_is_object(sampling);
    rf->temperature = bc_rf_number(sampling, "temperature", bc_rf_number(top, "temperature", NAN));
    rf->top_p = bc_rf_number(sampling, "top_p", bc_rf_number(top, "top_p", NAN));
    rf->top_k = bc_rf_int(sampling, "top_k", -1);
    rf->seed = bc_rf_int(sampling, "seed", -1);
    rf->warmup = (uint32_t)bc_rf_int(top, "warmup", 0);
    rf->iterations = (uint32_t)bc_rf_int(top, "iterations", 0);
    const json_t *cpu = json_object_get(json_object_get(top, "environment"), "cpu");
    rf->cpu_kernels = bc_rf_string(cpu, "kernels");
    rf->cpu_threads = bc_rf_int(cpu, "threads", -1);
    rf->cpu_logical = bc_rf_int(cpu, "logical_cpus", 0);
    rf->cpu_cores = bc_rf_int(cpu, "physical_cores", 0);
    rf->cpu_packages = bc_rf_int(cpu, "packages", 0);
    rf->cpu_threads_per_core = bc_rf_int(cpu, "threads_per_core", 0);
    rf->cpu_topology_note = bc_rf_string(cpu, "topology_note");
    rf->quiet_check = bc_rf_string(json_object_get(top, "environment"), "quiet_check");
    rf->memcpy_gb_per_s = bc_rf_number(json_object_get(top, "environment"), "memcpy_gb_per_s", NAN);
    const json_t *scorer = json_object_get(top, "scorer");
    rf->scorer_backend = bc_rf_string(scorer, "backend");
    rf->scorer_precision = bc_rf_string(scorer, "precision");
    rf->scorer_model = bc_rf_string(scorer, "model");
    rf->scorer_device = bc_rf_string(scorer, "device");
    rf->scorer_family = bc_rf_string(scorer, "family");
    rf->scorer_parameters = bc_rf_int(scorer, "parameters", -1);
    rf->scorer_vocab_size = bc_rf_int(scorer, "vocab_size", -1);
    rf->refit = bc_rf_string(top, "refit");
    const json_t *shape = json_object_get(top, "model_shape");
    rf->model_family = bc_rf_string(shape, "family");
    rf->n_parameters = bc_rf_int(shape, "parameters", -1);
    rf->n_layers = bc_rf_int(shape, "layers", -1);
    rf->hidden_size = bc_rf_int(shape, "hidden_size", -1);
    rf->n_heads = bc_rf_int(shape, "heads", -1);
    rf->ffn_size = bc_rf_int(shape, "ffn_size", -1);
    rf->vocab_size = bc_rf_int(shape, "vocab_size", -1);
    rf->max_positions = bc_rf_int(shape, "max_positions", -1);
    rf->world_size = bc_rf_int(top, "world_size", -1);
    if ((st_dist = read_distributed_run(rf, json_object_get(top, "distributed"), err)) != BC_OK) return st_dist;
    const json_t *stopping = json_object_get(top, "stopping"), *selection = json_object_get(top, "selection");
    rf->has_stopping = json_is_object(stopping);
    rf->min_iterations = (uint32_t)bc_rf_int(stopping, "min_iterations", rf->iterations);
    rf->max_iterations = (uint32_t)bc_rf_int(stopping, "max_iterations", rf->iterations);
    rf->target_rel_ci = bc_rf_number(stopping, "target_rel_ci", NAN);
    rf->max_seconds_per_case = bc_rf_number(stopping, "max_seconds_per_case", NAN);
    rf->has_selection = json_is_object(selection);
    rf->selected_cases = bc_rf_string(selection, "cases");
    rf->selected_only = bc_rf_string(selection, "only");
    rf->n_matrix_cases = (uint32_t)bc_rf_int(selection, "matrix_cases", 0);

    const json_t *settings = json_object_get(top, "backend_settings");
    if (json_is_object(settings)) {
        size_t n = json_object_size(settings), k = 0;
        rf->backend_settings = calloc(n ? n : 1, sizeof *rf->backend_settings);
        if (!rf->backend_settings) return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", rf->path);
        const char *name;
        json_t *v;
        json_object_foreach((json_t *)settings, name, v) {
            bc_runfile_pair *pair = &rf->backend_settings[k];
            pair->name = strdup(name);
            pair->value = value_text(v);
            pair->type = json_is_integer(v) ? BC_SETTING_INT
                         : json_is_real(v)  ? BC_SETTING_FLOAT
                         : json_is_boolean(v) ? BC_SETTING_BOOL
                                              : BC_SETTING_STRING;
            pair->i = json_is_boolean(v) ? json_is_true(v) : (int64_t)json_integer_value(v);
            pair->f = json_is_number(v) ? json_number_value(v) : 0.0;
            rf->n_backend_settings = ++k;
            if (!rf->backend_settings[k - 1].name || !rf->backend_settings[k - 1].value)
                return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", rf->path);
        }
    }
    const json_t *workload = json_object_get(top, "workload_settings");
    for (size_t k = 0; k < json_array_size(workload); k++) {
        const char *name = json_string_value(json_array_get(workload, k));
        for (size_t i = 0; name && i < rf->n_backend_settings; i++)
            if (strcmp(rf->backend_settings[i].name, name) == 0) rf->backend_settings[i].workload = 1;
    }
    const json_t *plugins = json_object_get(top, "plugins");
    if (json_is_array(plugins)) {
        size_t n = json_array_size(plugins);
        rf->plugins = calloc(n ? n : 1, sizeof *rf->plugins);
        if (!rf->plugins) return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", rf->path);
        for (size_t i = 0; i < n; i++) {
            const json_t *p = json_array_get(plugins, i);
            bc_runfile_plugin *out = &rf->plugins[i];
            out->kind = bc_rf_string(p, "kind");
            out->name = bc_rf_string(p, "name");
            out->version = bc_rf_string(p, "version");
            out->path = bc_rf_string(p, "path");
            out->abi_major = (int)bc_rf_int(p, "abi_major", -1);
            out->abi_minor = (int)bc_rf_int(p, "abi_minor", -1);
            rf->n_plugins = i + 1;
        }
    }
    const json_t *fields = json_object_get(top, "fields");
    if (json_is_array(fields)) {
        size_t n = json_array_size(fields);
        rf->field_names = calloc(n ? n : 1, sizeof *rf->field_names);
        if (!rf->field_names) return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", rf->path);
        for (size_t i = 0; i < n; i++) {
            const char *name = json_string_value(json_array_get(fields, i));
            if (!name) return bc_error_set(err, BC_ERR_FORMAT, "%s: fields[%zu] is not a string", rf->path, i);
            if (!(rf->field_names[i] = strdup(name))) return bc_error_set(err, BC_ERR_NOMEM, "out of memory");
            rf->n_fields = (uint32_t)(i + 1);
        }
    }
    return BC_OK;
}

/* Without a "fields" list (the seed format): the keys of the first profile
 * found, in their order. */
bc_status bc_rf_fields_from_profiles(bc_runfile *rf, const json_t *cases, bc_error *err) {
    const json_t *first = NULL;
    for (size_t i = 0; !first && i < json_array_size(cases); i++) {
        const json_t *profiles = json_object_get(json_array_get(cases, i), "profiles");
        if (json_array_size(profiles) > 0) first = json_array_get(profiles, 0);
    }
    if (!json_is_object(first)) return BC_OK; /* no case measured anything */
    size_t n = json_object_size(first), k = 0;
    rf->field_names = calloc(n ? n : 1, sizeof *rf->field_names);
    if (!rf->field_names) return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", rf->path);
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)first, name, v) {
        (void)v;
        if (!(rf->field_names[k++] = strdup(name))) return bc_error_set(err, BC_ERR_NOMEM, "out of memory");
        rf->n_fields = (uint32_t)k;
    }
    return BC_OK;
}

/* Which of names[n] text is, or fallback. */
static int enum_of(const char *text, const char *const *names, int n, int fallback) {
    for (int i = 0; text && i < n; i++)
        if (strcmp(text, names[i]) == 0) return i;
    return fallback;
}

/* rf->field_descs: each field's descriptor from top's "metrics" list (by
 * name); a field it lacks (a file from before 2.4) gets this host's
 * descriptor of that name, else unit "" and better neither. */
bc_status bc_rf_read_field_descs(bc_runfile *rf, const json_t *top, bc_error *err) {
    static const char *const better[] = {"neither", "higher", "lower"}, *const scope[] = {"iteration", "case"};
    rf->field_descs = calloc(rf->n_fields + 1, sizeof *rf->field_descs);
    if (!rf->field_descs) return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", rf->path);
    const json_t *metrics = json_object_get(top, "metrics");
    for (uint32_t f = 0; f < rf->n_fields; f++) {
        const json_t *m = NULL, *x;
        size_t i;
        json_array_foreach(metrics, i, x) {
            const char *name = json_string_value(json_object_get(x, "name"));
            if (name && strcmp(name, rf->field_names[f]) == 0) {
                m = x;
                break;
            }
        }
        const bc_metric_desc *host = bc_host_field_desc(rf->field_names[f]);
        bc_metric_desc d = host ? *host : (bc_metric_desc){.unit = "", .help = ""};
        if (m) {
            const char *unit = json_string_value(json_object_get(m, "unit"));
            const char *help = json_string_value(json_object_get(m, "help"));
            d.unit = unit ? unit : "";
            d.help = help ? help : "";
            d.better = (bc_metric_better)enum_of(json_string_value(json_object_get(m, "better")), better, 3, 0);
            d.scope = (bc_metric_scope)enum_of(json_string_value(json_object_get(m, "scope")), scope, 2, 0);
        }
        d.name = rf->field_names[f];
        char *unit = strdup(d.unit ? d.unit : ""), *help = strdup(d.help ? d.help : "");
        rf->field_descs[f] = d;
        rf->field_descs[f].unit = unit, rf->field_descs[f].help = help;
        if (!unit || !help) return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", rf->path);
    }
    return BC_OK;
}
