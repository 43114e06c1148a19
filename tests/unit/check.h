/* A minimal test harness: CHECK records a failure and goes on, so one run
 * reports every broken expectation. */
#ifndef SEAM_CHECK_H
#define SEAM_CHECK_H

#include <stdio.h>

static int check_failures;

#define CHECK(cond)                                                               \
    do {                                                                          \
        if (!(cond)) {                                                            \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            check_failures++;                                                     \
        }                                                                         \
    } while (0)

#define CHECK_CONTAINS(hay, needle)                                                        \
    do {                                                                                   \
        if (!strstr((hay), (needle))) {                                                    \
            fprintf(stderr, "%s:%d: '%s' does not contain '%s'\n", __FILE__, __LINE__, (hay), (needle)); \
            check_failures++;                                                              \
        }                                                                                  \
    } while (0)

#define CHECK_DONE()                                                   \
    do {                                                               \
        if (check_failures) fprintf(stderr, "%d failure(s)\n", check_failures); \
        else printf("all checks passed\n");                            \
        return check_failures ? 1 : 0;                                 \
    } while (0)

#endif
