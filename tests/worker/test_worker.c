/* test_worker.c: the worker backend (plugins/worker), loaded with dlopen as
 * the host loads it, driving tests/worker/fake_worker.c (FAKE_WORKER): the
 * protocol (hello table, configure, describe, a case's rollouts, cache
 * hooks), and every way a worker can fail (crash, exit, hang, garbage, a
 * wrong reply id, another protocol version, no hello, an error reply), each
 * failing only the hook talking to it, with its stderr in the message, and
 * the next case running on a restarted worker; the rollout tokens, score
 * and refit hooks and the checks of their replies (repro_worker.sh with
 * hostile rollouts, scores and byte counts). Also: the host's synthetic
 * prompts are the native engine's (plugins/common/synthetic_prompts.h against
 * the engine's row generators, engine/rollout/sampling.h).
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../plugins/common/synthetic_prompts.h"
#include "../plugins/plugin_dl.h"
#include "bc_test_assert.h"
#include "sampling.h" /* engine/rollout: eng_rng_for_row, eng_rng_next */

/* The plugin's own settings (its table's order), then the fake's four. */
enum { V_COMMAND, V_ENV, V_TIMEOUT, V_SAVE_TOKENS, V_MODEL, V_THREADS, V_SCALE, V_CHATTY, N_VALUES };

typedef struct fixture {
    void *dl;
    const bc_plugin_desc *desc;
    const bc_backend_ops *ops;
    char command[16384];
    bc_setting_value values[N_VALUES];
    bc_settings settings;
    void *inst;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    f->desc = test_plugin_open("worker", &f->dl);
    f->ops = f->desc->ops;
    f->values[V_COMMAND].s = f->command;
    f->values[V_ENV].s = "FAKE_WORKER_TEST=1";
    f->values[V_TIMEOUT].f = 10.0;
    f->values[V_SAVE_TOKENS].s = "";
    f->values[V_MODEL].s = "tiny";
    f->values[V_SCALE].f = 1.0;
    f->values[V_CHATTY].i = 1;
    f->settings = (bc_settings){.struct_size = sizeof f->settings, .count = N_VALUES,
                                .value_size = sizeof(bc_setting_value), .values = f->values};
    snprintf(f->command, sizeof f->command, "%s", FAKE_WORKER);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    if (f->inst) f->ops->destroy(f->inst);
    dlclose(f->dl);
    free(f);
    return 0;
}

/* command := the fake worker with args. */
static void fake_args(fixture *f, const char *args) { snprintf(f->command, sizeof f->command, "%s %s", FAKE_WORKER, args); }

static bc_sampling greedy = {.struct_size = sizeof(bc_sampling), .temperature = 0.0, .top_p = 1.0, .seed = 1234};

static bc_precision_ops fp32_ops = {.struct_size = sizeof(bc_precision_ops), .dtype = "float32", .element_size = 4};
static bc_precision_ops fp16_ops = {.struct_size = sizeof(bc_precision_ops), .dtype = "float16", .element_size = 2};

static bc_case make_case(uint32_t batch, const bc_precision_ops *prec) {
    return (bc_case){.struct_size = sizeof(bc_case), .batch_size = batch, .samples_per_prompt = 2, .prompt_length = 8,
                     .response_length = 4, .precision = prec == &fp32_ops ? "fp32" : "fp16", .precision_ops = prec,
                     .cache_policy = "retain", .sampling = &greedy};
}

static bc_generation_stats unknown_stats(void) {
    bc_generation_stats g = {.struct_size = sizeof g};
    g.num_generated_tokens = g.num_decode_forwards = -1;
    g.engine_prompt_expansion_ms = g.engine_generation_ms = g.engine_post_processing_ms = NAN;
    g.first_token_ms = g.prefill_forward_ms = g.decode_forward_ms = NAN;
    return g;
}

/* One case: begin, expand, generate, post; returns generate's status. */
static bc_status run_case(fixture *f, uint32_t batch, bc_generation_stats *g, bc_error *err) {
    bc_case c = make_case(batch, &fp32_ops);
    bc_status st = f->ops->begin_case(f->inst, &c, err);
    if (st == BC_OK) st = f->ops->expand_prompts(f->inst, err);
    if (st == BC_OK) {
        *g = unknown_stats();
        st = f->ops->generate(f->inst, g, err);
    }
    if (st == BC_OK) st = f->ops->post_process(f->inst, err);
    f->ops->end_case(f->inst);
    return st;
}

static void create_ok(fixture *f) {
    bc_error err = {0};
    bc_status st = f->ops->create(test_plugin_host(), &f->settings, &f->inst, &err);
    if (st != BC_OK) fail_msg("create: %s", err.message);
}

/* -------------------------------------------------------------- protocol */

static void test_hello_table(void **state) {
    fixture *f = *state;
    assert_non_null(f->desc->more_settings);
    assert_non_null(f->desc->free_more_settings);
    const bc_setting_desc *rows = NULL;
    uint32_t n = 0, size = 0;
    bc_error err = {0};
    bc_settings own = f->settings;
    own.count = V_MODEL; /* what the host has before the hello: the plugin's own table */
    assert_int_equal(f->desc->more_settings(test_plugin_host(), &own, &rows, &n, &size, &err), BC_OK);
    assert_int_equal(n, 4);
    assert_int_equal(size, sizeof(bc_setting_desc));
    assert_string_equal(rows[0].name, "model");
    assert_int_equal(rows[0].type, BC_SETTING_ENUM);
    assert_string_equal(rows[0].default_string, "tiny");
    assert_string_equal(rows[0].choices[1], "small");
    assert_null(rows[0].choices[2]);
    assert_string_equal(rows[1].name, "threads");
    assert_int_equal(rows[1].type, BC_SETTING_INT);
    assert_int_equal(rows[1].has_range, 1);
    assert_double_equal(rows[1].min, 0.0, 0.0);
    assert_int_equal(rows[2].type, BC_SETTING_FLOAT);
    assert_double_equal(rows[2].default_float, 1.0, 0.0);
    assert_int_equal(rows[3].type, BC_SETTING_BOOL);
    f->desc->free_more_settings(rows, n);
}

static void test_empty_command_has_no_more_settings(void **state) {
    fixture *f = *state;
    f->command[0] = '\0';
    const bc_setting_desc *rows = (const bc_setting_desc *)1;
    uint32_t n = 7, size = 0;
    bc_error err = {0};
    assert_int_equal(f->desc->more_settings(test_plugin_host(), &f->settings, &rows, &n, &size, &err), BC_OK);
    assert_null(rows);
    assert_int_equal(n, 0);
    assert_int_equal(f->ops->create(test_plugin_host(), &f->settings, &f->inst, &err), BC_ERR_SETTING);
    assert_non_null(strstr(err.message, "command is empty"));
}

