/* test_distributed.c: the replicate aggregates of a distributed case
 * (bc_dist_aggregate, distributed.h; definitions in docs/scale.md) on
 * per-rank times and tokens whose figures are worked out by hand below. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "bc_test_assert.h"
#include "distributed.h"

/* 3 ranks x 2 iterations. Rank times: rank 0 10, 10 ms (mean 10); rank 1
 * 10, 14 (mean 12); rank 2 30, 20 (mean 25, the straggler). 100 tokens per
 * rank and iteration. Steps wait for the slowest: 30 + 20 = 50 ms for 600
 * tokens: 12000 tok/s. Per rank: 200 tokens / 20, 24, 50 ms = 10000, 8333.3,
 * 4000 tok/s, ideal 22333.3. Rank times: min 10, mean 47/3, max 25, median
 * 12: efficiency (47/3) / 25, tax 13 ms. */
static void aggregates_of_a_straggler(void **state) {
    (void)state;
    const double ms[] = {10, 10, 10, 14, 30, 20};
    const double tokens[] = {100, 100, 100, 100, 100, 100};
    const double peak[] = {100, 110, 90};
    const int64_t returned[] = {4, 4, 4};
    double t[3], tps[3], pk[3];
    bc_case_distributed out = {.struct_size = sizeof out};
    bc_dist_aggregate(3, 2, ms, tokens, peak, returned, 4, &out, t, tps, pk);
    assert_int_equal(out.n_ranks, 3);
    assert_double_close(t[0], 10.0, 1e-12);
    assert_double_close(t[1], 12.0, 1e-12);
    assert_double_close(t[2], 25.0, 1e-12);
    assert_double_close(tps[0], 10000.0, 1e-9);
    assert_double_close(tps[1], 200.0 / 0.024, 1e-9);
    assert_double_close(tps[2], 4000.0, 1e-9);
    assert_double_close(out.step_tokens_per_second, 12000.0, 1e-9);
    assert_double_close(out.ideal_tokens_per_second, 10000.0 + 200.0 / 0.024 + 4000.0, 1e-9);
    assert_double_close(out.rank_time_min_ms, 10.0, 1e-12);
    assert_double_close(out.rank_time_mean_ms, 47.0 / 3.0, 1e-12);
    assert_double_close(out.rank_time_max_ms, 25.0, 1e-12);
    /* standard deviation of 10, 12, 25 (over the n ranks, as stats.h's) */
    double m = 47.0 / 3.0, var = ((10 - m) * (10 - m) + (12 - m) * (12 - m) + (25 - m) * (25 - m)) / 3.0;
    assert_double_close(out.rank_time_std_ms, sqrt(var), 1e-9);
    assert_double_close(out.straggler_efficiency, (47.0 / 3.0) / 25.0, 1e-12);
    assert_double_close(out.straggler_tax_ms, 13.0, 1e-12);
    assert_int_equal(out.slowest_rank, 2);
    assert_double_close(out.peak_memory_max_mib, 110.0, 1e-12);
    assert_double_close(out.peak_memory_sum_mib, 300.0, 1e-12);
    assert_int_equal(out.full_length, 1);
    assert_ptr_equal(out.rank_time_ms, t);
    assert_double_close(pk[1], 110.0, 1e-12);
}

/* Equal ranks: efficiency 1, tax 0, step = ideal. */
static void equal_ranks_have_no_straggler(void **state) {
    (void)state;
    const double ms[] = {8, 8}, tokens[] = {40, 40}, peak[] = {NAN, 5};
    const int64_t returned[] = {3, 4};
    double t[2], tps[2], pk[2];
    bc_case_distributed out = {.struct_size = sizeof out};
    bc_dist_aggregate(2, 1, ms, tokens, peak, returned, 4, &out, t, tps, pk);
    assert_double_close(out.straggler_efficiency, 1.0, 1e-12);
    assert_double_close(out.straggler_tax_ms, 0.0, 1e-12);
    assert_double_close(out.step_tokens_per_second, out.ideal_tokens_per_second, 1e-9);
    assert_double_close(out.step_tokens_per_second, 10000.0, 1e-9);
    assert_double_close(out.rank_time_std_ms, 0.0, 1e-12);
    /* a rank returned fewer tokens than requested: lengths were not forced */
    assert_int_equal(out.full_length, 0);
    /* one rank's peak unknown: the max is the known one, the sum unknown */
    assert_double_close(out.peak_memory_max_mib, 5.0, 1e-12);
    assert_nan(out.peak_memory_sum_mib);
}

/* No measured iteration (the case failed before one): nothing invented. */
static void no_iterations_give_nan(void **state) {
    (void)state;
    const double none[1] = {0}, peak[] = {NAN, NAN};
    const int64_t returned[] = {-1, -1};
    double t[2], tps[2], pk[2];
    bc_case_distributed out = {.struct_size = sizeof out};
    bc_dist_aggregate(2, 0, none, none, peak, returned, 4, &out, t, tps, pk);
    assert_nan(out.step_tokens_per_second);
    assert_nan(out.ideal_tokens_per_second);
    assert_nan(out.straggler_efficiency);
    assert_nan(out.straggler_tax_ms);
    assert_nan(t[0]);
    assert_int_equal(out.slowest_rank, -1);
    assert_int_equal(out.full_length, -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(aggregates_of_a_straggler),
        cmocka_unit_test(equal_ranks_have_no_straggler),
        cmocka_unit_test(no_iterations_give_nan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
