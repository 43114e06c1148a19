/*
 * The op registry: one entry per op version, holding its type/shape
 * inference. Entries live in one table per op family (elementwise.c,
 * linalg.c, ...) and registry.c joins the tables. The registry knows what
 * an op means, not how any backend runs it: the CPU kernels register
 * themselves with the CPU backend (backends/cpu/kernels.h).
 *
 * Adding an op is a local change: write its infer function next to its
 * family's others and add one line to that family's table, e.g.
 *
 *     static void infer_relu(seam_infer *ic) { infer_same_as_input(ic); }
 *     const seam_op_def seam_ops_activation[] = {
 *         {"", "Relu", 1, infer_relu},
 *         ...
 *     };
 */
#ifndef SEAM_OPS_H
#define SEAM_OPS_H

#include "ir/ir.h"

typedef struct seam_infer seam_infer;
typedef void (*seam_infer_fn)(seam_infer *ic);

struct seam_op_def {
    const char *domain;   /* "" for ai.onnx */
    const char *op_type;
    int32_t since;        /* first opset version this entry describes */
    seam_infer_fn infer;  /* NULL: outputs stay unknown */
};

/* The op families: one file per family in src/ops/ (its inference table)
 * and one in src/backends/cpu/ (its kernel table). X(fam) for each. */
#define SEAM_OP_FAMILIES(X)                                                                                  \
    X(sequence) X(elementwise) X(activation) X(linalg) X(pool) X(norm) X(reduce) X(tensor) X(index) X(rnn) \
    X(control) X(quant) X(cast) X(algebra) X(signal) X(spatial) X(text) X(training)

/* Each family file defines one table and its length. */
#define SEAM_OP_FAMILY(fam)                    \
    extern const seam_op_def seam_ops_##fam[]; \
    extern const size_t seam_ops_##fam##_count;
SEAM_OP_FAMILIES(SEAM_OP_FAMILY)

/* The entry for (domain, op) with the highest `since` <= opset; NULL if
 * seam does not know the op (at that opset). An unknown opset (-1) takes
 * the newest entry. Domain "ai.onnx" is the same as "". */
const seam_op_def *seam_op_find(const char *domain, const char *op_type, int64_t opset);

/* The version of `domain` the model imports ("" and "ai.onnx" are one
 * domain); -1 if it does not import it. */
int64_t seam_op_opset(const struct seam_model *m, const char *domain);

/* True for ONNX's default domain, written "" or "ai.onnx". */
bool seam_op_default_domain(const char *domain);

/* Orders (domain, op type) pairs as the registries sort them; "ai.onnx"
 * and "" are one domain. */
int seam_op_key_cmp(const char *domain_a, const char *op_a, const char *domain_b, const char *op_b);

/* Checks node n of g before its inference and before any backend sees it:
 * input and output counts (ONNX's schemas), axis attributes inside the
 * input's rank, window attributes (kernel, strides, dilations, pads) that
 * fit the input, perm a permutation. Shapes not known yet are not checked.
 * False with the reason in why (the CPU kernels' words). Inference
 * (ir_infer_model) runs it on every node, so that loading a model, fixing
 * an input's shape and applying a plan all refuse a node it refuses. */
bool op_validate(const ir_graph *g, const ir_node *n, char *why, size_t why_size);

/* ONNX Runtime's quantized contrib ops (com.microsoft QLinearAdd, QGemm,
 * ...) of m's top graph replaced by the standard nodes they are defined by
 * (contrib_quant.c), those whose types are known; the graph linked again.
 * *changed says whether any was; ir_infer_model calls it after each round
 * of inference. An error names the contrib node. */
seam_status op_lower_contrib_quant(struct seam_model *m, bool *changed);

/* ---- building new nodes (build.c) ---- */

/* base+suffix made unique among g's value names, in m's arena (NULL when
 * out of memory). */
const char *ir_fresh_name(struct seam_model *m, const ir_graph *g, const char *base, const char *suffix);
/* A new value of unknown type named after base+suffix; -1 when out of
 * memory. */
int32_t ir_new_value(struct seam_model *m, ir_graph *g, const char *base, const char *suffix);
/* A new initializer of dtype and dims holding a copy of data, added to
 * g's initializers; -1 when out of memory. */
int32_t ir_new_init(struct seam_model *m, ir_graph *g, const char *base, const char *suffix, int32_t dtype, int32_t rank,
                    const int64_t *dims, const void *data);
/* A new node of the standard domain (the model's opset) named after name:
 * op(ins) -> outs with a copy of attrs; -1 when out of memory, when a value
 * is missing (< -1; -1 is an absent optional input) or the op is unknown. */
int32_t ir_new_node(struct seam_model *m, ir_graph *g, const char *name, const char *op, const int32_t *ins,
                    int32_t n_ins, const int32_t *outs, int32_t n_outs, const ir_attr *attrs, int32_t n_attrs);

#endif
