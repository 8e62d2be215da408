/* test_ckpt_set.c: the checkpoint file-set reader (engine/ckpt/ckpt_set.c)
 * over both formats. Every rule of a sharded checkpoint is the set's, not a
 * format's, so each test runs once with .safetensors shards and once with
 * pytorch_model.bin shards (tests/opt/ckpt_writer.c writes one-tensor files
 * of each) and expects the same outcome: shards opened in byte order of
 * their names, an index over the size limit or naming too many files
 * refused before any shard is opened, a tensor held by two shards refused,
 * and every error naming the file at fault.
 */
#define _POSIX_C_SOURCE 200809L

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "checkpoint.h"
#include "ckpt_set.h"
#include "ckpt_writer.h"
#include "fileio.h"

typedef struct format_case {
    const eng_ck_format *format;
    const char *ext; /* of its shard files */
    void (*write_shard)(const char *dir, const char *file, char tensor);
} format_case;

static const format_case formats[] = {
    {&eng_ck_safetensors, "safetensors", write_st_shard},
    {&eng_ck_pytorch, "bin", write_pt_shard},
};
#define N_FORMATS (sizeof formats / sizeof formats[0])

/* A test run once per format, each time in a fresh folder removed after:
 * the cmocka state of run_in_each_format. */
typedef struct format_test {
    void (*body)(const format_case *fc, const char *dir);
} format_test;

static void run_in_each_format(void **state) {
    const format_test *t = *state;
    for (size_t f = 0; f < N_FORMATS; f++) {
        char dir[64];
        assert_int_equal(make_temp_dir(dir, sizeof dir, "bc_ckset"), 0);
        print_message("  %s\n", formats[f].format->name);
        t->body(&formats[f], dir);
        remove_flat_dir(dir);
    }
}

#define IN_EACH_FORMAT(fn) cmocka_unit_test_prestate(run_in_each_format, &(format_test){fn})

/* fc's shard dir/<stem>.<ext> holding tensor. */
static void write_shard(const format_case *fc, const char *dir, const char *stem, char tensor) {
    char file[64];
    snprintf(file, sizeof file, "%s.%s", stem, fc->ext);
    fc->write_shard(dir, file, tensor);
}

/* fc's index in dir: weight_map from pairs "tensor", "stem", ... (NULL-ended). */
static void write_index(const format_case *fc, const char *dir, ...) {
    char json[1024];
    size_t at = (size_t)snprintf(json, sizeof json, "{\"metadata\": {}, \"weight_map\": {");
    va_list ap;
    va_start(ap, dir);
    const char *tensor;
    for (int i = 0; (tensor = va_arg(ap, const char *)) != NULL; i++) {
        const char *stem = va_arg(ap, const char *);
        at += (size_t)snprintf(json + at, sizeof json - at, "%s\"%s\": \"%s.%s\"", i ? ", " : "", tensor, stem,
                               fc->ext);
    }
    va_end(ap);
    snprintf(json + at, sizeof json - at, "}}");
    write_file(dir, fc->format->index_file, json, strlen(json));
}

/* Opens dir expecting code; the message must hold every string given
 * (NULL-ended) and s must be left empty. */
static void expect_open_fail(const char *dir, bc_status code, ...) {
    eng_ck_set s;
    bc_error err = {0};
    bc_status st = eng_ck_set_open_dir(&s, dir, &err);
    print_message("    -> %s\n", err.message);
    assert_int_equal(st, code);
    assert_int_equal(err.code, code);
    va_list ap;
    va_start(ap, code);
    const char *want;
    while ((want = va_arg(ap, const char *)) != NULL)
        if (!strstr(err.message, want)) fail_msg("expected '%s' in: %s", want, err.message);
    va_end(ap);
    assert_null(s.files);
    assert_null(s.by_name);
    eng_ck_set_close(&s);
}

