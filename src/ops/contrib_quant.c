/*
 * ONNX Runtime's quantized contrib ops (domain com.microsoft), which its
 * QOperator quantizer and its graph optimizer write into models, read as
 * the standard nodes their definitions spell out (issue 27):
 *
 *   QLinearAdd, QLinearMul      DQ(A), DQ(B) -> Add | Mul -> Q
 *   QLinearLeakyRelu,           DQ(X) -> LeakyRelu | Sigmoid -> Q
 *   QLinearSigmoid
 *   QLinearGlobalAveragePool    DQ(X) -> GlobalAveragePool -> Q; channels
 *                               last: ReduceMean over the spatial axes
 *   QLinearAveragePool          DQ(X) -> AveragePool -> Q (channels last:
 *                               between two Transposes)
 *   QLinearConcat               DQ(X_i) ... -> Concat -> Q
 *   QLinearSoftmax              DQ(X) -> Softmax -> Q (the model's Softmax
 *                               where it means the same: see below)
 *   QGemm                       DQ(A), DQ(B) (per column: axis 1, or 0 when
 *                               transB), Gemm with C' = float(C) * alpha *
 *                               a_scale * b_scale -> Q (no Q without y_scale)
 *   MatMulIntegerToFloat        MatMulInteger -> Cast -> Mul(a_scale *
 *                               b_scale) -> Add(bias)
 *   DynamicQuantizeMatMul       DynamicQuantizeLinear(A) -> the same
 *   QuantizeLinear,             the standard ops (the same definition)
 *   DequantizeLinear
 *
 * These are the QDQ form's node units, so from here on they are what a
 * QDQ model is: seam_model_fuse_qdq makes QGemm's group a QLinearConv,
 * placement keeps the others whole (partition/units.c), and dnnl runs the
 * quantized Add, Mul, Concat and pools on its own passes. The op node
 * keeps the contrib node's name (pins and plans name it); the DQ and Q
 * nodes are named after it ("<name>/dq_A", "<name>/q"). A model saved
 * afterwards holds the standard nodes, which any ONNX runtime runs.
 *
 * The arithmetic is the definitions' (float32 between DQ and Q, rounding
 * half to even); ONNX Runtime's kernels for some of these ops use fixed
 * point or lookup tables, so an output can differ from its by one
 * quantum where a value lies near a rounding boundary.
 *
 * A constant scale that is zero, negative, not finite or of the wrong
 * count is an error naming the contrib node. A node whose output type or
 * rank is not known yet is lowered on a later round of inference
 * (ir_infer_model); QLinearReduceMean, QLinearWhere, QAttention and the
 * other contrib ops stay as they are (no definition: an error where the
 * model runs).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "ir/ir.h"
#include "ops/attr.h"
#include "ops/ops.h"

#define MS "com.microsoft"

enum { LOWER_DONE, LOWER_LATER, LOWER_FAILED };

typedef struct lower {
    seam_model *m;
    ir_graph *g;
    int32_t idx;   /* the contrib node */
    ir_node n;     /* a copy: adding nodes moves the array */
    char lab[300]; /* "node 3 'add1' (com.microsoft.QLinearAdd)" */
    int64_t opset; /* the model's default-domain opset */
    seam_status st;
} lower;

static int32_t in_at(const lower *L, int32_t k) { return k < L->n.n_inputs ? L->n.inputs[k] : -1; }

static const ir_tensor *konst(const lower *L, int32_t v) { return v >= 0 ? L->g->values[v].konst : NULL; }

static int fail(lower *L, const char *fmt, const char *what) {
    char why[200];
    snprintf(why, sizeof(why), fmt, what);
    L->st = seam_error(L->m->ctx, SEAM_STATUS_INVALID_MODEL, "%s: %s", L->lab, why);
    return LOWER_FAILED;
}

static int oom(lower *L) {
    L->st = seam_error(L->m->ctx, SEAM_STATUS_OUT_OF_MEMORY, "%s: out of memory while reading it as standard nodes",
                       L->lab);
    return LOWER_FAILED;
}

