/* test_sampling.c: greedy, temperature, top-k, top-p and the per-row
 * generators. Draws never leave the allowed set (computed here by brute
 * force), and 10^4 draws from a known distribution pass a chi-square test at
 * p = 0.001 (fixed seed, so deterministic).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sampling.h"

static int cmp_desc_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x > y ? -1 : x < y ? 1 : 0;
}

/* allowed[v] = 1 for the tokens transformers' warpers keep (brute force:
 * full sort, no ties in these tests). */
static void allowed_set(const float *logits, int V, double temp, int top_k, double top_p, int *allowed) {
    double *x = malloc((size_t)V * sizeof *x), *sorted = malloc((size_t)V * sizeof *sorted);
    for (int v = 0; v < V; v++) x[v] = logits[v] / temp, sorted[v] = x[v];
    qsort(sorted, (size_t)V, sizeof *sorted, cmp_desc_double);
    double kth = top_k > 0 && top_k < V ? sorted[top_k - 1] : -INFINITY;
    double mx = sorted[0], sum = 0;
    for (int v = 0; v < V; v++) sum += x[v] >= kth ? exp(x[v] - mx) : 0;
    for (int v = 0; v < V; v++) {
        if (x[v] < kth) { allowed[v] = 0; continue; }
        double above = 0; /* mass of the tokens ranked above v */
        for (int u = 0; u < V; u++)
            if (x[u] >= kth && x[u] > x[v]) above += exp(x[u] - mx) / sum;
        allowed[v] = top_p >= 1.0 || above < top_p;
    }
    free(x), free(sorted);
}

static void random_logits(float *logits, int V, uint64_t seed) {
    eng_rng r = eng_rng_for_row(seed, 0);
    for (int v = 0; v < V; v++) logits[v] = (float)(6.0 * eng_rng_uniform(&r) - 3.0);
}

static void check_never_outside(double temp, int top_k, double top_p) {
    enum { V = 200, DRAWS = 3000 };
    float base[V], work[V];
    int allowed[V], seen[V] = {0};
    random_logits(base, V, 99);
    allowed_set(base, V, temp, top_k, top_p, allowed);
    eng_sampling p = {temp, top_p, top_k, 7};
    eng_sampler s;
    bc_error err = {0};
    assert_int_equal(eng_sampler_init(&s, V, &p, &err), BC_OK);
    eng_rng rng = eng_rng_for_row(7, 3);
    for (int d = 0; d < DRAWS; d++) {
        memcpy(work, base, sizeof work);
        int32_t t = eng_sample(&s, work, &rng);
        assert_true(t >= 0 && t < V);
        if (!allowed[t]) {
            print_error("draw %d: token %d outside the allowed set (T %g, k %d, p %g)\n", d, t, temp, top_k, top_p);
            fail();
        }
        seen[t] = 1;
    }
    /* the filter's kept set is exactly the allowed set */
    memcpy(work, base, sizeof work);
    eng_sampler_filter(&s, work);
    int n_allowed = 0, n_seen = 0;
    for (int v = 0; v < V; v++) n_allowed += allowed[v], n_seen += seen[v];
    assert_int_equal(s.n_kept, n_allowed);
    for (int i = 0; i < s.n_kept; i++) assert_true(allowed[s.kept[i].i]);
    assert_true(n_seen > 1 || n_allowed == 1);
    eng_sampler_free(&s);
}

static void test_top_k(void **state) { (void)state; check_never_outside(1.0, 5, 1.0); }
static void test_top_p(void **state) { (void)state; check_never_outside(0.8, 0, 0.6); }
static void test_top_k_then_top_p(void **state) { (void)state; check_never_outside(1.3, 20, 0.5); }
static void test_top_k_large(void **state) { (void)state; check_never_outside(1.0, 150, 1.0); }
static void test_top_k_all(void **state) { (void)state; check_never_outside(1.0, 200, 1.0); }

/* Ties with the k-th largest are kept, as transformers' top-k does. */
static void test_top_k_ties(void **state) {
    (void)state;
    float logits[10] = {1, 5, 3, 3, 3, 0, 2, 3, -1, 4};
    eng_sampling p = {1.0, 1.0, 3, 1};
    eng_sampler s;
    bc_error err = {0};
    assert_int_equal(eng_sampler_init(&s, 10, &p, &err), BC_OK);
    eng_sampler_filter(&s, logits);
    assert_int_equal(s.n_kept, 6); /* 5, 4 and the four 3s */
    for (int i = 0; i < s.n_kept; i++) assert_true(s.kept[i].i == 1 || s.kept[i].i == 9 || (s.kept[i].i >= 2 && s.kept[i].i <= 4) || s.kept[i].i == 7);
    eng_sampler_free(&s);
}

