/* backend-check --models DIR: a folder's node cases as ONNX node tests
 * (backend_cases.c says how they are made). */
#ifndef SEAM_CLI_BACKEND_CASES_H
#define SEAM_CLI_BACKEND_CASES_H

#include "seam.h"

#define BACKEND_CASE_MAX_IO 128 /* (as backend_check.c reads: a Concat may have dozens of inputs) */

typedef struct backend_cases {
    char **names;          /* the cases written: folders under out, n of them */
    int n;
    int models, models_failed; /* models read; models that did not load, fit their inputs or fold */
    int nodes;             /* nodes looked at (not Constants, no body) */
    int dups, no_shape, cpu_failed, over; /* the same as a case before; an input of unknown shape;
                                             the CPU kernels could not run it; past --max-cases */
    char first_failure[640], first_cpu_failure[640], err[600];
} backend_cases;

/* Writes the distinct node cases of the models in `models` (at most
 * max_cases) as node-test folders under out, which exists. 0, or -1 with
 * bc->err (an unreadable folder, no model in it, out of memory); a model
 * that does not load is counted, not an error. */
int backend_cases_write(seam_context *ctx, const char *models, const char *out, int max_cases, backend_cases *bc);
/* Removes the case folders names (n of them) under out. */
void backend_cases_remove(const char *out, char **names, int n);
void backend_cases_free(backend_cases *bc);

#endif
