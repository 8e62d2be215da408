/* test_cuda_sample_math.c: the device sampler's scalar pieces and its
 * selection rule, on the CPU. cuda_sampling.cu finds the top-k threshold
 * and the top-p threshold by bisection over eng_fkey keys; this test runs
 * the same bisections serially and checks that they keep exactly the tokens
 * sampling.c's eng_sampler_filter keeps (distinct logits), and that the
 * device generator step is the CPU's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cuda_sample_math.h"
#include "sampling.h"

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

static void keys_preserve_order(void **state) {
    (void)state;
    float v[64] = {-INFINITY, INFINITY, 0.0f, 1e-45f, -1e-45f, 1.0f, -1.0f, 3.4e38f, -3.4e38f, 1.17549435e-38f};
    eng_rng g = eng_rng_for_row(3, 0);
    for (int i = 10; i < 64; i++) v[i] = (float)((eng_rng_uniform(&g) - 0.5) * pow(10.0, (double)(i % 20) - 10.0));
    qsort(v, 64, sizeof v[0], cmp_float);
    for (int i = 0; i < 64; i++) {
        assert_true(eng_keyf(eng_fkey(v[i])) == v[i]);
        if (i > 0 && v[i - 1] < v[i]) assert_true(eng_fkey(v[i - 1]) < eng_fkey(v[i]));
    }
    assert_int_equal(eng_fkey(0.0f), ENG_KEY_POS_ZERO);
    assert_int_equal(eng_fkey(INFINITY), ENG_KEY_POS_INF);
}

static void generator_is_the_cpu_one(void **state) {
    (void)state;
    for (uint64_t row = 0; row < 8; row++) {
        eng_rng cpu = eng_rng_for_row(1234, row);
        uint64_t dev = cpu.state;
        for (int k = 0; k < 100; k++) {
            uint64_t z = eng_splitmix_next(&dev);
            eng_rng c2 = cpu;
            assert_true(eng_uniform_from(z) == eng_rng_uniform(&c2));
            assert_true(z == eng_rng_next(&cpu));
        }
    }
}

/* The kernel's selection, serially: returns the kept flags. */
static void device_select(const float *logits, int V, double temperature, int top_k, double top_p, uint8_t *kept) {
    float *lg = malloc((size_t)V * sizeof *lg), *pr = malloc((size_t)V * sizeof *pr);
    const float inv_t = (float)(1.0 / temperature);
    int n = 0;
    for (int v = 0; v < V; v++) {
        lg[v] = logits[v];
        if (isinf(lg[v]) && lg[v] < 0) continue;
        n++;
    }
    float kth = -INFINITY;
    if (top_k > 0 && top_k < n) {
        uint32_t t = 0;
        for (int bit = 31; bit >= 0; bit--) {
            const uint32_t cand = t | (1u << bit);
            int c = 0;
            for (int v = 0; v < V; v++) c += lg[v] != -INFINITY && eng_fkey(lg[v]) >= cand;
            if (c >= top_k) t = cand;
        }
        kth = eng_keyf(t);
    }
    for (int v = 0; v < V; v++) lg[v] = lg[v] != -INFINITY && lg[v] >= kth ? lg[v] * inv_t : -INFINITY;
    float mx = -INFINITY;
    for (int v = 0; v < V; v++)
        if (lg[v] != -INFINITY) mx = fmaxf(mx, lg[v]);
    double s = 0.0;
    for (int v = 0; v < V; v++) {
        float e = (lg[v] != -INFINITY) ? expf(lg[v] - mx) : -1.0f;
        pr[v] = e;
        if (e >= 0.0f) s += e;
    }
    for (int v = 0; v < V; v++)
        if (pr[v] >= 0.0f) pr[v] = (float)(pr[v] / s);
    if (top_p < 1.0) {
        uint32_t lo = ENG_KEY_POS_ZERO, hi = ENG_KEY_POS_INF;
        while (lo < hi) {
            const uint32_t mid = lo + (hi - lo) / 2;
            const float th = eng_keyf(mid);
            double mass = 0.0;
            for (int v = 0; v < V; v++)
                if (pr[v] > th) mass += pr[v];
            if (mass < top_p) hi = mid;
            else lo = mid + 1;
        }
        const float th = eng_keyf(lo);
        for (int v = 0; v < V; v++)
            if (pr[v] >= 0.0f && pr[v] < th) pr[v] = -1.0f;
    }
    for (int v = 0; v < V; v++) kept[v] = pr[v] >= 0.0f;
    free(lg);
    free(pr);
}

