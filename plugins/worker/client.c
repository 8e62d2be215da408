/* client.c: the host side of the worker protocol (client.h). */
#define _GNU_SOURCE
#include "client.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WK_STDERR_LINES 20
#define WK_SHUTDOWN_GRACE_S 2.0

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Rewrites err's message as "worker ENGINE: OP: message", and, when the
 * worker failed (stopped), appends its last stderr lines, keeping their end
 * when they do not fit. Returns err's code. */
static bc_status annotate(wk_client *c, const char *op, int with_stderr, bc_error *err) {
    char text[2 * sizeof err->message + WK_STDERR_TAIL_BYTES];
    int k = snprintf(text, sizeof text, "worker%s%s: %s: %s", c->engine[0] ? " " : "", c->engine, op, err->message);
    size_t head = k < 0 ? 0 : (size_t)k < sizeof text ? (size_t)k : sizeof text - 1;
    const size_t cap = sizeof err->message - 1;
    if (with_stderr && head + 40 < cap) {
        char tail[WK_STDERR_TAIL_BYTES + 1];
        wk_proc_stderr_tail(&c->proc, WK_STDERR_LINES, tail, sizeof tail);
        const char *label = *tail ? "; stderr: " : "; stderr: (empty)";
        size_t room = cap - head - strlen(label), n = strlen(tail);
        memcpy(text + head, label, strlen(label));
        head += strlen(label);
        if (n > room) { /* the last lines matter most */
            memcpy(text + head, "...", 3);
            head += 3;
            memcpy(text + head, tail + (n - room + 3), room - 3);
            head += room - 3;
        } else {
            memcpy(text + head, tail, n);
            head += n;
        }
    }
    if (head > cap) head = cap;
    memcpy(err->message, text, head);
    err->message[head] = '\0';
    return err->code;
}

/* A failure of the worker itself: stop it, then name it with its stderr. */
static bc_status worker_failed(wk_client *c, const char *op, bc_error *err) {
    wk_proc_stop(&c->proc, 0.0);
    return annotate(c, op, 1, err);
}

/* --------------------------------------------------------------- hello */

void wk_setting_rows_free(bc_setting_desc *rows, uint32_t n) {
    for (uint32_t i = 0; rows && i < n; i++) {
        bc_setting_desc *d = &rows[i];
        free((char *)d->name), free((char *)d->default_string), free((char *)d->help);
        if (d->choices)
            for (const char *const *ch = d->choices; *ch; ch++) free((char *)*ch);
        free((void *)d->choices);
    }
    free(rows);
}

void wk_metric_rows_free(wk_metric *rows, uint32_t n) {
    for (uint32_t i = 0; rows && i < n; i++)
        free((char *)rows[i].desc.name), free((char *)rows[i].desc.unit), free((char *)rows[i].desc.help);
    free(rows);
}

void wk_hello_free(wk_hello *h) {
    free(h->engine), free(h->engine_version), free(h->device);
    wk_setting_rows_free(h->settings, h->n_settings);
    wk_metric_rows_free(h->metrics, h->n_metrics);
    memset(h, 0, sizeof *h);
}

