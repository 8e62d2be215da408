/* html_header.c: the html page's header: the title, the nav bar (Ranks
 * when the page has them), and the facts: model, backend (changed settings
 * first, the rest behind a details element), machine, versions, matrix,
 * sampling, config, start time. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "html_page.h"
#include "htmlw.h"
#include "report.h"

static void fact_begin(bc_text *t, const char *name) {
    bc_text_puts(t, "<dt>");
    bc_html_text(t, name);
    bc_text_puts(t, "</dt><dd>");
}

static void fact_end(bc_text *t) { bc_text_puts(t, "</dd>\n"); }

/* "12 layers", after ", " unless it is the first count written (*any). */
static void put_count(bc_text *t, int *any, const char *what, int64_t v) {
    if (v < 0) return;
    bc_text_printf(t, "%s%lld %s", *any ? ", " : "", (long long)v, what);
    *any = 1;
}

static void put_model(bc_text *t, const bc_run_report *run) {
    fact_begin(t, "Model");
    bc_html_text(t, hp_known(BC_RUN_BACKEND(run, model, NULL)));
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
    bc_html_text(t, hp_known(run->hostname));
    bc_text_puts(t, " \xC2\xB7 CPU ");
    bc_html_text(t, hp_known(run->cpu_model));
    const char *kernels = BC_RUN_BACKEND(run, cpu_kernels, NULL);
    int64_t threads = BC_RUN_BACKEND(run, cpu_threads, (int64_t)-1);
    if (kernels) {
        bc_text_puts(t, " \xC2\xB7 kernels ");
        bc_html_text(t, kernels);
    }
    if (threads >= 0) bc_text_printf(t, " \xC2\xB7 %lld thread%s", (long long)threads, threads == 1 ? "" : "s");
    fact_end(t);

    fact_begin(t, "Device");
    bc_html_text(t, hp_known(BC_RUN_BACKEND(run, device, NULL)));
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
    bc_html_text(t, hp_known(run->backend_name));
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
    bc_html_text(t, hp_known(run->benchctl_version));
    bc_text_puts(t, " (git <code>");
    bc_html_text(t, hp_known(run->git_commit));
    bc_text_puts(t, "</code>)");
    for (uint32_t i = 0; run->plugins && run->plugin_ref_size && i < run->n_plugins; i++) {
        const bc_plugin_ref *p = bc_run_plugin(run, i);
        bc_text_puts(t, i ? ", " : " \xC2\xB7 plugins: ");
        bc_html_text(t, hp_known(p->kind));
        bc_text_puts(t, " ");
        bc_html_text(t, hp_known(p->name));
        bc_text_puts(t, " ");
        bc_html_text(t, hp_known(p->version));
    }
    fact_end(t);
}

static void put_list(bc_text *t, const char *const *names, uint32_t n) {
    for (uint32_t i = 0; names && i < n; i++) {
        if (i) bc_text_puts(t, ", ");
        bc_html_text(t, hp_known(names[i]));
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
    bc_html_text(t, hp_known(run->config_path));
    bc_text_puts(t, "</code> \xC2\xB7 sha256 <code>");
    bc_html_text(t, hp_known(run->config_sha256));
    bc_text_puts(t, "</code>");
    fact_end(t);

    fact_begin(t, "Started");
    bc_html_text(t, hp_known(run->start_time_utc));
    fact_end(t);
}

void hp_put_header(hp_page *pg, const char *title) {
    bc_text *t = pg->t;
    const bc_run_report *run = pg->run;
    bc_text_puts(t, "<header>\n<h1>");
    bc_html_text(t, title);
    bc_text_puts(t, "</h1>\n<p class=\"sub\">");
    bc_html_text(t, hp_known(BC_RUN_BACKEND(run, model, NULL)));
    bc_text_puts(t, " on ");
    bc_html_text(t, hp_known(BC_RUN_BACKEND(run, device, NULL)));
    bc_text_puts(t, ", started ");
    bc_html_text(t, hp_known(run->start_time_utc));
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
