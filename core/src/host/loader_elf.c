/* loader_elf.c: the check of a plugin file's ELF headers before dlopen
 * maps it (loader_elf.h). */
#define _GNU_SOURCE
#include "loader_elf.h"

#include <elf.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

/* The host's ELF class and machine: a plugin must match the running binary. */
#if UINTPTR_MAX == 0xffffffffffffffffu
#define HOST_ELFCLASS ELFCLASS64
#else
#define HOST_ELFCLASS ELFCLASS32
#endif
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HOST_ELFDATA ELFDATA2LSB
#else
#define HOST_ELFDATA ELFDATA2MSB
#endif
#if defined(__x86_64__)
#define HOST_EM EM_X86_64
#elif defined(__aarch64__)
#define HOST_EM EM_AARCH64
#elif defined(__i386__)
#define HOST_EM EM_386
#elif defined(__arm__)
#define HOST_EM EM_ARM
#elif defined(__powerpc64__)
#define HOST_EM EM_PPC64
#elif defined(__riscv)
#define HOST_EM EM_RISCV
#elif defined(__s390x__)
#define HOST_EM EM_S390
#else
#define HOST_EM EM_NONE /* unknown host: the machine is not checked */
#endif

#if HOST_ELFCLASS == ELFCLASS64
typedef Elf64_Ehdr host_ehdr;
typedef Elf64_Phdr host_phdr;
#else
typedef Elf32_Ehdr host_ehdr;
typedef Elf32_Phdr host_phdr;
#endif

static const char *elf_machine_name(unsigned m) {
    switch (m) {
    case EM_386: return "x86 (32-bit)";
    case EM_X86_64: return "x86-64";
    case EM_ARM: return "ARM (32-bit)";
    case EM_AARCH64: return "AArch64";
    case EM_PPC64: return "PowerPC 64";
    case EM_RISCV: return "RISC-V";
    case EM_S390: return "s390";
    default: return NULL;
    }
}

/* "x86-64" or "machine 183" into buf. */
static const char *machine_str(unsigned m, char *buf, size_t n) {
    const char *name = elf_machine_name(m);
    if (name) return name;
    snprintf(buf, n, "machine %u", m);
    return buf;
}

/* 1 when [off, off + len) lies inside a file of size bytes (no overflow). */
static int range_inside(uint64_t off, uint64_t len, uint64_t size) { return off <= size && len <= size - off; }

/* Checks path is an ELF shared object this process can map before dlopen
 * touches it: the class, byte order and machine of the running binary, type
 * ET_DYN, and every program header's file range and the section header table
 * inside the file. A truncated file would otherwise be mapped past its end
 * and kill the process with SIGBUS on first access. */
