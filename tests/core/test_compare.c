/* test_compare.c: benchctl compare's comparison of two runs (core/src/analysis/compare.c),
 * on small hand-written reports read through runfile.h:
 * - environments: which differences refuse, which are informational, which
 *   are one-sided; a workload setting (workload_settings) refuses; world_size absent = 1;
 * - backend settings that changed;
 * - case matching: MISSING on either side, FAILED, no measured values,
 *   a duplicate key;
 * - the rows' numbers (medians, ratio, change and its direction), the
 *   verdict counts and the geometric mean;
 * - a metric that a file lacks; the outputs (console, markdown, JSON, HTML)
 *   written to memory and checked for their landmarks.
 */
#define _GNU_SOURCE
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
#include <unistd.h>

#include "compare.h"

typedef struct fixture {
    char dir[64];
    bc_runfile a, b;
    bc_cmp_pair pair;
    bc_cmp_options opt;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    if (!f) return -1;
    snprintf(f->dir, sizeof f->dir, "/tmp/bc_test_compare.XXXXXX");
    if (!mkdtemp(f->dir)) return -1;
    bc_cmp_options_default(&f->opt);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    bc_cmp_pair_free(&f->pair);
    bc_runfile_free(&f->a);
    bc_runfile_free(&f->b);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    if (system(cmd) != 0) return -1;
    free(f);
    return 0;
}

/* Writes text to dir/name and reads it into rf. */
static void load(fixture *f, const char *name, const char *text, bc_runfile *rf) {
    char path[128];
    snprintf(path, sizeof path, "%s/%s", f->dir, name);
    FILE *out = fopen(path, "w");
    assert_non_null(out);
    fputs(text, out);
    assert_int_equal(fclose(out), 0);
    bc_error err = {0};
    if (bc_runfile_read(path, rf, &err) != BC_OK) fail_msg("%s", err.message);
}

/* A report: the header's extra keys ("model" and "iterations" have
 * defaults when the header does not set them), then cases. Each case is
 * "BATCH:STATUS:v1,v2,..." with the total_ms values, precision bf16, or
 * "PRECISION@BATCH:STATUS:..." (fp32 or bf16); tokens_per_second is
 * 1000 / total_ms. */
static char *report(const char *header, const char *const *cases, size_t n_cases) {
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    fprintf(out,
            "{\"schema_version\": 2, \"device\": \"cpu\", \"warmup\": 1,%s%s"
            " \"backend\": \"b\", \"cpu_model\": \"CPU X\", \"benchctl_version\": \"0.1.0\","
            " \"environment\": {\"cpu\": {\"model\": \"CPU X\", \"kernels\": \"avx2\", \"threads\": 2}},"
            " \"fields\": [\"total_ms\", \"tokens_per_second\"]%s%s, \"cases\": [",
            strstr(header, "\"model\"") ? "" : " \"model\": \"m\",",
            strstr(header, "\"iterations\"") ? "" : " \"iterations\": 8,", header[0] ? ", " : "", header);
    for (size_t i = 0; i < n_cases; i++) {
        unsigned batch;
        char status[16];
        int used = 0;
        const char *spec = cases[i], *at = strchr(spec, '@');
        const char *precision = at && strncmp(spec, "fp32", 4) == 0 ? "fp32" : "bf16";
        if (at) spec = at + 1;
        assert_int_equal(sscanf(spec, "%u:%15[a-z]:%n", &batch, status, &used), 2);
        fprintf(out,
                "%s{\"index\": %zu, \"batch_size\": %u, \"samples_per_prompt\": 1, \"prompt_length\": 8,"
                " \"requested_response_length\": 4, \"precision\": \"%s\", \"dtype\": \"%s\","
                " \"cache_policy\": \"retain\", \"release_inference_cache\": false, \"status\": \"%s\","
                " \"message\": \"%s\", \"profiles\": [",
                i ? ", " : "", i, batch, precision, strcmp(precision, "fp32") ? "bfloat16" : "float32", status,
                strcmp(status, "ok") ? "boom" : "");
        const char *v = spec + used;
        for (int k = 0; *v; k++) {
            char *end;
            double ms = strtod(v, &end);
            if (ms > 0)
                fprintf(out, "%s{\"total_ms\": %.17g, \"tokens_per_second\": %.17g}", k ? ", " : "", ms, 1000.0 / ms);
            else fprintf(out, "%s{\"total_ms\": null, \"tokens_per_second\": null}", k ? ", " : "");
            v = *end == ',' ? end + 1 : end;
        }
        fputs("]}", out);
    }
    fputs("]}\n", out);
    fclose(out);
    return text;
}

