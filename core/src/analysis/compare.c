/* compare.c: `benchctl compare`: environments, case matching, the per-case
 * statistics and verdicts (compare_stats.c), the console, markdown and JSON
 * outputs, and the command's own option parsing. compare.h says what a
 * comparison holds; the HTML forest plot is compare_html.c. */
#define _GNU_SOURCE
#include "compare.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "output.h"

enum { EXIT_OK = 0, EXIT_WORSE = 1, EXIT_USAGE = 2, EXIT_NOT_COMPARABLE = 3 };

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

/* ---------------------------------------------------------- environment */

typedef enum env_kind {
    ENV_STRING,        /* a char * member of bc_runfile */
    ENV_INT,           /* an int64_t member, -1 unknown */
    ENV_UINT,          /* a uint32_t member */
    ENV_WORLD_SIZE     /* world_size, 1 when the file does not say */
} env_kind;

typedef struct env_field {
    const char *name;
    env_kind kind;
    size_t offset;
    int informational; /* reported when it differs, never refuses */
} env_field;

#define ENV_S(name, member) {name, ENV_STRING, offsetof(bc_runfile, member), 0}
#define ENV_I(name, member) {name, ENV_INT, offsetof(bc_runfile, member), 0}

/* What makes two runs comparable: the same model (and shape), machine,
 * software and kind of work. The informational ones are printed when they
 * differ. */
static const env_field k_env_fields[] = {
    ENV_S("model", model),
    ENV_S("model_family", model_family),
    ENV_I("parameters", n_parameters),
    ENV_I("layers", n_layers),
    ENV_I("hidden_size", hidden_size),
    ENV_I("heads", n_heads),
    ENV_I("ffn_size", ffn_size),
    ENV_I("vocab_size", vocab_size),
    ENV_I("max_positions", max_positions),
    ENV_S("device", device),
    ENV_S("gpu", gpu),
    ENV_S("driver", driver),
    ENV_S("cpu_model", cpu_model),
    ENV_S("cpu_kernels", cpu_kernels),
    ENV_I("cpu_threads", cpu_threads),
    ENV_S("benchctl_version", benchctl_version),
    ENV_S("backend", backend),
    {"world_size", ENV_WORLD_SIZE, 0, 0},
    {"warmup", ENV_UINT, offsetof(bc_runfile, warmup), 1},
    {"iterations", ENV_UINT, offsetof(bc_runfile, iterations), 1},
    {"git_commit", ENV_STRING, offsetof(bc_runfile, git_commit), 1},
    {"hostname", ENV_STRING, offsetof(bc_runfile, hostname), 1},
};
#define N_ENV_FIELDS (sizeof k_env_fields / sizeof k_env_fields[0])

/* Whether rf's backend marks the setting called name BC_SETTING_WORKLOAD
 * (the reports' "workload_settings"). */
static int is_workload(const bc_runfile *rf, const char *name) {
    for (size_t i = 0; i < rf->n_backend_settings; i++)
        if (rf->backend_settings[i].workload && strcmp(rf->backend_settings[i].name, name) == 0) return 1;
    return 0;
}

/* f's value in rf as text; "" when the file does not say. */
static void env_value(const bc_runfile *rf, const env_field *f, char *buf, size_t cap) {
    const char *base = (const char *)rf;
    buf[0] = '\0';
    switch (f->kind) {
    case ENV_STRING: {
        const char *s = *(char *const *)(base + f->offset);
        if (s) snprintf(buf, cap, "%s", s);
        break;
    }
    case ENV_INT: {
        int64_t v = *(const int64_t *)(base + f->offset);
        if (v >= 0) snprintf(buf, cap, "%lld", (long long)v);
        break;
    }
    case ENV_UINT: snprintf(buf, cap, "%u", *(const uint32_t *)(base + f->offset)); break;
    case ENV_WORLD_SIZE: snprintf(buf, cap, "%lld", (long long)(rf->world_size > 0 ? rf->world_size : 1)); break;
    }
}

size_t bc_cmp_env_compare(const bc_runfile *a, const bc_runfile *b, bc_cmp_env_diff *out, size_t *n_refusing) {
    /* three passes so the refusing differences come first */
    size_t n = 0;
    *n_refusing = 0;
    for (int pass = 0; pass < 3; pass++)
        for (size_t i = 0; i < N_ENV_FIELDS && n < BC_CMP_MAX_ENV; i++) {
            const env_field *f = &k_env_fields[i];
            bc_cmp_env_diff d = {.field = f->name};
            env_value(a, f, d.a, sizeof d.a);
            env_value(b, f, d.b, sizeof d.b);
            int both = d.a[0] && d.b[0], differ = strcmp(d.a, d.b) != 0;
            if (!differ) continue;
            int kind = both && !f->informational ? 0 : both ? 1 : 2;
            if (kind != pass) continue;
            d.refuses = kind == 0;
            *n_refusing += (size_t)d.refuses;
            out[n++] = d;
        }
    /* then the settings either backend marks as defining the work: another
     * value refuses (after the fields above, which a file always has) */
    for (int side = 0; side < 2; side++) {
        const bc_runfile *rf = side ? b : a;
        for (size_t i = 0; i < rf->n_backend_settings && n < BC_CMP_MAX_ENV; i++) {
            const char *name = rf->backend_settings[i].name;
            if (!rf->backend_settings[i].workload || (side == 1 && is_workload(a, name))) continue;
            const char *va = bc_runfile_setting(a, name), *vb = bc_runfile_setting(b, name);
            if (va && vb && strcmp(va, vb) == 0) continue;
            bc_cmp_env_diff d = {.field = name, .refuses = va && vb};
            snprintf(d.a, sizeof d.a, "%s", va ? va : "");
            snprintf(d.b, sizeof d.b, "%s", vb ? vb : "");
            *n_refusing += (size_t)d.refuses;
            out[n++] = d;
        }
    }
    /* refusing first, then informational, then one-sided, each in order */
    for (size_t i = 1; i < n; i++) {
        bc_cmp_env_diff d = out[i];
        int kind = d.refuses ? 0 : d.a[0] && d.b[0] ? 1 : 2;
        size_t j = i;
        for (; j > 0; j--) {
            const bc_cmp_env_diff *p = &out[j - 1];
            if ((p->refuses ? 0 : p->a[0] && p->b[0] ? 1 : 2) <= kind) break;
            out[j] = out[j - 1];
        }
        out[j] = d;
    }
    return n;
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
            if (is_workload(a, name) || is_workload(b, name) || key_has_setting(key, name)) continue;
            if (va && vb && strcmp(va, vb) == 0) continue;
            out->settings[out->n_settings++] = (bc_cmp_setting_change){name, va, vb};
        }
    }
    return BC_OK;
}

