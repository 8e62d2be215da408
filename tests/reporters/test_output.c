/* test_output.c: core/src/io/output.c, the atomic (temp file + rename) and
 * gzip'ed output files that plugins reach through bc_host.output_*.
 * Each test works in its own fresh folder under the build tree. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "output.h"

typedef struct fixture {
    char dir[512]; /* a fresh temporary folder, removed in teardown */
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    if (!f) return -1;
    snprintf(f->dir, sizeof f->dir, "%s/test_output_XXXXXX", BENCHCTL_BINARY_DIR);
    if (!mkdtemp(f->dir)) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

/* Removes the folder tree (two levels are all these tests create). */
static void remove_tree(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode))
            remove_tree(p);
        else
            unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

static int teardown(void **state) {
    fixture *f = *state;
    remove_tree(f->dir);
    free(f);
    return 0;
}

/* Reads a whole file into a malloc'ed, NUL-terminated buffer (caller frees). */
static char *slurp(const char *path) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    size_t cap = 256, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n - 1, fp)) > 0) {
        n += got;
        if (cap - n - 1 == 0) {
            char *bigger = realloc(buf, cap * 2);
            if (!bigger) { free(buf); buf = NULL; break; }
            buf = bigger;
            cap *= 2;
        }
    }
    fclose(fp);
    if (buf) buf[n] = '\0';
    return buf;
}

/* Counts entries of dir other than . and .. */
static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
    closedir(d);
    return n;
}

static bc_status out_printf(bc_output *out, bc_error *err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    bc_status st = bc_output_vprintf(out, err, fmt, ap);
    va_end(ap);
    return st;
}

static void test_commit_writes_file(void **state) {
    fixture *f = *state;
    char path[600];
    snprintf(path, sizeof path, "%s/a.txt", f->dir);
    bc_error err = {0};
    bc_output *out = bc_output_open(path, &err);
    assert_non_null(out);
    assert_int_equal(bc_output_write(out, "hello ", 6, &err), BC_OK);
    assert_int_equal(out_printf(out, &err, "%s %d\n", "world", 42), BC_OK);
    /* Nothing at path until commit; the temporary file sits next to it. */
    assert_int_not_equal(access(path, F_OK), 0);
    assert_int_equal(count_entries(f->dir), 1);
    assert_int_equal(bc_output_commit(out, &err), BC_OK);
    char *text = slurp(path);
    assert_non_null(text);
    assert_string_equal(text, "hello world 42\n");
    free(text);
    assert_int_equal(count_entries(f->dir), 1); /* temp file gone */
}

static void test_commit_replaces_existing(void **state) {
    fixture *f = *state;
    char path[600];
    snprintf(path, sizeof path, "%s/r.txt", f->dir);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs("old contents\n", fp);
    fclose(fp);
    bc_error err = {0};
    bc_output *out = bc_output_open(path, &err);
    assert_non_null(out);
    assert_int_equal(out_printf(out, &err, "new\n"), BC_OK);
    char *before = slurp(path); /* readers still see the old file */
    assert_non_null(before);
    assert_string_equal(before, "old contents\n");
    free(before);
    assert_int_equal(bc_output_commit(out, &err), BC_OK);
    char *after = slurp(path);
    assert_non_null(after);
    assert_string_equal(after, "new\n");
    free(after);
    assert_int_equal(count_entries(f->dir), 1);
}

static void test_abort_leaves_nothing(void **state) {
    fixture *f = *state;
    char path[600];
    snprintf(path, sizeof path, "%s/gone.json", f->dir);
    bc_error err = {0};
    bc_output *out = bc_output_open(path, &err);
    assert_non_null(out);
    assert_int_equal(out_printf(out, &err, "{\"partial\":"), BC_OK);
    bc_output_abort(out);
    assert_int_not_equal(access(path, F_OK), 0);
    assert_int_equal(count_entries(f->dir), 0);

    /* gzip'ed too */
    snprintf(path, sizeof path, "%s/gone.json.gz", f->dir);
    out = bc_output_open(path, &err);
    assert_non_null(out);
    assert_int_equal(out_printf(out, &err, "{\"partial\":"), BC_OK);
    bc_output_abort(out);
    assert_int_equal(count_entries(f->dir), 0);
}

