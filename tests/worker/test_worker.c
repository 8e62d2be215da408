/* test_worker.c: the worker backend (plugins/worker), loaded with dlopen as
 * the host loads it, driving tests/worker/fake_worker.c (FAKE_WORKER): the
 * protocol (hello table, configure, describe, a case's rollouts, cache
 * hooks), and every way a worker can fail (crash, exit, hang, garbage, a
 * wrong reply id, another protocol version, no hello, an error reply), each
 * failing only the hook talking to it, with its stderr in the message, and
 * the next case running on a restarted worker. Also: the host's synthetic
 * prompts are the native engine's (plugins/common/synthetic_prompts.h against
 * the engine's row generators, engine/rollout/sampling.h).
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
    char command[1024];
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
    fail_then_recover(*state, "garbage", 10.0, "not a JSON object on stdout: \"Traceback");
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
        cmocka_unit_test(test_prompts_are_opts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
