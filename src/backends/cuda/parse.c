/* What the CUDA backend runs: a node view parsed into cu_params (kind,
 * attributes, constant operands), for supports() and for compile. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

size_t cu_dtype_size(seam_dtype t) {
    switch (t) {
    case SEAM_DTYPE_FLOAT32: case SEAM_DTYPE_INT32: return 4;
    case SEAM_DTYPE_INT64: return 8;
    case SEAM_DTYPE_BOOL: return 1;
    default: return 0;
    }
}

static int64_t attr_i(const seam_node_view *n, const char *name, int64_t def) {
    int64_t v;
    return seam_node_attr_int(n, name, &v) ? v : def;
}
static float attr_f(const seam_node_view *n, const char *name, float def) {
    float v;
    return seam_node_attr_float(n, name, &v) ? v : def;
}
/* ints into out (at most max); count, or -1 if absent, -2 if too many */
static int attr_is(const seam_node_view *n, const char *name, int64_t *out, int max) {
    const int64_t *v;
    int32_t c;
    if (!seam_node_attr_ints(n, name, &v, &c)) return -1;
    if (c > max) return -2;
    for (int32_t k = 0; k < c; k++) out[k] = v[k];
    return c;
}

static bool present(const seam_node_view *n, int k) {
    return k < n->n_inputs && n->inputs[k].name && n->inputs[k].name[0];
}

static int64_t numel(const seam_value_info *v) {
    int64_t e = 1;
    for (int32_t d = 0; d < v->rank; d++) e *= v->dims[d];
    return e;
}

#define NO(...) (snprintf(why, why_size, __VA_ARGS__), false)

/* A constant int64/int32 vector input (axes of opset 13/18, Slice's
 * starts, Pad's pads) of at most max values: into out. */
static bool const_ints(const seam_node_view *n, const seam_subgraph_view *sg, int k, int64_t *out, int *count, int max,
                       char *why, size_t why_size) {
    if (!n->input_constant || !n->input_constant[k])
        return NO("%s's input %d (%s) is computed at run time; cuda needs it constant", n->op_type, k, n->inputs[k].name);
    if (!sg) { /* supports(): its values are read at compile */
        *count = 0;
        return true;
    }
    seam_tensor_view c;
    if (!seam_subgraph_constant(sg, n->inputs[k].name, &c)) return NO("%s's input %s is not a constant", n->op_type, n->inputs[k].name);
    size_t es = c.dtype == SEAM_DTYPE_INT64 ? 8 : c.dtype == SEAM_DTYPE_INT32 ? 4 : 0;
    if (!es || c.nbytes / es > (size_t)max) return NO("%s's input %s: int32/int64 of at most %d values expected", n->op_type, n->inputs[k].name, max);
    *count = (int)(c.nbytes / es);
    for (int i = 0; i < *count; i++)
        out[i] = es == 8 ? ((const int64_t *)c.data)[i] : ((const int32_t *)c.data)[i];
    return true;
}

static bool const_float(const seam_node_view *n, const seam_subgraph_view *sg, int k, float *out, char *why, size_t why_size) {
    if (!n->input_constant || !n->input_constant[k])
        return NO("%s's input %d (%s) is computed at run time; cuda needs it constant", n->op_type, k, n->inputs[k].name);
    if (n->inputs[k].dtype != SEAM_DTYPE_FLOAT32) return NO("%s's input %s must be float32", n->op_type, n->inputs[k].name);
    if (!sg) return true;
    seam_tensor_view c;
    if (!seam_subgraph_constant(sg, n->inputs[k].name, &c) || c.nbytes != 4)
        return NO("%s's input %s must be a constant of one float", n->op_type, n->inputs[k].name);
    memcpy(out, c.data, 4);
    return true;
}

/* A constant float32 vector input (Resize's scales) of at most max values:
 * into out (at supports(), only that it is constant: count 0). */
static bool const_floats(const seam_node_view *n, const seam_subgraph_view *sg, int k, double *out, int *count, int max,
                         char *why, size_t why_size) {
    if (!n->input_constant || !n->input_constant[k])
        return NO("%s's input %d (%s) is computed at run time; cuda needs it constant", n->op_type, k, n->inputs[k].name);
    if (n->inputs[k].dtype != SEAM_DTYPE_FLOAT32) return NO("%s's input %s must be float32", n->op_type, n->inputs[k].name);
    if (!sg) {
        *count = 0;
        return true;
    }
    seam_tensor_view c;
    if (!seam_subgraph_constant(sg, n->inputs[k].name, &c)) return NO("%s's input %s is not a constant", n->op_type, n->inputs[k].name);
    if (c.dtype != SEAM_DTYPE_FLOAT32 || c.nbytes / 4 > (size_t)max)
        return NO("%s's input %s: float32 of at most %d values expected", n->op_type, n->inputs[k].name, max);
    *count = (int)(c.nbytes / 4);
    for (int i = 0; i < *count; i++) {
        float f;
        memcpy(&f, (const char *)c.data + 4 * (size_t)i, 4);
        out[i] = f;
    }
    return true;
}

typedef struct unary_name {
    const char *op;
    sc_unary_op uop;
} unary_name;
static const unary_name unaries[] = {
    {"Relu", SC_RELU}, {"Sigmoid", SC_SIGMOID}, {"Tanh", SC_TANH}, {"LeakyRelu", SC_LEAKY_RELU}, {"Clip", SC_CLIP},
    {"Erf", SC_ERF}, {"Gelu", SC_GELU}, {"Exp", SC_EXP}, {"Log", SC_LOG}, {"Sqrt", SC_SQRT}, {"Abs", SC_ABS},
    {"Neg", SC_NEG}, {"Reciprocal", SC_RECIPROCAL}, {"Elu", SC_ELU}, {"HardSigmoid", SC_HARD_SIGMOID},
    {"HardSwish", SC_HARD_SWISH}, {"Softplus", SC_SOFTPLUS}, {"Floor", SC_FLOOR}, {"Ceil", SC_CEIL}, {"Sin", SC_SIN},
    {"Cos", SC_COS},
};
static const struct {
    const char *op;
    sc_binary_op bop;
} binaries[] = {{"Add", SC_ADD}, {"Sub", SC_SUB}, {"Mul", SC_MUL}, {"Div", SC_DIV}, {"Pow", SC_POW},
                {"Max", SC_MAX}, {"Min", SC_MIN}, {"PRelu", SC_PRELU}};

/* Spatial pads of a Conv or pool from auto_pad or pads: begin p0, end p1. */
static bool spatial_pads(const seam_node_view *n, int nsp, const int64_t *k, const int64_t *s, const int64_t *d,
                         int64_t *p0, int64_t *p1, char *why, size_t why_size) {
    const char *ap = "NOTSET";
    seam_node_attr_string(n, "auto_pad", &ap);
    int64_t pads[6] = {0};
    int np = attr_is(n, "pads", pads, 6);
    if (np == -2 || (np >= 0 && np != 2 * nsp)) return NO("%s: pads must have %d values", n->op_type, 2 * nsp);
    for (int i = 0; i < nsp; i++) {
        int64_t in = n->inputs[0].dims[2 + i], out = n->outputs[0].dims[2 + i];
        if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
            int64_t total = (out - 1) * s[i] + (k[i] - 1) * d[i] + 1 - in;
            if (total < 0 || in < 0 || out < 0) total = 0; /* symbolic: decided at compile */
            p0[i] = !strcmp(ap, "SAME_UPPER") ? total / 2 : total - total / 2;
            p1[i] = total - p0[i];
        } else if (!strcmp(ap, "VALID")) {
            p0[i] = p1[i] = 0;
        } else if (!strcmp(ap, "NOTSET")) {
            p0[i] = np > 0 ? pads[i] : 0;
            p1[i] = np > 0 ? pads[nsp + i] : 0;
        } else {
            return NO("%s: auto_pad '%s' unknown", n->op_type, ap);
        }
        if (p0[i] < 0 || p1[i] < 0) return NO("%s: negative pads", n->op_type);
    }
    return true;
}

