/* host.h: the services table (bc_host) benchctl hands to each plugin.
 *
 * Every loaded plugin gets its own bc_host (inside its bc_plugin, see
 * loader.h) whose log prefixes lines with the plugin's name. Log lines go to
 * stderr; which levels are shown is a process-wide setting (-q, -v).
 */
#ifndef BENCHCTL_HOST_H
#define BENCHCTL_HOST_H

#include "benchctl/plugin.h"

/* Fills host for the plugin called name; name is borrowed and must outlive host. */
void bc_host_init(bc_host *host, const char *name);

/* Shows log lines up to and including level (default BC_LOG_WARN). */
void bc_host_set_log_level(bc_log_level level);
bc_log_level bc_host_log_level(void);

/* Monotonic clock in nanoseconds (CLOCK_MONOTONIC). */
uint64_t bc_now_ns(void);

/* Ends the process now with status: no atexit handlers, no stdio flush, and
 * not through benchctl's own _exit (the exit guard, cli/exit_guard.c), which
 * is for plugins. For a process that must not go on (an isolated case's
 * child, a rank whose job is aborted). */
_Noreturn void bc_exit_group(int status);

#endif