/* --------------------------------------------------------------- cases */

void bc_cmp_case_label(const bc_runfile_case *c, char *buf, size_t cap) {
    int used = snprintf(buf, cap, "B=%u x%u %u->%u %s %s", c->batch_size, c->samples_per_prompt, c->prompt_length,
                        c->response_length, c->precision ? c->precision : (c->dtype ? c->dtype : "?"),
                        c->cache_policy ? c->cache_policy : "?");
    for (size_t i = 0; i < c->n_settings && used >= 0 && (size_t)used < cap; i++) {
        int more = snprintf(buf + used, cap - (size_t)used, " %s=%s", c->setting_names[i], c->setting_values[i]);
        used = more < 0 ? more : used + more;
    }
}

/* The finite values of field f of case c, into out; returns how many. */
static size_t case_values(const bc_runfile *rf, const bc_runfile_case *c, int f, double *out) {
    size_t n = 0;
    for (uint32_t it = 0; it < c->n_iterations; it++) {
        double v = c->values[(size_t)it * rf->n_fields + (size_t)f];
        if (isfinite(v)) out[n++] = v;
    }
    return n;
}

static const char *status_word(bc_case_status s) {
    return s == BC_CASE_OK ? "ok" : s == BC_CASE_FAILED ? "failed" : "skipped";
}