static bool parse_gather(const seam_node_view *n, const seam_subgraph_view *sg, cu_params *p, char *why, size_t why_size) {
    const seam_value_info *x = &n->inputs[0];
    if (n->n_inputs != 2 || x->dtype != SEAM_DTYPE_FLOAT32) return NO("Gather: cuda gathers float32 data");
    if (n->inputs[1].dtype != SEAM_DTYPE_INT64 && n->inputs[1].dtype != SEAM_DTYPE_INT32)
        return NO("Gather: indices must be int32 or int64");
    p->kind = K_GATHER;
    p->axis = attr_i(n, "axis", 0);
    if (p->axis < 0) p->axis += x->rank;
    if (p->axis < 0 || p->axis >= x->rank) return NO("Gather: axis out of range");
    return true;
}

static bool parse_conv(const seam_node_view *n, const seam_subgraph_view *sg, cu_params *p, char *why, size_t why_size) {
    const seam_value_info *x = &n->inputs[0];
    if (n->n_inputs < 2 || x->rank < 3 || x->rank > 5) return NO("Conv: cuda takes 1-D, 2-D and 3-D convolutions");
    if (!n->input_constant || !n->input_constant[1]) return NO("Conv: the weights are computed at run time (cuda lays them out at compile)");
    if (present(n, 2) && !n->input_constant[2]) return NO("Conv: the bias is computed at run time");
    if (n->inputs[1].dtype != SEAM_DTYPE_FLOAT32 || n->inputs[1].rank != x->rank) return NO("Conv: float32 weights of the input's rank");
    p->kind = K_CONV;
    p->nsp = x->rank - 2;
    p->group = attr_i(n, "group", 1);
    int64_t k[3];
    for (int i = 0; i < p->nsp; i++) k[i] = n->inputs[1].dims[2 + i], p->strides[i] = 1, p->dil[i] = 1;
    int c = attr_is(n, "strides", p->strides, 3);
    if (c >= 0 && c != p->nsp) return NO("Conv: strides must have %d values", p->nsp);
    c = attr_is(n, "dilations", p->dil, 3);
    if (c >= 0 && c != p->nsp) return NO("Conv: dilations must have %d values", p->nsp);
    /* unequal pads (SAME of an odd total, TensorFlow's exports): the
     * lowering pads the input by the difference first, as cuDNN pads both
     * sides alike */
    if (!spatial_pads(n, p->nsp, k, p->strides, p->dil, p->pads, p->pads_end, why, why_size)) return false;
    if (p->group < 1 || (x->dims[1] >= 0 && x->dims[1] % p->group)) return NO("Conv: group %lld does not divide the channels", (long long)p->group);
    return true;
}

static bool parse_gemm(const seam_node_view *n, const seam_subgraph_view *sg, cu_params *p, char *why, size_t why_size) {
    const seam_value_info *x = &n->inputs[0], *y = &n->outputs[0];
    if (n->n_inputs < 2 || x->rank != 2 || n->inputs[1].rank != 2 || n->inputs[1].dtype != SEAM_DTYPE_FLOAT32)
        return NO("Gemm: cuda takes float32 matrices");
    p->kind = K_GEMM;
    p->trans_a = attr_i(n, "transA", 0);
    p->trans_b = attr_i(n, "transB", 0);
    p->alpha = attr_f(n, "alpha", 1.0f);
    p->beta = attr_f(n, "beta", 1.0f);
    if (present(n, 2)) {
        const seam_value_info *c = &n->inputs[2];
        int64_t cols = y->dims[1];
        if (!n->input_constant[2]) return NO("Gemm: C is computed at run time (cuda takes a constant bias)");
        if (c->dtype != SEAM_DTYPE_FLOAT32) return NO("Gemm: C must be float32");
        int64_t e = numel(c);
        bool one_row = c->rank == 1 || (c->rank == 2 && c->dims[0] == 1);
        bool row = e == 1 || (one_row && (e == cols || (p->dyn && cols < 0)));
        if (!row) return NO("Gemm: C of this shape (cuda takes a bias of one value or one row)");
    }
    return true;
}

static bool parse_matmul(const seam_node_view *n, const seam_subgraph_view *sg, cu_params *p, char *why, size_t why_size) {
    const seam_value_info *x = &n->inputs[0], *y = &n->outputs[0];
    const seam_value_info *b = &n->inputs[1];
    if (n->n_inputs != 2 || b->dtype != SEAM_DTYPE_FLOAT32) return NO("MatMul: cuda takes float32");
    if (x->rank < 1 || b->rank < 1) return NO("MatMul of scalars");
    p->kind = K_MATMUL;
    if (b->rank <= 2) return true; /* A's batch folds into its rows */
    if (p->dyn) { /* equal batches are checked at compile */
        if (x->rank != b->rank || y->rank != b->rank)
            return NO("MatMul: broadcast batch dims (cuda takes equal batches, or a 2-D right operand)");
        return true;
    }
    int64_t ba = 1, bb = 1, by = 1;
    for (int32_t d = 0; d < x->rank - 2; d++) ba *= x->dims[d];
    for (int32_t d = 0; d < b->rank - 2; d++) bb *= b->dims[d];
    for (int32_t d = 0; d < y->rank - 2; d++) by *= y->dims[d];
    if (x->rank < 2 || ba != bb || bb != by)
        return NO("MatMul: broadcast batch dims (cuda takes equal batches, or a 2-D right operand)");
    return true;
}

static bool parse_bn(const seam_node_view *n, const seam_subgraph_view *sg, cu_params *p, char *why, size_t why_size) {
    const seam_value_info *x = &n->inputs[0];
    if (n->n_inputs != 5 || x->rank < 2) return NO("BatchNormalization: five inputs and rank >= 2");
    for (int k = 1; k < 5; k++)
        if (!n->input_constant || !n->input_constant[k] || n->inputs[k].dtype != SEAM_DTYPE_FLOAT32 ||
            (x->dims[1] >= 0 && numel(&n->inputs[k]) != x->dims[1]))
            return NO("BatchNormalization: cuda takes constant float32 statistics of one value a channel");
    if (attr_i(n, "training_mode", 0)) return NO("BatchNormalization in training mode");
    p->kind = K_BN;
    p->eps = attr_f(n, "epsilon", 1e-5f);
    return true;
}

