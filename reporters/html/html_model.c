/* html_model.c: the html reporter's reading of the run (html_page.h): every
 * case's label and numbers read once by name (a statistic the host lacks
 * computed from the values), the facets (prompt x response length) and the
 * series (the varying axes other than the batch) the charts group cases by,
 * and the case lists the notes print. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "html_page.h"
#include "htmlw.h"
#include "report.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Statistic name of field for cr: the host's, or, when the host has no
 * such statistic, computed from the per-iteration values with the same
 * definition (docs/reporters.md) for "mean", "p50" and "cv". */
double hp_case_stat(const bc_run_report *run, const bc_case_report *cr, int field, const char *name) {
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
    return hp_case_stat(run, cr, bc_run_field_index(run, field), "mean");
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
        v.precision |= !hp_same_str(c->precision, a->precision);
        v.cache |= !hp_same_str(c->cache_policy, a->cache_policy);
        v.backend |= !hp_same_str(bc_case_backend(c), bc_case_backend(a));
        for (uint32_t j = 0; j < bc_case_n_settings(c) && j < bc_case_n_settings(a); j++)
            v.settings |= !hp_same_str(c->setting_values[j], a->setting_values[j]);
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
    if (!hp_same_str(bc_case_backend(a), bc_case_backend(b)) || bc_case_n_settings(a) != bc_case_n_settings(b)) return 0;
    for (uint32_t j = 0; j < bc_case_n_settings(a); j++)
        if (!hp_same_str(a->setting_values[j], b->setting_values[j])) return 0;
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
bc_status hp_build_model(hp_page *pg, bc_error *err) {
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
        k->total_mean = hp_case_stat(run, cr, pg->f_total, "mean");
        k->total_p50 = hp_case_stat(run, cr, pg->f_total, "p50");
        k->total_cv = hp_case_stat(run, cr, pg->f_total, "cv");
        k->tps_mean = field_mean(run, cr, "tokens_per_second");
        for (int s = 0; s < HP_N_STAGES; s++) k->stage[s] = field_mean(run, cr, stage_fields[s]);
        k->peak_mib = cr->peak_memory_mib;
        k->held_mib = bc_bytes_to_mib(cr->held_between_rollouts_bytes);

        if (find_facet(pg, c->prompt_length, c->response_length) < 0)
            pg->facets[pg->n_facets++] = (hp_facet){c->prompt_length, c->response_length};
        k->series = -1;
        for (uint32_t s = 0; s < pg->n_series && k->series < 0; s++) {
            const hp_series *se = &pg->series[s];
            if (se->samples == c->samples_per_prompt && hp_same_str(se->precision, c->precision) &&
                hp_same_str(se->cache, c->cache_policy) && same_instance(se->c, c))
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

void hp_free_model(hp_page *pg) {
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
