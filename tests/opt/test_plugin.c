/* test_plugin.c: the `opt` backend through the plugin ABI, as benchctl uses
 * it: dlopen build/plugins/benchctl-opt.so, create with settings, begin_case,
 * the three stages, memory accounting (plan == what is held), save_tokens,
 * cache release/acquire, precision switches, the plan of a checkpoint (its
 * config.json's shape, before the weights load), and the errors (bad
 * precision, cuda, checkpoint). A minimal host (stdio output) stands in for benchctl's.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../plugins/plugin_dl.h"
#include "checkpoint.h"

/* ------------------------------------------------------------ a tiny host */

struct bc_output {
    FILE *f;
    char path[512];
};

static void h_log(const bc_host *h, bc_log_level level, const char *fmt, ...) {
    (void)h, (void)level, (void)fmt;
}
static uint64_t h_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
static bc_output *h_open(const bc_host *h, const char *path, bc_error *err) {
    (void)h;
    bc_output *o = calloc(1, sizeof *o);
    snprintf(o->path, sizeof o->path, "%s", path);
    o->f = fopen(path, "w");
    if (!o->f) {
        free(o);
        bc_error_set(err, BC_ERR_IO, "cannot open %s", path);
        return NULL;
    }
    return o;
}
static bc_status h_write(bc_output *o, const void *d, size_t n, bc_error *err) {
    (void)err;
    fwrite(d, 1, n, o->f);
    return BC_OK;
}
static bc_status h_printf(bc_output *o, bc_error *err, const char *fmt, ...) {
    (void)err;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(o->f, fmt, ap);
    va_end(ap);
    return BC_OK;
}
static bc_status h_commit(bc_output *o, bc_error *err) {
    (void)err;
    fclose(o->f);
    free(o);
    return BC_OK;
}
static void h_abort(bc_output *o) {
    fclose(o->f);
    remove(o->path);
    free(o);
}

static const bc_host host = {sizeof(bc_host), BENCHCTL_ABI_MAJOR, BENCHCTL_ABI_MINOR, "test", h_log, h_now,
                             h_open, h_write, h_printf, h_commit, h_abort, 0, NULL};

static void no_conv(const void *s, float *d, size_t n) { (void)s, (void)d, (void)n; }
static void no_conv2(const float *s, void *d, size_t n) { (void)s, (void)d, (void)n; }
static const bc_precision_ops p_bf16 = {sizeof(bc_precision_ops), "bfloat16", 2, no_conv, no_conv2, 5e-2};
static const bc_precision_ops p_fp32 = {sizeof(bc_precision_ops), "float32", 4, no_conv, no_conv2, 1e-4};
static const bc_precision_ops p_int8 = {sizeof(bc_precision_ops), "int8", 1, no_conv, no_conv2, 1e-1};

/* ------------------------------------------------------------- settings */

typedef struct fixture {
    void *dl;
    const bc_plugin_desc *d;
    const bc_backend_ops *ops;
    bc_setting_value v[32];
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    f->d = test_plugin_open("opt", &f->dl);
    f->ops = f->d->ops;
    assert_true(f->d->n_settings <= 32);
    for (uint32_t i = 0; i < f->d->n_settings; i++) {
        const bc_setting_desc *s = &f->d->settings[i];
        f->v[i].i = s->default_int;
        f->v[i].f = s->default_float;
        f->v[i].s = s->default_string;
    }
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    dlclose(f->dl);
    free(f);
    return 0;
}

static bc_setting_value *setting(fixture *f, const char *name) {
    for (uint32_t i = 0; i < f->d->n_settings; i++)
        if (strcmp(f->d->settings[i].name, name) == 0) return &f->v[i];
    fail_msg("no setting %s", name);
    return NULL;
}

static bc_case make_case(const bc_precision_ops *p, const char *pname) {
    bc_case c = {.struct_size = sizeof(bc_case), .index = 0, .batch_size = 1, .samples_per_prompt = 2,
                 .prompt_length = 4, .response_length = 3, .precision = pname, .precision_ops = p,
                 .cache_policy = "retain", .sampling = {0.0, 1.0, 0, 5}};
    return c;
}

/* ---------------------------------------------------------------- tests */

static void test_descriptor(void **state) {
    fixture *f = *state;
    test_plugin_check_header(f->d, BC_KIND_BACKEND, "opt");
    const char *names[] = {"model", "checkpoint", "weights_seed", "threads", "device", "stop_at_eos",
                           "shared_prefill", "prompts_file", "save_tokens"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) assert_non_null(setting(f, names[i]));
    assert_string_equal(setting(f, "model")->s, "125m");
    const bc_backend_ops *o = f->ops;
    assert_true(o->struct_size == sizeof(bc_backend_ops));
    assert_non_null(o->plan_memory), assert_non_null(o->cache_release), assert_non_null(o->cache_acquire);
    assert_non_null(o->read_memory), assert_non_null(o->reset_peak_memory);
}