static bool parse_pool(const seam_node_view *n, const seam_subgraph_view *sg, cu_params *p, char *why, size_t why_size) {
    const char *op = n->op_type;
    const seam_value_info *x = &n->inputs[0];
    if (x->rank != 3 && x->rank != 4) return NO("%s: cuda pools 1-D and 2-D", op);
    p->kind = K_POOL;
    p->pool_max = op[0] == 'M';
    p->nsp = x->rank - 2;
    int64_t k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1}, p0[3], p1[3];
    if (attr_is(n, "kernel_shape", k, 3) != p->nsp) return NO("%s: kernel_shape must have %d values", op, p->nsp);
    int c = attr_is(n, "strides", s, 3);
    if (c >= 0 && c != p->nsp) return NO("%s: strides must have %d values", op, p->nsp);
    c = attr_is(n, "dilations", d, 3);
    if (c >= 0 && c != p->nsp) return NO("%s: dilations must have %d values", op, p->nsp);
    if (!spatial_pads(n, p->nsp, k, s, d, p0, p1, why, why_size)) return false;
    p->include_pad = (int32_t)attr_i(n, "count_include_pad", 0);
    int off = p->nsp == 1 ? 1 : 0; /* a 1-D pool is a 2-D one of height 1 */
    for (int i = 0; i < 2; i++) p->k[i] = 1, p->s[i] = 1, p->d[i] = 1, p->p0[i] = p->p1[i] = 0;
    for (int i = 0; i < p->nsp; i++) {
        p->k[i + off] = k[i], p->s[i + off] = s[i], p->d[i + off] = d[i], p->p0[i + off] = p0[i], p->p1[i + off] = p1[i];
        if (!p->pool_max && d[i] != 1) return NO("AveragePool with dilations");
        if (k[i] < 1 || s[i] < 1 || d[i] < 1) return NO("%s: kernel, strides and dilations must be >= 1", op);
    }
    return true;
}

static bool parse_gpool(const seam_node_view *n, const seam_subgraph_view *sg, cu_params *p, char *why, size_t why_size) {
    const char *op = n->op_type;
    const seam_value_info *x = &n->inputs[0];
    if (x->rank < 3) return NO("%s of rank %d", op, x->rank);
    p->kind = K_GPOOL;
    p->rop = op[6] == 'A' ? SC_REDUCE_MEAN : SC_REDUCE_MAX;
    return true;
}

static bool parse_softmax(const seam_node_view *n, const seam_subgraph_view *sg, cu_params *p, char *why, size_t why_size) {
    const char *op = n->op_type;
    const seam_value_info *x = &n->inputs[0];
    p->kind = K_SOFTMAX;
    p->log = op[0] == 'L';
    bool old = n->opset >= 0 && n->opset < 13;
    p->axis = attr_i(n, "axis", old ? 1 : -1);
    if (p->axis < 0) p->axis += x->rank;
    if (p->axis < 0 || p->axis >= (x->rank ? x->rank : 1)) return NO("%s: axis out of range", op);
    if (!old)
        for (int32_t d = (int32_t)p->axis + 1; d < x->rank; d++)
            if (x->dims[d] != 1 && !(p->dyn && x->dims[d] < 0)) return NO("%s over axis %lld, not the last one", op, (long long)p->axis);
    return true;
}

static bool parse_ln(const seam_node_view *n, const seam_subgraph_view *sg, cu_params *p, char *why, size_t why_size) {
    const seam_value_info *x = &n->inputs[0];
    p->kind = K_LN;
    p->axis = attr_i(n, "axis", -1);
    if (p->axis < 0) p->axis += x->rank;
    if (p->axis < 0 || p->axis >= x->rank) return NO("LayerNormalization: axis out of range");
    p->eps = attr_f(n, "epsilon", 1e-5f);
    int64_t cols = 1;
    for (int32_t d = (int32_t)p->axis; d < x->rank; d++) cols = x->dims[d] < 0 || cols < 0 ? -1 : cols * x->dims[d];
    for (int k = 1; k < 3; k++)
        if (present(n, k) && (n->inputs[k].dtype != SEAM_DTYPE_FLOAT32 || (cols >= 0 && numel(&n->inputs[k]) != cols)))
            return NO("LayerNormalization: scale and bias of the normalized shape (no broadcasting)");
    if (!present(n, 1)) return NO("LayerNormalization without its scale");
    return true;
}

static bool parse_reduce(const seam_node_view *n, const seam_subgraph_view *sg, cu_params *p, char *why, size_t why_size) {
    const char *op = n->op_type;
    const seam_value_info *x = &n->inputs[0];
    p->kind = K_REDUCE;
    p->rop = !strcmp(op, "ReduceMean") ? SC_REDUCE_MEAN : !strcmp(op, "ReduceSum") ? SC_REDUCE_SUM
             : !strcmp(op, "ReduceMax") ? SC_REDUCE_MAX : SC_REDUCE_MIN;
    int64_t axes[SC_MAX_RANK];
    int c = attr_is(n, "axes", axes, SC_MAX_RANK);
    if (c == -2) return NO("%s: too many axes", op);
    if (present(n, 1) && !const_ints(n, sg, 1, axes, &c, SC_MAX_RANK, why, why_size)) return false;
    if (c <= 0 && !(present(n, 1) && !sg)) {
        if (attr_i(n, "noop_with_empty_axes", 0)) return NO("%s with noop_with_empty_axes and no axes", op);
        for (int32_t d = 0; d < x->rank; d++) p->axes_mask |= 1u << d;
    }
    for (int i = 0; i < c; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + x->rank : axes[i];
        if (a < 0 || a >= x->rank) return NO("%s: axis %lld out of range", op, (long long)axes[i]);
        p->axes_mask |= 1u << a;
    }
    return true;
}

static bool parse_transpose(const seam_node_view *n, const seam_subgraph_view *sg, cu_params *p, char *why, size_t why_size) {
    const seam_value_info *x = &n->inputs[0];
    p->kind = K_TRANSPOSE;
    int c = attr_is(n, "perm", p->perm, SC_MAX_RANK);
    if (c < 0)
        for (int32_t d = 0; d < x->rank; d++) p->perm[d] = x->rank - 1 - d;
    else if (c != x->rank) return NO("Transpose: perm has %d values for rank %d", c, x->rank);
    uint32_t seen = 0;
    for (int32_t d = 0; d < x->rank; d++) {
        if (p->perm[d] < 0 || p->perm[d] >= x->rank || (seen >> p->perm[d] & 1)) return NO("Transpose: bad perm");
        seen |= 1u << p->perm[d];
    }
    return true;
}

static bool parse_concat(const seam_node_view *n, const seam_subgraph_view *sg, cu_params *p, char *why, size_t why_size) {
    const seam_value_info *y = &n->outputs[0];
    p->kind = K_CONCAT;
    p->axis = attr_i(n, "axis", 0);
    if (p->axis < 0) p->axis += y->rank;
    if (p->axis < 0 || p->axis >= y->rank) return NO("Concat: axis out of range");
    for (int32_t k = 0; k < n->n_inputs; k++)
        if (!present(n, k) || n->inputs[k].dtype != SEAM_DTYPE_FLOAT32 || n->inputs[k].rank != y->rank)
            return NO("Concat: cuda concatenates float32 tensors of one rank");
    return true;
}

static const char *dt_name(seam_dtype t) {
    static const char *const names[] = {"undefined", "float32", "uint8", "int8", "uint16", "int16", "int32", "int64",
                                        "string", "bool", "float16", "float64", "uint32", "uint64", "complex64",
                                        "complex128", "bfloat16"};
    return (unsigned)t < sizeof(names) / sizeof(names[0]) ? names[t] : "undefined";
}