static const char *base_name(const char *path) {
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

/* Shards are opened in byte order of their names whatever order weight_map
 * lists them in; each tensor comes from the shard the map names. */
static void test_shards_sorted(const format_case *fc, const char *dir) {
    char want[3][32];
    write_shard(fc, dir, "m-2", 'x');
    write_shard(fc, dir, "m-10", 'y');
    write_shard(fc, dir, "m-1", 'z');
    write_index(fc, dir, "x", "m-2", "y", "m-10", "z", "m-1", NULL);
    eng_ck_set s;
    bc_error err = {0};
    if (eng_ck_set_open_dir(&s, dir, &err) != BC_OK) fail_msg("%s", err.message);
    assert_ptr_equal(s.format, fc->format);
    assert_int_equal(s.n_files, 3);
    const char *stems[3] = {"m-1", "m-10", "m-2"};
    for (int i = 0; i < 3; i++) {
        snprintf(want[i], sizeof want[i], "%s.%s", stems[i], fc->ext);
        assert_string_equal(base_name(s.files[i].path), want[i]);
    }
    assert_int_equal(s.n_tensors, 3);
    assert_string_equal(s.by_name[0]->name, "x");
    assert_string_equal(s.by_name[2]->name, "z");
    assert_string_equal(base_name(eng_ck_set_find(&s, "x")->path), want[2]);
    assert_string_equal(base_name(eng_ck_set_find(&s, "y")->path), want[1]);
    assert_string_equal(base_name(eng_ck_set_find(&s, "z")->path), want[0]);
    assert_null(eng_ck_set_find(&s, "w"));
    float v[2];
    memcpy(v, eng_ck_set_find(&s, "y")->data, sizeof v);
    assert_true(v[0] == STORAGE[0] && v[1] == STORAGE[1]);
    eng_ck_set_close(&s);
}

/* An index over ENG_INDEX_JSON_MAX_BYTES is refused before it is read (a
 * sparse file: its size is all that is looked at). */
static void test_index_over_size_limit(const format_case *fc, const char *dir) {
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, fc->format->index_file);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)ENG_INDEX_JSON_MAX_BYTES + 1), 0);
    close(fd);
    expect_open_fail(dir, BC_ERR_FORMAT, path, "over the limit of 100000000 bytes", NULL);
    /* At the limit exactly, it is read (and this one is not JSON). */
    assert_int_equal(truncate(path, (off_t)ENG_INDEX_JSON_MAX_BYTES), 0);
    expect_open_fail(dir, BC_ERR_FORMAT, path, "not valid JSON", NULL);
}

/* weight_map naming more than ENG_CK_MAX_SHARDS files is refused before any
 * is opened (none of them exists). */
static void test_index_too_many_shards(const format_case *fc, const char *dir) {
    const size_t n = ENG_CK_MAX_SHARDS + 1, cap = n * 48 + 64;
    char *json = malloc(cap);
    assert_non_null(json);
    size_t at = (size_t)snprintf(json, cap, "{\"weight_map\": {");
    for (size_t i = 0; i < n; i++)
        at += (size_t)snprintf(json + at, cap - at, "%s\"t%zu\": \"s%zu.%s\"", i ? ", " : "", i, i, fc->ext);
    at += (size_t)snprintf(json + at, cap - at, "}}");
    write_file(dir, fc->format->index_file, json, at);
    free(json);
    expect_open_fail(dir, BC_ERR_FORMAT, fc->format->index_file, "names 4097 files (at most 4096)", NULL);
}

/* A tensor that two shards hold is refused, naming both files. */
static void test_duplicate_across_shards(const format_case *fc, const char *dir) {
    char a[128], b[128];
    write_shard(fc, dir, "a", 'x');
    write_shard(fc, dir, "b", 'x');
    write_index(fc, dir, "x", "a", "y", "b", NULL);
    snprintf(a, sizeof a, "%s/a.%s", dir, fc->ext);
    snprintf(b, sizeof b, "%s/b.%s", dir, fc->ext);
    expect_open_fail(dir, BC_ERR_FORMAT, fc->format->index_file, "tensor 'x' is in both", a, b, NULL);
}

