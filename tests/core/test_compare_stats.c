/* test_compare_stats.c: the statistics of benchctl compare (core/src/analysis/compare_stats.c).
 *
 * - Mann-Whitney U and its exact and normal-approximation p-values against
 *   scipy.stats.mannwhitneyu, computed once and committed as
 *   compare_stats_golden.h (tools/golden/make_compare_stats.py): n = 1, 2,
 *   3 vs 3, 5 vs 7, 20 vs 20, larger samples, ties, identical samples;
 * - the smallest reachable p against the exact p of fully separated samples;
 * - the generator against xoshiro256**'s published first outputs;
 * - the bootstrap interval: deterministic for a seed, sane coverage;
 * - the verdict rule, row by row.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "bc_test_assert.h"

#include <math.h>
#include <stdlib.h>

#include "compare_stats.h"
#include "compare_stats_golden.h"

#define N_GOLDEN (sizeof k_mwu_golden / sizeof k_mwu_golden[0])

/* |got - want| within rel of want (p-values span many decades). */
static void assert_rel(const char *what, const char *name, double got, double want, double rel) {
    if (!(fabs(got - want) <= rel * fabs(want)))
        fail_msg("%s %s: %.17g, scipy %.17g (rel %g)", name, what, got, want, rel);
}

static void test_u_statistic_matches_scipy(void **state) {
    (void)state;
    for (size_t i = 0; i < N_GOLDEN; i++) {
        const mwu_golden *g = &k_mwu_golden[i];
        double u, ties;
        assert_int_equal(bc_mwu_statistic(g->a, g->n_a, g->b, g->n_b, &u, &ties), BC_OK);
        if (u != g->u_a) fail_msg("%s: U %.17g, scipy %.17g", g->name, u, g->u_a);
        if ((ties > 0) != g->has_ties) fail_msg("%s: tie sum %g, scipy says ties: %d", g->name, ties, g->has_ties);
    }
}

static void test_exact_p_matches_scipy(void **state) {
    (void)state;
    size_t checked = 0;
    for (size_t i = 0; i < N_GOLDEN; i++) {
        const mwu_golden *g = &k_mwu_golden[i];
        if (isnan(g->p_exact)) continue;
        assert_rel("exact p", g->name, bc_mwu_p_exact(g->n_a, g->n_b, g->u_a), g->p_exact, 1e-12);
        checked++;
    }
    assert_true(checked >= 10);
}

static void test_normal_p_matches_scipy(void **state) {
    (void)state;
    for (size_t i = 0; i < N_GOLDEN; i++) {
        const mwu_golden *g = &k_mwu_golden[i];
        double u, ties;
        assert_int_equal(bc_mwu_statistic(g->a, g->n_a, g->b, g->n_b, &u, &ties), BC_OK);
        assert_rel("asymptotic p", g->name, bc_mwu_p_normal(g->n_a, g->n_b, u, ties), g->p_asymptotic, 1e-12);
    }
}

/* bc_mwu_test takes the exact p for tie-free samples up to 40 values, the
 * normal approximation otherwise, and the result is scipy's for that method. */
static void test_method_choice(void **state) {
    (void)state;
    for (size_t i = 0; i < N_GOLDEN; i++) {
        const mwu_golden *g = &k_mwu_golden[i];
        bc_mwu_result r;
        assert_int_equal(bc_mwu_test(g->a, g->n_a, g->b, g->n_b, &r), BC_OK);
        int want_exact = !g->has_ties && g->n_a + g->n_b <= BC_MWU_EXACT_MAX_N;
        if (r.exact != want_exact) fail_msg("%s: exact %d, expected %d", g->name, r.exact, want_exact);
        assert_rel("test p", g->name, r.p, want_exact ? g->p_exact : g->p_asymptotic, 1e-12);
        assert_true(r.p >= 0 && r.p <= 1);
    }
}

/* Swapping the samples mirrors U and keeps the two-sided p. */
static void test_swap_symmetry(void **state) {
    (void)state;
    for (size_t i = 0; i < N_GOLDEN; i++) {
        const mwu_golden *g = &k_mwu_golden[i];
        bc_mwu_result ab, ba;
        assert_int_equal(bc_mwu_test(g->a, g->n_a, g->b, g->n_b, &ab), BC_OK);
        assert_int_equal(bc_mwu_test(g->b, g->n_b, g->a, g->n_a, &ba), BC_OK);
        assert_double_close(ab.u_a + ba.u_a, (double)(g->n_a * g->n_b), 0);
        assert_double_close(ab.p, ba.p, 1e-15);
    }
}

