/* test_safetensors.c: the .safetensors reader (engine/ckpt/safetensors.c).
 *
 * Each test writes its files into a fresh temp directory: one good file (and
 * a good sharded set), then one malformed or hostile header per test. Every
 * bad case must fail with BC_ERR_FORMAT (or BC_ERR_IO) and a message naming
 * the file and, where there is one, the tensor; under ASan+UBSan none may
 * read outside the file.
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ckpt_writer.h"
#include "safetensors.h"

typedef struct fixture {
    char dir[64];
    char path[128]; /* dir/model.safetensors */
} fixture;

static int setup(void **state) {
    fixture *fx = calloc(1, sizeof *fx);
    if (!fx || make_temp_dir(fx->dir, sizeof fx->dir, "bc_st") != 0) {
        free(fx);
        return -1;
    }
    snprintf(fx->path, sizeof fx->path, "%s/model.safetensors", fx->dir);
    *state = fx;
    return 0;
}

static int teardown(void **state) {
    fixture *fx = *state;
    remove_flat_dir(fx->dir);
    free(fx);
    return 0;
}

/* Writes raw bytes to dir/name. */
static void write_bytes(const fixture *fx, const char *name, const void *bytes, size_t len) {
    char p[256];
    snprintf(p, sizeof p, "%s/%s", fx->dir, name);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    if (len) assert_int_equal(fwrite(bytes, 1, len, f), len);
    fclose(f);
}

/* Writes a safetensors file: the header length (header_len_override if not
 * UINT64_MAX, else strlen(header)), the header, then data_len bytes of data
 * (value i & 0xff at byte i). */
static void write_st_n(const fixture *fx, const char *name, const char *header, size_t hl, size_t data_len,
                       uint64_t header_len_override) {
    size_t len = 8 + hl + data_len;
    unsigned char *buf = malloc(len);
    assert_non_null(buf);
    uint64_t n = header_len_override != UINT64_MAX ? header_len_override : hl;
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)(n >> (8 * i));
    memcpy(buf + 8, header, hl);
    for (size_t i = 0; i < data_len; i++) buf[8 + hl + i] = (unsigned char)(i & 0xff);
    write_bytes(fx, name, buf, len);
    free(buf);
}

static void write_st(const fixture *fx, const char *name, const char *header, size_t data_len,
                     uint64_t header_len_override) {
    write_st_n(fx, name, header, strlen(header), data_len, header_len_override);
}

/* Opens fx->path expecting failure with code; checks the message names the
 * file and every string in the NULL-terminated list. */
static void expect_fail(const fixture *fx, bc_status code, ...) {
    eng_ck_file f;
    bc_error err = {0};
    bc_status st = eng_ck_file_open(&f, eng_st_parse, fx->path, &err);
    print_message("    -> %s\n", err.message);
    assert_int_equal(st, code);
    assert_int_equal(err.code, code);
    assert_non_null(strstr(err.message, fx->path));
    va_list ap;
    va_start(ap, code);
    const char *s;
    while ((s = va_arg(ap, const char *)) != NULL) {
        if (!strstr(err.message, s)) print_message("    message lacks '%s'\n", s);
        assert_non_null(strstr(err.message, s));
    }
    va_end(ap);
    assert_null(f.tensors); /* left empty */
    eng_ck_file_close(&f);
}

static void expect_header_fail(const fixture *fx, const char *header, size_t data_len, ...) {
    write_st(fx, "model.safetensors", header, data_len, UINT64_MAX);
    eng_ck_file f;
    bc_error err = {0};
    bc_status st = eng_ck_file_open(&f, eng_st_parse, fx->path, &err);
    print_message("    -> %s\n", err.message);
    assert_int_equal(st, BC_ERR_FORMAT);
    assert_non_null(strstr(err.message, fx->path));
    va_list ap;
    va_start(ap, data_len);
    const char *s;
    while ((s = va_arg(ap, const char *)) != NULL) {
        if (!strstr(err.message, s)) print_message("    message lacks '%s'\n", s);
        assert_non_null(strstr(err.message, s));
    }
    va_end(ap);
    eng_ck_file_close(&f);
}

