/* main.c: the benchctl command line.
 *
 *   benchctl run FILE [--set key=value]... [--reporter a,b] [--cases LIST] [--only FILTER] [-v] [-q]
 *   benchctl validate FILE [--set key=value]... [--reporter a,b] [--cases LIST] [--only FILTER]
 *   benchctl plan FILE [--set key=value]...
 *   benchctl plugins [NAME]
 *   benchctl prompts FILE --checkpoint DIR [--format F] [--field NAME] [--bos ID]
 *   benchctl --help | --version | COMMAND --help
 *
 * The command line only: what a command works with is built by context.c
 * and run by runner.c. Errors print once, here, as "benchctl: <message>"
 * (plus "benchctl: hint: ..." where the error carries one). Exit status: 0 ok;
 * 1 a run could not complete (the backend could not start, a reporter
 * failed); 2 usage, config, plugin or feasibility errors; 3 some cases
 * failed; 130 (SIGINT) or 143 (SIGTERM) interrupted.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "compare.h"
#include "context.h"
#include "distributed.h"
#include "host.h"
#include "loader.h"
#include "matrix.h"
#include "prompts.h"
#include "replay.h"
#include "resume.h"
#include "runner.h"
#include "settings.h"

enum { EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

/* ------------------------------------------------------------ exit guard
 *
 * A plugin that ends the process while a run is in progress (exit, _exit or
 * _Exit from a hook) must not leave status 0: the run did not finish and its
 * reports were not written. exit() is caught by an atexit handler; _exit and
 * _Exit are defined here and exported from the executable (core/CMakeLists.txt:
 * --export-dynamic-symbol), so a dlopen'ed plugin binds to these. Both print
 * one line and end the process with status 1 when the plugin's status was 0
 * (another status is kept). Outside a run they behave as libc's. Under
 * run.isolation = "process" the same happens in the case's child, whose
 * parent then fails that case. */
static volatile sig_atomic_t g_running; /* 1 while bc_run runs */

static _Noreturn void exit_group_now(int status) {
    syscall(SYS_exit_group, status);
    for (;;) pause(); /* not reached */
}

/* One line on stderr with write(2): nothing else is safe this late. */
static void guard_note(const char *how) {
    static const char a[] = "benchctl: a plugin ended the process during the run (";
    static const char b[] = "); the run did not finish and its reports were not written\n";
    static const char b_child[] = "); the case fails\n"; /* in an isolated case's child */
    if (bc_run_in_case_child) {
        if (write(STDERR_FILENO, a, sizeof a - 1) < 0 || write(STDERR_FILENO, how, strlen(how)) < 0 ||
            write(STDERR_FILENO, b_child, sizeof b_child - 1) < 0) {
        }
        return;
    }
    if (write(STDERR_FILENO, a, sizeof a - 1) < 0 || write(STDERR_FILENO, how, strlen(how)) < 0 ||
        write(STDERR_FILENO, b, sizeof b - 1) < 0) {
    }
}

static _Noreturn void guarded_exit(const char *zero, const char *other, int status) {
    if (g_running) {
        guard_note(status == 0 ? zero : other);
        if (status == 0) status = EXIT_RUNTIME;
    }
    exit_group_now(status);
}

void _exit(int status) { guarded_exit("_exit(0)", "_exit", status); }
void _Exit(int status) { guarded_exit("_Exit(0)", "_Exit", status); }

static void exit_guard_atexit(void) {
    if (!g_running) return;
    guard_note("exit");
    exit_group_now(EXIT_RUNTIME);
}

static void print_error(const char *message, const char *hint) {
    fprintf(stderr, "benchctl: %s\n", message);
    if (hint && *hint) fprintf(stderr, "benchctl: hint: %s\n", hint);
}

static void print_bc_error(const bc_error *err) { print_error(err->message, err->hint); }

/* ------------------------------------------------------------------ help */

static const char *const usage_main =
    "usage: benchctl COMMAND [options]\n"
    "\n"
    "Benchmarks LLM generation rollouts: loads the plugins bench.cfg names,\n"
    "runs the case matrix and writes the reports.\n"
    "\n"
    "commands:\n"
    "  run FILE        run the benchmark FILE describes\n"
    "  validate FILE   check FILE and every plugin's settings; runs nothing\n"
    "  plan FILE       print the cases in execution order with their memory\n"
    "  plugins [NAME]  list the plugins found, or print NAME's settings\n"
    "  report RUN      render a saved run (JSON or journal) through reporters\n"
    "  compare A B...  compare finished runs case by case, with statistics\n"
    "  prompts FILE    print the token ids a text prompt set becomes\n"
    "\n"
    "options:\n"
    "  -h, --help      this help (benchctl COMMAND --help: the command's)\n"
    "  --version       print the version and git commit\n"
    "\n"
    "Plugins are searched in: plugin_path in FILE, BENCHCTL_PLUGIN_PATH\n"
    "(colon-separated), the build tree's plugins/ folder next to the\n"
    "executable, " BENCHCTL_PLUGIN_RELATIVE_DIR " relative to the executable,\n"
    "and " BENCHCTL_PLUGIN_INSTALL_DIR ".\n"
    "A plugin may also be named by the path of its .so file.\n";

