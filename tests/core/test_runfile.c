/* test_runfile.c: reading finished runs back (runfile.h): benchctl's JSON
 * report, its jsonl journal (with a torn last line), seed-only JSON as
 * DeepSpeed writes it, a gzip'ed report, and files that are none of these. */
#define _GNU_SOURCE
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
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "replay.h"
#include "runfile.h"
#include "stats.h"

typedef struct fixture {
    char dir[64];
    char path[128];
    bc_runfile rf;
    bc_error err;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/bc_test_runfile.XXXXXX");
    if (!f || !mkdtemp(f->dir)) return -1;
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    bc_runfile_free(&f->rf);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    if (system(cmd) != 0) return -1;
    free(f);
    return 0;
}

/* Writes text to dir/name (gzip'ed when gz) and reads it back. */
static bc_status read_text(fixture *f, const char *name, const char *text, int gz) {
    snprintf(f->path, sizeof f->path, "%s/%s", f->dir, name);
    if (gz) {
        gzFile out = gzopen(f->path, "wb");
        assert_non_null(out);
        assert_int_equal(gzwrite(out, text, (unsigned)strlen(text)), (int)strlen(text));
        assert_int_equal(gzclose(out), Z_OK);
    } else {
        FILE *out = fopen(f->path, "w");
        assert_non_null(out);
        fputs(text, out);
        assert_int_equal(fclose(out), 0);
    }
    bc_runfile_free(&f->rf);
    memset(&f->err, 0, sizeof f->err);
    return bc_runfile_read(f->path, &f->rf, &f->err);
}

/* A schema-2 report as the json reporter writes it, cut to what matters. */
static const char k_report[] =
    "{\"schema_version\": 2, \"model\": \"facebook/opt-125m (synthetic)\", \"device\": \"cpu\", \"warmup\": 1,\n"
    " \"iterations\": 3, \"dtype\": \"bfloat16\", \"backend\": \"opt\", \"gpu\": null,\n"
    " \"backend_settings\": {\"threads\": 0, \"shared_prefill\": false, \"checkpoint\": \"\"},\n"
    " \"environment\": {\"cpu\": {\"model\": \"Some CPU\", \"kernels\": \"avx2\", \"threads\": 2, \"logical_cpus\": 4,\n"
    "   \"physical_cores\": 2, \"packages\": 1, \"threads_per_core\": 2, \"topology_note\": null}},\n"
    " \"model_shape\": {\"family\": \"opt\", \"parameters\": 125239296, \"layers\": 12, \"hidden_size\": 768,\n"
    "                 \"heads\": 12, \"ffn_size\": 3072, \"vocab_size\": 50272, \"max_positions\": 2048},\n"
    " \"fields\": [\"total_ms\", \"tokens_per_second\"],\n"
    " \"cases\": [\n"
    "  {\"index\": 0, \"batch_size\": 2, \"samples_per_prompt\": 1, \"prompt_length\": 32,\n"
    "   \"requested_response_length\": 16, \"returned_response_length\": 16, \"peak_memory_mb\": 246.5,\n"
    "   \"held_between_rollouts_mib\": 239.0, \"precision\": \"bf16\", \"dtype\": \"bfloat16\",\n"
    "   \"cache_policy\": \"release\", \"release_inference_cache\": true, \"rebuilt\": true, \"status\": \"ok\",\n"
    "   \"message\": \"\", \"extended\": {\"wall_ms\": 700.5},\n"
    "   \"profiles\": [{\"total_ms\": 3.0, \"tokens_per_second\": 100}, {\"total_ms\": 1.0, \"tokens_per_second\": null},\n"
    "                {\"total_ms\": 2.0, \"tokens_per_second\": 300}]},\n"
    "  {\"index\": 1, \"batch_size\": 4, \"samples_per_prompt\": 1, \"prompt_length\": 32,\n"
    "   \"requested_response_length\": 16, \"precision\": \"bf16\", \"dtype\": \"bfloat16\", \"cache_policy\": \"release\",\n"
    "   \"release_inference_cache\": true, \"status\": \"failed\", \"message\": \"generate: boom\", \"profiles\": []}\n"
    " ]}\n";

