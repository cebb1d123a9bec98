/* The tools' option parser, --help and man page (see opts.h). */
#include "opts.h"

#include <ram/ram.h>

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- values ---------------------------------------------------------------- */

/* The k-th '|'-separated word of `list` into buf; 0 when there is none. */
static int choice_at(const char *list, int k, char *buf, size_t len) {
    for (; k > 0 && list; k--) {
        list = strchr(list, '|');
        if (list) list++;
    }
    if (!list) return 0;
    size_t n = strcspn(list, "|");
    snprintf(buf, len, "%.*s", (int)n, list);
    return 1;
}

static int choice_value(const tool_opt *o, int k) {
    return o->values ? o->values[k] : k;
}

/* Integers as the range's bounds print them: whole numbers without a point. */
static void fmt_number(double v, char *buf, size_t len) {
    if (v == HUGE_VAL || v >= 1.8e19)
        snprintf(buf, len, "%s", v == HUGE_VAL ? "inf" : "18446744073709551615");
    else
        snprintf(buf, len, "%.10g", v);
}

/* The default, as --help shows it: the table's text or dst's value. */
static void fmt_default(const tool_opt *o, char *buf, size_t len) {
    buf[0] = '\0';
    if (o->def) {
        snprintf(buf, len, "%s", o->def);
        return;
    }
    switch (o->type) {
    case OPT_FLAG:
        break;
    case OPT_INT:
        snprintf(buf, len, "%d", *(const int *)o->dst);
        break;
    case OPT_LONG:
        snprintf(buf, len, "%llu", (unsigned long long)*(const uint64_t *)o->dst);
        break;
    case OPT_FLOAT:
        snprintf(buf, len, "%g", (double)*(const float *)o->dst);
        break;
    case OPT_DOUBLE:
        snprintf(buf, len, "%g", *(const double *)o->dst);
        break;
    case OPT_STRING:
        if (*(const char *const *)o->dst) snprintf(buf, len, "%s", *(const char *const *)o->dst);
        break;
    case OPT_CHOICE: {
        char word[64];
        for (int k = 0; choice_at(o->choices, k, word, sizeof word); k++)
            if (choice_value(o, k) == *(const int *)o->dst) {
                snprintf(buf, len, "%s", word);
                break;
            }
        break;
    }
    }
}

static int bad_range(const tool_info *t, const tool_opt *o, const char *v) {
    char lo[32], hi[32];
    fmt_number(o->lo, lo, sizeof lo);
    fmt_number(o->hi, hi, sizeof hi);
    fprintf(stderr, "%s: %s %s: must be in [%s, %s%c\n", t->name, o->name, v, lo, hi,
            o->flags & OPT_OPEN_HI ? ')' : ']');
    return TOOL_USAGE;
}

static int set_choice(const tool_info *t, tool_opt *o, const char *v) {
    char word[64];
    for (int k = 0; choice_at(o->choices, k, word, sizeof word); k++)
        if (!strcmp(word, v)) {
            *(int *)o->dst = choice_value(o, k);
            return TOOL_OK;
        }
    int count = 0;
    while (choice_at(o->choices, count, word, sizeof word))
        count++;
    fprintf(stderr, "%s: %s %s: must be", t->name, o->name, v);
    for (int k = 0; choice_at(o->choices, k, word, sizeof word); k++)
        fprintf(stderr, "%s %s", k == 0 ? "" : k + 1 == count ? " or" : ",", word);
    fputc('\n', stderr);
    return TOOL_USAGE;
}

/* Store argument v of option o. */
static int set_value(const tool_info *t, tool_opt *o, const char *v) {
    char *end;
    errno = 0;
    if (o->type == OPT_STRING) {
        *(const char **)o->dst = v;
        return TOOL_OK;
    }
    if (o->type == OPT_CHOICE) return set_choice(t, o, v);
    if (o->type == OPT_INT || o->type == OPT_LONG) {
        /* strtoull would take "-1" as a huge number: digits only. */
        unsigned long long x = *v >= '0' && *v <= '9' ? strtoull(v, &end, 10) : 0;
        if (*v < '0' || *v > '9' || errno || *end || (double)x < o->lo || (double)x > o->hi)
            return bad_range(t, o, v);
        if (o->type == OPT_INT)
            *(int *)o->dst = (int)x;
        else
            *(uint64_t *)o->dst = (uint64_t)x;
        return TOOL_OK;
    }
    double x = strtod(v, &end);
    const int open = o->flags & OPT_OPEN_HI;
    if (end == v || *end || !isfinite(x) || !(x >= o->lo) || (open ? !(x < o->hi) : !(x <= o->hi)))
        return bad_range(t, o, v);
    if (o->type == OPT_FLOAT)
        *(float *)o->dst = (float)x;
    else
        *(double *)o->dst = x;
    return TOOL_OK;
}

