/* test_html.c: the html reporter plugin (reporters/html), loaded with
 * dlopen and driven through its hooks as the host drives them.
 *
 *   golden       a fixed 24-case run (golden_axes below: deterministic values,
 *                fixed metadata, no clock) rendered and compared byte for byte
 *                with tests/reporters/golden/report.html; golden/report.json
 *                is the same run as the json reporter writes it (a saved run
 *                for `benchctl report`). After an intended change, regenerate
 *                both and review the diff:
 *                  BENCHCTL_UPDATE_GOLDEN=1 ctest --test-dir build -R test_reporter_html
 *   well-formed  every page written here (the golden run, the 3-case fixture
 *                of reporter_fixture.h in each of its variants, 1 case, 100
 *                cases, no cases, every case failed, hostile strings) passes
 *                `xmllint --noout --nonet` (libxml2-utils; tools/install-deps
 *                installs it) and is self-contained: no script, nothing
 *                fetched.
 *   contents     the warnings, the notes naming what a chart could not draw,
 *                one table row per case, the charts; numbers looked up by name
 *                (a host with fewer statistics or fields gives the same page).
 *   settings     check_settings, "-" (stdout), ".gz".
 *
 * BENCHCTL_TEST_KEEP=1 keeps the written pages (build/test_html_*).
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "bc_test_assert.h"

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "reporter_fixture.h"

#define GOLDEN_HTML BENCHCTL_SOURCE_DIR "/tests/reporters/golden/report.html"
#define GOLDEN_JSON BENCHCTL_SOURCE_DIR "/tests/reporters/golden/report.json"
#define N_STATS 9

/* ------------------------------------------------------ a matrix run */

/* The axes of a run, outermost first as bench.cfg's matrix is expanded
 * (docs/cli.md, "Case order"). */
typedef struct axes {
    const char *const *precision;
    uint32_t n_precision;
    const char *const *cache;
    uint32_t n_cache;
    const uint32_t *batch, *samples, *prompt, *response;
    uint32_t n_batch, n_samples, n_prompt, n_response;
    uint32_t iterations;
} axes;

/* What is special about one case of a matrix run. */
enum {
    Q_FAILED = 1 << 0,      /* failed, out of memory, nothing measured */
    Q_SKIPPED = 1 << 1,     /* skipped by an interrupt, nothing measured */
    Q_UNSTABLE = 1 << 2,    /* +-25 % noise instead of +-1.5 % */
    Q_DRIFT = 1 << 3,       /* the first measured iteration 25 % slower */
    Q_NO_MEMORY = 1 << 4,   /* no memory report */
    Q_NO_TPS = 1 << 5,      /* tokens_per_second not measured */
    Q_NO_OVERHEAD = 1 << 6  /* generation_overhead_ms not measured */
};

/* A run built from axes, its arrays laid out as a newer host's (wide
 * elements, like reporter_fixture.h); metadata from rf_run_init. */
typedef struct mrun {
    rf_run *base; /* heap: it points into itself */
    uint32_t n;
    bc_case *cases;
    rf_wide_report *reports;
    bc_memory_stats *memory;
    double *values; /* n x iterations x RF_N_FIELDS */
    double *stats;  /* n x RF_N_FIELDS x N_STATS */
    const char *stat_names[N_STATS];
} mrun;

static const bc_precision_ops bf16_ops = {.struct_size = sizeof(bc_precision_ops), .dtype = "bfloat16",
                                          .element_size = 2, .rel_tolerance = 1e-2};
static const bc_precision_ops fp32_ops = {.struct_size = sizeof(bc_precision_ops), .dtype = "float32",
                                          .element_size = 4, .rel_tolerance = 1e-5};

/* A fixed pseudo-random sequence (integer arithmetic: the same on every machine). */
static double noise(uint32_t *state, double amplitude) {
    *state = *state * 1664525u + 1013904223u;
    return amplitude * ((double)(*state >> 8) / 16777216.0 * 2.0 - 1.0);
}

/* One iteration's fields of case c, every time scaled by f. */
static void fill_row(double *row, const bc_case *c, double f, unsigned quirks) {
    double rows = (double)c->batch_size * c->samples_per_prompt;
    double p = c->prompt_length ? c->prompt_length : 24.0, r = c->response_length;
    double slow = c->precision_ops == &fp32_ops ? 1.75 : 1.0;
    double overhead = (0.2 + 0.01 * r * rows) * f;
    row[RF_F_PROMPT_EXPANSION_MS] = (0.6 + 0.15 * rows) * f;
    row[RF_F_PREFILL_FORWARD_MS] = (0.3 + 0.004 * rows * p * slow) * f;
    row[RF_F_DECODE_FORWARD_MS] = r * (1.1 + 0.06 * rows) * slow * f;
    row[RF_F_GENERATION_OVERHEAD_MS] = (quirks & Q_NO_OVERHEAD) ? NAN : overhead;
    row[RF_F_GENERATION_MS] = row[RF_F_PREFILL_FORWARD_MS] + row[RF_F_DECODE_FORWARD_MS] + overhead;
    row[RF_F_POST_PROCESSING_MS] = (0.3 + 0.004 * rows * r) * f;
    row[RF_F_TOTAL_MS] = row[RF_F_PROMPT_EXPANSION_MS] + row[RF_F_GENERATION_MS] + row[RF_F_POST_PROCESSING_MS];
    row[RF_F_NUM_GENERATED_TOKENS] = rows * r;
    row[RF_F_TOKENS_PER_SECOND] = (quirks & Q_NO_TPS) ? NAN : rows * r / (row[RF_F_GENERATION_MS] / 1000.0);
    row[RF_F_NUM_DECODE_FORWARDS] = r - 1;
    row[RF_F_CACHE_ACQUIRE_MS] = c->release_cache ? 0.4 * f : NAN;
    row[RF_F_CACHE_RELEASE_MS] = c->release_cache ? 0.25 * f : NAN;
    row[RF_F_TIME_TO_FIRST_TOKEN_MS] = row[RF_F_PROMPT_EXPANSION_MS] + row[RF_F_PREFILL_FORWARD_MS] + 0.02;
    row[RF_F_DECODE_MS_PER_TOKEN_P50] = row[RF_F_DECODE_FORWARD_MS] / (r - 1);
    row[RF_F_DECODE_MS_PER_TOKEN_P95] = row[RF_F_DECODE_MS_PER_TOKEN_P50] * 1.125;
    row[RF_F_PREFILL_TOKENS_PER_SECOND] = rows * p / (row[RF_F_PREFILL_FORWARD_MS] / 1000.0);
    row[RF_F_DECODE_TOKENS_PER_SECOND] = rows * (r - 1) / (row[RF_F_DECODE_FORWARD_MS] / 1000.0);
}

