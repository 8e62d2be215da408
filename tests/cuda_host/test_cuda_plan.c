/* test_cuda_plan.c: the device memory plan (cuda_plan.c) against the CPU
 * path's formulas, the layouts' alignment and disjointness, and the
 * allocation sequence of a rollout's acquire replayed on a host mock of the
 * allocator: what it holds must equal the plan, byte for byte. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cuda_mem.h"
#include "cuda_plan.h"
#include "forward.h"
#include "opt_model.h"
#include "device.h"
#include "rollout.h"

typedef struct span {
    size_t off, bytes;
} span;

/* Every span aligned, inside total, and no two overlapping. */
static void check_spans(const span *s, int n, size_t total) {
    for (int i = 0; i < n; i++) {
        assert_int_equal(s[i].off % OPT_CUDA_ALIGN, 0);
        assert_true(s[i].off + s[i].bytes <= total);
        for (int j = 0; j < i; j++) {
            if (!s[i].bytes || !s[j].bytes) continue;
            assert_true(s[i].off >= s[j].off + s[j].bytes || s[j].off >= s[i].off + s[i].bytes);
        }
    }
}

static void workspace_layout(void **state) {
    (void)state;
    const char *presets[] = {"125m", "350m", "2.7b"};
    const eng_dtype dts[] = {ENG_F32, ENG_F16, ENG_BF16};
    for (int pi = 0; pi < 3; pi++)
        for (int di = 0; di < 3; di++) {
            opt_hparams hp;
            bc_error err = {0};
            assert_int_equal(opt_hparams_preset(presets[pi], &hp, &err), BC_OK);
            const eng_dtype dt = dts[di];
            const size_t N = 37, C = (size_t)hp.s.hidden_size, P = (size_t)hp.word_embed_proj_dim, F = (size_t)hp.s.ffn_size;
            const size_t Cm = C > P ? C : P, es = eng_dtype_size(dt);
            opt_cuda_ws_layout l;
            size_t total = opt_cuda_ws_layout_for(&hp, dt, (int)N, &l);
            assert_int_equal(total, l.bytes);
            span s[] = {{l.x, N * Cm * 4},  {l.xh, N * Cm * es}, {l.q, N * C * 4},    {l.k, N * C * 4},
                        {l.v, N * C * 4},   {l.att, N * C * es}, {l.y, N * Cm * 4},   {l.ff, N * F * 4},
                        {l.embh, N * Cm * es}, {l.lt, OPT_CUDA_LT_WORKSPACE}};
            check_spans(s, 10, total);
            /* the fused q/k/v GEMM writes [N, 3C] from q on: over q, k, v and nothing else */
            assert_true(l.q < l.k && l.k < l.v && l.v + N * C * 4 >= l.q + 3 * N * C * 4);
            for (int i = 0; i < 10; i++)
                if (s[i].off != l.q && s[i].off != l.k && s[i].off != l.v)
                    assert_true(s[i].off + s[i].bytes <= l.q || s[i].off >= l.q + 3 * N * C * 4);
            if (dt == ENG_F32) assert_int_equal(l.ffh, l.ff); /* fc2 reads fc1's fp32 output */
            else {
                span s2[] = {{l.ffh, N * F * es}, {l.ff, N * F * 4}, {l.embh, N * Cm * es}};
                check_spans(s2, 3, total);
            }
            /* grows with N, by at least the activations per token */
            opt_cuda_ws_layout l2;
            size_t total2 = opt_cuda_ws_layout_for(&hp, dt, (int)N + 1, &l2);
            assert_true(total2 >= total);
            assert_true(total - OPT_CUDA_LT_WORKSPACE >= N * (Cm * (2 * 4 + 2 * es) + C * (3 * 4 + es) + F * 4));
        }
}