/* An axis in [-rank, rank) normalized into a, once only (seen). */
static bool norm_axis(const seam_node_view *n, int64_t axis, int32_t rank, uint32_t *seen, int64_t *a, char *why,
                      size_t why_size) {
    *a = axis < 0 ? axis + rank : axis;
    if (*a < 0 || *a >= rank) return NO("%s: axis %lld out of range for rank %d", n->op_type, (long long)axis, rank);
    if (*seen >> *a & 1) return NO("%s: axis %lld given twice", n->op_type, (long long)axis);
    *seen |= 1u << *a;
    return true;
}

/* Slice's clamping (ONNX): the first index and the count along a dim of len. */
static void slice_range(int64_t len, int64_t b, int64_t e, int64_t s, int64_t *first, int64_t *count) {
    if (b < 0) b += len;
    if (e < 0) e += len;
    int64_t hi = s > 0 ? len : len - 1, e_lo = s > 0 ? 0 : -1;
    b = b < 0 ? 0 : b > hi ? hi : b;
    e = e < e_lo ? e_lo : e > hi ? hi : e;
    int64_t diff = s > 0 ? e - b : b - e, m = s > 0 ? s : s == INT64_MIN ? INT64_MAX : -s;
    *count = len > 0 && diff > 0 ? (diff - 1) / m + 1 : 0;
    *first = *count ? b : 0;
}

/* Comparisons (float32, int32, int64 operands), Not/And/Or/Xor (bool)
 * into bool, one byte each; Where (a bool condition; float32, int32 or
 * int64 values). *handled false when op is none of them. */
static bool parse_mask(const seam_node_view *n, cu_params *p, bool *handled, char *why, size_t why_size) {
    static const struct {
        const char *op;
        sc_mask_op mop;
    } ops[] = {{"Equal", SC_EQUAL}, {"Less", SC_LESS}, {"Greater", SC_GREATER}, {"LessOrEqual", SC_LESS_EQUAL},
               {"GreaterOrEqual", SC_GREATER_EQUAL}, {"And", SC_AND}, {"Or", SC_OR}, {"Xor", SC_XOR}, {"Not", SC_NOT}};
    const char *op = n->op_type;
    const seam_value_info *y = &n->outputs[0];
    *handled = true;
    int want = -1;
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]) && want < 0; i++)
        if (!strcmp(op, ops[i].op)) want = (int)i;
    if (want < 0 && strcmp(op, "Where")) {
        *handled = false;
        return true;
    }
    int arity = want < 0 ? 3 : ops[want].mop == SC_NOT ? 1 : 2;
    if (n->n_inputs != arity) return NO("%s of %d inputs (%d expected)", op, n->n_inputs, arity);
    for (int k = 0; k < arity; k++) {
        if (!present(n, k)) return NO("%s: input %d absent", op, k);
        if (n->inputs[k].rank > y->rank) return NO("%s: input %d of higher rank than the output", op, k);
    }
    seam_dtype a = n->inputs[0].dtype, b = n->inputs[arity - 1].dtype;
    if (want < 0) {
        p->kind = K_WHERE;
        if (a != SEAM_DTYPE_BOOL) return NO("Where: its condition is %s, not bool", dt_name(a));
        a = n->inputs[1].dtype;
        if (a != b || a != y->dtype || (cu_dtype_size(a) != 4 && cu_dtype_size(a) != 8))
            return NO("Where of %s and %s: cuda selects float32, int32 or int64 values of one type", dt_name(a), dt_name(b));
        return true;
    }
    p->kind = K_MASK;
    p->mop = ops[want].mop;
    if (y->dtype != SEAM_DTYPE_BOOL) return NO("%s: its output is %s, not bool", op, dt_name(y->dtype));
    bool logic = p->mop >= SC_AND;
    if (a != b) return NO("%s of %s and %s: cuda compares operands of one type", op, dt_name(a), dt_name(b));
    if (logic && a != SEAM_DTYPE_BOOL) return NO("%s of %s: bool operands expected", op, dt_name(a));
    if (!logic && a != SEAM_DTYPE_FLOAT32 && a != SEAM_DTYPE_INT32 && a != SEAM_DTYPE_INT64)
        return NO("%s of %s: cuda compares float32, int32 and int64", op, dt_name(a));
    return true;
}

static bool parse_cast(const seam_node_view *n, cu_params *p, char *why, size_t why_size) {
    seam_dtype from = n->inputs[0].dtype, to = n->outputs[0].dtype;
    if (!cu_dtype_size(from) || !cu_dtype_size(to))
        return NO("Cast from %s to %s: cuda casts between float32, int32, int64 and bool only", dt_name(from), dt_name(to));
    if (attr_i(n, "to", -1) != (int64_t)to) return NO("Cast: its 'to' attribute is not its output's type %s", dt_name(to));
    p->kind = K_CAST;
    return true;
}

static bool parse_slice(const seam_node_view *n, const seam_subgraph_view *sg, cu_params *p, char *why, size_t why_size) {
    const seam_value_info *x = &n->inputs[0], *y = &n->outputs[0];
    p->kind = K_SLICE;
    if (x->rank != y->rank) return NO("Slice: the output's rank %d is not the input's %d", y->rank, x->rank);
    int64_t st[SC_MAX_RANK], en[SC_MAX_RANK], ax[SC_MAX_RANK], sp[SC_MAX_RANK];
    int ns = -1, ne = -1, na = -1, nsp = -1;
    bool old = n->opset >= 0 && n->opset < 10;
    if (old) {
        ns = attr_is(n, "starts", st, SC_MAX_RANK), ne = attr_is(n, "ends", en, SC_MAX_RANK);
        na = attr_is(n, "axes", ax, SC_MAX_RANK);
        if (ns < 0 || ne < 0 || na == -2) return NO("Slice (opset %lld): starts and ends of at most %d values expected", (long long)n->opset, SC_MAX_RANK);
        if (p->dyn) return true; /* the counts are checked at compile */
    } else {
        if (!present(n, 1) || !present(n, 2)) return NO("Slice without its starts and ends inputs");
        if (!const_ints(n, sg, 1, st, &ns, SC_MAX_RANK, why, why_size) || !const_ints(n, sg, 2, en, &ne, SC_MAX_RANK, why, why_size))
            return false;
        if (present(n, 3) && !const_ints(n, sg, 3, ax, &na, SC_MAX_RANK, why, why_size)) return false;
        if (present(n, 4) && !const_ints(n, sg, 4, sp, &nsp, SC_MAX_RANK, why, why_size)) return false;
        if (!sg) return true; /* the values are read at compile */
    }
    if (ns != ne || (na >= 0 && na != ns) || (nsp >= 0 && nsp != ns))
        return NO("Slice: starts, ends, axes and steps of different lengths (%d, %d, %d, %d)", ns, ne, na, nsp);
    for (int32_t d = 0; d < x->rank; d++) p->sl_start[d] = 0, p->sl_step[d] = 1;
    uint32_t seen = 0;
    for (int i = 0; i < ns; i++) {
        int64_t a, s = nsp >= 0 ? sp[i] : 1, first, count;
        if (!norm_axis(n, na >= 0 ? ax[i] : i, x->rank, &seen, &a, why, why_size)) return false;
        if (s == 0) return NO("Slice: step 0 on axis %lld", (long long)a);
        slice_range(x->dims[a], st[i], en[i], s, &first, &count);
        if (count != y->dims[a])
            return NO("Slice: axis %lld gives %lld elements, the output has %lld", (long long)a, (long long)count, (long long)y->dims[a]);
        p->sl_start[a] = first, p->sl_step[a] = count > 1 ? s : 1;
    }
    for (int32_t d = 0; d < x->rank; d++)
        if (!(seen >> d & 1) && x->dims[d] != y->dims[d]) return NO("Slice: dim %d not sliced but of another size in the output", d);
    return true;
}