static void test_rollout(void **state) {
    fixture *f = *state;
    create_ok(f);
    bc_backend_info info = {.struct_size = sizeof info};
    bc_error err = {0};
    assert_int_equal(f->ops->describe(f->inst, &info, &err), BC_OK);
    assert_string_equal(info.model, "fake model (fake 1.0)");
    assert_string_equal(info.device, "cpu");
    assert_int_equal(info.vocab_size, 50272);
    assert_int_equal(info.n_parameters, 1000);

    bc_case c = make_case(3, &fp32_ops);
    assert_int_equal(f->ops->check_case(f->inst, &c, &err), BC_OK);
    bc_case half = make_case(3, &fp16_ops);
    assert_int_equal(f->ops->check_case(f->inst, &half, &err), BC_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.message, "float16"));
    bc_case long_case = c;
    long_case.prompt_length = 2000, long_case.response_length = 100;
    assert_int_equal(f->ops->check_case(f->inst, &long_case, &err), BC_ERR_INFEASIBLE);

    assert_int_equal(f->ops->begin_case(f->inst, &c, &err), BC_OK);
    for (int it = 0; it < 3; it++) {
        if (it == 1) f->ops->reset_peak_memory(f->inst);
        bc_generation_stats g = unknown_stats();
        assert_int_equal(f->ops->expand_prompts(f->inst, &err), BC_OK);
        assert_int_equal(f->ops->generate(f->inst, &g, &err), BC_OK);
        assert_int_equal(f->ops->post_process(f->inst, &err), BC_OK);
        assert_int_equal(g.num_generated_tokens, 3 * 2 * 4);
        assert_int_equal(g.num_decode_forwards, 3);
        assert_int_equal(g.returned_response_length, 4);
        assert_int_equal(g.num_prefill_tokens, 3 * 2 * 8);
        assert_int_equal(g.n_decode_steps, 3);
        double v[3] = {NAN, NAN, NAN}; /* engine_total_ms, then the hello's metrics */
        assert_int_equal(f->ops->read_metrics(f->inst, BC_METRIC_PER_ITERATION, v, 3, &err), BC_OK);
        assert_true(v[0] >= 0.0 && v[0] < 1e4);
        assert_double_equal(g.first_token_ms, 0.02, 1e-12);
        assert_int_equal(f->ops->cache_release(f->inst, &err), BC_OK);
        assert_int_equal(f->ops->cache_acquire(f->inst, &err), BC_OK);
    }
    bc_memory_stats m = {.struct_size = sizeof m, .host_peak_bytes = -1, .device_peak_bytes = -1};
    assert_int_equal(f->ops->read_memory(f->inst, &m, &err), BC_OK);
    assert_int_equal(m.host_peak_bytes, 1 << 20);
    assert_int_equal(m.device_peak_bytes, -1);
    f->ops->end_case(f->inst);
}

/* The device describe's reply names (the configured one) is the report's,
 * not the hello's "cpu", and the worker's peak is then the device's. */
static void test_describe_device(void **state) {
    fixture *f = *state;
    fake_args(f, "--device cuda:1");
    create_ok(f);
    bc_backend_info info = {.struct_size = sizeof info};
    bc_error err = {0};
    assert_int_equal(f->ops->describe(f->inst, &info, &err), BC_OK);
    assert_string_equal(info.device, "cuda:1");
    bc_case c = make_case(2, &fp32_ops);
    assert_int_equal(f->ops->begin_case(f->inst, &c, &err), BC_OK);
    assert_int_equal(f->ops->expand_prompts(f->inst, &err), BC_OK);
    bc_generation_stats g = unknown_stats();
    assert_int_equal(f->ops->generate(f->inst, &g, &err), BC_OK);
    assert_int_equal(f->ops->post_process(f->inst, &err), BC_OK);
    bc_memory_stats m = {.struct_size = sizeof m, .host_peak_bytes = -1, .device_peak_bytes = -1};
    assert_int_equal(f->ops->read_memory(f->inst, &m, &err), BC_OK);
    assert_int_equal(m.device_peak_bytes, 1 << 20);
    assert_int_equal(m.host_peak_bytes, -1);
    f->ops->end_case(f->inst);
}

/* The metrics: the plugin's engine_total_ms (the profile's three stage
 * times summed) and the hello's two, in table order, checked and bounded:
 * a value beyond its declared range fails the rollout naming the key, and
 * the next case runs. */
static void test_metrics(void **state) {
    fixture *f = *state;
    fake_args(f, "--fail hostile --at generate --when-batch 2");
    create_ok(f);
    assert_int_equal(f->desc->n_metrics, 1);
    const bc_metric_desc *own = BC_AT(bc_metric_desc, f->desc->metrics, f->desc->metric_size, 0);
    assert_string_equal(own->name, "engine_total_ms");
    const bc_metric_desc *rows = NULL;
    uint32_t n = 0, size = 0;
    bc_error err = {0};
    assert_int_equal(f->ops->more_metrics(f->inst, &rows, &n, &size, &err), BC_OK);
    assert_int_equal(n, 2);
    assert_true(size >= sizeof(bc_metric_desc));
    const bc_metric_desc *q = BC_AT(bc_metric_desc, rows, size, 0), *occ = BC_AT(bc_metric_desc, rows, size, 1);
    assert_string_equal(q->name, "fake_queue_depth");
    assert_string_equal(q->unit, "requests");
    assert_int_equal(q->better, BC_BETTER_LOWER);
    assert_string_equal(occ->name, "occupancy");
    assert_int_equal(occ->better, BC_BETTER_HIGHER);
    bc_generation_stats g;
    bc_case c = make_case(3, &fp32_ops);
    assert_int_equal(f->ops->begin_case(f->inst, &c, &err), BC_OK);
    g = unknown_stats();
    assert_int_equal(f->ops->generate(f->inst, &g, &err), BC_OK);
    double v[3] = {NAN, NAN, NAN};
    assert_int_equal(f->ops->read_metrics(f->inst, BC_METRIC_PER_ITERATION, v, 3, &err), BC_OK);
    assert_true(v[0] >= 0.0 && v[0] < 1e4);
    assert_double_equal(v[1], 3 * 2, 0.0);
    assert_double_equal(v[2], 1.0, 0.0);
    assert_nan(g.engine_generation_ms); /* the 2.3 fields stay the host's "unknown" */
    f->ops->end_case(f->inst);
    assert_int_equal(run_case(f, 2, &g, &err), BC_ERR_DEVICE);
    assert_non_null(strstr(err.message, "worker fake: generate: profile.fake_queue_depth = 1e+300 is outside [0, 1000]"));
    assert_int_equal(run_case(f, 1, &g, &err), BC_OK);
}

/* The case tells the worker its cache policy (release_cache), and DeepSpeed's
 * continuous-batching profile fields reach the generation stats. */
static void test_release_flag_and_continuous_profile(void **state) {
    fixture *f = *state;
    fake_args(f, "--continuous 4 --strict-release 1");
    create_ok(f);
    bc_error err = {0};
    bc_case retain = make_case(3, &fp32_ops);
    assert_int_equal(f->ops->begin_case(f->inst, &retain, &err), BC_OK);
    bc_generation_stats g = unknown_stats();
    g.num_prefill_forwards = g.continuous_batch_size = -1;
    g.scheduler_overhead_ms = g.cache_management_overhead_ms = g.active_batch_size = NAN;
    assert_int_equal(f->ops->generate(f->inst, &g, &err), BC_OK);
    assert_int_equal(g.num_prefill_forwards, 2); /* ceil(3 x 2 rows / 4) */
    assert_double_equal(g.scheduler_overhead_ms, 0.5, 0.0);
    assert_double_equal(g.cache_management_overhead_ms, 0.25, 0.0);
    assert_int_equal(g.continuous_batch_size, 4);
    assert_true(isnan(g.active_batch_size)); /* DeepSpeed's is the largest step's rows, not the mean */
    assert_int_equal(f->ops->cache_release(f->inst, &err), BC_ERR_INTERNAL); /* the case said retain */
    assert_non_null(strstr(err.message, "release_cache is false"));
    f->ops->end_case(f->inst);
    bc_case release = make_case(3, &fp32_ops);
    release.cache_policy = "release", release.release_cache = 1;
    assert_int_equal(f->ops->begin_case(f->inst, &release, &err), BC_OK);
    g = unknown_stats();
    assert_int_equal(f->ops->generate(f->inst, &g, &err), BC_OK);
    assert_int_equal(f->ops->cache_release(f->inst, &err), BC_OK);
    assert_int_equal(f->ops->cache_acquire(f->inst, &err), BC_OK);
    f->ops->end_case(f->inst);
}