/* a copy of ints in the model's arena (ir_new_node copies attributes, not
 * the lists they point to) */
static int64_t *ints_copy(lower *L, const int64_t *v, int32_t n) {
    int64_t *c = seam_arena_alloc(&L->m->arena, sizeof(int64_t) * (size_t)(n + 1));
    if (c) memcpy(c, v, sizeof(int64_t) * (size_t)n);
    return c;
}

/* A scale input: required, float32, and when constant every element finite
 * and positive, `scalar` ones one element. false with the error set. */
static bool check_scale(lower *L, int32_t k, const char *what, bool scalar) {
    int32_t v = in_at(L, k);
    if (v < 0) {
        fail(L, "%s is missing", what);
        return false;
    }
    const ir_type *t = &L->g->values[v].type;
    const ir_tensor *s = konst(L, v);
    int32_t dt = s ? s->dtype : t->kind == IR_TYPE_TENSOR ? t->elem : SEAM_DTYPE_UNDEFINED;
    if (dt != SEAM_DTYPE_FLOAT32 && dt != SEAM_DTYPE_UNDEFINED) {
        fail(L, "%s is not float32", what);
        return false;
    }
    if (!s) return true; /* the DQ or Q node checks it at run time */
    if (scalar && s->numel != 1) {
        char buf[120];
        snprintf(buf, sizeof(buf), "%s has %lld values; it must be one value (per tensor)", what, (long long)s->numel);
        fail(L, "%s", buf);
        return false;
    }
    for (int64_t e = 0; e < s->numel; e++) {
        float f = ((const float *)s->data)[e];
        if (!(f > 0.0f) || !isfinite(f)) {
            char buf[120];
            snprintf(buf, sizeof(buf), "%s[%lld] is %g: a scale must be finite and positive", what, (long long)e, f);
            fail(L, "%s", buf);
            return false;
        }
    }
    return true;
}

/* The 8-bit type of a quantized value: its zero point's, else its own
 * (SEAM_DTYPE_UNDEFINED while inference has not reached it). */
static int32_t qtype(const lower *L, int32_t zp, int32_t x) {
    const ir_tensor *z = konst(L, zp);
    if (z) return z->dtype;
    if (zp >= 0 && L->g->values[zp].type.kind == IR_TYPE_TENSOR) return L->g->values[zp].type.elem;
    if (x >= 0 && L->g->values[x].type.kind == IR_TYPE_TENSOR) return L->g->values[x].type.elem;
    return SEAM_DTYPE_UNDEFINED;
}

static int32_t node(lower *L, const char *suffix, const char *op, const int32_t *ins, int32_t n_ins, int32_t out,
                    const ir_attr *attrs, int32_t n_attrs) {
    char name[512];
    snprintf(name, sizeof(name), "%.440s%.60s", L->n.name ? L->n.name : "", suffix);
    return ir_new_node(L->m, L->g, name, op, ins, n_ins, &out, 1, attrs, n_attrs);
}

static int32_t fresh(lower *L, const char *suffix) { return ir_new_value(L->m, L->g, L->n.name ? L->n.name : "", suffix); }

/* DequantizeLinear(x, scale, zp) into a new float value (axis >= 0: per
 * axis); -1 when out of memory. */
static int32_t dq(lower *L, int32_t x, int32_t scale, int32_t zp, int64_t axis, const char *tag) {
    char sfx[64];
    snprintf(sfx, sizeof(sfx), "_%s_dq", tag);
    int32_t y = fresh(L, sfx);
    snprintf(sfx, sizeof(sfx), "/dq_%s", tag);
    int32_t ins[3] = {x, scale, zp};
    ir_attr ax = {.name = "axis", .kind = IR_ATTR_INT, .i = axis};
    if (y < 0 || node(L, sfx, "DequantizeLinear", ins, zp >= 0 ? 3 : 2, y, &ax, axis >= 0) < 0) return -1;
    return y;
}