static bool parse_pad(const seam_node_view *n, const seam_subgraph_view *sg, cu_params *p, char *why, size_t why_size) {
    const seam_value_info *x = &n->inputs[0], *y = &n->outputs[0];
    p->kind = K_PAD;
    const char *mode = "constant";
    seam_node_attr_string(n, "mode", &mode);
    if (!strcmp(mode, "constant")) p->pad_mode = SC_PAD_CONSTANT;
    else if (!strcmp(mode, "edge")) p->pad_mode = SC_PAD_EDGE;
    else if (!strcmp(mode, "reflect")) p->pad_mode = SC_PAD_REFLECT;
    else if (!strcmp(mode, "wrap")) p->pad_mode = SC_PAD_WRAP;
    else return NO("Pad: mode '%s' unknown (cuda pads constant, edge, reflect and wrap)", mode);
    if (x->rank != y->rank) return NO("Pad: the output's rank %d is not the input's %d", y->rank, x->rank);
    int64_t pads[2 * SC_MAX_RANK], axes[SC_MAX_RANK];
    int np = -1, na = -1;
    if (n->opset >= 0 && n->opset < 11) {
        if ((np = attr_is(n, "pads", pads, 2 * SC_MAX_RANK)) < 0) return NO("Pad (opset %lld): no pads attribute of at most %d values", (long long)n->opset, 2 * SC_MAX_RANK);
        p->pad_value = attr_f(n, "value", 0.0f);
        if (p->dyn) return true; /* the dims are checked at compile */
    } else {
        if (!present(n, 1)) return NO("Pad without its pads input");
        if (!const_ints(n, sg, 1, pads, &np, 2 * SC_MAX_RANK, why, why_size)) return false;
        if (present(n, 2) && !const_float(n, sg, 2, &p->pad_value, why, why_size)) return false;
        if (present(n, 3) && !const_ints(n, sg, 3, axes, &na, SC_MAX_RANK, why, why_size)) return false;
        if (!sg) return true; /* the values are read at compile */
    }
    int naxes = na >= 0 ? na : x->rank;
    if (np != 2 * naxes) return NO("Pad: %d pads for %d axes", np, naxes);
    uint32_t seen = 0;
    for (int i = 0; i < naxes; i++) {
        int64_t a;
        if (!norm_axis(n, na >= 0 ? axes[i] : i, x->rank, &seen, &a, why, why_size)) return false;
        p->pad0[a] = pads[i], p->pad1[a] = pads[naxes + i];
    }
    for (int32_t d = 0; d < x->rank; d++) {
        int64_t len = x->dims[d], b = p->pad0[d], e = p->pad1[d];
        if (len + b + e != y->dims[d])
            return NO("Pad: dim %d: %lld + pads %lld, %lld is not the output's %lld", d, (long long)len, (long long)b, (long long)e, (long long)y->dims[d]);
        if (p->pad_mode != SC_PAD_CONSTANT && len == 0 && y->dims[d] > 0) return NO("Pad: mode '%s' on the empty dim %d", mode, d);
    }
    return true;
}

static bool parse_expand(const seam_node_view *n, const seam_subgraph_view *sg, cu_params *p, char *why, size_t why_size) {
    const seam_value_info *x = &n->inputs[0], *y = &n->outputs[0];
    p->kind = K_EXPAND;
    if (n->n_inputs != 2 || !present(n, 1)) return NO("Expand without its shape input");
    int64_t shape[SC_MAX_RANK];
    int ns = 0;
    if (!const_ints(n, sg, 1, shape, &ns, SC_MAX_RANK, why, why_size)) return false;
    if (x->rank > y->rank) return NO("Expand: the input's rank %d is over the output's %d", x->rank, y->rank);
    if (!sg) return true; /* the shape is read at compile */
    int32_t r = x->rank > ns ? x->rank : ns;
    if (r != y->rank) return NO("Expand: the broadcast rank %d is not the output's %d", r, y->rank);
    for (int32_t d = 0; d < r; d++) {
        int32_t dx = d - (r - x->rank), ds = d - (r - ns);
        int64_t a = dx >= 0 ? x->dims[dx] : 1, b = ds >= 0 ? shape[ds] : 1;
        int64_t o = a == 1 ? b : (b == 1 || b == a) ? a : -1;
        if (o < 0 || o != y->dims[d])
            return NO("Expand: dim %d: %lld broadcast to %lld is not the output's %lld", d, (long long)a, (long long)b, (long long)y->dims[d]);
    }
    return true;
}

/* ConvTranspose as cuDNN's backward data of the convolution it transposes:
 * its pads (from pads, auto_pad or output_shape, as the CPU kernels place
 * them) symmetric, output_padding below the stride (the forward of the
 * output's size then gives the input's). Dims the attributes give are
 * checked against the output's where known (all at compile). */
