/* compare.c: `benchctl compare`'s comparison: environments, case matching,
 * the per-case statistics and verdicts (compare_stats.c) and the summaries.
 * the environment check is compare_env.c; compare.h says what a comparison holds; the outputs are compare_write.c
 * (console, markdown, JSON) and compare_html.c (the forest plot); the
 * command and its options are cli/compare_cmd.c. */
#define _GNU_SOURCE
#include "compare.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static const char *const k_default_metrics[] = {"tokens_per_second", "total_ms"};

void bc_cmp_options_default(bc_cmp_options *opt) {
    *opt = (bc_cmp_options){.metrics = k_default_metrics,
                            .n_metrics = sizeof k_default_metrics / sizeof k_default_metrics[0],
                            .alpha = 0.01,
                            .threshold = 0.03,
                            .level = BC_BOOTSTRAP_LEVEL,
                            .resamples = BC_BOOTSTRAP_RESAMPLES,
                            .seed = BC_BOOTSTRAP_SEED};
}

bc_metric_better bc_cmp_metric_better(const bc_runfile *a, int fa, const bc_runfile *b, int fb) {
    bc_metric_better ba = a->field_descs && fa >= 0 ? a->field_descs[fa].better : BC_BETTER_NEITHER;
    bc_metric_better bb = b->field_descs && fb >= 0 ? b->field_descs[fb].better : BC_BETTER_NEITHER;
    return ba != BC_BETTER_NEITHER ? ba : bb;
}

/* ------------------------------------------------------------ settings */

/* Whether the case key names the setting (as "name=value"). */
static int key_has_setting(const char *key, const char *name) {
    size_t n = strlen(name);
    for (const char *p = key; (p = strstr(p, name)) != NULL; p += n)
        if ((p == key || p[-1] == ' ') && p[n] == '=') return 1;
    return 0;
}

/* The backend settings whose values differ between a and b (or that one of
 * them lacks), leaving out what the case key or the environment covers. */
static bc_status settings_changed(const bc_runfile *a, const bc_runfile *b, bc_cmp_pair *out) {
    size_t cap = a->n_backend_settings + b->n_backend_settings;
    out->settings = calloc(cap ? cap : 1, sizeof *out->settings);
    if (!out->settings) return BC_ERR_NOMEM;
    const char *key = a->n_cases ? a->cases[0].key : b->n_cases ? b->cases[0].key : "";
    for (int side = 0; side < 2; side++) {
        const bc_runfile *rf = side ? b : a;
        for (size_t i = 0; i < rf->n_backend_settings; i++) {
            const char *name = rf->backend_settings[i].name;
            const char *va = bc_runfile_setting(a, name), *vb = bc_runfile_setting(b, name);
            if (side == 1 && va) continue; /* seen from a's side */
            if (bc_cmp_is_workload(a, name) || bc_cmp_is_workload(b, name) || key_has_setting(key, name)) continue;
            if (va && vb && strcmp(va, vb) == 0) continue;
            out->settings[out->n_settings++] = (bc_cmp_setting_change){name, va, vb};
        }
    }
    return BC_OK;
}

/* --------------------------------------------------------------- cases */

/* The axes of a case that are not backend settings, and the part of the
 * case key (runfile.h) each one is. */
typedef struct builtin_axis {
    const char *name, *alias, *key_part;
} builtin_axis;
static const builtin_axis k_builtin_axes[] = {
    {"precision", "dtype", "dtype"},     {"cache_policy", "cache", "cache"},
    {"batch_size", NULL, "batch_size"},  {"samples_per_prompt", NULL, "samples_per_prompt"},
    {"prompt_length", NULL, "prompt_length"}, {"response_length", NULL, "response_length"},
};
#define N_BUILTIN_AXES (sizeof k_builtin_axes / sizeof k_builtin_axes[0])

static const builtin_axis *builtin_of(const char *axis) {
    for (size_t i = 0; axis && i < N_BUILTIN_AXES; i++)
        if (strcmp(axis, k_builtin_axes[i].name) == 0 ||
            (k_builtin_axes[i].alias && strcmp(axis, k_builtin_axes[i].alias) == 0))
            return &k_builtin_axes[i];
    return NULL;
}