static const char *const usage_run =
    "usage: benchctl run FILE [--set key=value]... [--reporter a,b] [--cases LIST] [--only FILTER]\n"
    "                    [--resume JOURNAL]\n"
    "                    [-v|--verbose] [-q|--quiet]\n"
    "\n"
    "Runs every case of FILE's matrix and writes the reports.\n"
    "  --set key=value   override a setting of FILE, e.g. --set run.iterations=3\n"
    "                    (value as libconfig reads it: 3, 0.5, \"text\", true, [1, 2])\n"
    "  --reporter a,b    use these reporters instead of FILE's\n"
    "  --resume JOURNAL  take the cases a killed or interrupted run of the same config\n"
    "                    finished from its jsonl journal (or JSON report); run the rest\n"
    "  --cases LIST      run only these cases (indexes as plan shows them), e.g. 3,5-7\n"
    "  --only FILTER     run only the cases with these axis values, e.g.\n"
    "                    precision=bf16,batch_size=4 (a repeated axis: any of its values)\n"
    "  -v, --verbose     log plugin info messages (twice: debug)\n"
    "  -q, --quiet       only errors\n"
    "Before the first case, FILE, every plugin's settings, the report paths and\n"
    "every case's feasibility are checked, as by validate.\n"
    "Ctrl-C (SIGINT) or SIGTERM: once, the current iteration finishes; twice, it\n"
    "is abandoned after the step that is running. Either way the remaining cases\n"
    "are marked skipped and the reports are still written. A third one stops at once.\n"
    "Exit status: 0 all cases ok, 3 some case failed, 130 (SIGINT) or 143 (SIGTERM)\n"
    "interrupted, 1 the backend could not start or a reporter failed,\n"
    "2 usage, config, plugin or feasibility errors.\n";

static const char *const usage_validate =
    "usage: benchctl validate FILE [--set key=value]... [--reporter a,b] [--cases LIST] [--only FILTER]\n"
    "\n"
    "Checks FILE, loads every plugin it names, checks their settings (paths that\n"
    "must exist, report files that must be creatable), creates the backend\n"
    "without loading weights and asks it whether every (selected) case can run.\n"
    "Runs nothing. Exit status 0 when valid, 2 otherwise.\n";

static const char *const usage_plan =
    "usage: benchctl plan FILE [--set key=value]... [--cases LIST] [--only FILTER]\n"
    "\n"
    "Prints the (selected) cases in execution order: grouped by what the backend rebuilds\n"
    "when it changes (the precision, for the OPT engine; 'build' marks each\n"
    "group's first case), largest effective batch first within a group, with\n"
    "the memory the backend says each needs and whether it can run.\n"
    "Exit status 0 when every case can run, 2 otherwise.\n";

static const char *const usage_report =
    "usage: benchctl report RUN [-o FILE] [--reporter a,b]\n"
    "\n"
    "Renders a saved run (a JSON report, .gz too, or a jsonl journal, even one cut\n"
    "short) through reporters, as the live run would have: by default the html\n"
    "reporter, writing benchctl.html.\n"
    "  -o, --output FILE  the reporter's output file (its path setting; one reporter)\n"
    "  --reporter a,b     the reporters to use (default html)\n"
    "Exit status 0 when every report was written, 1 when a reporter failed,\n"
    "2 for usage errors or a file that is not a run.\n";

static const char *const usage_plugins =
    "usage: benchctl plugins [NAME [--set SETTING=VALUE ...]]\n"
    "\n"
    "Without NAME: every plugin found on the search path, with its kind,\n"
    "version, description and file; broken plugins are listed with their error.\n"
    "With NAME (or the path of a .so): that plugin's settings table. A plugin\n"
    "whose settings depend on its own (the worker backend: its engine declares\n"
    "them) shows them all once given those, e.g.\n"
    "  benchctl plugins worker --set command=\"python3 -m benchctl_worker transformers\"\n";

/* ------------------------------------------------------------- arguments */

enum { CMD_RUN, CMD_VALIDATE, CMD_PLAN, CMD_PLUGINS, CMD_HELP, CMD_VERSION, CMD_REPORT, CMD_COMPARE };

/* What each command takes besides -h/--help. */
enum { OPT_SET = 1, OPT_REPORTER = 2, OPT_VERBOSITY = 4, OPT_OUTPUT = 8, OPT_SELECT = 16, OPT_RESUME = 32 };

typedef struct command {
    const char *name;
    int id;
    int options; /* OPT_* it accepts */
    const char *usage;
} command;

static const command k_commands[] = {
    {"run", CMD_RUN, OPT_SET | OPT_REPORTER | OPT_VERBOSITY | OPT_SELECT | OPT_RESUME, usage_run},
    {"validate", CMD_VALIDATE, OPT_SET | OPT_REPORTER | OPT_VERBOSITY | OPT_SELECT, usage_validate},
    {"plan", CMD_PLAN, OPT_SET | OPT_VERBOSITY | OPT_SELECT, usage_plan},
    {"plugins", CMD_PLUGINS, OPT_SET | OPT_VERBOSITY, usage_plugins},
    {"report", CMD_REPORT, OPT_REPORTER | OPT_OUTPUT | OPT_VERBOSITY, usage_report},
    {"compare", CMD_COMPARE, 0, bc_compare_usage}, /* parses its own options: see main() */
    {"help", CMD_HELP, 0, usage_main},
    {"version", CMD_VERSION, 0, usage_main},
};

static const command *find_command(const char *name) {
    for (size_t i = 0; i < sizeof k_commands / sizeof k_commands[0]; i++)
        if (strcmp(k_commands[i].name, name) == 0) return &k_commands[i];
    return NULL;
}

typedef struct args {
    const command *cmd;     /* NULL: none given */
    const char *file;       /* FILE, or NAME for plugins */
    const char **sets;      /* --set values, owned array */
    size_t n_sets;
    const char *reporters;  /* --reporter */
    const char *output;     /* -o, --output */
    const char *cases;      /* --cases */
    const char *only;       /* --only */
    const char *resume;     /* --resume */
    int verbose, quiet, help, version;
} args;

