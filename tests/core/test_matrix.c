/* test_matrix.c: requested order (Cartesian product, documented nesting) and
 * execution order (effective batch descending, stable among ties). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "matrix.h"

static int release_always(const bc_case *c) {
    (void)c;
    return 1;
}
static const bc_cache_ops release_ops = {sizeof(bc_cache_ops), release_always};

static const char *const precisions[] = {"bf16", "fp32"};
static const char *const policies[] = {"retain", "release"};
static const bc_cache_ops *const policy_ops[] = {NULL, &release_ops};
static const uint32_t batches[] = {1, 4};
static const uint32_t samples[] = {1, 4};
static const uint32_t prompts[] = {128};
static const uint32_t responses[] = {32, 64};

static const bc_sampling sampling = {.struct_size = sizeof(bc_sampling), .top_p = 1.0, .seed = 99};

static bc_matrix_axes axes(void) {
    bc_matrix_axes a = {0};
    a.precisions = precisions;
    a.n_precisions = 2;
    a.cache_policies = policies;
    a.cache_ops = policy_ops;
    a.n_cache_policies = 2;
    a.batch_sizes = batches;
    a.n_batch_sizes = 2;
    a.samples_per_prompt = samples;
    a.n_samples_per_prompt = 2;
    a.prompt_lengths = prompts;
    a.n_prompt_lengths = 1;
    a.response_lengths = responses;
    a.n_response_lengths = 2;
    a.sampling = &sampling;
    return a;
}

static void test_requested_order(void **state) {
    (void)state;
    bc_matrix_axes a = axes();
    bc_case *cases;
    size_t n;
    bc_error err = {0};
    assert_int_equal(bc_matrix_build(&a, &cases, &n, &err), BC_OK);
    assert_int_equal(n, 2 * 2 * 2 * 2 * 1 * 2);
    /* walk the product in the documented nesting and compare */
    size_t k = 0;
    for (int p = 0; p < 2; p++)
        for (int c = 0; c < 2; c++)
            for (int b = 0; b < 2; b++)
                for (int s = 0; s < 2; s++)
                    for (int r = 0; r < 2; r++, k++) {
                        assert_int_equal(cases[k].index, k);
                        assert_string_equal(cases[k].precision, precisions[p]);
                        assert_string_equal(cases[k].cache_policy, policies[c]);
                        assert_int_equal(cases[k].batch_size, batches[b]);
                        assert_int_equal(cases[k].samples_per_prompt, samples[s]);
                        assert_int_equal(cases[k].prompt_length, 128);
                        assert_int_equal(cases[k].response_length, responses[r]);
                        assert_int_equal(cases[k].release_cache, c == 1);
                        assert_int_equal(cases[k].sampling->seed, 99);
                        assert_int_equal(cases[k].struct_size, sizeof(bc_case));
                    }
    free(cases);
}

/* Every case once, in order[0..n). */
static void assert_permutation(const size_t *order, size_t n) {
    unsigned char *seen = calloc(n, 1);
    for (size_t i = 0; i < n; i++) {
        assert_true(order[i] < n);
        assert_false(seen[order[i]]);
        seen[order[i]] = 1;
    }
    free(seen);
}

