/* distributed.c: a run over several ranks joined by a comm plugin
 * (distributed.h says what each function does; docs/scale.md how to run). */
#define _GNU_SOURCE
#include "distributed.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "host.h"
#include "runner.h"
#include "stats.h"

/* ------------------------------------------------------------ launching */

const char *bc_dist_launcher_comm(void) {
    const char *forced = getenv("BENCHCTL_COMM");
    if (forced && forced[0]) return strcmp(forced, "none") == 0 ? NULL : forced;
    if (getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK")) return "mpi";
    return NULL;
}

/* A positive integer from the environment variable name, or 0. */
static long env_count(const char *name) {
    const char *v = getenv(name);
    if (!v || !v[0]) return 0;
    char *end = NULL;
    long n = strtol(v, &end, 10);
    return end && *end == '\0' && n > 0 ? n : 0;
}

bc_status bc_dist_check_srun(int world_size, bc_error *err) {
    long tasks = env_count("SLURM_STEP_NUM_TASKS");
    if (!tasks && getenv("SLURM_STEP_ID")) tasks = env_count("SLURM_NTASKS");
    if (tasks <= 1 || world_size > 1) return BC_OK;
    bc_error_set(err, BC_ERR_SETTING,
                 "launched by srun as one of %ld tasks, but this process's MPI world has 1 rank: the tasks do not "
                 "know each other (Open MPI started without PMIx)",
                 tasks);
    return bc_error_hint(err, "use 'srun --mpi=pmix benchctl run ...' or 'mpirun benchctl run ...' inside the "
                              "allocation (docs/scale.md)");
}

/* ------------------------------------------------------------- the comm */

_Noreturn void bc_dist_abort(bc_dist *d, int status) {
    d->comm->comm.abort(d->inst, status);
    bc_exit_group(status); /* a comm whose abort returned; not through the exit guard, which is for plugins */
}

/* After a collective failed, every later one fails at once with its
 * message: the ranks are no longer in step. */
static bc_status broken(const bc_dist *d, bc_error *err) {
    return bc_error_set(err, BC_ERR_IO, "%s", d->broken);
}

/* A collective's status: a failure is kept in d->broken and logged once. */
static bc_status note(bc_dist *d, bc_status st, const bc_error *err) {
    if (st == BC_OK || d->broken[0]) return st;
    snprintf(d->broken, sizeof d->broken, "%s", err->message[0] ? err->message : "a collective failed");
    d->comm->host.log(&d->comm->host, BC_LOG_ERROR, "rank %d: %s; the run stops and the job ends", (int)d->rank,
                      d->broken);
    return st;
}

static bc_status allgather(bc_dist *d, const void *send, size_t n, void *recv, bc_error *err) {
    if (d->broken[0]) return broken(d, err);
    return note(d, d->comm->comm.allgather(d->inst, send, n, recv, err), err);
}

/* The comm's settings: its table's defaults, owned by d. */
static bc_status comm_settings(bc_dist *d, bc_error *err) {
    const bc_plugin_desc *desc = d->comm->desc;
    uint32_t n = desc->settings ? desc->n_settings : 0;
    d->comm_values = calloc(n ? n : 1, sizeof *d->comm_values);
    if (!d->comm_values) return bc_error_set(err, BC_ERR_NOMEM, "out of memory");
    for (uint32_t i = 0; i < n; i++) {
        const bc_setting_desc *row = BC_AT(bc_setting_desc, desc->settings, desc->setting_size, i);
        d->comm_values[i] = (bc_setting_value){.i = row->default_int, .f = row->default_float, .s = row->default_string};
    }
    d->comm_settings = (bc_settings){.struct_size = sizeof d->comm_settings, .count = n,
                                     .value_size = sizeof(bc_setting_value), .values = d->comm_values};
    return BC_OK;
}

void bc_dist_set_timeout(bc_dist *d, double seconds) {
    const bc_plugin_desc *desc = d->comm ? d->comm->desc : NULL;
    for (uint32_t i = 0; desc && desc->settings && d->comm_values && i < desc->n_settings; i++) {
        const bc_setting_desc *row = BC_AT(bc_setting_desc, desc->settings, desc->setting_size, i);
        if (row->name && strcmp(row->name, "timeout_s") == 0 && row->type == BC_SETTING_FLOAT)
            d->comm_values[i].f = seconds;
    }
}

/* The deadline the comm holds, for bc_dist_close's wait. */
static double timeout_now(const bc_dist *d) {
    const bc_plugin_desc *desc = d->comm ? d->comm->desc : NULL;
    for (uint32_t i = 0; desc && desc->settings && d->comm_values && i < desc->n_settings; i++) {
        const bc_setting_desc *row = BC_AT(bc_setting_desc, desc->settings, desc->setting_size, i);
        if (row->name && strcmp(row->name, "timeout_s") == 0) return d->comm_values[i].f;
    }
    return BC_DIST_DEFAULT_TIMEOUT_S;
}

void bc_dist_set_mode(bc_dist *d, bc_dist_mode mode) {
    d->mode = mode;
    d->report.mode = mode == BC_DIST_SHARD ? "shard" : "replicate";
}

bc_status bc_dist_open(bc_dist *d, const char *name, const char *const *plugin_dirs, size_t n_dirs, bc_error *err) {
    bc_status st = bc_loader_init(&d->loader, NULL, 0, plugin_dirs, n_dirs, err);
    if (st == BC_OK) st = bc_loader_load(&d->loader, name, BC_KIND_COMM, "a distributed run", &d->comm, err);
    if (st != BC_OK) {
        if (st == BC_ERR_NOT_FOUND && !err->hint[0])
            bc_error_hint(err, "the mpi comm plugin is built where CMake finds MPI (apt-get install libopenmpi-dev); "
                               "BENCHCTL_COMM=none runs each process alone");
        d->comm = NULL;
        return st;
    }
    bc_comm_info info = {.struct_size = sizeof info, .rank = 0, .world_size = 1, .local_rank = 0};
    if ((st = comm_settings(d, err)) != BC_OK) return st;
    if ((st = d->comm->comm.open(&d->comm->host, &d->comm_settings, &d->inst, &info, err)) != BC_OK) {
        char msg[sizeof err->message];
        snprintf(msg, sizeof msg, "%s", err->message);
        bc_error_set(err, st, "comm '%s' could not join the job: %s", d->comm->desc->name, msg);
        d->inst = NULL;
        return st;
    }
    if (info.world_size < 1 || info.rank < 0 || info.rank >= info.world_size)
        return bc_error_set(err, BC_ERR_INTERNAL, "comm '%s' says rank %d of %d", d->comm->desc->name,
                            (int)info.rank, (int)info.world_size);
    d->rank = info.rank;
    d->world_size = info.world_size;
    d->local_rank = info.local_rank;
    size_t w = (size_t)d->world_size;
    d->hosts = calloc(w, sizeof *d->hosts);
    d->devices = calloc(w, sizeof *d->devices);
    d->local_ranks = calloc(w, sizeof *d->local_ranks);
    d->rank_infos = calloc(w, sizeof *d->rank_infos);
    if (!d->hosts || !d->devices || !d->local_ranks || !d->rank_infos)
        return bc_error_set(err, BC_ERR_NOMEM, "out of memory for %zu ranks", w);
    char host[BC_DIST_HOST_MAX] = "";
    if (gethostname(host, sizeof host - 1) != 0) snprintf(host, sizeof host, "unknown");
    if ((st = allgather(d, host, sizeof host, d->hosts, err)) != BC_OK ||
        (st = allgather(d, &d->local_rank, sizeof d->local_rank, d->local_ranks, err)) != BC_OK)
        return st;
    for (size_t r = 0; r < w; r++) {
        d->hosts[r][BC_DIST_HOST_MAX - 1] = '\0';
        d->rank_infos[r] = (bc_rank_info){.rank = (int32_t)r, .local_rank = d->local_ranks[r],
                                          .host = d->hosts[r], .device = NULL};
    }
    d->report = (bc_distributed){.struct_size = sizeof d->report,
                                 .comm = d->comm->desc->name,
                                 .mode = "replicate",
                                 .world_size = (uint32_t)w,
                                 .rank_info_size = sizeof(bc_rank_info),
                                 .ranks = d->rank_infos};
    return bc_dist_check_srun(d->world_size, err);
}

/* After a failed collective: rank 0 ends the job now that its reports are
 * written; the others wait for that (a stopped rank 0 never will) and then
 * end it themselves. MPI_Finalize would wait for the rank that stopped. */
_Noreturn static void end_broken_job(bc_dist *d) {
    int status = d->n_cases ? 3 : 1; /* cases ran and failed, or the run never started */
    if (d->rank != 0) {
        double wait_s = timeout_now(d) + 30.0;
        for (double waited = 0; waited < wait_s; waited += 0.5) {
            struct timespec ts = {0, 500000000};
            nanosleep(&ts, NULL);
        }
    }
    bc_dist_abort(d, status);
}

void bc_dist_close(bc_dist *d) {
    if (d->broken[0] && d->comm && d->inst) end_broken_job(d);
    if (d->inst) d->comm->comm.close(d->inst);
    d->inst = NULL;
    free(d->hosts);
    free(d->devices);
    free(d->local_ranks);
    free(d->rank_infos);
    free(d->cases);
    free(d->per_rank);
    free(d->known);
    free(d->comm_values);
    bc_loader_free(&d->loader);
    *d = (bc_dist){0};
}

/* ------------------------------------------------------ before the run */

bc_status bc_dist_broadcast_text(bc_dist *d, char **text, size_t *len, bc_error *err) {
    uint64_t n = d->rank == 0 ? (uint64_t)*len : 0;
    if (d->broken[0]) return broken(d, err);
    bc_status st = note(d, d->comm->comm.broadcast(d->inst, &n, sizeof n, err), err);
    if (st != BC_OK) return st;
    if (d->rank != 0) {
        *text = malloc((size_t)n + 1); /* the caller's */
        if (!*text) bc_dist_abort(d, 1); /* the other ranks wait in the broadcast below */
        (*text)[n] = '\0';
        *len = (size_t)n;
    }
    return note(d, d->comm->comm.broadcast(d->inst, *text, (size_t)n, err), err);
}

/* What one rank says after a step: its status and message. */
typedef struct status_wire {
    int32_t status;
    int32_t stop_level;
    int32_t stop_reason;
    char hook[40];
    char message[512];
    char hint[256];
} status_wire;

/* Gathers every rank's wire into a malloc'ed array (the caller's); NULL
 * with err set when the collective failed (d->broken). */
static status_wire *gather_status(bc_dist *d, const status_wire *mine, bc_error *err) {
    if (d->broken[0]) return broken(d, err), NULL;
    status_wire *all = calloc((size_t)d->world_size, sizeof *all);
    if (!all) bc_dist_abort(d, 1);
    if (allgather(d, mine, sizeof *mine, all, err) != BC_OK) {
        free(all);
        return NULL;
    }
    return all;
}

/* The first rank whose wire failed, or -1. */
static int first_failed(const bc_dist *d, const status_wire *all) {
    for (int r = 0; r < d->world_size; r++)
        if (all[r].status != BC_OK) return r;
    return -1;
}

bc_status bc_dist_agree_status(bc_dist *d, bc_status local, bc_error *err) {
    status_wire mine = {.status = local};
    if (local != BC_OK) {
        snprintf(mine.message, sizeof mine.message, "%s", err->message);
        snprintf(mine.hint, sizeof mine.hint, "%s", err->hint);
    }
    bc_error cerr = {0};
    status_wire *all = gather_status(d, &mine, &cerr);
    if (!all) {
        *err = cerr;
        return cerr.code ? cerr.code : BC_ERR_IO;
    }
    int f = first_failed(d, all);
    bc_status st = BC_OK;
    if (f >= 0) {
        st = (bc_status)all[f].status;
        if (f == d->rank) bc_error_set(err, st, "%s", all[f].message);
        else bc_error_set(err, st, "rank %d (%s): %s", f, d->hosts[f], all[f].message);
        if (all[f].hint[0]) bc_error_hint(err, "%s", all[f].hint);
    }
    free(all);
    return st;
}

bc_status bc_dist_check_same(bc_dist *d, const char *signature, const char *device, bc_error *err) {
    enum { SIG_MAX = 4096 };
    char *mine = calloc(1, SIG_MAX), *all = calloc((size_t)d->world_size, SIG_MAX);
    if (!mine || !all) bc_dist_abort(d, 1);
    snprintf(mine, SIG_MAX, "%s", signature);
    char dev[BC_DIST_DEVICE_MAX] = "";
    snprintf(dev, sizeof dev, "%s", device ? device : "");
    bc_status gst = allgather(d, mine, SIG_MAX, all, err);
    if (gst == BC_OK) gst = allgather(d, dev, sizeof dev, d->devices, err);
    if (gst != BC_OK) {
        free(mine), free(all);
        return gst;
    }
    for (int r = 0; r < d->world_size; r++) {
        d->devices[r][BC_DIST_DEVICE_MAX - 1] = '\0';
        d->rank_infos[r].device = d->devices[r][0] ? d->devices[r] : NULL;
    }
    bc_status st = BC_OK;
    const char *ref = all;
    for (int r = 1; r < d->world_size && st == BC_OK; r++) {
        const char *other = all + (size_t)r * SIG_MAX;
        if (strncmp(ref, other, SIG_MAX) == 0) continue;
        /* the first line that differs, on each side */
        const char *a = ref, *b = other;
        for (;;) {
            size_t la = strcspn(a, "\n"), lb = strcspn(b, "\n");
            if (la != lb || strncmp(a, b, la) != 0) {
                const char *ta = la ? a : "(nothing)", *tb = lb ? b : "(nothing)";
                int na = la ? (int)(la > 200 ? 200 : la) : 9, nb = lb ? (int)(lb > 200 ? 200 : lb) : 9;
                st = bc_error_set(err, BC_ERR_SETTING,
                                  "rank %d (%s) does not run what rank 0 (%s) runs: rank 0 has '%.*s', rank %d has "
                                  "'%.*s'",
                                  r, d->hosts[r], d->hosts[0], na, ta, r, nb, tb);
                bc_error_hint(err, "install the same benchctl build and plugins on every node");
                break;
            }
            if (!a[la] && !b[lb]) break;
            a = a[la] ? a + la + 1 : ""; /* a side with no more lines has "(nothing)" there */
            b = b[lb] ? b + lb + 1 : "";
        }
    }
    free(mine);
    free(all);
    return st;
}

/* ------------------------------------------------------- during the run */

bc_status bc_dist_barrier(bc_dist *d, bc_error *err) {
    if (d->broken[0]) return broken(d, err);
    return note(d, d->comm->comm.barrier(d->inst, err), err);
}

int bc_dist_agree(bc_dist *d, bc_status *st, const char **hook, bc_error *err, volatile sig_atomic_t *stop,
                  int32_t *stop_reason) {
    status_wire mine = {.status = *st, .stop_level = stop ? (int32_t)*stop : 0,
                        .stop_reason = stop_reason ? *stop_reason : 0};
    if (*st != BC_OK) {
        snprintf(mine.hook, sizeof mine.hook, "%s", *hook ? *hook : "");
        snprintf(mine.message, sizeof mine.message, "%s", err->message);
    }
    bc_error cerr = {0};
    status_wire *all = gather_status(d, &mine, &cerr);
    if (!all) { /* no rank is in step any more: the case fails here, naming the rank that missed */
        if (*st == BC_OK || !err->message[0]) {
            *st = BC_ERR_IO;
            bc_error_set(err, BC_ERR_IO, "%s", d->broken);
        }
        snprintf(d->failed_hook, sizeof d->failed_hook, "distributed collective");
        *hook = d->failed_hook;
        return stop ? (int)*stop : 0;
    }
    int32_t level = 0;
    for (int r = 0; r < d->world_size; r++)
        if (all[r].stop_level > level) level = all[r].stop_level;
    if (stop && level > *stop) *stop = level;
    if (stop_reason) *stop_reason = all[0].stop_reason;
    int f = first_failed(d, all);
    if (f >= 0) {
        *st = (bc_status)all[f].status;
        snprintf(d->failed_hook, sizeof d->failed_hook, "rank %d (%s): %s", f, d->hosts[f], all[f].hook);
        *hook = d->failed_hook;
        bc_error_set(err, *st, "%s", all[f].message);
    }
    free(all);
    return level;
}

bc_status bc_dist_results_alloc(bc_dist *d, size_t n_cases, bc_error *err) {
    size_t w = (size_t)d->world_size;
    d->n_cases = n_cases;
    d->cases = calloc(n_cases ? n_cases : 1, sizeof *d->cases);
    d->per_rank = calloc((n_cases ? n_cases : 1) * 3 * w, sizeof *d->per_rank);
    d->known = calloc(n_cases ? n_cases : 1, 1);
    if (!d->cases || !d->per_rank || !d->known) return bc_error_set(err, BC_ERR_NOMEM, "out of memory for %zu cases", n_cases);
    for (size_t k = 0; k < n_cases; k++) {
        bc_case_distributed *c = &d->cases[k];
        c->struct_size = sizeof *c;
        c->rank = -1;
        c->slowest_rank = -1;
        c->full_length = -1;
        c->step_tokens_per_second = c->ideal_tokens_per_second = c->straggler_efficiency = NAN;
        c->straggler_tax_ms = c->rank_time_min_ms = c->rank_time_mean_ms = NAN;
        c->rank_time_max_ms = c->rank_time_std_ms = c->peak_memory_max_mib = c->peak_memory_sum_mib = NAN;
    }
    return BC_OK;
}

/* One rank's time (mean total_ms) and rate (its tokens / its time) over n_it
 * iterations (ms and tokens n_it each). */
static void rank_time_and_rate(const double *ms, const double *tokens, uint32_t n_it, double *time_ms, double *tps) {
    double sum_ms = 0, sum_tok = 0;
    for (uint32_t i = 0; i < n_it; i++) {
        sum_ms += ms[i];
        sum_tok += tokens[i];
    }
    *time_ms = n_it ? sum_ms / n_it : NAN;
    *tps = n_it && sum_ms > 0 ? sum_tok / (sum_ms / 1000.0) : NAN;
}

void bc_dist_aggregate(uint32_t n_ranks, uint32_t n_it, const double *ms, const double *tokens,
                       const double *peak_mib, const int64_t *returned, uint32_t response_length,
                       bc_case_distributed *out, double *rank_time_ms, double *rank_tps, double *rank_peak) {
    out->n_ranks = n_ranks;
    out->rank_time_ms = rank_time_ms;
    out->rank_tokens_per_second = rank_tps;
    out->rank_peak_memory_mib = rank_peak;
    double step_ms = 0, all_tokens = 0, ideal = 0, peak_max = NAN, peak_sum = 0;
    int peak_known = 1, full = 1, full_known = 1;
    for (uint32_t r = 0; r < n_ranks; r++) {
        rank_time_and_rate(ms + (size_t)r * n_it, tokens + (size_t)r * n_it, n_it, &rank_time_ms[r], &rank_tps[r]);
        ideal += rank_tps[r];
        for (uint32_t i = 0; i < n_it; i++) all_tokens += tokens[(size_t)r * n_it + i];
        rank_peak[r] = peak_mib[r];
        if (isnan(peak_mib[r])) peak_known = 0;
        else {
            peak_sum += peak_mib[r];
            if (isnan(peak_max) || peak_mib[r] > peak_max) peak_max = peak_mib[r];
        }
        if (returned[r] < 0) full_known = 0;
        else if ((uint64_t)returned[r] < response_length) full = 0;
    }
    for (uint32_t i = 0; i < n_it; i++) { /* the step waits for its slowest rank */
        double slowest = 0;
        for (uint32_t r = 0; r < n_ranks; r++)
            if (ms[(size_t)r * n_it + i] > slowest) slowest = ms[(size_t)r * n_it + i];
        step_ms += slowest;
    }
    out->peak_memory_max_mib = peak_max;
    out->peak_memory_sum_mib = peak_known && n_ranks ? peak_sum : NAN;
    out->full_length = !full ? 0 : full_known ? 1 : -1;
    if (n_it == 0 || n_ranks == 0) {
        out->step_tokens_per_second = out->ideal_tokens_per_second = out->straggler_efficiency = NAN;
        out->straggler_tax_ms = out->rank_time_min_ms = out->rank_time_mean_ms = NAN;
        out->rank_time_max_ms = out->rank_time_std_ms = NAN;
        out->slowest_rank = -1;
        return;
    }
    double s[BC_N_STATS];
    bc_stats_compute(rank_time_ms, n_ranks, 1, s, NULL);
    out->step_tokens_per_second = step_ms > 0 ? all_tokens / (step_ms / 1000.0) : NAN;
    out->ideal_tokens_per_second = ideal;
    out->rank_time_min_ms = s[BC_STAT_MIN];
    out->rank_time_mean_ms = s[BC_STAT_MEAN];
    out->rank_time_max_ms = s[BC_STAT_MAX];
    out->rank_time_std_ms = n_ranks > 1 ? s[BC_STAT_STDDEV] : 0.0;
    out->straggler_efficiency = s[BC_STAT_MAX] > 0 ? s[BC_STAT_MEAN] / s[BC_STAT_MAX] : NAN;
    out->straggler_tax_ms = s[BC_STAT_MAX] - s[BC_STAT_P50];
    out->slowest_rank = 0;
    for (uint32_t r = 1; r < n_ranks; r++)
        if (rank_time_ms[r] > rank_time_ms[out->slowest_rank]) out->slowest_rank = (int32_t)r;
}

/* ------------------------------------------------ a case, rank to rank */

/* One case as a rank finished it: its report's measured fields, memory and
 * message, followed on the wire by rows x the run's n_fields values. */
typedef struct case_wire {
    int64_t k; /* requested index; -1: no case */
    int32_t status, error_code, stop_reason, rebuilt;
    uint32_t n_iterations, pad_;
    int64_t returned_response_length, prompt_width_tokens, prompt_min_tokens, prompt_max_tokens;
    int64_t prompt_p50_tokens, prompt_pad_tokens;
    int64_t held_between_rollouts_bytes, peak_rss_bytes, device_free_before_bytes, device_free_after_bytes;
    double peak_memory_mib, wall_ms, load_avg_start, load_avg_end, cpu_steal_share;
    bc_memory_stats memory;
    char message[480];
} case_wire;

static size_t wire_bytes(const bc_run_result *res) {
    return sizeof(case_wire) + (size_t)res->rows_per_case * res->n_fields * sizeof(double);
}

static void wire_from_case(const bc_run_result *res, int64_t k, unsigned char *buf) {
    case_wire w = {.k = k};
    double *values = (double *)(buf + sizeof w);
    size_t n_values = (size_t)res->rows_per_case * res->n_fields;
    if (k < 0) {
        memcpy(buf, &w, sizeof w);
        for (size_t i = 0; i < n_values; i++) values[i] = NAN;
        return;
    }
    const bc_case_report *cr = &res->cases[k];
    w.status = cr->status;
    w.error_code = cr->error_code;
    w.stop_reason = cr->stop_reason;
    w.rebuilt = cr->rebuilt;
    w.n_iterations = cr->n_iterations;
    w.returned_response_length = cr->returned_response_length;
    w.prompt_width_tokens = cr->prompt_width_tokens;
    w.prompt_min_tokens = cr->prompt_min_tokens;
    w.prompt_max_tokens = cr->prompt_max_tokens;
    w.prompt_p50_tokens = cr->prompt_p50_tokens;
    w.prompt_pad_tokens = cr->prompt_pad_tokens;
    w.held_between_rollouts_bytes = cr->held_between_rollouts_bytes;
    w.peak_rss_bytes = cr->peak_rss_bytes;
    w.device_free_before_bytes = cr->device_free_before_bytes;
    w.device_free_after_bytes = cr->device_free_after_bytes;
    w.peak_memory_mib = cr->peak_memory_mib;
    w.wall_ms = cr->wall_ms;
    w.load_avg_start = cr->load_avg_start;
    w.load_avg_end = cr->load_avg_end;
    w.cpu_steal_share = cr->cpu_steal_share;
    w.memory = res->memory[k];
    snprintf(w.message, sizeof w.message, "%s", cr->message ? cr->message : "");
    memcpy(buf, &w, sizeof w);
    memcpy(values, res->values + (size_t)k * res->rows_per_case * res->n_fields, n_values * sizeof *values);
}

/* Case w.k of res := what the wire says (another rank ran it). */
static void case_from_wire(bc_run_result *res, const unsigned char *buf) {
    case_wire w;
    memcpy(&w, buf, sizeof w);
    size_t k = (size_t)w.k;
    bc_case_report *cr = &res->cases[k];
    cr->status = (bc_case_status)w.status;
    cr->error_code = (bc_status)w.error_code;
    cr->stop_reason = (bc_stop_reason)w.stop_reason;
    cr->rebuilt = w.rebuilt;
    cr->n_iterations = w.n_iterations < res->rows_per_case ? w.n_iterations : res->rows_per_case;
    cr->returned_response_length = w.returned_response_length;
    cr->prompt_width_tokens = w.prompt_width_tokens;
    cr->prompt_min_tokens = w.prompt_min_tokens;
    cr->prompt_max_tokens = w.prompt_max_tokens;
    cr->prompt_p50_tokens = w.prompt_p50_tokens;
    cr->prompt_pad_tokens = w.prompt_pad_tokens;
    cr->held_between_rollouts_bytes = w.held_between_rollouts_bytes;
    cr->peak_rss_bytes = w.peak_rss_bytes;
    cr->device_free_before_bytes = w.device_free_before_bytes;
    cr->device_free_after_bytes = w.device_free_after_bytes;
    cr->peak_memory_mib = w.peak_memory_mib;
    cr->wall_ms = w.wall_ms;
    cr->load_avg_start = w.load_avg_start;
    cr->load_avg_end = w.load_avg_end;
    cr->cpu_steal_share = w.cpu_steal_share;
    res->memory[k] = w.memory;
    res->memory[k].struct_size = sizeof res->memory[k];
    w.message[sizeof w.message - 1] = '\0';
    char *msg = strdup(w.message); /* owned by res, as every case message */
    if (msg) {
        free(res->messages[k]);
        res->messages[k] = msg;
        cr->message = msg;
    }
    size_t n_values = (size_t)res->rows_per_case * res->n_fields;
    memcpy(res->values + k * res->rows_per_case * res->n_fields, buf + sizeof w, n_values * sizeof(double));
    bc_run_case_stats(res, k);
}

/* Every rank's wire for its case k (-1 none): a malloc'ed world_size x
 * wire_bytes array, the caller's. */
static unsigned char *gather_cases(bc_dist *d, const bc_run_result *res, int64_t k) {
    if (d->broken[0]) return NULL;
    size_t wb = wire_bytes(res);
    unsigned char *mine = malloc(wb), *all = malloc(wb * (size_t)d->world_size);
    if (!mine || !all) bc_dist_abort(d, 1);
    wire_from_case(res, k, mine);
    bc_error err = {0};
    bc_status st = allgather(d, mine, wb, all, &err);
    free(mine);
    if (st != BC_OK) {
        free(all);
        return NULL;
    }
    return all;
}

/* ms[i], tokens[i] := total_ms and generated tokens of the first n_it rows
 * of values (rows of nf fields). */
static void time_columns(const double *values, size_t nf, uint32_t n_it, double *ms, double *tokens) {
    for (uint32_t i = 0; i < n_it; i++) {
        ms[i] = values[(size_t)i * nf + BC_FIELD_TOTAL_MS];
        tokens[i] = values[(size_t)i * nf + BC_FIELD_NUM_GENERATED_TOKENS];
    }
}

void bc_dist_replicate_collect(bc_dist *d, bc_run_result *res, size_t k) {
    size_t w = (size_t)d->world_size, wb = wire_bytes(res);
    unsigned char *all = gather_cases(d, res, (int64_t)k);
    if (!all) return; /* a rank missed the deadline: the case failed (bc_dist_agree) */
    uint32_t n_it = UINT32_MAX;
    for (size_t r = 0; r < w; r++) {
        case_wire cw;
        memcpy(&cw, all + r * wb, sizeof cw);
        if (cw.n_iterations < n_it) n_it = cw.n_iterations;
    }
    if (n_it > res->rows_per_case) n_it = res->rows_per_case;
    double *ms = calloc(w * (n_it ? n_it : 1), sizeof *ms), *tok = calloc(w * (n_it ? n_it : 1), sizeof *tok);
    double *peak = calloc(w, sizeof *peak);
    int64_t *returned = calloc(w, sizeof *returned);
    if (!ms || !tok || !peak || !returned) bc_dist_abort(d, 1);
    for (size_t r = 0; r < w; r++) {
        case_wire cw;
        memcpy(&cw, all + r * wb, sizeof cw);
        time_columns((const double *)(const void *)(all + r * wb + sizeof cw), res->n_fields, n_it, ms + r * n_it,
                     tok + r * n_it);
        peak[r] = cw.peak_memory_mib;
        returned[r] = cw.returned_response_length;
    }
    bc_case_distributed *out = &d->cases[k];
    double *arrays = d->per_rank + k * 3 * w;
    bc_dist_aggregate((uint32_t)w, n_it, ms, tok, peak, returned, res->cases[k].c->response_length, out, arrays,
                      arrays + w, arrays + 2 * w);
    out->slowest_host = out->slowest_rank >= 0 ? d->hosts[out->slowest_rank] : NULL;
    res->cases[k].distributed = out;
    free(ms), free(tok), free(peak), free(returned), free(all);
}

/* Shard, after a failed collective: every case this rank neither ran nor
 * received fails, naming the rank that missed (its own cases still run). */
static void fail_unknown_cases(bc_dist *d, bc_run_result *res) {
    for (size_t k = 0; k < res->n_cases && k < d->n_cases; k++) {
        if (d->known[k]) continue;
        bc_case_report *cr = &res->cases[k];
        cr->status = BC_CASE_FAILED;
        cr->error_code = BC_ERR_IO;
        cr->n_iterations = 0;
        char *msg = NULL;
        if (asprintf(&msg, "not run: %s", d->broken) < 0) msg = NULL;
        if (msg) { /* owned by res, as every case message */
            free(res->messages[k]);
            res->messages[k] = msg;
            cr->message = msg;
        }
        bc_run_case_stats(res, k);
    }
}

void bc_dist_shard_exchange(bc_dist *d, bc_run_result *res, int64_t k, volatile sig_atomic_t *stop) {
    if (k >= 0 && (size_t)k < d->n_cases) d->known[k] = 1;
    status_wire mine = {.stop_level = stop ? (int32_t)*stop : 0};
    bc_error err = {0};
    status_wire *levels = gather_status(d, &mine, &err);
    unsigned char *all = levels ? gather_cases(d, res, k) : NULL;
    if (!all) {
        free(levels);
        fail_unknown_cases(d, res);
        return;
    }
    for (int r = 0; stop && r < d->world_size; r++)
        if (levels[r].stop_level > *stop) *stop = levels[r].stop_level;
    free(levels);
    size_t w = (size_t)d->world_size, wb = wire_bytes(res);
    for (size_t r = 0; r < w; r++) {
        case_wire cw;
        memcpy(&cw, all + r * wb, sizeof cw);
        if (cw.k < 0 || (size_t)cw.k >= res->n_cases) continue;
        if ((int)r != d->rank) case_from_wire(res, all + r * wb);
        if ((size_t)cw.k < d->n_cases) d->known[cw.k] = 1;
        bc_case_distributed *out = &d->cases[cw.k];
        out->n_ranks = 1;
        out->rank = (int32_t)r;
        out->host = d->hosts[r];
        double *arrays = d->per_rank + (size_t)cw.k * 3 * w;
        const bc_case_report *cr = &res->cases[cw.k];
        uint32_t n_it = cr->n_iterations;
        double *ms = calloc(n_it ? n_it : 1, sizeof *ms), *tok = calloc(n_it ? n_it : 1, sizeof *tok);
        if (!ms || !tok) bc_dist_abort(d, 1);
        time_columns(res->values + (size_t)cw.k * res->rows_per_case * res->n_fields, res->n_fields, n_it, ms, tok);
        rank_time_and_rate(ms, tok, n_it, &arrays[0], &arrays[w]);
        free(ms), free(tok);
        arrays[2 * w] = cr->peak_memory_mib;
        out->rank_time_ms = arrays;
        out->rank_tokens_per_second = arrays + w;
        out->rank_peak_memory_mib = arrays + 2 * w;
        res->cases[cw.k].distributed = out;
    }
    free(all);
}