static void rollout_layout(void **state) {
    (void)state;
    for (int sh = 0; sh <= 1; sh++) {
        const int V = 50272, R = 12, Bp = 3, Tp = 9, Stot = 40;
        opt_cuda_rollout_layout l;
        size_t total = opt_cuda_rollout_layout_for(V, R, Bp, Tp, Stot, sh, &l);
        span s[] = {{l.logits, (size_t)R * V * 4},     {l.logits_shared, sh ? (size_t)Bp * V * 4 : 0},
                    {l.scratch, (size_t)R * V * 4},    {l.seq, (size_t)R * Stot * 4},
                    {l.mask, (size_t)R * Stot},        {l.prefill_ids, (size_t)R * Tp * 4},
                    {l.prompt_ids, (size_t)Bp * Tp * 4}, {l.prompt_mask, (size_t)Bp * Tp},
                    {l.step_tokens, (size_t)R * 4},    {l.eos_at, (size_t)R * 4},
                    {l.rng, (size_t)R * 8},            {l.counters, 16}};
        check_spans(s, 12, total);
    }
}

/* The plan equals the CPU path's formulas for weights and the KV cache. */
static void plan_matches_cpu(void **state) {
    (void)state;
    const char *presets[] = {"125m", "350m", "1.3b", "2.7b"};
    for (int pi = 0; pi < 4; pi++)
        for (int dt = ENG_F32; dt <= ENG_BF16; dt++)
            for (int sh = 0; sh <= 1; sh++) {
                opt_hparams hp;
                bc_error err = {0};
                assert_int_equal(opt_hparams_preset(presets[pi], &hp, &err), BC_OK);
                eng_rollout_params p;
                memset(&p, 0, sizeof p);
                p.batch_size = 2;
                p.samples_per_prompt = 4;
                p.prompt_length = 16;
                p.response_length = 8;
                p.sampling.temperature = 1.0;
                p.sampling.top_p = 1.0;
                p.shared_prefill = sh;
                eng_rollout ro;
                assert_int_equal(eng_rollout_init(&ro, &hp.s, &p, &err), BC_OK);
                const eng_ws_needs need = opt_ws_needs(&hp);
                eng_rollout_bytes cpu = eng_rollout_plan(&ro, &hp.s, &need, (eng_dtype)dt, 1);
                opt_cuda_plan gpu = opt_cuda_plan_rollout(&hp, (eng_dtype)dt, ro.R, ro.Bp, ro.Tp, ro.Stot, sh);
                assert_int_equal(gpu.weights, opt_weights_bytes(&hp, (eng_dtype)dt));
                assert_int_equal(gpu.kv_cache, cpu.kv_cache);
                assert_int_equal(gpu.max_tokens, (sh ? 2 : 8) * 16);
                /* the activations are sized as the CPU's (same tokens), plus the device buffers */
                opt_cuda_ws_layout wl;
                opt_cuda_rollout_layout rl;
                assert_int_equal(gpu.workspace, opt_cuda_ws_layout_for(&hp, (eng_dtype)dt, gpu.max_tokens, &wl) +
                                                    opt_cuda_rollout_layout_for(hp.s.vocab_size, ro.R, ro.Bp, ro.Tp,
                                                                                ro.Stot, sh, &rl));
                /* 125m fp16: 2 bytes per weight element; KV = 2 x L x R x Stot x C x 2 bytes */
                if (pi == 0 && dt == ENG_F16 && !sh)
                    assert_int_equal(gpu.kv_cache, (size_t)2 * 12 * 8 * 24 * 768 * 2);
                eng_rollout_free(&ro);
            }
}

/* ------------------------------------------ acquire replayed on a mock */

static int mock_alloc(void *ctx, void **p, size_t bytes, char *msg, size_t msg_len) {
    (void)ctx, (void)msg, (void)msg_len;
    *p = malloc(bytes);
    return *p ? 0 : 1;
}
static void mock_free(void *ctx, void *p) {
    (void)ctx;
    free(p);
}

