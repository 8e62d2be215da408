/* tensor_table.h: a family's weights as a named tensor table, and what the
 * engine does from it (tensor_table.c): the arena's layout, seeded synthetic
 * weights, checkpoint loading over engine/ckpt, the parameter count and
 * LoRA's matrices by tensor name. A family declares one row per tensor (its
 * checkpoint name, matrix or vector, its shape in the family's dimensions,
 * when it is there, where it lands in the family's weights struct) and
 * writes no layout, loader or initialiser of its own (docs/engine.md, "How a
 * family is added").
 *
 * Names are the checkpoint's, under the family's prefix (family.h:
 * ckpt_prefixes, "model." for Llama), with "%d" for the layer index:
 * "layers.%d.self_attn.q_proj.weight". The arena holds the tensors in table
 * order, each on a 64-byte boundary: model rows first, then every layer's
 * rows for layer 0, 1, ... (so tensors listed back to back, q/k/v say, lie
 * back to back and one GEMM can run over them).
 */
#ifndef ENG_TENSOR_TABLE_H
#define ENG_TENSOR_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "synthetic.h"
#include "weights.h"

/* A dimension of a tensor, from the shape (shape.h) or one of the family's
 * own (family.h: extra_dims). ENG_DIM_NONE: a vector's columns. */
typedef enum eng_dim {
    ENG_DIM_NONE = 0,
    ENG_DIM_V,    /* vocab_size */
    ENG_DIM_C,    /* hidden_size */
    ENG_DIM_F,    /* ffn_size */
    ENG_DIM_Q,    /* n_heads * head_dim */
    ENG_DIM_K,    /* n_kv_heads * head_dim */
    ENG_DIM_TMAX, /* max_positions */
    ENG_DIM_X0,   /* the family's extra dimensions (OPT: P, Tmax + 2; Llama: RoPE's table) */
    ENG_DIM_X1,
    ENG_DIM_COUNT
} eng_dim;

typedef enum eng_tensor_kind {
    ENG_TENSOR_MATRIX,  /* an eng_matrix [rows, cols] in the run's dtype */
    ENG_TENSOR_VECTOR,  /* a float * [rows] in fp32 */
    ENG_TENSOR_IGNORED, /* a checkpoint tensor taken when it is there and used for nothing */
} eng_tensor_kind;

/* Flags of a row. */
enum {
    ENG_TENSOR_LAYER = 1,    /* one per layer: offset is into the family's layer struct, "%d" in the name */
    ENG_TENSOR_TOP = 2,      /* the name is not under the family's prefix ("lm_head.weight") */
    ENG_TENSOR_COMPUTED = 4, /* in the arena, in no checkpoint: the family's computed hook fills it */
    ENG_TENSOR_TIE_CHECKED = 8, /* tied: a checkpoint's copy must equal the tensor it is tied to
                                   (without: a copy is ignored, as transformers ties it anyway) */
    ENG_TENSOR_STD_PER_SQRT_C = 16, /* synthetic: std / sqrt(C) instead of std */
};

/* offset of a tensor that lands nowhere (a head tied to the embeddings
 * that the forward reads as the embeddings). */
#define ENG_TENSOR_NO_FIELD ((size_t)-1)

typedef struct eng_tensor {
    const char *name;     /* the checkpoint's name (see above); a computed tensor's is only its label */
    eng_tensor_kind kind;
    eng_dim rows, cols;   /* matrix [rows, cols]; vector [rows], cols ENG_DIM_NONE */
    /* Present when every bit of `when` and no bit of `unless` is among the
     * family's conditions for the shape (family.h: conditions); absent, the
     * field is zeroed (a NULL vector, a matrix of 0 rows). */
    unsigned when, unless;
    int flags;
    size_t offset;        /* eng_matrix or float * in the weights struct (the layer struct with ENG_TENSOR_LAYER) */
    /* Tied: the name of the row this tensor is unless `when` holds (when 0:
     * always tied); the field, if any, gets that row's matrix. NULL: untied. */
    const char *tie;
    /* Synthetic weights: element i is a pure function of (seed, id, i),
     * with id this number (+ 16 + 16 l for a layer's row); the rule and its
     * standard deviation. */
    int id;
    eng_fill_kind fill;
    float std;
} eng_tensor;

