/* test_jsonl.c: the jsonl journal reporter plugin (reporters/jsonl), loaded
 * with dlopen: one parseable line per record, cases in execution order as
 * they finish, lines on disk before the run ends (a forked child is killed
 * with SIGKILL mid-run), an end record that counts every case of an
 * interrupted run, append mode, and the paths check_settings refuses. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "bc_test_assert.h"

#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "reporter_fixture.h"

#define MAX_LINES 16

typedef struct fixture {
    char dir[512];
    char path[600];
    char setting[700];
    rf_run run;
    bc_host host;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    if (!f || rf_make_dir(f->dir, "test_jsonl") != 0) {
        free(f);
        return -1;
    }
    rf_run_init(&f->run, 0);
    f->host = rf_host(0);
    snprintf(f->path, sizeof f->path, "%s/journal/run.jsonl", f->dir); /* folder made by the plugin */
    snprintf(f->setting, sizeof f->setting, "path=%s", f->path);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    rf_remove_tree(f->dir);
    free(f);
    return 0;
}

/* Parses every line of the journal (each must be one JSON object); returns
 * the count; records[i] are owned by the caller. */
static int read_journal(const char *path, json_t **records) {
    char *text = rf_slurp(path);
    assert_non_null(text);
    size_t len = strlen(text);
    assert_true(len > 0 && text[len - 1] == '\n'); /* every line complete */
    int n = 0;
    char *save = NULL;
    for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        assert_true(n < MAX_LINES);
        json_error_t jerr;
        records[n] = json_loads(l, 0, &jerr);
        if (!records[n]) fprintf(stderr, "line %d: %s\n", n + 1, jerr.text);
        assert_non_null(records[n]);
        assert_true(json_is_object(records[n]));
        n++;
    }
    free(text);
    return n;
}

static void free_records(json_t **records, int n) {
    for (int i = 0; i < n; i++) json_decref(records[i]);
}

static const char *record_type(json_t *rec) { return json_string_value(json_object_get(rec, "record")); }

static json_int_t int_of(json_t *rec, const char *key) {
    json_t *v = json_object_get(rec, key);
    if (!json_is_integer(v)) fail_msg("\"%s\" is not an integer", key);
    return json_integer_value(v);
}

static void test_journal(void **state) {
    fixture *f = *state;
    const char *overrides[1] = {f->setting};
    rf_plugin p;
    assert_int_equal(rf_load(&p, "jsonl", overrides, 1), 0);
    bc_error err = {0};
    assert_int_equal(rf_drive(&p, &f->host, &f->run, &err), BC_OK);
    rf_unload(&p);

    json_t *rec[MAX_LINES];
    int n = read_journal(f->path, rec);
    assert_int_equal(n, 1 + RF_N_CASES + 1);
    assert_string_equal(record_type(rec[0]), "run");
    assert_int_equal(int_of(rec[0], "schema_version"), 2);
    assert_string_equal(json_string_value(json_object_get(rec[0], "model")), "facebook/opt-125m (synthetic)");
    assert_true(json_is_null(json_object_get(rec[0], "gpu")));
    assert_int_equal(json_array_size(json_object_get(rec[0], "stats")), f->run.run.n_stats);
    assert_null(json_object_get(rec[0], "cases"));
    /* Cases as they finished: case 1 ran first, then 0, then 2. */
    assert_string_equal(record_type(rec[1]), "case");
    assert_int_equal(int_of(rec[1], "index"), 1);
    assert_string_equal(json_string_value(json_object_get(rec[1], "status")), "failed");
    assert_string_equal(json_string_value(json_object_get(rec[1], "error_code")), bc_status_name(BC_ERR_NOMEM));
    assert_string_equal(json_string_value(json_object_get(rec[1], "message")), RF_MESSAGE);
    assert_true(json_is_null(json_object_get(rec[1], "peak_memory_mb")));
    assert_string_equal(json_string_value(json_object_get(rec[1], "stop_reason")), "failed");
    json_t *load = json_object_get(json_object_get(rec[1], "extended"), "host_load");
    assert_double_close(json_number_value(json_object_get(load, "load_avg_start")), 1.25, 0);
    assert_true(json_is_null(json_object_get(load, "cpu_steal_share")));
    assert_string_equal(record_type(rec[2]), "case");
    assert_string_equal(json_string_value(json_object_get(rec[2], "stop_reason")), "stable");
    assert_int_equal(int_of(rec[2], "index"), 0);
    json_t *profiles = json_object_get(rec[2], "profiles");
    assert_int_equal(json_array_size(profiles), RF_N_ITER);
    assert_true(json_is_null(json_object_get(json_array_get(profiles, 0), "generation_overhead_ms")));
    json_t *total = json_object_get(json_object_get(rec[2], "summary"), "total_ms");
    assert_double_close(json_real_value(json_object_get(total, "mean")), rf_stat(&f->run, 0, RF_F_TOTAL_MS, "mean"),
                        0.0);
    assert_int_equal(int_of(rec[3], "index"), 2);
    assert_int_equal(int_of(rec[3], "prompt_min_tokens"), 12);
    assert_int_equal(int_of(rec[3], "prompt_max_tokens"), 37);
    assert_string_equal(record_type(rec[4]), "end");
    assert_int_equal(int_of(rec[4], "n_cases"), 3);
    assert_int_equal(int_of(rec[4], "n_ok"), 2);
    assert_int_equal(int_of(rec[4], "n_failed"), 1);
    assert_int_equal(int_of(rec[4], "n_skipped"), 0);
    free_records(rec, n);
}

