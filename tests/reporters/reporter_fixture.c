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

#include "output.h"

const char *const rf_field_names[BC_FIELD_COUNT_V1_0] = {
    "prompt_expansion_ms", "generation_ms",          "post_processing_ms", "total_ms",
    "tokens_per_second",   "num_generated_tokens",   "prefill_forward_ms", "decode_forward_ms",
    "generation_overhead_ms", "num_decode_forwards", "cache_acquire_ms",   "cache_release_ms",
};

int rf_load(rf_plugin *p, const char *name, const char *const *overrides, int n_overrides) {
    memset(p, 0, sizeof *p);
    char path[1024];
    snprintf(path, sizeof path, "%s/benchctl-%s.so", BENCHCTL_TEST_PLUGIN_DIR, name);
    p->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!p->handle) {
        fprintf(stderr, "rf_load: %s\n", dlerror());
        return -1;
    }
    bc_plugin_entry_fn entry;
    *(void **)&entry = dlsym(p->handle, BENCHCTL_PLUGIN_ENTRY);
    if (!entry) {
        fprintf(stderr, "rf_load: %s: no entry symbol\n", path);
        return -1;
    }
    p->desc = entry();
    if (!p->desc || p->desc->magic != BENCHCTL_PLUGIN_MAGIC || p->desc->abi_major != BENCHCTL_ABI_MAJOR ||
        p->desc->kind != BC_KIND_REPORTER || strcmp(p->desc->name, name) != 0 || p->desc->n_settings > 16) {
        fprintf(stderr, "rf_load: %s: bad descriptor\n", path);
        return -1;
    }
    p->ops = p->desc->ops;
    for (uint32_t i = 0; i < p->desc->n_settings; i++) {
        const bc_setting_desc *s = &p->desc->settings[i];
        p->settings[i].i = s->default_int;
        p->settings[i].f = s->default_float;
        p->settings[i].s = s->default_string;
        for (int k = 0; k < n_overrides; k++) {
            size_t len = strlen(s->name);
            if (strncmp(overrides[k], s->name, len) != 0 || overrides[k][len] != '=') continue;
            const char *v = overrides[k] + len + 1;
            switch (s->type) {
            case BC_SETTING_INT: p->settings[i].i = strtoll(v, NULL, 10); break;
            case BC_SETTING_BOOL: p->settings[i].i = strcmp(v, "true") == 0 || strcmp(v, "1") == 0; break;
            case BC_SETTING_FLOAT: p->settings[i].f = strtod(v, NULL); break;
            default: p->settings[i].s = v; break; /* overrides outlive the instance */
            }
        }
    }
    return 0;
}

void rf_unload(rf_plugin *p) {
    if (p->handle) dlclose(p->handle);
    p->handle = NULL;
}

static void host_log(const bc_host *host, bc_log_level level, const char *fmt, ...) {
    (void)host;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "[test host] level %d: ", (int)level);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static uint64_t host_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static bc_output *host_output_open(const bc_host *host, const char *path, bc_error *err) {
    (void)host;
    return bc_output_open(path, err);
}

static bc_status host_output_printf(bc_output *out, bc_error *err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    bc_status st = bc_output_vprintf(out, err, fmt, ap);
    va_end(ap);
    return st;
}

