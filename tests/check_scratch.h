/* A scratch directory for the suites that write files. */
#ifndef RAM_TESTS_CHECK_SCRATCH_H
#define RAM_TESTS_CHECK_SCRATCH_H

#include <dirent.h>
#include <stdio.h>
#include <unistd.h>

/* Remove the scratch directory and whatever the tests left in it. */
static void remove_dir(const char *d) {
    DIR *h = opendir(d);
    struct dirent *e;
    char p[512];
    while (h && (e = readdir(h)))
        if (e->d_name[0] != '.') {
            snprintf(p, sizeof p, "%s/%s", d, e->d_name);
            unlink(p);
        }
    if (h) closedir(h);
    rmdir(d);
}

#endif