/* A zero point for a Q of type dt where the contrib node gives none. */
static int32_t zero_of(lower *L, int32_t dt) {
    uint8_t zero = 0;
    return ir_new_init(L->m, L->g, L->n.name ? L->n.name : "", "_zero_point", dt, 0, NULL, &zero);
}

/* QuantizeLinear(y, scale, zp) into out, of type dt. */
static bool q(lower *L, int32_t y, int32_t scale, int32_t zp, int32_t dt, int32_t out) {
    if (zp < 0 && (zp = zero_of(L, dt)) < 0) return false;
    int32_t ins[3] = {y, scale, zp};
    return node(L, "/q", "QuantizeLinear", ins, 3, out, NULL, 0) >= 0;
}

static bool is_8bit(int32_t dt) { return dt == SEAM_DTYPE_UINT8 || dt == SEAM_DTYPE_INT8; }

/* QLinearAdd, QLinearMul: A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp. */
static int lower_binary(lower *L, const char *op) {
    if (L->n.n_inputs < 7) return fail(L, "%s", "it needs at least 7 inputs (A, A_scale, A_zero_point, B, B_scale, "
                                                "B_zero_point, C_scale)");
    int32_t dt = qtype(L, in_at(L, 7), -1);
    if (dt == SEAM_DTYPE_UNDEFINED) dt = qtype(L, in_at(L, 2), in_at(L, 0));
    if (dt == SEAM_DTYPE_UNDEFINED) return LOWER_LATER;
    if (!is_8bit(dt)) return fail(L, "%s", "C is not 8-bit");
    if (!check_scale(L, 1, "A_scale", true) || !check_scale(L, 4, "B_scale", true) ||
        !check_scale(L, 6, "C_scale", true))
        return LOWER_FAILED;
    int32_t a = dq(L, in_at(L, 0), in_at(L, 1), in_at(L, 2), -1, "A");
    int32_t b = dq(L, in_at(L, 3), in_at(L, 4), in_at(L, 5), -1, "B");
    int32_t c = fresh(L, "_float");
    int32_t ins[2] = {a, b};
    if (a < 0 || b < 0 || c < 0 || node(L, "", op, ins, 2, c, NULL, 0) < 0) return oom(L);
    return q(L, c, in_at(L, 6), in_at(L, 7), dt, L->n.outputs[0]) ? LOWER_DONE : oom(L);
}

/* X, X_scale, X_zp, Y_scale, Y_zp around one float op (attributes but
 * channels_last copied), optionally between Transposes (channels last). */
