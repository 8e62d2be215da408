/* test_json.c: the json reporter plugin (reporters/json), loaded with dlopen
 * and driven through its ops; the document is parsed back with jansson and
 * compared with the hand-built run report (reporter_fixture.h). */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

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

static void assert_number(json_t *v, double expect) {
    assert_true(json_is_number(v));
    double got = json_number_value(v);
    if (got != expect) fprintf(stderr, "number %.17g != %.17g\n", got, expect);
    assert_true(got == expect); /* exact: numbers must round-trip */
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

static void test_top_level(void **state) {
    fixture *f = *state;
    json_t *doc = run_json(f, "out.json", NULL);
    assert_number(get(doc, "schema_version"), 1);
    assert_str(get(doc, "model"), "facebook/opt-125m (synthetic)");
    assert_str(get(doc, "device"), "cpu");
    assert_number(get(doc, "warmup"), 1);
    assert_number(get(doc, "iterations"), RF_N_ITER);
    assert_number(get(doc, "temperature"), 0.7);
    assert_number(get(doc, "top_p"), 0.9);
    /* Two dtypes and two cache policies: the seed keys are null and the
     * lists say what the run had. */
    assert_true(json_is_null(get(doc, "dtype")));
    json_t *dtypes = get(doc, "dtypes");
    assert_int_equal(json_array_size(dtypes), 2);
    assert_str(json_array_get(dtypes, 0), "bfloat16");
    assert_str(json_array_get(dtypes, 1), "float32");
    assert_true(json_is_null(get(doc, "release_inference_cache")));
    /* Extended metadata. */
    assert_str(get(doc, "benchctl_version"), "0.1.0-test");
    assert_str(get(doc, "git_commit"), "0123456789ab");
    assert_str(get(doc, "cpu_model"), "Test CPU @ 1.00GHz");
    assert_str(get(doc, "hostname"), "testhost");
    assert_true(json_is_null(get(doc, "gpu")));
    assert_true(json_is_null(get(doc, "driver")));
    assert_str(get(doc, "config_path"), "configs/bench.cfg");
    assert_str(get(doc, "config_sha256"), f->run.run.config_sha256);
    assert_str(get(doc, "start_time"), "2026-11-29T21:00:00Z");
    json_t *sampling = get(doc, "sampling");
    assert_number(get(sampling, "temperature"), 0.7);
    assert_number(get(sampling, "top_p"), 0.9);
    assert_number(get(sampling, "top_k"), 50);
    assert_number(get(sampling, "seed"), 1234);
    json_t *plugins = get(doc, "plugins");
    assert_int_equal(json_array_size(plugins), 2);
    json_t *p0 = json_array_get(plugins, 0);
    assert_str(get(p0, "kind"), "backend");
    assert_str(get(p0, "name"), "fixture");
    assert_str(get(p0, "version"), "0.0.1");
    assert_str(get(p0, "path"), "/nowhere/benchctl-fixture.so");
    json_t *fields = get(doc, "fields");
    assert_int_equal(json_array_size(fields), BC_FIELD_COUNT_V1_0);
    for (size_t i = 0; i < BC_FIELD_COUNT_V1_0; i++) assert_str(json_array_get(fields, i), rf_field_names[i]);
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

static void test_ok_case(void **state) {
    fixture *f = *state;
    json_t *doc = run_json(f, "out.json", NULL);
    json_t *c = json_array_get(get(doc, "cases"), 0);
    const bc_case_report *cr = &f->run.reports[0];
    assert_number(get(c, "batch_size"), 2);
    assert_number(get(c, "samples_per_prompt"), 2);
    assert_number(get(c, "prompt_length"), 16);
    assert_number(get(c, "requested_response_length"), 8);
    assert_number(get(c, "returned_response_length"), 8);
    assert_number(get(c, "peak_memory_mb"), 12.5);
    assert_str(get(c, "precision"), "bf16");
    assert_str(get(c, "dtype"), "bfloat16");
    assert_str(get(c, "cache_policy"), "retain");
    assert_true(json_is_false(get(c, "release_inference_cache")));
    assert_str(get(c, "status"), "ok");
    assert_str(get(c, "message"), "");

    /* summary: the seed's shape. */
    json_t *summary = get(c, "summary");
    size_t n_summary = 0;
    for (uint32_t fi = 0; fi < BC_FIELD_COUNT_V1_0; fi++) {
        const char *name = rf_field_names[fi];
        const bc_stats *s = &cr->stats[fi];
        json_t *e = json_object_get(summary, name);
        size_t len = strlen(name);
        if (len > 3 && strcmp(name + len - 3, "_ms") == 0) {
            assert_non_null(e);
            assert_int_equal(json_object_size(e), 3);
            assert_value(get(e, "mean"), s->mean);
            assert_value(get(e, "p50"), s->p50);
            assert_value(get(e, "p95"), s->p95);
            n_summary++;
        } else if (strcmp(name, "tokens_per_second") == 0) {
            assert_non_null(e);
            assert_int_equal(json_object_size(e), 2);
            assert_value(get(e, "mean"), s->mean);
            assert_value(get(e, "p50"), s->p50);
            n_summary++;
        } else {
            assert_null(e); /* counts live in extended.stats only */
        }
    }
    assert_int_equal(json_object_size(summary), n_summary);
    /* A field no iteration measured is null, not 0. */
    assert_true(json_is_null(get(get(summary, "generation_overhead_ms"), "mean")));

    /* profiles: one record per iteration, the report's values exactly. */
    json_t *profiles = get(c, "profiles");
    assert_int_equal(json_array_size(profiles), RF_N_ITER);
    for (size_t it = 0; it < RF_N_ITER; it++) {
        json_t *rec = json_array_get(profiles, it);
        assert_int_equal(json_object_size(rec), BC_FIELD_COUNT_V1_0 + 4);
        for (uint32_t fi = 0; fi < BC_FIELD_COUNT_V1_0; fi++)
            assert_value(get(rec, rf_field_names[fi]), cr->values[it * BC_FIELD_COUNT_V1_0 + fi]);
        assert_true(json_is_null(get(rec, "generation_overhead_ms")));
        assert_number(get(rec, "batch_size"), 2);
        assert_number(get(rec, "num_samples_per_prompt"), 2);
        assert_number(get(rec, "prompt_length"), 16);
        assert_number(get(rec, "response_length"), 8);
    }

    /* extended: every statistic and the memory detail. */
    json_t *ext = get(c, "extended");
    assert_number(get(ext, "n_iterations"), RF_N_ITER);
    assert_number(get(ext, "wall_ms"), 123.25);
    json_t *stats = get(ext, "stats");
    assert_int_equal(json_object_size(stats), BC_FIELD_COUNT_V1_0);
    for (uint32_t fi = 0; fi < BC_FIELD_COUNT_V1_0; fi++) {
        const bc_stats *s = &cr->stats[fi];
        json_t *e = get(stats, rf_field_names[fi]);
        assert_number(get(e, "n"), s->n);
        assert_value(get(e, "mean"), s->mean);
        assert_value(get(e, "p50"), s->p50);
        assert_value(get(e, "p95"), s->p95);
        assert_value(get(e, "min"), s->min);
        assert_value(get(e, "max"), s->max);
        assert_value(get(e, "stddev"), s->stddev);
    }
    assert_number(get(get(stats, "generation_overhead_ms"), "n"), 0);
    json_t *mem = get(ext, "memory");
    assert_number(get(mem, "weights_bytes"), 1000000);
    assert_number(get(mem, "kv_cache_bytes"), 65536);
    assert_number(get(mem, "workspace_bytes"), 4096);
    assert_number(get(mem, "host_peak_bytes"), 13107200);
    assert_true(json_is_null(get(mem, "device_peak_bytes")));
    assert_number(get(mem, "peak_rss_bytes"), 52428800);
    assert_true(json_is_null(get(mem, "device_free_before_bytes")));
    assert_true(json_is_null(get(mem, "device_free_after_bytes")));
    json_decref(doc);
}

static void test_failed_case(void **state) {
    fixture *f = *state;
    json_t *doc = run_json(f, "out.json", NULL);
    json_t *c = json_array_get(get(doc, "cases"), 1);
    assert_str(get(c, "status"), "failed");
    assert_str(get(c, "message"), RF_MESSAGE);
    assert_str(get(c, "dtype"), "float32");
    assert_str(get(c, "cache_policy"), "release");
    assert_true(json_is_true(get(c, "release_inference_cache")));
    assert_true(json_is_null(get(c, "returned_response_length")));
    assert_true(json_is_null(get(c, "peak_memory_mb")));
    assert_int_equal(json_array_size(get(c, "profiles")), 0);
    json_t *total = get(get(c, "summary"), "total_ms");
    assert_true(json_is_null(get(total, "mean")));
    assert_true(json_is_null(get(total, "p50")));
    assert_true(json_is_null(get(total, "p95")));
    json_t *ext = get(c, "extended");
    assert_number(get(ext, "n_iterations"), 0);
    assert_number(get(get(get(ext, "stats"), "total_ms"), "n"), 0);
    assert_true(json_is_null(get(get(ext, "memory"), "weights_bytes")));
    json_decref(doc);
}

static void test_single_precision(void **state) {
    fixture *f = *state;
    rf_run_init(&f->run, 1);
    json_t *doc = run_json(f, "one.json", NULL);
    assert_str(get(doc, "dtype"), "bfloat16");
    assert_int_equal(json_array_size(get(doc, "dtypes")), 1);
    assert_true(json_is_false(get(doc, "release_inference_cache")));
    json_decref(doc);
}

static void test_gzip_same_document(void **state) {
    fixture *f = *state;
    json_t *plain = run_json(f, "plain.json", NULL);
    char plain_path[600];
    snprintf(plain_path, sizeof plain_path, "%s", f->path);
    snprintf(f->path, sizeof f->path, "%s/z.json.gz", f->dir);
    char setting[700];
    snprintf(setting, sizeof setting, "path=%s", f->path);
    const char *overrides[1] = {setting};
    rf_plugin p;
    assert_int_equal(rf_load(&p, "json", overrides, 1), 0);
    bc_error err = {0};
    assert_int_equal(rf_drive(&p, &f->host, &f->run, &err), BC_OK);
    rf_unload(&p);
    /* The file is gzip (not plain text) and inflates to the same bytes. */
    char *raw = rf_slurp(f->path);
    assert_non_null(raw);
    assert_int_equal((unsigned char)raw[0], 0x1f);
    assert_int_equal((unsigned char)raw[1], 0x8b);
    free(raw);
    char *text = rf_slurp_gz(f->path);
    assert_non_null(text);
    char *plain_text = rf_slurp(plain_path);
    assert_non_null(plain_text);
    assert_string_equal(text, plain_text);
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

static void test_unwritable_path(void **state) {
    fixture *f = *state;
    char file[600], setting[800];
    snprintf(file, sizeof file, "%s/plain", f->dir);
    FILE *fp = fopen(file, "w");
    assert_non_null(fp);
    fclose(fp);
    snprintf(setting, sizeof setting, "path=%s/sub/out.json", file);
    const char *overrides[1] = {setting};
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
        cmocka_unit_test_setup_teardown(test_ok_case, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_case, setup, teardown),
        cmocka_unit_test_setup_teardown(test_single_precision, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gzip_same_document, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compact, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unwritable_path, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