static void test_top_p_tiny(void **state) { (void)state; check_never_outside(1.0, 0, 1e-6); }

/* Chi-square goodness of fit, 10^4 draws, 6 categories (5 degrees of
 * freedom): the statistic must stay below 20.515, the 0.999 quantile. */
static void check_chi_square(const double *probs, int V, double top_p, const double *expect) {
    enum { DRAWS = 10000 };
    float logits[16], work[16];
    for (int v = 0; v < V; v++) logits[v] = (float)log(probs[v]);
    eng_sampling p = {1.0, top_p, 0, 2024};
    eng_sampler s;
    bc_error err = {0};
    assert_int_equal(eng_sampler_init(&s, V, &p, &err), BC_OK);
    eng_rng rng = eng_rng_for_row(2024, 0);
    int counts[16] = {0};
    for (int d = 0; d < DRAWS; d++) {
        memcpy(work, logits, sizeof(float) * (size_t)V);
        counts[eng_sample(&s, work, &rng)]++;
    }
    double chi2 = 0;
    int df = -1;
    for (int v = 0; v < V; v++) {
        if (expect[v] == 0) {
            assert_int_equal(counts[v], 0);
            continue;
        }
        double e = expect[v] * DRAWS;
        chi2 += (counts[v] - e) * (counts[v] - e) / e;
        df++;
    }
    /* 0.999 quantiles of chi-square for df 1..5 */
    static const double crit[] = {0, 10.828, 13.816, 16.266, 18.467, 20.515};
    if (!(chi2 < crit[df])) {
        print_error("chi-square %g >= %g (df %d)\n", chi2, crit[df], df);
        fail();
    }
    eng_sampler_free(&s);
}

static void test_chi_square(void **state) {
    (void)state;
    const double probs[6] = {0.05, 0.1, 0.15, 0.2, 0.2, 0.3};
    check_chi_square(probs, 6, 1.0, probs);
}

/* top_p 0.55 over {0.3, 0.2, 0.2, 0.15, 0.1, 0.05} keeps 0.3, 0.2 and 0.2
 * (the mass above the third is 0.5 < 0.55), renormalised by 0.7. */
static void test_chi_square_top_p(void **state) {
    (void)state;
    const double probs[6] = {0.05, 0.1, 0.15, 0.2, 0.2, 0.3};
    const double expect[6] = {0, 0, 0, 0.2 / 0.7, 0.2 / 0.7, 0.3 / 0.7};
    check_chi_square(probs, 6, 0.55, expect);
}

/* A full-size vocabulary exercises the doubling top-p selection. */
static void test_top_p_large_vocab(void **state) {
    (void)state;
    enum { V = 50272 };
    float *base = malloc(V * sizeof(float)), *work = malloc(V * sizeof(float));
    random_logits(base, V, 5);
    for (int v = 0; v < V; v += 97) base[v] += 4.0f; /* a heavy head of ~500 tokens */
    eng_sampling p = {0.7, 0.9, 0, 1};
    eng_sampler s;
    bc_error err = {0};
    assert_int_equal(eng_sampler_init(&s, V, &p, &err), BC_OK);
    memcpy(work, base, V * sizeof(float));
    eng_sampler_filter(&s, work);
    /* brute force: the kept set is a prefix of the descending order */
    double *sorted = malloc(V * sizeof(double)), mx = -INFINITY, sum = 0;
    for (int v = 0; v < V; v++) sorted[v] = base[v] / 0.7, mx = fmax(mx, sorted[v]);
    qsort(sorted, V, sizeof(double), cmp_desc_double);
    for (int v = 0; v < V; v++) sum += exp(sorted[v] - mx);
    double cum = 0;
    int keep = 0;
    while (keep < V && cum < 0.9) cum += exp(sorted[keep++] - mx) / sum;
    assert_in_range(s.n_kept, keep - 2, keep + 2); /* fp32 vs double rounding at the edge */
    assert_true(s.n_kept > 64);
    eng_sampler_free(&s);
    free(base), free(work), free(sorted);
}

