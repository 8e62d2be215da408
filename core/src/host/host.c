/* host.c: the bc_host services table: logging to stderr with the plugin's
 * name, the monotonic clock, and output files through output.h. */
#define _GNU_SOURCE
#include "host.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "output.h"
#include "termsafe.h"

static bc_log_level g_log_level = BC_LOG_WARN;

void bc_host_set_log_level(bc_log_level level) { g_log_level = level; }
bc_log_level bc_host_log_level(void) { return g_log_level; }

uint64_t bc_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

_Noreturn void bc_exit_group(int status) {
    syscall(SYS_exit_group, status);
    for (;;) pause(); /* not reached */
}

static void host_log(const bc_host *host, bc_log_level level, const char *fmt, ...) {
    if (level > g_log_level) return;
    static const char *const level_names[] = {"error", "warning", "info", "debug"};
    const char *name = host && host->host_private ? (const char *)host->host_private : "plugin";
    const char *lname = (level >= BC_LOG_ERROR && level <= BC_LOG_DEBUG) ? level_names[level] : "log";
    /* one fprintf per part; stderr is unbuffered, so build the line first */
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    char safe[2048]; /* a plugin relays what its peer sent: terminal controls escaped (termsafe.h) */
    fprintf(stderr, "benchctl: %s: %s: %s\n", name, lname, bc_terminal_safe(safe, sizeof safe, line));
}

static bc_output *host_output_open(const bc_host *host, const char *path, bc_error *err) {
    (void)host;
    return bc_output_open(path, err);
}

static bc_status host_output_printf(bc_output *out, bc_error *err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    bc_status st = bc_output_vprintf(out, err, fmt, ap);
    va_end(ap);
    return st;
}
static bc_status host_output_write(bc_output *out, const void *data, size_t len, bc_error *err) {
    return bc_output_write(out, data, len, err);
}
static bc_status host_output_commit(bc_output *out, bc_error *err) { return bc_output_commit(out, err); }
static void host_output_abort(bc_output *out) { bc_output_abort(out); }
static bc_status host_output_check(const bc_host *host, const char *path, bc_error *err) {
    (void)host;
    return bc_output_check(path, err);
}

void bc_host_init(bc_host *host, const char *name) {
    *host = (bc_host){0};
    host->struct_size = sizeof *host;
    host->abi_major = BENCHCTL_ABI_MAJOR;
    host->abi_minor = BENCHCTL_ABI_MINOR;
    host->benchctl_version = BENCHCTL_VERSION;
    host->log = host_log;
    host->now_ns = bc_now_ns;
    host->output_open = host_output_open;
    host->output_write = host_output_write;
    host->output_printf = host_output_printf;
    host->output_commit = host_output_commit;
    host->output_abort = host_output_abort;
    host->output_check = host_output_check;
    host->stderr_is_tty = isatty(STDERR_FILENO);
    host->host_private = (void *)name;
    host->log_level = g_log_level; /* set by main before any plugin loads */
}
