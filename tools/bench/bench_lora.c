/* bench_lora.c: times fusing a LoRA adapter into the OPT engine's weights and
 * unfusing it (engine/weights/lora.c) on a preset's shape with synthetic
 * weights, as the hybrid engine does around every rollout
 * (docs/performance.md, "LoRA fuse and unfuse").
 *
 *   bench_lora PRESET DTYPE RANK TARGETS THREADS [REPEATS]
 *   e.g. bench_lora 1.3b bf16 8 q_proj,v_proj 2 5
 *
 * Prints one line: the best and median fuse and unfuse times over REPEATS
 * cycles (default 5), by subtraction and by restore. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lora.h"
#include "opt_model.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: %s PRESET fp32|fp16|bf16 RANK TARGETS THREADS [REPEATS]\n", argv[0]);
        return 2;
    }
    const char *dts = argv[2];
    eng_dtype dt = !strcmp(dts, "fp32") ? ENG_F32 : !strcmp(dts, "fp16") ? ENG_F16 : ENG_BF16;
    int rank = atoi(argv[3]), threads = atoi(argv[5]), reps = argc > 6 ? atoi(argv[6]) : 5;
    if (reps < 1 || reps > 1000) reps = 5;
    bc_error err;
    opt_hparams hp;
    opt_weights w;
    eng_lora lo;
    unsigned targets;
    if (opt_hparams_preset(argv[1], &hp, &err) != BC_OK ||
        eng_lora_targets_parse(&opt_family, argv[4], &targets, &err) != BC_OK ||
        opt_weights_alloc(&w, &hp, dt, &err) != BC_OK) {
        fprintf(stderr, "bench_lora: %s\n", err.message);
        return 1;
    }
    if (opt_weights_init_synthetic(&w, 1, &err) != BC_OK ||
        eng_lora_synthetic(&lo, &opt_family, &hp.s, rank, 2.0 * rank, targets, 1, &err) != BC_OK) {
        fprintf(stderr, "bench_lora: %s\n", err.message);
        return 1;
    }
    eng_pool *pool = threads > 1 ? eng_pool_create(threads) : NULL;
    double *t = malloc(sizeof *t * 4 * (size_t)reps);
    if (!t) return 1;
    for (int restore = 0; restore <= 1; restore++) {
        lo.restore = restore;
        for (int r = 0; r < reps; r++) {
            double a = now_ms();
            if (eng_lora_fuse(&lo, &w.base, pool, &err) != BC_OK) return 1;
            double b = now_ms();
            if (eng_lora_unfuse(&lo, &w.base, pool, &err) != BC_OK) return 1;
            t[(2 * restore) * reps + r] = b - a;
            t[(2 * restore + 1) * reps + r] = now_ms() - b;
        }
    }
    for (int k = 0; k < 4; k++) qsort(t + k * reps, (size_t)reps, sizeof *t, cmp_double);
    printf("%s %s rank %d targets %s threads %d: adapter %.1f MiB; subtract: fuse %.1f ms (median %.1f), unfuse %.1f "
           "ms (median %.1f); restore: fuse %.1f ms (median %.1f), unfuse %.1f ms (median %.1f)\n",
           argv[1], dts, rank, argv[4], threads, (double)eng_lora_bytes(&lo) / 1048576.0, t[0], t[reps / 2],
           t[reps], t[reps + reps / 2], t[2 * reps], t[2 * reps + reps / 2], t[3 * reps], t[3 * reps + reps / 2]);
    free(t);
    if (pool) eng_pool_destroy(pool);
    eng_lora_free(&lo);
    opt_weights_free(&w);
    return 0;
}
