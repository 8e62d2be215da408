/* profile.c: a worker's describe and generate replies, checked (profile.h). */
#define _GNU_SOURCE
#include "profile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The largest integer a double holds exactly: byte counts stay below it. */
#define WK_MAX_EXACT ((int64_t)1 << 53)

/* a x b for a, b >= 0, saturating at INT64_MAX. */
static int64_t mul_sat(int64_t a, int64_t b) {
    if (a <= 0 || b <= 0) return 0;
    return a > INT64_MAX / b ? INT64_MAX : a * b;
}

void wk_value_text(const json_t *v, char *buf, size_t n) {
    if (json_is_integer(v)) {
        snprintf(buf, n, "%lld", (long long)json_integer_value(v));
    } else if (json_is_real(v)) {
        snprintf(buf, n, "%.6g", json_real_value(v));
    } else {
        char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_ENSURE_ASCII);
        size_t len = text ? strlen(text) : 0;
        snprintf(buf, n, "%.40s%s", text ? text : "?", len > 40 ? "..." : "");
        free(text);
    }
}

/* o[key] as an integer in [lo, hi] into *out: absent or null is -1 (an
 * error when required); another type or a value outside fails naming
 * "worker ENGINE: OP: WHERE.KEY = VALUE". */
static bc_status take_int(const char *engine, const char *op, const char *where, const json_t *o, const char *key,
                          int required, int64_t lo, int64_t hi, int64_t *out, bc_error *err) {
    const json_t *v = json_object_get(o, key);
    *out = -1;
    char text[64];
    if (!v || json_is_null(v)) {
        if (!required) return BC_OK;
        return bc_error_set(err, BC_ERR_DEVICE, "worker %s: %s: the reply has no %s%s%s (an integer)", engine, op,
                            where, *where ? "." : "", key);
    }
    wk_value_text(v, text, sizeof text);
    if (!json_is_integer(v))
        return bc_error_set(err, BC_ERR_DEVICE, "worker %s: %s: %s%s%s = %s is not an integer", engine, op, where,
                            *where ? "." : "", key, text);
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi)
        return bc_error_set(err, BC_ERR_DEVICE, "worker %s: %s: %s%s%s = %s is outside [%lld, %lld]", engine, op,
                            where, *where ? "." : "", key, text, (long long)lo, (long long)hi);
    *out = x;
    return BC_OK;
}

/* v, a time in ms, checked to be a number in [0, hi] into *out; null is NaN. */
static bc_status check_ms(const char *engine, const char *name, const json_t *v, double hi, double *out,
                          bc_error *err) {
    *out = NAN;
    if (!v || json_is_null(v)) return BC_OK;
    char text[64];
    wk_value_text(v, text, sizeof text);
    if (!json_is_number(v))
        return bc_error_set(err, BC_ERR_DEVICE, "worker %s: generate: %s = %s is not a number (ms)", engine, name,
                            text);
    double x = json_number_value(v);
    if (!isfinite(x) || x < 0 || x > hi)
        return bc_error_set(err, BC_ERR_DEVICE,
                            "worker %s: generate: %s = %s ms is outside [0, %.6g], the request's round trip", engine,
                            name, text, hi);
    *out = x;
    return BC_OK;
}

bc_status wk_description_take(const char *engine, const json_t *r, wk_description *d, bc_error *err) {
    static const struct {
        const char *key;
        size_t offset;
        int64_t lo, hi;
    } keys[] = {
        {"max_positions", offsetof(wk_description, max_positions), 1, INT32_MAX},
        {"parameters", offsetof(wk_description, n_parameters), 0, WK_MAX_EXACT},
        {"n_layers", offsetof(wk_description, n_layers), 1, INT32_MAX},
        {"hidden_size", offsetof(wk_description, hidden_size), 1, INT32_MAX},
        {"n_heads", offsetof(wk_description, n_heads), 1, INT32_MAX},
        {"ffn_size", offsetof(wk_description, ffn_size), 1, INT32_MAX},
    };
    bc_status st = take_int(engine, "describe", "", r, "vocab_size", 1, 4, WK_MAX_VOCAB, &d->vocab_size, err);
    for (size_t i = 0; st == BC_OK && i < sizeof keys / sizeof keys[0]; i++)
        st = take_int(engine, "describe", "", r, keys[i].key, 0, keys[i].lo, keys[i].hi,
                      (int64_t *)((char *)d + keys[i].offset), err);
    return st;
}

/* The profile's decode_step_ms: null or a list of at most max_steps times
 * in [0, hi] whose sum is at most hi too. */