static void test_configure_error(void **state) {
    fixture *f = *state;
    f->values[V_THREADS].i = 100;
    bc_error err = {0};
    assert_int_equal(f->ops->create(test_plugin_host(), &f->settings, &f->inst, &err), BC_ERR_SETTING);
    assert_non_null(strstr(err.message, "worker fake: configure: threads > 64"));
}

/* ------------------------------------------------------------- failures */

/* The fake fails at generate in the batch-2 case: that case fails with
 * message_part and the fake's stderr; the batch-1 case after it runs on a
 * restarted worker. */
static void fail_then_recover(fixture *f, const char *mode, double timeout_s, const char *message_part) {
    char args[256];
    snprintf(args, sizeof args, "--fail %s --at generate --when-batch 2", mode);
    fake_args(f, args);
    f->values[V_TIMEOUT].f = timeout_s;
    create_ok(f);
    bc_backend_info info = {.struct_size = sizeof info};
    bc_generation_stats g;
    bc_error err = {0};
    assert_int_equal(f->ops->describe(f->inst, &info, &err), BC_OK);
    assert_int_equal(run_case(f, 1, &g, &err), BC_OK);
    bc_status st = run_case(f, 2, &g, &err);
    assert_int_equal(st, BC_ERR_DEVICE);
    if (!strstr(err.message, message_part)) fail_msg("'%s' lacks '%s'", err.message, message_part);
    if (!strstr(err.message, "worker fake: generate: "))
        fail_msg("'%s' does not name the worker and the request", err.message);
    if (!strstr(err.message, "; stderr: fake_worker: describe 2 | ") ||
        !strstr(err.message, "fake_worker: generate 7 | fake_worker: failing on purpose ("))
        fail_msg("'%s' lacks the worker's last stderr lines", err.message);
    assert_int_equal(run_case(f, 1, &g, &err), BC_OK);
    assert_int_equal(g.num_generated_tokens, 1 * 2 * 4);
    /* what describe gave stays valid across the restart, until destroy */
    assert_string_equal(info.model, "fake model (fake 1.0)");
    assert_string_equal(info.device, "cpu");
    assert_string_equal(info.driver, "1.0");
}

static void test_crash(void **state) { fail_then_recover(*state, "crash", 10.0, "the worker was killed by signal 11"); }
static void test_exit(void **state) { fail_then_recover(*state, "exit", 10.0, "the worker exited with status 3"); }
static void test_hang(void **state) { fail_then_recover(*state, "hang", 0.5, "the worker sent nothing for 0.5 s"); }
static void test_garbage(void **state) {
    fail_then_recover(*state, "garbage", 10.0, "a line on stdout that is not JSON (column ");
}
static void test_wrong_id(void **state) { fail_then_recover(*state, "wrong-id", 10.0, "the reply is not {\"id\":"); }

static void test_slow_within_timeout(void **state) {
    fixture *f = *state;
    fake_args(f, "--fail slow --at generate --delay-ms 300");
    f->values[V_TIMEOUT].f = 10.0;
    create_ok(f);
    bc_generation_stats g;
    bc_error err = {0};
    assert_int_equal(run_case(f, 2, &g, &err), BC_OK);
    assert_int_equal(g.num_generated_tokens, 2 * 2 * 4);
}

/* An error reply fails the hook with its code; the worker stays up. */
static void test_error_reply(void **state) {
    fixture *f = *state;
    fake_args(f, "--fail error --at begin_case --when-batch 2 --code infeasible");
    create_ok(f);
    bc_generation_stats g;
    bc_error err = {0};
    assert_int_equal(run_case(f, 2, &g, &err), BC_ERR_INFEASIBLE);
    assert_non_null(strstr(err.message, "worker fake: begin_case: the fake engine refuses this on purpose"));
    assert_null(strstr(err.message, "stderr"));
    assert_int_equal(run_case(f, 1, &g, &err), BC_OK);
}

/* create fails when the worker cannot say hello; message_part says why. */
static void hello_fails(fixture *f, const char *args, double timeout_s, const char *message_part) {
    fake_args(f, args);
    f->values[V_TIMEOUT].f = timeout_s;
    bc_error err = {0};
    assert_int_equal(f->ops->create(test_plugin_host(), &f->settings, &f->inst, &err), BC_ERR_DEVICE);
    assert_null(f->inst);
    if (!strstr(err.message, message_part)) fail_msg("'%s' lacks '%s'", err.message, message_part);
}

static void test_version_mismatch(void **state) {
    hello_fails(*state, "--fail version --at hello", 10.0, "the worker speaks protocol 2, benchctl speaks protocol 1");
}
static void test_no_hello(void **state) {
    hello_fails(*state, "--fail hang --at hello", 0.5, "hello: the worker sent nothing for 0.5 s");
}
static void test_exit_before_hello(void **state) {
    hello_fails(*state, "--fail exit --at hello", 10.0, "the worker exited with status 3; stderr: fake_worker: failing");
}
static void test_hello_without_its_fields(void **state) {
    hello_fails(*state, "--fail bare", 10.0, "the hello needs \"engine\"");
}
static void test_hello_reserved_metric(void **state) {
    hello_fails(*state, "--fail badmetric", 10.0, "metrics[0]: 'generation_ms' is a profile key the worker plugin reads");
}
static void test_hello_reserved_setting(void **state) {
    hello_fails(*state, "--fail reserved", 10.0, "settings[0]: 'command' is a setting of the worker plugin itself");
}
static void test_not_a_program(void **state) {
    fixture *f = *state;
    snprintf(f->command, sizeof f->command, "/nonexistent/worker --x");
    bc_error err = {0};
    assert_int_equal(f->ops->create(test_plugin_host(), &f->settings, &f->inst, &err), BC_ERR_DEVICE);
    assert_non_null(strstr(err.message, "exited with status 127"));
    assert_non_null(strstr(err.message, "cannot run the worker command: /nonexistent/worker"));
    assert_null(strstr(err.message, "relative command"));
}

/* A relative command is looked up from the working folder: the error says so. */
static void test_relative_command(void **state) {
    fixture *f = *state;
    snprintf(f->command, sizeof f->command, "nosuch-dir/worker --x");
    bc_error err = {0};
    assert_int_equal(f->ops->create(test_plugin_host(), &f->settings, &f->inst, &err), BC_ERR_DEVICE);
    assert_non_null(strstr(err.message, "cannot run the worker command: nosuch-dir/worker"));
    assert_non_null(strstr(err.message, "a relative command, looked up from the working folder /"));
}

static void test_unclosed_quote(void **state) {
    fixture *f = *state;
    snprintf(f->command, sizeof f->command, "%s '--fail", FAKE_WORKER);
    bc_error err = {0};
    assert_int_equal(f->ops->create(test_plugin_host(), &f->settings, &f->inst, &err), BC_ERR_SETTING);
    assert_non_null(strstr(err.message, "command: a ' quote is not closed"));
}

/* ------------------------------------------------- values a worker sends */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* This process's CPU time in s: the plugin's own work, whatever the load. */
static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The case for repro_worker.sh: batch 2, one sample, prompt 4,
 * response 8, greedy float32 (so it asks for the tokens). */
static bc_case repro_case(void) {
    return (bc_case){.struct_size = sizeof(bc_case), .batch_size = 2, .samples_per_prompt = 1, .prompt_length = 4,
                     .response_length = 8, .precision = "fp32", .precision_ops = &fp32_ops, .cache_policy = "retain",
                     .sampling = &greedy};
}

