/*
 * What the quantizer quantizes, and the rewrite (quantize.h).
 *
 * Static (QDQ), as ONNX Runtime's quantize_static writes it:
 *
 *     x -> Q -> DQ -+
 *     w_int8 -> DQ -+-> Conv -> y -> Q -> DQ -> readers of y
 *     b_int32 -> DQ +
 *
 * - quantized ops: Conv, MatMul, Gemm (transA 0, alpha 1, beta 1), Add,
 *   Mul, AveragePool, GlobalAveragePool, Concat; their float32 data inputs
 *   and first output get one QuantizeLinear + DequantizeLinear pair each,
 *   which every reader of the value then reads;
 * - MaxPool, Flatten and Reshape of a value that is quantized anyway are
 *   quantized too, their output with their input's parameters (an 8-bit
 *   value passes through them unchanged);
 * - a Relu, or a Clip from a constant >= 0, after a quantized op, the only
 *   reader of the op's output, goes: the op writes the activation's output,
 *   quantized with its range, whose Q clamps as the activation did;
 * - weights (Conv's input 1, MatMul's and Gemm's 2-D input 1) int8
 *   symmetric in [-127, 127], per output channel (Conv: axis 0; Gemm:
 *   axis 0 with transB, else 1; MatMul: axis 1) or per tensor; a 1-D bias
 *   of Conv or Gemm int32 at scale x_scale * w_scale[c]; any other float
 *   constant input of a quantized op int8 symmetric per tensor.
 *
 * Dynamic: each MatMul with a constant 2-D float weight, and each Gemm
 * (transA 0, alpha 1, beta 1) with one, becomes
 *
 *     DynamicQuantizeLinear(A) -> MatMulInteger(A_q, W_q, A_zp, W_zp)
 *       -> Cast(float) -> Mul(by A_scale * W_scale) (-> Add(C): Gemm)
 *
 * with W int8 symmetric per tensor (or per column).
 *
 * Names follow ONNX Runtime's: X_quantized, X_scale, X_zero_point,
 * X_QuantizeLinear, X_DequantizeLinear, X_DequantizeLinear_Output; a graph
 * output keeps its name on the last DequantizeLinear.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "ops/activation.h"
#include "ops/ops.h"
#include "runtime/quantize.h"

enum { K_NONE, K_CONV, K_MATMUL, K_GEMM, K_BINARY, K_POOL, K_CONCAT, K_SHARED };

static bool is_std(const ir_node *n, const char *op) { return !n->domain[0] && !strcmp(n->op_type, op); }

static int op_kind(const ir_node *n) {
    static const struct {
        const char *op;
        int kind;
    } ops[] = {{"Conv", K_CONV}, {"MatMul", K_MATMUL}, {"Gemm", K_GEMM}, {"Add", K_BINARY}, {"Mul", K_BINARY},
               {"AveragePool", K_POOL}, {"GlobalAveragePool", K_POOL}, {"Concat", K_CONCAT}, {"MaxPool", K_SHARED},
               {"Flatten", K_SHARED}, {"Reshape", K_SHARED}};
    if (n->domain[0]) return K_NONE;
    for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++)
        if (!strcmp(n->op_type, ops[k].op)) return ops[k].kind;
    return K_NONE;
}

/* How many of n's first inputs are data a quantized n reads (not shapes). */
static int32_t data_inputs(const ir_node *n, int kind) {
    if (kind == K_CONV || kind == K_GEMM) return n->n_inputs < 3 ? n->n_inputs : 3;
    if (kind == K_POOL || kind == K_SHARED) return 1;
    return n->n_inputs;
}

static const ir_tensor *const_of(const ir_graph *g, int32_t v) {
    if (v < 0) return NULL;
    const ir_value *val = &g->values[v];
    if (val->flags & (IR_VALUE_INPUT | IR_VALUE_OUTER)) return NULL;
    return (val->flags & IR_VALUE_INIT) ? val->init : val->konst;
}

static bool is_f32(const ir_graph *g, int32_t v) {
    return v >= 0 && g->values[v].type.kind == IR_TYPE_TENSOR && g->values[v].type.elem == SEAM_DTYPE_FLOAT32;
}

static int64_t attr_i(const ir_node *n, const char *name, int64_t dflt) {
    const ir_attr *a = ir_node_attr(n, name);
    return a && a->kind == IR_ATTR_INT ? a->i : dflt;
}

static float attr_f(const ir_node *n, const char *name, float dflt) {
    const ir_attr *a = ir_node_attr(n, name);
    return a && a->kind == IR_ATTR_FLOAT ? a->f : dflt;
}

/* Why n is excluded (the options' exclusions, then those added by
 * seam_quantizer_exclude with their reason), or NULL. */
static const char *excluded(const seam_quantizer *q, const ir_node *n) {
    for (int32_t k = 0; k < q->o.n_exclude; k++)
        if (!strcmp(q->o.exclude[k], n->name))
            return k >= q->n_exclude_user && q->exclude_why ? q->exclude_why : "excluded by the caller";
    return NULL;
}

