/*
 * Helpers for writing an op's type/shape inference. An infer function reads
 * its node's input types, attributes and (when known) constant inputs, and
 * sets its outputs' types. It never fails: when something cannot be known
 * (a data-dependent shape), it leaves that part unknown: dtype
 * SEAM_DTYPE_UNDEFINED, rank -1, or dims with v = -1.
 *
 * Declared types win: when the file declared a dimension, set_out_* keeps
 * the declared one, and only fills what was unknown.
 */
#ifndef SEAM_INFER_H
#define SEAM_INFER_H

#include "ops/attr.h"
#include "ops/ops.h"

/* What op_validate (validate.c) checks for one (domain, op type), found
 * once per op type: inference validates a million-node graph with one
 * lookup per distinct op. */
typedef struct op_checks {
    const void *arity;      /* the op's input/output counts, or NULL */
    int32_t axis_rule;      /* its `axis` rule, or -1 */
    int32_t bound_rule;     /* its first bounded integer attribute (validate.c's attr_bounds), or -1 */
    bool window, perm, reshape, leading_optional, scan;
    bool scales, pad, tfidf; /* Upsample/Resize scales, Pad's pads input, TfIdfVectorizer's ngram_counts */
    bool constant;          /* Constant: one value attribute */
} op_checks;
void op_checks_find(const char *domain, const char *op_type, op_checks *c);
/* op_validate with the checks of n's op found beforehand. */
bool op_validate_with(const ir_graph *g, const ir_node *n, const op_checks *c, char *why, size_t why_size);

struct seam_infer {
    struct seam_model *model;
    ir_graph *g;
    ir_node *n;
    int32_t node;        /* index of n in g */
    seam_arena *arena;   /* the model's arena, for anything kept */
    bool *failed;        /* set when a node (here or in a body) fails op_validate */
    struct infer_dims_cache *dims_cache; /* shapes made so far, shared (may be NULL) */
};

/* ---- inputs ---- */
int32_t infer_n_inputs(const seam_infer *ic);   /* count, including absent ones */
bool infer_has_input(const seam_infer *ic, int32_t i);
/* The input's type, or NULL when the input is absent. */
const ir_type *infer_in(const seam_infer *ic, int32_t i);
int32_t infer_in_dtype(const seam_infer *ic, int32_t i);   /* UNDEFINED if unknown */
int32_t infer_in_rank(const seam_infer *ic, int32_t i);    /* -1 if unknown */
/* The input's known content, or NULL. */
const ir_tensor *infer_in_const(const seam_infer *ic, int32_t i);
/* Reads a constant int32/int64 input of at most max elements into out.
 * Returns the element count, or -1 if not constant, not integer or too big. */
int32_t infer_in_ints(const seam_infer *ic, int32_t i, int64_t *out, int32_t max);

/* Attributes: node_attr_* (ops/attr.h) on ic->n. */

/* ---- outputs ---- */
int32_t infer_n_outputs(const seam_infer *ic);
bool infer_has_output(const seam_infer *ic, int32_t i);
/* Sets output i to a tensor of dtype and shape (rank -1: unknown rank).
 * dims is copied. Absent outputs are ignored. */
void infer_set_tensor(seam_infer *ic, int32_t i, int32_t dtype, int32_t rank, const ir_dim *dims);
/* Same, from plain int64 dims where a negative entry means unknown. */
void infer_set_tensor_i64(seam_infer *ic, int32_t i, int32_t dtype, int32_t rank, const int64_t *dims);
/* Only the dtype; the shape stays as it was. */
void infer_set_dtype(seam_infer *ic, int32_t i, int32_t dtype);
/* Output i gets exactly input j's type (dtype and shape). */
void infer_copy_type(seam_infer *ic, int32_t out, int32_t in);
/* Sets output i to a whole non-tensor type (sequence, optional, ...);
 * t is deep-copied. */
void infer_set_type(seam_infer *ic, int32_t i, const ir_type *t);
/* Records that output i's content is known (a small constant the op
 * computed from constant inputs), so later Reshape/Slice/... can use it.
 * Also sets the output's type from it. data is copied. */
void infer_set_const(seam_infer *ic, int32_t i, int32_t dtype, int32_t rank,
                     const int64_t *dims, const void *data);

/* ---- shapes ---- */
/* numpy broadcasting of n input shapes into out (at most INFER_MAX_RANK
 * dims). Returns the result rank, or -1 if any rank is unknown. Per axis:
 * 1 and d give d; equal known dims give that dim; equal symbols keep the
 * symbol; anything else involving an unknown dim gives unknown. */
int32_t infer_broadcast(const ir_type *const *ts, int32_t n, ir_dim *out);
/* Same-dtype, same-shape output 0 from input 0 (activations, unary math). */
void infer_same_as_input(seam_infer *ic);

/* Infers a body graph (If/Loop/Scan), after the caller has set the body's
 * input types. */
void infer_subgraph(seam_infer *ic, ir_graph *body);

#define INFER_MAX_RANK 16

#endif