/* The first argument that is not an option or an option's value. */
static const char *first_word(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--set") == 0 || strcmp(argv[i], "--reporter") == 0 || strcmp(argv[i], "-o") == 0 ||
            strcmp(argv[i], "--output") == 0 || strcmp(argv[i], "--cases") == 0 || strcmp(argv[i], "--only") == 0 ||
            strcmp(argv[i], "--resume") == 0) {
            i++;
            continue;
        }
        if (argv[i][0] != '-' || argv[i][1] == '\0') return argv[i];
    }
    return NULL;
}

/* Refuses an option the command does not take; returns non-zero then. */
static int refuse_option(const args *a, int option, const char *spelled) {
    if (!a->cmd || (a->cmd->options & option)) return 0;
    char msg[300], hint[64];
    snprintf(msg, sizeof msg, "%s does not take %.100s", a->cmd->name, spelled);
    snprintf(hint, sizeof hint, "see benchctl %s --help", a->cmd->name);
    print_error(msg, hint);
    return EXIT_USAGE;
}

static int parse_args(int argc, char **argv, args *a) {
    a->sets = calloc((size_t)argc + 1, sizeof *a->sets);
    if (!a->sets) {
        print_error("out of memory", NULL);
        return EXIT_USAGE;
    }
    /* the command first, so "benchctl frobnicate a b" says what is wrong */
    const char *word = first_word(argc, argv);
    if (word) {
        a->cmd = find_command(word);
        if (!a->cmd) {
            char msg[300];
            snprintf(msg, sizeof msg, "unknown command '%.200s'", word);
            print_error(msg, "commands: run, validate, plan, plugins, report, compare, prompts; see benchctl --help");
            return EXIT_USAGE;
        }
    }
    int seen_command = 0;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0) {
            a->help = 1;
        } else if (strcmp(s, "--version") == 0) {
            a->version = 1;
        } else if (strcmp(s, "-v") == 0 || strcmp(s, "--verbose") == 0 || strcmp(s, "-vv") == 0) {
            if (refuse_option(a, OPT_VERBOSITY, s)) return EXIT_USAGE;
            a->verbose += strcmp(s, "-vv") == 0 ? 2 : 1;
        } else if (strcmp(s, "-q") == 0 || strcmp(s, "--quiet") == 0) {
            if (refuse_option(a, OPT_VERBOSITY, s)) return EXIT_USAGE;
            a->quiet = 1;
        } else if (strcmp(s, "--set") == 0 || strcmp(s, "--reporter") == 0 || strncmp(s, "--set=", 6) == 0 ||
                   strncmp(s, "--reporter=", 11) == 0) {
            int is_set = strncmp(s, "--set", 5) == 0;
            if (refuse_option(a, is_set ? OPT_SET : OPT_REPORTER, is_set ? "--set" : "--reporter")) return EXIT_USAGE;
            const char *eq = strchr(s, '=');
            const char *value = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
            if (!value) {
                char msg[64];
                snprintf(msg, sizeof msg, "%s needs a value", s);
                print_error(msg, is_set ? "--set key=value, e.g. --set run.iterations=3" : "e.g. --reporter json,csv");
                return EXIT_USAGE;
            }
            if (is_set) a->sets[a->n_sets++] = value;
            else a->reporters = value;
        } else if (strcmp(s, "-o") == 0 || strcmp(s, "--output") == 0 || strncmp(s, "--output=", 9) == 0) {
            if (refuse_option(a, OPT_OUTPUT, "-o")) return EXIT_USAGE;
            const char *value = strncmp(s, "--output=", 9) == 0 ? s + 9 : (i + 1 < argc ? argv[++i] : NULL);
            if (!value) {
                print_error("-o needs a file name", "e.g. -o report.html");
                return EXIT_USAGE;
            }
            a->output = value;
        } else if (strcmp(s, "--resume") == 0 || strncmp(s, "--resume=", 9) == 0) {
            if (refuse_option(a, OPT_RESUME, "--resume")) return EXIT_USAGE;
            const char *value = s[8] == '=' ? s + 9 : (i + 1 < argc ? argv[++i] : NULL);
            if (!value) {
                print_error("--resume needs the journal (or JSON report) of the run to resume",
                            "e.g. --resume out/bench.jsonl");
                return EXIT_USAGE;
            }
            a->resume = value;
        } else if (strcmp(s, "--cases") == 0 || strcmp(s, "--only") == 0 || strncmp(s, "--cases=", 8) == 0 ||
                   strncmp(s, "--only=", 7) == 0) {
            int is_cases = strncmp(s, "--cases", 7) == 0;
            const char *name = is_cases ? "--cases" : "--only";
            if (refuse_option(a, OPT_SELECT, name)) return EXIT_USAGE;
            const char *eq = strchr(s, '=');
            const char *value = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
            const char **slot = is_cases ? &a->cases : &a->only;
            char msg[64];
            snprintf(msg, sizeof msg, value ? "%s is given twice" : "%s needs a value", name);
            if (!value || *slot) {
                print_error(msg, is_cases ? "list every case in one, e.g. --cases 3,5-7"
                                          : "give every condition in one, e.g. --only precision=bf16,batch_size=4");
                return EXIT_USAGE;
            }
            *slot = value;
        } else if (s[0] == '-' && s[1] != '\0') {
            char msg[300];
            snprintf(msg, sizeof msg, "unknown option '%.200s'", s);
            print_error(msg, "see benchctl --help");
            return EXIT_USAGE;
        } else if (!seen_command) {
            seen_command = 1; /* a->cmd, found above */
        } else if (!a->file) {
            a->file = s;
        } else {
            char msg[300], hint[64];
            snprintf(msg, sizeof msg, "%s: unexpected argument '%.200s'", a->cmd->name, s);
            snprintf(hint, sizeof hint, "see benchctl %s --help", a->cmd->name);
            print_error(msg, hint);
            return EXIT_USAGE;
        }
    }
    for (size_t i = 0; i < a->n_sets; i++)
        if (!strchr(a->sets[i], '=')) {
            char msg[300];
            snprintf(msg, sizeof msg, "--set '%.200s': expected key=value", a->sets[i]);
            print_error(msg, "e.g. --set run.iterations=3");
            return EXIT_USAGE;
        }
    return 0;
}