/* What cuda_rollout.c's acquire allocates, in its order: the KV cache(s)
 * (+ the device length counter), the activations, the rollout buffers. */
static void acquire_on_mock(void **state) {
    (void)state;
    opt_hparams hp;
    bc_error err = {0};
    assert_int_equal(opt_hparams_preset("125m", &hp, &err), BC_OK);
    for (int sh = 0; sh <= 1; sh++) {
        const int R = 8, Bp = 2, Tp = 32, Stot = 64;
        opt_cuda_plan plan = opt_cuda_plan_rollout(&hp, ENG_F16, R, Bp, Tp, Stot, sh);
        opt_cuda_alloc_iface io = {NULL, mock_alloc, mock_free};
        opt_cuda_mem m;
        opt_cuda_mem_init(&m, &io);
        void *w, *kv, *kvs = NULL, *ws, *buf;
        assert_int_equal(opt_cuda_mem_alloc(&m, OPT_CUDA_MEM_WEIGHTS, plan.weights, &w, "weights", &err), BC_OK);
        const size_t kvb = eng_kv_cache_bytes(&hp.s, ENG_F16, R, Stot) + OPT_CUDA_ALIGN;
        assert_int_equal(opt_cuda_mem_alloc(&m, OPT_CUDA_MEM_KV, kvb, &kv, "KV", &err), BC_OK);
        size_t kvsb = 0;
        if (sh) {
            kvsb = eng_kv_cache_bytes(&hp.s, ENG_F16, Bp, Tp) + OPT_CUDA_ALIGN;
            assert_int_equal(opt_cuda_mem_alloc(&m, OPT_CUDA_MEM_KV, kvsb, &kvs, "KV shared", &err), BC_OK);
        }
        opt_cuda_ws_layout wl;
        opt_cuda_rollout_layout rl;
        const size_t wsb = opt_cuda_ws_layout_for(&hp, ENG_F16, plan.max_tokens, &wl);
        const size_t bb = opt_cuda_rollout_layout_for(hp.s.vocab_size, R, Bp, Tp, Stot, sh, &rl);
        assert_int_equal(opt_cuda_mem_alloc(&m, OPT_CUDA_MEM_WORKSPACE, wsb, &ws, "activations", &err), BC_OK);
        assert_int_equal(opt_cuda_mem_alloc(&m, OPT_CUDA_MEM_WORKSPACE, bb, &buf, "buffers", &err), BC_OK);
        /* the plan counts the cache bytes; each cache adds one aligned length counter */
        const int n_caches = sh ? 2 : 1;
        assert_int_equal(m.held[OPT_CUDA_MEM_KV], plan.kv_cache + (size_t)n_caches * OPT_CUDA_ALIGN);
        assert_int_equal(m.held[OPT_CUDA_MEM_WORKSPACE], plan.workspace);
        assert_int_equal(m.held[OPT_CUDA_MEM_WEIGHTS], plan.weights);
        assert_int_equal(m.peak, plan.weights + plan.kv_cache + plan.workspace + (size_t)n_caches * OPT_CUDA_ALIGN);
        /* release: back to the weights */
        opt_cuda_mem_free(&m, OPT_CUDA_MEM_KV, kv, kvb);
        opt_cuda_mem_free(&m, OPT_CUDA_MEM_KV, kvs, kvsb);
        opt_cuda_mem_free(&m, OPT_CUDA_MEM_WORKSPACE, ws, wsb);
        opt_cuda_mem_free(&m, OPT_CUDA_MEM_WORKSPACE, buf, bb);
        assert_int_equal(m.current, plan.weights);
        assert_int_equal(m.n_bad_frees, 0);
        opt_cuda_mem_free(&m, OPT_CUDA_MEM_WEIGHTS, w, plan.weights);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(workspace_layout),
        cmocka_unit_test(rollout_layout),
        cmocka_unit_test(plan_matches_cpu),
        cmocka_unit_test(acquire_on_mock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
