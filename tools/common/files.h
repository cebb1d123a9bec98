/* files: what the tools check and read of the files they are given. */
#ifndef RAM_TOOLS_FILES_H
#define RAM_TOOLS_FILES_H

#include <stddef.h>

/* Whether a file can be written at `path` the way libram saves (a temporary
 * file beside it, renamed over it): before a long run rather than after its
 * first epoch.  Says why not as "prog: option path: reason"; 0 if it can. */
int file_check_writable(const char *prog, const char *option, const char *path);

/* The whole file, malloc'ed, and its length; NULL on failure (errno set:
 * EISDIR for a directory, EINVAL for a FIFO, socket or device). */
unsigned char *file_read_all(const char *path, size_t *len);

/* Write a message into err[0..errlen) (err may be NULL or errlen 0) and
 * return -1: the readers' way of failing with a reason. */
int file_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The most memory this process has held (resident set, kB), or -1 where the
 * system does not tell (it is read from /proc/self/status). */
long file_peak_memory_kb(void);

/* Whether `path` exists. */
int file_exists(const char *path);

#endif