static bc_status take_steps(const char *engine, const json_t *list, size_t max_steps, double hi, wk_profile *p,
                            double **steps, size_t *cap, bc_error *err) {
    p->n_steps = 0;
    if (!list || json_is_null(list)) return BC_OK;
    char text[64];
    size_t n = json_array_size(list);
    if (!json_is_array(list)) {
        wk_value_text(list, text, sizeof text);
        return bc_error_set(err, BC_ERR_DEVICE, "worker %s: generate: profile.decode_step_ms = %s is not a list",
                            engine, text);
    }
    if (n > max_steps)
        return bc_error_set(err, BC_ERR_DEVICE,
                            "worker %s: generate: profile.decode_step_ms has %zu steps, more than the case's %zu "
                            "tokens",
                            engine, n, max_steps);
    if (n > *cap) {
        double *q = realloc(*steps, n * sizeof *q);
        if (!q) return bc_error_set(err, BC_ERR_NOMEM, "worker %s: no memory for %zu decode step times", engine, n);
        *steps = q, *cap = n;
    }
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "profile.decode_step_ms[%zu]", i);
        const json_t *v = json_array_get(list, i);
        bc_status st = check_ms(engine, name, v, hi, &(*steps)[i], err);
        if (st == BC_OK && json_is_null(v))
            st = bc_error_set(err, BC_ERR_DEVICE, "worker %s: generate: %s is null", engine, name);
        if (st != BC_OK) return st;
        sum += (*steps)[i];
    }
    if (sum > hi)
        return bc_error_set(err, BC_ERR_DEVICE,
                            "worker %s: generate: profile.decode_step_ms sums to %.6g ms, more than the request's "
                            "round trip (%.6g ms)",
                            engine, sum, hi);
    p->n_steps = n;
    return BC_OK;
}

bc_status wk_profile_take(const char *engine, const json_t *profile, const wk_shape *sh, double round_trip_ms,
                          wk_profile *p, double **steps, size_t *cap, bc_error *err) {
    static const char *const stages[3] = {"prompt_expansion_ms", "generation_ms", "post_processing_ms"};
    memset(p, 0, sizeof *p);
    if (!json_is_object(profile))
        return bc_error_set(err, BC_ERR_DEVICE, "worker %s: generate: the reply has no \"profile\" object", engine);
    /* every time is measured inside the request: the round trip bounds it
     * (with 1 % and 1 ms for the two clocks' granularity) */
    double hi = isfinite(round_trip_ms) && round_trip_ms >= 0 ? round_trip_ms * 1.01 + 1.0 : WK_MAX_MS;
    if (hi > WK_MAX_MS) hi = WK_MAX_MS;
    const int64_t tokens = mul_sat(sh->rows, sh->response_length);
    bc_status st = take_int(engine, "generate", "profile", profile, "num_generated_tokens", 1, 0, INT64_MAX,
                            &p->num_generated_tokens, err);
    if (st == BC_OK && sh->generated_tokens > 0 && p->num_generated_tokens != sh->generated_tokens)
        return bc_error_set(err, BC_ERR_DEVICE,
                            "worker %s: generate: profile.num_generated_tokens = %lld is not the rollout's response "
                            "lengths summed = %lld",
                            engine, (long long)p->num_generated_tokens, (long long)sh->generated_tokens);
    if (st == BC_OK && sh->generated_tokens <= 0 && p->num_generated_tokens != tokens)
        return bc_error_set(err, BC_ERR_DEVICE,
                            "worker %s: generate: profile.num_generated_tokens = %lld is not the case's rows x "
                            "response_length = %lld x %lld = %lld",
                            engine, (long long)p->num_generated_tokens, (long long)sh->rows,
                            (long long)sh->response_length, (long long)tokens);
    /* a decode forward makes at least one token; a prefill forward takes at least one prompt token */
    if (st == BC_OK)
        st = take_int(engine, "generate", "profile", profile, "num_decode_forwards", 0, 0, tokens,
                      &p->num_decode_forwards, err);
    if (st == BC_OK)
        st = take_int(engine, "generate", "profile", profile, "num_prefill_forwards", 0, 0,
                      mul_sat(sh->rows, sh->prompt_length), &p->num_prefill_forwards, err);
    if (st == BC_OK)
        st = take_int(engine, "generate", "profile", profile, "continuous_batch_size", 0, 0, INT32_MAX,
                      &p->continuous_batch_size, err);
    if (st == BC_OK)
        st = take_int(engine, "generate", "profile", profile, "peak_memory_bytes", 0, 0, WK_MAX_EXACT,
                      &p->peak_memory_bytes, err);
    char name[64];
    double sum = 0;
    for (int i = 0; st == BC_OK && i < 3; i++) {
        snprintf(name, sizeof name, "profile.%s", stages[i]);
        st = check_ms(engine, name, json_object_get(profile, stages[i]), hi, &p->stage_ms[i], err);
        sum += p->stage_ms[i]; /* NaN when one is not measured */
    }
    if (st == BC_OK && sum > hi)
        return bc_error_set(err, BC_ERR_DEVICE,
                            "worker %s: generate: the profile's three stage times sum to %.6g ms, more than the "
                            "request's round trip (%.6g ms)",
                            engine, sum, hi);
    p->engine_total_ms = sum;
    static const struct {
        const char *key;
        size_t offset;
    } times[] = {
        {"prefill_forward_ms", offsetof(wk_profile, prefill_forward_ms)},
        {"decode_forward_ms", offsetof(wk_profile, decode_forward_ms)},
        {"time_to_first_token_ms", offsetof(wk_profile, first_token_ms)},
        {"scheduler_overhead_ms", offsetof(wk_profile, scheduler_overhead_ms)},
        {"cache_management_overhead_ms", offsetof(wk_profile, cache_management_overhead_ms)},
    };
    for (size_t i = 0; st == BC_OK && i < sizeof times / sizeof times[0]; i++) {
        snprintf(name, sizeof name, "profile.%s", times[i].key);
        st = check_ms(engine, name, json_object_get(profile, times[i].key), hi,
                      (double *)((char *)p + times[i].offset), err);
    }
    if (st == BC_OK)
        st = take_steps(engine, json_object_get(profile, "decode_step_ms"), (size_t)tokens, hi, p, steps, cap, err);
    return st;
}

