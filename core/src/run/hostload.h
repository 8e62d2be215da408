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

#endif
