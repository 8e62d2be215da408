/* reporter_fixture.c: see reporter_fixture.h. */
#define _POSIX_C_SOURCE 200809L
#include "reporter_fixture.h"

#include <dirent.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "host.h"

const char *const rf_field_names[RF_N_FIELDS] = {
    "prompt_expansion_ms",     "generation_ms",           "post_processing_ms",
    "total_ms",                "tokens_per_second",       "num_generated_tokens",
    "prefill_forward_ms",      "decode_forward_ms",       "generation_overhead_ms",
    "num_decode_forwards",     "cache_acquire_ms",        "cache_release_ms",
    "time_to_first_token_ms",  "decode_ms_per_token_p50", "decode_ms_per_token_p95",
    "prefill_tokens_per_second", "decode_tokens_per_second",
};

/* ------------------------------------------------------------- plugins */

/* Sets value v of the setting described by s from the text after "name=". */
static void parse_override(bc_setting_value *v, const bc_setting_desc *s, const char *text) {
    switch (s->type) {
    case BC_SETTING_INT: v->i = strtoll(text, NULL, 10); break;
    case BC_SETTING_BOOL: v->i = strcmp(text, "true") == 0 || strcmp(text, "1") == 0; break;
    case BC_SETTING_FLOAT: v->f = strtod(text, NULL); break;
    default: v->s = text; break; /* overrides outlive the instance */
    }
}

/* Defaults from the plugin's table (walked with its setting_size), then the
 * overrides; values laid out wide, as a newer host would. */
static void resolve_settings(rf_plugin *p, const char *const *overrides, int n_overrides) {
    memset(p->values, 0xA5, sizeof p->values);
    for (uint32_t i = 0; i < p->desc->n_settings; i++) {
        const bc_setting_desc *s = BC_AT(bc_setting_desc, p->desc->settings, p->desc->setting_size, i);
        bc_setting_value *v = &p->values[i].v;
        *v = (bc_setting_value){.i = s->default_int, .f = s->default_float, .s = s->default_string};
        size_t len = strlen(s->name);
        for (int k = 0; k < n_overrides; k++)
            if (strncmp(overrides[k], s->name, len) == 0 && overrides[k][len] == '=')
                parse_override(v, s, overrides[k] + len + 1);
    }
    p->settings = (bc_settings){.struct_size = sizeof(bc_settings), .count = p->desc->n_settings,
                                .value_size = sizeof(rf_wide_value), .values = &p->values[0].v};
}

int rf_load_file(rf_plugin *p, const char *so_path, const char *name, const char *const *overrides, int n_overrides) {
    memset(p, 0, sizeof *p);
    p->handle = dlopen(so_path, RTLD_NOW | RTLD_LOCAL);
    if (!p->handle) {
        fprintf(stderr, "rf_load: %s\n", dlerror());
        return -1;
    }
    bc_plugin_entry_fn entry;
    *(void **)&entry = dlsym(p->handle, BENCHCTL_PLUGIN_ENTRY);
    if (!entry) {
        fprintf(stderr, "rf_load: %s: no entry symbol\n", so_path);
        return -1;
    }
    p->desc = entry();
    if (!p->desc || p->desc->magic != BENCHCTL_PLUGIN_MAGIC || p->desc->abi_major != BENCHCTL_ABI_MAJOR ||
        p->desc->struct_size < BC_PLUGIN_DESC_MIN_SIZE || p->desc->kind != BC_KIND_REPORTER ||
        strcmp(p->desc->name, name) != 0 || p->desc->n_settings > 16 ||
        p->desc->setting_size < sizeof(bc_setting_desc)) {
        fprintf(stderr, "rf_load: %s: bad descriptor\n", so_path);
        return -1;
    }
    p->ops = p->desc->ops;
    resolve_settings(p, overrides, n_overrides);
    return 0;
}

int rf_load(rf_plugin *p, const char *name, const char *const *overrides, int n_overrides) {
    char path[1024];
    snprintf(path, sizeof path, "%s/benchctl-%s.so", BENCHCTL_TEST_PLUGIN_DIR, name);
    return rf_load_file(p, path, name, overrides, n_overrides);
}

void rf_unload(rf_plugin *p) {
    if (p->handle) dlclose(p->handle);
    p->handle = NULL;
}

/* ---------------------------------------------------------------- host */

/* The host table benchctl itself hands a plugin (core/src/host/host.c):
 * logging as benchctl logs (warnings and errors, to stderr, the plugin
 * named "test"), the monotonic clock, and the atomic output files. */
