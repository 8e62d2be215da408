/* checkpoint.c: loads a local Hugging Face OPT checkpoint directory
 * (config.json + model.safetensors, single or sharded, or else
 * pytorch_model.bin, single or sharded) into opt_weights, converting every
 * tensor to the run's dtype (docs/checkpoints.md). The file-set reader
 * (ckpt_set.h) gives the same tensor list whatever the format (eng_ck_tensor,
 * sorted by name), so everything past opening the files is one walk over the
 * tensors (ck_walk) that either loads them or, for opt_checkpoint_validate,
 * only checks them. eng_ck_check_files (engine/ckpt) is the quick check that the
 * files are there at all, reading none of them.
 *
 * Tensor names (X = "model.decoder." or "decoder.", whichever the file uses):
 *   X embed_tokens.weight [V, P]        X embed_positions.weight [Tmax + 2, C]
 *   X project_in.weight [C, P]          X project_out.weight [P, C]   (P != C)
 *   X final_layer_norm.{weight,bias} [C]                              (pre-LN)
 *   X layers.i.self_attn.{q,k,v,out}_proj.{weight [C, C], bias [C]}
 *   X layers.i.self_attn_layer_norm.{weight,bias} [C]
 *   X layers.i.fc1.{weight [F, C], bias [F]}   X layers.i.fc2.{weight [C, F], bias [C]}
 *   X layers.i.final_layer_norm.{weight,bias} [C]
 *   lm_head.weight [V, P]: optional; when present it must equal embed_tokens
 *   (OPT ties them; an untied head is refused).
 * Matrices are converted to the run's dtype; biases and layer norms to fp32.
 * Every error names the file and the tensor (or config key).
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint.h"
#include "ckpt_load.h"
#include "fileio.h"
#include "precision.h"

/* Upper bound on any one dimension in config.json: refuses absurd shapes
 * before anything is allocated. */
#define CK_MAX_DIM (1 << 20)

/* ------------------------------------------------------------ config.json */

/* An int from config.json: required (def < 0 means required) and in
 * [lo, CK_MAX_DIM]. */
static bc_status ck_int(json_t *cfg, const char *path, const char *key, int def, int lo, int *out, bc_error *err) {
    json_t *v = json_object_get(cfg, key);
    if (!v || json_is_null(v)) {
        if (def < 0) return bc_error_set(err, BC_ERR_FORMAT, "%s: \"%s\" is missing", path, key);
        *out = def;
        return BC_OK;
    }
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > CK_MAX_DIM)
        return bc_error_set(err, BC_ERR_FORMAT, "%s: \"%s\" must be an integer in [%d, %d]", path, key, lo, CK_MAX_DIM);
    *out = (int)json_integer_value(v);
    return BC_OK;
}

static bc_status ck_bool(json_t *cfg, const char *path, const char *key, int def, int *out, bc_error *err) {
    json_t *v = json_object_get(cfg, key);
    if (!v || json_is_null(v)) {
        *out = def;
        return BC_OK;
    }
    if (!json_is_boolean(v)) return bc_error_set(err, BC_ERR_FORMAT, "%s: \"%s\" must be true or false", path, key);
    *out = json_is_true(v);
    return BC_OK;
}

