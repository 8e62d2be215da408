/* test_plugin.c: the `opt` backend through the plugin ABI, as benchctl uses
 * it: dlopen build/plugins/benchctl-opt.so, check_settings, create with
 * settings, describe (the model's shape and exact parameter count),
 * check_case, prepare, begin_case, the three stages and what generate
 * measures, memory accounting (plan == what is held, resident bytes),
 * save_tokens, cache release/acquire, precision switches, the plan of a
 * checkpoint (its config.json's shape, before the weights load), structs
 * from a host with fewer fields than ours (never written past their size),
 * and the errors (bad precision, cuda, checkpoint, prompts file). The host
 * table is benchctl's own (bc_host_init, core/src/host/host.c).
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../core/bc_test_assert.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../plugins/plugin_dl.h"
#include "../../core/src/run/fields.h" /* the host's descriptors, which the metric table must match */
#include "formats.h" /* the precision plugins' ops: the engine checks their layout */
#include "checkpoint.h"
#include "ckpt_set.h"

#define GOLDEN BENCHCTL_SOURCE_DIR "/tests/opt/golden/"

/* facebook/opt-125m: 50272 x 768 embeddings (tied lm_head), 2050 x 768
 * positions, the final layer norm, 12 layers of 4 (768 x 768 + 768)
 * attention projections, fc1 3072 x 768 + 3072, fc2 768 x 3072 + 768 and two
 * layer norms; what transformers' num_parameters() says for the model. */
#define OPT_125M_PARAMETERS 125239296ll

/* ------------------------------------------------------------- the host */

/* benchctl's own host table (bc_host_init, core/src/host/host.c), filled at
 * the start of main. */
static bc_host host;

static void no_conv(const void *s, float *d, size_t n) { (void)s, (void)d, (void)n; }
static void no_conv2(const float *s, void *d, size_t n) { (void)s, (void)d, (void)n; }
static const bc_precision_ops p_int8 = {sizeof(bc_precision_ops), "int8", 1, no_conv, no_conv2, 1e-1};
static const bc_sampling greedy = {.struct_size = sizeof(bc_sampling), .temperature = 0.0, .top_p = 1.0, .seed = 5};

/* ------------------------------------------------------------- settings */

typedef struct fixture {
    void *dl;
    const bc_plugin_desc *d;
    const bc_backend_ops *ops;
    bc_setting_value v[64];
    bc_settings settings; /* over v */
    char tmp[64];         /* a scratch directory, removed in teardown */
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    f->d = test_plugin_open("opt", &f->dl);
    f->ops = f->d->ops;
    assert_true(f->d->n_settings <= 64);
    for (uint32_t i = 0; i < f->d->n_settings; i++) {
        const bc_setting_desc *s = BC_AT(bc_setting_desc, f->d->settings, f->d->setting_size, i);
        f->v[i].i = s->default_int;
        f->v[i].f = s->default_float;
        f->v[i].s = s->default_string;
    }
    f->settings = (bc_settings){.struct_size = sizeof(bc_settings), .count = f->d->n_settings,
                                .value_size = sizeof(bc_setting_value), .values = f->v};
    snprintf(f->tmp, sizeof f->tmp, "/tmp/bc_opt_plugin_XXXXXX");
    assert_non_null(mkdtemp(f->tmp));
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->tmp);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", f->tmp);
    dlclose(f->dl);
    free(f);
    return 0;
}

static bc_setting_value *setting(fixture *f, const char *name) {
    for (uint32_t i = 0; i < f->d->n_settings; i++)
        if (strcmp(BC_AT(bc_setting_desc, f->d->settings, f->d->setting_size, i)->name, name) == 0) return &f->v[i];
    fail_msg("no setting %s", name);
    return NULL;
}

/* Row of the descriptor's metric table called name. */
static int metric(fixture *f, const char *name) {
    for (uint32_t i = 0; i < f->d->n_metrics; i++)
        if (strcmp(BC_AT(bc_metric_desc, f->d->metrics, f->d->metric_size, i)->name, name) == 0) return (int)i;
    fail_msg("no metric %s", name);
    return -1;
}

/* The per-iteration metrics of the last generate, as the host reads them
 * (each NaN when called), into m[n_metrics]; the per-case call writes none. */
static void read_metrics(fixture *f, void *inst, double *m) {
    bc_error err = {0};
    assert_true(f->d->n_metrics <= 32);
    for (uint32_t i = 0; i < f->d->n_metrics; i++) m[i] = BC_NOT_MEASURED;
    assert_int_equal(f->ops->read_metrics(inst, BC_METRIC_PER_CASE, m, f->d->n_metrics, &err), BC_OK);
    for (uint32_t i = 0; i < f->d->n_metrics; i++) assert_true(isnan(m[i]));
    assert_int_equal(f->ops->read_metrics(inst, BC_METRIC_PER_ITERATION, m, f->d->n_metrics, &err), BC_OK);
    for (uint32_t i = 0; i < f->d->n_metrics; i++) assert_false(isinf(m[i])); /* the host refuses those */
}

/* f->tmp/name, written with text (NULL: a directory). */
static const char *scratch(fixture *f, const char *name, const char *text) {
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", f->tmp, name);
    if (!text) {
        assert_int_equal(mkdir(path, 0700), 0);
    } else {
        FILE *fp = fopen(path, "w");
        assert_non_null(fp);
        fputs(text, fp);
        fclose(fp);
    }
    return path;
}

static bc_case make_case(const bc_precision_ops *p, const char *pname) {
    bc_case c = {.struct_size = sizeof(bc_case), .index = 0, .batch_size = 1, .samples_per_prompt = 2,
                 .prompt_length = 4, .response_length = 3, .precision = pname, .precision_ops = p,
                 .cache_policy = "retain", .sampling = &greedy};
    return c;
}

