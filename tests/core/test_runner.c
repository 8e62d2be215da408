/* test_runner.c: the measurement loop with the fixture backend (testbackend).
 *
 * The backend is loaded from the build tree; its hooks are wrapped with
 * counters (and, where a test asks, with extra measurements) so the tests see
 * exactly what the runner called and derived. A recording reporter (built in
 * this file) checks what reporters receive. */
#define _POSIX_C_SOURCE 200809L /* sigaction */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "bc_test_assert.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "loader.h"
#include "matrix.h"
#include "runner.h"
#include "seam.h"

/* ----------------------------------------------------- wrapped backend */

static bc_backend_ops real;  /* testbackend's hooks */
static struct {
    int begin, end, generate, acquire, release, prepare;
    int stop_at_generate;    /* sets stop_flag on this generate call (0: never) */
    int stop_level;          /* ... to this value (1: finish the iteration, 2: abandon it) */
    int fail_prepare;        /* prepare fails with BC_ERR_IO */
    int add_steps;           /* generate also reports first_token_ms, steps and token counts */
    int static_schedule;     /* ... with every row's token 0 at once (k_row_first_static) */
    int64_t resident;        /* read_memory reports resident_bytes = resident (-1: leave it) */
    const char *last_precision;
    int precision_switches;  /* begin_case saw another precision than the case before */
    uint32_t kill_batch;     /* generate raises SIGKILL in the 2nd measured iteration of such a case */
    uint32_t batch;          /* the running case's batch_size */
    int case_generates;      /* generate calls in the running case */
} calls;
static volatile sig_atomic_t stop_flag;
static const double k_steps_ms[] = {2.0, 4.0, 3.0, 1.0}; /* p50 2.5, p95 4 */
static const int32_t k_step_rows[] = {3, 3, 2, 1};         /* the schedule: rows per decode step */
static const double k_row_first_ms[] = {1.5, 1.5, 2.5};    /* ... each row's token 0 */
static const int32_t k_row_done[] = {4, 2, 1};             /* ... and the step it finished at */
static const double k_row_first_static[] = {1.5, 1.5, 1.5}; /* a static batch: one prefill for every row */

static bc_status w_begin(void *i, const bc_case *c, bc_error *e) {
    calls.begin++;
    if (calls.last_precision && strcmp(calls.last_precision, c->precision) != 0) calls.precision_switches++;
    calls.last_precision = c->precision;
    calls.batch = c->batch_size;
    calls.case_generates = 0;
    return real.begin_case(i, c, e);
}
static void w_end(void *i) { calls.end++; real.end_case(i); }
static bc_status w_generate(void *i, bc_generation_stats *out, bc_error *e) {
    calls.generate++;
    if (calls.kill_batch && calls.batch == calls.kill_batch && ++calls.case_generates == 2) raise(SIGKILL);
    bc_status st = real.generate(i, out, e);
    if (calls.add_steps) {
        out->first_token_ms = 1.5;
        out->decode_step_ms = k_steps_ms;
        out->n_decode_steps = 4;
        out->num_prefill_tokens = 800;
        out->num_decode_tokens = 40;
        out->prefill_forward_ms = 4.0;  /* 200,000 prefill tokens/s */
        out->decode_forward_ms = 10.0;  /* 4,000 decode tokens/s */
        out->prompt_width_tokens = 8;
        out->prompt_min_tokens = 5;
        out->prompt_max_tokens = 8;
        out->step_active_rows = k_step_rows;
        out->schedule_rows = 3;
        out->row_first_token_ms = calls.static_schedule ? k_row_first_static : k_row_first_ms;
        out->row_done_step = k_row_done;
    }
    if (calls.stop_at_generate && calls.generate == calls.stop_at_generate)
        stop_flag = calls.stop_level ? calls.stop_level : 1;
    return st;
}
static bc_status w_acquire(void *i, bc_error *e) { calls.acquire++; return real.cache_acquire(i, e); }
static bc_status w_release(void *i, bc_error *e) { calls.release++; return real.cache_release(i, e); }
static bc_status w_prepare(void *i, bc_error *e) {
    (void)i;
    calls.prepare++;
    if (calls.fail_prepare) return bc_error_set(e, BC_ERR_IO, "cannot map /nonexistent/model.safetensors");
    return BC_OK;
}
static bc_status w_read_memory(void *i, bc_memory_stats *out, bc_error *e) {
    bc_status st = real.read_memory(i, out, e);
    if (calls.resident >= 0) out->resident_bytes = calls.resident;
    return st;
}

typedef struct fixture {
    bc_loader loader;
    bc_plugin backend;               /* copy of testbackend's bc_plugin with wrapped hooks */
    bc_setting_value values[32];     /* testbackend's settings, defaults then overrides */
    bc_settings settings;            /* the view of values */
    bc_backend_info info;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    const char *dirs[] = {BENCHCTL_TEST_FIXTURE_DIR};
    bc_error err = {0};
    if (bc_loader_init(&f->loader, dirs, 1, NULL, 0, &err) != BC_OK) return -1;
    const bc_plugin *p;
    if (bc_loader_load(&f->loader, "testbackend", BC_KIND_BACKEND, NULL, &p, &err) != BC_OK) {
        fprintf(stderr, "%s\n", err.message);
        return -1;
    }
    f->backend = *p;
    real = p->backend;
    f->backend.backend.begin_case = w_begin;
    f->backend.backend.end_case = w_end;
    f->backend.backend.generate = w_generate;
    f->backend.backend.cache_acquire = w_acquire;
    f->backend.backend.cache_release = w_release;
    f->backend.backend.prepare = w_prepare;
    if (real.read_memory) f->backend.backend.read_memory = w_read_memory;
    if (p->desc->n_settings > 32) return -1;
    for (uint32_t i = 0; i < p->desc->n_settings; i++) {
        const bc_setting_desc *d = &p->desc->settings[i];
        f->values[i].i = d->default_int;
        f->values[i].f = d->default_float;
        f->values[i].s = d->default_string ? d->default_string : "";
    }
    f->settings = (bc_settings){sizeof f->settings, p->desc->n_settings, sizeof f->values[0], f->values};
    memset(&calls, 0, sizeof calls);
    calls.resident = -1;
    stop_flag = 0;
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    bc_loader_free(&f->loader);
    free(f);
    return 0;
}

static void set_int(fixture *f, const char *name, int64_t v) {
    for (uint32_t i = 0; i < f->backend.desc->n_settings; i++)
        if (strcmp(f->backend.desc->settings[i].name, name) == 0) {
            f->values[i].i = v;
            return;
        }
    fail_msg("testbackend has no setting %s", name);
}

static void set_str(fixture *f, const char *name, const char *v) {
    for (uint32_t i = 0; i < f->backend.desc->n_settings; i++)
        if (strcmp(f->backend.desc->settings[i].name, name) == 0) {
            f->values[i].s = v;
            return;
        }
    fail_msg("testbackend has no setting %s", name);
}

/* ---------------------------------------------------- recording reporter */

/* One iteration_finished call, as the recorder saw it. */
typedef struct rec_event {
    uint32_t index, position, n_cases, iteration, n_min, n_max;
    int warmup;
    double total_ms, elapsed_ms, rel_ci, eta_s;
} rec_event;

typedef struct rec {
    int opened, closed, destroyed, fail_open;
    uint32_t started_index[64]; /* case.index per case_started, in call order */
    uint32_t n_started;
    double started_eta[64];
    uint32_t finished_index[64];
    uint32_t n_finished;
    int finished_sorted;        /* run->cases in case_finished was in requested order */
    uint32_t closed_index[64];
    uint32_t closed_n;
    bc_case_status closed_status[64];
    rec_event events[512]; /* iteration_finished calls, in order */
    uint32_t n_events;
    int fail_iteration;    /* iteration_finished fails from this call on (1-based; 0: never) */
    uint32_t stop_at_event; /* sets stop_flag = 2 at this call (1-based; 0: never) */
    uint32_t stop_delay_ms; /* ... after this long: an isolated child is then in its next iteration */
} rec;

static rec recs[2];

