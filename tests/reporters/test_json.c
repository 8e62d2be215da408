/* test_json.c: the json reporter plugin (reporters/json), loaded with dlopen
 * and driven through its hooks as the host drives them; the document is
 * parsed back with jansson and compared with the hand-built run report
 * (reporter_fixture.h), whose arrays are laid out wider than this header's
 * structs, as a newer host would. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "bc_test_assert.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reporter_fixture.h"

typedef struct fixture {
    char dir[512];
    char path[600];
    rf_run run;
    bc_host host;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    if (!f || rf_make_dir(f->dir, "test_json") != 0) {
        free(f);
        return -1;
    }
    rf_run_init(&f->run, 0);
    f->host = rf_host(0);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    rf_remove_tree(f->dir);
    free(f);
    return 0;
}

/* Runs the json reporter writing to dir/name with extra settings; returns the
 * parsed document (caller decrefs). */
static json_t *run_json(fixture *f, const char *name, const char *extra) {
    snprintf(f->path, sizeof f->path, "%s/%s", f->dir, name);
    char path_setting[700];
    snprintf(path_setting, sizeof path_setting, "path=%s", f->path);
    const char *overrides[2] = {path_setting, extra};
    rf_plugin p;
    assert_int_equal(rf_load(&p, "json", overrides, extra ? 2 : 1), 0);
    bc_error err = {0};
    bc_status st = rf_drive(&p, &f->host, &f->run, &err);
    if (st != BC_OK) fprintf(stderr, "json reporter: %s\n", err.message);
    assert_int_equal(st, BC_OK);
    rf_unload(&p);
    json_error_t jerr;
    json_t *doc = json_load_file(f->path, 0, &jerr);
    if (!doc) fprintf(stderr, "%s:%d: %s\n", f->path, jerr.line, jerr.text);
    assert_non_null(doc);
    return doc;
}

static json_t *get(json_t *obj, const char *key) {
    json_t *v = json_object_get(obj, key);
    if (!v) fprintf(stderr, "missing key \"%s\"\n", key);
    assert_non_null(v);
    return v;
}

/* Exactly expect (numbers must round-trip); fails on NaN. */
static void assert_number(json_t *v, double expect) {
    assert_true(json_is_number(v));
    assert_double_close(json_number_value(v), expect, 0.0);
}

/* NaN in the report must be null in JSON; anything else the exact value. */
static void assert_value(json_t *v, double expect) {
    if (isnan(expect))
        assert_true(json_is_null(v));
    else
        assert_number(v, expect);
}

static void assert_str(json_t *v, const char *expect) {
    assert_true(json_is_string(v));
    assert_string_equal(json_string_value(v), expect);
}

static void assert_null_key(json_t *obj, const char *key) { assert_true(json_is_null(get(obj, key))); }