/* Expects check_settings and create both to fail with code, every fragment in the message. */
static void expect_settings_error(fixture *f, bc_status code, const char *const *fragments) {
    bc_error err = {0};
    void *inst = NULL;
    assert_int_equal(f->d->check_settings(&host, &f->settings, &err), code);
    for (const char *const *s = fragments; *s; s++)
        if (!strstr(err.message, *s)) fail_msg("\"%s\" lacks \"%s\"", err.message, *s);
    assert_null(strchr(err.message, '\n'));
    bc_error err2 = {0};
    assert_int_equal(f->ops->create(&host, &f->settings, &inst, &err2), code);
    assert_string_equal(err2.message, err.message);
}

/* ---------------------------------------------------------------- tests */

static void test_descriptor(void **state) {
    fixture *f = *state;
    test_plugin_check_header(f->d, BC_KIND_BACKEND, "opt");
    assert_int_equal(f->d->setting_size, sizeof(bc_setting_desc));
    const char *names[] = {"model", "checkpoint", "weights_seed", "threads", "device", "stop_at_eos",
                           "shared_prefill", "prompts_file", "save_tokens"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) assert_non_null(setting(f, names[i]));
    assert_string_equal(setting(f, "model")->s, ""); /* "": the checkpoint's shape, else 125m */
    assert_null(strstr(f->d->description, "(CPU)"));
    assert_non_null(f->d->check_settings);
    const bc_backend_ops *o = f->ops;
    assert_true(o->struct_size == sizeof(bc_backend_ops));
    assert_non_null(o->plan_memory), assert_non_null(o->cache_release), assert_non_null(o->cache_acquire);
    assert_non_null(o->read_memory), assert_non_null(o->reset_peak_memory);
    assert_non_null(o->check_case), assert_non_null(o->prepare);
    assert_int_equal(o->rebuild_axes, BC_AXIS_PRECISION);
    /* what the host does with two settings beyond checking them */
    const uint32_t n_set = f->d->n_settings;
    for (uint32_t i = 0; i < n_set; i++) {
        const bc_setting_desc *s = BC_AT(bc_setting_desc, f->d->settings, f->d->setting_size, i);
        uint32_t want = strcmp(s->name, "device_index") == 0  ? BC_SETTING_LOCAL_RANK
                        : strcmp(s->name, "stop_at_eos") == 0 ? BC_SETTING_WORKLOAD
                                                              : 0;
        if (s->flags != want) fail_msg("setting %s: flags %u, want %u", s->name, s->flags, want);
    }
    /* the metric table: the 2.3 figures under the host's names, each as the
     * host describes its field of that name (or the run would refuse it) */
    assert_non_null(o->read_metrics);
    assert_null(o->more_metrics);
    assert_int_equal(f->d->metric_size, sizeof(bc_metric_desc));
    const char *metrics[] = {"padded_token_slots", "response_length_min", "response_length_p50",
                             "response_length_p95", "response_length_max", "num_prefill_forwards",
                             "scheduler_overhead_ms", "cache_management_overhead_ms", "active_batch_size",
                             "continuous_batch_size", "occupancy", "kv_pages_peak", "kv_bytes_peak",
                             "kv_fragmentation", "kv_bytes_saved", "lora_fuse_ms", "lora_unfuse_ms"};
    assert_int_equal(f->d->n_metrics, sizeof metrics / sizeof metrics[0]);
    for (size_t i = 0; i < sizeof metrics / sizeof metrics[0]; i++) {
        const bc_metric_desc *m = BC_AT(bc_metric_desc, f->d->metrics, f->d->metric_size, metric(f, metrics[i]));
        const bc_metric_desc *h = bc_host_field_desc(metrics[i]);
        char why[160];
        assert_int_equal(bc_metric_desc_invalid(m, why, sizeof why), 0);
        assert_non_null(h);
        assert_string_equal(m->unit, h->unit);
        assert_int_equal(m->better, h->better);
        assert_int_equal(m->scope, h->scope);
        assert_true(m->help && m->help[0]);
    }
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

/* What generate reports for rows x width prompts and response tokens, greedy. */
static void check_generation_stats(const bc_generation_stats *g, int64_t rows, int64_t width, int64_t shortest,
                                   int64_t response) {
    assert_int_equal(g->returned_response_length, response);
    assert_int_equal(g->num_generated_tokens, rows * response);
    assert_int_equal(g->num_decode_forwards, response - 1);
    assert_true(g->prefill_forward_ms > 0 && g->decode_forward_ms > 0);
    /* one step time per decode forward, each > 0; forward + sampling, so the
     * sum is the forwards' time plus a little sampling */
    assert_int_equal(g->n_decode_steps, g->num_decode_forwards);
    assert_non_null(g->decode_step_ms);
    double sum = 0.0;
    for (uint32_t k = 0; k < g->n_decode_steps; k++) {
        assert_true(g->decode_step_ms[k] > 0.0);
        sum += g->decode_step_ms[k];
    }
    assert_true(sum >= g->decode_forward_ms);
    assert_double_close(sum, g->decode_forward_ms, 0.5 * g->decode_forward_ms + 20.0);
    /* the first token: the prefill plus the first sampling */
    assert_true(g->first_token_ms >= g->prefill_forward_ms);
    assert_double_close(g->first_token_ms, g->prefill_forward_ms, 0.5 * g->prefill_forward_ms + 20.0);
    assert_int_equal(g->num_prefill_tokens, rows * width);
    assert_int_equal(g->num_decode_tokens, rows * (response - 1));
    assert_int_equal(g->prompt_width_tokens, width);
    assert_int_equal(g->prompt_min_tokens, shortest);
    assert_int_equal(g->prompt_max_tokens, width);
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
    assert_int_equal(f->d->check_settings(&host, &f->settings, &err), BC_OK);
    assert_int_equal(f->ops->create(&host, &f->settings, &inst, &err), BC_OK);
    bc_backend_info info = {.struct_size = sizeof info};
    assert_int_equal(f->ops->describe(inst, &info, &err), BC_OK);
    assert_non_null(strstr(info.model, "opt-125m"));
    assert_non_null(strstr(info.model, "synthetic"));
    assert_string_equal(info.device, "cpu");
    assert_null(info.device_name);
    assert_string_equal(info.model_family, "opt");
    assert_int_equal(info.n_parameters, OPT_125M_PARAMETERS);
    assert_int_equal(info.n_layers, 12);
    assert_int_equal(info.hidden_size, 768);
    assert_int_equal(info.n_heads, 12);
    assert_int_equal(info.ffn_size, 3072);
    assert_int_equal(info.vocab_size, 50272);
    assert_int_equal(info.max_positions, 2048);
    assert_int_equal(info.cpu_threads, 2);
    assert_non_null(info.cpu_kernels);
    const char *kernels[] = {"portable", "avx2", "avx512", "avx512_bf16"};
    int known = 0;
    for (size_t i = 0; i < 4; i++) known += strcmp(info.cpu_kernels, kernels[i]) == 0;
    assert_int_equal(known, 1);

    bc_case c = make_case(&prec_bf16_ops, "bf16");
    assert_int_equal(f->ops->check_case(inst, &c, &err), BC_OK);
    assert_int_equal(f->ops->prepare(inst, &err), BC_OK); /* synthetic weights: nothing to check */
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
    /* the plan's peak is the larger of the rollout's and a score's of the
     * case (checked below, after a score) */
    assert_true(mem.host_peak_bytes <= plan.host_peak_bytes);
    const int64_t rollout_peak = mem.host_peak_bytes;
    assert_int_equal(mem.resident_bytes, rollout_peak); /* everything is held during the case */
    assert_int_equal(mem.device_peak_bytes, -1);

    assert_int_equal(f->ops->expand_prompts(inst, &err), BC_OK);
    bc_generation_stats g = {.struct_size = sizeof g};
    assert_int_equal(f->ops->generate(inst, &g, &err), BC_OK);
    check_generation_stats(&g, 2, 4, 4, 3);
    assert_int_equal(f->ops->post_process(inst, &err), BC_OK);
    /* a static batch in a contiguous cache: its declared metrics */
    double m[32];
    read_metrics(f, inst, m);
    assert_double_equal(m[metric(f, "padded_token_slots")], 2.0 * 3.0, 0.0);
    assert_double_equal(m[metric(f, "response_length_min")], 3.0, 0.0);
    assert_double_equal(m[metric(f, "response_length_max")], 3.0, 0.0);
    assert_double_equal(m[metric(f, "num_prefill_forwards")], 1.0, 0.0);
    assert_double_equal(m[metric(f, "kv_bytes_peak")], (double)plan.kv_cache_bytes, 0.0);
    assert_double_equal(m[metric(f, "kv_bytes_saved")], 0.0, 0.0);
    assert_true(isnan(m[metric(f, "continuous_batch_size")])); /* static */
    assert_true(isnan(m[metric(f, "kv_pages_peak")]));         /* contiguous */
    assert_true(isnan(m[metric(f, "kv_fragmentation")]));
    assert_true(isnan(m[metric(f, "lora_fuse_ms")]) && isnan(m[metric(f, "lora_unfuse_ms")]));
    char *first = read_all(path);
    int lines = 0, ids = 0;
    for (char *p = first; *p; p++) lines += *p == '\n';
    for (char *t = strtok(first, " \n"); t; t = strtok(NULL, " \n")) ids++;
    assert_int_equal(lines, 2);
    assert_int_equal(ids, 6);
    free(first);
    first = read_all(path);

    /* release: the cache goes (from the resident bytes too), the peak
     * stays; acquire: the same greedy tokens */
    assert_int_equal(f->ops->cache_release(inst, &err), BC_OK);
    f->ops->reset_peak_memory(inst);
    assert_int_equal(f->ops->read_memory(inst, &mem, &err), BC_OK);
    const int64_t without_cache = rollout_peak - plan.kv_cache_bytes - plan.workspace_bytes;
    assert_int_equal(mem.host_peak_bytes, without_cache);
    assert_int_equal(mem.resident_bytes, without_cache);
    assert_int_equal(f->ops->cache_acquire(inst, &err), BC_OK);
    assert_int_equal(f->ops->read_memory(inst, &mem, &err), BC_OK);
    assert_int_equal(mem.host_peak_bytes, rollout_peak);
    assert_int_equal(mem.resident_bytes, rollout_peak);
    assert_int_equal(f->ops->expand_prompts(inst, &err), BC_OK);
    assert_int_equal(f->ops->generate(inst, &g, &err), BC_OK);
    check_generation_stats(&g, 2, 4, 4, 3);
    assert_int_equal(f->ops->post_process(inst, &err), BC_OK);
    char *second = read_all(path);
    assert_string_equal(first, second);
    free(first), free(second);
    /* the instance scoring its own rollout: the peak becomes the plan's */
    bc_rollout_tokens rt = {.struct_size = sizeof rt};
    assert_int_equal(f->ops->read_rollout(inst, &rt, &err), BC_OK);
    float lp[2 * 3];
    assert_int_equal(f->ops->score(inst, &rt, lp, &err), BC_OK);
    assert_int_equal(f->ops->read_memory(inst, &mem, &err), BC_OK);
    assert_int_equal(mem.host_peak_bytes > rollout_peak ? mem.host_peak_bytes : rollout_peak, plan.host_peak_bytes);
    f->ops->end_case(inst);

    /* another precision: weights rebuilt in fp32, twice the bytes of the matrices */
    bc_case c32 = make_case(&prec_fp32_ops, "fp32");
    assert_int_equal(f->ops->begin_case(inst, &c32, &err), BC_OK);
    assert_int_equal(f->ops->read_memory(inst, &mem, &err), BC_OK);
    assert_true(mem.weights_bytes > plan.weights_bytes * 19 / 10);
    assert_int_equal(mem.kv_cache_bytes, 2 * plan.kv_cache_bytes);
    f->ops->end_case(inst);

    /* the int8 plugin: weights about a quarter of fp32's (scales, biases and
     * norms stay fp32), the KV cache fp32's */
    bc_case ci8 = make_case(&prec_int8_ops, "int8");
    bc_memory_stats mem8 = {.struct_size = sizeof mem8};
    assert_int_equal(f->ops->begin_case(inst, &ci8, &err), BC_OK);
    assert_int_equal(f->ops->read_memory(inst, &mem8, &err), BC_OK);
    assert_true(mem8.weights_bytes < mem.weights_bytes * 4 / 10);
    assert_true(mem8.weights_bytes > mem.weights_bytes / 5);
    assert_int_equal(mem8.kv_cache_bytes, mem.kv_cache_bytes);
    f->ops->end_case(inst);

    /* a precision with no kernels (an int8 with other rules) is refused by
     * name, by check_case and begin_case */
    bc_case c8 = make_case(&p_int8, "int8");
    assert_int_equal(f->ops->check_case(inst, &c8, &err), BC_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.message, "int8"));
    assert_int_equal(f->ops->begin_case(inst, &c8, &err), BC_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.message, "int8"));
    f->ops->end_case(inst);
    f->ops->destroy(inst);
    remove(path);
}