static bc_status r_open(const bc_host *h, const bc_settings *v, const bc_run_report *run, void **out, bc_error *e) {
    (void)h;
    rec *r = &recs[bc_setting_at(v, 0)->i];
    assert_int_equal(run->n_cases, 0);
    assert_int_equal(run->n_fields, BC_N_FIELDS);
    assert_int_equal(run->n_stats, BC_N_STATS);
    assert_int_equal(run->case_report_size, sizeof(bc_case_report));
    assert_int_equal(bc_run_field_index(run, "time_to_first_token_ms"), BC_FIELD_TIME_TO_FIRST_TOKEN_MS);
    assert_int_equal(bc_run_stat_index(run, "p99"), BC_STAT_P99);
    assert_int_equal(bc_run_stat_index(run, "p42"), -1);
    assert_string_equal(run->backend->device, "cpu");
    if (r->fail_open) return bc_error_set(e, BC_ERR_IO, "cannot write /nonexistent/out.json");
    r->opened++;
    r->finished_sorted = 1;
    *out = r;
    return BC_OK;
}
static void r_started(void *inst, const bc_case *c, uint32_t i, uint32_t n, double eta_s) {
    rec *r = inst;
    assert_int_equal(i, r->n_started);
    assert_true(i < n);
    r->started_eta[r->n_started] = eta_s;
    r->started_index[r->n_started++] = c->index;
}
static bc_status r_finished(void *inst, const bc_run_report *run, const bc_case_report *cr, bc_error *e) {
    (void)e;
    rec *r = inst;
    r->finished_index[r->n_finished++] = cr->c->index;
    assert_int_equal(run->n_cases, r->n_finished);
    for (uint32_t k = 1; k < run->n_cases; k++)
        if (bc_run_case(run, k - 1)->c->index >= bc_run_case(run, k)->c->index) r->finished_sorted = 0;
    return BC_OK;
}
static bc_status r_close(void *inst, const bc_run_report *run, bc_error *e) {
    (void)e;
    rec *r = inst;
    r->closed++;
    r->closed_n = run->n_cases;
    for (uint32_t k = 0; k < run->n_cases; k++) {
        r->closed_index[k] = bc_run_case(run, k)->c->index;
        r->closed_status[k] = bc_run_case(run, k)->status;
    }
    return BC_OK;
}
static void r_destroy(void *inst) { ((rec *)inst)->destroyed++; }
static bc_status r_iteration(void *inst, const bc_run_report *run, const bc_iteration_event *ev, bc_error *e) {
    rec *r = inst;
    assert_true(BC_HAS(ev, bc_iteration_event, eta_s));
    assert_int_equal(run->n_fields, BC_N_FIELDS);
    if (r->n_events < 512)
        r->events[r->n_events] = (rec_event){.index = ev->c->index, .position = ev->position,
                                             .n_cases = ev->n_cases, .iteration = ev->iteration, .n_min = ev->n_min,
                                             .n_max = ev->n_max, .warmup = ev->warmup,
                                             .total_ms = ev->values[BC_FIELD_TOTAL_MS],
                                             .elapsed_ms = ev->case_elapsed_ms, .rel_ci = ev->rel_ci,
                                             .eta_s = ev->eta_s};
    r->n_events++;
    if (r->stop_at_event && r->n_events == r->stop_at_event) {
        struct timespec delay = {.tv_sec = r->stop_delay_ms / 1000, .tv_nsec = (r->stop_delay_ms % 1000) * 1000000L};
        while (nanosleep(&delay, &delay) != 0) continue;
        stop_flag = 2; /* two signals at once */
    }
    if (r->fail_iteration && r->n_events >= (uint32_t)r->fail_iteration)
        return bc_error_set(e, BC_ERR_IO, "cannot draw on /dev/full");
    return BC_OK;
}

static const bc_plugin_desc rec_desc = {BC_PLUGIN_DESC_HEADER, .kind = BC_KIND_REPORTER, .name = "recorder",
                                        .version = "0"};

/* A recorder's settings: one int, the index into recs. */
static bc_setting_value rec_which[2] = {{.i = 0}, {.i = 1}};
static const bc_settings rec_settings[2] = {{sizeof(bc_settings), 1, sizeof(bc_setting_value), &rec_which[0]},
                                            {sizeof(bc_settings), 1, sizeof(bc_setting_value), &rec_which[1]}};

static bc_plugin make_recorder(void) {
    bc_plugin p = {0};
    p.desc = &rec_desc;
    p.reporter = (bc_reporter_ops){.struct_size = sizeof(bc_reporter_ops), .open = r_open, .case_started = r_started,
                                   .case_finished = r_finished, .close = r_close, .destroy = r_destroy,
                                   .iteration_finished = r_iteration};
    return p;
}

static char last_error[700];
static int n_errors;
static void on_error(void *ctx, const char *msg) {
    (void)ctx;
    n_errors++;
    snprintf(last_error, sizeof last_error, "%s", msg);
}

/* ------------------------------------------------------------- helpers */

typedef struct matrix {
    bc_case *cases;
    size_t n;
} matrix;

static int release_yes(const bc_case *c) { (void)c; return 1; }
static int release_no(const bc_case *c) { (void)c; return 0; }
static const bc_cache_ops release_ops = {.struct_size = sizeof(bc_cache_ops), .release_after_rollout = release_yes};
static const bc_cache_ops retain_ops = {.struct_size = sizeof(bc_cache_ops), .release_after_rollout = release_no};
static const bc_sampling greedy = {.struct_size = sizeof(bc_sampling), .top_p = 1.0, .seed = 1234};

/* batches x samples {1, 2} x one prompt and response length, fp32 (and bf16
 * when n_precisions is 2), retain (and release when with_release). */
static matrix build_mixed(const uint32_t *batches, size_t nb, int with_release, size_t n_precisions) {
    static const char *const precisions[] = {"fp32", "bf16"};
    static const char *const policies[] = {"retain", "release"};
    static const bc_cache_ops *const ops[] = {&retain_ops, &release_ops};
    static const uint32_t samples[] = {1, 2};
    static const uint32_t prompts[] = {8};
    static const uint32_t responses[] = {4};
    bc_matrix_axes a = {.precisions = precisions, .n_precisions = n_precisions, .cache_policies = policies,
                        .cache_ops = ops, .n_cache_policies = with_release ? 2 : 1,
                        .batch_sizes = batches, .n_batch_sizes = nb, .samples_per_prompt = samples,
                        .n_samples_per_prompt = 2, .prompt_lengths = prompts, .n_prompt_lengths = 1,
                        .response_lengths = responses, .n_response_lengths = 1, .sampling = &greedy};
    matrix m;
    bc_error err = {0};
    assert_int_equal(bc_matrix_build(&a, &m.cases, &m.n, &err), BC_OK);
    return m;
}

static matrix build(const uint32_t *batches, size_t nb, int with_release) {
    return build_mixed(batches, nb, with_release, 1);
}

static bc_runner_config config(fixture *f, const matrix *m, uint32_t warmup, uint32_t iterations) {
    bc_runner_config c = {0};
    c.backend = &f->backend;
    c.cases = m->cases;
    c.n_cases = m->n;
    c.warmup = warmup;
    c.iterations = iterations;
    c.stop = &stop_flag;
    c.on_error = on_error;
    return c;
}

/* Creates the backend instance (as context.c does), runs c, destroys it. */
static bc_status run(fixture *f, bc_runner_config *c, bc_run_result *res, bc_error *err) {
    void *inst = NULL;
    bc_status st = f->backend.backend.create(&f->backend.host, &f->settings, &inst, err);
    if (st != BC_OK) fail_msg("create: %s", err->message);
    f->info = (bc_backend_info){.struct_size = sizeof f->info};
    if ((st = f->backend.backend.describe(inst, &f->info, err)) != BC_OK) fail_msg("describe: %s", err->message);
    c->backend_instance = inst;
    c->run.backend = &f->info;
    st = bc_run(c, res, err);
    f->backend.backend.destroy(inst);
    return st;
}

static double value(const bc_case_report *cr, uint32_t it, bc_field f) {
    return cr->values[(size_t)it * BC_N_FIELDS + f];
}

static double stat(const bc_case_report *cr, bc_field f, int s) { return cr->stats[(size_t)f * BC_N_STATS + (size_t)s]; }

static void execution_order(const fixture *f, const matrix *m, size_t *order) {
    bc_matrix_execution_order(m->cases, m->n, bc_matrix_rebuild_axes(f->backend.backend.rebuild_axes), order);
}

/* --------------------------------------------------------------- tests */

