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
    hp_put_header(pg, title);
    hp_put_warnings(pg);
    hp_put_table(pg);
    hp_chart_throughput(pg);
    hp_chart_stages(pg);
    hp_chart_distributions(pg);
    hp_chart_progression(pg);
    hp_chart_memory(pg);
    hp_chart_ranks(pg);
    bc_text_puts(t, "<footer>Written by benchctl ");
    bc_html_text(t, hp_known(pg->run->benchctl_version));
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
    bc_status st = hp_build_model(&pg, err);
    if (st == BC_OK) {
        char title[256];
        if (r->title && *r->title)
            snprintf(title, sizeof title, "%s", r->title);
        else
            snprintf(title, sizeof title, "benchctl: %s", hp_known(BC_RUN_BACKEND(run, model, NULL)));
        put_page(&pg, title);
        st = text.failed ? bc_error_set(err, BC_ERR_NOMEM, "html: %s: out of memory building the page", r->path)
                         : bc_report_write_file(r->host, r->path, text.buf, text.len, err);
    }
    hp_free_model(&pg);
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
