/* cmd_run.c: `benchctl run FILE`: the context (joined across ranks in a
 * distributed run), --resume, the quiet-machine check, the signals, bc_run
 * and the summary. */
#define _GNU_SOURCE

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "distributed.h"
#include "exit_guard.h"
#include "hostload.h"
#include "output.h"
#include "resume.h"
#include "runner.h"
#include "seam.h"

static volatile sig_atomic_t g_stop;   /* signals received: 1 finish the iteration, 2 abandon it */
static volatile sig_atomic_t g_signal; /* the first signal's number */

static void on_signal(int sig) {
    if (!g_signal) g_signal = sig;
    if (++g_stop >= 3) { /* a third one: stop at once */
        signal(sig, SIG_DFL);
        raise(sig);
    }
}

static void on_runner_error(void *ctx, const char *message) {
    (void)ctx;
    bc_cli_print_error(message, NULL);
}

/* Prints one line per distinct failure message: "case 3 (shape) failed: msg",
 * or "cases 2, 3, 6 failed: msg" when several cases failed the same way. */
static void print_failures(const bc_run_result *res) {
    for (size_t i = 0; i < res->n_cases; i++) {
        const bc_case_report *cr = &res->cases[i];
        if (cr->status != BC_CASE_FAILED) continue;
        int seen = 0; /* an earlier case already printed this message */
        for (size_t j = 0; j < i && !seen; j++)
            seen = res->cases[j].status == BC_CASE_FAILED && strcmp(res->cases[j].message, cr->message) == 0;
        if (seen) continue;
        char msg[2048];
        size_t used = 0, n_same = 0;
        for (size_t j = i; j < res->n_cases; j++)
            n_same += res->cases[j].status == BC_CASE_FAILED && strcmp(res->cases[j].message, cr->message) == 0;
        if (n_same == 1) {
            char desc[256];
            bc_context_describe_case(cr->c, desc, sizeof desc);
            snprintf(msg, sizeof msg, "case %u (%s) failed: %s", cr->c->index, desc, cr->message);
        } else {
            used = (size_t)snprintf(msg, sizeof msg, "cases");
            for (size_t j = i; j < res->n_cases && used < 512; j++)
                if (res->cases[j].status == BC_CASE_FAILED && strcmp(res->cases[j].message, cr->message) == 0)
                    used += (size_t)snprintf(msg + used, sizeof msg - used, "%s %u", j == i ? "" : ",",
                                             res->cases[j].c->index);
            snprintf(msg + used, sizeof msg - used, "%s failed: %s", used >= 512 ? ", ..." : "", cr->message);
        }
        bc_cli_print_error(msg, NULL);
    }
}

static double monotonic_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

/* run.quiet_check, before the backend loads anything (hostload.h): the
 * readings over a 250 ms sample; a warning, or with "refuse" the run stops
 * (exit 2). Skipped in a distributed run, whose other ranks wait busily.
 * BENCHCTL_TEST_PROC_ROOT and BENCHCTL_TEST_SYS_ROOT put a fake /proc and
 * /sys in place, for the tests. What it found goes into text[cap] for the
 * report ("quiet" when nothing; untouched when it did not run). Returns the
 * exit status, 0 to go on. */
static int quiet_check(const bc_cli_args *a, const bc_context *ctx, const bc_dist *d, char *text, size_t cap) {
    const int mode = ctx->cfg.quiet_check;
    if (mode == BC_CFG_QUIET_OFF || d) return 0;
    bc_quiet_roots roots = {.proc = getenv("BENCHCTL_TEST_PROC_ROOT"), .sys = getenv("BENCHCTL_TEST_SYS_ROOT")};
    bc_quiet_sample sample;
    const double t0 = monotonic_ms();
    int have_sample = bc_quiet_begin(&roots, &sample) == 0;
    struct timespec pause = {.tv_sec = 0, .tv_nsec = 250 * 1000 * 1000};
    nanosleep(&pause, NULL);
    bc_quiet_report r;
    bc_quiet_end(&roots, have_sample ? &sample : NULL, have_sample ? monotonic_ms() - t0 : 0.0, &r);
    char findings[1024], msg[1200];
    if (bc_quiet_findings(&r, findings, sizeof findings) == 0) {
        snprintf(text, cap, "quiet");
        return 0;
    }
    snprintf(text, cap, "%s", findings);
    if (mode == BC_CFG_QUIET_REFUSE) {
        snprintf(msg, sizeof msg, "the machine is not quiet: %s", findings);
        bc_cli_print_error(msg, "run.quiet_check = \"warn\" runs anyway (with this warning), \"off\" checks nothing");
        return EXIT_USAGE;
    }
    if (!a->quiet) {
        snprintf(msg, sizeof msg, "warning: the machine is not quiet: %s", findings);
        bc_cli_print_error(msg, "what is measured now may be slower and noisier; run.quiet_check = \"refuse\" stops "
                                "instead, \"off\" checks nothing");
    }
    return 0;
}

