/* llama_config.c: config.json / generation_config.json reader and presets of
 * the Llama family (llama_config.h). transformers' defaults where a key is
 * absent and its class has one (num_key_value_heads = num_attention_heads,
 * head_dim = hidden_size / num_attention_heads, rms_norm_eps 1e-6, rope_theta
 * 1e4, attention_bias and tie_word_embeddings false); the shape's keys are
 * required.
 */
#include "llama_config.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

/* Upper bound on any one dimension: refuses absurd shapes before anything is sized. */
#define LC_MAX_DIM (1 << 24)

const char *llama_family_name(llama_family f)
{
    switch (f) {
    case LLAMA_FAMILY_LLAMA: return "llama";
    case LLAMA_FAMILY_QWEN2: return "qwen2";
    case LLAMA_FAMILY_MISTRAL: return "mistral";
    }
    return "unknown";
}

/* ---- typed keys -------------------------------------------------------- */

/* An int at key of obj in [lo, LC_MAX_DIM]; absent or null: def, or an error when required. */
static bc_status get_int(const json_t *obj, const char *file, const char *key, int required, int def, int lo,
                         int *out, bc_error *err)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) {
        if (required)
            return bc_error_set(err, BC_ERR_FORMAT, "%s: \"%s\" is missing", file, key);
        *out = def;
        return BC_OK;
    }
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > LC_MAX_DIM)
        return bc_error_set(err, BC_ERR_FORMAT, "%s: \"%s\" must be an integer in [%d, %d]", file, key, lo,
                            LC_MAX_DIM);
    *out = (int)json_integer_value(v);
    return BC_OK;
}

/* A number (integer or real: SmolLM2 writes "rope_theta": 100000) > 0; absent or null: def (< 0: required). */
static bc_status get_pos_number(const json_t *obj, const char *file, const char *key, double def, double *out,
                                bc_error *err)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) {
        if (def < 0)
            return bc_error_set(err, BC_ERR_FORMAT, "%s: \"%s\" is missing", file, key);
        *out = def;
        return BC_OK;
    }
    if (!json_is_number(v) || !(json_number_value(v) > 0.0))
        return bc_error_set(err, BC_ERR_FORMAT, "%s: \"%s\" must be a number > 0", file, key);
    *out = json_number_value(v);
    return BC_OK;
}

static bc_status get_bool(const json_t *obj, const char *file, const char *key, int def, int *out, bc_error *err)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) {
        *out = def;
        return BC_OK;
    }
    if (!json_is_boolean(v))
        return bc_error_set(err, BC_ERR_FORMAT, "%s: \"%s\" must be true or false", file, key);
    *out = json_is_true(v);
    return BC_OK;
}

/* A token id: an integer in [0, V), null or absent (keeps *out), or for
 * eos_token_id a list of them, whose first is taken (generate() stops at
 * any of them; benchctl suppresses EOS by default, and where it does stop
 * it stops at one id). */
static bc_status get_token(const json_t *obj, const char *file, const char *key, int V, int *out, bc_error *err)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return BC_OK;
    if (json_is_array(v) && strcmp(key, "eos_token_id") == 0) {
        if (json_array_size(v) == 0)
            return bc_error_set(err, BC_ERR_FORMAT, "%s: \"%s\" is an empty list", file, key);
        v = json_array_get(v, 0);
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= V)
        return bc_error_set(err, BC_ERR_FORMAT, "%s: \"%s\" must be a token id in [0, %d) (vocab_size)", file, key,
                            V);
    *out = (int)json_integer_value(v);
    return BC_OK;
}

/* ---- RoPE: 5.x rope_parameters {rope_type, rope_theta, ...}; 4.x top-level
 * rope_theta + rope_scaling {rope_type (or older "type"), ...} or null ---- */

