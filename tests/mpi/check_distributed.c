/* check_distributed.c: reads a JSON report of a distributed run back (jansson)
 * and checks its distributed blocks (docs/scale.md, docs/reporters.md).
 *
 *   check_distributed REPORT.json WORLD MODE [CHECK]...
 *
 * Always: the run's distributed block has world_size WORLD, mode MODE and
 * WORLD ranks (rank i at i, a host, a local rank); every case has a
 * distributed block with per-rank arrays of its n_ranks. Replicate, every
 * ok case: n_ranks = WORLD, min <= mean <= max of the rank times, and those
 * match the per-rank array, 0 < straggler_efficiency <= 1 and equal to
 * mean / max, straggler_tax_ms >= 0, step_tokens_per_second <=
 * ideal_tokens_per_second = the sum of rank_tokens_per_second, the slowest
 * rank the one with the largest time, peak_memory_sum_mib the per-rank sum.
 * Shard: every case ran on one rank in [0, WORLD), cases in index order.
 * CHECKs:
 *   slowest=R         every ok case's slowest rank is R
 *   gap_ms=G          ... and its time exceeds every other rank's by >= G ms
 *   tax_ms=T          every ok case's straggler_tax_ms >= T
 *   failed=N          exactly N cases failed ...
 *   failed_rank=R     ... each with a message starting "rank R ("
 *   forced=0|1        every ok case's lengths_forced is false | true
 *   all_ranks         shard: every rank ran at least one case
 *   largest_on=R      shard: the case of the largest effective batch ran on rank R
 * Prints every failed check; exit 1 if any.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(cond, ...)                      \
    do {                                      \
        if (!(cond)) {                        \
            printf("FAIL: " __VA_ARGS__);     \
            printf("\n");                     \
            failures++;                       \
        }                                     \
    } while (0)

static double num(const json_t *o, const char *key) {
    const json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* a <= b, allowing for the rounding of the JSON text */