bc_status wk_tokens_take(const char *engine, const json_t *tokens, const wk_shape *sh, int32_t **ids, size_t *cap,
                         bc_error *err) {
    char text[64];
    if (!json_is_array(tokens)) {
        if (!tokens) return bc_error_set(err, BC_ERR_DEVICE, "worker %s: generate: the case asked for tokens "
                                                             "(return_tokens) and the reply has none", engine);
        wk_value_text(tokens, text, sizeof text);
        return bc_error_set(err, BC_ERR_DEVICE, "worker %s: generate: tokens = %s is not a list of rows", engine,
                            text);
    }
    const size_t rows = json_array_size(tokens);
    if ((int64_t)rows != sh->rows)
        return bc_error_set(err, BC_ERR_DEVICE, "worker %s: generate: tokens has %zu rows, the case has %lld", engine,
                            rows, (long long)sh->rows);
    const size_t cols = (size_t)sh->response_length, n = rows * cols;
    if (n > *cap) {
        int32_t *q = realloc(*ids, n * sizeof *q);
        if (!q) return bc_error_set(err, BC_ERR_NOMEM, "worker %s: no memory for %zu tokens", engine, n);
        *ids = q, *cap = n;
    }
    for (size_t r = 0; r < rows; r++) {
        const json_t *row = json_array_get(tokens, r);
        if (!json_is_array(row) || json_array_size(row) != cols) {
            if (json_is_array(row))
                return bc_error_set(err, BC_ERR_DEVICE,
                                    "worker %s: generate: tokens[%zu] has %zu tokens, the case's response_length is "
                                    "%zu",
                                    engine, r, json_array_size(row), cols);
            wk_value_text(row, text, sizeof text);
            return bc_error_set(err, BC_ERR_DEVICE, "worker %s: generate: tokens[%zu] = %s is not a list of ids",
                                engine, r, text);
        }
        for (size_t t = 0; t < cols; t++) {
            const json_t *v = json_array_get(row, t);
            json_int_t id = json_is_integer(v) ? json_integer_value(v) : -1;
            if (!json_is_integer(v) || id < 0 || id >= sh->vocab_size) {
                wk_value_text(v, text, sizeof text);
                return bc_error_set(err, BC_ERR_DEVICE,
                                    "worker %s: generate: tokens[%zu][%zu] = %s is %s [0, %lld), the vocabulary",
                                    engine, r, t, text, json_is_integer(v) ? "outside" : "not an id in",
                                    (long long)sh->vocab_size);
            }
            (*ids)[r * cols + t] = (int32_t)id;
        }
    }
    return BC_OK;
}