/* Runs ctx's cases (on rank d->rank of a distributed run, d not NULL: the
 * reporters and the summary on rank 0 only). */
static int run_context(const bc_cli_args *a, bc_context *ctx, bc_dist *d) {
    int lead = !d || d->rank == 0; /* the process that reports */
    if (ctx->cfg.n_reporters == 0 && !a->quiet && lead)
        bc_cli_print_error("warning: no reporters configured; results will not be written",
                    "add a reporters list to the config or use --reporter console,json");
    bc_runner_reporter *reps = calloc(ctx->cfg.n_reporters + 1, sizeof *reps);
    if (!reps) return bc_cli_print_error("out of memory", NULL), EXIT_RUNTIME;
    bc_runner_config rc_cfg;
    bc_context_runner_config(ctx, &rc_cfg, reps);
    bc_run_seam seam; /* many processes: the distributed protocol between the loop's steps */
    if (d) {
        bc_dist_seam(d, &seam);
        rc_cfg.seam = &seam;
    }
    if (!lead) rc_cfg.n_reporters = 0; /* only rank 0 writes reports */
    rc_cfg.stop = &g_stop;
    rc_cfg.on_error = on_runner_error;
    bc_resume resume = {0};
    if (a->resume) {
        bc_error rerr = {0};
        bc_status rst = bc_resume_load(&resume, a->resume, ctx->cases, ctx->n_cases, ctx->cfg.sha256, &rerr);
        if (rst != BC_OK) {
            bc_cli_print_bc_error(&rerr);
            bc_resume_free(&resume);
            free(reps);
            return rst == BC_ERR_NOMEM ? EXIT_RUNTIME : EXIT_USAGE;
        }
        rc_cfg.prior = resume.by_case;
        if (!a->quiet && lead) /* one line for the job, not one per rank */
            fprintf(stderr, "benchctl: resuming %s: %zu of %zu cases finished there are taken as they were\n",
                    a->resume, resume.n_taken, ctx->n_cases);
    }

    char quiet_text[1024] = ""; /* the report's quiet_check: lives until bc_run returns */
    int quiet_rc = quiet_check(a, ctx, d, quiet_text, sizeof quiet_text);
    if (quiet_text[0]) rc_cfg.run.quiet_check = quiet_text;
    if (quiet_rc) {
        bc_resume_free(&resume);
        free(reps);
        return quiet_rc;
    }

    struct sigaction sa = {0}, old_int, old_term;
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);

    bc_run_result res = {0};
    bc_error err = {0};
    int exit_code;
    bc_exit_guard_arm();
    bc_status run_st = bc_run(&rc_cfg, &res, &err);
    bc_exit_guard_disarm();
    if (run_st != BC_OK) {
        if (lead) bc_cli_print_bc_error(&err); /* the ranks agreed on it */
        exit_code = run_st == BC_ERR_SETTING ? EXIT_USAGE : EXIT_RUNTIME;
    } else {
        exit_code = bc_run_exit_status(&res);
        if (exit_code == 130 && g_signal) exit_code = 128 + g_signal;
        if (lead) print_failures(&res);
        if (lead && (!a->quiet || exit_code))
            fprintf(stderr, "benchctl: %zu case%s: %zu ok, %u failed, %u skipped%s%s\n", res.n_cases,
                    res.n_cases == 1 ? "" : "s", res.n_cases - res.n_failed - res.n_skipped, res.n_failed, res.n_skipped,
                    res.interrupted ? " (interrupted)" : "",
                    res.reporter_failed ? "; a reporter failed (see above), its report is missing" : "");
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    bc_run_result_free(&res);
    bc_resume_free(&resume);
    free(reps);
    return exit_code;
}

/* The launcher's rank of this process (mpirun, srun's PMI), 0 when it says none. */
static int launcher_rank(void) {
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) return atoi(v);
    }
    return 0;
}

int bc_cli_run(const bc_cli_args *a) {
    /* a distributed run cannot resume (dist_seam.c): refused before any rank
     * joins the job or loads its backend, in one line from rank 0 */
    if (a->resume && bc_dist_launcher_comm()) {
        if (launcher_rank() == 0)
            bc_cli_print_error("--resume: a distributed run (under mpirun or srun) cannot resume a journal; nothing "
                               "ran", "run the job again without --resume, or resume it as a single process");
        return EXIT_USAGE;
    }
    bc_dist dist = {0}, *d = NULL;
    bc_context ctx;
    /* standard output carries results only: while plugins load and run, what
     * they print goes to stderr, and the reporters' "-" to the real stdout */
    bc_error derr = {0};
    if (bc_output_divert_stdout(&derr) != BC_OK) bc_cli_print_bc_error(&derr);
    int rc = bc_cli_open_run_context(&ctx, a, &dist, &d);
    if (rc == 0) rc = run_context(a, &ctx, d);
    bc_context_free(&ctx); /* the backend instance, before the comm leaves the job */
    bc_output_restore_stdout();
    if (d) bc_dist_close(d);
    return rc;
}