static int lower_unary(lower *L, const char *op, bool channels_last_pool) {
    if (L->n.n_inputs < 4) return fail(L, "%s", "it needs at least 4 inputs (X, X_scale, X_zero_point, Y_scale)");
    int32_t dt = qtype(L, in_at(L, 4), -1);
    if (dt == SEAM_DTYPE_UNDEFINED) dt = qtype(L, in_at(L, 2), in_at(L, 0));
    if (dt == SEAM_DTYPE_UNDEFINED) return LOWER_LATER;
    if (!is_8bit(dt)) return fail(L, "%s", "Y is not 8-bit");
    if (!check_scale(L, 1, "X_scale", true) || !check_scale(L, 3, "Y_scale", true)) return LOWER_FAILED;
    if (in_at(L, 0) < 0) return fail(L, "%s", "X is missing");
    bool last = channels_last_pool && node_attr_int(&L->n, "channels_last", 0) != 0;
    const ir_type *xtype = &L->g->values[in_at(L, 0)].type;
    int32_t rank = xtype->rank;
    if (last && (xtype->kind != IR_TYPE_TENSOR || rank < 0)) return LOWER_LATER;
    if (last && (rank < 3 || rank > 8)) return fail(L, "%s", "a channels-last input needs rank 3 to 8");
    ir_attr at[16];
    int32_t na = 0;
    for (int32_t k = 0; k < L->n.n_attrs && na < 16; k++)
        if (strcmp(L->n.attrs[k].name, "channels_last") && strcmp(L->n.attrs[k].name, "opset")) at[na++] = L->n.attrs[k];
    int32_t x = dq(L, in_at(L, 0), in_at(L, 1), in_at(L, 2), -1, "X");
    int32_t y = fresh(L, "_float");
    if (x < 0 || y < 0) return oom(L);
    if (last && !strcmp(op, "GlobalAveragePool")) {
        /* N, D1..Dk, C: the mean over D1..Dk, kept as 1s */
        int64_t axes[8];
        for (int32_t d = 1; d < rank - 1; d++) axes[d - 1] = d;
        int64_t *axes_a = ints_copy(L, axes, rank - 2);
        if (!axes_a) return oom(L);
        ir_attr kd[2] = {{.name = "keepdims", .kind = IR_ATTR_INT, .i = 1},
                         {.name = "axes", .kind = IR_ATTR_INTS, .n = rank - 2, .ints = axes_a}};
        if (L->opset >= 18) {
            int64_t dims = rank - 2;
            int32_t av = ir_new_init(L->m, L->g, L->n.name ? L->n.name : "", "_axes", SEAM_DTYPE_INT64, 1, &dims, axes);
            int32_t ins[2] = {x, av};
            if (av < 0 || node(L, "", "ReduceMean", ins, 2, y, kd, 1) < 0) return oom(L);
        } else if (node(L, "", "ReduceMean", &x, 1, y, kd, 2) < 0) {
            return oom(L);
        }
    } else if (last) {
        int64_t to[8], back[8];
        to[0] = 0, to[1] = rank - 1, back[0] = 0, back[rank - 1] = 1;
        for (int32_t d = 2; d < rank; d++) to[d] = d - 1;
        for (int32_t d = 1; d < rank - 1; d++) back[d] = d + 1;
        int32_t xt = fresh(L, "_nchw"), yt = fresh(L, "_pooled");
        int64_t *to_a = ints_copy(L, to, rank), *back_a = ints_copy(L, back, rank);
        if (xt < 0 || yt < 0 || !to_a || !back_a) return oom(L);
        ir_attr p1 = {.name = "perm", .kind = IR_ATTR_INTS, .n = rank, .ints = to_a};
        ir_attr p2 = {.name = "perm", .kind = IR_ATTR_INTS, .n = rank, .ints = back_a};
        if (node(L, "/to_nchw", "Transpose", &x, 1, xt, &p1, 1) < 0 || node(L, "", op, &xt, 1, yt, at, na) < 0 ||
            node(L, "/to_nhwc", "Transpose", &yt, 1, y, &p2, 1) < 0)
            return oom(L);
    } else if (node(L, "", op, &x, 1, y, at, na) < 0) {
        return oom(L);
    }
    return q(L, y, in_at(L, 3), in_at(L, 4), dt, L->n.outputs[0]) ? LOWER_DONE : oom(L);
}

/* QLinearSoftmax: its `opset` attribute says which Softmax it is (before
 * 13: over the axes from `axis` on, flattened; from 13: along `axis`);
 * the model's Softmax is its opset's. They agree when both are on one
 * side of 13, or when the axis is the last. */
static int lower_softmax(lower *L) {
    int64_t want = node_attr_int(&L->n, "opset", 0), axis = node_attr_int(&L->n, "axis", -1);
    if (want <= 0) return fail(L, "%s", "its attribute opset (the Softmax it is) is missing");
    if ((want >= 13) != (L->opset >= 13)) {
        const ir_type *t = in_at(L, 0) >= 0 ? &L->g->values[in_at(L, 0)].type : NULL;
        if (!t || t->kind != IR_TYPE_TENSOR || t->rank < 0) return LOWER_LATER;
        if (axis != -1 && axis != t->rank - 1)
            return fail(L, "%s", "it is a Softmax of another opset than the model's, along an axis that is not "
                                 "the last: seam cannot write it as the model's Softmax");
    }
    return lower_unary(L, "Softmax", false);
}