static bc_status read_rope(const json_t *root, const char *file, llama_config *cfg, bc_error *err)
{
    bc_status st;
    const json_t *rp = json_object_get(root, "rope_parameters");
    const json_t *scaling;
    const char *where;
    if (rp && !json_is_null(rp)) {
        if (!json_is_object(rp))
            return bc_error_set(err, BC_ERR_FORMAT, "%s: \"rope_parameters\" must be an object", file);
        const json_t *th = json_object_get(rp, "rope_theta");
        cfg->rope_theta = 10000.0;
        if (th && !json_is_null(th)) {
            if (!json_is_number(th) || !(json_number_value(th) > 0.0))
                return bc_error_set(err, BC_ERR_FORMAT, "%s: \"rope_parameters.rope_theta\" must be a number > 0",
                                    file);
            cfg->rope_theta = json_number_value(th);
        }
        scaling = rp;
        where = "rope_parameters";
    } else {
        if ((st = get_pos_number(root, file, "rope_theta", 10000.0, &cfg->rope_theta, err)) != BC_OK)
            return st;
        scaling = json_object_get(root, "rope_scaling");
        where = "rope_scaling";
        if (!scaling || json_is_null(scaling)) {
            cfg->rope_scaling = (eng_rope_scaling){.type = ENG_ROPE_DEFAULT};
            return BC_OK;
        }
        if (!json_is_object(scaling))
            return bc_error_set(err, BC_ERR_FORMAT, "%s: \"rope_scaling\" must be an object or null", file);
    }
    const json_t *t = json_object_get(scaling, "rope_type");
    if (!t || json_is_null(t))
        t = json_object_get(scaling, "type");
    const char *type = "default";
    if (t && !json_is_null(t)) {
        if (!json_is_string(t))
            return bc_error_set(err, BC_ERR_FORMAT, "%s: \"%s.rope_type\" must be a string", file, where);
        type = json_string_value(t);
    }
    if (strcmp(type, "default") == 0) {
        cfg->rope_scaling = (eng_rope_scaling){.type = ENG_ROPE_DEFAULT};
        return BC_OK;
    }
    if (strcmp(type, "llama3") != 0)
        return bc_error_set(err, BC_ERR_UNSUPPORTED,
                            "%s: \"%s.rope_type\" is \"%.40s\"; this backend implements \"default\" and \"llama3\"",
                            file, where, type);
    eng_rope_scaling s = {.type = ENG_ROPE_LLAMA3};
    static const char *const keys[] = {"factor", "low_freq_factor", "high_freq_factor"};
    double *vals[] = {&s.factor, &s.low_freq_factor, &s.high_freq_factor};
    for (int i = 0; i < 3; i++) {
        const json_t *v = json_object_get(scaling, keys[i]);
        if (!v || !json_is_number(v) || !(json_number_value(v) > 0.0))
            return bc_error_set(err, BC_ERR_FORMAT, "%s: \"%s.%s\" must be a number > 0 (llama3 RoPE)", file, where,
                                keys[i]);
        *vals[i] = json_number_value(v);
    }
    const json_t *o = json_object_get(scaling, "original_max_position_embeddings");
    if (!o || !json_is_integer(o) || json_integer_value(o) < 1 || json_integer_value(o) > LC_MAX_DIM)
        return bc_error_set(err, BC_ERR_FORMAT,
                            "%s: \"%s.original_max_position_embeddings\" must be an integer in [1, %d] (llama3 RoPE)",
                            file, where, LC_MAX_DIM);
    s.original_positions = (int)json_integer_value(o);
    if (!(s.high_freq_factor > s.low_freq_factor))
        return bc_error_set(err, BC_ERR_FORMAT, "%s: \"%s.high_freq_factor\" %g must exceed low_freq_factor %g", file,
                            where, s.high_freq_factor, s.low_freq_factor);
    cfg->rope_scaling = s;
    return BC_OK;
}

/* ---- config.json -------------------------------------------------------- */

