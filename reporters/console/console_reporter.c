/* console_reporter.c: the "console" reporter plugin. At close it writes two
 * readable, aligned tables of every case (requested order) to the host
 * output "path" (default "-", standard output through the host): what ran,
 * how long it took, how many iterations and why they stopped, how noisy
 * they were (the coefficient of variation of total_ms, with a mark and a
 * footnote for unstable cases), then where the time went (time to first
 * token, decode ms per token, prefill and decode throughput) and how busy
 * the machine was (load average, CPU steal). Every number is looked up by
 * field and statistic name, so a host without one shows "-". The tables
 * are console_tables.c; this file is the plugin and the progress.
 *
 * While the run goes (progress = true, and not with -q):
 *   - on a terminal, one progress line on stderr, redrawn in place with \r
 *     and erase-line as cases start and iterations finish (at most ten
 *     times a second), cut to the terminal's width (TIOCGWINSZ, else
 *     $COLUMNS, else 80) so it never wraps, and cleared before the tables:
 *       [2/8] B=4 x4 prompt=128 resp=128 bf16 retain  it 5/10  ETA 1m23s  elapsed 42s  last 812.3 tok/s
 *     (adaptive: "it 7 (max 50)  ETA 1m23s  ci +-2.3%"). When it does not
 *     fit, last and elapsed go first, then the case's description is cut
 *     short, then the ci, the ETA and the iteration.
 *   - otherwise (a CI log, a pipe), one plain line per finished case:
 *       benchctl: [2/8] done: B=4 x4 prompt=128 resp=128 bf16 retain: 812.3 tok/s, 10 iterations (stable), cv 1.2%
 *       benchctl: [3/8] failed: B=8 x1 prompt=32 resp=8 fp32 release (out of memory)
 *     (the failure's message comes once, grouped, at the end of the run) and,
 *     with verbose = true, a line as each case starts.
 *
 * Settings:
 *   progress        bool, default true: the progress line or per-case lines
 *   verbose         bool, default false: also a line per case start when not a TTY
 *   path            output for the tables, default "-"
 *   unstable_cv     float, default 0.05: cv of total_ms above it marks a case unstable
 *   unstable_steal  float, default 0.02: CPU steal share above it marks a case unstable
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "benchctl/plugin.h"
#include "report.h"
#include "console_tables.h"
#include "report_file.h"
#include "termsafe.h"

enum { SET_PROGRESS = 0, SET_VERBOSE, SET_PATH, SET_UNSTABLE_CV, SET_UNSTABLE_STEAL, SET_COUNT };

static const bc_setting_desc console_settings[SET_COUNT] = {
    [SET_PROGRESS] = {.name = "progress", .type = BC_SETTING_BOOL, .default_int = 1,
                      .help = "progress on stderr: a live line on a terminal, else a line per finished case"},
    [SET_VERBOSE] = {.name = "verbose", .type = BC_SETTING_BOOL, .default_int = 0,
                     .help = "when stderr is not a terminal, also print a line as each case starts"},
    [SET_PATH] = {.name = "path", .type = BC_SETTING_STRING, .default_string = "-",
                  .help = "where the final tables go; \"-\" is stdout"},
    [SET_UNSTABLE_CV] = {.name = "unstable_cv", .type = BC_SETTING_FLOAT, .default_float = 0.05, .has_range = 1,
                         .min = 0.0, .max = 10.0,
                         .help = "a case whose total_ms varies more than this (stddev / mean) is marked unstable"},
    [SET_UNSTABLE_STEAL] = {.name = "unstable_steal", .type = BC_SETTING_FLOAT, .default_float = 0.02,
                            .has_range = 1, .min = 0.0, .max = 1.0,
                            .help = "a case during which the hypervisor stole more than this share of the CPU "
                                    "time is marked unstable"},
};

/* Redraws of the progress line, at most one per this many ns (case starts always draw). */
#define REDRAW_NS 100000000ull