bc_host rf_host(int stderr_is_tty) {
    bc_host h;
    memset(&h, 0, sizeof h);
    h.struct_size = sizeof h;
    h.abi_major = BENCHCTL_ABI_MAJOR;
    h.abi_minor = BENCHCTL_ABI_MINOR;
    h.benchctl_version = "0.1.0-test";
    h.log = host_log;
    h.now_ns = host_now_ns;
    h.output_open = host_output_open;
    h.output_write = bc_output_write;
    h.output_printf = host_output_printf;
    h.output_commit = bc_output_commit;
    h.output_abort = bc_output_abort;
    h.stderr_is_tty = stderr_is_tty;
    return h;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The statistics as plugin.h defines them, over the measured (non-NaN)
 * values of one field. */
static bc_stats column_stats(const double *values, uint32_t n_rows, uint32_t stride) {
    double v[64];
    uint32_t n = 0;
    for (uint32_t i = 0; i < n_rows && n < 64; i++)
        if (!isnan(values[(size_t)i * stride])) v[n++] = values[(size_t)i * stride];
    bc_stats s = {.n = n, .mean = NAN, .p50 = NAN, .p95 = NAN, .min = NAN, .max = NAN, .stddev = NAN};
    if (n == 0) return s;
    qsort(v, n, sizeof v[0], cmp_double);
    double sum = 0;
    for (uint32_t i = 0; i < n; i++) sum += v[i];
    s.mean = sum / n;
    s.p50 = (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    long rank = (long)ceil(0.95 * n) - 1;
    s.p95 = v[rank < 0 ? 0 : rank];
    s.min = v[0];
    s.max = v[n - 1];
    double ss = 0;
    for (uint32_t i = 0; i < n; i++) ss += (v[i] - s.mean) * (v[i] - s.mean);
    s.stddev = sqrt(ss / n);
    return s;
}

static const bc_precision_ops bf16_ops = {.struct_size = sizeof(bc_precision_ops), .dtype = "bfloat16",
                                          .element_size = 2, .rel_tolerance = 1e-2};
static const bc_precision_ops fp32_ops = {.struct_size = sizeof(bc_precision_ops), .dtype = "float32",
                                          .element_size = 4, .rel_tolerance = 1e-5};
static const char *const rf_precisions[] = {"bf16", "fp32"};
static const char *const rf_caches[] = {"retain", "release"};
static const bc_plugin_ref rf_plugins[] = {
    {"backend", "fixture", "0.0.1", "/nowhere/benchctl-fixture.so"},
    {"reporter", "json", "0.1.0", "/nowhere/benchctl-json.so"},
};

void rf_run_init(rf_run *r, int single_precision) {
    memset(r, 0, sizeof *r);
    bc_sampling sampling = {.temperature = 0.7, .top_p = 0.9, .top_k = 50, .seed = 1234};

    bc_case *c0 = &r->cases[0], *c1 = &r->cases[1];
    *c0 = (bc_case){.struct_size = sizeof(bc_case), .index = 0, .batch_size = 2, .samples_per_prompt = 2,
                    .prompt_length = 16, .response_length = 8, .precision = "bf16", .precision_ops = &bf16_ops,
                    .cache_policy = "retain", .release_cache = 0, .sampling = sampling};
    *c1 = (bc_case){.struct_size = sizeof(bc_case), .index = 1, .batch_size = 8, .samples_per_prompt = 1,
                    .prompt_length = 32, .response_length = 8, .precision = "fp32", .precision_ops = &fp32_ops,
                    .cache_policy = "release", .release_cache = 1, .sampling = sampling};
    if (single_precision) {
        c1->precision = "bf16";
        c1->precision_ops = &bf16_ops;
        c1->cache_policy = "retain";
        c1->release_cache = 0;
    }

    /* Case 0: 3 iterations with values that need all 17 digits. */
    const uint32_t F = BC_FIELD_COUNT_V1_0;
    for (uint32_t it = 0; it < RF_N_ITER; it++) {
        double *row = r->values0 + (size_t)it * F;
        row[BC_FIELD_PROMPT_EXPANSION_MS] = 0.1 + 0.2 * (it + 1);
        row[BC_FIELD_GENERATION_MS] = 10.0 / 3.0 + it;
        row[BC_FIELD_POST_PROCESSING_MS] = 0.05 * (it + 1);
        row[BC_FIELD_TOTAL_MS] = row[0] + row[1] + row[2];
        row[BC_FIELD_NUM_GENERATED_TOKENS] = 32;
        row[BC_FIELD_TOKENS_PER_SECOND] = 32 / (row[BC_FIELD_TOTAL_MS] / 1000.0);
        row[BC_FIELD_PREFILL_FORWARD_MS] = 1.0 / 7.0 + it;
        row[BC_FIELD_DECODE_FORWARD_MS] = 2.0 + it * 0.25;
        row[BC_FIELD_GENERATION_OVERHEAD_MS] = NAN; /* not measured */
        row[BC_FIELD_NUM_DECODE_FORWARDS] = 7;
        row[BC_FIELD_CACHE_ACQUIRE_MS] = 0;
        row[BC_FIELD_CACHE_RELEASE_MS] = 0;
    }
    for (uint32_t f = 0; f < F; f++) {
        r->stats[0][f] = column_stats(r->values0 + f, RF_N_ITER, F);
        r->stats[1][f] = column_stats(NULL, 0, F);
    }

    bc_memory_stats mem0 = {.struct_size = sizeof(bc_memory_stats), .weights_bytes = 1000000,
                            .kv_cache_bytes = 65536, .workspace_bytes = 4096, .host_peak_bytes = 13107200,
                            .device_peak_bytes = -1, .device_free_bytes = -1, .device_total_bytes = -1};
    bc_memory_stats mem1 = {.struct_size = sizeof(bc_memory_stats), .weights_bytes = -1, .kv_cache_bytes = -1,
                            .workspace_bytes = -1, .host_peak_bytes = -1, .device_peak_bytes = -1,
                            .device_free_bytes = -1, .device_total_bytes = -1};
    r->reports[0] = (bc_case_report){.struct_size = sizeof(bc_case_report), .c = c0, .status = BC_CASE_OK,
                                     .message = "", .n_iterations = RF_N_ITER, .values = r->values0,
                                     .stats = r->stats[0], .returned_response_length = 8, .peak_memory_mb = 12.5,
                                     .memory = mem0, .peak_rss_bytes = 52428800, .device_free_before_bytes = -1,
                                     .device_free_after_bytes = -1, .wall_ms = 123.25};
    r->reports[1] = (bc_case_report){.struct_size = sizeof(bc_case_report), .c = c1, .status = BC_CASE_FAILED,
                                     .message = RF_MESSAGE, .n_iterations = 0, .values = NULL,
                                     .stats = r->stats[1], .returned_response_length = -1, .peak_memory_mb = NAN,
                                     .memory = mem1, .peak_rss_bytes = -1, .device_free_before_bytes = -1,
                                     .device_free_after_bytes = -1, .wall_ms = 4.5};

    bc_run_report *run = &r->run;
    run->struct_size = sizeof *run;
    run->schema_version = 1;
    run->benchctl_version = "0.1.0-test";
    run->git_commit = "0123456789ab";
    run->config_path = "configs/bench.cfg";
    run->config_sha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    run->start_time_utc = "2026-11-29T21:00:00Z";
    run->cpu_model = "Test CPU @ 1.00GHz";
    run->hostname = "testhost";
    run->backend = (bc_backend_info){.struct_size = sizeof(bc_backend_info), .model = "facebook/opt-125m (synthetic)",
                                     .device = "cpu", .device_name = NULL, .driver = NULL};
    run->backend_name = "fixture";
    run->warmup = 1;
    run->iterations = RF_N_ITER;
    run->sampling = sampling;
    run->precisions = rf_precisions;
    run->n_precisions = single_precision ? 1 : 2;
    run->cache_policies = rf_caches;
    run->n_cache_policies = single_precision ? 1 : 2;
    run->plugins = rf_plugins;
    run->n_plugins = 2;
    run->n_fields = F;
    run->field_names = rf_field_names;
    run->n_cases = RF_N_CASES;
    run->cases = r->reports;
}

bc_status rf_drive(rf_plugin *p, const bc_host *host, rf_run *r, bc_error *err) {
    bc_run_report empty = r->run;
    empty.n_cases = 0;
    empty.cases = NULL;
    void *inst = NULL;
    bc_status st = p->ops->open(host, p->settings, &empty, &inst, err);
    if (st != BC_OK) return st;

    /* Execution order: largest effective batch first (case 1: 8, case 0: 4);
     * run->cases in case_finished holds the finished cases, requested order. */
    const uint32_t exec[RF_N_CASES] = {1, 0};
    bc_case_report done[RF_N_CASES];
    int finished[RF_N_CASES] = {0};
    for (uint32_t k = 0; k < RF_N_CASES && st == BC_OK; k++) {
        uint32_t i = exec[k];
        if (p->ops->case_started) p->ops->case_started(inst, &r->cases[i], k, RF_N_CASES, k == 0 ? NAN : 83.0);
        finished[i] = 1;
        uint32_t n = 0;
        for (uint32_t j = 0; j < RF_N_CASES; j++)
            if (finished[j]) done[n++] = r->reports[j];
        bc_run_report partial = r->run;
        partial.n_cases = n;
        partial.cases = done;
        if (p->ops->case_finished) st = p->ops->case_finished(inst, &partial, &r->reports[i], err);
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
