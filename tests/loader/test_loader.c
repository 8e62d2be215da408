/* test_loader.c: every loader failure gives its one clear line and its code;
 * a plugin from a newer ABI minor loads (its larger rows read at their own
 * stride); the search path order and listing work. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loader.h"

#define FIXTURES BENCHCTL_BINARY_DIR "/tests/fixtures/loader"

static int setup(void **state) {
    bc_loader *l = calloc(1, sizeof *l);
    const char *dirs[] = {BENCHCTL_TEST_FIXTURE_DIR, BENCHCTL_TEST_PLUGIN_DIR};
    bc_error err = {0};
    unsetenv("BENCHCTL_PLUGIN_PATH");
    if (bc_loader_init(l, dirs, 2, NULL, 0, &err) != BC_OK) return -1;
    *state = l;
    return 0;
}

static int teardown(void **state) {
    bc_loader_free(*state);
    free(*state);
    return 0;
}

/* Loads name and expects failure with every fragment in the message, on one
 * line, and the returned code in the error; returns the error. */
static bc_error expect_error(bc_loader *l, const char *name, bc_plugin_kind want, const char *const *fragments) {
    const bc_plugin *p = (const bc_plugin *)1;
    bc_error err = {0};
    bc_status st = bc_loader_load(l, name, want, "bench.cfg:14", &p, &err);
    assert_int_not_equal(st, BC_OK);
    assert_int_equal(err.code, st);
    assert_null(p);
    assert_null(strchr(err.message, '\n'));
    for (const char *const *f = fragments; *f; f++)
        if (!strstr(err.message, *f)) fail_msg("message \"%s\" lacks \"%s\"", err.message, *f);
    return err;
}

static void test_loads_by_name_and_path(void **state) {
    bc_loader *l = *state;
    const bc_plugin *p = NULL, *q = NULL;
    bc_error err = {0};
    assert_int_equal(bc_loader_load(l, "testbackend", BC_KIND_BACKEND, NULL, &p, &err), BC_OK);
    assert_string_equal(p->desc->name, "testbackend");
    assert_non_null(p->backend.generate);
    assert_string_equal((const char *)p->host.host_private, "testbackend");
    assert_int_equal(bc_loader_load(l, BENCHCTL_TEST_FIXTURE_DIR "/benchctl-testbackend.so", 0, NULL, &q, &err), BC_OK);
    assert_ptr_equal(p, q); /* one bc_plugin per file */
}

static void test_missing_plugin_lists_places(void **state) {
    bc_loader *l = *state;
    const char *f[] = {"plugin 'nosuch' not found", BENCHCTL_TEST_FIXTURE_DIR "/benchctl-nosuch.so",
                       BENCHCTL_TEST_PLUGIN_DIR "/benchctl-nosuch.so",
                       BENCHCTL_PLUGIN_INSTALL_DIR "/benchctl-nosuch.so", NULL};
    bc_error err = expect_error(l, "nosuch", BC_KIND_BACKEND, f);
    assert_int_equal(err.code, BC_ERR_NOT_FOUND);
    assert_non_null(strstr(err.hint, "benchctl plugins"));
    const char *g[] = {"does not exist", "/no/such/benchctl-x.so", NULL};
    err = expect_error(l, "/no/such/benchctl-x.so", 0, g);
    assert_int_equal(err.code, BC_ERR_NOT_FOUND);
    assert_non_null(strstr(err.hint, "file path"));
}

static void test_not_elf(void **state) {
    const char *f[] = {"not a shared object (not an ELF file)", "benchctl-notelf.so", NULL};
    expect_error(*state, FIXTURES "/benchctl-notelf.so", 0, f);
}

static void test_no_entry_symbol(void **state) {
    const char *f[] = {"no benchctl_plugin_entry symbol", "benchctl-noentry.so", NULL};
    expect_error(*state, FIXTURES "/benchctl-noentry.so", 0, f);
}

static void test_wrong_magic(void **state) {
    const char *f[] = {"wrong magic 0xdeadbeef", "benchctl-badmagic.so", NULL};
    expect_error(*state, FIXTURES "/benchctl-badmagic.so", 0, f);
}

static void test_abi_major(void **state) {
    bc_loader *l = *state;
    char want[64];
    snprintf(want, sizeof want, "ABI %d.0, benchctl speaks ABI %d.%d", BENCHCTL_ABI_MAJOR + 1, BENCHCTL_ABI_MAJOR,
             BENCHCTL_ABI_MINOR);
    const char *f[] = {want, "benchctl-abinext.so", NULL};
    bc_error err = expect_error(l, FIXTURES "/benchctl-abinext.so", 0, f);
    assert_int_equal(err.code, BC_ERR_ABI);
    assert_non_null(strstr(err.hint, "rebuild"));
}

static void test_small_descriptor(void **state) {
    const char *f[] = {"descriptor is", "descriptors are at least", NULL};
    assert_int_equal(expect_error(*state, FIXTURES "/benchctl-smalldesc.so", 0, f).code, BC_ERR_ABI);
}