/* Warmup iterations run but are not recorded; every measured one is. */
static void test_warmup_and_iterations(void **state) {
    fixture *f = *state;
    set_int(f, "generate_us", 1);
    const uint32_t batches[] = {1, 3};
    matrix m = build(batches, 2, 0);
    bc_runner_config c = config(f, &m, 2, 3);
    bc_run_result res;
    bc_error err = {0};
    assert_int_equal(run(f, &c, &res, &err), BC_OK);
    assert_int_equal(bc_run_exit_status(&res), 0);
    assert_int_equal(calls.generate, (int)m.n * (2 + 3));
    assert_int_equal(calls.begin, (int)m.n);
    assert_int_equal(calls.end, (int)m.n);
    for (size_t k = 0; k < m.n; k++) {
        const bc_case_report *cr = &res.cases[k];
        assert_int_equal(cr->status, BC_CASE_OK);
        assert_string_equal(cr->message, "");
        assert_int_equal(cr->n_iterations, 3);
        assert_int_equal(cr->stop_reason, BC_STOP_FIXED);
        assert_nan(cr->total_ms_rel_ci); /* fewer than 6 iterations */
        assert_double_equal(stat(cr, BC_FIELD_TOTAL_MS, BC_STAT_N), 3, 0);
        uint64_t rows = bc_case_effective_batch(cr->c);
        for (uint32_t it = 0; it < 3; it++) {
            assert_double_equal(value(cr, it, BC_FIELD_NUM_GENERATED_TOKENS), (double)(rows * 4), 0);
            double sum = value(cr, it, BC_FIELD_PROMPT_EXPANSION_MS) + value(cr, it, BC_FIELD_GENERATION_MS) +
                         value(cr, it, BC_FIELD_POST_PROCESSING_MS);
            assert_double_equal(value(cr, it, BC_FIELD_TOTAL_MS), sum, 1e-9);
            assert_double_equal(value(cr, it, BC_FIELD_TOKENS_PER_SECOND),
                                rows * 4 / (value(cr, it, BC_FIELD_GENERATION_MS) / 1000.0), 1e-6);
            assert_double_equal(value(cr, it, BC_FIELD_NUM_DECODE_FORWARDS), 3, 0);
            double overhead = value(cr, it, BC_FIELD_GENERATION_MS) - value(cr, it, BC_FIELD_PREFILL_FORWARD_MS) -
                              value(cr, it, BC_FIELD_DECODE_FORWARD_MS);
            assert_double_equal(value(cr, it, BC_FIELD_GENERATION_OVERHEAD_MS), overhead, 1e-9);
            assert_nan(value(cr, it, BC_FIELD_CACHE_ACQUIRE_MS));
            assert_nan(value(cr, it, BC_FIELD_CACHE_RELEASE_MS));
        }
        assert_int_equal(cr->returned_response_length, 4);
        /* testbackend's host peak: weights + KV + workspace, which grow with the effective batch */
        int64_t expect = (1 << 20) + (int64_t)rows * (8 + 4) * 256 + (int64_t)rows * 8 * 4;
        assert_int_equal(cr->memory->host_peak_bytes, expect);
        assert_double_equal(cr->peak_memory_mib, (double)expect / (1024.0 * 1024.0), 1e-12);
        /* a real peak RSS where the kernel lets the runner reset it */
        if (access("/proc/self/clear_refs", W_OK) == 0) assert_true(cr->peak_rss_bytes > 4096);
        else assert_int_equal(cr->peak_rss_bytes, -1);
        assert_true(cr->wall_ms > 0);
    }
    bc_run_result_free(&res);
    free(m.cases);
}

/* A backend's declared metrics (testbackend's metrics = "declare", through
 * more_metrics and read_metrics) are columns after the host's, with their
 * descriptors: a per-iteration one in every measured row, a per-case one
 * in the last measured row only (n = 1); the same in an isolated case,
 * whose rows come over the pipe. */
static void test_declared_metrics(void **state) {
    fixture *f = *state;
    set_str(f, "metrics", "declare");
    const uint32_t batches[] = {2};
    matrix m = build(batches, 1, 0);
    for (int isolated = 0; isolated < 2; isolated++) {
        bc_runner_config c = config(f, &m, 1, 3);
        c.isolation = isolated;
        bc_run_result res;
        bc_error err = {0};
        assert_int_equal(run(f, &c, &res, &err), BC_OK);
        assert_int_equal(res.n_fields, BC_N_FIELDS + 2);
        assert_string_equal(res.fields.names[BC_FIELD_TOTAL_MS], "total_ms");
        assert_string_equal(res.fields.descs[BC_FIELD_TOTAL_MS].unit, "ms");
        assert_int_equal(res.fields.descs[BC_FIELD_TOKENS_PER_SECOND].better, BC_BETTER_HIGHER);
        const uint32_t kv = BC_N_FIELDS, calls_col = BC_N_FIELDS + 1;
        assert_string_equal(res.fields.names[kv], "tb_kv_rows_written");
        assert_string_equal(res.fields.descs[kv].unit, "rows");
        assert_string_equal(res.fields.names[calls_col], "tb_generates");
        assert_int_equal(res.fields.descs[calls_col].scope, BC_METRIC_PER_CASE);
        for (size_t k = 0; k < m.n; k++) {
            const bc_case_report *cr = &res.cases[k];
            assert_int_equal(cr->status, BC_CASE_OK);
            assert_int_equal(cr->n_iterations, 3);
            const double rows = (double)bc_case_effective_batch(cr->c);
            for (uint32_t it = 0; it < 3; it++) {
                const double *row = cr->values + (size_t)it * res.n_fields;
                assert_double_equal(row[kv], rows * 4, 0);
                assert_true(isfinite(row[BC_FIELD_TOTAL_MS]));
                if (it < 2) assert_nan(row[calls_col]);
                else assert_double_equal(row[calls_col], 4, 0); /* 1 warmup + 3 measured */
            }
            const double *st = cr->stats + (size_t)calls_col * BC_N_STATS;
            assert_double_equal(st[BC_STAT_N], 1, 0);
            assert_double_equal(st[BC_STAT_MEAN], 4, 0);
            assert_double_equal(cr->stats[(size_t)kv * BC_N_STATS + BC_STAT_N], 3, 0);
        }
        bc_run_result_free(&res);
    }
    free(m.cases);
}

/* A declared metric's value that is not finite fails the case, naming the
 * metric; one that contradicts a host field's descriptor stops the run
 * before anything runs. */
static void test_declared_metric_refused(void **state) {
    fixture *f = *state;
    set_str(f, "metrics", "inf");
    const uint32_t batches[] = {1};
    matrix m = build(batches, 1, 0);
    bc_runner_config c = config(f, &m, 0, 2);
    bc_run_result res;
    bc_error err = {0};
    assert_int_equal(run(f, &c, &res, &err), BC_OK);
    for (size_t k = 0; k < m.n; k++) {
        assert_int_equal(res.cases[k].status, BC_CASE_FAILED);
        assert_non_null(strstr(res.cases[k].message, "read_metrics: metric 'tb_kv_rows_written' is inf"));
    }
    assert_int_equal(bc_run_exit_status(&res), 3);
    bc_run_result_free(&res);

    set_str(f, "metrics", "clash");
    c = config(f, &m, 0, 2);
    assert_int_equal(run(f, &c, &res, &err), BC_ERR_INVALID);
    assert_non_null(strstr(err.message, "backend 'testbackend': metric 'occupancy' (percent, higher is better"));
    assert_non_null(strstr(err.message, "already a field in 1"));
    bc_run_result_free(&res);

    set_str(f, "metrics", "own");
    c = config(f, &m, 0, 2);
    assert_int_equal(run(f, &c, &res, &err), BC_ERR_INVALID);
    assert_non_null(strstr(err.message, "metric 'total_ms' is a field the host measures itself"));
    bc_run_result_free(&res);
    free(m.cases);
}

/* Fields the backend does not measure stay NaN, in values and stats. */
static void test_unmeasured_fields_stay_nan(void **state) {
    fixture *f = *state;
    set_int(f, "measure_forwards", 0);
    const uint32_t batches[] = {2};
    matrix m = build(batches, 1, 0);
    bc_runner_config c = config(f, &m, 1, 2);
    bc_run_result res;
    bc_error err = {0};
    assert_int_equal(run(f, &c, &res, &err), BC_OK);
    const bc_field unmeasured[] = {BC_FIELD_PREFILL_FORWARD_MS, BC_FIELD_DECODE_FORWARD_MS,
                                   BC_FIELD_GENERATION_OVERHEAD_MS, BC_FIELD_NUM_DECODE_FORWARDS,
                                   BC_FIELD_CACHE_ACQUIRE_MS, BC_FIELD_CACHE_RELEASE_MS};
    for (size_t k = 0; k < m.n; k++) {
        const bc_case_report *cr = &res.cases[k];
        assert_int_equal(cr->n_iterations, 2);
        for (size_t u = 0; u < sizeof unmeasured / sizeof *unmeasured; u++) {
            for (uint32_t it = 0; it < 2; it++) assert_nan(value(cr, it, unmeasured[u]));
            assert_double_equal(stat(cr, unmeasured[u], BC_STAT_N), 0, 0);
            assert_nan(stat(cr, unmeasured[u], BC_STAT_MEAN));
            assert_nan(stat(cr, unmeasured[u], BC_STAT_P99));
        }
        assert_double_equal(stat(cr, BC_FIELD_GENERATION_MS, BC_STAT_N), 2, 0);
    }
    bc_run_result_free(&res);
    free(m.cases);
}