/* Fills the statistics and the verdict of row r (both cases present). */
static bc_status compare_case(const bc_cmp_pair *pair, const bc_cmp_options *opt, int fa, int fb, bc_cmp_row *r,
                              double *buf_a, double *buf_b, double *scratch) {
    const bc_runfile_case *ca = r->ca, *cb = r->cb;
    if (ca->status != BC_CASE_OK || cb->status != BC_CASE_OK) {
        r->verdict = BC_VERDICT_FAILED;
        const bc_runfile_case *bad = ca->status != BC_CASE_OK ? ca : cb;
        snprintf(r->note, sizeof r->note, "%s %s: %s", bad == ca ? "A" : "B", status_word(bad->status),
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
    r->verdict = bc_cmp_verdict_decide(r->p, r->change_lo, r->change_hi, opt->threshold, opt->alpha, r->min_p);
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

/* The first pair of cases of rf with one key, as a warning; "" if none. */
static void find_duplicate_key(const bc_runfile *rf, char *buf, size_t cap) {
    for (size_t i = 0; i < rf->n_cases; i++)
        for (size_t j = i + 1; j < rf->n_cases; j++)
            if (strcmp(rf->cases[i].key, rf->cases[j].key) == 0) {
                snprintf(buf, cap, "%s: cases %u and %u have the same key; only case %u is compared", rf->path,
                         rf->cases[i].index, rf->cases[j].index, rf->cases[i].index);
                return;
            }
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

bc_status bc_cmp_pair_build(const bc_runfile *a, const bc_runfile *b, const bc_cmp_options *opt, bc_cmp_pair *out,
                            bc_error *err) {
    *out = (bc_cmp_pair){.a = a, .b = b, .n_metrics = opt->n_metrics, .metrics = opt->metrics};
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
    bc_status st = BC_OK;
    if (!fa || !fb || !buf || !out->rows || !out->summary || !out->env || settings_changed(a, b, out) != BC_OK)
        st = bc_error_set(err, BC_ERR_NOMEM, "compare: out of memory");
    for (size_t m = 0; st == BC_OK && m < opt->n_metrics; m++) {
        if ((fa[m] = metric_field(a, opt->metrics[m], err)) < 0) st = err->code;
        else if ((fb[m] = metric_field(b, opt->metrics[m], err)) < 0) st = err->code;
        else out->summary[m].better = bc_cmp_metric_better(a, fa[m], b, fb[m]);
    }
    if (st == BC_OK) {
        out->n_env = bc_cmp_env_compare(a, b, out->env, &out->n_env_refusing);
        find_duplicate_key(a, out->duplicate_key_warning, sizeof out->duplicate_key_warning);
        if (!out->duplicate_key_warning[0])
            find_duplicate_key(b, out->duplicate_key_warning, sizeof out->duplicate_key_warning);
    }
    /* A's cases in A's order, then those only B has */
    for (size_t i = 0; st == BC_OK && i < a->n_cases; i++) {
        const bc_runfile_case *ca = &a->cases[i];
        if (bc_runfile_find(a, ca->key) != ca) continue; /* a duplicate key: the first one counts */
        const bc_runfile_case *cb = bc_runfile_find(b, ca->key);
        if (cb) out->n_matched++;
        else out->n_only_a++;
        for (size_t m = 0; st == BC_OK && m < opt->n_metrics; m++) {
            bc_cmp_row *r = &out->rows[out->n_rows++];
            *r = blank_row(ca->key, ca, cb, m, out->summary[m].better);
            if (!cb) {
                r->verdict = BC_VERDICT_MISSING;
                snprintf(r->note, sizeof r->note, "only in A");
            } else if ((st = compare_case(out, opt, fa[m], fb[m], r, buf, buf + max_it, buf + 2 * max_it)) != BC_OK) {
                bc_error_set(err, st, "compare: out of memory");
            }
        }
    }
    for (size_t i = 0; st == BC_OK && i < b->n_cases; i++) {
        const bc_runfile_case *cb = &b->cases[i];
        if (bc_runfile_find(b, cb->key) != cb || bc_runfile_find(a, cb->key)) continue;
        out->n_only_b++;
        for (size_t m = 0; m < opt->n_metrics; m++) {
            bc_cmp_row *r = &out->rows[out->n_rows++];
            *r = blank_row(cb->key, NULL, cb, m, out->summary[m].better);
            r->verdict = BC_VERDICT_MISSING;
            snprintf(r->note, sizeof r->note, "only in B");
        }
    }
    if (st == BC_OK) summarise(out);
    free(fa), free(fb), free(buf);
    if (st != BC_OK) bc_cmp_pair_free(out);
    return st;
}

void bc_cmp_pair_free(bc_cmp_pair *pair) {
    free(pair->env), free(pair->settings), free(pair->rows), free(pair->summary);
    memset(pair, 0, sizeof *pair);
}

/* -------------------------------------------------------------- output */

/* The case label of a row: from A's case, or B's when A has none. */
static void row_label(const bc_cmp_row *r, char *buf, size_t cap) {
    bc_cmp_case_label(r->ca ? r->ca : r->cb, buf, cap);
}

/* A number in at most 7 characters where it can: 12345.6, 0.110961, 1.2e+06. */
static void fmt_num(char *buf, size_t cap, double v) {
    if (!isfinite(v)) snprintf(buf, cap, "-");
    else snprintf(buf, cap, "%.6g", v);
}

static void fmt_pct(char *buf, size_t cap, double v) {
    if (!isfinite(v)) snprintf(buf, cap, "-");
    else snprintf(buf, cap, "%+.1f%%", 100.0 * v);
}

static void fmt_interval(char *buf, size_t cap, double lo, double hi) {
    if (!isfinite(lo) || !isfinite(hi)) snprintf(buf, cap, "-");
    else snprintf(buf, cap, "[%+.1f%%, %+.1f%%]", 100.0 * lo, 100.0 * hi);
}

static void fmt_p(char *buf, size_t cap, double p) {
    if (!isfinite(p)) snprintf(buf, cap, "-");
    else if (p < 1e-4) snprintf(buf, cap, "%.1e", p);
    else snprintf(buf, cap, "%.4f", p);
}

static void fmt_n(char *buf, size_t cap, const bc_cmp_row *r) {
    if (r->verdict == BC_VERDICT_FAILED || (r->verdict == BC_VERDICT_MISSING && (!r->ca || !r->cb)))
        snprintf(buf, cap, "-");
    else snprintf(buf, cap, "%zu/%zu", r->n_a, r->n_b);
}

/* One row's cells, as text. */
typedef struct row_cells {
    char label[96], n[24], a[24], b[24], ratio[24], change[24], interval[48], p[24];
} row_cells;

static void cells_of(const bc_cmp_row *r, row_cells *c) {
    row_label(r, c->label, sizeof c->label);
    fmt_n(c->n, sizeof c->n, r);
    fmt_num(c->a, sizeof c->a, r->median_a);
    fmt_num(c->b, sizeof c->b, r->median_b);
    if (isfinite(r->ratio)) snprintf(c->ratio, sizeof c->ratio, "%.3f", r->ratio);
    else snprintf(c->ratio, sizeof c->ratio, "-");
    fmt_pct(c->change, sizeof c->change, r->change);
    fmt_interval(c->interval, sizeof c->interval, r->change_lo, r->change_hi);
    fmt_p(c->p, sizeof c->p, r->p);
}

/* "A: base.json: testbackend, model "x", cpu, 4 cases, 8 iterations, git abc" */
static void describe_run(char *buf, size_t cap, const bc_runfile *rf) {
    static const char *const formats[] = {"?", "benchctl JSON", "benchctl journal", "seed JSON"};
    snprintf(buf, cap, "%s (%s%s): backend %s, model %s, device %s, %zu case%s, %u iterations%s%s%s%s", rf->path,
             formats[(unsigned)rf->format < 4 ? rf->format : 0],
             rf->format == BC_RUNFILE_JOURNAL && !rf->complete ? ", unfinished" : "", rf->backend ? rf->backend : "?",
             rf->model ? rf->model : "?", rf->device ? rf->device : "?", rf->n_cases, rf->n_cases == 1 ? "" : "s",
             rf->iterations, rf->git_commit ? ", git " : "", rf->git_commit ? rf->git_commit : "",
             rf->start_time ? ", " : "", rf->start_time ? rf->start_time : "");
}

/* The verdict counts that are not 0: "3 WORSE, 1 NOISE". */
static void fmt_counts(char *buf, size_t cap, const bc_cmp_summary *s) {
    size_t used = 0;
    buf[0] = '\0';
    for (int v = 0; v < BC_N_VERDICTS; v++)
        if (s->counts[v] && used < cap)
            used += (size_t)snprintf(buf + used, cap - used, "%s%zu %s", used ? ", " : "", s->counts[v],
                                     bc_verdict_name((bc_verdict)v));
    if (!used) snprintf(buf, cap, "no rows");
}

static size_t cases_of(const bc_cmp_pair *pair) { return pair->n_matched + pair->n_only_a + pair->n_only_b; }

/* The lines every text format has around its table, each passed to line()
 * without a line end; bullet is what starts a list item. */
typedef void (*line_fn)(FILE *out, const char *text);

static void env_lines(FILE *out, const bc_cmp_pair *pair, line_fn line) {
    char text[1024];
    if (pair->n_env_refusing == 0) {
        line(out, "environment: the same in every field both files state");
    }
    for (size_t i = 0; i < pair->n_env; i++) {
        const bc_cmp_env_diff *d = &pair->env[i];
        if (d->refuses)
            snprintf(text, sizeof text, "environment differs (--ignore-env): %s: %s (A) vs %s (B)", d->field, d->a,
                     d->b);
        else if (d->a[0] && d->b[0])
            snprintf(text, sizeof text, "differs (informational): %s: %s (A) vs %s (B)", d->field, d->a, d->b);
        else
            snprintf(text, sizeof text, "not compared, %s does not say: %s (%s: %s)", d->a[0] ? "B" : "A", d->field,
                     d->a[0] ? "A" : "B", d->a[0] ? d->a : d->b);
        line(out, text);
    }
    if (pair->n_settings) {
        size_t used = (size_t)snprintf(text, sizeof text, "what changed between the runs (backend settings):");
        for (size_t i = 0; i < pair->n_settings && used < sizeof text; i++) {
            const bc_cmp_setting_change *s = &pair->settings[i];
            used += (size_t)snprintf(text + used, sizeof text - used, "%s %s: %s -> %s", i ? ";" : "", s->name,
                                     s->a ? s->a : "(not set)", s->b ? s->b : "(not set)");
        }
        line(out, text);
    }
    if (pair->duplicate_key_warning[0]) line(out, pair->duplicate_key_warning);
}

static void console_line(FILE *out, const char *text) { fprintf(out, "%s\n", text); }

/* The column widths of the console table. */
typedef struct widths {
    int label, metric, n, a, b, ratio, change, interval, p;
} widths;

static int max_i(int x, int y) { return x > y ? x : y; }

static widths table_widths(const bc_cmp_pair *pair) {
    widths w = {4, 6, 3, 8, 8, 5, 6, 12, 6};
    for (size_t i = 0; i < pair->n_rows; i++) {
        row_cells c;
        cells_of(&pair->rows[i], &c);
        w.label = max_i(w.label, (int)strlen(c.label));
        w.metric = max_i(w.metric, (int)strlen(pair->metrics[pair->rows[i].metric]));
        w.n = max_i(w.n, (int)strlen(c.n));
        w.a = max_i(w.a, (int)strlen(c.a));
        w.b = max_i(w.b, (int)strlen(c.b));
        w.ratio = max_i(w.ratio, (int)strlen(c.ratio));
        w.change = max_i(w.change, (int)strlen(c.change));
        w.interval = max_i(w.interval, (int)strlen(c.interval));
        w.p = max_i(w.p, (int)strlen(c.p));
    }
    return w;
}

static void legend_lines(FILE *out, const bc_cmp_options *opt, line_fn line) {
    char text[640];
    snprintf(text, sizeof text,
             "A, B: medians over the measured iterations; change: positive = B better (B/A - 1 where higher "
             "is better, A/B - 1 where lower is, B/A - 1 where neither: the metric's own descriptor)");
    line(out, text);
    snprintf(text, sizeof text,
             "interval: %g%% percentile bootstrap of the ratio of medians (%u resamples, seed %llu); p: two-sided "
             "Mann-Whitney U",
             100.0 * opt->level, opt->resamples, (unsigned long long)opt->seed);
    line(out, text);
    snprintf(text, sizeof text,
             "BETTER/WORSE: p < %g and the whole interval beyond +-%g%%; SAME: the whole interval within +-%g%%; "
             "UNDERPOWERED: too few iterations to reach p < %g; NOISE: neither",
             opt->alpha, 100.0 * opt->threshold, 100.0 * opt->threshold, opt->alpha);
    line(out, text);
}

void bc_cmp_write_console(FILE *out, const bc_cmp_pair *pairs, size_t n_pairs, const bc_cmp_options *opt) {
    char text[1024];
    for (size_t k = 0; k < n_pairs; k++) {
        const bc_cmp_pair *pair = &pairs[k];
        if (k) fputc('\n', out);
        describe_run(text, sizeof text, pair->a);
        fprintf(out, "A: %s\n", text);
        describe_run(text, sizeof text, pair->b);
        fprintf(out, "B: %s\n", text);
        env_lines(out, pair, console_line);
        fputc('\n', out);
        widths w = table_widths(pair);
        fprintf(out, "%-*s  %-*s  %*s  %*s  %*s  %*s  %*s  %-*s  %*s  %s\n", w.label, "case", w.metric, "metric", w.n,
                "n", w.a, "A", w.b, "B", w.ratio, "B/A", w.change, "change", w.interval, "interval", w.p, "p",
                "verdict");
        int total = w.label + w.metric + w.n + w.a + w.b + w.ratio + w.change + w.interval + w.p + 2 * 9 + 12;
        for (int i = 0; i < total; i++) fputc('-', out);
        fputc('\n', out);
        for (size_t i = 0; i < pair->n_rows; i++) {
            const bc_cmp_row *r = &pair->rows[i];
            row_cells c;
            cells_of(r, &c);
            fprintf(out, "%-*s  %-*s  %*s  %*s  %*s  %*s  %*s  %-*s  %*s  %s%s%s\n", w.label, c.label, w.metric,
                    pair->metrics[r->metric], w.n, c.n, w.a, c.a, w.b, c.b, w.ratio, c.ratio, w.change, c.change,
                    w.interval, c.interval, w.p, c.p, bc_verdict_name(r->verdict), r->note[0] ? "  " : "", r->note);
        }
        fputc('\n', out);
        fprintf(out, "%zu case%s: %zu matched, %zu only in A, %zu only in B\n", cases_of(pair),
                cases_of(pair) == 1 ? "" : "s", pair->n_matched, pair->n_only_a, pair->n_only_b);
        for (size_t m = 0; m < pair->n_metrics; m++) {
            const bc_cmp_summary *s = &pair->summary[m];
            char counts[256], ratio[32], change[32];
            fmt_counts(counts, sizeof counts, s);
            fmt_num(ratio, sizeof ratio, s->geomean_ratio);
            fmt_pct(change, sizeof change, s->geomean_change);
            fprintf(out, "%s (%s is better): %s; geometric mean of B/A %s (change %s)\n", pair->metrics[m],
                    bc_metric_better_name(s->better), counts, ratio, change);
        }
    }
    fputc('\n', out);
    legend_lines(out, opt, console_line);
}

/* ------------------------------------------------------------ markdown */

static void md_bullet(FILE *out, const char *text) {
    fputs("- ", out);
    for (const char *p = text; *p; p++) {
        if (strchr("|*`<[]\\", *p)) fputc('\\', out); /* GitHub leaves intraword _ alone */
        fputc(*p, out);
    }
    fputc('\n', out);
}

/* A table cell: '|' escaped so it cannot end the cell. */
static void md_cell(FILE *out, const char *text) {
    fputs(" ", out);
    for (const char *p = text; *p; p++) {
        if (*p == '|') fputc('\\', out);
        fputc(*p, out);
    }
    fputs(" |", out);
}

void bc_cmp_write_markdown(FILE *out, const bc_cmp_pair *pairs, size_t n_pairs, const bc_cmp_options *opt) {
    char text[1024];
    for (size_t k = 0; k < n_pairs; k++) {
        const bc_cmp_pair *pair = &pairs[k];
        fprintf(out, "%s### `", k ? "\n" : "");
        for (const char *p = pair->b->path; *p; p++) fputc(*p == '`' ? '\'' : *p, out);
        fputs("` against `", out);
        for (const char *p = pair->a->path; *p; p++) fputc(*p == '`' ? '\'' : *p, out);
        fputs("`\n\n", out);
        describe_run(text, sizeof text, pair->a);
        char line[1100];
        snprintf(line, sizeof line, "A: %s", text);
        md_bullet(out, line);
        describe_run(text, sizeof text, pair->b);
        snprintf(line, sizeof line, "B: %s", text);
        md_bullet(out, line);
        env_lines(out, pair, md_bullet);
        fputs("\n| case | metric | n | A | B | B/A | change | interval | p | verdict |\n"
              "|---|---|--:|--:|--:|--:|--:|:-:|--:|---|\n",
              out);
        for (size_t i = 0; i < pair->n_rows; i++) {
            const bc_cmp_row *r = &pair->rows[i];
            row_cells c;
            cells_of(r, &c);
            fputc('|', out);
            md_cell(out, c.label);
            md_cell(out, pair->metrics[r->metric]);
            md_cell(out, c.n);
            md_cell(out, c.a);
            md_cell(out, c.b);
            md_cell(out, c.ratio);
            md_cell(out, c.change);
            md_cell(out, c.interval);
            md_cell(out, c.p);
            const char *bold = r->verdict == BC_VERDICT_WORSE || r->verdict == BC_VERDICT_BETTER ? "**" : "";
            snprintf(text, sizeof text, "%s%s%s%s%s", bold, bc_verdict_name(r->verdict), bold, r->note[0] ? " " : "",
                     r->note);
            md_cell(out, text);
            fputc('\n', out);
        }
        fprintf(out, "\n%zu case%s: %zu matched, %zu only in A, %zu only in B.\n\n", cases_of(pair),
                cases_of(pair) == 1 ? "" : "s", pair->n_matched, pair->n_only_a, pair->n_only_b);
        for (size_t m = 0; m < pair->n_metrics; m++) {
            const bc_cmp_summary *s = &pair->summary[m];
            char counts[256], ratio[32], change[32];
            fmt_counts(counts, sizeof counts, s);
            fmt_num(ratio, sizeof ratio, s->geomean_ratio);
            fmt_pct(change, sizeof change, s->geomean_change);
            fprintf(out, "- **%s** (%s is better): %s; geometric mean of B/A %s (change %s)\n", pair->metrics[m],
                    bc_metric_better_name(s->better), counts, ratio, change);
        }
    }
    fputc('\n', out);
    legend_lines(out, opt, md_bullet);
}

/* ---------------------------------------------------------------- JSON */

/* A number, or null when it is not finite (JSON has no NaN). */
static json_t *jnum(double v) { return isfinite(v) ? json_real(v) : json_null(); }

static json_t *jstr_or_null(const char *s) { return s ? json_string(s) : json_null(); }

static json_t *json_run(const bc_runfile *rf) {
    static const char *const formats[] = {"?", "json", "journal", "seed_json"};
    return json_pack("{s:s, s:s, s:b, s:o, s:o, s:o, s:o, s:I, s:i}", "path", rf->path, "format",
                     formats[(unsigned)rf->format < 4 ? rf->format : 0], "complete", rf->complete, "backend",
                     jstr_or_null(rf->backend), "model", jstr_or_null(rf->model), "git_commit",
                     jstr_or_null(rf->git_commit), "start_time", jstr_or_null(rf->start_time), "n_cases",
                     (json_int_t)rf->n_cases, "iterations", (int)rf->iterations);
}

static json_t *json_case_ref(const bc_runfile_case *c) {
    if (!c) return json_null();
    return json_pack("{s:i, s:s}", "index", (int)c->index, "status", status_word(c->status));
}

static json_t *json_pair(const bc_cmp_pair *pair) {
    json_t *env = json_array(), *settings = json_array(), *rows = json_array(), *summary = json_object();
    for (size_t i = 0; i < pair->n_env; i++) {
        const bc_cmp_env_diff *d = &pair->env[i];
        json_array_append_new(env, json_pack("{s:s, s:o, s:o, s:b}", "field", d->field, "a",
                                             d->a[0] ? json_string(d->a) : json_null(), "b",
                                             d->b[0] ? json_string(d->b) : json_null(), "refuses", d->refuses));
    }
    for (size_t i = 0; i < pair->n_settings; i++) {
        const bc_cmp_setting_change *s = &pair->settings[i];
        json_array_append_new(settings, json_pack("{s:s, s:o, s:o}", "name", s->name, "a", jstr_or_null(s->a), "b",
                                                  jstr_or_null(s->b)));
    }
    for (size_t i = 0; i < pair->n_rows; i++) {
        const bc_cmp_row *r = &pair->rows[i];
        char label[96];
        row_label(r, label, sizeof label);
        json_t *row = json_pack("{s:s, s:s, s:o, s:o, s:s, s:b, s:I, s:I, s:o, s:o}", "key", r->key, "label", label,
                                "a", json_case_ref(r->ca), "b", json_case_ref(r->cb), "metric",
                                pair->metrics[r->metric], "higher_is_better", r->better == BC_BETTER_HIGHER, "n_a",
                                (json_int_t)r->n_a, "n_b", (json_int_t)r->n_b, "median_a", jnum(r->median_a),
                                "median_b", jnum(r->median_b));
        json_object_set_new(row, "better", json_string(bc_metric_better_name(r->better)));
        json_object_set_new(row, "ratio", jnum(r->ratio));
        json_object_set_new(row, "ratio_low", jnum(r->ratio_lo));
        json_object_set_new(row, "ratio_high", jnum(r->ratio_hi));
        json_object_set_new(row, "change", jnum(r->change));
        json_object_set_new(row, "change_low", jnum(r->change_lo));
        json_object_set_new(row, "change_high", jnum(r->change_hi));
        json_object_set_new(row, "u", jnum(r->u_a));
        json_object_set_new(row, "p", jnum(r->p));
        json_object_set_new(row, "p_method", isfinite(r->p) ? json_string(r->exact ? "exact" : "normal") : json_null());
        json_object_set_new(row, "min_p", jnum(r->min_p));
        json_object_set_new(row, "verdict", json_string(bc_verdict_name(r->verdict)));
        json_object_set_new(row, "note", json_string(r->note));
        json_array_append_new(rows, row);
    }
    for (size_t m = 0; m < pair->n_metrics; m++) {
        const bc_cmp_summary *s = &pair->summary[m];
        json_t *counts = json_object();
        for (int v = 0; v < BC_N_VERDICTS; v++)
            json_object_set_new(counts, bc_verdict_name((bc_verdict)v), json_integer((json_int_t)s->counts[v]));
        json_object_set_new(summary, pair->metrics[m],
                            json_pack("{s:b, s:s, s:o, s:o, s:o, s:I}", "higher_is_better",
                                      s->better == BC_BETTER_HIGHER, "better", bc_metric_better_name(s->better),
                                      "counts", counts, "geomean_ratio", jnum(s->geomean_ratio), "geomean_change",
                                      jnum(s->geomean_change), "n_ratios", (json_int_t)s->n_ratios));
    }
    return json_pack("{s:o, s:o, s:b, s:o, s:o, s:I, s:I, s:I, s:o, s:o}", "a", json_run(pair->a), "b",
                     json_run(pair->b), "comparable", pair->n_env_refusing == 0 && pair->n_matched > 0, "environment",
                     env, "settings_changed", settings, "n_matched", (json_int_t)pair->n_matched, "n_only_a",
                     (json_int_t)pair->n_only_a, "n_only_b", (json_int_t)pair->n_only_b, "rows", rows, "summary",
                     summary);
}

bc_status bc_cmp_write_json(FILE *out, const bc_cmp_pair *pairs, size_t n_pairs, const bc_cmp_options *opt,
                            int exit_status, bc_error *err) {
    json_t *metrics = json_array(), *comparisons = json_array();
    for (size_t m = 0; m < opt->n_metrics; m++) json_array_append_new(metrics, json_string(opt->metrics[m]));
    for (size_t k = 0; k < n_pairs; k++) json_array_append_new(comparisons, json_pair(&pairs[k]));
    json_t *doc = json_pack("{s:i, s:o, s:f, s:f, s:f, s:I, s:I, s:b, s:o, s:i}", "compare_version", 1, "metrics",
                            metrics, "alpha", opt->alpha, "threshold", opt->threshold, "confidence_level", opt->level,
                            "resamples", (json_int_t)opt->resamples, "seed", (json_int_t)opt->seed, "ignore_env",
                            opt->ignore_env, "comparisons", comparisons, "exit_status", exit_status);
    /* json_pack fails (NULL) on any NULL part, i.e. when memory ran out */
    if (!doc || json_dumpf(doc, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10)) != 0) {
        json_decref(doc);
        return bc_error_set(err, BC_ERR_NOMEM, "compare: the JSON document could not be written");
    }
    fputc('\n', out);
    json_decref(doc);
    return BC_OK;
}

/* --------------------------------------------------------- the command */

const char bc_compare_usage[] =
    "usage: benchctl compare [options] BASE OTHER [OTHER...]\n"
    "       benchctl compare [options] --by backend|SETTING RUN\n"
    "\n"
    "Compares finished runs case by case: each OTHER against BASE (A = BASE,\n"
    "B = OTHER). Each file is a benchctl JSON report (.gz too), a jsonl journal,\n"
    "or JSON with the seed's keys (DeepSpeed's OPSD rollout benchmark).\n"
    "Cases match by their key (shape, dtype, cache behaviour). Per case and\n"
    "metric: the medians, the change (positive = B better) with its 95%\n"
    "bootstrap interval, the two-sided Mann-Whitney U test, and a verdict:\n"
    "BETTER/WORSE (p < alpha and the interval beyond +-threshold), SAME (the\n"
    "interval within +-threshold), NOISE, UNDERPOWERED (too few iterations to\n"
    "reach p < alpha), MISSING (one side lacks it), FAILED (a side not ok),\n"
    "CHANGED (BETTER/WORSE for a metric no direction is better for).\n"
    "  --metric NAME      a per-iteration field to compare; repeatable or a,b\n"
    "                     (default tokens_per_second,total_ms); which way is\n"
    "                     better is the metric's own (the report's \"metrics\")\n"
    "  --alpha X          significance level (default 0.01)\n"
    "  --threshold X      smallest change that counts: 0.03 or 3% (default 3%)\n"
    "  --format F         console (default), md (GitHub table) or json\n"
    "  --html FILE        also write a forest plot as one self-contained HTML file\n"
    "  --by backend       one run with a backends list: its first backend (BASE)\n"
    "                     against each other one, case by case\n"
    "  --by SETTING       one run whose matrix varies the backend setting\n"
    "                     SETTING (matrix.backend_settings): its first value\n"
    "                     (BASE) against each other one, case by case\n"
    "  --ignore-env       compare runs whose environments differ, listing how\n"
    "  --fail-on WHAT     worse (default): exit 1 on any WORSE; change: on WORSE\n"
    "                     or BETTER; never\n"
    "Exit status: 0 nothing --fail-on fails on, 1 something it fails on,\n"
    "2 usage, unreadable input or an --html file that cannot be written,\n"
    "3 not comparable (environments differ without --ignore-env, or no case\n"
    "matched).\n";

static int usage_error(const char *hint, const char *fmt, ...) BC_PRINTF(2, 3);
static int usage_error(const char *hint, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("benchctl: compare: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fprintf(stderr, "benchctl: hint: %s\n", hint ? hint : "see benchctl compare --help");
    return EXIT_USAGE;
}

typedef enum fail_on { FAIL_ON_WORSE, FAIL_ON_CHANGE, FAIL_ON_NEVER } fail_on;
typedef enum out_format { FORMAT_CONSOLE, FORMAT_MD, FORMAT_JSON } out_format;

typedef struct compare_args {
    bc_cmp_options opt;
    const char **metrics; /* owned array of pointers into metric_text */
    size_t metrics_cap;
    char **metric_text;   /* owned copies of the --metric values */
    size_t n_metric_text;
    const char **files;
    size_t n_files;
    out_format format;
    fail_on fail;
    const char *html;
    const char *by; /* --by backend|SETTING: one file, the axis's first value against each other, or NULL */
    int help;
} compare_args;

/* A number in (lo, hi) or [lo, hi) (lo_open); "3%" is 0.03 when percent. */
static int parse_fraction(const char *s, double lo, double hi, int lo_open, int percent, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno) return -1;
    if (percent && *end == '%') v /= 100.0, end++;
    if (*end || !isfinite(v) || v >= hi || v < lo || (lo_open && v == lo)) return -1;
    *out = v;
    return 0;
}

/* Adds the names of a comma-separated list to a->metrics. */
static int add_metrics(compare_args *a, const char *list) {
    char *copy = strdup(list);
    if (!copy) return -1;
    a->metric_text[a->n_metric_text++] = copy;
    for (char *save = NULL, *name = strtok_r(copy, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
        for (size_t i = 0; i < a->opt.n_metrics; i++)
            if (strcmp(a->metrics[i], name) == 0) goto next; /* given twice: once */
        if (a->opt.n_metrics == a->metrics_cap) {
            size_t cap = a->metrics_cap ? 2 * a->metrics_cap : 8;
            const char **grown = realloc((void *)a->metrics, cap * sizeof *grown);
            if (!grown) return -1;
            a->metrics = grown;
            a->metrics_cap = cap;
        }
        a->metrics[a->opt.n_metrics++] = name;
    next:;
    }
    return 0;
}

/* The value of option argv[*i] ("--name VALUE" or "--name=VALUE"), or NULL
 * when the argument is not that option. */
static const char *option_value(int argc, char **argv, int *i, const char *name, int *missing) {
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) != 0) return NULL;
    if (argv[*i][n] == '=') return argv[*i] + n + 1;
    if (argv[*i][n] != '\0') return NULL;
    if (*i + 1 >= argc) {
        *missing = 1;
        return NULL;
    }
    return argv[++*i];
}

static int parse_compare_args(int argc, char **argv, compare_args *a) {
    bc_cmp_options_default(&a->opt);
    a->metric_text = calloc((size_t)argc + 1, sizeof *a->metric_text);
    a->files = calloc((size_t)argc + 1, sizeof *a->files);
    if (!a->metric_text || !a->files) return usage_error(NULL, "out of memory");
    size_t n_given = 0; /* --metric options seen */
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i], *v;
        int missing = 0;
        if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0) {
            a->help = 1;
        } else if (strcmp(s, "--ignore-env") == 0) {
            a->opt.ignore_env = 1;
        } else if ((v = option_value(argc, argv, &i, "--metric", &missing))) {
            if (!n_given++) a->opt.n_metrics = 0; /* the first --metric replaces the default */
            if (add_metrics(a, v) != 0) return usage_error(NULL, "out of memory");
        } else if ((v = option_value(argc, argv, &i, "--alpha", &missing))) {
            if (parse_fraction(v, 0, 1, 1, 0, &a->opt.alpha) != 0)
                return usage_error("e.g. --alpha 0.05", "--alpha '%s': expected a number between 0 and 1", v);
        } else if ((v = option_value(argc, argv, &i, "--threshold", &missing))) {
            if (parse_fraction(v, 0, 1, 0, 1, &a->opt.threshold) != 0)
                return usage_error("a fraction or a percentage: --threshold 0.05 or --threshold 5%",
                                   "--threshold '%s': expected a relative change from 0 to below 1", v);
        } else if ((v = option_value(argc, argv, &i, "--format", &missing))) {
            if (strcmp(v, "console") == 0) a->format = FORMAT_CONSOLE;
            else if (strcmp(v, "md") == 0 || strcmp(v, "markdown") == 0) a->format = FORMAT_MD;
            else if (strcmp(v, "json") == 0) a->format = FORMAT_JSON;
            else return usage_error("--format console, md or json", "unknown format '%s'", v);
        } else if ((v = option_value(argc, argv, &i, "--fail-on", &missing))) {
            if (strcmp(v, "worse") == 0) a->fail = FAIL_ON_WORSE;
            else if (strcmp(v, "change") == 0) a->fail = FAIL_ON_CHANGE;
            else if (strcmp(v, "never") == 0) a->fail = FAIL_ON_NEVER;
            else return usage_error("--fail-on worse, change or never", "--fail-on '%s': unknown", v);
        } else if ((v = option_value(argc, argv, &i, "--by", &missing))) {
            if (!*v) return usage_error("--by backend, or --by a setting of matrix.backend_settings", "--by: empty");
            a->by = v;
        } else if ((v = option_value(argc, argv, &i, "--html", &missing))) {
            a->html = v;
        } else if (missing) {
            return usage_error(NULL, "%s needs a value", s);
        } else if (s[0] == '-' && s[1] != '\0') {
            return usage_error(NULL, "unknown option '%s'", s);
        } else {
            a->files[a->n_files++] = s;
        }
    }
    if (n_given) a->opt.metrics = a->metrics;
    if (a->help) return 0;
    if (n_given && a->opt.n_metrics == 0) return usage_error("e.g. --metric total_ms", "--metric: no field named");
    if (a->by && a->n_files != 1)
        return usage_error("e.g. benchctl compare --by backend run.json", "--by %s compares within one run, got %zu",
                           a->by, a->n_files);
    if (!a->by && a->n_files < 2)
        return usage_error("e.g. benchctl compare base.json new.json", "needs two or more runs, got %zu", a->n_files);
    return 0;
}

