/* lora.h: LoRA adapters for the engine, used as DeepSpeed's hybrid
 * engine uses an actor's adapter: fused into the weights before each
 * rollout and unfused after it.
 *
 * An adapter of rank r on a linear layer W [out, in] (the engine's [out, in]
 * row-major, as PyTorch) holds A [r, in] and B [out, r] (PEFT's
 * lora_A.weight and lora_B.weight) in fp32, and a scale s = alpha / r
 * (alpha / sqrt(r) with PEFT's use_rslora):
 *
 *   fuse:    W <- round(W + s * B A)
 *   unfuse:  W <- round(W - s * B A)
 *
 * with s * B A computed in fp32, row by row, the same way both times, added
 * to W in fp32 and rounded to W's dtype. Unfusing by subtraction, as the
 * hybrid engine does, gives W back only up to rounding: bit for bit where
 * the addition was exact, else within an ulp or so (docs/opt.md, "LoRA",
 * has the drift measured over 100 cycles). With restore set, fuse first
 * copies the targets' base weights aside and unfuse copies them back: bit
 * for bit in every dtype, for the memory of the targeted matrices.
 *
 * Targets are among the modules the family names (family.h: OPT's
 * q_proj, k_proj, v_proj, out_proj, fc1, fc2; Llama's q_proj, k_proj,
 * v_proj, o_proj, gate_proj, up_proj, down_proj) in every layer; the family
 * also gives each module's [out, in] and PEFT's tensor names.
 *
 * Unfused (lora_mode = "unfused"), the weights stay the base ones and the
 * forward adds s * B (A x) to each targeted layer's output
 * (eng_lora_forward_add), as PEFT's unmerged model does.
 */
#ifndef ENG_LORA_H
#define ENG_LORA_H

#include "forward.h"
#include "family.h"

/* Module m of family f's layers (m < f->lora_n_modules), "?" past them. */
const char *eng_lora_module_name(const eng_family *f, int m);

/* One adapted layer: A [rank, in], B [out, rank], fp32, in the adapter's
 * arena; A == NULL where the module is not a target. */
typedef struct eng_lora_pair {
    float *A, *B;
    int in, out;
} eng_lora_pair;

typedef struct eng_lora {
    const eng_family *family; /* whose modules (borrowed) */
    int rank, n_layers;
    float scale;       /* s */
    unsigned targets;  /* bit (1 << m) per targeted module m of the family */
    eng_lora_pair *pairs; /* [n_layers * ENG_LORA_MAX_MODULES], layer l's module m at l * MAX + m; owned */
    float *arena;      /* every A and B; owned */
    size_t n_floats;
    double fuse_ms, unfuse_ms; /* of the last eng_lora_generate */
    float *scratch;    /* [scratch_floats] two rows per thread for apply; owned */
    size_t scratch_floats;
    int restore;       /* 1: unfuse copies the base weights back (set before the first fuse) */
    void *backup;      /* [backup_bytes] the targets' base weights while fused (restore); owned */
    size_t backup_bytes;
    eng_pool *pool;    /* the threads eng_lora_around fuses and unfuses with (NULL: one); owned */
    float *ax;         /* [rank] s A x of one row, for eng_lora_forward_add; owned */
} eng_lora;

/* "q_proj,v_proj" (or "all") -> bits of f's modules; BC_ERR_SETTING naming
 * an unknown one and listing f's. */
bc_status eng_lora_targets_parse(const eng_family *f, const char *list, unsigned *targets, bc_error *err);

/* A seeded adapter of the given rank on hp's shape: A uniform in
 * +-1/sqrt(in) (PEFT's Kaiming-uniform bound), B uniform in +-0.02 (PEFT
 * starts B at zero, which would make fusing a no-op). */
bc_status eng_lora_synthetic(eng_lora *lo, const eng_family *f, const eng_shape *shape, int rank, double alpha,
                             unsigned targets, uint64_t seed, bc_error *err);

/* A PEFT adapter directory: adapter_config.json (r, lora_alpha,
 * target_modules as a list, use_rslora; refused: bias other than "none",
 * DoRA, fan_in_fan_out, rank or alpha patterns, layers_to_transform,
 * modules_to_save) and adapter_model.safetensors (F32, F16 or BF16; every
 * targeted layer's lora_A and lora_B with the shapes hp gives). Errors name
 * the file and the tensor or key. */
bc_status eng_lora_load_peft(eng_lora *lo, const eng_family *f, const char *dir, const eng_shape *shape,
                             bc_error *err);

void eng_lora_free(eng_lora *lo);

/* Bytes of the adapter's arena. */
size_t eng_lora_bytes(const eng_lora *lo);

/* W += s B A (sign +1) or W -= s B A (sign -1) on every target of w, its
 * rows spread over pool's threads (pool may be NULL: this thread); with
 * lo->restore, sign -1 copies back what the last fuse set aside. w must
 * have the shape lo was made for. The first fuse with a pool of n threads
 * allocates what it needs (two rows per thread, the backup), kept in lo, so
 * the unfuse after a fuse with the same pool cannot fail; BC_ERR_NOMEM
 * (nothing changed) otherwise. */
bc_status eng_lora_apply(eng_lora *lo, eng_weights *w, int sign, eng_pool *pool, bc_error *err);
static inline bc_status eng_lora_fuse(eng_lora *lo, eng_weights *w, eng_pool *pool, bc_error *err) {
    return eng_lora_apply(lo, w, 1, pool, err);
}
static inline bc_status eng_lora_unfuse(eng_lora *lo, eng_weights *w, eng_pool *pool, bc_error *err) {
    return eng_lora_apply(lo, w, -1, pool, err);
}

/* The threads eng_lora_around uses (a pool of its own, made now; 1: none). */
bc_status eng_lora_set_threads(eng_lora *lo, int threads, bc_error *err);

/* The hybrid engine's generate: fuse lo into w, run(ctx) (the generate stage
 * on a model whose weights are w), unfuse, also after a failed run. The two
 * times go to lo->fuse_ms and lo->unfuse_ms and, at debug level, to host's
 * log (host may be NULL). */
bc_status eng_lora_around(eng_lora *lo, eng_weights *w, bc_status (*run)(void *ctx, bc_error *err), void *ctx,
                          const bc_host *host, bc_error *err);

/* lora_mode = "unfused": the adapter applied in the forward, the weights
 * left as they are (the CPU forward calls this after each targeted layer's
 * GEMM, before its activation). For module m of layer l, rows n < N:
 *   y[n, :out] += s * B (A x[n, :in])
 * in fp32, one row at a time on the calling thread (y and x rows ldy and ldx
 * floats apart). Nothing when m is not a target. Uses lo->ax, so one
 * forward at a time per adapter. */
void eng_lora_forward_add(eng_lora *lo, int l, int m, float *y, int ldy, const float *x, int ldx,
                          int N);

#endif
