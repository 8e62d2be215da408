/* worker_plugin.c: the `worker` backend: a rollout engine in a child process,
 * driven through the worker protocol (docs/plugins.md, "Worker protocol";
 * client.h speaks it, proc.h owns the process).
 *
 * The engine's settings are its own: more_settings starts the worker, reads
 * the table its hello declares and hands it to the host, which validates
 * bench.cfg against it like any plugin's. create starts the worker again,
 * configures it with the resolved values and asks it to describe its model.
 *
 * One rollout is one `generate` request, sent from the generate hook:
 * expand_prompts and post_process do nothing here, so the host's
 * generation_ms is the whole round trip. The engine's own stage times are
 * the declared metric engine_total_ms (the host derives
 * protocol_overhead_ms from it), and the metrics the worker's hello
 * declares are its profile's extra keys, each value checked (a number,
 * finite, in the declared range) before it reaches the host.
 *
 * What the engine does beyond rollouts its describe reply lists
 * ("capabilities", docs/pyworkers.md): "rollout" (each generate reply
 * carries the rollout, read back by read_rollout), "logprobs" (and each
 * response token's log-probability), "score" (the score hook sends a
 * `score` request), "refit" (the refit hook sends a `refit` request). The
 * hooks are always in the table (the host calls read_rollout after every
 * rollout): for an engine without "rollout", every case asks for the
 * tokens (return_tokens) and read_rollout hands back the host's prompts
 * and those tokens, every row stopped at the length (protocol 1: each row
 * generates exactly response_length) and no log-probabilities; score and
 * refit for an engine without them refuse with one line naming the engine.
 * Every value of those replies is checked before use (rollout.h).
 *
 * A worker that fails (exits, hangs, writes garbage) fails the hook that was
 * talking to it; the client stops it, and the next begin_case starts a new
 * one, so the run goes on with the next case.
 */
#define _GNU_SOURCE
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benchctl/plugin.h"
#include "client.h"
#include "command.h"
#include "profile.h"
#include "rollout.h"
#include "../common/synthetic_prompts.h"

enum { S_COMMAND = 0, S_ENV, S_TIMEOUT_S, S_SAVE_TOKENS, N_OWN_SETTINGS };

static const bc_setting_desc worker_settings[N_OWN_SETTINGS] = {
    [S_COMMAND] = {.name = "command", .type = BC_SETTING_STRING, .default_string = "",
                   .help = "the worker's command line, split on spaces ('...' or \"...\" group words), e.g. "
                           "\"python3 -m benchctl_worker transformers\""},
    [S_ENV] = {.name = "env", .type = BC_SETTING_STRING, .default_string = "",
               .help = "KEY=VALUE pairs, space-separated, added to the worker's environment"},
    [S_TIMEOUT_S] = {.name = "timeout_s", .type = BC_SETTING_FLOAT, .default_float = 600.0, .has_range = 1,
                     .min = 0.001, .max = 1e7,
                     .help = "seconds the worker may take for its hello and for each request; then it is stopped"},
    [S_SAVE_TOKENS] = {.name = "save_tokens", .type = BC_SETTING_STRING, .default_string = "",
                       .help = "greedy float32 cases: write the last rollout's tokens here, one row a line "
                               "({case} = the case's index), as opt's save_tokens"},
};

/* The plugin's own metric (ABI 2.4); the hello's follow it (more_metrics). */
enum { M_ENGINE_TOTAL_MS = 0, N_OWN_METRICS };

static const bc_metric_desc worker_metrics[N_OWN_METRICS] = {
    [M_ENGINE_TOTAL_MS] = {.name = "engine_total_ms", .unit = "ms", .better = BC_BETTER_LOWER,
                           .scope = BC_METRIC_PER_ITERATION,
                           .help = "the engine's own three stage times from the profile, summed"},
};

static const char *const reserved_names[] = {"command", "env", "timeout_s", "save_tokens", NULL};

/* The worker's command, env and timeout, from the plugin's own settings. */
static bc_status launch_init(wk_launch *l, const bc_settings *s, bc_error *err) {
    return wk_launch_init(l, bc_setting_at(s, S_COMMAND)->s, bc_setting_at(s, S_ENV)->s,
                          bc_setting_at(s, S_TIMEOUT_S)->f, reserved_names, err);
}

/* ----------------------------------------------------------- more_settings */

static bc_status worker_more_settings(const bc_host *host, const bc_settings *settings, const bc_setting_desc **rows,
                                      uint32_t *n_rows, uint32_t *row_size, bc_error *err) {
    *rows = NULL, *n_rows = 0, *row_size = sizeof(bc_setting_desc);
    if (bc_setting_at(settings, S_COMMAND)->s[0] == '\0') return BC_OK; /* create says it is missing */
    wk_launch l;
    bc_status st = launch_init(&l, settings, err);
    if (st != BC_OK) return st;
    wk_client c;
    wk_hello hello;
    st = wk_client_start(&c, host, &l.cmd, &hello, err);
    if (st == BC_OK) {
        wk_client_shutdown(&c);
        *rows = hello.settings, *n_rows = hello.n_settings;
        hello.settings = NULL, hello.n_settings = 0; /* now the host's until free_more_settings */
        wk_hello_free(&hello);
    }
    wk_launch_free(&l);
    return st;
}

