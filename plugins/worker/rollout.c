/* rollout.c: a worker's rollout, score and refit replies, checked (rollout.h). */
#define _GNU_SOURCE
#include "rollout.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The largest integer a double holds exactly: byte counts stay below it. */
#define WK_MAX_EXACT ((int64_t)1 << 53)

void wk_rollout_free(wk_rollout *r) {
    free(r->prompt_ids), free(r->prompt_lengths), free(r->response_ids), free(r->response_lengths);
    free(r->row_stop), free(r->logprobs);
    memset(r, 0, sizeof *r);
}

/* *p grown to hold n elements of size sz (its size *cap, in elements). */
static int grow(void **p, size_t *cap, size_t n, size_t sz) {
    if (n <= *cap) return 1;
    void *q = realloc(*p, n * sz);
    if (!q) return 0;
    *p = q, *cap = n;
    return 1;
}

/* The arrays of r sized for rows x (prompt, response) ids. */
static bc_status size_rollout(const char *engine, wk_rollout *r, int64_t rows, int64_t prompt, int64_t response,
                              bc_error *err) {
    if (rows <= 0 || prompt <= 0 || response <= 0 || (uint64_t)rows > SIZE_MAX / 8 / (uint64_t)prompt ||
        (uint64_t)rows > SIZE_MAX / 8 / (uint64_t)response)
        return bc_error_set(err, BC_ERR_INTERNAL, "worker %s: a rollout of %lld rows of %lld + %lld tokens", engine,
                            (long long)rows, (long long)prompt, (long long)response);
    const size_t nr = (size_t)rows, np = nr * (size_t)prompt, nt = nr * (size_t)response;
    int ok = grow((void **)&r->prompt_lengths, &r->cap[0], nr, sizeof *r->prompt_lengths) &&
             grow((void **)&r->response_lengths, &r->cap[1], nr, sizeof *r->response_lengths) &&
             grow((void **)&r->row_stop, &r->cap[2], nr, sizeof *r->row_stop) &&
             grow((void **)&r->prompt_ids, &r->cap[3], np, sizeof *r->prompt_ids) &&
             grow((void **)&r->response_ids, &r->cap[4], nt, sizeof *r->response_ids) &&
             grow((void **)&r->logprobs, &r->cap[5], nt, sizeof *r->logprobs);
    if (!ok) return bc_error_set(err, BC_ERR_NOMEM, "worker %s: no memory for a rollout of %zu rows", engine, nr);
    r->rows = rows, r->prompt_stride = prompt, r->response_stride = response;
    return BC_OK;
}

/* ro[key]: a list of rows lists; fails naming it otherwise. */
static bc_status rows_list(const char *engine, const json_t *ro, const char *key, int64_t rows, const json_t **out,
                           bc_error *err) {
    const json_t *v = json_object_get(ro, key);
    char text[64];
    *out = v;
    if (!v) return bc_error_set(err, BC_ERR_DEVICE, "worker %s: generate: the rollout has no %s", engine, key);
    if (!json_is_array(v)) {
        wk_value_text(v, text, sizeof text);
        return bc_error_set(err, BC_ERR_DEVICE, "worker %s: generate: rollout.%s = %s is not a list of rows", engine,
                            key, text);
    }
    if ((int64_t)json_array_size(v) != rows)
        return bc_error_set(err, BC_ERR_DEVICE, "worker %s: generate: rollout.%s has %zu rows, the case has %lld",
                            engine, key, json_array_size(v), (long long)rows);
    return BC_OK;
}