static void test_greedy_and_eos(void **state) {
    (void)state;
    float logits[5] = {0.5f, 2.0f, 2.0f, -1.0f, 1.0f};
    eng_sampling p = {0.0, 1.0, 0, 0};
    eng_sampler s;
    bc_error err = {0};
    assert_int_equal(eng_sampler_init(&s, 5, &p, &err), BC_OK);
    eng_rng r = eng_rng_for_row(0, 0);
    assert_int_equal(eng_sample(&s, logits, &r), 1); /* first maximum, like argmax */
    logits[1] = logits[2] = -INFINITY;
    assert_int_equal(eng_sample(&s, logits, &r), 4);
    eng_sampler_free(&s);
    /* a -inf logit is never drawn */
    eng_sampling q = {1.0, 1.0, 0, 0};
    assert_int_equal(eng_sampler_init(&s, 5, &q, &err), BC_OK);
    for (int d = 0; d < 500; d++) {
        float l[5] = {0, 0, -INFINITY, 0, 0};
        assert_int_not_equal(eng_sample(&s, l, &r), 2);
    }
    eng_sampler_free(&s);
    eng_sampling bad = {1.0, 0.0, 0, 0};
    assert_int_equal(eng_sampler_init(&s, 5, &bad, &err), BC_ERR_INVALID);
}

/* Greedy over a large vocabulary (many 16-lane blocks and a tail) against
 * the plain first-maximum loop: random logits with many ties (few distinct
 * values), the maximum in the tail, at 0, NaNs in between, a NaN first. */
static void test_greedy_large(void **state) {
    (void)state;
    const int V = 50272 + 7;
    float *l = malloc(sizeof(float) * V);
    assert_non_null(l);
    eng_sampling p = {0.0, 1.0, 0, 0};
    eng_sampler s;
    bc_error err = {0};
    assert_int_equal(eng_sampler_init(&s, V, &p, &err), BC_OK);
    eng_rng r = eng_rng_for_row(0, 0);
    unsigned seed = 5;
    for (int trial = 0; trial < 40; trial++) {
        for (int v = 0; v < V; v++) {
            seed = seed * 1103515245u + 12345u;
            l[v] = (float)((seed >> 16) % 50) - 25.0f; /* ties everywhere */
        }
        if (trial % 4 == 1) l[V - 1] = 100.0f;
        if (trial % 4 == 2) l[0] = 100.0f;
        if (trial % 4 == 3)
            for (int v = 3; v < V; v += 1000) l[v] = NAN;
        if (trial == 39) l[0] = NAN;
        int want = 0;
        for (int v = 1; v < V; v++)
            if (l[v] > l[want]) want = v;
        assert_int_equal(eng_sample(&s, l, &r), want);
    }
    eng_sampler_free(&s);
    free(l);
}

static void test_rng_per_row(void **state) {
    (void)state;
    eng_rng a = eng_rng_for_row(42, 1), b = eng_rng_for_row(42, 1), c = eng_rng_for_row(42, 2),
            d = eng_rng_for_row(43, 1);
    int same_c = 0, same_d = 0;
    for (int i = 0; i < 100; i++) {
        uint64_t x = eng_rng_next(&a);
        assert_true(x == eng_rng_next(&b));
        same_c += x == eng_rng_next(&c);
        same_d += x == eng_rng_next(&d);
    }
    assert_int_equal(same_c, 0);
    assert_int_equal(same_d, 0);
    for (int i = 0; i < 1000; i++) {
        double u = eng_rng_uniform(&a);
        assert_true(u >= 0.0 && u < 1.0);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_top_k),           cmocka_unit_test(test_top_p),
        cmocka_unit_test(test_top_k_then_top_p), cmocka_unit_test(test_top_p_tiny),
        cmocka_unit_test(test_top_k_large),     cmocka_unit_test(test_top_k_all),
        cmocka_unit_test(test_top_k_ties),
        cmocka_unit_test(test_chi_square),      cmocka_unit_test(test_chi_square_top_p),
        cmocka_unit_test(test_top_p_large_vocab), cmocka_unit_test(test_greedy_and_eos),
        cmocka_unit_test(test_greedy_large),
        cmocka_unit_test(test_rng_per_row),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