static void free_compare_args(compare_args *a) {
    for (size_t i = 0; i < a->n_metric_text; i++) free(a->metric_text[i]);
    free(a->metric_text), free((void *)a->metrics), free((void *)a->files);
}

/* Writes the HTML forest plot to path atomically (output.h). */
static bc_status write_html_file(const char *path, const bc_cmp_pair *pairs, size_t n_pairs,
                                 const bc_cmp_options *opt, bc_error *err) {
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem) return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", path);
    bc_cmp_write_html(mem, pairs, n_pairs, opt);
    if (fclose(mem) != 0) {
        free(text);
        return bc_error_set(err, BC_ERR_NOMEM, "%s: out of memory", path);
    }
    bc_output *out = bc_output_open(path, err);
    bc_status st = out ? bc_output_write(out, text, len, err) : err->code;
    if (out && st == BC_OK) st = bc_output_commit(out, err);
    else if (out) bc_output_abort(out);
    free(text);
    return st;
}

/* The exit status the verdicts give under --fail-on. */
static int verdict_exit(const bc_cmp_pair *pairs, size_t n_pairs, fail_on fail) {
    for (size_t k = 0; k < n_pairs; k++)
        for (size_t i = 0; i < pairs[k].n_rows; i++) {
            bc_verdict v = pairs[k].rows[i].verdict;
            if (fail != FAIL_ON_NEVER && v == BC_VERDICT_WORSE) return EXIT_WORSE;
            if (fail == FAIL_ON_CHANGE && v == BC_VERDICT_BETTER) return EXIT_WORSE;
        }
    return EXIT_OK;
}

