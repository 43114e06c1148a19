/*
 * What the ai.seam Subgraph runner (subgraph.c) tells the session about its
 * device subgraphs: how often each compiled, found its shape compiled, or
 * dropped one from its cache. session.c sums them for seam_session_stats.
 */
#ifndef SEAM_RUNTIME_SUBGRAPH_H
#define SEAM_RUNTIME_SUBGRAPH_H

#include "backends/kernel.h"

typedef struct subgraph_counts {
    int64_t compiles;      /* at session creation and at runs */
    int64_t run_compiles;  /* of which at a run (a new shape signature) */
    int64_t cache_hits;    /* runs whose shape signature was compiled already */
    int64_t evictions;     /* compiled shapes dropped from a full cache */
    int64_t cpu_shapes;    /* shapes the backend did not compile: they run on the CPU */
    double compile_ms;     /* time in those compiles */
} subgraph_counts;

struct seam_exec;

/* Adds the counts of node's kernel in e to *sum when it is a Subgraph
 * node's; false for any other node. */
bool subgraph_add_counts(const struct seam_exec *e, int32_t node, subgraph_counts *sum);
/* The largest number of shape signatures node's Subgraph keeps compiled
 * (n >= 1); nothing for any other node. */
void subgraph_set_cache_size(struct seam_exec *e, int32_t node, int32_t n);

/* The shape signature of inputs xs (n_in of them) into *sig (malloc'd,
 * *len entries): per input its dtype, rank and every dim, and the values
 * of a parameter input (param[i]; up to 64 elements). Two runs share a
 * compiled variant exactly when their signatures are equal, so every
 * position must count (tests/unit/test_runtime.c changes each in turn).
 * False when out of memory. */
bool subgraph_signature(const seam_tensor *const *xs, int32_t n_in, const bool *param, int64_t **sig, int32_t *len);

/* The plug-in targets a saved model's Subgraph nodes name (not cpu, dnnl
 * or a rules file's), found with seam_backend_find and added to
 * targets[0 .. n) when not there yet, up to cap; returns the new count.
 * One that cannot be found is left out (the session names it). */
int32_t subgraph_find_targets(seam_context *ctx, const seam_model *m, const seam_backend **targets, int32_t n,
                              int32_t cap);

#endif