static int le(double a, double b) { return a <= b + 1e-9 * (fabs(a) + fabs(b) + 1.0); }
static int near(double a, double b) { return fabs(a - b) <= 1e-6 * (fabs(a) + fabs(b) + 1e-9); }

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: check_distributed REPORT.json WORLD MODE [CHECK]...\n");
        return 2;
    }
    json_error_t jerr;
    json_t *root = json_load_file(argv[1], 0, &jerr);
    if (!root) {
        printf("FAIL: %s: %s (line %d)\n", argv[1], jerr.text, jerr.line);
        return 1;
    }
    long world = strtol(argv[2], NULL, 10);
    const char *mode = argv[3];
    int slowest = -1, failed_n = -1, failed_rank = -1, forced = -1, all_ranks = 0, largest_on = -1;
    double gap = NAN, tax = NAN;
    for (int i = 4; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "slowest=", 8) == 0) slowest = atoi(a + 8);
        else if (strncmp(a, "gap_ms=", 7) == 0) gap = atof(a + 7);
        else if (strncmp(a, "tax_ms=", 7) == 0) tax = atof(a + 7);
        else if (strncmp(a, "failed=", 7) == 0) failed_n = atoi(a + 7);
        else if (strncmp(a, "failed_rank=", 12) == 0) failed_rank = atoi(a + 12);
        else if (strncmp(a, "forced=", 7) == 0) forced = atoi(a + 7);
        else if (strcmp(a, "all_ranks") == 0) all_ranks = 1;
        else if (strncmp(a, "largest_on=", 11) == 0) largest_on = atoi(a + 11);
        else {
            fprintf(stderr, "check_distributed: unknown check '%s'\n", a);
            return 2;
        }
    }
    int shard = strcmp(mode, "shard") == 0;

    const json_t *d = json_object_get(root, "distributed");
    CHECK(json_is_object(d), "no run-level distributed block");
    if (!json_is_object(d)) return 1;
    CHECK(num(d, "world_size") == (double)world, "world_size %g, want %ld", num(d, "world_size"), world);
    CHECK(json_is_string(json_object_get(d, "mode")) && strcmp(json_string_value(json_object_get(d, "mode")), mode) == 0,
          "mode is not %s", mode);
    const json_t *ranks = json_object_get(d, "ranks");
    CHECK(json_is_array(ranks) && (long)json_array_size(ranks) == world, "ranks is not an array of %ld", world);
    for (size_t r = 0; json_is_array(ranks) && r < json_array_size(ranks); r++) {
        const json_t *ri = json_array_get(ranks, r);
        CHECK(num(ri, "rank") == (double)r, "ranks[%zu].rank is %g", r, num(ri, "rank"));
        CHECK(json_is_string(json_object_get(ri, "host")), "ranks[%zu] has no host", r);
        CHECK(num(ri, "local_rank") >= 0, "ranks[%zu] has no local_rank", r);
    }

    const json_t *cases = json_object_get(root, "cases");
    CHECK(json_is_array(cases) && json_array_size(cases) > 0, "no cases");
    int n_failed = 0, ran_on[64] = {0};
    double largest_batch = -1, last_index = -1;
    int largest_rank = -1;
    for (size_t i = 0; json_is_array(cases) && i < json_array_size(cases); i++) {
        const json_t *c = json_array_get(cases, i);
        double index = num(c, "index");
        const char *status = json_string_value(json_object_get(c, "status"));
        const char *message = json_string_value(json_object_get(c, "message"));
        int ok = status && strcmp(status, "ok") == 0;
        CHECK(index > last_index, "case %zu: index %g not after %g (requested order)", i, index, last_index);
        last_index = index;
        if (status && strcmp(status, "failed") == 0) {
            n_failed++;
            if (failed_rank >= 0) {
                char want[32];
                snprintf(want, sizeof want, "rank %d (", failed_rank);
                CHECK(message && strncmp(message, want, strlen(want)) == 0, "case %g: message '%s' does not start '%s'",
                      index, message ? message : "", want);
            }
        }
        const json_t *cd = json_object_get(c, "distributed");
        CHECK(json_is_object(cd), "case %g: no distributed block", index);
        if (!json_is_object(cd)) continue;
        long n_ranks = (long)num(cd, "n_ranks");
        const json_t *times = json_object_get(cd, "rank_time_ms"), *tps = json_object_get(cd, "rank_tokens_per_second");
        const json_t *peaks = json_object_get(cd, "rank_peak_memory_mib");
        CHECK(json_is_array(times) && (long)json_array_size(times) == n_ranks, "case %g: rank_time_ms is not %ld long",
              index, n_ranks);
        CHECK(json_is_array(tps) && (long)json_array_size(tps) == n_ranks, "case %g: rank_tokens_per_second length",
              index);
        CHECK(json_is_array(peaks) && (long)json_array_size(peaks) == n_ranks, "case %g: rank_peak_memory_mib length",
              index);
        if (shard) {
            int r = (int)num(cd, "rank");
            CHECK(n_ranks == 1, "case %g: shard n_ranks %ld", index, n_ranks);
            CHECK(r >= 0 && r < world, "case %g: ran on rank %d", index, r);
            CHECK(json_is_string(json_object_get(cd, "host")), "case %g: no host", index);
            if (r >= 0 && r < 64) ran_on[r]++;
            double eb = num(c, "batch_size") * num(c, "samples_per_prompt");
            if (eb > largest_batch) largest_batch = eb, largest_rank = r;
            continue;
        }
        if (!ok || !json_is_array(times) || (long)json_array_size(times) != world) {
            CHECK(n_ranks == world, "case %g: n_ranks %ld, want %ld", index, n_ranks, world);
            continue;
        }
        double mn = INFINITY, mx = -INFINITY, sum = 0, tps_sum = 0, peak_sum = 0;
        int mx_at = -1;
        for (long r = 0; r < world; r++) {
            double t = json_number_value(json_array_get(times, (size_t)r));
            if (t < mn) mn = t;
            if (t > mx) mx = t, mx_at = (int)r;
            sum += t;
            tps_sum += json_number_value(json_array_get(tps, (size_t)r));
            peak_sum += json_number_value(json_array_get(peaks, (size_t)r));
        }
        double mean = sum / (double)world;
        CHECK(near(num(cd, "rank_time_min_ms"), mn) && near(num(cd, "rank_time_max_ms"), mx) &&
                  near(num(cd, "rank_time_mean_ms"), mean),
              "case %g: min/mean/max %g/%g/%g, the per-rank times give %g/%g/%g", index, num(cd, "rank_time_min_ms"),
              num(cd, "rank_time_mean_ms"), num(cd, "rank_time_max_ms"), mn, mean, mx);
        double eff = num(cd, "straggler_efficiency");
        CHECK(eff > 0 && le(eff, 1.0) && near(eff, mean / mx), "case %g: straggler_efficiency %g, mean/max %g", index,
              eff, mean / mx);
        CHECK(num(cd, "straggler_tax_ms") >= 0, "case %g: straggler_tax_ms %g < 0", index, num(cd, "straggler_tax_ms"));
        CHECK(num(cd, "rank_time_std_ms") >= 0, "case %g: rank_time_std_ms %g", index, num(cd, "rank_time_std_ms"));
        CHECK(near(num(cd, "ideal_tokens_per_second"), tps_sum), "case %g: ideal %g, sum of ranks %g", index,
              num(cd, "ideal_tokens_per_second"), tps_sum);
        CHECK(num(cd, "step_tokens_per_second") > 0 &&
                  le(num(cd, "step_tokens_per_second"), num(cd, "ideal_tokens_per_second")),
              "case %g: step %g not in (0, ideal %g]", index, num(cd, "step_tokens_per_second"),
              num(cd, "ideal_tokens_per_second"));
        CHECK(num(cd, "slowest_rank") == mx_at, "case %g: slowest_rank %g, the largest time is rank %d's", index,
              num(cd, "slowest_rank"), mx_at);
        CHECK(json_is_string(json_object_get(cd, "slowest_host")), "case %g: no slowest_host", index);
        CHECK(near(num(cd, "peak_memory_sum_mib"), peak_sum), "case %g: peak_memory_sum_mib %g, per-rank sum %g", index,
              num(cd, "peak_memory_sum_mib"), peak_sum);
        if (slowest >= 0) CHECK(mx_at == slowest, "case %g: slowest rank %d, want %d", index, mx_at, slowest);
        if (!isnan(gap) && slowest >= 0)
            for (long r = 0; r < world; r++)
                if (r != slowest)
                    CHECK(json_number_value(json_array_get(times, (size_t)slowest)) -
                                  json_number_value(json_array_get(times, (size_t)r)) >= gap,
                          "case %g: rank %d is not %g ms slower than rank %ld", index, slowest, gap, r);
        if (!isnan(tax)) CHECK(num(cd, "straggler_tax_ms") >= tax, "case %g: straggler_tax_ms %g < %g", index,
                               num(cd, "straggler_tax_ms"), tax);
        if (forced >= 0) {
            const json_t *f = json_object_get(cd, "lengths_forced");
            CHECK(json_is_boolean(f) && json_boolean_value(f) == forced, "case %g: lengths_forced is not %s", index,
                  forced ? "true" : "false");
        }
    }
    if (failed_n >= 0) CHECK(n_failed == failed_n, "%d cases failed, want %d", n_failed, failed_n);
    if (all_ranks)
        for (long r = 0; r < world && r < 64; r++) CHECK(ran_on[r] > 0, "rank %ld ran no case", r);
    if (largest_on >= 0)
        CHECK(largest_rank == largest_on, "the largest case ran on rank %d, want %d", largest_rank, largest_on);
    json_decref(root);
    if (failures) return 1;
    printf("ok: %s\n", argv[1]);
    return 0;
}
