/* selection.c: --cases and --only (see selection.h). */
#define _POSIX_C_SOURCE 200809L
#include "selection.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "suggest.h"

#define CASES_HINT "'benchctl plan FILE' lists every case with its index"
#define ONLY_AXES \
    "backend, precision, cache_policy, batch_size, samples_per_prompt, prompt_length, response_length, and the " \
    "settings of matrix.backend_settings"

/* Items of a comma-separated option: the next item of *p (spaces trimmed)
 * into item[n]; 0 at the end of the text. */
static int next_item(const char **p, char *item, size_t n) {
    const char *s = *p;
    if (!*s) return 0;
    const char *comma = strchr(s, ',');
    size_t len = comma ? (size_t)(comma - s) : strlen(s);
    *p = comma ? comma + 1 : s + len;
    while (len && isspace((unsigned char)*s)) s++, len--;
    while (len && isspace((unsigned char)s[len - 1])) len--;
    snprintf(item, n, "%.*s", (int)len, s);
    return 1;
}

/* A whole decimal number (no sign) into *out; 0 when text is not one. */
static int parse_index(const char *text, unsigned long long *out) {
    if (!isdigit((unsigned char)text[0])) return 0;
    char *end = NULL;
    errno = 0;
    *out = strtoull(text, &end, 10);
    return errno == 0 && *end == '\0';
}

/* --cases: marks keep[] for every case it names. */
static bc_status parse_cases(const char *opt, const bc_case *cases, size_t n, unsigned char *keep, bc_error *err) {
    const char *p = opt;
    char item[64];
    int any = 0;
    while (next_item(&p, item, sizeof item)) {
        any = 1;
        unsigned long long lo, hi;
        char *dash = strchr(item, '-');
        int ok;
        if (dash) {
            *dash = '\0';
            ok = parse_index(item, &lo) && parse_index(dash + 1, &hi);
            *dash = '-';
        } else {
            ok = parse_index(item, &lo);
            hi = lo;
        }
        if (!item[0] || !ok) {
            bc_error_set(err, BC_ERR_INVALID, "--cases %s: '%s' is not a case index or a range N-M", opt, item);
            return bc_error_hint(err, "e.g. --cases 3,5-7; " CASES_HINT);
        }
        if (hi < lo)
            return bc_error_set(err, BC_ERR_INVALID, "--cases %s: the range %s runs backwards (write %llu-%llu)", opt,
                                item, hi, lo);
        unsigned long long last = n ? (unsigned long long)cases[n - 1].index : 0;
        if (n == 0 || hi > last) {
            bc_error_set(err, BC_ERR_INVALID, "--cases %s: case %llu does not exist: the matrix has %zu case%s, 0-%llu",
                         opt, lo > last ? lo : hi, n, n == 1 ? "" : "s", last);
            return bc_error_hint(err, CASES_HINT);
        }
        for (size_t k = 0; k < n; k++)
            if (cases[k].index >= lo && cases[k].index <= hi) keep[k] = 1;
    }
    if (!any) {
        bc_error_set(err, BC_ERR_INVALID, "--cases: no case index given");
        return bc_error_hint(err, "e.g. --cases 3,5-7; " CASES_HINT);
    }
    return BC_OK;
}

/* The axes --only knows; axis N_AXES + i is backend setting i of the
 * matrix (bc_case.setting_names, the same for every case). */
enum { AX_PRECISION, AX_CACHE, AX_BATCH, AX_SAMPLES, AX_PROMPT, AX_RESPONSE, AX_BACKEND, N_AXES };
static const char *const k_axes[N_AXES] = {"precision",     "cache_policy",    "batch_size", "samples_per_prompt",
                                           "prompt_length", "response_length", "backend"};

/* 1 for the axes whose values are names, not numbers. */
static int named_axis(int axis) {
    return axis == AX_PRECISION || axis == AX_CACHE || axis == AX_BACKEND || axis >= N_AXES;
}

/* The value of a named axis of c ("?" when the case has none). */
static const char *axis_name(const bc_case *c, int axis) {
    if (axis >= N_AXES)
        return (uint32_t)(axis - N_AXES) < c->n_settings ? c->setting_values[axis - N_AXES] : "?";
    const char *v = axis == AX_PRECISION ? c->precision : axis == AX_CACHE ? c->cache_policy : c->backend;
    return v ? v : "?";
}

/* The value of a numeric axis of c. */
static unsigned axis_number(const bc_case *c, int axis) {
    switch (axis) {
    case AX_BATCH: return c->batch_size;
    case AX_SAMPLES: return c->samples_per_prompt;
    case AX_PROMPT: return c->prompt_length;
    default: return c->response_length;
    }
}

/* Whether case c has value on axis (value already checked for numbers). */
static int case_matches(const bc_case *c, int axis, const char *value) {
    if (axis == AX_PRECISION)
        return (c->precision && strcmp(c->precision, value) == 0) ||
               (c->precision_ops && c->precision_ops->dtype && strcmp(c->precision_ops->dtype, value) == 0);
    if (axis == AX_CACHE || axis == AX_BACKEND || axis >= N_AXES) return strcmp(axis_name(c, axis), value) == 0;
    return strtoull(value, NULL, 10) == axis_number(c, axis);
}