static bc_status read_family(const json_t *root, const char *file, llama_family *f, bc_error *err)
{
    const json_t *mt = json_object_get(root, "model_type");
    if (!mt || json_is_null(mt))
        return bc_error_set(err, BC_ERR_FORMAT, "%s: \"model_type\" is missing", file);
    if (!json_is_string(mt))
        return bc_error_set(err, BC_ERR_FORMAT, "%s: \"model_type\" must be a string", file);
    const char *s = json_string_value(mt);
    if (strcmp(s, "llama") == 0)
        *f = LLAMA_FAMILY_LLAMA;
    else if (strcmp(s, "qwen2") == 0)
        *f = LLAMA_FAMILY_QWEN2;
    else if (strcmp(s, "mistral") == 0)
        *f = LLAMA_FAMILY_MISTRAL;
    else if (strcmp(s, "opt") == 0)
        return bc_error_set(err, BC_ERR_UNSUPPORTED,
                            "%s: \"model_type\" is \"opt\": OPT runs in the opt backend (backend = \"opt\")", file);
    else
        return bc_error_set(err, BC_ERR_UNSUPPORTED,
                            "%s: \"model_type\" is \"%.40s\"; benchctl runs llama, qwen2, mistral (this backend) "
                            "and opt (the opt backend)",
                            file, s);
    return BC_OK;
}

