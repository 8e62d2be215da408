/* cuda_vs_cpu.c: the CUDA path against the CPU path on the golden models
 * (tests/opt/golden/<model>, Hugging Face checkpoints), in fp32, fp16, bf16.
 * Run by tests/gpu/run.sh on a GPU machine; exits 77 (skip) without a GPU,
 * 1 on any failure, printing the first mismatches and the max differences.
 *
 *   1. logits     a left-padded batch: prefill logits at every real position
 *                 and 6 decode steps (teacher-forced with the CPU's greedy
 *                 token), max |gpu - cpu| / logit scale (max |cpu|) <= tol;
 *                 greedy tokens identical in fp32, in 16-bit the two argmaxes
 *                 may differ only where the CPU's logits are a near tie
 *                 (gap <= tol * scale); in 16-bit once more with fc1 forced
 *                 to the fp32 + convert route (the default writes fc1's
 *                 output in the dtype from cuBLASLt's bias + ReLU epilogue);
 *   2. rollouts   greedy: GPU graphs off, graphs on, cache released between
 *                 rollouts, shared prefill, stop_at_eos - all identical to
 *                 each other, and to the CPU rollout in fp32;
 *                 sampled (temperature, top-k, top-p): graphs on and off and
 *                 a second run identical, tokens in range;
 *   3. memory     the device bytes held after acquire equal the plan.
 * Head dims: 16 (preln, postln_proj), 80 (hd80), and 64 and 128 on small
 * synthetic-weight models.
 * Usage: cuda_vs_cpu [--quick] [golden_dir]   (default: the source tree's tests/opt/golden)
 *   --quick: preln in fp16 and hd80 in bf16 only (for compute-sanitizer runs)
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_forward.h"
#include "cuda_rollout.h"
#include "forward.h"
#include "opt_model.h"
#include "device.h"
#include "rollout.h"

#ifndef BENCHCTL_SOURCE_DIR
#define BENCHCTL_SOURCE_DIR "."
#endif

static int failures = 0;

#define CHECK(cond, ...)                                  \
    do {                                                  \
        if (!(cond)) {                                    \
            failures++;                                   \
            printf("  FAIL %s:%d: ", __FILE__, __LINE__); \
            printf(__VA_ARGS__);                          \
            printf("\n");                                 \
        }                                                 \
    } while (0)

#define OK(call)                                                                      \
    do {                                                                              \
        bc_status s_ = (call);                                                        \
        if (s_ != BC_OK) {                                                            \
            printf("  FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #call, err.message); \
            failures++;                                                               \
            goto out;                                                                 \
        }                                                                             \
    } while (0)

/* Relative logit tolerance per dtype. fp32: the CPU's own bar against
 * transformers. 16-bit: the GPU rounds GEMM inputs (activations) to the
 * dtype where the CPU keeps them fp32; one rounding is 2^-11 (fp16) or
 * 2^-8 (bf16) relative, and it enters every GEMM of every layer. */
static double tol_for(eng_dtype dt) { return dt == ENG_F32 ? 1e-4 : dt == ENG_F16 ? 1e-2 : 5e-2; }

