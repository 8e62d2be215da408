/* check_compare_json.c: reads `benchctl compare --format json` output back
 * with jansson, checks its shape, and prints one line per row for the shell
 * to check:
 *   check_compare_json FILE EXIT_STATUS
 * - the document parses; compare_version is 2; metrics, alpha, threshold
 *   and comparisons are there; exit_status is EXIT_STATUS;
 * - each comparison has a, b, environment, rows and a summary per metric
 *   whose counts add up to its rows;
 * - each row has a known verdict; rows with a change have
 *   change_low <= change <= change_high and a p in [0, 1].
 * Prints "row COMPARISON METRIC VERDICT" per row. Exits 0 when every check
 * passes, 1 otherwise (each failure on stderr). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(cond, ...)                                \
    do {                                                \
        if (!(cond)) {                                  \
            fprintf(stderr, "check_compare_json: ");    \
            fprintf(stderr, __VA_ARGS__);               \
            fprintf(stderr, "\n");                      \
            failures++;                                 \
        }                                               \
    } while (0)

static const char *const k_verdicts[] = {"BETTER", "WORSE", "SAME", "NOISE", "UNDERPOWERED", "MISSING", "FAILED"};

static int known_verdict(const char *v) {
    for (size_t i = 0; v && i < sizeof k_verdicts / sizeof *k_verdicts; i++)
        if (strcmp(v, k_verdicts[i]) == 0) return 1;
    return 0;
}

static void check_row(size_t k, size_t i, json_t *row) {
    const char *verdict = json_string_value(json_object_get(row, "verdict"));
    const char *metric = json_string_value(json_object_get(row, "metric"));
    CHECK(known_verdict(verdict), "comparisons[%zu].rows[%zu]: verdict '%s'", k, i, verdict ? verdict : "(none)");
    CHECK(metric != NULL, "comparisons[%zu].rows[%zu]: no metric", k, i);
    CHECK(json_is_string(json_object_get(row, "key")), "comparisons[%zu].rows[%zu]: no key", k, i);
    json_t *change = json_object_get(row, "change");
    if (json_is_number(change)) {
        double c = json_number_value(change), lo = json_number_value(json_object_get(row, "change_low")),
               hi = json_number_value(json_object_get(row, "change_high")),
               p = json_number_value(json_object_get(row, "p"));
        CHECK(lo <= c && c <= hi, "comparisons[%zu].rows[%zu]: change %g outside [%g, %g]", k, i, c, lo, hi);
        CHECK(p >= 0 && p <= 1, "comparisons[%zu].rows[%zu]: p %g", k, i, p);
    }
    printf("row %zu %s %s\n", k, metric ? metric : "?", verdict ? verdict : "?");
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: check_compare_json FILE EXIT_STATUS\n");
        return 2;
    }
    json_error_t jerr;
    json_t *root = json_load_file(argv[1], 0, &jerr);
    if (!root) {
        fprintf(stderr, "check_compare_json: %s:%d: %s\n", argv[1], jerr.line, jerr.text);
        return 1;
    }
    CHECK(json_integer_value(json_object_get(root, "compare_version")) == 2, "compare_version is not 2");
    CHECK(json_integer_value(json_object_get(root, "exit_status")) == atoi(argv[2]), "exit_status is not %s",
          argv[2]);
    static const char *const keys[] = {"metrics", "alpha", "threshold", "confidence_level", "resamples", "seed"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        CHECK(json_object_get(root, keys[i]) != NULL, "top level lacks \"%s\"", keys[i]);
    json_t *metrics = json_object_get(root, "metrics"), *comparisons = json_object_get(root, "comparisons");
    CHECK(json_is_array(comparisons) && json_array_size(comparisons) > 0, "comparisons is not a non-empty array");
    for (size_t k = 0; k < json_array_size(comparisons); k++) {
        json_t *cmp = json_array_get(comparisons, k), *rows = json_object_get(cmp, "rows");
        static const char *const cmp_keys[] = {"a", "b", "comparable", "environment", "settings_changed",
                                               "n_matched", "summary"};
        for (size_t i = 0; i < sizeof cmp_keys / sizeof *cmp_keys; i++)
            CHECK(json_object_get(cmp, cmp_keys[i]) != NULL, "comparisons[%zu] lacks \"%s\"", k, cmp_keys[i]);
        CHECK(json_is_array(rows), "comparisons[%zu].rows is not an array", k);
        for (size_t i = 0; i < json_array_size(rows); i++) check_row(k, i, json_array_get(rows, i));
        /* each metric's counts add up to its rows */
        for (size_t m = 0; m < json_array_size(metrics); m++) {
            const char *name = json_string_value(json_array_get(metrics, m));
            json_t *counts = json_object_get(json_object_get(json_object_get(cmp, "summary"), name), "counts");
            json_int_t total = 0, rows_of_metric = 0;
            for (size_t v = 0; v < sizeof k_verdicts / sizeof *k_verdicts; v++)
                total += json_integer_value(json_object_get(counts, k_verdicts[v]));
            for (size_t i = 0; i < json_array_size(rows); i++) {
                const char *metric = json_string_value(json_object_get(json_array_get(rows, i), "metric"));
                rows_of_metric += metric && name && strcmp(metric, name) == 0;
            }
            CHECK(total == rows_of_metric, "comparisons[%zu].summary.%s: counts add up to %lld, %lld rows", k, name,
                  (long long)total, (long long)rows_of_metric);
        }
    }
    json_decref(root);
    return failures ? 1 : 0;
}