/* --------------------------------------------------------------- context */

/* The exit status for a context that could not be built: 1 when the backend
 * could not start for lack of memory or a device; 2 when the input is wrong. */
static int exit_for(bc_status st) {
    return st == BC_ERR_NOMEM || st == BC_ERR_DEVICE || st == BC_ERR_INTERNAL ? EXIT_RUNTIME : EXIT_USAGE;
}

/* Builds ctx from a's FILE (or its text, when text is not NULL; local_rank:
 * context.h). */
static bc_status build_context(bc_context *ctx, const args *a, int allow_infeasible, const char *text, size_t len,
                               const int32_t *local_rank, bc_error *err) {
    bc_context_args ca = {.file = a->file, .sets = a->sets, .n_sets = a->n_sets, .reporters = a->reporters,
                          .allow_infeasible = allow_infeasible, .cases = a->cases, .only = a->only,
                          .file_text = text, .file_text_len = len, .local_rank = local_rank};
    return bc_context_open(ctx, &ca, err);
}

/* Builds ctx for the command; prints the error and returns the exit status
 * on failure. ctx must be freed either way. */
static int open_context(bc_context *ctx, const args *a, int allow_infeasible) {
    *ctx = (bc_context){0};
    if (!a->file) {
        char msg[64], hint[128];
        snprintf(msg, sizeof msg, "%s: missing FILE", a->cmd->name);
        snprintf(hint, sizeof hint, "e.g. benchctl %s configs/bench.cfg", a->cmd->name);
        print_error(msg, hint);
        return EXIT_USAGE;
    }
    bc_error err = {0};
    bc_status st = build_context(ctx, a, allow_infeasible, NULL, 0, NULL, &err);
    if (st == BC_OK) return 0;
    print_bc_error(&err);
    return exit_for(st);
}

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
        if (d->rank == 0) print_bc_error(err);
        return exit_for(st);
    }
    bc_dist_set_mode(d, ctx->cfg.distributed_mode == BC_CFG_DIST_SHARD ? BC_DIST_SHARD : BC_DIST_REPLICATE);
    if (d->mode == BC_DIST_REPLICATE) ctx->cfg.sampling.seed += (uint64_t)d->rank; /* each rank its own prompts */
    return 0;
}

/* Builds ctx for run, joining the ranks of a distributed run when there is
 * one (*out = dist, else NULL). Prints errors; returns the exit status. */
static int open_run_context(bc_context *ctx, const args *a, bc_dist *dist, bc_dist **out) {
    *ctx = (bc_context){0};
    *out = NULL;
    bc_error err = {0};
    const char *comm = bc_dist_launcher_comm();
    if (!comm) {
        if (bc_dist_check_srun(1, &err) != BC_OK) return print_bc_error(&err), EXIT_USAGE;
        int rc = open_context(ctx, a, 0);
        if (rc || !ctx->cfg.distributed_comm) return rc;
        const char *const *dirs = (const char *const *)ctx->cfg.plugin_paths;
        bc_status st = bc_dist_open(dist, ctx->cfg.distributed_comm, dirs, ctx->cfg.n_plugin_paths, &err);
        *out = dist;
        if (st != BC_OK) return print_bc_error(&err), exit_for(st);
        return join_ranks(ctx, dist, BC_OK, &err);
    }
    if (!a->file) return open_context(ctx, a, 0); /* the usage error */
    bc_status st = bc_dist_open(dist, comm, NULL, 0, &err);
    *out = dist;
    if (st != BC_OK) return print_bc_error(&err), exit_for(st);
    char *text = NULL;
    size_t len = 0;
    bc_status read_st = dist->rank == 0 ? bc_config_read_text(a->file, &text, &len, &err) : BC_OK;
    if ((st = bc_dist_agree_status(dist, read_st, &err)) != BC_OK) {
        free(text);
        if (dist->rank == 0) print_bc_error(&err);
        return exit_for(st);
    }
    if ((st = bc_dist_broadcast_text(dist, &text, &len, &err)) != BC_OK) {
        free(text);
        return print_bc_error(&err), EXIT_RUNTIME;
    }
    st = build_context(ctx, a, 0, text, len, &dist->local_rank, &err);
    free(text);
    return join_ranks(ctx, dist, st, &err);
}

/* ------------------------------------------------------------- commands */

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
    print_error(message, NULL);
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
        print_error(msg, NULL);
    }
}

/* Runs ctx's cases (on rank d->rank of a distributed run, d not NULL: the
 * reporters and the summary on rank 0 only). */