static int argmax(const float *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* Compares logits rows [rows, V]; keep[r] says which rows count. */
static double compare_rows(const char *what, const float *cpu, const float *gpu, int rows, int V, const uint8_t *keep,
                           double tol, eng_dtype dt, int *n_ties) {
    double scale = 0.0, maxd = 0.0;
    for (int r = 0; r < rows; r++)
        if (!keep || keep[r])
            for (int v = 0; v < V; v++) scale = fmax(scale, fabs(cpu[(size_t)r * V + v]));
    if (scale == 0.0) scale = 1.0;
    int shown = 0;
    for (int r = 0; r < rows; r++) {
        if (keep && !keep[r]) continue;
        const float *c = cpu + (size_t)r * V, *g = gpu + (size_t)r * V;
        for (int v = 0; v < V; v++) {
            double d = fabs((double)c[v] - g[v]) / scale;
            if (!(d <= maxd)) maxd = isnan(d) ? INFINITY : fmax(maxd, d);
            if (!(d <= tol) && shown < 3) {
                printf("    %s row %d token %d: cpu %.6f gpu %.6f\n", what, r, v, c[v], g[v]);
                shown++;
            }
        }
        int a = argmax(c, V), b = argmax(g, V);
        if (a != b) {
            double gap = (double)c[a] - c[b];
            if (dt == ENG_F32 || gap > tol * scale)
                CHECK(0, "%s row %d: greedy token cpu %d gpu %d (cpu logit gap %.3g, scale %.3g)", what, r, a, b, gap,
                      scale);
            else (*n_ties)++;
        }
    }
    CHECK(maxd <= tol, "%s: max |gpu - cpu| / scale = %.3g > %.3g", what, maxd, tol);
    return maxd;
}

/* 1. logits of a left-padded batch, prefill then decode steps; fc1_fp32:
 * fc1 forced to the fp32 + convert route (in 16-bit the default route writes
 * fc1's output in the dtype from cuBLASLt's epilogue, with an fp32 bias) */
static void check_logits(opt_cuda_device *dev, const opt_weights *w, const char *name, int fc1_fp32) {
    bc_error err = {0};
    const opt_hparams *hp = &w->hp;
    const int B = 3, T = 7, STEPS = 6, Smax = T + STEPS, V = hp->s.vocab_size;
    const double tol = tol_for(w->base.dtype);
    eng_model cm;
    eng_kv_cache ckv;
    opt_cuda_model *gm = NULL;
    opt_cuda_kv_cache gkv;
    memset(&cm, 0, sizeof cm);
    memset(&ckv, 0, sizeof ckv);
    memset(&gkv, 0, sizeof gkv);
    int32_t tokens[3 * 7], step[3], *d_tok = NULL;
    uint8_t mask[3 * 13], keep[3 * 7], *d_mask = NULL;
    float *cl = malloc((size_t)B * T * V * sizeof(float)), *gl = malloc((size_t)B * T * V * sizeof(float));
    float *d_logits = NULL;
    double worst = 0.0;
    int ties = 0;
    const int pads[3] = {0, 2, 5}; /* left padding of each row */
    memset(mask, 0, sizeof mask);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            int real = t >= pads[b];
            tokens[b * T + t] = real ? 3 + (b * 131 + t * 17) % (V - 3) : hp->s.pad_token_id;
            mask[b * Smax + t] = (uint8_t)real;
            keep[b * T + t] = (uint8_t)real;
        }
    OK(eng_model_init(&cm, &w->base, 0, &err));
    OK(eng_kv_cache_alloc(&ckv, &hp->s, w->base.dtype, B, Smax, &err));
    OK(opt_cuda_model_create(&gm, dev, w, &err));
    opt_cuda_model_force_fc1_fp32(gm, fc1_fp32);
    OK(opt_cuda_kv_cache_alloc(dev, &gkv, hp, w->base.dtype, B, Smax, &err));
    OK(opt_cuda_alloc(dev, OPT_CUDA_MEM_WORKSPACE, sizeof tokens, (void **)&d_tok, "tokens", &err));
    OK(opt_cuda_alloc(dev, OPT_CUDA_MEM_WORKSPACE, sizeof mask, (void **)&d_mask, "mask", &err));
    OK(opt_cuda_alloc(dev, OPT_CUDA_MEM_WORKSPACE, (size_t)B * T * V * sizeof(float), (void **)&d_logits, "logits", &err));
    OK(opt_cuda_upload(dev, d_tok, tokens, sizeof tokens, &err));
    OK(opt_cuda_upload(dev, d_mask, mask, sizeof mask, &err));
    OK(eng_forward(&cm, &ckv, tokens, mask, Smax, B, T, ENG_LOGITS_ALL, cl, &err));
    OK(opt_cuda_forward(gm, &gkv, d_tok, d_mask, Smax, B, T, ENG_LOGITS_ALL, d_logits, &err));
    OK(opt_cuda_download(dev, gl, d_logits, (size_t)B * T * V * sizeof(float), &err));
    worst = fmax(worst, compare_rows("prefill", cl, gl, B * T, V, keep, tol, w->base.dtype, &ties));
    for (int k = 0; k < STEPS; k++) {
        /* next token: the CPU's greedy choice of the last logits (teacher forcing) */
        for (int b = 0; b < B; b++) {
            const float *last = k == 0 ? cl + ((size_t)b * T + T - 1) * V : cl + (size_t)b * V;
            step[b] = argmax(last, V);
            mask[b * Smax + T + k] = 1;
        }
        OK(opt_cuda_upload(dev, d_tok, step, sizeof step, &err));
        OK(opt_cuda_upload(dev, d_mask, mask, sizeof mask, &err));
        OK(eng_forward(&cm, &ckv, step, mask, Smax, B, 1, ENG_LOGITS_LAST, cl, &err));
        /* alternate eager and graph steps: both must agree with the CPU */
        OK(opt_cuda_decode_step(gm, &gkv, d_tok, d_mask, Smax, B, d_logits, k % 2, &err));
        OK(opt_cuda_download(dev, gl, d_logits, (size_t)B * V * sizeof(float), &err));
        char what[32];
        snprintf(what, sizeof what, "decode %d", k);
        worst = fmax(worst, compare_rows(what, cl, gl, B, V, NULL, tol, w->base.dtype, &ties));
    }
    printf("  %-12s %-9s logits: max |gpu - cpu| / scale %.3g (tol %.0e), greedy near-ties %d; fc1 calls via fp32 "
           "%lld%s\n",
           name, eng_dtype_name(w->base.dtype), worst, tol, ties, (long long)opt_cuda_fc1_converts(gm),
           fc1_fp32 ? " (forced)" : "");
out:
    opt_cuda_free(dev, OPT_CUDA_MEM_WORKSPACE, d_tok, sizeof tokens);
    opt_cuda_free(dev, OPT_CUDA_MEM_WORKSPACE, d_mask, sizeof mask);
    opt_cuda_free(dev, OPT_CUDA_MEM_WORKSPACE, d_logits, (size_t)B * T * V * sizeof(float));
    opt_cuda_kv_cache_free(dev, &gkv);
    opt_cuda_model_destroy(gm);
    eng_kv_cache_free(&ckv);
    eng_model_free(&cm);
    free(cl);
    free(gl);
}

