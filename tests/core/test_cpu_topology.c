/* test_cpu_topology.c: bc_cpu_topology_read on fake sysfs trees written to a
 * temporary root: SMT pairs on two packages, a VM whose vCPUs report separate
 * cores (the note), an offline CPU, a root without sysfs. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cpu_topology.h"

typedef struct fake_root {
    char path[256];
} fake_root;

static int setup(void **state) {
    fake_root *r = calloc(1, sizeof *r);
    if (!r) return -1;
    snprintf(r->path, sizeof r->path, "/tmp/bc_cpu_topology_XXXXXX");
    if (!mkdtemp(r->path)) {
        free(r);
        return -1;
    }
    *state = r;
    return 0;
}

static int teardown(void **state) {
    fake_root *r = *state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf -- '%s'", r->path);
    int rc = system(cmd);
    free(r);
    return rc == 0 ? 0 : -1;
}

static void mkdirs(const char *path) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        mkdir(buf, 0755);
        *p = '/';
    }
    mkdir(buf, 0755);
}

static void write_file(const char *root, const char *rel, const char *text) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    *strrchr(dir, '/') = '\0';
    mkdirs(dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* cpuN's topology files: its core, package and sibling list. */
static void add_cpu(const char *root, int n, int core, int package, const char *siblings) {
    char rel[256], text[64];
    snprintf(rel, sizeof rel, "sys/devices/system/cpu/cpu%d/topology/core_id", n);
    snprintf(text, sizeof text, "%d\n", core);
    write_file(root, rel, text);
    snprintf(rel, sizeof rel, "sys/devices/system/cpu/cpu%d/topology/physical_package_id", n);
    snprintf(text, sizeof text, "%d\n", package);
    write_file(root, rel, text);
    snprintf(rel, sizeof rel, "sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", n);
    snprintf(text, sizeof text, "%s\n", siblings);
    write_file(root, rel, text);
}

/* Two packages of two cores with two threads each: 8 CPUs, 4 cores. Core
 * ids repeat across packages, so cores are counted per package. */
static void test_smt_two_packages(void **state) {
    fake_root *r = *state;
    add_cpu(r->path, 0, 0, 0, "0,4");
    add_cpu(r->path, 4, 0, 0, "0,4");
    add_cpu(r->path, 1, 1, 0, "1,5");
    add_cpu(r->path, 5, 1, 0, "1,5");
    add_cpu(r->path, 2, 0, 1, "2-3");
    add_cpu(r->path, 3, 0, 1, "2-3");
    add_cpu(r->path, 6, 1, 1, "6-7");
    add_cpu(r->path, 7, 1, 1, "6-7");
    /* not CPUs: */
    write_file(r->path, "sys/devices/system/cpu/cpufreq/boost", "1\n");
    write_file(r->path, "sys/devices/system/cpu/online", "0-7\n");
    write_file(r->path, "proc/cpuinfo", "processor\t: 0\nflags\t\t: fpu sse2 avx2 ht\n");
    bc_cpu_topology t;
    bc_error err = {0};
    assert_int_equal(bc_cpu_topology_read(r->path, &t, &err), BC_OK);
    assert_int_equal(t.logical_cpus, 8);
    assert_int_equal(t.physical_cores, 4);
    assert_int_equal(t.packages, 2);
    assert_int_equal(t.threads_per_core, 2);
    assert_int_equal(t.virtual_machine, 0);
    assert_string_equal(t.note, "");
}

/* A VM: two vCPUs, each its own core, hypervisor flag: the note says the
 * topology may hide sharing. An offline CPU (no topology/) is not counted. */
static void test_vm_separate_cores(void **state) {
    fake_root *r = *state;
    add_cpu(r->path, 0, 0, 0, "0");
    add_cpu(r->path, 1, 1, 0, "1");
    write_file(r->path, "sys/devices/system/cpu/cpu2/online", "0\n");
    write_file(r->path, "proc/cpuinfo",
               "processor\t: 0\nflags\t\t: fpu avx512f hypervisor amx_tile\n"
               "processor\t: 1\nflags\t\t: fpu avx512f hypervisor amx_tile\n");
    bc_cpu_topology t;
    bc_error err = {0};
    assert_int_equal(bc_cpu_topology_read(r->path, &t, &err), BC_OK);
    assert_int_equal(t.logical_cpus, 2);
    assert_int_equal(t.physical_cores, 2);
    assert_int_equal(t.packages, 1);
    assert_int_equal(t.threads_per_core, 1);
    assert_int_equal(t.virtual_machine, 1);
    assert_non_null(strstr(t.note, "virtual machine"));
    assert_non_null(strstr(t.note, "share one physical core"));
}

/* A word that merely contains "hypervisor" is not the flag. */
static void test_flag_is_a_whole_word(void **state) {
    fake_root *r = *state;
    add_cpu(r->path, 0, 0, 0, "0");
    write_file(r->path, "proc/cpuinfo", "flags\t\t: fpu nohypervisorx\n");
    bc_cpu_topology t;
    bc_error err = {0};
    assert_int_equal(bc_cpu_topology_read(r->path, &t, &err), BC_OK);
    assert_int_equal(t.virtual_machine, 0);
    assert_int_equal(t.logical_cpus, 1);
    assert_string_equal(t.note, "");
}

/* No sysfs under the root: zeros and a note naming the folder. */
static void test_no_sysfs(void **state) {
    fake_root *r = *state;
    bc_cpu_topology t;
    bc_error err = {0};
    assert_int_equal(bc_cpu_topology_read(r->path, &t, &err), BC_OK);
    assert_int_equal(t.logical_cpus, 0);
    assert_int_equal(t.physical_cores, 0);
    assert_int_equal(t.threads_per_core, 0);
    assert_non_null(strstr(t.note, "sys/devices/system/cpu"));
}

/* The machine itself: at least one CPU and one core, cores <= CPUs. */
static void test_this_machine(void **state) {
    (void)state;
    bc_cpu_topology t;
    bc_error err = {0};
    assert_int_equal(bc_cpu_topology_read("/", &t, &err), BC_OK);
    if (t.logical_cpus == 0) skip(); /* a container without sysfs */
    assert_true(t.physical_cores >= 1);
    assert_true(t.physical_cores <= t.logical_cpus);
    assert_true(t.packages >= 1 && t.packages <= t.physical_cores);
    assert_true(t.threads_per_core >= 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_smt_two_packages, setup, teardown),
        cmocka_unit_test_setup_teardown(test_vm_separate_cores, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flag_is_a_whole_word, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_sysfs, setup, teardown),
        cmocka_unit_test(test_this_machine),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