/* A failing case is reported and the run goes on; exit status 3. */
static void test_failed_case_continues(void **state) {
    fixture *f = *state;
    set_int(f, "fail_on_batch", 2);
    const uint32_t batches[] = {1, 2, 4};
    matrix m = build(batches, 3, 0);
    bc_runner_config c = config(f, &m, 1, 2);
    bc_run_result res;
    bc_error err = {0};
    assert_int_equal(run(f, &c, &res, &err), BC_OK);
    assert_int_equal(res.n_failed, 2); /* batch 2 with samples 1 and 2 */
    assert_int_equal(bc_run_exit_status(&res), 3);
    assert_int_equal(calls.begin, (int)m.n);
    assert_int_equal(calls.end, (int)m.n);
    for (size_t k = 0; k < m.n; k++) {
        const bc_case_report *cr = &res.cases[k];
        if (cr->c->batch_size == 2) {
            assert_int_equal(cr->status, BC_CASE_FAILED);
            assert_int_equal(cr->stop_reason, BC_STOP_FAILED);
            assert_non_null(strstr(cr->message, "generate: "));
            assert_non_null(strstr(cr->message, "batch_size 2"));
            assert_int_equal(cr->n_iterations, 0);
        } else {
            assert_int_equal(cr->status, BC_CASE_OK);
            assert_int_equal(cr->n_iterations, 2);
        }
    }
    bc_run_result_free(&res);

    /* failing in begin_case: end_case is still called */
    memset(&calls, 0, sizeof calls);
    set_str(f, "fail_in", "begin_case");
    assert_int_equal(run(f, &c, &res, &err), BC_OK);
    assert_int_equal(res.n_failed, 2);
    assert_int_equal(calls.end, (int)m.n);
    for (size_t k = 0; k < m.n; k++)
        if (res.cases[k].c->batch_size == 2) assert_non_null(strstr(res.cases[k].message, "begin_case: "));
    bc_run_result_free(&res);
    free(m.cases);
}

/* case_started in execution order, case_finished with finished cases in
 * requested order, close with every case in requested order. */
static void test_reporter_order(void **state) {
    fixture *f = *state;
    memset(recs, 0, sizeof recs);
    const uint32_t batches[] = {1, 4, 2};
    matrix m = build(batches, 3, 1); /* 2 policies x 3 batches x 2 samples = 12 cases */
    bc_plugin rp = make_recorder();
    bc_runner_reporter reps[2] = {{&rp, &rec_settings[0], NULL}, {&rp, &rec_settings[1], NULL}};
    bc_runner_config c = config(f, &m, 0, 1);
    c.reporters = reps;
    c.n_reporters = 2;
    bc_run_result res;
    bc_error err = {0};
    assert_int_equal(run(f, &c, &res, &err), BC_OK);
    size_t order[12];
    execution_order(f, &m, order);
    for (int r = 0; r < 2; r++) {
        assert_int_equal(recs[r].opened, 1);
        assert_int_equal(recs[r].closed, 1);
        assert_int_equal(recs[r].destroyed, 1);
        assert_int_equal(recs[r].n_started, m.n);
        assert_int_equal(recs[r].n_finished, m.n);
        assert_true(recs[r].finished_sorted);
        assert_nan(recs[r].started_eta[0]);
        assert_true(recs[r].started_eta[1] >= 0);
        for (size_t i = 0; i < m.n; i++) {
            assert_int_equal(recs[r].started_index[i], order[i]);
            assert_int_equal(recs[r].finished_index[i], order[i]);
            assert_int_equal(recs[r].closed_index[i], i);
        }
    }
    /* the first executed case has the largest effective batch */
    assert_int_equal(bc_case_effective_batch(&m.cases[order[0]]), 8);
    bc_run_result_free(&res);
    free(m.cases);
}

/* release: cache_release timed every iteration, cache_acquire timed whenever
 * the previous iteration released; retain: both NaN. */
static void test_cache_policy_timings(void **state) {
    fixture *f = *state;
    const uint32_t batches[] = {2};
    matrix m = build(batches, 1, 1); /* retain x2, release x2 */
    bc_runner_config c = config(f, &m, 0, 3);
    bc_run_result res;
    bc_error err = {0};
    assert_int_equal(run(f, &c, &res, &err), BC_OK);
    assert_int_equal(bc_run_exit_status(&res), 0);
    for (size_t k = 0; k < m.n; k++) {
        const bc_case_report *cr = &res.cases[k];
        assert_int_equal(cr->status, BC_CASE_OK);
        for (uint32_t it = 0; it < 3; it++) {
            double acq = value(cr, it, BC_FIELD_CACHE_ACQUIRE_MS), rel = value(cr, it, BC_FIELD_CACHE_RELEASE_MS);
            if (cr->c->release_cache) {
                assert_true(rel >= 0);
                if (it == 0) assert_nan(acq); /* no warmup: nothing released before it */
                else assert_true(acq >= 0);
            } else {
                assert_nan(acq);
                assert_nan(rel);
            }
        }
    }
    assert_int_equal(calls.release, 2 * 3);
    assert_int_equal(calls.acquire, 2 * 2);
    bc_run_result_free(&res);

    /* with warmup the first measured iteration acquires too */
    memset(&calls, 0, sizeof calls);
    c.warmup = 1;
    assert_int_equal(run(f, &c, &res, &err), BC_OK);
    for (size_t k = 0; k < m.n; k++)
        if (res.cases[k].c->release_cache) assert_true(value(&res.cases[k], 0, BC_FIELD_CACHE_ACQUIRE_MS) >= 0);
    assert_int_equal(calls.acquire, 2 * 3);
    bc_run_result_free(&res);
    free(m.cases);
}

/* A stop request finishes the iteration, skips the rest, and still closes
 * the reporters with every case. */
static void test_interrupt(void **state) {
    fixture *f = *state;
    memset(recs, 0, sizeof recs);
    const uint32_t batches[] = {1, 2, 3};
    matrix m = build(batches, 3, 0); /* 6 cases */
    calls.stop_at_generate = 4;      /* case 2 (execution order), measured iteration 2 */
    bc_plugin rp = make_recorder();
    bc_runner_reporter rep = {&rp, &rec_settings[0], NULL};
    bc_runner_config c = config(f, &m, 0, 3);
    c.reporters = &rep;
    c.n_reporters = 1;
    bc_run_result res;
    bc_error err = {0};
    assert_int_equal(run(f, &c, &res, &err), BC_OK);
    assert_int_equal(bc_run_exit_status(&res), 130);
    assert_int_equal(calls.generate, 4);
    size_t order[6];
    execution_order(f, &m, order);
    assert_int_equal(res.cases[order[0]].status, BC_CASE_OK);
    assert_int_equal(res.cases[order[0]].n_iterations, 3);
    assert_int_equal(res.cases[order[0]].stop_reason, BC_STOP_FIXED);
    assert_int_equal(res.cases[order[1]].status, BC_CASE_SKIPPED);
    assert_int_equal(res.cases[order[1]].n_iterations, 1);
    assert_int_equal(res.cases[order[1]].stop_reason, BC_STOP_INTERRUPTED);
    assert_string_equal(res.cases[order[1]].message, "interrupted after 1 of 3 measured iterations");
    for (size_t i = 2; i < 6; i++) {
        assert_int_equal(res.cases[order[i]].status, BC_CASE_SKIPPED);
        assert_int_equal(res.cases[order[i]].n_iterations, 0);
        assert_int_equal(res.cases[order[i]].stop_reason, BC_STOP_NONE); /* never started */
    }
    assert_int_equal(recs[0].closed, 1);
    assert_int_equal(recs[0].closed_n, 6);
    assert_int_equal(recs[0].n_finished, 2);
    assert_int_equal(res.n_skipped, 5);
    bc_run_result_free(&res);
    free(m.cases);
}

/* One reporter failing to open is reported, with where the config names it;
 * the other still gets everything. */
static void test_reporter_failure_isolated(void **state) {
    fixture *f = *state;
    memset(recs, 0, sizeof recs);
    n_errors = 0;
    recs[0].fail_open = 1;
    const uint32_t batches[] = {1};
    matrix m = build(batches, 1, 0);
    bc_plugin rp = make_recorder();
    bc_runner_reporter reps[2] = {{&rp, &rec_settings[0], "bench.cfg:9"}, {&rp, &rec_settings[1], NULL}};
    bc_runner_config c = config(f, &m, 0, 1);
    c.reporters = reps;
    c.n_reporters = 2;
    bc_run_result res;
    bc_error err = {0};
    assert_int_equal(run(f, &c, &res, &err), BC_OK);
    assert_int_equal(n_errors, 1);
    assert_non_null(strstr(last_error, "bench.cfg:9: reporter 'recorder': open: cannot write"));
    assert_int_equal(recs[0].closed, 0);
    assert_int_equal(recs[1].closed, 1);
    assert_int_equal(recs[1].closed_n, m.n);
    assert_int_equal(bc_run_exit_status(&res), 1);
    bc_run_result_free(&res);
    free(m.cases);
}

/* A precision the backend has no kernels for fails that case only. */
static void test_unsupported_precision(void **state) {
    fixture *f = *state;
    const uint32_t batches[] = {1};
    matrix m = build(batches, 1, 0);
    m.cases[1].precision = "int3";
    bc_runner_config c = config(f, &m, 0, 1);
    bc_run_result res;
    bc_error err = {0};
    assert_int_equal(run(f, &c, &res, &err), BC_OK);
    assert_int_equal(res.cases[0].status, BC_CASE_OK);
    assert_int_equal(res.cases[1].status, BC_CASE_FAILED);
    assert_non_null(strstr(res.cases[1].message, "begin_case: testbackend has no kernels for precision 'int3'"));
    bc_run_result_free(&res);
    free(m.cases);
}

/* The fields derived from what generate reports: time to first token,
 * decode ms per token (p50/p95 over the steps), prefill and decode tokens/s;
 * the prompt shape as it ran; memory held between rollouts. */