typedef struct run_opts {
    int graphs, release_between, shared, stop_at_eos;
    double temperature, top_p;
    int top_k;
} run_opts;

/* Two rollouts on the GPU (the second is the one returned in seq[R * Stot]). */
static bc_status gpu_rollout(opt_cuda_device *dev, opt_cuda_model *gm, const opt_hparams *hp, const run_opts *o,
                             int32_t *seq, int *returned, bc_error *err) {
    eng_rollout_params p;
    memset(&p, 0, sizeof p);
    p.batch_size = 2;
    p.samples_per_prompt = 3;
    p.prompt_length = 6;
    p.response_length = 10;
    p.sampling.temperature = o->temperature;
    p.sampling.top_p = o->top_p;
    p.sampling.top_k = o->top_k;
    p.sampling.seed = 42;
    p.stop_at_eos = o->stop_at_eos;
    p.shared_prefill = o->shared;
    eng_rollout ro;
    bc_status st = eng_rollout_init(&ro, &hp->s, &p, err);
    if (st != BC_OK) return st;
    opt_cuda_rollout cr;
    opt_cuda_rollout_init(&cr, &ro, dev, gm, o->graphs);
    for (int it = 0; it < 2 && st == BC_OK; it++) {
        st = opt_cuda_rollout_acquire(&cr, err);
        if (st == BC_OK && it == 0) {
            /* 3. exact accounting: the bytes held are the plan (+ one length counter per cache) */
            opt_cuda_plan plan = opt_cuda_rollout_plan(&cr);
            opt_cuda_mem *m = opt_cuda_device_mem(dev);
            const size_t counters = (size_t)(cr.kv_shared.c.k ? 2 : 1) * OPT_CUDA_ALIGN;
            CHECK(m->held[OPT_CUDA_MEM_KV] == plan.kv_cache + counters, "KV bytes held %zu, plan %zu",
                  m->held[OPT_CUDA_MEM_KV], plan.kv_cache + counters);
            CHECK(m->held[OPT_CUDA_MEM_WORKSPACE] == plan.workspace, "workspace bytes held %zu, plan %zu",
                  m->held[OPT_CUDA_MEM_WORKSPACE], plan.workspace);
            CHECK(m->held[OPT_CUDA_MEM_WEIGHTS] == plan.weights, "weight bytes held %zu, plan %zu",
                  m->held[OPT_CUDA_MEM_WEIGHTS], plan.weights);
        }
        if (st == BC_OK) st = eng_rollout_expand(&ro, err);
        if (st == BC_OK) st = opt_cuda_rollout_generate(&cr, err);
        if (st == BC_OK) st = eng_rollout_post_process(&ro, err);
        if (st == BC_OK && o->release_between) opt_cuda_rollout_release(&cr);
    }
    if (st == BC_OK) {
        memcpy(seq, ro.seq, (size_t)ro.R * ro.Stot * sizeof *seq);
        *returned = ro.returned_len;
        for (int i = 0; i < ro.R * ro.Stot; i++)
            if (seq[i] < 0 || seq[i] >= hp->s.vocab_size) {
                st = bc_error_set(err, BC_ERR_INTERNAL, "token %d out of range at %d", seq[i], i);
                break;
            }
    }
    opt_cuda_rollout_free(&cr);
    eng_rollout_free(&ro);
    return st;
}

