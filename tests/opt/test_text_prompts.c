/* test_text_prompts.c: the OPT engine's text prompt sets
 * (engine/rollout/text_prompts.c): read with a checkpoint's tokenizer (here the
 * golden tokenizer of tests/tokenizer/golden, whose ids come from Hugging
 * Face tokenizers), BOS first, then fitted per case (ragged, bucket,
 * truncate_pad) into what eng_rollout_init left-pads; errors name the file,
 * the line or the setting. */
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

#include "bpe.h"
#include "fileio.h"
#include "opt_model.h"
#include "device.h"
#include "rollout.h"
#include "text_prompts.h"
#include "tok_to_bc.h"

TOK_READER_FROM_BC(tok_read_regular, eng_read_regular)

#define TOKENIZER_DIR BENCHCTL_SOURCE_DIR "/tests/tokenizer/golden/json_pairs"

/* Five prompts of different lengths, one a line. */
static const char *const TEXTS[] = {"Hello", "Hello, world! How are you?", "x  y", "1234567890 12 345",
                                    "I'm sure we'll see they've done it, can't you? She'd say it's yours."};
enum { N_TEXTS = 5, BOS = 2 };

typedef struct fixture {
    char path[64];
    int len[N_TEXTS]; /* tokens of each, BOS included */
    int32_t *ids[N_TEXTS];
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    if (!f) return -1;
    snprintf(f->path, sizeof f->path, "/tmp/bc_text_prompts.XXXXXX");
    int fd = mkstemp(f->path);
    if (fd < 0) return -1;
    FILE *fp = fdopen(fd, "w");
    for (int i = 0; i < N_TEXTS; i++) fprintf(fp, "%s\n", TEXTS[i]);
    fclose(fp);
    bpe_tokenizer *t;
    tok_error err;
    if (bpe_load_dir(TOKENIZER_DIR, tok_read_regular, &t, &err) != TOK_OK) return -1;
    for (int i = 0; i < N_TEXTS; i++) {
        bpe_ids ids = {0};
        if (bpe_encode(t, TEXTS[i], strlen(TEXTS[i]), &ids, &err) != TOK_OK) return -1;
        f->ids[i] = ids.ids;
        f->len[i] = (int)ids.n + 1;
    }
    bpe_free(t);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    unlink(f->path);
    for (int i = 0; i < N_TEXTS; i++) free(f->ids[i]);
    free(f);
    return 0;
}

static eng_text_prompts read_fit(fixture *f, eng_prompt_fit fit, int width) {
    eng_text_prompts tp;
    bc_error err;
    if (eng_text_prompts_read(&tp, f->path, "auto", "text", TOKENIZER_DIR, BOS, 1000, fit, width, &err) != BC_OK)
        fail_msg("%s", err.message);
    return tp;
}

/* The rollout's prompt rows for a fitted set. */
static void init_rollout(const eng_prompts *prompts, int rollout_L, int batch, eng_rollout *ro) {
    opt_hparams hp;
    bc_error err;
    assert_int_equal(opt_hparams_preset("125m", &hp, &err), BC_OK);
    eng_rollout_params p = {.batch_size = batch, .samples_per_prompt = 1, .prompt_length = rollout_L,
                            .response_length = 2, .sampling = {0, 1, 0, 1}, .prompts = prompts};
    if (eng_rollout_init(ro, &hp.s, &p, &err) != BC_OK) fail_msg("%s", err.message);
}

/* Row b of the rollout is text k, left-padded to width (and cut to keep). */
static void assert_row(const fixture *f, const eng_rollout *ro, int b, int k, int keep) {
    int n = f->len[k] < keep ? f->len[k] : keep, pad = ro->Tp - n;
    const int32_t *ids = ro->prompt_ids + (size_t)b * ro->Tp;
    const uint8_t *mk = ro->prompt_mask + (size_t)b * ro->Tp;
    for (int t = 0; t < pad; t++) {
        assert_int_equal(ids[t], ro->pad_id);
        assert_int_equal(mk[t], 0);
    }
    assert_int_equal(ids[pad], BOS);
    for (int t = 1; t < n; t++) {
        assert_int_equal(ids[pad + t], f->ids[k][t - 1]);
        assert_int_equal(mk[pad + t], 1);
    }
}

static void test_ragged(void **state) {
    fixture *f = *state;
    eng_text_prompts tp = read_fit(f, ENG_FIT_RAGGED, 16);
    assert_int_equal(tp.all.n_lines, N_TEXTS);
    const eng_prompts *pr;
    int L;
    bc_error err;
    assert_int_equal(eng_text_prompts_fit(&tp, 0, 3, &pr, &L, &err), BC_OK);
    assert_int_equal(L, 0);
    int w = f->len[0] > f->len[1] ? f->len[0] : f->len[1];
    w = w > f->len[2] ? w : f->len[2];
    assert_int_equal(tp.batch.width, w);
    assert_int_equal(tp.batch.pad_tokens, 3 * w - f->len[0] - f->len[1] - f->len[2]);
    eng_rollout ro;
    init_rollout(pr, L, 3, &ro);
    assert_int_equal(ro.Tp, w);
    for (int b = 0; b < 3; b++) assert_row(f, &ro, b, b, 1 << 20);
    eng_rollout_free(&ro);
    /* a prompt length with ragged prompts is refused, naming the fix */
    assert_int_equal(eng_text_prompts_fit(&tp, 8, 3, &pr, &L, &err), BC_ERR_SETTING);
    assert_non_null(strstr(err.hint, "prompts_fit"));
    eng_text_prompts_free(&tp);
}