/* A host built against an older header hands in smaller structs: the
 * plugin writes nothing past their struct_size. */
static void test_small_host_structs(void **state) {
    fixture *f = *state;
    void *inst = NULL;
    bc_error err = {0};
    setting(f, "threads")->i = 1;
    assert_int_equal(f->ops->create(&host, &f->settings, &inst, &err), BC_OK);
    enum { GUARD = 0xA5 };
    union {
        bc_backend_info info;
        bc_generation_stats g;
        bc_memory_stats m;
        unsigned char bytes[1024];
    } buf;
    const size_t info_size = offsetof(bc_backend_info, model_family);
    memset(&buf, GUARD, sizeof buf);
    buf.info.struct_size = (uint32_t)info_size;
    assert_int_equal(f->ops->describe(inst, &buf.info, &err), BC_OK);
    assert_non_null(strstr(buf.info.model, "opt-125m"));
    for (size_t i = info_size; i < sizeof buf; i++) assert_int_equal(buf.bytes[i], GUARD);

    bc_case c = make_case(&prec_bf16_ops, "bf16");
    c.batch_size = 1, c.samples_per_prompt = 1, c.prompt_length = 2, c.response_length = 2;
    const size_t mem_size = offsetof(bc_memory_stats, resident_bytes);
    memset(&buf, GUARD, sizeof buf);
    buf.m.struct_size = (uint32_t)mem_size;
    assert_int_equal(f->ops->plan_memory(inst, &c, &buf.m, &err), BC_OK);
    assert_true(buf.m.kv_cache_bytes > 0);
    for (size_t i = mem_size; i < sizeof buf; i++) assert_int_equal(buf.bytes[i], GUARD);

    assert_int_equal(f->ops->begin_case(inst, &c, &err), BC_OK);
    assert_int_equal(f->ops->expand_prompts(inst, &err), BC_OK);
    const size_t gen_size = offsetof(bc_generation_stats, first_token_ms);
    memset(&buf, GUARD, sizeof buf);
    buf.g.struct_size = (uint32_t)gen_size;
    assert_int_equal(f->ops->generate(inst, &buf.g, &err), BC_OK);
    assert_int_equal(buf.g.num_generated_tokens, 2);
    for (size_t i = gen_size; i < sizeof buf; i++) assert_int_equal(buf.bytes[i], GUARD);
    memset(&buf, GUARD, sizeof buf);
    buf.m.struct_size = (uint32_t)mem_size;
    assert_int_equal(f->ops->read_memory(inst, &buf.m, &err), BC_OK);
    for (size_t i = mem_size; i < sizeof buf; i++) assert_int_equal(buf.bytes[i], GUARD);
    f->ops->end_case(inst);
    f->ops->destroy(inst);
}