/* Starts repro_worker.sh with PROFILE, TOKENS ("" for none), DESCRIBE
 * (NULL: its own) and runs one rollout of repro_case(); the status of the
 * first hook that failed, err its message. */
static bc_status repro(fixture *f, const char *profile, const char *tokens, const char *describe,
                       bc_generation_stats *g, bc_error *err) {
    snprintf(f->command, sizeof f->command, "sh %s '%s' '%s'%s%s%s", REPRO_WORKER, profile, tokens,
             describe ? " '" : "", describe ? describe : "", describe ? "'" : "");
    f->settings.count = V_MODEL; /* its hello declares no settings */
    if (f->inst) f->ops->destroy(f->inst);
    f->inst = NULL;
    bc_status st = f->ops->create(test_plugin_host(), &f->settings, &f->inst, err);
    if (st != BC_OK) return st;
    bc_case c = repro_case();
    if ((st = f->ops->begin_case(f->inst, &c, err)) != BC_OK) return st;
    *g = unknown_stats();
    st = f->ops->generate(f->inst, g, err);
    f->ops->end_case(f->inst);
    return st;
}

static void expect_refused(fixture *f, const char *profile, const char *tokens, const char *describe,
                           const char *message_part) {
    bc_generation_stats g;
    bc_error err = {0};
    bc_status st = repro(f, profile, tokens, describe, &g, &err);
    if (st != BC_ERR_DEVICE) fail_msg("%s / %s: status %d (%s), expected a device error", profile, tokens, st, err.message);
    if (!strstr(err.message, message_part)) fail_msg("'%s' lacks '%s'", err.message, message_part);
}

#define GOOD_PROFILE "{\"generation_ms\":1.0,\"num_generated_tokens\":16,\"num_decode_forwards\":7"
#define GOOD_TOKENS "[[1,2,3,4,5,6,7,8],[9,10,11,12,13,14,15,299]]"

/* Every number of a profile is checked (type, finite, range for its
 * meaning, the case's shape) before it reaches the host; the issue's
 * reproduction (2^62 decode forwards in a batch-2 case) first. */
static void test_profile_values_checked(void **state) {
    fixture *f = *state;
    expect_refused(f, "{\"generation_ms\":1.0,\"num_generated_tokens\":16,\"num_decode_forwards\":4611686018427387904}",
                   GOOD_TOKENS, NULL, "worker min: generate: profile.num_decode_forwards = 4611686018427387904 is outside [0, 16]");
    static const struct {
        const char *extra, *message;
    } bad[] = {
        {",\"prompt_expansion_ms\":-5}", "profile.prompt_expansion_ms = -5 ms is outside [0, "},
        {",\"post_processing_ms\":1e308}", "profile.post_processing_ms = 1e+308 ms is outside [0, "},
        {",\"decode_forward_ms\":\"a\"}", "profile.decode_forward_ms = \"a\" is not a number"},
        {",\"time_to_first_token_ms\":1e9}", "profile.time_to_first_token_ms = 1e+09 ms is outside [0, "},
        {",\"peak_memory_bytes\":-1}", "profile.peak_memory_bytes = -1 is outside [0, 9007199254740992]"},
        {",\"peak_memory_bytes\":1.5}", "profile.peak_memory_bytes = 1.5 is not an integer"},
        {",\"num_prefill_forwards\":9}", "profile.num_prefill_forwards = 9 is outside [0, 8]"},
        {",\"continuous_batch_size\":-3}", "profile.continuous_batch_size = -3 is outside"},
        {",\"decode_step_ms\":[0.1,-1]}", "profile.decode_step_ms[1] = -1 ms is outside"},
        {",\"decode_step_ms\":7}", "profile.decode_step_ms = 7 is not a list"},
        {",\"decode_step_ms\":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]}", "decode_step_ms has 17 steps, more than the case's 16"},
    };
    char profile[512];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(profile, sizeof profile, "%s%s", GOOD_PROFILE, bad[i].extra);
        expect_refused(f, profile, GOOD_TOKENS, NULL, bad[i].message);
    }
    expect_refused(f, "{\"generation_ms\":1.0,\"num_generated_tokens\":4611686018427387904}", GOOD_TOKENS, NULL,
                   "profile.num_generated_tokens = 4611686018427387904 is not the case's rows x response_length = 2 x 8 = 16");
    expect_refused(f, "{\"generation_ms\":1.0,\"num_generated_tokens\":-16}", GOOD_TOKENS, NULL,
                   "profile.num_generated_tokens = -16 is outside");
    expect_refused(f, "{\"generation_ms\":1.0}", GOOD_TOKENS, NULL, "the reply has no profile.num_generated_tokens");
    expect_refused(f, "[1]", GOOD_TOKENS, NULL, "the reply has no \"profile\" object");
    /* describe's numbers too */
    expect_refused(f, GOOD_PROFILE "}", GOOD_TOKENS, "\"model\":\"m\",\"dtypes\":[\"float32\"],\"vocab_size\":1099511627776",
                   "worker min: describe: vocab_size = 1099511627776 is outside [4, 2147483647]");
    expect_refused(f, GOOD_PROFILE "}", GOOD_TOKENS, "\"model\":\"m\",\"dtypes\":[\"float32\"],\"vocab_size\":300,\"n_layers\":-2",
                   "worker min: describe: n_layers = -2 is outside [1, 2147483647]");
    /* an integer beyond int64 is named for what it is, not "not a JSON object" */
    expect_refused(f, "{\"generation_ms\":1.0,\"num_generated_tokens\":99999999999999999999}", GOOD_TOKENS, NULL,
                   "a line on stdout that is not JSON (column ");
    bc_generation_stats g;
    bc_error err = {0};
    expect_refused(f, "{\"generation_ms\":1.0,\"num_generated_tokens\":99999999999999999999}", GOOD_TOKENS, NULL,
                   "too big integer");
    /* and a sound profile passes, every value as sent */
    assert_int_equal(repro(f, GOOD_PROFILE ",\"prefill_forward_ms\":0.25,\"peak_memory_bytes\":9007199254740992}",
                           GOOD_TOKENS, NULL, &g, &err), BC_OK);
    assert_int_equal(g.num_generated_tokens, 16);
    assert_int_equal(g.num_decode_forwards, 7);
    assert_int_equal(g.num_decode_tokens, 14);
    assert_double_equal(g.prefill_forward_ms, 0.25, 0.0);
    bc_memory_stats m = {.struct_size = sizeof m, .host_peak_bytes = -1, .device_peak_bytes = -1};
    assert_int_equal(f->ops->read_memory(f->inst, &m, &err), BC_OK);
    assert_int_equal(m.host_peak_bytes, 9007199254740992LL);
}

/* Tokens are checked against the vocabulary (300) and the case's shape
 * (2 rows of 8) before the host compares or saves them. */
