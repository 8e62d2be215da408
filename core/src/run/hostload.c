/* hostload.c: load average and CPU steal from /proc, and the quiet-machine
 * check (see hostload.h). */
#define _POSIX_C_SOURCE 200809L
#include "hostload.h"

#include "benchctl/plugin.h" /* BC_PRINTF */

#include <dirent.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

double bc_hostload_parse_loadavg(const char *text) {
    if (!text) return NAN;
    char *end = NULL;
    double v = strtod(text, &end);
    return end != text && isfinite(v) && v >= 0 ? v : NAN;
}

int bc_hostload_parse_stat(const char *text, uint64_t *steal, uint64_t *total) {
    *steal = *total = 0;
    if (!text || strncmp(text, "cpu ", 4) != 0) return 0;
    const char *p = text + 4;
    uint64_t v[8];
    int n = 0;
    while (n < 8) {
        while (*p == ' ') p++;
        if (*p < '0' || *p > '9') break;
        char *end = NULL;
        v[n++] = strtoull(p, &end, 10);
        p = end;
    }
    if (n < 8) return 0; /* kernels before 2.6.11 have no steal column */
    for (int i = 0; i < 8; i++) *total += v[i];
    *steal = v[7];
    return 1;
}

/* The first line of path into buf (NUL-terminated); 0 when unreadable. */
static int first_line(const char *path, char *buf, size_t n) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int ok = fgets(buf, (int)n, f) != NULL;
    fclose(f);
    return ok;
}

void bc_hostload_read(bc_hostload *out) {
    char line[512];
    *out = (bc_hostload){.load_avg_1m = NAN};
    if (first_line("/proc/loadavg", line, sizeof line)) out->load_avg_1m = bc_hostload_parse_loadavg(line);
    if (first_line("/proc/stat", line, sizeof line))
        out->has_stat = bc_hostload_parse_stat(line, &out->steal, &out->total);
}

double bc_hostload_steal_share(const bc_hostload *start, const bc_hostload *end) {
    if (!start->has_stat || !end->has_stat || end->total <= start->total || end->steal < start->steal) return NAN;
    return (double)(end->steal - start->steal) / (double)(end->total - start->total);
}

/* ------------------------------------------------ the quiet-machine check */

static const char *proc_root(const bc_quiet_roots *r) { return r && r->proc ? r->proc : "/proc"; }
static const char *sys_root(const bc_quiet_roots *r) { return r && r->sys ? r->sys : "/sys"; }

/* The whole (small) file at root/rel into buf, NUL-terminated; 0 when unreadable. */
static int read_small(const char *root, const char *rel, char *buf, size_t cap) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = '\0';
    return 1;
}

int bc_quiet_parse_cpu_list(const char *text) {
    if (!text) return 0;
    int n = 0;
    const char *p = text;
    while (*p && *p != '\n') {
        char *end = NULL;
        long a = strtol(p, &end, 10), b = a;
        if (end == p || a < 0) return 0;
        p = end;
        if (*p == '-') {
            b = strtol(p + 1, &end, 10);
            if (end == p + 1 || b < a) return 0;
            p = end;
        }
        n += (int)(b - a + 1);
        if (*p == ',') p++;
        else if (*p && *p != '\n') return 0;
    }
    return n;
}

/* The kB value of "Key:   123 kB" in a meminfo text, -1 when absent. */
static int64_t meminfo_kb(const char *text, const char *key) {
    size_t len = strlen(key);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, key, len) == 0 && p[len] == ':') {
            char *end = NULL;
            long long v = strtoll(p + len + 1, &end, 10);
            return end != p + len + 1 && v >= 0 ? (int64_t)v : -1;
        }
    }
    return -1;
}

int64_t bc_quiet_parse_swap_used(const char *text) {
    if (!text) return -1;
    int64_t total = meminfo_kb(text, "SwapTotal"), free_kb = meminfo_kb(text, "SwapFree");
    if (total < 0 || free_kb < 0) return -1;
    return total > free_kb ? (total - free_kb) * 1024 : 0;
}

