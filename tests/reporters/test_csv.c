/* test_csv.c: the csv reporter plugin (reporters/csv), loaded with dlopen
 * and driven through its hooks as the host drives them; the file is read
 * back with a small RFC 4180 parser and compared with the hand-built run
 * report (reporter_fixture.h), whose arrays are wider than this header's
 * structs, as a newer host's would be. */
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

#define MAX_ROWS 8
#define MAX_COLS 256

/* A parsed CSV: cells[r][c] are malloc'ed strings. */
typedef struct table {
    int n_rows;
    int n_cols[MAX_ROWS];
    char *cells[MAX_ROWS][MAX_COLS];
    int quoted_bare_quote; /* 1 if a quote appeared inside an unquoted cell */
} table;

/* Parses RFC 4180 text (CRLF or LF line ends). Returns 0 on success. */
static int parse_csv(const char *s, table *t) {
    memset(t, 0, sizeof *t);
    char cell[4096];
    size_t n = 0;
    int row = 0, col = 0;
    while (*s) {
        n = 0;
        if (*s == '"') { /* quoted cell */
            s++;
            for (;;) {
                if (*s == '\0') return -1; /* unterminated */
                if (*s == '"') {
                    if (s[1] == '"') {
                        cell[n++] = '"';
                        s += 2;
                        continue;
                    }
                    s++;
                    break;
                }
                cell[n++] = *s++;
                if (n >= sizeof cell - 1) return -1;
            }
        } else {
            while (*s && *s != ',' && *s != '\r' && *s != '\n') {
                if (*s == '"') t->quoted_bare_quote = 1;
                cell[n++] = *s++;
                if (n >= sizeof cell - 1) return -1;
            }
        }
        cell[n] = '\0';
        if (row >= MAX_ROWS || col >= MAX_COLS) return -1;
        t->cells[row][col] = strdup(cell);
        col++;
        if (*s == ',') {
            s++;
        } else if (*s == '\r' || *s == '\n') {
            if (*s == '\r') {
                if (s[1] != '\n') return -1;
                s++;
            }
            s++;
            t->n_cols[row] = col;
            row++;
            col = 0;
        } else if (*s != '\0') {
            return -1; /* junk after a closing quote */
        }
    }
    if (col > 0) { /* last row without a line end */
        t->n_cols[row] = col;
        row++;
    }
    t->n_rows = row;
    return 0;
}

static void free_table(table *t) {
    for (int r = 0; r < MAX_ROWS; r++)
        for (int c = 0; c < MAX_COLS; c++) free(t->cells[r][c]);
}

static int column(const table *t, const char *name) {
    for (int c = 0; c < t->n_cols[0]; c++)
        if (strcmp(t->cells[0][c], name) == 0) return c;
    fprintf(stderr, "no column %s\n", name);
    return -1;
}

static const char *at(const table *t, int row, const char *name) {
    int c = column(t, name);
    assert_true(c >= 0);
    return t->cells[row][c];
}

/* An empty cell for NaN, else the exact value. */
static void assert_cell(const table *t, int row, const char *name, double expect) {
    const char *s = at(t, row, name);
    if (isnan(expect)) {
        if (*s) fprintf(stderr, "%s row %d: \"%s\", want empty\n", name, row, s);
        assert_string_equal(s, "");
        return;
    }
    char *end;
    double got = strtod(s, &end);
    if (!*s || *end) fail_msg("%s row %d: \"%s\" is not a number", name, row, s);
    assert_double_close(got, expect, 0.0); /* exact: numbers must round-trip */
}