static void test_empty_sample_refused(void **state) {
    (void)state;
    double x = 1, u, t;
    bc_mwu_result r;
    assert_int_equal(bc_mwu_statistic(&x, 1, &x, 0, &u, &t), BC_ERR_INVALID);
    assert_int_equal(bc_mwu_test(&x, 0, &x, 1, &r), BC_ERR_INVALID);
    assert_nan(r.p);
    assert_nan(bc_mwu_p_exact(3, 3, 4.5)); /* not an integer: ties, no exact p */
    assert_nan(bc_mwu_p_exact(3, 3, 10));  /* beyond n_a n_b */
}

/* The smallest p is that of samples that do not overlap: 2 / C(n_a + n_b, n_a). */
static void test_min_p(void **state) {
    (void)state;
    assert_double_close(bc_mwu_min_p(3, 3), 0.1, 1e-15);
    assert_double_close(bc_mwu_min_p(5, 5), 2.0 / 252.0, 1e-15);
    assert_double_close(bc_mwu_min_p(4, 5), 2.0 / 126.0, 1e-15);
    assert_double_close(bc_mwu_min_p(1, 1), 1.0, 0);
    assert_double_close(bc_mwu_min_p(2, 2), 1.0 / 3.0, 1e-15);
    assert_double_close(bc_mwu_min_p(0, 7), 1.0, 0);
    assert_true(bc_mwu_min_p(100, 100) < 1e-50);
    assert_true(bc_mwu_min_p(5000, 5000) == 0); /* C(10000, 5000) overflows: p is 0 */
    for (size_t n_a = 1; n_a <= 8; n_a++)
        for (size_t n_b = 1; n_b <= 8; n_b++)
            assert_double_close(bc_mwu_p_exact(n_a, n_b, 0), bc_mwu_min_p(n_a, n_b), 1e-14);
}

/* The exact p of the middle U is 1, and p only falls as U moves out. */
static void test_exact_monotone(void **state) {
    (void)state;
    size_t n_a = 6, n_b = 9;
    double prev = 0;
    for (int u = 0; u <= 27; u++) {
        double p = bc_mwu_p_exact(n_a, n_b, u);
        assert_true(p >= prev);
        prev = p;
    }
    assert_double_close(bc_mwu_p_exact(n_a, n_b, 27), 1.0, 0);
}

static void test_median_and_change(void **state) {
    (void)state;
    double scratch[4];
    double odd[] = {3, 1, 2}, even[] = {4, 1, 3, 2};
    assert_double_close(bc_cmp_median(odd, 3, scratch), 2.0, 0);
    assert_double_close(bc_cmp_median(even, 4, scratch), 2.5, 0);
    assert_nan(bc_cmp_median(odd, 0, scratch));
    assert_double_close(odd[0], 3.0, 0); /* not modified */
    /* the change is a log factor: throughput up 10% and time down from 110
     * to 100 are both ln(1.1); symmetric: 2.9x faster and 2.9x slower are
     * +-ln(2.9) whichever side is the baseline (not +190% against -65.5%) */
    assert_double_close(bc_cmp_change(1.10, 1), log(1.1), 1e-12);
    assert_double_close(bc_cmp_change(100.0 / 110.0, 0), log(1.1), 1e-12);
    assert_double_close(bc_cmp_change(1.25, 0), -log(1.25), 1e-12);
    assert_double_close(bc_cmp_change(1 / 2.9, 0), -bc_cmp_change(2.9, 0), 1e-12);
    assert_double_close(bc_cmp_change(2.9, 1), log(2.9), 1e-12);
    assert_nan(bc_cmp_change(0.0, 0));
    assert_nan(bc_cmp_change(-1.0, 1));
    assert_nan(bc_cmp_change(NAN, 1));
}

/* xoshiro256** from the state {1, 2, 3, 4}: the reference implementation's
 * first outputs; splitmix64 from 0: its well-known first output. */
