/* Op family: activations (each keeps its input's type and shape), the
 * softmax family and the two losses built on it. */
#include <string.h>

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
    const char *red = infer_attr_string(ic, "reduction", "mean");
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
    {"", "NegativeLogLikelihoodLoss", 12, infer_loss, NULL},
    {"", "SoftmaxCrossEntropyLoss", 12, infer_loss, NULL},
    {"", "Relu", 1, infer_same, NULL},
    {"", "LeakyRelu", 1, infer_same, NULL},
    {"", "PRelu", 1, infer_same, NULL},
    {"", "Sigmoid", 1, infer_same, NULL},
    {"", "HardSigmoid", 1, infer_same, NULL},
    {"", "HardSwish", 14, infer_same, NULL},
    {"", "Tanh", 1, infer_same, NULL},
    {"", "Elu", 1, infer_same, NULL},
    {"", "Selu", 1, infer_same, NULL},
    {"", "Celu", 12, infer_same, NULL},
    {"", "ThresholdedRelu", 10, infer_same, NULL},
    {"", "Softplus", 1, infer_same, NULL},
    {"", "Softsign", 1, infer_same, NULL},
    {"", "Clip", 1, infer_same, NULL},
    {"", "Gelu", 20, infer_same, NULL},
    {"", "Mish", 18, infer_same, NULL},
    {"", "Softmax", 1, infer_same, NULL},
    {"", "LogSoftmax", 1, infer_same, NULL},
    {"", "Hardmax", 1, infer_same, NULL},
    {"", "Shrink", 9, infer_same, NULL},
    {"", "Identity", 1, infer_identity, NULL},
    {"", "Dropout", 1, infer_dropout, NULL},
};
const size_t seam_ops_activation_count = sizeof(seam_ops_activation) / sizeof(seam_ops_activation[0]);
