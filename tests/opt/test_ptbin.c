/* test_ptbin.c: the pytorch_model.bin opener (engine/ckpt/ptbin.c, with its
 * zip and pickle readers ptzip.c and ptpickle.c) and the checkpoint loader's
 * .bin path.
 *
 * tests/opt/golden/preln-bin holds the preln model's weights as torch.save
 * wrote them (tools/golden/make_golden.py); they must load bit-identically to
 * preln/model.safetensors (the golden forward on preln-bin is in
 * test_golden.c). The zip writer of ckpt_writer.c builds the rest: small
 * valid archives (STORED, DEFLATE, ZIP64 end records and extra fields), a
 * sharded index over two archives, and hostile inputs: a truncated file,
 * bytes that are not a zip, a pickle with a forbidden GLOBAL,
 * a storage offset out of range, an unset memo index, and every one-byte
 * corruption of a small valid pickle; each must fail cleanly with an error
 * that names the file.
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
#include <zlib.h>

#include <cmocka.h>

#include "ckpt_writer.h"
#include "opt_model.h"
#include "ptbin.h"

#define GOLDEN BENCHCTL_SOURCE_DIR "/tests/opt/golden/"
#define FAKE "dir/pytorch_model.bin"

/* Parses a zip of pkl plus a 4-element F32 storage "0"; the zip is freed
 * before returning, so only the status and error are meaningful. */
static bc_status parse_pickle(eng_ck_file *f, const unsigned char *pkl, size_t n, int deflate, bc_error *err) {
    zentry e[] = {{"archive/data.pkl", pkl, n}, {"archive/byteorder", "little", 6}, {"archive/data/0", STORAGE, 16}};
    buf z = make_zip(e, 3, deflate);
    bc_status st = eng_pt_parse(f, FAKE, z.p, z.n, err);
    /* f's tensor data pointed into z: the callers only check the status. */
    free(z.p);
    return st;
}

/* ------------------------------------------------------------- tests */

static void test_bin_matches_safetensors(void **state) {
    (void)state;
    bc_error err = {0};
    eng_ck_set pt;
    eng_ck_set st;
    if (eng_ck_set_open_dir(&pt, GOLDEN "preln-bin", &err) != BC_OK) fail_msg("%s", err.message);
    if (eng_ck_set_open_dir(&st, GOLDEN "preln", &err) != BC_OK) fail_msg("%s", err.message);
    assert_true(st.n_tensors > 30);
    for (size_t i = 0; i < st.n_tensors; i++) {
        const eng_ck_tensor *a = st.by_name[i], *b = NULL;
        for (size_t k = 0; k < pt.n_tensors; k++)
            if (strcmp(pt.by_name[k]->name, a->name) == 0) b = pt.by_name[k];
        if (!b) fail_msg("%s missing from the .bin", a->name);
        assert_int_equal(a->dtype, b->dtype);
        assert_int_equal(a->ndim, b->ndim);
        assert_memory_equal(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim);
        assert_int_equal(a->nbytes, b->nbytes);
        assert_memory_equal(a->data, b->data, a->nbytes);
    }
    /* The .bin also carries the tied lm_head (sharing embed_tokens' storage). */
    assert_int_equal(pt.n_tensors, st.n_tensors + 1);
    eng_ck_set_close(&pt);
    eng_ck_set_close(&st);
}

static void cmp_matrix(const eng_matrix *a, const eng_matrix *b) {
    assert_int_equal(a->rows, b->rows);
    assert_int_equal(a->cols, b->cols);
    assert_memory_equal(a->data, b->data, (size_t)a->rows * a->cols * eng_dtype_size(a->dtype));
}