static bc_status from_config(llama_config *cfg, const json_t *root, const char *file, bc_error *err)
{
    bc_status st;
    eng_shape *sh = &cfg->shape;
    if (!json_is_object(root))
        return bc_error_set(err, BC_ERR_FORMAT, "%s: not a JSON object", file);
    if ((st = read_family(root, file, &cfg->family, err)) != BC_OK)
        return st;
    const json_t *act = json_object_get(root, "hidden_act");
    if (act && !json_is_null(act) && !(json_is_string(act) && strcmp(json_string_value(act), "silu") == 0))
        return bc_error_set(err, BC_ERR_UNSUPPORTED, "%s: \"hidden_act\" is %s%.40s%s; this backend implements \"silu\"",
                            file, json_is_string(act) ? "\"" : "",
                            json_is_string(act) ? json_string_value(act) : "not a string",
                            json_is_string(act) ? "\"" : "");
    if ((st = get_int(root, file, "vocab_size", 1, 0, 1, &sh->vocab_size, err)) ||
        (st = get_int(root, file, "hidden_size", 1, 0, 1, &sh->hidden_size, err)) ||
        (st = get_int(root, file, "num_hidden_layers", 1, 0, 1, &sh->n_layers, err)) ||
        (st = get_int(root, file, "num_attention_heads", 1, 0, 1, &sh->n_heads, err)) ||
        (st = get_int(root, file, "num_key_value_heads", 0, sh->n_heads, 1, &sh->n_kv_heads, err)) ||
        (st = get_int(root, file, "intermediate_size", 1, 0, 1, &sh->ffn_size, err)) ||
        (st = get_int(root, file, "max_position_embeddings", 1, 0, 1, &sh->max_positions, err)))
        return st;
    if (sh->n_heads % sh->n_kv_heads != 0)
        return bc_error_set(err, BC_ERR_FORMAT,
                            "%s: \"num_attention_heads\" %d is not a multiple of \"num_key_value_heads\" %d", file,
                            sh->n_heads, sh->n_kv_heads);
    const json_t *hd = json_object_get(root, "head_dim");
    if (hd && !json_is_null(hd)) {
        if ((st = get_int(root, file, "head_dim", 1, 0, 2, &sh->head_dim, err)) != BC_OK)
            return st;
    } else {
        if (sh->hidden_size % sh->n_heads != 0)
            return bc_error_set(err, BC_ERR_FORMAT,
                                "%s: no \"head_dim\", and \"hidden_size\" %d is not a multiple of "
                                "\"num_attention_heads\" %d",
                                file, sh->hidden_size, sh->n_heads);
        sh->head_dim = sh->hidden_size / sh->n_heads;
    }
    if (sh->head_dim % 2 != 0)
        return bc_error_set(err, BC_ERR_FORMAT, "%s: head size %d (\"head_dim\") must be even for RoPE", file,
                            sh->head_dim);
    double prf = 1.0;
    if ((st = get_pos_number(root, file, "partial_rotary_factor", 1.0, &prf, err)) != BC_OK)
        return st;
    if (prf != 1.0)
        return bc_error_set(err, BC_ERR_UNSUPPORTED, "%s: \"partial_rotary_factor\" %g: this backend rotates whole heads",
                            file, prf);
    if ((st = get_pos_number(root, file, "rms_norm_eps", 1e-6, &cfg->rms_norm_eps, err)) ||
        (st = read_rope(root, file, cfg, err)) ||
        (st = get_bool(root, file, "tie_word_embeddings", 0, &cfg->tie_word_embeddings, err)))
        return st;
    int mlp_bias = 0, attention_bias = 0;
    if ((st = get_bool(root, file, "mlp_bias", 0, &mlp_bias, err)) != BC_OK)
        return st;
    if (mlp_bias)
        return bc_error_set(err, BC_ERR_UNSUPPORTED, "%s: \"mlp_bias\" true: this backend has no MLP biases", file);
    cfg->qkv_bias = cfg->o_bias = 0;
    cfg->sliding_window = 0;
    switch (cfg->family) {
    case LLAMA_FAMILY_LLAMA: /* LlamaAttention: q/k/v/o_proj bias = attention_bias */
        if ((st = get_bool(root, file, "attention_bias", 0, &attention_bias, err)) != BC_OK)
            return st;
        cfg->qkv_bias = cfg->o_bias = attention_bias;
        break;
    case LLAMA_FAMILY_QWEN2: { /* Qwen2Attention: q/k/v biases, none on o_proj */
        cfg->qkv_bias = 1;
        int use_sw = 0;
        if ((st = get_bool(root, file, "use_sliding_window", 0, &use_sw, err)) != BC_OK)
            return st;
        /* sliding_window stays in Qwen2 configs (32768, 131072) with use_sliding_window false */
        if (use_sw && (st = get_int(root, file, "sliding_window", 0, 0, 1, &cfg->sliding_window, err)) != BC_OK)
            return st;
        break;
    }
    case LLAMA_FAMILY_MISTRAL: /* MistralAttention: no biases; sliding_window or null */
        if ((st = get_int(root, file, "sliding_window", 0, 0, 1, &cfg->sliding_window, err)) != BC_OK)
            return st;
        break;
    }
    sh->pad_token_id = sh->bos_token_id = sh->eos_token_id = -1; /* -1: the model has none */
    if ((st = get_token(root, file, "pad_token_id", sh->vocab_size, &sh->pad_token_id, err)) ||
        (st = get_token(root, file, "bos_token_id", sh->vocab_size, &sh->bos_token_id, err)) ||
        (st = get_token(root, file, "eos_token_id", sh->vocab_size, &sh->eos_token_id, err)))
        return st;
    return BC_OK;
}

static bc_status from_generation(llama_config *cfg, const json_t *root, const char *file, bc_error *err)
{
    if (!json_is_object(root))
        return bc_error_set(err, BC_ERR_FORMAT, "%s: not a JSON object", file);
    eng_shape *sh = &cfg->shape;
    bc_status st;
    if ((st = get_token(root, file, "pad_token_id", sh->vocab_size, &sh->pad_token_id, err)) ||
        (st = get_token(root, file, "bos_token_id", sh->vocab_size, &sh->bos_token_id, err)) ||
        (st = get_token(root, file, "eos_token_id", sh->vocab_size, &sh->eos_token_id, err)))
        return st;
    return BC_OK;
}

