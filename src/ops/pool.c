/* Op family: pooling. */
#include "ops/conv_geom.h"
#include "ops/infer.h"

static void infer_pool(seam_infer *ic) {
    const ir_type *x = infer_in(ic, 0);
    int32_t dt = infer_in_dtype(ic, 0);
    if (!x || x->kind != IR_TYPE_TENSOR || x->rank < 3) {
        infer_set_dtype(ic, 0, dt);
        return;
    }
    const int64_t *kernel;
    int32_t nk = node_attr_ints(ic->n, "kernel_shape", &kernel);
    ir_dim out[INFER_MAX_RANK];
    out[0] = x->dims[0];
    out[1] = x->dims[1];
    if (nk != x->rank - 2 || !conv_geom_infer(ic->n, x, kernel, nk, node_attr_int(ic->n, "ceil_mode", 0) != 0, out + 2)) {
        for (int32_t k = 2; k < x->rank; k++) out[k] = IR_DIM_UNKNOWN;
    }
    infer_set_tensor(ic, 0, dt, x->rank, out);
    infer_set_tensor(ic, 1, SEAM_DTYPE_INT64, x->rank, out); /* MaxPool's Indices */
}

static void infer_global_pool(seam_infer *ic) {
    const ir_type *x = infer_in(ic, 0);
    int32_t dt = infer_in_dtype(ic, 0);
    if (!x || x->kind != IR_TYPE_TENSOR || x->rank < 2) {
        infer_set_dtype(ic, 0, dt);
        return;
    }
    ir_dim out[INFER_MAX_RANK];
    for (int32_t k = 0; k < x->rank; k++) out[k] = k < 2 ? x->dims[k] : (ir_dim){1, NULL};
    infer_set_tensor(ic, 0, dt, x->rank, out);
}

/* MaxUnpool: the output_shape input, else (in - 1) * stride - pads + kernel. */
static void infer_max_unpool(seam_infer *ic) {
    int32_t dt = infer_in_dtype(ic, 0);
    int64_t shape[INFER_MAX_RANK];
    int32_t n = infer_has_input(ic, 2) ? infer_in_ints(ic, 2, shape, INFER_MAX_RANK) : -1;
    if (n >= 0) {
        infer_set_tensor_i64(ic, 0, dt, n, shape);
        return;
    }
    const ir_type *x = infer_in(ic, 0);
    if (infer_has_input(ic, 2)) { /* output_shape known only at run time */
        if (x && x->kind == IR_TYPE_TENSOR && x->rank >= 0) {
            for (int32_t k = 0; k < x->rank && k < INFER_MAX_RANK; k++) shape[k] = -1;
            infer_set_tensor_i64(ic, 0, dt, x->rank, shape);
        } else {
            infer_set_dtype(ic, 0, dt);
        }
        return;
    }
    const int64_t *kernel, *strides = NULL, *pads = NULL;
    int32_t nk = node_attr_ints(ic->n, "kernel_shape", &kernel);
    int32_t ns = node_attr_ints(ic->n, "strides", &strides), np = node_attr_ints(ic->n, "pads", &pads);
    if (!x || x->kind != IR_TYPE_TENSOR || x->rank < 3 || nk != x->rank - 2) {
        infer_set_dtype(ic, 0, dt);
        return;
    }
    ir_dim out[INFER_MAX_RANK];
    out[0] = x->dims[0];
    out[1] = x->dims[1];
    for (int32_t k = 0; k < nk; k++) {
        int64_t in = x->dims[2 + k].v, s = ns == nk ? strides[k] : 1;
        int64_t p0 = np == 2 * nk ? pads[k] : 0, p1 = np == 2 * nk ? pads[k + nk] : 0;
        /* hostile attributes: leave the dim unknown rather than overflow */
        bool sane = in >= 1 && in <= IR_MAX_DIM && s >= 1 && s <= IR_MAX_DIM && in - 1 <= IR_MAX_DIM / s &&
                    kernel[k] >= 1 && kernel[k] <= IR_MAX_DIM &&
                    p0 >= 0 && p1 >= 0 && p0 <= IR_MAX_DIM && p1 <= IR_MAX_DIM;
        int64_t o = sane ? (in - 1) * s - p0 - p1 + kernel[k] : -1;
        out[2 + k] = sane && o >= 0 ? (ir_dim){o, NULL} : IR_DIM_UNKNOWN;
    }
    infer_set_tensor(ic, 0, dt, x->rank, out);
}

const seam_op_def seam_ops_pool[] = {
    {"", "MaxPool", 1, infer_pool},
    {"", "AveragePool", 1, infer_pool},
    {"", "LpPool", 1, infer_pool},
    {"", "GlobalAveragePool", 1, infer_global_pool},
    {"", "GlobalMaxPool", 1, infer_global_pool},
    {"", "GlobalLpPool", 2, infer_global_pool},
    {"", "MaxUnpool", 9, infer_max_unpool},
};
const size_t seam_ops_pool_count = sizeof(seam_ops_pool) / sizeof(seam_ops_pool[0]);
