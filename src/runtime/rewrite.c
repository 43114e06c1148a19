/* Rewrites that heal partitions (seam_model_rewrite, seam_partition.h):
 * a node no target takes, written as ops a target does take, when and
 * only when the partitioner then finds a plan estimated faster, or as fast
 * with fewer device subgraphs. Each kind is tried on a copy of the model
 * first (packed and loaded again), and applied to the model only when the
 * copy's plan wins. The forms:
 *
 *   Pad mode=reflect|edge  ->  per padded axis, Concat of the slices that
 *                              repeat (edge) or mirror (reflect, Slice with
 *                              step -1) its borders, and the input
 *   Split                  ->  one Slice per output
 *   Sum of n inputs        ->  n - 1 Adds
 *   HardSwish              ->  x * HardSigmoid(x, alpha 1/6, beta 1/2)
 *   InstanceNormalization, LayerNormalization (one output)
 *                          ->  d = x - ReduceMean(x); d / Sqrt(ReduceMean(d * d)
 *                              + epsilon) * scale + B (constant scale and B,
 *                              as [C, 1, ...] for InstanceNormalization)
 *   Expand read only by broadcasting binary ops that give the same shape
 *                          without it  ->  gone (they broadcast its input)
 *   GroupNormalization, Gelu, Mish, HardSigmoid  ->  rewrite_forms.c
 *
 * Each is exact (the same elements in the same order, the same additions
 * in the same order, nothing computed for Expand) but HardSwish, whose
 * 1/6 is a multiplication by float 1/6 instead of a division by 6 (an ulp
 * at most), and the normalizations, whose sums run in another order
 * (rewrite_forms.c says how exact its forms are). Each kind is tried on
 * its own, in the order of rw_op: a node whose form holds another kind's
 * op the targets lack (a HardSwish as HardSigmoid for a target with Clip
 * alone) is not taken through both. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "onnx/onnx.h"
#include "ops/attr.h"
#include "ops/ops.h"
#include "partition/partition.h"
#include "rewrite_forms.h"

enum {
    RW_PAD, RW_SPLIT, RW_SUM, RW_HARDSWISH, RW_EXPAND, RW_INSTNORM, RW_LAYERNORM, RW_GROUPNORM, RW_GELU, RW_MISH,
    RW_HARDSIGMOID, RW_KINDS
};
static const char *const rw_op[RW_KINDS] = {"Pad", "Split", "Sum", "HardSwish", "Expand", "InstanceNormalization",
                                            "LayerNormalization", "GroupNormalization", "Gelu", "Mish",
                                            "HardSigmoid"};
static const char *const rw_form[RW_KINDS] = {
    "as Slices and a Concat per padded axis", "as Slices", "as Adds", "as x * HardSigmoid(x)",
    "away (its readers broadcast)", "as ReduceMean, Sub, Mul, Add, Sqrt and Div",
    "as ReduceMean, Sub, Mul, Add, Sqrt and Div", "as Reshapes, ReduceMean, Sub, Mul, Add, Sqrt and Div",
    "as the exporters' x * (1 + Erf(x / sqrt(2))) * 0.5 (or its Tanh form)", "as x * Tanh(Softplus(x))",
    "as Clip(x * alpha + beta, 0, 1)"};

static bool is_std(const ir_node *n, const char *op) { return !n->domain[0] && !strcmp(n->op_type, op); }

static const ir_tensor *konst(const ir_graph *g, int32_t v) { return v >= 0 ? g->values[v].konst : NULL; }

static int32_t i64_init(seam_model *m, ir_graph *g, const char *base, const char *suffix, int64_t v) {
    int64_t one = 1;
    return ir_new_init(m, g, base, suffix, SEAM_DTYPE_INT64, 1, &one, &v);
}

/* y = Slice(x, [start], [end], [axis], [step]) (a new value, or out when
 * out >= 0); -1 when out of memory. */