static int run_context(const args *a, bc_context *ctx, bc_dist *d) {
    int lead = !d || d->rank == 0; /* the process that reports */
    if (ctx->cfg.n_reporters == 0 && !a->quiet && lead)
        print_error("warning: no reporters configured; results will not be written",
                    "add a reporters list to the config or use --reporter console,json");
    bc_runner_reporter *reps = calloc(ctx->cfg.n_reporters + 1, sizeof *reps);
    if (!reps) return print_error("out of memory", NULL), EXIT_RUNTIME;
    bc_runner_config rc_cfg;
    bc_context_runner_config(ctx, &rc_cfg, reps);
    rc_cfg.dist = d;
    if (!lead) rc_cfg.n_reporters = 0; /* only rank 0 writes reports */
    rc_cfg.stop = &g_stop;
    rc_cfg.on_error = on_runner_error;
    bc_resume resume = {0};
    if (a->resume) {
        bc_error rerr = {0};
        bc_status rst = bc_resume_load(&resume, a->resume, ctx->cases, ctx->n_cases, ctx->cfg.sha256, &rerr);
        if (rst != BC_OK) {
            print_bc_error(&rerr);
            bc_resume_free(&resume);
            free(reps);
            return rst == BC_ERR_NOMEM ? EXIT_RUNTIME : EXIT_USAGE;
        }
        rc_cfg.prior = resume.by_case;
        if (!a->quiet)
            fprintf(stderr, "benchctl: resuming %s: %zu of %zu cases finished there are taken as they were\n",
                    a->resume, resume.n_taken, ctx->n_cases);
    }

    struct sigaction sa = {0}, old_int, old_term;
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);

    bc_run_result res = {0};
    bc_error err = {0};
    int exit_code;
    static int guard_registered;
    if (!guard_registered) guard_registered = atexit(exit_guard_atexit) == 0;
    g_running = 1;
    bc_status run_st = bc_run(&rc_cfg, &res, &err);
    g_running = 0;
    if (run_st != BC_OK) {
        if (lead) print_bc_error(&err); /* the ranks agreed on it */
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

static int cmd_run(const args *a) {
    bc_dist dist = {0}, *d = NULL;
    bc_context ctx;
    int rc = open_run_context(&ctx, a, &dist, &d);
    if (rc == 0) rc = run_context(a, &ctx, d);
    bc_context_free(&ctx); /* the backend instance, before the comm leaves the job */
    if (d) bc_dist_close(d);
    return rc;
}

/* " (of 16, selected)" when --cases or --only left out some cases, else "". */
static const char *selected_of(const bc_context *ctx, char *buf, size_t n) {
    buf[0] = '\0';
    if (ctx->n_cases != ctx->n_matrix_cases) snprintf(buf, n, " (of %zu, selected)", ctx->n_matrix_cases);
    return buf;
}

static int cmd_validate(const args *a) {
    bc_context ctx;
    int rc = open_context(&ctx, a, 0);
    char of[64];
    if (!rc)
        printf("%s: ok: %zu case%s%s; backend %s, %zu precision%s, %zu cache polic%s, %zu reporter%s\n", ctx.cfg.path,
               ctx.n_cases, ctx.n_cases == 1 ? "" : "s", selected_of(&ctx, of, sizeof of),
               ctx.backend.plugin->desc->name, ctx.cfg.n_precisions,
               ctx.cfg.n_precisions == 1 ? "" : "s", ctx.cfg.n_cache_policies,
               ctx.cfg.n_cache_policies == 1 ? "y" : "ies", ctx.cfg.n_reporters, ctx.cfg.n_reporters == 1 ? "" : "s");
    bc_context_free(&ctx);
    return rc;
}

static void print_mib(int64_t bytes) {
    if (bytes < 0) printf(" %10s", "-");
    else printf(" %10.1f", (double)bytes / (1024.0 * 1024.0));
}

/* One row of the plan: the memory columns and the check. */
static void plan_memory_columns(const bc_context *ctx, const bc_case *c, const bc_case_check *chk, char *last_error,
                                size_t cap) {
    const bc_runner_backend *rb = bc_context_backend_of(ctx, c); /* the case's, with a backends list */
    const bc_backend_ops *ops = &rb->plugin->backend;
    bc_memory_stats m = {.struct_size = sizeof m, -1, -1, -1, -1, -1, -1, -1, -1};
    bc_error err = {0};
    if (ops->plan_memory && chk->code == BC_OK && ops->plan_memory(rb->instance, c, &m, &err) == BC_OK) {
        printf(" ");
        print_mib(m.weights_bytes);
        print_mib(m.kv_cache_bytes);
        print_mib(m.workspace_bytes);
        return;
    }
    const char *mark = ops->plan_memory ? "?" : "-";
    printf(" %11s %10s %10s", mark, mark, mark);
    if (ops->plan_memory && chk->code == BC_OK && strcmp(err.message, last_error) != 0) {
        char msg[sizeof err.message + 64];
        snprintf(msg, sizeof msg, "warning: case %u: memory unknown: %s", c->index, err.message);
        fflush(stdout);
        print_error(msg, NULL);
        snprintf(last_error, cap, "%s", err.message); /* printed once, not per case */
    }
}

/* A case's backend settings the matrix varies, "batching=static,kv_layout=paged"
 * ("" without any); returns the length written. */
static int plan_settings_text(const bc_case *c, char *buf, size_t cap) {
    size_t used = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < c->n_settings && used < cap; i++) {
        snprintf(buf + used, cap - used, "%s%s=%s", i ? "," : "", c->setting_names[i], c->setting_values[i]);
        used += strlen(buf + used);
    }
    return (int)used;
}

