/* test_skeleton.c: docs/examples/skeleton_backend.c compiles (with -Werror)
 * and behaves as its comments say.
 *
 * The skeleton is built here as benchctl-skeleton.so in this test's own
 * folder (not the plugins folder, so benchctl never lists it), dlopened, and
 * driven through a whole case with a minimal host, using the real fp32 and
 * bf16 precision plugins.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "plugin_dl.h"

typedef struct fixture {
    void *dl, *dl_fp32, *dl_bf16;
    const bc_plugin_desc *desc;
    const bc_backend_ops *ops;
    const bc_precision_ops *fp32, *bf16;
    void *inst;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    char path[4096];
    snprintf(path, sizeof path, "%s/benchctl-skeleton.so", SKELETON_DIR);
    f->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!f->dl) fail_msg("dlopen %s: %s", path, dlerror());
    bc_plugin_entry_fn entry;
    *(void **)&entry = dlsym(f->dl, BENCHCTL_PLUGIN_ENTRY);
    assert_non_null(entry);
    f->desc = entry();
    test_plugin_check_header(f->desc, BC_KIND_BACKEND, "skeleton");
    f->ops = f->desc->ops;
    f->fp32 = test_plugin_open("fp32", &f->dl_fp32)->ops;
    f->bf16 = test_plugin_open("bf16", &f->dl_bf16)->ops;
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    if (f->inst) f->ops->destroy(f->inst);
    dlclose(f->dl);
    dlclose(f->dl_fp32);
    dlclose(f->dl_bf16);
    free(f);
    return 0;
}

static const bc_sampling greedy = {.struct_size = sizeof(bc_sampling), .temperature = 0, .top_p = 1, .seed = 7};

/* The skeleton's settings: ns_per_token, model_name, max_positions. */
static bc_settings settings_of(bc_setting_value v[3]) {
    return (bc_settings){.struct_size = sizeof(bc_settings), .count = 3, .value_size = sizeof(bc_setting_value),
                         .values = v};
}

static void create(fixture *f, int64_t ns_per_token) {
    bc_setting_value v[3] = {{.i = ns_per_token}, {.s = "skeleton-test"}, {.i = 64}};
    bc_settings s = settings_of(v);
    bc_error err = {0};
    assert_int_equal(f->desc->check_settings(test_plugin_host(), &s, &err), BC_OK);
    assert_int_equal(f->ops->create(test_plugin_host(), &s, &f->inst, &err), BC_OK);
}

static bc_case make_case(const char *prec_name, const bc_precision_ops *prec, uint32_t b, uint32_t s, uint32_t p,
                         uint32_t r) {
    bc_case c = {
        .struct_size = sizeof(bc_case), .batch_size = b, .samples_per_prompt = s, .prompt_length = p,
        .response_length = r, .precision = prec_name, .precision_ops = prec, .cache_policy = "release",
        .release_cache = 1, .sampling = &greedy,
    };
    return c;
}

static void test_table(void **state) {
    fixture *f = *state;
    const bc_backend_ops *o = f->ops;
    assert_true(o->struct_size >= sizeof(bc_backend_ops));
    /* every hook, required and optional, is present in the skeleton */
    assert_non_null(o->create); assert_non_null(o->destroy); assert_non_null(o->describe);
    assert_non_null(o->check_case); assert_non_null(o->prepare);
    assert_non_null(o->plan_memory); assert_non_null(o->begin_case); assert_non_null(o->expand_prompts);
    assert_non_null(o->generate); assert_non_null(o->post_process); assert_non_null(o->cache_release);
    assert_non_null(o->cache_acquire); assert_non_null(o->reset_peak_memory); assert_non_null(o->read_memory);
    assert_non_null(o->end_case);
    assert_int_equal(o->rebuild_axes, BC_AXIS_NONE);
    assert_non_null(f->desc->check_settings);
    assert_int_equal(f->desc->n_settings, 3);
    assert_int_equal(f->desc->setting_size, sizeof(bc_setting_desc));
    assert_string_equal(f->desc->settings[0].name, "ns_per_token");
    assert_int_equal(f->desc->settings[0].type, BC_SETTING_INT);
    assert_string_equal(f->desc->settings[1].name, "model_name");
    assert_string_equal(f->desc->settings[2].name, "max_positions");
    for (uint32_t i = 0; i < f->desc->n_settings; i++) assert_non_null(f->desc->settings[i].help);
}