/* Reads every file; on failure prints the error and returns EXIT_USAGE. */
static int read_runs(const compare_args *a, bc_runfile *runs) {
    for (size_t i = 0; i < a->n_files; i++) {
        bc_error err = {0};
        if (bc_runfile_read(a->files[i], &runs[i], &err) != BC_OK) {
            fprintf(stderr, "benchctl: compare: %s\n", err.message);
            if (err.hint[0]) fprintf(stderr, "benchctl: hint: %s\n", err.hint);
            return EXIT_USAGE;
        }
        if (runs[i].warning[0]) fprintf(stderr, "benchctl: warning: %s\n", runs[i].warning);
        if (runs[i].format == BC_RUNFILE_JOURNAL && !runs[i].complete)
            fprintf(stderr, "benchctl: warning: %s: the journal has no end record (the run did not finish); "
                            "comparing the cases it holds\n", runs[i].path);
    }
    return 0;
}

/* --by AXIS (backend, or a backend setting the matrix varied): the one
 * file read once per value its cases take on the axis, each copy keeping
 * that value's cases; *runs (n_runs of them) is owned by the caller. */
static int read_runs_by_axis(const compare_args *a, bc_runfile **runs, size_t *n_runs) {
    bc_runfile first;
    bc_error err = {0};
    if (read_runs(a, &first) != 0) return EXIT_USAGE;
    const char **names = NULL;
    size_t n = bc_runfile_axis_values(&first, a->by, &names);
    int rc = 0;
    if (n < 2 && strcmp(a->by, "backend") == 0) {
        rc = usage_error("a run with a backends list in its bench.cfg names each case's backend",
                         "--by backend: the cases of %s name %s", a->files[0], n ? "one backend only" : "no backend");
    } else if (n < 2) {
        rc = usage_error("--by backend, or --by a setting the run's matrix.backend_settings varies",
                         "--by %s: the cases of %s %s", a->by, a->files[0],
                         n ? "take one value of it only" : "do not vary it (no such backend setting axis)");
    } else if (!(*runs = calloc(n, sizeof **runs))) {
        rc = usage_error(NULL, "out of memory");
    }
    for (size_t b = 0; !rc && b < n; b++) {
        *n_runs = b + 1;
        if (bc_runfile_read(a->files[0], &(*runs)[b], &err) != BC_OK ||
            bc_runfile_keep_axis(&(*runs)[b], a->by, names[b], &err) != BC_OK) {
            fprintf(stderr, "benchctl: compare: %s\n", err.message);
            rc = EXIT_USAGE;
        }
    }
    free(names);
    bc_runfile_free(&first);
    return rc;
}

