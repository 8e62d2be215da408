/* suggest.h: did-you-mean for names a user can misspell (settings, plugins,
 * reporters, subcommands): the nearest candidate by a case-insensitive
 * edit distance, or none when nothing is close. Internal to the core.
 */
#ifndef BENCHCTL_SUGGEST_H
#define BENCHCTL_SUGGEST_H

#include <stddef.h>

/* Closest candidate to word by edit distance; else the one candidate that
 * is a short form of it (the same first letter and trailing number:
 * bfloat16 -> bf16, float32 -> fp32); NULL when none is close. Returns one
 * of candidates (borrowed). */
const char *bc_suggest(const char *word, const char *const *candidates, size_t n);

/* Whether word is two candidates joined (bf16fp32: libconfig reads
 * [ "bf16" "fp32" ] so); *first and *second get them (borrowed). */
int bc_suggest_joined(const char *word, const char *const *candidates, size_t n, const char **first,
                      const char **second);

/* The hint for an unknown name, into buf ("" when there is none): the two
 * names it joins, with the missing comma, or "did you mean 'X'?". */
void bc_suggest_hint(const char *word, const char *const *candidates, size_t n, char *buf, size_t cap);

#endif