static void test_report(void **state) {
    fixture *f = *state;
    if (read_text(f, "r.json", k_report, 0) != BC_OK) fail_msg("%s", f->err.message);
    const bc_runfile *rf = &f->rf;
    assert_int_equal(rf->format, BC_RUNFILE_JSON);
    assert_int_equal(rf->schema_version, 2);
    assert_true(rf->complete);
    assert_string_equal(rf->model, "facebook/opt-125m (synthetic)");
    assert_null(rf->gpu);
    assert_string_equal(rf->cpu_kernels, "avx2");
    assert_int_equal(rf->cpu_threads, 2);
    assert_int_equal(rf->cpu_logical, 4);
    assert_int_equal(rf->cpu_cores, 2);
    assert_int_equal(rf->cpu_packages, 1);
    assert_int_equal(rf->cpu_threads_per_core, 2);
    assert_null(rf->cpu_topology_note);
    assert_int_equal(rf->n_parameters, 125239296);
    assert_int_equal(rf->max_positions, 2048);
    assert_int_equal(rf->iterations, 3);
    assert_string_equal(bc_runfile_setting(rf, "threads"), "0");
    assert_string_equal(bc_runfile_setting(rf, "shared_prefill"), "false");
    assert_string_equal(bc_runfile_setting(rf, "checkpoint"), "");
    assert_null(bc_runfile_setting(rf, "nosuch"));
    assert_int_equal(rf->n_fields, 2);
    assert_int_equal(bc_runfile_field(rf, "tokens_per_second"), 1);
    assert_int_equal(bc_runfile_field(rf, "nosuch"), -1);
    assert_int_equal(rf->n_cases, 2);

    const bc_runfile_case *c = &rf->cases[0];
    assert_string_equal(c->key,
                        "batch_size=2 samples_per_prompt=1 prompt_length=32 response_length=16 dtype=bfloat16 cache=release");
    assert_ptr_equal(bc_runfile_find(rf, c->key), c);
    assert_int_equal(c->status, BC_CASE_OK);
    assert_int_equal(c->n_iterations, 3);
    assert_double_close(c->values[0 * 2 + 0], 3.0, 0);
    assert_nan(c->values[1 * 2 + 1]);
    /* statistics computed from the profiles, NaN left out */
    assert_double_close(c->stats[0 * BC_N_STATS + BC_STAT_P50], 2.0, 0);
    assert_double_close(c->stats[1 * BC_N_STATS + BC_STAT_N], 2, 0);
    assert_double_close(c->stats[1 * BC_N_STATS + BC_STAT_MEAN], 200.0, 0);
    assert_double_close(c->peak_memory_mib, 246.5, 0);
    assert_double_close(c->held_between_rollouts_mib, 239.0, 0);
    assert_double_close(c->wall_ms, 700.5, 0);
    assert_int_equal(c->rebuilt, 1);
    assert_int_equal(c->returned_response_length, 16);
    assert_int_equal(c->prompt_width_tokens, -1);

    c = &rf->cases[1];
    assert_int_equal(c->status, BC_CASE_FAILED);
    assert_string_equal(c->message, "generate: boom");
    assert_int_equal(c->n_iterations, 0);
    assert_double_close(c->stats[0 * BC_N_STATS + BC_STAT_N], 0, 0);
    assert_nan(c->stats[0 * BC_N_STATS + BC_STAT_MEAN]);
    assert_nan(c->peak_memory_mib);

    /* the same, gzip'ed */
    if (read_text(f, "r.json.gz", k_report, 1) != BC_OK) fail_msg("%s", f->err.message);
    assert_int_equal(f->rf.n_cases, 2);
}

/* A journal: header, cases as they finished, maybe an end record; a torn
 * last line is skipped with a warning. */
static void test_journal(void **state) {
    fixture *f = *state;
    const char *journal =
        "{\"record\":\"run\",\"schema_version\":2,\"model\":\"m\",\"dtype\":\"float32\","
        "\"fields\":[\"total_ms\"]}\n"
        "{\"record\":\"case\",\"index\":1,\"batch_size\":4,\"samples_per_prompt\":2,\"prompt_length\":8,"
        "\"requested_response_length\":4,\"precision\":\"fp32\",\"cache_policy\":\"retain\","
        "\"release_inference_cache\":false,\"status\":\"ok\",\"profiles\":[{\"total_ms\":5},{\"total_ms\":7}]}\n"
        "{\"record\":\"case\",\"index\":0,\"batch_size\":1,\"samples_";
    if (read_text(f, "j.jsonl", journal, 0) != BC_OK) fail_msg("%s", f->err.message);
    assert_int_equal(f->rf.format, BC_RUNFILE_JOURNAL);
    assert_false(f->rf.complete);
    assert_int_equal(f->rf.n_cases, 1);
    assert_int_equal(f->rf.cases[0].index, 1);
    assert_double_close(f->rf.cases[0].stats[BC_STAT_P50], 6.0, 0);
    assert_non_null(strstr(f->rf.warning, "j.jsonl:3: the last line is cut short"));

    char complete[2048];
    snprintf(complete, sizeof complete, "%.*s{\"record\":\"end\",\"n_cases\":1}\n",
             (int)(strstr(journal, "{\"record\":\"case\",\"index\":0") - journal), journal);
    if (read_text(f, "j2.jsonl", complete, 0) != BC_OK) fail_msg("%s", f->err.message);
    assert_true(f->rf.complete);
    assert_string_equal(f->rf.warning, "");

    /* a bad line in the middle is an error naming it */
    const char *bad = "{\"record\":\"run\",\"fields\":[]}\nnot json\n{\"record\":\"end\"}\n";
    assert_int_equal(read_text(f, "bad.jsonl", bad, 0), BC_ERR_FORMAT);
    assert_non_null(strstr(f->err.message, "bad.jsonl:2: not a JSON line"));
}