static void test_small_settings_rows(void **state) {
    const char *f[] = {"settings rows are", "rows are at least", NULL};
    assert_int_equal(expect_error(*state, FIXTURES "/benchctl-smallrows.so", 0, f).code, BC_ERR_FORMAT);
}

static void test_missing_hooks_named(void **state) {
    const char *f[] = {"backend plugin is missing required hooks: describe, begin_case, expand_prompts, generate, "
                       "post_process, end_case",
                       NULL};
    expect_error(*state, FIXTURES "/benchctl-nohooks.so", 0, f);
}

/* Hooks past the ops table's struct_size are not read, so they count as missing. */
static void test_small_ops_table(void **state) {
    const char *f[] = {"backend plugin is missing required hooks: generate, post_process, end_case", NULL};
    expect_error(*state, FIXTURES "/benchctl-smallops.so", 0, f);
}

static void test_wrong_kind(void **state) {
    const char *f[] = {"'testretain' is a cache plugin, bench.cfg:14 wants a backend", NULL};
    assert_int_equal(expect_error(*state, "testretain", BC_KIND_BACKEND, f).code, BC_ERR_WRONG_KIND);
}

static void test_newer_minor_loads(void **state) {
    bc_loader *l = *state;
    const bc_plugin *p = NULL;
    bc_error err = {0};
    assert_int_equal(bc_loader_load(l, FIXTURES "/benchctl-newminor.so", BC_KIND_CACHE, NULL, &p, &err), BC_OK);
    assert_int_equal(p->desc->abi_minor, BENCHCTL_ABI_MINOR + 1);
    assert_true(p->desc->struct_size > sizeof(bc_plugin_desc));
    assert_non_null(p->cache.release_after_rollout);
    assert_int_equal(p->cache.struct_size, sizeof(bc_cache_ops) + sizeof(void *));
    /* the host reads a host-size descriptor and host-size settings rows,
     * each row taken from the plugin's own (larger) stride */
    assert_null(p->desc->check_settings);
    assert_int_equal(p->desc->setting_size, sizeof(bc_setting_desc));
    assert_int_equal(p->desc->n_settings, 2);
    assert_string_equal(p->desc->settings[0].name, "keep");
    assert_string_equal(p->desc->settings[1].name, "budget");
    assert_int_equal(p->desc->settings[1].default_int, 7);
    assert_string_equal(p->desc->settings[1].help, "second row");
}

static void test_search_order(void **state) {
    (void)state;
    setenv("BENCHCTL_PLUGIN_PATH", "/env/one::/env/two", 1);
    const char *expl[] = {"/explicit"};
    const char *cfg[] = {"/from/cfg"};
    bc_loader l;
    bc_error err = {0};
    assert_int_equal(bc_loader_init(&l, expl, 1, cfg, 1, &err), BC_OK);
    unsetenv("BENCHCTL_PLUGIN_PATH");
    assert_true(l.n_dirs >= 5);
    assert_string_equal(l.dirs[0], "/explicit");
    assert_string_equal(l.dirs[1], "/from/cfg");
    assert_string_equal(l.dirs[2], "/env/one");
    assert_string_equal(l.dirs[3], "/env/two");
    assert_non_null(strstr(l.dirs[4], "/plugins")); /* next to this executable */
    assert_string_equal(l.dirs[l.n_dirs - 1], BENCHCTL_PLUGIN_INSTALL_DIR);
    bc_loader_free(&l);
}

typedef struct listing {
    int testbackend, notelf_error, abinext_error, newminor;
} listing;

static void on_listed(void *ctx, const char *path, const bc_plugin *p, const char *error) {
    listing *ls = ctx;
    assert_true((p == NULL) != (error == NULL));
    if (p && strcmp(p->desc->name, "testbackend") == 0) ls->testbackend++;
    if (p && strcmp(p->desc->name, "newminor") == 0) ls->newminor++;
    if (error && strstr(path, "benchctl-notelf.so") && strstr(error, "not an ELF")) ls->notelf_error++;
    if (error && strstr(path, "benchctl-abinext.so") && strstr(error, "ABI 3.0")) ls->abinext_error++;
}

static void test_list(void **state) {
    (void)state;
    const char *dirs[] = {BENCHCTL_TEST_FIXTURE_DIR, FIXTURES, BENCHCTL_TEST_FIXTURE_DIR};
    bc_loader l;
    bc_error err = {0};
    assert_int_equal(bc_loader_init(&l, dirs, 3, NULL, 0, &err), BC_OK);
    listing ls = {0};
    bc_loader_list(&l, on_listed, &ls);
    assert_int_equal(ls.testbackend, 1);
    assert_int_equal(ls.newminor, 1);
    assert_int_equal(ls.notelf_error, 1);
    assert_int_equal(ls.abinext_error, 1);
    bc_loader_free(&l);
}

/* ------------------------------------------- damaged and foreign ELF files */

