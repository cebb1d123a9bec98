/* A downstream C program: the installed header and library must agree. */
#include <ram/ram.h>

#include <stdio.h>
#include <string.h>

int main(void) {
    if (ram_version_number() != RAM_VERSION_NUMBER ||
        strcmp(ram_version_string(), RAM_VERSION_STRING) != 0) {
        fprintf(stderr, "header %s but library %s\n", RAM_VERSION_STRING, ram_version_string());
        return 1;
    }
    printf("libram %s\n", ram_version_string());
    return 0;
}