static int is_name(const char *s, const char *extra) {
    if (!s || !*s || strlen(s) > 63) return 0;
    for (const char *q = s; *q; q++)
        if (!((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') || *q == '_' ||
              strchr(extra, *q)))
            return 0;
    return 1;
}

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

/* buf := at most n - 1 bytes of a worker's text s for a message, each
 * control byte (newline, escape, ...) as '?': a message stays one line
 * and sends no terminal sequence. */
static const char *shown(const char *s, char *buf, size_t n) {
    size_t k = 0;
    for (; s && *s && k + 1 < n; s++) buf[k++] = (unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s;
    buf[k] = '\0';
    return buf;
}

/* A number member of o: 1 and *v when present. */
static int get_number(const json_t *o, const char *key, double *v) {
    json_t *x = json_object_get(o, key);
    if (!json_is_number(x)) return 0;
    *v = json_number_value(x);
    return 1;
}

/* Row i of the hello's settings table from its JSON object s. */
static bc_status parse_setting(const wk_client *c, const json_t *s, uint32_t i, bc_setting_desc *d, bc_error *err) {
    memset(d, 0, sizeof *d);
    const char *name = json_string_value(json_object_get(s, "name"));
    const char *type = json_string_value(json_object_get(s, "type"));
    const char *help = json_string_value(json_object_get(s, "help"));
    json_t *def = json_object_get(s, "default");
    if (!json_is_object(s) || !is_name(name, "") || !type)
        return bc_error_set(err, BC_ERR_FORMAT, "settings[%u]: needs a \"name\" (letters, digits, _) and a \"type\"", i);
    for (const char *const *r = c->cmd.reserved; r && *r; r++)
        if (strcmp(*r, name) == 0)
            return bc_error_set(err, BC_ERR_FORMAT, "settings[%u]: '%s' is a setting of the worker plugin itself", i,
                                name);
    d->name = strdup(name);
    d->help = strdup(help ? help : "");
    double lo = -9007199254740992.0, hi = 9007199254740992.0;
    int has_lo = get_number(s, "min", &lo), has_hi = get_number(s, "max", &hi);
    d->has_range = has_lo || has_hi;
    d->min = lo, d->max = hi;
    if (strcmp(type, "int") == 0) {
        d->type = BC_SETTING_INT;
        if (!json_is_integer(def)) return bc_error_set(err, BC_ERR_FORMAT, "setting '%s': an int needs an integer default", name);
        d->default_int = json_integer_value(def);
    } else if (strcmp(type, "double") == 0) {
        d->type = BC_SETTING_FLOAT;
        if (!json_is_number(def)) return bc_error_set(err, BC_ERR_FORMAT, "setting '%s': a double needs a number default", name);
        d->default_float = json_number_value(def);
    } else if (strcmp(type, "bool") == 0) {
        d->type = BC_SETTING_BOOL;
        if (!json_is_boolean(def)) return bc_error_set(err, BC_ERR_FORMAT, "setting '%s': a bool needs a true/false default", name);
        d->default_int = json_is_true(def);
        d->has_range = 0;
    } else if (strcmp(type, "string") == 0) {
        if (!json_is_string(def)) return bc_error_set(err, BC_ERR_FORMAT, "setting '%s': a string needs a string default", name);
        d->default_string = strdup(json_string_value(def));
        d->has_range = 0;
        d->type = BC_SETTING_STRING;
        json_t *choices = json_object_get(s, "choices");
        if (choices) {
            size_t n = json_array_size(choices);
            if (!json_is_array(choices) || n == 0)
                return bc_error_set(err, BC_ERR_FORMAT, "setting '%s': \"choices\" must be a list of strings", name);
            const char **list = calloc(n + 1, sizeof *list);
            if (!list) return bc_error_set(err, BC_ERR_NOMEM, "no memory for setting '%s'", name);
            d->choices = list;
            d->type = BC_SETTING_ENUM;
            for (size_t k = 0; k < n; k++) {
                const char *ch = json_string_value(json_array_get(choices, k));
                if (!ch) return bc_error_set(err, BC_ERR_FORMAT, "setting '%s': \"choices\" must be a list of strings", name);
                list[k] = strdup(ch);
                if (!list[k]) return bc_error_set(err, BC_ERR_NOMEM, "no memory for setting '%s'", name);
            }
        }
    } else {
        char text[64];
        return bc_error_set(err, BC_ERR_FORMAT, "setting '%s': type \"%s\" is not string, int, double or bool", name,
                            shown(type, text, sizeof text));
    }
    if (!d->name || !d->help || (d->type == BC_SETTING_STRING && !d->default_string))
        return bc_error_set(err, BC_ERR_NOMEM, "no memory for setting '%s'", name);
    return BC_OK;
}

/* The profile keys the worker plugin reads itself, and its own metric: a
 * hello's metrics may not use them. */
static const char *const k_profile_keys[] = {"prompt_expansion_ms", "generation_ms", "post_processing_ms",
                                             "prefill_forward_ms", "decode_forward_ms", "num_decode_forwards",
                                             "num_generated_tokens", "time_to_first_token_ms", "peak_memory_bytes",
                                             "decode_step_ms", "engine_total_ms", "num_prefill_forwards",
                                             "scheduler_overhead_ms", "cache_management_overhead_ms",
                                             "continuous_batch_size", NULL};

/* A metric name: [a-z0-9_], 1 to 63 characters. */
static int is_metric_name(const char *s) {
    if (!s || !*s || strlen(s) > 63) return 0;
    for (const char *q = s; *q; q++)
        if (!((*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') || *q == '_')) return 0;
    return 1;
}

/* Row i of the hello's metrics from its JSON object m: name, unit, better
 * (higher, lower, neither), optional help, min and max (finite numbers;
 * default the whole finite range). */
static bc_status parse_metric(const json_t *m, uint32_t i, wk_metric *out, bc_error *err) {
    memset(out, 0, sizeof *out);
    const char *name = json_string_value(json_object_get(m, "name"));
    const char *unit = json_string_value(json_object_get(m, "unit"));
    const char *better = json_string_value(json_object_get(m, "better"));
    const char *help = json_string_value(json_object_get(m, "help"));
    if (!json_is_object(m) || !is_metric_name(name))
        return bc_error_set(err, BC_ERR_FORMAT, "metrics[%u]: needs a \"name\" (a-z, 0-9, _; at most 63)", i);
    for (const char *const *k = k_profile_keys; *k; k++)
        if (strcmp(*k, name) == 0)
            return bc_error_set(err, BC_ERR_FORMAT, "metrics[%u]: '%s' is a profile key the worker plugin reads itself",
                                i, name);
    if (!unit || !*unit || strlen(unit) > 31)
        return bc_error_set(err, BC_ERR_FORMAT, "metric '%s': needs a \"unit\" of 1 to 31 characters", name);
    if (help && strlen(help) > 200)
        return bc_error_set(err, BC_ERR_FORMAT, "metric '%s': \"help\" is longer than 200 characters", name);
    int b = !better ? -1 : strcmp(better, "neither") == 0 ? BC_BETTER_NEITHER
                         : strcmp(better, "higher") == 0  ? BC_BETTER_HIGHER
                         : strcmp(better, "lower") == 0   ? BC_BETTER_LOWER
                                                          : -1;
    if (b < 0) return bc_error_set(err, BC_ERR_FORMAT, "metric '%s': \"better\" is none of higher, lower, neither", name);
    out->min = -DBL_MAX, out->max = DBL_MAX;
    int has_lo = get_number(m, "min", &out->min), has_hi = get_number(m, "max", &out->max);
    if ((has_lo && !isfinite(out->min)) || (has_hi && !isfinite(out->max)) || out->min > out->max)
        return bc_error_set(err, BC_ERR_FORMAT, "metric '%s': \"min\" and \"max\" must be finite, min <= max", name);
    out->desc = (bc_metric_desc){.better = (bc_metric_better)b, .scope = BC_METRIC_PER_ITERATION};
    out->desc.name = strdup(name), out->desc.unit = strdup(unit), out->desc.help = strdup(help ? help : "");
    if (!out->desc.name || !out->desc.unit || !out->desc.help)
        return bc_error_set(err, BC_ERR_NOMEM, "no memory for metric '%s'", name);
    return BC_OK;
}

/* h->metrics from the hello's optional "metrics" list. */
static bc_status parse_metrics(const json_t *list, wk_hello *h, bc_error *err) {
    if (!list) return BC_OK;
    size_t n = json_array_size(list);
    if (!json_is_array(list) || n > WK_MAX_METRICS)
        return bc_error_set(err, BC_ERR_DEVICE, "the hello's \"metrics\" must be a list of at most %d", WK_MAX_METRICS);
    h->metrics = calloc(n + 1, sizeof *h->metrics);
    if (!h->metrics) return bc_error_set(err, BC_ERR_NOMEM, "no memory for the hello");
    for (size_t i = 0; i < n; i++) {
        bc_status st = parse_metric(json_array_get(list, i), (uint32_t)i, &h->metrics[i], err);
        h->n_metrics = (uint32_t)i + 1; /* so wk_hello_free frees a half-made row too */
        if (st != BC_OK) return st == BC_ERR_FORMAT ? (err->code = BC_ERR_DEVICE) : st;
        for (size_t k = 0; k < i; k++)
            if (strcmp(h->metrics[k].desc.name, h->metrics[i].desc.name) == 0)
                return bc_error_set(err, BC_ERR_DEVICE, "the hello declares metric '%s' twice", h->metrics[i].desc.name);
    }
    return BC_OK;
}

static int compare_names(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Fills h from the hello line (already parsed as o). */
static bc_status parse_hello(wk_client *c, const json_t *o, wk_hello *h, bc_error *err) {
    if (!json_is_object(o) || !json_is_string(json_object_get(o, "op")) ||
        strcmp(json_string_value(json_object_get(o, "op")), "hello") != 0)
        return bc_error_set(err, BC_ERR_DEVICE, "the first line is not {\"op\":\"hello\", ...}");
    json_t *proto = json_object_get(o, "protocol");
    if (!json_is_integer(proto))
        return bc_error_set(err, BC_ERR_DEVICE, "the hello has no integer \"protocol\"; benchctl speaks protocol %d",
                            WK_PROTOCOL_VERSION);
    if (json_integer_value(proto) != WK_PROTOCOL_VERSION)
        return bc_error_set(err, BC_ERR_DEVICE, "the worker speaks protocol %lld, benchctl speaks protocol %d",
                            (long long)json_integer_value(proto), WK_PROTOCOL_VERSION);
    const char *engine = json_string_value(json_object_get(o, "engine"));
    const char *version = json_string_value(json_object_get(o, "engine_version"));
    const char *device = json_string_value(json_object_get(o, "device"));
    json_t *settings = json_object_get(o, "settings");
    if (!is_name(engine, "-.") || !version || !device || !json_is_array(settings))
        return bc_error_set(err, BC_ERR_DEVICE,
                            "the hello needs \"engine\" (letters, digits, _ - .), \"engine_version\", \"device\" and "
                            "\"settings\" (a list)");
    snprintf(c->engine, sizeof c->engine, "%s", engine);
    h->engine = dup_or_null(engine), h->engine_version = dup_or_null(version), h->device = dup_or_null(device);
    size_t n = json_array_size(settings);
    if (n > WK_MAX_SETTINGS)
        return bc_error_set(err, BC_ERR_DEVICE, "the hello declares %zu settings; at most %d are allowed", n,
                            WK_MAX_SETTINGS);
    h->settings = calloc(n + 1, sizeof *h->settings);
    if (!h->engine || !h->engine_version || !h->device || !h->settings)
        return bc_error_set(err, BC_ERR_NOMEM, "no memory for the hello");
    for (size_t i = 0; i < n; i++) {
        bc_status st = parse_setting(c, json_array_get(settings, i), (uint32_t)i, &h->settings[i], err);
        h->n_settings = (uint32_t)i + 1; /* so wk_hello_free frees a half-made row too */
        if (st != BC_OK) {
            if (st == BC_ERR_FORMAT) err->code = BC_ERR_DEVICE;
            return st == BC_ERR_FORMAT ? BC_ERR_DEVICE : st;
        }
    }
    const char *twice = NULL;
    if (n > 1) { /* duplicates: the names sorted, n log n */
        const char **names = malloc(n * sizeof *names);
        if (!names) return bc_error_set(err, BC_ERR_NOMEM, "no memory for the hello");
        for (size_t i = 0; i < n; i++) names[i] = h->settings[i].name;
        qsort(names, n, sizeof *names, compare_names);
        for (size_t i = 1; i < n && !twice; i++)
            if (strcmp(names[i - 1], names[i]) == 0) twice = names[i];
        if (twice) bc_error_set(err, BC_ERR_DEVICE, "the hello declares setting '%s' twice", twice);
        free(names);
    }
    if (twice) return BC_ERR_DEVICE;
    return parse_metrics(json_object_get(o, "metrics"), h, err);
}

/* Reads one line and parses it as a JSON object. */
static bc_status read_object(wk_client *c, json_t **out, bc_error *err) {
    char *line;
    size_t len;
    bc_status st = wk_proc_read_line(&c->proc, c->cmd.timeout_s, &line, &len, err);
    if (st != BC_OK) return st;
    json_error_t je;
    json_t *o = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
    if (!json_is_object(o)) {
        /* what it is instead: JSON that is no object, or where and why it is not JSON */
        static const char *const kinds[] = {[JSON_ARRAY] = "an array", [JSON_STRING] = "a string",
                                            [JSON_INTEGER] = "a number", [JSON_REAL] = "a number",
                                            [JSON_TRUE] = "true", [JSON_FALSE] = "false", [JSON_NULL] = "null"};
        char why[200], text[sizeof je.text];
        if (o) snprintf(why, sizeof why, "JSON, but %s, not an object", kinds[json_typeof(o)]);
        else snprintf(why, sizeof why, "not JSON (column %d: %s)", je.column, shown(je.text, text, sizeof text));
        json_decref(o);
        char quoted[64];
        size_t k = 0;
        for (size_t i = 0; i < len && k < 60; i++) /* no terminal controls in the message (nor NULs) */
            quoted[k++] = (unsigned char)line[i] < 0x20 || line[i] == 0x7f ? '?' : line[i];
        quoted[k] = '\0';
        return bc_error_set(err, BC_ERR_DEVICE, "the worker wrote a line on stdout that is %s: \"%s%s\"", why, quoted,
                            len > 60 ? "..." : "");
    }
    *out = o;
    return BC_OK;
}

bc_status wk_client_start(wk_client *c, const bc_host *host, const wk_command *cmd, wk_hello *hello, bc_error *err) {
    memset(hello, 0, sizeof *hello);
    memset(c, 0, sizeof *c);
    c->cmd = *cmd;
    c->host = host;
    c->next_id = 1;
    c->engine[0] = '\0'; /* until the hello names it */
    if (!cmd->argv || !cmd->argv[0])
        return bc_error_set(err, BC_ERR_SETTING, "worker: command is empty: set it to the worker's command line");
    bc_status st = wk_proc_start(&c->proc, host, cmd->argv, cmd->env, cmd->n_env, err);
    if (st != BC_OK) return annotate(c, "start", 0, err);
    json_t *o = NULL;
    double t0 = now_ms();
    if ((st = read_object(c, &o, err)) == BC_OK) st = parse_hello(c, o, hello, err);
    json_decref(o);
    double took_s = (now_ms() - t0) * 1e-3;
    if (st == BC_OK && took_s > cmd->timeout_s)
        st = bc_error_set(err, BC_ERR_DEVICE, "reading and checking the hello took %.3g s, more than timeout_s (%.3g s)",
                          took_s, cmd->timeout_s);
    if (st != BC_OK) {
        wk_hello_free(hello);
        return worker_failed(c, "hello", err);
    }
    return BC_OK;
}

/* ------------------------------------------------------------ requests */

static bc_status reply_error(wk_client *c, const char *op, const json_t *reply, bc_error *err) {
    json_t *e = json_object_get(reply, "error");
    const char *code = json_string_value(json_object_get(e, "code"));
    const char *message = json_string_value(json_object_get(e, "message"));
    static const struct {
        const char *name;
        bc_status status;
    } codes[] = {{"setting", BC_ERR_SETTING},
                 {"unsupported", BC_ERR_UNSUPPORTED},
                 {"infeasible", BC_ERR_INFEASIBLE},
                 {"out_of_memory", BC_ERR_NOMEM},
                 {"internal", BC_ERR_INTERNAL}};
    bc_status st = BC_ERR_INTERNAL;
    for (size_t i = 0; code && i < sizeof codes / sizeof codes[0]; i++)
        if (strcmp(code, codes[i].name) == 0) st = codes[i].status;
    char text[sizeof err->message];
    bc_error_set(err, st, "%s", message ? shown(message, text, sizeof text) : "failed (no message)");
    return annotate(c, op, 0, err);
}

bc_status wk_client_call(wk_client *c, const char *op, json_t *args, json_t **reply, double *round_trip_ms,
                         bc_error *err) {
    if (reply) *reply = NULL;
    if (!wk_client_running(c)) return bc_error_set(err, BC_ERR_INTERNAL, "worker %s: %s: not running", c->engine, op);
    json_t *req = args ? json_deep_copy(args) : json_object();
    uint64_t id = c->next_id++;
    if (!req || json_object_set_new(req, "op", json_string(op)) || json_object_set_new(req, "id", json_integer((json_int_t)id))) {
        json_decref(req);
        return bc_error_set(err, BC_ERR_NOMEM, "worker %s: %s: no memory for the request", c->engine, op);
    }
    char *text = json_dumps(req, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(req);
    if (!text) return bc_error_set(err, BC_ERR_NOMEM, "worker %s: %s: no memory for the request", c->engine, op);
    double t0 = now_ms();
    bc_status st = wk_proc_write_line(&c->proc, text, strlen(text), c->cmd.timeout_s, err);
    free(text);
    json_t *o = NULL;
    if (st == BC_OK) st = read_object(c, &o, err);
    double t1 = now_ms();
    if (st != BC_OK) return worker_failed(c, op, err);
    json_t *rid = json_object_get(o, "id"), *ok = json_object_get(o, "ok");
    if (!json_is_integer(rid) || (uint64_t)json_integer_value(rid) != id || !json_is_boolean(ok)) {
        json_decref(o);
        bc_error_set(err, BC_ERR_DEVICE, "the reply is not {\"id\":%llu,\"ok\":true|false, ...}", (unsigned long long)id);
        return worker_failed(c, op, err);
    }
    if (!json_is_true(ok)) {
        st = reply_error(c, op, o, err);
        json_decref(o);
        return st;
    }
    if (round_trip_ms) *round_trip_ms = t1 - t0;
    if (reply) *reply = o;
    else json_decref(o);
    return BC_OK;
}

void wk_client_shutdown(wk_client *c) {
    if (!wk_client_running(c)) return;
    double timeout = c->cmd.timeout_s;
    c->cmd.timeout_s = timeout < WK_SHUTDOWN_GRACE_S ? timeout : WK_SHUTDOWN_GRACE_S;
    bc_error err = {0};
    if (wk_client_call(c, "shutdown", NULL, NULL, NULL, &err) == BC_OK) wk_proc_stop(&c->proc, WK_SHUTDOWN_GRACE_S);
    else wk_proc_stop(&c->proc, 0.0);
    c->cmd.timeout_s = timeout;
}

void wk_client_kill(wk_client *c) { wk_proc_stop(&c->proc, 0.0); }
