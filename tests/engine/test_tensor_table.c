/* test_tensor_table.c: the engine's weights from a family's tensor table
 * (engine/weights/tensor_table.c) on a toy family that names none of the
 * real ones: the arena's layout (table order, 64-byte boundaries, the
 * fields pointed, absent rows zeroed, a tied row sharing its tie, a
 * computed row filled by the family), the bytes and the parameter count,
 * synthetic weights (deterministic per seed, the rules' values), and LoRA's
 * matrices and shapes by tensor name. Loading a checkpoint over a table is
 * tested on the real families (tests/opt/test_checkpoint.c,
 * tests/llama/test_golden.c).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "family.h"

typedef struct toy_hp {
    eng_shape s;
    int bias, untied;
} toy_hp;

typedef struct toy_layer {
    eng_matrix q;   /* [Q, C] */
    float *q_bias;  /* [Q]; NULL without bias */
    eng_matrix o;   /* [C, Q] */
} toy_layer;

typedef struct toy_weights {
    eng_weights base;
    toy_hp hp;
    eng_matrix emb, head; /* [V, C] each; head == emb when tied */
    float *norm;          /* [C] */
    float *table;         /* [X0]: computed */
    toy_layer *layers;
} toy_weights;

enum { TOY_BIAS = 1, TOY_UNTIED = 2 };

static const eng_tensor toy_tensors[] = {
    {"emb.weight", ENG_TENSOR_MATRIX, ENG_DIM_V, ENG_DIM_C, 0, 0, 0, offsetof(toy_weights, emb), NULL, 0,
     ENG_FILL_NORMAL, 0.02f},
    {"head.weight", ENG_TENSOR_MATRIX, ENG_DIM_V, ENG_DIM_C, TOY_UNTIED, 0, ENG_TENSOR_TOP,
     offsetof(toy_weights, head), "emb.weight", 1, ENG_FILL_NORMAL, 0.02f},
    {"norm.weight", ENG_TENSOR_VECTOR, ENG_DIM_C, ENG_DIM_NONE, 0, 0, 0, offsetof(toy_weights, norm), NULL, 2,
     ENG_FILL_ONES, 0},
    {"table", ENG_TENSOR_VECTOR, ENG_DIM_X0, ENG_DIM_NONE, 0, 0, ENG_TENSOR_COMPUTED, offsetof(toy_weights, table),
     NULL, 0, ENG_FILL_ZEROS, 0},
    {"layers.%d.attn.q.weight", ENG_TENSOR_MATRIX, ENG_DIM_Q, ENG_DIM_C, 0, 0,
     ENG_TENSOR_LAYER | ENG_TENSOR_STD_PER_SQRT_C, offsetof(toy_layer, q), NULL, 0, ENG_FILL_NORMAL, 2.5f},
    {"layers.%d.attn.q.bias", ENG_TENSOR_VECTOR, ENG_DIM_Q, ENG_DIM_NONE, TOY_BIAS, 0, ENG_TENSOR_LAYER,
     offsetof(toy_layer, q_bias), NULL, 1, ENG_FILL_ZEROS, 0},
    {"layers.%d.attn.o.weight", ENG_TENSOR_MATRIX, ENG_DIM_C, ENG_DIM_Q, 0, 0, ENG_TENSOR_LAYER,
     offsetof(toy_layer, o), NULL, 2, ENG_FILL_NORMAL, 0.02f},
    {"layers.%d.attn.old_buffer", ENG_TENSOR_IGNORED, ENG_DIM_NONE, ENG_DIM_NONE, 0, 0, ENG_TENSOR_LAYER,
     ENG_TENSOR_NO_FIELD, NULL, 0, ENG_FILL_ZEROS, 0},
};

static void toy_extra(const void *hp, int64_t x[2]) {
    x[0] = 3 * (int64_t)((const toy_hp *)hp)->s.max_positions;
}
static unsigned toy_conditions(const void *hp) {
    const toy_hp *t = hp;
    return (t->bias ? TOY_BIAS : 0u) | (t->untied ? TOY_UNTIED : 0u);
}
static bc_status toy_check(const void *hp, bc_error *err) {
    const toy_hp *t = hp;
    return t->s.n_layers > 0 ? BC_OK : bc_error_set(err, BC_ERR_INVALID, "toy: no layers");
}
static eng_ws_needs toy_ws(const void *hp) { return (eng_ws_needs){((const toy_hp *)hp)->s.hidden_size, 1}; }
static bc_status toy_computed(eng_weights *w, bc_error *err) {
    (void)err;
    toy_weights *t = (toy_weights *)w;
    for (int i = 0; i < 3 * t->hp.s.max_positions; i++) t->table[i] = (float)i;
    return BC_OK;
}
static const char *const toy_lora_names[] = {"q", "o"};
static const char *const toy_lora_paths[] = {"attn.q", "attn.o"};

