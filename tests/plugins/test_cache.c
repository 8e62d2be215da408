/* test_cache.c: the retain and release cache-policy plugins.
 *
 * Each plugin is dlopened from the build tree; its descriptor must be a cache
 * policy with no settings, and release_after_rollout must give the policy's
 * answer (retain 0, release 1) for every case shape.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "plugin_dl.h"

typedef struct fixture {
    void *dl;
    const bc_plugin_desc *desc;
    const bc_cache_ops *ops;
} fixture;

/* prestate: the plugin name (a string literal). */
static int setup_plugin(void **state) {
    const char *name = *state;
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->desc = test_plugin_open(name, &f->dl);
    test_plugin_check_header(f->desc, BC_KIND_CACHE, name);
    f->ops = f->desc->ops;
    *state = f;
    return 0;
}

static int teardown_plugin(void **state) {
    fixture *f = *state;
    if (f->dl) dlclose(f->dl);
    free(f);
    return 0;
}

static void check_policy(const fixture *f, int want) {
    assert_null(f->desc->settings);
    assert_int_equal(f->desc->n_settings, 0);
    assert_null(f->desc->check_settings); /* nothing to check */
    assert_true(f->ops->struct_size >= sizeof(bc_cache_ops));
    assert_non_null(f->ops->release_after_rollout);
    static const uint32_t batches[] = {1, 4, 64}, lengths[] = {1, 128, 2048};
    static const bc_sampling greedy = {.struct_size = sizeof(bc_sampling), .temperature = 0, .top_p = 1, .seed = 1};
    uint32_t index = 0;
    for (size_t b = 0; b < 3; b++) {
        for (size_t l = 0; l < 3; l++) {
            bc_case c = {
                .struct_size = sizeof(bc_case),
                .index = index++,
                .batch_size = batches[b],
                .samples_per_prompt = batches[2 - b],
                .prompt_length = lengths[l],
                .response_length = lengths[2 - l],
                .precision = "fp32",
                .cache_policy = f->desc->name,
                .release_cache = -1,
                .sampling = &greedy,
            };
            assert_int_equal(f->ops->release_after_rollout(&c), want);
        }
    }
}

static void test_retain(void **state) { check_policy(*state, 0); }
static void test_release(void **state) { check_policy(*state, 1); }

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_prestate_setup_teardown(test_retain, setup_plugin, teardown_plugin, (void *)"retain"),
        cmocka_unit_test_prestate_setup_teardown(test_release, setup_plugin, teardown_plugin, (void *)"release"),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
