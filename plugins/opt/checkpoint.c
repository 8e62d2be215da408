/* checkpoint.c: a local Hugging Face OPT checkpoint's config.json into
 * opt_hparams (docs/checkpoints.md). Its tensors are loaded by the engine
 * from OPT's tensor table (opt_family.c; engine/weights/tensor_table.h):
 *   X embed_tokens.weight [V, P]        X embed_positions.weight [Tmax + 2, C]
 *   X project_in.weight [C, P]          X project_out.weight [P, C]   (P != C)
 *   X final_layer_norm.{weight,bias} [C]                              (pre-LN)
 *   X layers.i.self_attn.{q,k,v,out}_proj.{weight [C, C], bias [C]}
 *   X layers.i.self_attn_layer_norm.{weight,bias} [C]
 *   X layers.i.fc1.{weight [F, C], bias [F]}   X layers.i.fc2.{weight [C, F], bias [C]}
 *   X layers.i.final_layer_norm.{weight,bias} [C]
 *   lm_head.weight [V, P]: optional; when present it must equal embed_tokens
 *   (OPT ties them; an untied head is refused).
 * with X = "model.decoder." or "decoder.", whichever the file uses. Every
 * error names the file and the key.
 */
#define _POSIX_C_SOURCE 200809L

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "checkpoint.h"
#include "fileio.h"

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