static void worker_free_more_settings(const bc_setting_desc *rows, uint32_t n_rows) {
    wk_setting_rows_free((bc_setting_desc *)rows, n_rows);
}

/* --------------------------------------------------------------- instance */

typedef struct worker {
    const bc_host *host;
    const bc_settings *settings; /* host-owned, until destroy */
    wk_launch launch;
    wk_client client;
    wk_hello hello;              /* of the worker now (or last) running */
    /* the first hello's metrics, owned (a restarted worker must declare the
     * same), and the last rollout's values: N_OWN_METRICS, then those */
    wk_metric *metrics;
    uint32_t n_metrics;
    double metric_values[N_OWN_METRICS + WK_MAX_METRICS];
    /* what describe said; describe's strings point here, so they stay valid
     * across restarts until destroy */
    char model_text[320], device[64], engine_version[64], model_family[64], device_name[128];
    json_t *dtypes;              /* a list of strings, owned */
    int64_t vocab_size, max_positions, n_parameters, n_layers, hidden_size, n_heads, ffn_size;
    /* the case */
    int in_case;
    bc_case c;                   /* a copy; pointers cleared */
    bc_sampling sampling;
    char dtype[32];
    json_t *begin_args;          /* the begin_case request's fields, owned */
    int warmup;                  /* 1 until reset_peak_memory */
    uint32_t iteration;
    int want_tokens;
    int ask_tokens;              /* return_tokens: want_tokens, or every case of an engine without "rollout" */
    json_t *tokens;              /* the last rollout's, owned, when want_tokens */
    int32_t *token_ids;          /* the same, checked: rows x response_length ids, owned */
    size_t token_cap;
    double *step_ms;             /* decode_step_ms of the last rollout, owned */
    size_t step_cap;
    int64_t peak_bytes;          /* the largest peak_memory_bytes since reset_peak_memory, -1 unknown */
    /* describe's capabilities */
    int can_rollout, can_logprobs, can_score, can_refit;
    int32_t *prompts;            /* the case's prompts as sent: batch_size x prompt_length ids, owned */
    size_t prompt_cap;
    wk_rollout rollout;          /* the last rollout's, checked, when can_rollout */
    int have_rollout;            /* 1 once a generate of this case carried it */
    wk_refit refit;              /* the last refit's (its source backs bc_refit_stats.source) */
} worker;

static const char *json_str(const json_t *o, const char *key) { return json_string_value(json_object_get(o, key)); }

static void forget_description(worker *w) {
    json_decref(w->dtypes);
    w->dtypes = NULL;
}

/* buf := s, or "" for NULL. */
static void keep_text(char *buf, size_t n, const char *s) { snprintf(buf, n, "%s", s ? s : ""); }

/* The configure request's settings: every row of the hello with its
 * resolved value (the host appended the hello's rows after ours). */
static bc_status configure_args(worker *w, json_t **out, bc_error *err) {
    uint32_t n = w->hello.n_settings;
    int resolved = w->settings->count == N_OWN_SETTINGS + n;
    if (!resolved && w->settings->count != N_OWN_SETTINGS)
        return bc_error_set(err, BC_ERR_SETTING,
                            "worker %s: its hello declares %u settings, %u when bench.cfg was checked: start the run "
                            "again",
                            w->client.engine, (unsigned)n, (unsigned)(w->settings->count - N_OWN_SETTINGS));
    json_t *values = json_object();
    for (uint32_t i = 0; values && i < n; i++) {
        const bc_setting_desc *d = &w->hello.settings[i];
        bc_setting_value v = {.i = d->default_int, .f = d->default_float, .s = d->default_string};
        if (resolved) v = *bc_setting_at(w->settings, N_OWN_SETTINGS + i);
        json_t *x = d->type == BC_SETTING_INT     ? json_integer((json_int_t)v.i)
                    : d->type == BC_SETTING_FLOAT ? json_real(v.f)
                    : d->type == BC_SETTING_BOOL  ? json_boolean(v.i)
                                                  : json_string(v.s ? v.s : "");
        json_object_set_new(values, d->name, x);
    }
    json_t *args = json_pack("{s:o}", "settings", values);
    if (!args) return bc_error_set(err, BC_ERR_NOMEM, "worker: no memory for configure");
    *out = args;
    return BC_OK;
}

/* describe's "capabilities": absent (none), or a list of words; those
 * this plugin knows set their flag ("logprobs" implies "rollout"), others
 * are ignored (a later protocol's). */
static bc_status take_capabilities(worker *w, const json_t *caps, bc_error *err) {
    w->can_rollout = w->can_logprobs = w->can_score = w->can_refit = 0;
    if (!caps || json_is_null(caps)) return BC_OK;
    size_t i;
    json_t *v;
    if (!json_is_array(caps) || json_array_size(caps) > 64)
        return bc_error_set(err, BC_ERR_DEVICE, "worker %s: describe: capabilities must be a list of at most 64 words",
                            w->client.engine);
    json_array_foreach(caps, i, v) {
        const char *c = json_string_value(v);
        if (!c)
            return bc_error_set(err, BC_ERR_DEVICE, "worker %s: describe: capabilities[%zu] is not a string",
                                w->client.engine, i);
        if (strcmp(c, "rollout") == 0) w->can_rollout = 1;
        else if (strcmp(c, "logprobs") == 0) w->can_logprobs = w->can_rollout = 1;
        else if (strcmp(c, "score") == 0) w->can_score = 1;
        else if (strcmp(c, "refit") == 0) w->can_refit = 1;
    }
    return BC_OK;
}