static int32_t slice(seam_model *m, ir_graph *g, const char *base, int32_t x, int64_t axis, int64_t start, int64_t end,
                     int64_t step, int32_t out) {
    int32_t s = i64_init(m, g, base, "_starts", start), e = i64_init(m, g, base, "_ends", end);
    int32_t a = i64_init(m, g, base, "_axes", axis), st = i64_init(m, g, base, "_steps", step);
    int32_t y = out >= 0 ? out : ir_new_value(m, g, base, "_slice");
    if (s < 0 || e < 0 || a < 0 || st < 0 || y < 0) return -1;
    int32_t ins[5] = {x, s, e, a, st};
    return ir_new_node(m, g, base, "Slice", ins, 5, &y, 1, NULL, 0) < 0 ? -1 : y;
}

/* ---- Pad ---- */

/* The pads of a Pad whose mode is reflect or edge, per axis of its input's
 * rank (begin in pads[d], end in pads[rank + d]); false when it is not such
 * a Pad, its pads are not constant, or one is negative (a crop). */
static bool pad_form(const ir_graph *g, const ir_node *n, int64_t *pads, int32_t *rank_out) {
    if (!is_std(n, "Pad") || n->n_inputs < 1 || n->inputs[0] < 0 || n->n_outputs != 1 || n->opset < 11) return false;
    const char *mode = node_attr_string(n, "mode", "constant");
    if (strcmp(mode, "reflect") != 0 && strcmp(mode, "edge") != 0) return false;
    const ir_type *t = &g->values[n->inputs[0]].type;
    if (t->kind != IR_TYPE_TENSOR || t->rank < 1 || t->rank > 8) return false;
    const ir_tensor *p = n->n_inputs > 1 ? konst(g, n->inputs[1]) : NULL;
    if (!p || p->dtype != SEAM_DTYPE_INT64) return false;
    int32_t rank = t->rank, n_axes = rank;
    int64_t axes[8];
    for (int32_t d = 0; d < rank; d++) axes[d] = d;
    if (n->n_inputs > 3 && n->inputs[3] >= 0) { /* axes (opset 18) */
        const ir_tensor *a = konst(g, n->inputs[3]);
        if (!a || a->numel > rank || (a->dtype != SEAM_DTYPE_INT64 && a->dtype != SEAM_DTYPE_INT32)) return false;
        n_axes = (int32_t)a->numel;
        for (int32_t k = 0; k < n_axes; k++) {
            int64_t v = a->dtype == SEAM_DTYPE_INT64 ? ((const int64_t *)a->data)[k] : ((const int32_t *)a->data)[k];
            axes[k] = v < 0 ? v + rank : v;
            if (axes[k] < 0 || axes[k] >= rank) return false;
        }
    }
    if (p->numel != 2 * n_axes) return false;
    for (int32_t d = 0; d < 2 * rank; d++) pads[d] = 0;
    for (int32_t k = 0; k < n_axes; k++) {
        pads[axes[k]] = ((const int64_t *)p->data)[k];
        pads[rank + axes[k]] = ((const int64_t *)p->data)[n_axes + k];
    }
    bool reflect = mode[0] == 'r';
    for (int32_t d = 0; d < rank; d++) {
        int64_t b = pads[d], e = pads[rank + d], dim = t->dims[d].v;
        if (b < 0 || e < 0 || b > 64 || e > 64) return false; /* (edge repeats a slice b times) */
        if ((b || e) && (dim < 1 || (reflect && (b >= dim || e >= dim)))) return false;
    }
    *rank_out = rank;
    return true;
}

