/* test_console.c: the console reporter plugin (reporters/console), loaded
 * with dlopen: the two aligned tables (written to a file through its path
 * setting) with every number looked up by name, the stop reasons, the cv
 * column with its unstable mark and footnote, the load columns; the
 * progress line on a "terminal" (iterations, ETA, cut to $COLUMNS), the
 * plain per-case lines when stderr is not one, silence with -q; and
 * check_settings. stderr is captured by pointing fd 2 at a file; a fake
 * clock makes every progress event draw. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "bc_test_assert.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reporter_fixture.h"

typedef struct fixture {
    int log_level;     /* the host's log level (BC_LOG_WARN unless a test sets it) */
    int old_host;      /* a 2.0 host table, without log_level */
    char dir[512];
    char path[600];   /* the table */
    char errpath[600]; /* captured stderr */
    rf_run run;
    bc_host host;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    if (!f || rf_make_dir(f->dir, "test_console") != 0) {
        free(f);
        return -1;
    }
    rf_run_init(&f->run, 0);
    f->host = rf_host(0);
    f->log_level = BC_LOG_WARN;
    setenv("COLUMNS", "200", 1); /* the "terminal" is a file: its width comes from $COLUMNS */
    snprintf(f->path, sizeof f->path, "%s/table.txt", f->dir);
    snprintf(f->errpath, sizeof f->errpath, "%s/stderr.txt", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    rf_remove_tree(f->dir);
    free(f);
    return 0;
}

/* A clock that moves 50 ms a reading, so every progress event redraws. */
static uint64_t fake_ns;
static uint64_t fake_clock(void) { return fake_ns += 50000000u; }

/* Drives the console reporter with stderr captured into f->errpath. */
static void drive(fixture *f, int tty, const char *extra) {
    char setting[700];
    snprintf(setting, sizeof setting, "path=%s", f->path);
    const char *overrides[2] = {setting, extra};
    rf_plugin p;
    assert_int_equal(rf_load(&p, "console", overrides, extra ? 2 : 1), 0);
    bc_host host = rf_host(tty);
    host.log_level = (bc_log_level)f->log_level;
    if (f->old_host) host.struct_size = offsetof(bc_host, log_level);
    fake_ns = 0;
    host.now_ns = fake_clock;

    fflush(stderr);
    int saved = dup(2);
    int fd = open(f->errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(saved >= 0 && fd >= 0);
    dup2(fd, 2);
    close(fd);
    bc_error err = {0};
    bc_status st = rf_drive(&p, &host, &f->run, &err);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);

    if (st != BC_OK) fprintf(stderr, "console reporter: %s\n", err.message);
    assert_int_equal(st, BC_OK);
    rf_unload(&p);
}

/* Splits text into lines in place (up to max; empty lines are skipped);
 * returns the count. */
static int split_lines(char *text, char **lines, int max) {
    int n = 0;
    char *save = NULL;
    for (char *l = strtok_r(text, "\n", &save); l && n < max; l = strtok_r(NULL, "\n", &save)) lines[n++] = l;
    return n;
}

/* Splits a copy of line into its space-separated words (up to max). */
static int split_words(const char *line, char *copy, size_t size, char **words, int max) {
    snprintf(copy, size, "%s", line);
    int n = 0;
    char *save = NULL;
    for (char *w = strtok_r(copy, " ", &save); w && n < max; w = strtok_r(NULL, " ", &save)) words[n++] = w;
    return n;
}

/* x as the tables print it: "-" when not measured, else fixed decimals. */
static void fmt(char *buf, size_t size, double x, int decimals) {
    if (isnan(x))
        snprintf(buf, size, "-");
    else
        snprintf(buf, size, "%.*f", decimals, x);
}

/* The line of text at lines[i] contains " <x with decimals>" as a word. */
static void assert_shows(const char *line, double x, int decimals) {
    char want[64], copy[512];
    char *words[32];
    fmt(want, sizeof want, x, decimals);
    int n = split_words(line, copy, sizeof copy, words, 32);
    for (int i = 0; i < n; i++)
        if (strcmp(words[i], want) == 0) return;
    fail_msg("\"%s\" does not show %s", line, want);
}