static void test_tokens_checked(void **state) {
    fixture *f = *state;
    static const struct {
        const char *tokens, *message;
    } bad[] = {
        {"[[1000000000000,2,3,4,5,6,7,8],[1,2,3,4,5,6,7,8]]", "tokens[0][0] = 1000000000000 is outside [0, 300)"},
        {"[[1,2,3,4,5,6,7,8],[1,2,3,4,5,6,7,-1]]", "tokens[1][7] = -1 is outside [0, 300)"},
        {"[[1,2,3,2147483648,5,6,7,8],[1,2,3,4,5,6,7,8]]", "tokens[0][3] = 2147483648 is outside"},
        {"[[1,2,3,4,5,6,7,300],[1,2,3,4,5,6,7,8]]", "tokens[0][7] = 300 is outside [0, 300)"},
        {"[[1,2,3,4,5,6,7,8,1,2,3,4,5,6,7,8]]", "tokens has 1 rows, the case has 2"},
        {"[[1,2,3,4,5,6,7],[1,2,3,4,5,6,7,8]]", "tokens[0] has 7 tokens, the case's response_length is 8"},
        {"[[1,2,3,4,5,6,7,8],[1,2,3,4,5,6,7,8,9]]", "tokens[1] has 9 tokens"},
        {"[[\"a\",2,3,4,5,6,7,8],[1,2,3,4,5,6,7,8]]", "tokens[0][0] = \"a\" is not an id in [0, 300)"},
        {"[[1,null,3,4,5,6,7,8],[1,2,3,4,5,6,7,8]]", "tokens[0][1] = null is not an id"},
        {"[[1,2,1.5,4,5,6,7,8],[1,2,3,4,5,6,7,8]]", "tokens[0][2] = 1.5 is not an id"},
        {"[7,[1,2,3,4,5,6,7,8]]", "tokens[0] = 7 is not a list of ids"},
        {"{}", "tokens = {} is not a list of rows"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) expect_refused(f, GOOD_PROFILE "}", bad[i].tokens, NULL, bad[i].message);
    expect_refused(f, GOOD_PROFILE "}", "", NULL, "the case asked for tokens (return_tokens) and the reply has none");
    /* a row of 1008 tokens for the 2 x 8 case */
    char big[8192] = "[[";
    for (int t = 0; t < 1008; t++) snprintf(big + strlen(big), sizeof big - strlen(big), t ? ",%d" : "%d", t % 300);
    strcat(big, "]]");
    expect_refused(f, GOOD_PROFILE "}", big, NULL, "tokens has 1 rows, the case has 2");
    bc_generation_stats g;
    bc_error err = {0};
    assert_int_equal(repro(f, GOOD_PROFILE "}", GOOD_TOKENS, NULL, &g, &err), BC_OK);
    assert_int_equal(g.token_rows, 2);
    assert_int_equal(g.token_cols, 8);
    assert_int_equal(g.tokens[0], 1);
    assert_int_equal(g.tokens[15], 299);
}

/* ------------------------------------------- rollout tokens, score, refit */

#define CAPS_DESCRIBE "\"model\":\"m\",\"dtypes\":[\"float32\"],\"vocab_size\":300,\"parameters\":1000,\"capabilities\":[%s]"
#define ALL_CAPS "\"rollout\",\"logprobs\",\"score\",\"refit\""
#define GOOD_LOGPROBS "[[-1,-1,-1,-1,-1,-1,-1,-1],[-2.5,-2.5,-2.5,-2.5,-2.5,-2.5,-2.5,-0.0]]"
#define GOOD_SCORE "\"logprobs\":[[-1,-1,-1,-1,-1,-1,-1,-1],[-2,-2,-2,-2,-2,-2,-2,-0.5]]"
#define GOOD_REFIT "\"source_bytes\":8000,\"engine_bytes\":4000,\"source\":\"host\""

/* repro_case()'s prompts (the host's synthetic ones, vocab 300) as JSON rows, into buf. */
static void repro_prompts(char *buf, size_t n) {
    int32_t ids[4];
    size_t len = (size_t)snprintf(buf, n, "[");
    for (uint32_t b = 0; b < 2; b++) {
        bc_synthetic_prompt(1234, b, 300, ids, 4);
        len += (size_t)snprintf(buf + len, n - len, "%s[%d,%d,%d,%d]", b ? "," : "", ids[0], ids[1], ids[2], ids[3]);
    }
    snprintf(buf + len, n - len, "]");
}

/* A generate reply's rollout field: PROMPTS ("" = the host's), RESPONSES
 * ("" = GOOD_TOKENS'), STOP ("" = both "length"), LOGPROBS (NULL = none). */
static void rollout_field(char *buf, size_t n, const char *prompts, const char *responses, const char *stop,
                          const char *logprobs) {
    char sent[256];
    repro_prompts(sent, sizeof sent);
    snprintf(buf, n, "\"rollout\":{\"prompt_ids\":%s,\"response_ids\":%s,\"stop\":%s%s%s}", prompts[0] ? prompts : sent,
             responses[0] ? responses : GOOD_TOKENS, stop[0] ? stop : "[\"length\",\"length\"]",
             logprobs ? ",\"logprobs\":" : "", logprobs ? logprobs : "");
}

/* Starts repro_worker.sh with the capabilities CAPS, the generate reply's
 * extra fields MORE and the score and refit replies; begins repro_case()
 * and runs one rollout, leaving the case open (the caller ends it). */
static bc_status open_rollout(fixture *f, const char *profile, const char *caps, const char *more, const char *score,
                              const char *refit, bc_error *err) {
    char describe[512];
    snprintf(describe, sizeof describe, CAPS_DESCRIBE, caps);
    snprintf(f->command, sizeof f->command, "sh %s '%s' '%s' '%s' '%s' '%s' '%s'", REPRO_WORKER, profile, GOOD_TOKENS,
             describe, more, score, refit);
    f->settings.count = V_MODEL;
    if (f->inst) f->ops->destroy(f->inst);
    f->inst = NULL;
    bc_status st = f->ops->create(test_plugin_host(), &f->settings, &f->inst, err);
    if (st != BC_OK) return st;
    bc_case c = repro_case();
    if ((st = f->ops->begin_case(f->inst, &c, err)) != BC_OK) return st;
    bc_generation_stats g = unknown_stats();
    return f->ops->generate(f->inst, &g, err);
}

static void expect_line(bc_status st, bc_status want, const bc_error *err, const char *message_part) {
    if (st != want) fail_msg("status %d (%s), expected %d", st, err->message, want);
    if (!strstr(err->message, message_part)) fail_msg("'%s' lacks '%s'", err->message, message_part);
    if (strchr(err->message, '\n')) fail_msg("'%s' is more than one line", err->message);
}

/* A sound rollout is read back as sent; the score request sends its rows and
 * the scores come back in the host's layout; refit's figures as sent. */
static void test_rollout_score_refit(void **state) {
    fixture *f = *state;
    char more[1024];
    rollout_field(more, sizeof more, "", "", "", GOOD_LOGPROBS);
    bc_error err = {0};
    bc_status st = open_rollout(f, GOOD_PROFILE "}", ALL_CAPS, more, GOOD_SCORE, GOOD_REFIT, &err);
    if (st != BC_OK) fail_msg("%s", err.message);
    bc_rollout_tokens ro = {.struct_size = sizeof ro, .rows = -1};
    assert_int_equal(f->ops->read_rollout(f->inst, &ro, &err), BC_OK);
    assert_int_equal(ro.rows, 2);
    assert_int_equal(ro.prompt_stride, 4);
    assert_int_equal(ro.response_stride, 8);
    int32_t ids[4];
    bc_synthetic_prompt(1234, 1, 300, ids, 4);
    assert_int_equal(ro.prompt_lengths[1], 4);
    assert_int_equal(ro.prompt_tokens[4 + 3], ids[3]);
    assert_int_equal(ro.response_lengths[0], 8);
    assert_int_equal(ro.response_tokens[15], 299);
    assert_int_equal(ro.row_stop[1], BC_ROW_STOP_LENGTH);
    assert_non_null(ro.response_logprobs);
    assert_double_equal(ro.response_logprobs[8], -2.5, 0.0);
    assert_double_equal(ro.response_logprobs[15], 0.0, 0.0);
    float lp[16];
    for (int i = 0; i < 16; i++) lp[i] = 1.0f; /* not a log-probability: each must be written */
    assert_int_equal(f->ops->score(f->inst, &ro, lp, &err), BC_OK);
    assert_double_equal(lp[0], -1.0, 0.0);
    assert_double_equal(lp[8], -2.0, 0.0);
    assert_double_equal(lp[15], -0.5, 0.0);
    bc_refit_stats rs = {.struct_size = sizeof rs, .source_bytes = -1, .engine_bytes = -1};
    assert_int_equal(f->ops->refit(f->inst, &rs, &err), BC_OK);
    assert_int_equal(rs.source_bytes, 8000);
    assert_int_equal(rs.engine_bytes, 4000);
    assert_string_equal(rs.source, "host");
    f->ops->end_case(f->inst);
    /* "rollout" alone: the tokens without log-probabilities */
    rollout_field(more, sizeof more, "", "", "", NULL);
    if ((st = open_rollout(f, GOOD_PROFILE "}", "\"rollout\"", more, "", "", &err)) != BC_OK) fail_msg("%s", err.message);
    ro = (bc_rollout_tokens){.struct_size = sizeof ro};
    assert_int_equal(f->ops->read_rollout(f->inst, &ro, &err), BC_OK);
    assert_null(ro.response_logprobs);
    assert_int_equal(ro.rows, 2);
    f->ops->end_case(f->inst);
}

/* An engine whose describe lists none of them: read_rollout hands back the
 * host's prompts and the engine's tokens (asked for in every case, sampled
 * ones too), every row stopped at the length, no log-probabilities; score
 * and refit refuse in one line naming the engine, sending nothing. */
static void test_engine_without_them(void **state) {
    fixture *f = *state;
    bc_error err = {0};
    bc_status st = open_rollout(f, GOOD_PROFILE "}", "", "", "", "", &err);
    if (st != BC_OK) fail_msg("%s", err.message);
    bc_rollout_tokens ro = {.struct_size = sizeof ro, .rows = -1};
    assert_int_equal(f->ops->read_rollout(f->inst, &ro, &err), BC_OK);
    int32_t ids[4];
    bc_synthetic_prompt(1234, 1, 300, ids, 4);
    assert_int_equal(ro.rows, 2);
    assert_int_equal(ro.prompt_tokens[4], ids[0]);
    assert_int_equal(ro.response_tokens[15], 299);
    assert_int_equal(ro.response_lengths[1], 8);
    assert_int_equal(ro.row_stop[0], BC_ROW_STOP_LENGTH);
    assert_null(ro.response_logprobs);
    float lp[16];
    expect_line(f->ops->score(f->inst, &ro, lp, &err), BC_ERR_UNSUPPORTED, &err, "worker engine 'min' has no score request");
    bc_refit_stats rs = {.struct_size = sizeof rs};
    expect_line(f->ops->refit(f->inst, &rs, &err), BC_ERR_UNSUPPORTED, &err, "worker engine 'min' has no refit request");
    f->ops->end_case(f->inst);
    /* a sampled case of the fake (its tokens only when asked): the rollout is still there, the
     * report's tokens (the greedy float32 agreement) are not */
    f->ops->destroy(f->inst);
    f->inst = NULL;
    snprintf(f->command, sizeof f->command, "%s", FAKE_WORKER);
    f->settings.count = N_VALUES;
    create_ok(f);
    bc_sampling sampled = {.struct_size = sizeof sampled, .temperature = 1.0, .top_p = 1.0, .seed = 99};
    bc_case c = make_case(3, &fp32_ops);
    c.sampling = &sampled;
    assert_int_equal(f->ops->begin_case(f->inst, &c, &err), BC_OK);
    bc_generation_stats g = unknown_stats();
    if (f->ops->generate(f->inst, &g, &err) != BC_OK) fail_msg("%s", err.message);
    assert_null(g.tokens);
    ro = (bc_rollout_tokens){.struct_size = sizeof ro};
    assert_int_equal(f->ops->read_rollout(f->inst, &ro, &err), BC_OK);
    assert_int_equal(ro.rows, 6);
    int32_t p[8];
    bc_synthetic_prompt(99, 2, 50272, p, 8);
    for (int t = 0; t < 4; t++) { /* the fake's rule: (prompt[t % 8] + t) % vocab; row 5 is prompt 2 */
        assert_int_equal(ro.response_tokens[5 * ro.response_stride + t], (p[t % 8] + t) % 50272);
        assert_int_equal(ro.prompt_tokens[5 * ro.prompt_stride + t], p[t]);
    }
    f->ops->end_case(f->inst);
}

/* Every value of a generate reply's rollout is checked before use. */
static void test_rollout_checked(void **state) {
    fixture *f = *state;
    char sent[256], wrong_prompt[256];
    repro_prompts(sent, sizeof sent);
    snprintf(wrong_prompt, sizeof wrong_prompt, "%s", sent);
    wrong_prompt[2] = wrong_prompt[2] == '9' ? '8' : '9'; /* the first id's first digit */
    static const struct {
        const char *responses, *stop, *logprobs, *message;
    } bad[] = {
        {"[[1,2,3,4,5,6,7,8]]", "", GOOD_LOGPROBS, "rollout.response_ids has 1 rows, the case has 2"},
        {"[[1,2,3,4,5,6,7,300],[9,10,11,12,13,14,15,299]]", "", GOOD_LOGPROBS,
         "rollout.response_ids[0][7] = 300 is outside [0, 300)"},
        {"[[1,2,3,4,5,6,7,8],[9,10,11,12,13,14,15,-4]]", "", GOOD_LOGPROBS, "rollout.response_ids[1][7] = -4 is outside"},
        {"[[1,2,3,4,5,6,7,8,9],[9,10,11,12,13,14,15,299]]", "", GOOD_LOGPROBS,
         "rollout.response_ids[0] has 9 ids, outside [1, 8]"},
        {"[[1,2,3,4,5,6,7],[9,10,11,12,13,14,15,299]]", "", GOOD_LOGPROBS,
         "rollout.stop[0] = \"length\" but the row has 7 ids, not the case's response_length 8"},
        {"", "[\"length\",\"maybe\"]", GOOD_LOGPROBS, "rollout.stop[1] = \"maybe\" is not \"eos\" or \"length\""},
        {"", "[\"length\"]", GOOD_LOGPROBS, "rollout.stop has 1 rows, the case has 2"},
        {"", "", "[[-1,-1,-1,-1,-1,-1,-1,-1],[-1,-1,-1,0.5,-1,-1,-1,-1]]",
         "generate: rollout.logprobs[1][3] = 0.5 is above 0.001 (a log-probability)"},
        {"", "", "[[-1,-1,-1,-1,-1,-1,-1,-1],[-1,-1,-1,\"nan\",-1,-1,-1,-1]]",
         "rollout.logprobs[1][3] = \"nan\" is not a number (a log-probability)"},
        {"", "", "[[-1,-1,-1,-1,-1,-1,-1,-1e300],[-1,-1,-1,-1,-1,-1,-1,-1]]",
         "rollout.logprobs[0][7] = -1e+300 is not a finite float (a log-probability)"},
        {"", "", "[[-1,-1,-1,-1,-1,-1,-1,-1]]", "rollout.logprobs has 1 rows, 2 were generated"},
        {"", "", "[[-1,-1,-1,-1,-1,-1,-1],[-1,-1,-1,-1,-1,-1,-1,-1]]",
         "rollout.logprobs[0] has 7 values, the row's response has 8 tokens"},
        {"", "", NULL, "the engine keeps log-probabilities (describe's capabilities) and rollout.logprobs is missing"},
        {"[[1,2,3,4,5,6,7,8],[9,10,11,12,13,14,15,298]]", "", GOOD_LOGPROBS,
         "tokens[1][7] is not rollout.response_ids[1][7]"},
    };
    char more[1024];
    bc_error err = {0};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rollout_field(more, sizeof more, "", bad[i].responses, bad[i].stop, bad[i].logprobs);
        expect_line(open_rollout(f, GOOD_PROFILE "}", ALL_CAPS, more, "", "", &err), BC_ERR_DEVICE, &err,
                    bad[i].message);
        bc_rollout_tokens ro = {.struct_size = sizeof ro};
        assert_int_equal(f->ops->read_rollout(f->inst, &ro, &err), BC_ERR_INTERNAL); /* nothing kept */
        f->ops->end_case(f->inst);
    }
    /* the prompt as it ran must be the one the host sent */
    rollout_field(more, sizeof more, wrong_prompt, "", "", GOOD_LOGPROBS);
    expect_line(open_rollout(f, GOOD_PROFILE "}", ALL_CAPS, more, "", "", &err), BC_ERR_DEVICE, &err,
                "rollout.prompt_ids[0][0] = ");
    assert_non_null(strstr(err.message, "is not the id the host sent"));
    rollout_field(more, sizeof more, "[[1,2,3],[4,5,6]]", "", "", GOOD_LOGPROBS);
    expect_line(open_rollout(f, GOOD_PROFILE "}", ALL_CAPS, more, "", "", &err), BC_ERR_DEVICE, &err,
                "rollout.prompt_ids[0] has 3 ids, its prompt has 4");
    /* NaN is not JSON: the line is refused for what it is */
    rollout_field(more, sizeof more, "", "", "", "[[-1,-1,-1,-1,-1,-1,-1,NaN],[-1,-1,-1,-1,-1,-1,-1,-1]]");
    expect_line(open_rollout(f, GOOD_PROFILE "}", ALL_CAPS, more, "", "", &err), BC_ERR_DEVICE, &err,
                "a line on stdout that is not JSON");
    /* no rollout at all, and a rollout of the wrong type */
    expect_line(open_rollout(f, GOOD_PROFILE "}", ALL_CAPS, "", "", "", &err), BC_ERR_DEVICE, &err,
                "the case asked for the rollout (return_rollout) and the reply has none");
    expect_line(open_rollout(f, GOOD_PROFILE "}", ALL_CAPS, "\"rollout\":[1]", "", "", &err), BC_ERR_DEVICE, &err,
                "rollout = [1] is not an object");
    /* an eos row of 7 ids: the profile must count 15 tokens */
    rollout_field(more, sizeof more, "", "[[1,2,3,4,5,6,7],[9,10,11,12,13,14,15,299]]", "[\"eos\",\"length\"]",
                  "[[-1,-1,-1,-1,-1,-1,-1],[-1,-1,-1,-1,-1,-1,-1,-1]]");
    expect_line(open_rollout(f, GOOD_PROFILE "}", "\"logprobs\"", more, "", "", &err), BC_ERR_DEVICE, &err,
                "profile.num_generated_tokens = 16 is not the rollout's response lengths summed = 15");
    f->ops->end_case(f->inst);
}