/* Keeps what describe's reply says. */
static bc_status take_description(worker *w, const json_t *r, bc_error *err) {
    forget_description(w);
    const char *model = json_str(r, "model");
    json_t *dtypes = json_object_get(r, "dtypes");
    if (!model || !json_is_array(dtypes)) {
        wk_client_kill(&w->client);
        return bc_error_set(err, BC_ERR_DEVICE,
                            "worker %s: describe: the reply needs \"model\", \"dtypes\" (a list) and \"vocab_size\"",
                            w->client.engine);
    }
    wk_description d;
    bc_status st = wk_description_take(w->client.engine, r, &d, err);
    if (st != BC_OK) {
        wk_client_kill(&w->client);
        return st;
    }
    w->vocab_size = d.vocab_size, w->max_positions = d.max_positions, w->n_parameters = d.n_parameters;
    w->n_layers = d.n_layers, w->hidden_size = d.hidden_size, w->n_heads = d.n_heads, w->ffn_size = d.ffn_size;
    keep_text(w->model_family, sizeof w->model_family, json_str(r, "model_family"));
    keep_text(w->device_name, sizeof w->device_name, json_str(r, "device_name"));
    /* describe's device is the configured one; the hello, written before configure, has the default's */
    const char *device = json_str(r, "device");
    keep_text(w->device, sizeof w->device, device && device[0] ? device : w->hello.device);
    keep_text(w->engine_version, sizeof w->engine_version, w->hello.engine_version);
    w->dtypes = json_incref(dtypes);
    if ((st = take_capabilities(w, json_object_get(r, "capabilities"), err)) != BC_OK) {
        wk_client_kill(&w->client);
        return st;
    }
    snprintf(w->model_text, sizeof w->model_text, "%s (%s %s)", model, w->hello.engine, w->hello.engine_version);
    return BC_OK;
}

/* Starts a worker, configures it and reads its description. */
static bc_status start_worker(worker *w, bc_error *err) {
    wk_hello_free(&w->hello);
    bc_status st = wk_client_start(&w->client, w->host, &w->launch.cmd, &w->hello, err);
    if (st != BC_OK) return st;
    if (!w->metrics) { /* the first hello's metrics are the instance's */
        w->metrics = w->hello.metrics, w->n_metrics = w->hello.n_metrics;
        w->hello.metrics = NULL, w->hello.n_metrics = 0;
    } else {
        int same = w->hello.n_metrics == w->n_metrics;
        for (uint32_t i = 0; same && i < w->n_metrics; i++)
            same = strcmp(w->hello.metrics[i].desc.name, w->metrics[i].desc.name) == 0;
        if (!same) {
            wk_client_kill(&w->client);
            return bc_error_set(err, BC_ERR_DEVICE, "worker %s: the restarted worker's hello declares other metrics "
                                "than its first", w->hello.engine);
        }
    }
    json_t *args = NULL, *reply = NULL;
    if ((st = configure_args(w, &args, err)) == BC_OK) st = wk_client_call(&w->client, "configure", args, NULL, NULL, err);
    json_decref(args);
    if (st == BC_OK && (st = wk_client_call(&w->client, "describe", NULL, &reply, NULL, err)) == BC_OK)
        st = take_description(w, reply, err);
    json_decref(reply);
    if (st != BC_OK) wk_client_kill(&w->client);
    return st;
}

static void worker_destroy(void *instance) {
    worker *w = instance;
    if (!w) return;
    wk_client_shutdown(&w->client);
    wk_hello_free(&w->hello);
    wk_metric_rows_free(w->metrics, w->n_metrics);
    forget_description(w);
    json_decref(w->begin_args);
    json_decref(w->tokens);
    free(w->token_ids);
    free(w->step_ms);
    free(w->prompts);
    wk_rollout_free(&w->rollout);
    wk_launch_free(&w->launch);
    free(w);
}

static bc_status worker_create(const bc_host *host, const bc_settings *settings, void **out, bc_error *err) {
    worker *w = calloc(1, sizeof *w);
    if (!w) return bc_error_set(err, BC_ERR_NOMEM, "worker: no memory");
    w->host = host;
    w->settings = settings;
    w->peak_bytes = -1;
    bc_status st = launch_init(&w->launch, settings, err);
    if (st == BC_OK) st = start_worker(w, err);
    if (st != BC_OK) {
        worker_destroy(w);
        return st;
    }
    *out = w;
    return BC_OK;
}