static bc_status parse_text(const char *text, const char *file, json_t **out, bc_error *err)
{
    json_error_t je;
    *out = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    if (!*out)
        return bc_error_set(err, BC_ERR_FORMAT, "%s: not valid JSON (line %d, column %d: %s)", file, je.line,
                            je.column, je.text);
    return BC_OK;
}

bc_status llama_config_parse(llama_config *cfg, const char *config_json, const char *config_name,
                             const char *generation_json, const char *generation_name, bc_error *err)
{
    memset(cfg, 0, sizeof *cfg);
    json_t *root = NULL;
    bc_status st = parse_text(config_json, config_name, &root, err);
    if (st == BC_OK)
        st = from_config(cfg, root, config_name, err);
    json_decref(root);
    if (st == BC_OK && generation_json) {
        json_t *gen = NULL;
        st = parse_text(generation_json, generation_name, &gen, err);
        if (st == BC_OK)
            st = from_generation(cfg, gen, generation_name, err);
        json_decref(gen);
    }
    if (st == BC_OK)
        snprintf(cfg->shape.name, sizeof cfg->shape.name, "%s", llama_family_name(cfg->family));
    return st;
}

/* A JSON file whole; absent: BC_ERR_NOT_FOUND with no message when optional. */
static bc_status load_file(const char *path, int optional, json_t **out, bc_error *err)
{
    json_error_t je;
    *out = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (*out)
        return BC_OK;
    FILE *f = fopen(path, "rb");
    if (!f) {
        int e = errno;
        if (optional && e == ENOENT)
            return BC_ERR_NOT_FOUND;
        return bc_error_set(err, e == ENOENT ? BC_ERR_NOT_FOUND : BC_ERR_IO, "%s: cannot open: %s", path,
                            strerror(e));
    }
    fclose(f);
    return bc_error_set(err, BC_ERR_FORMAT, "%s: not valid JSON (line %d, column %d: %s)", path, je.line, je.column,
                        je.text);
}

bc_status llama_config_read_dir(llama_config *cfg, const char *dir, bc_error *err)
{
    memset(cfg, 0, sizeof *cfg);
    char path[4096], gpath[4096];
    if (snprintf(path, sizeof path, "%s/config.json", dir) >= (int)sizeof path ||
        snprintf(gpath, sizeof gpath, "%s/generation_config.json", dir) >= (int)sizeof gpath)
        return bc_error_set(err, BC_ERR_INVALID, "checkpoint directory path is too long: %.200s", dir);
    json_t *root = NULL;
    bc_status st = load_file(path, 0, &root, err);
    if (st != BC_OK)
        return st;
    st = from_config(cfg, root, path, err);
    json_decref(root);
    if (st != BC_OK)
        return st;
    json_t *gen = NULL;
    st = load_file(gpath, 1, &gen, err);
    if (st == BC_ERR_NOT_FOUND && !gen)
        st = BC_OK; /* no generation_config.json: config.json's ids stand */
    else if (st == BC_OK)
        st = from_generation(cfg, gen, gpath, err);
    json_decref(gen);
    if (st != BC_OK)
        return st;
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    size_t b = n;
    while (b > 0 && dir[b - 1] != '/')
        b--;
    snprintf(cfg->shape.name, sizeof cfg->shape.name, "%.*s", (int)(n - b), dir + b);
    return BC_OK;
}

/* ---- presets -------------------------------------------------------------
 * The published config.json of each model on the Hugging Face Hub (as
 * quoted in public repositories and model cards, checked with the search
 * tool): Qwen/Qwen2.5-0.5B and Qwen/Qwen2.5-1.5B (base models; the Instruct
 * variants have the same shapes, eos 151645), meta-llama/Llama-3.2-1B,
 * HuggingFaceTB/SmolLM2-135M. */

typedef struct llama_preset {
    const char *name;
    llama_family family;
    int V, C, L, H, Hkv, D, F, Tmax, pad, bos, eos;
    double eps, theta;
    eng_rope_scaling rope;
    int qkv_bias, tie;
} llama_preset;

