/* Status strings, the thread-local last-error message, the log callback,
 * version queries and the versioned-params copy shared by every *_create(). */
#include "internal.h"

#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char last_error[512];

unsigned ram_version_number(void) {
    return RAM_VERSION_NUMBER;
}
const char *ram_version_string(void) {
    return RAM_VERSION_STRING;
}

const char *ram_status_string(ram_status s) {
    switch (s) {
    case RAM_OK:
        return "ok";
    case RAM_ERR_INVALID_ARGUMENT:
        return "invalid argument";
    case RAM_ERR_OUT_OF_MEMORY:
        return "out of memory";
    case RAM_ERR_IO:
        return "i/o error";
    case RAM_ERR_FORMAT:
        return "not a valid libram file";
    case RAM_ERR_VERSION:
        return "unsupported file format version";
    case RAM_ERR_CORRUPT:
        return "corrupt or truncated file";
    case RAM_ERR_NUMERIC:
        return "non-finite number";
    case RAM_ERR_MISMATCH:
        return "configuration mismatch";
    case RAM_ERR_BUFFER_TOO_SMALL:
        return "buffer too small";
    case RAM_ERR_THREAD:
        return "thread creation failed";
    }
    return "unknown status";
}

const char *ram_last_error(void) {
    return last_error;
}

void ram_clear_error(void) {
    last_error[0] = '\0';
}

ram_status ram_fail(ram_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return s;
}

void ram_params_fill(void *p, size_t size, const void *defaults, size_t full) {
    if (!p || size < sizeof(size_t)) return;
    if (size > full) size = full; /* a newer caller: we fill what we know */
    memcpy(p, defaults, size);
    memcpy(p, &size, sizeof size);
}

ram_status ram_copy_params(void *dst, size_t full, const void *user, const char *what) {
    if (!user) return ram_fail(RAM_ERR_INVALID_ARGUMENT, "%s: params is NULL", what);
    size_t n = *(const size_t *)user;
    /* Anything shorter than the first field cannot be a params struct. */
    if (n < sizeof(size_t))
        return ram_fail(RAM_ERR_INVALID_ARGUMENT,
                        "%s: struct_size is %zu; initialise params with the *_params_init() "
                        "function",
                        what, n);
    memcpy(dst, user, n < full ? n : full);
    *(size_t *)dst = full;
    return RAM_OK;
}

/* The log callback: diagnostics that are not the caller's error (a slow
 * BLAS).  Errors go through statuses and ram_last_error(), never here.  The
 * default prints to stderr, because a warning nobody sees helps nobody. */
static void log_to_stderr(ram_log_level level, const char *message, void *user) {
    (void)user;
    fprintf(stderr, "libram: %s: %s\n", level == RAM_LOG_WARN ? "warning" : "info", message);
}

/* Logging is rare (once per process so far): a mutex is simplest. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static ram_log_fn log_fn = log_to_stderr;
static void *log_user;

void ram_set_log_callback(ram_log_fn fn, void *user) {
    pthread_mutex_lock(&log_lock);
    log_fn = fn;
    log_user = user;
    pthread_mutex_unlock(&log_lock);
}

void ram_log(ram_log_level level, const char *fmt, ...) {
    char message[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&log_lock);
    if (log_fn) log_fn(level, message, log_user);
    pthread_mutex_unlock(&log_lock);
}