/* Reads the table file and splits it into lines (text is owned by the caller). */
static int read_tables(fixture *f, char **text, char **lines, int max) {
    *text = rf_slurp(f->path);
    assert_non_null(*text);
    return split_lines(*text, lines, max);
}

/* title, settings line, header, rule, 3 cases, header, rule, 3 cases,
 * counts, 5 legend lines, the unstable footnote (2 lines), 1 failure message */
enum { L_TITLE = 0, L_SETTINGS, L_HEAD1, L_RULE1, L_CASES1, L_HEAD2 = L_CASES1 + RF_N_CASES, L_RULE2,
       L_CASES2, L_COUNTS = L_CASES2 + RF_N_CASES, L_LEGEND, L_UNSTABLE = L_LEGEND + 5, L_MESSAGE = L_UNSTABLE + 2,
       N_LINES };

/* Table 1's words of a case row (a prompt "37 (12-37)" counts as two). */
enum { W_INDEX = 0, W_STATUS = 7, W_N, W_STOP, W_TOTAL, W_P95, W_CV, W_TPS };

static void test_tables(void **state) {
    fixture *f = *state;
    drive(f, 0, NULL);
    char *text, *lines[32];
    int n = read_tables(f, &text, lines, 32);
    assert_int_equal(n, N_LINES);
    assert_non_null(strstr(lines[L_TITLE], "facebook/opt-125m (synthetic) on cpu"));
    assert_string_equal(lines[L_SETTINGS], "backend settings: threads=2 shared_prefill=true");
    const char *head1[] = {"status", "n", "stop", "total_ms", "p95", "cv%", "tok/s", "peak_MiB", "held_MiB"};
    for (size_t i = 0; i < sizeof head1 / sizeof head1[0]; i++) assert_non_null(strstr(lines[L_HEAD1], head1[i]));
    assert_string_equal(lines[L_HEAD2] + strspn(lines[L_HEAD2], " "),
                        "#  ttft_ms  ms/tok_p50  ms/tok_p95  prefill_ms  decode_ms  prefill_tok/s  decode_tok/s"
                        "       load  steal%");
    /* Aligned: in each table, header, rule and rows are the same width. */
    for (int table = 0; table < 2; table++) {
        int head = table ? L_HEAD2 : L_HEAD1;
        size_t w = strlen(lines[head]);
        assert_int_equal(strspn(lines[head + 1], "-"), w);
        for (int i = 0; i <= RF_N_CASES + 1; i++) assert_int_equal(strlen(lines[head + i]), w);
    }
    for (int i = 0; i < n; i++) assert_true(strlen(lines[i]) <= 150);

    /* Requested order; case 0's numbers as the statistics say. */
    const char *row0 = lines[L_CASES1];
    assert_true(strncmp(row0 + strspn(row0, " "), "0 ", 2) == 0);
    assert_non_null(strstr(row0, " bf16 "));
    assert_non_null(strstr(row0, " retain "));
    assert_non_null(strstr(row0, " ok "));
    /* the headline figures are medians, as the HTML report and compare give them */
    char median[64];
    fmt(median, sizeof median, rf_stat(&f->run, 0, RF_F_TOTAL_MS, "p50"), 2);
    char copy0[512], *w0[24];
    assert_true(split_words(row0, copy0, sizeof copy0, w0, 24) > W_TPS);
    assert_string_equal(w0[W_TOTAL], median);
    fmt(median, sizeof median, rf_stat(&f->run, 0, RF_F_TOKENS_PER_SECOND, "p50"), 1);
    assert_string_equal(w0[W_TPS], median);
    assert_shows(row0, rf_stat(&f->run, 0, RF_F_TOTAL_MS, "p95"), 2);
    assert_shows(row0, 12.5, 1);  /* peak */
    assert_true(strlen(row0) > 4 && strcmp(row0 + strlen(row0) - 4, " 1.5") == 0); /* held, last */
    /* Case 1 failed: status, dashes for what was not measured. */
    const char *row1 = lines[L_CASES1 + 1];
    assert_true(strncmp(row1 + strspn(row1, " "), "1 ", 2) == 0);
    assert_non_null(strstr(row1, " failed "));
    assert_non_null(strstr(row1, " -  "));
    assert_int_equal(row1[strlen(row1) - 1], '-'); /* held unknown */
    /* Case 2 ran from a prompts file: the width that ran, and the range. */
    const char *row2 = lines[L_CASES1 + 2];
    assert_non_null(strstr(row2, " 37 (12-37) "));
    assert_non_null(strstr(row2, " release "));
    assert_true(strcmp(row2 + strlen(row2) - 4, " 1.0") == 0);

    /* How many iterations, why they stopped, how noisy (cv in percent; "!"
     * marks an unstable case: cases 0 and 2 vary by 20%, case 2 also ran
     * with 5% steal; case 1 measured nothing). */
    static const char *const stop[RF_N_CASES] = {"stable", "failed", "max_iter"};
    static const char *const n_it[RF_N_CASES] = {"3", "0", "3"};
    for (uint32_t c = 0; c < RF_N_CASES; c++) {
        char copy[512], want[64];
        char *words[24];
        int shift = c == 2; /* "37 (12-37)" */
        assert_int_equal(split_words(lines[L_CASES1 + c], copy, sizeof copy, words, 24), 16 + shift);
        assert_string_equal(words[W_N + shift], n_it[c]);
        assert_string_equal(words[W_STOP + shift], stop[c]);
        if (c == 1) {
            assert_string_equal(words[W_CV + shift], "-");
            continue;
        }
        snprintf(want, sizeof want, "%.1f!", 100.0 * rf_stat(&f->run, c, RF_F_TOTAL_MS, "cv"));
        assert_string_equal(words[W_CV + shift], want);
    }
    assert_string_equal(lines[L_UNSTABLE], "! unstable: the cv of total_ms is above 5% or the CPU steal above 2%, so "
                                           "the numbers are noisy (a busy or shared machine?):");
    assert_string_equal(lines[L_UNSTABLE + 1], "  cases 0,2; rerun them on a quiet machine (benchctl run FILE --cases "
                                               "0,2) or with more iterations.");

    /* The second table: where the time went, every value looked up by name,
     * then the machine's load (start/end) and steal. */
    static const char *const load[RF_N_CASES] = {"0.50/0.75", "1.25/1.50", "-"};
    static const char *const steal[RF_N_CASES] = {"0.0", "-", "5.0"};
    for (uint32_t c = 0; c < RF_N_CASES; c++) {
        char copy[512];
        char *words[16];
        assert_int_equal(split_words(lines[L_CASES2 + c], copy, sizeof copy, words, 16), 10);
        assert_string_equal(words[8], load[c]);
        assert_string_equal(words[9], steal[c]);
        const int field[] = {RF_F_TIME_TO_FIRST_TOKEN_MS, RF_F_DECODE_MS_PER_TOKEN_P50, RF_F_DECODE_MS_PER_TOKEN_P95,
                             RF_F_PREFILL_FORWARD_MS, RF_F_DECODE_FORWARD_MS, RF_F_PREFILL_TOKENS_PER_SECOND,
                             RF_F_DECODE_TOKENS_PER_SECOND};
        const int decimals[] = {2, 3, 3, 2, 2, 1, 1};
        char want[64];
        snprintf(want, sizeof want, "%u", c);
        assert_string_equal(words[0], want);
        for (int k = 0; k < 7; k++) {
            fmt(want, sizeof want, rf_stat(&f->run, c, field[k], "mean"), decimals[k]);
            assert_string_equal(words[k + 1], want);
        }
    }
    assert_string_equal(lines[L_COUNTS], "3 cases: 2 ok, 1 failed, 0 skipped.");
    assert_string_equal(lines[L_MESSAGE], "case 1 failed: " RF_MESSAGE);
    free(text);
}

