/* Op family: control flow: If, Loop, Scan, SequenceMap. Their bodies are nested IR
 * graphs; inference sets each body's input types from the node, infers the
 * body, then reads the node's output types off the body's outputs. */
#include <string.h>

#include "ops/infer.h"
#include "ops/symdim.h"

static ir_graph *body_attr(const seam_infer *ic, const char *name) {
    const ir_attr *a = node_attr(ic->n, name);
    return a && a->kind == IR_ATTR_GRAPH ? a->g : NULL;
}

static const ir_type *body_out(const ir_graph *b, int32_t k) {
    return b && k >= 0 && k < b->n_outputs ? &b->values[b->outputs[k]].type : NULL;
}

/* Gives body input k a type when the file left it open. */
static void set_body_input(seam_infer *ic, ir_graph *b, int32_t k, int32_t dtype, int32_t rank, const ir_dim *dims) {
    if (!b || k >= b->n_inputs) return;
    ir_type *t = &b->values[b->inputs[k]].type;
    if (t->kind == IR_TYPE_NONE) t->kind = IR_TYPE_TENSOR;
    if (t->kind != IR_TYPE_TENSOR) return;
    if (t->elem == SEAM_DTYPE_UNDEFINED) t->elem = dtype;
    if (t->rank >= 0 || rank < 0 || rank > INFER_MAX_RANK) return;
    ir_dim *d = seam_arena_calloc(ic->arena, (size_t)rank + 1, sizeof(ir_dim));
    if (!d) return;
    if (rank) memcpy(d, dims, sizeof(ir_dim) * (size_t)rank);
    t->dims = d;
    t->rank = rank;
}

static void set_body_input_type(seam_infer *ic, ir_graph *b, int32_t k, const ir_type *from) {
    if (!b || !from || k >= b->n_inputs) return;
    ir_type *t = &b->values[b->inputs[k]].type;
    if (from->kind == IR_TYPE_TENSOR) {
        set_body_input(ic, b, k, from->elem, from->rank, from->dims);
    } else if (t->kind == IR_TYPE_NONE) {
        *t = *from; /* sequences and optionals: shared, never modified */
    }
}

/* If: each output is what both branches agree on. */
static void infer_if(seam_infer *ic) {
    ir_graph *then_b = body_attr(ic, "then_branch"), *else_b = body_attr(ic, "else_branch");
    infer_subgraph(ic, then_b);
    infer_subgraph(ic, else_b);
    for (int32_t o = 0; o < infer_n_outputs(ic); o++) {
        const ir_type *a = body_out(then_b, o), *b = body_out(else_b, o);
        if (!a || !b) continue;
        if (a->kind != IR_TYPE_TENSOR || b->kind != IR_TYPE_TENSOR) {
            if (a->kind == b->kind && a->kind != IR_TYPE_NONE) infer_set_type(ic, o, a);
            continue;
        }
        int32_t dt = a->elem == b->elem ? a->elem : SEAM_DTYPE_UNDEFINED;
        if (a->rank < 0 || a->rank != b->rank) {
            infer_set_dtype(ic, o, dt);
            continue;
        }
        ir_dim out[INFER_MAX_RANK];
        if (a->rank > INFER_MAX_RANK) continue;
        for (int32_t k = 0; k < a->rank; k++) {
            const ir_dim *x = &a->dims[k], *y = &b->dims[k];
            if (x->v >= 0 && x->v == y->v)
                out[k] = *x;
            else if (x->v < 0 && y->v < 0 && x->sym && y->sym && strcmp(x->sym, y->sym) == 0)
                out[k] = *x;
            else
                out[k] = IR_DIM_UNKNOWN;
        }
        infer_set_tensor(ic, o, dt, a->rank, out);
    }
}

/* Loop(M, cond, v...): body (iter, cond, v...) -> (cond, v..., scan...).
 * The node's outputs are the final v... and the scan outputs stacked along
 * a new first axis whose length is known only at run time. */
static void infer_loop(seam_infer *ic) {
    ir_graph *b = body_attr(ic, "body");
    if (!b) return;
    set_body_input(ic, b, 0, SEAM_DTYPE_INT64, 0, NULL);
    set_body_input(ic, b, 1, SEAM_DTYPE_BOOL, 0, NULL);
    int32_t n_carried = infer_n_inputs(ic) - 2;
    for (int32_t k = 0; k < n_carried; k++) set_body_input_type(ic, b, 2 + k, infer_in(ic, 2 + k));
    infer_subgraph(ic, b);
    for (int32_t o = 0; o < infer_n_outputs(ic); o++) {
        const ir_type *t = body_out(b, o + 1);
        if (!t) continue;
        if (o < n_carried) {
            /* the carried value's shape may change across iterations: keep
             * only the dims the initial value and the body agree on */
            const ir_type *init = infer_in(ic, 2 + o);
            if (t->kind != IR_TYPE_TENSOR) {
                if (t->kind != IR_TYPE_NONE) infer_set_type(ic, o, t);
                continue;
            }
            if (!init || init->kind != IR_TYPE_TENSOR || init->rank != t->rank || t->rank < 0 || t->rank > INFER_MAX_RANK) {
                infer_set_dtype(ic, o, t->elem);
                continue;
            }
            ir_dim out[INFER_MAX_RANK];
            for (int32_t k = 0; k < t->rank; k++)
                out[k] = t->dims[k].v >= 0 && t->dims[k].v == init->dims[k].v ? t->dims[k] : IR_DIM_UNKNOWN;
            infer_set_tensor(ic, o, t->elem, t->rank, out);
        } else {
            if (t->kind != IR_TYPE_TENSOR) continue;
            if (t->rank < 0 || t->rank + 1 > INFER_MAX_RANK) {
                infer_set_dtype(ic, o, t->elem);
                continue;
            }
            ir_dim out[INFER_MAX_RANK];
            out[0] = IR_DIM_UNKNOWN;
            if (t->rank > 0) memcpy(out + 1, t->dims, sizeof(ir_dim) * (size_t)t->rank);
            infer_set_tensor(ic, o, t->elem, t->rank + 1, out);
        }
    }
}