/* Every value of a score reply is checked; the scorer's own vocabulary
 * bounds the rows the host sends. */
static void test_score_checked(void **state) {
    fixture *f = *state;
    static const struct {
        const char *score, *message;
    } bad[] = {
        {"\"logprobs\":[[-1,-1,-1,-1,-1,-1,-1,-1]]", "worker min: score: logprobs has 1 rows, 2 were sent"},
        {"\"logprobs\":[[-1,-1,-1,-1,-1,-1,-1,-1],[-1,-1,-1,-1,-1,-1,-1,-1],[-1]]", "logprobs has 3 rows, 2 were sent"},
        {"\"logprobs\":[[-1,-1,-1,-1,-1,-1,-1,-1],[-1,-1,-1,-1,-1,-1,-1]]",
         "score: logprobs[1] has 7 values, the row's response has 8 tokens"},
        {"\"logprobs\":[[-1,-1,-1,-1,-1,-1,-1,-1],[-1,-1,-1,-1,-1,-1,-1,0.01]]",
         "score: logprobs[1][7] = 0.01 is above 0.001 (a log-probability)"},
        {"\"logprobs\":[[-1,-1,-1,-1,-1,-1,-1,-1],[-1,-1,\"NaN\",-1,-1,-1,-1,-1]]",
         "score: logprobs[1][2] = \"NaN\" is not a number"},
        {"\"logprobs\":[[-1,-1,-1,-1,-1,-1,-1,-1],[-1,-1,-1,-1,-1,-1,-1,-1e39]]",
         "score: logprobs[1][7] = -1e+39 is not a finite float"},
        {"\"logprobs\":7", "score: logprobs = 7 is not a list of rows"},
        {"\"scores\":[]", "score: the reply has no logprobs"},
    };
    char more[1024];
    rollout_field(more, sizeof more, "", "", "", GOOD_LOGPROBS);
    bc_error err = {0};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        bc_status st = open_rollout(f, GOOD_PROFILE "}", ALL_CAPS, more, bad[i].score, GOOD_REFIT, &err);
        if (st != BC_OK) fail_msg("%s", err.message);
        bc_rollout_tokens ro = {.struct_size = sizeof ro};
        assert_int_equal(f->ops->read_rollout(f->inst, &ro, &err), BC_OK);
        float lp[16];
        expect_line(f->ops->score(f->inst, &ro, lp, &err), BC_ERR_DEVICE, &err, bad[i].message);
        f->ops->end_case(f->inst);
    }
    /* the host's rows against the scorer's vocabulary (300) */
    bc_status st = open_rollout(f, GOOD_PROFILE "}", ALL_CAPS, more, GOOD_SCORE, GOOD_REFIT, &err);
    if (st != BC_OK) fail_msg("%s", err.message);
    int32_t prompt[2 * 4] = {5, 6, 7, 8, 5, 6, 7, 8}, response[2 * 8] = {1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 300};
    int64_t plen[2] = {4, 4}, rlen[2] = {8, 8};
    bc_rollout_tokens in = {.struct_size = sizeof in, .rows = 2, .prompt_tokens = prompt, .prompt_lengths = plen,
                            .prompt_stride = 4, .response_tokens = response, .response_lengths = rlen,
                            .response_stride = 8};
    float lp[16];
    expect_line(f->ops->score(f->inst, &in, lp, &err), BC_ERR_INFEASIBLE, &err,
                "score: row 1's response id 7 = 300 is outside the scorer's vocabulary [0, 300)");
    f->ops->end_case(f->inst);
}