/* Sums the numel of every tensor in dir's safetensors except a tied lm_head. */
static int64_t checkpoint_parameters(const char *dir) {
    eng_ck_set set;
    bc_error err = {0};
    if (eng_ck_set_open_dir(&set, dir, &err) != BC_OK) fail_msg("%s", err.message);
    int64_t n = 0;
    for (size_t i = 0; i < set.n_tensors; i++)
        if (strcmp(set.by_name[i]->name, "lm_head.weight") != 0) n += (int64_t)set.by_name[i]->numel;
    eng_ck_set_close(&set);
    return n;
}

/* describe on a checkpoint: its config.json's shape, and a parameter count
 * equal to the tensors the checkpoint holds (pre-LN, post-LN with
 * project_in/out, head dim 80). */
static void test_describe_checkpoint(void **state) {
    fixture *f = *state;
    const char *models[] = {"preln", "postln_proj", "hd80"};
    for (size_t i = 0; i < 3; i++) {
        char dir[512];
        snprintf(dir, sizeof dir, GOLDEN "%s", models[i]);
        opt_hparams hp;
        bc_error err = {0};
        assert_int_equal(opt_hparams_from_checkpoint(dir, &hp, &err), BC_OK);
        setting(f, "checkpoint")->s = dir;
        void *inst = NULL;
        assert_int_equal(f->ops->create(&host, &f->settings, &inst, &err), BC_OK);
        bc_backend_info info = {.struct_size = sizeof info};
        assert_int_equal(f->ops->describe(inst, &info, &err), BC_OK);
        assert_string_equal(info.model, dir);
        assert_int_equal(info.n_parameters, checkpoint_parameters(dir));
        assert_int_equal(info.n_layers, hp.s.n_layers);
        assert_int_equal(info.hidden_size, hp.s.hidden_size);
        assert_int_equal(info.n_heads, hp.s.n_heads);
        assert_int_equal(info.ffn_size, hp.s.ffn_size);
        assert_int_equal(info.vocab_size, hp.s.vocab_size);
        assert_int_equal(info.max_positions, hp.s.max_positions);
        f->ops->destroy(inst);
    }
}

