/* list: a CSV or TSV file of images and their classes ("path,label" lines)
 * as a data set, read for folder.h. */
#ifndef RAM_TOOLS_LIST_H
#define RAM_TOOLS_LIST_H

/* Whether `path` is a list: a regular file named *.csv or *.tsv. */
int list_is_list(const char *path);

/* The list's images: *paths[*n] (relative ones from the list's folder) and
 * their *labels, by `names` (a model's classes: a label must be one of
 * them) or, when names is NULL, by the sorted labels of the list itself
 * (*own[*n_own], at least two).  Lines: PATH,LABEL (PATH<TAB>LABEL for .tsv),
 * split at the last separator so that a path may hold one; no quoting; empty
 * lines and a first line "path,label" are passed over.  0, or -1 with
 * "prog: list:line: ..." on stderr and nothing to free. */
int list_read(const char *prog, const char *path, const char *const *names, int count,
              char ***paths, int **labels, int *n, char ***own, int *n_own);

#endif