static int cmd_plan(const args *a) {
    bc_context ctx;
    int rc = open_context(&ctx, a, 1);
    if (rc) {
        bc_context_free(&ctx);
        return rc;
    }
    size_t *order = calloc(ctx.n_cases + 1, sizeof *order);
    if (!order) {
        bc_context_free(&ctx);
        return print_error("out of memory", NULL), EXIT_RUNTIME;
    }
    const bc_backend_ops *ops = &ctx.backend.plugin->backend;
    uint32_t axes = bc_matrix_rebuild_axes(ops->rebuild_axes);
    bc_matrix_execution_order(ctx.cases, ctx.n_cases, axes, order);
    char of[64], measured[160];
    if (!ctx.cfg.adaptive)
        snprintf(measured, sizeof measured, "%u measured iterations", ctx.cfg.iterations);
    else if (isnan(ctx.cfg.target_rel_ci))
        snprintf(measured, sizeof measured, "%u measured iterations", ctx.cfg.max_iterations);
    else
        snprintf(measured, sizeof measured, "%u to %u measured iterations, until the median total_ms is within +-%g%%",
                 ctx.cfg.min_iterations, ctx.cfg.max_iterations, 100.0 * ctx.cfg.target_rel_ci);
    if (!isnan(ctx.cfg.max_seconds_per_case)) {
        size_t used = strlen(measured);
        snprintf(measured + used, sizeof measured - used, ", at most %g s a case", ctx.cfg.max_seconds_per_case);
    }
    printf("%zu case%s%s in execution order (backend %s, %u warmup + %s each)\n", ctx.n_cases,
           ctx.n_cases == 1 ? "" : "s", selected_of(&ctx, of, sizeof of), ctx.backend.plugin->desc->name,
           ctx.cfg.warmup, measured);
    /* the backend settings the matrix varies, as "name=value,...", before the check */
    int settings_width = 0;
    for (size_t k = 0; k < ctx.n_cases; k++) {
        char text[256];
        int w = plan_settings_text(&ctx.cases[k], text, sizeof text);
        if (w > settings_width) settings_width = w;
    }
    if (settings_width && settings_width < 8) settings_width = 8;
    printf("%4s %5s %-5s %-10s %-10s %6s %7s %7s %8s %9s %11s %10s %10s", "run", "case", "state", "precision", "cache",
           "batch", "samples", "prompt", "response", "eff_batch", "weights_MiB", "kv_MiB", "work_MiB");
    if (settings_width) printf("  %-*s", settings_width, "settings");
    printf("  %s\n", "check");
    size_t n_builds = 0;
    char last_error[512] = "";
    for (size_t i = 0; i < ctx.n_cases; i++) {
        const bc_case *c = &ctx.cases[order[i]];
        int build = i == 0 || !bc_matrix_same_group(&ctx.cases[order[i - 1]], c, axes);
        n_builds += (size_t)build;
        char prompt[16];
        snprintf(prompt, sizeof prompt, c->prompt_length ? "%u" : "file", c->prompt_length);
        printf("%4zu %5u %-5s %-10s %-10s %6u %7u %7s %8u %9llu", i + 1, c->index, build ? "build" : "-", c->precision,
               c->cache_policy, c->batch_size, c->samples_per_prompt, prompt, c->response_length,
               (unsigned long long)bc_case_effective_batch(c));
        const bc_case_check *chk = &ctx.checks[order[i]];
        plan_memory_columns(&ctx, c, chk, last_error, sizeof last_error);
        char settings[256];
        plan_settings_text(c, settings, sizeof settings);
        if (settings_width) printf("  %-*s", settings_width, settings);
        printf("  %s\n", chk->code == BC_OK ? "ok" : chk->message);
    }
    printf("%zu build%s of the backend's costly state (the cases marked 'build')\n", n_builds,
           n_builds == 1 ? "" : "s");
    if (!ops->plan_memory) printf("(backend %s cannot tell its memory in advance)\n", ctx.backend.plugin->desc->name);
    rc = 0;
    if (ctx.n_infeasible) {
        char msg[128];
        snprintf(msg, sizeof msg, "%zu of %zu cases cannot run (see the check column)", ctx.n_infeasible, ctx.n_cases);
        fflush(stdout);
        print_error(msg, NULL);
        rc = EXIT_USAGE;
    }
    free(order);
    bc_context_free(&ctx);
    return rc;
}

/* What `benchctl plugins` found, kept so it prints grouped by kind. */
typedef struct listed {
    char *path, *error;   /* owned copies */
    const bc_plugin *p;   /* owned by the loader; NULL when broken */
} listed;

typedef struct listing {
    listed *items; /* owned */
    size_t n;
    int nomem;
} listing;

static void on_plugin_listed(void *ctx, const char *path, const bc_plugin *p, const char *error) {
    listing *ls = ctx;
    listed *items = realloc(ls->items, (ls->n + 1) * sizeof *items);
    if (!items) {
        ls->nomem = 1;
        return;
    }
    ls->items = items;
    listed *it = &items[ls->n];
    it->p = p;
    it->path = strdup(path);
    it->error = error ? strdup(error) : NULL;
    if (!it->path || (error && !it->error)) {
        free(it->path), free(it->error);
        ls->nomem = 1;
        return;
    }
    ls->n++;
}

static void print_listed(const char *path, const bc_plugin *p, const char *error) {
    if (p)
        printf("%-10s %-14s %-8s %s\n%-10s %-14s %-8s   %s\n", bc_kind_name(p->desc->kind), p->desc->name,
               p->desc->version ? p->desc->version : "?", p->desc->description ? p->desc->description : "", "", "",
               "", path);
    else {
        /* the name from the file name: benchctl-NAME.so */
        const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        int len = (int)strlen(base) - (int)strlen("benchctl-.so");
        printf("%-10s %-14.*s %-8s %s\n", "broken", len > 0 ? len : 0, base + strlen("benchctl-"), "", error);
    }
}

/* The bench.cfg and --set lines that set d's first setting. by names the
 * plugin as bench.cfg must: its name, or its path when it was named by path
 * and a search by name would not find this file. */
