/* norm_rope_act_portable.c: the plain-C reference of the RMSNorm, RoPE and
 * SiLU-times-gate row kernels (norm_rope_act.h), which every SIMD variant is
 * tested against; the RoPE table builders; and the tier dispatch. */
#include "norm_rope_act.h"

#include <math.h>

/* ---- kernels ----------------------------------------------------------- */

/* x, y [N, C]; w [C]. The sum of squares in double: the reference is the
 * accurate one; the variance itself, its rsqrt and the products are fp32. */
static void rms_norm_rows_portable(float *y, const float *x, const float *w, int N, int C, float eps)
{
    for (int n = 0; n < N; n++) {
        const float *xr = x + (size_t)n * C;
        float *yr = y + (size_t)n * C;
        double ss = 0.0;
        for (int c = 0; c < C; c++)
            ss += (double)xr[c] * xr[c];
        float var = (float)(ss / C);
        float r = 1.0f / sqrtf(var + eps);
        for (int c = 0; c < C; c++)
            yr[c] = (xr[c] * r) * w[c];
    }
}

/* x: T rows of Hn * D at row_stride; cos_pd, sin_pd [P, D/2]; pos [T]. */
static void rope_rows_portable(float *x, int T, int Hn, int D, size_t row_stride, const int *pos,
                               const float *cos_pd, const float *sin_pd)
{
    int half = D / 2;
    for (int t = 0; t < T; t++) {
        const float *cs = cos_pd + (size_t)pos[t] * half;
        const float *sn = sin_pd + (size_t)pos[t] * half;
        for (int h = 0; h < Hn; h++) {
            float *v = x + (size_t)t * row_stride + (size_t)h * D;
            for (int i = 0; i < half; i++) {
                float a = v[i], b = v[i + half];
                v[i] = a * cs[i] - b * sn[i];
                v[i + half] = b * cs[i] + a * sn[i];
            }
        }
    }
}

/* gate, up, y [N, F]. */
static void silu_mul_rows_portable(float *y, const float *gate, const float *up, int N, int F)
{
    size_t n = (size_t)N * F;
    for (size_t i = 0; i < n; i++) {
        float g = gate[i];
        y[i] = g / (1.0f + expf(-g)) * up[i];
    }
}

float eng_max_f32(const float *x, int n, float init)
{
    float m[16];
    for (int i = 0; i < 16; i++) m[i] = init;
    int v = 0;
    for (; v + 16 <= n; v += 16)
        for (int i = 0; i < 16; i++) m[i] = x[v + i] > m[i] ? x[v + i] : m[i];
    for (; v < n; v++) m[0] = x[v] > m[0] ? x[v] : m[0];
    float mx = m[0];
    for (int i = 1; i < 16; i++) mx = m[i] > mx ? m[i] : mx;
    return mx;
}

/* The max in 16 lanes (eng_max_f32), then the sum in 16 lanes (expf stays
 * scalar), the lanes' sums added in double. */
static float logsumexp_portable(const float *x, int n)
{
    const float mx = eng_max_f32(x, n, -INFINITY);
    if (mx == -INFINITY || mx != mx) return mx;
    float acc[16] = {0};
    int v;
    for (v = 0; v + 16 <= n; v += 16)
        for (int i = 0; i < 16; i++) acc[i] += expf(x[v + i] - mx);
    double sum = 0.0;
    for (; v < n; v++) sum += expf(x[v] - mx);
    for (int i = 0; i < 16; i++) sum += acc[i];
    return mx + (float)log(sum);
}

static const eng_nra_kernels portable_table = {
    .isa = "portable",
    .rms_norm_rows = rms_norm_rows_portable,
    .rope_rows = rope_rows_portable,
    .silu_mul_rows = silu_mul_rows_portable,
    .logsumexp = logsumexp_portable,
};

const eng_nra_kernels *eng_nra_portable(void) { return &portable_table; }

const eng_nra_kernels *eng_nra_for(cpu_isa isa)
{
    const eng_nra_kernels *k = NULL;
    if (isa >= CPU_ISA_AVX512)
        k = eng_nra_avx512();
    if (!k && isa >= CPU_ISA_AVX2)
        k = eng_nra_avx2();
    return k ? k : &portable_table;
}

/* ---- RoPE tables -------------------------------------------------------- */

#define TWO_PI 6.283185307179586 /* Python's 2 * math.pi */

/* transformers (modeling_rope_utils, torch on fp32 tensors; a Python scalar
 * in an op with a tensor is taken as fp32):
 *   inv_freq = 1.0 / (base ** (arange(0, D, 2).float() / D))
 * and for llama3
 *   wavelen = 2 * pi / inv_freq
 *   inv_l = where(wavelen > original / low, inv_freq / factor, inv_freq)
 *   smooth = (original / wavelen - low) / (high - low)
 *   smoothed = (1 - smooth) * inv_l / factor + smooth * inv_l
 *   inv_l = where(!(wavelen < original / high) & !(wavelen > original / low), smoothed, inv_l)
 * Each line below is one of those fp32 operations, in the same order. */
int eng_rope_inv_freq(float *inv_freq, int D, double theta, const eng_rope_scaling *scaling)
{
    if (D <= 0 || D % 2 != 0 || !(theta > 0.0))
        return -1;
    int llama3 = scaling && scaling->type == ENG_ROPE_LLAMA3;
    if (scaling && scaling->type != ENG_ROPE_DEFAULT && !llama3)
        return -1;
    if (llama3 && !(scaling->factor > 0.0 && scaling->original_positions > 0 && scaling->low_freq_factor > 0.0 &&
                    scaling->high_freq_factor > scaling->low_freq_factor))
        return -1;
    float base = (float)theta;
    for (int i = 0; i < D / 2; i++) {
        float expo = (float)(2 * i) / (float)D;
        float f = 1.0f / powf(base, expo);
        if (llama3) {
            double orig = scaling->original_positions;
            float low_wl = (float)(orig / scaling->low_freq_factor);
            float high_wl = (float)(orig / scaling->high_freq_factor);
            float factor = (float)scaling->factor;
            float wavelen = (float)TWO_PI / f;
            float fl = wavelen > low_wl ? f / factor : f;
            if (!(wavelen < high_wl) && !(wavelen > low_wl)) {
                float smooth = ((float)orig / wavelen - (float)scaling->low_freq_factor) /
                               (float)(scaling->high_freq_factor - scaling->low_freq_factor);
                fl = (1.0f - smooth) * fl / factor + smooth * fl;
            }
            f = fl;
        }
        inv_freq[i] = f;
    }
    return 0;
}

void eng_rope_cos_sin_table(float *cos_pd, float *sin_pd, const float *inv_freq, int half, int P)
{
    for (int p = 0; p < P; p++)
        for (int i = 0; i < half; i++) {
            float angle = (float)p * inv_freq[i];
            cos_pd[(size_t)p * half + i] = (float)cos((double)angle);
            sin_pd[(size_t)p * half + i] = (float)sin((double)angle);
        }
}