/* No costly axis: largest effective batch first across the whole matrix. */
static void test_execution_order_no_groups(void **state) {
    (void)state;
    bc_matrix_axes a = axes();
    bc_case *cases;
    size_t n;
    bc_error err = {0};
    assert_int_equal(bc_matrix_build(&a, &cases, &n, &err), BC_OK);
    size_t *order = malloc(n * sizeof *order);
    bc_matrix_execution_order(cases, n, bc_matrix_rebuild_axes(BC_AXIS_NONE), order);
    assert_permutation(order, n);
    /* effective batch never grows; ties keep the requested order */
    for (size_t i = 1; i < n; i++) {
        uint64_t prev = bc_case_effective_batch(&cases[order[i - 1]]);
        uint64_t cur = bc_case_effective_batch(&cases[order[i]]);
        assert_true(prev >= cur);
        if (prev == cur) assert_true(order[i - 1] < order[i]);
    }
    /* the first case is the first 16-row case in requested order: bf16, retain, 4 x 4, response 32 */
    const bc_case *first = &cases[order[0]];
    assert_int_equal(bc_case_effective_batch(first), 16);
    assert_string_equal(first->precision, "bf16");
    assert_string_equal(first->cache_policy, "retain");
    assert_int_equal(first->response_length, 32);
    /* and the last is the last 1-row case: fp32, release, 1 x 1, response 64 */
    const bc_case *last = &cases[order[n - 1]];
    assert_int_equal(bc_case_effective_batch(last), 1);
    assert_string_equal(last->precision, "fp32");
    assert_string_equal(last->cache_policy, "release");
    assert_int_equal(last->response_length, 64);
    free(order);
    free(cases);
}

/* The default (a backend that does not say): precision groups, in requested
 * order, each largest effective batch first, so the precision changes once. */
static void test_execution_order_grouped_by_precision(void **state) {
    (void)state;
    bc_matrix_axes a = axes();
    bc_case *cases;
    size_t n;
    bc_error err = {0};
    assert_int_equal(bc_matrix_build(&a, &cases, &n, &err), BC_OK);
    uint32_t g = bc_matrix_rebuild_axes(0);
    assert_int_equal(g, BC_AXIS_PRECISION);
    size_t *order = malloc(n * sizeof *order);
    bc_matrix_execution_order(cases, n, g, order);
    assert_permutation(order, n);
    size_t switches = 0;
    for (size_t i = 1; i < n; i++) {
        const bc_case *prev = &cases[order[i - 1]], *cur = &cases[order[i]];
        if (!bc_matrix_same_group(prev, cur, g)) {
            switches++;
            continue;
        }
        assert_true(bc_case_effective_batch(prev) >= bc_case_effective_batch(cur));
        if (bc_case_effective_batch(prev) == bc_case_effective_batch(cur)) assert_true(order[i - 1] < order[i]);
    }
    assert_int_equal(switches, 1); /* bf16 then fp32 */
    for (size_t i = 0; i < n / 2; i++) assert_string_equal(cases[order[i]].precision, "bf16");
    for (size_t i = n / 2; i < n; i++) assert_string_equal(cases[order[i]].precision, "fp32");
    /* each group starts with its largest case */
    assert_int_equal(bc_case_effective_batch(&cases[order[n / 2]]), 16);
    free(order);
    free(cases);
}

/* Two axes: groups are the distinct (precision, cache policy) pairs in the
 * order first requested; BC_AXIS_NONE alone means no axis. */
static void test_execution_order_two_axes(void **state) {
    (void)state;
    bc_matrix_axes a = axes();
    bc_case *cases;
    size_t n;
    bc_error err = {0};
    assert_int_equal(bc_matrix_build(&a, &cases, &n, &err), BC_OK);
    uint32_t g = bc_matrix_rebuild_axes(BC_AXIS_PRECISION | BC_AXIS_CACHE_POLICY);
    size_t *order = malloc(n * sizeof *order);
    bc_matrix_execution_order(cases, n, g, order);
    assert_permutation(order, n);
    size_t switches = 0;
    for (size_t i = 1; i < n; i++) switches += !bc_matrix_same_group(&cases[order[i - 1]], &cases[order[i]], g);
    assert_int_equal(switches, 3);
    assert_string_equal(cases[order[n / 4]].cache_policy, "release");
    assert_string_equal(cases[order[n / 4]].precision, "bf16");
    assert_int_equal(bc_matrix_rebuild_axes(BC_AXIS_NONE), 0);
    free(order);
    free(cases);
}

