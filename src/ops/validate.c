/* The checks every node passes before inference and before any backend
 * sees it (see ops.h, op_validate): input and output counts from the ONNX
 * operator schemas, axes inside the rank, sliding windows that fit their
 * input. A model is data from outside; a backend's supports() and
 * compile() may rely on what is checked here. The CPU kernels keep their
 * own checks as a second line, with the same words. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/attr.h"
#include "ops/conv_geom.h"
#include "ops/infer.h"
#include "ops/ops.h"

#define V INT32_MAX /* variadic: no upper bound */

/* Input and output counts per op, over every opset version seam knows:
 * the smallest minimum and the largest maximum, so that any version's
 * valid node passes (tests/checks/check_arity.py compares this table
 * with onnx.defs). Sorted by (domain, op) for bsearch. */
typedef struct op_arity {
    const char *domain, *op_type;
    int32_t min_in, max_in, min_out, max_out;
} op_arity;

static const op_arity arities[] = {
    {"", "Abs", 1, 1, 1, 1},
    {"", "Acos", 1, 1, 1, 1},
    {"", "Acosh", 1, 1, 1, 1},
    {"", "Add", 2, 2, 1, 1},
    {"", "AffineGrid", 2, 2, 1, 1},
    {"", "And", 2, 2, 1, 1},
    {"", "ArgMax", 1, 1, 1, 1},
    {"", "ArgMin", 1, 1, 1, 1},
    {"", "Asin", 1, 1, 1, 1},
    {"", "Asinh", 1, 1, 1, 1},
    {"", "Atan", 1, 1, 1, 1},
    {"", "Atanh", 1, 1, 1, 1},
    {"", "AveragePool", 1, 1, 1, 1},
    {"", "BatchNormalization", 5, 5, 1, 5},
    {"", "Bernoulli", 1, 1, 1, 1},
    {"", "BitShift", 2, 2, 1, 1},
    {"", "BitwiseAnd", 2, 2, 1, 1},
    {"", "BitwiseNot", 1, 1, 1, 1},
    {"", "BitwiseOr", 2, 2, 1, 1},
    {"", "BitwiseXor", 2, 2, 1, 1},
    {"", "BlackmanWindow", 1, 1, 1, 1},
    {"", "Cast", 1, 1, 1, 1},
    {"", "CastLike", 2, 2, 1, 1},
    {"", "Ceil", 1, 1, 1, 1},
    {"", "Celu", 1, 1, 1, 1},
    {"", "CenterCropPad", 2, 2, 1, 1},
    {"", "Clip", 1, 3, 1, 1},
    {"", "Compress", 2, 2, 1, 1},
    {"", "Concat", 1, V, 1, 1},
    {"", "ConcatFromSequence", 1, 1, 1, 1},
    {"", "Constant", 0, 0, 1, 1},
    {"", "ConstantOfShape", 1, 1, 1, 1},
    {"", "Conv", 2, 3, 1, 1},
    {"", "ConvInteger", 2, 4, 1, 1},
    {"", "ConvTranspose", 2, 3, 1, 1},
    {"", "Cos", 1, 1, 1, 1},
    {"", "Cosh", 1, 1, 1, 1},
    {"", "CumSum", 2, 2, 1, 1},
    {"", "DFT", 1, 3, 1, 1}, /* axis as input 2: opset 20 */
    {"", "DepthToSpace", 1, 1, 1, 1},
    {"", "DequantizeLinear", 2, 3, 1, 1},
    {"", "Det", 1, 1, 1, 1},
    {"", "Div", 2, 2, 1, 1},
    {"", "Dropout", 1, 3, 1, 2},
    {"", "DynamicQuantizeLinear", 1, 1, 3, 3},
    {"", "Einsum", 1, V, 1, 1},
    {"", "Elu", 1, 1, 1, 1},
    {"", "Equal", 2, 2, 1, 1},
    {"", "Erf", 1, 1, 1, 1},
    {"", "Exp", 1, 1, 1, 1},
    {"", "Expand", 2, 2, 1, 1},
    {"", "EyeLike", 1, 1, 1, 1},
    {"", "Flatten", 1, 1, 1, 1},
    {"", "Floor", 1, 1, 1, 1},
    {"", "GRU", 3, 6, 0, 2},
    {"", "Gather", 2, 2, 1, 1},
    {"", "GatherElements", 2, 2, 1, 1},
    {"", "GatherND", 2, 2, 1, 1},
    {"", "Gelu", 1, 1, 1, 1},
    {"", "Gemm", 2, 3, 1, 1},
    {"", "GlobalAveragePool", 1, 1, 1, 1},
    {"", "GlobalLpPool", 1, 1, 1, 1},
    {"", "GlobalMaxPool", 1, 1, 1, 1},
    {"", "Greater", 2, 2, 1, 1},
    {"", "GreaterOrEqual", 2, 2, 1, 1},
    {"", "GridSample", 2, 2, 1, 1},
    {"", "GroupNormalization", 3, 3, 1, 1},
    {"", "HammingWindow", 1, 1, 1, 1},
    {"", "HannWindow", 1, 1, 1, 1},
    {"", "HardSigmoid", 1, 1, 1, 1},
    {"", "HardSwish", 1, 1, 1, 1},
    {"", "Hardmax", 1, 1, 1, 1},
    {"", "Identity", 1, 1, 1, 1},
    {"", "If", 1, 1, 1, V},
    {"", "InstanceNormalization", 3, 3, 1, 1},
    {"", "IsInf", 1, 1, 1, 1},
    {"", "IsNaN", 1, 1, 1, 1},
    {"", "LRN", 1, 1, 1, 1},
    {"", "LSTM", 3, 8, 0, 3},
    {"", "LayerNormalization", 2, 3, 1, 3},
    {"", "LeakyRelu", 1, 1, 1, 1},
    {"", "Less", 2, 2, 1, 1},
    {"", "LessOrEqual", 2, 2, 1, 1},
    {"", "Log", 1, 1, 1, 1},
    {"", "LogSoftmax", 1, 1, 1, 1},
    {"", "Loop", 2, V, 1, V},
    {"", "LpNormalization", 1, 1, 1, 1},
    {"", "LpPool", 1, 1, 1, 1},
    {"", "MatMul", 2, 2, 1, 1},
    {"", "MatMulInteger", 2, 4, 1, 1},
    {"", "Max", 1, V, 1, 1},
    {"", "MaxPool", 1, 1, 1, 2},
    {"", "MaxUnpool", 2, 3, 1, 1},
    {"", "Mean", 1, V, 1, 1},
    {"", "MeanVarianceNormalization", 1, 1, 1, 1},
    {"", "MelWeightMatrix", 5, 5, 1, 1},
    {"", "Min", 1, V, 1, 1},
    {"", "Mish", 1, 1, 1, 1},
    {"", "Mod", 2, 2, 1, 1},
    {"", "Mul", 2, 2, 1, 1},
    {"", "Neg", 1, 1, 1, 1},
    {"", "NegativeLogLikelihoodLoss", 2, 3, 1, 1},
    {"", "NonMaxSuppression", 2, 5, 1, 1},
    {"", "NonZero", 1, 1, 1, 1},
    {"", "Not", 1, 1, 1, 1},
    {"", "OneHot", 3, 3, 1, 1},
    {"", "Optional", 0, 1, 1, 1},
    {"", "OptionalGetElement", 1, 1, 1, 1},
    {"", "OptionalHasElement", 0, 1, 1, 1}, /* input optional: opset 18 */
    {"", "Or", 2, 2, 1, 1},
    {"", "PRelu", 2, 2, 1, 1},
    {"", "Pad", 1, 4, 1, 1}, /* axes: opset 18 */
    {"", "Pow", 2, 2, 1, 1},
    {"", "QLinearConv", 8, 9, 1, 1},
    {"", "QLinearMatMul", 8, 8, 1, 1},
    {"", "QuantizeLinear", 2, 3, 1, 1},
    {"", "RNN", 3, 6, 0, 2},
    {"", "RandomNormal", 0, 0, 1, 1},
    {"", "RandomNormalLike", 1, 1, 1, 1},
    {"", "RandomUniform", 0, 0, 1, 1},
    {"", "RandomUniformLike", 1, 1, 1, 1},
    {"", "Range", 3, 3, 1, 1},
    {"", "Reciprocal", 1, 1, 1, 1},
    {"", "ReduceL1", 1, 2, 1, 1}, /* axes: opset 18 */
    {"", "ReduceL2", 1, 2, 1, 1}, /* axes: opset 18 */
    {"", "ReduceLogSum", 1, 2, 1, 1}, /* axes: opset 18 */
    {"", "ReduceLogSumExp", 1, 2, 1, 1}, /* axes: opset 18 */
    {"", "ReduceMax", 1, 2, 1, 1}, /* axes: opset 18 */
    {"", "ReduceMean", 1, 2, 1, 1}, /* axes: opset 18 */
    {"", "ReduceMin", 1, 2, 1, 1}, /* axes: opset 18 */
    {"", "ReduceProd", 1, 2, 1, 1}, /* axes: opset 18 */
    {"", "ReduceSum", 1, 2, 1, 1},
    {"", "ReduceSumSquare", 1, 2, 1, 1}, /* axes: opset 18 */
    {"", "Relu", 1, 1, 1, 1},
    {"", "Reshape", 1, 2, 1, 1},
    {"", "Resize", 1, 4, 1, 1},
    {"", "ReverseSequence", 2, 2, 1, 1},
    {"", "RoiAlign", 3, 3, 1, 1},
    {"", "Round", 1, 1, 1, 1},
    {"", "STFT", 2, 4, 1, 1},
    {"", "Scan", 1, V, 1, V},
    {"", "Scatter", 3, 3, 1, 1},
    {"", "ScatterElements", 3, 3, 1, 1},
    {"", "ScatterND", 3, 3, 1, 1},
    {"", "Selu", 1, 1, 1, 1},
    {"", "SequenceAt", 2, 2, 1, 1},
    {"", "SequenceConstruct", 1, V, 1, 1},
    {"", "SequenceEmpty", 0, 0, 1, 1},
    {"", "SequenceErase", 1, 2, 1, 1},
    {"", "SequenceInsert", 2, 3, 1, 1},
    {"", "SequenceLength", 1, 1, 1, 1},
    {"", "SequenceMap", 1, V, 1, V},
    {"", "Shape", 1, 1, 1, 1},
    {"", "Shrink", 1, 1, 1, 1},
    {"", "Sigmoid", 1, 1, 1, 1},
    {"", "Sign", 1, 1, 1, 1},
    {"", "Sin", 1, 1, 1, 1},
    {"", "Sinh", 1, 1, 1, 1},
    {"", "Size", 1, 1, 1, 1},
    {"", "Slice", 1, 5, 1, 1},
    {"", "Softmax", 1, 1, 1, 1},
    {"", "SoftmaxCrossEntropyLoss", 2, 3, 1, 2},
    {"", "Softplus", 1, 1, 1, 1},
    {"", "Softsign", 1, 1, 1, 1},
    {"", "SpaceToDepth", 1, 1, 1, 1},
    {"", "Split", 1, 2, 1, V},
    {"", "SplitToSequence", 1, 2, 1, 1},
    {"", "Sqrt", 1, 1, 1, 1},
    {"", "Squeeze", 1, 2, 1, 1},
    {"", "StringNormalizer", 1, 1, 1, 1},
    {"", "Sub", 2, 2, 1, 1},
    {"", "Sum", 1, V, 1, 1},
    {"", "Tan", 1, 1, 1, 1},
    {"", "Tanh", 1, 1, 1, 1},
    {"", "TfIdfVectorizer", 1, 1, 1, 1},
    {"", "ThresholdedRelu", 1, 1, 1, 1},
    {"", "Tile", 2, 3, 1, 1},
    {"", "TopK", 1, 2, 2, 2},
    {"", "Transpose", 1, 1, 1, 1},
    {"", "Trilu", 1, 2, 1, 1},
    {"", "Unique", 1, 1, 1, 4},
    {"", "Unsqueeze", 1, 2, 1, 1},
    {"", "Upsample", 1, 2, 1, 1},
    {"", "Where", 3, 3, 1, 1},
    {"", "Xor", 2, 2, 1, 1},
    {"ai.onnx.preview.training", "Adagrad", 3, V, 1, V},
    {"ai.onnx.preview.training", "Adam", 3, V, 1, V},
    {"ai.onnx.preview.training", "Momentum", 3, V, 1, V},
};