bc_status opt_hparams_from_checkpoint(const char *dir, opt_hparams *hp, bc_error *err) {
    char path[4096];
    if (snprintf(path, sizeof path, "%s/config.json", dir) >= (int)sizeof path)
        return bc_error_set(err, BC_ERR_INVALID, "checkpoint directory path is too long: %.200s", dir);
    json_t *cfg = NULL; /* a regular file of at most 1 MiB (fileio.h) */
    bc_status st = eng_load_json(path, "config.json", ENG_CONFIG_JSON_MAX_BYTES, &cfg, err);
    if (st != BC_OK) return st;
    memset(hp, 0, sizeof *hp);
    if (!json_is_object(cfg)) {
        st = bc_error_set(err, BC_ERR_FORMAT, "%s: not a JSON object", path);
        goto done;
    }
    json_t *mt = json_object_get(cfg, "model_type");
    if (mt && !(json_is_string(mt) && strcmp(json_string_value(mt), "opt") == 0)) {
        st = bc_error_set(err, BC_ERR_UNSUPPORTED, "%s: \"model_type\" is %s%.40s%s, not \"opt\"", path,
                          json_is_string(mt) ? "\"" : "", json_is_string(mt) ? json_string_value(mt) : "not a string",
                          json_is_string(mt) ? "\"" : "");
        goto done;
    }
    json_t *act = json_object_get(cfg, "activation_function");
    if (act && !(json_is_string(act) && strcmp(json_string_value(act), "relu") == 0)) {
        st = bc_error_set(err, BC_ERR_UNSUPPORTED,
                          "%s: \"activation_function\" is %s%.40s%s; the OPT engine implements only \"relu\"", path,
                          json_is_string(act) ? "\"" : "", json_is_string(act) ? json_string_value(act) : "not a string",
                          json_is_string(act) ? "\"" : "");
        goto done;
    }
    if ((st = ck_int(cfg, path, "vocab_size", -1, 1, &hp->s.vocab_size, err)) ||
        (st = ck_int(cfg, path, "hidden_size", -1, 1, &hp->s.hidden_size, err)) ||
        (st = ck_int(cfg, path, "num_hidden_layers", -1, 1, &hp->s.n_layers, err)) ||
        (st = ck_int(cfg, path, "num_attention_heads", -1, 1, &hp->s.n_heads, err)) ||
        (st = ck_int(cfg, path, "ffn_dim", -1, 1, &hp->s.ffn_size, err)) ||
        (st = ck_int(cfg, path, "max_position_embeddings", -1, 1, &hp->s.max_positions, err)) ||
        (st = ck_int(cfg, path, "word_embed_proj_dim", hp->s.hidden_size, 1, &hp->word_embed_proj_dim, err)) ||
        (st = ck_bool(cfg, path, "do_layer_norm_before", 1, &hp->do_layer_norm_before, err)) ||
        (st = ck_int(cfg, path, "pad_token_id", 1, 0, &hp->s.pad_token_id, err)) ||
        (st = ck_int(cfg, path, "bos_token_id", 2, 0, &hp->s.bos_token_id, err)) ||
        (st = ck_int(cfg, path, "eos_token_id", 2, 0, &hp->s.eos_token_id, err)))
        goto done;
    if (hp->s.hidden_size % hp->s.n_heads != 0) {
        st = bc_error_set(err, BC_ERR_FORMAT, "%s: hidden_size %d is not a multiple of num_attention_heads %d", path,
                          hp->s.hidden_size, hp->s.n_heads);
        goto done;
    }
    int enable_bias, ln_affine, remove_final_ln;
    if ((st = ck_bool(cfg, path, "enable_bias", 1, &enable_bias, err)) ||
        (st = ck_bool(cfg, path, "layer_norm_elementwise_affine", 1, &ln_affine, err)) ||
        (st = ck_bool(cfg, path, "_remove_final_layer_norm", 0, &remove_final_ln, err)))
        goto done;
    if (!enable_bias || !ln_affine || (remove_final_ln && hp->do_layer_norm_before)) {
        st = bc_error_set(err, BC_ERR_UNSUPPORTED, "%s: \"%s\" is not supported by the OPT engine", path,
                          !enable_bias ? "enable_bias: false"
                          : !ln_affine ? "layer_norm_elementwise_affine: false"
                                       : "_remove_final_layer_norm: true");
        goto done;
    }
    if (hp->s.pad_token_id >= hp->s.vocab_size || hp->s.bos_token_id >= hp->s.vocab_size ||
        hp->s.eos_token_id >= hp->s.vocab_size) {
        st = bc_error_set(err, BC_ERR_FORMAT, "%s: pad/bos/eos token ids (%d/%d/%d) must be < vocab_size %d", path,
                          hp->s.pad_token_id, hp->s.bos_token_id, hp->s.eos_token_id, hp->s.vocab_size);
        goto done;
    }
    /* every size derived from the shape must fit before anything is sized */
    if ((st = opt_hparams_check_size(hp, path, err)) != BC_OK) goto done;
    const char *base = strrchr(dir, '/');
    base = base && base[1] ? base + 1 : dir;
    snprintf(hp->s.name, sizeof hp->s.name, "%s", base);
    opt_hparams_derive(hp);
done:
    json_decref(cfg);
    return st;
}