static void test_bucket(void **state) {
    fixture *f = *state;
    /* the bucket of the longest "Hello, world..." prompt, width 4 */
    const int L = f->len[1], W = 4;
    eng_text_prompts tp = read_fit(f, ENG_FIT_BUCKET, W);
    const eng_prompts *pr;
    int rl, in[N_TEXTS], n_in = 0;
    bc_error err;
    for (int k = 0; k < N_TEXTS; k++)
        if (f->len[k] <= L && f->len[k] > L - W) in[n_in++] = k;
    assert_true(n_in >= 1 && n_in < N_TEXTS);
    assert_int_equal(eng_text_prompts_fit(&tp, L, 4, &pr, &rl, &err), BC_OK);
    assert_int_equal(rl, 0);
    assert_int_equal(tp.batch.set_size, n_in);
    assert_int_equal(tp.batch.width, L);
    eng_rollout ro;
    init_rollout(pr, rl, 4, &ro);
    assert_int_equal(ro.Tp, L);
    for (int b = 0; b < 4; b++) assert_row(f, &ro, b, in[b % n_in], 1 << 20);
    eng_rollout_free(&ro);
    /* a bucket nothing falls in */
    assert_int_equal(eng_text_prompts_fit(&tp, 1, 4, &pr, &rl, &err), BC_ERR_INFEASIBLE);
    assert_non_null(strstr(err.message, f->path));
    assert_int_equal(eng_text_prompts_fit(&tp, 0, 4, &pr, &rl, &err), BC_ERR_SETTING);
    eng_text_prompts_free(&tp);
}

static void test_truncate_pad(void **state) {
    fixture *f = *state;
    const int L = f->len[1] - 2;
    eng_text_prompts tp = read_fit(f, ENG_FIT_TRUNCATE_PAD, 16);
    const eng_prompts *pr;
    int rl;
    bc_error err;
    assert_int_equal(eng_text_prompts_fit(&tp, L, N_TEXTS, &pr, &rl, &err), BC_OK);
    int cut = 0;
    int64_t real = 0;
    for (int k = 0; k < N_TEXTS; k++) {
        cut += f->len[k] > L;
        real += f->len[k] < L ? f->len[k] : L;
    }
    assert_true(cut >= 2);
    assert_int_equal(tp.batch.truncated, cut);
    assert_int_equal(tp.batch.max, L);
    assert_int_equal(tp.batch.pad_tokens, (int64_t)N_TEXTS * L - real);
    eng_rollout ro;
    init_rollout(pr, rl, N_TEXTS, &ro);
    assert_int_equal(ro.Tp, L);
    for (int b = 0; b < N_TEXTS; b++) assert_row(f, &ro, b, b, L);
    eng_rollout_free(&ro);
    /* the full set is intact for the next case */
    assert_int_equal(tp.all.lines[1].n, f->len[1]);
    eng_text_prompts_free(&tp);
}

static void test_errors(void **state) {
    fixture *f = *state;
    eng_text_prompts tp;
    bc_error err;
    /* ids past the model's vocabulary: the file and line */
    assert_int_equal(eng_text_prompts_read(&tp, f->path, "auto", "text", TOKENIZER_DIR, BOS, 50, ENG_FIT_RAGGED, 16,
                                           &err),
                     BC_ERR_FORMAT);
    assert_non_null(strstr(err.message, f->path));
    assert_non_null(strstr(err.message, "vocab_size 50"));
    /* a checkpoint without a tokenizer */
    assert_int_equal(eng_text_prompts_read(&tp, f->path, "auto", "text", BENCHCTL_SOURCE_DIR "/tests/opt/golden/preln",
                                           BOS, 1000, ENG_FIT_RAGGED, 16, &err),
                     BC_ERR_NOT_FOUND);
    assert_non_null(strstr(err.message, "tests/opt/golden/preln"));
    assert_int_equal(eng_text_prompts_read(&tp, f->path, "csv", "text", TOKENIZER_DIR, BOS, 1000, ENG_FIT_RAGGED, 16,
                                           &err),
                     BC_ERR_SETTING);
    assert_non_null(strstr(err.message, "prompts_format"));
    assert_int_equal(eng_prompt_fit_from_name("bucket"), ENG_FIT_BUCKET);
    assert_int_equal(eng_prompt_fit_from_name("pad"), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_ragged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bucket, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncate_pad, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
