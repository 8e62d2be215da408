/* cmd_validate.c: `benchctl validate FILE`: the context built, nothing run. */
#define _GNU_SOURCE

#include <stdio.h>

#include "cli.h"
#include "output.h"

int bc_cli_validate(const bc_cli_args *a) {
    bc_context ctx;
    bc_error derr = {0};
    bc_output_divert_stdout(&derr); /* what plugins print while they load and check goes to stderr */
    int rc = bc_cli_open_context(&ctx, a, 0);
    bc_output_restore_stdout();
    char of[64];
    if (!rc)
        printf("%s: ok: %zu case%s%s; backend %s, %zu precision%s, %zu cache polic%s, %zu reporter%s\n", ctx.cfg.path,
               ctx.n_cases, ctx.n_cases == 1 ? "" : "s", bc_cli_selected_of(&ctx, of, sizeof of),
               ctx.backend.plugin->desc->name, ctx.cfg.n_precisions,
               ctx.cfg.n_precisions == 1 ? "" : "s", ctx.cfg.n_cache_policies,
               ctx.cfg.n_cache_policies == 1 ? "y" : "ies", ctx.cfg.n_reporters, ctx.cfg.n_reporters == 1 ? "" : "s");
    if (!rc && ctx.scorer_instance)
        printf("%s: scorer %s (backend %s, precision %s)\n", ctx.cfg.path, ctx.scorer_label,
               ctx.scorer.plugin->desc->name, ctx.score_precision_name);
    if (!rc && ctx.cfg.refit != BC_CFG_REFIT_OFF) printf("%s: refit %s\n", ctx.cfg.path, ctx.run.refit);
    bc_context_free(&ctx);
    return rc;
}
