/* metadata.h: run metadata for bc_run_report (version, commit, config hash,
 * start time, CPU model, hostname, plugins). Strings are owned by bc_run_meta. */
#ifndef BENCHCTL_METADATA_H
#define BENCHCTL_METADATA_H

#include <stddef.h>

#include "benchctl/plugin.h"
#include "cpu_topology.h"
#include "loader.h"

typedef struct bc_run_meta {
    char start_time_utc[32]; /* "2026-11-29T21:33:34Z" */
    char cpu_model[256];     /* "model name" from /proc/cpuinfo, "unknown" if absent */
    char hostname[256];
    bc_cpu_topology cpu;     /* sysfs topology of the machine (cpu_topology.h) */
    bc_plugin_ref *plugins;  /* owned array; strings point into the loaded plugins */
    size_t n_plugins;
} bc_run_meta;

/* Fills meta from the system clock, /proc/cpuinfo, sysfs's CPU topology and
 * gethostname, and lists plugins[n] (duplicates dropped). */
bc_status bc_run_meta_init(bc_run_meta *meta, const bc_plugin *const *plugins, size_t n, bc_error *err);

/* Fills run's metadata fields from meta (borrowed: meta must outlive run),
 * schema_version, benchctl_version and git_commit. config_path and
 * config_sha256 are borrowed too. */
void bc_run_meta_fill(const bc_run_meta *meta, const char *config_path, const char *config_sha256,
                      bc_run_report *run);

void bc_run_meta_free(bc_run_meta *meta);

/* Schema version of the JSON report (docs/reporters.md). */
#define BC_REPORT_SCHEMA_VERSION 2

#endif