#define N(x) (sizeof(x) / sizeof((x)[0]))

/* Eight iterations around 10 ms and around 11 ms (10% slower). */
#define FAST "10.0,10.1,9.9,10.05,9.95,10.02,9.98,10.03"
#define SLOW "11.0,11.1,10.9,11.05,10.95,11.02,10.98,11.03"

static void build(fixture *f, const char *header_a, const char *const *ca, size_t na, const char *header_b,
                  const char *const *cb, size_t nb) {
    char *ta = report(header_a, ca, na), *tb = report(header_b, cb, nb);
    load(f, "a.json", ta, &f->a);
    load(f, "b.json", tb, &f->b);
    free(ta), free(tb);
    bc_error err = {0};
    if (bc_cmp_pair_build(&f->a, &f->b, &f->opt, &f->pair, &err) != BC_OK) fail_msg("%s", err.message);
}

static const bc_cmp_row *row(const fixture *f, unsigned batch, const char *metric) {
    for (size_t i = 0; i < f->pair.n_rows; i++) {
        const bc_cmp_row *r = &f->pair.rows[i];
        const bc_runfile_case *c = r->ca ? r->ca : r->cb;
        if (c->batch_size == batch && strcmp(f->pair.metrics[r->metric], metric) == 0) return r;
    }
    fail_msg("no row for batch %u, %s", batch, metric);
    return NULL;
}

static void test_verdicts_and_numbers(void **state) {
    fixture *f = *state;
    const char *a[] = {"1:ok:" FAST, "2:ok:" FAST, "3:ok:" FAST, "4:ok:" FAST, "5:ok:10,10,10"};
    const char *b[] = {"1:ok:" SLOW, "2:ok:" FAST, "3:failed:", "6:ok:" FAST, "5:ok:11,11,11"};
    build(f, "", a, N(a), "", b, N(b));
    assert_int_equal(f->pair.n_matched, 4);
    assert_int_equal(f->pair.n_only_a, 1);
    assert_int_equal(f->pair.n_only_b, 1);
    assert_int_equal(f->pair.n_rows, 12); /* 6 cases x 2 metrics */

    const bc_cmp_row *r = row(f, 1, "total_ms");
    assert_int_equal(r->verdict, BC_VERDICT_WORSE);
    assert_false(r->higher_is_better);
    assert_int_equal(r->n_a, 8);
    assert_double_close(r->median_a, 10.01, 1e-12); /* (10.0 + 10.02) / 2 */
    assert_double_close(r->median_b, 11.01, 1e-12);
    assert_double_close(r->ratio, 11.01 / 10.01, 1e-12);
    assert_double_close(r->change, log(10.01 / 11.01), 1e-12); /* lower is better: ln(A/B) */
    assert_true(r->change_lo <= r->change && r->change <= r->change_hi);
    assert_true(r->exact);
    assert_double_close(r->p, 2.0 / 12870.0, 1e-15); /* 8 vs 8, no overlap: the smallest p */
    r = row(f, 1, "tokens_per_second");
    assert_int_equal(r->verdict, BC_VERDICT_WORSE);
    assert_true(r->higher_is_better);
    assert_double_close(r->change, log(r->ratio), 1e-15); /* higher is better: ln(B/A) */

    assert_int_equal(row(f, 2, "total_ms")->verdict, BC_VERDICT_SAME);
    r = row(f, 3, "total_ms");
    assert_int_equal(r->verdict, BC_VERDICT_FAILED);
    assert_string_equal(r->note, "B failed: boom");
    assert_int_equal(row(f, 4, "total_ms")->verdict, BC_VERDICT_MISSING);
    assert_string_equal(row(f, 4, "total_ms")->note, "only in A");
    assert_int_equal(row(f, 6, "total_ms")->verdict, BC_VERDICT_MISSING);
    assert_string_equal(row(f, 6, "total_ms")->note, "only in B");
    assert_null(row(f, 6, "total_ms")->ca);
    assert_int_equal(row(f, 5, "total_ms")->verdict, BC_VERDICT_UNDERPOWERED); /* 3 vs 3 */

    /* rows: A's order, each case's metrics together, then B's own */
    assert_int_equal(f->pair.rows[0].ca->batch_size, 1);
    assert_int_equal(f->pair.rows[1].ca->batch_size, 1);
    assert_int_equal(f->pair.rows[10].cb->batch_size, 6);

    const bc_cmp_summary *s = &f->pair.summary[1]; /* total_ms */
    assert_int_equal(s->counts[BC_VERDICT_WORSE], 1);
    assert_int_equal(s->counts[BC_VERDICT_SAME], 1);
    assert_int_equal(s->counts[BC_VERDICT_UNDERPOWERED], 1);
    assert_int_equal(s->counts[BC_VERDICT_FAILED], 1);
    assert_int_equal(s->counts[BC_VERDICT_MISSING], 2);
    assert_int_equal(s->n_ratios, 3);
    double ratios = (11.01 / 10.01) * (10.01 / 10.01) * (11.0 / 10.0);
    assert_double_close(s->geomean_ratio, cbrt(ratios), 1e-12);
    assert_double_close(s->geomean_change, -log(cbrt(ratios)), 1e-12);
}