/* QLinearConcat: Y_scale, Y_zp, then (X, X_scale, X_zp) per input. */
static int lower_concat(lower *L) {
    int32_t nin = L->n.n_inputs;
    if (nin < 5 || (nin - 2) % 3) return fail(L, "%s", "its inputs must be Y_scale, Y_zero_point and a (X, X_scale, "
                                                      "X_zero_point) triple per input");
    int32_t dt = qtype(L, in_at(L, 1), -1);
    if (dt == SEAM_DTYPE_UNDEFINED) return LOWER_LATER;
    if (!is_8bit(dt)) return fail(L, "%s", "Y is not 8-bit");
    if (!check_scale(L, 0, "Y_scale", true)) return LOWER_FAILED;
    for (int32_t k = 2; k < nin; k += 3) {
        char what[40];
        snprintf(what, sizeof(what), "X_scale of input %d", (k - 2) / 3);
        if (!check_scale(L, k + 1, what, true)) return LOWER_FAILED;
    }
    int32_t *ins = seam_arena_alloc(&L->m->arena, sizeof(int32_t) * (size_t)nin);
    if (!ins) return oom(L);
    int32_t n = 0;
    for (int32_t k = 2; k < nin; k += 3) {
        char tag[24];
        snprintf(tag, sizeof(tag), "X%d", n);
        if ((ins[n++] = dq(L, in_at(L, k), in_at(L, k + 1), in_at(L, k + 2), -1, tag)) < 0) return oom(L);
    }
    int32_t y = fresh(L, "_float");
    ir_attr ax = {.name = "axis", .kind = IR_ATTR_INT, .i = node_attr_int(&L->n, "axis", 0)};
    if (y < 0 || node(L, "", "Concat", ins, n, y, &ax, 1) < 0) return oom(L);
    return q(L, y, in_at(L, 0), in_at(L, 1), dt, L->n.outputs[0]) ? LOWER_DONE : oom(L);
}

/* The count of a scale input (1 when not constant: per tensor, unless its
 * type says otherwise). */
static int64_t scale_count(const lower *L, int32_t v) {
    const ir_tensor *s = konst(L, v);
    if (s) return s->numel;
    const ir_type *t = v >= 0 ? &L->g->values[v].type : NULL;
    if (t && t->kind == IR_TYPE_TENSOR && t->rank == 1) return t->dims[0].v;
    return 1;
}

/* a * b (float32 values) into a new value */
static int32_t mul(lower *L, int32_t a, int32_t b, const char *tag) {
    int32_t y = fresh(L, tag);
    int32_t ins[2] = {a, b};
    return y < 0 || node(L, tag, "Mul", ins, 2, y, NULL, 0) < 0 ? -1 : y;
}