bc_status wk_rollout_take(const char *engine, const json_t *ro, const wk_shape *sh, const int32_t *prompts,
                          int64_t samples, int want_logprobs, wk_rollout *r, bc_error *err) {
    char text[64];
    if (!json_is_object(ro)) {
        if (!ro) return bc_error_set(err, BC_ERR_DEVICE, "worker %s: generate: the case asked for the rollout "
                                                         "(return_rollout) and the reply has none", engine);
        wk_value_text(ro, text, sizeof text);
        return bc_error_set(err, BC_ERR_DEVICE, "worker %s: generate: rollout = %s is not an object", engine, text);
    }
    const int64_t rows = sh->rows, P = sh->prompt_length, R = sh->response_length;
    if (samples <= 0) return bc_error_set(err, BC_ERR_INTERNAL, "worker %s: %lld samples a prompt", engine, (long long)samples);
    bc_status st = size_rollout(engine, r, rows, P, R, err);
    if (st != BC_OK) return st;
    const json_t *prompt_rows, *response_rows, *stops, *lp = json_object_get(ro, "logprobs");
    if ((st = rows_list(engine, ro, "prompt_ids", rows, &prompt_rows, err)) != BC_OK ||
        (st = rows_list(engine, ro, "response_ids", rows, &response_rows, err)) != BC_OK ||
        (st = rows_list(engine, ro, "stop", rows, &stops, err)) != BC_OK)
        return st;
    int64_t total = 0;
    for (int64_t i = 0; i < rows; i++) {
        /* the prompt as it ran: the host's prompt i / samples, unpadded */
        const json_t *row = json_array_get(prompt_rows, (size_t)i);
        const int32_t *sent = prompts + (i / samples) * P;
        if (!json_is_array(row) || (int64_t)json_array_size(row) != P) {
            wk_value_text(row, text, sizeof text);
            if (json_is_array(row))
                return bc_error_set(err, BC_ERR_DEVICE,
                                    "worker %s: generate: rollout.prompt_ids[%lld] has %zu ids, its prompt has %lld",
                                    engine, (long long)i, json_array_size(row), (long long)P);
            return bc_error_set(err, BC_ERR_DEVICE, "worker %s: generate: rollout.prompt_ids[%lld] = %s is not a "
                                "list of ids", engine, (long long)i, text);
        }
        for (int64_t t = 0; t < P; t++) {
            const json_t *v = json_array_get(row, (size_t)t);
            if (!json_is_integer(v) || json_integer_value(v) != sent[t]) {
                wk_value_text(v, text, sizeof text);
                return bc_error_set(err, BC_ERR_DEVICE,
                                    "worker %s: generate: rollout.prompt_ids[%lld][%lld] = %s is not the id the host "
                                    "sent (%d, prompt %lld)",
                                    engine, (long long)i, (long long)t, text, (int)sent[t], (long long)(i / samples));
            }
            r->prompt_ids[i * P + t] = sent[t];
        }
        r->prompt_lengths[i] = P;
        /* the response: 1..R ids of the vocabulary */
        row = json_array_get(response_rows, (size_t)i);
        const int64_t n = json_is_array(row) ? (int64_t)json_array_size(row) : -1;
        if (n < 1 || n > R) {
            wk_value_text(row, text, sizeof text);
            if (n >= 0)
                return bc_error_set(err, BC_ERR_DEVICE,
                                    "worker %s: generate: rollout.response_ids[%lld] has %lld ids, outside [1, %lld] "
                                    "(the case's response_length)",
                                    engine, (long long)i, (long long)n, (long long)R);
            return bc_error_set(err, BC_ERR_DEVICE, "worker %s: generate: rollout.response_ids[%lld] = %s is not a "
                                "list of ids", engine, (long long)i, text);
        }
        for (int64_t t = 0; t < n; t++) {
            const json_t *v = json_array_get(row, (size_t)t);
            json_int_t id = json_is_integer(v) ? json_integer_value(v) : -1;
            if (!json_is_integer(v) || id < 0 || id >= sh->vocab_size) {
                wk_value_text(v, text, sizeof text);
                return bc_error_set(err, BC_ERR_DEVICE,
                                    "worker %s: generate: rollout.response_ids[%lld][%lld] = %s is %s [0, %lld), the "
                                    "vocabulary",
                                    engine, (long long)i, (long long)t, text,
                                    json_is_integer(v) ? "outside" : "not an id in", (long long)sh->vocab_size);
            }
            r->response_ids[i * R + t] = (int32_t)id;
        }
        r->response_lengths[i] = n;
        total += n;
        /* how it stopped, consistent with its length */
        const char *stop = json_string_value(json_array_get(stops, (size_t)i));
        if (stop && strcmp(stop, "length") == 0) {
            if (n != R)
                return bc_error_set(err, BC_ERR_DEVICE,
                                    "worker %s: generate: rollout.stop[%lld] = \"length\" but the row has %lld ids, "
                                    "not the case's response_length %lld",
                                    engine, (long long)i, (long long)n, (long long)R);
            r->row_stop[i] = BC_ROW_STOP_LENGTH;
        } else if (stop && strcmp(stop, "eos") == 0) {
            r->row_stop[i] = BC_ROW_STOP_EOS;
        } else {
            wk_value_text(json_array_get(stops, (size_t)i), text, sizeof text);
            return bc_error_set(err, BC_ERR_DEVICE, "worker %s: generate: rollout.stop[%lld] = %s is not \"eos\" or "
                                "\"length\"", engine, (long long)i, text);
        }
    }
    r->generated_tokens = total;
    r->has_logprobs = 0;
    if (!lp || json_is_null(lp)) {
        if (want_logprobs)
            return bc_error_set(err, BC_ERR_DEVICE, "worker %s: generate: the engine keeps log-probabilities "
                                "(describe's capabilities) and rollout.logprobs is missing", engine);
        return BC_OK;
    }
    st = wk_logprobs_take(engine, "generate", "rollout.logprobs", lp, rows, r->response_lengths, R, r->logprobs, err);
    if (st == BC_OK) r->has_logprobs = 1;
    return st;
}

