/* test_checkpoint.c: the Hugging Face checkpoint loader (plugins/opt/checkpoint.c).
 *
 * Loads the committed golden checkpoints (tests/opt/golden/, written by
 * tools/golden/make_golden.py): F32 with "model.decoder.*" names, single and
 * sharded; F16 post-LN with "decoder.*" names and project_in/out; BF16 with
 * head_dim 80. Then rewrites a good checkpoint into a temp directory with one
 * thing broken per test (a missing, reshaped or retyped tensor, a truncated
 * file, a bad config.json, an untied lm_head) and checks the error names the
 * file and the tensor.
 */
#define _POSIX_C_SOURCE 200809L

#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "checkpoint.h"
#include "forward.h"
#include "opt_model.h"
#include "ckpt_set.h"
#include "ckpt_writer.h"

#define GOLDEN BENCHCTL_SOURCE_DIR "/tests/opt/golden/"

/* ------------------------------------------------------------- helpers */

typedef struct fixture {
    char dir[64];
} fixture;

static int setup(void **state) {
    fixture *fx = calloc(1, sizeof *fx);
    if (!fx || make_temp_dir(fx->dir, sizeof fx->dir, "bc_ck") != 0) {
        free(fx);
        return -1;
    }
    *state = fx;
    return 0;
}

static int teardown(void **state) {
    fixture *fx = *state;
    remove_flat_dir(fx->dir);
    free(fx);
    return 0;
}

/* One tensor of a checkpoint being rewritten. data is owned (malloc). */
typedef struct out_tensor {
    char name[128];
    char dtype[8];
    int ndim;
    int64_t shape[4];
    unsigned char *data;
    size_t nbytes;
} out_tensor;

typedef struct out_ckpt {
    out_tensor t[128];
    int n;
    json_t *config;
} out_ckpt;

static void ckpt_read(out_ckpt *o, const char *src_dir) {
    memset(o, 0, sizeof *o);
    eng_ck_set s;
    bc_error err = {0};
    assert_int_equal(eng_ck_set_open_dir(&s, src_dir, &err), BC_OK);
    assert_true(s.n_tensors <= 128);
    for (size_t i = 0; i < s.n_tensors; i++) {
        const eng_ck_tensor *t = s.by_name[i];
        out_tensor *d = &o->t[o->n++];
        snprintf(d->name, sizeof d->name, "%s", t->name);
        snprintf(d->dtype, sizeof d->dtype, "%s", eng_ck_dtype_name(t->dtype));
        d->ndim = t->ndim;
        memcpy(d->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
        d->nbytes = t->nbytes;
        d->data = malloc(t->nbytes ? t->nbytes : 1);
        assert_non_null(d->data);
        memcpy(d->data, t->data, t->nbytes);
    }
    eng_ck_set_close(&s);
    char p[512];
    snprintf(p, sizeof p, "%s/config.json", src_dir);
    o->config = json_load_file(p, 0, NULL);
    assert_non_null(o->config);
}

static out_tensor *ckpt_get(out_ckpt *o, const char *name) {
    for (int i = 0; i < o->n; i++)
        if (strcmp(o->t[i].name, name) == 0) return &o->t[i];
    fail_msg("no tensor %s", name);
    return NULL;
}

static void ckpt_drop(out_ckpt *o, const char *name) {
    out_tensor *t = ckpt_get(o, name);
    free(t->data);
    *t = o->t[--o->n];
}

/* Writes dir/model.safetensors and dir/config.json, then frees o. */
static void ckpt_write(out_ckpt *o, const char *dir) {
    json_t *h = json_object();
    uint64_t at = 0;
    for (int i = 0; i < o->n; i++) {
        out_tensor *t = &o->t[i];
        json_t *shape = json_array();
        for (int d = 0; d < t->ndim; d++) json_array_append_new(shape, json_integer(t->shape[d]));
        json_object_set_new(h, t->name,
                            json_pack("{s:s, s:o, s:[I, I]}", "dtype", t->dtype, "shape", shape, "data_offsets",
                                      (json_int_t)at, (json_int_t)(at + t->nbytes)));
        at += t->nbytes;
    }
    char *hs = json_dumps(h, JSON_COMPACT);
    assert_non_null(hs);
    char p[512];
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    uint64_t n = strlen(hs);
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)(n >> (8 * i));
    fwrite(len8, 1, 8, f);
    fwrite(hs, 1, n, f);
    for (int i = 0; i < o->n; i++) fwrite(o->t[i].data, 1, o->t[i].nbytes, f);
    fclose(f);
    free(hs);
    json_decref(h);
    snprintf(p, sizeof p, "%s/config.json", dir);
    assert_int_equal(json_dump_file(o->config, p, JSON_INDENT(2)), 0);
    for (int i = 0; i < o->n; i++) free(o->t[i].data);
    json_decref(o->config);
    memset(o, 0, sizeof *o);
}