struct eng_family;

/* A family's weights header for hp in dtype, no arena: the family's struct
 * (family->weights_size bytes at w) zeroed, hp copied into it, the header
 * filled (a device's plan reads this before the weights exist). */
void eng_weights_describe(eng_weights *w, const struct eng_family *f, const void *hp, eng_dtype dtype);
/* Bytes of the arena for hp in dtype; 0 when the family's check refuses
 * the shape (no size that could wrap is computed). */
size_t eng_weights_bytes(const struct eng_family *f, const void *hp, eng_dtype dtype);
/* The parameter count as transformers counts it: every present row that is
 * neither computed, ignored nor tied. */
int64_t eng_weights_n_parameters(const struct eng_family *f, const void *hp);
/* The arena for hp in dtype and every tensor pointed into it; the computed
 * tensors filled, the others uninitialised. Freed by eng_weights_free (also
 * after a failure). */
bc_status eng_weights_alloc(eng_weights *w, const struct eng_family *f, const void *hp, eng_dtype dtype,
                            bc_error *err);
/* Seeded synthetic weights into allocated w (the table's rules, then the
 * family's synthetic_done). */
bc_status eng_weights_fill_synthetic(eng_weights *w, uint64_t seed, bc_error *err);
/* eng_weights_alloc, then eng_weights_fill_synthetic. */
bc_status eng_weights_synthetic(eng_weights *w, const struct eng_family *f, const void *hp, eng_dtype dtype,
                                uint64_t seed, bc_error *err);
/* dir's config.json (the family's config hook) and its tensors by the
 * table's names, converted to dtype; a missing, misshapen or non-finite
 * tensor, or one the table does not name, refused naming the file and the
 * tensor. */
bc_status eng_weights_load(eng_weights *w, const struct eng_family *f, const char *dir, eng_dtype dtype,
                           bc_error *err);
/* Refit: the tensors of set (a directory's or host memory's, ckpt_host.h)
 * into w's arena, as eng_weights_load puts a checkpoint's there (the same
 * walk over the table, checks and conversion to w's dtype: int8
 * quantisation, bf16 rounding); w keeps its shape and computed tensors. A
 * tensor of another shape or dtype, or one the table does not name, is
 * refused naming the set and the tensor (w then holds a mix: refit again). */
struct eng_ck_set;
bc_status eng_weights_refit(eng_weights *w, const struct eng_ck_set *set, bc_error *err);
/* dir's files opened through the checkpoint readers (ckpt_set.h), then
 * eng_weights_refit; *source_bytes (may be NULL): the tensors' bytes read. */
bc_status eng_weights_refit_dir(eng_weights *w, const char *dir, uint64_t *source_bytes, bc_error *err);
/* The bytes a load or refit writes into w's arena (every stored tensor). */
uint64_t eng_weights_loaded_bytes(const eng_weights *w);
/* 1 when a and b hold the same bytes in every tensor (the arena's
 * alignment padding aside). */
int eng_weights_same(const eng_weights *a, const eng_weights *b);
/* float32 weights w as a checkpoint holds them, into a host set (ckpt_host.h):
 * one F32 tensor per stored row under the family's first prefix. */
bc_status eng_weights_export(const eng_weights *w, struct eng_ck_set *out, const char *source, bc_error *err);
/* Everything eng_weights_load checks, nothing allocated or converted. */
bc_status eng_weights_validate(const struct eng_family *f, const char *dir, bc_error *err);
/* Frees what eng_weights_alloc made (nothing made: nothing); twice is safe. */
void eng_weights_free(eng_weights *w);

/* LoRA by tensor name: module m of the family (family.h: lora_module_paths)
 * is the layer matrix "<...>%d.<path>.weight" of the table. Its matrix in
 * layer l of w (NULL: no such row), and its [out, in] on shape s
 * (BC_ERR_INTERNAL when the table has no such row or its shape needs the
 * family's own dimensions). */
eng_matrix *eng_weights_lora_matrix(eng_weights *w, int l, int m);
bc_status eng_weights_lora_shape(const struct eng_family *f, const eng_shape *s, int m, int *out, int *in,
                                 bc_error *err);

#endif
