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
 * and run by runner.c; each subcommand is its own file here (cli.h lists
 * them), this one dispatches. Errors print once, in core/src/cli, as "benchctl: <message>"
 * (plus "benchctl: hint: ..." where the error carries one). Exit status: 0 ok;
 * 1 a run could not complete (the backend could not start, a reporter
 * failed); 2 usage, config, plugin or feasibility errors; 3 some cases
 * failed; 130 (SIGINT) or 143 (SIGTERM) interrupted.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "compare.h"
#include "host.h"

static void print_version(void) {
    printf("benchctl %s (git %s, plugin ABI %d.%d)\n", BENCHCTL_VERSION, BENCHCTL_GIT_COMMIT, BENCHCTL_ABI_MAJOR,
           BENCHCTL_ABI_MINOR);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "compare") == 0) return bc_cmd_compare(argc - 1, argv + 1); /* its own options */
    if (argc > 1 && strcmp(argv[1], "prompts") == 0) return bc_cli_prompts(argc - 1, argv + 1);      /* its own options */
    bc_cli_args a = {0};
    int rc = bc_cli_parse_args(argc, argv, &a);
    if (rc) {
        free(a.sets);
        return rc;
    }
    if (a.verbose) bc_host_set_log_level(a.verbose > 1 ? BC_LOG_DEBUG : BC_LOG_INFO);
    if (a.quiet) bc_host_set_log_level(BC_LOG_ERROR);

    if (!a.cmd) {
        if (a.version) print_version();
        else if (a.help) fputs(bc_cli_usage_main, stdout);
        else fputs(bc_cli_usage_main, stderr), rc = EXIT_USAGE;
    } else if (a.help) {
        fputs(a.cmd->usage, stdout);
    } else {
        switch (a.cmd->id) {
        case CMD_RUN: rc = bc_cli_run(&a); break;
        case CMD_VALIDATE: rc = bc_cli_validate(&a); break;
        case CMD_PLAN: rc = bc_cli_plan(&a); break;
        case CMD_PLUGINS: rc = bc_cli_plugins(&a); break;
        case CMD_REPORT: rc = bc_cli_report(&a); break;
        case CMD_VERSION: print_version(); break;
        default: fputs(bc_cli_usage_main, stdout); break;
        }
    }
    free(a.sets);
    return rc;
}
