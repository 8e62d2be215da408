/* test_stats.c: the statistics table (bc_stats_compute) against hand-computed reference values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "bc_test_assert.h"

#include <math.h>

#include "stats.h"

/* One field's statistics, by name as the reporters see them. */
typedef struct stats_row {
    double n, mean, stddev, cv, min, p50, p95, p99, max;
} stats_row;

static stats_row compute(const double *v, size_t n, size_t stride) {
    double out[BC_N_STATS];
    bc_error err = {0};
    assert_int_equal(bc_stats_compute(v, n, stride, out, &err), BC_OK);
    return (stats_row){out[BC_STAT_N],   out[BC_STAT_MEAN], out[BC_STAT_STDDEV], out[BC_STAT_CV], out[BC_STAT_MIN],
                       out[BC_STAT_P50], out[BC_STAT_P95],  out[BC_STAT_P99],    out[BC_STAT_MAX]};
}

/* The seed's reference: 1..20 gives mean 10.5, p50 10.5, p95 19. */
static void test_one_to_twenty(void **state) {
    (void)state;
    double v[20];
    for (int i = 0; i < 20; i++) v[i] = 20 - i; /* unsorted on purpose */
    stats_row s = compute(v, 20, 1);
    assert_double_equal(s.n, 20, 0);
    assert_double_equal(s.mean, 10.5, 1e-12);
    assert_double_equal(s.p50, 10.5, 1e-12);
    assert_double_equal(s.p95, 19.0, 1e-12);
    assert_double_equal(s.min, 1.0, 0);
    assert_double_equal(s.max, 20.0, 0);
    /* population variance of 1..n is (n^2 - 1) / 12 */
    assert_double_equal(s.stddev, sqrt((400.0 - 1.0) / 12.0), 1e-12);
}

static void test_single_value(void **state) {
    (void)state;
    double v = 7.25;
    stats_row s = compute(&v, 1, 1);
    assert_double_equal(s.n, 1, 0);
    assert_double_equal(s.mean, 7.25, 0);
    assert_double_equal(s.p50, 7.25, 0);
    assert_double_equal(s.p95, 7.25, 0);
    assert_double_equal(s.min, 7.25, 0);
    assert_double_equal(s.max, 7.25, 0);
    assert_double_equal(s.stddev, 0.0, 0);
}

static void test_odd_and_even(void **state) {
    (void)state;
    double odd[] = {5, 1, 3};
    stats_row s = compute(odd, 3, 1);
    assert_double_equal(s.p50, 3.0, 0);
    /* ceil(0.95 * 3) = 3 -> sorted[2] */
    assert_double_equal(s.p95, 5.0, 0);
    double even[] = {4, 1, 3, 2};
    s = compute(even, 4, 1);
    assert_double_equal(s.p50, 2.5, 0);
    assert_double_equal(s.p95, 4.0, 0);
    assert_double_equal(s.stddev, sqrt(1.25), 1e-12);
}

static void test_p95_rank_boundaries(void **state) {
    (void)state;
    /* n = 21: ceil(19.95) = 20 -> sorted[19] = 20 (values 1..21) */
    double v[21];
    for (int i = 0; i < 21; i++) v[i] = i + 1;
    assert_double_equal(compute(v, 21, 1).p95, 20.0, 0);
    /* n = 40: ceil(38) = 38 -> sorted[37] = 38 */
    double w[40];
    for (int i = 0; i < 40; i++) w[i] = i + 1;
    assert_double_equal(compute(w, 40, 1).p95, 38.0, 0);
}

static void test_nan_skipped(void **state) {
    (void)state;
    double v[] = {NAN, 2.0, NAN, 4.0};
    stats_row s = compute(v, 4, 1);
    assert_double_equal(s.n, 2, 0);
    assert_double_equal(s.mean, 3.0, 0);
    assert_double_equal(s.p50, 3.0, 0);
    assert_double_equal(s.min, 2.0, 0);
    assert_double_equal(s.max, 4.0, 0);
}

static void test_all_nan_and_empty(void **state) {
    (void)state;
    double v[] = {NAN, NAN};
    stats_row s = compute(v, 2, 1);
    assert_double_equal(s.n, 0, 0);
    assert_nan(s.mean);
    assert_nan(s.p50);
    assert_nan(s.p95);
    assert_nan(s.p99);
    assert_nan(s.cv);
    assert_nan(s.min);
    assert_nan(s.max);
    assert_nan(s.stddev);
    s = compute(NULL, 0, 1);
    assert_double_equal(s.n, 0, 0);
    assert_nan(s.mean);
}

static void test_stride(void **state) {
    (void)state;
    /* a 3 x 2 row-major table; column 1 is {10, 30, 20} */
    double t[] = {1, 10, 2, 30, 3, 20};
    stats_row s = compute(t + 1, 3, 2);
    assert_double_equal(s.n, 3, 0);
    assert_double_equal(s.mean, 20.0, 0);
    assert_double_equal(s.p50, 20.0, 0);
    assert_double_equal(s.max, 30.0, 0);
}