/* ---- --help and --man -------------------------------------------------------- */

/* Words of `text` from column `col` on, wrapped at 79 columns with `indent`. */
static void wrap(FILE *f, const char *text, int col, int indent) {
    const char *p = text;
    while (*p) {
        size_t n = strcspn(p, " ");
        if (col > indent && col + 1 + (int)n > 79) {
            fprintf(f, "\n%*s", indent, "");
            col = indent;
        } else if (col > indent) {
            fputc(' ', f);
            col++;
        } else if (col < indent) {
            fprintf(f, "%*s", indent - col, "");
            col = indent;
        }
        fprintf(f, "%.*s", (int)n, p);
        col += (int)n;
        p += n;
        while (*p == ' ')
            p++;
    }
    fputc('\n', f);
}

/* The help, the default and, where it says something, the range. */
static void option_text(const tool_opt *o, char *buf, size_t len) {
    char def[256], range[96] = "", lo[32], hi[32];
    fmt_default(o, def, sizeof def);
    const int number = o->type >= OPT_INT && o->type <= OPT_DOUBLE;
    if (number && o->lo > -1e30 && o->hi < 1e9) { /* not merely "a count" or "any number" */
        fmt_number(o->lo, lo, sizeof lo);
        fmt_number(o->hi, hi, sizeof hi);
        snprintf(range, sizeof range, "%sin [%s, %s%c", def[0] ? "; " : "", lo, hi,
                 o->flags & OPT_OPEN_HI ? ')' : ']');
    }
    snprintf(buf, len, "%s%s%s%s%s", o->help, def[0] || range[0] ? " (" : "",
             def[0] ? "default: " : "", def, range);
    if (def[0] || range[0]) snprintf(buf + strlen(buf), len - strlen(buf), ")");
}

static void print_help(const tool_info *t, const tool_opt *opts, size_t n) {
    printf("usage: %s %s\n\n", t->name, t->synopsis);
    for (const char *p = t->description; *p;) {
        size_t len = strcspn(p, "\n");
        char para[2048];
        snprintf(para, sizeof para, "%.*s", (int)len, p);
        if (para[0])
            wrap(stdout, para, 0, 0);
        else
            putchar('\n');
        p += len;
        if (*p) p++;
    }
    for (size_t i = 0; i < n; i++) {
        const tool_opt *o = &opts[i];
        char head[96], text[1024];
        if (o->section || i == 0) printf("\n%s:\n", o->section ? o->section : "options");
        const char *meta = o->type == OPT_CHOICE ? o->choices : o->meta;
        snprintf(head, sizeof head, "  %s%s%s", o->name, meta ? " " : "", meta ? meta : "");
        option_text(o, text, sizeof text);
        printf("%s", head);
        wrap(stdout, text, (int)strlen(head) + 1 > 24 ? 80 : (int)strlen(head), 24);
    }
    printf("\n  -h, --help            show this help\n"
           "  --version             show the version\n"
           "\nExit status: 0 on success, 1 when the run fails, 2 for a usage error.\n");
}

/* Text for roff: backslashes and hyphens escaped, no line starting with a
 * control character. */
static void roff(const char *s) {
    if (*s == '.' || *s == '\'') fputs("\\&", stdout);
    for (; *s; s++) {
        if (*s == '\\')
            fputs("\\e", stdout);
        else if (*s == '-')
            fputs("\\-", stdout);
        else if (*s == '\n' && (s[1] == '.' || s[1] == '\''))
            fputs("\n\\&", stdout);
        else
            putchar(*s);
    }
}

