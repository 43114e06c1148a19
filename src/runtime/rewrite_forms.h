/*
 * The rewrites that heal partitions (seam_model_rewrite, rewrite.c) share
 * these: rewrite.c holds the driver, the first kinds and the helpers that
 * build nodes; rewrite_forms.c holds the activations and
 * GroupNormalization. Each kind is a form check, which changes nothing,
 * and a rewrite of node i of g in place: the new nodes write the node's
 * own output values, and dead[i] is set for the driver to remove it.
 * A rewrite returns false when the node is not of its form or when out of
 * memory (a half-built rewrite happens only then, on a model the driver
 * then discards or fails).
 */
#ifndef SEAM_RUNTIME_REWRITE_FORMS_H
#define SEAM_RUNTIME_REWRITE_FORMS_H

#include <stdbool.h>
#include <stdint.h>

#include "ir/ir.h"

/* ---- helpers (rewrite.c) ---- */

/* Whether n is op of the standard domain. */
bool rw_is_std(const ir_node *n, const char *op);
/* The constant value v holds, or NULL (also for v < 0). */
const ir_tensor *rw_konst(const ir_graph *g, int32_t v);
/* op(a, b) into out (or a new value when out < 0); the value, or -1 when
 * out of memory or a or b is -1. */
int32_t rw_binary(seam_model *m, ir_graph *g, const char *base, const char *op, int32_t a, int32_t b, int32_t out);
/* ReduceMean of x over axes first .. rank - 1, kept (axes as an input
 * from opset 18, an attribute before); -1 as rw_binary. */
int32_t rw_reduce_mean(seam_model *m, ir_graph *g, const char *base, int32_t x, int32_t first, int32_t rank);

/* ---- the forms (rewrite_forms.c) ---- */

/* GroupNormalization of float32 X of known rank (2 to 8) and channels,
 * constant scale and bias: one per group (opset 18 to 20) or per channel
 * (21 on), stash_type float32. */
bool rw_groupnorm_form(const ir_graph *g, const ir_node *n);
bool rw_rewrite_groupnorm(seam_model *m, ir_graph *g, int32_t i, bool *dead);
/* Gelu (approximate "none" or "tanh") of float32, at an opset seam's
 * registry knows it. */
bool rw_gelu_form(const ir_graph *g, const ir_node *n);
bool rw_rewrite_gelu(seam_model *m, ir_graph *g, int32_t i, bool *dead);
/* Mish of float32, at an opset seam's registry knows it. */
bool rw_mish_form(const ir_graph *g, const ir_node *n);
bool rw_rewrite_mish(seam_model *m, ir_graph *g, int32_t i, bool *dead);
/* HardSigmoid of float32, opset 6 on (Clip's bounds are attributes to
 * opset 10, inputs from 11). */
bool rw_hardsigmoid_form(const ir_graph *g, const ir_node *n);
bool rw_rewrite_hardsigmoid(seam_model *m, ir_graph *g, int32_t i, bool *dead);

#endif