/* QGemm: A, a_scale, a_zp, B, b_scale, b_zp, C, y_scale, y_zp. */
static int lower_qgemm(lower *L) {
    if (L->n.n_inputs < 5) return fail(L, "%s", "it needs at least 5 inputs (A, a_scale, a_zero_point, B, b_scale)");
    int32_t ys = in_at(L, 7), dt = SEAM_DTYPE_FLOAT32;
    if (ys >= 0) {
        dt = qtype(L, in_at(L, 8), -1);
        if (dt == SEAM_DTYPE_UNDEFINED) dt = qtype(L, in_at(L, 2), in_at(L, 0));
        if (dt == SEAM_DTYPE_UNDEFINED) return LOWER_LATER;
        if (!is_8bit(dt)) return fail(L, "%s", "Y is not 8-bit");
        if (!check_scale(L, 7, "y_scale", true)) return LOWER_FAILED;
    }
    if (!check_scale(L, 1, "a_scale", true) || !check_scale(L, 4, "b_scale", false)) return LOWER_FAILED;
    int64_t nb = scale_count(L, in_at(L, 4)), nz = in_at(L, 5) >= 0 ? scale_count(L, in_at(L, 5)) : 1;
    if (nz > 1 && nb != nz)
        return fail(L, "%s", "b_zero_point has one value per column but b_scale does not: seam reads it as "
                             "DequantizeLinear, whose zero point has its scale's shape");
    bool trans_b = node_attr_int(&L->n, "transB", 0) != 0;
    float alpha = node_attr_float(&L->n, "alpha", 1.0f);
    if (nb > 1 && L->opset < 13) return fail(L, "%s", "a per-column b_scale needs the model's opset 13 or later");
    int32_t a = dq(L, in_at(L, 0), in_at(L, 1), in_at(L, 2), -1, "A");
    int32_t b = dq(L, in_at(L, 3), in_at(L, 4), in_at(L, 5), nb > 1 ? (trans_b ? 0 : 1) : -1, "B");
    if (a < 0 || b < 0) return oom(L);
    int32_t c = in_at(L, 6);
    if (c >= 0) {
        /* C is int32 at scale alpha * a_scale * b_scale, zero point 0 */
        int32_t cf = fresh(L, "_C_float");
        ir_attr to = {.name = "to", .kind = IR_ATTR_INT, .i = SEAM_DTYPE_FLOAT32};
        if (cf < 0 || node(L, "/C_cast", "Cast", &c, 1, cf, &to, 1) < 0) return oom(L);
        int32_t s = mul(L, in_at(L, 1), in_at(L, 4), "_C_scale");
        if (s >= 0 && alpha != 1.0f) {
            int32_t al = ir_new_init(L->m, L->g, L->n.name ? L->n.name : "", "_alpha", SEAM_DTYPE_FLOAT32, 0, NULL, &alpha);
            s = al < 0 ? -1 : mul(L, s, al, "_C_scale_alpha");
        }
        if (s < 0 || (c = mul(L, cf, s, "_C_dq")) < 0) return oom(L);
    }
    ir_attr at[3] = {{.name = "alpha", .kind = IR_ATTR_FLOAT, .f = alpha},
                     {.name = "transA", .kind = IR_ATTR_INT, .i = node_attr_int(&L->n, "transA", 0)},
                     {.name = "transB", .kind = IR_ATTR_INT, .i = trans_b}};
    int32_t y = ys >= 0 ? fresh(L, "_float") : L->n.outputs[0];
    int32_t ins[3] = {a, b, c};
    if (y < 0 || node(L, "", "Gemm", ins, c >= 0 ? 3 : 2, y, at, 3) < 0) return oom(L);
    if (ys < 0) return LOWER_DONE;
    return q(L, y, ys, in_at(L, 8), dt, L->n.outputs[0]) ? LOWER_DONE : oom(L);
}

/* MatMulInteger(a, B, a_zp, b_zp) -> Cast -> Mul(a_scale * b_scale) [->
 * Add(bias)] into the node's output: ONNX Runtime's quantize_dynamic form,
 * which dnnl runs as one int8 matmul and one pass. */
static int integer_to_float(lower *L, int32_t a, int32_t as, int32_t az, int32_t bq, int32_t bs, int32_t bz,
                            int32_t bias) {
    int32_t acc = fresh(L, "_int32"), f = fresh(L, "_acc_float");
    int32_t mm[4] = {a, bq, az, bz};
    int32_t n_mm = bz >= 0 ? 4 : az >= 0 ? 3 : 2;
    ir_attr to = {.name = "to", .kind = IR_ATTR_INT, .i = SEAM_DTYPE_FLOAT32};
    if (acc < 0 || f < 0 || node(L, "/matmul", "MatMulInteger", mm, n_mm, acc, NULL, 0) < 0 ||
        node(L, "/cast", "Cast", &acc, 1, f, &to, 1) < 0)
        return oom(L);
    int32_t s = mul(L, as, bs, "_scale");
    int32_t y = bias >= 0 ? fresh(L, "_scaled") : L->n.outputs[0];
    int32_t ins[2] = {f, s};
    if (s < 0 || y < 0 || node(L, "", "Mul", ins, 2, y, NULL, 0) < 0) return oom(L);
    if (bias < 0) return LOWER_DONE;
    int32_t add[2] = {y, bias};
    return node(L, "/bias", "Add", add, 2, L->n.outputs[0], NULL, 0) < 0 ? oom(L) : LOWER_DONE;
}