/* An older host, without the throughput fields and with only n, mean and
 * max: what it lacks shows as "-", what it has still shows. */
static void test_missing_names(void **state) {
    fixture *f = *state;
    rf_run_init(&f->run, RF_OLD_FIELDS | RF_FEW_STATS);
    drive(f, 0, NULL);
    char *text, *lines[32];
    assert_int_equal(read_tables(f, &text, lines, 32), N_LINES);
    char copy[512];
    char *words[24];
    assert_int_equal(split_words(lines[L_CASES2], copy, sizeof copy, words, 24), 10);
    for (int k = 1; k < 8; k++) {
        if (k == 4 || k == 5) continue; /* prefill_ms and decode_ms: fields the old host has */
        assert_string_equal(words[k], "-");
    }
    assert_shows(lines[L_CASES2], rf_stat(&f->run, 0, RF_F_PREFILL_FORWARD_MS, "mean"), 2);
    /* Table 1, case 0: # batch x prompt resp precision cache status, then
     * total_ms (the mean: the host has no median), and p95 (which it lacks). */
    assert_int_equal(split_words(lines[L_CASES1], copy, sizeof copy, words, 24), 16);
    char want[64];
    fmt(want, sizeof want, rf_stat(&f->run, 0, RF_F_TOTAL_MS, "mean"), 2);
    assert_string_equal(words[W_TOTAL], want);
    assert_string_equal(words[W_P95], "-");
    assert_string_equal(words[W_CV], "-"); /* no cv in this host's table */
    free(text);
}