/* Loads dir expecting code; the message must hold s1 and s2 (when given). */
static void expect_load_fail(const char *dir, eng_dtype dt, bc_status code, const char *s1, const char *s2) {
    opt_weights w;
    bc_error err = {0};
    bc_status st = opt_weights_load_checkpoint(&w, dir, dt, &err);
    print_message("    -> %s\n", err.message);
    assert_int_equal(st, code);
    if (s1 && !strstr(err.message, s1)) fail_msg("message lacks '%s'", s1);
    if (s2 && !strstr(err.message, s2)) fail_msg("message lacks '%s'", s2);
    assert_null(w.base.arena);
    opt_weights_free(&w); /* safe after a failure */
}

static float elem_f32(const eng_matrix *m, size_t i) {
    if (m->dtype == ENG_F32) return ((const float *)m->data)[i];
    uint16_t h = ((const uint16_t *)m->data)[i];
    return m->dtype == ENG_F16 ? prec_f16_to_f32(h) : prec_bf16_to_f32(h);
}

static void assert_matrix_equal(const eng_matrix *a, const eng_matrix *b) {
    assert_int_equal(a->rows, b->rows);
    assert_int_equal(a->cols, b->cols);
    assert_int_equal(a->dtype, b->dtype);
    if (a->rows) assert_memory_equal(a->data, b->data, (size_t)a->rows * (size_t)a->cols * eng_dtype_size(a->dtype));
}

static void assert_vec_equal(const float *a, const float *b, int n) {
    if (!a || !b) {
        assert_ptr_equal(a, b);
        return;
    }
    assert_memory_equal(a, b, sizeof(float) * (size_t)n);
}

/* Every tensor of a equals b's, bit for bit. */
static void assert_weights_equal(const opt_weights *a, const opt_weights *b) {
    int C = a->hp.s.hidden_size, F = a->hp.s.ffn_size;
    assert_int_equal(a->hp.s.n_layers, b->hp.s.n_layers);
    assert_matrix_equal(&a->embed_tokens, &b->embed_tokens);
    assert_matrix_equal(&a->embed_positions, &b->embed_positions);
    assert_matrix_equal(&a->project_in, &b->project_in);
    assert_matrix_equal(&a->project_out, &b->project_out);
    assert_vec_equal(a->final_ln_gamma, b->final_ln_gamma, C);
    assert_vec_equal(a->final_ln_beta, b->final_ln_beta, C);
    for (int l = 0; l < a->hp.s.n_layers; l++) {
        const opt_layer_weights *x = &a->layers[l], *y = &b->layers[l];
        assert_matrix_equal(&x->q_proj, &y->q_proj);
        assert_matrix_equal(&x->k_proj, &y->k_proj);
        assert_matrix_equal(&x->v_proj, &y->v_proj);
        assert_matrix_equal(&x->out_proj, &y->out_proj);
        assert_matrix_equal(&x->fc1, &y->fc1);
        assert_matrix_equal(&x->fc2, &y->fc2);
        assert_vec_equal(x->q_bias, y->q_bias, C);
        assert_vec_equal(x->k_bias, y->k_bias, C);
        assert_vec_equal(x->v_bias, y->v_bias, C);
        assert_vec_equal(x->out_bias, y->out_bias, C);
        assert_vec_equal(x->fc1_bias, y->fc1_bias, F);
        assert_vec_equal(x->fc2_bias, y->fc2_bias, C);
        assert_vec_equal(x->ln1_gamma, y->ln1_gamma, C);
        assert_vec_equal(x->ln1_beta, y->ln1_beta, C);
        assert_vec_equal(x->ln2_gamma, y->ln2_gamma, C);
        assert_vec_equal(x->ln2_beta, y->ln2_beta, C);
    }
}

