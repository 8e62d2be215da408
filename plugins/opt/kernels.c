/* kernels.c: the OPT engine's kernel dispatch: names, the CPU's best kernel
 * family (plugins/precision/common/cpu_isa.h) and one table per family from
 * the variant files (kernels_portable.c, kernels_avx2.c, kernels_avx512.c).
 * It calls the variants only through their getters (kernels_impl.h).
 * `auto` is the CPU's best family, except that a CPU with AVX512-BF16 whose
 * vdpbf16ps does fewer flops per second than its fp32 FMAs runs the avx512
 * family (measured once, opt_avx512_dpbf16_over_fma).
 */
#include "kernels.h"
#include "kernels_impl.h"

#include <pthread.h>
#include <string.h>

_Static_assert((int)OPT_ISA_PORTABLE == (int)CPU_ISA_PORTABLE && (int)OPT_ISA_AVX2 == (int)CPU_ISA_AVX2 &&
                   (int)OPT_ISA_AVX512 == (int)CPU_ISA_AVX512 && (int)OPT_ISA_AVX512_BF16 == (int)CPU_ISA_AVX512_BF16,
               "opt_isa names the tiers of cpu_isa");

const char *opt_dtype_name(opt_dtype t)
{
    switch (t) {
    case OPT_F32: return "float32";
    case OPT_F16: return "float16";
    case OPT_BF16: return "bfloat16";
    case OPT_I8: return "int8";
    }
    return "unknown";
}

const char *opt_isa_name(opt_isa isa) { return cpu_isa_name((cpu_isa)isa); }

opt_isa opt_isa_detect(void) { return (opt_isa)cpu_isa_detect(); }

/* The table of a family as built (NULL: built without its instructions),
 * whatever this CPU runs. */
static const opt_kernels *family_table(opt_isa isa)
{
    switch (isa) {
    case OPT_ISA_PORTABLE: return opt_kernels_portable();
    case OPT_ISA_AVX2: return opt_kernels_avx2();
    case OPT_ISA_AVX512: return opt_kernels_avx512();
    case OPT_ISA_AVX512_BF16: return opt_kernels_avx512_bf16();
    }
    return NULL;
}

bc_status opt_kernels_choose(const char *name, opt_isa cpu, int *isa, bc_error *err)
{
    *isa = -1;
    if (!name || !name[0] || strcmp(name, "auto") == 0)
        return BC_OK;
    int want = -1;
    for (int i = 0; i < CPU_ISA_COUNT; i++)
        if (strcmp(name, cpu_isa_name((cpu_isa)i)) == 0)
            want = i;
    if (want < 0)
        return bc_error_set(err, BC_ERR_SETTING,
                            "opt: kernels = \"%s\": not a kernel family (auto, avx512_bf16, avx512, avx2, portable)",
                            name);
    if (want > (int)cpu) {
        bc_error_set(err, BC_ERR_UNSUPPORTED, "opt: kernels = \"%s\": this CPU runs at most the %s kernels", name,
                     opt_isa_name(cpu));
        return bc_error_hint(err, "kernels = \"auto\" runs the best family this CPU supports");
    }
    if (!family_table((opt_isa)want))
        return bc_error_set(err, BC_ERR_UNSUPPORTED,
                            "opt: kernels = \"%s\": this build has no %s kernels (its compiler lacked the flags)",
                            name, name);
    *isa = want;
    return BC_OK;
}

const opt_kernels *opt_kernels_for(opt_isa isa)
{
    if ((int)isa < 0 || isa > opt_isa_detect())
        return NULL;
    return family_table(isa);
}

opt_isa opt_kernels_auto_isa(opt_isa cpu, double dpbf16_over_fma)
{
    if (cpu == OPT_ISA_AVX512_BF16 && !(dpbf16_over_fma >= 1.0))
        return OPT_ISA_AVX512;
    return cpu;
}

static const opt_kernels *best_table;

static void choose_best(void)
{
    opt_isa cpu = opt_isa_detect();
    if (cpu == OPT_ISA_AVX512_BF16 && family_table(cpu))
        cpu = opt_kernels_auto_isa(cpu, opt_avx512_dpbf16_over_fma());
    for (int i = (int)cpu; i > 0; i--) {
        const opt_kernels *k = opt_kernels_for((opt_isa)i);
        if (k) {
            best_table = k;
            return;
        }
    }
    best_table = opt_kernels_portable();
}

const opt_kernels *opt_kernels_best(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, choose_best);
    return best_table;
}
