/* formats.c: the bc_precision_ops of float32, float16 and bfloat16.
 * Conversion rules: float_bits.h; bulk speed: convert.h (the fastest tier the
 * CPU runs, chosen at each call from a cached cpuid answer). Tolerances: see
 * docs/plugins.md, "Precision plugins"; the reasoning for each is below.
 */
#include "formats.h"

#include <string.h>

#include "convert.h"
#include "float_bits.h"

/* ---- float32: IEEE 754 binary32 --------------------------------------------
 * Storage is the float itself, so both conversions are exact copies (NaN
 * payloads included). rel_tolerance = 1e-4: fp32 carries 24 significant bits
 * (eps = 2^-23 ~ 1.2e-7), but the reference (PyTorch) and our kernels sum in
 * different orders and use different exp/tanh approximations; over a forward
 * of ~10^3-10^4-term dot products and a dozen layers that drift stays around
 * 1e-6..1e-5 of the logit scale, and 1e-4 leaves an order of magnitude of
 * headroom while still catching any real bug (a wrong mask, a missing bias),
 * which shows up at the 1e-2..1 level. */

static void fp32_to_f32(const void *src, float *dst, size_t n)
{
    if (n)
        memmove(dst, src, n * sizeof(float));
}

static void fp32_from_f32(const float *src, void *dst, size_t n)
{
    if (n)
        memmove(dst, src, n * sizeof(float));
}

const bc_precision_ops prec_fp32_ops = {
    .struct_size = sizeof(bc_precision_ops),
    .dtype = "float32",
    .element_size = 4,
    .to_f32 = fp32_to_f32,
    .from_f32 = fp32_from_f32,
    .rel_tolerance = 1e-4,
};

/* ---- float16: IEEE 754 binary16 ---------------------------------------------
 * 1 sign bit, 5 exponent bits (bias 15), 10 fraction bits. Largest finite
 * 65504; smallest normal 2^-14; smallest subnormal 2^-24; eps 2^-10.
 * rel_tolerance = 1e-2, about 10 eps: weights and KV cache are stored in fp16
 * (each value rounded once, relative error <= 2^-11) while accumulation is
 * fp32; these independent roundings mostly average out inside a dot product
 * but compound through the residual stream of every layer. Ten eps of the
 * logit scale covers that and still catches real bugs. */

static void fp16_to_f32(const void *src, float *dst, size_t n) { prec_converters_best()->f16_to_f32(src, dst, n); }

static void fp16_from_f32(const float *src, void *dst, size_t n) { prec_converters_best()->f32_to_f16(src, dst, n); }

const bc_precision_ops prec_fp16_ops = {
    .struct_size = sizeof(bc_precision_ops),
    .dtype = "float16",
    .element_size = 2,
    .to_f32 = fp16_to_f32,
    .from_f32 = fp16_from_f32,
    .rel_tolerance = 1e-2,
};

/* ---- bfloat16: the top 16 bits of a binary32 ---------------------------------
 * 1 sign bit, 8 exponent bits (bias 127, float32's range), 7 fraction bits;
 * eps 2^-7. rel_tolerance = 5e-2, about 6 eps: the fp16 argument with 3 fewer
 * fraction bits, so 8x coarser roundings (relative error <= 2^-8 per stored
 * value); 5e-2 of the logit scale covers it and still catches real bugs. */

static void bf16_to_f32(const void *src, float *dst, size_t n) { prec_converters_best()->bf16_to_f32(src, dst, n); }

static void bf16_from_f32(const float *src, void *dst, size_t n) { prec_converters_best()->f32_to_bf16(src, dst, n); }

const bc_precision_ops prec_bf16_ops = {
    .struct_size = sizeof(bc_precision_ops),
    .dtype = "bfloat16",
    .element_size = 2,
    .to_f32 = bf16_to_f32,
    .from_f32 = bf16_from_f32,
    .rel_tolerance = 5e-2,
};

/* ---- int8: one signed byte per weight, with a scale per row ------------------
 * A stored value is an integer q in [-127, 127] (two's complement; -128 is
 * never written, so the range is symmetric). The number it stands for is
 * q * scale, where scale belongs to the row (one output channel of a
 * weight matrix): the backend picks it, scale = max|row| / 127, divides the
 * row by it before from_f32 and multiplies after to_f32 (the OPT engine:
 * engine/kernels/precision.c, eng_convert_matrix). So these element
 * conversions are the element code alone: to_f32 exact, from_f32 rounds to
 * nearest even and saturates (float_bits.h, prec_f32_to_i8).
 * rel_tolerance = 4e-2: each weight is rounded with absolute error at most
 * scale / 2 = max|row| / 254, about 2^-8 of the row's largest weight (bf16's
 * unit roundoff, but on the row's scale rather than each value's own, so
 * small weights lose more). Measured on the golden checkpoints (max error
 * 2.2e-2 of the logit scale, postln_proj), 4e-2 leaves a margin of 1.8x:
 * docs/plugins.md, "Precision tolerances". */

static void int8_to_f32(const void *src, float *dst, size_t n)
{
    const int8_t *q = src;
    for (size_t i = 0; i < n; i++)
        dst[i] = (float)q[i];
}

static void int8_from_f32(const float *src, void *dst, size_t n)
{
    prec_converters_best()->f32_to_i8(src, dst, n, 1.0f); /* x * 1 is x, NaN stays NaN */
}

const bc_precision_ops prec_int8_ops = {
    .struct_size = sizeof(bc_precision_ops),
    .dtype = "int8",
    .element_size = 1,
    .to_f32 = int8_to_f32,
    .from_f32 = int8_from_f32,
    .rel_tolerance = 4e-2,
};

/* ---- w8a8: int8 weights and int8 activations ---------------------------------
 * The weights are int8's (the same element codes, conversions and per-row
 * scales); the backend also rounds each row of activations entering a
 * linear layer to int8 with its own scale (max |row| / 127) and sums
 * integer products (the OPT engine: engine/kernels/kernels_vnni.h). The
 * element conversions are int8's; dtype "w8a8" is what tells the backend.
 * rel_tolerance = 8e-2: each activation now also carries an error up to
 * max|row| / 254, which compounds with the weights' through every layer.
 * Measured on the golden checkpoints, max error 4.2e-2 of the logit scale
 * (llama_gqa3_bias; int8 weight-only 2.9e-2 at most, on llama_gqa_llama3),
 * so 8e-2 leaves a margin of 1.9x (docs/kernels.md, "W8A8"). */

const bc_precision_ops prec_w8a8_ops = {
    .struct_size = sizeof(bc_precision_ops),
    .dtype = "w8a8",
    .element_size = 1,
    .to_f32 = int8_to_f32,
    .from_f32 = int8_from_f32,
    .rel_tolerance = 8e-2,
};
