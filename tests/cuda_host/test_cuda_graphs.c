/* test_cuda_graphs.c: decode-step graph bookkeeping (cuda_graphs.c): one
 * graph per effective batch, replay, invalidation when the buffers move,
 * LRU eviction, clear. Graph handles are fake pointers; destroys are counted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cuda_graphs.h"

typedef struct destroyed {
    int n;
    void *last;
} destroyed;

static void on_destroy(void *ctx, void *exec) {
    destroyed *d = ctx;
    d->n++;
    d->last = exec;
}

#define FAKE(n) ((void *)(uintptr_t)(0x1000 + (n)))

static void one_graph_per_batch(void **state) {
    (void)state;
    destroyed d = {0, NULL};
    opt_cuda_graph_cache g;
    opt_cuda_graphs_init(&g, on_destroy, &d);
    assert_null(opt_cuda_graphs_get(&g, 4, 77));
    opt_cuda_graphs_put(&g, 4, 77, FAKE(4));
    assert_null(opt_cuda_graphs_get(&g, 8, 77)); /* another batch: its own graph */
    opt_cuda_graphs_put(&g, 8, 77, FAKE(8));
    for (int step = 0; step < 5; step++) assert_ptr_equal(opt_cuda_graphs_get(&g, 4, 77), FAKE(4));
    assert_ptr_equal(opt_cuda_graphs_get(&g, 8, 77), FAKE(8));
    assert_int_equal(opt_cuda_graphs_count(&g), 2);
    assert_int_equal(g.captures, 2);
    assert_int_equal(g.replays, 6);
    assert_int_equal(d.n, 0);
    opt_cuda_graphs_clear(&g);
    assert_int_equal(d.n, 2);
    assert_int_equal(opt_cuda_graphs_count(&g), 0);
    assert_null(opt_cuda_graphs_get(&g, 4, 77));
}

static void moved_buffers_invalidate(void **state) {
    (void)state;
    destroyed d = {0, NULL};
    opt_cuda_graph_cache g;
    opt_cuda_graphs_init(&g, on_destroy, &d);
    opt_cuda_graphs_put(&g, 2, 1, FAKE(1));
    /* the release policy freed and re-acquired the cache: a new binding */
    assert_null(opt_cuda_graphs_get(&g, 2, 2));
    assert_int_equal(d.n, 1);
    assert_ptr_equal(d.last, FAKE(1));
    assert_int_equal(g.invalidations, 1);
    assert_int_equal(opt_cuda_graphs_count(&g), 0);
    opt_cuda_graphs_put(&g, 2, 2, FAKE(2));
    assert_ptr_equal(opt_cuda_graphs_get(&g, 2, 2), FAKE(2));
    /* a second put for the same batch replaces (and destroys) the first */
    opt_cuda_graphs_put(&g, 2, 3, FAKE(3));
    assert_int_equal(d.n, 2);
    assert_ptr_equal(d.last, FAKE(2));
    assert_int_equal(opt_cuda_graphs_count(&g), 1);
    opt_cuda_graphs_clear(&g);
    assert_int_equal(d.n, 3);
}

static void lru_eviction(void **state) {
    (void)state;
    destroyed d = {0, NULL};
    opt_cuda_graph_cache g;
    opt_cuda_graphs_init(&g, on_destroy, &d);
    for (int b = 1; b <= OPT_CUDA_GRAPHS_MAX; b++) opt_cuda_graphs_put(&g, b, 9, FAKE(b));
    assert_int_equal(opt_cuda_graphs_count(&g), OPT_CUDA_GRAPHS_MAX);
    /* batch 1 used again: batch 2 is now the least recently used */
    assert_ptr_equal(opt_cuda_graphs_get(&g, 1, 9), FAKE(1));
    opt_cuda_graphs_put(&g, 100, 9, FAKE(100));
    assert_int_equal(g.evictions, 1);
    assert_ptr_equal(d.last, FAKE(2));
    assert_null(opt_cuda_graphs_get(&g, 2, 9));
    assert_ptr_equal(opt_cuda_graphs_get(&g, 1, 9), FAKE(1));
    assert_ptr_equal(opt_cuda_graphs_get(&g, 100, 9), FAKE(100));
    opt_cuda_graphs_clear(&g);
    assert_int_equal(d.n, OPT_CUDA_GRAPHS_MAX + 1);
}

static void binding_depends_on_every_pointer(void **state) {
    (void)state;
    int a, b, c;
    const void *p1[] = {&a, &b};
    const void *p2[] = {&a, &c};
    const void *p3[] = {&b, &a};
    uint64_t h1 = opt_cuda_graphs_binding(p1, 2, 0);
    assert_int_equal(h1, opt_cuda_graphs_binding(p1, 2, 0));
    assert_true(h1 != opt_cuda_graphs_binding(p2, 2, 0));
    assert_true(h1 != opt_cuda_graphs_binding(p3, 2, 0));
    assert_true(h1 != opt_cuda_graphs_binding(p1, 2, 1)); /* Smax / stride */
}

/* The decode loop's decisions: eager warm-up, capture, then replays; new
 * buffers (a release policy) start over for that batch. */
static void warmup_capture_replay(void **state) {
    (void)state;
    destroyed d = {0, NULL};
    opt_cuda_graph_cache g;
    opt_cuda_graphs_init(&g, on_destroy, &d);
    void *exec = FAKE(0);
    assert_int_equal(opt_cuda_graphs_next(&g, 4, 10, &exec), OPT_CUDA_GRAPH_WARMUP);
    assert_null(exec);
    assert_int_equal(opt_cuda_graphs_next(&g, 4, 10, &exec), OPT_CUDA_GRAPH_CAPTURE);
    opt_cuda_graphs_put(&g, 4, 10, FAKE(40));
    for (int step = 0; step < 3; step++) {
        assert_int_equal(opt_cuda_graphs_next(&g, 4, 10, &exec), OPT_CUDA_GRAPH_REPLAY);
        assert_ptr_equal(exec, FAKE(40));
    }
    /* another batch has its own warm-up */
    assert_int_equal(opt_cuda_graphs_next(&g, 1, 10, &exec), OPT_CUDA_GRAPH_WARMUP);
    /* released and re-acquired at other addresses: the old graph goes, warm-up again */
    assert_int_equal(opt_cuda_graphs_next(&g, 4, 11, &exec), OPT_CUDA_GRAPH_WARMUP);
    assert_int_equal(d.n, 1);
    assert_int_equal(opt_cuda_graphs_next(&g, 4, 11, &exec), OPT_CUDA_GRAPH_CAPTURE);
    /* a clear (release) keeps the warm-up memory: same buffers capture at once */
    opt_cuda_graphs_put(&g, 4, 11, FAKE(41));
    opt_cuda_graphs_clear(&g);
    assert_int_equal(opt_cuda_graphs_next(&g, 4, 11, &exec), OPT_CUDA_GRAPH_CAPTURE);
    assert_int_equal(g.captures, 2);
    assert_int_equal(g.replays, 3);
    opt_cuda_graphs_clear(&g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_graph_per_batch),
        cmocka_unit_test(moved_buffers_invalidate),
        cmocka_unit_test(lru_eviction),
        cmocka_unit_test(binding_depends_on_every_pointer),
        cmocka_unit_test(warmup_capture_replay),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