static void test_load_checkpoint_bin(void **state) {
    (void)state;
    eng_dtype dts[] = {ENG_F32, ENG_BF16};
    for (int d = 0; d < 2; d++) {
        bc_error err = {0};
        opt_weights a, b;
        if (opt_weights_load_checkpoint(&a, GOLDEN "preln-bin", dts[d], &err) != BC_OK) fail_msg("%s", err.message);
        if (opt_weights_load_checkpoint(&b, GOLDEN "preln", dts[d], &err) != BC_OK) fail_msg("%s", err.message);
        const int C = a.hp.s.hidden_size, F = a.hp.s.ffn_size;
        cmp_matrix(&a.embed_tokens, &b.embed_tokens);
        cmp_matrix(&a.embed_positions, &b.embed_positions);
        assert_memory_equal(a.final_ln_gamma, b.final_ln_gamma, sizeof(float) * (size_t)C);
        assert_memory_equal(a.final_ln_beta, b.final_ln_beta, sizeof(float) * (size_t)C);
        for (int l = 0; l < a.hp.s.n_layers; l++) {
            const opt_layer_weights *x = &a.layers[l], *y = &b.layers[l];
            cmp_matrix(&x->q_proj, &y->q_proj);
            cmp_matrix(&x->k_proj, &y->k_proj);
            cmp_matrix(&x->v_proj, &y->v_proj);
            cmp_matrix(&x->out_proj, &y->out_proj);
            cmp_matrix(&x->fc1, &y->fc1);
            cmp_matrix(&x->fc2, &y->fc2);
            assert_memory_equal(x->q_bias, y->q_bias, sizeof(float) * (size_t)C);
            assert_memory_equal(x->fc1_bias, y->fc1_bias, sizeof(float) * (size_t)F);
            assert_memory_equal(x->fc2_bias, y->fc2_bias, sizeof(float) * (size_t)C);
            assert_memory_equal(x->ln1_gamma, y->ln1_gamma, sizeof(float) * (size_t)C);
            assert_memory_equal(x->ln2_beta, y->ln2_beta, sizeof(float) * (size_t)C);
        }
        opt_weights_free(&a);
        opt_weights_free(&b);
    }
}

static void expect_error(bc_status st, const bc_error *err, const char *needle) {
    assert_int_not_equal(st, BC_OK);
    print_message("  error: %s\n", err->message);
    if (!strstr(err->message, FAKE) && !strstr(err->message, "pytorch_model.bin"))
        fail_msg("error does not name the file: %s", err->message);
    if (needle && !strstr(err->message, needle)) fail_msg("expected '%s' in: %s", needle, err->message);
}

static void test_small_valid_stored_deflate_zip64(void **state) {
    (void)state;
    unsigned char pkl[512];
    size_t n = make_pickle(pkl, 1, NULL, NULL);
    for (int mode = 0; mode < 4; mode++) { /* STORED, DEFLATE, each without and with ZIP64 */
        zentry e[] = {{"archive/data.pkl", pkl, n}, {"archive/data/0", STORAGE, 16}};
        buf z = make_zip_ex(e, 2, mode & 1, mode >> 1);
        eng_ck_file f;
        bc_error err = {0};
        if (eng_pt_parse(&f, FAKE, z.p, z.n, &err) != BC_OK) fail_msg("%s", err.message);
        assert_int_equal(f.n_tensors, 1);
        assert_string_equal(f.tensors[0].name, "w");
        assert_int_equal(f.tensors[0].dtype, ENG_CK_F32);
        assert_int_equal(f.tensors[0].ndim, 1);
        assert_int_equal(f.tensors[0].shape[0], 2);
        float got[2];
        memcpy(got, f.tensors[0].data, sizeof got);
        assert_true(got[0] == STORAGE[1] && got[1] == STORAGE[2]); /* offset 1 */
        eng_ck_file_close(&f);
        free(z.p);
    }
}

