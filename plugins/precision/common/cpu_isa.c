/* cpu_isa.c: x86 feature detection (cpuid + xgetbv), see cpu_isa.h. */
#include "cpu_isa.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define CPU_X86 1
#endif

const char *cpu_isa_name(cpu_isa isa)
{
    switch (isa) {
    case CPU_ISA_PORTABLE: return "portable";
    case CPU_ISA_AVX2: return "avx2";
    case CPU_ISA_AVX512: return "avx512";
    case CPU_ISA_AVX512_BF16: return "avx512_bf16";
    }
    return "unknown";
}

#ifdef CPU_X86
static uint64_t xgetbv0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}
#endif

static cpu_isa detect_once(void)
{
#ifdef CPU_X86
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return CPU_ISA_PORTABLE;
    int fma = (c >> 12) & 1, osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, f16c = (c >> 29) & 1;
    if (!osxsave || !avx)
        return CPU_ISA_PORTABLE;
    uint64_t xcr0 = xgetbv0();
    if ((xcr0 & 0x6) != 0x6) /* the OS saves XMM and YMM state */
        return CPU_ISA_PORTABLE;
    if (__get_cpuid_max(0, NULL) < 7)
        return CPU_ISA_PORTABLE;
    __cpuid_count(7, 0, a, b, c, d);
    int avx2 = (b >> 5) & 1, avx512f = (b >> 16) & 1, avx512dq = (b >> 17) & 1, avx512bw = (b >> 30) & 1,
        avx512vl = (b >> 31) & 1;
    unsigned max7 = a;
    int avx512bf16 = 0;
    if (max7 >= 1) {
        unsigned a1, b1, c1, d1;
        __cpuid_count(7, 1, a1, b1, c1, d1);
        avx512bf16 = (a1 >> 5) & 1;
    }
    if (!(avx2 && fma && f16c))
        return CPU_ISA_PORTABLE;
    /* AVX-512 also needs the OS to save opmask and ZMM state (XCR0 bits 5-7) */
    if (avx512f && avx512dq && avx512bw && avx512vl && (xcr0 & 0xe0) == 0xe0)
        return avx512bf16 ? CPU_ISA_AVX512_BF16 : CPU_ISA_AVX512;
    return CPU_ISA_AVX2;
#else
    return CPU_ISA_PORTABLE;
#endif
}

cpu_isa cpu_isa_detect(void)
{
    /* cpuid is cheap but not free; the answer never changes, so cache it.
     * Two threads racing on the first call both compute the same value. */
    static atomic_int cached = -1;
    int v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (v < 0) {
        v = (int)detect_once();
        atomic_store_explicit(&cached, v, memory_order_relaxed);
    }
    return (cpu_isa)v;
}
