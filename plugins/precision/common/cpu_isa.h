/* cpu_isa.h: which x86 instruction-set tier this CPU (and its OS) can run,
 * from cpuid + xgetbv, asked once and cached. The precision plugins' bulk
 * converters and the OPT engine's kernels both dispatch on it.
 *   portable     plain C, any CPU
 *   avx2         AVX2 + FMA + F16C, with the OS saving YMM state
 *   avx512       AVX-512 F, DQ, BW, VL (+ the above), with the OS saving ZMM
 *                and opmask state
 *   avx512_bf16  avx512 + AVX512-BF16 (vdpbf16ps)
 * Each tier implies the ones below it.
 */
#ifndef BENCHCTL_PRECISION_CPU_ISA_H
#define BENCHCTL_PRECISION_CPU_ISA_H

typedef enum cpu_isa {
    CPU_ISA_PORTABLE = 0,
    CPU_ISA_AVX2 = 1,
    CPU_ISA_AVX512 = 2,
    CPU_ISA_AVX512_BF16 = 3,
} cpu_isa;

#define CPU_ISA_COUNT 4

/* The highest tier this CPU supports. */
cpu_isa cpu_isa_detect(void);
/* "portable", "avx2", "avx512", "avx512_bf16"; "unknown" out of range. */
const char *cpu_isa_name(cpu_isa isa);

#endif
