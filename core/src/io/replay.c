/* replay.c: a runfile turned into a bc_run_report (see replay.h). */
#define _POSIX_C_SOURCE 200809L
#include "replay.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fields.h"
#include "loader.h"
#include "metadata.h"
#include "settings.h"
#include "stats.h"

/* Adds name to list[*n] unless it is there. */
static void add_distinct(const char **list, uint32_t *n, const char *name) {
    if (!name) return;
    for (uint32_t i = 0; i < *n; i++)
        if (strcmp(list[i], name) == 0) return;
    list[(*n)++] = name;
}

static int by_index(const void *a, const void *b) {
    const bc_runfile_case *x = *(const bc_runfile_case *const *)a, *y = *(const bc_runfile_case *const *)b;
    return (x->index > y->index) - (x->index < y->index);
}

static int64_t mib_to_bytes(double mib) { return isnan(mib) ? -1 : (int64_t)(mib * 1024.0 * 1024.0); }

/* The case and its report for runfile case c (k-th in requested order). */
static void replay_case(const bc_runfile *rf, const bc_runfile_case *c, bc_replay *rp, size_t k) {
    bc_precision_ops *ops = &rp->dtypes[k];
    *ops = (bc_precision_ops){.struct_size = sizeof *ops, .dtype = c->dtype};
    rp->cases[k] = (bc_case){
        .struct_size = sizeof(bc_case),
        .index = c->index,
        .batch_size = c->batch_size,
        .samples_per_prompt = c->samples_per_prompt,
        .prompt_length = c->prompt_length,
        .response_length = c->response_length,
        .precision = c->precision,
        .precision_ops = c->dtype ? ops : NULL,
        .cache_policy = c->cache_policy,
        /* what the file says; the plugin name only when it says nothing
         * (a cache plugin need not be called "release" to release) */
        .release_cache = c->release_cache >= 0 ? c->release_cache
                                               : c->cache_policy && strcmp(c->cache_policy, "release") == 0,
        .sampling = rf->has_sampling ? &rp->sampling : NULL,
        .backend = c->backend,
        .setting_names = (const char *const *)c->setting_names,
        .setting_values = (const char *const *)c->setting_values,
        .n_settings = (uint32_t)c->n_settings,
    };
    bc_memory_stats *m = &rp->memory[k];
    *m = (bc_memory_stats){.struct_size = sizeof *m};
    m->weights_bytes = c->weights_bytes;
    m->kv_cache_bytes = c->kv_cache_bytes;
    m->workspace_bytes = c->workspace_bytes;
    m->host_peak_bytes = c->host_peak_bytes;
    m->device_peak_bytes = c->device_peak_bytes;
    m->device_free_bytes = c->device_free_after_bytes;
    m->device_total_bytes = c->device_total_bytes;
    m->resident_bytes = c->resident_bytes >= 0 ? c->resident_bytes : mib_to_bytes(c->held_between_rollouts_mib);
    bc_case_report *cr = &rp->reports[k];
    *cr = (bc_case_report){
        .struct_size = sizeof *cr,
        .c = &rp->cases[k],
        .status = c->status,
        .error_code = c->error_code,
        .message = c->message,
        .n_iterations = c->n_iterations,
        .values = c->values,
        .stats = c->stats,
        .returned_response_length = c->returned_response_length,
        .prompt_width_tokens = c->prompt_width_tokens,
        .prompt_min_tokens = c->prompt_min_tokens,
        .prompt_max_tokens = c->prompt_max_tokens,
        .prompt_p50_tokens = c->prompt_p50_tokens,
        .prompt_pad_tokens = c->prompt_pad_tokens,
        .peak_memory_mib = c->peak_memory_mib,
        .memory = m,
        .held_between_rollouts_bytes = m->resident_bytes,
        .peak_rss_bytes = c->peak_rss_bytes,
        .device_free_before_bytes = c->device_free_before_bytes,
        .device_free_after_bytes = c->device_free_after_bytes,
        .wall_ms = c->wall_ms,
        .rebuilt = c->rebuilt,
        .resumed = c->resumed,
        .total_ms_rel_ci = c->total_ms_rel_ci,
        .token_agreement = c->token_agreement,
        .load_avg_start = c->load_avg_start,
        .load_avg_end = c->load_avg_end,
        .cpu_steal_share = c->cpu_steal_share,
        .stop_reason = c->stop_reason,
        .distributed = c->dist.struct_size ? &c->dist : NULL,
        .schedule = c->schedule.pub.struct_size ? &c->schedule.pub : NULL,
    };
    (void)rf;
}