/* One case, two rollouts with a cache release in between, as the host runs it. */
static void run_case(fixture *f, const char *prec_name, const bc_precision_ops *prec) {
    bc_error err = {0};
    bc_case c = make_case(prec_name, prec, 2, 3, 5, 4); /* R = 6, P = 5, S = 4 */
    bc_memory_stats plan = {.struct_size = sizeof plan};
    assert_int_equal(f->ops->plan_memory(f->inst, &c, &plan, &err), BC_OK);
    assert_int_equal(plan.kv_cache_bytes, 6 * 9 * (int64_t)prec->element_size);

    assert_int_equal(f->ops->check_case(f->inst, &c, &err), BC_OK);
    assert_int_equal(f->ops->begin_case(f->inst, &c, &err), BC_OK);
    f->ops->reset_peak_memory(f->inst);
    for (int it = 0; it < 2; it++) {
        bc_generation_stats g = {.struct_size = sizeof g};
        assert_int_equal(f->ops->expand_prompts(f->inst, &err), BC_OK);
        assert_int_equal(f->ops->generate(f->inst, &g, &err), BC_OK);
        assert_int_equal(f->ops->post_process(f->inst, &err), BC_OK);
        assert_int_equal(g.num_generated_tokens, 6 * 4);
        assert_int_equal(g.returned_response_length, 4);
        assert_int_equal(g.num_decode_forwards, 3);
        assert_true(bc_is_measured(g.prefill_forward_ms) && g.prefill_forward_ms >= 0);
        assert_true(bc_is_measured(g.decode_forward_ms) && g.decode_forward_ms >= 0);
        assert_true(bc_is_measured(g.first_token_ms) && g.first_token_ms >= 0);
        assert_int_equal(g.n_decode_steps, 3);
        assert_non_null(g.decode_step_ms);
        double sum = 0;
        for (uint32_t k = 0; k < g.n_decode_steps; k++) sum += g.decode_step_ms[k];
        assert_true(sum <= g.decode_forward_ms);
        assert_int_equal(g.num_prefill_tokens, 6 * 5);
        assert_int_equal(g.num_decode_tokens, 6 * 3);
        assert_int_equal(g.prompt_width_tokens, 5);
        assert_int_equal(g.prompt_min_tokens, 5);
        assert_int_equal(g.prompt_max_tokens, 5);
        bc_memory_stats m = {.struct_size = sizeof m};
        assert_int_equal(f->ops->read_memory(f->inst, &m, &err), BC_OK);
        const int64_t held = m.resident_bytes;
        assert_int_equal(held, plan.resident_bytes);
        assert_int_equal(f->ops->cache_release(f->inst, &err), BC_OK);
        assert_int_equal(f->ops->read_memory(f->inst, &m, &err), BC_OK);
        assert_int_equal(m.kv_cache_bytes, 0);
        assert_int_equal(m.resident_bytes, held - plan.kv_cache_bytes); /* released: without the KV cache */
        assert_int_equal(f->ops->generate(f->inst, &g, &err), BC_ERR_INTERNAL); /* released: refused, not a crash */
        assert_int_equal(f->ops->cache_acquire(f->inst, &err), BC_OK);
    }
    bc_memory_stats m = {.struct_size = sizeof m};
    assert_int_equal(f->ops->read_memory(f->inst, &m, &err), BC_OK);
    assert_int_equal(m.kv_cache_bytes, plan.kv_cache_bytes);
    assert_int_equal(m.host_peak_bytes, plan.host_peak_bytes);
    assert_int_equal(m.device_peak_bytes, -1);
    f->ops->end_case(f->inst);
    assert_int_equal(f->ops->read_memory(f->inst, &m, &err), BC_OK);
    assert_int_equal(m.kv_cache_bytes + m.workspace_bytes, 0);
}

static void test_lifecycle(void **state) {
    fixture *f = *state;
    create(f, 0);
    bc_backend_info info = {.struct_size = sizeof info};
    bc_error err = {0};
    assert_int_equal(f->ops->describe(f->inst, &info, &err), BC_OK);
    assert_string_equal(info.model, "skeleton-test");
    assert_string_equal(info.device, "cpu");
    assert_null(info.device_name);
    assert_int_equal(info.max_positions, 64);
    assert_int_equal(f->ops->prepare(f->inst, &err), BC_OK);
    run_case(f, "fp32", f->fp32);
    run_case(f, "bf16", f->bf16);
}

/* What cannot run is refused by check_case, before anything is allocated,
 * and by begin_case as well. */
static void test_refuses_what_cannot_run(void **state) {
    fixture *f = *state;
    create(f, 0);
    static const bc_precision_ops int8 = {.struct_size = sizeof int8, .dtype = "int8", .element_size = 1};
    bc_case c = make_case("int8", &int8, 1, 1, 4, 4);
    bc_error err = {0};
    assert_int_equal(f->ops->check_case(f->inst, &c, &err), BC_ERR_UNSUPPORTED);
    assert_int_equal(f->ops->begin_case(f->inst, &c, &err), BC_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.message, "int8"));
    f->ops->end_case(f->inst); /* the host always ends a case, even a failed one */
    c = make_case("fp32", f->fp32, 1, 1, 60, 5); /* 65 > max_positions 64 */
    assert_int_equal(f->ops->check_case(f->inst, &c, &err), BC_ERR_INFEASIBLE);
    assert_non_null(strstr(err.message, "60"));
    assert_non_null(strstr(err.message, "64"));
    c.prompt_length = 0;
    assert_int_equal(f->ops->check_case(f->inst, &c, &err), BC_ERR_SETTING);
    /* an empty model name: check_settings says so, and create the same */
    bc_setting_value v[3] = {{.i = 0}, {.s = ""}, {.i = 64}};
    bc_settings s = settings_of(v);
    void *other = NULL;
    assert_int_equal(f->desc->check_settings(test_plugin_host(), &s, &err), BC_ERR_SETTING);
    assert_true(err.hint[0] != '\0');
    assert_int_equal(f->ops->create(test_plugin_host(), &s, &other, &err), BC_ERR_SETTING);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lifecycle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_what_cannot_run, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