/* Scan (opset 9+): inputs are N states then M scan inputs; the body sees
 * the states and one slice of each scan input (its scan axis removed). */
static void infer_scan(seam_infer *ic) {
    ir_graph *b = body_attr(ic, "body");
    if (!b || ic->n->opset < 9) return;
    int64_t m64 = node_attr_int(ic->n, "num_scan_inputs", 0);
    int32_t n_in = infer_n_inputs(ic);
    if (m64 < 0 || m64 > n_in) return; /* (validation names the attribute) */
    int32_t m = (int32_t)m64, n_states = n_in - m;
    const int64_t *in_axes = NULL, *out_axes = NULL;
    int32_t n_in_axes = node_attr_ints(ic->n, "scan_input_axes", &in_axes);
    int32_t n_out_axes = node_attr_ints(ic->n, "scan_output_axes", &out_axes);
    ir_dim seq = IR_DIM_UNKNOWN;
    for (int32_t k = 0; k < n_states; k++) set_body_input_type(ic, b, k, infer_in(ic, k));
    for (int32_t j = 0; j < m; j++) {
        const ir_type *t = infer_in(ic, n_states + j);
        if (!t || t->kind != IR_TYPE_TENSOR || t->rank < 1 || t->rank > INFER_MAX_RANK) continue;
        int32_t axis = op_axis(n_in_axes == m ? in_axes[j] : 0, t->rank);
        if (axis < 0) continue;
        if (j == 0) seq = t->dims[axis];
        ir_dim d[INFER_MAX_RANK];
        for (int32_t k = 0, r = 0; k < t->rank; k++)
            if (k != axis) d[r++] = t->dims[k];
        set_body_input(ic, b, n_states + j, t->elem, t->rank - 1, d);
    }
    infer_subgraph(ic, b);
    for (int32_t o = 0; o < infer_n_outputs(ic); o++) {
        const ir_type *t = body_out(b, o);
        if (!t || t->kind != IR_TYPE_TENSOR) continue;
        if (o < n_states) {
            infer_set_type(ic, o, t);
            continue;
        }
        int32_t j = o - n_states;
        if (t->rank < 0 || t->rank + 1 > INFER_MAX_RANK) {
            infer_set_dtype(ic, o, t->elem);
            continue;
        }
        int32_t axis = op_axis(n_out_axes > j ? out_axes[j] : 0, t->rank + 1);
        if (axis < 0) continue;
        ir_dim out[INFER_MAX_RANK];
        for (int32_t k = 0, r = 0; k <= t->rank; k++) out[k] = k == axis ? seq : t->dims[r++];
        infer_set_tensor(ic, o, t->elem, t->rank + 1, out);
    }
}

/* ai.seam Subgraph (a device subgraph of an applied plan): the body sees
 * the node's inputs; the node's outputs are the body's. */
static void infer_seam_subgraph(seam_infer *ic) {
    ir_graph *b = body_attr(ic, "body");
    if (!b) return;
    for (int32_t k = 0; k < infer_n_inputs(ic) && k < b->n_inputs; k++) set_body_input_type(ic, b, k, infer_in(ic, k));
    infer_subgraph(ic, b);
    for (int32_t o = 0; o < infer_n_outputs(ic); o++) {
        const ir_type *t = body_out(b, o);
        if (t && t->kind != IR_TYPE_NONE) infer_set_type(ic, o, t);
    }
}

/* SequenceMap(S, ...): the body runs once per element of the sequence
 * inputs (seeing one element of each; tensor inputs whole) and each output
 * is the sequence of the body's output. */
static void infer_sequence_map(seam_infer *ic) {
    ir_graph *b = body_attr(ic, "body");
    if (!b) return;
    for (int32_t k = 0; k < infer_n_inputs(ic); k++) {
        const ir_type *t = infer_in(ic, k);
        set_body_input_type(ic, b, k, t && t->kind == IR_TYPE_SEQUENCE ? t->inner : t);
    }
    infer_subgraph(ic, b);
    for (int32_t o = 0; o < infer_n_outputs(ic); o++) {
        const ir_type *t = body_out(b, o);
        if (!t || t->kind != IR_TYPE_TENSOR) continue;
        ir_type inner = *t;
        inner.rank = -1; /* elements may differ in shape */
        ir_type seq = {IR_TYPE_SEQUENCE, 0, -1, NULL, &inner, NULL};
        infer_set_type(ic, o, &seq);
    }
}

const seam_op_def seam_ops_control[] = {
    {"ai.seam", "DimExpr", 1, infer_dimexpr},
    {"ai.seam", "Subgraph", 1, infer_seam_subgraph},
    {"", "If", 1, infer_if},
    {"", "Loop", 1, infer_loop},
    {"", "Scan", 8, NULL}, /* the batched form: known, not run */
    {"", "Scan", 9, infer_scan},
    {"", "SequenceMap", 17, infer_sequence_map},
};
const size_t seam_ops_control_count = sizeof(seam_ops_control) / sizeof(seam_ops_control[0]);
