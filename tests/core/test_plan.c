/* test_plan.c: the run's plan (plan.h): each case's instance and rebuild
 * group by that instance's own axes, the execution order, the builds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "matrix.h"
#include "plan.h"

static const char *const precisions[] = {"fp32", "bf16"};
static const char *const policies[] = {"retain"};
static const uint32_t batches[] = {1, 2};
static const uint32_t one[] = {1};
static const uint32_t prompts[] = {4};
static const uint32_t responses[] = {3};
static const bc_sampling sampling = {.struct_size = sizeof(bc_sampling), .top_p = 1.0, .seed = 1};

/* 2 precisions x 2 batch sizes, requested order: 0 fp32/1, 1 fp32/2,
 * 2 bf16/1, 3 bf16/2; then, with two_instances, the same four again as
 * cases 4-7 (instance 1), as the context's backends axis makes them. */
static bc_case *build_cases(size_t *n, int two_instances) {
    bc_matrix_axes a = {.precisions = precisions, .n_precisions = 2, .cache_policies = policies,
                        .n_cache_policies = 1, .batch_sizes = batches, .n_batch_sizes = 2,
                        .samples_per_prompt = one, .n_samples_per_prompt = 1, .prompt_lengths = prompts,
                        .n_prompt_lengths = 1, .response_lengths = responses, .n_response_lengths = 1,
                        .sampling = &sampling};
    bc_case *cases = NULL;
    bc_error err = {0};
    assert_int_equal(bc_matrix_build(&a, &cases, n, &err), BC_OK);
    assert_int_equal(*n, 4);
    if (!two_instances) return cases;
    bc_case *all = realloc(cases, 8 * sizeof *all);
    assert_non_null(all);
    memcpy(all + 4, all, 4 * sizeof *all);
    for (uint32_t k = 0; k < 8; k++) all[k].index = k;
    *n = 8;
    return all;
}

/* A first instance that rebuilds nothing and a second that rebuilds on the
 * precision: each is grouped by its own axes, never by the other's (the
 * union would split instance 0 by precision; instance 0's alone would put
 * instance 1's precisions in one group). */
static void test_each_instance_its_own_axes(void **state) {
    (void)state;
    size_t n;
    bc_case *cases = build_cases(&n, 1);
    const size_t instance[8] = {0, 0, 0, 0, 1, 1, 1, 1};
    const uint32_t axes[2] = {bc_matrix_rebuild_axes(BC_AXIS_NONE), bc_matrix_rebuild_axes(BC_AXIS_PRECISION)};
    bc_plan p = {0};
    bc_error err = {0};
    assert_int_equal(bc_plan_build(&p, cases, n, instance, axes, 2, &err), BC_OK);
    const size_t want_order[8] = {1, 3, 0, 2, 5, 4, 7, 6};
    const unsigned char want_build[8] = {1, 0, 0, 0, 1, 0, 1, 0};
    const size_t want_group[8] = {0, 0, 0, 0, 4, 4, 6, 6};
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(p.order[i], want_order[i]);
        assert_int_equal(p.build[i], want_build[i]);
        assert_int_equal(p.group[i], want_group[i]);
        assert_int_equal(p.instance[i], instance[i]);
    }
    assert_int_equal(p.n_builds, 3);
    assert_true(bc_plan_same_group(&p, 0, 3));
    assert_false(bc_plan_same_group(&p, 3, 4)); /* the same axes, another instance */
    assert_false(bc_plan_same_group(&p, 4, 6));
    bc_plan_free(&p);
    assert_null(p.order);
    free(cases);
}

/* One instance (instance NULL): the order bc_matrix_execution_order gives. */
static void test_one_instance_matches_matrix_order(void **state) {
    (void)state;
    size_t n;
    bc_case *cases = build_cases(&n, 0);
    const uint32_t axes = bc_matrix_rebuild_axes(0); /* not said: the precision */
    bc_plan p = {0};
    bc_error err = {0};
    assert_int_equal(bc_plan_build(&p, cases, n, NULL, &axes, 1, &err), BC_OK);
    size_t order[4];
    bc_matrix_execution_order(cases, n, axes, order);
    for (size_t i = 0; i < n; i++) assert_int_equal(p.order[i], order[i]);
    assert_int_equal(p.order[0], 1); /* fp32 batch 2 first */
    assert_int_equal(p.n_builds, 2);
    bc_plan_free(&p);
    free(cases);
}

/* A selection keeps the requested order of what is left; the plan groups
 * and orders only those. */
static void test_selected_cases(void **state) {
    (void)state;
    size_t n;
    bc_case *cases = build_cases(&n, 1);
    bc_case picked[3] = {cases[2], cases[4], cases[5]}; /* bf16/1 on 0; fp32/1, fp32/2 on 1 */
    const size_t instance[3] = {0, 1, 1};
    const uint32_t axes[2] = {bc_matrix_rebuild_axes(BC_AXIS_NONE), BC_AXIS_PRECISION};
    bc_plan p = {0};
    bc_error err = {0};
    assert_int_equal(bc_plan_build(&p, picked, 3, instance, axes, 2, &err), BC_OK);
    assert_int_equal(p.order[0], 0);
    assert_int_equal(p.order[1], 2); /* case 5 (batch 2) before case 4 */
    assert_int_equal(p.order[2], 1);
    assert_int_equal(p.n_builds, 2);
    bc_plan_free(&p);
    free(cases);
}

static void test_instance_out_of_range(void **state) {
    (void)state;
    size_t n;
    bc_case *cases = build_cases(&n, 0);
    const size_t instance[4] = {0, 0, 2, 0};
    const uint32_t axes[2] = {BC_AXIS_PRECISION, BC_AXIS_PRECISION};
    bc_plan p = {0};
    bc_error err = {0};
    assert_int_equal(bc_plan_build(&p, cases, n, instance, axes, 2, &err), BC_ERR_INTERNAL);
    assert_non_null(strstr(err.message, "instance 2 of 2"));
    bc_plan_free(&p);
    free(cases);
}

static void test_no_cases(void **state) {
    (void)state;
    const uint32_t axes = BC_AXIS_PRECISION;
    bc_plan p = {0};
    bc_error err = {0};
    assert_int_equal(bc_plan_build(&p, NULL, 0, NULL, &axes, 1, &err), BC_OK);
    assert_int_equal(p.n, 0);
    assert_int_equal(p.n_builds, 0);
    bc_plan_free(&p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_instance_its_own_axes),
        cmocka_unit_test(test_one_instance_matches_matrix_order),
        cmocka_unit_test(test_selected_cases),
        cmocka_unit_test(test_instance_out_of_range),
        cmocka_unit_test(test_no_cases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