static void test_rng_reference(void **state) {
    (void)state;
    static const uint64_t want[] = {11520u, 0u, 1509978240u, UINT64_C(1215971899390074240),
                                    UINT64_C(1216172134540287360), UINT64_C(607988272756665600),
                                    UINT64_C(16172922978634559625)};
    bc_rng r = {{1, 2, 3, 4}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) assert_true(bc_rng_next(&r) == want[i]);
    bc_rng_seed(&r, 0);
    assert_true(r.s[0] == UINT64_C(0xe220a8397b1dcdaf));
    /* below(n) stays below n and reaches every value */
    int seen[7] = {0};
    for (int i = 0; i < 7000; i++) {
        uint64_t x = bc_rng_below(&r, 7);
        assert_true(x < 7);
        seen[x]++;
    }
    for (int k = 0; k < 7; k++) assert_true(seen[k] > 800 && seen[k] < 1200);
}

/* Uniform values in [lo, lo + width). */
static void fill_uniform(bc_rng *r, double *x, size_t n, double lo, double width) {
    for (size_t i = 0; i < n; i++) x[i] = lo + width * (double)(bc_rng_next(r) >> 11) * 0x1p-53;
}

static void test_bootstrap_deterministic(void **state) {
    (void)state;
    /* 40 and 35 values: enough distinct resampled medians that another
     * seed moves the interval's ends a little */
    enum { NA = 40, NB = 35 };
    double a[NA], b[NB], lo1, hi1, lo2, hi2, lo3, hi3;
    bc_rng r;
    bc_rng_seed(&r, 42);
    fill_uniform(&r, a, NA, 100, 20);
    fill_uniform(&r, b, NB, 110, 20);
    assert_int_equal(bc_bootstrap_ratio_ci(a, NA, b, NB, 10000, 7, 0.95, &lo1, &hi1), BC_OK);
    assert_int_equal(bc_bootstrap_ratio_ci(a, NA, b, NB, 10000, 7, 0.95, &lo2, &hi2), BC_OK);
    assert_true(lo1 == lo2 && hi1 == hi2); /* same seed, same interval, to the bit */
    assert_int_equal(bc_bootstrap_ratio_ci(a, NA, b, NB, 10000, 8, 0.95, &lo3, &hi3), BC_OK);
    double scratch[NA];
    double ratio = bc_cmp_median(b, NB, scratch) / bc_cmp_median(a, NA, scratch);
    print_message("seed 7: [%.6f, %.6f]; seed 8: [%.6f, %.6f]; ratio %.6f\n", lo1, hi1, lo3, hi3, ratio);
    assert_true(lo3 != lo1 || hi3 != hi1); /* another seed, other draws */
    assert_true(fabs(lo3 - lo1) < 0.01 && fabs(hi3 - hi1) < 0.01); /* but nearly the same interval */
    assert_true(lo1 < ratio && ratio < hi1);
    /* a narrower level gives a narrower interval */
    double lo50, hi50;
    assert_int_equal(bc_bootstrap_ratio_ci(a, NA, b, NB, 10000, 7, 0.5, &lo50, &hi50), BC_OK);
    assert_true(lo1 <= lo50 && hi50 <= hi1);
}

static void test_bootstrap_degenerate(void **state) {
    (void)state;
    double same[] = {4, 4, 4}, twice[] = {8, 8}, zero[] = {0, 0, 1}, lo, hi;
    assert_int_equal(bc_bootstrap_ratio_ci(same, 3, twice, 2, 1000, 1, 0.95, &lo, &hi), BC_OK);
    assert_double_close(lo, 2.0, 0);
    assert_double_close(hi, 2.0, 0);
    /* a median of 0 in some resample: no interval */
    assert_int_equal(bc_bootstrap_ratio_ci(zero, 3, same, 3, 1000, 1, 0.95, &lo, &hi), BC_OK);
    assert_nan(lo);
    assert_nan(hi);
    assert_int_equal(bc_bootstrap_ratio_ci(same, 0, same, 3, 1000, 1, 0.95, &lo, &hi), BC_OK);
    assert_nan(lo);
    assert_int_equal(bc_bootstrap_ratio_ci(same, 3, same, 3, 0, 1, 0.95, &lo, &hi), BC_ERR_INVALID);
    assert_int_equal(bc_bootstrap_ratio_ci(same, 3, same, 3, 10, 1, 1.0, &lo, &hi), BC_ERR_INVALID);
}

/* Coverage: B's values are A's distribution scaled by 1.1, so the true
 * ratio of medians is 1.1; a 95% interval from 30 + 30 values should hold it
 * in roughly 95% of 200 independent trials (the percentile bootstrap of a
 * median is a little off at this size, hence the wide band). */
