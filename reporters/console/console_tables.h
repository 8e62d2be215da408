/* console_tables.h: what the console reporter's two files share (not the
 * ABI): console_reporter.c is the plugin (settings, hooks, the progress
 * on stderr), console_tables.c the final tables it writes at close. */
#ifndef BENCHCTL_REPORTERS_CONSOLE_TABLES_H
#define BENCHCTL_REPORTERS_CONSOLE_TABLES_H

#include "benchctl/plugin.h"
#include "textbuf.h"

/* Appends the whole end-of-run text of run to t (lines end in '\n'; cells
 * already escaped for a terminal). A case is unstable when the cv of its
 * total_ms is above max_cv or its CPU steal share above max_steal.
 * BC_ERR_NOMEM when t ran out of memory. */
bc_status console_build_report(bc_text *t, const bc_run_report *run, double max_cv, double max_steal);

#endif
