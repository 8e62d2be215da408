/* cli.c: what the subcommands share (cli.h): errors printed once, as
 * "benchctl: <message>" and "benchctl: hint: ...", and the context opened. */
#define _GNU_SOURCE

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "termsafe.h"

/* text on stderr with terminal controls escaped (termsafe.h): messages
 * carry names and values from files and peers */
static void put_safe(const char *prefix, const char *text) {
    bc_text t = {0};
    bc_text_puts(&t, prefix);
    bc_text_put_terminal(&t, text, strlen(text), 1); /* a multi-line message keeps its lines */
    bc_text_put(&t, "\n", 1);
    if (!t.failed && t.buf) fputs(t.buf, stderr);
    else fprintf(stderr, "%s(out of memory)\n", prefix);
    free(t.buf);
}

void bc_cli_print_error(const char *message, const char *hint) {
    put_safe("benchctl: ", message ? message : "");
    if (hint && *hint) put_safe("benchctl: hint: ", hint);
}

void bc_cli_print_bc_error(const bc_error *err) { bc_cli_print_error(err->message, err->hint); }

/* The exit status for a context that could not be built: 1 when the backend
 * could not start for lack of memory or a device; 2 when the input is wrong. */
int bc_cli_exit_for(bc_status st) {
    return st == BC_ERR_NOMEM || st == BC_ERR_DEVICE || st == BC_ERR_INTERNAL ? EXIT_RUNTIME : EXIT_USAGE;
}

/* Builds ctx from a's FILE (or its text, when text is not NULL; local_rank:
 * context.h). */
bc_status bc_cli_build_context(bc_context *ctx, const bc_cli_args *a, int allow_infeasible, const char *text, size_t len,
                               const int32_t *local_rank, bc_error *err) {
    bc_context_args ca = {.file = a->file, .sets = a->sets, .n_sets = a->n_sets, .reporters = a->reporters,
                          .allow_infeasible = allow_infeasible, .cases = a->cases, .only = a->only,
                          .file_text = text, .file_text_len = len, .local_rank = local_rank};
    return bc_context_open(ctx, &ca, err);
}

/* Builds ctx for the command; prints the error and returns the exit status
 * on failure. ctx must be freed either way. */
int bc_cli_open_context(bc_context *ctx, const bc_cli_args *a, int allow_infeasible) {
    *ctx = (bc_context){0};
    if (!a->file) {
        char msg[64], hint[128];
        snprintf(msg, sizeof msg, "%s: missing FILE", a->cmd->name);
        snprintf(hint, sizeof hint, "e.g. benchctl %s configs/bench.cfg", a->cmd->name);
        bc_cli_print_error(msg, hint);
        return EXIT_USAGE;
    }
    bc_error err = {0};
    bc_status st = bc_cli_build_context(ctx, a, allow_infeasible, NULL, 0, NULL, &err);
    if (st == BC_OK) return 0;
    bc_cli_print_bc_error(&err);
    return bc_cli_exit_for(st);
}

/* " (of 16, selected)" when --cases or --only left out some cases, else "". */
const char *bc_cli_selected_of(const bc_context *ctx, char *buf, size_t n) {
    buf[0] = '\0';
    if (ctx->n_cases != ctx->n_matrix_cases) snprintf(buf, n, " (of %zu, selected)", ctx->n_matrix_cases);
    return buf;
}