static const llama_preset presets[] = {
    /* Qwen2.5-0.5B: 896 hidden, 4864 FFN, 24 layers, 14 / 2 heads, vocab 151936, 32768 positions,
     * theta 1e6, eps 1e-6, tied, bos = eos = 151643, no pad in config.json (sliding_window off) */
    {"qwen2.5-0.5b", LLAMA_FAMILY_QWEN2, 151936, 896, 24, 14, 2, 64, 4864, 32768, -1, 151643, 151643, 1e-6, 1e6,
     {ENG_ROPE_DEFAULT, 0, 0, 0, 0}, 1, 1},
    /* Qwen2.5-1.5B: 1536 hidden, 8960 FFN, 28 layers, 12 / 2 heads, 131072 positions, tied */
    {"qwen2.5-1.5b", LLAMA_FAMILY_QWEN2, 151936, 1536, 28, 12, 2, 128, 8960, 131072, -1, 151643, 151643, 1e-6, 1e6,
     {ENG_ROPE_DEFAULT, 0, 0, 0, 0}, 1, 1},
    /* Llama-3.2-1B: 2048 hidden, 8192 FFN, 16 layers, 32 / 8 heads, head_dim 64, vocab 128256,
     * 131072 positions, theta 5e5, llama3 scaling (32, 1, 4, 8192), eps 1e-5, tied, bos 128000, eos 128001 */
    {"llama-3.2-1b", LLAMA_FAMILY_LLAMA, 128256, 2048, 16, 32, 8, 64, 8192, 131072, -1, 128000, 128001, 1e-5, 5e5,
     {ENG_ROPE_LLAMA3, 32.0, 1.0, 4.0, 8192}, 0, 1},
    /* SmolLM2-135M: 576 hidden, 1536 FFN, 30 layers, 9 / 3 heads, head_dim 64, vocab 49152,
     * 8192 positions, theta 1e5, eps 1e-5, tied, bos = eos = 0 */
    {"smollm2-135m", LLAMA_FAMILY_LLAMA, 49152, 576, 30, 9, 3, 64, 1536, 8192, -1, 0, 0, 1e-5, 1e5,
     {ENG_ROPE_DEFAULT, 0, 0, 0, 0}, 0, 1},
};

const char *const llama_preset_names[] = {"qwen2.5-0.5b", "qwen2.5-1.5b", "llama-3.2-1b", "smollm2-135m", NULL};

bc_status llama_config_preset(const char *name, llama_config *cfg, bc_error *err)
{
    memset(cfg, 0, sizeof *cfg);
    for (size_t i = 0; i < sizeof presets / sizeof *presets; i++) {
        const llama_preset *p = &presets[i];
        if (!name || strcmp(name, p->name) != 0)
            continue;
        eng_shape *s = &cfg->shape;
        *s = (eng_shape){.vocab_size = p->V, .hidden_size = p->C, .n_layers = p->L, .n_heads = p->H,
                         .n_kv_heads = p->Hkv, .head_dim = p->D, .ffn_size = p->F, .max_positions = p->Tmax,
                         .pad_token_id = p->pad, .bos_token_id = p->bos, .eos_token_id = p->eos};
        snprintf(s->name, sizeof s->name, "%s", p->name);
        cfg->family = p->family;
        cfg->rms_norm_eps = p->eps;
        cfg->rope_theta = p->theta;
        cfg->rope_scaling = p->rope;
        cfg->qkv_bias = p->qkv_bias;
        cfg->o_bias = 0;
        cfg->tie_word_embeddings = p->tie;
        cfg->sliding_window = 0;
        return BC_OK;
    }
    return bc_error_set(err, BC_ERR_SETTING,
                        "llama: model = \"%.60s\": not a preset (qwen2.5-0.5b, qwen2.5-1.5b, llama-3.2-1b, "
                        "smollm2-135m)",
                        name ? name : "");
}