/* Case c's value on axis as text (into buf), or NULL when it has none. */
static const char *axis_value(const bc_runfile_case *c, const char *axis, char *buf, size_t cap) {
    const builtin_axis *b = builtin_of(axis);
    if (b) {
        const char *name = b->name;
        if (strcmp(name, "precision") == 0) return c->precision ? c->precision : c->dtype;
        if (strcmp(name, "cache_policy") == 0) return c->cache_policy;
        uint32_t v = strcmp(name, "batch_size") == 0           ? c->batch_size
                     : strcmp(name, "samples_per_prompt") == 0 ? c->samples_per_prompt
                     : strcmp(name, "prompt_length") == 0      ? c->prompt_length
                                                               : c->response_length;
        snprintf(buf, cap, "%u", v);
        return buf;
    }
    if (strcmp(axis, "backend") == 0) return c->backend;
    for (size_t i = 0; i < c->n_settings; i++)
        if (strcmp(c->setting_names[i], axis) == 0) return c->setting_values[i];
    return NULL;
}

int bc_cmp_axis_known(const bc_runfile *rf, const char *axis) {
    if (builtin_of(axis) || strcmp(axis, "backend") == 0) return 1;
    char buf[32];
    for (size_t k = 0; k < rf->n_cases; k++)
        if (axis_value(&rf->cases[k], axis, buf, sizeof buf)) return 1;
    return 0;
}

void bc_cmp_axis_values_free(char **values, size_t n) {
    for (size_t i = 0; values && i < n; i++) free(values[i]);
    free(values);
}

size_t bc_cmp_axis_values(const bc_runfile *rf, const char *axis, char ***out) {
    *out = NULL;
    char **values = calloc(rf->n_cases + 1, sizeof *values);
    if (!values) return (size_t)-1;
    size_t n = 0;
    for (size_t k = 0; k < rf->n_cases; k++) {
        char buf[32];
        const char *v = axis_value(&rf->cases[k], axis, buf, sizeof buf);
        size_t i = 0;
        while (v && i < n && strcmp(values[i], v) != 0) i++;
        if (!v || i < n) continue;
        if (!(values[n] = strdup(v))) {
            bc_cmp_axis_values_free(values, n);
            return (size_t)-1;
        }
        n++;
    }
    if (n == 0) {
        free(values);
        return 0;
    }
    *out = values;
    return n;
}

/* Case c's key without its part for axis (NULL: the whole key), so that it
 * matches the cases that differ from it on that axis alone. malloc'ed;
 * NULL without memory. */
static char *match_key(const bc_runfile_case *c, const char *axis) {
    char *key = strdup(c->key);
    if (!key || !axis) return key;
    const builtin_axis *b = builtin_of(axis);
    if (b) {
        /* "NAME=VALUE" at the start or after a space; its value holds no space */
        size_t n = strlen(b->key_part);
        for (char *p = key; (p = strstr(p, b->key_part)) != NULL; p += n) {
            if ((p != key && p[-1] != ' ') || p[n] != '=') continue;
            char *end = strchr(p, ' ');
            if (p == key) memmove(p, end ? end + 1 : p + strlen(p), strlen(end ? end + 1 : p + strlen(p)) + 1);
            else memmove(p - 1, end ? end : p + strlen(p), strlen(end ? end : p + strlen(p)) + 1);
            break;
        }
        return key;
    }
    /* a backend or a setting: " AXIS=VALUE", its last occurrence (the backend
     * comes last; a setting's value may hold "x=y") */
    char buf[32], *part = NULL;
    const char *value = axis_value(c, axis, buf, sizeof buf);
    if (!value) return key;
    if (asprintf(&part, " %s=%s", axis, value) < 0) {
        free(key);
        return NULL;
    }
    char *at = NULL;
    for (char *p = strstr(key, part); p; p = strstr(p + 1, part)) at = p;
    if (at) memmove(at, at + strlen(part), strlen(at + strlen(part)) + 1);
    free(part);
    return key;
}