static int cmp_arity(const void *key, const void *elem) {
    const op_arity *k = key, *e = elem;
    return seam_op_key_cmp(k->domain, k->op_type, e->domain, e->op_type);
}

static const op_arity *find_arity(const char *domain, const char *op_type) {
    op_arity key = {domain, op_type, 0, 0, 0, 0};
    return bsearch(&key, arities, sizeof(arities) / sizeof(arities[0]), sizeof(arities[0]), cmp_arity);
}

#define FAIL(...) (snprintf(why, why_size, __VA_ARGS__), false)

/* The rank of input i, or -1 when absent or unknown. */
static int32_t in_rank(const ir_graph *g, const ir_node *n, int32_t i) {
    if (i < 0 || i >= n->n_inputs || n->inputs[i] < 0) return -1;
    const ir_type *t = &g->values[n->inputs[i]].type;
    return t->kind == IR_TYPE_TENSOR ? t->rank : -1;
}

/* Dim d of input i, or -1 when unknown. */
static int64_t in_dim(const ir_graph *g, const ir_node *n, int32_t i, int32_t d) {
    int32_t r = in_rank(g, n, i);
    if (r < 0 || d < 0 || d >= r) return -1;
    return g->values[n->inputs[i]].type.dims[d].v;
}

static bool check_arity(const ir_node *n, const op_checks *c, char *why, size_t why_size) {
    const op_arity *a = c->arity;
    if (!a) return true;
    if (n->n_inputs > a->max_in) return FAIL("has %d inputs; %s takes at most %d", n->n_inputs, n->op_type, a->max_in);
    if (n->n_inputs < a->min_in)
        return FAIL("needs %d input%s, has %d", a->min_in, a->min_in == 1 ? "" : "s", n->n_inputs);
    /* Loop's M and cond and Scan-8's sequence_lens are optional inputs
     * before required ones: the schema counts them in min_input */
    bool leading_optional = c->leading_optional;
    for (int32_t i = 0; i < a->min_in && !leading_optional; i++)
        if (n->inputs[i] < 0) return FAIL("input %d is required", i);
    /* a variadic list (Concat's, Sum's) has no optional entries: ONNX's
     * checker refuses an empty name anywhere in it */
    for (int32_t i = a->min_in; a->max_in == V && !leading_optional && i < n->n_inputs; i++)
        if (n->inputs[i] < 0) return FAIL("input %d is required: %s's variadic inputs cannot be empty", i, n->op_type);
    if (n->n_outputs > a->max_out)
        return FAIL("has %d outputs; %s gives at most %d", n->n_outputs, n->op_type, a->max_out);
    if (n->n_outputs < a->min_out)
        return FAIL("needs %d output%s, has %d", a->min_out, a->min_out == 1 ? "" : "s", n->n_outputs);
    return true;
}

