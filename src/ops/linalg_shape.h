/* MatMul and Conv output shapes, shared by linalg.c and quant.c. */
#ifndef SEAM_LINALG_SHAPE_H
#define SEAM_LINALG_SHAPE_H

#include <string.h>

#include "ops/conv_geom.h"
#include "ops/infer.h"

/* numpy matmul of inputs ia and ib into output 0 with dtype. */
static inline void matmul_shape(seam_infer *ic, int32_t dtype, int32_t ia, int32_t ib) {
    const ir_type *a = infer_in(ic, ia), *b = infer_in(ic, ib);
    if (!a || !b || a->kind != IR_TYPE_TENSOR || b->kind != IR_TYPE_TENSOR || a->rank < 1 || b->rank < 1 ||
        a->rank > INFER_MAX_RANK || b->rank > INFER_MAX_RANK) {
        infer_set_dtype(ic, 0, dtype);
        return;
    }
    /* 1-D operands get a 1 prepended (a) or appended (b), removed after */
    ir_dim ad[INFER_MAX_RANK + 1], bd[INFER_MAX_RANK + 1];
    int32_t ar = a->rank, br = b->rank;
    if (ar == 1) {
        ad[0] = (ir_dim){1, NULL};
        ad[1] = a->dims[0];
        ar = 2;
    } else {
        memcpy(ad, a->dims, sizeof(ir_dim) * (size_t)ar);
    }
    if (br == 1) {
        bd[0] = b->dims[0];
        bd[1] = (ir_dim){1, NULL};
        br = 2;
    } else {
        memcpy(bd, b->dims, sizeof(ir_dim) * (size_t)br);
    }
    ir_type ab = {IR_TYPE_TENSOR, 0, ar - 2, ad, NULL, NULL}, bb = {IR_TYPE_TENSOR, 0, br - 2, bd, NULL, NULL};
    const ir_type *ts[2] = {&ab, &bb};
    ir_dim out[INFER_MAX_RANK + 2];
    int32_t r = infer_broadcast(ts, 2, out);
    if (r < 0 || r + 2 > INFER_MAX_RANK) return;
    if (a->rank > 1) out[r++] = ad[ar - 2];
    if (b->rank > 1) out[r++] = bd[br - 1];
    infer_set_tensor(ic, 0, dtype, r, out);
}

/* Conv of input ix with weights iw into output 0 with dtype. */
static inline void conv_shape(seam_infer *ic, int32_t dtype, int32_t ix, int32_t iw) {
    const ir_type *x = infer_in(ic, ix), *w = infer_in(ic, iw);
    if (!x || x->kind != IR_TYPE_TENSOR || x->rank < 3 || x->rank > INFER_MAX_RANK) {
        infer_set_dtype(ic, 0, dtype);
        return;
    }
    int32_t n_sp = x->rank - 2;
    bool wk = w && w->kind == IR_TYPE_TENSOR && w->rank == x->rank;
    ir_dim out[INFER_MAX_RANK];
    out[0] = x->dims[0];
    out[1] = wk ? w->dims[0] : IR_DIM_UNKNOWN;
    int64_t kernel[INFER_MAX_RANK];
    const int64_t *ks;
    int32_t nk = node_attr_ints(ic->n, "kernel_shape", &ks);
    bool known = true;
    for (int32_t k = 0; k < n_sp; k++) {
        kernel[k] = nk == n_sp ? ks[k] : wk ? w->dims[2 + k].v : -1;
        known &= kernel[k] > 0;
    }
    if (!known || !conv_geom_infer(ic->n, x, kernel, n_sp, false, out + 2))
        for (int32_t k = 0; k < n_sp; k++) out[2 + k] = IR_DIM_UNKNOWN;
    infer_set_tensor(ic, 0, dtype, x->rank, out);
}

#endif