static bc_status worker_describe(void *instance, bc_backend_info *info, bc_error *err) {
    (void)err;
    worker *w = instance;
    BC_SET(info, bc_backend_info, model, w->model_text);
    BC_SET(info, bc_backend_info, device, w->device);
    BC_SET(info, bc_backend_info, device_name, w->device_name[0] ? w->device_name : NULL);
    BC_SET(info, bc_backend_info, driver, w->engine_version);
    BC_SET(info, bc_backend_info, model_family, w->model_family[0] ? w->model_family : NULL);
    BC_SET(info, bc_backend_info, n_parameters, w->n_parameters);
    BC_SET(info, bc_backend_info, n_layers, w->n_layers);
    BC_SET(info, bc_backend_info, hidden_size, w->hidden_size);
    BC_SET(info, bc_backend_info, n_heads, w->n_heads);
    BC_SET(info, bc_backend_info, ffn_size, w->ffn_size);
    BC_SET(info, bc_backend_info, vocab_size, w->vocab_size);
    BC_SET(info, bc_backend_info, max_positions, w->max_positions);
    return BC_OK;
}

static int runs_dtype(const worker *w, const char *dtype) {
    size_t i;
    json_t *v;
    json_array_foreach(w->dtypes, i, v) if (json_is_string(v) && strcmp(json_string_value(v), dtype) == 0) return 1;
    return 0;
}

static bc_status worker_check_case(void *instance, const bc_case *c, bc_error *err) {
    worker *w = instance;
    const char *dtype = c->precision_ops ? c->precision_ops->dtype : c->precision;
    if (c->prompt_length == 0)
        return bc_error_set(err, BC_ERR_SETTING,
                            "worker %s: prompt length 0 means a prompts file, which the worker backend has not", w->hello.engine);
    if (!runs_dtype(w, dtype)) {
        char *list = json_dumps(w->dtypes, JSON_COMPACT);
        bc_error_set(err, BC_ERR_UNSUPPORTED, "worker %s: the engine does not run %s (it runs %s)", w->hello.engine,
                     dtype, list ? list : "?");
        free(list);
        return BC_ERR_UNSUPPORTED;
    }
    if (w->max_positions > 0 && (int64_t)c->prompt_length + c->response_length > w->max_positions)
        return bc_error_set(err, BC_ERR_INFEASIBLE,
                            "worker %s: prompt of %u tokens + response of %u tokens exceed the model's %lld positions",
                            w->hello.engine, c->prompt_length, c->response_length, (long long)w->max_positions);
    return BC_OK;
}

/* The begin_case request's fields for case c: its shape, sampling and the
 * synthetic prompts (plugins/common/synthetic_prompts.h). */
static bc_status begin_case_args(worker *w, const bc_case *c, json_t **out, bc_error *err) {
    const bc_sampling *s = c->sampling;
    int greedy = !(s->temperature > 0);
    const char *dtype = c->precision_ops ? c->precision_ops->dtype : c->precision;
    w->want_tokens = greedy && strcmp(dtype, "float32") == 0; /* the token agreement, and save_tokens */
    w->ask_tokens = w->want_tokens || !w->can_rollout;        /* and read_rollout's tokens without a rollout */
    json_t *cs = json_pack("{s:I, s:I, s:I, s:I, s:s, s:I, s:b, s:f, s:I, s:f, s:b, s:b}", "batch_size",
                           (json_int_t)c->batch_size, "samples_per_prompt", (json_int_t)c->samples_per_prompt,
                           "prompt_length", (json_int_t)c->prompt_length, "response_length",
                           (json_int_t)c->response_length, "dtype", dtype, "seed", (json_int_t)s->seed, "do_sample",
                           !greedy, "temperature", greedy ? 1.0 : s->temperature, "top_k", (json_int_t)s->top_k,
                           "top_p", s->top_p, "return_tokens", w->ask_tokens, "release_cache",
                           c->release_cache != 0);
    if (cs && w->can_rollout) json_object_set_new(cs, "return_rollout", json_true());
    json_t *prompts = json_array();
    const size_t n_ids = (size_t)c->batch_size * c->prompt_length;
    bc_status st = BC_OK;
    if (n_ids > w->prompt_cap) {
        int32_t *q = realloc(w->prompts, n_ids * sizeof *q);
        if (q) w->prompts = q, w->prompt_cap = n_ids;
    }
    if (!cs || !prompts || n_ids > w->prompt_cap) st = bc_error_set(err, BC_ERR_NOMEM, "worker: no memory for the prompts");
    for (uint32_t b = 0; st == BC_OK && b < c->batch_size; b++) {
        int32_t *ids = w->prompts + (size_t)b * c->prompt_length; /* kept: the rollout's prompts are checked against them */
        bc_synthetic_prompt(s->seed, b, (int32_t)w->vocab_size, ids, (int32_t)c->prompt_length);
        json_t *row = json_array();
        for (uint32_t t = 0; row && t < c->prompt_length; t++) json_array_append_new(row, json_integer(ids[t]));
        if (!row || json_array_append_new(prompts, row))
            st = bc_error_set(err, BC_ERR_NOMEM, "worker: no memory for the prompts");
    }
    json_t *args = st == BC_OK ? json_pack("{s:O, s:O}", "case", cs, "prompt_ids", prompts) : NULL;
    json_decref(cs), json_decref(prompts);
    if (st == BC_OK && !args) st = bc_error_set(err, BC_ERR_NOMEM, "worker: no memory for the prompts");
    *out = args;
    return st;
}

