/* decode_bench.c: the decode step of synthetic OPT-125m and OPT-1.3b on a
 * CUDA device, B = 1, fp16, after a 128-token prefill, with CUDA graphs on
 * and off, against the HBM bound (weight bytes / the device-to-device copy
 * bandwidth measured here). Prints figures only; asserts nothing about
 * speed. Run by tests/gpu/run.sh; exits 77 without a GPU.
 * Usage: decode_bench [preset ...]   (default: 125m 1.3b)
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_forward.h"

#define PROMPT 128
#define STEPS 64

#define OK(call)                                                                  \
    do {                                                                          \
        if ((call) != BC_OK) {                                                    \
            printf("FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #call, err.message); \
            return 1;                                                             \
        }                                                                         \
    } while (0)

/* Device-to-device copy bandwidth in bytes/s (read + write counted). */
static double copy_bandwidth(opt_cuda_device *dev, bc_error *err) {
    const size_t n = (size_t)1 << 30;
    void *a = NULL, *b = NULL;
    if (opt_cuda_alloc(dev, OPT_CUDA_MEM_WORKSPACE, n, &a, "bandwidth src", err) != BC_OK) return 0.0;
    if (opt_cuda_alloc(dev, OPT_CUDA_MEM_WORKSPACE, n, &b, "bandwidth dst", err) != BC_OK) {
        opt_cuda_free(dev, OPT_CUDA_MEM_WORKSPACE, a, n);
        return 0.0;
    }
    double best = 0.0;
    for (int i = 0; i < 5; i++) {
        opt_cuda_marks_reset(dev);
        int m0 = opt_cuda_mark(dev);
        opt_cuda_copy(dev, b, a, n, err);
        int m1 = opt_cuda_mark(dev);
        double ms = opt_cuda_marks_ms(dev, m0, m1);
        if (ms > 0 && i > 0) { /* the first copy warms up */
            double bw = 2.0 * (double)n / (ms * 1e-3);
            if (bw > best) best = bw;
        }
    }
    opt_cuda_free(dev, OPT_CUDA_MEM_WORKSPACE, a, n);
    opt_cuda_free(dev, OPT_CUDA_MEM_WORKSPACE, b, n);
    return best;
}

static int bench(opt_cuda_device *dev, const char *preset, double bw) {
    bc_error err = {0};
    opt_hparams hp;
    opt_weights w;
    OK(opt_hparams_preset(preset, &hp, &err));
    OK(opt_weights_alloc(&w, &hp, ENG_F16, &err));
    OK(opt_weights_init_synthetic(&w, 1, &err));
    opt_cuda_model *m = NULL;
    opt_cuda_kv_cache kv;
    OK(opt_cuda_model_create(&m, dev, &w, &err));
    OK(opt_cuda_kv_cache_alloc(dev, &kv, &hp, ENG_F16, 1, PROMPT + 2 * STEPS + 2, &err));
    OK(opt_cuda_model_reserve(m, PROMPT, &err));
    const int Smax = kv.c.Smax;
    int32_t tokens[PROMPT];
    uint8_t mask[PROMPT + 2 * STEPS + 2];
    for (int t = 0; t < PROMPT; t++) tokens[t] = 3 + (t * 7919) % (hp.s.vocab_size - 3);
    memset(mask, 1, sizeof mask);
    int32_t *d_tok = NULL;
    uint8_t *d_mask = NULL;
    float *d_logits = NULL;
    OK(opt_cuda_alloc(dev, OPT_CUDA_MEM_WORKSPACE, sizeof tokens, (void **)&d_tok, "tokens", &err));
    OK(opt_cuda_alloc(dev, OPT_CUDA_MEM_WORKSPACE, sizeof mask, (void **)&d_mask, "mask", &err));
    OK(opt_cuda_alloc(dev, OPT_CUDA_MEM_WORKSPACE, (size_t)hp.s.vocab_size * 4, (void **)&d_logits, "logits", &err));
    OK(opt_cuda_upload(dev, d_tok, tokens, sizeof tokens, &err));
    OK(opt_cuda_upload(dev, d_mask, mask, sizeof mask, &err));
    double step_us[2] = {0, 0}, prefill_ms = 0;
    for (int graphs = 0; graphs <= 1; graphs++) {
        OK(opt_cuda_kv_cache_set_len(dev, &kv, 0, &err));
        opt_cuda_marks_reset(dev);
        int p0 = opt_cuda_mark(dev);
        OK(opt_cuda_forward(m, &kv, d_tok, d_mask, Smax, 1, PROMPT, ENG_LOGITS_LAST, d_logits, &err));
        int p1 = opt_cuda_mark(dev);
        /* 4 warm-up steps (graph capture, GEMM plans), then STEPS timed */
        for (int k = 0; k < 4; k++)
            OK(opt_cuda_decode_step(m, &kv, d_tok, d_mask, Smax, 1, d_logits, graphs, &err));
        int s0 = opt_cuda_mark(dev);
        for (int k = 0; k < STEPS; k++)
            OK(opt_cuda_decode_step(m, &kv, d_tok, d_mask, Smax, 1, d_logits, graphs, &err));
        int s1 = opt_cuda_mark(dev);
        OK(opt_cuda_sync(dev, &err));
        prefill_ms = opt_cuda_marks_ms(dev, p0, p1);
        step_us[graphs] = opt_cuda_marks_ms(dev, s0, s1) * 1e3 / STEPS;
    }
    const double wbytes = (double)w.base.arena_bytes, bound_us = bw > 0 ? wbytes / bw * 1e6 : 0.0;
    printf("opt-%s fp16 B=1 prompt %d: prefill %.3f ms; decode step %.1f us (graphs on), %.1f us (off); "
           "weights %.1f MB, bound %.1f us at %.0f GB/s: %.2fx (graphs on)\n",
           preset, PROMPT, prefill_ms, step_us[1], step_us[0], wbytes / 1e6, bound_us, bw / 1e9,
           bound_us > 0 ? step_us[1] / bound_us : 0.0);
    opt_cuda_free(dev, OPT_CUDA_MEM_WORKSPACE, d_tok, sizeof tokens);
    opt_cuda_free(dev, OPT_CUDA_MEM_WORKSPACE, d_mask, sizeof mask);
    opt_cuda_free(dev, OPT_CUDA_MEM_WORKSPACE, d_logits, (size_t)hp.s.vocab_size * 4);
    opt_cuda_kv_cache_free(dev, &kv);
    opt_cuda_model_destroy(m);
    opt_weights_free(&w);
    return 0;
}

int main(int argc, char **argv) {
    bc_error err = {0};
    opt_cuda_device *dev = NULL;
    if (opt_cuda_device_open(&dev, 0, &err) != BC_OK) {
        printf("SKIP: %s\n", err.message);
        return 77;
    }
    printf("device: %s\n", opt_cuda_device_name(dev));
    double bw = copy_bandwidth(dev, &err);
    printf("device-to-device copy: %.0f GB/s (read + write)\n", bw / 1e9);
    int rc = 0;
    if (argc > 1)
        for (int i = 1; i < argc && !rc; i++) rc = bench(dev, argv[i], bw);
    else
        rc = bench(dev, "125m", bw) || bench(dev, "1.3b", bw);
    opt_cuda_device_close(dev);
    return rc;
}