static void print_man(const tool_info *t, const tool_opt *opts, size_t n) {
    char upper[64];
    size_t k = 0;
    for (; t->name[k] && k + 1 < sizeof upper; k++)
        upper[k] = (char)(t->name[k] >= 'a' && t->name[k] <= 'z' ? t->name[k] - 32 : t->name[k]);
    upper[k] = '\0';
    printf(".TH %s 1 \"\" \"libram %s\" \"User Commands\"\n.SH NAME\n", upper,
           ram_version_string());
    roff(t->name);
    printf(" \\- ");
    roff(t->summary);
    printf("\n.SH SYNOPSIS\n.B ");
    roff(t->name);
    printf("\n");
    roff(t->synopsis);
    printf("\n.SH DESCRIPTION\n");
    for (const char *p = t->description; *p;) {
        size_t len = strcspn(p, "\n");
        char para[2048];
        snprintf(para, sizeof para, "%.*s", (int)len, p);
        if (para[0])
            roff(para);
        else
            printf(".PP");
        putchar('\n');
        p += len;
        if (*p) p++;
    }
    printf(".SH OPTIONS\n");
    for (size_t i = 0; i < n; i++) {
        const tool_opt *o = &opts[i];
        char text[1024];
        if (o->section) {
            printf(".SS ");
            roff(o->section);
            putchar('\n');
        }
        printf(".TP\n.B ");
        roff(o->name);
        if (o->meta || o->type == OPT_CHOICE) {
            printf(" \\fI");
            roff(o->type == OPT_CHOICE ? o->choices : o->meta);
            printf("\\fR");
        }
        putchar('\n');
        option_text(o, text, sizeof text);
        roff(text);
        putchar('\n');
    }
    printf(".TP\n.B \\-h, \\-\\-help\nshow the help\n.TP\n.B \\-\\-version\nshow the version\n"
           ".SH EXIT STATUS\n0 on success, 1 when the run fails, 2 for a usage error.\n");
}

/* ---- parsing ------------------------------------------------------------------ */

static tool_opt *find(tool_opt *opts, size_t n, const char *name, size_t len) {
    for (size_t i = 0; i < n; i++)
        if (strlen(opts[i].name) == len && !strncmp(opts[i].name, name, len)) return &opts[i];
    return NULL;
}

const tool_opt *opts_find(const tool_opt *opts, size_t n, const char *name) {
    return find((tool_opt *)opts, n, name, strlen(name));
}

int opts_usage_error(const tool_info *tool, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "%s: ", tool->name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return TOOL_USAGE;
}

int opts_split_files(const tool_opt *opts, size_t n, int argc, char **argv, int *files) {
    char **file = malloc(sizeof *file * (size_t)(argc > 0 ? argc : 1));
    int kept = argc > 0 ? 1 : 0, count = 0, i = 1;
    if (!file) return argc; /* then opts_parse calls each file an unknown option */
    for (; i < argc && strcmp(argv[i], "--"); i++) {
        const char *a = argv[i];
        if (a[0] != '-' || !a[1]) {
            file[count++] = argv[i];
            continue;
        }
        const tool_opt *o = strchr(a, '=') ? NULL : opts_find(opts, n, a);
        argv[kept++] = argv[i];
        if (o && o->type != OPT_FLAG && i + 1 < argc) argv[kept++] = argv[++i];
    }
    for (i++; i < argc; i++) /* after "--": files only */
        file[count++] = argv[i];
    memcpy(argv + kept, file, sizeof *file * (size_t)count);
    free(file);
    *files = kept;
    return kept;
}

int opts_exit(int parsed) {
    return parsed < 0 ? TOOL_OK : parsed;
}

static int parse_one(const tool_info *t, tool_opt *opts, size_t n, int argc, char **argv, int *i) {
    const char *a = argv[*i], *eq = strchr(a, '=');
    tool_opt *o = find(opts, n, a, eq && a[0] == '-' ? (size_t)(eq - a) : strlen(a));
    if (!o) return opts_usage_error(t, "unknown option '%s' (see --help)", a);
    o->seen = *i;
    if (o->type == OPT_FLAG) {
        if (eq) return opts_usage_error(t, "%s takes no value", o->name);
        *(int *)o->dst = 1;
        return TOOL_OK;
    }
    const char *v = eq ? eq + 1 : *i + 1 < argc ? argv[++*i] : NULL;
    if (!v) return opts_usage_error(t, "%s needs a value (%s)", o->name, o->meta ? o->meta : "");
    return set_value(t, o, v);
}

int opts_parse(const tool_info *t, tool_opt *opts, size_t n, int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            print_help(t, opts, n);
            return -1;
        }
        if (!strcmp(a, "--version")) {
            printf("%s (libram) %s\n", t->name, ram_version_string());
            return -1;
        }
        if (!strcmp(a, "--man")) {
            print_man(t, opts, n);
            return -1;
        }
    }
    for (int i = 1; i < argc; i++) {
        int r = parse_one(t, opts, n, argc, argv, &i);
        if (r) return r;
    }
    for (size_t i = 0; i < n; i++)
        if ((opts[i].flags & OPT_REQUIRED) && !opts[i].seen)
            return opts_usage_error(t, "%s is required (see --help)", opts[i].name);
    return TOOL_OK;
}
