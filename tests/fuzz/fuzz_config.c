/* fuzz_config.c: fuzz target for bench.cfg loading (bc_config_load in
 * core/src/config/config.c, with the --set and --reporter parsers of
 * core/src/config/overrides.c). The input is the text of a bench.cfg, optionally
 * followed by a line "%%" and then command-line overrides, one a line:
 *
 *   backend = "opt"; precisions = ["fp32"]; matrix = { ... };
 *   %%
 *   run.iterations=3          <- passed as --set run.iterations=3
 *   +json,csv                 <- a line starting with '+' is --reporter json,csv
 *
 * (at most 4 --set lines and one --reporter line are used). The text is
 * written to bench.cfg in a private temp folder, next to part.cfg (a small
 * valid fragment), so `@include "part.cfg"` works. Whatever the input,
 * bc_config_load must return (no crash, no read outside a buffer, no leak,
 * no undefined behaviour); on failure the error has a message, on success
 * the config holds what config.h promises (non-empty matrix lists with values
 * >= 1, a digest) and its locations can be looked up.
 *
 * An input whose @include names anything but a plain file name in that
 * folder is skipped: libconfig would read whatever it names (/dev/zero never
 * ends), which is the file system, not the parser, under test.
 *
 * Built two ways (tests/fuzz/CMakeLists.txt): a libFuzzer binary, fuzz_config
 * (BENCHCTL_FUZZ=ON, clang), and fuzz_config_replay, which runs this entry
 * point on every file of tests/fuzz/corpus/config as a ctest.
 */
#define _POSIX_C_SOURCE 200809L

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
const char *__lsan_default_suppressions(void);

/* libconfig 1.5 (Debian 12's) leaks the tokens it has read when the parse
 * fails: the whole input `""` is enough (a string buffer from strbuf_append,
 * or a 1-byte one from libconfig_yylex). The leak is inside libconfig, a few
 * bytes per refused file in a process that then exits, so LeakSanitizer is
 * told to let allocations made inside libconfig be (see
 * regress-libconfig-token-leak*). A leak of ours still fails: our config_t
 * and everything else we allocate have our own frames on their stack, and
 * libconfig's settings only leak if that config_t does. */
const char *__lsan_default_suppressions(void) { return "leak:libconfig.so\n"; }

#define MAX_SETS 4

static char g_dir[64];      /* the private temp folder, made once */
static char g_cfg_path[96]; /* g_dir/bench.cfg */

static void cleanup(void) {
    char p[128];
    snprintf(p, sizeof p, "%s/part.cfg", g_dir);
    unlink(p);
    unlink(g_cfg_path);
    rmdir(g_dir);
}

static void setup(void) {
    if (g_dir[0]) return;
    snprintf(g_dir, sizeof g_dir, "/tmp/fuzz_config.XXXXXX");
    if (!mkdtemp(g_dir)) {
        perror("fuzz_config: mkdtemp");
        abort();
    }
    snprintf(g_cfg_path, sizeof g_cfg_path, "%s/bench.cfg", g_dir);
    char p[128];
    snprintf(p, sizeof p, "%s/part.cfg", g_dir);
    FILE *f = fopen(p, "w");
    if (!f || fputs("# part.cfg\nrun = { iterations = 2; warmup = 0; };\n", f) < 0 || fclose(f) != 0) {
        perror("fuzz_config: part.cfg");
        abort();
    }
    atexit(cleanup);
}

/* 1 when every @include in the text names a plain file in the temp folder
 * ([A-Za-z0-9._-], no ".."). Case-insensitive and blind to comments and
 * strings, so it skips more inputs than it must, never fewer. */