/* Builds the run of ax with quirks[i] for case i (quirks may be NULL, n_quirks long). */
static void mrun_init(mrun *m, const axes *ax, const unsigned *quirks, uint32_t n_quirks) {
    memset(m, 0, sizeof *m);
    m->base = calloc(1, sizeof *m->base);
    assert_non_null(m->base);
    rf_run_init(m->base, 0);
    uint32_t n = ax->n_precision * ax->n_cache * ax->n_batch * ax->n_samples * ax->n_prompt * ax->n_response;
    uint32_t it_n = ax->iterations; /* the statistics see at most the first 64 (rf_field_stats) */
    m->n = n;
    m->cases = calloc(n, sizeof *m->cases);
    m->reports = malloc(n * sizeof *m->reports);
    m->memory = calloc(n, sizeof *m->memory);
    m->values = calloc((size_t)n * it_n * RF_N_FIELDS + 1, sizeof *m->values);
    m->stats = calloc((size_t)n * RF_N_FIELDS * N_STATS, sizeof *m->stats);
    assert_true(m->cases && m->reports && m->memory && m->values && m->stats);
    memset(m->reports, 0xA5, n * sizeof *m->reports); /* a newer host's tail: garbage to this reader */
    static const char *const stat_names[N_STATS] = {"n", "mean", "stddev", "cv", "min", "p50", "p95", "p99", "max"};
    memcpy(m->stat_names, stat_names, sizeof stat_names);

    uint32_t i = 0;
    for (uint32_t a = 0; a < ax->n_precision; a++)
        for (uint32_t b = 0; b < ax->n_cache; b++)
            for (uint32_t c = 0; c < ax->n_batch; c++)
                for (uint32_t d = 0; d < ax->n_samples; d++)
                    for (uint32_t e = 0; e < ax->n_prompt; e++)
                        for (uint32_t g = 0; g < ax->n_response; g++, i++) {
                            bc_case *k = &m->cases[i];
                            int release = strcmp(ax->cache[b], "release") == 0;
                            *k = (bc_case){.struct_size = sizeof(bc_case), .index = i, .batch_size = ax->batch[c],
                                           .samples_per_prompt = ax->samples[d], .prompt_length = ax->prompt[e],
                                           .response_length = ax->response[g], .precision = ax->precision[a],
                                           .precision_ops = strcmp(ax->precision[a], "fp32") == 0 ? &fp32_ops
                                                                                                   : &bf16_ops,
                                           .cache_policy = ax->cache[b], .release_cache = release,
                                           .sampling = &m->base->sampling};
                        }

    for (i = 0; i < n; i++) {
        const bc_case *c = &m->cases[i];
        unsigned q = quirks && i < n_quirks ? quirks[i] : 0;
        int ran = !(q & (Q_FAILED | Q_SKIPPED));
        uint32_t iters = ran ? it_n : 0;
        double *vals = m->values + (size_t)i * it_n * RF_N_FIELDS;
        uint32_t seed = 12345u + 977u * i;
        for (uint32_t it = 0; it < iters; it++) {
            double f = 1.0 + noise(&seed, (q & Q_UNSTABLE) ? 0.25 : 0.015) + ((q & Q_DRIFT) && it == 0 ? 0.25 : 0.0);
            fill_row(vals + (size_t)it * RF_N_FIELDS, c, f, q);
        }
        double *st = m->stats + (size_t)i * RF_N_FIELDS * N_STATS;
        for (uint32_t f = 0; f < RF_N_FIELDS; f++)
            rf_field_stats(st + (size_t)f * N_STATS, m->stat_names, N_STATS, vals + f, iters, RF_N_FIELDS);

        double rows = (double)c->batch_size * c->samples_per_prompt;
        double p = c->prompt_length ? c->prompt_length : 24.0;
        double peak_mib = 250.0 + rows * (p + c->response_length) * (c->precision_ops == &fp32_ops ? 0.04 : 0.02);
        double held_mib = c->release_cache ? 240.0 : peak_mib - 1.0;
        int has_memory = ran && !(q & Q_NO_MEMORY);
        m->memory[i] = (bc_memory_stats){.struct_size = sizeof(bc_memory_stats), .weights_bytes = 250LL << 20,
                                         .kv_cache_bytes = -1, .workspace_bytes = -1,
                                         .host_peak_bytes = (int64_t)(peak_mib * 1048576.0), .device_peak_bytes = -1,
                                         .device_free_bytes = -1, .device_total_bytes = -1,
                                         .resident_bytes = (int64_t)(held_mib * 1048576.0)};
        m->reports[i].r = (bc_case_report){
            .struct_size = sizeof(bc_case_report), .c = c,
            .status = (q & Q_FAILED) ? BC_CASE_FAILED : (q & Q_SKIPPED) ? BC_CASE_SKIPPED : BC_CASE_OK,
            .error_code = (q & Q_FAILED) ? BC_ERR_NOMEM : (q & Q_SKIPPED) ? BC_ERR_INTERRUPTED : BC_OK,
            .message = (q & Q_FAILED)    ? "begin_case: cannot allocate the KV cache (needs 12 GiB)"
                       : (q & Q_SKIPPED) ? "interrupted before the case ran"
                                         : "",
            .n_iterations = iters, .values = iters ? vals : NULL, .stats = st,
            .returned_response_length = ran ? (int64_t)c->response_length : -1,
            .prompt_width_tokens = ran ? (int64_t)(c->prompt_length ? c->prompt_length : 24) : -1,
            .prompt_min_tokens = ran ? (int64_t)(c->prompt_length ? c->prompt_length : 9) : -1,
            .prompt_max_tokens = ran ? (int64_t)(c->prompt_length ? c->prompt_length : 24) : -1,
            .peak_memory_mib = has_memory ? peak_mib : NAN, .memory = has_memory ? &m->memory[i] : NULL,
            .held_between_rollouts_bytes = has_memory ? (int64_t)(held_mib * 1048576.0) : -1,
            .peak_rss_bytes = has_memory ? (int64_t)((peak_mib + 40.0) * 1048576.0) : -1,
            .device_free_before_bytes = -1, .device_free_after_bytes = -1, .wall_ms = ran ? 100.0 + i : 0.0,
            .rebuilt = i == 0 || (i > 0 && m->cases[i - 1].precision != c->precision)};
    }

    /* The backend settings at their defaults: a saved run (JSON) does not
     * keep the defaults, so `benchctl report golden/report.json` can give
     * the very bytes of golden/report.html. */
    m->base->backend_value_rows[0].v.i = 0;
    m->base->backend_value_rows[1].v.i = 0;

    bc_run_report *run = &m->base->run;
    run->precisions = ax->precision;
    run->n_precisions = ax->n_precision;
    run->cache_policies = ax->cache;
    run->n_cache_policies = ax->n_cache;
    run->iterations = it_n;
    run->warmup = 2;
    run->n_stats = N_STATS;
    run->stat_names = m->stat_names;
    run->n_cases = n;
    run->case_report_size = sizeof(rf_wide_report);
    run->cases = &m->reports[0].r;
}