/* Values that are null in every iteration of one side: MISSING, saying why. */
static void test_no_measured_values(void **state) {
    fixture *f = *state;
    const char *a[] = {"1:ok:" FAST};
    const char *b[] = {"1:ok:0,0,0"};
    build(f, "", a, N(a), "", b, N(b));
    const bc_cmp_row *r = row(f, 1, "total_ms");
    assert_int_equal(r->verdict, BC_VERDICT_MISSING);
    assert_string_equal(r->note, "no measured value in B");
    assert_nan(r->ratio);
}

static void test_environment(void **state) {
    fixture *f = *state;
    const char *a[] = {"1:ok:" FAST}, *b[] = {"1:ok:" FAST};
    build(f,
          "\"gpu\": null, \"git_commit\": \"abc\", \"hostname\": \"h1\","
          " \"backend_settings\": {\"threads\": 2, \"stop_at_eos\": false, \"shared_prefill\": false},"
          " \"workload_settings\": [\"stop_at_eos\"]",
          a, N(a),
          "\"gpu\": \"H100\", \"git_commit\": \"def\", \"world_size\": 2, \"iterations\": 16,"
          " \"backend_settings\": {\"threads\": 2, \"stop_at_eos\": true, \"shared_prefill\": true, \"graphs\": true},"
          " \"workload_settings\": [\"stop_at_eos\"]",
          b, N(b));
    const bc_cmp_pair *p = &f->pair;
    /* refusing ones first: world size and the setting the backend marks as
     * defining the work (workload_settings), by its name (compare knows no
     * backend's setting names); then informational (iterations, git
     * commit); then one-sided (gpu, hostname) */
    assert_int_equal(p->n_env_refusing, 2);
    assert_string_equal(p->env[0].field, "world_size");
    assert_string_equal(p->env[0].a, "1"); /* absent: one process */
    assert_string_equal(p->env[0].b, "2");
    assert_string_equal(p->env[1].field, "stop_at_eos");
    assert_string_equal(p->env[1].a, "false");
    assert_string_equal(p->env[1].b, "true");
    assert_true(p->env[0].refuses && p->env[1].refuses);
    assert_string_equal(p->env[2].field, "iterations");
    assert_string_equal(p->env[3].field, "git_commit");
    assert_false(p->env[2].refuses || p->env[3].refuses);
    assert_string_equal(p->env[4].field, "gpu");
    assert_string_equal(p->env[4].a, "");
    assert_string_equal(p->env[4].b, "H100");
    assert_string_equal(p->env[5].field, "hostname");
    assert_int_equal(p->n_env, 6);
    /* settings: stop_at_eos is the environment's; threads did not change */
    assert_int_equal(p->n_settings, 2);
    assert_string_equal(p->settings[0].name, "shared_prefill");
    assert_string_equal(p->settings[0].a, "false");
    assert_string_equal(p->settings[0].b, "true");
    assert_string_equal(p->settings[1].name, "graphs");
    assert_null(p->settings[1].a);
}

