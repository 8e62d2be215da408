/* norm_rope_act.h: the row kernels of RMSNorm-and-RoPE decoders: RMSNorm of
 * rows, rotary position embedding (rotate-half pairs) applied in place, and
 * SiLU-times-gate; plus the portable builders of the inverse-frequency and
 * cos/sin tables RoPE reads. One table of kernels per instruction-set tier
 * (norm_rope_act_portable.c, _avx2.c, _avx512.c); every SIMD variant is
 * tested against the portable one (tests/engine/test_norm_rope_act.c).
 *
 * Dimension legend (engine/model/shape.h): N rows, C hidden size, F FFN size,
 * T tokens, Hn heads of the tensor being rotated (H for q, Hkv for k), D head
 * size, P positions in a table. All values fp32; pointers to distinct arrays
 * unless a comment allows aliasing.
 */
#ifndef ENG_NORM_ROPE_ACT_H
#define ENG_NORM_ROPE_ACT_H

#include <stddef.h>

#include "cpu_isa.h" /* plugins/precision/common: the CPU's tier */

typedef struct eng_nra_kernels {
    const char *isa; /* "portable", "avx2", "avx512" */
    /* y[n, :] = (x[n, :] * 1 / sqrt(mean_c(x[n, c]^2) + eps)) * w[:], as
     * transformers' LlamaRMSNorm in fp32. x, y [N, C]; w [C]. y may be x. */
    void (*rms_norm_rows)(float *y, const float *x, const float *w, int N, int C, float eps);
    /* In place, for t < T, h < Hn, i < D/2, p = pos[t]:
     *   a = x[t, h, i], b = x[t, h, i + D/2]
     *   x[t, h, i] = a * cos[p, i] - b * sin[p, i]
     *   x[t, h, i + D/2] = b * cos[p, i] + a * sin[p, i]
     * x: T rows of Hn * D values, row t at x + t * row_stride (floats, so q
     * and k may sit inside a fused qkv row); cos, sin [P, D/2] from
     * eng_rope_cos_sin_table; 0 <= pos[t] < P; D even. */
    void (*rope_rows)(float *x, int T, int Hn, int D, size_t row_stride, const int *pos, const float *cos_pd,
                      const float *sin_pd);
    /* y[n, f] = silu(gate[n, f]) * up[n, f], silu(g) = g / (1 + exp(-g)).
     * gate, up, y [N, F]; y may be gate or up. */
    void (*silu_mul_rows)(float *y, const float *gate, const float *up, int N, int F);
    /* log(sum_v exp(x[v])) over x[n], n >= 1: max + log(sum exp(x - max)),
     * two reads of the row (the log-probability of a token at temperature
     * 1 is x[id] minus it). -inf when every x[v] is -inf; -inf entries add
     * nothing (the vector exp's clamp at -87 adds under 1e-37 each). */
    float (*logsumexp)(const float *x, int n);
} eng_nra_kernels;

/* The largest of init and x[0, n) in plain C, NaNs in x ignored (a NaN never
 * compares greater): 16 independent lanes, so the compiler may vectorise it
 * without a chain through one running max. The portable logsumexp's first
 * pass (init -inf) and the greedy sampler's argmax (init x[0]) share it. */
float eng_max_f32(const float *x, int n, float init);

/* The tables as built (NULL: this build lacks the tier's compiler flags),
 * whatever this CPU runs; the caller checks the CPU (cpu_isa_detect). */
const eng_nra_kernels *eng_nra_portable(void);
const eng_nra_kernels *eng_nra_avx2(void);
const eng_nra_kernels *eng_nra_avx512(void);
/* The best table this build has for a CPU of tier isa (avx512_bf16 runs the
 * avx512 table); never NULL. */
const eng_nra_kernels *eng_nra_for(cpu_isa isa);

/* RoPE on q [T, H, D] and k [T, Hkv, D] (rows of their own strides) with one
 * position per token: rope_rows on each. */
static inline void eng_rope_qk(const eng_nra_kernels *kn, float *q, size_t q_stride, int H, float *k,
                               size_t k_stride, int Hkv, int T, int D, const int *pos, const float *cos_pd,
                               const float *sin_pd)
{
    kn->rope_rows(q, T, H, D, q_stride, pos, cos_pd, sin_pd);
    kn->rope_rows(k, T, Hkv, D, k_stride, pos, cos_pd, sin_pd);
}

/* ---- tables (portable C, built once per model) ------------------------ */

typedef enum eng_rope_type {
    ENG_ROPE_DEFAULT = 0, /* inv_freq[i] = 1 / theta^(2i / D) */
    ENG_ROPE_LLAMA3 = 1,  /* Llama 3.1's band-wise rescaling of the default */
} eng_rope_type;

typedef struct eng_rope_scaling {
    eng_rope_type type;
    /* ENG_ROPE_LLAMA3 only: wavelengths above original_positions /
     * low_freq_factor are divided by factor, those below original_positions /
     * high_freq_factor kept, those between interpolated */
    double factor, low_freq_factor, high_freq_factor;
    int original_positions; /* original_max_position_embeddings */
} eng_rope_scaling;

/* inv_freq[D/2] (radians per position) for rope_theta and head size D, with
 * scaling (NULL: default), computed in fp32 step by step as transformers does
 * (modeling_rope_utils), so the vectors agree to the last bit or so.
 * Returns 0, or -1 (inv_freq untouched) when D is not even and positive,
 * theta <= 0, or a llama3 scaling has factor <= 0, original_positions <= 0,
 * low_freq_factor <= 0 or high_freq_factor <= low_freq_factor. */
int eng_rope_inv_freq(float *inv_freq, int D, double theta, const eng_rope_scaling *scaling);

/* cos_pd[p, i] = cos(angle), sin_pd[p, i] = sin(angle), angle = (float)p *
 * inv_freq[i] in fp32 (as transformers forms it), for p < P, i < half. */
void eng_rope_cos_sin_table(float *cos_pd, float *sin_pd, const float *inv_freq, int half, int P);

#endif
