/* precision.c: the engine's formats and the precision plugins behind them
 * (precision.h). */
#include "precision.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "convert.h" /* plugins/precision/common: the bulk converters (the int8 row quantiser) */
#include "formats.h" /* plugins/precision/common: the plugins' ops tables */

const bc_precision_ops *eng_dtype_precision(eng_dtype dt)
{
    switch (dt) {
    case ENG_F16: return &prec_fp16_ops;
    case ENG_BF16: return &prec_bf16_ops;
    case ENG_I8: return &prec_int8_ops;
    case ENG_W8A8: return &prec_w8a8_ops;
    case ENG_F32: break;
    }
    return &prec_fp32_ops;
}

/* Values where layouts and rounding rules differ: exact, ties (to even, both
 * ways), beyond float16's range and at its edge, subnormals of both 16-bit
 * formats, signed zero, inf and NaN, int8's ties and saturation. */
static const uint32_t probe_bits[] = {
    0x3f800000u, /* 1 */
    0xc0200000u, /* -2.5 */
    0x3dcccccdu, /* 0.1 */
    0x3f801000u, /* 1 + 2^-11: float16 tie, rounds down to even */
    0x3f803000u, /* 1 + 3 * 2^-11: float16 tie, rounds up to even */
    0x3f808000u, /* 1 + 2^-8: bfloat16 tie, rounds down to even */
    0x3f818000u, /* 1 + 3 * 2^-8: bfloat16 tie, rounds up to even */
    0x477fe000u, /* 65504, float16's largest */
    0x477ff000u, /* 65520: float16 overflows to inf */
    0x7f7fffffu, /* float32's largest: bfloat16 rounds to inf */
    0x33800000u, /* 2^-24, float16's smallest subnormal */
    0x00400000u, /* a float32 subnormal: bfloat16 keeps it */
    0x80000000u, /* -0 */
    0x7f800000u, /* inf */
    0xff800000u, /* -inf */
    0x7fc00001u, /* quiet NaN with payload */
    0xff810000u, /* signalling NaN, negative */
    0x40600000u, /* 3.5: int8 tie, rounds up to even */
    0xbfc00000u, /* -1.5: int8 tie, rounds down to even */
    0x3f400000u, /* 0.75: int8 rounds to 1, not 0 */
    0x43000000u, /* 128: int8 saturates to 127 */
};
#define N_PROBE (sizeof probe_bits / sizeof probe_bits[0])

/* Do ops store what ref stores, for every probe value, both ways? */
static int same_layout(const bc_precision_ops *ops, const bc_precision_ops *ref)
{
    if (ops->element_size != ref->element_size)
        return 0;
    float in[N_PROBE], back_ops[N_PROBE], back_ref[N_PROBE];
    unsigned char got[N_PROBE * 4], want[N_PROBE * 4];
    memcpy(in, probe_bits, sizeof in);
    memset(got, 0, sizeof got);
    memset(want, 0, sizeof want);
    ops->from_f32(in, got, N_PROBE);
    ref->from_f32(in, want, N_PROBE);
    if (memcmp(got, want, N_PROBE * ref->element_size) != 0)
        return 0;
    ops->to_f32(want, back_ops, N_PROBE);
    ref->to_f32(want, back_ref, N_PROBE);
    return memcmp(back_ops, back_ref, sizeof back_ops) == 0;
}

bc_status eng_precision_dtype(const char *name, const bc_precision_ops *ops, eng_dtype *dt, bc_error *err)
{
    const char *plugin = name ? name : "?";
    if (!ops || !ops->to_f32 || !ops->from_f32 ||
        (ops->element_size != 1 && ops->element_size != 2 && ops->element_size != 4))
        return bc_error_set(err, BC_ERR_UNSUPPORTED,
                            "precision %s has no conversions of 1-, 2- or 4-byte elements; the engine has "
                            "kernels for float32, float16, bfloat16 and int8",
                            plugin);
    const eng_dtype all[] = {ENG_F32, ENG_F16, ENG_BF16, ENG_I8};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (same_layout(ops, eng_dtype_precision(all[i]))) {
            /* int8 elements with the w8a8 format's name: the W8A8 kernels */
            *dt = all[i] == ENG_I8 && ops->dtype && strcmp(ops->dtype, prec_w8a8_ops.dtype) == 0 ? ENG_W8A8 : all[i];
            return BC_OK;
        }
    return bc_error_set(err, BC_ERR_UNSUPPORTED,
                        "precision %s (dtype %s, %u bytes) stores numbers in a layout the engine's kernels do not "
                        "read; they read float32, float16, bfloat16 and int8, rounded to nearest even (docs/plugins.md)",
                        plugin, ops->dtype ? ops->dtype : "(none)", (unsigned)ops->element_size);
}

enum { CHUNK = 1024 }; /* values per step: 4 KiB of fp32 on the stack */

void eng_convert_values(void *dst, eng_dtype dt, const void *src, eng_dtype st, size_t n)
{
    const size_t ds = eng_dtype_size(dt), ss = eng_dtype_size(st);
    if (dt == st) {
        memcpy(dst, src, n * ds);
        return;
    }
    const bc_precision_ops *from = eng_dtype_precision(st), *to = eng_dtype_precision(dt);
    float f32[CHUNK], in[CHUNK], out[CHUNK]; /* in, out: aligned copies of unaligned bytes */
    for (size_t i = 0; i < n; i += CHUNK) {
        const size_t k = n - i < CHUNK ? n - i : CHUNK;
        const char *s = (const char *)src + i * ss;
        char *d = (char *)dst + i * ds;
        if ((uintptr_t)s % ss) {
            memcpy(in, s, k * ss);
            s = (const char *)in;
        }
        from->to_f32(s, f32, k);
        if ((uintptr_t)d % ds) {
            to->from_f32(f32, out, k);
            memcpy(d, out, k * ds);
        } else {
            to->from_f32(f32, d, k);
        }
    }
}

