/* metadata.c: collects the run metadata reporters write (metadata.h). */
#define _GNU_SOURCE
#include "metadata.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef BENCHCTL_GIT_COMMIT
#define BENCHCTL_GIT_COMMIT "unknown"
#endif

static void read_cpu_model(char *out, size_t cap) {
    snprintf(out, cap, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        /* x86: "model name"; some arm kernels: "Model" or "Hardware" */
        if (strncmp(line, "model name", 10) == 0 || strncmp(line, "Model", 5) == 0) {
            char *colon = strchr(line, ':');
            if (!colon) continue;
            colon++;
            while (*colon == ' ' || *colon == '\t') colon++;
            colon[strcspn(colon, "\n")] = '\0';
            snprintf(out, cap, "%s", colon);
            break;
        }
    }
    fclose(f);
}

bc_status bc_run_meta_init(bc_run_meta *meta, const bc_plugin *const *plugins, size_t n, bc_error *err) {
    *meta = (bc_run_meta){0};
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(meta->start_time_utc, sizeof meta->start_time_utc, "%Y-%m-%dT%H:%M:%SZ", &tm);
    read_cpu_model(meta->cpu_model, sizeof meta->cpu_model);
    bc_status st = bc_cpu_topology_read("/", &meta->cpu, err);
    if (st != BC_OK) return st;
    if (gethostname(meta->hostname, sizeof meta->hostname - 1) != 0) snprintf(meta->hostname, sizeof meta->hostname, "unknown");
    meta->plugins = calloc(n ? n : 1, sizeof *meta->plugins);
    if (!meta->plugins) return bc_error_set(err, BC_ERR_NOMEM, "run metadata: out of memory");
    for (size_t i = 0; i < n; i++) {
        int dup = 0;
        for (size_t j = 0; j < i; j++) dup |= plugins[j] == plugins[i];
        if (dup) continue;
        bc_plugin_ref *r = &meta->plugins[meta->n_plugins++];
        r->kind = bc_kind_name(plugins[i]->desc->kind);
        r->name = plugins[i]->desc->name;
        r->version = plugins[i]->desc->version ? plugins[i]->desc->version : "";
        r->path = plugins[i]->path;
        r->abi_major = plugins[i]->desc->abi_major;
        r->abi_minor = plugins[i]->desc->abi_minor;
    }
    return BC_OK;
}

void bc_run_meta_fill(const bc_run_meta *meta, const char *config_path, const char *config_sha256,
                      bc_run_report *run) {
    run->struct_size = sizeof *run;
    run->schema_version = BC_REPORT_SCHEMA_VERSION;
    run->benchctl_version = BENCHCTL_VERSION;
    run->git_commit = BENCHCTL_GIT_COMMIT;
    run->config_path = config_path;
    run->config_sha256 = config_sha256;
    run->start_time_utc = meta->start_time_utc;
    run->cpu_model = meta->cpu_model;
    run->hostname = meta->hostname;
    run->cpu_logical = meta->cpu.logical_cpus;
    run->cpu_cores = meta->cpu.physical_cores;
    run->cpu_packages = meta->cpu.packages;
    run->cpu_threads_per_core = meta->cpu.threads_per_core;
    run->cpu_topology_note = meta->cpu.note[0] ? meta->cpu.note : NULL;
    run->plugins = meta->plugins;
    run->n_plugins = (uint32_t)meta->n_plugins;
    run->plugin_ref_size = sizeof(bc_plugin_ref);
}

void bc_run_meta_free(bc_run_meta *meta) {
    free(meta->plugins);
    *meta = (bc_run_meta){0};
}
