/* test_hostload.c: the load average and CPU steal readers (core/src/run/hostload.c):
 * /proc texts as kernels write them, kernels without the steal column, the
 * share between two readings, and the live /proc where there is one; the
 * quiet-machine check on a fake /proc and /sys tree (a loaded machine, a
 * quiet one, one that says nothing) and its parsers. */
#define _XOPEN_SOURCE 700
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "bc_test_assert.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hostload.h"

static void test_parse_loadavg(void **state) {
    (void)state;
    assert_double_equal(bc_hostload_parse_loadavg("1.69 1.63 1.10 4/111 25370\n"), 1.69, 1e-12);
    assert_double_equal(bc_hostload_parse_loadavg("0.00 0.01 0.05 1/80 3\n"), 0.0, 0);
    assert_nan(bc_hostload_parse_loadavg(""));
    assert_nan(bc_hostload_parse_loadavg("load"));
    assert_nan(bc_hostload_parse_loadavg(NULL));
}

static void test_parse_stat(void **state) {
    (void)state;
    uint64_t steal, total;
    /* user nice system idle iowait irq softirq steal guest guest_nice: guests are already in user/nice */
    assert_int_equal(bc_hostload_parse_stat("cpu  100 2 30 800 10 0 8 50 40 0\ncpu0 1 2 3\n", &steal, &total), 1);
    assert_int_equal(steal, 50);
    assert_int_equal(total, 100 + 2 + 30 + 800 + 10 + 0 + 8 + 50);
    /* a kernel without the steal column (before 2.6.11): unknown */
    assert_int_equal(bc_hostload_parse_stat("cpu  100 2 30 800 10 0 8\n", &steal, &total), 0);
    assert_int_equal(bc_hostload_parse_stat("intr 1 2 3\n", &steal, &total), 0);
    assert_int_equal(bc_hostload_parse_stat(NULL, &steal, &total), 0);
}

static void test_steal_share(void **state) {
    (void)state;
    bc_hostload a = {.load_avg_1m = 1.0, .steal = 50, .total = 1000, .has_stat = 1};
    bc_hostload b = {.load_avg_1m = 1.0, .steal = 80, .total = 1400, .has_stat = 1};
    assert_double_equal(bc_hostload_steal_share(&a, &b), 30.0 / 400.0, 1e-12);
    assert_nan(bc_hostload_steal_share(&a, &a)); /* no jiffy elapsed */
    bc_hostload none = {.load_avg_1m = NAN};
    assert_nan(bc_hostload_steal_share(&none, &b));
    assert_nan(bc_hostload_steal_share(&b, &a)); /* counters going backwards */
}

/* The live /proc: numbers where the kernel has them. */
static void test_read_live(void **state) {
    (void)state;
    bc_hostload h;
    bc_hostload_read(&h);
    if (access("/proc/loadavg", R_OK) == 0) assert_true(isfinite(h.load_avg_1m) && h.load_avg_1m >= 0);
    else assert_nan(h.load_avg_1m);
    if (access("/proc/stat", R_OK) == 0) {
        assert_int_equal(h.has_stat, 1);
        assert_true(h.total > 0 && h.steal <= h.total);
    }
}

static void test_parse_quiet(void **state) {
    (void)state;
    assert_int_equal(bc_quiet_parse_cpu_list("0-3\n"), 4);
    assert_int_equal(bc_quiet_parse_cpu_list("0-3,8,10-11\n"), 7);
    assert_int_equal(bc_quiet_parse_cpu_list("0\n"), 1);
    assert_int_equal(bc_quiet_parse_cpu_list("3-1"), 0);
    assert_int_equal(bc_quiet_parse_cpu_list("x"), 0);
    assert_int_equal(bc_quiet_parse_swap_used("MemTotal: 100 kB\nSwapTotal:   2048 kB\nSwapFree:    1024 kB\n"),
                     1024 * 1024);
    assert_int_equal(bc_quiet_parse_swap_used("SwapTotal: 0 kB\nSwapFree: 0 kB\n"), 0);
    assert_int_equal(bc_quiet_parse_swap_used("MemTotal: 100 kB\n"), -1);
    uint64_t ticks = 0;
    char comm[32];
    /* a comm with a space and a ')' of its own; utime 7, stime 5 */
    assert_int_equal(bc_quiet_parse_pid_stat("42 (we ird)) R 1 42 42 0 -1 4194304 10 0 0 0 7 5 0 0 20 0 1 0\n",
                                             &ticks, comm, sizeof comm),
                     0);
    assert_int_equal(ticks, 12);
    assert_string_equal(comm, "we ird)");
    assert_int_equal(bc_quiet_parse_pid_stat("42 (x) R 1 2", &ticks, comm, sizeof comm), -1);
    assert_int_equal(bc_quiet_parse_pid_stat("garbage", &ticks, comm, sizeof comm), -1);
}

/* Writes text to dir/rel, making the folders on the way. */
static void put(const char *dir, const char *rel, const char *text) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    mkdir(dir, 0755); /* its parent exists */
    for (char *p = path + strlen(dir) + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(path, 0755);
            *p = '/';
        }
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* A pid's stat with utime u and stime s. */
static void put_pid(const char *proc, int pid, const char *comm, int u, int s) {
    char rel[64], text[256];
    snprintf(rel, sizeof rel, "%d/stat", pid);
    snprintf(text, sizeof text, "%d (%s) R 1 %d %d 0 -1 4194304 10 0 0 0 %d %d 0 0 20 0 1 0 100\n", pid, comm, pid, pid,
             u, s);
    put(proc, rel, text);
}

