/* Op family: activations (each keeps its input's type and shape), the
 * softmax family and the two losses built on it. */
#include <math.h>
#include <string.h>

#include "ops/activation.h"
#include "ops/infer.h"

static void infer_same(seam_infer *ic) { infer_same_as_input(ic); }

/* Identity also passes a known constant through. */
static void infer_identity(seam_infer *ic) {
    infer_copy_type(ic, 0, 0);
    const ir_tensor *t = infer_in_const(ic, 0);
    if (t && t->numel <= 64 && t->dtype != SEAM_DTYPE_STRING && t->rank <= INFER_MAX_RANK)
        infer_set_const(ic, 0, t->dtype, t->rank, t->dims, t->data);
}

/* Dropout: output, and an optional bool mask of the same shape. */
static void infer_dropout(seam_infer *ic) {
    infer_copy_type(ic, 0, 0);
    const ir_type *t = infer_in(ic, 0);
    if (t && t->kind == IR_TYPE_TENSOR) infer_set_tensor(ic, 1, SEAM_DTYPE_BOOL, t->rank, t->dims);
}

/* NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: the loss is a
 * scalar, or the target's shape with reduction "none"; SCE's optional
 * second output (log_prob) has the scores' shape. */
static void infer_loss(seam_infer *ic) {
    int32_t dt = infer_in_dtype(ic, 0);
    const char *red = node_attr_string(ic->n, "reduction", "mean");
    const ir_type *t = infer_in(ic, 1);
    if (strcmp(red, "none") != 0)
        infer_set_tensor(ic, 0, dt, 0, NULL);
    else if (t && t->kind == IR_TYPE_TENSOR)
        infer_set_tensor(ic, 0, dt, t->rank, t->dims);
    else
        infer_set_dtype(ic, 0, dt);
    if (infer_n_outputs(ic) > 1) infer_copy_type(ic, 1, 0);
}

const seam_op_def seam_ops_activation[] = {
    {"", "NegativeLogLikelihoodLoss", 12, infer_loss},
    {"", "SoftmaxCrossEntropyLoss", 12, infer_loss},
    {"", "Relu", 1, infer_same},
    {"", "LeakyRelu", 1, infer_same},
    {"", "PRelu", 1, infer_same},
    {"", "Sigmoid", 1, infer_same},
    {"", "HardSigmoid", 1, infer_same},
    {"", "HardSwish", 14, infer_same},
    {"", "Tanh", 1, infer_same},
    {"", "Elu", 1, infer_same},
    {"", "Selu", 1, infer_same},
    {"", "Celu", 12, infer_same},
    {"", "ThresholdedRelu", 10, infer_same},
    {"", "Softplus", 1, infer_same},
    {"", "Softsign", 1, infer_same},
    {"", "Clip", 1, infer_same},
    {"", "Gelu", 20, infer_same},
    {"", "Mish", 18, infer_same},
    {"", "Softmax", 1, infer_same},
    {"", "LogSoftmax", 1, infer_same},
    {"", "Hardmax", 1, infer_same},
    {"", "Shrink", 9, infer_same},
    {"", "Identity", 1, infer_identity},
    {"", "Dropout", 1, infer_dropout},
};
const size_t seam_ops_activation_count = sizeof(seam_ops_activation) / sizeof(seam_ops_activation[0]);

/* ---- activation parameters (activation.h) ---- */

static const struct {
    const char *name;
    act_kind kind;
    float alpha, beta, gamma;
} act_table[] = {
    {"Relu", ACT_RELU, 0, 0, 0},
    {"LeakyRelu", ACT_LEAKY_RELU, 0.01f, 0, 0},
    {"Clip", ACT_CLIP, 0, 0, 0},
    {"HardSigmoid", ACT_HARD_SIGMOID, 0.2f, 0.5f, 0},
    {"HardSwish", ACT_HARD_SWISH, 0, 0, 0},
    {"Sigmoid", ACT_SIGMOID, 0, 0, 0},
    {"Tanh", ACT_TANH, 0, 0, 0},
    {"Elu", ACT_ELU, 1, 0, 0},
    {"Selu", ACT_SELU, 1.67326319217681884765625f, 0, 1.05070102214813232421875f},
    {"Celu", ACT_CELU, 1, 0, 0},
    {"ThresholdedRelu", ACT_THRESHOLDED_RELU, 1, 0, 0},
    {"Softplus", ACT_SOFTPLUS, 0, 0, 0},
    {"Softsign", ACT_SOFTSIGN, 0, 0, 0},
    {"Gelu", ACT_GELU, 0, 0, 0},
    {"Mish", ACT_MISH, 0, 0, 0},
    {"Shrink", ACT_SHRINK, 0.5f, 0, 0},
    {"ScaledTanh", ACT_SCALED_TANH, 1, 1, 0},
    {"Affine", ACT_AFFINE, 1, 0, 0},
};

act_params act_by_name(const char *op_type) {
    for (size_t k = 0; op_type && k < sizeof(act_table) / sizeof(act_table[0]); k++)
        if (strcmp(op_type, act_table[k].name) == 0)
            return (act_params){act_table[k].kind, act_table[k].alpha, act_table[k].beta, -INFINITY, INFINITY,
                                act_table[k].gamma};
    return (act_params){ACT_NONE, 0, 0, -INFINITY, INFINITY, 0};
}

bool act_of_node(const ir_node *n, act_params *out) {
    *out = act_by_name(NULL);
    if (!seam_op_default_domain(n->domain)) return false;
    act_params a = act_by_name(n->op_type);
    /* ScaledTanh and Affine are not ops (any more): only RNN lists name them */
    if (a.kind == ACT_NONE || a.kind == ACT_SCALED_TANH || a.kind == ACT_AFFINE) return false;
    switch (a.kind) {
    case ACT_SHRINK:
        a.alpha = node_attr_float(n, "lambd", a.alpha);
        a.beta = node_attr_float(n, "bias", a.beta);
        break;
    case ACT_CLIP:
        if (n->opset < 11) {
            a.lo = node_attr_float(n, "min", a.lo);
            a.hi = node_attr_float(n, "max", a.hi);
        }
        break;
    case ACT_GELU:
        if (node_attr_is(n, "approximate", "tanh")) a.kind = ACT_GELU_TANH;
        break;
    default:
        a.alpha = node_attr_float(n, "alpha", a.alpha);
        a.beta = node_attr_float(n, "beta", a.beta);
        a.gamma = node_attr_float(n, "gamma", a.gamma);
        break;
    }
    *out = a;
    return true;
}

bool act_is_post_op(act_kind kind) {
    return kind == ACT_RELU || kind == ACT_LEAKY_RELU || kind == ACT_CLIP || kind == ACT_HARD_SIGMOID ||
           kind == ACT_HARD_SWISH || kind == ACT_SILU;
}