/* Why a Gemm cannot be quantized as it is, or NULL. */
static const char *gemm_refusal(const ir_node *n) {
    bool c = n->n_inputs > 2 && n->inputs[2] >= 0;
    if (attr_i(n, "transA", 0) || attr_f(n, "alpha", 1.0f) != 1.0f || (c && attr_f(n, "beta", 1.0f) != 1.0f))
        return "Gemm with transA, or alpha or beta other than 1";
    return NULL;
}

/* ---- the plan ---------------------------------------------------------- */

static bool float_data(seam_quantizer *q, int32_t i, int kind) {
    const ir_graph *g = q->m->graph;
    const ir_node *n = &g->nodes[i];
    if (n->n_outputs < 1 || n->n_implicit) return false;
    int32_t y = n->outputs[0];
    int32_t elem = y >= 0 && g->values[y].type.kind == IR_TYPE_TENSOR ? g->values[y].type.elem : 0;
    if (elem != SEAM_DTYPE_FLOAT32) {
        if (elem == SEAM_DTYPE_FLOAT16 || elem == SEAM_DTYPE_BFLOAT16 || elem == SEAM_DTYPE_FLOAT64)
            quant_left_float(q, i, "not float32: seam quantizes float32 models");
        return false; /* (integer arithmetic, such as shapes, is not quantized) */
    }
    for (int32_t k = 0; k < data_inputs(n, kind); k++)
        if (n->inputs[k] >= 0 && !is_f32(g, n->inputs[k])) return false;
    if (kind == K_SHARED && n->n_outputs > 1 && n->outputs[1] >= 0) return false; /* (MaxPool's Indices) */
    return true;
}