static void remove_tree(const char *dir) {
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* A loaded fake machine: 2 CPUs at load 3.5, powersave on cpu1, two other
 * processes busy over a 1 s sample (100 ticks/s: 90 and 30 ticks), one
 * idle, our own process busy (left out), swap in use. */
static void test_quiet_loaded(void **state) {
    (void)state;
    char root[] = "/tmp/bc_quiet_XXXXXX";
    assert_non_null(mkdtemp(root));
    char proc[300], sys[300];
    snprintf(proc, sizeof proc, "%s/proc", root);
    snprintf(sys, sizeof sys, "%s/sys", root);
    put(proc, "loadavg", "3.50 2.00 1.00 5/200 999\n");
    put(proc, "meminfo", "MemTotal: 8000000 kB\nSwapTotal: 1048576 kB\nSwapFree: 524288 kB\n");
    put(sys, "devices/system/cpu/online", "0-1\n");
    put(sys, "devices/system/cpu/cpu0/cpufreq/scaling_governor", "performance\n");
    put(sys, "devices/system/cpu/cpu1/cpufreq/scaling_governor", "powersave\n");
    put_pid(proc, 10, "cc1", 100, 0);
    put_pid(proc, 11, "python3", 50, 50);
    put_pid(proc, 12, "sshd", 5, 5);
    put_pid(proc, 77, "benchctl", 0, 0);
    put(proc, "self", "not a pid\n"); /* skipped: not a number */
    bc_quiet_roots roots = {.proc = proc, .sys = sys, .self_pid = 77, .ticks_per_s = 100};
    bc_quiet_sample s;
    assert_int_equal(bc_quiet_begin(&roots, &s), 0);
    assert_int_equal(s.n, 4);
    put_pid(proc, 10, "cc1", 160, 30); /* +90 ticks: 0.9 of a CPU */
    put_pid(proc, 11, "python3", 70, 60); /* +30: 0.3 */
    put_pid(proc, 12, "sshd", 6, 6);      /* +2: quiet */
    put_pid(proc, 77, "benchctl", 100, 0); /* ourselves */
    bc_quiet_report r;
    bc_quiet_end(&roots, &s, 1000.0, &r);
    assert_null(s.pids); /* freed */
    assert_int_equal(r.n_cpus, 2);
    assert_double_equal(r.load_avg_1m, 3.5, 0);
    assert_string_equal(r.governor, "powersave");
    assert_int_equal(r.n_cpus_not_performance, 1);
    assert_int_equal(r.swap_used_bytes, (int64_t)524288 * 1024);
    assert_int_equal(r.n_busy, 2);
    assert_int_equal(r.busy[0].pid, 10);
    assert_string_equal(r.busy[0].comm, "cc1");
    assert_double_equal(r.busy[0].cpu_share, 0.9, 1e-12);
    assert_int_equal(r.busy[1].pid, 11);
    assert_double_equal(r.busy[1].cpu_share, 0.3, 1e-12);
    char text[512];
    assert_int_equal(bc_quiet_findings(&r, text, sizeof text), 4);
    assert_string_equal(text, "load average 3.50 on 2 CPUs; CPU frequency governor 'powersave' (not 'performance') "
                              "on 1 CPU; 2 other busy processes: cc1 (pid 10) 90%, python3 (pid 11) 30%; "
                              "512.0 MiB of swap in use");
    remove_tree(root);
}

/* A quiet machine gives no finding; one whose /proc and /sys say nothing
 * gives none either (unknown is not a finding). */
static void test_quiet_quiet(void **state) {
    (void)state;
    char root[] = "/tmp/bc_quiet_XXXXXX";
    assert_non_null(mkdtemp(root));
    char proc[300], sys[300];
    snprintf(proc, sizeof proc, "%s/proc", root);
    snprintf(sys, sizeof sys, "%s/sys", root);
    put(proc, "loadavg", "0.40 0.30 0.20 1/200 999\n");
    put(proc, "meminfo", "SwapTotal: 0 kB\nSwapFree: 0 kB\n");
    put(sys, "devices/system/cpu/online", "0-1\n");
    put_pid(proc, 10, "sshd", 5, 5);
    bc_quiet_roots roots = {.proc = proc, .sys = sys, .self_pid = 77, .ticks_per_s = 100};
    bc_quiet_sample s;
    assert_int_equal(bc_quiet_begin(&roots, &s), 0);
    put_pid(proc, 10, "sshd", 10, 10); /* 0.1 of a CPU: below a quarter */
    bc_quiet_report r;
    bc_quiet_end(&roots, &s, 1000.0, &r);
    char text[512];
    assert_int_equal(bc_quiet_findings(&r, text, sizeof text), 0);
    assert_string_equal(text, "");
    assert_string_equal(r.governor, ""); /* no cpufreq: unknown */
    assert_int_equal(r.swap_used_bytes, 0);

    char empty[300];
    snprintf(empty, sizeof empty, "%s/nothing", root);
    bc_quiet_roots none = {.proc = empty, .sys = empty};
    assert_int_equal(bc_quiet_begin(&none, &s), -1);
    bc_quiet_end(&none, &s, 250.0, &r);
    assert_int_equal(r.n_cpus, 0);
    assert_nan(r.load_avg_1m);
    assert_int_equal(r.swap_used_bytes, -1);
    assert_int_equal(bc_quiet_findings(&r, text, sizeof text), 0);
    remove_tree(root);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_loadavg),
        cmocka_unit_test(test_parse_stat),
        cmocka_unit_test(test_steal_share),
        cmocka_unit_test(test_read_live),
        cmocka_unit_test(test_parse_quiet),
        cmocka_unit_test(test_quiet_loaded),
        cmocka_unit_test(test_quiet_quiet),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