static void selection_matches_cpu(void **state) {
    (void)state;
    const int V = 1000;
    const int ks[] = {0, 1, 7, 50, 999, 2000};
    const double ps[] = {1.0, 0.95, 0.5, 0.1, 1e-6};
    float *logits = malloc(V * sizeof *logits), *work = malloc(V * sizeof *work);
    uint8_t *kept = malloc(V), *cpu = malloc(V);
    int checked = 0;
    for (int trial = 0; trial < 6; trial++) {
        eng_rng g = eng_rng_for_row(99, (uint64_t)trial);
        for (int v = 0; v < V; v++) logits[v] = (float)((eng_rng_uniform(&g) - 0.5) * (trial + 1) * 6.0);
        if (trial % 2) logits[17] = logits[400] = -INFINITY; /* suppressed tokens (EOS) never kept */
        for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++)
            for (size_t pi = 0; pi < sizeof ps / sizeof ps[0]; pi++) {
                eng_sampling sp = {0};
                sp.temperature = 0.7;
                sp.top_k = ks[ki];
                sp.top_p = ps[pi];
                eng_sampler s;
                bc_error err = {0};
                assert_int_equal(eng_sampler_init(&s, V, &sp, &err), BC_OK);
                memcpy(work, logits, V * sizeof *work);
                eng_sampler_filter(&s, work);
                memset(cpu, 0, V);
                for (int i = 0; i < s.n_kept; i++) cpu[s.kept[i].i] = 1;
                device_select(logits, V, 0.7, ks[ki], ps[pi], kept);
                for (int v = 0; v < V; v++) {
                    if (kept[v] != cpu[v])
                        fail_msg("trial %d top_k %d top_p %g: token %d kept on the device %d, on the CPU %d", trial,
                                 ks[ki], ps[pi], v, kept[v], cpu[v]);
                }
                assert_true(s.n_kept >= 1);
                eng_sampler_free(&s);
                checked++;
            }
    }
    assert_int_equal(checked, 6 * 6 * 5);
    free(logits), free(work), free(kept), free(cpu);
}

/* top-k compares the raw logits, as the CPU does: two logits one ulp apart
 * that the temperature scaling rounds to one float (1.5 and its predecessor
 * times (float)(1 / 0.7)) must not both be kept when only the larger is the
 * k-th largest. */
static void top_k_on_raw_logits(void **state) {
    (void)state;
    const float below = nextafterf(1.5f, 0.0f), inv_t = (float)(1.0 / 0.7);
    volatile float sa = below * inv_t, sb = 1.5f * inv_t;
    assert_true(sa == sb); /* the premise: scaling makes them tie */
    const float logits[8] = {3.0f, 2.5f, 1.5f, below, -1.0f, -2.0f, -3.0f, -4.0f};
    uint8_t kept[8], cpu[8];
    eng_sampling sp = {0};
    sp.temperature = 0.7;
    sp.top_k = 3;
    sp.top_p = 1.0;
    eng_sampler s;
    bc_error err = {0};
    assert_int_equal(eng_sampler_init(&s, 8, &sp, &err), BC_OK);
    float work[8];
    memcpy(work, logits, sizeof work);
    eng_sampler_filter(&s, work);
    memset(cpu, 0, sizeof cpu);
    for (int i = 0; i < s.n_kept; i++) cpu[s.kept[i].i] = 1;
    eng_sampler_free(&s);
    assert_int_equal(cpu[3], 0);
    device_select(logits, 8, 0.7, 3, 1.0, kept);
    for (int v = 0; v < 8; v++) assert_int_equal(kept[v], cpu[v]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(keys_preserve_order),
        cmocka_unit_test(generator_is_the_cpu_one),
        cmocka_unit_test(selection_matches_cpu),
        cmocka_unit_test(top_k_on_raw_logits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