typedef struct console_reporter {
    const bc_host *host; /* not owned */
    int progress, verbose, quiet;
    double unstable_cv, unstable_steal;
    const char *path;    /* host-owned setting, lives until destroy */
    int line_drawn;      /* a progress line is on stderr and must be cleared */
    uint64_t t_open_ns, last_draw_ns;
    /* The running case, as the progress shows it. */
    uint32_t position, n_cases;
    char desc[128];      /* "B=4 x4 prompt=128 resp=128 bf16 retain" */
    char iteration[48];  /* "warmup 1/2", "it 5/10", "it 7 (max 50)" */
    char ci[32];         /* "ci +-2.3%" while an adaptive case converges */
    double eta_s;
    double last_tps;     /* mean tokens/s of the last case that finished ok, NAN before */
    uint32_t n_finished; /* cases finished so far (run or taken from a resumed run's journal) */
    char first_backend[64]; /* the run's backend (its first, with a backends list) */
} console_reporter;

/* check_settings: the output path must be writable (host->output_check;
 * "-" always is), so validate and run refuse a bad path before any case. */
static bc_status console_check_settings(const bc_host *host, const bc_settings *settings, bc_error *err) {
    return bc_report_check_output(host, "console", bc_setting_at(settings, SET_PATH)->s, err);
}

static uint64_t now_ns(const console_reporter *r) { return r->host->now_ns ? r->host->now_ns() : 0; }

static bc_status console_open(const bc_host *host, const bc_settings *settings, const bc_run_report *run,
                              void **out_instance, bc_error *err) {
    const char *path = bc_setting_at(settings, SET_PATH)->s;
    if (!path || !*path) return bc_error_set(err, BC_ERR_SETTING, "console: setting path is empty");
    console_reporter *r = calloc(1, sizeof *r);
    if (!r) return bc_error_set(err, BC_ERR_NOMEM, "console: out of memory");
    r->host = host;
    r->progress = bc_setting_at(settings, SET_PROGRESS)->i != 0;
    r->verbose = bc_setting_at(settings, SET_VERBOSE)->i != 0;
    r->path = path;
    r->unstable_cv = bc_setting_at(settings, SET_UNSTABLE_CV)->f;
    r->unstable_steal = bc_setting_at(settings, SET_UNSTABLE_STEAL)->f;
    /* -q: a host from 2.1 on says so; progress then stays off */
    r->quiet = BC_HAS(host, bc_host, log_level) && host->log_level < BC_LOG_WARN;
    r->t_open_ns = now_ns(r);
    r->eta_s = NAN;
    r->last_tps = NAN;
    snprintf(r->first_backend, sizeof r->first_backend, "%s", run->backend_name ? run->backend_name : "");
    *out_instance = r;
    return BC_OK;
}

/* "--" when unknown, else "45s", "1m23s" or "2h05m". */
static void format_duration(char *buf, size_t size, double s_) {
    if (!isfinite(s_) || s_ < 0) {
        snprintf(buf, size, "--");
        return;
    }
    long s = (long)(s_ + 0.5);
    if (s < 60)
        snprintf(buf, size, "%lds", s);
    else if (s < 3600)
        snprintf(buf, size, "%ldm%02lds", s / 60, s % 60);
    else
        snprintf(buf, size, "%ldh%02ldm", s / 3600, (s % 3600) / 60);
}

static void clear_line(console_reporter *r) {
    if (!r->line_drawn) return;
    fputs("\r\033[K", stderr);
    fflush(stderr);
    r->line_drawn = 0;
}

/* Columns of the terminal on stderr: TIOCGWINSZ, else $COLUMNS, else 80. */
static size_t terminal_width(void) {
    struct winsize ws;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
    const char *env = getenv("COLUMNS");
    long cols = env ? strtol(env, NULL, 10) : 0;
    return cols > 0 && cols < 10000 ? (size_t)cols : 80;
}

/* "B=4 x4 prompt=128 resp=128 bf16 retain", and the case's backend when it
 * is not the run's first (a backends list); "prompt=file" when the prompts
 * file decides the length. */