/* MatMulIntegerToFloat: A, B, a_scale, b_scale, a_zp, b_zp, bias. */
static int lower_mmitf(lower *L) {
    if (L->n.n_inputs < 4) return fail(L, "%s", "it needs at least 4 inputs (A, B, a_scale, b_scale)");
    if (!check_scale(L, 2, "a_scale", true) || !check_scale(L, 3, "b_scale", false)) return LOWER_FAILED;
    if (in_at(L, 4) >= 0 && scale_count(L, in_at(L, 4)) > 1)
        return fail(L, "%s", "a_zero_point per column of A is not supported (one value per tensor)");
    return integer_to_float(L, in_at(L, 0), in_at(L, 2), in_at(L, 4), in_at(L, 1), in_at(L, 3), in_at(L, 5),
                            in_at(L, 6));
}

/* DynamicQuantizeMatMul: A (float), B, b_scale, b_zp, bias. */
static int lower_dqmm(lower *L) {
    if (L->n.n_inputs < 3) return fail(L, "%s", "it needs at least 3 inputs (A, B, b_scale)");
    if (!check_scale(L, 2, "b_scale", false)) return LOWER_FAILED;
    int32_t aq = fresh(L, "_A_q"), as = fresh(L, "_A_scale"), az = fresh(L, "_A_zero_point");
    if (aq < 0 || as < 0 || az < 0) return oom(L);
    int32_t a = in_at(L, 0), outs[3] = {aq, as, az};
    char name[512];
    snprintf(name, sizeof(name), "%.440s/quantize_A", L->n.name ? L->n.name : "");
    if (ir_new_node(L->m, L->g, name, "DynamicQuantizeLinear", &a, 1, outs, 3, NULL, 0) < 0) return oom(L);
    return integer_to_float(L, aq, as, az, in_at(L, 1), in_at(L, 2), in_at(L, 3), in_at(L, 4));
}

/* com.microsoft QuantizeLinear / DequantizeLinear: the standard op. */
static int lower_std(lower *L, const char *op) {
    if (L->n.n_inputs < 2) return fail(L, "%s", "it needs at least 2 inputs (x, scale)");
    if (!check_scale(L, 1, "the scale", false)) return LOWER_FAILED;
    if (scale_count(L, in_at(L, 1)) > 1 && L->opset < 13)
        return fail(L, "%s", "a per-axis scale needs the model's opset 13 or later");
    ir_attr at[4];
    int32_t na = 0;
    for (int32_t k = 0; k < L->n.n_attrs && na < 4; k++)
        if (!strcmp(L->n.attrs[k].name, "axis")) at[na++] = L->n.attrs[k];
    return node(L, "", op, L->n.inputs, L->n.n_inputs > 3 ? 3 : L->n.n_inputs, L->n.outputs[0], at, na) < 0
               ? oom(L)
               : LOWER_DONE;
}

static const char *const contrib_ops[] = {
    "QLinearAdd",       "QLinearMul",         "QLinearLeakyRelu", "QLinearSigmoid",       "QLinearGlobalAveragePool",
    "QLinearAveragePool", "QLinearConcat",    "QGemm",            "MatMulIntegerToFloat", "DynamicQuantizeMatMul",
    "QuantizeLinear",   "DequantizeLinear", "QLinearSoftmax"};
enum { N_CONTRIB = sizeof(contrib_ops) / sizeof(contrib_ops[0]) };

static int contrib_index(const ir_node *n) {
    if (!n->domain || strcmp(n->domain, MS) || !n->op_type) return -1;
    for (int k = 0; k < N_CONTRIB; k++)
        if (!strcmp(n->op_type, contrib_ops[k])) return k;
    return -1;
}