static void test_truncated(void **state) {
    (void)state;
    FILE *fp = fopen(GOLDEN "preln-bin/pytorch_model.bin", "rb");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    size_t len = (size_t)ftell(fp);
    fseek(fp, 0, SEEK_SET);
    unsigned char *all = malloc(len);
    assert_true(all && fread(all, 1, len, fp) == len);
    fclose(fp);
    size_t cuts[] = {0, 1, 21, 100, len / 3, len / 2, len - 23, len - 22, len - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        unsigned char *p = malloc(cuts[i] ? cuts[i] : 1); /* exact-size copy so ASan sees any over-read */
        memcpy(p, all, cuts[i]);
        eng_ck_file f;
        bc_error err = {0};
        expect_error(eng_pt_parse(&f, FAKE, p, cuts[i], &err), &err, NULL);
        eng_ck_file_close(&f);
        free(p);
    }
    /* Through the loader: a checkpoint dir whose .bin is cut short. */
    char dir[] = "/tmp/bc_ptbin_XXXXXX", path[256], cmd[512];
    assert_non_null(mkdtemp(dir));
    snprintf(cmd, sizeof cmd, "cp " GOLDEN "preln-bin/config.json %s/", dir);
    assert_int_equal(system(cmd), 0);
    snprintf(path, sizeof path, "%s/pytorch_model.bin", dir);
    fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(all, 1, len - 1000, fp), len - 1000);
    fclose(fp);
    opt_weights w;
    bc_error err = {0};
    bc_status st = opt_weights_load_checkpoint(&w, dir, ENG_F32, &err);
    expect_error(st, &err, path);
    unlink(path);
    snprintf(path, sizeof path, "%s/config.json", dir);
    unlink(path);
    rmdir(dir);
    free(all);
}

static void test_not_a_zip(void **state) {
    (void)state;
    char junk[4096];
    memset(junk, 'A', sizeof junk);
    eng_ck_file f;
    bc_error err = {0};
    expect_error(eng_pt_parse(&f, FAKE, junk, sizeof junk, &err), &err, "not a zip");
    /* A zip without a data.pkl. */
    zentry e[] = {{"archive/data/0", STORAGE, 16}};
    buf z = make_zip(e, 1, 0);
    expect_error(eng_pt_parse(&f, FAKE, z.p, z.n, &err), &err, "data.pkl");
    free(z.p);
    /* An archive prefix longer than the reader's entry-name buffer allows. */
    char longname[400];
    memset(longname, 'a', 300);
    strcpy(longname + 300, "/data.pkl");
    zentry l[] = {{longname, "\x80\x02}.", 4}};
    z = make_zip(l, 1, 0);
    expect_error(eng_pt_parse(&f, FAKE, z.p, z.n, &err), &err, "too long");
    free(z.p);
}

static void test_forbidden_global(void **state) {
    (void)state;
    unsigned char pkl[512];
    size_t n = make_pickle(pkl, 0, "os", "system");
    eng_ck_file f;
    bc_error err = {0};
    expect_error(parse_pickle(&f, pkl, n, 0, &err), &err, "refusing GLOBAL 'os system'");
    const char *evil = "\x80\x02" "cbuiltins\neval\n" "X\x01\x00\x00\x00" "1\x85R.";
    expect_error(parse_pickle(&f, (const unsigned char *)evil, strlen(evil), 0, &err), &err, "builtins eval");
    /* An opcode outside the state-dict subset (INST). */
    const char *inst = "\x80\x02(ios\nsystem\n.";
    expect_error(parse_pickle(&f, (const unsigned char *)inst, strlen(inst), 0, &err), &err, "opcode 0x69");
}

static void test_storage_offset_out_of_range(void **state) {
    (void)state;
    unsigned char pkl[512];
    size_t n = make_pickle(pkl, 3, NULL, NULL); /* elements [3, 5) of 4 */
    eng_ck_file f;
    bc_error err = {0};
    expect_error(parse_pickle(&f, pkl, n, 0, &err), &err, "outside its 4-element storage");
    n = make_pickle(pkl, 2, NULL, NULL); /* [2, 4): fits */
    if (parse_pickle(&f, pkl, n, 0, &err) != BC_OK) fail_msg("%s", err.message);
    eng_ck_file_close(&f);
}