static bc_status cpu_rollout(const opt_weights *w, const run_opts *o, int32_t *seq, int *returned, bc_error *err) {
    eng_rollout_params p;
    memset(&p, 0, sizeof p);
    p.batch_size = 2;
    p.samples_per_prompt = 3;
    p.prompt_length = 6;
    p.response_length = 10;
    p.sampling.temperature = o->temperature;
    p.sampling.top_p = o->top_p;
    p.sampling.top_k = o->top_k;
    p.sampling.seed = 42;
    p.stop_at_eos = o->stop_at_eos;
    p.shared_prefill = o->shared;
    eng_model m;
    eng_rollout ro;
    bc_status st = eng_model_init(&m, &w->base, 0, err);
    if (st != BC_OK) return st;
    st = eng_rollout_init(&ro, &w->hp.s, &p, err);
    if (st == BC_OK) {
        st = eng_rollout_expand(&ro, err);
        if (st == BC_OK) st = eng_rollout_generate(&ro, &m, err);
        if (st == BC_OK) st = eng_rollout_post_process(&ro, err);
        if (st == BC_OK) {
            memcpy(seq, ro.seq, (size_t)ro.R * ro.Stot * sizeof *seq);
            *returned = ro.returned_len;
        }
        eng_cpu_rollout_free(&ro, &m);
    }
    eng_model_free(&m);
    return st;
}

static int first_diff(const int32_t *a, const int32_t *b, int n) {
    for (int i = 0; i < n; i++)
        if (a[i] != b[i]) return i;
    return -1;
}

static void check_rollouts(opt_cuda_device *dev, const opt_weights *w, const char *name) {
    bc_error err = {0};
    const int N = 2 * 3 * (6 + 10);
    int32_t ref[96], got[96], cpu[96];
    int rref = 0, rgot = 0, rcpu = 0;
    opt_cuda_model *gm = NULL;
    OK(opt_cuda_model_create(&gm, dev, w, &err));
    for (int sampled = 0; sampled <= 1; sampled++) {
        run_opts base = {0, 0, 0, 0, sampled ? 0.8 : 0.0, sampled ? 0.9 : 1.0, sampled ? 20 : 0};
        OK(gpu_rollout(dev, gm, &w->hp, &base, ref, &rref, &err));
        const char *labels[] = {"graphs on", "cache released between rollouts", "graphs on + released", "again"};
        run_opts vars[4] = {base, base, base, base};
        vars[0].graphs = 1;
        vars[1].release_between = 1;
        vars[2].graphs = 1, vars[2].release_between = 1;
        for (int i = 0; i < 4; i++) {
            OK(gpu_rollout(dev, gm, &w->hp, &vars[i], got, &rgot, &err));
            int d = first_diff(ref, got, N);
            CHECK(d < 0 && rgot == rref, "%s %s %s: %s differs from graphs off at %d", name, eng_dtype_name(w->base.dtype),
                  sampled ? "sampled" : "greedy", labels[i], d);
        }
        if (sampled) continue;
        /* greedy: shared prefill gives the same tokens; fp32 equals the CPU */
        run_opts sh = base;
        sh.shared = 1;
        OK(gpu_rollout(dev, gm, &w->hp, &sh, got, &rgot, &err));
        if (w->base.dtype == ENG_F32) CHECK(first_diff(ref, got, N) < 0, "%s: shared prefill differs", name);
        if (w->base.dtype == ENG_F32) {
            OK(cpu_rollout(w, &base, cpu, &rcpu, &err));
            int d = first_diff(cpu, ref, N);
            CHECK(d < 0 && rcpu == rref, "%s fp32 greedy rollout: GPU differs from CPU at %d (cpu %d gpu %d)", name, d,
                  d >= 0 ? cpu[d] : 0, d >= 0 ? ref[d] : 0);
            run_opts eos = base;
            eos.stop_at_eos = 1;
            OK(cpu_rollout(w, &eos, cpu, &rcpu, &err));
            OK(gpu_rollout(dev, gm, &w->hp, &eos, got, &rgot, &err));
            d = first_diff(cpu, got, N);
            CHECK(d < 0 && rcpu == rgot, "%s fp32 stop_at_eos: GPU differs from CPU at %d, returned %d vs %d", name, d,
                  rgot, rcpu);
        }
    }
    int held;
    int64_t captures, replays, inval;
    opt_cuda_graph_stats(gm, &held, &captures, &replays, &inval);
    printf("  %-12s %-9s rollouts: graphs captured %lld, replayed %lld, invalidated %lld; epilogue fallbacks %lld, "
           "fc1 via fp32 %lld%s%s\n",
           name, eng_dtype_name(w->base.dtype), (long long)captures, (long long)replays, (long long)inval,
           (long long)opt_cuda_epilogue_fallbacks(gm), (long long)opt_cuda_fc1_converts(gm),
           opt_cuda_graph_error(gm)[0] ? "; graphs off: " : "", opt_cuda_graph_error(gm));
    CHECK(captures > 0 && replays > 0, "graphs were not used: %s", opt_cuda_graph_error(gm));
out:
    opt_cuda_model_destroy(gm);
}