/* The cheap checks, before anything loads: in check_settings and in create. */
static void test_check_settings(void **state) {
    fixture *f = *state;
    bc_error err = {0};
    /* every layout of a good checkpoint passes */
    const char *good[] = {"preln", "preln_sharded", "preln-bin"};
    for (size_t i = 0; i < 3; i++) {
        char dir[512];
        snprintf(dir, sizeof dir, GOLDEN "%s", good[i]);
        setting(f, "checkpoint")->s = dir;
        if (f->d->check_settings(&host, &f->settings, &err) != BC_OK) fail_msg("%s: %s", dir, err.message);
    }
    /* a checkpoint directory that does not exist */
    setting(f, "checkpoint")->s = "/nonexistent/opt-dir";
    const char *nodir[] = {"checkpoint", "/nonexistent/opt-dir", NULL};
    expect_settings_error(f, BC_ERR_NOT_FOUND, nodir);
    assert_int_equal(f->d->check_settings(&host, &f->settings, &err), BC_ERR_NOT_FOUND);
    assert_true(err.hint[0] != '\0');
    /* a file, not a directory */
    setting(f, "checkpoint")->s = GOLDEN "preln/config.json";
    const char *notdir[] = {"checkpoint", "not a directory", NULL};
    expect_settings_error(f, BC_ERR_NOT_FOUND, notdir);
    /* a directory without config.json */
    char empty[256];
    snprintf(empty, sizeof empty, "%s", scratch(f, "empty", NULL));
    setting(f, "checkpoint")->s = empty;
    const char *noconfig[] = {"checkpoint", empty, "config.json", NULL};
    expect_settings_error(f, BC_ERR_NOT_FOUND, noconfig);
    /* config.json but no weights */
    char *cfg = read_all(GOLDEN "preln/config.json");
    char noweights[256];
    snprintf(noweights, sizeof noweights, "%s", scratch(f, "noweights", NULL));
    scratch(f, "noweights/config.json", cfg);
    free(cfg);
    setting(f, "checkpoint")->s = noweights;
    const char *nofiles[] = {"checkpoint", noweights, "no weights", "model.safetensors", "pytorch_model.bin", NULL};
    expect_settings_error(f, BC_ERR_NOT_FOUND, nofiles);
    /* a preset together with a checkpoint: refused, whichever preset */
    setting(f, "checkpoint")->s = GOLDEN "preln";
    setting(f, "model")->s = "125m";
    const char *both[] = {"model and checkpoint both set", "remove model", NULL};
    expect_settings_error(f, BC_ERR_SETTING, both);
    setting(f, "checkpoint")->s = "";
    assert_int_equal(f->d->check_settings(&host, &f->settings, &err), BC_OK); /* a preset alone is fine */
    setting(f, "model")->s = "";
    /* a prompts file that is not there, or is a directory */
    setting(f, "prompts_file")->s = "/nonexistent/prompts.txt";
    const char *noprompts[] = {"prompts_file", "/nonexistent/prompts.txt", NULL};
    expect_settings_error(f, BC_ERR_NOT_FOUND, noprompts);
    setting(f, "prompts_file")->s = f->tmp;
    const char *dirprompts[] = {"prompts_file", f->tmp, NULL};
    expect_settings_error(f, BC_ERR_IO, dirprompts);
    /* one that is there but is not token ids: create reads it and says where */
    setting(f, "prompts_file")->s = scratch(f, "bad-prompts.txt", "1 2 3\nfour\n");
    assert_int_equal(f->d->check_settings(&host, &f->settings, &err), BC_OK);
    void *inst = NULL;
    assert_int_equal(f->ops->create(&host, &f->settings, &inst, &err), BC_ERR_FORMAT);
    assert_non_null(strstr(err.message, "prompts_file"));
    assert_non_null(strstr(err.message, ":2:"));
}

/* Drawn lengths and continuous batching through the plugin: the settings'
 * checks, the cache planned for the capacity's rows (and held as planned),
 * and the response-length and continuous-batching fields of generate. */