void bc_cmp_case_label_without(const bc_runfile_case *c, const char *axis, char *buf, size_t cap) {
    const builtin_axis *b = builtin_of(axis);
    const char *skip = b ? b->name : axis ? axis : "";
    int used = 0;
    buf[0] = '\0';
#define LABEL_PART(...)                                                                                  \
    do {                                                                                                 \
        if (used >= 0 && (size_t)used < cap) {                                                           \
            int more = snprintf(buf + used, cap - (size_t)used, __VA_ARGS__);                            \
            used = more < 0 ? more : used + more;                                                        \
        }                                                                                                \
    } while (0)
    if (strcmp(skip, "batch_size") != 0) LABEL_PART("B=%u", c->batch_size);
    if (strcmp(skip, "samples_per_prompt") != 0) LABEL_PART("%sx%u", used ? " " : "", c->samples_per_prompt);
    if (strcmp(skip, "prompt_length") != 0 && strcmp(skip, "response_length") != 0)
        LABEL_PART("%s%u->%u", used ? " " : "", c->prompt_length, c->response_length);
    else if (strcmp(skip, "prompt_length") == 0) LABEL_PART("%s->%u", used ? " " : "", c->response_length);
    else LABEL_PART("%s%u->", used ? " " : "", c->prompt_length);
    if (strcmp(skip, "precision") != 0)
        LABEL_PART(" %s", c->precision ? c->precision : (c->dtype ? c->dtype : "?"));
    if (strcmp(skip, "cache_policy") != 0) LABEL_PART(" %s", c->cache_policy ? c->cache_policy : "?");
    for (size_t i = 0; i < c->n_settings; i++)
        if (strcmp(skip, c->setting_names[i]) != 0) LABEL_PART(" %s=%s", c->setting_names[i], c->setting_values[i]);
#undef LABEL_PART
}

void bc_cmp_case_label(const bc_runfile_case *c, char *buf, size_t cap) { bc_cmp_case_label_without(c, NULL, buf, cap); }

/* The finite values of field f of case c, into out; returns how many. */
static size_t case_values(const bc_runfile *rf, const bc_runfile_case *c, int f, double *out) {
    size_t n = 0;
    for (uint32_t it = 0; it < c->n_iterations; it++) {
        double v = c->values[(size_t)it * rf->n_fields + (size_t)f];
        if (isfinite(v)) out[n++] = v;
    }
    return n;
}

const char *bc_cmp_status_word(bc_case_status s) {
    return s == BC_CASE_OK ? "ok" : s == BC_CASE_FAILED ? "failed" : "skipped";
}

/* Fills the statistics and the verdict of row r (both cases present). */
static bc_status compare_case(const bc_cmp_pair *pair, const bc_cmp_options *opt, int fa, int fb, bc_cmp_row *r,
                              double *buf_a, double *buf_b, double *scratch) {
    const bc_runfile_case *ca = r->ca, *cb = r->cb;
    if (ca->status != BC_CASE_OK || cb->status != BC_CASE_OK) {
        r->verdict = BC_VERDICT_FAILED;
        const bc_runfile_case *bad = ca->status != BC_CASE_OK ? ca : cb;
        snprintf(r->note, sizeof r->note, "%s %s: %s", bad == ca ? "A" : "B", bc_cmp_status_word(bad->status),
                 bad->message[0] ? bad->message : "(no message)");
        return BC_OK;
    }
    r->n_a = case_values(pair->a, ca, fa, buf_a);
    r->n_b = case_values(pair->b, cb, fb, buf_b);
    if (r->n_a == 0 || r->n_b == 0) {
        r->verdict = BC_VERDICT_MISSING;
        const char *side = r->n_a == 0 && r->n_b == 0 ? "A or B" : r->n_a == 0 ? "A" : "B";
        snprintf(r->note, sizeof r->note, "no measured value in %s", side);
        return BC_OK;
    }
    r->median_a = bc_cmp_median(buf_a, r->n_a, scratch);
    r->median_b = bc_cmp_median(buf_b, r->n_b, scratch);
    r->ratio = r->median_a > 0 && r->median_b > 0 ? r->median_b / r->median_a : NAN;
    r->change = bc_cmp_change(r->ratio, r->higher_is_better);
    bc_status st = bc_bootstrap_ratio_ci(buf_a, r->n_a, buf_b, r->n_b, opt->resamples, opt->seed, opt->level,
                                         &r->ratio_lo, &r->ratio_hi);
    if (st != BC_OK) return st;
    /* the change is monotone in the ratio: increasing when higher is
     * better, decreasing otherwise */
    double c_lo = bc_cmp_change(r->ratio_lo, r->higher_is_better);
    double c_hi = bc_cmp_change(r->ratio_hi, r->higher_is_better);
    r->change_lo = r->higher_is_better ? c_lo : c_hi;
    r->change_hi = r->higher_is_better ? c_hi : c_lo;
    bc_mwu_result mwu;
    if ((st = bc_mwu_test(buf_a, r->n_a, buf_b, r->n_b, &mwu)) != BC_OK) return st;
    r->p = mwu.p;
    r->u_a = mwu.u_a;
    r->exact = mwu.exact;
    r->min_p = bc_mwu_min_p(r->n_a, r->n_b);
    /* the threshold is relative (0.03: a factor of 1.03), the change a log factor */
    r->verdict = bc_cmp_verdict_decide(r->p, r->change_lo, r->change_hi, log1p(opt->threshold), opt->alpha, r->min_p);
    if (r->better == BC_BETTER_NEITHER && (r->verdict == BC_VERDICT_BETTER || r->verdict == BC_VERDICT_WORSE))
        r->verdict = BC_VERDICT_CHANGED;
    return BC_OK;
}