static bool parse_deconv(const seam_node_view *n, const seam_subgraph_view *sg, cu_params *p, char *why, size_t why_size) {
    const seam_value_info *x = &n->inputs[0], *w = &n->inputs[1], *y = &n->outputs[0];
    if (n->n_inputs < 2 || x->rank < 3 || x->rank > 5) return NO("ConvTranspose: cuda takes 1-D, 2-D and 3-D ones");
    if (!n->input_constant || !n->input_constant[1]) return NO("ConvTranspose: the weights are computed at run time (cuda takes constant weights)");
    if (present(n, 2) && !n->input_constant[2]) return NO("ConvTranspose: the bias is computed at run time");
    if (w->dtype != SEAM_DTYPE_FLOAT32 || w->rank != x->rank || y->rank != x->rank) return NO("ConvTranspose: float32 weights of the input's rank");
    if (present(n, 2) && n->inputs[2].dtype != SEAM_DTYPE_FLOAT32) return NO("ConvTranspose: the bias must be float32");
    p->kind = K_DECONV;
    p->nsp = x->rank - 2;
    p->group = attr_i(n, "group", 1);
    if (p->group < 1 || (x->dims[1] >= 0 && x->dims[1] % p->group)) return NO("ConvTranspose: group %lld does not divide the channels", (long long)p->group);
    if (x->dims[1] >= 0 && w->dims[0] != x->dims[1])
        return NO("ConvTranspose: weights of %lld input channels for an input of %lld", (long long)w->dims[0], (long long)x->dims[1]);
    int64_t c_out = w->dims[1] * p->group;
    if (y->dims[1] >= 0 && y->dims[1] != c_out)
        return NO("ConvTranspose: the output has %lld channels, the weights and group give %lld", (long long)y->dims[1], (long long)c_out);
    if (present(n, 2) && numel(&n->inputs[2]) != c_out)
        return NO("ConvTranspose: a bias of %lld values for %lld output channels", (long long)numel(&n->inputs[2]), (long long)c_out);
    int64_t k[3], ks[3], os[SC_MAX_RANK], pads[6];
    for (int i = 0; i < p->nsp; i++) k[i] = w->dims[2 + i], p->strides[i] = 1, p->dil[i] = 1, p->opad[i] = 0;
    int c = attr_is(n, "strides", p->strides, 3);
    if (c >= 0 && c != p->nsp) return NO("ConvTranspose: strides must have %d values", p->nsp);
    c = attr_is(n, "dilations", p->dil, 3);
    if (c >= 0 && c != p->nsp) return NO("ConvTranspose: dilations must have %d values", p->nsp);
    c = attr_is(n, "output_padding", p->opad, 3);
    if (c >= 0 && c != p->nsp) return NO("ConvTranspose: output_padding must have %d values", p->nsp);
    c = attr_is(n, "kernel_shape", ks, 3);
    if (c >= 0 && (c != p->nsp || memcmp(ks, k, (size_t)c * sizeof(int64_t)))) return NO("ConvTranspose: kernel_shape disagrees with the weights");
    int nos = attr_is(n, "output_shape", os, SC_MAX_RANK);
    if (nos == -2 || (nos >= 0 && nos != p->nsp && nos != x->rank)) return NO("ConvTranspose: output_shape must have %d values", p->nsp);
    int np = attr_is(n, "pads", pads, 6);
    if (np == -2 || (np >= 0 && np != 2 * p->nsp)) return NO("ConvTranspose: pads must have %d values", 2 * p->nsp);
    const char *ap = "NOTSET";
    seam_node_attr_string(n, "auto_pad", &ap);
    bool same = !strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER");
    if (!same && strcmp(ap, "VALID") && strcmp(ap, "NOTSET")) return NO("ConvTranspose: auto_pad '%s' unknown", ap);
    for (int i = 0; i < p->nsp; i++) {
        int64_t s = p->strides[i], d = p->dil[i], op = p->opad[i], in = x->dims[2 + i], p0, p1;
        if (k[i] < 1 || s < 1 || d < 1) return NO("ConvTranspose: kernel, strides and dilations must be >= 1");
        if (op < 0 || op >= s)
            return NO("ConvTranspose: output_padding %lld on spatial dim %d is not below its stride %lld (cuDNN's backward data has no such output)",
                      (long long)op, i, (long long)s);
        int64_t full = in < 0 ? -1 : s * (in - 1) + op + (k[i] - 1) * d + 1; /* the output before pads */
        if (nos >= 0 || same) {
            if (full < 0) continue; /* symbolic: decided at compile */
            int64_t out = nos >= 0 ? os[nos == x->rank ? 2 + i : i] : in * s, total = full - out;
            if (total < 0)
                return NO("ConvTranspose: %s %lld on spatial dim %d is over the full output %lld (cuDNN pads no negative amounts)",
                          nos >= 0 ? "output_shape" : "auto_pad's output", (long long)out, i, (long long)full);
            p0 = !strcmp(ap, "SAME_UPPER") ? total / 2 : total - total / 2;
            p1 = total - p0;
        } else if (!strcmp(ap, "VALID")) {
            p0 = p1 = 0;
        } else {
            p0 = np > 0 ? pads[i] : 0;
            p1 = np > 0 ? pads[p->nsp + i] : 0;
        }
        if (p0 < 0 || p1 < 0) return NO("ConvTranspose: negative pads");
        if (p0 != p1)
            return NO("ConvTranspose: asymmetric padding (%lld before, %lld after) on spatial dim %d: cuDNN pads both sides alike",
                      (long long)p0, (long long)p1, i);
        p->pads[i] = p0;
        if (full >= 0 && y->dims[2 + i] >= 0 && full - p0 - p1 != y->dims[2 + i])
            return NO("ConvTranspose: spatial dim %d is %lld by its attributes, the output has %lld", i, (long long)(full - p0 - p1),
                      (long long)y->dims[2 + i]);
    }
    return true;
}

/* Resize of the spatial dims (N and C kept) of rank 3 to 5, nearest or
 * linear; its scales or sizes constant, read at compile. */
static bool parse_resize(const seam_node_view *n, const seam_subgraph_view *sg, cu_params *p, char *why, size_t why_size) {
    static const char *const coords[] = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                                         "tf_half_pixel_for_nn", "half_pixel_symmetric"}; /* sc_resize_coord's order */
    static const char *const nearests[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
    const seam_value_info *x = &n->inputs[0], *y = &n->outputs[0];
    p->kind = K_RESIZE;
    if (x->rank < 3 || x->rank > 5 || y->rank != x->rank)
        return NO("Resize of rank %d: cuda resizes the spatial dims of rank 3 to 5 tensors", x->rank);
    p->nsp = x->rank - 2;
    /* opset 10 has no coordinate or nearest modes: asymmetric, floor (as the CPU kernels read it) */
    bool old = n->opset >= 0 && n->opset < 11;
    const char *mode = "nearest", *cm = old ? "asymmetric" : "half_pixel", *nm = "round_prefer_floor", *pol = "stretch";
    seam_node_attr_string(n, "mode", &mode);
    seam_node_attr_string(n, "coordinate_transformation_mode", &cm);
    if (old) nm = "floor";
    else seam_node_attr_string(n, "nearest_mode", &nm);
    seam_node_attr_string(n, "keep_aspect_ratio_policy", &pol);
    if (!strcmp(mode, "linear")) p->rz_linear = 1;
    else if (strcmp(mode, "nearest")) return NO("Resize mode '%s': cuda resizes nearest and linear", mode);
    p->rz_coord = p->rz_nearest = -1;
    for (int i = 0; i < (int)(sizeof(coords) / sizeof(coords[0])); i++)
        if (!strcmp(cm, coords[i])) p->rz_coord = i;
    for (int i = 0; i < (int)(sizeof(nearests) / sizeof(nearests[0])); i++)
        if (!strcmp(nm, nearests[i])) p->rz_nearest = i;
    if (!strcmp(cm, "tf_crop_and_resize")) return NO("Resize coordinate_transformation_mode 'tf_crop_and_resize': cuda takes no roi");
    if (p->rz_coord < 0) return NO("Resize coordinate_transformation_mode '%s' unknown", cm);
    if (p->rz_nearest < 0) return NO("Resize nearest_mode '%s' unknown", nm);
    if (attr_i(n, "antialias", 0)) return NO("Resize with antialias=1: cuda does not filter");
    if (attr_i(n, "exclude_outside", 0)) return NO("Resize with exclude_outside=1: cuda resizes nearest and linear");
    if (strcmp(pol, "stretch")) return NO("Resize keep_aspect_ratio_policy '%s': cuda takes stretch", pol);
    int64_t axes[SC_MAX_RANK];
    int na = attr_is(n, "axes", axes, SC_MAX_RANK), first = 0; /* the dim the first scale or size is of */
    if (na == -2) return NO("Resize: too many axes");
    if (na >= 0) {
        bool all = na == x->rank, spatial = na == p->nsp;
        for (int i = 0; i < na; i++) {
            int64_t a = axes[i] < 0 ? axes[i] + x->rank : axes[i];
            all = all && a == i;
            spatial = spatial && a == i + 2;
        }
        if (!all && !spatial) return NO("Resize over axes other than all or the spatial ones in order");
        first = all ? 0 : 2;
    } else {
        na = x->rank;
    }
    int ks = old ? 1 : 2, kz = old ? -1 : 3, c = 0;
    bool has_s = present(n, ks) && numel(&n->inputs[ks]) != 0, has_z = kz > 0 && present(n, kz) && numel(&n->inputs[kz]) != 0;
    if (has_s && has_z) return NO("Resize with both scales and sizes");
    if (!has_s && !has_z) return NO("Resize without scales or sizes");
    double sc[SC_MAX_RANK];
    int64_t sz[SC_MAX_RANK];
    if (has_s && !const_floats(n, sg, ks, sc, &c, SC_MAX_RANK, why, why_size)) return false;
    if (has_z && !const_ints(n, sg, kz, sz, &c, SC_MAX_RANK, why, why_size)) return false;
    for (int d = 0; d < 2; d++)
        if (x->dims[d] >= 0 && y->dims[d] >= 0 && x->dims[d] != y->dims[d])
            return NO("Resize of dim %d (%lld to %lld): cuda resizes the spatial dims only", d, (long long)x->dims[d], (long long)y->dims[d]);
    if (!sg) return true; /* the values are read at compile */
    if (c != na) return NO("Resize: %d %s for %d axes", c, has_s ? "scales" : "sizes", na);
    for (int d = 0; d < x->rank; d++) {
        int i = d - first; /* its scale or size, if in [0, na) */
        double s = 1;
        int64_t out = x->dims[d];
        if (i >= 0 && i < na && has_s) {
            s = sc[i];
            if (!(s > 0)) return NO("Resize: scale %g on dim %d is not positive", s, d);
            out = (int64_t)floor((double)x->dims[d] * s);
        } else if (i >= 0 && i < na) {
            out = sz[i];
            s = x->dims[d] ? (double)out / (double)x->dims[d] : 1;
        }
        if (d < 2 && (out != x->dims[d] || s != 1))
            return NO("Resize of dim %d (scale %g): cuda resizes the spatial dims only", d, s);
        if (out != y->dims[d]) return NO("Resize: dim %d gives %lld, the output has %lld", d, (long long)out, (long long)y->dims[d]);
        if (d >= 2 && x->dims[d] == 0 && out > 0) return NO("Resize of the empty dim %d", d);
        if (d >= 2) p->rz_scale[d - 2] = s;
    }
    return true;
}