/* A host that could not describe the backend: the title says so. */
static void test_no_backend(void **state) {
    fixture *f = *state;
    rf_run_init(&f->run, RF_NO_BACKEND);
    drive(f, 0, NULL);
    char *text, *lines[32];
    assert_int_equal(read_tables(f, &text, lines, 32), N_LINES);
    assert_non_null(strstr(lines[L_TITLE], ": ? on ?,"));
    free(text);
}

/* check_settings refuses a table path that cannot be created; "-" is fine. */
static void test_check_settings(void **state) {
    fixture *f = *state;
    const char *settings[] = {"path=/dev/null/table.txt", "path=-"};
    const bc_status expect[] = {BC_ERR_IO, BC_OK};
    for (int i = 0; i < 2; i++) {
        const char *overrides[1] = {settings[i]};
        rf_plugin p;
        assert_int_equal(rf_load(&p, "console", overrides, 1), 0);
        bc_error err = {0};
        assert_int_equal(p.desc->check_settings(&f->host, &p.settings, &err), expect[i]);
        if (expect[i] != BC_OK) assert_non_null(strstr(err.message, "/dev/null/table.txt"));
        rf_unload(&p);
    }
}

/* On a terminal: the line is redrawn in place as cases start and iterations
 * finish (warmup, then it k/N), with the ETA, the run's elapsed time and the
 * last finished case's tokens/s, and cleared at the end. */
static void test_progress_on_tty(void **state) {
    fixture *f = *state;
    drive(f, 1, NULL);
    char *err = rf_slurp(f->errpath);
    assert_non_null(err);
    /* Execution order: case 1 (ETA unknown yet, fails), case 0, case 2 (ETA
     * 83 s, one less per event); case 2's prompts come from a file. */
    assert_non_null(strstr(err, "\r\033[K[1/3] B=8 x1 prompt=32 resp=8 fp32 release  ETA --  elapsed "));
    assert_non_null(strstr(err, "\r\033[K[2/3] B=2 x2 prompt=16 resp=8 bf16 retain  ETA 1m23s  elapsed "));
    assert_non_null(strstr(err, "\r\033[K[2/3] B=2 x2 prompt=16 resp=8 bf16 retain  warmup 1/1  ETA 1m23s  elapsed "));
    assert_non_null(strstr(err, "\r\033[K[2/3] B=2 x2 prompt=16 resp=8 bf16 retain  it 1/3  ETA 1m22s  elapsed "));
    assert_non_null(strstr(err, "\r\033[K[2/3] B=2 x2 prompt=16 resp=8 bf16 retain  it 3/3  ETA 1m20s  elapsed "));
    char last[128];
    snprintf(last, sizeof last, "  last %.1f tok/s", rf_stat(&f->run, 0, RF_F_TOKENS_PER_SECOND, "p50"));
    char *third = strstr(err, "\r\033[K[3/3] B=1 x3 prompt=file resp=8 bf16 release  it 2/3  ETA 1m21s  elapsed ");
    assert_non_null(third);
    assert_non_null(strstr(third, last)); /* case 0 finished ok before it */
    assert_null(strchr(err, '\n'));       /* redrawn, never scrolled */
    size_t len = strlen(err);             /* and cleared at the end */
    assert_true(len >= 4 && strcmp(err + len - 4, "\r\033[K") == 0);
    free(err);
}