static void test_bootstrap_coverage(void **state) {
    (void)state;
    enum { N = 30, TRIALS = 200 };
    double a[N], b[N], lo, hi;
    bc_rng r;
    bc_rng_seed(&r, 2024);
    int covered = 0;
    for (int t = 0; t < TRIALS; t++) {
        fill_uniform(&r, a, N, 1.0, 1.0);   /* median 1.5 */
        fill_uniform(&r, b, N, 1.1, 1.1);   /* median 1.65 */
        assert_int_equal(bc_bootstrap_ratio_ci(a, N, b, N, 2000, (uint64_t)t, 0.95, &lo, &hi), BC_OK);
        covered += lo <= 1.1 && 1.1 <= hi;
    }
    print_message("bootstrap coverage: %d of %d\n", covered, TRIALS);
    assert_true(covered >= 170 && covered <= 198);
}

/* The verdict rule, with threshold 3% and alpha 0.01. */
static void test_verdict_rule(void **state) {
    (void)state;
    static const struct {
        double p, lo, hi, min_p;
        bc_verdict want;
    } rows[] = {
        {0.001, 0.05, 0.09, 1e-6, BC_VERDICT_BETTER},    /* significant, beyond +3% */
        {0.001, -0.09, -0.05, 1e-6, BC_VERDICT_WORSE},   /* significant, beyond -3% */
        {0.001, 0.02, 0.09, 1e-6, BC_VERDICT_NOISE},     /* significant, but the interval reaches inside the band */
        {0.001, -0.09, -0.02, 1e-6, BC_VERDICT_NOISE},
        {0.001, -0.02, 0.02, 1e-6, BC_VERDICT_SAME},     /* significant yet small: within the band */
        {0.5, -0.02, 0.02, 1e-6, BC_VERDICT_SAME},
        {0.5, -0.03, 0.03, 1e-6, BC_VERDICT_SAME},       /* the band's edges are inside */
        {0.5, 0.05, 0.09, 1e-6, BC_VERDICT_NOISE},       /* beyond the band but not significant */
        {0.5, -0.09, -0.05, 1e-6, BC_VERDICT_NOISE},
        {0.5, -0.10, 0.10, 1e-6, BC_VERDICT_NOISE},      /* wide interval */
        {0.01, 0.05, 0.09, 1e-6, BC_VERDICT_NOISE},      /* p must be below alpha, not equal */
        {0.001, 0.05, 0.09, 0.1, BC_VERDICT_UNDERPOWERED}, /* 3 vs 3: min p 0.1 */
        {0.5, -0.01, 0.01, 0.01, BC_VERDICT_UNDERPOWERED}, /* min p equal to alpha */
        {0.001, NAN, NAN, 1e-6, BC_VERDICT_NOISE},       /* no interval (a median of 0) */
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        bc_verdict v = bc_cmp_verdict_decide(rows[i].p, rows[i].lo, rows[i].hi, 0.03, 0.01, rows[i].min_p);
        if (v != rows[i].want)
            fail_msg("row %zu: %s, expected %s", i, bc_verdict_name(v), bc_verdict_name(rows[i].want));
    }
    /* the settings move the rule: with a 10% threshold the first row is
     * within the band, alpha 0.2 makes 3 vs 3 testable */
    assert_int_equal(bc_cmp_verdict_decide(0.001, 0.05, 0.09, 0.10, 0.01, 1e-6), BC_VERDICT_SAME);
    assert_int_equal(bc_cmp_verdict_decide(0.1, 0.05, 0.09, 0.03, 0.2, 0.1), BC_VERDICT_BETTER);
    assert_string_equal(bc_verdict_name(BC_VERDICT_UNDERPOWERED), "UNDERPOWERED");
    assert_string_equal(bc_verdict_name(BC_VERDICT_FAILED), "FAILED");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_u_statistic_matches_scipy),
        cmocka_unit_test(test_exact_p_matches_scipy),
        cmocka_unit_test(test_normal_p_matches_scipy),
        cmocka_unit_test(test_method_choice),
        cmocka_unit_test(test_swap_symmetry),
        cmocka_unit_test(test_empty_sample_refused),
        cmocka_unit_test(test_min_p),
        cmocka_unit_test(test_exact_monotone),
        cmocka_unit_test(test_median_and_change),
        cmocka_unit_test(test_rng_reference),
        cmocka_unit_test(test_bootstrap_deterministic),
        cmocka_unit_test(test_bootstrap_degenerate),
        cmocka_unit_test(test_bootstrap_coverage),
        cmocka_unit_test(test_verdict_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