/* A refit reply's byte counts and source are checked. */
static void test_refit_checked(void **state) {
    fixture *f = *state;
    static const struct {
        const char *refit, *message;
    } bad[] = {
        {"\"source_bytes\":4611686018427387904,\"engine_bytes\":4000,\"source\":\"host\"",
         "worker min: refit: source_bytes = 4611686018427387904 is outside [1, 67116864]"},
        {"\"source_bytes\":8000,\"engine_bytes\":67116865,\"source\":\"host\"", "refit: engine_bytes = 67116865 is outside"},
        {"\"source_bytes\":0,\"engine_bytes\":4000,\"source\":\"host\"", "refit: source_bytes = 0 is outside [1, "},
        {"\"source_bytes\":8000.5,\"engine_bytes\":4000,\"source\":\"host\"", "refit: source_bytes = 8000.5 is not an integer"},
        {"\"source_bytes\":8000,\"source\":\"host\"", "refit: the reply has no engine_bytes (an integer)"},
        {"\"source_bytes\":8000,\"engine_bytes\":4000,\"source\":\"Host memory\"", "refit: source = \"Host memory\" is not a word"},
        {"\"source_bytes\":8000,\"engine_bytes\":4000", "refit: source = (missing) is not a word"},
    };
    char more[1024];
    rollout_field(more, sizeof more, "", "", "", GOOD_LOGPROBS);
    bc_error err = {0};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        bc_status st = open_rollout(f, GOOD_PROFILE "}", ALL_CAPS, more, GOOD_SCORE, bad[i].refit, &err);
        if (st != BC_OK) fail_msg("%s", err.message);
        bc_refit_stats rs = {.struct_size = sizeof rs, .source_bytes = -1, .engine_bytes = -1};
        expect_line(f->ops->refit(f->inst, &rs, &err), BC_ERR_DEVICE, &err, bad[i].message);
        assert_int_equal(rs.source_bytes, -1); /* nothing written */
        f->ops->end_case(f->inst);
    }
}