static bool rewrite_pad(seam_model *m, ir_graph *g, int32_t i, bool *dead) {
    int64_t pads[16];
    int32_t rank;
    if (!pad_form(g, &g->nodes[i], pads, &rank)) return false;
    const ir_node *n = &g->nodes[i];
    const char *base = n->name;
    bool reflect = node_attr_string(n, "mode", "constant")[0] == 'r';
    int32_t cur = n->inputs[0], y = n->outputs[0], last = -1;
    for (int32_t d = 0; d < rank; d++)
        if (pads[d] || pads[rank + d]) last = d;
    for (int32_t d = 0; d <= last; d++) {
        int64_t b = pads[d], e = pads[rank + d];
        if (!b && !e) continue;
        int32_t parts[130], np = 0;
        if (reflect) {
            if (b) parts[np++] = slice(m, g, base, cur, d, b, 0, -1, -1);  /* x[b], ..., x[1] */
            parts[np++] = cur;
            if (e) parts[np++] = slice(m, g, base, cur, d, -2, -2 - e, -1, -1); /* x[-2], ..., x[-1-e] */
        } else {
            int32_t first = b ? slice(m, g, base, cur, d, 0, 1, 1, -1) : -1;
            int32_t lastv = e ? slice(m, g, base, cur, d, -1, INT64_MAX, 1, -1) : -1;
            for (int64_t k = 0; k < b; k++) parts[np++] = first;
            parts[np++] = cur;
            for (int64_t k = 0; k < e; k++) parts[np++] = lastv;
        }
        for (int32_t k = 0; k < np; k++)
            if (parts[k] < 0) return false;
        int32_t out = d == last ? y : ir_new_value(m, g, base, "_padded");
        ir_attr axis = {.name = "axis", .kind = IR_ATTR_INT, .i = d};
        if (out < 0 || ir_new_node(m, g, base, "Concat", parts, np, &out, 1, &axis, 1) < 0) return false;
        cur = out;
    }
    dead[i] = true;
    return true;
}

/* ---- Split ---- */

/* The sizes of a Split's outputs along its axis (n_outputs of them); false
 * when they are not known. */
static bool split_form(const ir_graph *g, const ir_node *n, int64_t *sizes, int64_t *axis_out) {
    if (!is_std(n, "Split") || n->n_inputs < 1 || n->inputs[0] < 0 || n->n_outputs < 1 || n->n_outputs > 256 ||
        n->opset < 11)
        return false;
    const ir_type *t = &g->values[n->inputs[0]].type;
    if (t->kind != IR_TYPE_TENSOR || t->rank < 1) return false;
    int64_t axis = node_attr_int(n, "axis", 0);
    axis = axis < 0 ? axis + t->rank : axis;
    if (axis < 0 || axis >= t->rank) return false;
    int64_t dim = t->dims[axis].v;
    const int64_t *attr = NULL;
    int32_t na = n->opset < 13 ? node_attr_ints(n, "split", &attr) : -1;
    const ir_tensor *s = n->opset >= 13 && n->n_inputs > 1 ? konst(g, n->inputs[1]) : NULL;
    if (n->opset >= 13 && n->n_inputs > 1 && n->inputs[1] >= 0 && (!s || s->dtype != SEAM_DTYPE_INT64)) return false;
    int64_t total = 0;
    for (int32_t k = 0; k < n->n_outputs; k++) {
        if (na >= 0) {
            if (na != n->n_outputs) return false;
            sizes[k] = attr[k];
        } else if (s) {
            if (s->numel != n->n_outputs) return false;
            sizes[k] = ((const int64_t *)s->data)[k];
        } else { /* equal parts, the last smaller (num_outputs, opset 18) */
            if (dim < 1) return false;
            int64_t part = (dim + n->n_outputs - 1) / n->n_outputs;
            sizes[k] = k + 1 < n->n_outputs ? part : dim - part * (n->n_outputs - 1);
        }
        if (sizes[k] < 0 || sizes[k] > ((int64_t)1 << 40)) return false;
        total += sizes[k];
    }
    if (dim >= 0 && total != dim) return false;
    *axis_out = axis;
    return true;
}

static bool rewrite_split(seam_model *m, ir_graph *g, int32_t i, bool *dead) {
    int64_t sizes[256], axis, at = 0;
    if (!split_form(g, &g->nodes[i], sizes, &axis)) return false;
    int32_t n_out = g->nodes[i].n_outputs;
    for (int32_t k = 0; k < n_out; k++) {
        const ir_node *n = &g->nodes[i]; /* (adding nodes may move the array) */
        int32_t y = n->outputs[k];
        if (y >= 0 && slice(m, g, n->name, n->inputs[0], axis, at, at + sizes[k], 1, y) < 0) return false;
        at += sizes[k];
    }
    dead[i] = true;
    return true;
}

