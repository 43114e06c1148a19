/* Op family: normalization. Outputs keep the input's type; the optional
 * statistics outputs have their own shapes. */
#include "ops/infer.h"

static void infer_same(seam_infer *ic) { infer_copy_type(ic, 0, 0); }

/* BatchNormalization: Y like X; in training mode also running mean and
 * variance, shaped like the scale. */
static void infer_batchnorm(seam_infer *ic) {
    infer_copy_type(ic, 0, 0);
    for (int32_t o = 1; o < infer_n_outputs(ic); o++) infer_copy_type(ic, o, o < 3 ? 3 : 1);
}

/* LayerNormalization: Y like X; Mean and InvStdDev keep dims before axis
 * and have 1 after, in stash_type (float by default). */
static void infer_layernorm(seam_infer *ic) {
    infer_copy_type(ic, 0, 0);
    const ir_type *x = infer_in(ic, 0);
    if (!x || x->kind != IR_TYPE_TENSOR || x->rank < 0) return;
    int32_t axis = op_axis(node_attr_int(ic->n, "axis", -1), x->rank);
    if (axis < 0) return;
    ir_dim out[INFER_MAX_RANK];
    for (int32_t k = 0; k < x->rank; k++) out[k] = k < axis ? x->dims[k] : (ir_dim){1, NULL};
    int32_t st = (int32_t)node_attr_int(ic->n, "stash_type", SEAM_DTYPE_FLOAT32);
    infer_set_tensor(ic, 1, st, x->rank, out);
    infer_set_tensor(ic, 2, st, x->rank, out);
}

const seam_op_def seam_ops_norm[] = {
    {"", "BatchNormalization", 1, infer_batchnorm},
    {"", "LayerNormalization", 17, infer_layernorm},
    {"", "InstanceNormalization", 1, infer_same},
    {"", "GroupNormalization", 18, infer_same},
    {"", "LRN", 1, infer_same},
    {"", "MeanVarianceNormalization", 9, infer_same},
    {"", "LpNormalization", 1, infer_same},
};
const size_t seam_ops_norm_count = sizeof(seam_ops_norm) / sizeof(seam_ops_norm[0]);