/* ------------------------------------------------------------ good files */

static void test_good_file(void **state) {
    fixture *fx = *state;
    /* b: F32 [2, 3] = 24 bytes at [0, 24); a: BF16 [4] = 8 bytes at [24, 32);
     * e: F16 [0] = 0 bytes at [32, 32). */
    write_st(fx, "model.safetensors",
             "{\"__metadata__\":{\"format\":\"pt\"},"
             "\"b\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
             "\"a\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[24,32]},"
             "\"e\":{\"dtype\":\"F16\",\"shape\":[0],\"data_offsets\":[32,32]}}   ",
             32, UINT64_MAX);
    eng_ck_file f;
    bc_error err = {0};
    assert_int_equal(eng_ck_file_open(&f, eng_st_parse, fx->path, &err), BC_OK);
    assert_int_equal(f.n_tensors, 3);
    const eng_ck_tensor *a = eng_ck_file_find(&f, "a"), *b = eng_ck_file_find(&f, "b"), *e = eng_ck_file_find(&f, "e");
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(e);
    assert_null(eng_ck_file_find(&f, "__metadata__"));
    assert_null(eng_ck_file_find(&f, "c"));
    assert_int_equal(b->dtype, ENG_CK_F32);
    assert_int_equal(b->ndim, 2);
    assert_int_equal(b->shape[0], 2);
    assert_int_equal(b->shape[1], 3);
    assert_int_equal(b->numel, 6);
    assert_int_equal(b->nbytes, 24);
    assert_int_equal(a->dtype, ENG_CK_BF16);
    assert_int_equal(a->numel, 4);
    assert_int_equal(e->numel, 0);
    assert_string_equal(eng_ck_dtype_name(a->dtype), "BF16");
    /* data: byte i of the data section holds i. */
    const unsigned char *pa = a->data, *pb = b->data;
    assert_int_equal(pb[0], 0);
    assert_int_equal(pb[23], 23);
    assert_int_equal(pa[0], 24);
    assert_int_equal(pa[7], 31);
    assert_string_equal(a->path, fx->path);
    eng_ck_file_close(&f);
    eng_ck_file_close(&f); /* closing twice is safe */
}

static void test_good_dir_single(void **state) {
    fixture *fx = *state;
    write_st(fx, "model.safetensors", "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
             UINT64_MAX);
    eng_ck_set s;
    bc_error err = {0};
    assert_int_equal(eng_ck_set_open_dir(&s, fx->dir, &err), BC_OK);
    assert_int_equal(s.n_files, 1);
    assert_non_null(eng_ck_set_find(&s, "x"));
    assert_null(eng_ck_set_find(&s, "y"));
    eng_ck_set_close(&s);
}

static const char *shard_index =
    "{\"metadata\":{\"total_size\":12},\"weight_map\":{"
    "\"x\":\"model-00001-of-00002.safetensors\",\"y\":\"model-00002-of-00002.safetensors\","
    "\"z\":\"model-00002-of-00002.safetensors\"}}";

static void write_shards(const fixture *fx) {
    write_st(fx, "model-00001-of-00002.safetensors", "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
             4, UINT64_MAX);
    write_st(fx, "model-00002-of-00002.safetensors",
             "{\"y\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]},"
             "\"z\":{\"dtype\":\"F32\",\"shape\":[1,1],\"data_offsets\":[4,8]}}",
             8, UINT64_MAX);
}

static void test_good_sharded(void **state) {
    fixture *fx = *state;
    write_shards(fx);
    write_bytes(fx, "model.safetensors.index.json", shard_index, strlen(shard_index));
    eng_ck_set s;
    bc_error err = {0};
    assert_int_equal(eng_ck_set_open_dir(&s, fx->dir, &err), BC_OK);
    assert_int_equal(s.n_files, 2);
    assert_int_equal(s.n_tensors, 3);
    const eng_ck_tensor *x = eng_ck_set_find(&s, "x"), *y = eng_ck_set_find(&s, "y"), *z = eng_ck_set_find(&s, "z");
    assert_non_null(x);
    assert_non_null(y);
    assert_non_null(z);
    assert_non_null(strstr(x->path, "model-00001-of-00002"));
    assert_non_null(strstr(y->path, "model-00002-of-00002"));
    assert_int_equal(y->dtype, ENG_CK_F16);
    eng_ck_set_close(&s);
}