static void test_derived_fields(void **state) {
    fixture *f = *state;
    calls.add_steps = 1;
    calls.resident = 12345;
    const uint32_t batches[] = {1};
    matrix m = build(batches, 1, 0);
    bc_runner_config c = config(f, &m, 0, 2);
    bc_run_result res;
    bc_error err = {0};
    assert_int_equal(run(f, &c, &res, &err), BC_OK);
    for (size_t k = 0; k < m.n; k++) {
        const bc_case_report *cr = &res.cases[k];
        assert_int_equal(cr->status, BC_CASE_OK);
        for (uint32_t it = 0; it < 2; it++) {
            assert_double_equal(value(cr, it, BC_FIELD_TIME_TO_FIRST_TOKEN_MS),
                                value(cr, it, BC_FIELD_PROMPT_EXPANSION_MS) + 1.5, 1e-9);
            assert_double_equal(value(cr, it, BC_FIELD_DECODE_MS_PER_TOKEN_P50), 2.5, 0);
            assert_double_equal(value(cr, it, BC_FIELD_DECODE_MS_PER_TOKEN_P95), 4.0, 0);
            assert_double_equal(value(cr, it, BC_FIELD_PREFILL_TOKENS_PER_SECOND), 200000.0, 1e-6);
            assert_double_equal(value(cr, it, BC_FIELD_DECODE_TOKENS_PER_SECOND), 4000.0, 1e-9);
        }
        assert_double_equal(stat(cr, BC_FIELD_DECODE_MS_PER_TOKEN_P50, BC_STAT_MEAN), 2.5, 0);
        assert_double_equal(stat(cr, BC_FIELD_DECODE_MS_PER_TOKEN_P50, BC_STAT_CV), 0.0, 0);
        assert_int_equal(cr->prompt_width_tokens, 8);
        assert_int_equal(cr->prompt_min_tokens, 5);
        assert_int_equal(cr->prompt_max_tokens, 8);
        assert_int_equal(cr->held_between_rollouts_bytes, 12345);
        assert_int_equal(cr->memory->resident_bytes, 12345);
        /* the schedule: the host's copy of the last rollout's */
        assert_non_null(cr->schedule);
        assert_int_equal(cr->schedule->n_steps, 4);
        assert_int_equal(cr->schedule->n_rows, 3);
        assert_true(cr->schedule->step_active_rows != k_step_rows);
        assert_memory_equal(cr->schedule->step_active_rows, k_step_rows, sizeof k_step_rows);
        assert_memory_equal(cr->schedule->row_done_step, k_row_done, sizeof k_row_done);
        assert_double_equal(cr->schedule->row_first_token_ms[2], 2.5, 0);
    }
    bc_run_result_free(&res);

    /* without them: NaN and -1, never invented */
    calls.add_steps = 0;
    calls.resident = -1;
    assert_int_equal(run(f, &c, &res, &err), BC_OK);
    const bc_case_report *cr = &res.cases[0];
    if (!BC_HAS(&(bc_generation_stats){.struct_size = sizeof(bc_generation_stats)}, bc_generation_stats,
                first_token_ms))
        fail_msg("bc_generation_stats lacks first_token_ms");
    for (uint32_t it = 0; it < 2; it++) {
        assert_nan(value(cr, it, BC_FIELD_DECODE_MS_PER_TOKEN_P50));
        assert_nan(value(cr, it, BC_FIELD_DECODE_MS_PER_TOKEN_P95));
    }
    assert_null(cr->schedule);
    bc_run_result_free(&res);
    free(m.cases);
}

/* The row fields from a known schedule (rowlat.h), E = prompt_expansion_ms:
 * rows' token 0 at 1.5, 1.5, 2.5 ms (the third joined later): ttft p50
 * E + 1.5, p90 and p99 E + 2.5, e2e and tpot unknown. A static batch
 * (every token 0 at 1.5 ms), steps 2, 4, 3, 1 ms, rows done after 4, 2, 1
 * steps: e2e E + 1.5 + 10, 6, 2 (p50 E + 7.5, p90 = p99 E + 11.5), tpot
 * 10/4, 6/2, 2/1 (p50 2.5, p90 = p99 3). rows_per_second = the case's rows
 * over total_ms, schedule or not. */
static void test_row_fields(void **state) {
    fixture *f = *state;
    calls.add_steps = 1;
    calls.resident = -1;
    const uint32_t batches[] = {1};
    matrix m = build(batches, 1, 0);
    bc_runner_config c = config(f, &m, 0, 2);
    for (int pass = 0; pass < 3; pass++) {
        calls.static_schedule = pass == 1;
        calls.add_steps = pass < 2;
        bc_run_result res;
        bc_error err = {0};
        assert_int_equal(run(f, &c, &res, &err), BC_OK);
        for (size_t k = 0; k < m.n; k++) {
            const bc_case_report *cr = &res.cases[k];
            assert_int_equal(cr->status, BC_CASE_OK);
            for (uint32_t it = 0; it < 2; it++) {
                const double e = value(cr, it, BC_FIELD_PROMPT_EXPANSION_MS);
                assert_double_equal(value(cr, it, BC_FIELD_ROWS_PER_SECOND),
                                    (double)bc_case_effective_batch(&m.cases[k]) * 1000.0 /
                                        value(cr, it, BC_FIELD_TOTAL_MS),
                                    1e-9);
                if (pass == 2) { /* no schedule: only rows_per_second */
                    for (int fld = BC_FIELD_ROW_TTFT_MS_P50; fld <= BC_FIELD_ROW_E2E_MS_P99; fld++)
                        assert_nan(value(cr, it, (bc_field)fld));
                    continue;
                }
                assert_double_equal(value(cr, it, BC_FIELD_ROW_TTFT_MS_P50), e + 1.5, 1e-9);
                if (pass == 0) {
                    assert_double_equal(value(cr, it, BC_FIELD_ROW_TTFT_MS_P90), e + 2.5, 1e-9);
                    assert_double_equal(value(cr, it, BC_FIELD_ROW_TTFT_MS_P99), e + 2.5, 1e-9);
                    for (int fld = BC_FIELD_ROW_TPOT_MS_P50; fld <= BC_FIELD_ROW_E2E_MS_P99; fld++)
                        assert_nan(value(cr, it, (bc_field)fld));
                    continue;
                }
                assert_double_equal(value(cr, it, BC_FIELD_ROW_TTFT_MS_P99), e + 1.5, 1e-9);
                assert_double_equal(value(cr, it, BC_FIELD_ROW_E2E_MS_P50), e + 7.5, 1e-9);
                assert_double_equal(value(cr, it, BC_FIELD_ROW_E2E_MS_P90), e + 11.5, 1e-9);
                assert_double_equal(value(cr, it, BC_FIELD_ROW_E2E_MS_P99), e + 11.5, 1e-9);
                assert_double_equal(value(cr, it, BC_FIELD_ROW_TPOT_MS_P50), 2.5, 1e-12);
                assert_double_equal(value(cr, it, BC_FIELD_ROW_TPOT_MS_P90), 3.0, 1e-12);
                assert_double_equal(value(cr, it, BC_FIELD_ROW_TPOT_MS_P99), 3.0, 1e-12);
            }
            if (pass == 1) /* and across the iterations: the statistics of each row field */
                assert_double_equal(stat(cr, BC_FIELD_ROW_TPOT_MS_P50, BC_STAT_MEAN), 2.5, 1e-12);
        }
        bc_run_result_free(&res);
    }
    calls.static_schedule = calls.add_steps = 0;
    free(m.cases);
}

/* A prepare that fails means the backend could not start: bc_run returns
 * the error, no reporter is opened and no case begins. */
static void test_prepare_failure(void **state) {
    fixture *f = *state;
    memset(recs, 0, sizeof recs);
    calls.fail_prepare = 1;
    const uint32_t batches[] = {1, 2};
    matrix m = build(batches, 2, 0);
    bc_plugin rp = make_recorder();
    bc_runner_reporter rep = {&rp, &rec_settings[0], NULL};
    bc_runner_config c = config(f, &m, 0, 1);
    c.reporters = &rep;
    c.n_reporters = 1;
    c.backend_where = "bench.cfg:3";
    bc_run_result res;
    bc_error err = {0};
    assert_int_equal(run(f, &c, &res, &err), BC_ERR_IO);
    assert_non_null(strstr(err.message, "bench.cfg:3: backend 'testbackend' could not start: prepare: cannot map"));
    assert_int_equal(calls.prepare, 1);
    assert_int_equal(calls.begin, 0);
    assert_int_equal(recs[0].opened, 0);
    bc_run_result_free(&res);

    /* and when it works it runs once, before the first case */
    calls.fail_prepare = 0;
    calls.prepare = 0;
    assert_int_equal(run(f, &c, &res, &err), BC_OK);
    assert_int_equal(calls.prepare, 1);
    assert_int_equal(calls.begin, (int)m.n);
    bc_run_result_free(&res);
    free(m.cases);
}

/* Two precisions: the backend sees the precision change once (not on every
 * case), each group starts with its largest case, rebuilt marks the first
 * case of each group, and the reports keep the requested order. */
