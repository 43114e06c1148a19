/* Op family: reductions, and ArgMax/ArgMin. */
#include <string.h>

#include "ops/infer.h"

static void reduce_shape(seam_infer *ic, int32_t dtype, bool axes_from_input) {
    const ir_type *x = infer_in(ic, 0);
    if (!x || x->kind != IR_TYPE_TENSOR || x->rank < 0) {
        infer_set_dtype(ic, 0, dtype);
        return;
    }
    bool keep = node_attr_int(ic->n, "keepdims", 1) != 0;
    int64_t axes[INFER_MAX_RANK];
    int32_t na;
    if (axes_from_input) {
        na = infer_has_input(ic, 1) ? infer_in_ints(ic, 1, axes, INFER_MAX_RANK) : 0;
        if (na < 0) { /* axes not known: the rank is, when dims are kept */
            if (keep) {
                ir_dim out[INFER_MAX_RANK];
                for (int32_t k = 0; k < x->rank; k++) out[k] = IR_DIM_UNKNOWN;
                infer_set_tensor(ic, 0, dtype, x->rank, out);
            } else {
                infer_set_dtype(ic, 0, dtype);
            }
            return;
        }
        if (na == 0 && node_attr_int(ic->n, "noop_with_empty_axes", 0)) {
            infer_set_tensor(ic, 0, dtype, x->rank, x->dims);
            return;
        }
    } else {
        const int64_t *a;
        na = node_attr_ints(ic->n, "axes", &a);
        if (na > INFER_MAX_RANK) return;
        if (na < 0) na = 0;
        if (na > 0) memcpy(axes, a, sizeof(int64_t) * (size_t)na);
    }
    bool red[INFER_MAX_RANK] = {false};
    for (int32_t k = 0; k < na; k++) {
        int32_t a = op_axis(axes[k], x->rank);
        if (a < 0) return;
        red[a] = true;
    }
    ir_dim out[INFER_MAX_RANK];
    int32_t r = 0;
    for (int32_t k = 0; k < x->rank; k++) {
        bool all = na == 0;
        if (red[k] || all) {
            if (keep) out[r++] = (ir_dim){1, NULL};
        } else {
            out[r++] = x->dims[k];
        }
    }
    infer_set_tensor(ic, 0, dtype, r, out);
}

static void infer_reduce(seam_infer *ic) {
    /* axes moved from an attribute to input 1: ReduceSum in opset 13, the
     * others in opset 18 */
    int32_t since = strcmp(ic->n->op_type, "ReduceSum") == 0 ? 13 : 18;
    reduce_shape(ic, infer_in_dtype(ic, 0), ic->n->opset >= since);
}

static void infer_arg(seam_infer *ic) {
    const ir_type *x = infer_in(ic, 0);
    if (!x || x->kind != IR_TYPE_TENSOR || x->rank < 0) {
        infer_set_dtype(ic, 0, SEAM_DTYPE_INT64);
        return;
    }
    int32_t axis = op_axis(node_attr_int(ic->n, "axis", 0), x->rank);
    if (axis < 0) return;
    bool keep = node_attr_int(ic->n, "keepdims", 1) != 0;
    ir_dim out[INFER_MAX_RANK];
    int32_t r = 0;
    for (int32_t k = 0; k < x->rank; k++) {
        if (k == axis) {
            if (keep) out[r++] = (ir_dim){1, NULL};
        } else {
            out[r++] = x->dims[k];
        }
    }
    infer_set_tensor(ic, 0, SEAM_DTYPE_INT64, r, out);
}

const seam_op_def seam_ops_reduce[] = {
    {"", "ReduceSum", 1, infer_reduce},
    {"", "ReduceMean", 1, infer_reduce},
    {"", "ReduceMax", 1, infer_reduce},
    {"", "ReduceMin", 1, infer_reduce},
    {"", "ReduceProd", 1, infer_reduce},
    {"", "ReduceL1", 1, infer_reduce},
    {"", "ReduceL2", 1, infer_reduce},
    {"", "ReduceLogSum", 1, infer_reduce},
    {"", "ReduceLogSumExp", 1, infer_reduce},
    {"", "ReduceSumSquare", 1, infer_reduce},
    {"", "ArgMax", 1, infer_arg},
    {"", "ArgMin", 1, infer_arg},
};
const size_t seam_ops_reduce_count = sizeof(seam_ops_reduce) / sizeof(seam_ops_reduce[0]);
