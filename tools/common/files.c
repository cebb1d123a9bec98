#define _POSIX_C_SOURCE 200809L /* mkstemp */
#include "files.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int file_check_writable(const char *prog, const char *option, const char *path) {
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        fprintf(stderr, "%s: %s %s: is a directory\n", prog, option, path);
        return -1;
    }
    /* The probe is what ram_model_save() creates: path.tmp-XXXXXX. */
    size_t len = strlen(path);
    char *probe = malloc(len + 16);
    if (!probe) {
        fprintf(stderr, "%s: out of memory\n", prog);
        return -1;
    }
    memcpy(probe, path, len);
    memcpy(probe + len, ".tmp-XXXXXX", 12);
    int fd = mkstemp(probe);
    if (fd < 0) {
        fprintf(stderr, "%s: %s %s: cannot write there: %s\n", prog, option, path, strerror(errno));
        free(probe);
        return -1;
    }
    close(fd);
    unlink(probe);
    free(probe);
    return 0;
}

unsigned char *file_read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    unsigned char *d = NULL;
    long n = -1;
    if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (d = malloc((size_t)n)) && fread(d, 1, (size_t)n, f) != (size_t)n) {
        free(d);
        d = NULL;
    }
    if (f) fclose(f);
    if (d) *len = (size_t)n;
    return d;
}

int file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}