/* The matrix's distinct values on axis, for an error message. */
static void axis_values(const bc_case *cases, size_t n, int axis, char *buf, size_t size) {
    size_t used = 0;
    buf[0] = '\0';
    for (size_t k = 0; k < n && used + 1 < size; k++) {
        char v[64];
        if (named_axis(axis))
            snprintf(v, sizeof v, "%s", axis_name(&cases[k], axis));
        else
            snprintf(v, sizeof v, "%u", axis_number(&cases[k], axis));
        int seen = 0;
        for (size_t j = 0; j < k && !seen; j++) {
            char w[64];
            if (named_axis(axis))
                snprintf(w, sizeof w, "%s", axis_name(&cases[j], axis));
            else
                snprintf(w, sizeof w, "%u", axis_number(&cases[j], axis));
            seen = strcmp(v, w) == 0;
        }
        if (!seen) used += (size_t)snprintf(buf + used, size - used, "%s%s", used ? ", " : "", v);
    }
}

/* --only: clears keep[k] for every case a condition rules out. */
static bc_status parse_only(const char *opt, const bc_case *cases, size_t n, unsigned char *keep, bc_error *err) {
    enum { MAX_CONDITIONS = 64 };
    int axis_of[MAX_CONDITIONS];
    int n_axes = N_AXES + (n ? (int)cases[0].n_settings : 0);
    char values[MAX_CONDITIONS][64];
    size_t n_cond = 0;
    const char *p = opt;
    char item[128];
    while (next_item(&p, item, sizeof item)) {
        char *eq = strchr(item, '=');
        if (!eq || eq == item || !eq[1]) {
            bc_error_set(err, BC_ERR_INVALID, "--only %s: '%s' is not axis=value", opt, item);
            return bc_error_hint(err, "e.g. --only precision=bf16,batch_size=4; axes: " ONLY_AXES);
        }
        *eq = '\0';
        const char *key = item, *value = eq + 1;
        int axis = 0;
        while (axis < N_AXES && strcmp(k_axes[axis], key) != 0) axis++;
        while (axis >= N_AXES && axis < n_axes && strcmp(cases[0].setting_names[axis - N_AXES], key) != 0) axis++;
        if (axis == n_axes) {
            const char *near = bc_suggest(key, k_axes, N_AXES);
            if (near) bc_error_set(err, BC_ERR_INVALID, "--only %s: no axis '%s' (did you mean '%s'?)", opt, key, near);
            else bc_error_set(err, BC_ERR_INVALID, "--only %s: no axis '%s'", opt, key);
            return bc_error_hint(err, "axes: " ONLY_AXES);
        }
        unsigned long long number;
        if (!named_axis(axis) && !parse_index(value, &number))
            return bc_error_set(err, BC_ERR_INVALID, "--only %s: %s must be a whole number (got '%s')", opt, key,
                                value);
        int found = 0;
        for (size_t k = 0; k < n && !found; k++) found = case_matches(&cases[k], axis, value);
        if (!found) {
            char list[256];
            axis_values(cases, n, axis, list, sizeof list);
            return bc_error_set(err, BC_ERR_INVALID, "--only %s: no case has %s %s (the matrix has %s)", opt, key,
                                value, list);
        }
        if (n_cond == MAX_CONDITIONS)
            return bc_error_set(err, BC_ERR_INVALID, "--only %s: more than %d conditions", opt, MAX_CONDITIONS);
        axis_of[n_cond] = axis;
        snprintf(values[n_cond], sizeof values[n_cond], "%s", value);
        n_cond++;
    }
    if (n_cond == 0) {
        bc_error_set(err, BC_ERR_INVALID, "--only: no condition given");
        return bc_error_hint(err, "e.g. --only precision=bf16,batch_size=4; axes: " ONLY_AXES);
    }
    for (size_t k = 0; k < n; k++)
        for (int axis = 0; axis < n_axes && keep[k]; axis++) {
            int constrained = 0, any = 0;
            for (size_t i = 0; i < n_cond; i++)
                if (axis_of[i] == axis) {
                    constrained = 1;
                    any = any || case_matches(&cases[k], axis, values[i]);
                }
            if (constrained && !any) keep[k] = 0;
        }
    return BC_OK;
}

bc_status bc_selection_apply(bc_case *cases, size_t *n, const char *cases_opt, const char *only_opt, bc_error *err) {
    if (!cases_opt && !only_opt) return BC_OK;
    unsigned char *keep = calloc(*n ? *n : 1, 1); /* owned here */
    if (!keep) return bc_error_set(err, BC_ERR_NOMEM, "out of memory");
    memset(keep, cases_opt ? 0 : 1, *n);
    bc_status st = cases_opt ? parse_cases(cases_opt, cases, *n, keep, err) : BC_OK;
    if (st == BC_OK && only_opt) st = parse_only(only_opt, cases, *n, keep, err);
    size_t kept = 0;
    for (size_t k = 0; st == BC_OK && k < *n; k++) kept += keep[k];
    if (st == BC_OK && kept == 0) {
        if (cases_opt && only_opt)
            bc_error_set(err, BC_ERR_INVALID, "--cases %s --only %s: no case is selected by both", cases_opt, only_opt);
        else
            bc_error_set(err, BC_ERR_INVALID, "--%s %s: selects no case", cases_opt ? "cases" : "only",
                         cases_opt ? cases_opt : only_opt);
        st = bc_error_hint(err, CASES_HINT);
    }
    if (st == BC_OK) {
        size_t j = 0;
        for (size_t k = 0; k < *n; k++)
            if (keep[k]) cases[j++] = cases[k];
        *n = j;
    }
    free(keep);
    return st;
}
