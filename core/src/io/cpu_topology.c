/* cpu_topology.c: physical cores and SMT siblings from sysfs (cpu_topology.h). */
#define _GNU_SOURCE
#include "cpu_topology.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct core_key {
    long package, core;
} core_key;

/* One integer from a one-line sysfs file; -1 when absent or not a number. */
static long read_long(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    long v = -1;
    if (fscanf(f, "%ld", &v) != 1) v = -1;
    fclose(f);
    return v;
}

/* How many CPUs a list such as "0-1,4,6-7" names; 0 when unreadable. */
static unsigned count_cpu_list(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[4096];
    unsigned n = 0;
    if (fgets(line, sizeof line, f)) {
        const char *p = line;
        while (*p && *p != '\n') {
            char *end;
            long a = strtol(p, &end, 10);
            if (end == p || a < 0) break;
            long b = a;
            p = end;
            if (*p == '-') {
                b = strtol(p + 1, &end, 10);
                if (end == p + 1 || b < a) break;
                p = end;
            }
            n += (unsigned)(b - a + 1);
            if (*p == ',') p++;
        }
    }
    fclose(f);
    return n;
}

/* 1 when /proc/cpuinfo's first "flags" line has the word "hypervisor". */
static int cpuinfo_has_hypervisor(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[8192];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) != 0) continue;
        for (char *w = strtok(line, " \t\n"); w; w = strtok(NULL, " \t\n"))
            if (strcmp(w, "hypervisor") == 0) found = 1;
        break;
    }
    fclose(f);
    return found;
}

/* "cpu" followed by digits only (not "cpufreq", "cpuidle"). */
static int is_cpu_dir(const char *name) {
    if (strncmp(name, "cpu", 3) != 0 || !name[3]) return 0;
    for (const char *p = name + 3; *p; p++)
        if (!isdigit((unsigned char)*p)) return 0;
    return 1;
}

bc_status bc_cpu_topology_read(const char *root, bc_cpu_topology *topo, bc_error *err) {
    *topo = (bc_cpu_topology){0};
    if (!root || !*root) root = "/";
    const char *sep = root[strlen(root) - 1] == '/' ? "" : "/";
    char dir[4096], path[4096 + 512];
    snprintf(dir, sizeof dir, "%s%ssys/devices/system/cpu", root, sep);
    snprintf(path, sizeof path, "%s%sproc/cpuinfo", root, sep);
    topo->virtual_machine = cpuinfo_has_hypervisor(path);

    DIR *d = opendir(dir);
    if (!d) {
        snprintf(topo->note, sizeof topo->note, "no CPU topology: %.200s cannot be read", dir);
        return BC_OK;
    }
    core_key *keys = NULL; /* owned here: one per logical CPU read */
    size_t n_keys = 0, cap = 0;
    bc_status st = BC_OK;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!is_cpu_dir(e->d_name)) continue;
        snprintf(path, sizeof path, "%s/%s/topology/core_id", dir, e->d_name);
        long core = read_long(path);
        if (core < 0) continue; /* offline: no topology */
        snprintf(path, sizeof path, "%s/%s/topology/physical_package_id", dir, e->d_name);
        long package = read_long(path);
        snprintf(path, sizeof path, "%s/%s/topology/thread_siblings_list", dir, e->d_name);
        unsigned siblings = count_cpu_list(path);
        if (siblings > topo->threads_per_core) topo->threads_per_core = siblings;
        if (n_keys == cap) {
            size_t ncap = cap ? cap * 2 : 64;
            core_key *grown = realloc(keys, ncap * sizeof *keys);
            if (!grown) {
                st = bc_error_set(err, BC_ERR_NOMEM, "CPU topology: out of memory reading %s", dir);
                break;
            }
            keys = grown;
            cap = ncap;
        }
        keys[n_keys++] = (core_key){package, core};
    }
    closedir(d);
    if (st == BC_OK) {
        topo->logical_cpus = (unsigned)n_keys;
        for (size_t i = 0; i < n_keys; i++) {
            int seen_core = 0, seen_package = 0;
            for (size_t j = 0; j < i; j++) {
                seen_core |= keys[j].package == keys[i].package && keys[j].core == keys[i].core;
                seen_package |= keys[j].package == keys[i].package;
            }
            topo->physical_cores += !seen_core;
            topo->packages += !seen_package;
        }
        if (n_keys == 0)
            snprintf(topo->note, sizeof topo->note, "no CPU topology: no cpuN/topology/core_id under %.180s", dir);
        else if (topo->virtual_machine && topo->threads_per_core <= 1)
            snprintf(topo->note, sizeof topo->note,
                     "virtual machine: vCPUs reported as separate cores may share one physical core's "
                     "compute (tools/bench/run_performance.sh measures it)");
        else if (topo->virtual_machine)
            snprintf(topo->note, sizeof topo->note,
                     "virtual machine: the guest's topology need not match the host's");
    }
    free(keys);
    return st;
}