static void test_continuous(void **state) {
    fixture *f = *state;
    bc_error err = {0};
    void *inst = NULL;
    /* the lengths file goes with "empirical" only, and must hold lengths */
    setting(f, "response_lengths")->s = "empirical";
    const char *nofile[] = {"response_lengths = \"empirical\"", "response_lengths_file", NULL};
    expect_settings_error(f, BC_ERR_SETTING, nofile);
    setting(f, "response_lengths_file")->s = scratch(f, "lengths.txt", "4 2\nx\n");
    assert_int_equal(f->d->check_settings(&host, &f->settings, &err), BC_OK);
    assert_int_equal(f->ops->create(&host, &f->settings, &inst, &err), BC_ERR_FORMAT);
    assert_non_null(strstr(err.message, ":2:"));
    setting(f, "response_lengths")->s = "fixed";
    const char *stray[] = {"response_lengths = \"fixed\"", "lengths.txt", NULL};
    expect_settings_error(f, BC_ERR_SETTING, stray);
    setting(f, "response_lengths_file")->s = "";
    /* CUDA refuses continuous batching with one line (or has no CUDA path at all) */
    setting(f, "batching")->s = "continuous";
    setting(f, "device")->s = "cuda";
    bc_status st = f->d->check_settings(&host, &f->settings, &err);
    assert_true(st == BC_ERR_DEVICE || (st == BC_ERR_SETTING && strstr(err.message, "continuous")));
    setting(f, "device")->s = "cpu";

    setting(f, "threads")->i = 2;
    setting(f, "batch_capacity")->i = 1;
    char sched[96];
    snprintf(sched, sizeof sched, "%s/schedule-{case}.txt", f->tmp);
    setting(f, "save_schedule")->s = sched;
    setting(f, "response_lengths")->s = "uniform";
    setting(f, "response_length_min_ratio")->f = 0.3;
    assert_int_equal(f->ops->create(&host, &f->settings, &inst, &err), BC_OK);
    bc_case c = make_case(&prec_bf16_ops, "bf16"); /* 2 rows, prompt 4, response 3 */
    assert_int_equal(f->ops->prepare(inst, &err), BC_OK);
    bc_memory_stats plan = {.struct_size = sizeof plan}, mem = {.struct_size = sizeof mem};
    assert_int_equal(f->ops->plan_memory(inst, &c, &plan, &err), BC_OK);
    /* one cache row: 12 layers x 1 row x 7 tokens x 768 x 2 bytes, for K and for V */
    assert_int_equal(plan.kv_cache_bytes, 2 * 12 * 1 * 7 * 768 * 2);
    assert_int_equal(f->ops->begin_case(inst, &c, &err), BC_OK);
    assert_int_equal(f->ops->read_memory(inst, &mem, &err), BC_OK);
    assert_int_equal(mem.kv_cache_bytes, plan.kv_cache_bytes);
    assert_int_equal(mem.workspace_bytes, plan.workspace_bytes);
    assert_true(mem.host_peak_bytes <= plan.host_peak_bytes); /* the plan's: the larger of this and a score's */
    bc_generation_stats g = {.struct_size = sizeof g};
    assert_int_equal(f->ops->expand_prompts(inst, &err), BC_OK);
    assert_int_equal(f->ops->generate(inst, &g, &err), BC_OK);
    /* the continuous-batching figures are declared metrics, read after the iteration */
    double m[32];
    read_metrics(f, inst, m);
    assert_double_equal(m[metric(f, "continuous_batch_size")], 1.0, 0.0);
    assert_double_equal(m[metric(f, "num_prefill_forwards")], 2.0, 0.0); /* one row at a time */
    assert_double_equal(m[metric(f, "padded_token_slots")], (double)g.num_generated_tokens, 0.0);
    const double shortest = m[metric(f, "response_length_min")], longest = m[metric(f, "response_length_max")];
    assert_true(shortest >= 1 && longest <= 3);
    assert_double_equal((double)g.num_generated_tokens, shortest + longest, 0.0);
    assert_double_equal(m[metric(f, "active_batch_size")], 1.0, 0.0);
    assert_double_equal(m[metric(f, "occupancy")], 1.0, 0.0);
    assert_true(m[metric(f, "scheduler_overhead_ms")] >= 0 && m[metric(f, "cache_management_overhead_ms")] >= 0);
    assert_true(isnan(m[metric(f, "lora_fuse_ms")])); /* no adapter */
    /* the schedule handed to the host: one row in every step, each row's token 0 and finishing step */
    assert_int_equal(g.schedule_rows, 2);
    assert_non_null(g.step_active_rows);
    assert_true(g.n_decode_steps >= 1);
    for (uint32_t k = 0; k < g.n_decode_steps; k++) assert_int_equal(g.step_active_rows[k], 1);
    assert_true(g.row_first_token_ms[0] > 0 && g.row_first_token_ms[1] >= g.row_first_token_ms[0]);
    /* one row at a time: the second finishes after both rows' decode steps, all the steps there were */
    assert_int_equal(g.row_done_step[1], (int)g.num_generated_tokens - 2);
    assert_int_equal(g.row_done_step[1], (int)g.n_decode_steps);
    assert_true(g.row_done_step[0] <= g.row_done_step[1]);
    assert_int_equal(f->ops->post_process(inst, &err), BC_OK);
    /* the schedule: one row active in every step, then each row's line */
    snprintf(sched, sizeof sched, "%s/schedule-0.txt", f->tmp);
    FILE *in = fopen(sched, "r");
    assert_non_null(in);
    char line[256];
    assert_non_null(fgets(line, sizeof line, in));
    assert_int_equal(strncmp(line, "steps", 5), 0);
    for (const char *q = line + 5; *q && *q != '\n'; q++) assert_true(*q == ' ' || *q == '1');
    int rows = 0, len, done;
    double ttft;
    while (fgets(line, sizeof line, in)) {
        int r;
        assert_int_equal(sscanf(line, "row %d length %d first_token_ms %lf done_step %d", &r, &len, &ttft, &done), 4);
        assert_int_equal(r, rows);
        assert_true(len >= 1 && len <= 3 && ttft > 0 && done >= 0);
        rows++;
    }
    fclose(in);
    unlink(sched);
    assert_int_equal(rows, 2);
    f->ops->end_case(inst);
    f->ops->destroy(inst);
}

/* memory_check: a case planned beyond the memory there is (the 66b preset
 * needs ~122 GiB in bf16) is refused by check_case and begin_case with what
 * it needs and what there is, before anything is allocated; "warn" and "off"
 * let check_case pass it. */
/* MemAvailable in GiB from /proc/meminfo; -1 when it cannot be read. */
static double mem_available_gib(void) {
    FILE *in = fopen("/proc/meminfo", "r");
    if (!in) return -1;
    char line[256];
    long long kib = -1;
    while (fgets(line, sizeof line, in))
        if (sscanf(line, "MemAvailable: %lld kB", &kib) == 1) break;
    fclose(in);
    return kib < 0 ? -1 : (double)kib / (1024.0 * 1024.0);
}

static void test_memory_check(void **state) {
    fixture *f = *state;
    void *inst = NULL;
    bc_error err = {0};
    if (mem_available_gib() >= 120.0) {
        /* a machine this large can hold the 66b preset: nothing to refuse */
        skip();
    }
    setting(f, "threads")->i = 1;
    setting(f, "model")->s = "66b";
    assert_int_equal(f->ops->create(&host, &f->settings, &inst, &err), BC_OK);
    bc_case c = make_case(&prec_bf16_ops, "bf16");
    assert_int_equal(f->ops->check_case(inst, &c, &err), BC_ERR_INFEASIBLE);
    assert_non_null(strstr(err.message, "needs 122.5 GiB of memory (weights 122.4 GiB"));
    assert_non_null(strstr(err.message, "GiB is available (MemAvailable "));
    assert_non_null(strstr(err.hint, "memory_check"));
    memset(&err, 0, sizeof err);
    assert_int_equal(f->ops->begin_case(inst, &c, &err), BC_ERR_INFEASIBLE); /* allocates nothing */
    assert_non_null(strstr(err.message, "needs 122.5 GiB"));
    f->ops->destroy(inst);

    static const char *const modes[] = {"warn", "off"};
    for (size_t i = 0; i < 2; i++) {
        setting(f, "memory_check")->s = modes[i];
        assert_int_equal(f->ops->create(&host, &f->settings, &inst, &err), BC_OK);
        assert_int_equal(f->ops->check_case(inst, &c, &err), BC_OK);
        f->ops->destroy(inst);
    }
}

