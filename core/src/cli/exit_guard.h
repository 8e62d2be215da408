/* exit_guard.h: a plugin that ends the process while a run is in progress
 * (exit, _exit or _Exit from a hook) must not leave status 0 (exit_guard.c
 * says how). The run arms the guard around bc_run. */
#ifndef BENCHCTL_EXIT_GUARD_H
#define BENCHCTL_EXIT_GUARD_H

/* A run starts: from now on exit, _exit and _Exit with status 0 end the
 * process with status 1 and one line on stderr. */
void bc_exit_guard_arm(void);

/* The run ended: exit, _exit and _Exit behave as libc's again. */
void bc_exit_guard_disarm(void);

#endif