static void test_duplicate_key_and_missing_metric(void **state) {
    fixture *f = *state;
    const char *a[] = {"1:ok:" FAST, "1:ok:" SLOW}, *b[] = {"1:ok:" FAST};
    build(f, "", a, N(a), "", b, N(b));
    assert_non_null(strstr(f->pair.duplicate_key_warning, "cases 0 and 1 have the same key"));
    assert_int_equal(f->pair.n_matched, 1);
    assert_int_equal(row(f, 1, "total_ms")->verdict, BC_VERDICT_SAME); /* the first of the two */

    const char *names[] = {"total_ms", "generation_ms"};
    bc_cmp_options opt = f->opt;
    opt.metrics = names;
    opt.n_metrics = 2;
    bc_cmp_pair p;
    bc_error err = {0};
    assert_int_equal(bc_cmp_pair_build(&f->a, &f->b, &opt, &p, &err), BC_ERR_NOT_FOUND);
    assert_non_null(strstr(err.message, "no field 'generation_ms'"));
    assert_non_null(strstr(err.hint, "total_ms, tokens_per_second"));
}

/* Runs writer into a memory buffer; returns the text (caller frees). */
typedef void (*writer_fn)(FILE *, const bc_cmp_pair *, size_t, const bc_cmp_options *);
static char *written(writer_fn writer, const fixture *f) {
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    writer(out, &f->pair, 1, &f->opt);
    fclose(out);
    return text;
}

static void test_outputs(void **state) {
    fixture *f = *state;
    const char *a[] = {"1:ok:" FAST, "2:ok:" FAST}, *b[] = {"1:ok:" SLOW, "3:ok:" FAST};
    build(f, "\"model\": \"a|b <&>\"", a, N(a), "\"model\": \"a|b <&>\"", b, N(b));

    char *text = written(bc_cmp_write_console, f);
    assert_non_null(strstr(text, "B=1 x1 8->4 bf16 retain"));
    assert_non_null(strstr(text, "  WORSE\n"));
    assert_non_null(strstr(text, "  MISSING  only in A\n"));
    assert_non_null(strstr(text, "3 cases: 1 matched, 1 only in A, 1 only in B"));
    assert_non_null(strstr(text, "total_ms (lower is better): 1 WORSE, 2 MISSING"));
    free(text);

    text = written(bc_cmp_write_markdown, f);
    assert_non_null(strstr(text, "| case | metric | n | A | B | B/A | change | interval | p | verdict |"));
    assert_non_null(strstr(text, "**WORSE**"));
    assert_non_null(strstr(text, "model a\\|b \\<&>")); /* escaped in a list item */
    free(text);

    text = written(bc_cmp_write_html, f);
    assert_non_null(strstr(text, "<!DOCTYPE html>"));
    assert_non_null(strstr(text, ">B=1 x1 8-&gt;4 bf16 retain</text>")); /* escaped */
    assert_non_null(strstr(text, "class=\"bar WORSE\""));
    assert_null(strstr(text, "<script"));
    free(text);

    char *json = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&json, &len);
    bc_error err = {0};
    assert_int_equal(bc_cmp_write_json(out, &f->pair, 1, &f->opt, 1, &err), BC_OK);
    fclose(out);
    json_error_t jerr;
    json_t *doc = json_loads(json, 0, &jerr);
    if (!doc) fail_msg("JSON output: %s", jerr.text);
    json_t *rows = json_object_get(json_array_get(json_object_get(doc, "comparisons"), 0), "rows");
    assert_int_equal(json_array_size(rows), 6);
    json_t *missing = json_array_get(rows, 2); /* batch 2, only in A */
    assert_string_equal(json_string_value(json_object_get(missing, "verdict")), "MISSING");
    assert_true(json_is_null(json_object_get(missing, "ratio"))); /* NaN is null */
    assert_true(json_is_null(json_object_get(missing, "b")));
    assert_int_equal(json_integer_value(json_object_get(doc, "exit_status")), 1);
    json_decref(doc);
    free(json);
}