/* ------------------------------------------------------- sharded: bad */

static void expect_set_fail(const fixture *fx, bc_status code, const char *s1, const char *s2) {
    eng_ck_set s;
    bc_error err = {0};
    bc_status st = eng_ck_set_open_dir(&s, fx->dir, &err);
    print_message("    -> %s\n", err.message);
    assert_int_equal(st, code);
    if (s1) assert_non_null(strstr(err.message, s1));
    if (s2) assert_non_null(strstr(err.message, s2));
    assert_null(s.files);
    eng_ck_set_close(&s);
}

/* The two shards of write_shards with an index whose weight_map maps x and y
 * to shards 1x and 2y (1 or 2). */
static void write_shards_mapped(const fixture *fx, int x, int y) {
    write_shards(fx);
    char idx[256];
    snprintf(idx, sizeof idx,
             "{\"weight_map\":{\"x\":\"model-0000%d-of-00002.safetensors\",\"y\":\"model-0000%d-of-00002.safetensors\"}}", x,
             y);
    write_bytes(fx, "model.safetensors.index.json", idx, strlen(idx));
}

static void test_sharded_wrong_file(void **state) {
    write_shards_mapped(*state, 2, 2);
    expect_set_fail(*state, BC_ERR_FORMAT, "'x'", "model.safetensors.index.json");
}

/* Every tensor of a shard must be in weight_map (model-00002 holds y and z). */
static void test_sharded_unlisted_tensor(void **state) {
    write_shards_mapped(*state, 1, 2);
    expect_set_fail(*state, BC_ERR_FORMAT, "'z'", "not in weight_map");
}

static void test_sharded_traversal(void **state) {
    fixture *fx = *state;
    const char *idx = "{\"weight_map\":{\"x\":\"../etc/passwd\"}}";
    write_bytes(fx, "model.safetensors.index.json", idx, strlen(idx));
    expect_set_fail(fx, BC_ERR_FORMAT, "'x'", "not a file name");
}

static void test_sharded_missing_shard(void **state) {
    fixture *fx = *state;
    write_bytes(fx, "model.safetensors.index.json", shard_index, strlen(shard_index));
    expect_set_fail(fx, BC_ERR_IO, "model-00001-of-00002.safetensors", "cannot open");
}

static void test_sharded_duplicate(void **state) {
    fixture *fx = *state;
    write_shards(fx);
    write_st(fx, "model-00001-of-00002.safetensors",
             "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
             "\"y\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
             8, UINT64_MAX);
    write_bytes(fx, "model.safetensors.index.json", shard_index, strlen(shard_index));
    expect_set_fail(fx, BC_ERR_FORMAT, "'y'", "is in both");
}

static void test_sharded_bad_index(void **state) {
    fixture *fx = *state;
    write_bytes(fx, "model.safetensors.index.json", "{\"weight_map\": [", 16);
    expect_set_fail(fx, BC_ERR_FORMAT, "model.safetensors.index.json", "not valid JSON");
    write_bytes(fx, "model.safetensors.index.json", "{\"metadata\":{}}", 15);
    expect_set_fail(fx, BC_ERR_FORMAT, "model.safetensors.index.json", "weight_map");
}

static void test_empty_dir(void **state) {
    fixture *fx = *state;
    expect_set_fail(fx, BC_ERR_IO, fx->dir, "neither");
}

/* ----------------------------------------------------------- bad files */

static void test_too_short(void **state) {
    fixture *fx = *state;
    write_bytes(fx, "model.safetensors", "\x05\0\0", 3);
    expect_fail(fx, BC_ERR_FORMAT, "too short", NULL);
    write_bytes(fx, "model.safetensors", "", 0);
    expect_fail(fx, BC_ERR_FORMAT, "too short", NULL);
}

static void test_missing_file(void **state) {
    fixture *fx = *state;
    expect_fail(fx, BC_ERR_IO, "cannot open", NULL);
}

