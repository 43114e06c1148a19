/*
 * Symbolic dims carried through inference as expressions (symdim.c), and
 * the shape arithmetic they make computable before a run (DimExpr).
 *
 * For a model whose inputs have named symbolic dims (`batch`, `seq`),
 * inference records each dim it can express in them as that expression
 * (ir_dim.sym: `2*seq`, `batch*seq`, `(H-1)//2+1`), and the content of
 * small integer values (Shape, Gather, Concat, arithmetic, ...) as
 * expressions element by element. A value whose elements are all constants
 * becomes a known constant (folding removes its nodes); sym_materialize
 * turns each node whose output is fully expressed, and that a node outside
 * the shape arithmetic reads, into one `ai.seam` `DimExpr` node computed
 * from the inputs' shapes alone, and removes the shape arithmetic nobody
 * reads any more. The shape arithmetic then reads no device subgraph's
 * output, and so never cuts one.
 */
#ifndef SEAM_OPS_SYMDIM_H
#define SEAM_OPS_SYMDIM_H

#include "ops/infer.h"

typedef struct sym_state sym_state;

/* The state for one inference of the top graph g, kept on the model; NULL
 * when no input of g has a named symbolic dim (or out of memory). */
sym_state *sym_begin(struct seam_model *m, ir_graph *g);
/* After node ic->n's inference: its outputs' elements and dims. */
void sym_node(sym_state *s, seam_infer *ic);

/* DimExpr's inference (the ai.seam op): its `to` and `shape`, and its
 * elements' expressions for the pass. */
void infer_dimexpr(seam_infer *ic);

/* Rewrites the shape arithmetic of m's top graph as DimExpr nodes (above);
 * *n_out (may be NULL) gets the nodes it replaced or removed. Links and
 * infers the graph again when it changed anything. */
seam_status sym_materialize(struct seam_model *m, int32_t *n_out);

#endif