static bc_cmp_row blank_row(const char *key, const bc_runfile_case *ca, const bc_runfile_case *cb, size_t metric,
                            bc_metric_better better) {
    return (bc_cmp_row){.key = key, .ca = ca, .cb = cb, .metric = metric, .better = better,
                        .higher_is_better = better != BC_BETTER_LOWER,
                        .median_a = NAN, .median_b = NAN, .ratio = NAN, .ratio_lo = NAN, .ratio_hi = NAN,
                        .change = NAN, .change_lo = NAN, .change_hi = NAN, .p = NAN, .u_a = NAN, .min_p = NAN};
}

/* The index of the field called name in rf, or an error naming the file and its fields. */
static int metric_field(const bc_runfile *rf, const char *name, bc_error *err) {
    int f = bc_runfile_field(rf, name);
    if (f >= 0) return f;
    char list[200] = "";
    size_t used = 0;
    uint32_t shown = 0;
    for (; shown < rf->n_fields && used + strlen(rf->field_names[shown]) + 2 < sizeof list; shown++)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", shown ? ", " : "", rf->field_names[shown]);
    bc_error_set(err, BC_ERR_NOT_FOUND, "%s: no field '%s' (metric)", rf->path, name);
    bc_error_hint(err, "its fields: %s%s", rf->n_fields ? list : "(none)", shown < rf->n_fields ? ", ..." : "");
    return -1;
}

static void summarise(bc_cmp_pair *pair) {
    for (size_t m = 0; m < pair->n_metrics; m++) {
        bc_cmp_summary *s = &pair->summary[m];
        double log_sum = 0;
        for (size_t i = 0; i < pair->n_rows; i++) {
            const bc_cmp_row *r = &pair->rows[i];
            if (r->metric != m) continue;
            s->counts[r->verdict]++;
            int compared = r->verdict != BC_VERDICT_MISSING && r->verdict != BC_VERDICT_FAILED;
            if (compared && isfinite(r->ratio) && r->ratio > 0) {
                log_sum += log(r->ratio);
                s->n_ratios++;
            }
        }
        s->geomean_ratio = s->n_ratios ? exp(log_sum / (double)s->n_ratios) : NAN;
        s->geomean_change = bc_cmp_change(s->geomean_ratio, s->better != BC_BETTER_LOWER);
    }
}

/* One side of a pair: the cases of a run that take its value on the axis
 * (all of them without one), and their match keys (owned by the pair). */
typedef struct side {
    const bc_runfile *rf;
    const bc_runfile_case **cases;
    char **keys; /* into pair->keys */
    size_t n;
} side;

/* Selects rf's cases whose value on axis is value (all when value is NULL)
 * and computes their match keys, appending them to pair->keys. */
static bc_status side_select(bc_cmp_pair *pair, const bc_runfile *rf, const char *axis, const char *value,
                             const char *match_axis, side *out) {
    *out = (side){.rf = rf, .cases = calloc(rf->n_cases + 1, sizeof *out->cases),
                  .keys = pair->keys + pair->n_keys};
    if (!out->cases) return BC_ERR_NOMEM;
    for (size_t k = 0; k < rf->n_cases; k++) {
        const bc_runfile_case *c = &rf->cases[k];
        char buf[32];
        const char *v = value ? axis_value(c, axis, buf, sizeof buf) : NULL;
        if (value && (!v || strcmp(v, value) != 0)) continue;
        char *key = match_key(c, match_axis);
        if (!key) return BC_ERR_NOMEM;
        pair->keys[pair->n_keys++] = key;
        out->cases[out->n++] = c;
    }
    return BC_OK;
}