/* Ops whose `axis` names an axis of input 0 (of the output for OneHot):
 * valid in [-r, r - 1], or [-r, r] where `extra` is 1. */
typedef struct axis_rule {
    const char *op_type;
    int32_t extra; /* 1: the axis may be r (Flatten, OneHot's new axis) */
} axis_rule;

static const axis_rule axis_rules[] = {
    {"ArgMax", 0}, {"ArgMin", 0}, {"Compress", 0}, {"Concat", 0}, {"Flatten", 1}, {"Gather", 0},
    {"GatherElements", 0}, {"Hardmax", 0}, {"LayerNormalization", 0}, {"LogSoftmax", 0}, {"LpNormalization", 0},
    {"OneHot", 1}, {"ScatterElements", 0}, {"Softmax", 0}, {"Split", 0}, {"TopK", 0}, {"Unique", 0},
};

static bool check_axis(const ir_graph *g, const ir_node *n, const op_checks *c, char *why, size_t why_size) {
    if (c->axis_rule < 0) return true;
    const axis_rule *r = &axis_rules[c->axis_rule];
    const ir_attr *a = node_attr(n, "axis");
    if (!a) { /* the default is in range; Concat has none */
        if (strcmp(n->op_type, "Concat") == 0) return FAIL("needs an axis");
        return true;
    }
    if (a->kind != IR_ATTR_INT) return FAIL("axis must be an int");
    int32_t rank = in_rank(g, n, 0);
    if (rank < 0) return true;
    /* OneHot's axis is one of the output's r + 1 axes: [-r - 1, r] */
    bool onehot = strcmp(n->op_type, "OneHot") == 0;
    int64_t hi = rank - 1 + r->extra, lo = -(int64_t)rank - (onehot ? 1 : 0);
    if (a->i < lo || a->i > hi) return FAIL("axis is out of range for rank %d (axis = %lld)", rank, (long long)a->i);
    return true;
}

