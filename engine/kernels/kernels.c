/* kernels.c: the engine's kernel dispatch: names, the CPU's best kernel
 * family (plugins/precision/common/cpu_isa.h) and one table per family from
 * the variant files (kernels_portable.c, kernels_avx2.c, kernels_avx512.c).
 * It calls the variants only through their getters (kernels_impl.h).
 * `auto` is the CPU's best family, except that a CPU with AVX512-BF16 whose
 * vdpbf16ps does fewer flops per second than its fp32 FMAs runs the avx512
 * family (measured once, eng_avx512_dpbf16_over_fma).
 */
#include "kernels.h"
#include "kernels_impl.h"

#include <pthread.h>
#include <string.h>

_Static_assert((int)ENG_ISA_PORTABLE == (int)CPU_ISA_PORTABLE && (int)ENG_ISA_AVX2 == (int)CPU_ISA_AVX2 &&
                   (int)ENG_ISA_AVX512 == (int)CPU_ISA_AVX512 && (int)ENG_ISA_AVX512_BF16 == (int)CPU_ISA_AVX512_BF16,
               "eng_isa names the tiers of cpu_isa");

const char *eng_dtype_name(eng_dtype t)
{
    switch (t) {
    case ENG_F32: return "float32";
    case ENG_F16: return "float16";
    case ENG_BF16: return "bfloat16";
    case ENG_I8: return "int8";
    case ENG_W8A8: return "w8a8";
    }
    return "unknown";
}

const char *eng_isa_name(eng_isa isa) { return cpu_isa_name((cpu_isa)isa); }

eng_isa eng_isa_detect(void) { return (eng_isa)cpu_isa_detect(); }

/* The table of a family as built (NULL: built without its instructions),
 * whatever this CPU runs. */
static const eng_kernels *family_table(eng_isa isa)
{
    switch (isa) {
    case ENG_ISA_PORTABLE: return eng_kernels_portable();
    case ENG_ISA_AVX2: return eng_kernels_avx2();
    case ENG_ISA_AVX512: return eng_kernels_avx512();
    case ENG_ISA_AVX512_BF16: return eng_kernels_avx512_bf16();
    }
    return NULL;
}

bc_status eng_kernels_choose(const char *name, eng_isa cpu, int *isa, bc_error *err)
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
                            "kernels = \"%s\": not a kernel family (auto, avx512_bf16, avx512, avx2, portable)",
                            name);
    if (want > (int)cpu) {
        bc_error_set(err, BC_ERR_UNSUPPORTED, "kernels = \"%s\": this CPU runs at most the %s kernels", name,
                     eng_isa_name(cpu));
        return bc_error_hint(err, "kernels = \"auto\" runs the best family this CPU supports");
    }
    if (!family_table((eng_isa)want))
        return bc_error_set(err, BC_ERR_UNSUPPORTED,
                            "kernels = \"%s\": this build has no %s kernels (its compiler lacked the flags)",
                            name, name);
    *isa = want;
    return BC_OK;
}

const eng_kernels *eng_kernels_for(eng_isa isa)
{
    if ((int)isa < 0 || isa > eng_isa_detect())
        return NULL;
    return family_table(isa);
}

eng_isa eng_kernels_auto_isa(eng_isa cpu, double dpbf16_over_fma)
{
    if (cpu == ENG_ISA_AVX512_BF16 && !(dpbf16_over_fma >= 1.0))
        return ENG_ISA_AVX512;
    return cpu;
}

static const eng_kernels *best_table;

static void choose_best(void)
{
    eng_isa cpu = eng_isa_detect();
    if (cpu == ENG_ISA_AVX512_BF16 && family_table(cpu))
        cpu = eng_kernels_auto_isa(cpu, eng_avx512_dpbf16_over_fma());
    for (int i = (int)cpu; i > 0; i--) {
        const eng_kernels *k = eng_kernels_for((eng_isa)i);
        if (k) {
            best_table = k;
            return;
        }
    }
    best_table = eng_kernels_portable();
}

const eng_kernels *eng_kernels_best(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, choose_best);
    return best_table;
}