/* The index of the first case of s whose match key is key, or s->n. */
static size_t side_find(const side *s, const char *key) {
    size_t i = 0;
    while (i < s->n && strcmp(s->keys[i], key) != 0) i++;
    return i;
}

/* The first two cases of s with one match key, as a warning; "" if none. */
static void find_duplicate_key(const side *s, const char *name, char *buf, size_t cap) {
    for (size_t i = 0; i < s->n; i++) {
        size_t j = side_find(s, s->keys[i]);
        if (j < i) {
            snprintf(buf, cap, "%s: cases %u and %u have the same key; only case %u is compared", name,
                     s->cases[j]->index, s->cases[i]->index, s->cases[j]->index);
            return;
        }
    }
}

/* The values s's cases take on axis, "a, b" (the run's backend for an axis
 * "backend" its cases do not name). */
static void side_axis_values(const side *s, const char *axis, char *buf, size_t cap) {
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < s->n && used < cap; i++) {
        char num[32], seen[32];
        const char *v = axis_value(s->cases[i], axis, num, sizeof num);
        if (!v) continue;
        int dup = 0;
        for (size_t j = 0; j < i && !dup; j++) {
            const char *w = axis_value(s->cases[j], axis, seen, sizeof seen);
            dup = w && strcmp(v, w) == 0;
        }
        if (!dup) used += (size_t)snprintf(buf + used, cap - used, "%s%s", used ? ", " : "", v);
    }
    if (!buf[0] && strcmp(axis, "backend") == 0 && s->rf->backend) snprintf(buf, cap, "%s", s->rf->backend);
    if (!buf[0]) snprintf(buf, cap, "?");
}

/* The backend s's cases name when they all name one, else the run's. */
static void side_backend(const side *s, char *buf, size_t cap) {
    const char *one = NULL;
    int several = 0;
    for (size_t i = 0; i < s->n; i++) {
        const char *b = s->cases[i]->backend;
        if (!b) continue;
        if (one && strcmp(one, b) != 0) several = 1;
        if (!one) one = b;
    }
    if (one && !several) snprintf(buf, cap, "%s", one);
    else snprintf(buf, cap, "%s", s->rf->backend ? s->rf->backend : "?");
}

/* What a side is called: the path, "PATH [VALUE]" for a backend,
 * "PATH [AXIS=VALUE]" for another axis. */
static void side_name(const bc_runfile *rf, const char *axis, const char *value, char *buf, size_t cap) {
    if (!value) snprintf(buf, cap, "%s", rf->path);
    else if (strcmp(axis, "backend") == 0) snprintf(buf, cap, "%s [%s]", rf->path, value);
    else snprintf(buf, cap, "%s [%s=%s]", rf->path, axis, value);
}