static int lower_one(lower *L, int kind) {
    if (L->n.n_outputs < 1 || L->n.outputs[0] < 0) return fail(L, "%s", "it has no output");
    switch (kind) {
    case 0: return lower_binary(L, "Add");
    case 1: return lower_binary(L, "Mul");
    case 2: return lower_unary(L, "LeakyRelu", false);
    case 3: return lower_unary(L, "Sigmoid", false);
    case 4: return lower_unary(L, "GlobalAveragePool", true);
    case 5: return lower_unary(L, "AveragePool", true);
    case 6: return lower_concat(L);
    case 7: return lower_qgemm(L);
    case 8: return lower_mmitf(L);
    case 9: return lower_dqmm(L);
    case 12: return lower_softmax(L);
    default: return lower_std(L, kind == 10 ? "QuantizeLinear" : "DequantizeLinear");
    }
}

/* Lowers every contrib node of m's top graph that can be now; *count_out
 * how many were, *later_out how many wait for types. The note (once, on
 * the model's notes, which every plan repeats) says what was read how. */
static seam_status lower_graph(seam_model *m, int32_t *count_out, int32_t *later_out) {
    ir_graph *g = m->graph;
    int32_t n0 = g->n_nodes, later = 0, done = 0, per[N_CONTRIB] = {0};
    *count_out = *later_out = 0;
    bool any = false;
    for (int32_t i = 0; i < n0 && !any; i++) any = contrib_index(&g->nodes[i]) >= 0;
    if (!any) return SEAM_STATUS_OK;
    bool *dead = calloc((size_t)n0 + 1, sizeof(bool));
    if (!dead) return seam_error(m->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    seam_status st = SEAM_STATUS_OK;
    for (int32_t i = 0; i < n0; i++) {
        int kind = contrib_index(&g->nodes[i]);
        if (kind < 0) continue;
        lower L = {.m = m, .g = g, .idx = i, .n = g->nodes[i], .opset = seam_op_opset(m, "")};
        ir_node_label(g, i, L.lab, sizeof(L.lab));
        int r = lower_one(&L, kind);
        if (r == LOWER_FAILED) {
            st = L.st ? L.st : SEAM_STATUS_INVALID_MODEL;
            break;
        }
        if (r == LOWER_LATER) {
            later++;
            continue;
        }
        dead[i] = true;
        per[kind]++, done++;
    }
    if (!st && done) {
        bool *all = realloc(dead, (size_t)g->n_nodes + 1);
        if (!all) {
            free(dead);
            return seam_error(m->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        }
        dead = all;
        for (int32_t i = n0; i < g->n_nodes; i++) dead[i] = false;
        ir_graph_remove_nodes(g, dead);
        char text[600];
        size_t len = (size_t)snprintf(text, sizeof(text), "ONNX Runtime's quantized contrib ops (com.microsoft) read "
                                                          "as the standard nodes they are defined by:");
        for (int k = 0, first = 1; k < N_CONTRIB && len < sizeof(text); k++) {
            if (!per[k]) continue;
            len += (size_t)snprintf(text + len, sizeof(text) - len, "%s %d %s", first ? "" : ",", per[k], contrib_ops[k]);
            first = 0;
        }
        if (len < sizeof(text))
            snprintf(text + len, sizeof(text) - len, " (DequantizeLinear -> op -> QuantizeLinear; a saved model "
                                                     "holds these)");
        if (!ir_model_add_note(m, text)) st = seam_error(m->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    free(dead);
    *count_out = done, *later_out = later;
    return st;
}

seam_status op_lower_contrib_quant(seam_model *m, bool *changed) {
    *changed = false;
    int32_t done = 0, later = 0;
    seam_status st = lower_graph(m, &done, &later);
    if (st || !done) return st;
    *changed = true;
    return ir_graph_link(m->ctx, m->graph);
}
