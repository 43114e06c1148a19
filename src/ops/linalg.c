/* Op family: MatMul, Gemm, Conv, ConvTranspose (Einsum is in algebra.c). The
 * quantized forms reuse these shapes (quant.c). */
#include "ops/conv_geom.h"
#include "ops/infer.h"
#include "ops/linalg_shape.h"

static void infer_matmul(seam_infer *ic) { matmul_shape(ic, infer_in_dtype(ic, 0), 0, 1); }

static void infer_gemm(seam_infer *ic) {
    const ir_type *a = infer_in(ic, 0), *b = infer_in(ic, 1);
    int32_t dt = infer_in_dtype(ic, 0);
    bool ta = node_attr_int(ic->n, "transA", 0) != 0, tb = node_attr_int(ic->n, "transB", 0) != 0;
    ir_dim out[2] = {IR_DIM_UNKNOWN, IR_DIM_UNKNOWN};
    if (a && a->kind == IR_TYPE_TENSOR && a->rank == 2) out[0] = a->dims[ta ? 1 : 0];
    if (b && b->kind == IR_TYPE_TENSOR && b->rank == 2) out[1] = b->dims[tb ? 0 : 1];
    infer_set_tensor(ic, 0, dt, 2, out);
}

static void infer_conv(seam_infer *ic) { conv_shape(ic, infer_in_dtype(ic, 0), 0, 1); }

static void infer_conv_transpose(seam_infer *ic) {
    const ir_type *x = infer_in(ic, 0), *w = infer_in(ic, 1);
    int32_t dt = infer_in_dtype(ic, 0);
    if (!x || x->kind != IR_TYPE_TENSOR || x->rank < 3 || x->rank > INFER_MAX_RANK) {
        infer_set_dtype(ic, 0, dt);
        return;
    }
    int32_t n_sp = x->rank - 2;
    int64_t group = node_attr_int(ic->n, "group", 1);
    ir_dim out[INFER_MAX_RANK];
    out[0] = x->dims[0];
    out[1] = w && w->kind == IR_TYPE_TENSOR && w->rank == x->rank && w->dims[1].v >= 0 && group > 0
                 ? (ir_dim){w->dims[1].v * group, NULL}
                 : IR_DIM_UNKNOWN;
    const int64_t *os, *kernel = NULL, *strides = NULL, *pads = NULL, *dil = NULL, *opad = NULL;
    int32_t nos = node_attr_ints(ic->n, "output_shape", &os);
    int32_t nk = node_attr_ints(ic->n, "kernel_shape", &kernel), ns = node_attr_ints(ic->n, "strides", &strides);
    int32_t np = node_attr_ints(ic->n, "pads", &pads), nd = node_attr_ints(ic->n, "dilations", &dil);
    int32_t no = node_attr_ints(ic->n, "output_padding", &opad);
    for (int32_t k = 0; k < n_sp; k++) {
        out[2 + k] = IR_DIM_UNKNOWN;
        if (nos == n_sp) {
            out[2 + k] = (ir_dim){os[k], NULL};
            continue;
        }
        int64_t in = x->dims[2 + k].v;
        int64_t kern = nk == n_sp ? kernel[k] : (w && w->kind == IR_TYPE_TENSOR && w->rank == x->rank ? w->dims[2 + k].v : -1);
        int64_t s = ns == n_sp ? strides[k] : 1, d = nd == n_sp ? dil[k] : 1, op = no == n_sp ? opad[k] : 0;
        if (in < 0 || kern < 0) continue;
        const char *ap = node_attr_string(ic->n, "auto_pad", "NOTSET");
        if (ap[0] == 'S') { /* SAME_*: out = in * stride */
            out[2 + k] = (ir_dim){in * s, NULL};
            continue;
        }
        int64_t p = np == 2 * n_sp ? pads[k] + pads[k + n_sp] : 0;
        int64_t v = s * (in - 1) + op + (kern - 1) * d + 1 - p;
        if (v >= 0) out[2 + k] = (ir_dim){v, NULL};
    }
    infer_set_tensor(ic, 0, dt, x->rank, out);
}

const seam_op_def seam_ops_linalg[] = {
    {"", "MatMul", 1, infer_matmul},
    {"", "Gemm", 1, infer_gemm},
    {"", "Conv", 1, infer_conv},
    {"", "ConvTranspose", 1, infer_conv_transpose},
};
const size_t seam_ops_linalg_count = sizeof(seam_ops_linalg) / sizeof(seam_ops_linalg[0]);