static void test_rebuild_groups(void **state) {
    fixture *f = *state;
    memset(recs, 0, sizeof recs);
    const uint32_t batches[] = {1, 4, 2};
    matrix m = build_mixed(batches, 3, 0, 2); /* 2 precisions x 3 batches x 2 samples = 12 cases */
    bc_plugin rp = make_recorder();
    bc_runner_reporter rep = {&rp, &rec_settings[0], NULL};
    bc_runner_config c = config(f, &m, 0, 1);
    c.reporters = &rep;
    c.n_reporters = 1;
    bc_run_result res;
    bc_error err = {0};
    assert_int_equal(run(f, &c, &res, &err), BC_OK);
    assert_int_equal(bc_run_exit_status(&res), 0);
    assert_int_equal(calls.precision_switches, 1);
    assert_int_equal(res.n_rebuilds, 2);
    size_t order[12];
    execution_order(f, &m, order);
    for (size_t i = 0; i < m.n; i++) {
        const bc_case_report *cr = &res.cases[order[i]];
        int group_start = i == 0 || strcmp(m.cases[order[i - 1]].precision, m.cases[order[i]].precision) != 0;
        assert_int_equal(cr->rebuilt, group_start);
        if (group_start) assert_int_equal(bc_case_effective_batch(cr->c), 8);
        assert_int_equal(recs[0].started_index[i], order[i]);
        assert_int_equal(recs[0].closed_index[i], i);
    }
    bc_run_result_free(&res);
    free(m.cases);
}

/* A second interrupt abandons the iteration in progress: it is not recorded,
 * and the case keeps the iterations measured before it. */
static void test_second_interrupt(void **state) {
    fixture *f = *state;
    const uint32_t batches[] = {1};
    matrix m = build(batches, 1, 0); /* 2 cases */
    calls.stop_at_generate = 2;      /* first case, second measured iteration */
    calls.stop_level = 2;
    bc_runner_config c = config(f, &m, 0, 3);
    bc_run_result res;
    bc_error err = {0};
    assert_int_equal(run(f, &c, &res, &err), BC_OK);
    assert_int_equal(bc_run_exit_status(&res), 130);
    assert_int_equal(calls.generate, 2);
    size_t order[2];
    execution_order(f, &m, order);
    const bc_case_report *cr = &res.cases[order[0]];
    assert_int_equal(cr->status, BC_CASE_SKIPPED);
    assert_int_equal(cr->error_code, BC_ERR_INTERRUPTED);
    assert_int_equal(cr->n_iterations, 1);
    assert_double_equal(stat(cr, BC_FIELD_TOTAL_MS, BC_STAT_N), 1, 0);
    assert_nan(value(cr, 1, BC_FIELD_TOTAL_MS));
    assert_non_null(strstr(cr->message, "abandoned"));
    assert_int_equal(res.cases[order[1]].status, BC_CASE_SKIPPED);
    assert_int_equal(calls.end, 1);
    bc_run_result_free(&res);
    free(m.cases);
}

/* --------------------------------------------------- stopping and progress */

/* An adaptive config (min, max, target) on c. */
static void adaptive(bc_runner_config *c, uint32_t lo, uint32_t hi, double target) {
    c->min_iterations = lo;
    c->max_iterations = hi;
    c->target_rel_ci = target;
}

/* Stable: the median's interval within the target as soon as min_iterations
 * allow; the figure is the one the statistics give over the recorded values.
 * The target is far above any finite interval: on a machine loaded many times
 * over, a 2 ms sleep can take 40 ms and the interval of 40 such iterations can
 * exceed the median itself, so a target of 1.0 was not loose enough. */
static void test_adaptive_stable(void **state) {
    fixture *f = *state;
    set_int(f, "post_us", 2000);
    const uint32_t batches[] = {1};
    matrix m = build(batches, 1, 0); /* 2 cases */
    bc_runner_config c = config(f, &m, 0, 99);
    adaptive(&c, 8, 40, 1e6);
    bc_run_result res;
    bc_error err = {0};
    assert_int_equal(run(f, &c, &res, &err), BC_OK);
    assert_int_equal(res.rows_per_case, 40);
    for (size_t k = 0; k < m.n; k++) {
        const bc_case_report *cr = &res.cases[k];
        assert_int_equal(cr->status, BC_CASE_OK);
        assert_int_equal(cr->stop_reason, BC_STOP_STABLE);
        assert_int_equal(cr->n_iterations, 8);
        assert_true(cr->total_ms_rel_ci <= 1e6);
        bc_error e = {0};
        assert_double_equal(cr->total_ms_rel_ci,
                            bc_stats_median_rel_ci(cr->values + BC_FIELD_TOTAL_MS, cr->n_iterations, BC_N_FIELDS, &e),
                            0);
        assert_double_equal(stat(cr, BC_FIELD_TOTAL_MS, BC_STAT_N), cr->n_iterations, 0);
    }
    assert_int_equal(calls.generate, (int)(res.cases[0].n_iterations + res.cases[1].n_iterations));
    bc_run_result_free(&res);
    free(m.cases);
}

/* Never stable: post_process alternates 1 ms and 28 ms (testbackend's
 * jitter), so the median's interval spans both and the case runs to
 * max_iterations. */
static void test_adaptive_max_iterations(void **state) {
    fixture *f = *state;
    set_int(f, "post_us", 1000);
    set_int(f, "jitter_us", 3000);
    set_str(f, "jitter_pattern", "09");
    const uint32_t batches[] = {1};
    matrix m = build(batches, 1, 0);
    bc_runner_config c = config(f, &m, 1, 99);
    adaptive(&c, 6, 10, 0.02);
    bc_run_result res;
    bc_error err = {0};
    assert_int_equal(run(f, &c, &res, &err), BC_OK);
    for (size_t k = 0; k < m.n; k++) {
        const bc_case_report *cr = &res.cases[k];
        assert_int_equal(cr->stop_reason, BC_STOP_MAX_ITERATIONS);
        assert_int_equal(cr->n_iterations, 10);
        assert_true(cr->total_ms_rel_ci > 0.3);
        /* the warmup took pattern digit 0, so measured iterations start with the 9 */
        assert_true(value(cr, 0, BC_FIELD_POST_PROCESSING_MS) > value(cr, 1, BC_FIELD_POST_PROCESSING_MS));
    }
    bc_run_result_free(&res);
    free(m.cases);
}

/* The time cap: the iteration that crosses max_seconds_per_case is the last,
 * for a fixed count and before min_iterations alike. */
static void test_max_seconds(void **state) {
    fixture *f = *state;
    set_str(f, "mode", "sleep");
    set_int(f, "post_us", 20000);
    const uint32_t batches[] = {1};
    matrix m = build(batches, 1, 0);
    for (int with_adaptive = 0; with_adaptive < 2; with_adaptive++) {
        bc_runner_config c = config(f, &m, 0, 50);
        if (with_adaptive) adaptive(&c, 10, 20, 0.5);
        c.max_seconds_per_case = 0.05;
        bc_run_result res;
        bc_error err = {0};
        assert_int_equal(run(f, &c, &res, &err), BC_OK);
        for (size_t k = 0; k < m.n; k++) {
            const bc_case_report *cr = &res.cases[k];
            assert_int_equal(cr->status, BC_CASE_OK);
            assert_int_equal(cr->stop_reason, BC_STOP_MAX_SECONDS);
            assert_true(cr->n_iterations >= 1 && cr->n_iterations <= 3); /* 20 ms each */
            assert_true(cr->wall_ms >= 50.0);
        }
        bc_run_result_free(&res);
    }
    free(m.cases);
}

/* An interrupt in an adaptive case: the message says the most it could run. */
static void test_adaptive_interrupt(void **state) {
    fixture *f = *state;
    const uint32_t batches[] = {1};
    matrix m = build(batches, 1, 0);
    calls.stop_at_generate = 2;
    bc_runner_config c = config(f, &m, 0, 99);
    adaptive(&c, 6, 12, 0.001);
    bc_run_result res;
    bc_error err = {0};
    assert_int_equal(run(f, &c, &res, &err), BC_OK);
    size_t order[2];
    execution_order(f, &m, order);
    const bc_case_report *cr = &res.cases[order[0]];
    assert_int_equal(cr->stop_reason, BC_STOP_INTERRUPTED);
    assert_string_equal(cr->message, "interrupted after 2 measured iterations (at most 12)");
    bc_run_result_free(&res);
    free(m.cases);
}

/* Every case records the load average at both ends and the steal share
 * between, where /proc has them (cases of 30 ms or more, so jiffies pass). */
