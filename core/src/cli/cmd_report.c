/* cmd_report.c: `benchctl report RUN`: a saved run rendered through
 * reporters (replay.h). */
#define _GNU_SOURCE

#include "cli.h"
#include "replay.h"

int bc_cli_report(const bc_cli_args *a) {
    if (!a->file) {
        bc_cli_print_error("report: missing RUN (a JSON report or a jsonl journal)", "e.g. benchctl report out/bench.json -o report.html");
        return EXIT_USAGE;
    }
    bc_error err = {0};
    bc_status st = bc_replay_render(a->file, a->reporters ? a->reporters : "html", a->output, &err);
    if (st == BC_OK) return 0;
    bc_cli_print_bc_error(&err);
    /* a file that is not a run, or a reporter that cannot be used, is the
     * user's to fix (2); a reporter that failed to write is 1 */
    return st == BC_ERR_IO || st == BC_ERR_NOMEM || st == BC_ERR_INTERNAL ? EXIT_RUNTIME : EXIT_USAGE;
}