float eng_i8_row_scale(float absmax) { return absmax > 0.0f ? absmax / 127.0f : 0.0f; }

float eng_i8_row_absmax(const float *src, size_t n) { return prec_converters_best()->f32_absmax(src, n); }

void eng_i8_quantize(int8_t *q, const float *src, size_t n, float scale)
{
    prec_converters_best()->f32_to_i8(src, q, n, scale > 0.0f ? 1.0f / scale : 0.0f);
}

float eng_i8_quantize_row(int8_t *q, const float *src, size_t n)
{
    const float scale = eng_i8_row_scale(eng_i8_row_absmax(src, n));
    eng_i8_quantize(q, src, n, scale);
    return scale;
}

/* Row r of src[rows, cols] (dtype st), CHUNK values at a time: its largest
 * magnitude (q NULL), or the row rounded to int8 with scale into q. */
static float i8_row_pass(int8_t *q, float scale, const void *src, eng_dtype st, size_t r, size_t cols)
{
    const size_t ss = eng_dtype_size(st);
    float f32[CHUNK];
    float absmax = 0.0f;
    for (size_t c = 0; c < cols; c += CHUNK) {
        const size_t k = cols - c < CHUNK ? cols - c : CHUNK;
        eng_convert_values(f32, ENG_F32, (const char *)src + (r * cols + c) * ss, st, k);
        if (q) {
            eng_i8_quantize(q + c, f32, k, scale);
        } else {
            const float m = eng_i8_row_absmax(f32, k);
            absmax = m > absmax ? m : absmax;
        }
    }
    return absmax;
}

/* The byte of q[n, k] in an ENG_W8A8 block of K columns (kernels_vnni.h). */
static size_t w8a8_at(size_t K, size_t n, size_t k)
{
    return ((n / 16 * eng_w8a8_quads(K) + k / 4) * 16 + n % 16) * 4 + k % 4;
}

/* Stores the int8 values q[c0, c0 + n) of row r into the packed block w;
 * returns their sum. */
static int32_t w8a8_scatter(void *w, size_t K, size_t r, size_t c0, const int8_t *q, size_t n)
{
    int8_t *b = w;
    int32_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        b[w8a8_at(K, r, c0 + i)] = q[i];
        sum += q[i];
    }
    return sum;
}

void eng_w8a8_clear(void *w, size_t N, size_t K) { memset(w, 0, eng_w8a8_scales_offset(N, K)); }

void eng_w8a8_pack_row(void *w, size_t N, size_t K, size_t r, const float *src)
{
    float *scale = (float *)(void *)((char *)w + eng_w8a8_scales_offset(N, K));
    int32_t *corr = (int32_t *)(void *)(scale + N);
    scale[r] = eng_i8_row_scale(eng_i8_row_absmax(src, K));
    int8_t q[CHUNK];
    int32_t sum = 0;
    for (size_t c = 0; c < K; c += CHUNK) {
        const size_t k = K - c < CHUNK ? K - c : CHUNK;
        eng_i8_quantize(q, src + c, k, scale[r]);
        sum += w8a8_scatter(w, K, r, c, q, k);
    }
    corr[r] = 128 * sum;
}

void eng_w8a8_row_to_f32(float *dst, const void *w, size_t N, size_t K, size_t r)
{
    const int8_t *b = w;
    const float s = eng_w8a8_scales(w, N, K)[r];
    for (size_t k = 0; k < K; k++)
        dst[k] = s * (float)b[w8a8_at(K, r, k)];
}

void eng_convert_matrix(void *dst, eng_dtype dt, const void *src, eng_dtype st, size_t rows, size_t cols)
{
    if (dt == ENG_W8A8) {
        float *scale = (float *)(void *)((char *)dst + eng_w8a8_scales_offset(rows, cols));
        int32_t *corr = (int32_t *)(void *)(scale + rows);
        const size_t ss = eng_dtype_size(st);
        eng_w8a8_clear(dst, rows, cols);
        for (size_t r = 0; r < rows; r++) {
            scale[r] = eng_i8_row_scale(i8_row_pass(NULL, 0.0f, src, st, r, cols));
            float f32[CHUNK];
            int8_t q[CHUNK];
            int32_t sum = 0;
            for (size_t c = 0; c < cols; c += CHUNK) {
                const size_t k = cols - c < CHUNK ? cols - c : CHUNK;
                eng_convert_values(f32, ENG_F32, (const char *)src + (r * cols + c) * ss, st, k);
                eng_i8_quantize(q, f32, k, scale[r]);
                sum += w8a8_scatter(dst, cols, r, c, q, k);
            }
            corr[r] = 128 * sum;
        }
        return;
    }
    if (dt != ENG_I8) {
        eng_convert_values(dst, dt, src, st, rows * cols);
        return;
    }
    float *scale = (float *)(void *)((char *)dst + eng_i8_scales_offset(rows, cols));
    for (size_t r = 0; r < rows; r++) {
        scale[r] = eng_i8_row_scale(i8_row_pass(NULL, 0.0f, src, st, r, cols));
        i8_row_pass((int8_t *)dst + r * cols, scale[r], src, st, r, cols);
    }
}