int bc_quiet_parse_pid_stat(const char *text, uint64_t *ticks, char *comm, size_t cap) {
    /* "PID (comm) S ppid ...": comm may hold spaces and ')', so it ends at the last ')' */
    const char *open = text ? strchr(text, '(') : NULL, *close = text ? strrchr(text, ')') : NULL;
    if (!open || !close || close < open) return -1;
    size_t len = (size_t)(close - open - 1);
    if (cap) {
        if (len > cap - 1) len = cap - 1;
        memcpy(comm, open + 1, len);
        comm[len] = '\0';
    }
    /* after ") ": state (field 3), then fields 4.. ; utime and stime are fields 14 and 15 */
    const char *p = close + 1;
    uint64_t v[13];
    for (int field = 3; field <= 15; field++) {
        while (*p == ' ') p++;
        if (!*p) return -1;
        if (field == 3) {
            while (*p && *p != ' ') p++;
            continue;
        }
        char *end = NULL;
        long long x = strtoll(p, &end, 10);
        if (end == p) return -1;
        v[field - 3] = (uint64_t)(x < 0 ? 0 : x);
        p = end;
    }
    *ticks = v[14 - 3] + v[15 - 3];
    return 0;
}

/* The CPU ticks of process pid, and its comm; 0 on success. */
static int pid_ticks(const bc_quiet_roots *roots, int pid, uint64_t *ticks, char *comm, size_t cap) {
    char rel[64], text[1024];
    snprintf(rel, sizeof rel, "%d/stat", pid);
    if (!read_small(proc_root(roots), rel, text, sizeof text)) return -1;
    return bc_quiet_parse_pid_stat(text, ticks, comm, cap);
}

void bc_quiet_sample_free(bc_quiet_sample *s) {
    free(s->pids);
    free(s->ticks);
    *s = (bc_quiet_sample){0};
}

int bc_quiet_begin(const bc_quiet_roots *roots, bc_quiet_sample *s) {
    *s = (bc_quiet_sample){0};
    DIR *d = opendir(proc_root(roots));
    if (!d) return -1;
    s->pids = malloc(BC_QUIET_MAX_PIDS * sizeof *s->pids);
    s->ticks = malloc(BC_QUIET_MAX_PIDS * sizeof *s->ticks);
    if (!s->pids || !s->ticks) {
        closedir(d);
        bc_quiet_sample_free(s);
        return -1;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL && s->n < BC_QUIET_MAX_PIDS) {
        char *end = NULL;
        long pid = strtol(e->d_name, &end, 10);
        if (end == e->d_name || *end || pid <= 0) continue;
        uint64_t t;
        if (pid_ticks(roots, (int)pid, &t, NULL, 0) != 0) continue;
        s->pids[s->n] = (int)pid;
        s->ticks[s->n] = t;
        s->n++;
    }
    closedir(d);
    return 0;
}

/* Keeps the busiest BC_QUIET_MAX_BUSY, busiest first. */
static void add_busy(bc_quiet_report *r, int pid, const char *comm, double share) {
    r->n_busy++;
    uint32_t n = r->n_busy <= BC_QUIET_MAX_BUSY ? r->n_busy : BC_QUIET_MAX_BUSY;
    uint32_t at = n - 1;
    if (r->n_busy > BC_QUIET_MAX_BUSY && !(share > r->busy[at].cpu_share)) return;
    while (at > 0 && r->busy[at - 1].cpu_share < share) {
        r->busy[at] = r->busy[at - 1];
        at--;
    }
    r->busy[at] = (bc_quiet_busy){.pid = pid, .cpu_share = share};
    snprintf(r->busy[at].comm, sizeof r->busy[at].comm, "%s", comm);
}

static void read_governors(const bc_quiet_roots *roots, bc_quiet_report *r) {
    int n_cpus = r->n_cpus > 0 ? r->n_cpus : 1024, seen = 0;
    for (int cpu = 0; cpu < n_cpus && cpu < 1024; cpu++) {
        char rel[96], gov[64];
        snprintf(rel, sizeof rel, "devices/system/cpu/cpu%d/cpufreq/scaling_governor", cpu);
        if (!read_small(sys_root(roots), rel, gov, sizeof gov)) {
            if (r->n_cpus <= 0) break; /* no cpu list: stop at the first gap */
            continue;
        }
        gov[strcspn(gov, "\n")] = '\0';
        seen++;
        if (strcmp(gov, "performance") != 0) {
            if (r->n_cpus_not_performance++ == 0) {
                gov[sizeof r->governor - 1] = '\0'; /* governor names are short */
                memcpy(r->governor, gov, strlen(gov) + 1);
            }
        }
    }
    if (seen && r->n_cpus_not_performance == 0) snprintf(r->governor, sizeof r->governor, "performance");
}