static void test_host_load(void **state) {
    fixture *f = *state;
    set_str(f, "mode", "sleep");
    set_int(f, "post_us", 15000);
    const uint32_t batches[] = {1};
    matrix m = build(batches, 1, 0);
    bc_runner_config c = config(f, &m, 0, 2);
    bc_run_result res;
    bc_error err = {0};
    assert_int_equal(run(f, &c, &res, &err), BC_OK);
    for (size_t k = 0; k < m.n; k++) {
        const bc_case_report *cr = &res.cases[k];
        if (access("/proc/loadavg", R_OK) == 0) {
            assert_true(isfinite(cr->load_avg_start) && cr->load_avg_start >= 0);
            assert_true(isfinite(cr->load_avg_end) && cr->load_avg_end >= 0);
        } else {
            assert_nan(cr->load_avg_start);
        }
        if (access("/proc/stat", R_OK) == 0)
            assert_true(isfinite(cr->cpu_steal_share) && cr->cpu_steal_share >= 0 && cr->cpu_steal_share <= 1);
    }
    bc_run_result_free(&res);
    free(m.cases);
}

/* iteration_finished: once per completed iteration, warmup ones flagged,
 * numbered from 0 in each phase, with the bounds of the rule, the values
 * the case report keeps, and an ETA from the first iteration on. */
static void test_iteration_events(void **state) {
    fixture *f = *state;
    memset(recs, 0, sizeof recs);
    const uint32_t batches[] = {1, 2};
    matrix m = build(batches, 2, 0); /* 4 cases */
    bc_plugin rp = make_recorder();
    bc_runner_reporter rep = {&rp, &rec_settings[0], NULL};
    bc_runner_config c = config(f, &m, 2, 3);
    c.reporters = &rep;
    c.n_reporters = 1;
    bc_run_result res;
    bc_error err = {0};
    assert_int_equal(run(f, &c, &res, &err), BC_OK);
    const rec *r = &recs[0];
    assert_int_equal(r->n_events, m.n * (2 + 3));
    size_t order[4];
    execution_order(f, &m, order);
    for (uint32_t e = 0; e < r->n_events; e++) {
        const rec_event *ev = &r->events[e];
        uint32_t pos = e / 5, within = e % 5;
        const bc_case_report *cr = &res.cases[order[pos]];
        assert_int_equal(ev->index, order[pos]);
        assert_int_equal(ev->position, pos);
        assert_int_equal(ev->n_cases, m.n);
        assert_int_equal(ev->warmup, within < 2);
        assert_int_equal(ev->iteration, within < 2 ? within : within - 2);
        assert_int_equal(ev->n_min, within < 2 ? 2 : 3);
        assert_int_equal(ev->n_max, within < 2 ? 2 : 3);
        if (!ev->warmup) assert_double_equal(ev->total_ms, value(cr, ev->iteration, BC_FIELD_TOTAL_MS), 0);
        else assert_true(ev->total_ms > 0);
        assert_nan(ev->rel_ci); /* a fixed count computes no interval on the way */
        assert_true(ev->elapsed_ms > 0 && ev->elapsed_ms <= cr->wall_ms);
        assert_true(isfinite(ev->eta_s) && ev->eta_s >= 0);
    }
    bc_run_result_free(&res);

    /* adaptive: the bounds, and the interval once there are 6 values */
    memset(recs, 0, sizeof recs);
    set_int(f, "post_us", 1000);
    c.warmup = 0;
    adaptive(&c, 7, 9, 1e-9); /* never stable: runs to 9 */
    assert_int_equal(run(f, &c, &res, &err), BC_OK);
    assert_int_equal(r->n_events, m.n * 9);
    for (uint32_t e = 0; e < r->n_events; e++) {
        const rec_event *ev = &r->events[e];
        assert_int_equal(ev->n_min, 7);
        assert_int_equal(ev->n_max, 9);
        if (ev->iteration + 1 < 6) assert_nan(ev->rel_ci);
        else assert_true(isfinite(ev->rel_ci) && ev->rel_ci >= 0);
    }
    bc_run_result_free(&res);
    free(m.cases);
}

/* A failing iteration_finished is reported once and not called again; the
 * run goes on and the reporter still closes (exit status 1). */
static void test_iteration_event_failure(void **state) {
    fixture *f = *state;
    memset(recs, 0, sizeof recs);
    n_errors = 0;
    recs[0].fail_iteration = 3;
    const uint32_t batches[] = {1};
    matrix m = build(batches, 1, 0);
    bc_plugin rp = make_recorder();
    bc_runner_reporter rep = {&rp, &rec_settings[0], "bench.cfg:12"};
    bc_runner_config c = config(f, &m, 1, 4);
    c.reporters = &rep;
    c.n_reporters = 1;
    bc_run_result res;
    bc_error err = {0};
    assert_int_equal(run(f, &c, &res, &err), BC_OK);
    assert_int_equal(recs[0].n_events, 3);
    assert_int_equal(n_errors, 1);
    assert_non_null(strstr(last_error, "bench.cfg:12: reporter 'recorder': iteration_finished: cannot draw"));
    assert_int_equal(recs[0].n_finished, m.n);
    assert_int_equal(recs[0].closed, 1);
    assert_int_equal(res.cases[0].status, BC_CASE_OK);
    assert_int_equal(bc_run_exit_status(&res), 1);
    bc_run_result_free(&res);
    free(m.cases);
}

/* The ETA at case_started comes from the cost model: after the big cases,
 * the small ones are predicted smaller than the mean of the big ones. */
static void test_eta_model(void **state) {
    fixture *f = *state;
    memset(recs, 0, sizeof recs);
    set_int(f, "expand_us", 0);
    set_int(f, "post_us", 0);
    set_int(f, "generate_us", 200); /* per token and row: cost grows with the effective batch */
    const uint32_t batches[] = {1, 8};
    matrix m = build(batches, 2, 0); /* effective batches 16, 8, 2, 1 in execution order */
    bc_plugin rp = make_recorder();
    bc_runner_reporter rep = {&rp, &rec_settings[0], NULL};
    bc_runner_config c = config(f, &m, 0, 2);
    c.reporters = &rep;
    c.n_reporters = 1;
    bc_run_result res;
    bc_error err = {0};
    assert_int_equal(run(f, &c, &res, &err), BC_OK);
    size_t order[4];
    execution_order(f, &m, order);
    double first = res.cases[order[0]].wall_ms / 1000.0;
    assert_nan(recs[0].started_eta[0]);
    /* after the 16-row case: 8 + 2 + 1 rows left, about 11/16 of it (the mean would say 3x) */
    assert_true(recs[0].started_eta[1] > 0.3 * first && recs[0].started_eta[1] < 1.5 * first);
    bc_run_result_free(&res);
    free(m.cases);
}

/* ------------------------------------------------------- process isolation */

/* A case whose process dies (SIGKILL, as the OOM killer sends; no handler,
 * ASan's included, sees it) fails alone with the iterations it finished. */
static void test_isolated_crash(void **state) {
    fixture *f = *state;
    memset(recs, 0, sizeof recs);
    const uint32_t batches[] = {1, 2};
    matrix m = build(batches, 2, 0); /* 4 cases, 2 of batch 2 */
    calls.kill_batch = 2;
    bc_plugin rp = make_recorder();
    bc_runner_reporter rep = {&rp, &rec_settings[0], NULL};
    bc_runner_config c = config(f, &m, 0, 3);
    c.reporters = &rep;
    c.n_reporters = 1;
    c.isolation = 1;
    bc_run_result res;
    bc_error err = {0};
    assert_int_equal(run(f, &c, &res, &err), BC_OK);
    assert_int_equal(bc_run_exit_status(&res), 3);
    assert_int_equal(res.n_failed, 2);
    for (size_t k = 0; k < m.n; k++) {
        const bc_case_report *cr = &res.cases[k];
        if (cr->c->batch_size == 2) {
            assert_int_equal(cr->status, BC_CASE_FAILED);
            assert_int_equal(cr->stop_reason, BC_STOP_FAILED);
            assert_int_equal(cr->n_iterations, 1); /* the one finished before it died */
            assert_true(value(cr, 0, BC_FIELD_TOTAL_MS) > 0);
            assert_int_equal((int)stat(cr, BC_FIELD_TOTAL_MS, BC_STAT_N), 1);
            assert_non_null(strstr(cr->message, "killed by SIGKILL"));
        } else {
            assert_int_equal(cr->status, BC_CASE_OK);
            assert_int_equal(cr->n_iterations, 3);
            assert_int_equal(cr->stop_reason, BC_STOP_FIXED);
        }
    }
    assert_int_equal(recs[0].n_finished, 4);
    assert_int_equal(recs[0].n_events, 2 * 3 + 2 * 1); /* forwarded from the children */
    assert_int_equal(calls.generate, 0);                 /* the hooks ran in the children */
    bc_run_result_free(&res);
    free(m.cases);
}

static void count_signal(int sig) {
    (void)sig;
    stop_flag++;
}

/* Two interrupts that reach benchctl before it forwards the first still
 * abandon the isolated case's iteration in progress, as without isolation
 * (two SIGTERMs sent back to back used to merge into one in the child). */
