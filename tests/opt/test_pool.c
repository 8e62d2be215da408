/* test_pool.c: the OPT engine's thread pool. Every index in [0, n_threads)
 * runs exactly once per eng_pool_run, for 1..4 threads and many runs in a
 * row (both back to back, where workers are still spinning, and after a
 * pause long enough for them to sleep); eng_linear_parallel matches the
 * single-threaded kernel bit for bit and writes every output once. With
 * the active count changed between runs (eng_pool_set_active, back to back
 * so late workers of one run meet the next), each run hands out exactly its
 * own n indices.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels.h"

#define MAX_THREADS 4

typedef struct count_ctx {
    atomic_int hits[MAX_THREADS];
    atomic_int bad_n;
    int want_n;
} count_ctx;

static void count_fn(void *ctx, int i, int n)
{
    count_ctx *c = ctx;
    if (n != c->want_n || i < 0 || i >= n)
        atomic_fetch_add(&c->bad_n, 1);
    else
        atomic_fetch_add(&c->hits[i], 1);
}

static void run_counted(eng_pool *p, int nt, int runs, long pause_ns)
{
    for (int r = 0; r < runs; r++) {
        count_ctx c;
        for (int i = 0; i < MAX_THREADS; i++)
            atomic_init(&c.hits[i], 0);
        atomic_init(&c.bad_n, 0);
        c.want_n = nt;
        eng_pool_run(p, count_fn, &c);
        /* eng_pool_run returns only when every index has run */
        assert_int_equal(atomic_load(&c.bad_n), 0);
        for (int i = 0; i < nt; i++)
            assert_int_equal(atomic_load(&c.hits[i]), 1);
        if (pause_ns) {
            struct timespec ts = {0, pause_ns};
            nanosleep(&ts, NULL);
        }
    }
}

static void test_pool_runs(void **state)
{
    (void)state;
    for (int nt = 1; nt <= MAX_THREADS; nt++) {
        eng_pool *p = eng_pool_create(nt);
        assert_non_null(p);
        assert_int_equal(eng_pool_size(p), nt);
        run_counted(p, nt, 5000, 0);          /* back to back: workers spinning */
        run_counted(p, nt, 5, 2 * 1000000L);  /* 2 ms apart: workers asleep */
        run_counted(p, nt, 200, 50000L);      /* around the spin limit */
        eng_pool_destroy(p);
    }
}

static void test_pool_active(void **state)
{
    (void)state;
    eng_pool *p = eng_pool_create(MAX_THREADS);
    assert_non_null(p);
    assert_int_equal(eng_pool_active(p), MAX_THREADS);
    assert_int_equal(eng_pool_set_active(p, 2), MAX_THREADS); /* returns the count before */
    assert_int_equal(eng_pool_active(p), 2);
    assert_int_equal(eng_pool_set_active(p, 0), 2); /* outside [1, n_threads]: all */
    assert_int_equal(eng_pool_active(p), MAX_THREADS);
    eng_pool_set_active(p, MAX_THREADS + 1);
    assert_int_equal(eng_pool_active(p), MAX_THREADS);
    assert_int_equal(eng_pool_size(p), MAX_THREADS); /* the threads made do not change */
    for (int r = 0; r < 4000; r++) {
        const int n = 1 + (r * 7 + r / 3) % MAX_THREADS; /* every count, in an irregular order */
        eng_pool_set_active(p, n);
        run_counted(p, n, 1, r % 500 == 0 ? 2 * 1000000L : 0);
    }
    eng_pool_destroy(p);
    assert_int_equal(eng_pool_set_active(NULL, 3), 1);
    assert_int_equal(eng_pool_active(NULL), 1);
}

static void test_pool_create_destroy(void **state)
{
    (void)state;
    /* a pool destroyed right after creation, and one never run */
    for (int i = 0; i < 50; i++) {
        eng_pool *p = eng_pool_create(1 + i % MAX_THREADS);
        assert_non_null(p);
        eng_pool_destroy(p);
    }
    eng_pool_destroy(NULL);
    assert_int_equal(eng_pool_size(NULL), 1);
}

/* Sums per index into a shared array: checks that each thread's writes before
 * its decrement are visible to the caller after eng_pool_run returns. */
typedef struct sum_ctx {
    long *out; /* [n_threads * 16]: one 64-byte line per thread */
    int round;
} sum_ctx;

static void sum_fn(void *ctx, int i, int n)
{
    (void)n;
    sum_ctx *s = ctx;
    s->out[i * 16] += s->round;
}

static void test_pool_visibility(void **state)
{
    (void)state;
    for (int nt = 2; nt <= MAX_THREADS; nt++) {
        eng_pool *p = eng_pool_create(nt);
        long *out = calloc((size_t)nt * 16, sizeof(long));
        assert_true(p && out);
        long want = 0;
        for (int r = 1; r <= 2000; r++) {
            sum_ctx s = {out, r};
            eng_pool_run(p, sum_fn, &s);
            want += r;
            for (int i = 0; i < nt; i++)
                assert_true(out[i * 16] == want);
        }
        free(out);
        eng_pool_destroy(p);
    }
}

static void test_linear_parallel(void **state)
{
    (void)state;
    const eng_kernels *k = eng_kernels_best();
    static const int shapes[][3] = {{1, 768, 3072}, {3, 100, 37}, {17, 33, 16}, {2, 65, 5}, {4, 70, 129}};
    uint64_t seed = 1;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        int M = shapes[si][0], K = shapes[si][1], N = shapes[si][2];
        float *x = malloc(sizeof(float) * (size_t)M * K), *w = malloc(sizeof(float) * (size_t)N * K);
        float *b = malloc(sizeof(float) * (size_t)N);
        float *y1 = malloc(sizeof(float) * (size_t)M * N), *y2 = malloc(sizeof(float) * (size_t)M * N);
        assert_true(x && w && b && y1 && y2);
        for (size_t i = 0; i < (size_t)M * K; i++)
            x[i] = (float)((seed = seed * 6364136223846793005ull + 1) >> 41) / (float)(1 << 23) - 0.5f;
        for (size_t i = 0; i < (size_t)N * K; i++)
            w[i] = (float)((seed = seed * 6364136223846793005ull + 1) >> 41) / (float)(1 << 23) - 0.5f;
        for (int i = 0; i < N; i++)
            b[i] = (float)i * 0.01f - 0.2f;
        k->linear(y1, x, w, ENG_F32, b, M, K, N, 0, N, 1);
        for (int nt = 1; nt <= MAX_THREADS; nt++) {
            eng_pool *p = eng_pool_create(nt);
            assert_non_null(p);
            for (size_t i = 0; i < (size_t)M * N; i++)
                y2[i] = -1e30f;
            eng_linear_parallel(p, k, y2, x, w, ENG_F32, b, M, K, N, 1);
            /* same kernel, same per-row arithmetic: identical bits */
            assert_memory_equal(y1, y2, sizeof(float) * (size_t)M * N);
            eng_pool_destroy(p);
        }
        free(y2);
        free(y1);
        free(b);
        free(w);
        free(x);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool_create_destroy),
        cmocka_unit_test(test_pool_runs),
        cmocka_unit_test(test_pool_visibility),
        cmocka_unit_test(test_pool_active),
        cmocka_unit_test(test_linear_parallel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