static void test_huge_header_length(void **state) {
    fixture *fx = *state;
    write_st(fx, "model.safetensors", "{}", 0, (uint64_t)1 << 62);
    expect_fail(fx, BC_ERR_FORMAT, "limit", NULL);
    write_st(fx, "model.safetensors", "{}", 0, UINT64_MAX - 1);
    expect_fail(fx, BC_ERR_FORMAT, "limit", NULL);
}

static void test_header_past_end(void **state) {
    fixture *fx = *state;
    write_st(fx, "model.safetensors", "{}", 0, 1000);
    expect_fail(fx, BC_ERR_FORMAT, "past the end", NULL);
}

static void test_bad_json(void **state) {
    fixture *fx = *state;
    expect_header_fail(fx, "{\"x\":{\"dtype\":\"F32\",", 0, "not valid JSON", NULL);
    expect_header_fail(fx, "{} trailing", 0, "not valid JSON", NULL);
    expect_header_fail(fx, "{\"x\":1,\"x\":2}", 0, "not valid JSON", NULL); /* duplicate key */
    /* A NUL inside the header. */
    write_st_n(fx, "model.safetensors", "{\"a\0b\":{}}", 10, 0, UINT64_MAX);
    expect_fail(fx, BC_ERR_FORMAT, "not valid JSON", NULL);
}

static void test_not_object(void **state) {
    fixture *fx = *state;
    expect_header_fail(fx, "[1,2,3]", 0, "not a JSON object", NULL);
    expect_header_fail(fx, "\"hello\"", 0, "JSON", NULL); /* jansson: not valid JSON at top level */
    expect_header_fail(fx, "{\"w\":[0]}", 0, "'w'", "not a JSON object", NULL);
}