static const eng_family toy_family = {
    .name = "toy", .tensors = toy_tensors, .n_tensors = (int)(sizeof toy_tensors / sizeof toy_tensors[0]),
    .layers_offset = offsetof(toy_weights, layers), .extra_dims = toy_extra, .conditions = toy_conditions,
    .check = toy_check, .ws_needs = toy_ws, .computed = toy_computed,
    .lora_n_modules = 2, .lora_module_names = toy_lora_names, .lora_module_paths = toy_lora_paths,
    .hparams_size = sizeof(toy_hp), .weights_size = sizeof(toy_weights), .hparams_offset = offsetof(toy_weights, hp),
    .layer_size = sizeof(toy_layer),
};

/* V 40, C 24, H 3, D 4 (Q 12), L 3, Tmax 10 */
static toy_hp toy(int bias, int untied) {
    toy_hp t;
    memset(&t, 0, sizeof t);
    t.s = (eng_shape){.vocab_size = 40, .hidden_size = 24, .n_layers = 3, .n_heads = 3, .n_kv_heads = 3,
                      .head_dim = 4, .ffn_size = 8, .max_positions = 10, .name = "toy"};
    t.bias = bias;
    t.untied = untied;
    return t;
}

static size_t off_of(const toy_weights *w, const void *p) { return (size_t)((const char *)p - (const char *)w->base.arena); }

static void test_layout(void **state) {
    (void)state;
    bc_error err = {0};
    const toy_hp hp = toy(1, 1);
    toy_weights w;
    assert_int_equal(eng_weights_alloc(&w.base, &toy_family, &hp, ENG_F32, &err), BC_OK);
    assert_ptr_equal(w.base.family, &toy_family);
    assert_int_equal(w.base.shape.hidden_size, 24);
    assert_int_equal(w.base.arena_bytes, eng_weights_bytes(&toy_family, &hp, ENG_F32));
    /* table order, each on a 64-byte boundary, sized by the rows' dimensions */
    const void *order[3 + 3 + 9];
    size_t n = 0;
    order[n++] = w.emb.data, order[n++] = w.head.data, order[n++] = w.norm, order[n++] = w.table;
    for (int l = 0; l < 3; l++) order[n++] = w.layers[l].q.data, order[n++] = w.layers[l].q_bias, order[n++] = w.layers[l].o.data;
    assert_int_equal(off_of(&w, order[0]), 0);
    for (size_t i = 1; i < n; i++) {
        assert_true(off_of(&w, order[i]) > off_of(&w, order[i - 1]));
        assert_int_equal(off_of(&w, order[i]) % 64, 0);
    }
    assert_int_equal(off_of(&w, w.head.data), 40 * 24 * 4); /* 3840, a multiple of 64 */
    assert_int_equal(w.layers[1].q.rows, 12);
    assert_int_equal(w.layers[1].q.cols, 24);
    assert_int_equal(w.layers[2].o.rows, 24);
    assert_int_equal(w.layers[2].o.cols, 12);
    for (int i = 0; i < 30; i++) assert_true(w.table[i] == (float)i); /* computed */
    eng_weights_free(&w.base);
    eng_weights_free(&w.base); /* twice is safe */

    /* no bias, tied: the bias NULL, the head the embeddings */
    const toy_hp hp2 = toy(0, 0);
    assert_int_equal(eng_weights_alloc(&w.base, &toy_family, &hp2, ENG_BF16, &err), BC_OK);
    assert_null(w.layers[0].q_bias);
    assert_ptr_equal(w.head.data, w.emb.data);
    assert_int_equal(w.head.rows, 40);
    assert_int_equal(w.emb.dtype, ENG_BF16);
    assert_true(eng_weights_bytes(&toy_family, &hp2, ENG_BF16) < eng_weights_bytes(&toy_family, &hp, ENG_BF16));
    eng_weights_free(&w.base);

    toy_hp bad = toy(0, 0);
    bad.s.n_layers = 0;
    assert_int_equal(eng_weights_bytes(&toy_family, &bad, ENG_F32), 0);
    assert_int_equal(eng_weights_alloc(&w.base, &toy_family, &bad, ENG_F32, &err), BC_ERR_INVALID);
    eng_weights_free(&w.base);
}