static int includes_are_local(const uint8_t *d, size_t n) {
    static const char tok[] = "@include";
    const size_t tl = sizeof tok - 1;
    for (size_t i = 0; i + tl <= n; i++) {
        size_t k = 0;
        while (k < tl && tolower(d[i + k]) == tok[k]) k++;
        if (k < tl) continue;
        size_t j = i + tl;
        while (j < n && d[j] != '"') j++; /* the opening quote, wherever it is */
        if (j == n) continue;
        size_t start = ++j;
        while (j < n && d[j] != '"') {
            unsigned char c = d[j];
            if (!(isalnum(c) || c == '.' || c == '_' || c == '-')) return 0;
            j++;
        }
        for (size_t m = start; m + 1 < j; m++)
            if (d[m] == '.' && d[m + 1] == '.') return 0;
    }
    return 1;
}

static void check_list(const uint32_t *v, size_t n) {
    if (n == 0 || !v) abort();
    for (size_t i = 0; i < n; i++)
        if (v[i] == 0) abort();
}

/* The config.h promises for a config that loaded. */
static void check_loaded(const bc_config *cfg) {
    if (!cfg->sha256 || strlen(cfg->sha256) != 64) abort();
    if (!cfg->backend.name || !cfg->backend.name[0]) abort();
    if (cfg->n_precisions == 0 || cfg->n_cache_policies == 0 || cfg->n_reporters == 0) abort();
    check_list(cfg->batch_sizes, cfg->n_batch_sizes);
    check_list(cfg->samples_per_prompt, cfg->n_samples_per_prompt);
    check_list(cfg->response_lengths, cfg->n_response_lengths);
    if (cfg->n_prompt_lengths == 0 || !cfg->prompt_lengths) abort();
    if (cfg->iterations == 0 || cfg->min_iterations > cfg->max_iterations) abort();
    char where[512];
    bc_config_spec_location(cfg, &cfg->backend, where, sizeof where);
    for (size_t i = 0; i < cfg->n_reporters; i++) bc_config_spec_location(cfg, &cfg->reporters[i], where, sizeof where);
    bc_config_setting_location(cfg, "run.iterations", where, sizeof where);
    bc_config_setting_location(cfg, "matrix.batch_sizes.[0]", where, sizeof where);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!includes_are_local(data, size)) return 0;
    setup();

    /* Split off the override section at the first "\n%%\n" (or a leading "%%\n"). */
    size_t cfg_len = size;
    const uint8_t *ov = NULL;
    size_t ov_len = 0;
    if (size >= 3 && memcmp(data, "%%\n", 3) == 0) {
        cfg_len = 0;
        ov = data + 3;
        ov_len = size - 3;
    } else {
        for (size_t i = 0; i + 4 <= size; i++)
            if (memcmp(data + i, "\n%%\n", 4) == 0) {
                cfg_len = i + 1;
                ov = data + i + 4;
                ov_len = size - i - 4;
                break;
            }
    }

    FILE *f = fopen(g_cfg_path, "wb");
    if (!f) abort();
    if ((cfg_len && fwrite(data, 1, cfg_len, f) != cfg_len) || fclose(f) != 0) abort();

    /* Overrides: one a line, NUL-terminated copies (a NUL inside ends it, as
     * it would on a command line). */
    char *ov_text = malloc(ov_len + 1);
    if (!ov_text) abort();
    if (ov_len) memcpy(ov_text, ov, ov_len);
    ov_text[ov_len] = '\0';
    const char *sets[MAX_SETS];
    size_t n_sets = 0;
    const char *reporters = NULL;
    for (char *line = ov ? ov_text : NULL; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = '\0';
        if (line[0] == '+') {
            if (!reporters) reporters = line + 1;
        } else if (n_sets < MAX_SETS) {
            sets[n_sets++] = line;
        }
        line = nl ? nl + 1 : NULL;
    }

    bc_config cfg;
    bc_error err;
    memset(&err, 0, sizeof err);
    if (bc_config_load(&cfg, g_cfg_path, sets, n_sets, reporters, &err) == BC_OK) {
        check_loaded(&cfg);
        bc_config_free(&cfg);
    } else {
        if (err.message[0] == '\0') abort(); /* every failure says why */
        if (cfg.cfg || cfg.path) abort();    /* "cfg is left empty" */
    }
    free(ov_text);
    return 0;
}
