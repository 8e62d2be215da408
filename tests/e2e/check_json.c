/* check_json.c: reads back the JSON report of an e2e run with jansson and
 * checks what the harness promised:
 *   check_json REPORT.json N_CASES ITERATIONS MEASURED FAILED_BATCH
 * - top-level seed keys and the extended ones (schema version, run metadata);
 *   every case has the seed's case keys and precision, cache_policy, status;
 * - cases has N_CASES entries in requested order (index 0..N-1; with a
 *   "selection" (--cases, --only), increasing matrix indexes);
 * - each ok case has ITERATIONS profiles whose num_generated_tokens =
 *   batch x samples x response_length and total_ms = the sum of its stages;
 * - prefill/decode fields are numbers when MEASURED is 1, null when 0;
 * - cases with batch_size FAILED_BATCH (0: none) have status "failed" and a message.
 * Exits 0 when every check passes, 1 otherwise (printing each failure). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(cond, ...)                      \
    do {                                      \
        if (!(cond)) {                        \
            fprintf(stderr, "check_json: ");  \
            fprintf(stderr, __VA_ARGS__);     \
            fprintf(stderr, "\n");            \
            failures++;                       \
        }                                     \
    } while (0)

static double num(json_t *obj, const char *key) {
    json_t *v = json_object_get(obj, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: check_json REPORT.json N_CASES ITERATIONS MEASURED FAILED_BATCH\n");
        return 2;
    }
    size_t n_cases = (size_t)atoi(argv[2]);
    int iterations = atoi(argv[3]), measured = atoi(argv[4]), failed_batch = atoi(argv[5]);
    json_error_t jerr;
    json_t *root = json_load_file(argv[1], 0, &jerr);
    if (!root) {
        fprintf(stderr, "check_json: %s:%d: %s\n", argv[1], jerr.line, jerr.text);
        return 1;
    }
    static const char *const seed_keys[] = {"model", "dtype", "device", "warmup", "iterations", "temperature",
                                            "top_p", "release_inference_cache", "cases"};
    for (size_t i = 0; i < sizeof seed_keys / sizeof *seed_keys; i++)
        CHECK(json_object_get(root, seed_keys[i]) != NULL, "top level lacks \"%s\"", seed_keys[i]);
    static const char *const run_keys[] = {"schema_version", "benchctl_version", "git_commit", "cpu_model", "gpu",
                                           "driver", "config_sha256", "plugins", "start_time"};
    for (size_t i = 0; i < sizeof run_keys / sizeof *run_keys; i++)
        CHECK(json_object_get(root, run_keys[i]) != NULL, "top level lacks \"%s\"", run_keys[i]);
    CHECK(json_is_array(json_object_get(root, "plugins")) && json_array_size(json_object_get(root, "plugins")) > 0,
          "plugins is not a non-empty array");
    CHECK(num(root, "iterations") == iterations, "iterations is not %d", iterations);
    json_t *cases = json_object_get(root, "cases");
    CHECK(json_is_array(cases) && json_array_size(cases) == n_cases, "cases is not an array of %zu", n_cases);
    for (size_t i = 0; json_is_array(cases) && i < json_array_size(cases); i++) {
        json_t *c = json_array_get(cases, i);
        static const char *const case_keys[] = {"batch_size", "samples_per_prompt", "prompt_length",
                                                "requested_response_length", "returned_response_length",
                                                "peak_memory_mb", "summary", "profiles", "precision",
                                                "cache_policy", "status"};
        for (size_t k = 0; k < sizeof case_keys / sizeof *case_keys; k++)
            CHECK(json_object_get(c, case_keys[k]) != NULL, "cases[%zu] lacks \"%s\"", i, case_keys[k]);
        int selected = json_is_object(json_object_get(root, "selection"));
        double prev = i ? num(json_array_get(cases, i - 1), "index") : -1;
        CHECK(selected ? num(c, "index") > prev : num(c, "index") == (double)i,
              "cases[%zu].index is %g: not requested order", i, num(c, "index"));
        const char *status = json_string_value(json_object_get(c, "status"));
        double batch = num(c, "batch_size"), samples = num(c, "samples_per_prompt");
        double resp = num(c, "requested_response_length");
        json_t *profiles = json_object_get(c, "profiles");
        if (failed_batch && batch == failed_batch) {
            CHECK(status && strcmp(status, "failed") == 0, "cases[%zu] (batch %g) is not failed", i, batch);
            const char *msg = json_string_value(json_object_get(c, "message"));
            CHECK(msg && strstr(msg, "generate: "), "cases[%zu] has no \"generate: ...\" message", i);
            continue;
        }
        CHECK(status && strcmp(status, "ok") == 0, "cases[%zu].status is not ok", i);
        CHECK(json_is_array(profiles) && json_array_size(profiles) == (size_t)iterations,
              "cases[%zu] does not have %d profiles", i, iterations);
        for (size_t k = 0; json_is_array(profiles) && k < json_array_size(profiles); k++) {
            json_t *p = json_array_get(profiles, k);
            CHECK(num(p, "num_generated_tokens") == batch * samples * resp,
                  "cases[%zu].profiles[%zu].num_generated_tokens is %g, expected %g", i, k,
                  num(p, "num_generated_tokens"), batch * samples * resp);
            double sum = num(p, "prompt_expansion_ms") + num(p, "generation_ms") + num(p, "post_processing_ms");
            CHECK(fabs(num(p, "total_ms") - sum) <= 1e-9 * (1 + sum), "cases[%zu].profiles[%zu].total_ms != sum", i, k);
            static const char *const forward_keys[] = {"prefill_forward_ms", "decode_forward_ms",
                                                       "generation_overhead_ms", "num_decode_forwards"};
            for (size_t f = 0; f < 4; f++) {
                json_t *v = json_object_get(p, forward_keys[f]);
                if (measured)
                    CHECK(json_is_number(v), "cases[%zu].profiles[%zu].%s is not a number", i, k, forward_keys[f]);
                else
                    CHECK(json_is_null(v), "cases[%zu].profiles[%zu].%s is not null", i, k, forward_keys[f]);
            }
        }
        json_t *summary = json_object_get(c, "summary");
        CHECK(json_is_object(json_object_get(summary, "total_ms")), "cases[%zu].summary lacks total_ms", i);
    }
    json_decref(root);
    if (failures) fprintf(stderr, "check_json: %d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