static void test_unknown_dtype(void **state) {
    fixture *fx = *state;
    expect_header_fail(fx, "{\"w\":{\"dtype\":\"F17\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "'w'", "dtype",
                       "F17", NULL);
    expect_header_fail(fx, "{\"w\":{\"dtype\":7,\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "'w'", "dtype", NULL);
}

static void test_missing_keys(void **state) {
    fixture *fx = *state;
    expect_header_fail(fx, "{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "'w'", "dtype", NULL);
    expect_header_fail(fx, "{\"w\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, "'w'", "shape", NULL);
    expect_header_fail(fx, "{\"w\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, "'w'", "data_offsets", NULL);
    expect_header_fail(fx, "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":1}}", 4, "'w'",
                       "other", NULL);
}

static void test_bad_shape(void **state) {
    fixture *fx = *state;
    expect_header_fail(fx, "{\"w\":{\"dtype\":\"F32\",\"shape\":4,\"data_offsets\":[0,4]}}", 4, "'w'", "shape", NULL);
    expect_header_fail(fx, "{\"w\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4, "'w'", "shape[0]",
                       NULL);
    expect_header_fail(fx, "{\"w\":{\"dtype\":\"F32\",\"shape\":[1,1.5],\"data_offsets\":[0,4]}}", 4, "'w'",
                       "shape[1]", NULL);
    expect_header_fail(fx, "{\"w\":{\"dtype\":\"F32\",\"shape\":[\"1\"],\"data_offsets\":[0,4]}}", 4, "'w'", "shape[0]",
                       NULL);
    expect_header_fail(fx, "{\"w\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4, "'w'",
                       "dimensions", NULL);
    /* numel * 4 overflows u64. */
    expect_header_fail(fx,
                       "{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,4]}}", 4,
                       "'w'", "overflow", NULL);
    expect_header_fail(fx, "{\"w\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904],\"data_offsets\":[0,4]}}", 4,
                       "'w'", "overflow", NULL);
    /* An integer jansson cannot hold. */
    expect_header_fail(fx, "{\"w\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999999],\"data_offsets\":[0,4]}}", 4,
                       "not valid JSON", NULL);
}

static void test_bad_offsets(void **state) {
    fixture *fx = *state;
    expect_header_fail(fx, "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 4, "'w'", "data_offsets",
                       NULL);
    expect_header_fail(fx, "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}}", 4, "'w'", "data_offsets",
                       NULL);
    expect_header_fail(fx, "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}}", 4, "'w'",
                       "data_offsets", NULL);
    expect_header_fail(fx, "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":\"0-4\"}}", 4, "'w'",
                       "data_offsets", NULL);
    /* Past the data section: a truncated file. */
    expect_header_fail(fx, "{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 12, "'w'", "truncated",
                       NULL);
    expect_header_fail(fx, "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[9223372036854775800,9223372036854775804]}}",
                       4, "'w'", "data section", NULL);
}

static void test_size_mismatch(void **state) {
    fixture *fx = *state;
    expect_header_fail(fx, "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, "'w'", "needs 8", NULL);
    expect_header_fail(fx, "{\"w\":{\"dtype\":\"BF16\",\"shape\":[2,2],\"data_offsets\":[0,16]}}", 16, "'w'", "needs 8",
                       NULL);
}

static void test_overlap_and_holes(void **state) {
    fixture *fx = *state;
    expect_header_fail(fx,
                       "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                       "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
                       12, "'b'", "overlap", "'a'", NULL);
    expect_header_fail(fx,
                       "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                       "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
                       8, "overlap", NULL);
    expect_header_fail(fx,
                       "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                       "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}",
                       12, "'b'", "no tensor", NULL);
    expect_header_fail(fx, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 8, "last 4 bytes", NULL);
}

static void test_bad_metadata(void **state) {
    fixture *fx = *state;
    expect_header_fail(fx, "{\"__metadata__\":[1]}", 0, "__metadata__", NULL);
    expect_header_fail(fx, "{\"__metadata__\":{\"format\":1}}", 0, "__metadata__", "'format'", NULL);
    /* A good one with no tensors at all. */
    write_st(fx, "model.safetensors", "{\"__metadata__\":{\"format\":\"pt\"}}", 0, UINT64_MAX);
    eng_ck_file f;
    bc_error err = {0};
    assert_int_equal(eng_ck_file_open(&f, eng_st_parse, fx->path, &err), BC_OK);
    assert_int_equal(f.n_tensors, 0);
    assert_null(eng_ck_file_find(&f, "x"));
    eng_ck_file_close(&f);
}

/* The in-memory parser on a buffer with no slack: ASan catches any read past
 * len. */
static void test_parse_exact_buffer(void **state) {
    (void)state;
    const char *h = "{\"w\":{\"dtype\":\"F16\",\"shape\":[3],\"data_offsets\":[0,6]}}";
    size_t hl = strlen(h), len = 8 + hl + 6;
    unsigned char *buf = malloc(len);
    assert_non_null(buf);
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)((uint64_t)hl >> (8 * i));
    memcpy(buf + 8, h, hl);
    memset(buf + 8 + hl, 0x3c, 6);
    eng_ck_file f;
    bc_error err = {0};
    assert_int_equal(eng_st_parse(&f, "mem", buf, len, &err), BC_OK);
    const eng_ck_tensor *w = eng_ck_file_find(&f, "w");
    assert_non_null(w);
    assert_ptr_equal(w->data, buf + 8 + hl);
    eng_ck_file_close(&f);
    /* Every truncation of it fails cleanly. */
    for (size_t cut = 0; cut < len; cut++) {
        unsigned char *p = malloc(cut ? cut : 1);
        assert_non_null(p);
        memcpy(p, buf, cut);
        assert_int_not_equal(eng_st_parse(&f, "mem", p, cut, &err), BC_OK);
        assert_non_null(strstr(err.message, "mem"));
        eng_ck_file_close(&f);
        free(p);
    }
    free(buf);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_good_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_good_dir_single, setup, teardown),
        cmocka_unit_test_setup_teardown(test_good_sharded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sharded_wrong_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sharded_unlisted_tensor, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sharded_traversal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sharded_missing_shard, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sharded_duplicate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sharded_bad_index, setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_too_short, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_huge_header_length, setup, teardown),
        cmocka_unit_test_setup_teardown(test_header_past_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_json, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_object, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_dtype, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_shape, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_offsets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_size_mismatch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_overlap_and_holes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_metadata, setup, teardown),
        cmocka_unit_test(test_parse_exact_buffer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