/* ---- Sum ---- */

static bool rewrite_sum(seam_model *m, ir_graph *g, int32_t i, bool *dead) {
    const ir_node *n = &g->nodes[i];
    if (!is_std(n, "Sum") || n->n_inputs < 2 || n->n_outputs != 1 || n->outputs[0] < 0) return false;
    for (int32_t k = 0; k < n->n_inputs; k++)
        if (n->inputs[k] < 0) return false;
    int32_t acc = n->inputs[0], n_in = n->n_inputs;
    for (int32_t k = 1; k < n_in; k++) {
        n = &g->nodes[i];
        int32_t out = k + 1 == n_in ? n->outputs[0] : ir_new_value(m, g, n->name, "_partial");
        int32_t ins[2] = {acc, n->inputs[k]};
        if (out < 0 || ir_new_node(m, g, n->name, "Add", ins, 2, &out, 1, NULL, 0) < 0) return false;
        acc = out;
    }
    dead[i] = true;
    return true;
}

/* ---- HardSwish ---- */

static bool rewrite_hardswish(seam_model *m, ir_graph *g, int32_t i, bool *dead) {
    const ir_node *n = &g->nodes[i];
    if (!is_std(n, "HardSwish") || n->n_inputs != 1 || n->inputs[0] < 0 || n->n_outputs != 1 || n->outputs[0] < 0)
        return false;
    int32_t x = n->inputs[0], y = n->outputs[0];
    int32_t h = ir_new_value(m, g, n->name, "_hardsigmoid");
    ir_attr at[2] = {{.name = "alpha", .kind = IR_ATTR_FLOAT, .f = 1.0f / 6.0f},
                     {.name = "beta", .kind = IR_ATTR_FLOAT, .f = 0.5f}};
    if (h < 0 || ir_new_node(m, g, g->nodes[i].name, "HardSigmoid", &x, 1, &h, 1, at, 2) < 0) return false;
    int32_t ins[2] = {x, h};
    if (ir_new_node(m, g, g->nodes[i].name, "Mul", ins, 2, &y, 1, NULL, 0) < 0) return false;
    dead[i] = true;
    return true;
}

/* ---- Expand ---- */

/* A tensor type of known rank and dims. */
static bool static_type(const ir_type *t) {
    if (t->kind != IR_TYPE_TENSOR || t->rank < 0) return false;
    for (int32_t d = 0; d < t->rank; d++)
        if (t->dims[d].v < 0) return false;
    return true;
}

/* An Expand whose every reader is an elementwise binary op that broadcasts,
 * and gives the same output shape when it reads the Expand's input instead
 * (all shapes static). */
static bool expand_form(const ir_graph *g, const ir_node *n) {
    static const char *const binary[] = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Equal", "Less", "Greater",
                                         "And", "Or", "Xor", "Mod", "BitShift", "LessOrEqual",
                                         "GreaterOrEqual"};
    if (!is_std(n, "Expand") || n->n_inputs != 2 || n->inputs[0] < 0 || n->n_outputs != 1 || n->outputs[0] < 0)
        return false;
    const ir_value *e = &g->values[n->outputs[0]];
    const ir_type *xt = &g->values[n->inputs[0]].type;
    if ((e->flags & IR_VALUE_OUTPUT) || e->n_consumers < 1 || !static_type(xt)) return false;
    for (int32_t c = 0; c < e->n_consumers; c++) {
        const ir_node *r = &g->nodes[e->consumers[c]];
        bool bin = false;
        for (size_t k = 0; k < sizeof(binary) / sizeof(binary[0]) && !bin; k++) bin = is_std(r, binary[k]);
        if (!bin || r->n_inputs != 2 || r->n_outputs != 1 || r->outputs[0] < 0 || r->n_implicit) return false;
        int32_t other = r->inputs[0] == n->outputs[0] ? r->inputs[1] : r->inputs[0];
        if (other < 0 || other == n->outputs[0]) return false;
        const ir_type *ot = &g->values[other].type, *yt = &g->values[r->outputs[0]].type;
        /* without the Expand the output is broadcast(x, other): it must be y's shape */
        if (!static_type(ot) || !static_type(yt)) return false;
        int32_t rank = xt->rank > ot->rank ? xt->rank : ot->rank;
        if (rank != yt->rank) return false;
        for (int32_t d = 0; d < rank; d++) {
            int32_t dx = d - (rank - xt->rank), dot = d - (rank - ot->rank);
            int64_t a = dx >= 0 ? xt->dims[dx].v : 1, b = dot >= 0 ? ot->dims[dot].v : 1;
            if (a < 0 || b < 0 || (a != b && a != 1 && b != 1)) return false;
            if ((a > b ? a : b) != yt->dims[d].v) return false;
        }
    }
    return true;
}

