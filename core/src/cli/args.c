/* args.c: the command table and the argument parser of benchctl (cli.h). */
#define _GNU_SOURCE

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "compare.h"

static const bc_cli_command k_commands[] = {
    {"run", CMD_RUN, OPT_SET | OPT_REPORTER | OPT_VERBOSITY | OPT_SELECT | OPT_RESUME, bc_cli_usage_run},
    {"validate", CMD_VALIDATE, OPT_SET | OPT_REPORTER | OPT_VERBOSITY | OPT_SELECT, bc_cli_usage_validate},
    {"plan", CMD_PLAN, OPT_SET | OPT_VERBOSITY | OPT_SELECT | OPT_ESTIMATE, bc_cli_usage_plan},
    {"plugins", CMD_PLUGINS, OPT_SET | OPT_VERBOSITY, bc_cli_usage_plugins},
    {"report", CMD_REPORT, OPT_REPORTER | OPT_OUTPUT | OPT_VERBOSITY, bc_cli_usage_report},
    {"compare", CMD_COMPARE, 0, bc_compare_usage}, /* parses its own options: see main() */
    {"help", CMD_HELP, 0, bc_cli_usage_main},
    {"version", CMD_VERSION, 0, bc_cli_usage_main},
};

static const bc_cli_command *find_command(const char *name) {
    for (size_t i = 0; i < sizeof k_commands / sizeof k_commands[0]; i++)
        if (strcmp(k_commands[i].name, name) == 0) return &k_commands[i];
    return NULL;
}


/* The first argument that is not an option or an option's value. */
static const char *first_word(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--set") == 0 || strcmp(argv[i], "--reporter") == 0 || strcmp(argv[i], "-o") == 0 ||
            strcmp(argv[i], "--output") == 0 || strcmp(argv[i], "--cases") == 0 || strcmp(argv[i], "--only") == 0 ||
            strcmp(argv[i], "--resume") == 0 || strcmp(argv[i], "--estimate-from") == 0) {
            i++;
            continue;
        }
        if (argv[i][0] != '-' || argv[i][1] == '\0') return argv[i];
    }
    return NULL;
}

/* Refuses an option the command does not take; returns non-zero then. */
static int refuse_option(const bc_cli_args *a, int option, const char *spelled) {
    if (!a->cmd || (a->cmd->options & option)) return 0;
    char msg[300], hint[64];
    snprintf(msg, sizeof msg, "%s does not take %.100s", a->cmd->name, spelled);
    snprintf(hint, sizeof hint, "see benchctl %s --help", a->cmd->name);
    bc_cli_print_error(msg, hint);
    return EXIT_USAGE;
}

int bc_cli_parse_args(int argc, char **argv, bc_cli_args *a) {
    a->sets = calloc((size_t)argc + 1, sizeof *a->sets);
    if (!a->sets) {
        bc_cli_print_error("out of memory", NULL);
        return EXIT_USAGE;
    }
    /* the command first, so "benchctl frobnicate a b" says what is wrong */
    const char *word = first_word(argc, argv);
    if (word) {
        a->cmd = find_command(word);
        if (!a->cmd) {
            char msg[300];
            snprintf(msg, sizeof msg, "unknown command '%.200s'", word);
            bc_cli_print_error(msg, "commands: run, validate, plan, plugins, report, compare, prompts; see benchctl --help");
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
                bc_cli_print_error(msg, is_set ? "--set key=value, e.g. --set run.iterations=3" : "e.g. --reporter json,csv");
                return EXIT_USAGE;
            }
            if (is_set) a->sets[a->n_sets++] = value;
            else a->reporters = value;
        } else if (strcmp(s, "-o") == 0 || strcmp(s, "--output") == 0 || strncmp(s, "--output=", 9) == 0) {
            if (refuse_option(a, OPT_OUTPUT, "-o")) return EXIT_USAGE;
            const char *value = strncmp(s, "--output=", 9) == 0 ? s + 9 : (i + 1 < argc ? argv[++i] : NULL);
            if (!value) {
                bc_cli_print_error("-o needs a file name", "e.g. -o report.html");
                return EXIT_USAGE;
            }
            a->output = value;
        } else if (strcmp(s, "--resume") == 0 || strncmp(s, "--resume=", 9) == 0) {
            if (refuse_option(a, OPT_RESUME, "--resume")) return EXIT_USAGE;
            const char *value = s[8] == '=' ? s + 9 : (i + 1 < argc ? argv[++i] : NULL);
            if (!value) {
                bc_cli_print_error("--resume needs the journal (or JSON report) of the run to resume",
                            "e.g. --resume out/bench.jsonl");
                return EXIT_USAGE;
            }
            a->resume = value;
        } else if (strcmp(s, "--estimate-from") == 0 || strncmp(s, "--estimate-from=", 16) == 0) {
            if (refuse_option(a, OPT_ESTIMATE, "--estimate-from")) return EXIT_USAGE;
            const char *value = s[15] == '=' ? s + 16 : (i + 1 < argc ? argv[++i] : NULL);
            if (!value) {
                bc_cli_print_error("--estimate-from needs a finished run (JSON report or journal) on this machine",
                                   "e.g. --estimate-from benchctl.json");
                return EXIT_USAGE;
            }
            a->estimate_from = value;
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
                bc_cli_print_error(msg, is_cases ? "list every case in one, e.g. --cases 3,5-7"
                                          : "give every condition in one, e.g. --only precision=bf16,batch_size=4");
                return EXIT_USAGE;
            }
            *slot = value;
        } else if (s[0] == '-' && s[1] != '\0') {
            char msg[300];
            snprintf(msg, sizeof msg, "unknown option '%.200s'", s);
            bc_cli_print_error(msg, "see benchctl --help");
            return EXIT_USAGE;
        } else if (!seen_command) {
            seen_command = 1; /* a->cmd, found above */
        } else if (!a->file) {
            a->file = s;
        } else {
            char msg[300], hint[64];
            snprintf(msg, sizeof msg, "%s: unexpected argument '%.200s'", a->cmd->name, s);
            snprintf(hint, sizeof hint, "see benchctl %s --help", a->cmd->name);
            bc_cli_print_error(msg, hint);
            return EXIT_USAGE;
        }
    }
    for (size_t i = 0; i < a->n_sets; i++)
        if (!strchr(a->sets[i], '=')) {
            char msg[300];
            snprintf(msg, sizeof msg, "--set '%.200s': expected key=value", a->sets[i]);
            bc_cli_print_error(msg, "e.g. --set run.iterations=3");
            return EXIT_USAGE;
        }
    return 0;
}