static bc_status worker_begin_case(void *instance, const bc_case *c, bc_error *err) {
    worker *w = instance;
    bc_status st;
    if (!wk_client_running(&w->client) && (st = start_worker(w, err)) != BC_OK) return st;
    if ((st = worker_check_case(w, c, err)) != BC_OK) return st;
    json_decref(w->begin_args);
    w->begin_args = NULL;
    if ((st = begin_case_args(w, c, &w->begin_args, err)) != BC_OK) return st;
    w->c = *c;
    w->c.precision = w->c.cache_policy = NULL, w->c.precision_ops = NULL, w->c.sampling = NULL;
    w->sampling = *c->sampling;
    w->warmup = 1, w->iteration = 0, w->peak_bytes = -1;
    w->in_case = 1, w->have_rollout = 0;
    return wk_client_call(&w->client, "begin_case", w->begin_args, NULL, NULL, err);
}

static bc_status worker_expand_prompts(void *instance, bc_error *err) {
    (void)instance, (void)err;
    return BC_OK; /* the engine expands them inside the generate request */
}

static bc_status worker_post_process(void *instance, bc_error *err) {
    (void)instance, (void)err;
    return BC_OK; /* and post-processes there too */
}

/* The metrics of this rollout's profile into w->metric_values: the engine's
 * three stage times summed (checked by wk_profile_take; NaN when one is
 * not measured), then every key the hello declared: absent or null is not
 * measured; anything else must be a finite number in the declared range,
 * or the rollout fails naming the key. */
static bc_status take_metrics(worker *w, const json_t *profile, double engine_total_ms, bc_error *err) {
    w->metric_values[M_ENGINE_TOTAL_MS] = engine_total_ms;
    for (uint32_t i = 0; i < w->n_metrics; i++) {
        const wk_metric *m = &w->metrics[i];
        json_t *x = json_object_get(profile, m->desc.name);
        double *v = &w->metric_values[N_OWN_METRICS + i];
        *v = NAN;
        if (!x || json_is_null(x)) continue;
        if (!json_is_number(x))
            return bc_error_set(err, BC_ERR_DEVICE, "worker %s: generate: profile.%s is not a number", w->hello.engine,
                                m->desc.name);
        double got = json_number_value(x);
        if (!isfinite(got) || got < m->min || got > m->max)
            return bc_error_set(err, BC_ERR_DEVICE, "worker %s: generate: profile.%s = %g is outside [%g, %g]",
                                w->hello.engine, m->desc.name, got, m->min, m->max);
        *v = got;
    }
    return BC_OK;
}

static bc_status worker_more_metrics(void *instance, const bc_metric_desc **rows, uint32_t *n_rows,
                                     uint32_t *row_size, bc_error *err) {
    (void)err;
    worker *w = instance;
    *rows = w->n_metrics ? &w->metrics[0].desc : NULL;
    *n_rows = w->n_metrics;
    *row_size = sizeof(wk_metric); /* desc first, then the range: the host steps over it */
    return BC_OK;
}

static bc_status worker_read_metrics(void *instance, bc_metric_scope scope, double *values, uint32_t n,
                                     bc_error *err) {
    worker *w = instance;
    if (scope != BC_METRIC_PER_ITERATION) return BC_OK;
    if (n != N_OWN_METRICS + w->n_metrics)
        return bc_error_set(err, BC_ERR_INTERNAL, "worker: read_metrics with %u values, %u declared", n,
                            N_OWN_METRICS + w->n_metrics);
    memcpy(values, w->metric_values, n * sizeof *values);
    return BC_OK;
}

/* The tokens of a reply that carries both are the rollout's responses. */
static bc_status same_tokens(const worker *w, bc_error *err) {
    const wk_rollout *r = &w->rollout;
    const int64_t R = w->c.response_length;
    for (int64_t i = 0; i < r->rows; i++)
        for (int64_t t = 0; t < R; t++)
            if (t >= r->response_lengths[i] || w->token_ids[i * R + t] != r->response_ids[i * r->response_stride + t])
                return bc_error_set(err, BC_ERR_DEVICE,
                                    "worker %s: generate: tokens[%lld][%lld] is not rollout.response_ids[%lld][%lld]",
                                    w->hello.engine, (long long)i, (long long)t, (long long)i, (long long)t);
    return BC_OK;
}