/* check_case: what cannot run is refused before anything loads. */
static void test_check_case(void **state) {
    fixture *f = *state;
    void *inst = NULL;
    bc_error err = {0};
    setting(f, "threads")->i = 1;
    assert_int_equal(f->ops->create(&host, &f->settings, &inst, &err), BC_OK);
    bc_case c = make_case(&prec_bf16_ops, "bf16");
    /* 2000 + 100 tokens do not fit OPT's 2048 positions; 1948 + 100 do */
    c.prompt_length = 2000;
    c.response_length = 100;
    assert_int_equal(f->ops->check_case(inst, &c, &err), BC_ERR_INFEASIBLE);
    assert_non_null(strstr(err.message, "2000"));
    assert_non_null(strstr(err.message, "100"));
    assert_non_null(strstr(err.message, "2048"));
    c.prompt_length = 1948;
    assert_int_equal(f->ops->check_case(inst, &c, &err), BC_OK);
    /* prompt length 0 means "the prompts file decides": there is none */
    c.prompt_length = 0;
    assert_int_equal(f->ops->check_case(inst, &c, &err), BC_ERR_SETTING);
    assert_non_null(strstr(err.message, "prompt length 0 needs prompts_file"));
    /* far more memory than any machine of ours has */
    c = make_case(&prec_bf16_ops, "bf16");
    c.batch_size = 4096, c.samples_per_prompt = 16, c.prompt_length = 1024, c.response_length = 1024;
    assert_int_equal(f->ops->check_case(inst, &c, &err), BC_ERR_INFEASIBLE);
    assert_non_null(strstr(err.message, "GiB"));
    f->ops->destroy(inst);

    /* with a prompts file, 0 takes the width from the longest prompt of the batch */
    setting(f, "prompts_file")->s = scratch(f, "prompts.txt", "5 6 7\n8 9 10 11 12 13 14\n");
    assert_int_equal(f->ops->create(&host, &f->settings, &inst, &err), BC_OK);
    c = make_case(&prec_fp32_ops, "fp32");
    c.batch_size = 2, c.samples_per_prompt = 1, c.prompt_length = 0, c.response_length = 2041;
    assert_int_equal(f->ops->check_case(inst, &c, &err), BC_OK); /* 7 + 2041 = 2048 */
    c.response_length = 2042;
    assert_int_equal(f->ops->check_case(inst, &c, &err), BC_ERR_INFEASIBLE);
    assert_non_null(strstr(err.message, "7 tokens"));
    c.batch_size = 1; /* only the first prompt: 3 tokens */
    assert_int_equal(f->ops->check_case(inst, &c, &err), BC_OK);
    /* and the case runs with that width, reporting the prompts as they ran */
    c.batch_size = 2, c.response_length = 2;
    assert_int_equal(f->ops->begin_case(inst, &c, &err), BC_OK);
    assert_int_equal(f->ops->expand_prompts(inst, &err), BC_OK);
    bc_generation_stats g = {.struct_size = sizeof g};
    assert_int_equal(f->ops->generate(inst, &g, &err), BC_OK);
    check_generation_stats(&g, 2, 7, 3, 2);
    f->ops->end_case(inst);
    f->ops->destroy(inst);
}

/* prepare checks every tensor once, before the first case: a checkpoint
 * whose config.json does not match its weights stops there. */
static void test_prepare(void **state) {
    fixture *f = *state;
    void *inst = NULL;
    bc_error err = {0};
    setting(f, "checkpoint")->s = GOLDEN "preln";
    assert_int_equal(f->ops->create(&host, &f->settings, &inst, &err), BC_OK);
    assert_int_equal(f->ops->prepare(inst, &err), BC_OK);
    f->ops->destroy(inst);

    /* the same weights, a config.json that claims one more layer */
    opt_hparams hp;
    assert_int_equal(opt_hparams_from_checkpoint(GOLDEN "preln", &hp, &err), BC_OK);
    char *cfg = read_all(GOLDEN "preln/config.json");
    char key[64], *at = strstr(cfg, "\"num_hidden_layers\"");
    assert_non_null(at);
    snprintf(key, sizeof key, "\"num_hidden_layers\": %d", hp.s.n_layers);
    assert_memory_equal(at, key, strlen(key));
    char *fixed = calloc(1, strlen(cfg) + 16);
    snprintf(fixed, strlen(cfg) + 16, "%.*s\"num_hidden_layers\": %d%s", (int)(at - cfg), cfg, hp.s.n_layers + 1,
             at + strlen(key));
    char dir[256];
    snprintf(dir, sizeof dir, "%s", scratch(f, "wrong", NULL));
    scratch(f, "wrong/config.json", fixed);
    free(cfg), free(fixed);
    char link[300];
    snprintf(link, sizeof link, "%s/model.safetensors", dir);
    assert_int_equal(symlink(GOLDEN "preln/model.safetensors", link), 0);
    setting(f, "checkpoint")->s = dir;
    assert_int_equal(f->d->check_settings(&host, &f->settings, &err), BC_OK); /* the files are there */
    assert_int_equal(f->ops->create(&host, &f->settings, &inst, &err), BC_OK);
    assert_int_equal(f->ops->prepare(inst, &err), BC_ERR_FORMAT);
    assert_non_null(strstr(err.message, "is missing"));
    f->ops->destroy(inst);
}

static void test_errors(void **state) {
    fixture *f = *state;
    void *inst = NULL;
    bc_error err = {0};
    setting(f, "device")->s = "cuda";
    bc_status cs = f->ops->create(&host, &f->settings, &inst, &err);
    if (cs == BC_OK) { /* a CUDA build: without a GPU the backend cannot start (docs/cuda.md) */
        bc_backend_info info = {.struct_size = sizeof info};
        assert_int_equal(f->ops->describe(inst, &info, &err), BC_OK);
        assert_string_equal(info.device, "cuda:0");
        assert_null(info.cpu_kernels);
        assert_int_equal(info.cpu_threads, -1);
        bc_status ps = f->ops->prepare(inst, &err);
        if (ps != BC_OK) {
            assert_int_equal(ps, BC_ERR_DEVICE);
            assert_non_null(strstr(err.message, "no CUDA device"));
        }
        f->ops->destroy(inst);
        inst = NULL;
    } else {
        assert_int_equal(cs, BC_ERR_DEVICE);
        assert_non_null(strstr(err.message, "no CUDA device"));
        assert_int_equal(f->d->check_settings(&host, &f->settings, &err), BC_ERR_DEVICE);
    }
    setting(f, "device")->s = "cpu";
    /* a case without sampling parameters is refused, not dereferenced */
    assert_int_equal(f->ops->create(&host, &f->settings, &inst, &err), BC_OK);
    bc_case c = make_case(&prec_bf16_ops, "bf16");
    c.sampling = NULL;
    assert_int_equal(f->ops->check_case(inst, &c, &err), BC_ERR_INVALID);
    f->ops->destroy(inst);
}