typedef struct fixture {
    char dir[512];
    char path[600];
    rf_run run;
    bc_host host;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    if (!f || rf_make_dir(f->dir, "test_csv") != 0) {
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

static void run_csv(fixture *f, const char *name) {
    snprintf(f->path, sizeof f->path, "%s/%s", f->dir, name);
    char setting[700];
    snprintf(setting, sizeof setting, "path=%s", f->path);
    const char *overrides[1] = {setting};
    rf_plugin p;
    assert_int_equal(rf_load(&p, "csv", overrides, 1), 0);
    bc_error err = {0};
    bc_status st = rf_drive(&p, &f->host, &f->run, &err);
    if (st != BC_OK) fprintf(stderr, "csv reporter: %s\n", err.message);
    assert_int_equal(st, BC_OK);
    rf_unload(&p);
}

/* Runs the csv reporter and parses its file into t. */
static void run_and_parse(fixture *f, const char *name, table *t) {
    run_csv(f, name);
    char *text = rf_slurp(f->path);
    assert_non_null(text);
    assert_int_equal(parse_csv(text, t), 0);
    free(text);
}

static const char *const identity[] = {
    "index", "precision", "dtype", "cache_policy", "release_inference_cache",
    "batch_size", "samples_per_prompt", "prompt_length", "requested_response_length", "returned_response_length",
    "prompt_width_tokens", "prompt_min_tokens", "prompt_max_tokens",
    "status", "error_code", "rebuilt", "n_iterations"};
#define N_IDENTITY ((int)(sizeof identity / sizeof identity[0]))

/* The one field no case of the fixture measured (reporter_fixture.h:
 * generation_overhead_ms is NaN in every iteration): it has no columns. */
static int fixture_measured(uint32_t field) { return field != RF_F_GENERATION_OVERHEAD_MS; }

/* The documented header, exactly: identity columns, then F_S for every
 * field F some case measured and statistic S of the run's tables, then the
 * memory columns and the message. */
static void check_header(const table *t, const bc_run_report *run) {
    int expect_cols = N_IDENTITY + (int)((run->n_fields - 1) * run->n_stats) + 10;
    for (int r = 0; r < t->n_rows; r++) assert_int_equal(t->n_cols[r], expect_cols);
    int c = 0;
    for (int i = 0; i < N_IDENTITY; i++) assert_string_equal(t->cells[0][c++], identity[i]);
    for (uint32_t fi = 0; fi < run->n_fields; fi++) {
        for (uint32_t s = 0; fixture_measured(fi) && s < run->n_stats; s++) {
            char name[128];
            snprintf(name, sizeof name, "%s_%s", run->field_names[fi], run->stat_names[s]);
            assert_string_equal(t->cells[0][c++], name);
        }
    }
    assert_string_equal(t->cells[0][c++], "peak_memory_mb");
    assert_string_equal(t->cells[0][c++], "held_between_rollouts_mib");
    assert_string_equal(t->cells[0][c++], "peak_rss_mb");
    assert_string_equal(t->cells[0][c++], "stop_reason");
    assert_string_equal(t->cells[0][c++], "total_ms_rel_ci");
    assert_string_equal(t->cells[0][c++], "load_avg_start");
    assert_string_equal(t->cells[0][c++], "load_avg_end");
    assert_string_equal(t->cells[0][c++], "cpu_steal_share");
    assert_string_equal(t->cells[0][c++], "message");
    assert_string_equal(t->cells[0][c++], "backend");
}

/* Every statistic cell of every case: exact, or empty when NaN. */
static void check_stats(const table *t, fixture *f) {
    const bc_run_report *run = &f->run.run;
    for (uint32_t i = 0; i < RF_N_CASES; i++)
        for (uint32_t fi = 0; fi < run->n_fields; fi++)
            for (uint32_t s = 0; fixture_measured(fi) && s < run->n_stats; s++) {
                char name[128];
                snprintf(name, sizeof name, "%s_%s", run->field_names[fi], run->stat_names[s]);
                assert_cell(t, (int)i + 1, name, rf_stat(&f->run, i, (int)fi, run->stat_names[s]));
            }
}

static void check_table(fixture *f, const char *text) {
    table t;
    assert_int_equal(parse_csv(text, &t), 0);
    assert_int_equal(t.quoted_bare_quote, 0);
    assert_int_equal(t.n_rows, 1 + RF_N_CASES);
    check_header(&t, &f->run.run);
    check_stats(&t, f);

    /* Rows in requested order. */
    for (int i = 0; i < RF_N_CASES; i++) {
        int row = 1 + i;
        const bc_case_report *cr = rf_report(&f->run, (uint32_t)i);
        assert_cell(&t, row, "index", i);
        assert_string_equal(at(&t, row, "precision"), cr->c->precision);
        assert_cell(&t, row, "batch_size", cr->c->batch_size);
        assert_cell(&t, row, "prompt_length", cr->c->prompt_length);
        assert_cell(&t, row, "requested_response_length", cr->c->response_length);
        assert_cell(&t, row, "n_iterations", cr->n_iterations);
        assert_cell(&t, row, "peak_memory_mb", cr->peak_memory_mib);
    }
    assert_string_equal(at(&t, 1, "status"), "ok");
    assert_string_equal(at(&t, 1, "error_code"), "");
    assert_string_equal(at(&t, 1, "rebuilt"), "true");
    assert_string_equal(at(&t, 1, "dtype"), "bfloat16");
    assert_string_equal(at(&t, 1, "release_inference_cache"), "false");
    assert_cell(&t, 1, "returned_response_length", 8);
    assert_cell(&t, 1, "prompt_width_tokens", 16);
    assert_cell(&t, 1, "held_between_rollouts_mib", 1.5);
    assert_cell(&t, 1, "peak_rss_mb", 50.0);
    assert_string_equal(at(&t, 1, "message"), "");
    /* measured by no case: no columns (the CSV of a run has the fields its backends fill) */
    for (int c = 0; c < t.n_cols[0]; c++) assert_null(strstr(t.cells[0][c], "generation_overhead_ms"));
    assert_string_equal(at(&t, 2, "status"), "failed");
    assert_string_equal(at(&t, 2, "error_code"), bc_status_name(BC_ERR_NOMEM));
    assert_string_equal(at(&t, 2, "cache_policy"), "release");
    assert_string_equal(at(&t, 2, "returned_response_length"), "");
    assert_string_equal(at(&t, 2, "prompt_width_tokens"), "");
    assert_string_equal(at(&t, 2, "prompt_min_tokens"), "");
    assert_string_equal(at(&t, 2, "peak_memory_mb"), "");
    assert_string_equal(at(&t, 2, "held_between_rollouts_mib"), "");
    assert_string_equal(at(&t, 2, "peak_rss_mb"), "");
    assert_string_equal(at(&t, 2, "total_ms_mean"), "");
    assert_string_equal(at(&t, 2, "message"), RF_MESSAGE); /* comma and quotes survive */
    /* The prompts-file case: what ran, and what a release policy holds. */
    assert_cell(&t, 3, "prompt_length", 0);
    assert_cell(&t, 3, "prompt_width_tokens", 37);
    assert_cell(&t, 3, "prompt_min_tokens", 12);
    assert_cell(&t, 3, "prompt_max_tokens", 37);
    assert_cell(&t, 3, "held_between_rollouts_mib", 1.0);
    /* ABI 2.1: why each case stopped, its interval, the machine's load */
    assert_string_equal(at(&t, 1, "stop_reason"), "stable");
    assert_cell(&t, 1, "total_ms_rel_ci", 0.0125);
    assert_cell(&t, 1, "load_avg_start", 0.5);
    assert_cell(&t, 1, "load_avg_end", 0.75);
    assert_cell(&t, 1, "cpu_steal_share", 0.0);
    assert_string_equal(at(&t, 2, "stop_reason"), "failed");
    assert_string_equal(at(&t, 2, "total_ms_rel_ci"), "");
    assert_cell(&t, 2, "load_avg_end", 1.5);
    assert_string_equal(at(&t, 2, "cpu_steal_share"), "");
    assert_string_equal(at(&t, 3, "stop_reason"), "max_iterations");
    assert_string_equal(at(&t, 3, "load_avg_start"), "");
    assert_cell(&t, 3, "cpu_steal_share", 0.05);
    assert_string_equal(at(&t, 3, "rebuilt"), "false");
    assert_string_equal(at(&t, 3, "release_inference_cache"), "true");
    free_table(&t);
}

static void test_table(void **state) {
    fixture *f = *state;
    run_csv(f, "out.csv");
    char *text = rf_slurp(f->path);
    assert_non_null(text);
    /* The message is quoted, with its quotes doubled. */
    assert_non_null(strstr(text, "\"generate: backend \"\"opt\"\" failed, out of memory (needed 12 GiB)\""));
    check_table(f, text);
    free(text);
}

/* A statistic the host adds ("p42") gets a column per field, with no
 * change in the reporter. */
static void test_extra_stat(void **state) {
    fixture *f = *state;
    rf_run_init(&f->run, RF_EXTRA_STAT);
    table t;
    run_and_parse(f, "p42.csv", &t);
    check_header(&t, &f->run.run);
    assert_cell(&t, 1, "total_ms_p42", rf_stat(&f->run, 0, RF_F_TOTAL_MS, "p42"));
    assert_cell(&t, 3, "decode_tokens_per_second_p42", rf_stat(&f->run, 2, RF_F_DECODE_TOKENS_PER_SECOND, "p42"));
    check_stats(&t, f);
    free_table(&t);
}

/* An older host with fewer fields and statistics: the columns follow its
 * tables. */
static void test_missing_names(void **state) {
    fixture *f = *state;
    rf_run_init(&f->run, RF_OLD_FIELDS | RF_FEW_STATS);
    table t;
    run_and_parse(f, "old.csv", &t);
    check_header(&t, &f->run.run);
    assert_int_equal(t.n_cols[0], N_IDENTITY + (RF_N_FIELDS_OLD - 1) * 3 + 10);
    check_stats(&t, f);
    free_table(&t);
}

/* A 2.0 host's case reports end before the 2.1 fields: same columns, empty. */
static void test_host_2_0(void **state) {
    fixture *f = *state;
    rf_run_init(&f->run, RF_HOST_2_0);
    table t;
    run_and_parse(f, "host20.csv", &t);
    check_header(&t, &f->run.run);
    check_stats(&t, f);
    const char *added[] = {"stop_reason", "total_ms_rel_ci", "load_avg_start", "load_avg_end", "cpu_steal_share"};
    for (int row = 1; row <= RF_N_CASES; row++)
        for (size_t i = 0; i < sizeof added / sizeof added[0]; i++) assert_string_equal(at(&t, row, added[i]), "");
    assert_cell(&t, 1, "n_iterations", RF_N_ITER);
    free_table(&t);
}

static void test_gzip(void **state) {
    fixture *f = *state;
    run_csv(f, "out.csv.gz");
    /* gzopen also reads plain files, so check the gzip magic first. */
    char *raw = rf_slurp(f->path);
    assert_non_null(raw);
    assert_int_equal((unsigned char)raw[0], 0x1f);
    assert_int_equal((unsigned char)raw[1], 0x8b);
    free(raw);
    char *text = rf_slurp_gz(f->path);
    assert_non_null(text);
    check_table(f, text);
    free(text);
    assert_int_equal(rf_count_entries(f->dir), 1);
}

/* check_settings refuses a path that cannot be created, naming it, before
 * anything is opened or written. */
static void test_check_settings(void **state) {
    fixture *f = *state;
    const char *overrides[1] = {"path=/dev/null/out.csv"};
    rf_plugin p;
    assert_int_equal(rf_load(&p, "csv", overrides, 1), 0);
    assert_non_null(p.desc->check_settings);
    bc_error err = {0};
    assert_int_equal(rf_drive(&p, &f->host, &f->run, &err), BC_ERR_IO);
    assert_int_equal(err.code, BC_ERR_IO);
    assert_true(strncmp(err.message, "/dev/null/out.csv: ", 19) == 0); /* the host's message names the path */
    rf_unload(&p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_extra_stat, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_host_2_0, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gzip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_check_settings, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