static bc_status worker_generate(void *instance, bc_generation_stats *out, bc_error *err) {
    worker *w = instance;
    if (!wk_client_running(&w->client))
        return bc_error_set(err, BC_ERR_DEVICE, "worker %s: generate: the worker is not running", w->hello.engine);
    json_t *args = json_pack("{s:I, s:b}", "iteration", (json_int_t)w->iteration++, "warmup", w->warmup);
    json_t *reply = NULL;
    double round_trip_ms = NAN;
    bc_status st = wk_client_call(&w->client, "generate", args, &reply, &round_trip_ms, err);
    json_decref(args);
    if (st != BC_OK) return st;
    const int64_t rows = (int64_t)w->c.batch_size * w->c.samples_per_prompt;
    wk_shape sh = {.rows = rows, .prompt_length = w->c.prompt_length, .response_length = w->c.response_length,
                   .vocab_size = w->vocab_size};
    w->have_rollout = 0;
    json_decref(w->tokens); /* the last rollout's, gone whatever this reply holds */
    w->tokens = NULL;
    if (w->can_rollout) {
        st = wk_rollout_take(w->hello.engine, json_object_get(reply, "rollout"), &sh, w->prompts,
                             (int64_t)w->c.samples_per_prompt, w->can_logprobs, &w->rollout, err);
        if (st != BC_OK) {
            json_decref(reply);
            return st;
        }
        sh.generated_tokens = w->rollout.generated_tokens;
    }
    wk_profile p;
    const json_t *profile = json_object_get(reply, "profile");
    st = wk_profile_take(w->hello.engine, profile, &sh, round_trip_ms, &p, &w->step_ms, &w->step_cap, err);
    if (st == BC_OK) st = take_metrics(w, profile, p.engine_total_ms, err);
    if (st == BC_OK && w->ask_tokens) {
        st = wk_tokens_take(w->hello.engine, json_object_get(reply, "tokens"), &sh, &w->token_ids, &w->token_cap, err);
        if (st == BC_OK && w->want_tokens)
            w->tokens = json_incref(json_object_get(reply, "tokens")); /* save_tokens writes them */
        if (st == BC_OK && w->can_rollout) st = same_tokens(w, err);
        if (st == BC_OK && !w->can_rollout)
            st = wk_rollout_from_tokens(w->hello.engine, &sh, w->prompts, (int64_t)w->c.samples_per_prompt,
                                        w->token_ids, &w->rollout, err);
    }
    if (st == BC_OK) w->have_rollout = 1;
    json_decref(reply);
    if (st != BC_OK) return st;
    /* rows x forwards: both bounded by the case (profile.h), so no overflow */
    BC_SET(out, bc_generation_stats, num_generated_tokens, p.num_generated_tokens);
    BC_SET(out, bc_generation_stats, returned_response_length, rows > 0 ? p.num_generated_tokens / rows : -1);
    BC_SET(out, bc_generation_stats, prefill_forward_ms, p.prefill_forward_ms);
    BC_SET(out, bc_generation_stats, decode_forward_ms, p.decode_forward_ms);
    BC_SET(out, bc_generation_stats, num_decode_forwards, p.num_decode_forwards);
    BC_SET(out, bc_generation_stats, first_token_ms, p.first_token_ms);
    BC_SET(out, bc_generation_stats, num_prefill_tokens, rows * w->c.prompt_length);
    BC_SET(out, bc_generation_stats, num_decode_tokens,
           rows > 0 && p.num_decode_forwards >= 0 && p.num_decode_forwards <= INT64_MAX / rows
               ? rows * p.num_decode_forwards
               : -1);
    BC_SET(out, bc_generation_stats, prompt_width_tokens, (int64_t)w->c.prompt_length);
    BC_SET(out, bc_generation_stats, prompt_min_tokens, (int64_t)w->c.prompt_length);
    BC_SET(out, bc_generation_stats, prompt_max_tokens, (int64_t)w->c.prompt_length);
    /* DeepSpeed's continuous-batching profile, under its own names (null when not measured);
     * not its active_batch_size, the largest step's rows, where the report's is the mean */
    BC_SET(out, bc_generation_stats, num_prefill_forwards, p.num_prefill_forwards);
    BC_SET(out, bc_generation_stats, scheduler_overhead_ms, p.scheduler_overhead_ms);
    BC_SET(out, bc_generation_stats, cache_management_overhead_ms, p.cache_management_overhead_ms);
    BC_SET(out, bc_generation_stats, continuous_batch_size, p.continuous_batch_size);
    if (p.n_steps > 0) {
        BC_SET(out, bc_generation_stats, decode_step_ms, w->step_ms);
        BC_SET(out, bc_generation_stats, n_decode_steps, (uint32_t)p.n_steps);
    }
    if (p.peak_memory_bytes > w->peak_bytes) w->peak_bytes = p.peak_memory_bytes;
    if (w->tokens) {
        BC_SET(out, bc_generation_stats, tokens, w->token_ids);
        BC_SET(out, bc_generation_stats, token_rows, rows);
        BC_SET(out, bc_generation_stats, token_cols, (int64_t)w->c.response_length);
        BC_SET(out, bc_generation_stats, token_stride, (int64_t)w->c.response_length);
    }
    return BC_OK;
}

static bc_status simple_call(worker *w, const char *op, bc_error *err) {
    if (!wk_client_running(&w->client))
        return bc_error_set(err, BC_ERR_DEVICE, "worker %s: %s: the worker is not running", w->hello.engine, op);
    return wk_client_call(&w->client, op, NULL, NULL, NULL, err);
}

static bc_status worker_cache_release(void *instance, bc_error *err) { return simple_call(instance, "release_cache", err); }
static bc_status worker_cache_acquire(void *instance, bc_error *err) { return simple_call(instance, "acquire_cache", err); }

static void worker_reset_peak_memory(void *instance) {
    worker *w = instance;
    w->warmup = 0, w->iteration = 0, w->peak_bytes = -1;
}

static bc_status worker_read_memory(void *instance, bc_memory_stats *out, bc_error *err) {
    (void)err;
    worker *w = instance;
    if (strncmp(w->device, "cpu", 3) == 0)
        BC_SET(out, bc_memory_stats, host_peak_bytes, w->peak_bytes);
    else BC_SET(out, bc_memory_stats, device_peak_bytes, w->peak_bytes);
    return BC_OK;
}

