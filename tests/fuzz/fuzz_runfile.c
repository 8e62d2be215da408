/* fuzz_runfile.c: fuzz target for the run-file reader behind `benchctl
 * report`, `compare` and `run --resume` (bc_runfile_read, core/src/io/runfile*.c,
 * then bc_replay_build, core/src/io/replay.c, as report and resume use it).
 * The input is the file's bytes: a JSON report, a jsonl journal, a seed-only
 * document or a .gz of any of them (the reader tells them apart by their
 * contents). It is written to a file in a private temp folder, as the
 * commands read their files by path.
 *
 * Whatever the input, the reader must return (no crash, no read outside a
 * buffer, no leak, no undefined behaviour); on failure the error has a
 * message and the runfile is empty, on success every case has a key and a
 * message, n_iterations x n_fields values and n_fields x BC_N_STATS
 * statistics that can be read, every key finds a case, every field name its
 * column, and the replay of the run builds and frees.
 *
 * Built two ways (tests/fuzz/CMakeLists.txt): a libFuzzer binary,
 * fuzz_runfile (BENCHCTL_FUZZ=ON, clang), and fuzz_runfile_replay, which runs
 * this entry point on every file of tests/fuzz/corpus/runfile as a ctest.
 */
#define _POSIX_C_SOURCE 200809L

#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "replay.h"
#include "runfile.h"
#include "stats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The file the input is written to, in a folder made once per process and
 * removed at its exit. */
static char g_dir[] = "/tmp/fuzz_runfile.XXXXXX";
static char g_path[64];

static void cleanup(void) {
    unlink(g_path);
    rmdir(g_dir);
}

static const char *input_path(void) {
    if (!g_path[0]) {
        if (!mkdtemp(g_dir)) abort();
        snprintf(g_path, sizeof g_path, "%s/run.json", g_dir);
        atexit(cleanup);
    }
    return g_path;
}

/* Reads every value the runfile promises, so ASan sees any that is not there. */
static void check_runfile(const bc_runfile *rf) {
    volatile double sink = 0;
    for (uint32_t f = 0; f < rf->n_fields; f++) {
        if (!rf->field_names[f]) abort();
        int at = bc_runfile_field(rf, rf->field_names[f]);
        if (at < 0 || at > (int)f) abort();
        if (rf->field_descs && (!rf->field_descs[f].unit || !rf->field_descs[f].help)) abort();
    }
    for (size_t k = 0; k < rf->n_cases; k++) {
        const bc_runfile_case *c = &rf->cases[k];
        if (!c->key || !c->message) abort();
        if (!bc_runfile_find(rf, c->key)) abort();
        for (size_t i = 0; i < (size_t)c->n_iterations * rf->n_fields; i++) sink += c->values[i];
        for (size_t i = 0; i < (size_t)rf->n_fields * BC_N_STATS; i++) sink += c->stats[i];
        for (size_t i = 0; i < c->n_settings; i++)
            if (!c->setting_names[i] || !c->setting_values[i]) abort();
        if (c->dist.struct_size)
            for (uint32_t r = 0; r < c->dist.n_ranks; r++)
                sink += c->dist.rank_time_ms[r] + c->dist.rank_tokens_per_second[r] + c->dist.rank_peak_memory_mib[r];
    }
    for (size_t i = 0; i < rf->n_backend_settings; i++)
        if (!rf->backend_settings[i].name || !rf->backend_settings[i].value) abort();
    const char **backends = NULL;
    size_t n = bc_runfile_axis_values(rf, "backend", &backends);
    if (n && !backends) abort();
    free(backends);
    (void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = input_path();
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) abort();
    for (size_t done = 0; done < size;) {
        ssize_t w = write(fd, data + done, size - done);
        if (w <= 0) abort();
        done += (size_t)w;
    }
    close(fd);
    bc_runfile rf;
    bc_error err = {0};
    if (bc_runfile_read(path, &rf, &err) != BC_OK) {
        if (!err.message[0] || rf.n_cases || rf.path) abort(); /* an error says what, and leaves nothing */
        return 0;
    }
    check_runfile(&rf);
    bc_replay rp;
    bc_error rerr = {0};
    if (bc_replay_build(&rf, &rp, &rerr) == BC_OK) {
        if (rp.n_cases != rf.n_cases) abort();
        bc_replay_free(&rp);
    } else if (!rerr.message[0]) {
        abort();
    }
    bc_runfile_free(&rf);
    return 0;
}