/* ------------------------------------------------------------- tensors */

/* lm_head.weight, when present, must be embed_tokens (OPT ties them). */
static bc_status ck_lm_head(eng_ck_loader *c, const opt_hparams *hp, bc_error *err) {
    if (!eng_ck_set_find(c->set, "lm_head.weight")) return BC_OK;
    const eng_ck_tensor *h, *e;
    eng_dtype hd, ed;
    bc_status st;
    if ((st = eng_ck_get(c, "", "lm_head.weight", hp->s.vocab_size, hp->word_embed_proj_dim, &h, &hd, err)) != BC_OK)
        return st;
    if ((st = eng_ck_get(c, c->prefix, "embed_tokens.weight", hp->s.vocab_size, hp->word_embed_proj_dim, &e, &ed, err)) !=
        BC_OK)
        return st;
    for (size_t i = 0; i < h->numel; i++) {
        if (eng_ck_read_f32(h->data, hd, i) != eng_ck_read_f32(e->data, ed, i))
            return bc_error_set(err, BC_ERR_UNSUPPORTED,
                                "%s: tensor 'lm_head.weight' differs from '%sembed_tokens.weight' (element %zu); "
                                "the OPT engine ties them and does not support an untied head",
                                h->path, c->prefix, i);
    }
    return BC_OK;
}