/* Writes the last rollout's tokens to save_tokens, one row a line. */
static void save_tokens(worker *w) {
    const char *pattern = bc_setting_at(w->settings, S_SAVE_TOKENS)->s;
    if (!w->tokens || !pattern[0]) return;
    char path[4096];
    const char *mark = strstr(pattern, "{case}");
    if (mark)
        snprintf(path, sizeof path, "%.*s%u%s", (int)(mark - pattern), pattern, w->c.index, mark + 6);
    else snprintf(path, sizeof path, "%s", pattern);
    bc_error err = {0};
    bc_output *o = w->host->output_open(w->host, path, &err);
    if (!o) {
        w->host->log(w->host, BC_LOG_WARN, "save_tokens: %s", err.message);
        return;
    }
    const size_t rows = (size_t)w->c.batch_size * w->c.samples_per_prompt, cols = w->c.response_length;
    bc_status st = BC_OK;
    for (size_t r = 0; r < rows; r++) { /* the ids wk_tokens_take checked */
        for (size_t t = 0; st == BC_OK && t < cols; t++)
            st = w->host->output_printf(o, &err, t ? " %d" : "%d", (int)w->token_ids[r * cols + t]);
        if (st == BC_OK) st = w->host->output_printf(o, &err, "\n");
    }
    if (st == BC_OK) st = w->host->output_commit(o, &err);
    else w->host->output_abort(o);
    if (st != BC_OK) w->host->log(w->host, BC_LOG_WARN, "save_tokens: %s", err.message);
}

static void worker_end_case(void *instance) {
    worker *w = instance;
    if (!w->in_case) return;
    w->in_case = 0;
    save_tokens(w);
    json_decref(w->tokens);
    w->tokens = NULL;
    if (!wk_client_running(&w->client)) return;
    bc_error err = {0};
    if (wk_client_call(&w->client, "end_case", NULL, NULL, NULL, &err) != BC_OK)
        w->host->log(w->host, BC_LOG_WARN, "%s", err.message);
}

/* ------------------------------------------- rollout tokens, score, refit */

/* The one line for a hook the engine's describe did not list. */
static bc_status lacks(const worker *w, const char *what, bc_error *err) {
    return bc_error_set(err, BC_ERR_UNSUPPORTED, "worker engine '%s' has no %s (its describe reply does not list it "
                        "in capabilities)", w->hello.engine, what);
}

static bc_status worker_read_rollout(void *instance, bc_rollout_tokens *out, bc_error *err) {
    worker *w = instance;
    if (!w->have_rollout)
        return bc_error_set(err, BC_ERR_INTERNAL, "worker %s: read_rollout before a rollout of the case",
                            w->hello.engine);
    const wk_rollout *r = &w->rollout;
    BC_SET(out, bc_rollout_tokens, rows, r->rows);
    BC_SET(out, bc_rollout_tokens, prompt_tokens, r->prompt_ids);
    BC_SET(out, bc_rollout_tokens, prompt_lengths, r->prompt_lengths);
    BC_SET(out, bc_rollout_tokens, prompt_stride, r->prompt_stride);
    BC_SET(out, bc_rollout_tokens, response_tokens, r->response_ids);
    BC_SET(out, bc_rollout_tokens, response_lengths, r->response_lengths);
    BC_SET(out, bc_rollout_tokens, response_stride, r->response_stride);
    BC_SET(out, bc_rollout_tokens, row_stop, r->row_stop);
    BC_SET(out, bc_rollout_tokens, response_logprobs, r->has_logprobs ? r->logprobs : NULL);
    return BC_OK;
}

/* ids[0..n) as a JSON list; each must be in [0, vocab) of this model and
 * n at most INT32_MAX (the host's rows, checked for the scorer's model). */
static bc_status id_row(const worker *w, const int32_t *ids, int64_t n, int64_t row, const char *what, json_t *rows,
                        bc_error *err) {
    json_t *list = json_array();
    if (!list || json_array_append_new(rows, list)) return bc_error_set(err, BC_ERR_NOMEM, "worker: no memory for score");
    for (int64_t t = 0; t < n; t++) {
        if (ids[t] < 0 || ids[t] >= w->vocab_size)
            return bc_error_set(err, BC_ERR_INFEASIBLE,
                                "worker %s: score: row %lld's %s id %lld = %d is outside the scorer's vocabulary [0, "
                                "%lld)",
                                w->hello.engine, (long long)row, what, (long long)t, (int)ids[t],
                                (long long)w->vocab_size);
        if (json_array_append_new(list, json_integer(ids[t])))
            return bc_error_set(err, BC_ERR_NOMEM, "worker: no memory for score");
    }
    return BC_OK;
}

