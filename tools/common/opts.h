/* opts: the one command-line parser of the tools.  Each option is declared
 * once, in a table, with its type, range, default and help text; --help and
 * the man page (the hidden --man, run by the build) are generated from the
 * same table, so the three cannot disagree.
 *
 * Exit codes of every tool: 0 for success and for --help, --version and
 * --man; 1 for a failure at run time; 2 for a usage error. */
#ifndef RAM_TOOLS_OPTS_H
#define RAM_TOOLS_OPTS_H

#include <stddef.h>
#include <stdint.h>

enum { TOOL_OK = 0, TOOL_FAILED = 1, TOOL_USAGE = 2 };

typedef enum opt_type {
    OPT_FLAG,   /* int *: set to 1 */
    OPT_INT,    /* int *, in [lo, hi] */
    OPT_LONG,   /* uint64_t *, in [lo, hi] */
    OPT_FLOAT,  /* float *, finite, in [lo, hi] (or [lo, hi) with OPT_OPEN_HI) */
    OPT_DOUBLE, /* double *, as OPT_FLOAT */
    OPT_STRING, /* const char **: the argument itself */
    OPT_CHOICE  /* int *: values[k] (or k) for the k-th of the '|'-separated choices */
} opt_type;

enum {
    OPT_REQUIRED = 1, /* a usage error when missing */
    OPT_OPEN_HI = 2,  /* the range excludes hi */
    OPT_GROUP = 4     /* a member of the tool's group (ram-train: the architecture) */
};

typedef struct tool_opt {
    const char *name; /* "--batch" */
    opt_type type;
    void *dst;
    double lo, hi;       /* numbers: the range */
    const char *choices; /* OPT_CHOICE: "rnn|lstm" */
    const int *values;   /* OPT_CHOICE: the value of each choice; NULL = its index */
    const char *meta;    /* the argument's name in the help: "N", "FILE" */
    const char *def;     /* the default as shown; NULL = dst's value before parsing */
    const char *help;
    const char *section; /* starts a section of the help here */
    int flags;
    int seen; /* set by opts_parse: the argv index it was last given at, else 0 */
} tool_opt;

typedef struct tool_info {
    const char *name;        /* "ram-train" */
    const char *summary;     /* one line, for the man page's NAME */
    const char *synopsis;    /* after the name: "--model FILE --data DIR [options]" */
    const char *description; /* paragraphs separated by blank lines */
} tool_info;

/* Parse argv into the table's destinations.  Returns TOOL_OK to go on,
 * TOOL_USAGE after printing "name: --opt value: what is wrong" for a usage
 * error, or -1 after --help, --version or --man (the tool then exits 0). */
int opts_parse(const tool_info *tool, tool_opt *opts, size_t n, int argc, char **argv);

/* For tools that take files after their options (ram-classify FILE...):
 * moves the arguments that are neither options nor their values (and all
 * after "--") from argv to the end, in order, and drops the "--"; returns
 * how many are left in front for opts_parse (*files: where the files start). */
int opts_split_files(const tool_opt *opts, size_t n, int argc, char **argv, int *files);

/* The exit code for opts_parse's result (not TOOL_OK). */
int opts_exit(int parsed);

/* The option of the table named `name` (NULL if none): e.g. to ask whether
 * it was given (->seen). */
const tool_opt *opts_find(const tool_opt *opts, size_t n, const char *name);

/* The usage error of a combination of options: "name: message" on stderr;
 * returns TOOL_USAGE. */
int opts_usage_error(const tool_info *tool, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