static bool rewrite_expand(seam_model *m, ir_graph *g, int32_t i, bool *dead) {
    (void)m;
    const ir_node *n = &g->nodes[i];
    if (!expand_form(g, n)) return false;
    int32_t x = n->inputs[0], e = n->outputs[0];
    const ir_value *ev = &g->values[e];
    for (int32_t c = 0; c < ev->n_consumers; c++) {
        ir_node *r = &g->nodes[ev->consumers[c]];
        for (int32_t k = 0; k < r->n_inputs; k++)
            if (r->inputs[k] == e) r->inputs[k] = x;
    }
    dead[i] = true;
    return true;
}

/* ---- normalizations ---- */

/* The axes a normalization averages over (first .. rank - 1) and its
 * epsilon, for InstanceNormalization (first 2) or LayerNormalization (its
 * axis); false when it is not one this rewrite takes: one output read,
 * known rank, constant float32 scale and B. */
static bool norm_form(const ir_graph *g, const ir_node *n, int32_t *first, int32_t *rank_out) {
    bool inst = is_std(n, "InstanceNormalization"), layer = is_std(n, "LayerNormalization");
    if ((!inst && !layer) || n->n_inputs < 2 || n->inputs[0] < 0 || n->n_outputs < 1 || n->outputs[0] < 0) return false;
    for (int32_t k = 1; k < n->n_outputs; k++) /* LayerNormalization's Mean and InvStdDev: none read */
        if (n->outputs[k] >= 0 && (g->values[n->outputs[k]].n_consumers || g->values[n->outputs[k]].flags & IR_VALUE_OUTPUT))
            return false;
    const ir_type *t = &g->values[n->inputs[0]].type;
    if (t->kind != IR_TYPE_TENSOR || t->elem != SEAM_DTYPE_FLOAT32 || t->rank < 2 || t->rank > 8) return false;
    for (int32_t k = 1; k < n->n_inputs && k < 3; k++) {
        const ir_tensor *c = n->inputs[k] >= 0 ? konst(g, n->inputs[k]) : NULL;
        if (n->inputs[k] >= 0 && (!c || c->dtype != SEAM_DTYPE_FLOAT32)) return false;
    }
    if (inst && (n->n_inputs != 3 || n->inputs[2] < 0 || t->dims[1].v < 1)) return false;
    int64_t axis = inst ? 2 : node_attr_int(n, "axis", -1);
    axis = axis < 0 ? axis + t->rank : axis;
    if (axis < (inst ? 2 : 0) || axis >= t->rank) return false;
    if (layer && node_attr_int(n, "stash_type", 1) != 1) return false;
    *first = (int32_t)axis;
    *rank_out = t->rank;
    return true;
}

/* y = ReduceMean(x) over axes first .. rank - 1, kept. */
static int32_t reduce_mean(seam_model *m, ir_graph *g, const char *base, int32_t x, int32_t first, int32_t rank) {
    if (x < 0) return -1;
    int64_t axes[8];
    int32_t n_axes = 0;
    for (int32_t d = first; d < rank; d++) axes[n_axes++] = d;
    int32_t y = ir_new_value(m, g, base, "_mean");
    if (y < 0) return -1;
    if (seam_op_opset(m, "") >= 18) {
        int64_t dims[1] = {n_axes};
        int32_t a = ir_new_init(m, g, base, "_axes", SEAM_DTYPE_INT64, 1, dims, axes);
        int32_t ins[2] = {x, a};
        return a < 0 || ir_new_node(m, g, base, "ReduceMean", ins, 2, &y, 1, NULL, 0) < 0 ? -1 : y;
    }
    ir_attr at[1] = {{.name = "axes", .kind = IR_ATTR_INTS, .n = n_axes, .ints = axes}};
    int64_t *kept = seam_arena_memdup(&m->arena, axes, sizeof(int64_t) * (size_t)n_axes);
    if (!kept) return -1;
    at[0].ints = kept;
    return ir_new_node(m, g, base, "ReduceMean", &x, 1, &y, 1, at, 1) < 0 ? -1 : y;
}