static void print_settings_usage(const bc_plugin_desc *d, const char *by) {
    if (d->kind == BC_KIND_BACKEND)
        printf("\nin bench.cfg: backend = { name = \"%s\"; settings = { %s = ...; }; };\n"
               "on the command line: --set backend.settings.%s=...\n",
               by, d->settings[0].name, d->settings[0].name);
    else
        printf("\nin bench.cfg, in the %s list: { name = \"%s\"; settings = { %s = ...; }; }\n",
               d->kind == BC_KIND_PRECISION ? "precisions" : d->kind == BC_KIND_CACHE ? "cache_policies" : "reporters",
               by, d->settings[0].name);
}

/* The DEFAULT and ALLOWED cells of setting s's row. */
static void setting_cells(const bc_setting_desc *s, char *def, size_t n_def, char *allowed, size_t n_allowed) {
    bc_setting_value v;
    bc_setting_default(s, &v);
    bc_setting_format(s, &v, def, n_def);
    bc_setting_allowed(s, allowed, n_allowed);
}

static int max_int(int a, int b) { return a > b ? a : b; }

/* Prints d's settings table, columns as wide as their widest cell. */
static void print_settings_table(const bc_plugin_desc *d) {
    int w_name = 7, w_def = 7, w_allowed = 7;
    char def[64], allowed[256];
    for (uint32_t i = 0; i < d->n_settings; i++) {
        setting_cells(&d->settings[i], def, sizeof def, allowed, sizeof allowed);
        w_name = max_int(w_name, (int)strlen(d->settings[i].name));
        w_def = max_int(w_def, (int)strlen(def));
        w_allowed = max_int(w_allowed, (int)strlen(allowed));
    }
    printf("\n%-*s  %-6s  %-*s  %-*s  %s\n", w_name, "SETTING", "TYPE", w_def, "DEFAULT", w_allowed, "ALLOWED", "HELP");
    for (uint32_t i = 0; i < d->n_settings; i++) {
        const bc_setting_desc *s = &d->settings[i];
        setting_cells(s, def, sizeof def, allowed, sizeof allowed);
        printf("%-*s  %-6s  %-*s  %-*s  %s\n", w_name, s->name, bc_setting_type_name(s->type), w_def, def, w_allowed,
               allowed, s->help ? s->help : "");
    }
}

/* Lists every plugin found, grouped by kind, then the broken ones. */
static int list_plugins(bc_loader *l) {
    printf("%-10s %-14s %-8s %s\n", "KIND", "NAME", "VERSION", "DESCRIPTION / FILE");
    listing ls = {0};
    bc_loader_list(l, on_plugin_listed, &ls);
    static const int order[] = {BC_KIND_BACKEND, BC_KIND_PRECISION, BC_KIND_CACHE, BC_KIND_REPORTER, -1};
    for (size_t k = 0; k < sizeof order / sizeof *order; k++)
        for (size_t i = 0; i < ls.n; i++)
            if ((ls.items[i].p ? (int)ls.items[i].p->desc->kind : -1) == order[k])
                print_listed(ls.items[i].path, ls.items[i].p, ls.items[i].error);
    size_t count = ls.n;
    for (size_t i = 0; i < ls.n; i++) free(ls.items[i].path), free(ls.items[i].error);
    free(ls.items);
    if (ls.nomem) print_error("warning: out of memory; the list is incomplete", NULL);
    if (count == 0) {
        printf("(none found; searched:");
        for (size_t i = 0; i < l->n_dirs; i++) printf(" %s", l->dirs[i]);
        printf(")\n");
    }
    return 0;
}

/* Whether a search for p's name finds p's own file. */
static int found_by_name(bc_loader *l, const bc_plugin *p) {
    const bc_plugin *q = NULL;
    bc_error err = {0};
    return bc_loader_load(l, p->desc->name, p->desc->kind, NULL, &q, &err) == BC_OK && q == p;
}

static int cmd_plugins(const args *a) {
    bc_loader l;
    bc_error err = {0};
    if (bc_loader_init(&l, NULL, 0, NULL, 0, &err) != BC_OK) return print_bc_error(&err), EXIT_USAGE;
    if (!a->file) {
        int rc = list_plugins(&l);
        bc_loader_free(&l);
        return rc;
    }
    const bc_plugin *p;
    if (bc_loader_load(&l, a->file, 0, NULL, &p, &err) != BC_OK) {
        if (err.code == BC_ERR_NOT_FOUND) bc_loader_hint_near_name(&l, a->file, &err);
        print_bc_error(&err);
        bc_loader_free(&l);
        return EXIT_USAGE;
    }
    bc_context_plugin resolved = {0};
    if (bc_context_resolve_cli_settings(p, a->sets, a->n_sets, &resolved, &err) != BC_OK) {
        print_bc_error(&err);
        bc_context_free_settings(&resolved);
        bc_loader_free(&l);
        return EXIT_USAGE;
    }
    const bc_plugin_desc *d = &resolved.desc; /* with the rows more_settings added */
    printf("%s %s (%s plugin, ABI %u.%u): %s\n%s\n", d->name, d->version ? d->version : "?", bc_kind_name(d->kind),
           d->abi_major, d->abi_minor, d->description ? d->description : "", p->path);
    if (d->n_settings == 0) {
        printf("no settings\n");
    } else {
        print_settings_table(d);
        print_settings_usage(d, found_by_name(&l, p) ? d->name : p->path);
    }
    bc_context_free_settings(&resolved);
    bc_loader_free(&l);
    return 0;
}

static int cmd_report(const args *a) {
    if (!a->file) {
        print_error("report: missing RUN (a JSON report or a jsonl journal)", "e.g. benchctl report out/bench.json -o report.html");
        return EXIT_USAGE;
    }
    bc_error err = {0};
    bc_status st = bc_replay_render(a->file, a->reporters ? a->reporters : "html", a->output, &err);
    if (st == BC_OK) return 0;
    print_bc_error(&err);
    /* a file that is not a run, or a reporter that cannot be used, is the
     * user's to fix (2); a reporter that failed to write is 1 */
    return st == BC_ERR_IO || st == BC_ERR_NOMEM || st == BC_ERR_INTERNAL ? EXIT_RUNTIME : EXIT_USAGE;
}

