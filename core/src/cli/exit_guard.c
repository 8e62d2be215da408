/* exit_guard.c: a plugin that ends the process while a run is in progress (exit, _exit or
 * _Exit from a hook) must not leave status 0: the run did not finish and its
 * reports were not written. exit() is caught by an atexit handler; _exit and
 * _Exit are defined here and exported from the executable (core/CMakeLists.txt:
 * --export-dynamic-symbol), so a dlopen'ed plugin binds to these. Both print
 * one line and end the process with status 1 when the plugin's status was 0
 * (another status is kept). Outside a run they behave as libc's. Under
 * run.isolation = "process" the same happens in the case's child, whose
 * parent then fails that case. */
#define _GNU_SOURCE
#include "exit_guard.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host.h"
#include "runner.h"

enum { EXIT_RUNTIME = 1 };

static volatile sig_atomic_t g_running; /* 1 while bc_run runs */

/* One line on stderr with write(2): nothing else is safe this late. */
static void guard_note(const char *how) {
    static const char a[] = "benchctl: a plugin ended the process during the run (";
    static const char b[] = "); the run did not finish and its reports were not written\n";
    static const char b_child[] = "); the case fails\n"; /* in an isolated case's child */
    if (bc_run_in_case_child) {
        if (write(STDERR_FILENO, a, sizeof a - 1) < 0 || write(STDERR_FILENO, how, strlen(how)) < 0 ||
            write(STDERR_FILENO, b_child, sizeof b_child - 1) < 0) {
        }
        return;
    }
    if (write(STDERR_FILENO, a, sizeof a - 1) < 0 || write(STDERR_FILENO, how, strlen(how)) < 0 ||
        write(STDERR_FILENO, b, sizeof b - 1) < 0) {
    }
}

static _Noreturn void guarded_exit(const char *zero, const char *other, int status) {
    if (g_running) {
        guard_note(status == 0 ? zero : other);
        if (status == 0) status = EXIT_RUNTIME;
    }
    bc_exit_group(status);
}

void _exit(int status) { guarded_exit("_exit(0)", "_exit", status); }
void _Exit(int status) { guarded_exit("_Exit(0)", "_Exit", status); }

static void exit_guard_atexit(void) {
    if (!g_running) return;
    guard_note("exit");
    bc_exit_group(EXIT_RUNTIME);
}

void bc_exit_guard_arm(void) {
    static int registered;
    if (!registered) registered = atexit(exit_guard_atexit) == 0;
    g_running = 1;
}

void bc_exit_guard_disarm(void) { g_running = 0; }