bc_host rf_host(int stderr_is_tty) {
    bc_host h;
    bc_host_init(&h, "test");
    h.stderr_is_tty = stderr_is_tty;
    return h;
}

/* ---------------------------------------------------------- statistics */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Statistic name of sorted[n] (n >= 1) as docs/reporters.md defines it:
 * n, mean, stddev (population), cv (stddev / |mean|), min, max, p50
 * (interpolated median) and pQ for any other integer Q (nearest rank). */
static double stat_of_sorted(const char *name, const double *v, uint32_t n) {
    double sum = 0, ss = 0;
    for (uint32_t i = 0; i < n; i++) sum += v[i];
    double mean = sum / n;
    for (uint32_t i = 0; i < n; i++) ss += (v[i] - mean) * (v[i] - mean);
    double stddev = sqrt(ss / n);
    if (strcmp(name, "n") == 0) return n;
    if (strcmp(name, "mean") == 0) return mean;
    if (strcmp(name, "stddev") == 0) return stddev;
    if (strcmp(name, "cv") == 0) return mean != 0 ? stddev / fabs(mean) : NAN;
    if (strcmp(name, "min") == 0) return v[0];
    if (strcmp(name, "max") == 0) return v[n - 1];
    if (strcmp(name, "p50") == 0) return (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    unsigned q = (unsigned)atoi(name + 1);
    size_t rank = ((size_t)q * n + 99) / 100;
    return v[rank > 0 ? rank - 1 : 0];
}

void rf_field_stats(double *out, const char *const *names, uint32_t n_stats, const double *values, uint32_t n_rows,
                    uint32_t stride) {
    double v[64];
    uint32_t n = 0;
    for (uint32_t i = 0; i < n_rows && n < 64; i++)
        if (!isnan(values[(size_t)i * stride])) v[n++] = values[(size_t)i * stride];
    qsort(v, n, sizeof v[0], cmp_double);
    for (uint32_t s = 0; s < n_stats; s++)
        out[s] = n == 0 ? (strcmp(names[s], "n") == 0 ? 0.0 : NAN) : stat_of_sorted(names[s], v, n);
}

double rf_stat(const rf_run *r, uint32_t i, int f, const char *stat) {
    int s = bc_run_stat_index(&r->run, stat);
    if (s < 0 || f < 0 || (uint32_t)f >= r->run.n_fields) return NAN;
    return r->stats[i][(size_t)f * r->run.n_stats + (size_t)s];
}

/* ---------------------------------------------------------- the sample */

static const bc_precision_ops bf16_ops = {.struct_size = sizeof(bc_precision_ops), .dtype = "bfloat16",
                                          .element_size = 2, .rel_tolerance = 1e-2};
static const bc_precision_ops fp32_ops = {.struct_size = sizeof(bc_precision_ops), .dtype = "float32",
                                          .element_size = 4, .rel_tolerance = 1e-5};
static const char *const rf_precisions[] = {"bf16", "fp32"};
static const char *const rf_caches[] = {"retain", "release"};
static const char *const rf_all_stats[] = {"n", "mean", "stddev", "cv", "min", "p50", "p95", "p99", "max"};
static const char *const rf_few_stats[] = {"n", "mean", "max"};

/* One measured iteration's values of every field, for a case with rows
 * rows, a prompt width tokens wide and resp tokens per row. */
static void fill_iteration(double *row, uint32_t it, uint32_t rows, uint32_t width, uint32_t resp, int release) {
    row[RF_F_PROMPT_EXPANSION_MS] = 0.1 + 0.2 * (it + 1);
    row[RF_F_GENERATION_MS] = 10.0 / 3.0 + it;
    row[RF_F_POST_PROCESSING_MS] = 0.05 * (it + 1);
    row[RF_F_TOTAL_MS] = row[0] + row[1] + row[2];
    row[RF_F_NUM_GENERATED_TOKENS] = (double)rows * resp;
    row[RF_F_TOKENS_PER_SECOND] = row[RF_F_NUM_GENERATED_TOKENS] / (row[RF_F_GENERATION_MS] / 1000.0);
    row[RF_F_PREFILL_FORWARD_MS] = 1.0 / 7.0 + it;
    row[RF_F_DECODE_FORWARD_MS] = 2.0 + it * 0.25;
    row[RF_F_GENERATION_OVERHEAD_MS] = NAN; /* not measured */
    row[RF_F_NUM_DECODE_FORWARDS] = resp - 1;
    row[RF_F_CACHE_ACQUIRE_MS] = release ? 0.5 + 0.125 * it : NAN; /* only when the hook ran */
    row[RF_F_CACHE_RELEASE_MS] = release ? 0.25 : NAN;
    row[RF_F_TIME_TO_FIRST_TOKEN_MS] = row[RF_F_PROMPT_EXPANSION_MS] + row[RF_F_PREFILL_FORWARD_MS] + 0.01;
    row[RF_F_DECODE_MS_PER_TOKEN_P50] = 0.25 + 0.01 * it;
    row[RF_F_DECODE_MS_PER_TOKEN_P95] = 0.3 + 0.02 * it;
    row[RF_F_PREFILL_TOKENS_PER_SECOND] = (double)rows * width / (row[RF_F_PREFILL_FORWARD_MS] / 1000.0);
    row[RF_F_DECODE_TOKENS_PER_SECOND] = (double)rows * (resp - 1) / (row[RF_F_DECODE_FORWARD_MS] / 1000.0);
}

/* Case i's values (n_fields of each iteration's fields) and statistics. */
static void fill_measurements(rf_run *r, uint32_t i, uint32_t n_iter, uint32_t width) {
    const bc_case *c = &r->cases[i];
    uint32_t nf = r->run.n_fields;
    for (uint32_t it = 0; it < n_iter; it++) {
        double full[RF_N_FIELDS];
        fill_iteration(full, it, (uint32_t)bc_case_effective_batch(c), width, c->response_length, c->release_cache);
        memcpy(r->values[i] + (size_t)it * nf, full, nf * sizeof full[0]);
    }
    for (uint32_t f = 0; f < nf; f++)
        rf_field_stats(r->stats[i] + (size_t)f * r->run.n_stats, r->run.stat_names, r->run.n_stats,
                       r->values[i] + f, n_iter, nf);
}

static void init_cases(rf_run *r, unsigned flags) {
    r->sampling = (bc_sampling){.struct_size = sizeof(bc_sampling), .temperature = 0.7, .top_p = 0.9, .top_k = 50,
                                .seed = 1234};
    r->cases[0] = (bc_case){.struct_size = sizeof(bc_case), .index = 0, .batch_size = 2, .samples_per_prompt = 2,
                            .prompt_length = 16, .response_length = 8, .precision = "bf16",
                            .precision_ops = &bf16_ops, .cache_policy = "retain", .release_cache = 0,
                            .sampling = &r->sampling};
    r->cases[1] = (bc_case){.struct_size = sizeof(bc_case), .index = 1, .batch_size = 8, .samples_per_prompt = 1,
                            .prompt_length = 32, .response_length = 8, .precision = "fp32",
                            .precision_ops = &fp32_ops, .cache_policy = "release", .release_cache = 1,
                            .sampling = &r->sampling};
    r->cases[2] = (bc_case){.struct_size = sizeof(bc_case), .index = 2, .batch_size = 1, .samples_per_prompt = 3,
                            .prompt_length = 0, .response_length = 8, .precision = "bf16",
                            .precision_ops = &bf16_ops, .cache_policy = "release", .release_cache = 1,
                            .sampling = &r->sampling};
    if (flags & RF_SINGLE_PRECISION) {
        for (int i = 1; i < RF_N_CASES; i++) {
            r->cases[i].precision = "bf16";
            r->cases[i].precision_ops = &bf16_ops;
            r->cases[i].cache_policy = "retain";
            r->cases[i].release_cache = 0;
        }
    }
}

static void init_reports(rf_run *r) {
    memset(r->reports, 0xA5, sizeof r->reports); /* what a newer host appends: garbage to this reader */
    r->memory[0] = (bc_memory_stats){.struct_size = sizeof(bc_memory_stats), .weights_bytes = 1048576,
                                     .kv_cache_bytes = 458752, .workspace_bytes = 65536, .host_peak_bytes = 13107200,
                                     .device_peak_bytes = -1, .device_free_bytes = -1, .device_total_bytes = -1,
                                     .resident_bytes = 1572864};
    r->memory[2] = (bc_memory_stats){.struct_size = sizeof(bc_memory_stats), .weights_bytes = 1048576,
                                     .kv_cache_bytes = 0, .workspace_bytes = 0, .host_peak_bytes = 3407872,
                                     .device_peak_bytes = -1, .device_free_bytes = -1, .device_total_bytes = -1,
                                     .resident_bytes = 1048576};
    r->reports[0].r = (bc_case_report){
        .struct_size = sizeof(bc_case_report), .c = &r->cases[0], .status = BC_CASE_OK, .error_code = BC_OK,
        .message = "", .n_iterations = RF_N_ITER, .values = r->values[0], .stats = r->stats[0],
        .returned_response_length = 8, .prompt_width_tokens = 16, .prompt_min_tokens = 16, .prompt_max_tokens = 16,
        .peak_memory_mib = 12.5, .memory = &r->memory[0], .held_between_rollouts_bytes = 1572864,
        .peak_rss_bytes = 52428800, .device_free_before_bytes = -1, .device_free_after_bytes = -1, .wall_ms = 123.25,
        .rebuilt = 1};
    r->reports[1].r = (bc_case_report){
        .struct_size = sizeof(bc_case_report), .c = &r->cases[1], .status = BC_CASE_FAILED,
        .error_code = BC_ERR_NOMEM, .message = RF_MESSAGE, .n_iterations = 0, .values = NULL, .stats = r->stats[1],
        .returned_response_length = -1, .prompt_width_tokens = -1, .prompt_min_tokens = -1, .prompt_max_tokens = -1,
        .peak_memory_mib = NAN, .memory = NULL, .held_between_rollouts_bytes = -1, .peak_rss_bytes = -1,
        .device_free_before_bytes = -1, .device_free_after_bytes = -1, .wall_ms = 4.5, .rebuilt = 1};
    r->reports[2].r = (bc_case_report){
        .struct_size = sizeof(bc_case_report), .c = &r->cases[2], .status = BC_CASE_OK, .error_code = BC_OK,
        .message = "", .n_iterations = RF_N_ITER, .values = r->values[2], .stats = r->stats[2],
        .returned_response_length = 8, .prompt_width_tokens = 37, .prompt_min_tokens = 12, .prompt_max_tokens = 37,
        .peak_memory_mib = 3.25, .memory = &r->memory[2], .held_between_rollouts_bytes = 1048576,
        .peak_rss_bytes = 41943040, .device_free_before_bytes = -1, .device_free_after_bytes = -1, .wall_ms = 98.5,
        .rebuilt = 0};
    /* ABI 2.1: why each case stopped, its interval and the machine's load */
    static const bc_stop_reason reasons[RF_N_CASES] = {BC_STOP_STABLE, BC_STOP_FAILED, BC_STOP_MAX_ITERATIONS};
    static const double rel_ci[RF_N_CASES] = {0.0125, NAN, 0.25}, load0[RF_N_CASES] = {0.5, 1.25, NAN},
                        load1[RF_N_CASES] = {0.75, 1.5, NAN}, steal[RF_N_CASES] = {0.0, NAN, 0.05};
    for (int i = 0; i < RF_N_CASES; i++) {
        bc_case_report *cr = &r->reports[i].r;
        cr->stop_reason = reasons[i];
        cr->total_ms_rel_ci = rel_ci[i];
        cr->load_avg_start = load0[i];
        cr->load_avg_end = load1[i];
        cr->cpu_steal_share = steal[i];
    }
}

static void init_backend(rf_run *r) {
    r->backend = (bc_backend_info){.struct_size = sizeof(bc_backend_info), .model = "facebook/opt-125m (synthetic)",
                                   .device = "cpu", .device_name = NULL, .driver = NULL, .model_family = "opt",
                                   .n_parameters = 125239296, .n_layers = 12, .hidden_size = 768, .n_heads = 12,
                                   .ffn_size = 3072, .vocab_size = 50272, .max_positions = 2048,
                                   .cpu_kernels = "avx2", .cpu_threads = 4};
    memset(r->backend_settings, 0xA5, sizeof r->backend_settings);
    memset(r->backend_value_rows, 0xA5, sizeof r->backend_value_rows);
    r->backend_settings[0].d = (bc_setting_desc){.name = "threads", .type = BC_SETTING_INT, .default_int = 0,
                                                 .help = "worker threads"};
    r->backend_settings[1].d = (bc_setting_desc){.name = "shared_prefill", .type = BC_SETTING_BOOL,
                                                 .default_int = 0, .help = "one prefill per prompt"};
    r->backend_value_rows[0].v = (bc_setting_value){.i = 2};
    r->backend_value_rows[1].v = (bc_setting_value){.i = 1};
    r->backend_values = (bc_settings){.struct_size = sizeof(bc_settings), .count = 2,
                                      .value_size = sizeof(rf_wide_value), .values = &r->backend_value_rows[0].v};
}

static void init_plugins(rf_run *r) {
    memset(r->plugins, 0xA5, sizeof r->plugins);
    r->plugins[0].p = (bc_plugin_ref){"backend", "fixture", "0.0.1", "/nowhere/benchctl-fixture.so", 2, 0};
    r->plugins[1].p = (bc_plugin_ref){"reporter", "json", "0.1.0", "/nowhere/benchctl-json.so", 2, 1};
}

void rf_run_init(rf_run *r, unsigned flags) {
    memset(r, 0, sizeof *r);
    init_cases(r, flags);
    init_reports(r);
    init_backend(r);
    init_plugins(r);

    bc_run_report *run = &r->run;
    run->struct_size = sizeof *run;
    run->schema_version = 2;
    run->benchctl_version = "0.1.0-test";
    run->git_commit = "0123456789ab";
    run->config_path = "configs/bench.cfg";
    run->config_sha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    run->start_time_utc = "2026-11-29T21:00:00Z";
    run->cpu_model = "Test CPU @ 1.00GHz";
    run->hostname = "testhost";
    run->backend_name = "fixture";
    run->backend = (flags & RF_NO_BACKEND) ? NULL : &r->backend;
    run->sampling = (flags & RF_NO_BACKEND) ? NULL : &r->sampling;
    run->warmup = 1;
    run->iterations = RF_N_ITER;
    run->precisions = rf_precisions;
    run->n_precisions = (flags & RF_SINGLE_PRECISION) ? 1 : 2;
    run->cache_policies = rf_caches;
    run->n_cache_policies = (flags & RF_SINGLE_PRECISION) ? 1 : 2;
    run->plugins = &r->plugins[0].p;
    run->n_plugins = 2;
    run->plugin_ref_size = sizeof(rf_wide_ref);
    run->n_fields = (flags & RF_OLD_FIELDS) ? RF_N_FIELDS_OLD : RF_N_FIELDS;
    run->field_names = rf_field_names;
    const char *const *stats = (flags & RF_FEW_STATS) ? rf_few_stats : rf_all_stats;
    run->n_stats = (flags & RF_FEW_STATS) ? 3 : 9;
    for (uint32_t s = 0; s < run->n_stats; s++) r->stat_names[s] = stats[s];
    if (flags & RF_EXTRA_STAT) r->stat_names[run->n_stats++] = "p42";
    run->stat_names = r->stat_names;
    run->backend_settings = &r->backend_settings[0].d;
    run->n_backend_settings = 2;
    run->backend_setting_size = sizeof(rf_wide_desc);
    run->backend_values = &r->backend_values;
    run->n_cases = RF_N_CASES;
    run->case_report_size = sizeof(rf_wide_report);
    run->cases = &r->reports[0].r;
    run->min_iterations = run->max_iterations = RF_N_ITER; /* ABI 2.1: a fixed count, the whole matrix */
    run->target_rel_ci = run->max_seconds_per_case = NAN;
    run->n_matrix_cases = RF_N_CASES;

    fill_measurements(r, 0, RF_N_ITER, 16);
    fill_measurements(r, 1, 0, 32);
    fill_measurements(r, 2, RF_N_ITER, 37);
    if (flags & RF_HOST_2_0) {
        memset(r->narrow, 0x5A, sizeof r->narrow);
        for (int i = 0; i < RF_N_CASES; i++) {
            memcpy(r->narrow[i], &r->reports[i].r, RF_REPORT_SIZE_2_0);
            memcpy(r->narrow[i], &(uint32_t){RF_REPORT_SIZE_2_0}, sizeof(uint32_t)); /* struct_size */
        }
        run->cases = (const bc_case_report *)(const void *)r->narrow[0];
        run->case_report_size = RF_REPORT_SIZE_2_0;
        run->struct_size = offsetof(bc_run_report, min_iterations);
    }
}

bc_case_report *rf_report(rf_run *r, uint32_t i) {
    return (bc_case_report *)(void *)((unsigned char *)(void *)r->run.cases + (size_t)i * r->run.case_report_size);
}

bc_status rf_drive(rf_plugin *p, const bc_host *host, rf_run *r, bc_error *err) {
    if (p->desc->check_settings) {
        bc_status st = p->desc->check_settings(host, &p->settings, err);
        if (st != BC_OK) return st;
    }
    bc_run_report empty = r->run;
    empty.n_cases = 0;
    empty.cases = NULL;
    void *inst = NULL;
    bc_status st = p->ops->open(host, &p->settings, &empty, &inst, err);
    if (st != BC_OK) return st;

    /* Execution order: largest effective batch first (case 1: 8, case 0: 4,
     * case 2: 3); run->cases in case_finished holds the finished cases,
     * requested order, as wide as the host's elements. */
    const uint32_t exec[RF_N_CASES] = {1, 0, 2};
    rf_wide_report done[RF_N_CASES];
    int finished[RF_N_CASES] = {0};
    for (uint32_t k = 0; k < RF_N_CASES && st == BC_OK; k++) {
        uint32_t i = exec[k];
        const bc_case_report *cr = rf_report(r, i);
        /* a case taken from a resumed run's journal only finishes, as the host does it */
        int resumed = BC_ELEM_HAS(r->run.case_report_size, bc_case_report, resumed) && cr->resumed;
        if (p->ops->case_started && !resumed)
            p->ops->case_started(inst, &r->cases[i], k, RF_N_CASES, k == 0 ? NAN : 83.0);
        int hook = BC_HAS(p->ops, bc_reporter_ops, iteration_finished) && p->ops->iteration_finished && !resumed;
        for (uint32_t it = 0; hook && cr->n_iterations && it <= cr->n_iterations && st == BC_OK; it++) {
            /* one warmup iteration (it 0, the first iteration's values), then the measured ones */
            int warmup = it == 0;
            bc_iteration_event ev = {.struct_size = sizeof ev, .c = &r->cases[i], .position = k,
                                     .n_cases = RF_N_CASES, .warmup = warmup, .iteration = warmup ? 0 : it - 1,
                                     .n_min = warmup ? 1 : RF_N_ITER, .n_max = warmup ? 1 : RF_N_ITER,
                                     .values = cr->values + (size_t)(warmup ? 0 : it - 1) * r->run.n_fields,
                                     .case_elapsed_ms = 10.0 * (it + 1), .rel_ci = NAN, .eta_s = 83.0 - it};
            bc_run_report partial = r->run;
            partial.n_cases = 0;
            partial.cases = &done[0].r;
            st = p->ops->iteration_finished(inst, &partial, &ev, err);
        }
        finished[i] = 1;
        uint32_t n = 0;
        size_t size = r->run.case_report_size; /* the host's stride: wide, or a 2.0 host's */
        for (uint32_t j = 0; j < RF_N_CASES; j++)
            if (finished[j]) memcpy((unsigned char *)done + size * n++, rf_report(r, j), size);
        bc_run_report partial = r->run;
        partial.n_cases = n;
        partial.cases = &done[0].r;
        if (p->ops->case_finished) st = p->ops->case_finished(inst, &partial, rf_report(r, i), err);
    }
    if (st == BC_OK) st = p->ops->close(inst, &r->run, err);
    p->ops->destroy(inst);
    return st;
}

int rf_make_dir(char *dir, const char *prefix) {
    snprintf(dir, 512, "%s/%s_XXXXXX", BENCHCTL_BINARY_DIR, prefix);
    return mkdtemp(dir) ? 0 : -1;
}

void rf_remove_tree(const char *dir) {
    if (getenv("BENCHCTL_TEST_KEEP")) return; /* keep outputs for a look */
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode))
            rf_remove_tree(p);
        else
            unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

int rf_count_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
    closedir(d);
    return n;
}

char *rf_slurp(const char *path) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    size_t cap = 4096, n = 0, got;
    char *buf = malloc(cap);
    while (buf && (got = fread(buf + n, 1, cap - n - 1, fp)) > 0) {
        n += got;
        if (n + 1 == cap) {
            char *bigger = realloc(buf, cap * 2);
            if (!bigger) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = bigger;
            cap *= 2;
        }
    }
    fclose(fp);
    if (buf) buf[n] = '\0';
    return buf;
}

char *rf_slurp_gz(const char *path) {
    gzFile gz = gzopen(path, "rb");
    if (!gz) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    int got = 0;
    while (buf && (got = gzread(gz, buf + n, (unsigned)(cap - n - 1))) > 0) {
        n += (size_t)got;
        if (n + 1 == cap) {
            char *bigger = realloc(buf, cap * 2);
            if (!bigger) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = bigger;
            cap *= 2;
        }
    }
    int bad = got < 0;
    gzclose(gz);
    if (bad) {
        free(buf);
        return NULL;
    }
    if (buf) buf[n] = '\0';
    return buf;
}