/* A narrow terminal: every drawn line fits in $COLUMNS - 1 columns (the
 * last column would wrap), keeping the count and the iteration. */
static void test_progress_narrow(void **state) {
    fixture *f = *state;
    setenv("COLUMNS", "40", 1);
    drive(f, 1, NULL);
    char *err = rf_slurp(f->errpath);
    assert_non_null(err);
    int n = 0;
    for (char *line = strstr(err, "\r\033[K"); line; n++) {
        line += 4;
        char *next = strstr(line, "\r\033[K");
        size_t len = next ? (size_t)(next - line) : strlen(line);
        if (len > 39) fail_msg("a progress line of %zu columns: %.*s", len, (int)len, line);
        line = next;
    }
    assert_true(n > 10);
    assert_non_null(strstr(err, "\r\033[K[2/3] B=2 x2 prompt=  it 2/3  ETA 1m21s\r")); /* the description cut */
    setenv("COLUMNS", "12", 1); /* narrower than "[i/n]" and a part: still no wrap */
    drive(f, 1, NULL);
    free(err);
    err = rf_slurp(f->errpath);
    assert_non_null(strstr(err, "\r\033[K[2/3] B=2 x\r"));
    free(err);
}

static void test_progress_off(void **state) {
    fixture *f = *state;
    drive(f, 1, "progress=false");
    char *err = rf_slurp(f->errpath);
    assert_non_null(err);
    assert_string_equal(err, "");
    free(err);
    drive(f, 0, "progress=false");
    err = rf_slurp(f->errpath);
    assert_string_equal(err, "");
    free(err);
}

/* When stderr is not a terminal (a CI log): one plain line per finished
 * case, with its tokens/s, iterations, why they stopped and its cv. */
static void test_case_lines_when_not_tty(void **state) {
    fixture *f = *state;
    drive(f, 0, NULL);
    char *err = rf_slurp(f->errpath);
    assert_non_null(err);
    assert_null(strchr(err, '\r'));
    assert_null(strchr(err, '\033'));
    char want[1024];
    snprintf(want, sizeof want,
             "benchctl: [1/3] failed: B=8 x1 prompt=32 resp=8 fp32 release (out of memory)\n"
             "benchctl: [2/3] done: B=2 x2 prompt=16 resp=8 bf16 retain: %.1f tok/s, 3 iterations (stable), "
             "cv %.1f%% (unstable)\n"
             "benchctl: [3/3] done: B=1 x3 prompt=file resp=8 bf16 release: %.1f tok/s, 3 iterations "
             "(max_iterations), cv %.1f%% (unstable)\n",
             rf_stat(&f->run, 0, RF_F_TOKENS_PER_SECOND, "p50"), 100.0 * rf_stat(&f->run, 0, RF_F_TOTAL_MS, "cv"),
             rf_stat(&f->run, 2, RF_F_TOKENS_PER_SECOND, "p50"), 100.0 * rf_stat(&f->run, 2, RF_F_TOTAL_MS, "cv"));
    assert_string_equal(err, want);
    free(err);
}

/* verbose: a line as each case starts, too. */
static void test_verbose_plain_lines(void **state) {
    fixture *f = *state;
    drive(f, 0, "verbose=true");
    char *err = rf_slurp(f->errpath);
    assert_non_null(err);
    assert_null(strchr(err, '\r'));
    assert_non_null(strstr(err, "benchctl: [1/3] start: B=8 x1 prompt=32 resp=8 fp32 release  ETA --\n"
                                "benchctl: [1/3] failed: "));
    assert_non_null(strstr(err, "\nbenchctl: [2/3] start: B=2 x2 prompt=16 resp=8 bf16 retain  ETA 1m23s\n"
                                "benchctl: [2/3] done: "));
    assert_non_null(strstr(err, "\nbenchctl: [3/3] start: B=1 x3 prompt=file resp=8 bf16 release  ETA 1m23s\n"));
    free(err);
}

/* -q (the host's log level below warnings): no progress at all. A 2.0 host
 * cannot say, so progress stays on there. */