static seam_status add_act(seam_quantizer *q, int32_t v, int32_t root) {
    if (q->act_of[v] >= 0) return SEAM_STATUS_OK;
    quant_act *a = realloc(q->acts, sizeof(quant_act) * ((size_t)q->n_acts + 1));
    if (!a) return seam_error(q->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    q->acts = a;
    memset(&a[q->n_acts], 0, sizeof(quant_act));
    a[q->n_acts].v = v;
    a[q->n_acts].root = root >= 0 ? q->acts[root].root : q->n_acts;
    a[q->n_acts].output = -1;
    q->act_of[v] = q->n_acts++;
    return SEAM_STATUS_OK;
}

/* The value a quantized op's output ends as: a removed activation's output. */
static int32_t final_output(const seam_quantizer *q, int32_t y) {
    const ir_graph *g = q->m->graph;
    if (g->values[y].n_consumers == 1 && q->role[g->values[y].consumers[0]] == QN_REMOVED)
        return g->nodes[g->values[y].consumers[0]].outputs[0];
    return y;
}

/* A Relu, or a Clip whose lower bound is a constant >= 0. */
static bool from_zero(const ir_graph *g, const ir_node *n) {
    if (is_std(n, "Relu")) return true;
    if (!is_std(n, "Clip")) return false;
    if (n->opset < 11) return attr_f(n, "min", -INFINITY) >= 0;
    const ir_tensor *lo = n->n_inputs > 1 ? const_of(g, n->inputs[1]) : NULL;
    return lo && lo->dtype == SEAM_DTYPE_FLOAT32 && lo->numel == 1 && ((const float *)lo->data)[0] >= 0;
}

static void plan_static(seam_quantizer *q) {
    ir_graph *g = q->m->graph;
    for (int32_t k = 0; k < g->n_nodes; k++) { /* the ops */
        int32_t i = g->topo[k];
        const ir_node *n = &g->nodes[i];
        int kind = op_kind(n);
        if (kind == K_NONE || kind == K_SHARED || !float_data(q, i, kind)) continue;
        const char *no = excluded(q, n) ? excluded(q, n) : kind == K_GEMM ? gemm_refusal(n) : NULL;
        if (no) quant_left_float(q, i, no);
        else q->role[i] = QN_OP;
    }
    for (int32_t k = 0; k < g->n_nodes; k++) { /* removable activations */
        int32_t i = g->topo[k];
        const ir_node *n = &g->nodes[i];
        /* (whether it goes is its op's to say: an exclusion names the op) */
        if (!from_zero(g, n) || n->n_inputs < 1 || n->inputs[0] < 0 || !is_f32(g, n->outputs[0])) continue;
        const ir_value *x = &g->values[n->inputs[0]];
        if (x->producer < 0 || q->role[x->producer] != QN_OP || x->n_consumers != 1 || (x->flags & IR_VALUE_OUTPUT) ||
            g->nodes[x->producer].outputs[0] != n->inputs[0])
            continue;
        q->role[i] = QN_REMOVED;
        q->st.removed_activations++;
    }
}

/* A value is quantized when a quantized op reads it as data or writes it. */
static bool quantized_anyway(const seam_quantizer *q, int32_t v) {
    const ir_graph *g = q->m->graph;
    const ir_value *val = &g->values[v];
    if (val->producer >= 0 && (q->role[val->producer] == QN_OP || q->role[val->producer] == QN_SHARED)) return true;
    if (val->producer >= 0 && q->role[val->producer] == QN_REMOVED) return true;
    for (int32_t c = 0; c < val->n_consumers; c++) {
        const ir_node *n = &g->nodes[val->consumers[c]];
        if (q->role[val->consumers[c]] != QN_OP) continue;
        for (int32_t k = 0; k < data_inputs(n, op_kind(n)); k++)
            if (n->inputs[k] == v) return true;
    }
    return false;
}

static seam_status plan_acts(seam_quantizer *q) {
    ir_graph *g = q->m->graph;
    seam_status st = SEAM_STATUS_OK;
    for (int32_t k = 0; k < g->n_nodes && !st; k++) {
        int32_t i = g->topo[k];
        ir_node *n = &g->nodes[i];
        int kind = op_kind(n);
        if (kind == K_SHARED && !excluded(q, n) && float_data(q, i, kind) && n->inputs[0] >= 0 &&
            !const_of(g, n->inputs[0]) && quantized_anyway(q, n->inputs[0])) {
            q->role[i] = QN_SHARED;
            if ((st = add_act(q, n->inputs[0], -1))) break;
            st = add_act(q, n->outputs[0], q->act_of[n->inputs[0]]);
            continue;
        }
        if (q->role[i] != QN_OP) continue;
        for (int32_t j = 0; j < data_inputs(n, kind) && !st; j++)
            if (n->inputs[j] >= 0 && !const_of(g, n->inputs[j])) st = add_act(q, n->inputs[j], -1);
        if (!st) st = add_act(q, final_output(q, n->outputs[0]), -1);
    }
    for (int32_t i = 0; i < g->n_nodes; i++) q->st.quantized_ops += q->role[i] == QN_OP || q->role[i] == QN_SHARED;
    q->st.activations = q->n_acts;
    return st;
}

static void plan_dynamic(seam_quantizer *q) {
    ir_graph *g = q->m->graph;
    for (int32_t k = 0; k < g->n_nodes; k++) {
        int32_t i = g->topo[k];
        const ir_node *n = &g->nodes[i];
        bool mm = is_std(n, "MatMul"), gemm = is_std(n, "Gemm");
        if ((!mm && !gemm) || n->n_inputs < 2 || !is_f32(g, n->inputs[0]) || !is_f32(g, n->outputs[0])) continue;
        const ir_tensor *w = const_of(g, n->inputs[1]);
        const char *no = excluded(q, n) ? excluded(q, n)
                         : !w ? "MatMul of two activations (dynamic quantization takes constant weights)"
                         : w->rank != 2 ? "weight not 2-D"
                         : w->dtype != SEAM_DTYPE_FLOAT32 ? "weight not float32"
                         : gemm ? gemm_refusal(n) : NULL;
        if (!no && gemm && n->n_inputs > 2 && n->inputs[2] >= 0 && !is_f32(g, n->inputs[2])) no = "Gemm bias not float32";
        if (no) quant_left_float(q, i, no);
        else q->role[i] = QN_DYNAMIC, q->st.dynamic_matmuls++;
    }
}

seam_status quant_plan(seam_quantizer *q) {
    ir_graph *g = q->m->graph;
    q->opset = (int32_t)seam_op_opset(q->m, "");
    bool dyn = q->o.mode == SEAM_QUANT_DYNAMIC;
    if (q->opset < (dyn ? 11 : 10))
        return seam_error(q->ctx, SEAM_STATUS_UNSUPPORTED,
                          "quantize: %s quantization needs opset %d or later; the model has opset %d (convert it first, "
                          "e.g. with onnx.version_converter)", dyn ? "dynamic" : "static", dyn ? 11 : 10, q->opset);
    q->per_channel = dyn ? q->o.weights == SEAM_QUANT_PER_CHANNEL : q->o.weights != SEAM_QUANT_PER_TENSOR;
    if (q->per_channel && q->opset < 13) {
        if (q->o.weights == SEAM_QUANT_PER_CHANNEL)
            return seam_error(q->ctx, SEAM_STATUS_INVALID_ARGUMENT,
                              "quantize: per-channel weights need opset 13 (DequantizeLinear's axis); the model has opset %d",
                              q->opset);
        q->per_channel = false;
    }
    q->role = calloc((size_t)g->n_nodes + 1, 1);
    q->act_of = malloc(sizeof(int32_t) * ((size_t)g->n_values + 1));
    if (!q->role || !q->act_of) return seam_error(q->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    for (int32_t v = 0; v < g->n_values; v++) q->act_of[v] = -1;
    if (dyn) {
        plan_dynamic(q);
        return SEAM_STATUS_OK;
    }
    plan_static(q);
    return plan_acts(q);
}
