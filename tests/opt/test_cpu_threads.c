/* test_cpu_threads.c: `threads = 0`'s choice (cpu_threads.h) on a fake
 * timing source: the candidates for machines with and without SMT siblings,
 * the margin more threads must win by, NaN times, the best of the
 * repetitions kept and the repetitions interleaved; and the probe on a
 * real model's weights filling every field (its times are not judged).
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "cpu_threads.h"
#include "opt_model.h"

static void test_candidates(void **state) {
    (void)state;
    int t[ENG_THREADS_MAX_CANDIDATES];
    assert_int_equal(eng_threads_candidates(1, 1, t), 1);
    assert_int_equal(t[0], 1);
    assert_int_equal(eng_threads_candidates(2, 2, t), 2); /* no SMT: 1 and 2 */
    assert_int_equal(t[0], 1);
    assert_int_equal(t[1], 2);
    assert_int_equal(eng_threads_candidates(16, 8, t), 3); /* 2 siblings per core */
    assert_int_equal(t[0], 1);
    assert_int_equal(t[1], 8);
    assert_int_equal(t[2], 16);
    assert_int_equal(eng_threads_candidates(2, 1, t), 2); /* one core, two siblings: the core is 1 thread */
    assert_int_equal(t[1], 2);
}

static void test_pick(void **state) {
    (void)state;
    const double faster[] = {10.0, 6.0, 5.0};
    assert_int_equal(eng_threads_pick(faster, 3), 2);
    const double siblings_buy_nothing[] = {10.0, 5.0, 4.9}; /* 2 % better than the cores: within the margin */
    assert_int_equal(eng_threads_pick(siblings_buy_nothing, 3), 1);
    const double slower[] = {10.0, 12.0};
    assert_int_equal(eng_threads_pick(slower, 2), 0);
    const double barely[] = {10.0, 9.6}; /* 4 % faster: not enough */
    assert_int_equal(eng_threads_pick(barely, 2), 0);
    const double enough[] = {10.0, 9.4};
    assert_int_equal(eng_threads_pick(enough, 2), 1);
    const double nan_first[] = {NAN, 9.0, 8.0};
    assert_int_equal(eng_threads_pick(nan_first, 3), 2);
    const double nan_later[] = {10.0, NAN};
    assert_int_equal(eng_threads_pick(nan_later, 2), 0);
    const double all_nan[] = {NAN, NAN};
    assert_int_equal(eng_threads_pick(all_nan, 2), 0);
}

/* A fake timing source: a table of times per (phase, threads), each call
 * logged, the first repetition of each slowed down (as a cold cache). */
typedef struct fake_clock {
    double ms[ENG_PHASE_COUNT][17];
    int calls, log_threads[64], log_phase[64];
} fake_clock;

static double fake_measure(void *ctx, eng_phase phase, int threads) {
    fake_clock *f = ctx;
    const int k = f->calls++;
    if (k < 64) {
        f->log_threads[k] = threads;
        f->log_phase[k] = (int)phase;
    }
    const int first = k % 3 == k; /* the first three calls */
    return f->ms[phase][threads] * (first ? 3.0 : 1.0);
}

static void test_choose(void **state) {
    (void)state;
    fake_clock f;
    memset(&f, 0, sizeof f);
    /* a machine of 8 cores x 2: prefill (compute) gains nothing from the siblings, decode (memory) gains from them */
    f.ms[ENG_PHASE_PREFILL][1] = 80.0;
    f.ms[ENG_PHASE_PREFILL][8] = 10.0;
    f.ms[ENG_PHASE_PREFILL][16] = 10.2;
    f.ms[ENG_PHASE_DECODE][1] = 40.0;
    f.ms[ENG_PHASE_DECODE][8] = 12.0;
    f.ms[ENG_PHASE_DECODE][16] = 9.0;
    eng_threads_probe p;
    eng_threads_choose(&p, 16, 8, 2, fake_measure, &f);
    assert_int_equal(p.n, 3);
    assert_int_equal(p.chosen[ENG_PHASE_PREFILL], 8);
    assert_int_equal(p.chosen[ENG_PHASE_DECODE], 16);
    assert_int_equal(f.calls, 2 * 2 * 3);
    /* interleaved: 1, 8, 16, 1, 8, 16 per phase */
    const int want[] = {1, 8, 16, 1, 8, 16};
    for (int k = 0; k < 12; k++) {
        assert_int_equal(f.log_threads[k], want[k % 6]);
        assert_int_equal(f.log_phase[k], k / 6);
    }
    /* the best repetition kept: the slowed first calls do not count */
    assert_true(p.ms[ENG_PHASE_PREFILL][0] == 80.0);
    assert_true(p.ms[ENG_PHASE_PREFILL][1] == 10.0);
    assert_true(p.ms[ENG_PHASE_DECODE][2] == 9.0);

    /* a 2-vCPU machine where 2 threads lose at decode (a shared core) */
    memset(&f, 0, sizeof f);
    f.ms[ENG_PHASE_PREFILL][1] = 100.0;
    f.ms[ENG_PHASE_PREFILL][2] = 55.0;
    f.ms[ENG_PHASE_DECODE][1] = 5.0;
    f.ms[ENG_PHASE_DECODE][2] = 5.5;
    eng_threads_choose(&p, 2, 2, 3, fake_measure, &f);
    assert_int_equal(p.n, 2);
    assert_int_equal(p.chosen[ENG_PHASE_PREFILL], 2);
    assert_int_equal(p.chosen[ENG_PHASE_DECODE], 1);
    assert_true(isnan(p.ms[ENG_PHASE_DECODE][2])); /* no third candidate */
}

/* The probe on a real (tiny synthetic) OPT model: every field filled, the
 * pool left as it was, the choices among the candidates. */
static void test_probe_model(void **state) {
    (void)state;
    opt_hparams hp;
    bc_error err = {0};
    assert_int_equal(opt_hparams_preset("125m", &hp, &err), BC_OK);
    hp.s.n_layers = 2;
    opt_weights w;
    assert_int_equal(opt_weights_alloc(&w, &hp, ENG_F32, &err), BC_OK);
    assert_int_equal(opt_weights_init_synthetic(&w, 1, &err), BC_OK);
    eng_model m;
    assert_int_equal(eng_model_init(&m, &w.base, 2, &err), BC_OK);
    eng_pool_set_active(m.pool, 1);
    eng_threads_probe p;
    assert_int_equal(eng_threads_probe_model(&m, 4 * 1000, 4, &p, &err), BC_OK);
    assert_int_equal(eng_pool_active(m.pool), 1);
    assert_int_equal(p.rows[ENG_PHASE_PREFILL], 256);
    assert_int_equal(p.rows[ENG_PHASE_DECODE], 4);
    assert_true(p.n >= 1 && p.n <= 2);
    for (int ph = 0; ph < ENG_PHASE_COUNT; ph++) {
        int found = 0;
        for (int i = 0; i < p.n; i++) {
            assert_true(p.ms[ph][i] > 0.0); /* fails on NaN */
            found += p.chosen[ph] == p.threads[i];
        }
        assert_int_equal(found, 1);
    }
    eng_model_free(&m);
    opt_weights_free(&w);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_candidates),
        cmocka_unit_test(test_pick),
        cmocka_unit_test(test_choose),
        cmocka_unit_test(test_probe_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
