/* More rewrites that heal partitions (rewrite_forms.h; the driver and the
 * first kinds in rewrite.c). The forms, each for float32 only:
 *
 *   GroupNormalization  ->  X [N, C, ...] Reshaped to [N, G, C/G * spatial];
 *                           d = x - ReduceMean(x), d / Sqrt(ReduceMean(d * d)
 *                           + epsilon) over the last axis; Reshaped back to
 *                           X's shape (a Shape of X when its spatial dims
 *                           are not known); times scale, plus bias, both as
 *                           [C, 1, ...] (opset 18's per-group entries
 *                           repeated over each group's channels)
 *   Gelu approximate=none  ->  x * (1 + Erf(x * 1/sqrt(2))) * 0.5
 *   Gelu approximate=tanh  ->  x * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 *
 *                              x * (x * x)))) * 0.5
 *                           (the forms torch's exporter writes, with the
 *                           Div by sqrt(2) as a Mul by 1/sqrt(2) as seam's
 *                           kernel does it; oneDNN's GELU pattern takes
 *                           either)
 *   Mish                ->  x * Tanh(Softplus(x))
 *   HardSigmoid         ->  Clip(x * alpha + beta, 0, 1)
 *
 * Exactness. HardSigmoid is exact: the same two roundings and the clamp
 * (an ulp where a kernel fuses the multiply-add). Gelu with Erf is what
 * seam's CPU kernel computes, operation by operation (the halving is
 * exact); against the true function, Erf's error. The rest are within a
 * few ulps of the output's scale: GroupNormalization's sums run in another
 * order, in float32 (the kernel's in float64), and its affine step is
 * (x - mean) / sd * scale + bias instead of x * a + b; Gelu's Tanh form
 * and Mish round to float32 between steps where the kernels compute in
 * float64 (Gelu's 1 + Tanh loses relative precision where x is far below
 * 0 and the output near 0, not against the output's scale). Softplus
 * stays one op: Log(1 + Exp(x)) overflows. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/attr.h"
#include "ops/ops.h"
#include "rewrite_forms.h"

/* A float32 scalar initializer; -1 when out of memory. */
static int32_t f32_scalar(seam_model *m, ir_graph *g, const char *base, const char *suffix, float v) {
    int64_t none = 0;
    return ir_new_init(m, g, base, suffix, SEAM_DTYPE_FLOAT32, 0, &none, &v);
}

/* op(x) into out (or a new value when out < 0); -1 as rw_binary. */
static int32_t unary(seam_model *m, ir_graph *g, const char *base, const char *op, int32_t x, int32_t out) {
    int32_t y = out >= 0 ? out : ir_new_value(m, g, base, "_t");
    return y < 0 || x < 0 || ir_new_node(m, g, base, op, &x, 1, &y, 1, NULL, 0) < 0 ? -1 : y;
}

/* One float32 input and one output, both there, the op known to seam's
 * registry at the node's opset. */
static bool f32_unary_form(const ir_graph *g, const ir_node *n, const char *op) {
    if (!rw_is_std(n, op) || n->n_inputs != 1 || n->inputs[0] < 0 || n->n_outputs != 1 || n->outputs[0] < 0 ||
        !seam_op_find("", op, n->opset))
        return false;
    const ir_type *t = &g->values[n->inputs[0]].type;
    return t->kind == IR_TYPE_TENSOR && t->elem == SEAM_DTYPE_FLOAT32;
}

/* ---- GroupNormalization ---- */

bool rw_groupnorm_form(const ir_graph *g, const ir_node *n) {
    if (!rw_is_std(n, "GroupNormalization") || n->opset < 18 || n->n_inputs != 3 || n->n_outputs != 1 ||
        n->outputs[0] < 0 || n->inputs[0] < 0)
        return false;
    const ir_type *t = &g->values[n->inputs[0]].type;
    if (t->kind != IR_TYPE_TENSOR || t->elem != SEAM_DTYPE_FLOAT32 || t->rank < 2 || t->rank > 8) return false;
    int64_t c = t->dims[1].v, groups = node_attr_int(n, "num_groups", 0);
    if (c < 1 || groups < 1 || groups > c || c % groups || node_attr_int(n, "stash_type", 1) != 1) return false;
    /* GroupNormalization-18 scales per group; -21 per channel */
    int64_t entries = n->opset >= 21 ? c : groups;
    for (int32_t k = 1; k < 3; k++) {
        const ir_tensor *s = rw_konst(g, n->inputs[k]);
        if (!s || s->dtype != SEAM_DTYPE_FLOAT32 || s->numel != entries) return false;
    }
    return true;
}

