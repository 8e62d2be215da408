/* test_markdown.c: the markdown reporter plugin (reporters/markdown), loaded
 * with dlopen and driven through its hooks as the host drives them; the
 * table is split back into cells and compared with the hand-built run
 * report (reporter_fixture.h): one line per case in requested order,
 * tokens/s as the mean and stddev the host computed, the median total_ms,
 * a failed case named, a prompts file with its width. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "bc_test_assert.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reporter_fixture.h"

#define MAX_LINES 8
#define MAX_CELLS 32

/* The table's cells: line l, cell c (leading and trailing spaces cut). */
typedef struct md_table {
    int n_lines;
    int n_cells[MAX_LINES];
    char cells[MAX_LINES][MAX_CELLS][160];
} md_table;

/* Splits "| a | b |" lines; an escaped "\|" stays in its cell. 0 on success. */
static int parse_md(const char *s, md_table *t) {
    memset(t, 0, sizeof *t);
    while (*s) {
        if (t->n_lines >= MAX_LINES || *s != '|') return -1;
        s++;
        int c = 0;
        while (*s && *s != '\n') {
            char buf[160];
            size_t n = 0;
            while (*s && *s != '\n' && *s != '|') {
                if (*s == '\\' && s[1] == '|') s++;
                if (n + 1 < sizeof buf) buf[n++] = *s;
                s++;
            }
            if (*s != '|') return -1; /* every line ends with "|" */
            s++;
            buf[n] = '\0';
            char *b = buf;
            while (*b == ' ') b++;
            size_t len = strlen(b);
            while (len && b[len - 1] == ' ') b[--len] = '\0';
            if (c >= MAX_CELLS) return -1;
            snprintf(t->cells[t->n_lines][c++], sizeof t->cells[0][0], "%s", b);
        }
        t->n_cells[t->n_lines++] = c;
        if (*s == '\n') s++;
    }
    return 0;
}

static const char *md_at(const md_table *t, int line, const char *name) {
    for (int c = 0; c < t->n_cells[0]; c++)
        if (strcmp(t->cells[0][c], name) == 0) return t->cells[line][c];
    fail_msg("no column %s", name);
    return NULL;
}

typedef struct fixture {
    char dir[512];
    char path[600];
    rf_run run;
    bc_host host;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    if (!f || rf_make_dir(f->dir, "test_markdown") != 0) {
        free(f);
        return -1;
    }
    rf_run_init(&f->run, 0);
    f->host = rf_host(0);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    rf_remove_tree(f->dir);
    free(f);
    return 0;
}

static char *run_markdown(fixture *f) {
    snprintf(f->path, sizeof f->path, "%s/out.md", f->dir);
    char setting[700];
    snprintf(setting, sizeof setting, "path=%s", f->path);
    const char *overrides[1] = {setting};
    rf_plugin p;
    assert_int_equal(rf_load(&p, "markdown", overrides, 1), 0);
    bc_error err = {0};
    bc_status st = rf_drive(&p, &f->host, &f->run, &err);
    if (st != BC_OK) fail_msg("markdown: %s", err.message);
    rf_unload(&p);
    char *text = rf_slurp(f->path);
    assert_non_null(text);
    return text;
}

/* What "%.2f ± %.2f" of case i's tokens_per_second mean and stddev reads. */
static void expect_rate(const fixture *f, uint32_t i, char *buf, size_t cap) {
    double mean = rf_stat(&f->run, i, RF_F_TOKENS_PER_SECOND, "mean");
    double sd = rf_stat(&f->run, i, RF_F_TOKENS_PER_SECOND, "stddev");
    assert_true(isfinite(mean) && isfinite(sd) && sd > 0); /* the fixture's iterations differ */
    snprintf(buf, cap, "%.2f ± %.2f", mean, sd);
}

static void test_table(void **state) {
    fixture *f = *state;
    char *text = run_markdown(f);
    md_table t;
    assert_int_equal(parse_md(text, &t), 0);
    assert_int_equal(t.n_lines, 2 + RF_N_CASES); /* header, alignment, one line per case */
    for (int l = 1; l < t.n_lines; l++) assert_int_equal(t.n_cells[l], t.n_cells[0]);
    assert_string_equal(md_at(&t, 1, "tokens/s"), "---:");
    assert_string_equal(md_at(&t, 1, "model"), "---");
    char want[96];
    /* requested order: case 0, 1, 2 */
    assert_string_equal(md_at(&t, 2, "model"), "facebook/opt-125m (synthetic)");
    assert_string_equal(md_at(&t, 2, "precision"), "bf16");
    assert_string_equal(md_at(&t, 2, "cache"), "retain");
    assert_string_equal(md_at(&t, 2, "batch"), "2");
    assert_string_equal(md_at(&t, 2, "samples"), "2");
    assert_string_equal(md_at(&t, 2, "prompt"), "16");
    assert_string_equal(md_at(&t, 2, "response"), "8");
    assert_string_equal(md_at(&t, 2, "n"), "3");
    expect_rate(f, 0, want, sizeof want);
    assert_string_equal(md_at(&t, 2, "tokens/s"), want);
    snprintf(want, sizeof want, "%.2f", rf_stat(&f->run, 0, RF_F_TOTAL_MS, "p50"));
    assert_string_equal(md_at(&t, 2, "total_ms p50"), want);
    /* the failed case measured nothing: named, no number */
    snprintf(want, sizeof want, "failed: %s", bc_status_name(BC_ERR_NOMEM));
    assert_string_equal(md_at(&t, 3, "tokens/s"), want);
    assert_string_equal(md_at(&t, 3, "total_ms p50"), "-");
    assert_string_equal(md_at(&t, 3, "n"), "0");
    /* the prompts file, with the width it ran */
    assert_string_equal(md_at(&t, 4, "prompt"), "file (37)");
    expect_rate(f, 2, want, sizeof want);
    assert_string_equal(md_at(&t, 4, "tokens/s"), want);
    free(text);
}

/* A model name from a run file or a peer with terminal controls, a "|" and
 * a newline: the controls as \xNN (no ESC reaches a terminal), the "|"
 * escaped, the newline a space. */
static void test_controls_escaped(void **state) {
    fixture *f = *state;
    f->run.backend.model = "opt\x1b]0;PWNED\x07|x\ny";
    char *text = run_markdown(f);
    assert_null(strchr(text, 0x1b));
    assert_null(strchr(text, 0x07));
    if (!strstr(text, "| opt\\x1b]0;PWNED\\x07\\|x y |")) fail_msg("escaped model cell missing in:\n%s", text);
    free(text);
}

/* A host without "stddev" gives the mean alone, never another statistic. */
static void test_few_stats(void **state) {
    fixture *f = *state;
    rf_run_init(&f->run, RF_FEW_STATS);
    char *text = run_markdown(f);
    md_table t;
    assert_int_equal(parse_md(text, &t), 0);
    char want[64];
    snprintf(want, sizeof want, "%.2f", rf_stat(&f->run, 0, RF_F_TOKENS_PER_SECOND, "mean"));
    assert_string_equal(md_at(&t, 2, "tokens/s"), want);
    assert_string_equal(md_at(&t, 2, "total_ms p50"), "-"); /* no p50 either */
    free(text);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_few_stats, setup, teardown),
        cmocka_unit_test_setup_teardown(test_controls_escaped, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
