/* cpu_topology.h: the CPU's physical cores and SMT siblings, read from Linux
 * sysfs (sys/devices/system/cpu/cpuN/topology) under a root path, and whether
 * that topology may hide sharing (a virtual machine: /proc/cpuinfo's
 * "hypervisor" flag). The environment of every run records it. */
#ifndef BENCHCTL_CPU_TOPOLOGY_H
#define BENCHCTL_CPU_TOPOLOGY_H

#include <stddef.h>

#include "benchctl/plugin.h"

typedef struct bc_cpu_topology {
    unsigned logical_cpus;     /* cpuN folders with a topology/ (online ones); 0: no sysfs */
    unsigned physical_cores;   /* distinct (physical_package_id, core_id) pairs */
    unsigned packages;         /* distinct physical_package_id */
    unsigned threads_per_core; /* most CPUs in one thread_siblings_list */
    int virtual_machine;       /* 1: cpuinfo's flags have "hypervisor" */
    char note[256];            /* "" or why the counts may not say what runs in parallel */
} bc_cpu_topology;

/* Reads root + "/sys/devices/system/cpu" and root + "/proc/cpuinfo" ("/" for
 * the machine itself; tests pass a fake tree). Missing files leave zeros and
 * a note; only running out of memory is an error (BC_ERR_NOMEM). */
bc_status bc_cpu_topology_read(const char *root, bc_cpu_topology *topo, bc_error *err);

#endif