static void test_n_parameters(void **state) {
    (void)state;
    const int64_t V = 40, C = 24, Q = 12, L = 3;
    const toy_hp a = toy(1, 1), b = toy(0, 0);
    assert_int_equal(eng_weights_n_parameters(&toy_family, &a), 2 * V * C + C + L * (Q * C + Q + C * Q));
    assert_int_equal(eng_weights_n_parameters(&toy_family, &b), V * C + C + L * (Q * C + C * Q));
}

static void test_synthetic(void **state) {
    (void)state;
    bc_error err = {0};
    const toy_hp hp = toy(1, 1);
    toy_weights a, b, c;
    assert_int_equal(eng_weights_synthetic(&a.base, &toy_family, &hp, ENG_F32, 7, &err), BC_OK);
    assert_int_equal(eng_weights_synthetic(&b.base, &toy_family, &hp, ENG_F32, 7, &err), BC_OK);
    assert_int_equal(eng_weights_synthetic(&c.base, &toy_family, &hp, ENG_F32, 8, &err), BC_OK);
    assert_memory_equal(a.base.arena, b.base.arena, a.base.arena_bytes);
    assert_memory_not_equal(a.emb.data, c.emb.data, 40 * 24 * sizeof(float));
    /* a row's values depend on its id, not on the rows around it */
    assert_memory_not_equal(a.layers[0].q.data, a.layers[1].q.data, 12 * 24 * sizeof(float));
    for (int i = 0; i < 24; i++) assert_true(a.norm[i] == 1.0f);
    for (int i = 0; i < 12; i++) assert_true(a.layers[2].q_bias[i] == 0.0f);
    /* q: N(0, (2.5 / sqrt(C))^2); o: N(0, 0.02^2) */
    double sq = 0, so = 0;
    const float *q = a.layers[0].q.data, *o = a.layers[0].o.data;
    for (int i = 0; i < 12 * 24; i++) sq += (double)q[i] * q[i], so += (double)o[i] * o[i];
    const double std_q = sqrt(sq / (12 * 24)), std_o = sqrt(so / (12 * 24)), want_q = 2.5 / sqrt(24.0);
    print_message("  q std %.4f (want %.4f), o std %.4f (want 0.02)\n", std_q, want_q, std_o);
    assert_true(fabs(std_q - want_q) < 0.15 * want_q);
    assert_true(fabs(std_o - 0.02) < 0.15 * 0.02);
    for (int i = 0; i < 30; i++) assert_true(a.table[i] == (float)i); /* computed, not filled */
    eng_weights_free(&a.base);
    eng_weights_free(&b.base);
    eng_weights_free(&c.base);
}

static void test_lora_by_name(void **state) {
    (void)state;
    bc_error err = {0};
    const toy_hp hp = toy(1, 0);
    toy_weights w;
    assert_int_equal(eng_weights_alloc(&w.base, &toy_family, &hp, ENG_F32, &err), BC_OK);
    assert_ptr_equal(eng_weights_lora_matrix(&w.base, 1, 0), &w.layers[1].q);
    assert_ptr_equal(eng_weights_lora_matrix(&w.base, 2, 1), &w.layers[2].o);
    assert_null(eng_weights_lora_matrix(&w.base, 3, 0)); /* past the layers */
    assert_null(eng_weights_lora_matrix(&w.base, 0, 2)); /* past the modules */
    int out = 0, in = 0;
    assert_int_equal(eng_weights_lora_shape(&toy_family, &w.base.shape, 1, &out, &in, &err), BC_OK);
    assert_int_equal(out, 24);
    assert_int_equal(in, 12);
    assert_int_equal(eng_weights_lora_shape(&toy_family, &w.base.shape, 5, &out, &in, &err), BC_ERR_INTERNAL);
    eng_weights_free(&w.base);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout),
        cmocka_unit_test(test_n_parameters),
        cmocka_unit_test(test_synthetic),
        cmocka_unit_test(test_lora_by_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