bc_status wk_rollout_from_tokens(const char *engine, const wk_shape *sh, const int32_t *prompts, int64_t samples,
                                 const int32_t *ids, wk_rollout *r, bc_error *err) {
    const int64_t rows = sh->rows, P = sh->prompt_length, R = sh->response_length;
    if (samples <= 0) return bc_error_set(err, BC_ERR_INTERNAL, "worker %s: %lld samples a prompt", engine, (long long)samples);
    bc_status st = size_rollout(engine, r, rows, P, R, err);
    if (st != BC_OK) return st;
    for (int64_t i = 0; i < rows; i++) {
        memcpy(r->prompt_ids + i * P, prompts + (i / samples) * P, (size_t)P * sizeof *prompts);
        memcpy(r->response_ids + i * R, ids + i * R, (size_t)R * sizeof *ids);
        r->prompt_lengths[i] = P, r->response_lengths[i] = R, r->row_stop[i] = BC_ROW_STOP_LENGTH;
    }
    r->generated_tokens = rows * R;
    r->has_logprobs = 0;
    return BC_OK;
}

bc_status wk_logprobs_take(const char *engine, const char *op, const char *key, const json_t *list, int64_t rows,
                           const int64_t *lengths, int64_t stride, float *out, bc_error *err) {
    char text[64];
    if (!json_is_array(list)) {
        if (!list) return bc_error_set(err, BC_ERR_DEVICE, "worker %s: %s: the reply has no %s", engine, op, key);
        wk_value_text(list, text, sizeof text);
        return bc_error_set(err, BC_ERR_DEVICE, "worker %s: %s: %s = %s is not a list of rows", engine, op, key, text);
    }
    if ((int64_t)json_array_size(list) != rows)
        return bc_error_set(err, BC_ERR_DEVICE, "worker %s: %s: %s has %zu rows, %lld were %s", engine, op, key,
                            json_array_size(list), (long long)rows, strcmp(op, "score") == 0 ? "sent" : "generated");
    for (int64_t i = 0; i < rows; i++) {
        const json_t *row = json_array_get(list, (size_t)i);
        if (!json_is_array(row) || (int64_t)json_array_size(row) != lengths[i]) {
            if (json_is_array(row))
                return bc_error_set(err, BC_ERR_DEVICE,
                                    "worker %s: %s: %s[%lld] has %zu values, the row's response has %lld tokens",
                                    engine, op, key, (long long)i, json_array_size(row), (long long)lengths[i]);
            wk_value_text(row, text, sizeof text);
            return bc_error_set(err, BC_ERR_DEVICE, "worker %s: %s: %s[%lld] = %s is not a list of numbers", engine,
                                op, key, (long long)i, text);
        }
        for (int64_t t = 0; t < lengths[i]; t++) {
            const json_t *v = json_array_get(row, (size_t)t);
            double x = json_is_number(v) ? json_number_value(v) : NAN;
            if (!json_is_number(v) || !isfinite(x) || !isfinite((float)x) || x > WK_MAX_LOGPROB) {
                wk_value_text(v, text, sizeof text);
                return bc_error_set(err, BC_ERR_DEVICE, "worker %s: %s: %s[%lld][%lld] = %s is %s (a log-probability)",
                                    engine, op, key, (long long)i, (long long)t, text,
                                    !json_is_number(v) ? "not a number"
                                    : x > WK_MAX_LOGPROB && isfinite(x) ? "above 0.001"
                                                                        : "not a finite float");
            }
            out[i * stride + t] = (float)x;
        }
    }
    return BC_OK;
}