bc_status bc_loader_check_elf(const char *label, const char *path, bc_error *err) {
    FILE *f = fopen(path, "rb");
    if (!f) return bc_error_set(err, BC_ERR_IO, "%s: cannot open %s: %s", label, path, strerror(errno));
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fclose(f);
        return bc_error_set(err, BC_ERR_FORMAT, "%s: %s is not a regular file", label, path);
    }
    uint64_t size = (uint64_t)sb.st_size;
    unsigned char ident[EI_NIDENT] = {0};
    size_t got = fread(ident, 1, sizeof ident, f);
    bc_status st = BC_OK;
    char mbuf[32], hbuf[32];
    if (got < SELFMAG || memcmp(ident, ELFMAG, SELFMAG) != 0) {
        st = bc_error_set(err, BC_ERR_FORMAT, "%s: %s is not a shared object (not an ELF file)", label, path);
        goto out;
    }
    if (got < EI_NIDENT) {
        st = bc_error_set(err, BC_ERR_FORMAT, "%s: %s is truncated (%llu bytes, shorter than an ELF header)", label,
                          path, (unsigned long long)size);
        goto out;
    }
    if (ident[EI_CLASS] != HOST_ELFCLASS) {
        st = bc_error_set(err, BC_ERR_FORMAT, "%s: %s is a %s ELF file; this benchctl is %s", label, path,
                          ident[EI_CLASS] == ELFCLASS32 ? "32-bit" : ident[EI_CLASS] == ELFCLASS64 ? "64-bit" : "bad-class",
                          HOST_ELFCLASS == ELFCLASS64 ? "64-bit" : "32-bit");
        goto out;
    }
    if (ident[EI_DATA] != HOST_ELFDATA) {
        st = bc_error_set(err, BC_ERR_FORMAT, "%s: %s is a %s ELF file; this host is %s", label, path,
                          ident[EI_DATA] == ELFDATA2MSB ? "big-endian" : ident[EI_DATA] == ELFDATA2LSB ? "little-endian" : "bad-byte-order",
                          HOST_ELFDATA == ELFDATA2LSB ? "little-endian" : "big-endian");
        goto out;
    }
    host_ehdr eh;
    if (size < sizeof eh) {
        st = bc_error_set(err, BC_ERR_FORMAT, "%s: %s is truncated (%llu bytes, shorter than an ELF header)", label,
                          path, (unsigned long long)size);
        goto out;
    }
    memcpy(&eh, ident, sizeof ident);
    if (fread((unsigned char *)&eh + EI_NIDENT, 1, sizeof eh - EI_NIDENT, f) != sizeof eh - EI_NIDENT) {
        st = bc_error_set(err, BC_ERR_IO, "%s: cannot read %s: %s", label, path, ferror(f) ? strerror(errno) : "short read");
        goto out;
    }
    if (HOST_EM != EM_NONE && eh.e_machine != HOST_EM) {
        st = bc_error_set(err, BC_ERR_FORMAT, "%s: %s is built for %s; this host is %s", label, path,
                          machine_str(eh.e_machine, mbuf, sizeof mbuf), machine_str(HOST_EM, hbuf, sizeof hbuf));
        goto out;
    }
    if (eh.e_type != ET_DYN) {
        st = bc_error_set(err, BC_ERR_FORMAT, "%s: %s is an ELF %s, not a shared object", label, path,
                          eh.e_type == ET_EXEC ? "executable" : eh.e_type == ET_REL ? "object file (.o)" :
                          eh.e_type == ET_CORE ? "core dump" : "file of unknown type");
        goto out;
    }
    if (eh.e_phnum == 0 || eh.e_phentsize != sizeof(host_phdr)) {
        st = bc_error_set(err, BC_ERR_FORMAT, "%s: %s has a damaged ELF header (%u program headers of %u bytes)", label,
                          path, (unsigned)eh.e_phnum, (unsigned)eh.e_phentsize);
        goto out;
    }
    if (!range_inside(eh.e_phoff, (uint64_t)eh.e_phnum * sizeof(host_phdr), size)) {
        st = bc_error_set(err, BC_ERR_FORMAT, "%s: %s is truncated: its program headers end past the file's %llu bytes",
                          label, path, (unsigned long long)size);
        goto out;
    }
    if (eh.e_shnum != 0 && (eh.e_shentsize == 0 ||
                            !range_inside(eh.e_shoff, (uint64_t)eh.e_shnum * eh.e_shentsize, size))) {
        st = bc_error_set(err, BC_ERR_FORMAT,
                          "%s: %s is truncated: its section header table (offset %llu) ends past the file's %llu bytes",
                          label, path, (unsigned long long)eh.e_shoff, (unsigned long long)size);
        goto out;
    }
    if (fseeko(f, (off_t)eh.e_phoff, SEEK_SET) != 0) {
        st = bc_error_set(err, BC_ERR_IO, "%s: cannot read %s: %s", label, path, strerror(errno));
        goto out;
    }
    for (unsigned i = 0; i < eh.e_phnum; i++) {
        host_phdr ph;
        if (fread(&ph, sizeof ph, 1, f) != 1) {
            st = bc_error_set(err, BC_ERR_IO, "%s: cannot read %s: short read", label, path);
            goto out;
        }
        if (ph.p_type != PT_NULL && !range_inside(ph.p_offset, ph.p_filesz, size)) {
            st = bc_error_set(err, BC_ERR_FORMAT,
                              "%s: %s is truncated: segment %u needs bytes %llu..%llu, the file has %llu", label, path,
                              i, (unsigned long long)ph.p_offset,
                              (unsigned long long)ph.p_offset + (unsigned long long)ph.p_filesz,
                              (unsigned long long)size);
            goto out;
        }
    }
out:
    fclose(f);
    return st;
}