static void describe_case(char *buf, size_t size, const bc_case *c, const char *first_backend) {
    char prompt[16];
    if (c->prompt_length)
        snprintf(prompt, sizeof prompt, "%u", c->prompt_length);
    else
        snprintf(prompt, sizeof prompt, "file");
    int k = snprintf(buf, size, "B=%u x%u prompt=%s resp=%u %s %s", c->batch_size, c->samples_per_prompt, prompt,
                     c->response_length, c->precision ? c->precision : "?", c->cache_policy ? c->cache_policy : "?");
    const char *b = bc_case_backend(c);
    if (b && strcmp(b, first_backend) != 0 && k > 0 && (size_t)k < size)
        k += snprintf(buf + k, size - (size_t)k, " %s", b);
    for (uint32_t i = 0; i < bc_case_n_settings(c) && k > 0 && (size_t)k < size; i++)
        k += snprintf(buf + k, size - (size_t)k, " %s=%s", c->setting_names[i], c->setting_values[i]);
    /* the backend's name and values may come from a file or a peer */
    char safe[256];
    snprintf(buf, size, "%s", bc_terminal_safe(safe, sizeof safe, buf));
}

/* The progress line within width columns: "[i/n] DESC  PARTS...". The
 * first n_key parts (the iteration, the ETA, the CI) go in while they fit
 * next to a few characters of the case's description; then the description
 * gets the room it needs (cut short when there is not enough); then the
 * other parts (elapsed, last) while they fit. */
static void fit_line(char *out, size_t cap, size_t width, const char *prefix, const char *desc,
                     const char *const *parts, size_t n, size_t n_key) {
    enum { MIN_DESC = 12, MAX_PARTS = 8 };
    if (width >= cap) width = cap - 1;
    if (n > MAX_PARTS) n = MAX_PARTS;
    size_t dlen = strlen(desc), used = strlen(prefix) + 1;
    int keep[MAX_PARTS] = {0};
    for (size_t i = 0; i < n_key && i < n; i++) {
        size_t l = strlen(parts[i]);
        if (l && used + (dlen < MIN_DESC ? dlen : MIN_DESC) + 2 + l <= width) keep[i] = 1, used += 2 + l;
    }
    size_t room = width > used ? width - used : 0;
    size_t shown = dlen < room ? dlen : room;
    used += shown;
    for (size_t i = n_key; i < n; i++) {
        size_t l = strlen(parts[i]);
        if (l && used + 2 + l <= width) keep[i] = 1, used += 2 + l;
    }
    int len = snprintf(out, cap, "%s %.*s", prefix, (int)shown, desc);
    for (size_t i = 0; i < n && len >= 0 && (size_t)len < cap; i++)
        if (keep[i]) len += snprintf(out + len, cap - (size_t)len, "  %s", parts[i]);
    if (strlen(out) > width) out[width] = '\0'; /* a terminal narrower than "[i/n]" */
}

/* The progress line's parts after "[i/n] DESC", most useful first; *n_key:
 * how many of them come before the description (fit_line). */
static size_t progress_parts(const console_reporter *r, char parts[5][96], size_t *n_key) {
    char when[32];
    size_t n = 0;
    if (r->iteration[0]) snprintf(parts[n++], 96, "%s", r->iteration);
    format_duration(when, sizeof when, r->eta_s);
    snprintf(parts[n++], 96, "ETA %s", when);
    if (r->ci[0]) snprintf(parts[n++], 96, "%s", r->ci);
    *n_key = n;
    format_duration(when, sizeof when, (double)(now_ns(r) - r->t_open_ns) / 1e9);
    snprintf(parts[n++], 96, "elapsed %s", when);
    if (isfinite(r->last_tps)) snprintf(parts[n++], 96, "last %.1f tok/s", r->last_tps);
    return n;
}