static void test_bad_memo(void **state) {
    (void)state;
    const char *p = "\x80\x02h\x07.";
    eng_ck_file f;
    bc_error err = {0};
    expect_error(parse_pickle(&f, (const unsigned char *)p, strlen(p), 0, &err), &err, "memo index 7");
    const char *q = "\x80\x02}r\xff\xff\xff\x7f.";
    expect_error(parse_pickle(&f, (const unsigned char *)q, strlen(q), 0, &err), &err, "too large");
}

/* Every single-byte change of a valid pickle either parses or fails with a
 * message; under ASan this shows no read past a bound. */
static void test_every_byte_corrupted(void **state) {
    (void)state;
    unsigned char pkl[512];
    size_t n = make_pickle(pkl, 1, NULL, NULL);
    zentry e[] = {{"archive/data.pkl", pkl, n}, {"archive/data/0", STORAGE, 16}};
    buf z = make_zip(e, 2, 0);
    size_t ok = 0, bad = 0;
    for (size_t i = 0; i < z.n; i++) {
        unsigned char keep = z.p[i];
        static const unsigned char vals[] = {0x00, 0x01, 0x7f, 0x80, 0xff, 'c', '(', 't', 'R', 'q', 'h'};
        for (size_t v = 0; v < sizeof vals; v++) {
            z.p[i] = vals[v];
            unsigned char *copy = malloc(z.n);
            memcpy(copy, z.p, z.n);
            eng_ck_file f;
            bc_error err = {0};
            if (eng_pt_parse(&f, FAKE, copy, z.n, &err) == BC_OK) {
                ok++;
                eng_ck_file_close(&f);
            } else {
                bad++;
                assert_non_null(strstr(err.message, FAKE));
            }
            free(copy);
        }
        z.p[i] = keep;
    }
    print_message("  %zu corruptions parsed, %zu refused\n", ok, bad);
    assert_true(bad > 0);
    free(z.p);
}

/* pytorch_model.bin.index.json over two crafted shards: the tensors of both
 * come back; a weight_map entry naming the wrong shard is refused. */
static void test_sharded(void **state) {
    (void)state;
    char dir[] = "/tmp/bc_ptshard_XXXXXX";
    assert_non_null(mkdtemp(dir));
    write_pt_shard(dir, "a.bin", 'w');
    write_pt_shard(dir, "b.bin", 'v');
    const char *good = "{\"weight_map\": {\"w\": \"a.bin\", \"v\": \"b.bin\"}}";
    write_file(dir, "pytorch_model.bin.index.json", good, strlen(good));
    eng_ck_set s;
    bc_error err = {0};
    if (eng_ck_set_open_dir(&s, dir, &err) != BC_OK) fail_msg("%s", err.message);
    assert_int_equal(s.n_files, 2);
    assert_int_equal(s.n_tensors, 2);
    assert_string_equal(s.by_name[0]->name, "v");
    assert_string_equal(s.by_name[1]->name, "w");
    eng_ck_set_close(&s);
    const char *bad = "{\"weight_map\": {\"w\": \"b.bin\", \"v\": \"b.bin\"}}";
    write_file(dir, "pytorch_model.bin.index.json", bad, strlen(bad));
    assert_int_not_equal(eng_ck_set_open_dir(&s, dir, &err), BC_OK);
    print_message("  error: %s\n", err.message);
    assert_non_null(strstr(err.message, "b.bin"));
    assert_non_null(strstr(err.message, "'w'"));
    const char *names[] = {"a.bin", "b.bin", "pytorch_model.bin.index.json"};
    char path[256];
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bin_matches_safetensors),
        cmocka_unit_test(test_load_checkpoint_bin),
        cmocka_unit_test(test_small_valid_stored_deflate_zip64),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_not_a_zip),
        cmocka_unit_test(test_forbidden_global),
        cmocka_unit_test(test_storage_offset_out_of_range),
        cmocka_unit_test(test_bad_memo),
        cmocka_unit_test(test_every_byte_corrupted),
        cmocka_unit_test(test_sharded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