/* Entries of an ints attribute, each in [lo, hi]; n_want (>= 0) entries. */
static bool check_ints(const ir_node *n, const char *name, int32_t n_want, int64_t lo, int64_t hi, char *why,
                       size_t why_size) {
    const int64_t *v;
    int32_t nv = node_attr_ints(n, name, &v);
    if (nv < 0) return true;
    if (n_want >= 0 && nv != n_want) return FAIL("%s has %d entries; %d wanted", name, nv, n_want);
    for (int32_t k = 0; k < nv; k++)
        if (v[k] < lo || v[k] > hi)
            return FAIL("%s[%d] = %lld is out of range [%lld, %lld]", name, k, (long long)v[k], (long long)lo,
                        (long long)hi);
    return true;
}

/* Conv, ConvInteger, QLinearConv, ConvTranspose and the windowed pools. */
static bool check_window(const ir_graph *g, const ir_node *n, const op_checks *c, char *why, size_t why_size) {
    if (!c->window) return true;
    const char *op = n->op_type;
    bool conv = strcmp(op, "Conv") == 0 || strcmp(op, "ConvInteger") == 0 || strcmp(op, "QLinearConv") == 0;
    bool tconv = strcmp(op, "ConvTranspose") == 0;
    bool pool = strcmp(op, "MaxPool") == 0 || strcmp(op, "AveragePool") == 0 || strcmp(op, "LpPool") == 0;
    if (!conv && !tconv && !pool) return true;
    int32_t wi = strcmp(op, "QLinearConv") == 0 ? 3 : 1;
    int32_t r = in_rank(g, n, 0), wr = pool ? -1 : in_rank(g, n, wi);
    if (r < 0) r = wr;
    if (r < 0) return true; /* checked again when the shapes are known */
    if (r < 3 || (wr >= 0 && wr != r)) return FAIL("needs X [N, C, ...] and W of the same rank");
    int32_t n_sp = r - 2;
    if (n_sp > CONV_MAX_SPATIAL) return FAIL("%d spatial axes are not supported", n_sp);
    const int64_t *ks;
    int32_t nk = node_attr_ints(n, "kernel_shape", &ks);
    if (pool && nk != n_sp) return FAIL("kernel_shape must have %d entries", n_sp);
    if (nk >= 0 && nk != n_sp) return FAIL("kernel_shape has %d entries", nk);
    int64_t kernel[CONV_MAX_SPATIAL], in[CONV_MAX_SPATIAL];
    for (int32_t d = 0; d < n_sp; d++) {
        int64_t wd = pool ? -1 : in_dim(g, n, wi, 2 + d);
        if (nk >= 0 && wd >= 0 && ks[d] != wd)
            return FAIL("kernel_shape disagrees with W '%s'", g->values[n->inputs[wi]].name);
        kernel[d] = nk >= 0 ? ks[d] : wd >= 0 ? wd : 1;
        in[d] = in_dim(g, n, 0, 2 + d);
    }
    if (!pool) {
        int64_t group = node_attr_int(n, "group", 1), C = in_dim(g, n, 0, 1), w0 = in_dim(g, n, wi, 0),
                w1 = in_dim(g, n, wi, 1);
        if (group < 1 || group > CONV_MAX_WINDOW) return FAIL("group must be positive, not %lld", (long long)group);
        bool fits = tconv ? (C < 0 || C % group == 0) && (C < 0 || w0 < 0 || w0 == C)
                          : (C < 0 || C % group == 0) && (w0 < 0 || w0 % group == 0) &&
                                (C < 0 || w1 < 0 || w1 == C / group);
        if (!fits)
            return FAIL("W [%lld, %lld, ...] does not fit %lld input channels in %lld groups", (long long)w0,
                        (long long)w1, (long long)C, (long long)group);
    }
    if (tconv) { /* its window runs over the output: only the attributes' own bounds */
        conv_auto_pad ap;
        if (!conv_auto_pad_of(n, &ap)) return FAIL("auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID");
        for (int32_t d = 0; d < n_sp; d++)
            if (kernel[d] < 1 || kernel[d] > CONV_MAX_WINDOW)
                return FAIL("kernel, stride and dilation must be positive (axis %d)", d);
        return check_ints(n, "strides", n_sp, 1, CONV_MAX_WINDOW, why, why_size) &&
               check_ints(n, "dilations", n_sp, 1, CONV_MAX_WINDOW, why, why_size) &&
               check_ints(n, "pads", 2 * n_sp, 0, CONV_MAX_WINDOW, why, why_size) &&
               check_ints(n, "output_padding", n_sp, 0, CONV_MAX_WINDOW, why, why_size) &&
               check_ints(n, "output_shape", -1, 0, IR_MAX_DIM, why, why_size);
    }
    conv_geom geom;
    return conv_geom_init(n, n_sp, in, kernel, pool && node_attr_int(n, "ceil_mode", 0) != 0, &geom, why, why_size);
}