/* LSTM and GRU as PyTorch exports them: float32, layout 0, the default
 * activations, no clip, peepholes, input_forget or sequence_lens; a GRU
 * with linear_before_reset = 1. */
static bool parse_rnn(const seam_node_view *n, const seam_subgraph_view *sg, cu_params *p, char *why, size_t why_size) {
    const char *op = n->op_type;
    bool gru = op[0] == 'G';
    const seam_value_info *x = &n->inputs[0];
    p->kind = K_RNN;
    p->rnn_gru = gru;
    if (n->n_inputs < 3 || !present(n, 0) || !present(n, 1) || !present(n, 2)) return NO("%s without X, W and R", op);
    if (!n->outputs[0].name || !n->outputs[0].name[0]) return NO("%s without its output Y (cuda keeps every step's state there)", op);
    if (present(n, 4)) return NO("%s with sequence_lens (cuda runs every sequence to its full length)", op);
    if (!gru && present(n, 7)) return NO("LSTM with peepholes (its input P)");
    for (int32_t k = 0; k < n->n_inputs; k++)
        if (present(n, k) && n->inputs[k].dtype != SEAM_DTYPE_FLOAT32) return NO("%s: input %d is %s; cuda computes float32", op, k, dt_name(n->inputs[k].dtype));
    for (int32_t k = 0; k < n->n_outputs; k++)
        if (n->outputs[k].name && n->outputs[k].name[0] && n->outputs[k].dtype != SEAM_DTYPE_FLOAT32)
            return NO("%s: output %d is not float32", op, k);
    if (attr_i(n, "layout", 0)) return NO("%s with layout 1 (batch first); cuda takes layout 0", op);
    float clip;
    if (seam_node_attr_float(n, "clip", &clip)) return NO("%s with clip", op);
    if (!gru && attr_i(n, "input_forget", 0)) return NO("LSTM with input_forget");
    if (gru && !attr_i(n, "linear_before_reset", 0))
        return NO("GRU with linear_before_reset = 0 (cuda takes 1, as PyTorch exports it)");
    const char *dir = "forward";
    seam_node_attr_string(n, "direction", &dir);
    p->rnn_dirs = !strcmp(dir, "bidirectional") ? 2 : 1;
    p->rnn_reverse = !strcmp(dir, "reverse");
    if (p->rnn_dirs == 1 && !p->rnn_reverse && strcmp(dir, "forward")) return NO("%s: direction '%s' unknown", op, dir);
    static const char *const lstm_acts[] = {"Sigmoid", "Tanh", "Tanh"}, *const gru_acts[] = {"Sigmoid", "Tanh"};
    const char *const *want = gru ? gru_acts : lstm_acts;
    int32_t per = gru ? 2 : 3, count = 0;
    const char *a;
    if (seam_node_attr_string_at(n, "activations", 0, &a, &count) || count) {
        if (count != per * p->rnn_dirs) return NO("%s: %d activations for %d directions", op, count, p->rnn_dirs);
        for (int32_t k = 0; k < count; k++)
            if (!seam_node_attr_string_at(n, "activations", k, &a, &count) || strcmp(a, want[k % per]))
                return NO("%s with the activation '%s' (cuda computes the defaults: %s)", op, a, gru ? "Sigmoid, Tanh" : "Sigmoid, Tanh, Tanh");
    }
    const float *fv;
    int32_t nf;
    if (seam_node_attr_floats(n, "activation_alpha", &fv, &nf) || seam_node_attr_floats(n, "activation_beta", &fv, &nf))
        return NO("%s with activation_alpha or activation_beta", op);
    int64_t G = gru ? 3 : 4, hs = attr_i(n, "hidden_size", -1);
    const seam_value_info *w = &n->inputs[1], *r = &n->inputs[2];
    if (x->rank != 3 || w->rank != 3 || r->rank != 3) return NO("%s: X, W and R of rank 3 expected", op);
    /* W and R are weights: their dims are known even where X's are not */
    if (w->dims[0] != p->rnn_dirs || r->dims[0] != p->rnn_dirs || w->dims[1] < 1 || w->dims[1] % G ||
        r->dims[1] != w->dims[1] || r->dims[2] * G != w->dims[1] || (hs >= 0 && hs * G != w->dims[1]))
        return NO("%s: W %lldx%lldx%lld and R %lldx%lldx%lld do not fit %lld directions of hidden size %lld", op,
                  (long long)w->dims[0], (long long)w->dims[1], (long long)w->dims[2], (long long)r->dims[0],
                  (long long)r->dims[1], (long long)r->dims[2], (long long)p->rnn_dirs, (long long)hs);
    if (x->dims[2] >= 0 && w->dims[2] != x->dims[2]) return NO("%s: X's %lld features, W's %lld", op, (long long)x->dims[2], (long long)w->dims[2]);
    if (present(n, 3) && (n->inputs[3].rank != 2 || n->inputs[3].dims[1] != 2 * w->dims[1]))
        return NO("%s: B is not [directions, %lld]", op, (long long)(2 * w->dims[1]));
    if (sg && x->dims[0] < 1) return NO("%s of an empty sequence", op);
    return true;
}