static char *read_all(const char *path) {
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    char *buf = calloc(1, 1 << 16);
    size_t n = fread(buf, 1, (1 << 16) - 1, fp);
    buf[n] = '\0';
    fclose(fp);
    return buf;
}

static void test_rollout_and_memory(void **state) {
    fixture *f = *state;
    char path[] = "/tmp/bc_opt_tokens_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fclose(fdopen(fd, "w"));
    setting(f, "threads")->i = 2;
    setting(f, "save_tokens")->s = path;
    void *inst = NULL;
    bc_error err = {0};
    assert_int_equal(f->ops->create(&host, f->v, &inst, &err), BC_OK);
    bc_backend_info info = {.struct_size = sizeof info};
    assert_int_equal(f->ops->describe(inst, &info, &err), BC_OK);
    assert_non_null(strstr(info.model, "opt-125m"));
    assert_non_null(strstr(info.model, "synthetic"));
    assert_string_equal(info.device, "cpu");

    bc_case c = make_case(&p_bf16, "bf16");
    bc_memory_stats plan = {.struct_size = sizeof plan}, mem = {.struct_size = sizeof mem};
    assert_int_equal(f->ops->plan_memory(inst, &c, &plan, &err), BC_OK);
    /* 12 layers x 2 rows x 7 tokens x 768 x 2 bytes, for K and for V */
    assert_int_equal(plan.kv_cache_bytes, 2 * 12 * 2 * 7 * 768 * 2);
    assert_true(plan.weights_bytes > 2 * 125000000ll * 2 / 2 && plan.weights_bytes < 2 * 170000000ll);
    assert_int_equal(f->ops->begin_case(inst, &c, &err), BC_OK);
    assert_int_equal(f->ops->read_memory(inst, &mem, &err), BC_OK);
    assert_int_equal(mem.weights_bytes, plan.weights_bytes);
    assert_int_equal(mem.kv_cache_bytes, plan.kv_cache_bytes);
    assert_int_equal(mem.workspace_bytes, plan.workspace_bytes);
    assert_int_equal(mem.host_peak_bytes, plan.host_peak_bytes);
    assert_int_equal(mem.device_peak_bytes, -1);

    assert_int_equal(f->ops->expand_prompts(inst, &err), BC_OK);
    bc_generation_stats g = {.struct_size = sizeof g};
    assert_int_equal(f->ops->generate(inst, &g, &err), BC_OK);
    assert_int_equal(g.returned_response_length, 3);
    assert_int_equal(g.num_generated_tokens, 6);
    assert_int_equal(g.num_decode_forwards, 2);
    assert_true(g.prefill_forward_ms > 0 && g.decode_forward_ms > 0);
    assert_int_equal(f->ops->post_process(inst, &err), BC_OK);
    char *first = read_all(path);
    int lines = 0, ids = 0;
    for (char *p = first; *p; p++) lines += *p == '\n';
    for (char *t = strtok(first, " \n"); t; t = strtok(NULL, " \n")) ids++;
    assert_int_equal(lines, 2);
    assert_int_equal(ids, 6);
    free(first);
    first = read_all(path);

    /* release: the cache goes, the peak stays; acquire: the same greedy tokens */
    assert_int_equal(f->ops->cache_release(inst, &err), BC_OK);
    f->ops->reset_peak_memory(inst);
    assert_int_equal(f->ops->read_memory(inst, &mem, &err), BC_OK);
    assert_int_equal(mem.host_peak_bytes, plan.host_peak_bytes - plan.kv_cache_bytes - plan.workspace_bytes);
    assert_int_equal(f->ops->cache_acquire(inst, &err), BC_OK);
    assert_int_equal(f->ops->read_memory(inst, &mem, &err), BC_OK);
    assert_int_equal(mem.host_peak_bytes, plan.host_peak_bytes);
    assert_int_equal(f->ops->expand_prompts(inst, &err), BC_OK);
    assert_int_equal(f->ops->generate(inst, &g, &err), BC_OK);
    assert_int_equal(f->ops->post_process(inst, &err), BC_OK);
    char *second = read_all(path);
    assert_string_equal(first, second);
    free(first), free(second);
    f->ops->end_case(inst);

    /* another precision: weights rebuilt in fp32, twice the bytes of the matrices */
    bc_case c32 = make_case(&p_fp32, "fp32");
    assert_int_equal(f->ops->begin_case(inst, &c32, &err), BC_OK);
    assert_int_equal(f->ops->read_memory(inst, &mem, &err), BC_OK);
    assert_true(mem.weights_bytes > plan.weights_bytes * 19 / 10);
    assert_int_equal(mem.kv_cache_bytes, 2 * plan.kv_cache_bytes);
    f->ops->end_case(inst);

    /* a precision with no kernels is refused by name */
    bc_case c8 = make_case(&p_int8, "int8");
    assert_int_equal(f->ops->begin_case(inst, &c8, &err), BC_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.message, "int8"));
    f->ops->end_case(inst);
    f->ops->destroy(inst);
    remove(path);
}