static bc_status ck_load_all(eng_ck_loader *c, opt_weights *w, bc_error *err) {
    const opt_hparams *hp = &w->hp;
    int V = hp->s.vocab_size, C = hp->s.hidden_size, F = hp->s.ffn_size, P = hp->word_embed_proj_dim;
    bc_status st;
    if ((st = eng_ck_matrix(c, "embed_tokens.weight", &w->embed_tokens, V, P, err)) ||
        (st = eng_ck_matrix(c, "embed_positions.weight", &w->embed_positions, hp->s.max_positions + 2, C, err)))
        return st;
    if (P != C) {
        if ((st = eng_ck_matrix(c, "project_in.weight", &w->project_in, C, P, err)) ||
            (st = eng_ck_matrix(c, "project_out.weight", &w->project_out, P, C, err)))
            return st;
    }
    if (hp->do_layer_norm_before) {
        if ((st = eng_ck_vector(c, "final_layer_norm.weight", w->final_ln_gamma, C, err)) ||
            (st = eng_ck_vector(c, "final_layer_norm.bias", w->final_ln_beta, C, err)))
            return st;
    } else {
        /* Post-LN OPT has no final layer norm; transformers ignores one that
         * a file carries anyway, and so do we. */
        char n[64];
        snprintf(n, sizeof n, "%sfinal_layer_norm.weight", c->prefix);
        (void)eng_ck_take(c, n);
        snprintf(n, sizeof n, "%sfinal_layer_norm.bias", c->prefix);
        (void)eng_ck_take(c, n);
    }
    opt_layer_weights none;
    memset(&none, 0, sizeof none);
    for (int l = 0; l < hp->s.n_layers; l++) {
        opt_layer_weights *lw = w->layers ? &w->layers[l] : &none; /* none: check_only */
        struct {
            const char *name;
            eng_matrix *m;
            float *bias;
            int rows, cols;
        } lin[] = {
            {"self_attn.q_proj", &lw->q_proj, lw->q_bias, C, C},
            {"self_attn.k_proj", &lw->k_proj, lw->k_bias, C, C},
            {"self_attn.v_proj", &lw->v_proj, lw->v_bias, C, C},
            {"self_attn.out_proj", &lw->out_proj, lw->out_bias, C, C},
            {"fc1", &lw->fc1, lw->fc1_bias, F, C},
            {"fc2", &lw->fc2, lw->fc2_bias, C, F},
        };
        char s[128];
        for (size_t k = 0; k < sizeof lin / sizeof lin[0]; k++) {
            snprintf(s, sizeof s, "layers.%d.%s.weight", l, lin[k].name);
            if ((st = eng_ck_matrix(c, s, lin[k].m, lin[k].rows, lin[k].cols, err))) return st;
            snprintf(s, sizeof s, "layers.%d.%s.bias", l, lin[k].name);
            if ((st = eng_ck_vector(c, s, lin[k].bias, lin[k].rows, err))) return st;
        }
        struct {
            const char *name;
            float *gamma, *beta;
        } ln[] = {{"self_attn_layer_norm", lw->ln1_gamma, lw->ln1_beta}, {"final_layer_norm", lw->ln2_gamma, lw->ln2_beta}};
        for (size_t k = 0; k < 2; k++) {
            snprintf(s, sizeof s, "layers.%d.%s.weight", l, ln[k].name);
            if ((st = eng_ck_vector(c, s, ln[k].gamma, C, err))) return st;
            snprintf(s, sizeof s, "layers.%d.%s.bias", l, ln[k].name);
            if ((st = eng_ck_vector(c, s, ln[k].beta, C, err))) return st;
        }
    }
    if ((st = ck_lm_head(c, hp, err))) return st;
    return eng_ck_all_used(c, "OPT", err);
}

/* Opens dir's tensors and walks them: into w (allocated here in dtype), or,
 * with w == NULL, only checking every name, dtype and shape. */
static bc_status ck_walk(const char *dir, eng_dtype dtype, opt_weights *w, bc_error *err) {
    opt_hparams hp;
    bc_status st = opt_hparams_from_checkpoint(dir, &hp, err);
    if (st != BC_OK) return st;
    eng_ck_set set;
    eng_ck_loader c;
    if ((st = eng_ck_loader_open(&c, &set, dir, dtype, w == NULL, err)) != BC_OK) return st;
    opt_weights shape_only;
    if (eng_ck_set_find(&set, "model.decoder.embed_tokens.weight"))
        c.prefix = "model.decoder.";
    else if (eng_ck_set_find(&set, "decoder.embed_tokens.weight"))
        c.prefix = "decoder.";
    else {
        st = bc_error_set(err, BC_ERR_FORMAT,
                          "%s: tensor 'model.decoder.embed_tokens.weight' (or 'decoder.embed_tokens.weight') is missing",
                          set.source);
        goto done;
    }
    if (w) {
        if ((st = opt_weights_alloc(w, &hp, dtype, err)) != BC_OK) goto done;
        st = ck_load_all(&c, w, err);
    } else {
        opt_weights_describe(&shape_only, &hp, dtype);
        st = ck_load_all(&c, &shape_only, err);
    }
done:
    eng_ck_loader_close(&c, &set);
    return st;
}

bc_status opt_weights_load_checkpoint(opt_weights *w, const char *dir, eng_dtype dtype, bc_error *err) {
    memset(w, 0, sizeof *w);
    bc_status st = ck_walk(dir, dtype, w, err);
    if (st != BC_OK) opt_weights_free(w);
    return st;
}

bc_status opt_checkpoint_validate(const char *dir, bc_error *err) { return ck_walk(dir, ENG_F32, NULL, err); }

/* ---------------------------------------------------------- quick checks */
