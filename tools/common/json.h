/* json: what the tools' --json output needs. */
#ifndef RAM_TOOLS_JSON_H
#define RAM_TOOLS_JSON_H

#include <stdio.h>

/* `s` as a JSON string literal. */
void json_string(FILE *f, const char *s);

#endif
