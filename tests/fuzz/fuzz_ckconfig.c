/* fuzz_ckconfig.c: fuzz target for the OPT engine's reading of a checkpoint's
 * config.json (opt_hparams_from_checkpoint in plugins/opt/checkpoint.c). The
 * input is the whole config.json; it is written to config.json in a private
 * temp folder, which is then read as a checkpoint directory. Whatever the
 * input, the reader must return (no crash, no leak, no undefined behaviour);
 * on failure the error names the file; on success every dimension is in the
 * documented range [1, 2^20], heads divide hidden_size, the token ids are
 * below vocab_size, and the parameter count (the first thing a plan computes
 * from the shape) is computed without overflow.
 *
 * Built two ways (tests/fuzz/CMakeLists.txt): a libFuzzer binary,
 * fuzz_ckconfig (BENCHCTL_FUZZ=ON, clang), and fuzz_ckconfig_replay, which
 * runs this entry point on every file of tests/fuzz/corpus/ckconfig as a
 * ctest.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char g_dir[64];   /* the private temp folder ("checkpoint"), made once */
static char g_json[96];  /* g_dir/config.json */

static void cleanup(void) {
    unlink(g_json);
    rmdir(g_dir);
}

static void setup(void) {
    if (g_dir[0]) return;
    snprintf(g_dir, sizeof g_dir, "/tmp/fuzz_ckconfig.XXXXXX");
    if (!mkdtemp(g_dir)) {
        perror("fuzz_ckconfig: mkdtemp");
        abort();
    }
    snprintf(g_json, sizeof g_json, "%s/config.json", g_dir);
    atexit(cleanup);
}

#define DIM_OK(x) ((x) >= 1 && (x) <= (1 << 20))

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    setup();
    FILE *f = fopen(g_json, "wb");
    if (!f) abort();
    if ((size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) abort();

    opt_hparams hp;
    bc_error err;
    memset(&err, 0, sizeof err);
    if (opt_hparams_from_checkpoint(g_dir, &hp, &err) == BC_OK) {
        if (!DIM_OK(hp.s.vocab_size) || !DIM_OK(hp.s.hidden_size) || !DIM_OK(hp.s.n_layers) ||
            !DIM_OK(hp.s.n_heads) || !DIM_OK(hp.s.ffn_size) || !DIM_OK(hp.s.max_positions) ||
            !DIM_OK(hp.word_embed_proj_dim))
            abort();
        if (hp.s.hidden_size % hp.s.n_heads != 0) abort();
        if (hp.s.pad_token_id < 0 || hp.s.pad_token_id >= hp.s.vocab_size || hp.s.bos_token_id < 0 ||
            hp.s.bos_token_id >= hp.s.vocab_size || hp.s.eos_token_id < 0 || hp.s.eos_token_id >= hp.s.vocab_size)
            abort();
        if (!hp.s.name[0] || memchr(hp.s.name, '\0', sizeof hp.s.name) == NULL) abort();
        if (opt_hparams_n_parameters(&hp) <= 0) abort();
    } else if (err.message[0] == '\0' || strstr(err.message, "config.json") == NULL) {
        abort(); /* every error names the file */
    }
    return 0;
}