/* Transpose's perm: a permutation of the input's axes. */
static bool check_perm(const ir_graph *g, const ir_node *n, const op_checks *c, char *why, size_t why_size) {
    if (!c->perm) return true;
    const int64_t *p;
    int32_t np = node_attr_ints(n, "perm", &p), r = in_rank(g, n, 0);
    if (np < 0 || r < 0) return true;
    if (np != r) return FAIL("perm has %d entries for an input of rank %d", np, r);
    uint64_t seen = 0;
    for (int32_t k = 0; k < np; k++) {
        if (p[k] < 0 || p[k] >= r || r > 64 || (seen >> p[k] & 1))
            return FAIL("perm is not a permutation of the %d axes", r);
        seen |= (uint64_t)1 << p[k];
    }
    return true;
}

/* Reshape to a constant shape, when the input's shape is known: the CPU
 * kernel's checks, before any backend sizes a buffer from the shape. */
static bool check_reshape(const ir_graph *g, const ir_node *n, const op_checks *c, char *why, size_t why_size) {
    if (!c->reshape || n->opset < 5) return true;
    if (n->n_inputs < 2 || n->inputs[1] < 0 || n->inputs[0] < 0) return true;
    const ir_tensor *s = g->values[n->inputs[1]].konst;
    const ir_type *xt = &g->values[n->inputs[0]].type;
    if (!s || s->dtype != SEAM_DTYPE_INT64 || xt->kind != IR_TYPE_TENSOR || xt->rank < 0) return true;
    if (s->numel > INFER_MAX_RANK)
        return FAIL("the shape must be an int64 tensor of at most %d entries", INFER_MAX_RANK);
    int64_t x_numel = 1;
    for (int32_t d = 0; d < xt->rank; d++) {
        int64_t v = xt->dims[d].v;
        if (v < 0 || (v && x_numel > IR_MAX_DIM / v)) return true; /* checked at run time */
        x_numel *= v;
    }
    bool allowzero = node_attr_int(n, "allowzero", 0) != 0;
    int32_t infer_at = -1;
    int64_t known = 1;
    for (int32_t d = 0; d < (int32_t)s->numel; d++) {
        int64_t v;
        memcpy(&v, (const char *)s->data + 8 * d, 8);
        if (v == 0 && !allowzero) {
            if (d >= xt->rank) return FAIL("shape[%d] = 0 copies a dim the input (rank %d) lacks", d, xt->rank);
            v = xt->dims[d].v;
        }
        if (v == -1) {
            if (infer_at >= 0) return FAIL("the shape has more than one -1");
            infer_at = d;
            continue;
        }
        if (v < 0) return FAIL("shape[%d] = %lld is not valid", d, (long long)v);
        if (v && known > IR_MAX_DIM / v) return FAIL("the shape is too large");
        known *= v;
    }
    if (infer_at >= 0 ? known == 0 || x_numel % known : known != x_numel)
        return FAIL("cannot reshape '%s' (%lld elements) to a shape of %lld elements", g->values[n->inputs[0]].name,
                    (long long)x_numel, (long long)known);
    return true;
}