/* --------------------------------------------------------------- prompts */

static const char usage_prompts[] =
    "usage: benchctl prompts FILE --checkpoint DIR [--format auto|jsonl|lines] [--field NAME] [--bos ID]\n"
    "\n"
    "Tokenizes the text prompts in FILE with the tokenizer of checkpoint DIR\n"
    "(tokenizer.json, or vocab.json + merges.txt) exactly as the opt backend's\n"
    "prompts_text does, and prints each prompt's token ids on one line (the\n"
    "prompts_file format); a summary goes to stderr.\n"
    "\n"
    "options:\n"
    "  --checkpoint DIR  the checkpoint whose tokenizer to use (required)\n"
    "  --format F        auto (default: .jsonl/.json = JSON lines, else plain\n"
    "                    lines), jsonl or lines\n"
    "  --field NAME      the JSON field holding the prompt (default text)\n"
    "  --bos ID          the id put before each prompt (default 2, OPT's BOS;\n"
    "                    -1: none)\n"
    "\n"
    "Exit status: 0 ok, 2 usage errors or a file that cannot be read or tokenized.\n";

/* `benchctl prompts ...`: argv[0] is "prompts"; its own options. */
static int cmd_prompts(int argc, char **argv) {
    bc_prompts_request r = {.bos_id = 2};
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            fputs(usage_prompts, stdout);
            return 0;
        }
        int takes = !strcmp(o, "--checkpoint") || !strcmp(o, "--format") || !strcmp(o, "--field") || !strcmp(o, "--bos");
        if (takes && i + 1 >= argc) {
            char msg[160];
            snprintf(msg, sizeof msg, "prompts: %s needs a value", o);
            print_error(msg, "see benchctl prompts --help");
            return EXIT_USAGE;
        }
        if (!strcmp(o, "--checkpoint")) r.checkpoint = argv[++i];
        else if (!strcmp(o, "--format")) r.format = argv[++i];
        else if (!strcmp(o, "--field")) r.field = argv[++i];
        else if (!strcmp(o, "--bos")) {
            char *end;
            errno = 0;
            long v = strtol(argv[++i], &end, 10);
            if (errno || *end || end == argv[i] || v < -1 || v > INT_MAX) {
                char msg[160];
                snprintf(msg, sizeof msg, "prompts: --bos %.60s: must be a token id, or -1 for none", argv[i]);
                print_error(msg, NULL);
                return EXIT_USAGE;
            }
            r.bos_id = (int)v;
        } else if (o[0] == '-' && o[1]) {
            char msg[160];
            snprintf(msg, sizeof msg, "prompts: unknown option %.60s", o);
            print_error(msg, "see benchctl prompts --help");
            return EXIT_USAGE;
        } else if (r.file) {
            print_error("prompts: one FILE only", "see benchctl prompts --help");
            return EXIT_USAGE;
        } else {
            r.file = o;
        }
    }
    if (!r.file || !r.checkpoint) {
        print_error(!r.file ? "prompts: no FILE given" : "prompts: --checkpoint DIR is required",
                    "see benchctl prompts --help");
        return EXIT_USAGE;
    }
    bc_error err = {0};
    bc_prompts_summary sum;
    if (bc_prompts_write(&r, stdout, &sum, &err) != BC_OK) {
        print_bc_error(&err);
        return EXIT_USAGE;
    }
    fprintf(stderr, "benchctl: %s: %d prompts, %lld tokens; per prompt min %d, p50 %d, max %d", r.file, sum.count,
            sum.tokens, sum.min, sum.p50, sum.max);
    if (r.bos_id >= 0) fprintf(stderr, " (BOS %d first)", r.bos_id);
    fputc('\n', stderr);
    return 0;
}

static void print_version(void) {
    printf("benchctl %s (git %s, plugin ABI %d.%d)\n", BENCHCTL_VERSION, BENCHCTL_GIT_COMMIT, BENCHCTL_ABI_MAJOR,
           BENCHCTL_ABI_MINOR);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "compare") == 0) return bc_cmd_compare(argc - 1, argv + 1); /* its own options */
    if (argc > 1 && strcmp(argv[1], "prompts") == 0) return cmd_prompts(argc - 1, argv + 1);      /* its own options */
    args a = {0};
    int rc = parse_args(argc, argv, &a);
    if (rc) {
        free(a.sets);
        return rc;
    }
    if (a.verbose) bc_host_set_log_level(a.verbose > 1 ? BC_LOG_DEBUG : BC_LOG_INFO);
    if (a.quiet) bc_host_set_log_level(BC_LOG_ERROR);

    if (!a.cmd) {
        if (a.version) print_version();
        else if (a.help) fputs(usage_main, stdout);
        else fputs(usage_main, stderr), rc = EXIT_USAGE;
    } else if (a.help) {
        fputs(a.cmd->usage, stdout);
    } else {
        switch (a.cmd->id) {
        case CMD_RUN: rc = cmd_run(&a); break;
        case CMD_VALIDATE: rc = cmd_validate(&a); break;
        case CMD_PLAN: rc = cmd_plan(&a); break;
        case CMD_PLUGINS: rc = cmd_plugins(&a); break;
        case CMD_REPORT: rc = cmd_report(&a); break;
        case CMD_VERSION: print_version(); break;
        default: fputs(usage_main, stdout); break;
        }
    }
    free(a.sets);
    return rc;
}
