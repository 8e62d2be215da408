/* html_reporter.c: the "html" reporter plugin. At close it writes the run
 * as ONE self-contained page through the host's atomic output ("-" is
 * stdout, ".gz" gzip): inline CSS, inline SVG charts, no script, nothing
 * fetched from anywhere, light and dark colours by prefers-color-scheme.
 * The page is well-formed XML as well as HTML (checked with xmllint in
 * tests/reporters/test_html.c). It shows the run's header (model, machine,
 * versions, config), warnings (failed, skipped and unstable cases), the
 * case table with heat-scaled cells, and five charts (html_charts.c):
 * throughput and memory against effective batch, the stage breakdown, the
 * per-iteration distributions and their progression. docs/reporters.md
 * describes each part.
 *
 * It reads only the bc_run_report it is given, every number by name
 * (bc_run_field_index, bc_run_stat_index), so `benchctl report RUN.json`
 * renders a saved run through the same hooks.
 *
 * Settings:
 *   path         output file, default "benchctl.html" ("-" = stdout, "*.gz" = gzip)
 *   title        the page title; "" (default): "benchctl: <model>"
 *   unstable_cv  a case whose total_ms has a coefficient of variation above
 *                this is flagged unstable, default 0.05
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "benchctl/plugin.h"
#include "html_page.h"
#include "htmlw.h"
#include "report.h"
#include "report_file.h"

#define HTML_VERSION "0.1.0"

enum { SET_PATH = 0, SET_TITLE, SET_UNSTABLE_CV, SET_COUNT };

static const bc_setting_desc html_settings[SET_COUNT] = {
    [SET_PATH] = {.name = "path", .type = BC_SETTING_STRING, .default_string = "benchctl.html",
                  .help = "output file; \"-\" is stdout, a .gz suffix means gzip"},
    [SET_TITLE] = {.name = "title", .type = BC_SETTING_STRING, .default_string = "",
                   .help = "the page's title; empty: \"benchctl: <model>\""},
    [SET_UNSTABLE_CV] = {.name = "unstable_cv", .type = BC_SETTING_FLOAT, .default_float = 0.05, .has_range = 1,
                         .min = 0.0, .max = 10.0,
                         .help = "flag a case unstable when its total_ms varies more than this (cv, 0.05 = 5%)"},
};

typedef struct html_reporter {
    const bc_host *host; /* not owned */
    const char *path;    /* host-owned settings, live until destroy */
    const char *title;
    double unstable_cv;
} html_reporter;

/* ------------------------------------------------------------ the style */

/* The whole style sheet. Colours are custom properties, redefined for a
 * dark scheme; the SVG charts use classes only, so they follow. No '<' or
 * '&' anywhere (the page is XML too). */
static const char *const css[] = {
    ":root{color-scheme:light dark;--bg:#ffffff;--fg:#1d2229;--muted:#5b6470;--line:#c9d1da;--grid:#e9edf1;",
    "--band:#f5f7f9;--panel:#f6f8fa;--bad:#c62828;--warn:#8a5a00;--okc:#1b7f3b;",
    "--c0:#2563c9;--c1:#e07b12;--c2:#18976a;--c3:#c7407e;--c4:#7a56d1;--c5:#1592ab;--c6:#a98300;",
    "--c7:#d1453b;--c8:#5e7a1c;--c9:#6b7280;",
    "--g0:#8e6bd8;--g1:#2f7fd8;--g2:#1f9e70;--g3:#e2a31f;--g4:#d9557a;",
    "--heat-time:224,123,18;--heat-rate:24,151,106;--heat-mem:37,99,201;--heat-cv:122,86,209}",
    "@media (prefers-color-scheme:dark){:root{--bg:#111418;--fg:#e3e8ee;--muted:#9aa5b1;--line:#3a424c;",
    "--grid:#252b32;--band:#181c21;--panel:#181c21;--bad:#ff6b6b;--warn:#e3b341;--okc:#56d364;",
    "--c0:#5b9cff;--c1:#ff9f43;--c2:#3ccf91;--c3:#f06aa8;--c4:#a98bff;--c5:#3fc5de;--c6:#e0c040;",
    "--c7:#ff7a70;--c8:#a3c75a;--c9:#a0a8b4;",
    "--g0:#a98bff;--g1:#5b9cff;--g2:#3ccf91;--g3:#f2c14e;--g4:#f07fa0;",
    "--heat-time:255,159,67;--heat-rate:60,207,145;--heat-mem:91,156,255;--heat-cv:169,139,255}}",
    "*{box-sizing:border-box}",
    "body{margin:0;background:var(--bg);color:var(--fg);",
    "font:14px/1.45 system-ui,-apple-system,\"Segoe UI\",Roboto,\"DejaVu Sans\",\"Helvetica Neue\",Arial,sans-serif}",
    "main{max-width:1100px;margin:0 auto;padding:20px 24px 40px}",
    "h1{font-size:22px;margin:4px 0 2px}h2{font-size:17px;margin:30px 0 8px;",
    "padding-bottom:4px;border-bottom:1px solid var(--line)}",
    ".sub{color:var(--muted);margin:0 0 12px}",
    "nav{margin:6px 0 4px;font-size:13px}nav a{margin-right:14px}",
    "a{color:var(--c0)}",
    "code,.mono{font-family:ui-monospace,\"DejaVu Sans Mono\",Menlo,Consolas,monospace;font-size:12.5px}",
    "dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:3px 16px;margin:8px 0;",
    "padding:10px 14px;background:var(--panel);border:1px solid var(--line);border-radius:6px}",
    "dl.facts dt{color:var(--muted)}dl.facts dd{margin:0;overflow-wrap:anywhere}",
    ".changed{font-weight:600}",
    "details.defaults{display:inline}details.defaults summary{display:inline;cursor:pointer;color:var(--muted)}",
    "details.defaults[open] summary{display:block}",
    "ul.warnings{margin:6px 0;padding-left:20px}ul.warnings li{margin:3px 0}",
    ".bad{color:var(--bad)}.warn{color:var(--warn)}.good{color:var(--okc)}",
    ".tablewrap{overflow-x:auto}",
    "table.matrix{border-collapse:collapse;font-size:12.5px;font-variant-numeric:tabular-nums;width:100%}",
    "table.matrix th,table.matrix td{padding:3px 6px;border-bottom:1px solid var(--grid);white-space:nowrap}",
    "table.matrix th{text-align:left;color:var(--muted);font-weight:600;border-bottom:1px solid var(--line)}",
    "table.matrix td.num,table.matrix th.num{text-align:right}",
    "table.matrix tr.notok td{color:var(--muted)}table.matrix tr.notok td.st{color:var(--bad)}",
    ".na{color:var(--muted)}",
    ".chart{margin:6px 0}.chart svg{display:block;max-width:100%;height:auto}",
    "svg text{fill:var(--fg);font-size:11px;font-family:inherit}",
    "svg text.lab{font-family:ui-monospace,\"DejaVu Sans Mono\",Menlo,Consolas,monospace;font-size:10.5px}",
    "svg text.t{font-weight:600}svg text.m{fill:var(--muted)}svg text.bad{fill:var(--bad)}",
    "svg .ax{stroke:var(--muted);stroke-width:1;fill:none}svg .gr{stroke:var(--grid);stroke-width:1}",
    "svg .zero{stroke:var(--muted);stroke-width:1;stroke-dasharray:3 3}",
    "svg .band{fill:var(--band)}svg .frame{fill:none;stroke:var(--line)}",
    "svg .ln{fill:none;stroke-width:2}svg .dh{stroke-dasharray:5 3}svg .d1{stroke-dasharray:8 3 2 3}",
    "svg .d2{stroke-dasharray:2 3}",
    "svg .hollow{fill:var(--bg);stroke-width:1.6}",
    "svg .tot{stroke:var(--fg);stroke-width:2}",
    "svg .box{fill:var(--band);stroke:var(--fg);stroke-width:1}svg .med{stroke:var(--fg);stroke-width:2}",
    "svg .wh{stroke:var(--fg);stroke-width:1}svg .pt{fill:var(--c0);fill-opacity:.65}",
    "svg .ptl{fill:var(--c0)}svg .mid{stroke:var(--muted);stroke-width:1;stroke-dasharray:2 2}",
    ".k0{stroke:var(--c0)}.k1{stroke:var(--c1)}.k2{stroke:var(--c2)}.k3{stroke:var(--c3)}.k4{stroke:var(--c4)}",
    ".k5{stroke:var(--c5)}.k6{stroke:var(--c6)}.k7{stroke:var(--c7)}.k8{stroke:var(--c8)}.k9{stroke:var(--c9)}",
    ".f0{fill:var(--c0)}.f1{fill:var(--c1)}.f2{fill:var(--c2)}.f3{fill:var(--c3)}.f4{fill:var(--c4)}",
    ".f5{fill:var(--c5)}.f6{fill:var(--c6)}.f7{fill:var(--c7)}.f8{fill:var(--c8)}.f9{fill:var(--c9)}",
    ".g0{fill:var(--g0)}.g1{fill:var(--g1)}.g2{fill:var(--g2)}.g3{fill:var(--g3)}.g4{fill:var(--g4)}",
    ".legend{display:flex;flex-wrap:wrap;gap:4px 16px;font-size:12.5px;margin:6px 0}",
    ".legend span{display:inline-flex;align-items:center;gap:6px}",
    ".legend svg{display:inline-block;vertical-align:middle}",
    "p.note{font-size:12.5px;color:var(--muted);margin:4px 0}",
    "p.how{font-size:13px;margin:6px 0 0;max-width:860px}",
    "footer{margin-top:36px;font-size:12px;color:var(--muted)}",
};