int main(int argc, char **argv) {
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    if (quick) argc--, argv++;
    const char *golden = argc > 1 ? argv[1] : BENCHCTL_SOURCE_DIR "/tests/opt/golden";
    bc_error err = {0};
    opt_cuda_device *dev = NULL;
    if (opt_cuda_device_open(&dev, 0, &err) != BC_OK) {
        printf("SKIP: %s\n", err.message);
        return 77;
    }
    printf("device: %s\n", opt_cuda_device_name(dev));
    const char *models[] = {"preln", "postln_proj", "hd80"};
    const eng_dtype dts[] = {ENG_F32, ENG_F16, ENG_BF16};
    for (int mi = 0; mi < 3; mi++)
        for (int di = 0; di < 3; di++) {
            if (quick && !((mi == 0 && dts[di] == ENG_F16) || (mi == 2 && dts[di] == ENG_BF16))) continue;
            char dir[1024];
            snprintf(dir, sizeof dir, "%s/%s", golden, models[mi]);
            opt_weights w;
            if (opt_weights_load_checkpoint(&w, dir, dts[di], &err) != BC_OK) {
                printf("  FAIL loading %s: %s\n", dir, err.message);
                failures++;
                continue;
            }
            check_logits(dev, &w, models[mi], 0);
            if (dts[di] != ENG_F32 && !quick) check_logits(dev, &w, models[mi], 1); /* the other fc1 route */
            check_rollouts(dev, &w, models[mi]);
            opt_weights_free(&w);
        }
    /* head dims 64 and 128 (the golden models have 16 and 80): synthetic weights */
    const int heads[2] = {4, 2};
    for (int hi = 0; hi < 2 && !quick; hi++)
        for (int di = 0; di < 3; di++) {
            opt_hparams hp;
            opt_weights w;
            char name[32];
            if (opt_hparams_preset("125m", &hp, &err) != BC_OK) break;
            hp.s.vocab_size = 512;
            hp.s.hidden_size = 256;
            hp.s.n_layers = 2;
            hp.s.n_heads = heads[hi];
            hp.s.ffn_size = 512;
            hp.word_embed_proj_dim = 256;
            hp.s.max_positions = 64;
            snprintf(name, sizeof name, "synth-d%d", 256 / heads[hi]);
            if (opt_weights_alloc(&w, &hp, dts[di], &err) != BC_OK || opt_weights_init_synthetic(&w, 7, &err) != BC_OK) {
                printf("  FAIL synthetic weights %s: %s\n", name, err.message);
                failures++;
                continue;
            }
            check_logits(dev, &w, name, 0);
            if (dts[di] != ENG_F32) check_logits(dev, &w, name, 1);
            check_rollouts(dev, &w, name);
            opt_weights_free(&w);
        }
    opt_cuda_mem *m = opt_cuda_device_mem(dev);
    CHECK(m->current == 0 && m->n_bad_frees == 0, "device bytes still held %zu, bad frees %lld", m->current,
          (long long)m->n_bad_frees);
    opt_cuda_device_close(dev);
    printf("%s: %d failure(s)\n", failures ? "FAILED" : "PASSED", failures);
    return failures ? 1 : 0;
}