/* Integer attributes that size, multiply, divide or offset what an op
 * computes: bounded here, once for every backend, so that no kernel sees a
 * product or sum that wrapped (blocksize^2 of 2^62 is 0: a division by
 * zero; EyeLike's row + k of 2^63 - 1 wraps). A missing attribute is
 * checked as `dflt`; a list attribute (`ints`) entry by entry. An op's
 * rules are adjacent. */
#define DIM_MAX IR_MAX_DIM
static const struct attr_bound {
    const char *op_type, *attr;
    int64_t dflt, lo, hi;
    bool ints;
} attr_bounds[] = {
    {"DepthToSpace", "blocksize", -1, 1, CONV_MAX_WINDOW, false},
    {"EyeLike", "k", 0, -DIM_MAX, DIM_MAX, false},
    {"GRU", "hidden_size", 1, 1, DIM_MAX, false},
    {"GatherND", "batch_dims", 0, 0, INFER_MAX_RANK, false},
    {"LRN", "size", -1, 1, CONV_MAX_WINDOW, false},
    {"LSTM", "hidden_size", 1, 1, DIM_MAX, false},
    {"MaxUnpool", "kernel_shape", 0, 1, CONV_MAX_WINDOW, true},
    {"MaxUnpool", "strides", 0, 1, CONV_MAX_WINDOW, true},
    {"MaxUnpool", "pads", 0, 0, CONV_MAX_WINDOW, true},
    {"Pad", "pads", 0, -DIM_MAX, DIM_MAX, true},     /* an attribute before opset 11 */
    {"Pad", "paddings", 0, -DIM_MAX, DIM_MAX, true}, /* opset 1 */
    {"RNN", "hidden_size", 1, 1, DIM_MAX, false},
    {"RoiAlign", "output_height", 1, 1, DIM_MAX, false},
    {"RoiAlign", "output_width", 1, 1, DIM_MAX, false},
    {"RoiAlign", "sampling_ratio", 0, 0, CONV_MAX_WINDOW, false},
    {"SpaceToDepth", "blocksize", -1, 1, CONV_MAX_WINDOW, false},
    {"Split", "split", 0, 0, DIM_MAX, true}, /* an attribute before opset 13 */
    {"TfIdfVectorizer", "ngram_indexes", 0, 0, DIM_MAX - 1, true},
    {"TfIdfVectorizer", "min_gram_length", 1, 1, CONV_MAX_WINDOW, false},
    {"TfIdfVectorizer", "max_gram_length", 1, 1, CONV_MAX_WINDOW, false},
    {"TfIdfVectorizer", "max_skip_count", 0, 0, CONV_MAX_WINDOW, false},
    {"TopK", "k", 0, 0, DIM_MAX, false}, /* an attribute before opset 10 */
};