/* Raw element i of a file tensor, as fp32. */
static float raw_f32(const out_tensor *t, size_t i) {
    if (strcmp(t->dtype, "F32") == 0) {
        float f;
        memcpy(&f, t->data + 4 * i, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, t->data + 2 * i, 2);
    return strcmp(t->dtype, "F16") == 0 ? prec_f16_to_f32(h) : prec_bf16_to_f32(h);
}

/* ------------------------------------------------------------- good loads */

static void test_preln_f32(void **state) {
    (void)state;
    opt_weights w;
    bc_error err = {0};
    assert_int_equal(opt_weights_load_checkpoint(&w, GOLDEN "preln", ENG_F32, &err), BC_OK);
    const opt_hparams *hp = &w.hp;
    assert_int_equal(hp->s.vocab_size, 1000);
    assert_int_equal(hp->s.hidden_size, 64);
    assert_int_equal(hp->s.n_layers, 2);
    assert_int_equal(hp->s.n_heads, 4);
    assert_int_equal(hp->s.ffn_size, 128);
    assert_int_equal(hp->s.max_positions, 64);
    assert_int_equal(hp->word_embed_proj_dim, 64);
    assert_int_equal(hp->do_layer_norm_before, 1);
    assert_int_equal(hp->s.pad_token_id, 1);
    assert_int_equal(hp->s.bos_token_id, 2);
    assert_int_equal(hp->s.eos_token_id, 2);
    assert_string_equal(hp->s.name, "preln");
    assert_non_null(w.final_ln_gamma);
    assert_int_equal(w.project_in.rows, 0);
    assert_int_equal(w.embed_positions.rows, 66);

    out_ckpt o;
    ckpt_read(&o, GOLDEN "preln");
    const out_tensor *e = ckpt_get(&o, "model.decoder.embed_tokens.weight");
    assert_memory_equal(w.embed_tokens.data, e->data, e->nbytes);
    const out_tensor *b = ckpt_get(&o, "model.decoder.layers.1.fc1.bias");
    assert_memory_equal(w.layers[1].fc1_bias, b->data, b->nbytes);
    const out_tensor *g = ckpt_get(&o, "model.decoder.layers.0.self_attn_layer_norm.weight");
    assert_memory_equal(w.layers[0].ln1_gamma, g->data, g->nbytes);
    const out_tensor *q = ckpt_get(&o, "model.decoder.layers.1.self_attn.q_proj.weight");
    assert_memory_equal(w.layers[1].q_proj.data, q->data, q->nbytes);
    json_decref(o.config);
    for (int i = 0; i < o.n; i++) free(o.t[i].data);
    opt_weights_free(&w);
    opt_weights_free(&w); /* twice is safe */
}

static void test_sharded_equals_single(void **state) {
    (void)state;
    opt_weights a, b;
    bc_error err = {0};
    assert_int_equal(opt_weights_load_checkpoint(&a, GOLDEN "preln", ENG_F32, &err), BC_OK);
    assert_int_equal(opt_weights_load_checkpoint(&b, GOLDEN "preln_sharded", ENG_F32, &err), BC_OK);
    assert_weights_equal(&a, &b);
    opt_weights_free(&a);
    opt_weights_free(&b);
}

/* decoder.* names, F16 storage, post-LN with project_in/out. */
static void test_postln_f16_decoder_prefix(void **state) {
    (void)state;
    opt_weights w, w16;
    bc_error err = {0};
    assert_int_equal(opt_weights_load_checkpoint(&w, GOLDEN "postln_proj", ENG_F32, &err), BC_OK);
    assert_int_equal(w.hp.do_layer_norm_before, 0);
    assert_int_equal(w.hp.word_embed_proj_dim, 32);
    assert_null(w.final_ln_gamma);
    assert_int_equal(w.project_in.rows, 64);
    assert_int_equal(w.project_in.cols, 32);
    assert_int_equal(w.project_out.rows, 32);
    assert_int_equal(w.project_out.cols, 64);
    assert_int_equal(w.embed_tokens.cols, 32);
    out_ckpt o;
    ckpt_read(&o, GOLDEN "postln_proj");
    const out_tensor *pi = ckpt_get(&o, "decoder.project_in.weight");
    assert_string_equal(pi->dtype, "F16");
    for (size_t i = 0; i < 64 * 32; i++) assert_true(elem_f32(&w.project_in, i) == raw_f32(pi, i));
    const out_tensor *bias = ckpt_get(&o, "decoder.layers.0.self_attn.v_proj.bias");
    for (size_t i = 0; i < 64; i++) assert_true(w.layers[0].v_bias[i] == raw_f32(bias, i));
    /* Loaded as F16: the matrices are the file's bytes. */
    assert_int_equal(opt_weights_load_checkpoint(&w16, GOLDEN "postln_proj", ENG_F16, &err), BC_OK);
    assert_int_equal(w16.project_in.dtype, ENG_F16);
    assert_memory_equal(w16.project_in.data, pi->data, pi->nbytes);
    json_decref(o.config);
    for (int i = 0; i < o.n; i++) free(o.t[i].data);
    opt_weights_free(&w);
    opt_weights_free(&w16);
}

static void test_hd80_bf16(void **state) {
    (void)state;
    opt_weights w, wb;
    bc_error err = {0};
    assert_int_equal(opt_weights_load_checkpoint(&w, GOLDEN "hd80", ENG_F32, &err), BC_OK);
    assert_int_equal(w.hp.s.hidden_size / w.hp.s.n_heads, 80);
    assert_int_equal(opt_weights_load_checkpoint(&wb, GOLDEN "hd80", ENG_BF16, &err), BC_OK);
    out_ckpt o;
    ckpt_read(&o, GOLDEN "hd80");
    const out_tensor *f2 = ckpt_get(&o, "model.decoder.layers.1.fc2.weight");
    assert_string_equal(f2->dtype, "BF16");
    assert_memory_equal(wb.layers[1].fc2.data, f2->data, f2->nbytes);
    for (size_t i = 0; i < f2->nbytes / 2; i++) assert_true(elem_f32(&w.layers[1].fc2, i) == raw_f32(f2, i));
    json_decref(o.config);
    for (int i = 0; i < o.n; i++) free(o.t[i].data);
    opt_weights_free(&w);
    opt_weights_free(&wb);
}

/* F32 file into F16 and BF16 weights: rounded by the scalar conversions. */
static void test_f32_to_half(void **state) {
    (void)state;
    opt_weights w16, wb;
    bc_error err = {0};
    assert_int_equal(opt_weights_load_checkpoint(&w16, GOLDEN "preln", ENG_F16, &err), BC_OK);
    assert_int_equal(opt_weights_load_checkpoint(&wb, GOLDEN "preln", ENG_BF16, &err), BC_OK);
    out_ckpt o;
    ckpt_read(&o, GOLDEN "preln");
    const out_tensor *k = ckpt_get(&o, "model.decoder.layers.0.self_attn.k_proj.weight");
    const out_tensor *kb = ckpt_get(&o, "model.decoder.layers.0.self_attn.k_proj.bias");
    for (size_t i = 0; i < 64 * 64; i++) {
        assert_int_equal(((uint16_t *)w16.layers[0].k_proj.data)[i], prec_f32_to_f16(raw_f32(k, i)));
        assert_int_equal(((uint16_t *)wb.layers[0].k_proj.data)[i], prec_f32_to_bf16(raw_f32(k, i)));
    }
    /* Biases stay fp32. */
    assert_memory_equal(w16.layers[0].k_bias, kb->data, kb->nbytes);
    json_decref(o.config);
    for (int i = 0; i < o.n; i++) free(o.t[i].data);
    opt_weights_free(&w16);
    opt_weights_free(&wb);
}

/* model.decoder.* renamed to decoder.*: same weights. */
static void test_both_prefixes(void **state) {
    fixture *fx = *state;
    out_ckpt o;
    ckpt_read(&o, GOLDEN "preln");
    for (int i = 0; i < o.n; i++) {
        char n[128];
        assert_int_equal(strncmp(o.t[i].name, "model.", 6), 0);
        snprintf(n, sizeof n, "%s", o.t[i].name + 6);
        snprintf(o.t[i].name, sizeof o.t[i].name, "%s", n);
    }
    ckpt_write(&o, fx->dir);
    opt_weights a, b;
    bc_error err = {0};
    assert_int_equal(opt_weights_load_checkpoint(&a, GOLDEN "preln", ENG_F32, &err), BC_OK);
    assert_int_equal(opt_weights_load_checkpoint(&b, fx->dir, ENG_F32, &err), BC_OK);
    assert_weights_equal(&a, &b);
    opt_weights_free(&a);
    opt_weights_free(&b);
}

/* lm_head.weight present and equal to embed_tokens loads; a different one
 * is refused. */
static void test_lm_head(void **state) {
    fixture *fx = *state;
    out_ckpt o;
    ckpt_read(&o, GOLDEN "preln");
    out_tensor *e = ckpt_get(&o, "model.decoder.embed_tokens.weight");
    out_tensor *h = &o.t[o.n++];
    *h = *e;
    snprintf(h->name, sizeof h->name, "lm_head.weight");
    h->data = malloc(e->nbytes);
    assert_non_null(h->data);
    memcpy(h->data, e->data, e->nbytes);
    ckpt_write(&o, fx->dir);
    opt_weights w;
    bc_error err = {0};
    assert_int_equal(opt_weights_load_checkpoint(&w, fx->dir, ENG_F32, &err), BC_OK);
    opt_weights_free(&w);

    ckpt_read(&o, fx->dir);
    h = ckpt_get(&o, "lm_head.weight");
    h->data[100] ^= 0x40;
    ckpt_write(&o, fx->dir);
    expect_load_fail(fx->dir, ENG_F32, BC_ERR_UNSUPPORTED, "lm_head.weight", "model.safetensors");
}

/* ------------------------------------------------------------- bad ones */

static void test_missing_tensor(void **state) {
    fixture *fx = *state;
    out_ckpt o;
    ckpt_read(&o, GOLDEN "preln");
    ckpt_drop(&o, "model.decoder.layers.1.fc2.bias");
    ckpt_write(&o, fx->dir);
    expect_load_fail(fx->dir, ENG_F32, BC_ERR_FORMAT, "'model.decoder.layers.1.fc2.bias' is missing",
                     "model.safetensors");
    ckpt_read(&o, GOLDEN "preln");
    ckpt_drop(&o, "model.decoder.embed_tokens.weight");
    ckpt_write(&o, fx->dir);
    expect_load_fail(fx->dir, ENG_F32, BC_ERR_FORMAT, "embed_tokens.weight", "missing");
    /* Pre-LN needs its final layer norm. */
    ckpt_read(&o, GOLDEN "preln");
    ckpt_drop(&o, "model.decoder.final_layer_norm.bias");
    ckpt_write(&o, fx->dir);
    expect_load_fail(fx->dir, ENG_F32, BC_ERR_FORMAT, "'model.decoder.final_layer_norm.bias' is missing", NULL);
    /* Post-LN with P != C needs project_in. */
    ckpt_read(&o, GOLDEN "postln_proj");
    ckpt_drop(&o, "decoder.project_in.weight");
    ckpt_write(&o, fx->dir);
    expect_load_fail(fx->dir, ENG_F32, BC_ERR_FORMAT, "'decoder.project_in.weight' is missing", NULL);
}

static void test_sharded_source(void **state) {
    (void)state;
    /* The sharded golden set is read through its index, from three files. */
    eng_ck_set s;
    bc_error err = {0};
    assert_int_equal(eng_ck_set_open_dir(&s, GOLDEN "preln_sharded", &err), BC_OK);
    assert_non_null(strstr(s.source, "model.safetensors.index.json"));
    assert_int_equal(s.n_files, 3);
    eng_ck_set_close(&s);
}

static void test_wrong_shape(void **state) {
    fixture *fx = *state;
    out_ckpt o;
    ckpt_read(&o, GOLDEN "preln");
    out_tensor *t = ckpt_get(&o, "model.decoder.layers.0.fc1.weight");
    t->shape[0] = 64;
    t->shape[1] = 128; /* [C, F] instead of [F, C] */
    ckpt_write(&o, fx->dir);
    expect_load_fail(fx->dir, ENG_F32, BC_ERR_FORMAT, "'model.decoder.layers.0.fc1.weight' has shape [64, 128]",
                     "[128, 64]");
    ckpt_read(&o, GOLDEN "preln");
    t = ckpt_get(&o, "model.decoder.layers.0.fc1.bias");
    t->ndim = 2;
    t->shape[0] = 1;
    t->shape[1] = 128;
    ckpt_write(&o, fx->dir);
    expect_load_fail(fx->dir, ENG_F32, BC_ERR_FORMAT, "'model.decoder.layers.0.fc1.bias' has shape [1, 128]", NULL);
}

static void test_wrong_dtype(void **state) {
    fixture *fx = *state;
    out_ckpt o;
    ckpt_read(&o, GOLDEN "preln");
    out_tensor *t = ckpt_get(&o, "model.decoder.layers.1.self_attn.out_proj.bias");
    snprintf(t->dtype, sizeof t->dtype, "I32");
    ckpt_write(&o, fx->dir);
    expect_load_fail(fx->dir, ENG_F32, BC_ERR_FORMAT, "'model.decoder.layers.1.self_attn.out_proj.bias' has dtype I32",
                     "model.safetensors");
}

static void test_truncated(void **state) {
    fixture *fx = *state;
    out_ckpt o;
    ckpt_read(&o, GOLDEN "preln");
    ckpt_write(&o, fx->dir);
    char p[512];
    snprintf(p, sizeof p, "%s/model.safetensors", fx->dir);
    FILE *f = fopen(p, "rb+");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fclose(f);
    assert_int_equal(truncate(p, len - 100), 0);
    expect_load_fail(fx->dir, ENG_F32, BC_ERR_FORMAT, "truncated", "model.safetensors");
}

static void test_unexpected_tensor(void **state) {
    fixture *fx = *state;
    out_ckpt o;
    ckpt_read(&o, GOLDEN "preln");
    json_object_set_new(o.config, "num_hidden_layers", json_integer(1));
    ckpt_write(&o, fx->dir);
    expect_load_fail(fx->dir, ENG_F32, BC_ERR_FORMAT, "'model.decoder.layers.1.", "not part of");
    ckpt_read(&o, GOLDEN "preln");
    json_object_set_new(o.config, "num_hidden_layers", json_integer(3));
    ckpt_write(&o, fx->dir);
    expect_load_fail(fx->dir, ENG_F32, BC_ERR_FORMAT, "'model.decoder.layers.2.", "missing");
}

static void test_bad_config(void **state) {
    fixture *fx = *state;
    char p[512];
    out_ckpt o;
    ckpt_read(&o, GOLDEN "preln");
    json_object_set_new(o.config, "activation_function", json_string("gelu"));
    ckpt_write(&o, fx->dir);
    expect_load_fail(fx->dir, ENG_F32, BC_ERR_UNSUPPORTED, "activation_function", "gelu");

    ckpt_read(&o, GOLDEN "preln");
    json_object_del(o.config, "hidden_size");
    ckpt_write(&o, fx->dir);
    expect_load_fail(fx->dir, ENG_F32, BC_ERR_FORMAT, "config.json", "\"hidden_size\" is missing");

    ckpt_read(&o, GOLDEN "preln");
    json_object_set_new(o.config, "num_attention_heads", json_integer(5));
    ckpt_write(&o, fx->dir);
    expect_load_fail(fx->dir, ENG_F32, BC_ERR_FORMAT, "config.json", "multiple");

    ckpt_read(&o, GOLDEN "preln");
    json_object_set_new(o.config, "vocab_size", json_integer(-3));
    ckpt_write(&o, fx->dir);
    expect_load_fail(fx->dir, ENG_F32, BC_ERR_FORMAT, "config.json", "vocab_size");

    ckpt_read(&o, GOLDEN "preln");
    json_object_set_new(o.config, "model_type", json_string("gpt2"));
    ckpt_write(&o, fx->dir);
    expect_load_fail(fx->dir, ENG_F32, BC_ERR_UNSUPPORTED, "config.json", "gpt2");

    snprintf(p, sizeof p, "%s/config.json", fx->dir);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs("{\"hidden_size\": 64,", f);
    fclose(f);
    expect_load_fail(fx->dir, ENG_F32, BC_ERR_FORMAT, "config.json", "not valid JSON");

    unlink(p);
    expect_load_fail(fx->dir, ENG_F32, BC_ERR_NOT_FOUND, "config.json", NULL);
    expect_load_fail("/nonexistent/checkpoint", ENG_F32, BC_ERR_NOT_FOUND, "/nonexistent/checkpoint/config.json",
                     NULL);
}

/* config.json shapes whose sizes would wrap, or exceed the engine's limits,
 * are refused from config.json alone (the weights file is never read: here
 * it is the golden one, far too small for the shape). */
static void test_impossible_shapes(void **state) {
    fixture *fx = *state;
    out_ckpt o;
    ckpt_read(&o, GOLDEN "preln");
    json_object_set_new(o.config, "hidden_size", json_integer(1048576));
    json_object_set_new(o.config, "word_embed_proj_dim", json_integer(1048576));
    json_object_set_new(o.config, "num_hidden_layers", json_integer(1047222));
    json_object_set_new(o.config, "vocab_size", json_integer(4));
    json_object_set_new(o.config, "max_position_embeddings", json_integer(1));
    json_object_set_new(o.config, "num_attention_heads", json_integer(1));
    json_object_set_new(o.config, "ffn_dim", json_integer(4));
    json_object_set_new(o.config, "pad_token_id", json_integer(1));
    json_object_set_new(o.config, "bos_token_id", json_integer(2));
    json_object_set_new(o.config, "eos_token_id", json_integer(2));
    ckpt_write(&o, fx->dir);
    opt_hparams hp;
    bc_error err = {0};
    assert_int_equal(opt_hparams_from_checkpoint(fx->dir, &hp, &err), BC_ERR_INFEASIBLE);
    assert_non_null(strstr(err.message, "config.json: the model is impossible: num_hidden_layers 1047222, "
                                        "hidden_size 1048576"));
    assert_non_null(strstr(err.message, "4.61e+18 parameters (16.0 EiB in float32)"));
    expect_load_fail(fx->dir, ENG_F32, BC_ERR_INFEASIBLE, "the model is impossible", NULL);
    assert_int_equal(opt_checkpoint_validate(fx->dir, &err), BC_ERR_INFEASIBLE);

    /* every dimension within config.json's bounds (2^20), the total under
     * 2^40, but one tensor over 2^31 - 1 elements */
    ckpt_read(&o, GOLDEN "preln");
    json_object_set_new(o.config, "vocab_size", json_integer(1048576));
    json_object_set_new(o.config, "word_embed_proj_dim", json_integer(4096));
    ckpt_write(&o, fx->dir);
    memset(&err, 0, sizeof err);
    assert_int_equal(opt_hparams_from_checkpoint(fx->dir, &hp, &err), BC_ERR_INFEASIBLE);
    assert_non_null(strstr(err.message, "vocab_size x word_embed_proj_dim (embed_tokens) is 4294967296 elements in "
                                        "one tensor; the engine takes at most 2147483647"));

    /* the same guard on a shape that never came from config.json */
    memset(&hp, 0, sizeof hp);
    hp.s.vocab_size = 4, hp.s.hidden_size = 65536, hp.s.n_layers = 1024, hp.s.n_heads = 1;
    hp.s.ffn_size = 4, hp.s.max_positions = 1, hp.word_embed_proj_dim = 65536, hp.do_layer_norm_before = 1;
    opt_weights w;
    assert_int_equal(opt_weights_alloc(&w, &hp, ENG_BF16, &err), BC_ERR_INFEASIBLE);
    assert_int_equal(opt_weights_bytes(&hp, ENG_BF16), 0);
    /* a KV cache whose size leaves 64 bits is SIZE_MAX, never a wrapped size */
    hp.s.n_layers = 1 << 20, hp.s.hidden_size = 1 << 20;
    assert_true(eng_kv_cache_bytes(&hp.s, ENG_F32, 1 << 30, 1 << 30) == SIZE_MAX);
}

/* NaN or Inf in a weight, or a value float16 cannot hold, is an error naming
 * the tensor and the element. */
static void test_nonfinite_weights(void **state) {
    fixture *fx = *state;
    out_ckpt o;
    ckpt_read(&o, GOLDEN "preln");
    out_tensor *t = ckpt_get(&o, "model.decoder.layers.1.fc1.weight"); /* F32 [128, 64] */
    const uint32_t nan_bits = 0x7fc00000u;
    memcpy(t->data + 4 * (size_t)(3 * 64 + 5), &nan_bits, 4);
    ckpt_write(&o, fx->dir);
    expect_load_fail(fx->dir, ENG_BF16, BC_ERR_FORMAT, "tensor 'model.decoder.layers.1.fc1.weight' element [3, 5] is nan in the file",
                     "the weights must be finite");

    ckpt_read(&o, GOLDEN "preln");
    t = ckpt_get(&o, "model.decoder.layers.0.self_attn_layer_norm.bias");
    const float inf = -INFINITY;
    memcpy(t->data + 4 * 7, &inf, 4);
    ckpt_write(&o, fx->dir);
    expect_load_fail(fx->dir, ENG_F32, BC_ERR_FORMAT, "'model.decoder.layers.0.self_attn_layer_norm.bias' element [7] is -inf", NULL);

    ckpt_read(&o, GOLDEN "preln");
    t = ckpt_get(&o, "model.decoder.embed_tokens.weight");
    const float big = 1e6f;
    memcpy(t->data, &big, 4);
    ckpt_write(&o, fx->dir);
    expect_load_fail(fx->dir, ENG_F16, BC_ERR_FORMAT, "element [0, 0] is 1e+06 after conversion to float16", NULL);
    opt_weights w;
    bc_error err = {0};
    assert_int_equal(opt_weights_load_checkpoint(&w, fx->dir, ENG_F32, &err), BC_OK); /* fine in float32 */
    opt_weights_free(&w);
}

static void test_no_weights_file(void **state) {
    fixture *fx = *state;
    char p[512];
    snprintf(p, sizeof p, "%s/config.json", fx->dir);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs("{\"vocab_size\":10,\"hidden_size\":8,\"num_hidden_layers\":1,\"num_attention_heads\":2,"
          "\"ffn_dim\":16,\"max_position_embeddings\":8,\"activation_function\":\"relu\"}",
          f);
    fclose(f);
    expect_load_fail(fx->dir, ENG_F32, BC_ERR_IO, "model.safetensors", NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_preln_f32),
        cmocka_unit_test(test_sharded_equals_single),
        cmocka_unit_test(test_postln_f16_decoder_prefix),
        cmocka_unit_test(test_hd80_bf16),
        cmocka_unit_test(test_f32_to_half),
        cmocka_unit_test_setup_teardown(test_both_prefixes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lm_head, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_tensor, setup, teardown),
        cmocka_unit_test(test_sharded_source),
        cmocka_unit_test_setup_teardown(test_wrong_shape, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrong_dtype, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unexpected_tensor, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_config, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_weights_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_impossible_shapes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nonfinite_weights, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