/* The direction is the descriptors' (the reports' "metrics"), never the
 * name: a rate declared lower-is-better is judged so, a count declared
 * neither gets CHANGED, and A's descriptor wins over B's unless it says
 * neither. */
static void test_direction(void **state) {
    (void)state;
    char *names[] = {"tokens_per_second", "occupancy", "num_generated_tokens"};
    bc_metric_desc da[] = {{.name = names[0], .unit = "tokens/s", .better = BC_BETTER_LOWER},
                           {.name = names[1], .unit = "1", .better = BC_BETTER_HIGHER},
                           {.name = names[2], .unit = "tokens", .better = BC_BETTER_NEITHER}};
    bc_metric_desc db[] = {{.name = names[0], .unit = "tokens/s", .better = BC_BETTER_HIGHER},
                           {.name = names[1], .unit = "1", .better = BC_BETTER_LOWER},
                           {.name = names[2], .unit = "tokens", .better = BC_BETTER_LOWER}};
    bc_runfile a = {.field_names = names, .n_fields = 3, .field_descs = da};
    bc_runfile b = {.field_names = names, .n_fields = 3, .field_descs = db};
    assert_int_equal(bc_cmp_metric_better(&a, 0, &b, 0), BC_BETTER_LOWER); /* not from "_per_second" */
    assert_int_equal(bc_cmp_metric_better(&a, 1, &b, 1), BC_BETTER_HIGHER);
    assert_int_equal(bc_cmp_metric_better(&a, 2, &b, 2), BC_BETTER_LOWER); /* A says neither: B's */
    bc_runfile none = {.field_names = names, .n_fields = 3};
    assert_int_equal(bc_cmp_metric_better(&none, 0, &none, 0), BC_BETTER_NEITHER);
}

/* --pair precision: two runs whose cases differ in precision alone match
 * on nothing by their keys, and case by case on every other axis when
 * paired across it; the pair names the axis and each side's values, and
 * the labels leave the precision out. */
static void test_pair_axis(void **state) {
    fixture *f = *state;
    const char *a[] = {"fp32@1:ok:" SLOW, "fp32@2:ok:" SLOW}, *b[] = {"1:ok:" FAST, "2:ok:" FAST, "4:ok:" FAST};
    build(f, "", a, N(a), "", b, N(b));
    assert_int_equal(f->pair.n_matched, 0); /* the keys hold the dtype */
    assert_null(f->pair.axis);
    bc_cmp_pair_free(&f->pair);

    f->opt.pair_axis = "precision";
    bc_error err = {0};
    if (bc_cmp_pair_build(&f->a, &f->b, &f->opt, &f->pair, &err) != BC_OK) fail_msg("%s", err.message);
    assert_int_equal(f->pair.n_matched, 2);
    assert_int_equal(f->pair.n_only_b, 1);
    assert_string_equal(f->pair.axis, "precision");
    assert_string_equal(f->pair.axis_a, "fp32");
    assert_string_equal(f->pair.axis_b, "bf16");
    const bc_cmp_row *r = row(f, 1, "total_ms");
    assert_int_equal(r->verdict, BC_VERDICT_BETTER); /* bf16 10% faster */
    assert_string_equal(r->ca->precision, "fp32");
    assert_string_equal(r->cb->precision, "bf16");
    assert_null(strstr(r->key, "dtype="));
    char label[96];
    bc_cmp_case_label_without(r->ca, f->pair.axis, label, sizeof label);
    assert_string_equal(label, "B=1 x1 8->4 retain");
    char *text = written(bc_cmp_write_console, f);
    assert_non_null(strstr(text, "paired on every axis but precision: precision fp32 (A) against bf16 (B)"));
    free(text);

    bc_cmp_pair p;
    f->opt.pair_axis = "nosuch";
    assert_int_equal(bc_cmp_pair_build(&f->a, &f->b, &f->opt, &p, &err), BC_ERR_NOT_FOUND);
    assert_non_null(strstr(err.message, "no axis 'nosuch'"));
}