/* TfIdfVectorizer's ngram_counts: where the n-grams of each length start in
 * the pool, so each in [0, pool size] and none before the one ahead of it
 * (a start of 2^63 - 1 wrapped the CPU kernel's walk of the pool: SIGSEGV). */
static bool check_ngram_counts(const ir_node *n, char *why, size_t why_size) {
    const int64_t *c, *v;
    int32_t nc = node_attr_ints(n, "ngram_counts", &c), np = node_attr_ints(n, "pool_int64s", &v);
    if (nc < 0) return true;
    if (np < 0) {
        const ir_attr *s = node_attr(n, "pool_strings");
        np = s && s->kind == IR_ATTR_STRINGS ? s->n : 0;
    }
    for (int32_t k = 0; k < nc; k++)
        if (c[k] < (k ? c[k - 1] : 0) || c[k] > np)
            return FAIL("ngram_counts[%d] = %lld is out of range [%lld, %d] (the pool's %d entries, in order)", k,
                        (long long)c[k], (long long)(k ? c[k - 1] : 0), np, np);
    return true;
}

/* Upsample's scales (an attribute before opset 9), Resize's and
 * Upsample-9's when a constant: each finite and >= 0, and an output dim
 * (input dim x scale) no longer than IR_MAX_DIM, so that no backend turns
 * inf or 1e30 into an integer size. */
static bool check_scales(const ir_graph *g, const ir_node *n, char *why, size_t why_size) {
    bool upsample = strcmp(n->op_type, "Upsample") == 0;
    const float *fa = NULL;
    int32_t ns = upsample ? node_attr_floats(n, "scales", &fa) : -1;
    if (ns < 0) { /* the input: Upsample-9 and Resize-10 input 1, Resize-11 input 2 */
        int32_t i = upsample || n->opset < 11 ? 1 : 2;
        const ir_tensor *t = i < n->n_inputs && n->inputs[i] >= 0 ? g->values[n->inputs[i]].konst : NULL;
        if (!t || t->dtype != SEAM_DTYPE_FLOAT32 || t->numel > INFER_MAX_RANK) return true;
        fa = t->data, ns = (int32_t)t->numel;
    }
    int32_t r = in_rank(g, n, 0);
    for (int32_t k = 0; k < ns; k++) {
        float s;
        memcpy(&s, fa + k, sizeof(s));
        if (!(s >= 0 && s <= (float)DIM_MAX))
            return FAIL("scales[%d] = %g is out of range [0, %lld]", k, (double)s, (long long)DIM_MAX);
        int64_t d = ns == r ? in_dim(g, n, 0, k) : -1;
        if (d > 0 && (double)d * s > (double)DIM_MAX)
            return FAIL("scales[%d] = %g makes axis %d %g long, over the limit %lld", k, (double)s, k, (double)d * s,
                        (long long)DIM_MAX);
    }
    return true;
}

/* Pad's constant pads input (opset 11): the attribute's bounds. */
static bool check_pads_input(const ir_graph *g, const ir_node *n, char *why, size_t why_size) {
    if (n->opset < 11 || n->n_inputs < 2 || n->inputs[1] < 0) return true;
    const ir_tensor *t = g->values[n->inputs[1]].konst;
    if (!t || t->dtype != SEAM_DTYPE_INT64) return true;
    for (int64_t k = 0; k < t->numel; k++) {
        int64_t v;
        memcpy(&v, (const char *)t->data + 8 * k, 8);
        if (v < -DIM_MAX || v > DIM_MAX)
            return FAIL("pads[%lld] = %lld is out of range [%lld, %lld]", (long long)k, (long long)v,
                        (long long)-DIM_MAX, (long long)DIM_MAX);
    }
    return true;
}

/* Constant: exactly one value attribute, as ONNX's checker says. With two
 * (a value tensor and a value_float) inference took the type from one and
 * the data from the other, and dnnl compiled a view whose shape did not
 * match its bytes (SIGSEGV in dnnl_memory_create, found by the sweep). */