static void test_isolated_second_interrupt(void **state) {
    fixture *f = *state;
    memset(recs, 0, sizeof recs);
    set_str(f, "mode", "sleep");
    set_int(f, "generate_us", 250000); /* 4 tokens: a 1 s generate, the stage the signals come in */
    const uint32_t batches[] = {1};
    matrix m = build(batches, 1, 0);
    recs[0].stop_at_event = 1; /* after the first measured iteration, */
    recs[0].stop_delay_ms = 300; /* once the child is well into the second's generate, however loaded */
    bc_plugin rp = make_recorder();
    bc_runner_reporter rep = {&rp, &rec_settings[0], NULL};
    bc_runner_config c = config(f, &m, 0, 5);
    c.reporters = &rep;
    c.n_reporters = 1;
    c.isolation = 1;
    struct sigaction sa = {0}, old_int, old_term;
    sa.sa_handler = count_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    bc_run_result res;
    bc_error err = {0};
    bc_status st = run(f, &c, &res, &err);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    assert_int_equal(st, BC_OK);
    assert_int_equal(bc_run_exit_status(&res), 130);
    size_t order[2];
    execution_order(f, &m, order);
    const bc_case_report *cr = &res.cases[order[0]];
    assert_int_equal(cr->status, BC_CASE_SKIPPED);
    assert_int_equal(cr->stop_reason, BC_STOP_INTERRUPTED);
    assert_int_equal(cr->n_iterations, 1);
    assert_string_equal(cr->message,
                        "interrupted twice (the iteration in progress was abandoned), after 1 of 5 measured iterations");
    assert_true(cr->wall_ms < 4000.0); /* 2 generates, not the 5 x 1 s of a case run to its end */
    assert_int_equal(res.cases[order[1]].status, BC_CASE_SKIPPED);
    assert_int_equal(res.cases[order[1]].stop_reason, BC_STOP_NONE);
    bc_run_result_free(&res);
    free(m.cases);
}

/* ------------------------------------------------------------ the seam */

/* A seam (seam.h) that records how the loop calls it and acts as rank 1
 * of two in shard mode: it runs the odd positions; after_step can fail a
 * step as another process would, stop_level can say "stop" as an
 * agreement would (while this process saw no signal). */
static struct {
    int start, agree, before_iteration, after_step, after_case, aborted;
    size_t runs_asked;
    int64_t handled[16];  /* after_case's k by position */
    int fail_at_step;     /* after_step call that reports another process's failure (0: none) */
    int stop_from_step;   /* stop_level says 1 from this after_step call on (0: never) */
} seam_calls;

static bc_status rec_start(void *ctx, const bc_runner_config *cfg, bc_error *err) {
    (void)ctx, (void)cfg, (void)err;
    seam_calls.start++;
    return BC_OK;
}
static bc_status rec_agree(void *ctx, bc_status local, bc_error *err) {
    (void)ctx, (void)err;
    seam_calls.agree++;
    return local;
}
static int rec_runs(void *ctx, size_t position) {
    (void)ctx;
    seam_calls.runs_asked++;
    return position % 2 == 1;
}
static void rec_before_iteration(void *ctx) {
    (void)ctx;
    seam_calls.before_iteration++;
}
static void rec_after_step(void *ctx, bc_status *st, const char **hook, bc_error *err, volatile sig_atomic_t *stop,
                           int32_t *stop_rule) {
    (void)ctx, (void)stop, (void)stop_rule;
    if (++seam_calls.after_step == seam_calls.fail_at_step && *st == BC_OK) {
        *st = BC_ERR_IO;
        *hook = "rank 0 (elsewhere): generate";
        bc_error_set(err, BC_ERR_IO, "disk gone");
    }
}
static int rec_stop_level(void *ctx, volatile sig_atomic_t *stop) {
    (void)ctx;
    if (seam_calls.stop_from_step && seam_calls.after_step >= seam_calls.stop_from_step) return 1;
    return (int)*stop;
}
static size_t rec_after_case(void *ctx, bc_run_result *res, size_t position, int64_t k, int ran,
                             volatile sig_atomic_t *stop) {
    (void)ctx, (void)res, (void)stop;
    seam_calls.after_case++;
    if (position < 16) seam_calls.handled[position] = k;
    return ran ? 1 : 0;
}
static void rec_abort(void *ctx, int status, const bc_error *why) {
    (void)ctx, (void)status, (void)why;
    seam_calls.aborted++;
}
static const bc_distributed rec_report = {.struct_size = sizeof rec_report, .comm = "recording", .world_size = 2};
static const bc_run_seam rec_seam = {
    .report = &rec_report, .tokens_here = 0, .start = rec_start, .agree = rec_agree, .runs = rec_runs,
    .before_iteration = rec_before_iteration, .after_step = rec_after_step, .stop_level = rec_stop_level,
    .after_case = rec_after_case, .abort = rec_abort};

/* The loop calls the seam at its points and nothing else decides who runs
 * what: before every iteration, after every step (before the case, after
 * begin_case, after every iteration), after every position. */
static void test_seam_hooks(void **state) {
    fixture *f = *state;
    memset(&seam_calls, 0, sizeof seam_calls);
    const uint32_t batches[] = {1, 3};
    matrix m = build(batches, 2, 0); /* 4 cases */
    bc_runner_config c = config(f, &m, 1, 2);
    c.seam = &rec_seam;
    bc_run_result res;
    bc_error err = {0};
    assert_int_equal(run(f, &c, &res, &err), BC_OK);
    size_t order[4];
    execution_order(f, &m, order);
    assert_int_equal(seam_calls.start, 1);
    assert_int_equal(seam_calls.agree, 1); /* one instance prepared */
    assert_int_equal(seam_calls.runs_asked, 4);
    assert_int_equal(seam_calls.after_case, 4);
    assert_int_equal(calls.begin, 2);                      /* positions 1 and 3 only */
    assert_int_equal(seam_calls.before_iteration, 2 * 3);  /* 1 warmup + 2 measured, per case run */
    assert_int_equal(seam_calls.after_step, 2 * (2 + 3));  /* before, begin_case, 3 iterations */
    assert_int_equal(seam_calls.aborted, 0);
    for (size_t i = 0; i < 4; i++) {
        const bc_case_report *cr = &res.cases[order[i]];
        assert_int_equal(seam_calls.handled[i], i % 2 ? (int64_t)order[i] : -1);
        assert_int_equal(cr->status, i % 2 ? BC_CASE_OK : BC_CASE_SKIPPED); /* the other process's stay unrun here */
    }
    assert_nan(res.cases[order[1]].token_agreement); /* tokens_here 0 */
    bc_run_result_free(&res);

    /* another process failed generate in the first measured iteration of the
     * first case run here: this case fails with its hook and message */
    memset(&seam_calls, 0, sizeof seam_calls);
    memset(&calls, 0, sizeof calls);
    calls.resident = -1;
    seam_calls.fail_at_step = 4; /* before, begin_case, warmup, measured 1 */
    assert_int_equal(run(f, &c, &res, &err), BC_OK);
    const bc_case_report *failed = &res.cases[order[1]];
    assert_int_equal(failed->status, BC_CASE_FAILED);
    assert_int_equal(failed->error_code, BC_ERR_IO);
    assert_string_equal(failed->message, "rank 0 (elsewhere): generate: disk gone");
    assert_int_equal(res.cases[order[3]].status, BC_CASE_OK);
    bc_run_result_free(&res);

    /* the agreed stop level, not this process's own, stops the case */
    memset(&seam_calls, 0, sizeof seam_calls);
    memset(&calls, 0, sizeof calls);
    calls.resident = -1;
    seam_calls.stop_from_step = 4; /* after the first measured iteration */
    assert_int_equal(run(f, &c, &res, &err), BC_OK);
    assert_int_equal(stop_flag, 0);
    const bc_case_report *stopped = &res.cases[order[1]];
    assert_int_equal(stopped->status, BC_CASE_SKIPPED);
    assert_int_equal(stopped->stop_reason, BC_STOP_INTERRUPTED);
    assert_int_equal(stopped->n_iterations, 1);
    assert_int_equal(res.cases[order[3]].error_code, BC_ERR_INTERRUPTED); /* never started */
    bc_run_result_free(&res);
    free(m.cases);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_warmup_and_iterations, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unmeasured_fields_stay_nan, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_case_continues, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reporter_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cache_policy_timings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_interrupt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reporter_failure_isolated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsupported_precision, setup, teardown),
        cmocka_unit_test_setup_teardown(test_derived_fields, setup, teardown),
        cmocka_unit_test_setup_teardown(test_row_fields, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prepare_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rebuild_groups, setup, teardown),
        cmocka_unit_test_setup_teardown(test_second_interrupt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_adaptive_stable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_adaptive_max_iterations, setup, teardown),
        cmocka_unit_test_setup_teardown(test_max_seconds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_adaptive_interrupt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_host_load, setup, teardown),
        cmocka_unit_test_setup_teardown(test_iteration_events, setup, teardown),
        cmocka_unit_test_setup_teardown(test_iteration_event_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_eta_model, setup, teardown),
        cmocka_unit_test_setup_teardown(test_isolated_crash, setup, teardown),
        cmocka_unit_test_setup_teardown(test_isolated_second_interrupt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_seam_hooks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_declared_metrics, setup, teardown),
        cmocka_unit_test_setup_teardown(test_declared_metric_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