/* Redraws the progress line on a terminal (force: even if drawn very recently). */
static void draw(console_reporter *r, int force) {
    if (!r->host->stderr_is_tty || !r->progress || r->quiet) return;
    uint64_t now = now_ns(r);
    if (!force && r->line_drawn && now - r->last_draw_ns < REDRAW_NS) return;
    r->last_draw_ns = now;
    char parts[5][96], prefix[32], line[512];
    const char *segs[5];
    size_t n_key, n = progress_parts(r, parts, &n_key);
    for (size_t i = 0; i < n; i++) segs[i] = parts[i];
    snprintf(prefix, sizeof prefix, "[%u/%u]", r->position + 1, r->n_cases);
    size_t width = terminal_width();
    /* one column short of the width: writing the last one wraps on some terminals */
    fit_line(line, sizeof line, width > 1 ? width - 1 : 1, prefix, r->desc, segs, n, n_key);
    fprintf(stderr, "\r\033[K%s", line);
    fflush(stderr);
    r->line_drawn = 1;
}

static void console_case_started(void *instance, const bc_case *c, uint32_t i, uint32_t n, double eta_s) {
    console_reporter *r = instance;
    r->position = i;
    r->n_cases = n;
    r->eta_s = eta_s;
    r->iteration[0] = r->ci[0] = '\0';
    describe_case(r->desc, sizeof r->desc, c, r->first_backend);
    if (r->host->stderr_is_tty) {
        draw(r, 1);
    } else if (r->verbose && r->progress && !r->quiet) {
        char when[32];
        format_duration(when, sizeof when, eta_s);
        fprintf(stderr, "benchctl: [%u/%u] start: %s  ETA %s\n", i + 1, n, r->desc, when);
    }
}

static bc_status console_iteration_finished(void *instance, const bc_run_report *run, const bc_iteration_event *ev,
                                            bc_error *err) {
    console_reporter *r = instance;
    (void)run;
    (void)err;
    if (ev->warmup)
        snprintf(r->iteration, sizeof r->iteration, "warmup %u/%u", ev->iteration + 1, ev->n_max);
    else if (ev->n_min == ev->n_max)
        snprintf(r->iteration, sizeof r->iteration, "it %u/%u", ev->iteration + 1, ev->n_max);
    else
        snprintf(r->iteration, sizeof r->iteration, "it %u (max %u)", ev->iteration + 1, ev->n_max);
    r->ci[0] = '\0';
    if (!ev->warmup && isfinite(ev->rel_ci)) snprintf(r->ci, sizeof r->ci, "ci +-%.1f%%", 100.0 * ev->rel_ci);
    if (BC_HAS(ev, bc_iteration_event, eta_s)) r->eta_s = ev->eta_s;
    draw(r, 0);
    return BC_OK;
}

/* The median of field over cr's iterations (the headline, as the HTML
 * report and compare give it), by name; the mean from a host without
 * medians; NAN when unknown. */
static double case_mean(const bc_run_report *run, const bc_case_report *cr, const char *field) {
    int s = bc_run_stat_index(run, "p50");
    return bc_case_stat(run, cr, bc_run_field_index(run, field), s >= 0 ? s : bc_run_stat_index(run, "mean"));
}

/* The plain line for a finished case, for logs:
 *   benchctl: [3/16] done: DESC: 812.3 tok/s, 10 iterations (stable), cv 1.2%
 *   benchctl: [3/16] failed: DESC (out of memory)
 * (the message of a failure is printed once, grouped, when the run ends). */