/* --by precision within one run: the cases of one precision against those
 * of the other, matched on the rest of the key; each side named
 * "PATH [precision=VALUE]" and counted as its own cases. */
static void test_by_axis(void **state) {
    fixture *f = *state;
    const char *a[] = {"fp32@1:ok:" SLOW, "1:ok:" FAST, "fp32@2:ok:" FAST, "2:ok:" FAST, "fp32@3:ok:" FAST};
    build(f, "", a, N(a), "", a, 1);
    char **values = NULL;
    size_t n = bc_cmp_axis_values(&f->a, "precision", &values);
    assert_int_equal(n, 2);
    assert_string_equal(values[0], "fp32");
    assert_string_equal(values[1], "bf16");
    char **batches = NULL;
    assert_int_equal(bc_cmp_axis_values(&f->a, "batch_size", &batches), 3);
    assert_string_equal(batches[2], "3");
    bc_cmp_axis_values_free(batches, 3);
    bc_cmp_pair p;
    bc_error err = {0};
    if (bc_cmp_pair_build_by(&f->a, values[0], &f->a, values[1], "precision", &f->opt, &p, &err) != BC_OK)
        fail_msg("%s", err.message);
    assert_int_equal(p.n_cases_a, 3);
    assert_int_equal(p.n_cases_b, 2);
    assert_int_equal(p.n_matched, 2);
    assert_int_equal(p.n_only_a, 1);
    assert_int_equal(p.n_only_b, 0);
    assert_non_null(strstr(p.name_a, "a.json [precision=fp32]"));
    assert_non_null(strstr(p.name_b, "a.json [precision=bf16]"));
    assert_string_equal(p.backend_a, "b");
    assert_int_equal(p.n_env, 0);
    for (size_t i = 0; i < p.n_rows; i++)
        if (p.rows[i].ca && p.rows[i].ca->batch_size == 1 && strcmp(p.metrics[p.rows[i].metric], "total_ms") == 0) {
            assert_int_equal(p.rows[i].verdict, BC_VERDICT_BETTER);
            assert_double_close(p.rows[i].change, log(11.01 / 10.01), 1e-12);
        }
    bc_cmp_pair_free(&p);
    bc_cmp_axis_values_free(values, n);
    assert_int_equal(bc_cmp_axis_values(&f->a, "cache_policy", &values), 1);
    assert_string_equal(values[0], "retain");
    bc_cmp_axis_values_free(values, 1);
    assert_int_equal(bc_cmp_axis_values(&f->a, "threads", &values), 0);
    assert_null(values);
}

/* The change in words, the same size either way round: a time 2.9x shorter
 * is "2.90x faster", 158x longer "158x slower"; a rate, a size, a
 * directionless count; the interval on one side of 1 or across it. */