/* The score request's fields: every row's prompt and response ids. */
static bc_status score_args(const worker *w, const bc_rollout_tokens *in, json_t **out, bc_error *err) {
    json_t *prompts = json_array(), *responses = json_array();
    bc_status st = prompts && responses ? BC_OK : bc_error_set(err, BC_ERR_NOMEM, "worker: no memory for score");
    for (int64_t r = 0; st == BC_OK && r < in->rows; r++) {
        const int64_t np = in->prompt_lengths[r], nr = in->response_lengths[r];
        if (np < 1 || nr < 0 || np > in->prompt_stride || nr > in->response_stride)
            st = bc_error_set(err, BC_ERR_INTERNAL, "worker %s: score: row %lld has %lld + %lld tokens (strides %lld, "
                              "%lld)", w->hello.engine, (long long)r, (long long)np, (long long)nr,
                              (long long)in->prompt_stride, (long long)in->response_stride);
        else if (w->max_positions > 0 && np + nr > w->max_positions)
            st = bc_error_set(err, BC_ERR_INFEASIBLE,
                              "worker %s: score: row %lld's %lld + %lld tokens exceed the scorer's %lld positions",
                              w->hello.engine, (long long)r, (long long)np, (long long)nr, (long long)w->max_positions);
        if (st == BC_OK) st = id_row(w, in->prompt_tokens + r * in->prompt_stride, np, r, "prompt", prompts, err);
        if (st == BC_OK) st = id_row(w, in->response_tokens + r * in->response_stride, nr, r, "response", responses, err);
    }
    *out = st == BC_OK ? json_pack("{s:O, s:O}", "prompt_ids", prompts, "response_ids", responses) : NULL;
    json_decref(prompts), json_decref(responses);
    if (st == BC_OK && !*out) st = bc_error_set(err, BC_ERR_NOMEM, "worker: no memory for score");
    return st;
}

static bc_status worker_score(void *instance, const bc_rollout_tokens *in, float *logprobs, bc_error *err) {
    worker *w = instance;
    if (!w->can_score) return lacks(w, "score request", err);
    if (!w->in_case || !wk_client_running(&w->client))
        return bc_error_set(err, BC_ERR_INTERNAL, "worker %s: score outside a case, or the worker is not running",
                            w->hello.engine);
    if (!in || in->rows < 1 || !in->prompt_tokens || !in->prompt_lengths || !in->response_tokens ||
        !in->response_lengths || !logprobs)
        return bc_error_set(err, BC_ERR_INTERNAL, "worker %s: score: the rollout has no rows or arrays", w->hello.engine);
    json_t *args = NULL, *reply = NULL;
    bc_status st = score_args(w, in, &args, err);
    if (st == BC_OK) st = wk_client_call(&w->client, "score", args, &reply, NULL, err);
    json_decref(args);
    if (st == BC_OK)
        st = wk_logprobs_take(w->hello.engine, "score", "logprobs", json_object_get(reply, "logprobs"), in->rows,
                              in->response_lengths, in->response_stride, logprobs, err);
    json_decref(reply);
    return st;
}

static bc_status worker_refit(void *instance, bc_refit_stats *out, bc_error *err) {
    worker *w = instance;
    if (!w->can_refit) return lacks(w, "refit request", err);
    if (!w->in_case || !wk_client_running(&w->client))
        return bc_error_set(err, BC_ERR_INTERNAL, "worker %s: refit outside a case, or the worker is not running",
                            w->hello.engine);
    json_t *reply = NULL;
    bc_status st = wk_client_call(&w->client, "refit", NULL, &reply, NULL, err);
    if (st == BC_OK) st = wk_refit_take(w->hello.engine, reply, wk_refit_max_bytes(w->n_parameters), &w->refit, err);
    json_decref(reply);
    if (st != BC_OK) return st;
    BC_SET(out, bc_refit_stats, source_bytes, w->refit.source_bytes);
    BC_SET(out, bc_refit_stats, engine_bytes, w->refit.engine_bytes);
    BC_SET(out, bc_refit_stats, source, w->refit.source);
    return BC_OK;
}

static const bc_backend_ops worker_ops = {
    .struct_size = sizeof(bc_backend_ops),
    .create = worker_create,
    .destroy = worker_destroy,
    .describe = worker_describe,
    .check_case = worker_check_case,
    .begin_case = worker_begin_case,
    .expand_prompts = worker_expand_prompts,
    .generate = worker_generate,
    .post_process = worker_post_process,
    .cache_release = worker_cache_release,
    .cache_acquire = worker_cache_acquire,
    .reset_peak_memory = worker_reset_peak_memory,
    .read_memory = worker_read_memory,
    .end_case = worker_end_case,
    .rebuild_axes = BC_AXIS_PRECISION,
    .more_metrics = worker_more_metrics,
    .read_metrics = worker_read_metrics,
    .read_rollout = worker_read_rollout,
    .score = worker_score,
    .refit = worker_refit,
};

static const bc_plugin_desc worker_desc = {
    BC_PLUGIN_DESC_HEADER,
    .kind = BC_KIND_BACKEND,
    .name = "worker",
    .version = "0.1.0",
    .description = "a rollout engine in a child process (transformers, CTranslate2, ... or your own), driven "
                   "through the worker protocol (docs/plugins.md)",
    BC_SETTINGS_TABLE(worker_settings),
    .ops = &worker_ops,
    .more_settings = worker_more_settings,
    .free_more_settings = worker_free_more_settings,
    BC_METRICS_TABLE(worker_metrics),
};

BC_PLUGIN_DEFINE(worker_desc)