#define N_BIG 96

/* An interrupted run of 96 cases: one finished ok, the one running when the
 * signal came is skipped with the iterations it measured, and the other 94
 * never started (skipped, nothing measured). The end record must count all
 * 96, not just the two the journal saw finish. */
static void test_end_counts_unstarted(void **state) {
    fixture *f = *state;
    static rf_wide_report big[N_BIG];
    for (uint32_t i = 0; i < N_BIG; i++) {
        big[i] = f->run.reports[i == 0 ? 0 : 2];
        bc_case_report *cr = &big[i].r;
        if (i == 0) continue; /* finished ok */
        cr->status = BC_CASE_SKIPPED;
        cr->error_code = BC_ERR_INTERRUPTED;
        cr->message = "interrupted";
        if (i == 1) continue; /* interrupted while running: keeps its iterations */
        cr->n_iterations = 0;
        cr->values = NULL;
        cr->stats = NULL;
        cr->memory = NULL;
    }
    const char *overrides[1] = {f->setting};
    rf_plugin p;
    assert_int_equal(rf_load(&p, "jsonl", overrides, 1), 0);
    bc_error err = {0};
    assert_int_equal(p.desc->check_settings(&f->host, &p.settings, &err), BC_OK);
    bc_run_report run = f->run.run;
    run.n_cases = 0;
    run.cases = NULL;
    void *inst = NULL;
    assert_int_equal(p.ops->open(&f->host, &p.settings, &run, &inst, &err), BC_OK);
    for (uint32_t k = 0; k < 2; k++) {
        run.n_cases = k + 1;
        run.cases = &big[0].r;
        assert_int_equal(p.ops->case_finished(inst, &run, &big[k].r, &err), BC_OK);
    }
    run.n_cases = N_BIG;
    assert_int_equal(p.ops->close(inst, &run, &err), BC_OK);
    p.ops->destroy(inst);
    rf_unload(&p);

    json_t *rec[MAX_LINES];
    int n = read_journal(f->path, rec);
    assert_int_equal(n, 1 + 2 + 1);
    assert_string_equal(json_string_value(json_object_get(rec[2], "status")), "skipped");
    assert_string_equal(json_string_value(json_object_get(rec[2], "error_code")), "interrupted");
    assert_string_equal(record_type(rec[3]), "end");
    assert_int_equal(int_of(rec[3], "n_cases"), N_BIG);
    assert_int_equal(int_of(rec[3], "n_ok"), 1);
    assert_int_equal(int_of(rec[3], "n_failed"), 0);
    assert_int_equal(int_of(rec[3], "n_skipped"), N_BIG - 1);
    free_records(rec, n);
}