/* --------------------------------------------------------------- values */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Statistic name of field for cr: the host's, or, when the host has no
 * such statistic, computed from the per-iteration values with the same
 * definition (docs/reporters.md) for "mean", "p50" and "cv". */
static double case_stat(const bc_run_report *run, const bc_case_report *cr, int field, const char *name) {
    int s = bc_run_stat_index(run, name);
    if (s >= 0 || field < 0) return bc_case_stat(run, cr, field, s);
    if (!cr->values || cr->n_iterations == 0) return NAN;
    double *v = malloc(cr->n_iterations * sizeof *v);
    if (!v) return NAN;
    uint32_t n = 0;
    double sum = 0;
    for (uint32_t i = 0; i < cr->n_iterations; i++) {
        double x = cr->values[(size_t)i * run->n_fields + (size_t)field];
        if (!isnan(x)) v[n++] = x, sum += x;
    }
    double out = NAN;
    if (n > 0) {
        double mean = sum / n, ss = 0;
        for (uint32_t i = 0; i < n; i++) ss += (v[i] - mean) * (v[i] - mean);
        if (strcmp(name, "mean") == 0) {
            out = mean;
        } else if (strcmp(name, "cv") == 0) {
            out = mean != 0 ? sqrt(ss / n) / fabs(mean) : NAN;
        } else if (strcmp(name, "p50") == 0) {
            qsort(v, n, sizeof *v, cmp_double);
            out = (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
        }
    }
    free(v);
    return out;
}

static double field_mean(const bc_run_report *run, const bc_case_report *cr, const char *field) {
    return case_stat(run, cr, bc_run_field_index(run, field), "mean");
}

/* ---------------------------------------------------------- the model */

/* Appends at most max characters of s to buf (size bytes), "~" when cut. */
static void append_cut(char *buf, size_t size, const char *s, size_t max) {
    size_t len = strlen(buf), n = strlen(s);
    if (n > max) n = max;
    if (len + n + 2 >= size) return;
    memcpy(buf + len, s, n);
    len += n;
    if (strlen(s) > max) buf[len++] = '~';
    buf[len] = '\0';
}

/* Two names equal, NULL read as "". */
static int same_str(const char *a, const char *b) { return strcmp(a ? a : "", b ? b : "") == 0; }

/* Which axes take more than one value in the run. */
typedef struct varying {
    int samples, prompt, response, precision, cache, backend, settings;
} varying;

static varying find_varying(const bc_run_report *run, uint32_t n) {
    varying v = {0};
    if (n == 0) return v;
    const bc_case *a = bc_run_case(run, 0)->c;
    for (uint32_t i = 1; i < n; i++) {
        const bc_case *c = bc_run_case(run, i)->c;
        v.samples |= c->samples_per_prompt != a->samples_per_prompt;
        v.prompt |= c->prompt_length != a->prompt_length;
        v.response |= c->response_length != a->response_length;
        v.precision |= !same_str(c->precision, a->precision);
        v.cache |= !same_str(c->cache_policy, a->cache_policy);
        v.backend |= !same_str(bc_case_backend(c), bc_case_backend(a));
        for (uint32_t j = 0; j < bc_case_n_settings(c) && j < bc_case_n_settings(a); j++)
            v.settings |= !same_str(c->setting_values[j], a->setting_values[j]);
    }
    return v;
}

/* "#3 native B4×2 128→64 bf16 release": the index and batch shape always,
 * the backend, lengths, precision and cache policy when they vary in the
 * run. */
static void make_label(char *buf, size_t size, const bc_case *c, const varying *v) {
    snprintf(buf, size, "#%u", c->index);
    if (v->backend) {
        append_cut(buf, size, " ", 1);
        append_cut(buf, size, bc_case_backend(c) ? bc_case_backend(c) : "?", 16);
    }
    char shape[48];
    snprintf(shape, sizeof shape, " B%u\xC3\x97%u", c->batch_size, c->samples_per_prompt);
    append_cut(buf, size, shape, sizeof shape);
    if (v->prompt || v->response) {
        char part[48];
        if (c->prompt_length > 0)
            snprintf(part, sizeof part, " %u\xE2\x86\x92%u", c->prompt_length, c->response_length);
        else
            snprintf(part, sizeof part, " file\xE2\x86\x92%u", c->response_length);
        append_cut(buf, size, part, sizeof part);
    }
    if (v->precision) {
        append_cut(buf, size, " ", 1);
        append_cut(buf, size, c->precision ? c->precision : "?", 14);
    }
    if (v->cache) {
        append_cut(buf, size, " ", 1);
        append_cut(buf, size, c->cache_policy ? c->cache_policy : "?", 14);
    }
    for (uint32_t j = 0; v->settings && j < bc_case_n_settings(c); j++) {
        append_cut(buf, size, " ", 1);
        append_cut(buf, size, c->setting_values[j], 14);
    }
}

/* Characters (not bytes) of a UTF-8 string. */
static int utf8_chars(const char *s) {
    int n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

static int facet_cmp(const void *a, const void *b) {
    const hp_facet *x = a, *y = b;
    if (x->prompt != y->prompt) return x->prompt < y->prompt ? -1 : 1;
    return (x->response > y->response) - (x->response < y->response);
}

static int find_facet(const hp_page *pg, uint32_t prompt, uint32_t response) {
    for (uint32_t i = 0; i < pg->n_facets; i++)
        if (pg->facets[i].prompt == prompt && pg->facets[i].response == response) return (int)i;
    return -1;
}

/* 1 when a and b ran on the same backend instance: the same backend and
 * backend setting values. */
static int same_instance(const bc_case *a, const bc_case *b) {
    if (!same_str(bc_case_backend(a), bc_case_backend(b)) || bc_case_n_settings(a) != bc_case_n_settings(b)) return 0;
    for (uint32_t j = 0; j < bc_case_n_settings(a); j++)
        if (!same_str(a->setting_values[j], b->setting_values[j])) return 0;
    return 1;
}

/* The series label: the varying ones of samples, precision, cache policy
 * (all three when none varies), then the backend and setting values that
 * vary. */
static void series_label(hp_series *s, const varying *v) {
    int all = !v->samples && !v->precision && !v->cache;
    s->label[0] = '\0';
    if (all || v->samples) {
        char part[40];
        snprintf(part, sizeof part, "%u sample%s/prompt", s->samples, s->samples == 1 ? "" : "s");
        append_cut(s->label, sizeof s->label, part, sizeof part);
    }
    if (all || v->precision) {
        if (s->label[0]) append_cut(s->label, sizeof s->label, ", ", 2);
        append_cut(s->label, sizeof s->label, s->precision ? s->precision : "?", 24);
    }
    if (all || v->cache) {
        if (s->label[0]) append_cut(s->label, sizeof s->label, ", ", 2);
        append_cut(s->label, sizeof s->label, s->cache ? s->cache : "?", 24);
    }
    if (v->backend) {
        append_cut(s->label, sizeof s->label, ", ", 2);
        append_cut(s->label, sizeof s->label, bc_case_backend(s->c) ? bc_case_backend(s->c) : "?", 16);
    }
    for (uint32_t j = 0; v->settings && j < bc_case_n_settings(s->c); j++) {
        append_cut(s->label, sizeof s->label, ", ", 2);
        append_cut(s->label, sizeof s->label, s->c->setting_values[j], 14);
    }
}

/* Reads every case once: labels, numbers, facets and series. */
static bc_status build_model(hp_page *pg, bc_error *err) {
    const bc_run_report *run = pg->run;
    uint32_t n = pg->n;
    size_t m = n ? n : 1;
    pg->cases = calloc(m, sizeof *pg->cases);
    pg->facets = calloc(m, sizeof *pg->facets);
    pg->series = calloc(m, sizeof *pg->series);
    if (!pg->cases || !pg->facets || !pg->series) return bc_error_set(err, BC_ERR_NOMEM, "html: out of memory");
    varying v = find_varying(run, n);
    pg->several_backends = v.backend;
    pg->f_total = bc_run_field_index(run, "total_ms");
    static const char *const stage_fields[HP_N_STAGES] = {
        [HP_STAGE_EXPANSION] = "prompt_expansion_ms", [HP_STAGE_PREFILL] = "prefill_forward_ms",
        [HP_STAGE_DECODE] = "decode_forward_ms",      [HP_STAGE_OVERHEAD] = "generation_overhead_ms",
        [HP_STAGE_POST] = "post_processing_ms"};

    for (uint32_t i = 0; i < n; i++) {
        hp_case *k = &pg->cases[i];
        const bc_case_report *cr = bc_run_case(run, i);
        const bc_case *c = cr->c;
        k->cr = cr;
        k->ok = cr->status == BC_CASE_OK;
        k->eff_batch = bc_case_effective_batch(c);
        make_label(k->label, sizeof k->label, c, &v);
        int chars = utf8_chars(k->label);
        if (chars > pg->label_chars) pg->label_chars = chars;
        k->total_mean = case_stat(run, cr, pg->f_total, "mean");
        k->total_p50 = case_stat(run, cr, pg->f_total, "p50");
        k->total_cv = case_stat(run, cr, pg->f_total, "cv");
        k->tps_mean = field_mean(run, cr, "tokens_per_second");
        for (int s = 0; s < HP_N_STAGES; s++) k->stage[s] = field_mean(run, cr, stage_fields[s]);
        k->peak_mib = cr->peak_memory_mib;
        k->held_mib = bc_bytes_to_mib(cr->held_between_rollouts_bytes);

        if (find_facet(pg, c->prompt_length, c->response_length) < 0)
            pg->facets[pg->n_facets++] = (hp_facet){c->prompt_length, c->response_length};
        k->series = -1;
        for (uint32_t s = 0; s < pg->n_series && k->series < 0; s++) {
            const hp_series *se = &pg->series[s];
            if (se->samples == c->samples_per_prompt && same_str(se->precision, c->precision) &&
                same_str(se->cache, c->cache_policy) && same_instance(se->c, c))
                k->series = (int)s;
        }
        if (k->series < 0) {
            hp_series *se = &pg->series[pg->n_series];
            se->samples = c->samples_per_prompt;
            se->precision = c->precision;
            se->cache = c->cache_policy;
            se->c = c;
            series_label(se, &v);
            k->series = (int)pg->n_series++;
        }
    }
    qsort(pg->facets, pg->n_facets, sizeof *pg->facets, facet_cmp);
    for (uint32_t i = 0; i < n; i++)
        pg->cases[i].facet = find_facet(pg, pg->cases[i].cr->c->prompt_length, pg->cases[i].cr->c->response_length);
    return BC_OK;
}

static void free_model(hp_page *pg) {
    free(pg->cases);
    free(pg->facets);
    free(pg->series);
}

uint32_t hp_put_case_list(const hp_page *pg, const unsigned char *pick) {
    uint32_t count = 0;
    for (uint32_t i = 0; i < pg->n; i++) {
        if (!pick[i]) continue;
        uint32_t end = i; /* a run of consecutive indexes: i..end */
        while (end + 1 < pg->n && pick[end + 1] &&
               pg->cases[end + 1].cr->c->index == pg->cases[end].cr->c->index + 1)
            end++;
        bc_text_printf(pg->t, "%s#%u", count ? ", " : "", pg->cases[i].cr->c->index);
        if (end > i) bc_text_printf(pg->t, "%s#%u", end > i + 1 ? "\xE2\x80\x93" : ", ", pg->cases[end].cr->c->index);
        count += end - i + 1;
        i = end;
    }
    return count;
}

/* ---------------------------------------------------------- the header */

static void fact_begin(bc_text *t, const char *name) {
    bc_text_puts(t, "<dt>");
    bc_html_text(t, name);
    bc_text_puts(t, "</dt><dd>");
}

static void fact_end(bc_text *t) { bc_text_puts(t, "</dd>\n"); }

/* s, or "?" when unknown. */
static const char *known(const char *s) { return s && *s ? s : "?"; }

/* "12 layers", after ", " unless it is the first count written (*any). */
static void put_count(bc_text *t, int *any, const char *what, int64_t v) {
    if (v < 0) return;
    bc_text_printf(t, "%s%lld %s", *any ? ", " : "", (long long)v, what);
    *any = 1;
}

static void put_model(bc_text *t, const bc_run_report *run) {
    fact_begin(t, "Model");
    bc_html_text(t, known(BC_RUN_BACKEND(run, model, NULL)));
    const char *family = BC_RUN_BACKEND(run, model_family, NULL);
    int64_t params = BC_RUN_BACKEND(run, n_parameters, (int64_t)-1);
    if (family || params >= 0) {
        bc_text_puts(t, " <span class=\"sub\">(");
        if (family) bc_html_text(t, family);
        if (params >= 0) {
            const char *sep = family ? ", " : "";
            if (params >= 1000000000)
                bc_text_printf(t, "%s%.2f B parameters", sep, (double)params / 1e9);
            else if (params >= 1000000)
                bc_text_printf(t, "%s%.1f M parameters", sep, (double)params / 1e6);
            else
                bc_text_printf(t, "%s%lld parameters", sep, (long long)params);
        }
        bc_text_puts(t, ")</span>");
    }
    fact_end(t);

    fact_begin(t, "Shape");
    int any = 0;
    put_count(t, &any, "layers", BC_RUN_BACKEND(run, n_layers, (int64_t)-1));
    put_count(t, &any, "hidden", BC_RUN_BACKEND(run, hidden_size, (int64_t)-1));
    put_count(t, &any, "heads", BC_RUN_BACKEND(run, n_heads, (int64_t)-1));
    put_count(t, &any, "FFN", BC_RUN_BACKEND(run, ffn_size, (int64_t)-1));
    put_count(t, &any, "vocabulary", BC_RUN_BACKEND(run, vocab_size, (int64_t)-1));
    put_count(t, &any, "positions", BC_RUN_BACKEND(run, max_positions, (int64_t)-1));
    if (!any) bc_text_puts(t, "?");
    fact_end(t);
}

static void put_machine(bc_text *t, const bc_run_report *run) {
    fact_begin(t, "Machine");
    bc_html_text(t, known(run->hostname));
    bc_text_puts(t, " \xC2\xB7 CPU ");
    bc_html_text(t, known(run->cpu_model));
    const char *kernels = BC_RUN_BACKEND(run, cpu_kernels, NULL);
    int64_t threads = BC_RUN_BACKEND(run, cpu_threads, (int64_t)-1);
    if (kernels) {
        bc_text_puts(t, " \xC2\xB7 kernels ");
        bc_html_text(t, kernels);
    }
    if (threads >= 0) bc_text_printf(t, " \xC2\xB7 %lld thread%s", (long long)threads, threads == 1 ? "" : "s");
    fact_end(t);

    fact_begin(t, "Device");
    bc_html_text(t, known(BC_RUN_BACKEND(run, device, NULL)));
    const char *gpu = BC_RUN_BACKEND(run, device_name, NULL), *driver = BC_RUN_BACKEND(run, driver, NULL);
    bc_text_puts(t, " \xC2\xB7 GPU ");
    bc_html_text(t, gpu ? gpu : "none");
    if (gpu && driver) {
        bc_text_puts(t, " (driver ");
        bc_html_text(t, driver);
        bc_text_puts(t, ")");
    }
    fact_end(t);
}

/* Backend setting i as "name=value" in a mono span (bold when it differs
 * from its default), after sep; nothing unless its being changed is want.
 * Returns 1 when it was written. */
static int put_backend_setting(bc_text *t, const bc_run_report *run, uint32_t i, int want, const char *sep) {
    const bc_setting_desc *d = bc_run_backend_setting(run, i);
    const bc_setting_value *v = bc_setting_at(run->backend_values, i);
    char value[64];
    int changed = 0;
    const char *s = NULL;
    switch (d->type) {
    case BC_SETTING_INT:
        snprintf(value, sizeof value, "%lld", (long long)v->i);
        changed = v->i != d->default_int;
        break;
    case BC_SETTING_BOOL:
        snprintf(value, sizeof value, "%s", v->i ? "true" : "false");
        changed = (v->i != 0) != (d->default_int != 0);
        break;
    case BC_SETTING_FLOAT:
        bc_html_format_number(value, sizeof value, v->f);
        changed = v->f != d->default_float;
        break;
    default:
        s = v->s ? v->s : "";
        changed = strcmp(s, d->default_string ? d->default_string : "") != 0;
        break;
    }
    if (changed != want) return 0;
    bc_text_puts(t, sep);
    bc_text_puts(t, changed ? "<span class=\"mono changed\">" : "<span class=\"mono\">");
    bc_html_text(t, d->name);
    bc_text_puts(t, "=");
    if (s)
        bc_html_textf(t, "\"%s\"", s);
    else
        bc_html_text(t, value);
    bc_text_puts(t, "</span>");
    return 1;
}

/* The backend and the settings that differ from their defaults (in bold);
 * the rest behind a details element, so a backend with dozens of settings
 * keeps the header short. */
static void put_backend(bc_text *t, const bc_run_report *run) {
    fact_begin(t, "Backend");
    bc_html_text(t, known(run->backend_name));
    if (run->backend_settings && run->backend_values && run->backend_setting_size) {
        uint32_t n = run->n_backend_settings < run->backend_values->count ? run->n_backend_settings
                                                                          : run->backend_values->count;
        uint32_t n_changed = 0;
        for (uint32_t i = 0; i < n; i++)
            n_changed += (uint32_t)put_backend_setting(t, run, i, 1, n_changed ? " " : " \xC2\xB7 ");
        if (n > n_changed) {
            uint32_t rest = n - n_changed;
            bc_text_printf(t, " <details class=\"defaults\"><summary>%u %ssetting%s at %s default%s</summary>",
                           rest, n_changed ? "other " : "", rest == 1 ? "" : "s", rest == 1 ? "its" : "their",
                           rest == 1 ? "" : "s");
            uint32_t shown = 0;
            for (uint32_t i = 0; i < n; i++) shown += (uint32_t)put_backend_setting(t, run, i, 0, shown ? " " : "");
            bc_text_puts(t, "</details>");
        }
    }
    fact_end(t);
}

static void put_versions(bc_text *t, const bc_run_report *run) {
    fact_begin(t, "Versions");
    bc_text_puts(t, "benchctl ");
    bc_html_text(t, known(run->benchctl_version));
    bc_text_puts(t, " (git <code>");
    bc_html_text(t, known(run->git_commit));
    bc_text_puts(t, "</code>)");
    for (uint32_t i = 0; run->plugins && run->plugin_ref_size && i < run->n_plugins; i++) {
        const bc_plugin_ref *p = bc_run_plugin(run, i);
        bc_text_puts(t, i ? ", " : " \xC2\xB7 plugins: ");
        bc_html_text(t, known(p->kind));
        bc_text_puts(t, " ");
        bc_html_text(t, known(p->name));
        bc_text_puts(t, " ");
        bc_html_text(t, known(p->version));
    }
    fact_end(t);
}

static void put_list(bc_text *t, const char *const *names, uint32_t n) {
    for (uint32_t i = 0; names && i < n; i++) {
        if (i) bc_text_puts(t, ", ");
        bc_html_text(t, known(names[i]));
    }
    if (!names || n == 0) bc_text_puts(t, "?");
}

static void put_run(bc_text *t, const bc_run_report *run) {
    bc_case_counts cc = bc_count_cases(run);
    fact_begin(t, "Matrix");
    bc_text_printf(t, "%u case%s (%u ok, %u failed, %u skipped) \xC2\xB7 %u warmup + %u measured iterations per case",
                   run->n_cases, run->n_cases == 1 ? "" : "s", cc.ok, cc.failed, cc.skipped, run->warmup,
                   run->iterations);
    bc_text_puts(t, " \xC2\xB7 precisions ");
    put_list(t, run->precisions, run->n_precisions);
    bc_text_puts(t, " \xC2\xB7 cache policies ");
    put_list(t, run->cache_policies, run->n_cache_policies);
    fact_end(t);

    fact_begin(t, "Sampling");
    if (run->sampling) {
        char temp[32], top_p[32];
        bc_html_format_number(temp, sizeof temp, BC_RUN_SAMPLING(run, temperature, NAN));
        bc_html_format_number(top_p, sizeof top_p, BC_RUN_SAMPLING(run, top_p, NAN));
        bc_text_printf(t, "temperature %s%s, top_p %s, top_k %lld, seed %llu", temp[0] ? temp : "?",
                       BC_RUN_SAMPLING(run, temperature, 1.0) == 0.0 ? " (greedy)" : "", top_p[0] ? top_p : "?",
                       (long long)BC_RUN_SAMPLING(run, top_k, (int64_t)-1),
                       (unsigned long long)BC_RUN_SAMPLING(run, seed, (uint64_t)0));
    } else {
        bc_text_puts(t, "?");
    }
    fact_end(t);

    fact_begin(t, "Config");
    bc_text_puts(t, "<code>");
    bc_html_text(t, known(run->config_path));
    bc_text_puts(t, "</code> \xC2\xB7 sha256 <code>");
    bc_html_text(t, known(run->config_sha256));
    bc_text_puts(t, "</code>");
    fact_end(t);

    fact_begin(t, "Started");
    bc_html_text(t, known(run->start_time_utc));
    fact_end(t);
}

static void put_header(hp_page *pg, const char *title) {
    bc_text *t = pg->t;
    const bc_run_report *run = pg->run;
    bc_text_puts(t, "<header>\n<h1>");
    bc_html_text(t, title);
    bc_text_puts(t, "</h1>\n<p class=\"sub\">");
    bc_html_text(t, known(BC_RUN_BACKEND(run, model, NULL)));
    bc_text_puts(t, " on ");
    bc_html_text(t, known(BC_RUN_BACKEND(run, device, NULL)));
    bc_text_puts(t, ", started ");
    bc_html_text(t, known(run->start_time_utc));
    bc_text_puts(t, "</p>\n<nav><a href=\"#warnings\">Warnings</a><a href=\"#cases\">Cases</a>"
                    "<a href=\"#throughput\">Throughput</a><a href=\"#stages\">Stages</a>"
                    "<a href=\"#distributions\">Distributions</a><a href=\"#progression\">Progression</a>"
                    "<a href=\"#memory\">Memory</a>");
    if (hp_has_ranks(pg)) bc_text_puts(t, "<a href=\"#ranks\">Ranks</a>");
    bc_text_puts(t, "</nav>\n<dl class=\"facts\">\n");
    put_model(t, run);
    put_backend(t, run);
    put_machine(t, run);
    put_versions(t, run);
    put_run(t, run);
    bc_text_puts(t, "</dl>\n</header>\n");
}

/* -------------------------------------------------------- the warnings */

/* A threshold as a percentage, without trailing zeros: 0.05 -> "5". */
static void format_percent(char *buf, size_t size, double fraction) {
    snprintf(buf, size, "%.3g", fraction * 100.0);
    for (char *c = buf; *c; c++)
        if (*c == ',') *c = '.';
}

static int same_outcome(const bc_case_report *a, const bc_case_report *b) {
    return a->status == b->status && a->error_code == b->error_code && same_str(a->message, b->message);
}

/* One item per distinct (status, error, message) of the cases that did not
 * finish ok, then one for the unstable cases. */
static void put_warnings(hp_page *pg) {
    bc_text *t = pg->t;
    unsigned char *pick = calloc(pg->n ? pg->n : 1, 1);
    if (!pick) {
        t->failed = 1;
        return;
    }
    bc_text_puts(t, "<section id=\"warnings\">\n<h2>Warnings</h2>\n<ul class=\"warnings\">\n");
    int any = 0;
    for (uint32_t i = 0; i < pg->n; i++) {
        const bc_case_report *cr = pg->cases[i].cr;
        if (cr->status == BC_CASE_OK) continue;
        int seen = 0;
        for (uint32_t j = 0; j < i && !seen; j++) seen = same_outcome(pg->cases[j].cr, cr);
        if (seen) continue;
        for (uint32_t j = 0; j < pg->n; j++) pick[j] = j >= i && same_outcome(pg->cases[j].cr, cr);
        bc_text_printf(t, "<li class=\"%s\">", cr->status == BC_CASE_FAILED ? "bad" : "warn");
        uint32_t count = 0;
        for (uint32_t j = 0; j < pg->n; j++) count += pick[j];
        bc_text_puts(t, count == 1 ? "Case " : "Cases ");
        hp_put_case_list(pg, pick);
        bc_text_printf(t, " %s", bc_case_status_name(cr->status));
        if (cr->error_code != BC_OK) bc_text_printf(t, " (%s)", bc_status_name(cr->error_code));
        if (cr->message && *cr->message) {
            bc_text_puts(t, ": <span class=\"mono\">");
            bc_html_text(t, cr->message);
            bc_text_puts(t, "</span>");
        }
        bc_text_puts(t, "</li>\n");
        any = 1;
    }
    uint32_t n_unstable = 0;
    for (uint32_t i = 0; i < pg->n; i++) {
        const hp_case *k = &pg->cases[i];
        pick[i] = k->ok && isfinite(k->total_cv) && k->total_cv > pg->unstable_cv;
        n_unstable += pick[i];
    }
    if (n_unstable) {
        char thr[32];
        format_percent(thr, sizeof thr, pg->unstable_cv);
        bc_text_printf(t, "<li class=\"warn\">%s (coefficient of variation of total_ms above %s%%): ",
                       n_unstable == 1 ? "Unstable case" : "Unstable cases", thr);
        uint32_t listed = 0;
        for (uint32_t i = 0; i < pg->n; i++) {
            if (!pick[i]) continue;
            char cv[32];
            bc_html_format_number(cv, sizeof cv, pg->cases[i].total_cv * 100.0);
            bc_text_printf(t, "%s#%u (%s%%)", listed++ ? ", " : "", pg->cases[i].cr->c->index, cv);
        }
        bc_text_puts(t, ". Their numbers move from one iteration to the next more than the threshold allows: "
                        "compare them with care, or run more iterations on a quieter machine.</li>\n");
        any = 1;
    }
    if (!any) {
        char thr[32];
        format_percent(thr, sizeof thr, pg->unstable_cv);
        bc_text_printf(t, "<li class=\"good\">None: every case finished, and no case&#39;s total_ms varies by more "
                          "than %s%% (coefficient of variation).</li>\n", thr);
    }
    bc_text_puts(t, "</ul>\n</section>\n");
    free(pick);
}

/* ------------------------------------------------------- the case table */

/* Column ranges for the heat scale, over the cases that finished ok. */
typedef struct range {
    double lo, hi;
} range;

static void widen(range *r, double v) {
    if (!isfinite(v)) return;
    if (v < r->lo) r->lo = v;
    if (v > r->hi) r->hi = v;
}

/* A number cell; its background's strength scales with v within r (the
 * column's range), in the colour rgb_var names. "-" when not measured. */
static void heat_cell(bc_text *t, double v, const range *r, const char *rgb_var) {
    char num[32];
    if (!bc_html_format_number(num, sizeof num, v)) {
        bc_text_puts(t, "<td class=\"num na\" title=\"not measured\">-</td>");
        return;
    }
    double alpha = r->hi > r->lo ? 0.06 + 0.5 * (v - r->lo) / (r->hi - r->lo) : 0.2;
    bc_text_printf(t, "<td class=\"num\" style=\"background:rgba(var(%s),%.2f)\">%s</td>", rgb_var, alpha, num);
}

static void put_prompt_cell(bc_text *t, const bc_case_report *cr) {
    int64_t width = cr->prompt_width_tokens >= 0 ? cr->prompt_width_tokens : (int64_t)cr->c->prompt_length;
    int64_t lo = cr->prompt_min_tokens, hi = cr->prompt_max_tokens;
    bc_text_puts(t, "<td class=\"num\">");
    if (width <= 0)
        bc_text_puts(t, "file");
    else if (lo >= 0 && hi >= 0 && (lo != width || hi != width))
        bc_text_printf(t, "%lld (%lld\xE2\x80\x93%lld)", (long long)width, (long long)lo, (long long)hi);
    else
        bc_text_printf(t, "%lld", (long long)width);
    bc_text_puts(t, "</td>");
}

/* The fields [first, end) as a table: one row per case, the mean of each,
 * headed with its name and unit and its help as the tooltip; nothing when
 * the range is empty. */
static void put_field_table(hp_page *pg, uint32_t first, uint32_t end) {
    const bc_run_report *run = pg->run;
    bc_text *t = pg->t;
    if (first >= end || end > run->n_fields || !bc_run_field_desc(run, first)) return;
    bc_text_puts(t, "<div class=\"tablewrap\"><table class=\"matrix declared\">\n<thead><tr><th class=\"num\">#</th>");
    for (uint32_t f = first; f < end; f++) {
        const bc_metric_desc *d = bc_run_field_desc(run, f);
        bc_text_puts(t, "<th class=\"num\" title=\"");
        bc_html_text(t, d->help ? d->help : "");
        bc_text_puts(t, "\">");
        bc_html_text(t, run->field_names[f]);
        bc_text_puts(t, " (");
        bc_html_text(t, d->unit ? d->unit : "");
        bc_text_puts(t, ")</th>");
    }
    bc_text_puts(t, "</tr></thead>\n<tbody>\n");
    for (uint32_t i = 0; i < pg->n; i++) {
        const bc_case_report *cr = pg->cases[i].cr;
        bc_text_printf(t, "<tr><td class=\"num\">%u</td>", cr->c->index);
        for (uint32_t f = first; f < end; f++) {
            char num[32];
            double x = case_stat(run, cr, (int)f, "mean");
            if (bc_html_format_number(num, sizeof num, x)) bc_text_printf(t, "<td class=\"num\">%s</td>", num);
            else bc_text_puts(t, "<td class=\"num na\" title=\"not measured\">-</td>");
        }
        bc_text_puts(t, "</tr>\n");
    }
    bc_text_puts(t, "</tbody></table></div>\n");
}

/* The backends' declared metrics (a 2.4 host's fields past n_host_fields),
 * then the per-row latencies (the host's row_ttft_ms_p50 .. rows_per_second),
 * each a table by put_field_table. */
static void put_declared(hp_page *pg) {
    const bc_run_report *run = pg->run;
    put_field_table(pg, BC_RUN_FIELD(run, n_host_fields, run->n_fields), run->n_fields);
    int a = bc_run_field_index(run, "row_ttft_ms_p50"), b = bc_run_field_index(run, "rows_per_second");
    if (a >= 0 && b >= a) put_field_table(pg, (uint32_t)a, (uint32_t)b + 1);
}

static void put_table(hp_page *pg) {
    bc_text *t = pg->t;
    range total = {INFINITY, -INFINITY}, tps = total, cv = total, peak = total, held = total;
    for (uint32_t i = 0; i < pg->n; i++) {
        const hp_case *k = &pg->cases[i];
        if (!k->ok) continue;
        widen(&total, k->total_p50);
        widen(&tps, k->tps_mean);
        widen(&cv, k->total_cv * 100.0);
        widen(&peak, k->peak_mib);
        widen(&held, k->held_mib);
    }
    bc_text_puts(t, "<section id=\"cases\">\n<h2>Cases</h2>\n");
    if (pg->n == 0) {
        bc_text_puts(t, "<p class=\"note\">The run has no cases.</p>\n</section>\n");
        return;
    }
    bc_text_puts(t, "<div class=\"tablewrap\"><table class=\"matrix\">\n<thead><tr><th class=\"num\">#</th>");
    if (pg->several_backends) bc_text_puts(t, "<th>backend</th>");
    bc_text_puts(t, "<th class=\"num\">batch</th><th class=\"num\">samples</th>"
                    "<th class=\"num\" title=\"effective batch: batch \xC3\x97 samples per prompt\">rows</th>"
                    "<th class=\"num\">prompt</th><th class=\"num\">response</th><th>precision</th><th>cache</th>");
    /* the backend settings the matrix varies, one column each */
    const bc_case *c0 = pg->cases[0].cr->c;
    for (uint32_t j = 0; j < bc_case_n_settings(c0); j++) {
        bc_text_puts(t, "<th>");
        bc_html_text(t, c0->setting_names[j]);
        bc_text_puts(t, "</th>");
    }
    bc_text_puts(t, "<th>status</th><th class=\"num\">iters</th><th class=\"num\">p50 ms</th>"
                    "<th class=\"num\">cv</th><th class=\"num\">tokens/s</th><th class=\"num\">peak MiB</th>"
                    "<th class=\"num\">held MiB</th></tr></thead>\n<tbody>\n");
    for (uint32_t i = 0; i < pg->n; i++) {
        const hp_case *k = &pg->cases[i];
        const bc_case_report *cr = k->cr;
        const bc_case *c = cr->c;
        bc_text_printf(t, "<tr%s><td class=\"num\">%u</td>", k->ok ? "" : " class=\"notok\"", c->index);
        if (pg->several_backends) { /* a backends list: which one ran the case */
            bc_text_puts(t, "<td>");
            bc_html_text(t, known(bc_case_backend(c)));
            bc_text_puts(t, "</td>");
        }
        bc_text_printf(t, "<td class=\"num\">%u</td><td class=\"num\">%u</td><td class=\"num\">%llu</td>",
                       c->batch_size, c->samples_per_prompt, (unsigned long long)k->eff_batch);
        put_prompt_cell(t, cr);
        bc_text_printf(t, "<td class=\"num\">%u", c->response_length);
        if (cr->returned_response_length >= 0 && cr->returned_response_length != (int64_t)c->response_length)
            bc_text_printf(t, "\xE2\x86\x92%lld", (long long)cr->returned_response_length);
        bc_text_puts(t, "</td><td>");
        bc_html_text(t, known(c->precision));
        bc_text_puts(t, "</td><td>");
        bc_html_text(t, known(c->cache_policy));
        for (uint32_t j = 0; j < bc_case_n_settings(c); j++) {
            bc_text_puts(t, "</td><td>");
            bc_html_text(t, c->setting_values[j]);
        }
        bc_text_puts(t, "</td><td class=\"st\"");
        if (!k->ok) { /* why, as a tooltip; the warnings say it in full */
            bc_text_printf(t, " title=\"%s", bc_status_name(cr->error_code));
            if (cr->message && *cr->message) {
                bc_text_puts(t, ": ");
                bc_html_text(t, cr->message);
            }
            bc_text_puts(t, "\"");
        }
        bc_text_printf(t, ">%s", bc_case_status_name(cr->status));
        bc_text_printf(t, "</td><td class=\"num\">%u</td>", cr->n_iterations);
        heat_cell(t, k->total_p50, &total, "--heat-time");
        double cvp = k->total_cv * 100.0;
        char num[32];
        if (bc_html_format_number(num, sizeof num, cvp))
            bc_text_printf(t, "<td class=\"num%s\" style=\"background:rgba(var(--heat-cv),%.2f)\">%s%%</td>",
                           k->total_cv > pg->unstable_cv ? " bad" : "",
                           cv.hi > cv.lo ? 0.06 + 0.5 * (cvp - cv.lo) / (cv.hi - cv.lo) : 0.2, num);
        else
            bc_text_puts(t, "<td class=\"num na\" title=\"not measured\">-</td>");
        heat_cell(t, k->tps_mean, &tps, "--heat-rate");
        heat_cell(t, k->peak_mib, &peak, "--heat-mem");
        heat_cell(t, k->held_mib, &held, "--heat-mem");
        bc_text_puts(t, "</tr>\n");
    }
    bc_text_puts(t, "</tbody></table></div>\n");
    put_declared(pg);
    bc_text_puts(t, "<p class=\"how\"><b>How to read this.</b> One row per case, in the order bench.cfg asks for "
                    "them. <i>backend</i> (a run with a backends list) names the one that ran the case. "
                    "<i>rows</i> is the effective batch, batch \xC3\x97 samples per prompt: the rows "
                    "generated at once. <i>prompt</i> is the width that ran (with the shortest and longest real "
                    "prompt when they differ); <i>response</i> shows \xE2\x80\x9C" "asked\xE2\x86\x92" "returned"
                    "\xE2\x80\x9D when fewer tokens came back; hover a <i>status</i> for why a case failed. "
                    "<i>p50</i> is the median of total_ms over the measured iterations and <i>cv</i> its coefficient "
                    "of variation (red above the unstable threshold); <i>tokens/s</i> is the mean of "
                    "tokens_per_second, <i>peak</i> the peak memory and <i>held</i> the memory still held between "
                    "rollouts. In each number column, the stronger the colour, the larger the value within that "
                    "column (over the cases that finished); a dash means not measured.");
    if (bc_case_n_settings(pg->cases[0].cr->c))
        bc_text_puts(t, " The columns between <i>cache</i> and <i>status</i> are the backend settings the matrix "
                        "varies (matrix.backend_settings), as each case ran them.");
    bc_text_puts(t, "</p>\n</section>\n");
}

/* --------------------------------------------------------------- page */

static void put_page(hp_page *pg, const char *title) {
    bc_text *t = pg->t;
    bc_text_puts(t, "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n"
                    "<meta charset=\"utf-8\"/>\n"
                    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n"
                    "<meta name=\"color-scheme\" content=\"light dark\"/>\n"
                    "<meta name=\"generator\" content=\"benchctl html reporter " HTML_VERSION "\"/>\n<title>");
    bc_html_text(t, title);
    bc_text_puts(t, "</title>\n<style>\n");
    for (size_t i = 0; i < sizeof css / sizeof css[0]; i++) {
        bc_text_puts(t, css[i]);
        bc_text_puts(t, "\n");
    }
    bc_text_puts(t, "</style>\n</head>\n<body>\n<main>\n");
    put_header(pg, title);
    put_warnings(pg);
    put_table(pg);
    hp_chart_throughput(pg);
    hp_chart_stages(pg);
    hp_chart_distributions(pg);
    hp_chart_progression(pg);
    hp_chart_memory(pg);
    hp_chart_ranks(pg);
    bc_text_puts(t, "<footer>Written by benchctl ");
    bc_html_text(t, known(pg->run->benchctl_version));
    bc_text_puts(t, "&#8217;s html reporter " HTML_VERSION ". One self-contained file: no script, nothing loaded "
                    "from the network.</footer>\n</main>\n</body>\n</html>\n");
}

/* ---------------------------------------------------------------- hooks */

/* check_settings: the output path must be writable (host->output_check),
 * so validate and run refuse a bad path before the first case. */
static bc_status html_check_settings(const bc_host *host, const bc_settings *settings, bc_error *err) {
    return bc_report_check_output(host, "html", bc_setting_at(settings, SET_PATH)->s, err);
}

static bc_status html_open(const bc_host *host, const bc_settings *settings, const bc_run_report *run,
                           void **out_instance, bc_error *err) {
    (void)run;
    const char *path = bc_setting_at(settings, SET_PATH)->s;
    if (!path || !*path) return bc_error_set(err, BC_ERR_SETTING, "html: setting path is empty");
    html_reporter *r = calloc(1, sizeof *r);
    if (!r) return bc_error_set(err, BC_ERR_NOMEM, "html: out of memory");
    r->host = host;
    r->path = path;
    r->title = bc_setting_at(settings, SET_TITLE)->s;
    r->unstable_cv = bc_setting_at(settings, SET_UNSTABLE_CV)->f;
    *out_instance = r;
    return BC_OK;
}

static bc_status html_close(void *instance, const bc_run_report *run, bc_error *err) {
    html_reporter *r = instance;
    bc_text text = {0};
    hp_page pg = {.t = &text, .run = run, .unstable_cv = r->unstable_cv, .n = run->cases ? run->n_cases : 0};
    bc_status st = build_model(&pg, err);
    if (st == BC_OK) {
        char title[256];
        if (r->title && *r->title)
            snprintf(title, sizeof title, "%s", r->title);
        else
            snprintf(title, sizeof title, "benchctl: %s", known(BC_RUN_BACKEND(run, model, NULL)));
        put_page(&pg, title);
        st = text.failed ? bc_error_set(err, BC_ERR_NOMEM, "html: %s: out of memory building the page", r->path)
                         : bc_report_write_file(r->host, r->path, text.buf, text.len, err);
    }
    free_model(&pg);
    free(text.buf);
    return st;
}

static void html_destroy(void *instance) { free(instance); }

static const bc_reporter_ops html_ops = {
    .struct_size = sizeof(bc_reporter_ops),
    .open = html_open,
    .case_started = NULL,
    .case_finished = NULL,
    .close = html_close,
    .destroy = html_destroy,
};

static const bc_plugin_desc html_desc = {
    BC_PLUGIN_DESC_HEADER,
    .kind = BC_KIND_REPORTER,
    .name = "html",
    .version = HTML_VERSION,
    .description = "one self-contained HTML page: run header, case table, SVG charts (light and dark)",
    BC_SETTINGS_TABLE(html_settings),
    .ops = &html_ops,
    .check_settings = html_check_settings,
};

BC_PLUGIN_DEFINE(html_desc)