static void test_quiet(void **state) {
    fixture *f = *state;
    f->log_level = BC_LOG_ERROR;
    for (int tty = 0; tty < 2; tty++) {
        drive(f, tty, NULL);
        char *err = rf_slurp(f->errpath);
        assert_string_equal(err, "");
        free(err);
    }
    f->old_host = 1;
    drive(f, 0, NULL);
    char *err = rf_slurp(f->errpath);
    assert_non_null(strstr(err, "benchctl: [2/3] done: "));
    free(err);
}

/* The unstable thresholds are settings: with unstable_cv = 0.5 only the
 * case with 5% steal is marked. */
static void test_unstable_settings(void **state) {
    fixture *f = *state;
    drive(f, 0, "unstable_cv=0.5");
    char *text, *lines[32];
    assert_int_equal(read_tables(f, &text, lines, 32), N_LINES);
    char copy[512];
    char *words[24];
    split_words(lines[L_CASES1], copy, sizeof copy, words, 24);
    assert_null(strchr(words[W_CV], '!'));
    split_words(lines[L_CASES1 + 2], copy, sizeof copy, words, 24);
    assert_non_null(strchr(words[W_CV + 1], '!'));
    assert_non_null(strstr(lines[L_UNSTABLE], "above 50% or the CPU steal above 2%"));
    assert_non_null(strstr(lines[L_UNSTABLE + 1], "  case 2; rerun"));
    free(text);
    char *err = rf_slurp(f->errpath);
    assert_non_null(strstr(err, "3 iterations (stable), cv 20.7%\n"));
    free(err);
}

/* An adaptive rule and a selection: the title says both. */
static void test_adaptive_title(void **state) {
    fixture *f = *state;
    f->run.run.min_iterations = 6;
    f->run.run.max_iterations = 50;
    f->run.run.target_rel_ci = 0.02;
    f->run.run.max_seconds_per_case = 90;
    f->run.run.n_matrix_cases = 16;
    f->run.run.selected_cases = "0-2";
    drive(f, 0, NULL);
    char *text, *lines[32];
    assert_int_equal(read_tables(f, &text, lines, 33), N_LINES + 1);
    assert_non_null(strstr(lines[L_TITLE], ", 1 warmup + 6 to 50 measured iterations (until the median total_ms is "
                                           "within +-2%), at most 90 s per case"));
    assert_string_equal(lines[L_TITLE + 1], "selected: 3 of 16 cases (--cases 0-2)");
    free(text);
}

/* A 2.0 host: no stop reasons, loads or steal (its case reports end before
 * them): dashes, and cv marks from the cv alone. */
static void test_host_2_0(void **state) {
    fixture *f = *state;
    rf_run_init(&f->run, RF_HOST_2_0);
    drive(f, 0, NULL);
    char *text, *lines[32];
    assert_int_equal(read_tables(f, &text, lines, 32), N_LINES);
    assert_non_null(strstr(lines[L_TITLE], ", 1 warmup + 3 measured iterations per case"));
    for (uint32_t c = 0; c < RF_N_CASES; c++) {
        char copy[512];
        char *words[24];
        int shift = c == 2;
        split_words(lines[L_CASES1 + c], copy, sizeof copy, words, 24);
        assert_string_equal(words[W_STOP + shift], "-");
        split_words(lines[L_CASES2 + c], copy, sizeof copy, words, 24);
        assert_string_equal(words[8], "-");
        assert_string_equal(words[9], "-");
    }
    free(text);
}

/* Cases taken from a resumed run's journal get only case_finished (no
 * case_started): each plain line still counts "[k/n]" (k finished so far),
 * says "resumed" instead of "done", and the table marks their status
 * "ok*" with a legend line. Cases 0 and 2 are taken; case 1 runs first. */
