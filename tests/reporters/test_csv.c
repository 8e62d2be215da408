/* test_csv.c: the csv reporter plugin (reporters/csv), loaded with dlopen
 * and driven through its ops; the file is read back with a small RFC 4180
 * parser and compared with the hand-built run report (reporter_fixture.h). */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reporter_fixture.h"

#define MAX_ROWS 8
#define MAX_COLS 128

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
    assert_true(*s && *end == '\0');
    if (got != expect) fprintf(stderr, "%s row %d: %.17g != %.17g\n", name, row, got, expect);
    assert_true(got == expect);
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

static void check_table(fixture *f, const char *text) {
    table t;
    assert_int_equal(parse_csv(text, &t), 0);
    assert_int_equal(t.quoted_bare_quote, 0);
    assert_int_equal(t.n_rows, 1 + RF_N_CASES);

    /* The documented header, exactly. */
    const char *identity[] = {"index", "precision", "dtype", "cache_policy", "release_inference_cache",
                              "batch_size", "samples_per_prompt", "prompt_length", "requested_response_length",
                              "returned_response_length", "status", "n_iterations"};
    const char *stats[] = {"mean", "p50", "p95", "min", "max", "stddev"};
    int n_identity = (int)(sizeof identity / sizeof identity[0]);
    int expect_cols = n_identity + BC_FIELD_COUNT_V1_0 * 6 + 3;
    for (int r = 0; r < t.n_rows; r++) assert_int_equal(t.n_cols[r], expect_cols);
    int c = 0;
    for (int i = 0; i < n_identity; i++) assert_string_equal(t.cells[0][c++], identity[i]);
    for (int fi = 0; fi < BC_FIELD_COUNT_V1_0; fi++) {
        for (int s = 0; s < 6; s++) {
            char name[128];
            snprintf(name, sizeof name, "%s_%s", rf_field_names[fi], stats[s]);
            assert_string_equal(t.cells[0][c++], name);
        }
    }
    assert_string_equal(t.cells[0][c++], "peak_memory_mb");
    assert_string_equal(t.cells[0][c++], "peak_rss_mb");
    assert_string_equal(t.cells[0][c++], "message");

    /* Rows in requested order, every statistic exact or empty. */
    for (int i = 0; i < RF_N_CASES; i++) {
        int row = 1 + i;
        const bc_case_report *cr = &f->run.reports[i];
        assert_cell(&t, row, "index", i);
        assert_string_equal(at(&t, row, "precision"), cr->c->precision);
        assert_cell(&t, row, "batch_size", cr->c->batch_size);
        assert_cell(&t, row, "requested_response_length", cr->c->response_length);
        assert_cell(&t, row, "n_iterations", cr->n_iterations);
        for (int fi = 0; fi < BC_FIELD_COUNT_V1_0; fi++) {
            const bc_stats *s = &cr->stats[fi];
            const double v[6] = {s->mean, s->p50, s->p95, s->min, s->max, s->stddev};
            for (int k = 0; k < 6; k++) {
                char name[128];
                snprintf(name, sizeof name, "%s_%s", rf_field_names[fi], stats[k]);
                assert_cell(&t, row, name, v[k]);
            }
        }
        assert_cell(&t, row, "peak_memory_mb", cr->peak_memory_mb);
    }
    assert_string_equal(at(&t, 1, "status"), "ok");
    assert_string_equal(at(&t, 1, "dtype"), "bfloat16");
    assert_string_equal(at(&t, 1, "release_inference_cache"), "false");
    assert_cell(&t, 1, "returned_response_length", 8);
    assert_cell(&t, 1, "peak_rss_mb", 50.0);
    assert_string_equal(at(&t, 1, "message"), "");
    assert_string_equal(at(&t, 1, "generation_overhead_ms_mean"), ""); /* NaN */
    assert_string_equal(at(&t, 2, "status"), "failed");
    assert_string_equal(at(&t, 2, "cache_policy"), "release");
    assert_string_equal(at(&t, 2, "returned_response_length"), "");
    assert_string_equal(at(&t, 2, "peak_memory_mb"), "");
    assert_string_equal(at(&t, 2, "peak_rss_mb"), "");
    assert_string_equal(at(&t, 2, "total_ms_mean"), "");
    assert_string_equal(at(&t, 2, "message"), RF_MESSAGE); /* comma and quotes survive */
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gzip, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
