/* test_cuda_mem.c: the device allocator's accounting (cuda_mem.c) over a
 * host mock of the allocation interface, with injected failures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cuda_mem.h"

typedef struct mock {
    int fail_next;   /* the next alloc fails */
    int live;        /* blocks held */
    size_t live_bytes;
} mock;

static int mock_alloc(void *ctx, void **p, size_t bytes, char *msg, size_t msg_len) {
    mock *m = ctx;
    if (m->fail_next) {
        m->fail_next = 0;
        snprintf(msg, msg_len, "out of memory (mock)");
        return 1;
    }
    *p = malloc(bytes);
    if (!*p) return 1;
    m->live++;
    m->live_bytes += bytes;
    return 0;
}

static void mock_free(void *ctx, void *p) {
    mock *m = ctx;
    m->live--;
    free(p);
}

static void kinds_and_peak(void **state) {
    (void)state;
    mock mk = {0, 0, 0};
    opt_cuda_alloc_iface io = {&mk, mock_alloc, mock_free};
    opt_cuda_mem m;
    opt_cuda_mem_init(&m, &io);
    bc_error err = {0};
    void *w = NULL, *kv = NULL, *ws = NULL;
    assert_int_equal(opt_cuda_mem_alloc(&m, OPT_CUDA_MEM_WEIGHTS, 1000, &w, "weights", &err), BC_OK);
    assert_int_equal(opt_cuda_mem_alloc(&m, OPT_CUDA_MEM_KV, 300, &kv, "KV cache", &err), BC_OK);
    assert_int_equal(opt_cuda_mem_alloc(&m, OPT_CUDA_MEM_WORKSPACE, 200, &ws, "activations", &err), BC_OK);
    assert_int_equal(m.held[OPT_CUDA_MEM_WEIGHTS], 1000);
    assert_int_equal(m.held[OPT_CUDA_MEM_KV], 300);
    assert_int_equal(m.held[OPT_CUDA_MEM_WORKSPACE], 200);
    assert_int_equal(m.current, 1500);
    assert_int_equal(m.peak, 1500);
    /* release policy: KV and workspace go, the peak stays */
    opt_cuda_mem_free(&m, OPT_CUDA_MEM_KV, kv, 300);
    opt_cuda_mem_free(&m, OPT_CUDA_MEM_WORKSPACE, ws, 200);
    assert_int_equal(m.current, 1000);
    assert_int_equal(m.peak, 1500);
    /* a new case starts its own high-water mark */
    opt_cuda_mem_reset_peak(&m);
    assert_int_equal(m.peak, 1000);
    assert_int_equal(opt_cuda_mem_alloc(&m, OPT_CUDA_MEM_KV, 50, &kv, "KV cache", &err), BC_OK);
    assert_int_equal(m.peak, 1050);
    opt_cuda_mem_free(&m, OPT_CUDA_MEM_KV, kv, 50);
    opt_cuda_mem_free(&m, OPT_CUDA_MEM_WEIGHTS, w, 1000);
    assert_int_equal(m.current, 0);
    assert_int_equal(m.n_allocs, 4);
    assert_int_equal(m.n_frees, 4);
    assert_int_equal(m.n_bad_frees, 0);
    assert_int_equal(mk.live, 0);
}

static void failure_leaves_counters(void **state) {
    (void)state;
    mock mk = {0, 0, 0};
    opt_cuda_alloc_iface io = {&mk, mock_alloc, mock_free};
    opt_cuda_mem m;
    opt_cuda_mem_init(&m, &io);
    bc_error err = {0};
    void *p = NULL, *q = (void *)&mk;
    assert_int_equal(opt_cuda_mem_alloc(&m, OPT_CUDA_MEM_WEIGHTS, 64, &p, "weights", &err), BC_OK);
    mk.fail_next = 1;
    assert_int_equal(opt_cuda_mem_alloc(&m, OPT_CUDA_MEM_KV, 4096, &q, "KV cache", &err), BC_ERR_NOMEM);
    assert_null(q);
    assert_non_null(strstr(err.message, "device out of memory"));
    assert_non_null(strstr(err.message, "4096 bytes for KV cache"));
    assert_non_null(strstr(err.message, "out of memory (mock)"));
    assert_null(strchr(err.message, '\n'));
    assert_int_equal(m.current, 64);
    assert_int_equal(m.held[OPT_CUDA_MEM_KV], 0);
    assert_int_equal(m.peak, 64);
    /* zero bytes and bad kinds are refused as bugs */
    assert_int_equal(opt_cuda_mem_alloc(&m, OPT_CUDA_MEM_KV, 0, &q, "nothing", &err), BC_ERR_INTERNAL);
    assert_int_equal(opt_cuda_mem_alloc(&m, (opt_cuda_mem_kind)7, 8, &q, "bad", &err), BC_ERR_INTERNAL);
    opt_cuda_mem_free(&m, OPT_CUDA_MEM_WEIGHTS, NULL, 64); /* no-op */
    assert_int_equal(m.n_frees, 0);
    opt_cuda_mem_free(&m, OPT_CUDA_MEM_WEIGHTS, p, 64);
    assert_int_equal(m.current, 0);
    assert_int_equal(mk.live, 0);
}

static void bad_free_never_underflows(void **state) {
    (void)state;
    mock mk = {0, 0, 0};
    opt_cuda_alloc_iface io = {&mk, mock_alloc, mock_free};
    opt_cuda_mem m;
    opt_cuda_mem_init(&m, &io);
    bc_error err = {0};
    void *a = NULL, *b = NULL;
    assert_int_equal(opt_cuda_mem_alloc(&m, OPT_CUDA_MEM_WORKSPACE, 100, &a, "a", &err), BC_OK);
    assert_int_equal(opt_cuda_mem_alloc(&m, OPT_CUDA_MEM_KV, 10, &b, "b", &err), BC_OK);
    opt_cuda_mem_free(&m, OPT_CUDA_MEM_KV, b, 999); /* wrong size */
    assert_int_equal(m.n_bad_frees, 1);
    assert_int_equal(m.held[OPT_CUDA_MEM_KV], 0);
    assert_int_equal(m.current, 100);
    opt_cuda_mem_free(&m, OPT_CUDA_MEM_WORKSPACE, a, 100);
    assert_int_equal(m.current, 0);
    assert_string_equal(opt_cuda_mem_kind_name(OPT_CUDA_MEM_KV), "kv_cache");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kinds_and_peak),
        cmocka_unit_test(failure_leaves_counters),
        cmocka_unit_test(bad_free_never_underflows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