/* Reads the real testbackend plugin into a malloc'ed buffer. */
static unsigned char *read_plugin(size_t *n) {
    FILE *f = fopen(BENCHCTL_TEST_FIXTURE_DIR "/benchctl-testbackend.so", "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)size);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    *n = (size_t)size;
    return buf;
}

/* Writes n bytes of buf to a fresh file; returns its path (static). */
static const char *write_fixture(const unsigned char *buf, size_t n) {
    static char path[64];
    snprintf(path, sizeof path, "/tmp/benchctl-elf-%ld.so", (long)getpid());
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, n, f), n);
    fclose(f);
    return path;
}

/* A real plugin cut short at any point is an error line, never a signal,
 * both when loaded and when listed. */
static void test_truncated_plugin(void **state) {
    (void)state;
    size_t n;
    unsigned char *buf = read_plugin(&n);
    const size_t cuts[] = {0, 3, 10, 63, 64, 100, 1000, 4096, n / 2, n - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        const char *path = write_fixture(buf, cuts[i]);
        bc_loader l;
        bc_error err = {0};
        assert_int_equal(bc_loader_init(&l, NULL, 0, NULL, 0, &err), BC_OK);
        const char *const frag[] = {path, cuts[i] < 4 ? "not an ELF file" : "truncated", NULL};
        expect_error(&l, path, 0, frag);
        bc_loader_free(&l);
    }
    unlink(write_fixture(buf, 0));
    free(buf);
}

static void test_foreign_machine_and_class(void **state) {
    (void)state;
    size_t n;
    unsigned char *buf = read_plugin(&n);
    bc_loader l;
    bc_error err = {0};
    assert_int_equal(bc_loader_init(&l, NULL, 0, NULL, 0, &err), BC_OK);

    uint16_t machine; /* e_machine at offset 18, in the host's byte order */
    memcpy(&machine, buf + 18, 2);
    uint16_t other = machine == EM_AARCH64 ? EM_X86_64 : EM_AARCH64;
    memcpy(buf + 18, &other, 2);
    const char *path = write_fixture(buf, n);
    const char *const frag_machine[] = {path, "built for", "this host is", NULL};
    expect_error(&l, path, 0, frag_machine);
    memcpy(buf + 18, &machine, 2);

    buf[EI_CLASS] = buf[EI_CLASS] == ELFCLASS64 ? ELFCLASS32 : ELFCLASS64;
    path = write_fixture(buf, n);
    const char *const frag_class[] = {path, "-bit ELF file; this benchctl is", NULL};
    expect_error(&l, path, 0, frag_class);
    buf[EI_CLASS] = buf[EI_CLASS] == ELFCLASS64 ? ELFCLASS32 : ELFCLASS64;

    uint16_t type = ET_EXEC, dyn;
    memcpy(&dyn, buf + 16, 2);
    memcpy(buf + 16, &type, 2);
    path = write_fixture(buf, n);
    const char *const frag_type[] = {path, "executable, not a shared object", NULL};
    expect_error(&l, path, 0, frag_type);
    memcpy(buf + 16, &dyn, 2);

    path = write_fixture(buf, n); /* restored: loads */
    const bc_plugin *p = NULL;
    assert_int_equal(bc_loader_load(&l, path, BC_KIND_BACKEND, NULL, &p, &err), BC_OK);
    bc_loader_free(&l);
    unlink(path);
    free(buf);
}

static void list_count(void *ctx, const char *path, const bc_plugin *p, const char *error) {
    (void)path;
    int *counts = ctx;
    counts[p ? 0 : 1]++;
    if (error) assert_non_null(strstr(error, "truncated"));
}

/* The plugins listing reports a truncated file found on the search path. */
static void test_list_truncated(void **state) {
    (void)state;
    size_t n;
    unsigned char *buf = read_plugin(&n);
    char dir[] = "/tmp/benchctl-elfdir-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/benchctl-x.so", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, 1000, f), 1000);
    fclose(f);
    bc_loader l;
    bc_error err = {0};
    const char *dirs[] = {dir};
    unsetenv("BENCHCTL_PLUGIN_PATH");
    assert_int_equal(bc_loader_init(&l, dirs, 1, NULL, 0, &err), BC_OK);
    int counts[2] = {0, 0};
    bc_loader_list(&l, list_count, counts);
    assert_true(counts[1] >= 1);
    bc_loader_free(&l);
    unlink(path);
    rmdir(dir);
    free(buf);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_loads_by_name_and_path, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_plugin_lists_places, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_elf, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_entry_symbol, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrong_magic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abi_major, setup, teardown),
        cmocka_unit_test_setup_teardown(test_small_descriptor, setup, teardown),
        cmocka_unit_test_setup_teardown(test_small_settings_rows, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_hooks_named, setup, teardown),
        cmocka_unit_test_setup_teardown(test_small_ops_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrong_kind, setup, teardown),
        cmocka_unit_test_setup_teardown(test_newer_minor_loads, setup, teardown),
        cmocka_unit_test(test_search_order),
        cmocka_unit_test(test_list),
        cmocka_unit_test(test_truncated_plugin),
        cmocka_unit_test(test_foreign_machine_and_class),
        cmocka_unit_test(test_list_truncated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
