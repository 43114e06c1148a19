/* Op family: spatial sampling: GridSample, AffineGrid, RoiAlign. */
#include "ops/infer.h"

/* GridSample: [N, C, D1...] sampled at grid [N, O1..., k] -> [N, C, O1...]. */
static void infer_grid_sample(seam_infer *ic) {
    const ir_type *x = infer_in(ic, 0), *g = infer_in(ic, 1);
    int32_t dt = infer_in_dtype(ic, 0);
    if (!x || !g || x->kind != IR_TYPE_TENSOR || g->kind != IR_TYPE_TENSOR || x->rank < 3 || g->rank != x->rank ||
        x->rank > INFER_MAX_RANK) {
        infer_set_dtype(ic, 0, dt);
        return;
    }
    ir_dim out[INFER_MAX_RANK];
    out[0] = x->dims[0];
    out[1] = x->dims[1];
    for (int32_t d = 2; d < x->rank; d++) out[d] = g->dims[d - 1];
    infer_set_tensor(ic, 0, dt, x->rank, out);
}

/* AffineGrid: theta [N, 2, 3] and size (N, C, H, W) -> [N, H, W, 2]; 3-D
 * likewise with 3. */
static void infer_affine_grid(seam_infer *ic) {
    int64_t size[5];
    int32_t n = infer_in_ints(ic, 1, size, 5);
    int32_t dt = infer_in_dtype(ic, 0);
    if (n == 4) {
        int64_t d[4] = {size[0], size[2], size[3], 2};
        infer_set_tensor_i64(ic, 0, dt, 4, d);
    } else if (n == 5) {
        int64_t d[5] = {size[0], size[2], size[3], size[4], 3};
        infer_set_tensor_i64(ic, 0, dt, 5, d);
    } else {
        infer_set_dtype(ic, 0, dt);
    }
}

/* RoiAlign: [num_rois, C, output_height, output_width]. */
static void infer_roi_align(seam_infer *ic) {
    const ir_type *x = infer_in(ic, 0), *r = infer_in(ic, 1);
    ir_dim out[4] = {IR_DIM_UNKNOWN, IR_DIM_UNKNOWN, {node_attr_int(ic->n, "output_height", 1), NULL},
                     {node_attr_int(ic->n, "output_width", 1), NULL}};
    if (r && r->kind == IR_TYPE_TENSOR && r->rank == 2) out[0] = r->dims[0];
    if (x && x->kind == IR_TYPE_TENSOR && x->rank == 4) out[1] = x->dims[1];
    infer_set_tensor(ic, 0, infer_in_dtype(ic, 0), 4, out);
}

const seam_op_def seam_ops_spatial[] = {
    {"", "GridSample", 16, infer_grid_sample},
    {"", "AffineGrid", 20, infer_affine_grid},
    {"", "RoiAlign", 10, infer_roi_align},
};
const size_t seam_ops_spatial_count = sizeof(seam_ops_spatial) / sizeof(seam_ops_spatial[0]);
