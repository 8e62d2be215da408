/* replay_main.c: runs a fuzz target's LLVMFuzzerTestOneInput on every file
 * in the directories (or files) named on the command line, without libFuzzer,
 * so the committed corpus is a plain regression test (under ASan+UBSan when
 * BENCHCTL_SANITIZE=ON). Exit 0 when every input ran, 1 when one could not be
 * read or none was found; a crash in the target ends the process. */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return 0;
    }
    size_t cap = 1 << 16, len = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            uint8_t *nb = realloc(buf, cap *= 2);
            if (!nb) free(buf);
            buf = nb;
        }
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "replay: out of memory reading %s\n", path);
        return 0;
    }
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    return 1;
}

int main(int argc, char **argv) {
    int n = 0, ok = 1;
    for (int i = 1; i < argc; i++) {
        struct stat sb;
        if (stat(argv[i], &sb) != 0) {
            fprintf(stderr, "replay: no such file or directory: %s\n", argv[i]);
            return 1;
        }
        if (!S_ISDIR(sb.st_mode)) {
            ok &= run_file(argv[i]);
            n++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.') continue;
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", argv[i], e->d_name);
            ok &= run_file(p);
            n++;
        }
        if (d) closedir(d);
    }
    printf("replay: %d inputs\n", n);
    return ok && n > 0 ? 0 : 1;
}