/* A journal cut at every byte offset of its last record (as a SIGKILL in
 * the middle of a write could leave it) always reads: either the record is
 * whole, or it is skipped with a warning; never an error. */
static void test_journal_cut_everywhere(void **state) {
    fixture *f = *state;
    const char *head =
        "{\"record\":\"run\",\"schema_version\":2,\"model\":\"m\",\"dtype\":\"float32\","
        "\"fields\":[\"total_ms\"]}\n"
        "{\"record\":\"case\",\"index\":1,\"batch_size\":4,\"samples_per_prompt\":2,\"prompt_length\":8,"
        "\"requested_response_length\":4,\"precision\":\"fp32\",\"cache_policy\":\"retain\","
        "\"release_inference_cache\":false,\"status\":\"ok\",\"profiles\":[{\"total_ms\":5},{\"total_ms\":7}]}\n";
    const char *last =
        "{\"record\":\"case\",\"index\":0,\"batch_size\":1,\"samples_per_prompt\":1,\"prompt_length\":8,"
        "\"requested_response_length\":4,\"precision\":\"fp32\",\"cache_policy\":\"retain\","
        "\"release_inference_cache\":false,\"status\":\"ok\",\"message\":\"caf\xc3\xa9 \\u00e9\","
        "\"profiles\":[{\"total_ms\":1.5},{\"total_ms\":2.5}]}\n";
    size_t nh = strlen(head), nl = strlen(last);
    char *text = malloc(nh + nl + 1);
    assert_non_null(text);
    memcpy(text, head, nh);
    for (size_t cut = 0; cut <= nl; cut++) {
        memcpy(text + nh, last, cut);
        text[nh + cut] = '\0';
        bc_status st = read_text(f, "cut.jsonl", text, 0);
        if (st != BC_OK) fail_msg("cut at %zu of %zu: %s", cut, nl, f->err.message);
        if (f->rf.n_cases == 2) continue; /* the record was whole */
        assert_int_equal(f->rf.n_cases, 1);
        if (cut > 0 && f->rf.warning[0] == '\0') fail_msg("cut at %zu of %zu: skipped without a warning", cut, nl);
    }
    free(text);
}

/* A FIFO (or any file that is not regular) is refused before it is
 * opened, so reading it cannot hang. */
static void test_not_regular(void **state) {
    fixture *f = *state;
    snprintf(f->path, sizeof f->path, "%s/pipe.jsonl", f->dir);
    assert_int_equal(mkfifo(f->path, 0600), 0);
    assert_int_equal(bc_runfile_read(f->path, &f->rf, &f->err), BC_ERR_IO);
    assert_non_null(strstr(f->err.message, "regular file"));
    assert_non_null(strstr(f->err.message, "FIFO"));
}

/* The seed's keys only (DeepSpeed's OPSD rollout benchmark): the fields are
 * the first profile's keys; precision and cache from dtype and
 * release_inference_cache; the key matches benchctl's for the same case. */
static void test_seed_json(void **state) {
    fixture *f = *state;
    const char *seed =
        "{\"model\": \"facebook/opt-125m\", \"device\": \"cuda\", \"warmup\": 1, \"iterations\": 2,\n"
        " \"dtype\": \"bfloat16\", \"release_inference_cache\": true,\n"
        " \"cases\": [{\"batch_size\": 2, \"samples_per_prompt\": 1, \"prompt_length\": 32,\n"
        "   \"requested_response_length\": 16, \"returned_response_length\": 16, \"peak_memory_mb\": 900,\n"
        "   \"profiles\": [{\"prompt_expansion_ms\": 0.1, \"generation_ms\": 20, \"total_ms\": 21},\n"
        "                {\"prompt_expansion_ms\": 0.2, \"generation_ms\": 22, \"total_ms\": 23}]}]}\n";
    if (read_text(f, "seed.json", seed, 0) != BC_OK) fail_msg("%s", f->err.message);
    const bc_runfile *rf = &f->rf;
    assert_int_equal(rf->format, BC_RUNFILE_SEED_JSON);
    assert_int_equal(rf->schema_version, 0);
    assert_int_equal(rf->n_fields, 3);
    assert_string_equal(rf->field_names[2], "total_ms");
    assert_int_equal(rf->n_cases, 1);
    const bc_runfile_case *c = &rf->cases[0];
    assert_int_equal(c->index, 0);
    assert_string_equal(c->precision, "bfloat16");
    assert_string_equal(c->cache_policy, "release");
    assert_double_close(c->stats[2 * BC_N_STATS + BC_STAT_MEAN], 22.0, 0);
    char key[256];
    snprintf(key, sizeof key, "%s", c->key);
    /* benchctl's report of the same case has the same key */
    if (read_text(f, "r.json", k_report, 0) != BC_OK) fail_msg("%s", f->err.message);
    assert_non_null(bc_runfile_find(&f->rf, key));
}