static void mrun_free(mrun *m) {
    free(m->base);
    free(m->cases);
    free(m->reports);
    free(m->memory);
    free(m->values);
    free(m->stats);
}

/* The golden run: 2 precisions x 3 batches x 2 samples x 2 prompt lengths,
 * 32-token responses, 5 iterations; one case failed, two skipped, one
 * unstable, one drifting (and so unstable too), one without memory, one without tokens/s, one
 * without the generation overhead. */
static const char *const golden_precisions[] = {"bf16", "fp32"};
static const char *const golden_caches[] = {"retain"};
static const uint32_t golden_batch[] = {1, 2, 4}, golden_samples[] = {1, 2}, golden_prompt[] = {32, 128},
                      golden_response[] = {32};
static const axes golden_axes = {golden_precisions, 2, golden_caches, 1, golden_batch, golden_samples,
                                 golden_prompt, golden_response, 3, 2, 2, 1, 5};
static const unsigned golden_quirks[24] = {[3] = Q_DRIFT,      [5] = Q_FAILED,     [7] = Q_NO_OVERHEAD,
                                           [9] = Q_UNSTABLE,   [13] = Q_NO_MEMORY, [14] = Q_NO_TPS,
                                           [22] = Q_SKIPPED,   [23] = Q_SKIPPED};

/* ------------------------------------------------------------- driving */