/* Prints why pairs are not comparable (stderr); returns how many are not. */
static size_t report_refusals(const bc_cmp_pair *pairs, size_t n_pairs, int ignore_env) {
    size_t refused = 0;
    for (size_t k = 0; k < n_pairs; k++) {
        const bc_cmp_pair *pair = &pairs[k];
        if (pair->n_env_refusing && !ignore_env) {
            refused++;
            for (size_t i = 0; i < pair->n_env; i++)
                if (pair->env[i].refuses)
                    fprintf(stderr, "benchctl: compare: %s and %s differ in %s: \"%s\" vs \"%s\"\n", pair->a->path,
                            pair->b->path, pair->env[i].field, pair->env[i].a, pair->env[i].b);
        } else if (pair->n_matched == 0) {
            refused++;
            fprintf(stderr, "benchctl: compare: no case of %s matches one of %s\n", pair->b->path, pair->a->path);
        }
    }
    return refused;
}

int bc_cmd_compare(int argc, char **argv) {
    compare_args a = {0};
    int rc = parse_compare_args(argc, argv, &a);
    if (rc || a.help) {
        if (!rc) fputs(bc_compare_usage, stdout);
        free_compare_args(&a);
        return rc;
    }
    bc_error err = {0};
    if (a.html && bc_output_check(a.html, &err) != BC_OK) {
        fprintf(stderr, "benchctl: compare: --html %s\n", err.message);
        free_compare_args(&a);
        return EXIT_USAGE;
    }
    size_t n_runs = a.n_files;
    bc_runfile *runs = NULL;
    if (a.by) rc = read_runs_by_axis(&a, &runs, &n_runs);
    else if (!(runs = calloc(n_runs, sizeof *runs))) rc = usage_error(NULL, "out of memory");
    else rc = read_runs(&a, runs);
    bc_cmp_pair *pairs = calloc(n_runs, sizeof *pairs);
    size_t n_pairs = 0;
    if (!rc && !pairs) rc = usage_error(NULL, "out of memory");
    for (size_t k = 1; !rc && k < n_runs; k++) {
        if (bc_cmp_pair_build(&runs[0], &runs[k], &a.opt, &pairs[k - 1], &err) != BC_OK) {
            fprintf(stderr, "benchctl: compare: %s\n", err.message);
            if (err.hint[0]) fprintf(stderr, "benchctl: hint: %s\n", err.hint);
            rc = EXIT_USAGE;
        } else {
            n_pairs++;
        }
    }
    int env_refused = 0;
    if (!rc) {
        for (size_t k = 0; k < n_pairs; k++) env_refused |= pairs[k].n_env_refusing && !a.opt.ignore_env;
        size_t refused = report_refusals(pairs, n_pairs, a.opt.ignore_env);
        if (env_refused) {
            fprintf(stderr, "benchctl: hint: --ignore-env compares them anyway and lists the differences\n");
            rc = EXIT_NOT_COMPARABLE;
        } else {
            int verdicts = verdict_exit(pairs, n_pairs, a.fail);
            int status = refused ? EXIT_NOT_COMPARABLE : verdicts;
            if (a.format == FORMAT_CONSOLE) bc_cmp_write_console(stdout, pairs, n_pairs, &a.opt);
            else if (a.format == FORMAT_MD) bc_cmp_write_markdown(stdout, pairs, n_pairs, &a.opt);
            else if (bc_cmp_write_json(stdout, pairs, n_pairs, &a.opt, status, &err) != BC_OK) {
                fprintf(stderr, "benchctl: compare: %s\n", err.message);
                status = EXIT_USAGE;
            }
            fflush(stdout);
            if (a.html && write_html_file(a.html, pairs, n_pairs, &a.opt, &err) != BC_OK) {
                fprintf(stderr, "benchctl: compare: --html %s\n", err.message);
                status = EXIT_USAGE;
            }
            rc = status;
        }
    }
    for (size_t k = 0; k < n_pairs; k++) bc_cmp_pair_free(&pairs[k]);
    for (size_t i = 0; runs && i < n_runs; i++) bc_runfile_free(&runs[i]);
    free(pairs), free(runs);
    free_compare_args(&a);
    return rc;
}
