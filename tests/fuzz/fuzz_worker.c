/* fuzz_worker.c: fuzz target for what the worker backend reads from a
 * worker's stdout (plugins/worker: client.c's line reading and hello
 * parsing, profile.c's checks of describe and generate replies). The first
 * byte of the input chooses what the rest is:
 *   0 mod 3: a hello line. Parsed as the client parses a line (JSON, no
 *      duplicate keys, any value), then as a hello: it must succeed or fail
 *      with a one-line message; a parsed hello has at most WK_MAX_SETTINGS
 *      settings and WK_MAX_METRICS metrics, each named, no name twice, none
 *      the plugin's own, every metric's range finite and ordered.
 *   1 mod 3: a generate reply for a case whose shape is the next four bytes
 *      (rows 1..8, prompt 1..16, response 1..16, vocab 4..1027) and whose
 *      round trip is the next byte in ms; a profile that passes holds
 *      num_generated_tokens = rows x response, at most that many decode
 *      forwards, every time finite in [0, the round trip bound] (the three
 *      stages' sum too), every step time too; tokens that pass are rows x
 *      response ids in [0, vocab).
 *   2 mod 3: a describe reply: one that passes has vocab_size in [4, 2^31)
 *      and every optional number -1 or in its range.
 * Static internals are reached by including client.c (libssh's way).
 * Built as fuzz_worker (libFuzzer, BENCHCTL_FUZZ=ON) and always as
 * fuzz_worker_replay over tests/fuzz/corpus/worker. */
#include "../../plugins/worker/client.c"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const k_reserved[] = {"command", "env", "timeout_s", "save_tokens", NULL};

/* A message is one line, non-empty. */
static void check_message(const bc_error *err) {
    if (!err->message[0] || strchr(err->message, '\n')) abort();
}

static void fuzz_hello(const char *line, size_t len) {
    wk_client c;
    memset(&c, 0, sizeof c);
    c.cmd.reserved = k_reserved;
    json_error_t je;
    json_t *o = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
    wk_hello h;
    memset(&h, 0, sizeof h);
    bc_error err = {0};
    if (!o) return;
    bc_status st = parse_hello(&c, o, &h, &err);
    json_decref(o);
    if (st != BC_OK) {
        check_message(&err);
        wk_hello_free(&h);
        return;
    }
    if (h.n_settings > WK_MAX_SETTINGS || h.n_metrics > WK_MAX_METRICS || !h.engine || !h.device) abort();
    for (uint32_t i = 0; i < h.n_settings; i++) {
        if (!h.settings[i].name || !h.settings[i].name[0]) abort();
        for (const char *const *r = k_reserved; *r; r++)
            if (!strcmp(*r, h.settings[i].name)) abort();
        for (uint32_t k = 0; k < i && h.n_settings <= 256; k++)
            if (!strcmp(h.settings[k].name, h.settings[i].name)) abort();
    }
    for (uint32_t i = 0; i < h.n_metrics; i++) {
        const wk_metric *m = &h.metrics[i];
        if (!isfinite(m->min) || !isfinite(m->max) || m->min > m->max || !m->desc.name || !m->desc.unit) abort();
    }
    wk_hello_free(&h);
}

static void fuzz_generate(const uint8_t *data, size_t size) {
    if (size < 5) return;
    wk_shape sh = {.rows = 1 + data[0] % 8, .prompt_length = 1 + data[1] % 16, .response_length = 1 + data[2] % 16,
                   .vocab_size = 4 + data[3] % 1024};
    double round_trip_ms = data[4] == 255 ? NAN : (double)data[4];
    json_error_t je;
    json_t *o = json_loadb((const char *)data + 5, size - 5, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
    if (!o) return;
    wk_profile p;
    double *steps = NULL;
    size_t step_cap = 0, id_cap = 0;
    int32_t *ids = NULL;
    bc_error err = {0};
    bc_status st = wk_profile_take("fuzz", json_object_get(o, "profile"), &sh, round_trip_ms, &p, &steps, &step_cap,
                                   &err);
    if (st != BC_OK) {
        check_message(&err);
    } else {
        const double hi = isfinite(round_trip_ms) ? round_trip_ms * 1.01 + 1.0 : WK_MAX_MS;
        const int64_t tokens = sh.rows * sh.response_length;
        if (p.num_generated_tokens != tokens || p.num_decode_forwards < -1 || p.num_decode_forwards > tokens) abort();
        if (p.num_prefill_forwards > sh.rows * sh.prompt_length || p.peak_memory_bytes > ((int64_t)1 << 53)) abort();
        const double times[] = {p.stage_ms[0], p.stage_ms[1], p.stage_ms[2], p.engine_total_ms, p.prefill_forward_ms,
                                p.decode_forward_ms, p.first_token_ms, p.scheduler_overhead_ms,
                                p.cache_management_overhead_ms};
        for (size_t i = 0; i < sizeof times / sizeof times[0]; i++)
            if (!isnan(times[i]) && !(times[i] >= 0 && times[i] <= hi)) abort();
        if (p.n_steps > (size_t)tokens) abort();
        for (size_t i = 0; i < p.n_steps; i++)
            if (!(steps[i] >= 0 && steps[i] <= hi)) abort();
    }
    err.message[0] = '\0';
    if (wk_tokens_take("fuzz", json_object_get(o, "tokens"), &sh, &ids, &id_cap, &err) == BC_OK) {
        for (int64_t i = 0; i < sh.rows * sh.response_length; i++)
            if (ids[i] < 0 || ids[i] >= sh.vocab_size) abort();
    } else {
        check_message(&err);
    }
    free(steps);
    free(ids);
    json_decref(o);
}

static void fuzz_describe(const char *line, size_t len) {
    json_error_t je;
    json_t *o = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
    if (!o) return;
    wk_description d;
    bc_error err = {0};
    if (wk_description_take("fuzz", o, &d, &err) == BC_OK) {
        if (d.vocab_size < 4 || d.vocab_size > INT32_MAX || d.max_positions == 0 || d.n_layers == 0 ||
            d.n_parameters < -1 || d.n_parameters > ((int64_t)1 << 53))
            abort();
    } else {
        check_message(&err);
    }
    json_decref(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    /* a private copy, so ASan sees the exact bounds */
    uint8_t *buf = malloc(size - 1 ? size - 1 : 1);
    if (!buf) return 0;
    memcpy(buf, data + 1, size - 1);
    switch (data[0] % 3) {
    case 0: fuzz_hello((const char *)buf, size - 1); break;
    case 1: fuzz_generate(buf, size - 1); break;
    default: fuzz_describe((const char *)buf, size - 1); break;
    }
    free(buf);
    return 0;
}