static int32_t binary(seam_model *m, ir_graph *g, const char *base, const char *op, int32_t a, int32_t b, int32_t out) {
    int32_t y = out >= 0 ? out : ir_new_value(m, g, base, "_t");
    int32_t ins[2] = {a, b};
    return y < 0 || a < 0 || b < 0 || ir_new_node(m, g, base, op, ins, 2, &y, 1, NULL, 0) < 0 ? -1 : y;
}

static bool rewrite_norm(seam_model *m, ir_graph *g, int32_t i, bool *dead) {
    int32_t first, rank;
    if (!norm_form(g, &g->nodes[i], &first, &rank)) return false;
    const ir_node *n = &g->nodes[i];
    bool inst = is_std(n, "InstanceNormalization");
    const char *base = n->name;
    int32_t x = n->inputs[0], y = n->outputs[0];
    int32_t scale = n->inputs[1], bias = n->n_inputs > 2 ? n->inputs[2] : -1;
    float eps = node_attr_float(n, "epsilon", 1e-5f);
    if (inst) { /* scale and B of [C] as [C, 1, ...]: broadcast over the spatial axes */
        int64_t dims[8] = {g->values[x].type.dims[1].v, 1, 1, 1, 1, 1, 1, 1};
        const ir_tensor *s = konst(g, scale), *b = konst(g, bias);
        if (s->numel != dims[0] || b->numel != dims[0]) return false;
        scale = ir_new_init(m, g, base, "_scale", SEAM_DTYPE_FLOAT32, rank - 1, dims, s->data);
        bias = ir_new_init(m, g, base, "_bias", SEAM_DTYPE_FLOAT32, rank - 1, dims, b->data);
    }
    int64_t none = 0;
    int32_t e = ir_new_init(m, g, base, "_epsilon", SEAM_DTYPE_FLOAT32, 0, &none, &eps);
    int32_t mean = reduce_mean(m, g, base, x, first, rank);
    int32_t d = binary(m, g, base, "Sub", x, mean, -1);
    int32_t var = reduce_mean(m, g, base, binary(m, g, base, "Mul", d, d, -1), first, rank);
    int32_t sd = ir_new_value(m, g, base, "_std"), ve = binary(m, g, base, "Add", var, e, -1);
    if (sd < 0 || ve < 0 || ir_new_node(m, g, base, "Sqrt", &ve, 1, &sd, 1, NULL, 0) < 0) return false;
    int32_t norm = binary(m, g, base, "Div", d, sd, -1);
    int32_t scaled = binary(m, g, base, "Mul", norm, scale, bias >= 0 ? -1 : y);
    if (scaled < 0 || (bias >= 0 && binary(m, g, base, "Add", scaled, bias, y) < 0)) return false;
    dead[i] = true;
    return true;
}

/* ---- the helpers rewrite_forms.c shares (rewrite_forms.h) ---- */

bool rw_is_std(const ir_node *n, const char *op) { return is_std(n, op); }

const ir_tensor *rw_konst(const ir_graph *g, int32_t v) { return konst(g, v); }

int32_t rw_binary(seam_model *m, ir_graph *g, const char *base, const char *op, int32_t a, int32_t b, int32_t out) {
    return binary(m, g, base, op, a, b, out);
}

int32_t rw_reduce_mean(seam_model *m, ir_graph *g, const char *base, int32_t x, int32_t first, int32_t rank) {
    return reduce_mean(m, g, base, x, first, rank);
}