/* A hello of 80,000 settings is refused at once (before: 47.6 s of a
 * quadratic duplicate check); 4,000 are read, and a duplicate among them
 * is found. */
static void test_hello_settings_capped(void **state) {
    fixture *f = *state;
    double t0 = now_s(), c0 = cpu_s();
    hello_fails(f, "--extra-settings 80000", 60.0, "the hello declares 80004 settings; at most 4096 are allowed");
    double took = now_s() - t0, cpu = cpu_s() - c0;
    printf("a hello of 80004 settings refused in %.3f s (%.3f s of benchctl's CPU)\n", took, cpu);
    assert_true(cpu < 10.0); /* the quadratic check took 47.6 s */
    hello_fails(f, "--extra-settings 4000 --dup-setting 1", 30.0, "the hello declares setting 'model' twice");
    fake_args(f, "--extra-settings 4000");
    const bc_setting_desc *rows = NULL;
    uint32_t n = 0, size = 0;
    bc_error err = {0};
    bc_settings own = f->settings;
    own.count = V_MODEL;
    t0 = now_s(), c0 = cpu_s();
    assert_int_equal(f->desc->more_settings(test_plugin_host(), &own, &rows, &n, &size, &err), BC_OK);
    printf("a hello of 4004 settings read in %.3f s (%.3f s of CPU)\n", now_s() - t0, cpu_s() - c0);
    assert_int_equal(n, 4004);
    assert_string_equal(rows[4003].name, "x3999");
    f->desc->free_more_settings(rows, n);
}

/* A line that is JSON but no object is named for what it is. */
static void test_line_named_for_what_it_is(void **state) {
    fixture *f = *state;
    snprintf(f->command, sizeof f->command, "sh -c 'echo [1,2]; sleep 5'");
    bc_error err = {0};
    assert_int_equal(f->ops->create(test_plugin_host(), &f->settings, &f->inst, &err), BC_ERR_DEVICE);
    if (!strstr(err.message, "hello: the worker wrote a line on stdout that is JSON, but an array, not an object: \"[1,2]\""))
        fail_msg("'%s'", err.message);
}

/* The pid the fake's orphan wrote to path. */
static pid_t orphan_pid(const char *path) {
    FILE *fp = fopen(path, "r");
    long pid = 0;
    if (!fp || fscanf(fp, "%ld", &pid) != 1) fail_msg("no orphan pid in %s", path);
    fclose(fp);
    return (pid_t)pid;
}

/* 1 when pid is gone (reaped) within 3 s. */
static int gone(pid_t pid) {
    double end = now_s() + 3.0;
    while (now_s() < end) {
        if (kill(pid, 0) != 0 && errno == ESRCH) return 1;
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

/* A worker's child that leaves its session (setsid) and holds stdout: the
 * worker's exit is still noticed at once (not a 30 s "sent nothing"), and
 * the child dies with it; when the worker is stopped normally, too. */
static void test_descendants_reaped(void **state) {
    fixture *f = *state;
    char pidfile[] = "/tmp/bc_orphan.XXXXXX";
    int fd = mkstemp(pidfile);
    assert_true(fd >= 0);
    close(fd);
    char args[256];
    snprintf(args, sizeof args, "--orphan %s --fail exit --at generate", pidfile);
    fake_args(f, args);
    f->values[V_TIMEOUT].f = 30.0;
    create_ok(f);
    pid_t orphan = orphan_pid(pidfile);
    assert_true(orphan > 0);
    assert_int_equal(kill(orphan, 0), 0);
    assert_true(getsid(orphan) == orphan); /* out of the worker's session and group */
    bc_generation_stats g;
    bc_error err = {0};
    double t0 = now_s();
    assert_int_equal(run_case(f, 2, &g, &err), BC_ERR_DEVICE);
    double took = now_s() - t0;
    printf("the worker's exit noticed in %.3f s with its orphan holding stdout\n", took);
    if (!strstr(err.message, "the worker exited with status 3")) fail_msg("'%s'", err.message);
    assert_true(took < 20.0);
    assert_true(gone(orphan));
    f->ops->destroy(f->inst);
    f->inst = NULL;

    snprintf(args, sizeof args, "--orphan %s", pidfile);
    fake_args(f, args);
    create_ok(f);
    orphan = orphan_pid(pidfile);
    assert_int_equal(kill(orphan, 0), 0);
    assert_int_equal(run_case(f, 2, &g, &err), BC_OK);
    f->ops->destroy(f->inst);
    f->inst = NULL;
    assert_true(gone(orphan));
    unlink(pidfile);
}

/* --------------------------------------------------------------- prompts */

/* The prompts the worker sends are the OPT engine's: prompt b's token t is
 * its row generator's t-th draw, mapped into [3, V). */
static void test_prompts_are_opts(void **state) {
    (void)state;
    const uint64_t seeds[] = {0, 1234, 0xffffffffffffffffull};
    for (size_t k = 0; k < 3; k++)
        for (uint64_t b = 0; b < 5; b++) {
            int32_t ids[64];
            bc_synthetic_prompt(seeds[k], b, 50272, ids, 64);
            eng_rng g = eng_rng_for_row(seeds[k] ^ 0x70726f6d7074ull, b);
            for (int t = 0; t < 64; t++) assert_int_equal(ids[t], 3 + (int32_t)(eng_rng_next(&g) % 50269u));
        }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_hello_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty_command_has_no_more_settings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rollout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_describe_device, setup, teardown),
        cmocka_unit_test_setup_teardown(test_metrics, setup, teardown),
        cmocka_unit_test_setup_teardown(test_configure_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crash, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hang, setup, teardown),
        cmocka_unit_test_setup_teardown(test_garbage, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrong_id, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slow_within_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_error_reply, setup, teardown),
        cmocka_unit_test_setup_teardown(test_version_mismatch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_hello, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exit_before_hello, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hello_without_its_fields, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hello_reserved_setting, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hello_reserved_metric, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_a_program, setup, teardown),
        cmocka_unit_test_setup_teardown(test_relative_command, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unclosed_quote, setup, teardown),
        cmocka_unit_test_setup_teardown(test_release_flag_and_continuous_profile, setup, teardown),
        cmocka_unit_test_setup_teardown(test_profile_values_checked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tokens_checked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hello_settings_capped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_descendants_reaped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_line_named_for_what_it_is, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rollout_score_refit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_engine_without_them, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rollout_checked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_score_checked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refit_checked, setup, teardown),
        cmocka_unit_test(test_prompts_are_opts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