int64_t wk_refit_max_bytes(int64_t n_parameters) {
    if (n_parameters <= 0 || n_parameters > (WK_MAX_EXACT - ((int64_t)64 << 20)) / 8) return WK_MAX_EXACT;
    return n_parameters * 8 + ((int64_t)64 << 20);
}

static bc_status take_bytes(const char *engine, const json_t *reply, const char *key, int64_t max_bytes, int64_t *out,
                            bc_error *err) {
    const json_t *v = json_object_get(reply, key);
    char text[64];
    if (!v) return bc_error_set(err, BC_ERR_DEVICE, "worker %s: refit: the reply has no %s (an integer)", engine, key);
    wk_value_text(v, text, sizeof text);
    if (!json_is_integer(v))
        return bc_error_set(err, BC_ERR_DEVICE, "worker %s: refit: %s = %s is not an integer", engine, key, text);
    json_int_t x = json_integer_value(v);
    if (x < 1 || x > max_bytes)
        return bc_error_set(err, BC_ERR_DEVICE,
                            "worker %s: refit: %s = %s is outside [1, %lld] (8 bytes a parameter of the model, and "
                            "64 MiB)",
                            engine, key, text, (long long)max_bytes);
    *out = x;
    return BC_OK;
}

bc_status wk_refit_take(const char *engine, const json_t *reply, int64_t max_bytes, wk_refit *out, bc_error *err) {
    memset(out, 0, sizeof *out);
    bc_status st = take_bytes(engine, reply, "source_bytes", max_bytes, &out->source_bytes, err);
    if (st == BC_OK) st = take_bytes(engine, reply, "engine_bytes", max_bytes, &out->engine_bytes, err);
    if (st != BC_OK) return st;
    const json_t *v = json_object_get(reply, "source");
    const char *s = json_string_value(v);
    size_t n = s ? strlen(s) : 0, ok = n >= 1 && n < sizeof out->source;
    for (size_t i = 0; ok && i < n; i++)
        ok = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-';
    if (!ok) {
        char text[64];
        wk_value_text(v, text, sizeof text);
        return bc_error_set(err, BC_ERR_DEVICE, "worker %s: refit: source = %s is not a word (a-z, 0-9, _, -; 1 to %zu "
                            "characters: \"host\", \"checkpoint\")", engine, v ? text : "(missing)",
                            sizeof out->source - 1);
    }
    memcpy(out->source, s, n + 1);
    return BC_OK;
}
