/* ranks.c: joining the ranks of a distributed run before `benchctl run`
 * (docs/scale.md). */
#define _GNU_SOURCE

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* ------------------------------------------------- distributed runs
 *
 * Under mpirun (bc_dist_launcher_comm), every rank joins the job first; rank
 * 0 reads bench.cfg and sends its text to every rank, every rank builds its
 * context from it, and the ranks agree that every one could and that all run
 * the same plugins and config (docs/scale.md). Errors every rank agreed on
 * are printed by rank 0 only. Without a launcher, a comm named in bench.cfg
 * (distributed.comm) is joined after each process read its own config. */

/* This rank's plugins and config, one line each, for bc_dist_check_same. */
static void run_signature(const bc_context *ctx, const bc_dist *d, char *buf, size_t n) {
    size_t used = (size_t)snprintf(buf, n, "benchctl %s\ncomm %s %s\nconfig sha256 %s", BENCHCTL_VERSION,
                                   d->comm->desc->name, d->comm->desc->version, ctx->cfg.sha256);
    for (uint32_t i = 0; i < ctx->run.n_plugins && used < n; i++) {
        const bc_plugin_ref *p = bc_run_plugin(&ctx->run, i);
        used += (size_t)snprintf(buf + used, n - used, "\n%s %s %s abi %u.%u", p->kind, p->name, p->version,
                                 (unsigned)p->abi_major, (unsigned)p->abi_minor);
    }
}

/* After every rank built its context (local: how that went, err its error):
 * agree on it, then check every rank runs the same; set the mode and each
 * rank's seed (the seed plus the rank, in replicate). Returns the exit
 * status, printing the error on rank 0 only. */
static int join_ranks(bc_context *ctx, bc_dist *d, bc_status local, bc_error *err) {
    /* every collective from here has bench.cfg's deadline (until now the comm's default) */
    if (local == BC_OK) bc_dist_set_timeout(d, ctx->cfg.distributed_timeout_s);
    bc_status st = bc_dist_agree_status(d, local, err);
    if (st == BC_OK && ctx->cfg.distributed_comm && strcmp(ctx->cfg.distributed_comm, d->comm->desc->name) != 0) {
        char where[PATH_MAX + 64];
        bc_config_setting_location(&ctx->cfg, "distributed.comm", where, sizeof where);
        st = bc_error_set(err, BC_ERR_SETTING, "%s: distributed.comm: names '%s', but the launcher joined the ranks "
                                               "through '%s'",
                          where, ctx->cfg.distributed_comm, d->comm->desc->name);
    }
    if (st == BC_OK) {
        char sig[4096];
        run_signature(ctx, d, sig, sizeof sig);
        st = bc_dist_check_same(d, sig, ctx->backend_info.device, err);
    }
    if (st != BC_OK) {
        if (d->rank == 0) bc_cli_print_bc_error(err);
        return bc_cli_exit_for(st);
    }
    bc_dist_set_mode(d, ctx->cfg.distributed_mode == BC_CFG_DIST_SHARD ? BC_DIST_SHARD : BC_DIST_REPLICATE);
    if (d->mode == BC_DIST_REPLICATE) ctx->cfg.sampling.seed += (uint64_t)d->rank; /* each rank its own prompts */
    return 0;
}

/* Builds ctx for run, joining the ranks of a distributed run when there is
 * one (*out = dist, else NULL). Prints errors; returns the exit status. */
int bc_cli_open_run_context(bc_context *ctx, const bc_cli_args *a, bc_dist *dist, bc_dist **out) {
    *ctx = (bc_context){0};
    *out = NULL;
    bc_error err = {0};
    const char *comm = bc_dist_launcher_comm();
    if (!comm) {
        if (bc_dist_check_srun(1, &err) != BC_OK) return bc_cli_print_bc_error(&err), EXIT_USAGE;
        int rc = bc_cli_open_context(ctx, a, 0);
        if (rc || !ctx->cfg.distributed_comm) return rc;
        const char *const *dirs = (const char *const *)ctx->cfg.plugin_paths;
        bc_status st = bc_dist_open(dist, ctx->cfg.distributed_comm, dirs, ctx->cfg.n_plugin_paths, &err);
        *out = dist;
        if (st != BC_OK) return bc_cli_print_bc_error(&err), bc_cli_exit_for(st);
        return join_ranks(ctx, dist, BC_OK, &err);
    }
    if (!a->file) return bc_cli_open_context(ctx, a, 0); /* the usage error */
    bc_status st = bc_dist_open(dist, comm, NULL, 0, &err);
    *out = dist;
    if (st != BC_OK) return bc_cli_print_bc_error(&err), bc_cli_exit_for(st);
    char *text = NULL;
    size_t len = 0;
    bc_status read_st = dist->rank == 0 ? bc_config_read_text(a->file, &text, &len, &err) : BC_OK;
    if ((st = bc_dist_agree_status(dist, read_st, &err)) != BC_OK) {
        free(text);
        if (dist->rank == 0) bc_cli_print_bc_error(&err);
        return bc_cli_exit_for(st);
    }
    if ((st = bc_dist_broadcast_text(dist, &text, &len, &err)) != BC_OK) {
        free(text);
        return bc_cli_print_bc_error(&err), EXIT_RUNTIME;
    }
    st = bc_cli_build_context(ctx, a, 0, text, len, &dist->local_rank, &err);
    free(text);
    return join_ranks(ctx, dist, st, &err);
}