/* The cache behaviour comes from release_inference_cache, not from the
 * plugin's name: a policy called "testrelease" (or anything) that released
 * the cache replays as releasing it (the json reporter replayed a mixed run
 * with every case "release_inference_cache": false before). */
static void test_release_from_flag(void **state) {
    fixture *f = *state;
    const char *report =
        "{\"schema_version\": 2, \"release_inference_cache\": null, \"fields\": [\"total_ms\"],\n"
        " \"cases\": [\n"
        "  {\"index\": 0, \"batch_size\": 1, \"precision\": \"testfp32\", \"dtype\": \"float32\",\n"
        "   \"cache_policy\": \"testrelease\", \"release_inference_cache\": true, \"status\": \"ok\",\n"
        "   \"profiles\": [{\"total_ms\": 1.0}]},\n"
        "  {\"index\": 1, \"batch_size\": 1, \"precision\": \"testfp32\", \"dtype\": \"float32\",\n"
        "   \"cache_policy\": \"release\", \"release_inference_cache\": false, \"status\": \"ok\",\n"
        "   \"profiles\": [{\"total_ms\": 1.0}]},\n"
        "  {\"index\": 2, \"batch_size\": 1, \"precision\": \"testfp32\", \"dtype\": \"float32\",\n"
        "   \"cache_policy\": \"release\", \"status\": \"ok\", \"profiles\": []}\n"
        " ]}\n";
    if (read_text(f, "rel.json", report, 0) != BC_OK) fail_msg("%s", f->err.message);
    const bc_runfile *rf = &f->rf;
    assert_int_equal(rf->n_cases, 3);
    assert_int_equal(rf->cases[0].release_cache, 1);
    assert_non_null(strstr(rf->cases[0].key, "cache=release"));
    assert_int_equal(rf->cases[1].release_cache, 0);
    assert_non_null(strstr(rf->cases[1].key, "cache=retain"));
    assert_int_equal(rf->cases[2].release_cache, -1);
    bc_replay rp;
    bc_error err = {0};
    if (bc_replay_build(rf, &rp, &err) != BC_OK) fail_msg("%s", err.message);
    assert_int_equal(rp.n_cases, 3);
    assert_int_equal(rp.cases[0].release_cache, 1);
    assert_int_equal(rp.cases[1].release_cache, 0);
    assert_int_equal(rp.cases[2].release_cache, 1); /* no flag: the plugin's name */
    bc_replay_free(&rp);
}

static void test_not_a_run(void **state) {
    fixture *f = *state;
    assert_int_equal(read_text(f, "a.json", "[1, 2]", 0), BC_ERR_FORMAT);
    assert_non_null(strstr(f->err.message, "the top level is not an object"));
    assert_int_equal(read_text(f, "b.json", "{\"model\": \"m\"}", 0), BC_ERR_FORMAT);
    assert_non_null(strstr(f->err.message, "no \"cases\" list"));
    assert_int_equal(read_text(f, "c.json", "{\"cases\": [", 0), BC_ERR_FORMAT);
    assert_non_null(strstr(f->err.message, "c.json:1: not a benchctl report or journal"));
    assert_int_equal(read_text(f, "d.json", "{\"cases\": [3]}", 0), BC_ERR_FORMAT);
    assert_non_null(strstr(f->err.message, "case 0 is not an object"));
    memset(&f->err, 0, sizeof f->err);
    assert_int_equal(bc_runfile_read("/nonexistent/run.json", &f->rf, &f->err), BC_ERR_NOT_FOUND);
    assert_int_equal(bc_runfile_read(f->dir, &f->rf, &f->err), BC_ERR_IO);
    assert_non_null(strstr(f->err.message, "not a regular file"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_report, setup, teardown),
        cmocka_unit_test_setup_teardown(test_journal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_journal_cut_everywhere, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_regular, setup, teardown),
        cmocka_unit_test_setup_teardown(test_seed_json, setup, teardown),
        cmocka_unit_test_setup_teardown(test_release_from_flag, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_a_run, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