bool rw_rewrite_groupnorm(seam_model *m, ir_graph *g, int32_t i, bool *dead) {
    if (!rw_groupnorm_form(g, &g->nodes[i])) return false;
    /* all read before anything is added (adding values and nodes may move
     * the arrays) */
    const ir_node *n = &g->nodes[i];
    const char *base = n->name;
    const ir_type *t = &g->values[n->inputs[0]].type;
    int32_t x = n->inputs[0], y = n->outputs[0], rank = t->rank;
    int64_t c = t->dims[1].v, groups = node_attr_int(n, "num_groups", 0), per = c / groups;
    int64_t shape[8] = {0, c}, spatial = 1, ranks = rank, three = 3, cdims[8] = {c, 1, 1, 1, 1, 1, 1, 1};
    bool known = true;
    for (int32_t d = 2; d < rank; d++) {
        shape[d] = t->dims[d].v;
        known = known && shape[d] >= 0 && shape[d] <= ((int64_t)1 << 40) / (spatial > 0 ? spatial : 1);
        spatial *= known ? shape[d] : 1;
    }
    float eps = node_attr_float(n, "epsilon", 1e-5f);
    const ir_tensor *s = rw_konst(g, n->inputs[1]), *b = rw_konst(g, n->inputs[2]);
    bool per_group = s->numel != c;
    float *sb = malloc(sizeof(float) * 2 * (size_t)c);
    if (!sb) return false;
    for (int64_t ch = 0; ch < c; ch++) {
        int64_t p = per_group ? ch / per : ch;
        sb[ch] = ((const float *)s->data)[p];
        sb[c + ch] = ((const float *)b->data)[p];
    }
    int32_t scale = ir_new_init(m, g, base, "_scale", SEAM_DTYPE_FLOAT32, rank - 1, cdims, sb);
    int32_t bias = ir_new_init(m, g, base, "_bias", SEAM_DTYPE_FLOAT32, rank - 1, cdims, sb + c);
    free(sb);
    /* [N, G, C/G * spatial] (0 keeps N; -1 when the spatial dims are not known) */
    int64_t grouped[3] = {0, groups, known ? per * spatial : -1};
    int32_t to_groups = ir_new_init(m, g, base, "_grouped", SEAM_DTYPE_INT64, 1, &three, grouped);
    int32_t back = known ? ir_new_init(m, g, base, "_shape", SEAM_DTYPE_INT64, 1, &ranks, shape)
                         : unary(m, g, base, "Shape", x, -1);
    int32_t e = f32_scalar(m, g, base, "_epsilon", eps);
    if (scale < 0 || bias < 0 || to_groups < 0 || back < 0 || e < 0) return false;
    int32_t xg = rw_binary(m, g, base, "Reshape", x, to_groups, -1);
    int32_t mean = rw_reduce_mean(m, g, base, xg, 2, 3);
    int32_t d = rw_binary(m, g, base, "Sub", xg, mean, -1);
    int32_t var = rw_reduce_mean(m, g, base, rw_binary(m, g, base, "Mul", d, d, -1), 2, 3);
    int32_t sd = unary(m, g, base, "Sqrt", rw_binary(m, g, base, "Add", var, e, -1), -1);
    int32_t norm = rw_binary(m, g, base, "Reshape", rw_binary(m, g, base, "Div", d, sd, -1), back, -1);
    int32_t scaled = rw_binary(m, g, base, "Mul", norm, scale, -1);
    if (scaled < 0 || rw_binary(m, g, base, "Add", scaled, bias, y) < 0) return false;
    dead[i] = true;
    return true;
}

/* ---- Gelu ---- */

bool rw_gelu_form(const ir_graph *g, const ir_node *n) {
    if (!f32_unary_form(g, n, "Gelu")) return false;
    const char *approx = node_attr_string(n, "approximate", "none");
    return !strcmp(approx, "none") || !strcmp(approx, "tanh");
}

