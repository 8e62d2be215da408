/* kernels_portable.c: the portable C variant of the engine's kernels, the
 * reference every SIMD variant is tested against (tests/opt/test_kernels.c).
 * Shapes follow kernels.h: x[M, K] fp32 row-major, w[N, K] row-major in a
 * dtype, y[M, N] fp32. Accumulation is always fp32; weights are converted to
 * fp32 a chunk at a time with the portable bulk converters
 * (plugins/precision/common/convert.h).
 */
#include "kernels_impl.h"

#include <math.h>
#include <string.h>

/* Converts n values of src (dtype st) starting at element off to fp32. */
static void row_to_f32(float *dst, const void *src, eng_dtype st, size_t off, size_t n)
{
    eng_convert_to_f32(prec_converters_portable(), dst, (const char *)src + off * eng_dtype_size(st), st, n);
}

/* The portable linear: for each output row n, the weight row is converted to
 * fp32 in chunks of PORT_KB and applied to all M rows of x, so each weight is
 * converted once per call. y holds the partial sums between chunks; int8
 * partial sums are multiplied by the row's scale (1 for the other dtypes,
 * which changes no bit). */
#define PORT_KB 256
static void linear_portable(float *y, const float *x, const void *w, eng_dtype wt, const float *bias, int M, int K,
                            int N, int n0, int n1, int relu)
{
    if (wt == ENG_W8A8) {
        eng_linear_w8a8(eng_vnni_for_family(ENG_ISA_PORTABLE), y, x, w, bias, M, K, N, n0, n1, relu);
        return;
    }
    float wbuf[PORT_KB];
    const float *scale = wt == ENG_I8 ? eng_i8_scales(w, (size_t)N, (size_t)K) : NULL;
    for (int n = n0; n < n1; n++) {
        const float b = bias ? bias[n] : 0.0f, ws = scale ? scale[n] : 1.0f;
        for (int m = 0; m < M; m++)
            y[(size_t)m * N + n] = b;
        for (int k0 = 0; k0 < K; k0 += PORT_KB) {
            int kb = K - k0 < PORT_KB ? K - k0 : PORT_KB;
            row_to_f32(wbuf, w, wt, (size_t)n * K + k0, (size_t)kb);
            for (int m = 0; m < M; m++) {
                const float *xr = x + (size_t)m * K + k0;
                float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
                int k = 0;
                for (; k + 4 <= kb; k += 4) {
                    s0 += xr[k] * wbuf[k];
                    s1 += xr[k + 1] * wbuf[k + 1];
                    s2 += xr[k + 2] * wbuf[k + 2];
                    s3 += xr[k + 3] * wbuf[k + 3];
                }
                for (; k < kb; k++)
                    s0 += xr[k] * wbuf[k];
                y[(size_t)m * N + n] += ws * ((s0 + s1) + (s2 + s3));
            }
        }
        if (relu)
            for (int m = 0; m < M; m++)
                if (y[(size_t)m * N + n] < 0.0f)
                    y[(size_t)m * N + n] = 0.0f;
    }
}

static float dot_portable(const float *a, const void *b, eng_dtype bt, int n)
{
    float buf[PORT_KB];
    float s = 0.0f;
    for (int k0 = 0; k0 < n; k0 += PORT_KB) {
        int kb = n - k0 < PORT_KB ? n - k0 : PORT_KB;
        row_to_f32(buf, b, bt, (size_t)k0, (size_t)kb);
        for (int k = 0; k < kb; k++)
            s += a[k0 + k] * buf[k];
    }
    return s;
}

static void axpy_portable(float *y, float alpha, const void *x, eng_dtype xt, int n)
{
    float buf[PORT_KB];
    for (int k0 = 0; k0 < n; k0 += PORT_KB) {
        int kb = n - k0 < PORT_KB ? n - k0 : PORT_KB;
        row_to_f32(buf, x, xt, (size_t)k0, (size_t)kb);
        for (int k = 0; k < kb; k++)
            y[k0 + k] += alpha * buf[k];
    }
}

static void to_f32_portable(float *dst, const void *src, eng_dtype st, size_t n) { row_to_f32(dst, src, st, 0, n); }

static void from_f32_portable(void *dst, eng_dtype dt, const float *src, size_t n)
{
    eng_convert_from_f32(prec_converters_portable(), dst, dt, src, n);
}

/* The reference attention: one dot product per kept key, a max-subtracted
 * expf softmax, then the V rows in key order (y += p_s * v_s). */
static void attend_split_portable(float *out, const float *q, const void *kp, const void *vp, int np, const void *k,
                                  const void *v, eng_dtype dt, const uint8_t *keep, int S, int D, float *scores)
{
    const size_t es = eng_dtype_size(dt);
    float mx = -INFINITY;
    for (int s = 0; s < S; s++) {
        if (keep && !keep[s]) {
            scores[s] = -INFINITY;
            continue;
        }
        scores[s] = dot_portable(q, (const char *)(s < np ? kp : k) + (size_t)s * D * es, dt, D);
        if (scores[s] > mx)
            mx = scores[s];
    }
    float sum = 0.0f;
    for (int s = 0; s < S; s++) {
        if (mx == -INFINITY) /* nothing kept: uniform */
            scores[s] = 1.0f;
        else
            scores[s] = scores[s] == -INFINITY ? 0.0f : expf(scores[s] - mx);
        sum += scores[s];
    }
    const float inv = 1.0f / sum;
    memset(out, 0, (size_t)D * sizeof(float));
    for (int s = 0; s < S; s++)
        if (scores[s] != 0.0f)
            axpy_portable(out, scores[s] * inv, (const char *)(s < np ? vp : v) + (size_t)s * D * es, dt, D);
}

/* The reference attend_group: attend_split once per query. */
static void attend_group_portable(float *out, size_t ldo, const float *q, size_t ldq, int G, const void *kp,
                                  const void *vp, int np, const void *k, const void *v, size_t ld_kv, eng_dtype dt,
                                  const uint8_t *keep, size_t ld_keep, int S, int D, float *scores)
{
    for (int g = 0; g < G; g++)
        attend_split_portable(out + (size_t)g * ldo, q + (size_t)g * ldq, kp, vp, np,
                              (const char *)k + (size_t)g * ld_kv, (const char *)v + (size_t)g * ld_kv, dt,
                              keep ? keep + (size_t)g * ld_keep : NULL, S, D, scores);
}

static void attend_portable(float *out, const float *q, const void *k, const void *v, eng_dtype dt,
                            const uint8_t *keep, int S, int D, float *scores)
{
    attend_split_portable(out, q, k, v, 0, k, v, dt, keep, S, D, scores);
}

static const eng_kernels kernels_portable = {
    .isa = ENG_ISA_PORTABLE,
    .linear = linear_portable,
    .dot = dot_portable,
    .axpy = axpy_portable,
    .to_f32 = to_f32_portable,
    .from_f32 = from_f32_portable,
    .attend = attend_portable,
    .attend_split = attend_split_portable,
    .attend_group = attend_group_portable,
};

const eng_kernels *eng_kernels_portable(void) { return &kernels_portable; }
