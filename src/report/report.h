/* The report layer: a snapshot of a plan and its measured run (report.c),
 * written as HTML (html.c), a Chrome trace (trace.c) or a work directory
 * (workdir.c). It sits above the runtime: it reads plans and sessions
 * through the public API, and the model's IR for values and bodies. */
#ifndef SEAM_REPORT_INTERNAL_H
#define SEAM_REPORT_INTERNAL_H

#include <stdio.h>

#include "core/arena.h"
#include "seam_report.h"

typedef struct rep_node {
    const char *name, *op, *target, *detail;
    int32_t subgraph;        /* -1: constant */
    int32_t reason;          /* seam_reason */
    const char *ins, *outs;  /* "name\tdtype[dims]" lines */
    int32_t n_preds;         /* producers of its inputs (other nodes) */
    int32_t *pred;
    int64_t *pred_bytes;     /* bytes of the value read from pred[k]; -1 unknown */
    double ms;               /* measured; -1: not measured */
} rep_node;

typedef struct rep_subgraph {
    const char *target;
    int32_t n_nodes, n_inputs, n_outputs;
    int32_t *nodes;
    double est_us;
    int64_t boundary_bytes;
    double ms;               /* measured; -1 */
    double compile_ms;       /* measured at session creation; -1 */
    bool device;
} rep_subgraph;

struct seam_report {
    seam_arena arena;
    seam_context *ctx;       /* the plan's model's: errors go there */
    const char *model_name;
    int32_t n_nodes, n_subgraphs, supported, counted;
    rep_node *nodes;
    rep_subgraph *subgraphs;
    const char *plan_json, *notes;
    seam_plan_estimate est;
    bool measured;
    const char *session_log;
    uint8_t *partitioned;    /* the applied model's ONNX bytes (malloc'd), or NULL */
    size_t partitioned_len;
    bool exposed;            /* boundary values are graph outputs */
};

/* "subgraph" colours per target name, stable across pages. */
const char *report_color(const char *target);

/* Writes through a temporary file next to path, renamed at the end. */
typedef struct rep_file {
    FILE *f;
    char *tmp;
    const char *path;
} rep_file;
seam_status rep_open(seam_context *ctx, rep_file *rf, const char *path);
/* Closes and renames (ok) or removes the temporary file. */
seam_status rep_close(seam_context *ctx, rep_file *rf, bool ok);
/* Writes s with <, >, &, " and ' escaped for HTML text and attributes. */
void rep_html_escape(FILE *f, const char *s);
/* Writes bytes whole into path via a temporary file. */
seam_status rep_write_bytes(seam_context *ctx, const char *path, const void *data, size_t n);

#endif