static void test_abort_keeps_existing(void **state) {
    fixture *f = *state;
    char path[600];
    snprintf(path, sizeof path, "%s/keep.txt", f->dir);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs("keep me\n", fp);
    fclose(fp);
    bc_error err = {0};
    bc_output *out = bc_output_open(path, &err);
    assert_non_null(out);
    assert_int_equal(out_printf(out, &err, "replacement"), BC_OK);
    bc_output_abort(out);
    char *text = slurp(path);
    assert_non_null(text);
    assert_string_equal(text, "keep me\n");
    free(text);
}

static void test_gzip_roundtrip(void **state) {
    fixture *f = *state;
    char path[600];
    snprintf(path, sizeof path, "%s/z.txt.gz", f->dir);
    bc_error err = {0};
    bc_output *out = bc_output_open(path, &err);
    assert_non_null(out);
    /* Enough text to cross zlib's and printf's internal buffers. */
    char expect[20000];
    size_t n = 0;
    for (int i = 0; i < 2000; i++) {
        int w = snprintf(expect + n, sizeof expect - n, "%d,", i * 7);
        assert_int_equal(out_printf(out, &err, "%d,", i * 7), BC_OK);
        n += (size_t)w;
    }
    /* And one printf longer than the 1 KiB stack buffer. */
    char longline[3000];
    memset(longline, 'x', sizeof longline - 1);
    longline[sizeof longline - 1] = '\0';
    assert_int_equal(out_printf(out, &err, "%s", longline), BC_OK);
    memcpy(expect + n, longline, sizeof longline);
    n += sizeof longline - 1;
    assert_int_equal(bc_output_commit(out, &err), BC_OK);

    /* The file is real gzip: starts with the magic and inflates back. */
    FILE *raw = fopen(path, "rb");
    assert_non_null(raw);
    unsigned char magic[2] = {0, 0};
    assert_int_equal(fread(magic, 1, 2, raw), 2);
    fclose(raw);
    assert_int_equal(magic[0], 0x1f);
    assert_int_equal(magic[1], 0x8b);

    gzFile gz = gzopen(path, "rb");
    assert_non_null(gz);
    char *got = malloc(n + 100);
    assert_non_null(got);
    int total = 0, r;
    while ((r = gzread(gz, got + total, (unsigned)(n + 100 - (size_t)total))) > 0) total += r;
    assert_true(r == 0);
    gzclose(gz);
    assert_int_equal((size_t)total, n);
    assert_memory_equal(got, expect, n);
    free(got);
    assert_int_equal(count_entries(f->dir), 1);
}

static void test_creates_parent_dirs(void **state) {
    fixture *f = *state;
    char path[600];
    snprintf(path, sizeof path, "%s/x/y/out.csv", f->dir);
    bc_error err = {0};
    bc_output *out = bc_output_open(path, &err);
    assert_non_null(out);
    assert_int_equal(out_printf(out, &err, "a,b\n"), BC_OK);
    assert_int_equal(bc_output_commit(out, &err), BC_OK);
    char *text = slurp(path);
    assert_non_null(text);
    assert_string_equal(text, "a,b\n");
    free(text);
}

static void test_parent_is_a_file(void **state) {
    fixture *f = *state;
    char file[600], path[700];
    snprintf(file, sizeof file, "%s/plain", f->dir);
    FILE *fp = fopen(file, "w");
    assert_non_null(fp);
    fclose(fp);
    snprintf(path, sizeof path, "%s/sub/out.json", file);
    bc_error err = {0};
    assert_null(bc_output_open(path, &err));
    assert_int_equal(err.code, BC_ERR_IO);
    assert_non_null(strstr(err.message, path)); /* names the path */
}

static void test_same_path_twice_refused(void **state) {
    fixture *f = *state;
    char path[600];
    snprintf(path, sizeof path, "%s/twice.txt", f->dir);
    bc_error err = {0};
    bc_output *a = bc_output_open(path, &err);
    assert_non_null(a);
    bc_error err2 = {0};
    assert_null(bc_output_open(path, &err2));
    assert_int_equal(err2.code, BC_ERR_IO);
    assert_non_null(strstr(err2.message, "already exists"));
    bc_output_abort(a);
    assert_int_equal(count_entries(f->dir), 0);
}