/* The backend description the file holds. */
static void replay_backend(const bc_runfile *rf, bc_backend_info *b) {
    *b = (bc_backend_info){.struct_size = sizeof *b};
    b->model = rf->model;
    b->device = rf->device;
    b->device_name = rf->gpu;
    b->driver = rf->driver;
    b->model_family = rf->model_family;
    b->n_parameters = rf->n_parameters;
    b->n_layers = rf->n_layers;
    b->hidden_size = rf->hidden_size;
    b->n_heads = rf->n_heads;
    b->ffn_size = rf->ffn_size;
    b->vocab_size = rf->vocab_size;
    b->max_positions = rf->max_positions;
    b->cpu_kernels = rf->cpu_kernels;
    b->cpu_threads = rf->cpu_threads;
}

bc_status bc_replay_build(const bc_runfile *rf, bc_replay *rp, bc_error *err) {
    memset(rp, 0, sizeof *rp);
    size_t n = rf->n_cases, ns = rf->n_backend_settings;
    const bc_runfile_case **sorted = malloc((n + 1) * sizeof *sorted); /* owned here */
    rp->cases = calloc(n + 1, sizeof *rp->cases);
    rp->reports = calloc(n + 1, sizeof *rp->reports);
    rp->memory = calloc(n + 1, sizeof *rp->memory);
    rp->dtypes = calloc(n + 1, sizeof *rp->dtypes);
    rp->precisions = calloc(n + 1, sizeof *rp->precisions);
    rp->cache_policies = calloc(n + 1, sizeof *rp->cache_policies);
    rp->setting_descs = calloc(ns + 1, sizeof *rp->setting_descs);
    rp->setting_values = calloc(ns + 1, sizeof *rp->setting_values);
    rp->field_names = calloc(rf->n_fields + 1, sizeof *rp->field_names);
    rp->plugins = calloc(rf->n_plugins + 1, sizeof *rp->plugins);
    if (!sorted || !rp->cases || !rp->reports || !rp->memory || !rp->dtypes || !rp->precisions ||
        !rp->cache_policies || !rp->setting_descs || !rp->setting_values || !rp->field_names || !rp->plugins) {
        free(sorted);
        bc_replay_free(rp);
        return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", rf->path);
    }
    rp->sampling = (bc_sampling){.struct_size = sizeof rp->sampling, .temperature = rf->temperature,
                                 .top_p = rf->top_p, .top_k = rf->top_k, .seed = (uint64_t)rf->seed};
    for (size_t k = 0; k < n; k++) sorted[k] = &rf->cases[k];
    qsort(sorted, n, sizeof *sorted, by_index);
    uint32_t np = 0, nc = 0;
    for (size_t k = 0; k < n; k++) {
        replay_case(rf, sorted[k], rp, k);
        add_distinct(rp->precisions, &np, sorted[k]->precision);
        add_distinct(rp->cache_policies, &nc, sorted[k]->cache_policy);
    }
    free(sorted);
    rp->n_cases = n;
    /* The settings as recorded. Their defaults are not in the file, so each
     * is described as its own default: a replay never claims a setting was
     * changed. */
    for (size_t i = 0; i < ns; i++) {
        const bc_runfile_pair *pair = &rf->backend_settings[i];
        rp->setting_descs[i] = (bc_setting_desc){.name = pair->name, .type = pair->type, .default_int = pair->i,
                                                 .default_float = pair->f, .default_string = pair->value,
                                                 .help = "as the run recorded it",
                                                 .flags = pair->workload ? BC_SETTING_WORKLOAD : 0u};
        rp->setting_values[i] = (bc_setting_value){.i = pair->i, .f = pair->f, .s = pair->value};
    }
    for (size_t i = 0; i < rf->n_plugins; i++)
        rp->plugins[i] = (bc_plugin_ref){.kind = rf->plugins[i].kind, .name = rf->plugins[i].name,
                                         .version = rf->plugins[i].version, .path = rf->plugins[i].path,
                                         .abi_major = (uint16_t)rf->plugins[i].abi_major,
                                         .abi_minor = (uint16_t)rf->plugins[i].abi_minor};
    rp->settings = (bc_settings){.struct_size = sizeof rp->settings, .count = (uint32_t)ns,
                                 .value_size = sizeof *rp->setting_values, .values = rp->setting_values};
    for (uint32_t f = 0; f < rf->n_fields; f++) rp->field_names[f] = rf->field_names[f];
    replay_backend(rf, &rp->backend);

    bc_run_report *run = &rp->run;
    *run = (bc_run_report){.struct_size = sizeof *run};
    run->schema_version = BC_REPORT_SCHEMA_VERSION;
    run->benchctl_version = rf->benchctl_version;
    run->git_commit = rf->git_commit;
    run->config_path = rf->config_path;
    run->config_sha256 = rf->config_sha256;
    run->start_time_utc = rf->start_time;
    run->cpu_model = rf->cpu_model;
    run->hostname = rf->hostname;
    run->cpu_logical = rf->cpu_logical > 0 ? (uint32_t)rf->cpu_logical : 0;
    run->cpu_cores = rf->cpu_cores > 0 ? (uint32_t)rf->cpu_cores : 0;
    run->cpu_packages = rf->cpu_packages > 0 ? (uint32_t)rf->cpu_packages : 0;
    run->cpu_threads_per_core = rf->cpu_threads_per_core > 0 ? (uint32_t)rf->cpu_threads_per_core : 0;
    run->cpu_topology_note = rf->cpu_topology_note;
    run->quiet_check = rf->quiet_check;
    run->refit = rf->refit;
    run->memcpy_gb_per_s = rf->memcpy_gb_per_s;
    if (rf->scorer_backend) {
        bc_backend_info *sb = &rp->scorer;
        *sb = (bc_backend_info){.struct_size = sizeof *sb};
        sb->model = rf->scorer_model, sb->device = rf->scorer_device, sb->model_family = rf->scorer_family;
        sb->n_parameters = rf->scorer_parameters, sb->vocab_size = rf->scorer_vocab_size;
        sb->n_layers = sb->hidden_size = sb->n_heads = sb->ffn_size = sb->max_positions = sb->cpu_threads = -1;
        run->scorer_name = rf->scorer_backend;
        run->scorer = sb;
        run->scorer_precision = rf->scorer_precision;
    }
    run->backend_name = rf->backend;
    run->backend = &rp->backend;
    run->warmup = rf->warmup;
    run->iterations = rf->iterations;
    run->min_iterations = rf->min_iterations; /* a file without "stopping" ran a fixed count */
    run->max_iterations = rf->max_iterations;
    run->target_rel_ci = rf->target_rel_ci;
    run->max_seconds_per_case = rf->max_seconds_per_case;
    run->n_matrix_cases = rf->has_selection && rf->n_matrix_cases ? rf->n_matrix_cases : (uint32_t)n;
    run->selected_cases = rf->selected_cases;
    run->selected_only = rf->selected_only;
    run->sampling = rf->has_sampling ? &rp->sampling : NULL;
    run->precisions = rp->precisions;
    run->n_precisions = np;
    run->cache_policies = rp->cache_policies;
    run->n_cache_policies = nc;
    run->plugins = rp->plugins;
    run->n_plugins = (uint32_t)rf->n_plugins;
    run->plugin_ref_size = sizeof(bc_plugin_ref);
    run->n_fields = rf->n_fields;
    run->field_names = rp->field_names;
    run->field_descs = rf->field_descs;
    run->field_desc_size = sizeof *rf->field_descs;
    while (run->n_host_fields < rf->n_fields && bc_host_field_desc(rf->field_names[run->n_host_fields]))
        run->n_host_fields++; /* the host's own come first */
    run->n_stats = BC_N_STATS;
    run->stat_names = bc_stat_names;
    run->backend_settings = rp->setting_descs;
    run->n_backend_settings = (uint32_t)ns;
    run->backend_setting_size = sizeof(bc_setting_desc);
    run->backend_values = &rp->settings;
    run->n_cases = (uint32_t)n;
    run->case_report_size = sizeof(bc_case_report);
    if (rf->has_distributed) {
        rp->distributed = (bc_distributed){.struct_size = sizeof rp->distributed,
                                           .comm = rf->dist_comm,
                                           .mode = rf->dist_mode,
                                           .world_size = (uint32_t)rf->n_ranks,
                                           .rank_info_size = sizeof(bc_rank_info),
                                           .ranks = rf->ranks};
        run->distributed = &rp->distributed;
    }
    run->cases = rp->reports;
    return BC_OK;
}

