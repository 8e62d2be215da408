/* cmd_prompts.c: `benchctl prompts FILE --checkpoint DIR`: the token ids a
 * text prompt set becomes (prompts.h). */
#define _GNU_SOURCE

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "prompts.h"

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
int bc_cli_prompts(int argc, char **argv) {
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
            bc_cli_print_error(msg, "see benchctl prompts --help");
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
                bc_cli_print_error(msg, NULL);
                return EXIT_USAGE;
            }
            r.bos_id = (int)v;
        } else if (o[0] == '-' && o[1]) {
            char msg[160];
            snprintf(msg, sizeof msg, "prompts: unknown option %.60s", o);
            bc_cli_print_error(msg, "see benchctl prompts --help");
            return EXIT_USAGE;
        } else if (r.file) {
            bc_cli_print_error("prompts: one FILE only", "see benchctl prompts --help");
            return EXIT_USAGE;
        } else {
            r.file = o;
        }
    }
    if (!r.file || !r.checkpoint) {
        bc_cli_print_error(!r.file ? "prompts: no FILE given" : "prompts: --checkpoint DIR is required",
                    "see benchctl prompts --help");
        return EXIT_USAGE;
    }
    bc_error err = {0};
    bc_prompts_summary sum;
    if (bc_prompts_write(&r, stdout, &sum, &err) != BC_OK) {
        bc_cli_print_bc_error(&err);
        return EXIT_USAGE;
    }
    fprintf(stderr, "benchctl: %s: %d prompts, %lld tokens; per prompt min %d, p50 %d, max %d", r.file, sum.count,
            sum.tokens, sum.min, sum.p50, sum.max);
    if (r.bos_id >= 0) fprintf(stderr, " (BOS %d first)", r.bos_id);
    fputc('\n', stderr);
    return 0;
}