static bool check_constant(const ir_node *n, char *why, size_t why_size) {
    static const char *const names[] = {"value",        "value_float",  "value_floats",  "value_int",
                                        "value_ints",   "value_string", "value_strings", "sparse_value"};
    int32_t count = 0;
    const char *first = NULL, *second = NULL;
    for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
        if (node_attr(n, names[k])) {
            if (count == 0) first = names[k];
            else if (count == 1) second = names[k];
            count++;
        }
    if (count > 1)
        return FAIL("has %d value attributes (%s, %s%s); a Constant takes exactly one", count, first, second,
                    count > 2 ? ", ..." : "");
    return true;
}

static bool check_bound(const ir_graph *g, const ir_node *n, const op_checks *c, char *why, size_t why_size) {
    if (c->scan) { /* the scan inputs are the last num_scan_inputs inputs (opset 8: after sequence_lens) */
        int64_t m = node_attr_int(n, "num_scan_inputs", -1), most = n->opset < 9 ? n->n_inputs - 1 : n->n_inputs;
        if (m < 1 || m > most)
            return FAIL("num_scan_inputs = %lld is out of range [1, %lld] (its %s)", (long long)m, (long long)most,
                        n->opset < 9 ? "inputs after sequence_lens" : "inputs");
    }
    const size_t count = sizeof(attr_bounds) / sizeof(attr_bounds[0]);
    for (size_t k = c->bound_rule < 0 ? count : (size_t)c->bound_rule; k < count && strcmp(attr_bounds[k].op_type, n->op_type) == 0; k++) {
        const struct attr_bound *b = &attr_bounds[k];
        if (b->ints) {
            if (!check_ints(n, b->attr, -1, b->lo, b->hi, why, why_size)) return false;
            continue;
        }
        const ir_attr *a = node_attr(n, b->attr);
        if (a && a->kind != IR_ATTR_INT) return FAIL("%s must be an int", b->attr);
        int64_t v = a ? a->i : b->dflt;
        if (v < b->lo || v > b->hi)
            return FAIL("%s = %lld is out of range [%lld, %lld]", b->attr, (long long)v, (long long)b->lo,
                        (long long)b->hi);
    }
    return (!c->scales || check_scales(g, n, why, why_size)) && (!c->pad || check_pads_input(g, n, why, why_size)) &&
           (!c->tfidf || check_ngram_counts(n, why, why_size)) && (!c->constant || check_constant(n, why, why_size));
}

void op_checks_find(const char *domain, const char *op_type, op_checks *c) {
    memset(c, 0, sizeof(*c));
    c->arity = find_arity(domain, op_type);
    c->axis_rule = -1;
    c->bound_rule = -1;
    if (!seam_op_default_domain(domain)) return;
    for (size_t k = sizeof(attr_bounds) / sizeof(attr_bounds[0]); k-- > 0;) /* the op's first rule */
        if (strcmp(op_type, attr_bounds[k].op_type) == 0) c->bound_rule = (int32_t)k;
    c->scales = strcmp(op_type, "Upsample") == 0 || strcmp(op_type, "Resize") == 0;
    c->pad = strcmp(op_type, "Pad") == 0;
    c->tfidf = strcmp(op_type, "TfIdfVectorizer") == 0;
    c->constant = strcmp(op_type, "Constant") == 0;
    for (size_t k = 0; k < sizeof(axis_rules) / sizeof(axis_rules[0]); k++)
        if (strcmp(op_type, axis_rules[k].op_type) == 0) c->axis_rule = (int32_t)k;
    static const char *const window_ops[] = {"Conv", "ConvInteger", "QLinearConv", "ConvTranspose",
                                             "MaxPool", "AveragePool", "LpPool"};
    for (size_t k = 0; k < sizeof(window_ops) / sizeof(window_ops[0]); k++)
        if (strcmp(op_type, window_ops[k]) == 0) c->window = true;
    c->perm = strcmp(op_type, "Transpose") == 0;
    c->reshape = strcmp(op_type, "Reshape") == 0;
    c->leading_optional = strcmp(op_type, "Loop") == 0 || strcmp(op_type, "Scan") == 0;
    c->scan = strcmp(op_type, "Scan") == 0;
}

bool op_validate_with(const ir_graph *g, const ir_node *n, const op_checks *c, char *why, size_t why_size) {
    if (!check_arity(n, c, why, why_size)) return false;
    if (!check_axis(g, n, c, why, why_size)) return false;
    if (!check_window(g, n, c, why, why_size)) return false;
    if (!check_perm(g, n, c, why, why_size)) return false;
    if (!check_reshape(g, n, c, why, why_size)) return false;
    return check_bound(g, n, c, why, why_size);
}

bool op_validate(const ir_graph *g, const ir_node *n, char *why, size_t why_size) {
    op_checks c;
    op_checks_find(n->domain, n->op_type, &c);
    return op_validate_with(g, n, &c, why, why_size);
}
