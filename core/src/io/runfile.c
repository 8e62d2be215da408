/* runfile.c: a finished run read back from its JSON report or its journal
 * (see runfile.h). jansson parses; zlib reads .gz files. */
#define _GNU_SOURCE
#include "runfile.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fields.h"
#include <unistd.h>
#include <zlib.h>

#include "readfile.h"
#include "stats.h"

/* Largest file read: a report holds every iteration of every case, but not
 * gigabytes. */
#define BC_RUNFILE_MAX_BYTES (1024ll * 1024 * 1024)

/* ------------------------------------------------------------ reading */

/* Reads the whole of path (through zlib, which also reads plain files) into
 * a NUL-terminated buffer the caller frees. */
static bc_status read_all(const char *path, char **out, size_t *out_len, bc_error *err) {
    *out = NULL;
    /* a regular file of at most the limit, checked before it is opened
     * (readfile.h); the text inside a .gz is held to the same limit below */
    int fd = bc_open_regular(path, "report", (uint64_t)BC_RUNFILE_MAX_BYTES, NULL, err);
    if (fd < 0) return err && err->code ? err->code : BC_ERR_IO;
    gzFile gz = gzdopen(fd, "rb");
    if (!gz) {
        close(fd);
        return bc_error_set(err, BC_ERR_NOMEM, "%s: cannot start reading: out of memory", path);
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    bc_status st = buf ? BC_OK : bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", path);
    while (st == BC_OK) {
        if (cap - len < (1 << 15)) {
            if ((long long)cap * 2 > BC_RUNFILE_MAX_BYTES) {
                st = bc_error_set(err, BC_ERR_FORMAT, "%s: larger than %lld MiB, not a benchctl report", path,
                                  BC_RUNFILE_MAX_BYTES >> 20);
                break;
            }
            char *grown = realloc(buf, cap * 2);
            if (!grown) {
                st = bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", path);
                break;
            }
            buf = grown;
            cap *= 2;
        }
        int got = gzread(gz, buf + len, (unsigned)(cap - len - 1));
        if (got < 0) {
            int zerr = 0;
            const char *why = gzerror(gz, &zerr);
            st = bc_error_set(err, BC_ERR_IO, "%s: read error: %s", path, why ? why : "?");
            break;
        }
        if (got == 0) break;
        len += (size_t)got;
    }
    gzclose(gz);
    if (st != BC_OK) {
        free(buf);
        return st;
    }
    buf[len] = '\0';
    *out = buf;
    *out_len = len;
    return BC_OK;
}

/* --------------------------------------------------------- JSON values */

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

/* A string member, copied; NULL when absent, null or not a string. */
static char *get_string(const json_t *obj, const char *key) {
    return dup_or_null(json_string_value(json_object_get(obj, key)));
}

/* A number member; fallback when absent, null or not a number. */
static double get_number(const json_t *obj, const char *key, double fallback) {
    const json_t *v = json_object_get(obj, key);
    return json_is_number(v) ? json_number_value(v) : fallback;
}

static int64_t get_int(const json_t *obj, const char *key, int64_t fallback) {
    const json_t *v = json_object_get(obj, key);
    if (json_is_integer(v)) return (int64_t)json_integer_value(v);
    if (json_is_real(v)) return (int64_t)json_real_value(v);
    return fallback;
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
    json_array_foreach(steps, i, v) s->steps[i] = (int32_t)(json_is_number(v) ? json_number_value(v) : -1);
    json_array_foreach(first, i, v) s->first_ms[i] = json_is_number(v) ? json_number_value(v) : NAN;
    json_array_foreach(done, i, v) s->done[i] = (int32_t)(json_is_number(v) ? json_number_value(v) : -1);
    return BC_OK;
}

/* The text of a value: strings unquoted, everything else as JSON. */
static char *value_text(const json_t *v) {
    if (json_is_string(v)) return strdup(json_string_value(v));
    if (!v || json_is_null(v)) return strdup("null");
    return json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
}

/* ------------------------------------------------------------ the run */

/* The header (every format's top level, or the journal's "run" record). */
/* The top-level "distributed" block, when there is one. */
static bc_status read_distributed_run(bc_runfile *rf, const json_t *d, bc_error *err) {
    if (!json_is_object(d)) return BC_OK;
    rf->has_distributed = 1;
    rf->dist_mode = get_string(d, "mode");
    rf->dist_comm = get_string(d, "comm");
    rf->dist_world_size = (uint32_t)get_int(d, "world_size", 0);
    const json_t *ranks = json_object_get(d, "ranks");
    size_t n = json_is_array(ranks) ? json_array_size(ranks) : 0;
    rf->ranks = calloc(n ? n : 1, sizeof *rf->ranks);
    if (!rf->ranks) return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", rf->path);
    rf->n_ranks = n;
    for (size_t r = 0; r < n; r++) {
        const json_t *ri = json_array_get(ranks, r);
        rf->ranks[r] = (bc_rank_info){.rank = (int32_t)get_int(ri, "rank", (int64_t)r),
                                      .local_rank = (int32_t)get_int(ri, "local_rank", -1),
                                      .host = get_string(ri, "host"), .device = get_string(ri, "device")};
    }
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
    size_t n = (size_t)get_int(cd, "n_ranks", 0);
    if (n > 1u << 20) n = 0; /* not a count a run could have */
    out->dist_arrays = malloc((3 * n + 1) * sizeof *out->dist_arrays);
    if (!out->dist_arrays) return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", rf->path);
    get_numbers(cd, "rank_time_ms", out->dist_arrays, n);
    get_numbers(cd, "rank_tokens_per_second", out->dist_arrays + n, n);
    get_numbers(cd, "rank_peak_memory_mib", out->dist_arrays + 2 * n, n);
    out->dist_host = get_string(cd, "host");
    out->dist_slowest_host = get_string(cd, "slowest_host");
    const json_t *forced = json_object_get(cd, "lengths_forced");
    *d = (bc_case_distributed){
        .struct_size = sizeof *d,
        .n_ranks = (uint32_t)n,
        .rank = (int32_t)get_int(cd, "rank", -1),
        .host = out->dist_host,
        .step_tokens_per_second = get_number(cd, "step_tokens_per_second", NAN),
        .ideal_tokens_per_second = get_number(cd, "ideal_tokens_per_second", NAN),
        .straggler_efficiency = get_number(cd, "straggler_efficiency", NAN),
        .straggler_tax_ms = get_number(cd, "straggler_tax_ms", NAN),
        .rank_time_min_ms = get_number(cd, "rank_time_min_ms", NAN),
        .rank_time_mean_ms = get_number(cd, "rank_time_mean_ms", NAN),
        .rank_time_max_ms = get_number(cd, "rank_time_max_ms", NAN),
        .rank_time_std_ms = get_number(cd, "rank_time_std_ms", NAN),
        .slowest_rank = (int32_t)get_int(cd, "slowest_rank", -1),
        .slowest_host = out->dist_slowest_host,
        .peak_memory_max_mib = get_number(cd, "peak_memory_max_mib", NAN),
        .peak_memory_sum_mib = get_number(cd, "peak_memory_sum_mib", NAN),
        .full_length = json_is_boolean(forced) ? json_is_true(forced) : -1,
        .rank_time_ms = out->dist_arrays,
        .rank_tokens_per_second = out->dist_arrays + n,
        .rank_peak_memory_mib = out->dist_arrays + 2 * n,
    };
    return BC_OK;
}

static bc_status read_header(bc_runfile *rf, const json_t *top, bc_error *err) {
    bc_status st_dist;
    rf->schema_version = (int)get_int(top, "schema_version", 0);
    rf->model = get_string(top, "model");
    rf->device = get_string(top, "device");
    rf->gpu = get_string(top, "gpu");
    rf->driver = get_string(top, "driver");
    rf->backend = get_string(top, "backend");
    rf->benchctl_version = get_string(top, "benchctl_version");
    rf->git_commit = get_string(top, "git_commit");
    rf->config_sha256 = get_string(top, "config_sha256");
    rf->start_time = get_string(top, "start_time");
    rf->cpu_model = get_string(top, "cpu_model");
    rf->hostname = get_string(top, "hostname");
    rf->config_path = get_string(top, "config_path");
    const json_t *sampling = json_object_get(top, "sampling");
    rf->has_sampling = json_is_object(sampling);
    rf->temperature = get_number(sampling, "temperature", get_number(top, "temperature", NAN));
    rf->top_p = get_number(sampling, "top_p", get_number(top, "top_p", NAN));
    rf->top_k = get_int(sampling, "top_k", -1);
    rf->seed = get_int(sampling, "seed", -1);
    rf->warmup = (uint32_t)get_int(top, "warmup", 0);
    rf->iterations = (uint32_t)get_int(top, "iterations", 0);
    const json_t *cpu = json_object_get(json_object_get(top, "environment"), "cpu");
    rf->cpu_kernels = get_string(cpu, "kernels");
    rf->cpu_threads = get_int(cpu, "threads", -1);
    rf->cpu_logical = get_int(cpu, "logical_cpus", 0);
    rf->cpu_cores = get_int(cpu, "physical_cores", 0);
    rf->cpu_packages = get_int(cpu, "packages", 0);
    rf->cpu_threads_per_core = get_int(cpu, "threads_per_core", 0);
    rf->cpu_topology_note = get_string(cpu, "topology_note");
    const json_t *shape = json_object_get(top, "model_shape");
    rf->model_family = get_string(shape, "family");
    rf->n_parameters = get_int(shape, "parameters", -1);
    rf->n_layers = get_int(shape, "layers", -1);
    rf->hidden_size = get_int(shape, "hidden_size", -1);
    rf->n_heads = get_int(shape, "heads", -1);
    rf->ffn_size = get_int(shape, "ffn_size", -1);
    rf->vocab_size = get_int(shape, "vocab_size", -1);
    rf->max_positions = get_int(shape, "max_positions", -1);
    rf->world_size = get_int(top, "world_size", -1);
    if ((st_dist = read_distributed_run(rf, json_object_get(top, "distributed"), err)) != BC_OK) return st_dist;
    const json_t *stopping = json_object_get(top, "stopping"), *selection = json_object_get(top, "selection");
    rf->has_stopping = json_is_object(stopping);
    rf->min_iterations = (uint32_t)get_int(stopping, "min_iterations", rf->iterations);
    rf->max_iterations = (uint32_t)get_int(stopping, "max_iterations", rf->iterations);
    rf->target_rel_ci = get_number(stopping, "target_rel_ci", NAN);
    rf->max_seconds_per_case = get_number(stopping, "max_seconds_per_case", NAN);
    rf->has_selection = json_is_object(selection);
    rf->selected_cases = get_string(selection, "cases");
    rf->selected_only = get_string(selection, "only");
    rf->n_matrix_cases = (uint32_t)get_int(selection, "matrix_cases", 0);

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
            out->kind = get_string(p, "kind");
            out->name = get_string(p, "name");
            out->version = get_string(p, "version");
            out->path = get_string(p, "path");
            out->abi_major = (int)get_int(p, "abi_major", -1);
            out->abi_minor = (int)get_int(p, "abi_minor", -1);
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
static bc_status fields_from_profiles(bc_runfile *rf, const json_t *cases, bc_error *err) {
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

/* ------------------------------------------------------------ the cases */

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

/* With more than one backend named by rf's cases, every key names its
 * case's backend. */
static bc_status key_by_backend(bc_runfile *rf, bc_error *err) {
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
    out->index = (uint32_t)get_int(c, "index", (int64_t)position);
    out->batch_size = (uint32_t)get_int(c, "batch_size", 0);
    out->samples_per_prompt = (uint32_t)get_int(c, "samples_per_prompt", 1);
    out->prompt_length = (uint32_t)get_int(c, "prompt_length", 0);
    out->response_length = (uint32_t)get_int(c, "requested_response_length", get_int(c, "response_length", 0));
    out->precision = get_string(c, "precision");
    out->dtype = get_string(c, "dtype");
    if (!out->dtype) out->dtype = get_string(top, "dtype");
    if (!out->precision && out->dtype) out->precision = strdup(out->dtype);
    const char *release = release_word(c, top);
    out->cache_policy = get_string(c, "cache_policy");
    if (!out->cache_policy && release) out->cache_policy = strdup(release);
    out->release_cache = release ? strcmp(release, "release") == 0 : -1;
    out->status = status_from(json_string_value(json_object_get(c, "status")));
    out->error_code = status_code_from(json_string_value(json_object_get(c, "error_code")));
    out->backend = get_string(c, "backend");
    bc_status sst = read_case_settings(rf, json_object_get(c, "backend_settings"), out, err);
    if (sst != BC_OK) return sst;
    out->message = get_string(c, "message");
    if (!out->message) out->message = strdup("");
    out->returned_response_length = get_int(c, "returned_response_length", -1);
    out->prompt_width_tokens = get_int(c, "prompt_width_tokens", -1);
    out->prompt_min_tokens = get_int(c, "prompt_min_tokens", -1);
    out->prompt_max_tokens = get_int(c, "prompt_max_tokens", -1);
    out->prompt_p50_tokens = get_int(c, "prompt_p50_tokens", -1);
    out->prompt_pad_tokens = get_int(c, "prompt_pad_tokens", -1);
    out->peak_memory_mib = get_number(c, "peak_memory_mb", NAN);
    out->held_between_rollouts_mib = get_number(c, "held_between_rollouts_mib", NAN);
    const json_t *ext = json_object_get(c, "extended"), *mem = json_object_get(ext, "memory");
    out->wall_ms = get_number(ext, "wall_ms", NAN);
    out->weights_bytes = get_int(mem, "weights_bytes", -1);
    out->kv_cache_bytes = get_int(mem, "kv_cache_bytes", -1);
    out->workspace_bytes = get_int(mem, "workspace_bytes", -1);
    out->host_peak_bytes = get_int(mem, "host_peak_bytes", -1);
    out->device_peak_bytes = get_int(mem, "device_peak_bytes", -1);
    out->device_total_bytes = get_int(mem, "device_total_bytes", -1);
    out->resident_bytes = get_int(mem, "resident_bytes", -1);
    out->peak_rss_bytes = get_int(mem, "peak_rss_bytes", -1);
    out->device_free_before_bytes = get_int(mem, "device_free_before_bytes", -1);
    out->device_free_after_bytes = get_int(mem, "device_free_after_bytes", -1);
    out->rebuilt = json_is_true(json_object_get(c, "rebuilt"));
    const char *reason = json_string_value(json_object_get(c, "stop_reason"));
    out->stop_reason = BC_STOP_NONE;
    for (int r = BC_STOP_FIXED; reason && r <= BC_STOP_FAILED; r++)
        if (strcmp(reason, bc_stop_reason_name((bc_stop_reason)r)) == 0) out->stop_reason = (bc_stop_reason)r;
    const json_t *load = json_object_get(ext, "host_load");
    out->total_ms_rel_ci = get_number(ext, "total_ms_rel_ci", NAN);
    out->token_agreement = get_number(ext, "token_agreement", NAN);
    if (read_schedule(json_object_get(ext, "schedule"), &out->schedule) != BC_OK)
        return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", rf->path);
    out->load_avg_start = get_number(load, "load_avg_start", NAN);
    out->load_avg_end = get_number(load, "load_avg_end", NAN);
    out->cpu_steal_share = get_number(load, "cpu_steal_share", NAN);
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
        for (size_t f = 0; f < nf; f++) out->values[it * nf + f] = get_number(p, rf->field_names[f], NAN);
    }
    out->n_iterations = (uint32_t)n_it;
    for (size_t f = 0; f < nf; f++)
        if (bc_stats_compute(out->values + f, n_it, nf, out->stats + f * BC_N_STATS, err) != BC_OK) return err->code;
    return BC_OK;
}

/* Appends one case to rf. */
static bc_status add_case(bc_runfile *rf, const json_t *top, const json_t *c, bc_error *err) {
    bc_runfile_case *grown = realloc(rf->cases, (rf->n_cases + 1) * sizeof *grown);
    if (!grown) return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", rf->path);
    rf->cases = grown;
    bc_status st = read_case(rf, top, c, rf->n_cases, &rf->cases[rf->n_cases], err);
    rf->n_cases++; /* freed by bc_runfile_free either way */
    return st;
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
static bc_status read_field_descs(bc_runfile *rf, const json_t *top, bc_error *err) {
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

/* --------------------------------------------------------------- formats */

static bc_status read_report(bc_runfile *rf, json_t *top, bc_error *err) {
    const json_t *cases = json_object_get(top, "cases");
    if (!json_is_array(cases)) return bc_error_set(err, BC_ERR_FORMAT, "%s: no \"cases\" list; not a run report", rf->path);
    bc_status st = read_header(rf, top, err);
    if (st == BC_OK && !rf->field_names) {
        rf->format = BC_RUNFILE_SEED_JSON;
        st = fields_from_profiles(rf, cases, err);
    }
    if (st == BC_OK) st = read_field_descs(rf, top, err);
    for (size_t i = 0; st == BC_OK && i < json_array_size(cases); i++) st = add_case(rf, top, json_array_get(cases, i), err);
    rf->complete = 1;
    return st;
}

/* The journal: one JSON object per line. A last line that does not parse
 * and has no newline is a record cut short (SIGKILL): skipped, with a
 * warning. Any other bad line is an error naming it. */
static bc_status read_journal(bc_runfile *rf, char *text, size_t len, bc_error *err) {
    json_t *header = NULL;
    bc_status st = BC_OK;
    size_t line_no = 0;
    for (char *line = text; st == BC_OK && line < text + len;) {
        char *nl = memchr(line, '\n', (size_t)(text + len - line));
        int last_torn = nl == NULL;
        if (nl) *nl = '\0';
        line_no++;
        char *next = nl ? nl + 1 : text + len;
        if (!*line) {
            line = next;
            continue;
        }
        json_error_t je;
        json_t *rec = json_loads(line, 0, &je);
        if (!rec) {
            if (last_torn) {
                snprintf(rf->warning, sizeof rf->warning, "%s:%zu: the last line is cut short (the run was killed?); skipped",
                         rf->path, line_no);
                break;
            }
            st = bc_error_set(err, BC_ERR_FORMAT, "%s:%zu: not a JSON line: %s", rf->path, line_no, je.text);
            break;
        }
        const char *kind = json_string_value(json_object_get(rec, "record"));
        if (kind && strcmp(kind, "run") == 0 && !header) {
            header = rec;
            st = read_header(rf, header, err);
            if (st == BC_OK) st = read_field_descs(rf, header, err);
            line = next;
            continue;
        }
        if (!header) st = bc_error_set(err, BC_ERR_FORMAT, "%s:%zu: a journal starts with its \"run\" record", rf->path, line_no);
        else if (kind && strcmp(kind, "case") == 0) st = add_case(rf, header, rec, err);
        else if (kind && strcmp(kind, "end") == 0) rf->complete = 1;
        else st = bc_error_set(err, BC_ERR_FORMAT, "%s:%zu: unknown record \"%s\"", rf->path, line_no, kind ? kind : "?");
        json_decref(rec);
        line = next;
    }
    if (st == BC_OK && !header) st = bc_error_set(err, BC_ERR_FORMAT, "%s: an empty journal", rf->path);
    json_decref(header);
    return st;
}

/* 1 when text's first line is a JSON object with a "record" member. */
static int is_journal(const char *text) {
    const char *nl = strchr(text, '\n');
    size_t n = nl ? (size_t)(nl - text) : strlen(text);
    json_t *first = json_loadb(text, n, 0, NULL);
    int yes = json_is_object(first) && json_object_get(first, "record") != NULL;
    json_decref(first);
    return yes;
}

bc_status bc_runfile_read(const char *path, bc_runfile *out, bc_error *err) {
    memset(out, 0, sizeof *out);
    char *text = NULL;
    size_t len = 0;
    bc_status st = read_all(path, &text, &len, err);
    if (st != BC_OK) return st;
    if (!(out->path = strdup(path))) {
        free(text);
        return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", path);
    }
    /* A journal's first line is its "run" record; a report is one document. */
    if (is_journal(text)) {
        out->format = BC_RUNFILE_JOURNAL;
        st = read_journal(out, text, len, err);
        if (st == BC_OK) st = key_by_backend(out, err);
        free(text);
        if (st != BC_OK) bc_runfile_free(out);
        return st;
    }
    json_error_t je;
    json_t *doc = json_loadb(text, len, 0, &je);
    if (json_is_object(doc)) {
        out->format = BC_RUNFILE_JSON;
        st = read_report(out, doc, err);
        if (st == BC_OK) st = key_by_backend(out, err);
    } else if (doc) {
        st = bc_error_set(err, BC_ERR_FORMAT, "%s: not a benchctl report (the top level is not an object)", path);
    } else {
        st = bc_error_set(err, BC_ERR_FORMAT, "%s:%d: not a benchctl report or journal: %s", path, je.line, je.text);
    }
    json_decref(doc);
    free(text);
    if (st != BC_OK) bc_runfile_free(out);
    return st;
}

/* ------------------------------------------------------------- queries */

int bc_runfile_field(const bc_runfile *rf, const char *name) {
    for (uint32_t f = 0; f < rf->n_fields; f++)
        if (strcmp(rf->field_names[f], name) == 0) return (int)f;
    return -1;
}

const bc_runfile_case *bc_runfile_find(const bc_runfile *rf, const char *key) {
    for (size_t i = 0; i < rf->n_cases; i++)
        if (strcmp(rf->cases[i].key, key) == 0) return &rf->cases[i];
    return NULL;
}

const char *bc_runfile_setting(const bc_runfile *rf, const char *name) {
    for (size_t i = 0; i < rf->n_backend_settings; i++)
        if (strcmp(rf->backend_settings[i].name, name) == 0) return rf->backend_settings[i].value;
    return NULL;
}

static void free_case(bc_runfile_case *c) {
    bc_schedule_clear(&c->schedule);
    free(c->precision), free(c->dtype), free(c->cache_policy), free(c->message), free(c->key), free(c->backend);
    for (size_t i = 0; i < c->n_settings; i++) free(c->setting_names[i]), free(c->setting_values[i]);
    free(c->setting_names), free(c->setting_values);
    free(c->values), free(c->stats);
    free(c->dist_host), free(c->dist_slowest_host), free(c->dist_arrays);
}

void bc_runfile_free(bc_runfile *rf) {
    char **strings[] = {&rf->path,          &rf->model,      &rf->device,       &rf->gpu,
                        &rf->driver,        &rf->backend,    &rf->benchctl_version, &rf->git_commit,
                        &rf->config_sha256, &rf->start_time, &rf->cpu_model,    &rf->cpu_kernels,
                        &rf->hostname,      &rf->config_path, &rf->model_family, &rf->selected_cases,
                        &rf->selected_only, &rf->cpu_topology_note};
    for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++) free(*strings[i]);
    for (size_t i = 0; i < rf->n_backend_settings; i++) {
        free(rf->backend_settings[i].name);
        free(rf->backend_settings[i].value);
    }
    free(rf->backend_settings);
    for (size_t i = 0; i < rf->n_plugins; i++) {
        free(rf->plugins[i].kind), free(rf->plugins[i].name);
        free(rf->plugins[i].version), free(rf->plugins[i].path);
    }
    free(rf->plugins);
    for (uint32_t f = 0; rf->field_descs && f < rf->n_fields; f++)
        free((char *)rf->field_descs[f].unit), free((char *)rf->field_descs[f].help);
    free(rf->field_descs);
    for (uint32_t f = 0; f < rf->n_fields; f++) free(rf->field_names[f]);
    free(rf->field_names);
    for (size_t i = 0; i < rf->n_cases; i++) free_case(&rf->cases[i]);
    free(rf->cases);
    for (size_t r = 0; r < rf->n_ranks; r++) free((char *)rf->ranks[r].host), free((char *)rf->ranks[r].device);
    free(rf->ranks);
    free(rf->dist_mode), free(rf->dist_comm);
    memset(rf, 0, sizeof *rf);
}

/* Case c's value on axis ("backend" or a backend setting), or NULL. */
static const char *axis_value(const bc_runfile_case *c, const char *axis) {
    if (strcmp(axis, "backend") == 0) return c->backend;
    for (size_t i = 0; i < c->n_settings; i++)
        if (strcmp(c->setting_names[i], axis) == 0) return c->setting_values[i];
    return NULL;
}

size_t bc_runfile_axis_values(const bc_runfile *rf, const char *axis, const char ***out) {
    *out = NULL;
    const char **names = calloc(rf->n_cases + 1, sizeof *names);
    if (!names) return 0;
    size_t n = 0;
    for (size_t k = 0; k < rf->n_cases; k++) {
        const char *b = axis_value(&rf->cases[k], axis);
        size_t i = 0;
        while (b && i < n && strcmp(names[i], b) != 0) i++;
        if (b && i == n) names[n++] = b;
    }
    if (n == 0) {
        free(names);
        return 0;
    }
    *out = names;
    return n;
}

bc_status bc_runfile_keep_axis(bc_runfile *rf, const char *axis, const char *value, bc_error *err) {
    char *part = NULL; /* " AXIS=VALUE", as the key holds it */
    if (asprintf(&part, " %s=%s", axis, value) < 0) return bc_error_set(err, BC_ERR_NOMEM, "out of memory");
    size_t kept = 0;
    for (size_t k = 0; k < rf->n_cases; k++) {
        bc_runfile_case *c = &rf->cases[k];
        const char *v = axis_value(c, axis);
        if (!v || strcmp(v, value) != 0) {
            free_case(c);
            continue;
        }
        /* the last occurrence: the backend comes last, a setting's value may hold "x=y" */
        char *at = NULL;
        for (char *p = strstr(c->key, part); p; p = strstr(p + 1, part)) at = p;
        if (at) memmove(at, at + strlen(part), strlen(at + strlen(part)) + 1);
        /* and the setting itself: every case kept has this value */
        for (size_t i = 0; i < c->n_settings; i++)
            if (strcmp(c->setting_names[i], axis) == 0) {
                free(c->setting_names[i]), free(c->setting_values[i]);
                memmove(&c->setting_names[i], &c->setting_names[i + 1], (c->n_settings - i - 1) * sizeof(char *));
                memmove(&c->setting_values[i], &c->setting_values[i + 1], (c->n_settings - i - 1) * sizeof(char *));
                c->n_settings--;
                break;
            }
        rf->cases[kept++] = *c;
    }
    rf->n_cases = kept;
    free(part);
    char *path = NULL;
    int is_backend = strcmp(axis, "backend") == 0;
    if (asprintf(&path, "%s [%s%s%s]", rf->path, is_backend ? "" : axis, is_backend ? "" : "=", value) < 0)
        return bc_error_set(err, BC_ERR_NOMEM, "out of memory");
    free(rf->path);
    rf->path = path;
    return BC_OK;
}