static void test_resumed_lines_and_mark(void **state) {
    fixture *f = *state;
    rf_report(&f->run, 0)->resumed = 1;
    rf_report(&f->run, 2)->resumed = 1;
    drive(f, 0, NULL);
    char *err = rf_slurp(f->errpath);
    assert_non_null(err);
    assert_non_null(strstr(err, "benchctl: [1/3] failed: B=8 x1"));
    assert_non_null(strstr(err, "\nbenchctl: [2/3] resumed: B=2 x2 prompt=16 resp=8 bf16 retain: "));
    assert_non_null(strstr(err, "\nbenchctl: [3/3] resumed: B=1 x3 prompt=file"));
    assert_null(strstr(err, " done: "));
    free(err);
    char *text, *lines[64];
    int n = read_tables(f, &text, lines, 64);
    assert_true(n > L_CASES1 + 2);
    char copy[512], *words[32];
    split_words(lines[L_CASES1 + 0], copy, sizeof copy, words, 32);
    assert_string_equal(words[W_STATUS], "ok*");
    split_words(lines[L_CASES1 + 1], copy, sizeof copy, words, 32);
    assert_string_equal(words[W_STATUS], "failed");
    int legend = 0;
    for (int i = 0; i < n; i++)
        legend += strstr(lines[i], "ok*: 2 cases taken from the journal of the resumed run") != NULL;
    assert_int_equal(legend, 1);
    free(text);
}

/* Every case taken from the journal: before any case_started the count
 * comes from the matrix (no selection), never "[1/0]". */
static void test_resumed_first(void **state) {
    fixture *f = *state;
    for (uint32_t i = 0; i < RF_N_CASES; i++) rf_report(&f->run, i)->resumed = 1;
    bc_case_report *failed = rf_report(&f->run, 1);
    failed->status = BC_CASE_OK; /* a journal holds ok cases only */
    failed->error_code = BC_OK;
    failed->message = "";
    drive(f, 0, NULL);
    char *err = rf_slurp(f->errpath);
    assert_non_null(err);
    assert_true(strncmp(err, "benchctl: [1/3] resumed: B=8 x1", 31) == 0);
    assert_non_null(strstr(err, "\nbenchctl: [3/3] resumed: "));
    assert_null(strstr(err, "/0]"));
    free(err);
}

/* A backend name, model, hostname, setting value or message read from a
 * file (report, compare) or sent by a worker may hold terminal controls:
 * none reaches the tables or the per-case lines; each shows as \xNN. */
#define HOSTILE "opt\x1b]0;PWNED\x07\x1b[2J\xc2\x9b\xff"
static void test_controls_escaped(void **state) {
    fixture *f = *state;
    f->run.backend.model = HOSTILE;
    f->run.run.backend_name = "opt";
    f->run.cases[0].backend = "opt";
    f->run.cases[1].backend = HOSTILE;
    f->run.cases[2].backend = "opt";
    rf_report(&f->run, 1)->message = "worker said \x1b[2J" HOSTILE;
    drive(f, 0, NULL);
    const char *paths[2] = {f->path, f->errpath};
    for (int k = 0; k < 2; k++) {
        char *text = rf_slurp(paths[k]);
        assert_non_null(text);
        for (const unsigned char *p = (const unsigned char *)text; *p; p++)
            if (*p < 0x20 && *p != '\n') fail_msg("%s: control byte 0x%02x at %td", paths[k], *p, (const char *)p - text);
        assert_null(strstr(text, "\xc2\x9b"));
        assert_null(strstr(text, "\xff"));
        free(text);
    }
    char *table = rf_slurp(f->path);
    assert_non_null(strstr(table, "opt\\x1b]0;PWNED\\x07\\x1b[2J\\xc2\\x9b\\xff")); /* the title's model */
    assert_non_null(strstr(table, "worker said \\x1b[2J"));
    free(table);
    char *err = rf_slurp(f->errpath);
    assert_non_null(strstr(err, "[1/3] failed: B=8 x1 prompt=32 resp=8 fp32 release opt\\x1b]0;PWNED\\x07"));
    free(err);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_tables, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_backend, setup, teardown),
        cmocka_unit_test_setup_teardown(test_check_settings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_progress_on_tty, setup, teardown),
        cmocka_unit_test_setup_teardown(test_progress_narrow, setup, teardown),
        cmocka_unit_test_setup_teardown(test_progress_off, setup, teardown),
        cmocka_unit_test_setup_teardown(test_case_lines_when_not_tty, setup, teardown),
        cmocka_unit_test_setup_teardown(test_verbose_plain_lines, setup, teardown),
        cmocka_unit_test_setup_teardown(test_quiet, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unstable_settings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_adaptive_title, setup, teardown),
        cmocka_unit_test_setup_teardown(test_host_2_0, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resumed_lines_and_mark, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resumed_first, setup, teardown),
        cmocka_unit_test_setup_teardown(test_controls_escaped, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