/* A child runs the journal through one finished case and is killed with
 * SIGKILL: the run header and that case must be in the file. */
static void test_survives_kill(void **state) {
    fixture *f = *state;
    const char *overrides[1] = {f->setting};
    rf_plugin p;
    assert_int_equal(rf_load(&p, "jsonl", overrides, 1), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        bc_run_report empty = f->run.run;
        empty.n_cases = 0;
        empty.cases = NULL;
        void *inst = NULL;
        bc_error err = {0};
        if (p.ops->open(&f->host, &p.settings, &empty, &inst, &err) != BC_OK) _exit(2);
        bc_run_report partial = f->run.run;
        partial.n_cases = 1;
        partial.cases = rf_report(&f->run, 1);
        if (p.ops->case_finished(inst, &partial, rf_report(&f->run, 1), &err) != BC_OK) _exit(3);
        raise(SIGKILL); /* no close, no destroy, no exit handlers */
        _exit(4);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    rf_unload(&p);

    json_t *rec[MAX_LINES];
    int n = read_journal(f->path, rec);
    assert_int_equal(n, 2); /* run header + the finished case, no end record */
    assert_string_equal(record_type(rec[0]), "run");
    assert_string_equal(record_type(rec[1]), "case");
    assert_int_equal(int_of(rec[1], "index"), 1);
    free_records(rec, n);
}

static void test_append(void **state) {
    fixture *f = *state;
    const char *overrides[2] = {f->setting, "append=true"};
    for (int run = 0; run < 2; run++) {
        rf_plugin p;
        assert_int_equal(rf_load(&p, "jsonl", overrides, 2), 0);
        bc_error err = {0};
        assert_int_equal(rf_drive(&p, &f->host, &f->run, &err), BC_OK);
        rf_unload(&p);
    }
    json_t *rec[MAX_LINES];
    int n = read_journal(f->path, rec);
    assert_int_equal(n, 2 * (RF_N_CASES + 2));
    assert_string_equal(record_type(rec[RF_N_CASES + 1]), "end");
    assert_string_equal(record_type(rec[RF_N_CASES + 2]), "run");
    free_records(rec, n);

    /* Without append, a new run starts the journal afresh. */
    rf_plugin p;
    assert_int_equal(rf_load(&p, "jsonl", overrides, 1), 0);
    bc_error err = {0};
    assert_int_equal(rf_drive(&p, &f->host, &f->run, &err), BC_OK);
    rf_unload(&p);
    n = read_journal(f->path, rec);
    assert_int_equal(n, RF_N_CASES + 2);
    free_records(rec, n);
}

/* check_settings refuses the path with code, and a message holding words;
 * driven as the host drives it, nothing is opened. */
static void expect_refused(fixture *f, const char *setting, bc_status code, const char *words) {
    const char *overrides[1] = {setting};
    rf_plugin p;
    assert_int_equal(rf_load(&p, "jsonl", overrides, 1), 0);
    bc_error err = {0};
    assert_int_equal(p.desc->check_settings(&f->host, &p.settings, &err), code);
    assert_int_equal(err.code, code);
    if (!strstr(err.message, words)) fail_msg("\"%s\" lacks \"%s\"", err.message, words);
    assert_int_equal(rf_drive(&p, &f->host, &f->run, &err), code);
    rf_unload(&p);
}

static void test_refused_paths(void **state) {
    fixture *f = *state;
    char gz[700];
    snprintf(gz, sizeof gz, "path=%s/j.jsonl.gz", f->dir);
    expect_refused(f, gz, BC_ERR_SETTING, "gzip");
    expect_refused(f, "path=-", BC_ERR_SETTING, "stdout");
    expect_refused(f, "path=", BC_ERR_SETTING, "empty");
    expect_refused(f, "path=/dev/null/run.jsonl", BC_ERR_IO, "/dev/null/run.jsonl");
    assert_int_equal(rf_count_entries(f->dir), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_journal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_end_counts_unstarted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_survives_kill, setup, teardown),
        cmocka_unit_test_setup_teardown(test_append, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_paths, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
