#define _POSIX_C_SOURCE 200809L /* mkstemp */
#include "files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
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
    /* open, fstat, read, close: no stdio buffer (a streamed image folder
     * reads every file once per epoch). */
    /* O_NONBLOCK: a FIFO opens at once instead of waiting for a writer, and
     * is then refused as not a regular file (no effect on regular files). */
    const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return NULL;
    struct stat st;
    unsigned char *d = NULL;
    size_t got = 0, want = 0;
    if (fstat(fd, &st) != 0) {
        /* errno says why */
    } else if (!S_ISREG(st.st_mode)) {
        errno = S_ISDIR(st.st_mode) ? EISDIR : EINVAL; /* EINVAL: a FIFO, socket or device */
    } else if (st.st_size == 0) {
        errno = ENODATA; /* "No data available": an empty file */
    } else if ((d = malloc(want = (size_t)st.st_size))) {
        while (got < want) {
            const ssize_t k = read(fd, d + got, want - got);
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0) break;
            got += (size_t)k;
        }
    }
    const int saved = errno;
    close(fd);
    errno = saved;
    if (d && got != want) { /* shrank while read */
        free(d);
        d = NULL;
        errno = EIO;
    }
    if (d) *len = got;
    return d;
}

int file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

long file_peak_memory_kb(void) {
    /* VmHWM is the peak of this program's own memory: getrusage()'s
     * ru_maxrss also counts what the parent had when it forked this one. */
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld kB", &kb) == 1) break;
    if (f) fclose(f);
    return kb;
}

int file_fail(char *err, size_t errlen, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}
