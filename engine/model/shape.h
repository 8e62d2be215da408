/* engine/model/shape.h: the shape every model family's model has, as the engine sees it.
 * Dimension legend (used across engine/ and every family folder):
 *   V vocab_size   C hidden_size   L n_layers   H n_heads (query)   Hkv n_kv_heads
 *   D head_dim     F ffn_size      Tmax max_positions
 *   B rows generated at once (batch x samples)   T tokens in this forward   S tokens in the KV cache
 */
#ifndef ENG_SHAPE_H
#define ENG_SHAPE_H

typedef struct eng_shape {
    int vocab_size;    /* V */
    int hidden_size;   /* C */
    int n_layers;      /* L */
    int n_heads;       /* H: query heads */
    int n_kv_heads;    /* Hkv: key/value heads, H % Hkv == 0 (== H: multi-head attention) */
    int head_dim;      /* D (not always C / H) */
    int ffn_size;      /* F */
    int max_positions; /* Tmax */
    int pad_token_id, bos_token_id, eos_token_id;
    char name[64];     /* a preset's name, or the checkpoint directory */
} eng_shape;

/* The KV head query head h reads: h / (H / Hkv). */
static inline int eng_kv_head_of(const eng_shape *s, int h) { return h / (s->n_heads / s->n_kv_heads); }

#endif