static void test_errors(void **state) {
    fixture *f = *state;
    void *inst = NULL;
    bc_error err = {0};
    setting(f, "device")->s = "cuda";
    bc_status cs = f->ops->create(&host, f->v, &inst, &err);
    if (cs == BC_OK) { /* a CUDA build: a case fails without a GPU, not the run (docs/cuda.md) */
        bc_case cc = make_case(&p_bf16, "bf16");
        bc_status bs = f->ops->begin_case(inst, &cc, &err);
        if (bs != BC_OK) {
            assert_int_equal(bs, BC_ERR_DEVICE);
            assert_non_null(strstr(err.message, "no CUDA device"));
        }
        f->ops->end_case(inst);
        f->ops->destroy(inst);
        inst = NULL;
    } else {
        assert_int_equal(cs, BC_ERR_DEVICE);
        assert_non_null(strstr(err.message, "no CUDA device"));
    }
    setting(f, "device")->s = "cpu";
    setting(f, "checkpoint")->s = "/nonexistent/opt-dir";
    assert_int_equal(f->ops->create(&host, f->v, &inst, &err), BC_OK);
    bc_backend_info info = {.struct_size = sizeof info};
    assert_int_equal(f->ops->describe(inst, &info, &err), BC_OK);
    assert_non_null(strstr(info.model, "/nonexistent/opt-dir"));
    bc_case c = make_case(&p_bf16, "bf16");
    assert_int_not_equal(f->ops->begin_case(inst, &c, &err), BC_OK);
    assert_non_null(strstr(err.message, "/nonexistent/opt-dir"));
    f->ops->end_case(inst);
    f->ops->destroy(inst);
}

/* A checkpoint's plan comes from its config.json before any weight loads,
 * and equals what the loaded case holds. */
static void test_checkpoint_plan(void **state) {
    fixture *f = *state;
    const char *dir = BENCHCTL_SOURCE_DIR "/tests/opt/golden/postln_proj";
    opt_hparams hp;
    bc_error err = {0};
    assert_int_equal(opt_hparams_from_checkpoint(dir, &hp, &err), BC_OK);
    assert_true(hp.word_embed_proj_dim != hp.hidden_size); /* the post-LN model with project_in/out */
    setting(f, "checkpoint")->s = dir;
    setting(f, "threads")->i = 1;
    void *inst = NULL;
    assert_int_equal(f->ops->create(&host, f->v, &inst, &err), BC_OK);
    bc_case c = make_case(&p_fp32, "fp32");
    bc_memory_stats plan = {.struct_size = sizeof plan}, mem = {.struct_size = sizeof mem};
    assert_int_equal(f->ops->plan_memory(inst, &c, &plan, &err), BC_OK);
    /* L layers x 2 rows x 7 tokens x C x 4 bytes, for K and for V */
    assert_int_equal(plan.kv_cache_bytes, 2ll * hp.num_hidden_layers * 2 * 7 * hp.hidden_size * 4);
    assert_true(plan.weights_bytes >= 4ll * hp.vocab_size * hp.word_embed_proj_dim);
    assert_true(plan.host_peak_bytes > plan.weights_bytes + plan.kv_cache_bytes);
    assert_int_equal(f->ops->begin_case(inst, &c, &err), BC_OK);
    assert_int_equal(f->ops->read_memory(inst, &mem, &err), BC_OK);
    assert_int_equal(mem.weights_bytes, plan.weights_bytes);
    assert_int_equal(mem.kv_cache_bytes, plan.kv_cache_bytes);
    assert_int_equal(mem.workspace_bytes, plan.workspace_bytes);
    assert_int_equal(mem.host_peak_bytes, plan.host_peak_bytes);
    f->ops->end_case(inst);
    f->ops->destroy(inst);

    /* a checkpoint without config.json: the plan says which file */
    setting(f, "checkpoint")->s = "/nonexistent/opt-dir";
    assert_int_equal(f->ops->create(&host, f->v, &inst, &err), BC_OK);
    assert_int_not_equal(f->ops->plan_memory(inst, &c, &plan, &err), BC_OK);
    assert_non_null(strstr(err.message, "/nonexistent/opt-dir/config.json"));
    f->ops->destroy(inst);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_descriptor, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rollout_and_memory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_checkpoint_plan, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
