/* test_console.c: the console reporter plugin (reporters/console), loaded
 * with dlopen: the aligned table (written to a file through its path
 * setting), the progress line on a "terminal", and silence when stderr is
 * not one. stderr is captured by pointing fd 2 at a file. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reporter_fixture.h"

typedef struct fixture {
    char dir[512];
    char path[600];   /* the table */
    char errpath[600]; /* captured stderr */
    rf_run run;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    if (!f || rf_make_dir(f->dir, "test_console") != 0) {
        free(f);
        return -1;
    }
    rf_run_init(&f->run, 0);
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

/* Drives the console reporter with stderr captured into f->errpath. */
static void drive(fixture *f, int tty, const char *extra) {
    char setting[700];
    snprintf(setting, sizeof setting, "path=%s", f->path);
    const char *overrides[2] = {setting, extra};
    rf_plugin p;
    assert_int_equal(rf_load(&p, "console", overrides, extra ? 2 : 1), 0);
    bc_host host = rf_host(tty);

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

/* Splits text into lines in place (up to max); returns the count. */
static int split_lines(char *text, char **lines, int max) {
    int n = 0;
    char *save = NULL;
    for (char *l = strtok_r(text, "\n", &save); l && n < max; l = strtok_r(NULL, "\n", &save)) lines[n++] = l;
    return n;
}

static void test_table(void **state) {
    fixture *f = *state;
    drive(f, 0, NULL);
    char *text = rf_slurp(f->path);
    assert_non_null(text);
    char *lines[32];
    int n = split_lines(text, lines, 32);
    /* title, header, rule, 2 cases, legend, 1 failure message */
    assert_int_equal(n, 7);
    assert_non_null(strstr(lines[0], "facebook/opt-125m (synthetic)"));
    assert_non_null(strstr(lines[1], "total_ms"));
    assert_non_null(strstr(lines[1], "tok/s"));
    assert_non_null(strstr(lines[1], "peak_MB"));
    assert_int_equal(strspn(lines[2], "-"), strlen(lines[2]));
    /* Aligned: header, rule and rows are the same width. */
    size_t w = strlen(lines[1]);
    assert_int_equal(strlen(lines[2]), w);
    assert_int_equal(strlen(lines[3]), w);
    assert_int_equal(strlen(lines[4]), w);

    /* Requested order; case 0's numbers as the stats say. */
    const bc_stats *total = &f->run.reports[0].stats[BC_FIELD_TOTAL_MS];
    const bc_stats *tps = &f->run.reports[0].stats[BC_FIELD_TOKENS_PER_SECOND];
    char expect[64];
    assert_true(strncmp(lines[3] + strspn(lines[3], " "), "0 ", 2) == 0);
    assert_non_null(strstr(lines[3], " bf16 "));
    assert_non_null(strstr(lines[3], " retain "));
    assert_non_null(strstr(lines[3], " ok "));
    snprintf(expect, sizeof expect, " %.2f  ", total->mean);
    assert_non_null(strstr(lines[3], expect));
    snprintf(expect, sizeof expect, " %.2f  ", total->p95);
    assert_non_null(strstr(lines[3], expect));
    snprintf(expect, sizeof expect, " %.1f  ", tps->mean);
    assert_non_null(strstr(lines[3], expect));
    assert_non_null(strstr(lines[3], " 12.5"));
    /* Case 1 failed: status, dashes for what was not measured. */
    assert_true(strncmp(lines[4] + strspn(lines[4], " "), "1 ", 2) == 0);
    assert_non_null(strstr(lines[4], " failed "));
    assert_non_null(strstr(lines[4], " -  "));
    assert_int_equal(lines[4][strlen(lines[4]) - 1], '-'); /* peak_MB unknown */
    assert_non_null(strstr(lines[5], "1 ok, 1 failed"));
    assert_non_null(strstr(lines[6], "case 1 failed: " RF_MESSAGE));
    free(text);
}

static void test_progress_on_tty(void **state) {
    fixture *f = *state;
    drive(f, 1, NULL);
    char *err = rf_slurp(f->errpath);
    assert_non_null(err);
    /* Execution order: case 1 (ETA unknown yet), then case 0 (ETA 83 s). */
    assert_non_null(strstr(err, "\r\033[K[1/2] B=8 x1 prompt=32 resp=8 fp32 release  ETA --"));
    assert_non_null(strstr(err, "\r\033[K[2/2] B=2 x2 prompt=16 resp=8 bf16 retain  ETA 1m23s"));
    assert_null(strchr(err, '\n'));              /* redrawn, never scrolled */
    size_t len = strlen(err);                    /* and cleared at the end */
    assert_true(len >= 4 && strcmp(err + len - 4, "\r\033[K") == 0);
    free(err);
}

static void test_progress_off(void **state) {
    fixture *f = *state;
    drive(f, 1, "progress=false");
    char *err = rf_slurp(f->errpath);
    assert_non_null(err);
    assert_string_equal(err, "");
    free(err);
}

static void test_quiet_when_not_tty(void **state) {
    fixture *f = *state;
    drive(f, 0, NULL);
    char *err = rf_slurp(f->errpath);
    assert_non_null(err);
    assert_string_equal(err, "");
    free(err);
}

static void test_verbose_plain_lines(void **state) {
    fixture *f = *state;
    drive(f, 0, "verbose=true");
    char *err = rf_slurp(f->errpath);
    assert_non_null(err);
    assert_null(strchr(err, '\r'));
    assert_null(strchr(err, '\033'));
    assert_string_equal(err, "[1/2] B=8 x1 prompt=32 resp=8 fp32 release  ETA --\n"
                             "[2/2] B=2 x2 prompt=16 resp=8 bf16 retain  ETA 1m23s\n");
    free(err);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_progress_on_tty, setup, teardown),
        cmocka_unit_test_setup_teardown(test_progress_off, setup, teardown),
        cmocka_unit_test_setup_teardown(test_quiet_when_not_tty, setup, teardown),
        cmocka_unit_test_setup_teardown(test_verbose_plain_lines, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
