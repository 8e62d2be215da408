/* check_report.c: checks the JSON report of the out-of-tree run.
 *
 *   check_report REPORT.json MODEL ITERATIONS ROWS RESPONSE_LEN POLICY...
 *
 * The report must parse (jansson), name MODEL, and hold one case per POLICY,
 * in that order, each with status "ok", ITERATIONS profiles, the requested and
 * returned response length RESPONSE_LEN, and num_generated_tokens = ROWS x
 * RESPONSE_LEN in every profile. Prints the first mismatch; exit 0 on success,
 * 1 on a mismatch, 2 on bad usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

static int fails = 0;

#define CHECK(cond, ...)                                 \
    do {                                                 \
        if (!(cond)) {                                   \
            fprintf(stderr, "check_report: " __VA_ARGS__); \
            fputc('\n', stderr);                         \
            fails++;                                     \
            goto done;                                   \
        }                                                \
    } while (0)

static int int_is(json_t *obj, const char *key, json_int_t want) {
    json_t *v = json_object_get(obj, key);
    return json_is_integer(v) && json_integer_value(v) == want;
}

/* Profile fields are numbers (written as reals: 30.0). */
static int number_is(json_t *obj, const char *key, double want) {
    json_t *v = json_object_get(obj, key);
    return json_is_number(v) && json_number_value(v) == want;
}

int main(int argc, char **argv) {
    if (argc < 7) {
        fprintf(stderr, "usage: check_report REPORT.json MODEL ITERATIONS ROWS RESPONSE_LEN POLICY...\n");
        return 2;
    }
    const char *model = argv[2];
    json_int_t iterations = atoll(argv[3]), rows = atoll(argv[4]), response_len = atoll(argv[5]);
    size_t n_cases = (size_t)(argc - 6);
    json_error_t jerr;
    json_t *root = json_load_file(argv[1], 0, &jerr);
    CHECK(root, "%s:%d: not JSON: %s", argv[1], jerr.line, jerr.text);
    CHECK(json_is_object(root), "%s: top level is not an object", argv[1]);
    json_t *m = json_object_get(root, "model");
    CHECK(json_is_string(m) && strcmp(json_string_value(m), model) == 0, "model is not \"%s\"", model);
    CHECK(int_is(root, "iterations", iterations), "iterations is not %lld", (long long)iterations);
    json_t *cases = json_object_get(root, "cases");
    CHECK(json_is_array(cases) && json_array_size(cases) == n_cases, "cases is not an array of %zu", n_cases);
    for (size_t i = 0; i < n_cases; i++) {
        json_t *c = json_array_get(cases, i);
        json_t *status = json_object_get(c, "status"), *policy = json_object_get(c, "cache_policy");
        CHECK(json_is_string(status) && strcmp(json_string_value(status), "ok") == 0, "cases[%zu].status is not \"ok\"", i);
        CHECK(json_is_string(policy) && strcmp(json_string_value(policy), argv[6 + i]) == 0,
              "cases[%zu].cache_policy is not \"%s\"", i, argv[6 + i]);
        CHECK(int_is(c, "requested_response_length", response_len), "cases[%zu].requested_response_length", i);
        CHECK(int_is(c, "returned_response_length", response_len), "cases[%zu].returned_response_length", i);
        json_t *profiles = json_object_get(c, "profiles");
        CHECK(json_is_array(profiles) && json_array_size(profiles) == (size_t)iterations,
              "cases[%zu].profiles is not an array of %lld", i, (long long)iterations);
        for (size_t k = 0; k < json_array_size(profiles); k++)
            CHECK(number_is(json_array_get(profiles, k), "num_generated_tokens", (double)(rows * response_len)),
                  "cases[%zu].profiles[%zu].num_generated_tokens is not %lld", i, k, (long long)(rows * response_len));
    }
done:
    json_decref(root);
    if (!fails) printf("check_report: %s ok (%zu cases)\n", argv[1], n_cases);
    return fails ? 1 : 0;
}