typedef struct fixture {
    char dir[512];
    bc_host host;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    if (!f || rf_make_dir(f->dir, "test_html") != 0) {
        free(f);
        return -1;
    }
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

/* Drives reporter name (with setting overrides) over run; rf_drive wants an
 * rf_run, whose run member is all it reads besides the cases it drives, so
 * a matrix run is driven through open and close directly. */
static bc_status drive_run(fixture *f, const char *name, const bc_run_report *run, const char *const *overrides,
                           int n_overrides, bc_error *err) {
    rf_plugin p;
    assert_int_equal(rf_load(&p, name, overrides, n_overrides), 0);
    bc_status st = BC_OK;
    if (p.desc->check_settings) st = p.desc->check_settings(&f->host, &p.settings, err);
    if (st == BC_OK) {
        bc_run_report empty = *run;
        empty.n_cases = 0;
        empty.cases = NULL;
        void *inst = NULL;
        st = p.ops->open(&f->host, &p.settings, &empty, &inst, err);
        if (st == BC_OK) {
            st = p.ops->close(inst, run, err);
            p.ops->destroy(inst);
        }
    }
    rf_unload(&p);
    return st;
}

/* Writes run as a page at dir/name and returns its text (caller frees). */
static char *render(fixture *f, const bc_run_report *run, const char *name, char *path_out) {
    char path[700], setting[720];
    snprintf(path, sizeof path, "%s/%s", f->dir, name);
    snprintf(setting, sizeof setting, "path=%s", path);
    const char *overrides[] = {setting};
    bc_error err = {0};
    bc_status st = drive_run(f, "html", run, overrides, 1, &err);
    if (st != BC_OK) fail_msg("html reporter: %s", err.message);
    if (path_out) strcpy(path_out, path);
    char *text = rf_slurp(path);
    assert_non_null(text);
    return text;
}

static int count(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

static void assert_contains(const char *text, const char *needle) {
    if (!strstr(text, needle)) fail_msg("the page lacks \"%s\"", needle);
}

/* xmllint --noout --nonet path succeeds; a missing xmllint fails the test
 * with what to install. */
static void assert_wellformed(const char *path) {
    if (system("command -v xmllint >/dev/null 2>&1") != 0)
        fail_msg("xmllint not found: install libxml2-utils (tools/install-deps installs it)");
    char cmd[900];
    snprintf(cmd, sizeof cmd, "xmllint --noout --nonet '%s'", path);
    int rc = system(cmd);
    if (rc != 0) fail_msg("%s is not well-formed XML (xmllint exit %d)", path, WIFEXITED(rc) ? WEXITSTATUS(rc) : -1);
}

/* Nothing that runs or fetches: no script, no external reference; the
 * only URLs are the XML namespaces. */
static void assert_self_contained(const char *text) {
    const char *banned[] = {"<script", "<link", "<iframe", "<img", "<object", "<embed", "src=", "url(",
                            "@import", "javascript:", "onload", "onclick", "xlink:href", "href=\"http",
                            "href=\"//"};
    for (size_t i = 0; i < sizeof banned / sizeof banned[0]; i++)
        if (strstr(text, banned[i])) fail_msg("the page contains \"%s\"", banned[i]);
    int urls = count(text, "http://") + count(text, "https://");
    int namespaces = count(text, "xmlns=\"http://www.w3.org/");
    assert_int_equal(urls, namespaces);
}

/* The text of every page, checked the same way. */
static void check_page(const char *path, const char *text) {
    assert_wellformed(path);
    assert_self_contained(text);
    assert_true(strncmp(text, "<!DOCTYPE html>\n", 16) == 0);
    assert_contains(text, "@media (prefers-color-scheme:dark)");
    assert_contains(text, "</html>\n");
}

/* ------------------------------------------------------------- golden */

/* Compares text with the committed file at golden, or rewrites that file
 * when BENCHCTL_UPDATE_GOLDEN is set. On a difference, prints the first
 * differing line of each. */
static void compare_golden(const char *text, const char *golden) {
    if (getenv("BENCHCTL_UPDATE_GOLDEN")) {
        FILE *fp = fopen(golden, "wb");
        assert_non_null(fp);
        assert_int_equal(fwrite(text, 1, strlen(text), fp), strlen(text));
        assert_int_equal(fclose(fp), 0);
        fprintf(stderr, "updated %s\n", golden);
        return;
    }
    char *want = rf_slurp(golden);
    if (!want) fail_msg("%s is missing: BENCHCTL_UPDATE_GOLDEN=1 ctest --test-dir build -R test_reporter_html", golden);
    if (strcmp(want, text) != 0) {
        int line = 1;
        size_t i = 0;
        while (want[i] && want[i] == text[i]) line += want[i++] == '\n';
        size_t start = i;
        while (start > 0 && want[start - 1] != '\n') start--;
        size_t from = i - start > 60 ? i - 60 : start; /* the line around the first difference */
        fprintf(stderr, "%s differs at line %d, column %zu:\n  golden: ...%.160s\n  now:    ...%.160s\n", golden,
                line, i - start + 1, want + from, text + from);
        fprintf(stderr, "if the change is intended: BENCHCTL_UPDATE_GOLDEN=1 ctest --test-dir build -R "
                        "test_reporter_html, and review the diff\n");
        free(want);
        fail_msg("output differs from %s", golden);
    }
    free(want);
}

static void test_golden(void **state) {
    fixture *f = *state;
    mrun m;
    mrun_init(&m, &golden_axes, golden_quirks, 24);
    char path[700];
    char *text = render(f, &m.base->run, "golden.html", path);
    check_page(path, text);
    compare_golden(text, GOLDEN_HTML);
    /* the same bytes a second time: nothing depends on the clock or addresses */
    char *again = render(f, &m.base->run, "golden2.html", NULL);
    assert_string_equal(text, again);
    free(again);
    free(text);
    mrun_free(&m);
}

/* golden/report.json: the golden run as the json reporter writes it, a
 * saved run for `benchctl report` (rendering it should give
 * golden/report.html). Written with the golden page when
 * BENCHCTL_UPDATE_GOLDEN is set; otherwise only checked to be that run
 * (its bytes follow the json reporter, which this test does not pin). */
static void test_golden_json(void **state) {
    fixture *f = *state;
    mrun m;
    mrun_init(&m, &golden_axes, golden_quirks, 24);
    char path[700], setting[720];
    snprintf(path, sizeof path, "%s/golden.json", f->dir);
    snprintf(setting, sizeof setting, "path=%s", path);
    const char *overrides[] = {setting};
    bc_error err = {0};
    assert_int_equal(drive_run(f, "json", &m.base->run, overrides, 1, &err), BC_OK);
    char *text = rf_slurp(path);
    assert_non_null(text);
    if (getenv("BENCHCTL_UPDATE_GOLDEN")) compare_golden(text, GOLDEN_JSON);
    free(text);
    json_error_t jerr;
    json_t *doc = json_load_file(GOLDEN_JSON, 0, &jerr);
    if (!doc) fail_msg("%s: %s (line %d)", GOLDEN_JSON, jerr.text, jerr.line);
    json_t *cases = json_object_get(doc, "cases");
    assert_int_equal(json_array_size(cases), 24);
    assert_string_equal(json_string_value(json_object_get(json_array_get(cases, 5), "status")), "failed");
    assert_string_equal(json_string_value(json_object_get(doc, "start_time")), "2026-11-29T21:00:00Z");
    json_decref(doc);
    mrun_free(&m);
}

/* What the golden page says: warnings, table rows, charts, notes. */
static void test_contents(void **state) {
    fixture *f = *state;
    mrun m;
    mrun_init(&m, &golden_axes, golden_quirks, 24);
    char *text = render(f, &m.base->run, "contents.html", NULL);
    /* header */
    assert_contains(text, "<title>benchctl: facebook/opt-125m (synthetic)</title>");
    assert_contains(text, "12 layers, 768 hidden, 12 heads, 3072 FFN, 50272 vocabulary, 2048 positions");
    assert_contains(text, "Test CPU @ 1.00GHz \xC2\xB7 kernels avx2 \xC2\xB7 4 threads");
    assert_contains(text, "GPU none");
    assert_contains(text, "benchctl 0.1.0-test (git <code>0123456789ab</code>)");
    assert_contains(text, "backend fixture 0.0.1, reporter json 0.1.0");
    assert_contains(text, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    assert_contains(text, "2026-11-29T21:00:00Z");
    /* every setting at its default: behind a details element */
    assert_contains(text, "<dt>Backend</dt><dd>fixture <details class=\"defaults\"><summary>2 settings at their "
                          "defaults</summary><span class=\"mono\">threads=0</span> "
                          "<span class=\"mono\">shared_prefill=false</span></details></dd>");
    assert_int_equal(count(text, "<th>backend</th>"), 0); /* one backend: no backend column */
    assert_int_equal(count(text, "href=\"#ranks\""), 0);
    assert_contains(text, "24 cases (21 ok, 1 failed, 2 skipped)");
    /* warnings */
    assert_contains(text, "<li class=\"bad\">Case #5 failed (out of memory): <span class=\"mono\">begin_case: cannot "
                          "allocate the KV cache (needs 12 GiB)</span></li>");
    assert_contains(text, "<li class=\"warn\">Cases #22, #23 skipped (interrupted)");
    /* #9 is noisy, #3's first iteration is slow */
    assert_contains(text, "Unstable cases (coefficient of variation of total_ms above 5%): #3 (9.26%), #9 (");
    assert_int_equal(count(text, "Unstable"), 1);
    /* one table row per case, status and a dash for what was not measured */
    const char *body = strstr(text, "<tbody>"), *end = strstr(text, "</tbody>");
    assert_true(body && end && body < end);
    int rows = 0;
    for (const char *p = strstr(body, "<tr"); p && p < end; p = strstr(p + 1, "<tr")) rows++;
    assert_int_equal(rows, 24);
    assert_int_equal(count(text, "<tr class=\"notok\">"), 3);
    assert_contains(text, "<td class=\"num na\" title=\"not measured\">-</td>");
    /* five charts and their notes */
    assert_int_equal(count(text, "<div class=\"chart\">"), 5);
    assert_int_equal(count(text, "<b>How to read this.</b>"), 6);
    assert_contains(text, "Not drawn: #5, #22, #23 (failed or skipped; see Warnings); #14 (no tokens_per_second "
                          "measured).");
    assert_contains(text, "generation overhead (generation_overhead_ms) not measured in #7");
    assert_contains(text, "#13 (no memory figure)");
    /* the facets, the series (both vary: samples and precision) */
    assert_contains(text, "prompt 32 \xE2\x86\x92 response 32 tokens");
    assert_contains(text, "prompt 128 \xE2\x86\x92 response 32 tokens");
    assert_contains(text, "1 sample/prompt, bf16");
    assert_contains(text, "2 samples/prompt, fp32");
    /* progression: one panel per case that has values (21 ok) */
    assert_int_equal(count(text, "<rect class=\"frame\""), 21 - 0);
    free(text);
    mrun_free(&m);
}

/* --------------------------------------------------------- well-formed */

/* The 3-case fixture in each variant: well-formed, self-contained; and a
 * host with fewer statistics, an extra statistic or fewer fields gives the
 * very same page, since every number is looked up by name (p50 and cv come
 * from the values when the host has no such statistic). */
static void test_fixture_variants(void **state) {
    fixture *f = *state;
    static const unsigned variants[] = {0, RF_FEW_STATS, RF_EXTRA_STAT, RF_OLD_FIELDS, RF_SINGLE_PRECISION,
                                        RF_NO_BACKEND};
    char *first = NULL;
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
        rf_run *r = calloc(1, sizeof *r);
        assert_non_null(r);
        rf_run_init(r, variants[v]);
        char name[64], path[700];
        snprintf(name, sizeof name, "variant%zu.html", v);
        char *text = render(f, &r->run, name, path);
        check_page(path, text);
        /* the failed case's message, escaped */
        assert_contains(text, "generate: backend &quot;opt&quot; failed, out of memory (needed 12 GiB)");
        if (variants[v] & (RF_FEW_STATS | RF_EXTRA_STAT | RF_OLD_FIELDS)) {
            if (strcmp(first, text) != 0) fail_msg("variant %u gives another page than the full host", variants[v]);
        }
        if (variants[v] & RF_NO_BACKEND) {
            assert_contains(text, "<dt>Model</dt><dd>?</dd>");
            assert_contains(text, "<dt>Sampling</dt><dd>?</dd>");
        }
        if (v == 0) {
            /* generation_overhead_ms is NaN in every case of this fixture */
            assert_contains(text, "generation overhead (generation_overhead_ms) not measured in #0, #2");
            assert_contains(text, "Case #1 failed (out of memory)");
            /* settings that differ from their defaults in bold */
            assert_contains(text, "<span class=\"mono changed\">threads=2</span> <span class=\"mono "
                                  "changed\">shared_prefill=true</span>");
            assert_contains(text, "prompts from a file \xE2\x86\x92 response 8 tokens");
            assert_contains(text, "<td class=\"num\">37 (12\xE2\x80\x93" "37)</td>");
            first = text;
        } else {
            free(text);
        }
        free(r);
    }
    free(first);
}

/* One case; 100 cases; one case of 5000 iterations; no case at all; every
 * case failed. */
static void test_sizes(void **state) {
    fixture *f = *state;
    char path[700];

    static const char *const one_p[] = {"bf16"}, *const one_c[] = {"retain"};
    static const uint32_t one[] = {1}, resp[] = {16}, prompt[] = {32};
    axes single = {one_p, 1, one_c, 1, one, one, prompt, resp, 1, 1, 1, 1, 60};
    mrun m;
    mrun_init(&m, &single, NULL, 0);
    m.reports[0].r.peak_memory_mib = 81920.0; /* 80 GiB: the memory chart switches to GiB */
    m.reports[0].r.held_between_rollouts_bytes = 40LL << 30;
    char *text = render(f, &m.base->run, "one.html", path);
    check_page(path, text);
    assert_int_equal(count(text, "<div class=\"chart\">"), 5);
    assert_contains(text, "1 case (1 ok, 0 failed, 0 skipped)");
    assert_contains(text, ">1 sample/prompt, bf16, retain</span>");
    assert_contains(text, "#0 B1\xC3\x97" "1: 80.00 GiB peak</title>");
    assert_contains(text, "#0 B1\xC3\x97" "1: 40.00 GiB held between rollouts</title>");
    free(text);
    mrun_free(&m);

    static const uint32_t b5[] = {1, 2, 4, 8, 16}, s4[] = {1, 2, 4, 8}, p5[] = {32, 128, 512, 1024, 2048},
                          r1[] = {64};
    axes hundred = {one_p, 1, one_c, 1, b5, s4, p5, r1, 5, 4, 5, 1, 5};
    unsigned quirks[100] = {[17] = Q_FAILED, [40] = Q_UNSTABLE, [41] = Q_UNSTABLE, [99] = Q_SKIPPED};
    mrun_init(&m, &hundred, quirks, 100);
    text = render(f, &m.base->run, "hundred.html", path);
    check_page(path, text);
    assert_contains(text, "100 cases (98 ok, 1 failed, 1 skipped)");
    assert_contains(text, "Unstable cases (coefficient of variation of total_ms above 5%): #40 (");
    assert_contains(text, "#98 B16\xC3\x97" "8 1024\xE2\x86\x92" "64");
    assert_int_equal(count(text, "<rect class=\"frame\""), 98);
    free(text);
    mrun_free(&m);

    /* 5000 iterations: the page stays small (points, line and markers capped) */
    single.iterations = 5000;
    unsigned noisy[] = {Q_UNSTABLE};
    mrun_init(&m, &single, noisy, 1);
    text = render(f, &m.base->run, "long.html", path);
    check_page(path, text);
    assert_true(strlen(text) < 150000);
    int points = count(text, "<circle class=\"pt\"");
    assert_true(points <= 200);
    assert_int_equal(count(text, "<circle class=\"ptl\""), 0);
    const char *line = strstr(text, "<path class=\"ln k0\"");
    assert_non_null(line);
    int segments = 0;
    for (const char *c = line; *c != '>'; c++) segments += *c == 'L';
    assert_int_equal(segments, 299);
    free(text);
    mrun_free(&m);

    rf_run *r = calloc(1, sizeof *r);
    assert_non_null(r);
    rf_run_init(r, 0);
    r->run.n_cases = 0;
    r->run.cases = NULL;
    text = render(f, &r->run, "empty.html", path);
    check_page(path, text);
    assert_contains(text, "The run has no cases.");
    assert_int_equal(count(text, "<div class=\"chart\">"), 0);
    free(text);

    rf_run_init(r, 0);
    for (uint32_t i = 0; i < RF_N_CASES; i++) {
        bc_case_report *cr = rf_report(r, i);
        cr->status = BC_CASE_FAILED;
        cr->error_code = BC_ERR_DEVICE;
        cr->message = "begin_case: no CUDA device";
        cr->n_iterations = 0;
        cr->values = NULL;
    }
    text = render(f, &r->run, "failed.html", path);
    check_page(path, text);
    assert_contains(text, "Cases #0\xE2\x80\x93#2 failed (device): <span class=\"mono\">begin_case: no CUDA device");
    assert_int_equal(count(text, "<div class=\"chart\">"), 0);
    assert_contains(text, "Nothing to draw");
    free(text);
    free(r);
}

/* Strings that would break the markup, control characters and bytes that
 * are not UTF-8 all come out as text: still well-formed, still no script. */
static void test_hostile_strings(void **state) {
    fixture *f = *state;
    rf_run *r = calloc(1, sizeof *r);
    assert_non_null(r);
    rf_run_init(r, 0);
    r->backend.model = "<script>alert('x')</script> & \"m\" ]]> <!-- -->";
    r->run.hostname = "host\x01\x02\x7f\xff\xfe\xc3(";
    r->run.config_path = "a&b<c>.cfg";
    r->cases[0].precision = "<b>bold</b>";
    r->cases[2].cache_policy = "\xef\xbf\xbe\xed\xa0\x80";
    rf_report(r, 1)->message = "line one\nline two\t<tab> & \"quotes\" 'single' \x1b[31mred\x1b[0m";
    char path[700];
    char *text = render(f, &r->run, "hostile.html", path);
    check_page(path, text);
    assert_null(strstr(text, "<script"));
    assert_null(strstr(text, "\x1b"));
    assert_contains(text, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;m&quot; ]]&gt;");
    assert_contains(text, "host\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD(");
    assert_contains(text, "&lt;b&gt;bold&lt;/b&gt;");
    free(text);
    free(r);
}

/* ------------------------------------------------------------ settings */

static void test_check_settings(void **state) {
    fixture *f = *state;
    rf_plugin p;
    const char *empty[] = {"path="};
    assert_int_equal(rf_load(&p, "html", empty, 1), 0);
    bc_error err = {0};
    assert_int_equal(p.desc->check_settings(&f->host, &p.settings, &err), BC_ERR_SETTING);
    assert_string_equal(err.message, "html: setting path is empty");
    rf_unload(&p);

    const char *bad[] = {"path=/dev/null/r.html"};
    assert_int_equal(rf_load(&p, "html", bad, 1), 0);
    err = (bc_error){0};
    assert_int_not_equal(p.desc->check_settings(&f->host, &p.settings, &err), BC_OK);
    assert_non_null(strstr(err.message, "/dev/null"));
    rf_unload(&p);

    const char *dash[] = {"path=-"};
    assert_int_equal(rf_load(&p, "html", dash, 1), 0);
    err = (bc_error){0};
    assert_int_equal(p.desc->check_settings(&f->host, &p.settings, &err), BC_OK);
    rf_unload(&p);

    /* the defaults */
    assert_int_equal(rf_load(&p, "html", NULL, 0), 0);
    assert_string_equal(bc_setting_at(&p.settings, 0)->s, "benchctl.html");
    assert_string_equal(bc_setting_at(&p.settings, 1)->s, "");
    assert_double_close(bc_setting_at(&p.settings, 2)->f, 0.05, 0.0);
    rf_unload(&p);
}

/* "-" writes the page to standard output; ".gz" compresses it; a title and
 * a threshold from the settings. */
static void test_outputs(void **state) {
    fixture *f = *state;
    rf_run *r = calloc(1, sizeof *r);
    assert_non_null(r);
    rf_run_init(r, 0);
    char path[700];
    char *plain = render(f, &r->run, "plain.html", path);

    char out[700];
    snprintf(out, sizeof out, "%s/stdout.txt", f->dir);
    fflush(stdout);
    int saved = dup(1);
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(saved >= 0 && fd >= 0);
    dup2(fd, 1);
    close(fd);
    const char *dash[] = {"path=-"};
    bc_error err = {0};
    bc_status st = drive_run(f, "html", &r->run, dash, 1, &err);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    assert_int_equal(st, BC_OK);
    char *text = rf_slurp(out);
    assert_non_null(text);
    assert_string_equal(text, plain);
    free(text);

    char gz[720], setting[740];
    snprintf(gz, sizeof gz, "%s/page.html.gz", f->dir);
    snprintf(setting, sizeof setting, "path=%s", gz);
    const char *gz_set[] = {setting};
    assert_int_equal(drive_run(f, "html", &r->run, gz_set, 1, &err), BC_OK);
    text = rf_slurp_gz(gz);
    assert_non_null(text);
    assert_string_equal(text, plain);
    free(text);

    snprintf(setting, sizeof setting, "path=%s/titled.html", f->dir);
    const char *titled[] = {setting, "title=Nightly <run> & more", "unstable_cv=0.0001"};
    assert_int_equal(drive_run(f, "html", &r->run, titled, 3, &err), BC_OK);
    snprintf(path, sizeof path, "%s/titled.html", f->dir);
    text = rf_slurp(path);
    assert_non_null(text);
    assert_contains(text, "<title>Nightly &lt;run&gt; &amp; more</title>");
    assert_contains(text, "Unstable cases (coefficient of variation of total_ms above 0.01%): #0 (");
    free(text);
    free(plain);
    free(r);
}

/* A run with a backends list (a native engine and a Python worker): the
 * case table names each case's backend; the memory chart gives each
 * backend its own chart and axis, titled by what its peak measures (a
 * device peak, or the host peak as the backend measures it), since the
 * native allocator's ~20 MiB and a worker's ~780 MiB RSS measure different
 * things; only the changed backend setting shows in the header. */
static void test_several_backends(void **state) {
    fixture *f = *state;
    mrun m;
    mrun_init(&m, &golden_axes, golden_quirks, 24);
    for (uint32_t i = 0; i < m.n; i++) {
        int worker = i >= m.n / 2;
        m.cases[i].backend = worker ? "transformers" : "native";
        if (worker && m.reports[i].r.memory) { /* the worker's process RSS, ~780 MiB */
            m.reports[i].r.peak_memory_mib = 780.0 + i;
            m.memory[i].host_peak_bytes = (int64_t)((780.0 + i) * 1048576.0);
        } else if (m.reports[i].r.memory) { /* the native allocator's high-water mark, ~20 MiB */
            m.reports[i].r.peak_memory_mib = 20.0 + i * 0.1;
        }
    }
    m.base->backend_value_rows[0].v.i = 2; /* threads=2 changed, shared_prefill at its default */
    char path[700];
    char *text = render(f, &m.base->run, "backends.html", path);
    check_page(path, text);
    assert_contains(text, "<th class=\"num\">#</th><th>backend</th><th class=\"num\">batch</th>");
    assert_contains(text, "<tr><td class=\"num\">0</td><td>native</td><td class=\"num\">1</td>");
    assert_contains(text, "<td class=\"num\">23</td><td>transformers</td>");
    assert_int_equal(count(text, "<td>native</td>"), 12);
    assert_int_equal(count(text, "<td>transformers</td>"), 12);
    /* memory: one chart per backend, each with its own title */
    const char *mem = strstr(text, "<section id=\"memory\">");
    assert_non_null(mem);
    assert_contains(mem, "<h3>Backend <span class=\"mono\">native</span>: peak on the host as this backend measures "
                         "it (host_peak_bytes)</h3>");
    assert_contains(mem, "<h3>Backend <span class=\"mono\">transformers</span>: ");
    const char *native = strstr(mem, "<span class=\"mono\">native</span>"),
               *worker = strstr(mem, "<span class=\"mono\">transformers</span>"), *end = strstr(mem, "</section>");
    assert_true(native && worker && end && native < worker && worker < end);
    assert_int_equal(count(mem, ", backend native</title>") + count(mem, ", backend transformers</title>"), 2);
    /* the native chart holds none of the worker's ~780 MiB points, and the reverse */
    char *native_part = strndup(native, (size_t)(worker - native));
    assert_non_null(native_part);
    assert_int_equal(count(native_part, "MiB peak</title>") > 0, 1);
    assert_int_equal(count(native_part, ": 78"), 0);
    free(native_part);
    /* header: the changed setting, the other behind details */
    assert_contains(text, "fixture \xC2\xB7 <span class=\"mono changed\">threads=2</span> <details class=\"defaults\">"
                          "<summary>1 other setting at its default</summary><span class=\"mono\">shared_prefill=false"
                          "</span></details>");
    free(text);
    mrun_free(&m);
}

/* A replicate distributed run: the ranks section's title shows a real
 * apostrophe (never a double-escaped entity) and the nav bar links it. */
static void test_ranks_section(void **state) {
    fixture *f = *state;
    rf_run *r = calloc(1, sizeof *r);
    assert_non_null(r);
    rf_run_init(r, 0);
    static const bc_rank_info ranks[2] = {{.rank = 0, .host = "h0"},
                                          {.rank = 1, .local_rank = 1,
                                           .host = "h1"}};
    bc_distributed d = {.struct_size = sizeof d, .comm = "mpi", .mode = "replicate", .world_size = 2,
                        .rank_info_size = sizeof(bc_rank_info), .ranks = ranks};
    static const double times[2] = {10.0, 12.5}, tps[2] = {100.0, 80.0}, peak[2] = {5.0, 6.0};
    bc_case_distributed cd = {.struct_size = sizeof cd, .n_ranks = 2, .rank = -1, .slowest_rank = 1,
                              .rank_time_ms = times, .rank_tokens_per_second = tps, .rank_peak_memory_mib = peak};
    r->run.distributed = &d;
    for (uint32_t i = 0; i < RF_N_CASES; i++) rf_report(r, i)->distributed = &cd;
    char path[700];
    char *text = render(f, &r->run, "ranks.html", path);
    check_page(path, text);
    assert_contains(text, "<h2>Ranks: each rank\xE2\x80\x99s time per case</h2>");
    assert_null(strstr(text, "&amp;#8217;"));
    assert_contains(text, "<a href=\"#memory\">Memory</a><a href=\"#ranks\">Ranks</a></nav>");
    assert_contains(text, "<section id=\"ranks\">");
    free(text);
    free(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_golden, setup, teardown),
        cmocka_unit_test_setup_teardown(test_golden_json, setup, teardown),
        cmocka_unit_test_setup_teardown(test_contents, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fixture_variants, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sizes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hostile_strings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_check_settings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_outputs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_several_backends, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ranks_section, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