/* ---- the driver ---- */

static bool applies(const ir_graph *g, const ir_node *n, int32_t kind) {
    int64_t buf[256], axis;
    int32_t rank;
    switch (kind) {
    case RW_PAD: return pad_form(g, n, buf, &rank);
    case RW_SPLIT: return split_form(g, n, buf, &axis);
    case RW_SUM: return is_std(n, "Sum") && n->n_inputs >= 2 && n->n_outputs == 1;
    case RW_HARDSWISH: return is_std(n, "HardSwish") && n->n_inputs == 1 && n->n_outputs == 1;
    case RW_EXPAND: return expand_form(g, n);
    case RW_INSTNORM:
    case RW_LAYERNORM: return norm_form(g, n, &rank, &rank) && is_std(n, rw_op[kind]);
    case RW_GROUPNORM: return rw_groupnorm_form(g, n);
    case RW_GELU: return rw_gelu_form(g, n);
    case RW_MISH: return rw_mish_form(g, n);
    case RW_HARDSIGMOID: return rw_hardsigmoid_form(g, n);
    default: return false;
    }
}

typedef bool (*rewrite_fn_t)(seam_model *m, ir_graph *g, int32_t i, bool *dead);
static const rewrite_fn_t rewrite_fn[RW_KINDS] = {
    rewrite_pad,  rewrite_split,        rewrite_sum,     rewrite_hardswish, rewrite_expand, rewrite_norm,
    rewrite_norm, rw_rewrite_groupnorm, rw_rewrite_gelu, rw_rewrite_mish,   rw_rewrite_hardsigmoid};

/* Rewrites the nodes of kind named in names (n of them) in m; the count
 * done, or -1 (out of memory, or a node not found). */
static int32_t rewrite_named(seam_model *m, int32_t kind, const char *const *names, int32_t n) {
    ir_graph *g = m->graph;
    int32_t n0 = g->n_nodes, done = 0;
    bool *dead = calloc((size_t)n0 + 1, sizeof(bool));
    if (!dead) return -1;
    for (int32_t i = 0; i < n0; i++) {
        bool named = false;
        for (int32_t k = 0; k < n && !named; k++) named = g->nodes[i].name && !strcmp(g->nodes[i].name, names[k]);
        if (!named) continue;
        if (!rewrite_fn[kind](m, g, i, dead)) {
            free(dead);
            return -1;
        }
        done++;
    }
    bool *all = realloc(dead, (size_t)g->n_nodes + 1);
    if (!all) {
        free(dead);
        return -1;
    }
    for (int32_t i = n0; i < g->n_nodes; i++) all[i] = false;
    ir_graph_remove_nodes(g, all);
    free(all);
    if (ir_graph_link(m->ctx, g) || ir_infer_model(m)) return -1;
    return done;
}

/* A copy of m: its bytes packed and loaded again. */
static seam_model *copy_model(seam_model *m) {
    uint8_t *buf = NULL;
    size_t n = 0;
    seam_model *c = NULL;
    if (onnx_model_pack(m, &buf, &n) == SEAM_STATUS_OK) seam_model_load_buffer(m->ctx, buf, n, m->base_dir, &c);
    free(buf);
    return c;
}

/* A plan as the rewrite weighs it: its estimate and device subgraphs;
 * flat when the targets declare no costs (every placement is estimated
 * as the CPU alone: then only the subgraphs tell plans apart). */
typedef struct plan_score {
    double us;
    int32_t dev;
    bool flat;
} plan_score;

static void score_plan(const seam_plan *p, plan_score *s) {
    seam_plan_estimate e;
    seam_plan_estimate_get(p, &e);
    s->us = e.total_us;
    s->flat = fabs(e.all_cpu_us - e.capability_us) <= 1e-9 * e.all_cpu_us + 1e-12 &&
              fabs(e.total_us - e.all_cpu_us) <= 1e-9 * e.all_cpu_us + 1e-12;
    s->dev = 0;
    for (int32_t k = 0; k < seam_plan_subgraph_count(p); k++) {
        seam_plan_subgraph_info sg;
        seam_plan_subgraph(p, k, &sg);
        s->dev += strcmp(sg.target, "cpu") != 0;
    }
}