/* Each way a sharded set can be wrong names the file at fault. */
static void test_errors_name_the_file(const format_case *fc, const char *dir) {
    char index[128], shard_b[128];
    snprintf(index, sizeof index, "%s/%s", dir, fc->format->index_file);
    snprintf(shard_b, sizeof shard_b, "%s/b.%s", dir, fc->ext);
    write_shard(fc, dir, "a", 'x');
    /* b is missing */
    write_index(fc, dir, "x", "a", "y", "b", NULL);
    expect_open_fail(dir, BC_ERR_IO, shard_b, "cannot open", NULL);
    /* b is not a checkpoint file */
    write_file(dir, base_name(shard_b), "not a checkpoint", 16);
    expect_open_fail(dir, BC_ERR_FORMAT, shard_b, NULL);
    /* weight_map names the wrong shard */
    write_shard(fc, dir, "b", 'y');
    write_index(fc, dir, "x", "b", "y", "b", NULL);
    expect_open_fail(dir, BC_ERR_FORMAT, index, "tensor 'x'", shard_b, "not there", NULL);
    /* a shard name that leaves the directory */
    const char *outside = "{\"weight_map\": {\"x\": \"../a\"}}", *no_map = "{\"metadata\": {}}";
    write_file(dir, fc->format->index_file, outside, strlen(outside));
    expect_open_fail(dir, BC_ERR_FORMAT, index, "tensor 'x'", "not a file name", NULL);
    /* no weight_map */
    write_file(dir, fc->format->index_file, no_map, strlen(no_map));
    expect_open_fail(dir, BC_ERR_FORMAT, index, "weight_map", NULL);
}

/* Safetensors wins when a directory holds both formats; a directory with
 * neither is one error naming the four files looked for. */
static void test_format_choice(void **state) {
    (void)state;
    char dir[64];
    assert_int_equal(make_temp_dir(dir, sizeof dir, "bc_ckset"), 0);
    expect_open_fail(dir, BC_ERR_IO, dir, "model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                     "pytorch_model.bin.index.json", NULL);
    assert_null(eng_ck_format_of_dir(dir));
    write_pt_shard(dir, "pytorch_model.bin", 'p');
    assert_ptr_equal(eng_ck_format_of_dir(dir), &eng_ck_pytorch);
    eng_ck_set s;
    bc_error err = {0};
    if (eng_ck_set_open_dir(&s, dir, &err) != BC_OK) fail_msg("%s", err.message);
    assert_non_null(eng_ck_set_find(&s, "p"));
    eng_ck_set_close(&s);
    write_st_shard(dir, "model.safetensors", 's');
    assert_ptr_equal(eng_ck_format_of_dir(dir), &eng_ck_safetensors);
    if (eng_ck_set_open_dir(&s, dir, &err) != BC_OK) fail_msg("%s", err.message);
    assert_int_equal(s.n_tensors, 1);
    assert_non_null(eng_ck_set_find(&s, "s"));
    eng_ck_set_close(&s);
    /* Either format, asked for by name. */
    if (eng_ck_set_open_format(&s, &eng_ck_pytorch, dir, &err) != BC_OK) fail_msg("%s", err.message);
    assert_non_null(eng_ck_set_find(&s, "p"));
    eng_ck_set_close(&s);
    remove_flat_dir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        IN_EACH_FORMAT(test_shards_sorted),
        IN_EACH_FORMAT(test_index_over_size_limit),
        IN_EACH_FORMAT(test_index_too_many_shards),
        IN_EACH_FORMAT(test_duplicate_across_shards),
        IN_EACH_FORMAT(test_errors_name_the_file),
        cmocka_unit_test(test_format_choice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