bool rw_rewrite_gelu(seam_model *m, ir_graph *g, int32_t i, bool *dead) {
    if (!rw_gelu_form(g, &g->nodes[i])) return false;
    const ir_node *n = &g->nodes[i];
    const char *base = n->name;
    bool tanh_form = node_attr_is(n, "approximate", "tanh");
    int32_t x = n->inputs[0], y = n->outputs[0], t;
    int32_t one = f32_scalar(m, g, base, "_one", 1.0f), half = f32_scalar(m, g, base, "_half", 0.5f);
    if (!tanh_form) { /* Erf(x / sqrt(2)) */
        int32_t r = f32_scalar(m, g, base, "_rsqrt2", (float)M_SQRT1_2);
        t = unary(m, g, base, "Erf", rw_binary(m, g, base, "Mul", x, r, -1), -1);
    } else { /* Tanh(sqrt(2/pi) * (x + 0.044715 x^3)) */
        int32_t kappa = f32_scalar(m, g, base, "_kappa", 0.044715f);
        int32_t beta = f32_scalar(m, g, base, "_sqrt2pi", (float)sqrt(2 / M_PI));
        int32_t cube = rw_binary(m, g, base, "Mul", x, rw_binary(m, g, base, "Mul", x, x, -1), -1);
        int32_t inner = rw_binary(m, g, base, "Add", x, rw_binary(m, g, base, "Mul", cube, kappa, -1), -1);
        t = unary(m, g, base, "Tanh", rw_binary(m, g, base, "Mul", inner, beta, -1), -1);
    }
    int32_t h = rw_binary(m, g, base, "Mul", x, rw_binary(m, g, base, "Add", t, one, -1), -1);
    if (rw_binary(m, g, base, "Mul", h, half, y) < 0) return false;
    dead[i] = true;
    return true;
}

/* ---- Mish ---- */

bool rw_mish_form(const ir_graph *g, const ir_node *n) { return f32_unary_form(g, n, "Mish"); }

bool rw_rewrite_mish(seam_model *m, ir_graph *g, int32_t i, bool *dead) {
    if (!rw_mish_form(g, &g->nodes[i])) return false;
    const ir_node *n = &g->nodes[i];
    const char *base = n->name;
    int32_t x = n->inputs[0], y = n->outputs[0];
    int32_t t = unary(m, g, base, "Tanh", unary(m, g, base, "Softplus", x, -1), -1);
    if (rw_binary(m, g, base, "Mul", x, t, y) < 0) return false;
    dead[i] = true;
    return true;
}

/* ---- HardSigmoid ---- */

bool rw_hardsigmoid_form(const ir_graph *g, const ir_node *n) {
    return f32_unary_form(g, n, "HardSigmoid") && n->opset >= 6;
}

bool rw_rewrite_hardsigmoid(seam_model *m, ir_graph *g, int32_t i, bool *dead) {
    if (!rw_hardsigmoid_form(g, &g->nodes[i])) return false;
    const ir_node *n = &g->nodes[i];
    const char *base = n->name;
    int32_t x = n->inputs[0], y = n->outputs[0], opset = n->opset;
    int32_t a = f32_scalar(m, g, base, "_alpha", node_attr_float(n, "alpha", 0.2f));
    int32_t b = f32_scalar(m, g, base, "_beta", node_attr_float(n, "beta", 0.5f));
    int32_t v = rw_binary(m, g, base, "Add", rw_binary(m, g, base, "Mul", x, a, -1), b, -1);
    if (v < 0) return false;
    if (opset >= 11) { /* the bounds as inputs */
        int32_t ins[3] = {v, f32_scalar(m, g, base, "_zero", 0.0f), f32_scalar(m, g, base, "_one", 1.0f)};
        if (ins[1] < 0 || ins[2] < 0 || ir_new_node(m, g, base, "Clip", ins, 3, &y, 1, NULL, 0) < 0) return false;
    } else {
        ir_attr at[2] = {{.name = "min", .kind = IR_ATTR_FLOAT, .f = 0.0f},
                         {.name = "max", .kind = IR_ATTR_FLOAT, .f = 1.0f}};
        if (ir_new_node(m, g, base, "Clip", &v, 1, &y, 1, at, 2) < 0) return false;
    }
    dead[i] = true;
    return true;
}