static int starts_with(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

static int ends_with(const char *s, const char *suffix) {
    size_t ls = strlen(s), lx = strlen(suffix);
    return ls >= lx && strcmp(s + ls - lx, suffix) == 0;
}

static void test_top_level(void **state) {
    fixture *f = *state;
    json_t *doc = run_json(f, "out.json", NULL);
    assert_number(get(doc, "schema_version"), 2);
    assert_str(get(doc, "model"), "facebook/opt-125m (synthetic)");
    assert_str(get(doc, "device"), "cpu");
    assert_number(get(doc, "warmup"), 1);
    assert_number(get(doc, "iterations"), RF_N_ITER);
    assert_number(get(doc, "temperature"), 0.7);
    assert_number(get(doc, "top_p"), 0.9);
    /* Two dtypes and two cache policies: the seed keys are null and the
     * lists say what the run had. */
    assert_null_key(doc, "dtype");
    json_t *dtypes = get(doc, "dtypes");
    assert_int_equal(json_array_size(dtypes), 2);
    assert_str(json_array_get(dtypes, 0), "bfloat16");
    assert_str(json_array_get(dtypes, 1), "float32");
    assert_null_key(doc, "release_inference_cache");
    /* Extended metadata. */
    assert_str(get(doc, "benchctl_version"), "0.1.0-test");
    assert_str(get(doc, "git_commit"), "0123456789ab");
    assert_str(get(doc, "backend"), "fixture");
    assert_str(get(doc, "cpu_model"), "Test CPU @ 1.00GHz");
    assert_str(get(doc, "hostname"), "testhost");
    assert_null_key(doc, "gpu"); /* a CPU run: no accelerator name */
    assert_null_key(doc, "driver");
    assert_str(get(doc, "config_path"), "configs/bench.cfg");
    assert_str(get(doc, "config_sha256"), f->run.run.config_sha256);
    assert_str(get(doc, "start_time"), "2026-11-29T21:00:00Z");
    json_t *sampling = get(doc, "sampling");
    assert_number(get(sampling, "temperature"), 0.7);
    assert_number(get(sampling, "top_p"), 0.9);
    assert_number(get(sampling, "top_k"), 50);
    assert_number(get(sampling, "seed"), 1234);
    /* The backend's settings, walked with the host's element sizes. */
    json_t *bs = get(doc, "backend_settings");
    assert_int_equal(json_object_size(bs), 2);
    assert_number(get(bs, "threads"), 2);
    assert_true(json_is_true(get(bs, "shared_prefill")));
    /* Plugins, walked with the host's element size, with their ABI. */
    json_t *plugins = get(doc, "plugins");
    assert_int_equal(json_array_size(plugins), 2);
    json_t *p0 = json_array_get(plugins, 0), *p1 = json_array_get(plugins, 1);
    assert_str(get(p0, "kind"), "backend");
    assert_str(get(p0, "name"), "fixture");
    assert_str(get(p0, "version"), "0.0.1");
    assert_str(get(p0, "path"), "/nowhere/benchctl-fixture.so");
    assert_number(get(p0, "abi_major"), 2);
    assert_number(get(p0, "abi_minor"), 0);
    assert_str(get(p1, "name"), "json");
    assert_number(get(p1, "abi_minor"), 1);
    /* The host's tables of fields and statistics, in order. */
    json_t *fields = get(doc, "fields");
    assert_int_equal(json_array_size(fields), RF_N_FIELDS);
    for (size_t i = 0; i < RF_N_FIELDS; i++) assert_str(json_array_get(fields, i), rf_field_names[i]);
    json_t *stats = get(doc, "stats");
    assert_int_equal(json_array_size(stats), f->run.run.n_stats);
    for (size_t i = 0; i < f->run.run.n_stats; i++) assert_str(json_array_get(stats, i), f->run.run.stat_names[i]);
    /* Cases in requested order, though case 1 ran first. */
    json_t *cases = get(doc, "cases");
    assert_int_equal(json_array_size(cases), RF_N_CASES);
    for (size_t i = 0; i < RF_N_CASES; i++) {
        json_t *c = json_array_get(cases, i);
        assert_number(get(c, "index"), (double)i);
        assert_number(get(c, "batch_size"), f->run.cases[i].batch_size);
    }
    json_decref(doc);
}

/* What ran: the machine's CPU and the model's shape, each in its own keys. */
static void test_environment_and_model_shape(void **state) {
    fixture *f = *state;
    f->run.run.cpu_logical = 8;
    f->run.run.cpu_cores = 4;
    f->run.run.cpu_packages = 1;
    f->run.run.cpu_threads_per_core = 2;
    f->run.run.cpu_topology_note = "virtual machine: the guest's topology need not match the host's";
    json_t *doc = run_json(f, "out.json", NULL);
    json_t *cpu = get(get(doc, "environment"), "cpu");
    assert_str(get(cpu, "model"), "Test CPU @ 1.00GHz");
    assert_str(get(cpu, "kernels"), "avx2");
    assert_number(get(cpu, "threads"), 4);
    assert_number(get(cpu, "logical_cpus"), 8);
    assert_number(get(cpu, "physical_cores"), 4);
    assert_number(get(cpu, "packages"), 1);
    assert_number(get(cpu, "threads_per_core"), 2);
    assert_str(get(cpu, "topology_note"), "virtual machine: the guest's topology need not match the host's");
    json_decref(doc);
    /* a host from before the topology fields (struct_size short of them): null */
    f->run.run.struct_size = (uint32_t)offsetof(bc_run_report, cpu_logical);
    doc = run_json(f, "old.json", NULL);
    cpu = get(get(doc, "environment"), "cpu");
    assert_str(get(cpu, "model"), "Test CPU @ 1.00GHz");
    assert_null_key(cpu, "physical_cores");
    assert_null_key(cpu, "threads_per_core");
    assert_null_key(cpu, "topology_note");
    json_t *shape = get(doc, "model_shape");
    assert_str(get(shape, "family"), "opt");
    assert_number(get(shape, "parameters"), 125239296);
    assert_number(get(shape, "layers"), 12);
    assert_number(get(shape, "hidden_size"), 768);
    assert_number(get(shape, "heads"), 12);
    assert_number(get(shape, "ffn_size"), 3072);
    assert_number(get(shape, "vocab_size"), 50272);
    assert_number(get(shape, "max_positions"), 2048);
    json_decref(doc);
}

/* gpu is the accelerator's name: null on a CPU (NULL or ""), the name on a
 * device, never "cpu" or "". */
static void test_gpu_field(void **state) {
    fixture *f = *state;
    f->run.backend.device_name = "";
    json_t *doc = run_json(f, "empty.json", NULL);
    assert_null_key(doc, "gpu");
    json_decref(doc);
    f->run.backend.device = "cuda:0";
    f->run.backend.device_name = "NVIDIA H200";
    f->run.backend.driver = "570.86";
    f->run.backend.cpu_kernels = NULL; /* the work is on the accelerator */
    f->run.backend.cpu_threads = -1;
    doc = run_json(f, "gpu.json", NULL);
    assert_str(get(doc, "gpu"), "NVIDIA H200");
    assert_str(get(doc, "driver"), "570.86");
    assert_str(get(doc, "device"), "cuda:0");
    json_t *cpu = get(get(doc, "environment"), "cpu");
    assert_str(get(cpu, "model"), "Test CPU @ 1.00GHz");
    assert_null_key(cpu, "kernels");
    assert_null_key(cpu, "threads");
    json_decref(doc);
}

/* A host that described no backend and gave no sampling: every value that
 * depends on them is null, the document keeps its shape. */
static void test_no_backend(void **state) {
    fixture *f = *state;
    rf_run_init(&f->run, RF_NO_BACKEND);
    json_t *doc = run_json(f, "nobackend.json", NULL);
    assert_null_key(doc, "model");
    assert_null_key(doc, "device");
    assert_null_key(doc, "temperature");
    assert_null_key(doc, "top_p");
    assert_null_key(doc, "gpu");
    assert_null_key(doc, "driver");
    assert_null_key(doc, "sampling");
    json_t *shape = get(doc, "model_shape");
    const char *keys[] = {"family", "parameters", "layers", "hidden_size", "heads", "ffn_size", "vocab_size",
                          "max_positions"};
    assert_int_equal(json_object_size(shape), 8);
    for (size_t i = 0; i < 8; i++) assert_null_key(shape, keys[i]);
    json_t *cpu = get(get(doc, "environment"), "cpu");
    assert_str(get(cpu, "model"), "Test CPU @ 1.00GHz");
    assert_null_key(cpu, "kernels");
    assert_null_key(cpu, "threads");
    assert_null_key(cpu, "physical_cores"); /* 0: unknown */
    assert_null_key(cpu, "topology_note");
    json_decref(doc);
}

/* The seed's summary of case i: rates get {mean, p50}, counts are left out,
 * every other field gets {mean, p50, p95}. */
static void check_summary(fixture *f, json_t *summary, uint32_t i) {
    size_t n_summary = 0;
    for (int fi = 0; fi < RF_N_FIELDS; fi++) {
        const char *name = rf_field_names[fi];
        json_t *e = json_object_get(summary, name);
        if (starts_with(name, "num_")) {
            assert_null(e); /* counts live in extended.stats only */
            continue;
        }
        assert_non_null(e);
        n_summary++;
        assert_value(get(e, "mean"), rf_stat(&f->run, i, fi, "mean"));
        assert_value(get(e, "p50"), rf_stat(&f->run, i, fi, "p50"));
        if (ends_with(name, "tokens_per_second")) {
            assert_int_equal(json_object_size(e), 2);
        } else {
            assert_int_equal(json_object_size(e), 3);
            assert_value(get(e, "p95"), rf_stat(&f->run, i, fi, "p95"));
        }
    }
    assert_int_equal(json_object_size(summary), n_summary);
}

/* Every statistic of the host's table for every field of case i. */
static void check_all_stats(fixture *f, json_t *stats, uint32_t i) {
    const bc_run_report *run = &f->run.run;
    assert_int_equal(json_object_size(stats), run->n_fields);
    for (uint32_t fi = 0; fi < run->n_fields; fi++) {
        json_t *e = get(stats, rf_field_names[fi]);
        assert_int_equal(json_object_size(e), run->n_stats);
        for (uint32_t s = 0; s < run->n_stats; s++)
            assert_value(get(e, run->stat_names[s]), rf_stat(&f->run, i, (int)fi, run->stat_names[s]));
    }
}

static void test_ok_case(void **state) {
    fixture *f = *state;
    json_t *doc = run_json(f, "out.json", NULL);
    json_t *c = json_array_get(get(doc, "cases"), 0);
    const bc_case_report *cr = rf_report(&f->run, 0);
    assert_number(get(c, "batch_size"), 2);
    assert_number(get(c, "samples_per_prompt"), 2);
    assert_number(get(c, "prompt_length"), 16);
    assert_number(get(c, "prompt_width_tokens"), 16);
    assert_number(get(c, "prompt_min_tokens"), 16);
    assert_number(get(c, "prompt_max_tokens"), 16);
    assert_number(get(c, "requested_response_length"), 8);
    assert_number(get(c, "returned_response_length"), 8);
    assert_number(get(c, "peak_memory_mb"), 12.5); /* the seed's key; MiB */
    assert_number(get(c, "held_between_rollouts_mib"), 1.5);
    assert_str(get(c, "precision"), "bf16");
    assert_str(get(c, "dtype"), "bfloat16");
    assert_str(get(c, "cache_policy"), "retain");
    assert_true(json_is_false(get(c, "release_inference_cache")));
    assert_true(json_is_true(get(c, "rebuilt")));
    assert_str(get(c, "status"), "ok");
    assert_null_key(c, "error_code");
    assert_str(get(c, "message"), "");

    check_summary(f, get(c, "summary"), 0);
    /* A field no iteration measured is null, not 0; so are the cache
     * timings of a retain case (no cache hook ran). */
    json_t *summary = get(c, "summary");
    assert_null_key(get(summary, "generation_overhead_ms"), "mean");
    assert_null_key(get(summary, "cache_acquire_ms"), "p95");
    /* The new throughput fields come as fields, with the host's values. */
    assert_number(get(get(summary, "time_to_first_token_ms"), "mean"),
                  rf_stat(&f->run, 0, RF_F_TIME_TO_FIRST_TOKEN_MS, "mean"));
    assert_number(get(get(summary, "decode_tokens_per_second"), "p50"),
                  rf_stat(&f->run, 0, RF_F_DECODE_TOKENS_PER_SECOND, "p50"));

    /* profiles: one record per iteration, the report's values exactly. */
    json_t *profiles = get(c, "profiles");
    assert_int_equal(json_array_size(profiles), RF_N_ITER);
    for (size_t it = 0; it < RF_N_ITER; it++) {
        json_t *rec = json_array_get(profiles, it);
        assert_int_equal(json_object_size(rec), RF_N_FIELDS + 4);
        for (uint32_t fi = 0; fi < RF_N_FIELDS; fi++)
            assert_value(get(rec, rf_field_names[fi]), cr->values[it * RF_N_FIELDS + fi]);
        assert_null_key(rec, "generation_overhead_ms");
        assert_number(get(rec, "batch_size"), 2);
        assert_number(get(rec, "num_samples_per_prompt"), 2);
        assert_number(get(rec, "prompt_length"), 16);
        assert_number(get(rec, "response_length"), 8);
    }

    /* extended: every statistic and the memory detail. */
    json_t *ext = get(c, "extended");
    assert_number(get(ext, "n_iterations"), RF_N_ITER);
    assert_number(get(ext, "wall_ms"), 123.25);
    assert_number(get(ext, "effective_batch"), 4);
    check_all_stats(f, get(ext, "stats"), 0);
    assert_number(get(get(get(ext, "stats"), "generation_overhead_ms"), "n"), 0);
    assert_number(get(get(get(ext, "stats"), "total_ms"), "n"), RF_N_ITER);
    json_t *mem = get(ext, "memory");
    assert_int_equal(json_object_size(mem), 11);
    assert_number(get(mem, "weights_bytes"), 1048576);
    assert_number(get(mem, "kv_cache_bytes"), 458752);
    assert_number(get(mem, "workspace_bytes"), 65536);
    assert_number(get(mem, "host_peak_bytes"), 13107200);
    assert_null_key(mem, "device_peak_bytes");
    assert_null_key(mem, "device_total_bytes");
    assert_number(get(mem, "resident_bytes"), 1572864);
    assert_number(get(mem, "held_between_rollouts_bytes"), 1572864);
    assert_number(get(mem, "peak_rss_bytes"), 52428800);
    assert_null_key(mem, "device_free_before_bytes");
    assert_null_key(mem, "device_free_after_bytes");
    json_decref(doc);
}

/* ABI 2.2: a case's schedule (continuous batching's rows per decode step,
 * each row's first token and completion step) under extended.schedule,
 * left out where the case has none. */
static void test_schedule(void **state) {
    fixture *f = *state;
    const int32_t steps[] = {4, 3, 1}, done[] = {0, 2, 3, 1};
    const double first[] = {1.25, 1.25, 7.5, 9.0};
    const bc_case_schedule sc = {.struct_size = sizeof sc, .n_steps = 3, .step_active_rows = steps, .n_rows = 4,
                                 .row_first_token_ms = first, .row_done_step = done};
    rf_report(&f->run, 0)->schedule = &sc;
    json_t *doc = run_json(f, "out.json", NULL);
    json_t *got = get(get(json_array_get(get(doc, "cases"), 0), "extended"), "schedule");
    json_t *rows = get(got, "step_active_rows"), *ms = get(got, "row_first_token_ms"), *fin = get(got, "row_done_step");
    assert_int_equal(json_array_size(rows), 3);
    assert_int_equal(json_array_size(ms), 4);
    assert_int_equal(json_array_size(fin), 4);
    for (size_t i = 0; i < 3; i++) assert_number(json_array_get(rows, i), steps[i]);
    for (size_t i = 0; i < 4; i++) {
        assert_number(json_array_get(ms, i), first[i]);
        assert_number(json_array_get(fin, i), done[i]);
    }
    assert_null(json_object_get(get(json_array_get(get(doc, "cases"), 2), "extended"), "schedule"));
    rf_report(&f->run, 0)->schedule = NULL;
    json_decref(doc);
}

/* ABI 2.1: why each case stopped, its interval and the machine's load; the
 * run's stopping rule and selection. */
static void test_stopping_and_load(void **state) {
    fixture *f = *state;
    json_t *doc = run_json(f, "out.json", NULL);
    json_t *stopping = get(doc, "stopping");
    assert_number(get(stopping, "min_iterations"), RF_N_ITER);
    assert_number(get(stopping, "max_iterations"), RF_N_ITER);
    assert_null_key(stopping, "target_rel_ci");
    assert_null_key(stopping, "max_seconds_per_case");
    assert_null_key(doc, "selection"); /* the whole matrix ran */
    static const char *const reasons[RF_N_CASES] = {"stable", "failed", "max_iterations"};
    static const double rel_ci[RF_N_CASES] = {0.0125, NAN, 0.25}, load0[RF_N_CASES] = {0.5, 1.25, NAN},
                        load1[RF_N_CASES] = {0.75, 1.5, NAN}, steal[RF_N_CASES] = {0.0, NAN, 0.05};
    for (size_t i = 0; i < RF_N_CASES; i++) {
        json_t *c = json_array_get(get(doc, "cases"), i);
        assert_str(get(c, "stop_reason"), reasons[i]);
        json_t *ext = get(c, "extended");
        assert_value(get(ext, "total_ms_rel_ci"), rel_ci[i]);
        json_t *load = get(ext, "host_load");
        assert_int_equal(json_object_size(load), 3);
        assert_value(get(load, "load_avg_start"), load0[i]);
        assert_value(get(load, "load_avg_end"), load1[i]);
        assert_value(get(load, "cpu_steal_share"), steal[i]);
    }
    json_decref(doc);

    /* an adaptive rule with a time cap, over a selection */
    f->run.run.min_iterations = 6;
    f->run.run.max_iterations = 50;
    f->run.run.target_rel_ci = 0.02;
    f->run.run.max_seconds_per_case = 120;
    f->run.run.n_matrix_cases = 16;
    f->run.run.selected_cases = "0-2";
    f->run.run.selected_only = "precision=bf16,precision=fp32";
    rf_report(&f->run, 1)->stop_reason = BC_STOP_NONE; /* never reached its iterations */
    doc = run_json(f, "adaptive.json", NULL);
    stopping = get(doc, "stopping");
    assert_number(get(stopping, "min_iterations"), 6);
    assert_number(get(stopping, "max_iterations"), 50);
    assert_number(get(stopping, "target_rel_ci"), 0.02);
    assert_number(get(stopping, "max_seconds_per_case"), 120);
    json_t *sel = get(doc, "selection");
    assert_str(get(sel, "cases"), "0-2");
    assert_str(get(sel, "only"), "precision=bf16,precision=fp32");
    assert_number(get(sel, "matrix_cases"), 16);
    assert_null_key(json_array_get(get(doc, "cases"), 1), "stop_reason");
    json_decref(doc);
}

/* A 2.0 host: its case and run reports end before the 2.1 fields, which
 * come out null (never read past the host's element). */
static void test_host_2_0(void **state) {
    fixture *f = *state;
    rf_run_init(&f->run, RF_HOST_2_0);
    json_t *doc = run_json(f, "host20.json", NULL);
    assert_null_key(doc, "stopping");
    assert_null_key(doc, "selection");
    for (size_t i = 0; i < RF_N_CASES; i++) {
        json_t *c = json_array_get(get(doc, "cases"), i);
        assert_null_key(c, "stop_reason");
        json_t *ext = get(c, "extended");
        assert_null_key(ext, "total_ms_rel_ci");
        const char *key;
        json_t *v;
        json_object_foreach(get(ext, "host_load"), key, v) assert_true(json_is_null(v));
        assert_number(get(c, "index"), (double)i);
    }
    check_all_stats(f, get(get(json_array_get(get(doc, "cases"), 2), "extended"), "stats"), 2);
    json_decref(doc);
}

/* A case from a prompts file: the prompt length that actually ran, and a
 * release policy that holds less between rollouts than the retain case. */
static void test_prompts_file_case(void **state) {
    fixture *f = *state;
    json_t *doc = run_json(f, "out.json", NULL);
    json_t *c = json_array_get(get(doc, "cases"), 2);
    assert_number(get(c, "prompt_length"), 0); /* the prompts decide */
    assert_number(get(c, "prompt_width_tokens"), 37);
    assert_number(get(c, "prompt_min_tokens"), 12);
    assert_number(get(c, "prompt_max_tokens"), 37);
    assert_number(get(c, "peak_memory_mb"), 3.25);
    assert_number(get(c, "held_between_rollouts_mib"), 1.0);
    assert_true(json_is_true(get(c, "release_inference_cache")));
    assert_true(json_is_false(get(c, "rebuilt")));
    check_summary(f, get(c, "summary"), 2);
    assert_number(get(get(get(c, "summary"), "cache_acquire_ms"), "p95"),
                  rf_stat(&f->run, 2, RF_F_CACHE_ACQUIRE_MS, "p95"));
    check_all_stats(f, get(get(c, "extended"), "stats"), 2);
    json_decref(doc);
}

static void test_failed_case(void **state) {
    fixture *f = *state;
    json_t *doc = run_json(f, "out.json", NULL);
    json_t *c = json_array_get(get(doc, "cases"), 1);
    assert_str(get(c, "status"), "failed");
    assert_str(get(c, "error_code"), bc_status_name(BC_ERR_NOMEM));
    assert_str(get(c, "message"), RF_MESSAGE);
    assert_str(get(c, "dtype"), "float32");
    assert_str(get(c, "cache_policy"), "release");
    assert_true(json_is_true(get(c, "release_inference_cache")));
    assert_null_key(c, "returned_response_length");
    assert_null_key(c, "prompt_width_tokens");
    assert_null_key(c, "prompt_min_tokens");
    assert_null_key(c, "prompt_max_tokens");
    assert_null_key(c, "peak_memory_mb");
    assert_null_key(c, "held_between_rollouts_mib");
    assert_int_equal(json_array_size(get(c, "profiles")), 0);
    json_t *total = get(get(c, "summary"), "total_ms");
    assert_null_key(total, "mean");
    assert_null_key(total, "p50");
    assert_null_key(total, "p95");
    json_t *ext = get(c, "extended");
    assert_number(get(ext, "n_iterations"), 0);
    assert_number(get(get(get(ext, "stats"), "total_ms"), "n"), 0);
    /* No memory report (cr->memory NULL): every memory value is null. */
    json_t *mem = get(ext, "memory");
    const char *key;
    json_t *v;
    json_object_foreach(mem, key, v) {
        if (!json_is_null(v)) fprintf(stderr, "memory.%s is not null\n", key);
        assert_true(json_is_null(v));
    }
    json_decref(doc);
}

/* A case that never started (the run was interrupted): no statistics table
 * at all (stats NULL), no values, no memory. Every number is null, the
 * case keeps its shape, and error_code says why. */
static void test_never_started_case(void **state) {
    fixture *f = *state;
    bc_case_report *cr = rf_report(&f->run, 2);
    cr->status = BC_CASE_SKIPPED;
    cr->error_code = BC_ERR_INTERRUPTED;
    cr->message = "interrupted";
    cr->n_iterations = 0;
    cr->values = NULL;
    cr->stats = NULL;
    cr->memory = NULL;
    cr->held_between_rollouts_bytes = -1;
    json_t *doc = run_json(f, "skipped.json", NULL);
    json_t *c = json_array_get(get(doc, "cases"), 2);
    assert_str(get(c, "status"), "skipped");
    assert_str(get(c, "error_code"), "interrupted");
    assert_int_equal(json_array_size(get(c, "profiles")), 0);
    json_t *summary = get(c, "summary");
    assert_int_equal(json_object_size(summary), RF_N_FIELDS - 2); /* the two counts are left out */
    assert_null_key(get(summary, "total_ms"), "p95");
    json_t *total = get(get(get(c, "extended"), "stats"), "total_ms");
    assert_int_equal(json_object_size(total), f->run.run.n_stats);
    assert_null_key(total, "n");
    assert_null_key(total, "mean");
    assert_null_key(get(get(c, "extended"), "memory"), "weights_bytes");
    assert_null_key(c, "held_between_rollouts_mib");
    json_decref(doc);
}

/* A statistic the host adds to its table ("p42") is written with no change
 * in the reporter: in the list of statistics and for every field. */
static void test_extra_stat(void **state) {
    fixture *f = *state;
    rf_run_init(&f->run, RF_EXTRA_STAT);
    json_t *doc = run_json(f, "p42.json", NULL);
    json_t *stats = get(doc, "stats");
    assert_int_equal(json_array_size(stats), 10);
    assert_str(json_array_get(stats, 9), "p42");
    json_t *c0 = get(get(json_array_get(get(doc, "cases"), 0), "extended"), "stats");
    double p42 = rf_stat(&f->run, 0, RF_F_TOTAL_MS, "p42");
    assert_false(isnan(p42));
    assert_number(get(get(c0, "total_ms"), "p42"), p42);
    check_all_stats(f, c0, 0);
    json_decref(doc);
}

/* The summary follows each field's declaration, not its name: with field
 * descriptors (a host from 2.4 on), a rate declared better = higher under a
 * name that looks like nothing ("throughput") gets {mean, p50}; a name that
 * looks like a rate but is declared better = lower gets {mean, p50, p95};
 * a figure declared better = neither is left out although its name is no
 * count's; the seed's fields, declared as the host declares them, keep the
 * seed's summary. The values are the host's statistics of those columns. */
static void test_summary_by_declaration(void **state) {
    fixture *f = *state;
    const char *names[RF_N_FIELDS];
    bc_metric_desc descs[RF_N_FIELDS];
    for (int fi = 0; fi < RF_N_FIELDS; fi++) {
        const char *n = rf_field_names[fi];
        names[fi] = n;
        bc_metric_better b = starts_with(n, "num_")                  ? BC_BETTER_NEITHER
                             : ends_with(n, "tokens_per_second") ? BC_BETTER_HIGHER
                                                                 : BC_BETTER_LOWER;
        descs[fi] = (bc_metric_desc){.name = n, .unit = "ms", .better = b, .help = ""};
    }
    /* three declared metrics in the last columns, as a backend's would be */
    const int rate = RF_F_DECODE_MS_PER_TOKEN_P95, cost = RF_F_PREFILL_TOKENS_PER_SECOND,
              plain = RF_F_DECODE_TOKENS_PER_SECOND;
    names[rate] = "throughput";
    descs[rate] = (bc_metric_desc){.name = names[rate], .unit = "rows/s", .better = BC_BETTER_HIGHER, .help = ""};
    names[cost] = "stall_tokens_per_second";
    descs[cost] = (bc_metric_desc){.name = names[cost], .unit = "tokens/s", .better = BC_BETTER_LOWER, .help = ""};
    names[plain] = "rows_admitted";
    descs[plain] = (bc_metric_desc){.name = names[plain], .unit = "rows", .better = BC_BETTER_NEITHER, .help = ""};
    f->run.run.field_names = names;
    f->run.run.field_descs = descs;
    f->run.run.field_desc_size = sizeof descs[0];
    f->run.run.n_host_fields = RF_F_DECODE_MS_PER_TOKEN_P95;
    json_t *doc = run_json(f, "declared.json", NULL);
    json_t *c = json_array_get(get(doc, "cases"), 0);
    json_t *summary = get(c, "summary");

    json_t *e = get(summary, "throughput");
    assert_int_equal(json_object_size(e), 2);
    assert_value(get(e, "mean"), rf_stat(&f->run, 0, rate, "mean"));
    assert_value(get(e, "p50"), rf_stat(&f->run, 0, rate, "p50"));
    e = get(summary, "stall_tokens_per_second");
    assert_int_equal(json_object_size(e), 3);
    assert_value(get(e, "p95"), rf_stat(&f->run, 0, cost, "p95"));
    assert_false(isnan(rf_stat(&f->run, 0, cost, "p95")));
    assert_null(json_object_get(summary, "rows_admitted"));
    /* its statistics are all in extended.stats, as every field's */
    json_t *stats = get(get(get(c, "extended"), "stats"), "rows_admitted");
    assert_value(get(stats, "mean"), rf_stat(&f->run, 0, plain, "mean"));
    /* the seed's fields: counts out, rates {mean, p50}, the rest 3 */
    assert_null(json_object_get(summary, "num_generated_tokens"));
    assert_int_equal(json_object_size(get(summary, "tokens_per_second")), 2);
    assert_int_equal(json_object_size(get(summary, "total_ms")), 3);
    assert_int_equal(json_object_size(summary), RF_N_FIELDS - 3); /* two counts and rows_admitted */
    /* the metrics table says what each is */
    json_t *metrics = get(doc, "metrics");
    assert_int_equal(json_array_size(metrics), RF_N_FIELDS);
    assert_str(get(json_array_get(metrics, (size_t)cost), "better"), "lower");
    json_decref(doc);
}

/* Names the host lacks: an older host without the throughput fields and
 * with only n, mean and max. Statistics looked up by name are null; fields
 * it lacks are simply not there. */
static void test_missing_names(void **state) {
    fixture *f = *state;
    rf_run_init(&f->run, RF_OLD_FIELDS | RF_FEW_STATS);
    json_t *doc = run_json(f, "old.json", NULL);
    assert_int_equal(json_array_size(get(doc, "fields")), RF_N_FIELDS_OLD);
    json_t *c = json_array_get(get(doc, "cases"), 0);
    json_t *total = get(get(c, "summary"), "total_ms");
    assert_number(get(total, "mean"), rf_stat(&f->run, 0, RF_F_TOTAL_MS, "mean"));
    assert_null_key(total, "p50");
    assert_null_key(total, "p95");
    assert_null(json_object_get(get(c, "summary"), "time_to_first_token_ms"));
    json_t *ext_total = get(get(get(c, "extended"), "stats"), "total_ms");
    assert_int_equal(json_object_size(ext_total), 3);
    assert_number(get(ext_total, "max"), rf_stat(&f->run, 0, RF_F_TOTAL_MS, "max"));
    assert_int_equal(json_object_size(json_array_get(get(c, "profiles"), 0)), RF_N_FIELDS_OLD + 4);
    json_decref(doc);
}

static void test_single_precision(void **state) {
    fixture *f = *state;
    rf_run_init(&f->run, RF_SINGLE_PRECISION);
    json_t *doc = run_json(f, "one.json", NULL);
    assert_str(get(doc, "dtype"), "bfloat16");
    assert_int_equal(json_array_size(get(doc, "dtypes")), 1);
    assert_true(json_is_false(get(doc, "release_inference_cache")));
    json_decref(doc);
}

/* Writes the gzip'ed report to dir/name and returns its inflated text. */
static char *run_json_gz(fixture *f, const char *name) {
    snprintf(f->path, sizeof f->path, "%s/%s", f->dir, name);
    char setting[700];
    snprintf(setting, sizeof setting, "path=%s", f->path);
    const char *overrides[1] = {setting};
    rf_plugin p;
    assert_int_equal(rf_load(&p, "json", overrides, 1), 0);
    bc_error err = {0};
    assert_int_equal(rf_drive(&p, &f->host, &f->run, &err), BC_OK);
    rf_unload(&p);
    /* The file is gzip (not plain text): gzopen would read either. */
    char *raw = rf_slurp(f->path);
    assert_non_null(raw);
    assert_int_equal((unsigned char)raw[0], 0x1f);
    assert_int_equal((unsigned char)raw[1], 0x8b);
    free(raw);
    char *text = rf_slurp_gz(f->path);
    assert_non_null(text);
    return text;
}

static void test_gzip_same_document(void **state) {
    fixture *f = *state;
    json_t *plain = run_json(f, "plain.json", NULL);
    char *plain_text = rf_slurp(f->path);
    assert_non_null(plain_text);
    char *text = run_json_gz(f, "z.json.gz");
    assert_string_equal(text, plain_text); /* inflates to the same bytes */
    json_error_t jerr;
    json_t *doc = json_loads(text, 0, &jerr);
    assert_non_null(doc);
    assert_true(json_equal(doc, plain));
    free(text);
    free(plain_text);
    json_decref(doc);
    json_decref(plain);
    assert_int_equal(rf_count_entries(f->dir), 2); /* no temporary files left */
}

static void test_compact(void **state) {
    fixture *f = *state;
    json_t *doc = run_json(f, "compact.json", "indent=0");
    json_decref(doc);
    char *text = rf_slurp(f->path);
    assert_non_null(text);
    char *nl = strchr(text, '\n');
    assert_non_null(nl);
    assert_int_equal(nl[1], '\0'); /* one line, then the final newline */
    free(text);
}

/* check_settings, as validate and run call it before any case: a path that
 * cannot be created is refused with an I/O code and a message naming it,
 * and nothing is created. */
static void test_check_settings(void **state) {
    fixture *f = *state;
    char file[600], bad[800], good[800];
    snprintf(file, sizeof file, "%s/plain", f->dir);
    FILE *fp = fopen(file, "w");
    assert_non_null(fp);
    fclose(fp);
    snprintf(bad, sizeof bad, "path=%s/sub/out.json", file);
    snprintf(good, sizeof good, "path=%s/new/folder/out.json", f->dir);
    const char *cases[] = {bad, "path=/dev/null/x.json", good, "path=-", "path="};
    const bc_status expect[] = {BC_ERR_IO, BC_ERR_IO, BC_OK, BC_OK, BC_ERR_SETTING};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *overrides[1] = {cases[i]};
        rf_plugin p;
        assert_int_equal(rf_load(&p, "json", overrides, 1), 0);
        assert_non_null(p.desc->check_settings);
        bc_error err = {0};
        bc_status st = p.desc->check_settings(&f->host, &p.settings, &err);
        if (st != expect[i]) fprintf(stderr, "%s: %s\n", cases[i], err.message);
        assert_int_equal(st, expect[i]);
        if (st != BC_OK) assert_int_equal(err.code, st);
        if (st == BC_ERR_IO) /* the host's message, which starts with the path */
            assert_true(starts_with(err.message, cases[i] + strlen("path=")));
        if (st == BC_ERR_SETTING) assert_string_equal(err.message, "json: setting path is empty");
        rf_unload(&p);
    }
    assert_int_equal(rf_count_entries(f->dir), 1); /* only the plain file: nothing created */

    /* Driven as the host drives it, the run stops before open. */
    const char *overrides[1] = {bad};
    rf_plugin p;
    assert_int_equal(rf_load(&p, "json", overrides, 1), 0);
    bc_error err = {0};
    assert_int_equal(rf_drive(&p, &f->host, &f->run, &err), BC_ERR_IO);
    assert_non_null(strstr(err.message, "sub/out.json"));
    rf_unload(&p);
    assert_int_equal(rf_count_entries(f->dir), 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_top_level, setup, teardown),
        cmocka_unit_test_setup_teardown(test_environment_and_model_shape, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gpu_field, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_backend, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ok_case, setup, teardown),
        cmocka_unit_test_setup_teardown(test_schedule, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stopping_and_load, setup, teardown),
        cmocka_unit_test_setup_teardown(test_host_2_0, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prompts_file_case, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_case, setup, teardown),
        cmocka_unit_test_setup_teardown(test_never_started_case, setup, teardown),
        cmocka_unit_test_setup_teardown(test_extra_stat, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_summary_by_declaration, setup, teardown),
        cmocka_unit_test_setup_teardown(test_single_precision, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gzip_same_document, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compact, setup, teardown),
        cmocka_unit_test_setup_teardown(test_check_settings, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
