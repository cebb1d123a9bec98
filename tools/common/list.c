#define _POSIX_C_SOURCE 200809L /* getline, strdup */
/* A CSV or TSV list of images as a data set (see list.h). */
#include "list.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int list_is_list(const char *path) {
    struct stat st;
    const char *dot = strrchr(path, '.');
    return dot && (!strcmp(dot, ".csv") || !strcmp(dot, ".tsv")) && stat(path, &st) == 0 &&
           S_ISREG(st.st_mode);
}

static void free_strings(char **s, int n) {
    for (int i = 0; s && i < n; i++)
        free(s[i]);
    free(s);
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The lines' files and label texts: 0, or -1 after saying why. */
static int read_lines(const char *prog, const char *path, char ***files, char ***tags, int *n) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "%s: cannot read %s: %s\n", prog, path, strerror(errno));
        return -1;
    }
    const char *dot = strrchr(path, '.');
    const char sep = dot && !strcmp(dot, ".tsv") ? '\t' : ',';
    const char *slash = strrchr(path, '/');
    const int base = slash ? (int)(slash - path) + 1 : 0; /* the list's folder, with its '/' */
    char *line = NULL;
    size_t cap = 0;
    int rc = 0, cap_n = 0;
    for (int lineno = 1; rc == 0 && getline(&line, &cap, f) >= 0; lineno++) {
        line[strcspn(line, "\r\n")] = '\0';
        const char *header = sep == ',' ? "path,label" : "path\tlabel";
        if (!line[0] || (lineno == 1 && !strcmp(line, header))) continue;
        char *p = strrchr(line, sep);
        if (!p || p == line || !p[1]) {
            fprintf(stderr, "%s: %s:%d: not PATH%sLABEL\n", prog, path, lineno,
                    sep == ',' ? "," : "<tab>");
            rc = -1;
            break;
        }
        *p = '\0';
        if (*n == cap_n) {
            cap_n = cap_n ? 2 * cap_n : 256;
            char **a = realloc(*files, sizeof *a * cap_n);
            if (a) *files = a;
            char **b = realloc(*tags, sizeof *b * cap_n);
            if (b) *tags = b;
            if (!a || !b) rc = -1;
        }
        const size_t len = (line[0] == '/' ? 0 : (size_t)base) + strlen(line) + 1;
        char *file = rc ? NULL : malloc(len);
        char *tag = rc ? NULL : strdup(p + 1);
        if (file) snprintf(file, len, "%.*s%s", line[0] == '/' ? 0 : base, path, line);
        if (!file || !tag) {
            free(file);
            free(tag);
            fprintf(stderr, "%s: out of memory\n", prog);
            rc = -1;
            break;
        }
        (*files)[*n] = file;
        (*tags)[(*n)++] = tag;
    }
    free(line);
    fclose(f);
    if (!rc && *n == 0) {
        fprintf(stderr, "%s: %s lists no images\n", prog, path);
        rc = -1;
    }
    return rc;
}

/* The sorted distinct labels of the list. */
static int own_classes(const char *prog, const char *path, char **tags, int n, char ***own) {
    char **sorted = malloc(sizeof *sorted * n);
    if (!sorted) return -1;
    memcpy(sorted, tags, sizeof *sorted * n);
    qsort(sorted, n, sizeof *sorted, by_name);
    int k = 0;
    for (int i = 0; i < n; i++)
        if (k == 0 || strcmp(sorted[k - 1], sorted[i])) sorted[k++] = sorted[i];
    for (int i = 0; i < k; i++)
        sorted[i] = strdup(sorted[i]);
    if (k < 2) {
        fprintf(stderr, "%s: %s has a single class (%s): a classifier needs two or more\n", prog,
                path, sorted[0]);
        free_strings(sorted, k);
        return -1;
    }
    *own = sorted;
    return k;
}

int list_read(const char *prog, const char *path, const char *const *names, int count,
              char ***paths, int **labels, int *n, char ***own, int *n_own) {
    char **files = NULL, **tags = NULL, **mine = NULL;
    int got = 0, k = 0, rc = read_lines(prog, path, &files, &tags, &got);
    if (!rc && !names && (k = own_classes(prog, path, tags, got, &mine)) < 0) rc = -1;
    int *lab = rc ? NULL : malloc(sizeof *lab * got);
    if (!rc && !lab) rc = -1;
    const char *const *classes = names ? names : (const char *const *)mine;
    const int n_classes = names ? count : k;
    for (int i = 0; !rc && i < got; i++) {
        lab[i] = -1;
        for (int c = 0; c < n_classes && lab[i] < 0; c++)
            if (!strcmp(classes[c], tags[i])) lab[i] = c;
        if (lab[i] < 0) {
            fprintf(stderr, "%s: %s: %s's class %s is not one of the model's %d classes\n", prog,
                    path, files[i], tags[i], count);
            rc = -1;
        }
    }
    free_strings(tags, got);
    if (rc) {
        free_strings(files, got);
        free_strings(mine, k);
        free(lab);
        return -1;
    }
    *paths = files;
    *labels = lab;
    *n = got;
    *own = mine;
    *n_own = k;
    return 0;
}