static void print_case_line(const console_reporter *r, const bc_run_report *run, const bc_case_report *cr) {
    char desc[128], count[32];
    describe_case(desc, sizeof desc, cr->c, r->first_backend);
    /* "[k/n]": k cases finished so far; n as case_started said, else (only
     * taken cases yet) the matrix when no selection cut it, else unknown */
    uint32_t n = r->n_cases;
    if (n == 0 && !BC_RUN_FIELD(run, selected_cases, NULL) && !BC_RUN_FIELD(run, selected_only, NULL))
        n = BC_RUN_FIELD(run, n_matrix_cases, 0);
    if (n >= r->n_finished) snprintf(count, sizeof count, "[%u/%u]", r->n_finished, n);
    else snprintf(count, sizeof count, "[%u]", r->n_finished);
    if (cr->status != BC_CASE_OK) {
        fprintf(stderr, "benchctl: %s %s: %s (%s)\n", count, bc_case_status_name(cr->status), desc,
                bc_status_name(cr->error_code));
        return;
    }
    char tps[48] = "- tok/s", stop[48] = "", cv[64] = "";
    double mean_tps = case_mean(run, cr, "tokens_per_second");
    if (isfinite(mean_tps)) snprintf(tps, sizeof tps, "%.1f tok/s", mean_tps);
    const char *reason = bc_case_stop_reason(run, cr);
    if (reason) snprintf(stop, sizeof stop, " (%s)", reason);
    double c = bc_case_stat(run, cr, bc_run_field_index(run, "total_ms"), bc_run_stat_index(run, "cv"));
    if (isfinite(c))
        snprintf(cv, sizeof cv, ", cv %.1f%%%s", 100.0 * c,
                 bc_case_unstable(run, cr, r->unstable_cv, r->unstable_steal) ? " (unstable)" : "");
    /* a case taken from the journal says so: it ran at another time, under another load */
    int resumed = BC_CASE_FIELD(run, cr, resumed, 0) != 0;
    fprintf(stderr, "benchctl: %s %s: %s: %s, %u iteration%s%s%s\n", count, resumed ? "resumed" : "done", desc, tps,
            cr->n_iterations, cr->n_iterations == 1 ? "" : "s", stop, cv);
}

static bc_status console_case_finished(void *instance, const bc_run_report *run, const bc_case_report *cr,
                                       bc_error *err) {
    console_reporter *r = instance;
    (void)err;
    r->n_finished++;
    if (cr->status == BC_CASE_OK) {
        double tps = case_mean(run, cr, "tokens_per_second");
        if (isfinite(tps)) r->last_tps = tps;
    }
    if (r->host->stderr_is_tty) {
        r->iteration[0] = r->ci[0] = '\0';
        draw(r, 1);
    } else if (r->progress && !r->quiet) {
        print_case_line(r, run, cr);
    }
    return BC_OK;
}

static bc_status console_close(void *instance, const bc_run_report *run, bc_error *err) {
    console_reporter *r = instance;
    clear_line(r);
    bc_text t = {0};
    if (console_build_report(&t, run, r->unstable_cv, r->unstable_steal) != BC_OK) {
        free(t.buf);
        return bc_error_set(err, BC_ERR_NOMEM, "console: out of memory building the tables");
    }
    /* the title and the failure messages carry text from files and peers
     * too: only the newlines stay controls */
    bc_text safe = {0};
    if (t.buf) bc_text_put_terminal(&safe, t.buf, t.len, 1);
    free(t.buf);
    if (safe.failed) {
        free(safe.buf);
        return bc_error_set(err, BC_ERR_NOMEM, "console: out of memory building the tables");
    }
    bc_status st = bc_report_write_file(r->host, r->path, safe.buf ? safe.buf : "", safe.len, err);
    free(safe.buf);
    return st;
}

static void console_destroy(void *instance) {
    console_reporter *r = instance;
    if (r) clear_line(r); /* the run ended early: leave a clean terminal */
    free(r);
}

static const bc_reporter_ops console_ops = {
    .struct_size = sizeof(bc_reporter_ops),
    .open = console_open,
    .case_started = console_case_started,
    .case_finished = console_case_finished,
    .close = console_close,
    .destroy = console_destroy,
    .iteration_finished = console_iteration_finished,
};

static const bc_plugin_desc console_desc = {
    BC_PLUGIN_DESC_HEADER,
    .kind = BC_KIND_REPORTER,
    .name = "console",
    .version = "0.1.0",
    .description = "readable tables at the end; progress on stderr (a live line on a terminal, else a line per case)",
    BC_SETTINGS_TABLE(console_settings),
    .ops = &console_ops,
    .check_settings = console_check_settings,
};

BC_PLUGIN_DEFINE(console_desc)