void bc_replay_free(bc_replay *rp) {
    free(rp->cases);
    free(rp->reports);
    free(rp->memory);
    free(rp->dtypes);
    free(rp->precisions);
    free(rp->cache_policies);
    free(rp->setting_descs);
    free(rp->setting_values);
    free(rp->field_names);
    free(rp->plugins);
    memset(rp, 0, sizeof *rp);
}

/* Renders rp through the reporter called name; output overrides its path. */
static bc_status render_one(bc_loader *l, const char *name, const char *output, const bc_replay *rp, bc_error *err) {
    const bc_plugin *p = NULL;
    bc_status st = bc_loader_load(l, name, BC_KIND_REPORTER, NULL, &p, err);
    if (st != BC_OK) return st;
    const bc_plugin_desc *d = p->desc;
    bc_setting_value *values = calloc(d->n_settings + 1, sizeof *values); /* owned here */
    if (!values) return bc_error_set(err, BC_ERR_NOMEM, "out of memory");
    int path_set = 0;
    for (uint32_t i = 0; i < d->n_settings; i++) {
        bc_setting_default(&d->settings[i], &values[i]);
        if (output && strcmp(d->settings[i].name, "path") == 0 && d->settings[i].type == BC_SETTING_STRING) {
            values[i].s = output;
            path_set = 1;
        }
    }
    bc_settings settings = {.struct_size = sizeof settings, .count = d->n_settings, .value_size = sizeof *values,
                            .values = values};
    void *inst = NULL;
    if (output && !path_set)
        st = bc_error_set(err, BC_ERR_SETTING, "reporter '%s' has no path setting for -o", d->name);
    if (st == BC_OK && d->check_settings) st = d->check_settings(&p->host, &settings, err);
    if (st == BC_OK) {
        bc_run_report opening = rp->run;
        opening.n_cases = 0; /* open sees no case yet, as in a live run */
        st = p->reporter.open(&p->host, &settings, &opening, &inst, err);
    }
    if (st == BC_OK) st = p->reporter.close(inst, &rp->run, err);
    if (inst) p->reporter.destroy(inst);
    free(values);
    if (st != BC_OK) {
        char msg[sizeof err->message];
        snprintf(msg, sizeof msg, "%s", err->message);
        snprintf(err->message, sizeof err->message, "reporter '%s': %.450s", d->name, msg);
    }
    return st;
}

bc_status bc_replay_render(const char *run_path, const char *reporters, const char *output, bc_error *err) {
    if (output && strchr(reporters, ','))
        return bc_error_set(err, BC_ERR_INVALID, "-o names one file, but %s names several reporters", reporters);
    bc_runfile rf;
    bc_status st = bc_runfile_read(run_path, &rf, err);
    if (st != BC_OK) return st;
    if (rf.warning[0]) fprintf(stderr, "benchctl: warning: %s\n", rf.warning);
    bc_replay rp;
    bc_loader l = {0};
    st = bc_replay_build(&rf, &rp, err);
    if (st == BC_OK) st = bc_loader_init(&l, NULL, 0, NULL, 0, err);
    char *names = st == BC_OK ? strdup(reporters) : NULL; /* owned here */
    if (st == BC_OK && !names) st = bc_error_set(err, BC_ERR_NOMEM, "out of memory");
    char *save = NULL;
    for (char *name = names ? strtok_r(names, ",", &save) : NULL; st == BC_OK && name;
         name = strtok_r(NULL, ",", &save))
        st = render_one(&l, name, output, &rp, err);
    free(names);
    bc_loader_free(&l);
    bc_replay_free(&rp);
    bc_runfile_free(&rf);
    return st;
}