static void test_change_words(void **state) {
    (void)state;
    char buf[64];
    bc_cmp_fmt_change(buf, sizeof buf, bc_cmp_change(1 / 2.9, 0), BC_BETTER_LOWER, "ms");
    assert_string_equal(buf, "2.90x faster");
    bc_cmp_fmt_change(buf, sizeof buf, bc_cmp_change(158, 0), BC_BETTER_LOWER, "ms");
    assert_string_equal(buf, "158x slower");
    bc_cmp_fmt_change(buf, sizeof buf, bc_cmp_change(2.9, 1), BC_BETTER_HIGHER, "tokens/s");
    assert_string_equal(buf, "2.90x faster");
    bc_cmp_fmt_change(buf, sizeof buf, bc_cmp_change(1 / 15.8, 1), BC_BETTER_HIGHER, "tokens/s");
    assert_string_equal(buf, "15.8x slower");
    bc_cmp_fmt_change(buf, sizeof buf, bc_cmp_change(0.5, 0), BC_BETTER_LOWER, "bytes");
    assert_string_equal(buf, "2.00x smaller");
    bc_cmp_fmt_change(buf, sizeof buf, bc_cmp_change(1.5, 1), BC_BETTER_NEITHER, "tokens");
    assert_string_equal(buf, "1.50x higher");
    bc_cmp_fmt_change(buf, sizeof buf, bc_cmp_change(1.5, 1), BC_BETTER_HIGHER, "1");
    assert_string_equal(buf, "1.50x better");
    bc_cmp_fmt_change(buf, sizeof buf, 0.0, BC_BETTER_LOWER, "ms");
    assert_string_equal(buf, "1.00x");
    bc_cmp_fmt_change(buf, sizeof buf, NAN, BC_BETTER_LOWER, "ms");
    assert_string_equal(buf, "-");
    bc_cmp_fmt_interval(buf, sizeof buf, log(2.71), log(3.1), BC_BETTER_LOWER, "ms");
    assert_string_equal(buf, "[2.71x, 3.10x] faster");
    bc_cmp_fmt_interval(buf, sizeof buf, -log(3.1), -log(2.71), BC_BETTER_LOWER, "ms");
    assert_string_equal(buf, "[2.71x, 3.10x] slower");
    bc_cmp_fmt_interval(buf, sizeof buf, -log(1.02), log(1.05), BC_BETTER_LOWER, "ms");
    assert_string_equal(buf, "[1.02x slower, 1.05x faster]");
    bc_cmp_fmt_interval(buf, sizeof buf, NAN, 0.1, BC_BETTER_LOWER, "ms");
    assert_string_equal(buf, "-");
}

/* The HTML plot's axis is logarithmic in the factor: a 158x change is on
 * it (not piled at a +-100% edge), labelled by factors. */
static void test_html_log_axis(void **state) {
    fixture *f = *state;
    const char *a[] = {"1:ok:" FAST}, *b[] = {"1:ok:1580,1581,1579,1580.5,1579.5,1580.2,1579.8,1580.3"};
    build(f, "", a, N(a), "", b, N(b));
    assert_int_equal(row(f, 1, "total_ms")->verdict, BC_VERDICT_WORSE);
    char *text = written(bc_cmp_write_html, f);
    assert_non_null(strstr(text, ">&#247;200</text>")); /* the axis reaches a factor of 200 */
    assert_non_null(strstr(text, ">&#215;200</text>"));
    assert_non_null(strstr(text, ">1</text>"));
    assert_non_null(strstr(text, "158x slower WORSE</text>"));
    assert_null(strstr(text, "%</text>"));
    free(text);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_verdicts_and_numbers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_measured_values, setup, teardown),
        cmocka_unit_test_setup_teardown(test_environment, setup, teardown),
        cmocka_unit_test_setup_teardown(test_duplicate_key_and_missing_metric, setup, teardown),
        cmocka_unit_test_setup_teardown(test_outputs, setup, teardown),
        cmocka_unit_test(test_direction),
        cmocka_unit_test_setup_teardown(test_pair_axis, setup, teardown),
        cmocka_unit_test_setup_teardown(test_by_axis, setup, teardown),
        cmocka_unit_test(test_change_words),
        cmocka_unit_test_setup_teardown(test_html_log_axis, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