static void test_empty_path_refused(void **state) {
    (void)state;
    bc_error err = {0};
    assert_null(bc_output_open("", &err));
    assert_int_equal(err.code, BC_ERR_INVALID);
}

/* bc_output_check (host->output_check): says whether open would succeed,
 * with open's rules (missing folders are fine, open creates them), and
 * creates nothing. */
static void test_check(void **state) {
    fixture *f = *state;
    char file[600], path[800];
    snprintf(file, sizeof file, "%s/plain", f->dir);
    FILE *fp = fopen(file, "w");
    assert_non_null(fp);
    fclose(fp);
    bc_error err = {0};
    assert_int_equal(bc_output_check("-", &err), BC_OK);
    assert_int_equal(bc_output_check(file, &err), BC_OK); /* an existing file is replaced at commit */
    snprintf(path, sizeof path, "%s/new/deeper/out.json", f->dir);
    assert_int_equal(bc_output_check(path, &err), BC_OK);
    assert_int_equal(count_entries(f->dir), 1); /* the missing folders were not created */

    snprintf(path, sizeof path, "%s/sub/out.json", file); /* under a file */
    assert_int_equal(bc_output_check(path, &err), BC_ERR_IO);
    assert_int_equal(err.code, BC_ERR_IO);
    assert_non_null(strstr(err.message, path));
    assert_int_equal(bc_output_check(f->dir, &err), BC_ERR_IO); /* a folder */
    assert_non_null(strstr(err.message, f->dir));
    assert_int_equal(bc_output_check("/dev/null/x.json", &err), BC_ERR_IO);
    assert_non_null(strstr(err.message, "/dev/null/x.json"));
    assert_int_equal(bc_output_check("", &err), BC_ERR_INVALID);
    assert_int_equal(count_entries(f->dir), 1);
}

/* An existing path that is not a regular file (here a FIFO made in the
 * test's own folder, so a wrong answer can never touch a real device) is
 * refused by check and by open, and left exactly as it was. */