bc_status bc_cmp_pair_build_by(const bc_runfile *a, const char *value_a, const bc_runfile *b, const char *value_b,
                               const char *axis, const bc_cmp_options *opt, bc_cmp_pair *out, bc_error *err) {
    *out = (bc_cmp_pair){.a = a, .b = b, .n_metrics = opt->n_metrics, .metrics = opt->metrics, .axis = axis};
    side_name(a, axis, value_a, out->name_a, sizeof out->name_a);
    side_name(b, axis, value_b, out->name_b, sizeof out->name_b);
    if (axis && !bc_cmp_axis_known(a, axis) && !bc_cmp_axis_known(b, axis)) {
        bc_error_set(err, BC_ERR_NOT_FOUND, "%s, %s: no axis '%s' (no case takes a value on it)", a->path, b->path,
                     axis);
        bc_error_hint(err, "an axis: precision, cache_policy, batch_size, samples_per_prompt, prompt_length, "
                           "response_length, backend, or a setting of matrix.backend_settings");
        return err->code;
    }
    int *fa = calloc(opt->n_metrics + 1, sizeof *fa), *fb = calloc(opt->n_metrics + 1, sizeof *fb);
    size_t max_it = 1;
    for (size_t i = 0; i < a->n_cases; i++)
        if (a->cases[i].n_iterations > max_it) max_it = a->cases[i].n_iterations;
    for (size_t i = 0; i < b->n_cases; i++)
        if (b->cases[i].n_iterations > max_it) max_it = b->cases[i].n_iterations;
    double *buf = malloc(3 * max_it * sizeof *buf);
    size_t max_rows = (a->n_cases + b->n_cases) * opt->n_metrics;
    out->rows = calloc(max_rows ? max_rows : 1, sizeof *out->rows);
    out->summary = calloc(opt->n_metrics + 1, sizeof *out->summary);
    out->env = calloc(BC_CMP_MAX_ENV, sizeof *out->env);
    out->keys = calloc(a->n_cases + b->n_cases + 1, sizeof *out->keys);
    side sa = {0}, sb = {0};
    bc_status st = BC_OK;
    if (!fa || !fb || !buf || !out->rows || !out->summary || !out->env || !out->keys ||
        settings_changed(a, b, out) != BC_OK || side_select(out, a, axis, value_a, axis, &sa) != BC_OK ||
        side_select(out, b, axis, value_b, axis, &sb) != BC_OK)
        st = bc_error_set(err, BC_ERR_NOMEM, "compare: out of memory");
    for (size_t m = 0; st == BC_OK && m < opt->n_metrics; m++) {
        if ((fa[m] = metric_field(a, opt->metrics[m], err)) < 0) st = err->code;
        else if ((fb[m] = metric_field(b, opt->metrics[m], err)) < 0) st = err->code;
        else out->summary[m].better = bc_cmp_metric_better(a, fa[m], b, fb[m]);
    }
    if (st == BC_OK) {
        out->n_cases_a = sa.n;
        out->n_cases_b = sb.n;
        side_backend(&sa, out->backend_a, sizeof out->backend_a);
        side_backend(&sb, out->backend_b, sizeof out->backend_b);
        if (axis) {
            side_axis_values(&sa, axis, out->axis_a, sizeof out->axis_a);
            side_axis_values(&sb, axis, out->axis_b, sizeof out->axis_b);
        }
        out->n_env = bc_cmp_env_compare(a, b, out->env, &out->n_env_refusing);
        /* the axis paired across is what differs on purpose */
        for (size_t i = 0; axis && i < out->n_env; i++)
            if (strcmp(out->env[i].field, axis) == 0) {
                out->n_env_refusing -= (size_t)out->env[i].refuses;
                memmove(&out->env[i], &out->env[i + 1], (out->n_env - i - 1) * sizeof *out->env);
                out->n_env--, i--;
            }
        find_duplicate_key(&sa, out->name_a, out->duplicate_key_warning, sizeof out->duplicate_key_warning);
        if (!out->duplicate_key_warning[0])
            find_duplicate_key(&sb, out->name_b, out->duplicate_key_warning, sizeof out->duplicate_key_warning);
    }
    /* A's cases in A's order, then those only B has */
    for (size_t i = 0; st == BC_OK && i < sa.n; i++) {
        if (side_find(&sa, sa.keys[i]) != i) continue; /* a duplicate key: the first one counts */
        const bc_runfile_case *ca = sa.cases[i];
        size_t j = side_find(&sb, sa.keys[i]);
        const bc_runfile_case *cb = j < sb.n ? sb.cases[j] : NULL;
        if (cb) out->n_matched++;
        else out->n_only_a++;
        for (size_t m = 0; st == BC_OK && m < opt->n_metrics; m++) {
            bc_cmp_row *r = &out->rows[out->n_rows++];
            *r = blank_row(sa.keys[i], ca, cb, m, out->summary[m].better);
            if (!cb) {
                r->verdict = BC_VERDICT_MISSING;
                snprintf(r->note, sizeof r->note, "only in A");
            } else if ((st = compare_case(out, opt, fa[m], fb[m], r, buf, buf + max_it, buf + 2 * max_it)) != BC_OK) {
                bc_error_set(err, st, "compare: out of memory");
            }
        }
    }
    for (size_t j = 0; st == BC_OK && j < sb.n; j++) {
        if (side_find(&sb, sb.keys[j]) != j || side_find(&sa, sb.keys[j]) < sa.n) continue;
        out->n_only_b++;
        for (size_t m = 0; m < opt->n_metrics; m++) {
            bc_cmp_row *r = &out->rows[out->n_rows++];
            *r = blank_row(sb.keys[j], NULL, sb.cases[j], m, out->summary[m].better);
            r->verdict = BC_VERDICT_MISSING;
            snprintf(r->note, sizeof r->note, "only in B");
        }
    }
    if (st == BC_OK) summarise(out);
    free(fa), free(fb), free(buf), free(sa.cases), free(sb.cases);
    if (st != BC_OK) bc_cmp_pair_free(out);
    return st;
}

