/* cli.h: what the files of the benchctl command line share (core/src/cli):
 * the parsed arguments, the exit statuses, the one way errors are printed,
 * the run context as a command opens it, and each subcommand's entry.
 *
 *   main.c          dispatch, --help, --version
 *   help.c          the usage texts
 *   args.c          the command table and the argument parser
 *   cli.c           printing errors, opening the context, shared phrases
 *   exit_guard.c    a plugin that ends the process during a run (exit_guard.h)
 *   ranks.c         joining the ranks of a distributed run
 *   cmd_run.c, cmd_validate.c, cmd_plan.c, cmd_plugins.c, cmd_report.c,
 *   cmd_prompts.c   one subcommand each (compare is analysis/compare.c's)
 */
#ifndef BENCHCTL_CLI_H
#define BENCHCTL_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "benchctl/plugin.h"
#include "context.h"
#include "distributed.h"

enum { EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

enum { CMD_RUN, CMD_VALIDATE, CMD_PLAN, CMD_PLUGINS, CMD_HELP, CMD_VERSION, CMD_REPORT, CMD_COMPARE };

/* What each command takes besides -h/--help. */
enum { OPT_SET = 1, OPT_REPORTER = 2, OPT_VERBOSITY = 4, OPT_OUTPUT = 8, OPT_SELECT = 16, OPT_RESUME = 32 };
enum { OPT_ESTIMATE = 64 }; /* plan --estimate-from RUN */

typedef struct bc_cli_command {
    const char *name;
    int id;
    int options; /* OPT_* it accepts */
    const char *usage;
} bc_cli_command;

typedef struct bc_cli_args {
    const bc_cli_command *cmd;     /* NULL: none given */
    const char *file;       /* FILE, or NAME for plugins */
    const char **sets;      /* --set values, owned array */
    size_t n_sets;
    const char *reporters;  /* --reporter */
    const char *output;     /* -o, --output */
    const char *cases;      /* --cases */
    const char *only;       /* --only */
    const char *resume;     /* --resume */
    const char *estimate_from; /* plan --estimate-from */
    int verbose, quiet, help, version;
} bc_cli_args;

/* help.c */
extern const char bc_cli_usage_main[], bc_cli_usage_run[], bc_cli_usage_validate[], bc_cli_usage_plan[],
    bc_cli_usage_report[], bc_cli_usage_plugins[];

/* args.c: parses argv into a (a->sets owned by the caller: free it);
 * prints the error and returns the exit status on a usage error, else 0. */
int bc_cli_parse_args(int argc, char **argv, bc_cli_args *a);

/* cli.c */
void bc_cli_print_error(const char *message, const char *hint);
void bc_cli_print_bc_error(const bc_error *err);
/* The exit status for a context that could not be built: 1 when the backend
 * could not start for lack of memory or a device; 2 when the input is wrong. */
int bc_cli_exit_for(bc_status st);
/* Builds ctx from a's FILE (or its text, when text is not NULL; local_rank:
 * context.h). */
bc_status bc_cli_build_context(bc_context *ctx, const bc_cli_args *a, int allow_infeasible, const char *text,
                               size_t len, const int32_t *local_rank, bc_error *err);
/* Builds ctx for the command; prints the error and returns the exit status
 * on failure. ctx must be freed either way. */
int bc_cli_open_context(bc_context *ctx, const bc_cli_args *a, int allow_infeasible);
/* " (of 16, selected)" when --cases or --only left out some cases, else "". */
const char *bc_cli_selected_of(const bc_context *ctx, char *buf, size_t n);

/* ranks.c: builds ctx for run, joining the ranks of a distributed run when
 * there is one (*out = dist, else NULL). Prints errors; returns the exit
 * status. */
int bc_cli_open_run_context(bc_context *ctx, const bc_cli_args *a, bc_dist *dist, bc_dist **out);

/* The subcommands: each returns the exit status. prompts parses its own
 * options (argv[0] is "prompts"). */
int bc_cli_run(const bc_cli_args *a);
int bc_cli_validate(const bc_cli_args *a);
int bc_cli_plan(const bc_cli_args *a);
int bc_cli_plugins(const bc_cli_args *a);
int bc_cli_report(const bc_cli_args *a);
int bc_cli_prompts(int argc, char **argv);

#endif
