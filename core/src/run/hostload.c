/* hostload.c: load average and CPU steal from /proc (see hostload.h). */
#define _POSIX_C_SOURCE 200809L
#include "hostload.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