/* p99 and cv: 1..100 gives p99 = sorted[98] = 99; 1..20 gives cv = stddev / mean. */
static void test_p99_and_cv(void **state) {
    (void)state;
    double v[100];
    for (int i = 0; i < 100; i++) v[i] = 100 - i;
    stats_row s = compute(v, 100, 1);
    assert_double_equal(s.p99, 99.0, 0);
    assert_double_equal(s.p95, 95.0, 0);
    double w[20];
    for (int i = 0; i < 20; i++) w[i] = i + 1;
    s = compute(w, 20, 1);
    assert_double_equal(s.cv, sqrt((400.0 - 1.0) / 12.0) / 10.5, 1e-12);
    /* n = 3: ceil(2.97) = 3 -> the max */
    double three[] = {2, 9, 4};
    assert_double_equal(compute(three, 3, 1).p99, 9.0, 0);
    /* a zero mean has no coefficient of variation */
    double zero[] = {-1, 1};
    assert_nan(compute(zero, 2, 1).cv);
}

/* The distribution-free 95% interval of the median: the order statistics
 * of the published tables (n = 6: x(1), x(6); n = 10: x(2), x(9); n = 20:
 * x(6), x(15); n = 100: x(40), x(61)), none below 6 values, and no
 * underflow for large n (2^-n is 0 in doubles beyond 1074). */
static void test_median_ci(void **state) {
    (void)state;
    static const struct { size_t n, k; } table[] = {{6, 1}, {7, 1}, {8, 1}, {9, 2}, {10, 2}, {20, 6}, {100, 40}};
    double sorted[3000], lo, hi;
    for (size_t i = 0; i < 3000; i++) sorted[i] = (double)(i + 1);
    for (size_t t = 0; t < sizeof table / sizeof table[0]; t++) {
        size_t n = table[t].n;
        assert_int_equal(bc_stats_median_ci(sorted, n, &lo, &hi), table[t].k);
        assert_double_equal(lo, (double)table[t].k, 0);
        assert_double_equal(hi, (double)(n + 1 - table[t].k), 0);
    }
    for (size_t n = 0; n < BC_MEDIAN_CI_MIN_N; n++) {
        assert_int_equal(bc_stats_median_ci(sorted, n, &lo, &hi), 0);
        assert_nan(lo);
        assert_nan(hi);
    }
    /* n = 3000: k near n/2 - 0.98 sqrt(n) = 1446.3 */
    size_t k = bc_stats_median_ci(sorted, 3000, &lo, &hi);
    assert_true(k >= 1440 && k <= 1450);
    assert_true(lo < hi);
}

/* The relative half-width: 1..20 unsorted gives [6, 15] around 10.5. */
static void test_median_rel_ci(void **state) {
    (void)state;
    double v[40];
    for (int i = 0; i < 20; i++) v[2 * i] = 20 - i, v[2 * i + 1] = NAN; /* stride 2, NaN in between */
    bc_error err = {0};
    assert_double_equal(bc_stats_median_rel_ci(v, 20, 2, &err), 4.5 / 10.5, 1e-12);
    /* NaN values are left out: 40 values of which 20 are measured, same result */
    assert_double_equal(bc_stats_median_rel_ci(v, 40, 1, &err), 4.5 / 10.5, 1e-12);
    /* five values: too few */
    assert_nan(bc_stats_median_rel_ci(v, 5, 2, &err));
    /* identical values: a zero-width interval */
    double same[8] = {3, 3, 3, 3, 3, 3, 3, 3};
    assert_double_equal(bc_stats_median_rel_ci(same, 8, 1, &err), 0.0, 0);
    /* a zero median has no relative width */
    double zero[6] = {-1, 0, 0, 0, 0, 1};
    assert_nan(bc_stats_median_rel_ci(zero, 6, 1, &err));
}

/* The table names every statistic once, in the enum's order. */
static void test_names(void **state) {
    (void)state;
    static const char *const want[] = {"n", "mean", "stddev", "cv", "min", "p50", "p95", "p99", "max"};
    assert_int_equal(BC_N_STATS, sizeof want / sizeof want[0]);
    for (int i = 0; i < BC_N_STATS; i++) assert_string_equal(bc_stat_names[i], want[i]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_to_twenty),   cmocka_unit_test(test_single_value),
        cmocka_unit_test(test_odd_and_even),    cmocka_unit_test(test_p95_rank_boundaries),
        cmocka_unit_test(test_nan_skipped),     cmocka_unit_test(test_all_nan_and_empty),
        cmocka_unit_test(test_stride),          cmocka_unit_test(test_p99_and_cv),
        cmocka_unit_test(test_names),           cmocka_unit_test(test_median_ci),
        cmocka_unit_test(test_median_rel_ci),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