/* A checkpoint's plan comes from its config.json before any weight loads,
 * and equals what the loaded case holds. */
static void test_checkpoint_plan(void **state) {
    fixture *f = *state;
    const char *dir = GOLDEN "postln_proj";
    opt_hparams hp;
    bc_error err = {0};
    assert_int_equal(opt_hparams_from_checkpoint(dir, &hp, &err), BC_OK);
    assert_true(hp.word_embed_proj_dim != hp.s.hidden_size); /* the post-LN model with project_in/out */
    setting(f, "checkpoint")->s = dir;
    setting(f, "threads")->i = 1;
    void *inst = NULL;
    assert_int_equal(f->ops->create(&host, &f->settings, &inst, &err), BC_OK);
    bc_case c = make_case(&prec_fp32_ops, "fp32");
    bc_memory_stats plan = {.struct_size = sizeof plan}, mem = {.struct_size = sizeof mem};
    assert_int_equal(f->ops->plan_memory(inst, &c, &plan, &err), BC_OK);
    /* L layers x 2 rows x 7 tokens x C x 4 bytes, for K and for V */
    assert_int_equal(plan.kv_cache_bytes, 2ll * hp.s.n_layers * 2 * 7 * hp.s.hidden_size * 4);
    assert_true(plan.weights_bytes >= 4ll * hp.s.vocab_size * hp.word_embed_proj_dim);
    assert_true(plan.host_peak_bytes > plan.weights_bytes + plan.kv_cache_bytes);
    assert_int_equal(f->ops->prepare(inst, &err), BC_OK);
    assert_int_equal(f->ops->begin_case(inst, &c, &err), BC_OK);
    assert_int_equal(f->ops->read_memory(inst, &mem, &err), BC_OK);
    assert_int_equal(mem.weights_bytes, plan.weights_bytes);
    assert_int_equal(mem.kv_cache_bytes, plan.kv_cache_bytes);
    assert_int_equal(mem.workspace_bytes, plan.workspace_bytes);
    assert_true(mem.host_peak_bytes <= plan.host_peak_bytes); /* the plan's: the larger of this and a score's */
    assert_int_equal(mem.resident_bytes, mem.host_peak_bytes);
    f->ops->end_case(inst);
    f->ops->destroy(inst);
}

/* The kernels setting: each family this CPU runs is the one describe names,
 * before and after the model is built, and generates; an unknown name, a
 * family above the CPU (where there is one) and a forced family with
 * device = "cuda" are refused by check_settings, before any case. */
static void test_kernels_setting(void **state) {
    fixture *f = *state;
    bc_error err = {0};
    setting(f, "checkpoint")->s = GOLDEN "preln";
    setting(f, "threads")->i = 1;
    for (int isa = 0; isa <= (int)eng_isa_detect(); isa++) {
        const char *name = eng_isa_name((eng_isa)isa);
        setting(f, "kernels")->s = name;
        assert_int_equal(f->d->check_settings(&host, &f->settings, &err), BC_OK);
        void *inst = NULL;
        assert_int_equal(f->ops->create(&host, &f->settings, &inst, &err), BC_OK);
        bc_backend_info info = {.struct_size = sizeof info};
        assert_int_equal(f->ops->describe(inst, &info, &err), BC_OK);
        assert_string_equal(info.cpu_kernels, name);
        bc_case c = make_case(&prec_bf16_ops, "bf16");
        assert_int_equal(f->ops->begin_case(inst, &c, &err), BC_OK);
        assert_int_equal(f->ops->expand_prompts(inst, &err), BC_OK);
        bc_generation_stats g = {.struct_size = sizeof g};
        assert_int_equal(f->ops->generate(inst, &g, &err), BC_OK);
        assert_int_equal(f->ops->describe(inst, &info, &err), BC_OK);
        assert_string_equal(info.cpu_kernels, name); /* the family that ran */
        f->ops->end_case(inst);
        f->ops->destroy(inst);
    }
    setting(f, "kernels")->s = "sse2";
    expect_settings_error(f, BC_ERR_SETTING, (const char *const[]){"opt: kernels = \"sse2\"", "not a kernel family", NULL});
    if (eng_isa_detect() < ENG_ISA_AVX512_BF16) {
        setting(f, "kernels")->s = "avx512_bf16";
        expect_settings_error(f, BC_ERR_UNSUPPORTED, (const char *const[]){"this CPU runs at most", NULL});
    }
    /* a build with the CUDA path refuses the pair; one without refuses cuda itself */
    setting(f, "kernels")->s = "portable";
    setting(f, "device")->s = "cuda";
    const bc_status st = f->d->check_settings(&host, &f->settings, &err);
    assert_true(st == BC_ERR_SETTING || st == BC_ERR_DEVICE);
    if (st == BC_ERR_SETTING) assert_non_null(strstr(err.message, "picks CPU kernels, but device = \"cuda\""));
}

int main(void) {
    bc_host_init(&host, "test");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_descriptor, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rollout_and_memory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_small_host_structs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_describe_checkpoint, setup, teardown),
        cmocka_unit_test_setup_teardown(test_check_settings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_continuous, setup, teardown),
        cmocka_unit_test_setup_teardown(test_check_case, setup, teardown),
        cmocka_unit_test_setup_teardown(test_memory_check, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prepare, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_checkpoint_plan, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kernels_setting, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
