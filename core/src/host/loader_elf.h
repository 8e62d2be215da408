/* loader_elf.h: a plugin file's ELF headers checked before dlopen
 * (loader_elf.c). Internal to the loader. */
#ifndef BENCHCTL_LOADER_ELF_H
#define BENCHCTL_LOADER_ELF_H

#include "benchctl/plugin.h"

/* Checks path is an ELF shared object this process can map before dlopen
 * touches it: the class, byte order and machine of the running binary, type
 * ET_DYN, and every program header's file range and the section header table
 * inside the file. A truncated file would otherwise be mapped past its end
 * and kill the process with SIGBUS on first access. label names the
 * plugin in the message. */
bc_status bc_loader_check_elf(const char *label, const char *path, bc_error *err);

#endif