bool cu_parse(const seam_node_view *n, const seam_subgraph_view *sg, cu_params *p, char *why, size_t why_size) {
    memset(p, 0, sizeof(*p));
    p->clip_min_input = p->clip_max_input = -1;
    const char *op = n->op_type;
    if (n->domain && n->domain[0]) return NO("cuda runs ai.onnx ops only, not %s:%s", n->domain, op);
    if (n->n_outputs < 1 || !n->outputs[0].name) return NO("%s without an output", op);
    for (int32_t k = 0; k < n->n_inputs + n->n_outputs; k++) {
        const seam_value_info *v = k < n->n_inputs ? &n->inputs[k] : &n->outputs[k - n->n_inputs];
        if (!v->name || !v->name[0]) continue;
        if (v->rank < 0) return NO("%s: the rank of '%s' is not known (cuda needs ranks)", op, v->name);
        if (v->rank > SC_MAX_RANK) return NO("%s: '%s' has rank %d; cuda takes at most %d", op, v->name, v->rank, SC_MAX_RANK);
        for (int32_t d = 0; d < v->rank; d++)
            if (v->dims[d] < 0) {
                /* compile sees one run's shapes (runtime/subgraph.c
                 * specializes the subgraph); a symbolic dim there is a
                 * shape inference could not resolve */
                if (sg) return NO("%s: '%s' has a dimension shape inference left unknown (cuda compiles static shapes)", op, v->name);
                p->dyn = true;
            }
    }
    bool rnn = !strcmp(op, "LSTM") || !strcmp(op, "GRU");
    for (int32_t k = 1; k < n->n_outputs && !rnn; k++)
        if (n->outputs[k].name && n->outputs[k].name[0]) return NO("%s: cuda computes only the first output", op);
    if (rnn) return parse_rnn(n, sg, p, why, why_size);
    const seam_value_info *x = &n->inputs[0], *y = &n->outputs[0];
    bool view = !strcmp(op, "Reshape") || !strcmp(op, "Flatten") || !strcmp(op, "Squeeze") || !strcmp(op, "Unsqueeze") ||
                !strcmp(op, "Identity") || !strcmp(op, "Dropout");
    if (view) {
        if (n->n_inputs < 1 || !cu_dtype_size(x->dtype) || x->dtype != y->dtype)
            return NO("%s of %s: cuda views float32, int32 and int64 tensors", op, n->n_inputs ? "this type" : "nothing");
        if (!strcmp(op, "Dropout") && present(n, 2) && !(n->input_constant && n->input_constant[2]))
            return NO("Dropout with a training_mode computed at run time");
        p->kind = K_VIEW;
        return true;
    }
    if (!strcmp(op, "Gather")) return parse_gather(n, sg, p, why, why_size);
    if (n->n_inputs < 1) return NO("%s without inputs", op);
    if (!strcmp(op, "Cast")) return parse_cast(n, p, why, why_size);
    bool copy = !strcmp(op, "Slice") || !strcmp(op, "Pad") || !strcmp(op, "Expand");
    if (copy && (x->dtype != SEAM_DTYPE_FLOAT32 || y->dtype != SEAM_DTYPE_FLOAT32))
        return NO("%s of %s data: cuda's copy kernels take float32", op, dt_name(x->dtype));
    if (!strcmp(op, "Slice")) return parse_slice(n, sg, p, why, why_size);
    if (!strcmp(op, "Pad")) return parse_pad(n, sg, p, why, why_size);
    if (!strcmp(op, "Expand")) return parse_expand(n, sg, p, why, why_size);
    bool mask = false, mask_ok = parse_mask(n, p, &mask, why, why_size);
    if (mask) return mask_ok;
    if (!strcmp(op, "CastLike")) return NO("CastLike: cuda has no CastLike (Cast between float32, int32, int64 and bool only)");
    if (x->dtype != SEAM_DTYPE_FLOAT32) return NO("%s: cuda computes float32 only", op);
    if (y->dtype != SEAM_DTYPE_FLOAT32) return NO("%s: cuda computes float32 only (output)", op);
    for (size_t u = 0; u < sizeof(unaries) / sizeof(unaries[0]); u++) {
        if (strcmp(op, unaries[u].op)) continue;
        p->kind = K_UNARY;
        p->uop = unaries[u].uop;
        switch (p->uop) {
        case SC_LEAKY_RELU: p->a = attr_f(n, "alpha", 0.01f); break;
        case SC_ELU: p->a = attr_f(n, "alpha", 1.0f); break;
        case SC_HARD_SIGMOID:
            p->a = attr_f(n, "alpha", 0.2f);
            p->b = attr_f(n, "beta", 0.5f);
            break;
        case SC_GELU: {
            const char *ap = "none";
            seam_node_attr_string(n, "approximate", &ap);
            if (!strcmp(ap, "tanh")) p->uop = SC_GELU_TANH;
            else if (strcmp(ap, "none")) return NO("Gelu approximate='%s' unknown", ap);
            break;
        }
        case SC_CLIP:
            p->a = -INFINITY, p->b = INFINITY;
            if (n->opset >= 0 && n->opset < 11) {
                p->a = attr_f(n, "min", -INFINITY);
                p->b = attr_f(n, "max", INFINITY);
            }
            if (present(n, 1) && !const_float(n, sg, 1, &p->a, why, why_size)) return false;
            if (present(n, 2) && !const_float(n, sg, 2, &p->b, why, why_size)) return false;
            break;
        default: break;
        }
        return true;
    }
    for (size_t u = 0; u < sizeof(binaries) / sizeof(binaries[0]); u++) {
        if (strcmp(op, binaries[u].op)) continue;
        if (n->n_inputs != 2) return NO("%s of %d inputs: cuda takes two", op, n->n_inputs);
        if (n->inputs[1].dtype != SEAM_DTYPE_FLOAT32) return NO("%s: cuda computes float32 only", op);
        if (x->rank > y->rank || n->inputs[1].rank > y->rank) return NO("%s: an input of higher rank than the output", op);
        p->kind = K_BINARY;
        p->bop = binaries[u].bop;
        return true;
    }
    if (!strcmp(op, "Conv")) return parse_conv(n, sg, p, why, why_size);
    if (!strcmp(op, "Gemm")) return parse_gemm(n, sg, p, why, why_size);
    if (!strcmp(op, "MatMul")) return parse_matmul(n, sg, p, why, why_size);
    if (!strcmp(op, "BatchNormalization")) return parse_bn(n, sg, p, why, why_size);
    if (!strcmp(op, "MaxPool") || !strcmp(op, "AveragePool")) return parse_pool(n, sg, p, why, why_size);
    if (!strcmp(op, "GlobalAveragePool") || !strcmp(op, "GlobalMaxPool")) return parse_gpool(n, sg, p, why, why_size);
    if (!strcmp(op, "Softmax") || !strcmp(op, "LogSoftmax")) return parse_softmax(n, sg, p, why, why_size);
    if (!strcmp(op, "LayerNormalization")) return parse_ln(n, sg, p, why, why_size);
    if (!strcmp(op, "ReduceMean") || !strcmp(op, "ReduceSum") || !strcmp(op, "ReduceMax") || !strcmp(op, "ReduceMin"))
        return parse_reduce(n, sg, p, why, why_size);
    if (!strcmp(op, "Transpose")) return parse_transpose(n, sg, p, why, why_size);
    if (!strcmp(op, "Concat")) return parse_concat(n, sg, p, why, why_size);
    if (!strcmp(op, "ConvTranspose")) return parse_deconv(n, sg, p, why, why_size);
    if (!strcmp(op, "Resize")) return parse_resize(n, sg, p, why, why_size);
    return NO("cuda has no %s", op);
}

