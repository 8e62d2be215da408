/* help.c: the usage texts of benchctl and its subcommands (prompts and
 * compare keep theirs with their own option parsers). */
#define _GNU_SOURCE

#include "cli.h"

const char bc_cli_usage_main[] =
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

const char bc_cli_usage_run[] =
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

const char bc_cli_usage_validate[] =
    "usage: benchctl validate FILE [--set key=value]... [--reporter a,b] [--cases LIST] [--only FILTER]\n"
    "\n"
    "Checks FILE, loads every plugin it names, checks their settings (paths that\n"
    "must exist, report files that must be creatable), creates the backend\n"
    "without loading weights and asks it whether every (selected) case can run.\n"
    "Runs nothing. Exit status 0 when valid, 2 otherwise.\n";

const char bc_cli_usage_plan[] =
    "usage: benchctl plan FILE [--set key=value]... [--cases LIST] [--only FILTER]\n"
    "                          [--estimate-from RUN]\n"
    "\n"
    "Prints the (selected) cases in the order run follows: backend by backend,\n"
    "grouped by what each backend rebuilds when it changes (the precision, for\n"
    "the OPT engine; 'build' marks each group's first case), largest effective\n"
    "batch first within a group, with the memory the backend says each needs\n"
    "and whether it can run.\n"
    "--estimate-from RUN (a finished run's JSON report or journal, from this\n"
    "machine) adds the time each case should take (est_s) and their total, from\n"
    "the cost model of run's progress ETA fitted on RUN's cases.\n"
    "Exit status 0 when every case can run, 2 otherwise.\n";

const char bc_cli_usage_report[] =
    "usage: benchctl report RUN [-o FILE] [--reporter a,b]\n"
    "\n"
    "Renders a saved run (a JSON report, .gz too, or a jsonl journal, even one cut\n"
    "short) through reporters, as the live run would have: by default the html\n"
    "reporter, writing benchctl.html.\n"
    "  -o, --output FILE  the reporter's output file (its path setting; one reporter)\n"
    "  --reporter a,b     the reporters to use (default html)\n"
    "Exit status 0 when every report was written, 1 when a reporter failed,\n"
    "2 for usage errors or a file that is not a run.\n";

const char bc_cli_usage_plugins[] =
    "usage: benchctl plugins [NAME [--set SETTING=VALUE ...]]\n"
    "\n"
    "Without NAME: every plugin found on the search path, with its kind,\n"
    "version, description and file; broken plugins are listed with their error.\n"
    "With NAME (or the path of a .so): that plugin's settings table and, for a\n"
    "backend, its metric table (name, unit, which way is better, per iteration\n"
    "or per case, help). A plugin whose settings depend on its own (the worker\n"
    "backend: its engine declares them) shows them all once given those, e.g.\n"
    "  benchctl plugins worker --set command=\"python3 -m benchctl_worker transformers\"\n";