/* 1x4 and 4x1 tie at 4 rows: requested order decides. */
static void test_ties(void **state) {
    (void)state;
    bc_case cases[4] = {0};
    uint32_t b[4] = {1, 4, 2, 4}, s[4] = {4, 1, 2, 2};
    for (int i = 0; i < 4; i++) {
        cases[i].index = (uint32_t)i;
        cases[i].batch_size = b[i];
        cases[i].samples_per_prompt = s[i];
    }
    size_t order[4];
    bc_matrix_execution_order(cases, 4, 0, order);
    assert_int_equal(order[0], 3); /* 8 rows */
    assert_int_equal(order[1], 0); /* 4 rows, first requested */
    assert_int_equal(order[2], 1);
    assert_int_equal(order[3], 2);
}

static void test_empty_axis(void **state) {
    (void)state;
    bc_matrix_axes a = axes();
    a.n_prompt_lengths = 0;
    bc_case *cases = NULL;
    size_t n = 5;
    bc_error err = {0};
    assert_int_equal(bc_matrix_build(&a, &cases, &n, &err), BC_ERR_INVALID);
    assert_null(cases);
    assert_int_equal(n, 0);
    assert_non_null(strstr(err.message, "prompt_lengths"));
}

/* The backend-setting axes (bc_case.setting_values): a case runs on the
 * instance of its backend and setting values; groups never span two
 * instances, so the cases run instance by instance in requested order, each
 * instance's largest effective batch first. */
static void test_setting_axes_group_by_instance(void **state) {
    (void)state;
    static const char *const names[] = {"batching", "kv_layout"};
    static const char *const combos[4][2] = {
        {"static", "contiguous"}, {"static", "paged"}, {"continuous", "contiguous"}, {"continuous", "paged"}};
    bc_case cases[8] = {0};
    for (int i = 0; i < 8; i++) {
        cases[i] = (bc_case){.struct_size = sizeof(bc_case), .index = (uint32_t)i, .batch_size = i % 2 ? 4 : 1,
                             .samples_per_prompt = 1, .precision = "fp32", .backend = "opt",
                             .setting_names = names, .setting_values = combos[i / 2], .n_settings = 2};
    }
    /* equal texts in other arrays are the same settings */
    const char *same[] = {"continuous", "paged"}, *other[] = {"continuous", "contiguous"};
    assert_true(bc_matrix_case_has_settings(&cases[6], same, 2));
    assert_false(bc_matrix_case_has_settings(&cases[6], other, 2));
    assert_false(bc_matrix_case_has_settings(&cases[6], same, 1));
    assert_true(bc_matrix_same_backend(&cases[6], &cases[7]));
    assert_false(bc_matrix_same_backend(&cases[5], &cases[7]));
    bc_case plain = cases[0];
    plain.n_settings = 0;
    plain.setting_names = plain.setting_values = NULL;
    assert_false(bc_matrix_same_backend(&plain, &cases[0]));
    assert_true(bc_matrix_case_has_settings(&plain, NULL, 0));
    /* an older host's case (no setting fields) has none */
    plain.struct_size = (uint32_t)BC_SIZE_THROUGH(bc_case, backend);
    assert_true(bc_matrix_case_has_settings(&plain, NULL, 0));
    assert_false(bc_matrix_same_group(&cases[0], &cases[2], BC_AXIS_PRECISION));
    assert_true(bc_matrix_same_group(&cases[2], &cases[3], BC_AXIS_PRECISION));
    size_t order[8];
    bc_matrix_execution_order(cases, 8, BC_AXIS_PRECISION, order);
    const size_t want[8] = {1, 0, 3, 2, 5, 4, 7, 6};
    for (int i = 0; i < 8; i++) assert_int_equal(order[i], want[i]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_requested_order),
        cmocka_unit_test(test_execution_order_no_groups),
        cmocka_unit_test(test_execution_order_grouped_by_precision),
        cmocka_unit_test(test_execution_order_two_axes),
        cmocka_unit_test(test_ties),
        cmocka_unit_test(test_empty_axis),
        cmocka_unit_test(test_setting_axes_group_by_instance),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