void bc_quiet_end(const bc_quiet_roots *roots, bc_quiet_sample *s, double elapsed_ms, bc_quiet_report *out) {
    *out = (bc_quiet_report){.load_avg_1m = NAN, .swap_used_bytes = -1, .sample_ms = elapsed_ms};
    char text[4096];
    if (read_small(sys_root(roots), "devices/system/cpu/online", text, sizeof text))
        out->n_cpus = bc_quiet_parse_cpu_list(text);
    if (read_small(proc_root(roots), "loadavg", text, sizeof text)) out->load_avg_1m = bc_hostload_parse_loadavg(text);
    if (read_small(proc_root(roots), "meminfo", text, sizeof text)) out->swap_used_bytes = bc_quiet_parse_swap_used(text);
    read_governors(roots, out);
    const int self = roots && roots->self_pid ? roots->self_pid : (int)getpid();
    long hz = roots && roots->ticks_per_s > 0 ? roots->ticks_per_s : sysconf(_SC_CLK_TCK);
    if (hz <= 0) hz = 100;
    for (size_t i = 0; s && i < s->n && elapsed_ms > 0; i++) {
        if (s->pids[i] == self) continue;
        uint64_t t;
        char comm[32];
        if (pid_ticks(roots, s->pids[i], &t, comm, sizeof comm) != 0 || t < s->ticks[i]) continue; /* gone */
        double share = (double)(t - s->ticks[i]) / (double)hz / (elapsed_ms / 1000.0);
        if (share >= 0.25) add_busy(out, s->pids[i], comm, share);
    }
    if (s) bc_quiet_sample_free(s);
}

/* Appends "; " (unless first) and the formatted text to buf. */
static void finding(char *buf, size_t cap, int *n, const char *fmt, ...) BC_PRINTF(4, 5);
static void finding(char *buf, size_t cap, int *n, const char *fmt, ...) {
    size_t used = strlen(buf);
    if (*n && used + 2 < cap) snprintf(buf + used, cap - used, "; "), used += 2;
    va_list ap;
    va_start(ap, fmt);
    if (used < cap) vsnprintf(buf + used, cap - used, fmt, ap);
    va_end(ap);
    (*n)++;
}

int bc_quiet_findings(const bc_quiet_report *r, char *buf, size_t cap) {
    int n = 0;
    if (!cap) return 0;
    buf[0] = '\0';
    if (r->n_cpus > 0 && isfinite(r->load_avg_1m) && r->load_avg_1m >= 0.5 * r->n_cpus)
        finding(buf, cap, &n, "load average %.2f on %d CPU%s", r->load_avg_1m, r->n_cpus, r->n_cpus == 1 ? "" : "s");
    if (r->n_cpus_not_performance > 0)
        finding(buf, cap, &n, "CPU frequency governor '%s' (not 'performance') on %d CPU%s", r->governor,
                r->n_cpus_not_performance, r->n_cpus_not_performance == 1 ? "" : "s");
    if (r->n_busy > 0) {
        char list[256] = "";
        size_t used = 0;
        uint32_t shown = r->n_busy < BC_QUIET_MAX_BUSY ? r->n_busy : BC_QUIET_MAX_BUSY;
        for (uint32_t i = 0; i < shown && i < 3 && used < sizeof list; i++) {
            snprintf(list + used, sizeof list - used, "%s%s (pid %d) %.0f%%", i ? ", " : "", r->busy[i].comm,
                     r->busy[i].pid, 100.0 * r->busy[i].cpu_share);
            used = strlen(list);
        }
        finding(buf, cap, &n, "%u other busy process%s: %s%s", r->n_busy, r->n_busy == 1 ? "" : "es", list,
                r->n_busy > 3 ? ", ..." : "");
    }
    if (r->swap_used_bytes > 0)
        finding(buf, cap, &n, "%.1f MiB of swap in use", (double)r->swap_used_bytes / (1024.0 * 1024.0));
    return n;
}