static void test_not_regular_refused(void **state) {
    fixture *f = *state;
    char path[600];
    snprintf(path, sizeof path, "%s/pipe", f->dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    bc_error err = {0};
    assert_int_equal(bc_output_check(path, &err), BC_ERR_IO);
    assert_non_null(strstr(err.message, "a FIFO"));
    assert_non_null(strstr(err.message, path));
    err = (bc_error){0};
    assert_null(bc_output_open(path, &err));
    assert_non_null(strstr(err.message, "not a regular file"));
    struct stat sb;
    assert_int_equal(lstat(path, &sb), 0);
    assert_true(S_ISFIFO(sb.st_mode));
    assert_int_equal(count_entries(f->dir), 1); /* no temporary file left */
    /* a device: /dev/null is only checked, never opened for writing here */
    err = (bc_error){0};
    assert_int_equal(bc_output_check("/dev/null", &err), BC_ERR_IO);
    assert_non_null(strstr(err.message, "a character device"));
}

/* A symlink to a regular file is followed: the target gets the new text,
 * the link stays a link. A dangling link, or one to a FIFO, is refused. */
static void test_symlink_rule(void **state) {
    fixture *f = *state;
    char target[600], link[600], dangling[600], fifo[600], pipelink[600];
    snprintf(target, sizeof target, "%s/target.txt", f->dir);
    snprintf(link, sizeof link, "%s/link.txt", f->dir);
    snprintf(dangling, sizeof dangling, "%s/dangling.txt", f->dir);
    snprintf(fifo, sizeof fifo, "%s/pipe", f->dir);
    snprintf(pipelink, sizeof pipelink, "%s/pipelink", f->dir);
    FILE *fp = fopen(target, "w");
    assert_non_null(fp);
    fputs("old\n", fp);
    fclose(fp);
    assert_int_equal(symlink("target.txt", link), 0);
    bc_error err = {0};
    assert_int_equal(bc_output_check(link, &err), BC_OK);
    bc_output *out = bc_output_open(link, &err);
    assert_non_null(out);
    assert_int_equal(out_printf(out, &err, "new\n"), BC_OK);
    assert_int_equal(bc_output_commit(out, &err), BC_OK);
    struct stat sb;
    assert_int_equal(lstat(link, &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));
    char *text = slurp(target);
    assert_non_null(text);
    assert_string_equal(text, "new\n");
    free(text);

    assert_int_equal(symlink("missing.txt", dangling), 0);
    assert_int_equal(bc_output_check(dangling, &err), BC_ERR_IO);
    assert_non_null(strstr(err.message, "missing file"));
    assert_null(bc_output_open(dangling, &err));
    assert_int_equal(lstat(dangling, &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));

    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(symlink("pipe", pipelink), 0);
    assert_int_equal(bc_output_check(pipelink, &err), BC_ERR_IO);
    assert_non_null(strstr(err.message, "a FIFO"));
    assert_null(bc_output_open(pipelink, &err));
    assert_int_equal(count_entries(f->dir), 5);
}

/* An existing folder is refused by check (so before any case runs). */
static void test_folder_refused(void **state) {
    fixture *f = *state;
    char path[600];
    snprintf(path, sizeof path, "%s/report.json", f->dir);
    assert_int_equal(mkdir(path, 0777), 0);
    bc_error err = {0};
    assert_int_equal(bc_output_check(path, &err), BC_ERR_IO);
    assert_non_null(strstr(err.message, "is a folder"));
    assert_null(bc_output_open(path, &err));
}

/* While claims are active, two checks that resolve to one file (by another
 * spelling, or through a symlink) are refused, naming the first owner;
 * after end, nothing is remembered. */
static void test_claims(void **state) {
    fixture *f = *state;
    char a[600], b[600], c[600], real[600], link[600];
    snprintf(a, sizeof a, "%s/new/out.json", f->dir); /* folder "new" does not exist yet */
    snprintf(b, sizeof b, "%s/./new/../new/out.json", f->dir);
    snprintf(c, sizeof c, "%s/other.json", f->dir);
    snprintf(real, sizeof real, "%s/real.json", f->dir);
    snprintf(link, sizeof link, "%s/link.json", f->dir);
    FILE *fp = fopen(real, "w");
    assert_non_null(fp);
    fclose(fp);
    assert_int_equal(symlink("real.json", link), 0);
    bc_error err = {0};
    bc_output_claims_begin();
    bc_output_claims_owner("first place");
    assert_int_equal(bc_output_check(a, &err), BC_OK);
    assert_int_equal(bc_output_check(real, &err), BC_OK);
    bc_output_claims_owner("second place");
    assert_int_equal(bc_output_check(c, &err), BC_OK);
    assert_int_equal(bc_output_check(link, &err), BC_ERR_SETTING);
    assert_non_null(strstr(err.message, "first place"));
    assert_non_null(strstr(err.message, "real.json"));
    err = (bc_error){0};
    assert_int_equal(bc_output_check(b, &err), BC_ERR_SETTING);
    assert_non_null(strstr(err.message, "already the output of first place"));
    assert_int_equal(bc_output_check("-", &err), BC_OK); /* stdout is never claimed */
    assert_int_equal(bc_output_check("-", &err), BC_OK);
    bc_output_claims_end();
    assert_int_equal(bc_output_check(a, &err), BC_OK);
    assert_int_equal(bc_output_check(a, &err), BC_OK);
}

static void test_stdout(void **state) {
    (void)state;
    bc_error err = {0};
    bc_output *out = bc_output_open("-", &err);
    assert_non_null(out);
    assert_int_equal(out_printf(out, &err, "# test_output: a line on stdout\n"), BC_OK);
    assert_int_equal(bc_output_commit(out, &err), BC_OK);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_commit_writes_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_commit_replaces_existing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abort_leaves_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abort_keeps_existing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gzip_roundtrip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_creates_parent_dirs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_parent_is_a_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_same_path_twice_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_check, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_regular_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_symlink_rule, setup, teardown),
        cmocka_unit_test_setup_teardown(test_folder_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_claims, setup, teardown),
        cmocka_unit_test(test_empty_path_refused),
        cmocka_unit_test(test_stdout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
