/* suggest.h: did-you-mean for names a user can misspell (settings, plugins,
 * reporters, subcommands): the nearest candidate by a case-insensitive
 * edit distance, or none when nothing is close. Internal to the core.
 */
#ifndef BENCHCTL_SUGGEST_H
#define BENCHCTL_SUGGEST_H

#include <stddef.h>

/* Closest candidate to word by edit distance, or NULL when none is close.
 * Returns one of candidates (borrowed). */
const char *bc_suggest(const char *word, const char *const *candidates, size_t n);

#endif
