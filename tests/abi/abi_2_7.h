/* abi_2_7.h: stands in for the next ABI minor, 2.7, in tests/abi only
 * (plugin.h is 2.6).
 *
 * Force-included (-include) before anything else when tests/abi builds a
 * host or a plugin "from 2.7": every growable struct of plugin.h gains two
 * fields at its end (BC_ABI_TAIL) and the minor is 7, exactly what a real
 * minor may do under the policy at the top of plugin.h. Arrays of these
 * structs get a larger stride, descriptors and ops tables a larger
 * struct_size. Nothing else about the sources changes.
 */
#ifndef BENCHCTL_TEST_ABI_2_7_H
#define BENCHCTL_TEST_ABI_2_7_H

/* No #include here: this file comes before the sources' own feature macros
 * (_GNU_SOURCE, _POSIX_C_SOURCE); BC_ABI_TAIL expands inside plugin.h, after
 * its <stdint.h>. */
#define BENCHCTL_ABI_MINOR 7
#define BC_ABI_TAIL(type) uint64_t type##_added_in_next_minor[2];

#endif
