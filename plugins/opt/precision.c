/* precision.c: the engine's formats and the precision plugins behind them
 * (precision.h). */
#include "precision.h"

#include <stdint.h>
#include <string.h>

#include "formats.h" /* plugins/precision/common: the plugins' ops tables */

const bc_precision_ops *opt_dtype_precision(opt_dtype dt)
{
    switch (dt) {
    case OPT_F16: return &prec_fp16_ops;
    case OPT_BF16: return &prec_bf16_ops;
    case OPT_F32: break;
    }
    return &prec_fp32_ops;
}

/* Values where layouts and rounding rules differ: exact, ties (to even, both
 * ways), beyond float16's range and at its edge, subnormals of both 16-bit
 * formats, signed zero, inf and NaN. */
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

bc_status opt_precision_dtype(const char *name, const bc_precision_ops *ops, opt_dtype *dt, bc_error *err)
{
    const char *plugin = name ? name : "?";
    if (!ops || !ops->to_f32 || !ops->from_f32 || (ops->element_size != 2 && ops->element_size != 4))
        return bc_error_set(err, BC_ERR_UNSUPPORTED,
                            "opt: precision %s has no conversions of 2- or 4-byte elements; the opt backend has "
                            "kernels for float32, float16 and bfloat16",
                            plugin);
    const opt_dtype all[] = {OPT_F32, OPT_F16, OPT_BF16};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (same_layout(ops, opt_dtype_precision(all[i]))) {
            *dt = all[i];
            return BC_OK;
        }
    return bc_error_set(err, BC_ERR_UNSUPPORTED,
                        "opt: precision %s (dtype %s, %u bytes) stores numbers in a layout the opt kernels do not "
                        "read; they read float32, float16 and bfloat16, rounded to nearest even (docs/plugins.md)",
                        plugin, ops->dtype ? ops->dtype : "(none)", (unsigned)ops->element_size);
}

enum { CHUNK = 1024 }; /* values per step: 4 KiB of fp32 on the stack */

void opt_convert_values(void *dst, opt_dtype dt, const void *src, opt_dtype st, size_t n)
{
    const size_t ds = opt_dtype_size(dt), ss = opt_dtype_size(st);
    if (dt == st) {
        memcpy(dst, src, n * ds);
        return;
    }
    const bc_precision_ops *from = opt_dtype_precision(st), *to = opt_dtype_precision(dt);
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
