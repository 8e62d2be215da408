/* hostload.h: how busy the machine was around a case, from Linux's /proc:
 *   load average  the 1-minute figure, the first number of /proc/loadavg;
 *   CPU steal     time the hypervisor ran something else while a virtual
 *                 CPU wanted to run: /proc/stat's first "cpu" line counts
 *                 jiffies per state (user nice system idle iowait irq
 *                 softirq steal guest guest_nice); the steal share of a
 *                 span is the growth of steal divided by the growth of the
 *                 first eight (guest time is already inside user and nice).
 * Anything the system does not say (no /proc, an older kernel without the
 * steal column, no jiffy elapsed) is NAN, never a guess.
 */
#ifndef BENCHCTL_HOSTLOAD_H
#define BENCHCTL_HOSTLOAD_H

#include <stddef.h>
#include <stdint.h>

/* One reading of /proc. */
typedef struct bc_hostload {
    double load_avg_1m;   /* NAN when unknown */
    uint64_t steal, total; /* jiffies since boot; both 0 when unknown */
    int has_stat;          /* steal and total were read */
} bc_hostload;

/* Reads /proc/loadavg and /proc/stat into *out. */
void bc_hostload_read(bc_hostload *out);

/* Parses the text of /proc/loadavg: its first number, or NAN. */
double bc_hostload_parse_loadavg(const char *text);

/* Parses the text of /proc/stat: the steal and total jiffies of its first
 * "cpu " line. Returns 1 when it has the steal column, else 0. */
int bc_hostload_parse_stat(const char *text, uint64_t *steal, uint64_t *total);

/* The steal share between two readings (0..1), or NAN when either lacks
 * the counters or no jiffy elapsed. */
double bc_hostload_steal_share(const bc_hostload *start, const bc_hostload *end);

/* ------------------------------------------------ the quiet-machine check
 *
 * Before the first case, `run` looks at whether the machine is quiet enough
 * to measure on (run.quiet_check, docs/config.md). Each reading is a
 * finding when:
 *   load      the 1-minute load average is at least half the online CPUs
 *             (/proc/loadavg against /sys/devices/system/cpu/online);
 *   governor  some CPU's frequency governor is not "performance"
 *             (/sys/devices/system/cpu/cpuN/cpufreq/scaling_governor; a
 *             machine without cpufreq, a VM, says nothing);
 *   busy      another process used at least a quarter of a CPU over the
 *             sample (utime + stime of /proc/PID/stat, read at the start
 *             and the end of it; benchctl's own process is left out);
 *   swap      swap is in use (SwapTotal - SwapFree of /proc/meminfo > 0).
 * What a system does not say is unknown (NAN, -1, ""), never a finding.
 * The roots ("/proc", "/sys" when NULL) let tests use a fake tree. */

enum { BC_QUIET_MAX_BUSY = 8, BC_QUIET_MAX_PIDS = 4096 };

typedef struct bc_quiet_roots {
    const char *proc; /* "/proc" when NULL */
    const char *sys;  /* "/sys" when NULL */
    int self_pid;     /* the process left out of "busy" (getpid() when 0) */
    long ticks_per_s; /* clock ticks of /proc/PID/stat (sysconf(_SC_CLK_TCK) when 0) */
} bc_quiet_roots;

/* The processes' CPU ticks at the start of the sample. Owned: pids and
 * ticks, freed by bc_quiet_end (or bc_quiet_sample_free). */
typedef struct bc_quiet_sample {
    size_t n;
    int *pids;
    uint64_t *ticks;
} bc_quiet_sample;

typedef struct bc_quiet_busy {
    int pid;
    char comm[32];
    double cpu_share; /* CPUs' worth over the sample: 1.0 = one CPU all the time */
} bc_quiet_busy;

typedef struct bc_quiet_report {
    int n_cpus;               /* online CPUs; 0 unknown */
    double load_avg_1m;       /* NAN unknown */
    char governor[32];        /* the first non-"performance" governor, else "performance"; "" unknown */
    int n_cpus_not_performance;
    int64_t swap_used_bytes;  /* -1 unknown */
    double sample_ms;         /* the busy sample's length */
    uint32_t n_busy;          /* other busy processes, all of them */
    bc_quiet_busy busy[BC_QUIET_MAX_BUSY]; /* the busiest min(n_busy, BC_QUIET_MAX_BUSY), busiest first */
} bc_quiet_report;

/* Starts the busy sample: reads every /proc/PID/stat (the first
 * BC_QUIET_MAX_PIDS processes listed). 0 on success, -1 when /proc cannot
 * be listed (the busy finding is then unknown). */
int bc_quiet_begin(const bc_quiet_roots *roots, bc_quiet_sample *s);

/* Ends the sample elapsed_ms after bc_quiet_begin, reads the other figures
 * into *out, and frees s. */
void bc_quiet_end(const bc_quiet_roots *roots, bc_quiet_sample *s, double elapsed_ms, bc_quiet_report *out);

void bc_quiet_sample_free(bc_quiet_sample *s);

/* The findings as one line, "load average 3.20 on 2 CPUs; ...", into buf
 * ("" when none); returns how many. */
int bc_quiet_findings(const bc_quiet_report *r, char *buf, size_t cap);

/* The online CPUs of a cpu list text ("0-3,8,10-11\n"): 6 there; 0 when
 * malformed. */
int bc_quiet_parse_cpu_list(const char *text);

/* SwapTotal - SwapFree of a /proc/meminfo text, bytes; -1 when absent. */
int64_t bc_quiet_parse_swap_used(const char *text);

/* utime + stime of a /proc/PID/stat text, and its comm (up to cap - 1
 * bytes); 0 on success, -1 when malformed. */
int bc_quiet_parse_pid_stat(const char *text, uint64_t *ticks, char *comm, size_t cap);

#endif