static bool score_of(seam_model *m, const seam_partition_options *o, plan_score *s) {
    seam_plan *p = NULL;
    if (seam_partition(m, o, &p)) return false;
    score_plan(p, s);
    seam_plan_free(p);
    return true;
}

/* Whether plan a beats plan b: fewer device subgraphs when neither
 * estimate says anything; else faster without more device subgraphs (or
 * by 2% and more), or as fast with fewer. */
static bool wins(plan_score a, plan_score b) {
    if (a.flat && b.flat) return a.dev < b.dev;
    if (a.us < b.us * (1 - 1e-9) - 1e-9) return a.dev <= b.dev || a.us < b.us * 0.98;
    return a.us <= b.us * (1 + 1e-9) + 1e-9 && a.dev < b.dev;
}

seam_status seam_model_rewrite(seam_model *m, const seam_partition_options *opts, int32_t *applied_out) {
    if (applied_out) *applied_out = 0;
    if (!m || !opts || opts->n_targets < 1) return m ? SEAM_STATUS_OK : SEAM_STATUS_INVALID_ARGUMENT;
    seam_context *ctx = m->ctx;
    /* most models hold no node of these forms: then nothing is partitioned here */
    bool any = false;
    for (int32_t i = 0; i < m->graph->n_nodes && !any; i++)
        for (int32_t kind = 0; kind < RW_KINDS && !any; kind++)
            any = is_std(&m->graph->nodes[i], rw_op[kind]) && applies(m->graph, &m->graph->nodes[i], kind);
    if (!any) return SEAM_STATUS_OK;
    plan_score base;
    seam_plan *p = NULL;
    seam_status st = seam_partition(m, opts, &p);
    if (st) return st;
    score_plan(p, &base);
    int32_t total = 0;
    for (int32_t kind = 0; kind < RW_KINDS && !st; kind++) {
        /* the nodes of this kind no target took */
        const ir_graph *g = m->graph;
        const char **names = malloc(sizeof(char *) * ((size_t)g->n_nodes + 1));
        int32_t n = 0;
        if (!names) {
            st = seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
            break;
        }
        for (int32_t i = 0; p && i < g->n_nodes; i++) {
            seam_plan_node_info ni;
            if (!is_std(&g->nodes[i], rw_op[kind]) || !g->nodes[i].name || seam_plan_node(p, i, &ni) ||
                ni.reason != SEAM_REASON_UNSUPPORTED || !applies(g, &g->nodes[i], kind))
                continue;
            names[n++] = g->nodes[i].name;
        }
        seam_model *c = n ? copy_model(m) : NULL;
        plan_score tried = {0, 0, false};
        if (c && rewrite_named(c, kind, names, n) == n && score_of(c, opts, &tried) && wins(tried, base)) {
            int32_t done = rewrite_named(m, kind, names, n);
            if (done != n) {
                st = seam_error(ctx, SEAM_STATUS_INTERNAL, "rewriting %s: %d of %d nodes", rw_form[kind], done, n);
            } else {
                char note[400], est[120] = "";
                if (!tried.flat || !base.flat)
                    snprintf(est, sizeof(est), ", estimated %.1f us instead of %.1f", tried.us, base.us);
                snprintf(note, sizeof(note), "rewrite: %d %s node%s that no target takes written %s: %d device "
                         "subgraph%s instead of %d%s (--no-rewrite keeps %s)", n, rw_op[kind], n == 1 ? "" : "s",
                         rw_form[kind], tried.dev, tried.dev == 1 ? "" : "s", base.dev, est, n == 1 ? "it" : "them");
                if (!ir_model_add_note(m, note)) st = seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
                base = tried;
                total += n;
                seam_plan_free(p);
                p = NULL;
                if (!st) st = seam_partition(m, opts, &p);
            }
        }
        seam_model_free(c);
        free(names);
    }
    seam_plan_free(p);
    if (applied_out) *applied_out = total;
    return st;
}