bc_status bc_cmp_pair_build(const bc_runfile *a, const bc_runfile *b, const bc_cmp_options *opt, bc_cmp_pair *out,
                            bc_error *err) {
    return bc_cmp_pair_build_by(a, NULL, b, NULL, opt->pair_axis, opt, out, err);
}

void bc_cmp_pair_free(bc_cmp_pair *pair) {
    for (size_t i = 0; i < pair->n_keys; i++) free(pair->keys[i]);
    free(pair->keys);
    free(pair->env), free(pair->settings), free(pair->rows), free(pair->summary);
    memset(pair, 0, sizeof *pair);
}

/* --------------------------------------------------------------- words */

const char *bc_cmp_pair_unit(const bc_cmp_pair *pair, size_t metric) {
    const bc_runfile *sides[] = {pair->a, pair->b};
    for (int k = 0; k < 2; k++) {
        int f = bc_runfile_field(sides[k], pair->metrics[metric]);
        if (f >= 0 && sides[k]->field_descs && sides[k]->field_descs[f].unit && sides[k]->field_descs[f].unit[0])
            return sides[k]->field_descs[f].unit;
    }
    return NULL;
}

/* The words for B better and B worse: a time or a rate is faster or
 * slower, a size smaller or larger. */
static void change_words(bc_metric_better better, const char *unit, const char **up, const char **down) {
    static const char *const times[] = {"ns", "us", "ms", "s", "min", "h"};
    static const char *const sizes[] = {"bytes", "B", "KiB", "MiB", "GiB", "kB", "MB", "GB"};
    *up = "better", *down = "worse";
    if (better == BC_BETTER_NEITHER) {
        *up = "higher", *down = "lower";
        return;
    }
    if (!unit) return;
    for (size_t i = 0; i < sizeof times / sizeof times[0]; i++)
        if (strcmp(unit, times[i]) == 0 && better == BC_BETTER_LOWER) *up = "faster", *down = "slower";
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (strcmp(unit, sizes[i]) == 0 && better == BC_BETTER_LOWER) *up = "smaller", *down = "larger";
    size_t n = strlen(unit);
    if (n > 2 && strcmp(unit + n - 2, "/s") == 0 && better == BC_BETTER_HIGHER) *up = "faster", *down = "slower";
}

/* A factor of 1 or more in 3 or 4 characters: 1.03, 2.90, 15.8, 158. */
static void fmt_factor(char *buf, size_t cap, double f) {
    if (f >= 99.95) snprintf(buf, cap, "%.0fx", f);
    else if (f >= 9.995) snprintf(buf, cap, "%.1fx", f);
    else snprintf(buf, cap, "%.2fx", f);
}

void bc_cmp_fmt_change(char *buf, size_t cap, double change, bc_metric_better better, const char *unit) {
    if (!isfinite(change)) {
        snprintf(buf, cap, "-");
        return;
    }
    const char *up, *down;
    change_words(better, unit, &up, &down);
    char f[32];
    fmt_factor(f, sizeof f, exp(fabs(change)));
    if (strcmp(f, "1.00x") == 0) snprintf(buf, cap, "%s", f);
    else snprintf(buf, cap, "%s %s", f, change > 0 ? up : down);
}

void bc_cmp_fmt_interval(char *buf, size_t cap, double lo, double hi, bc_metric_better better, const char *unit) {
    if (!isfinite(lo) || !isfinite(hi)) {
        snprintf(buf, cap, "-");
        return;
    }
    const char *up, *down;
    change_words(better, unit, &up, &down);
    char l[32], h[32];
    fmt_factor(l, sizeof l, exp(fabs(lo)));
    fmt_factor(h, sizeof h, exp(fabs(hi)));
    if (lo >= 0) snprintf(buf, cap, "[%s, %s] %s", l, h, up);
    else if (hi <= 0) snprintf(buf, cap, "[%s, %s] %s", h, l, down);
    else snprintf(buf, cap, "[%s %s, %s %s]", l, down, h, up);
}
