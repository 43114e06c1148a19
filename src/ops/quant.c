/* Op family: quantization. */
#include "ops/linalg_shape.h"

/* QuantizeLinear: x's shape, the zero point's dtype (uint8 without one). */
static void infer_quantize(seam_infer *ic) {
    const ir_type *x = infer_in(ic, 0);
    /* the zero point's type; without one, opset 21's output_dtype, else uint8 */
    int32_t dt = infer_has_input(ic, 2) ? infer_in_dtype(ic, 2)
                                        : (int32_t)node_attr_int(ic->n, "output_dtype", SEAM_DTYPE_UINT8);
    if (dt == SEAM_DTYPE_UNDEFINED) dt = SEAM_DTYPE_UINT8;
    infer_set_tensor(ic, 0, dt, x && x->kind == IR_TYPE_TENSOR ? x->rank : -1, x ? x->dims : NULL);
}

/* DequantizeLinear: x's shape, the scale's dtype (float32). */
static void infer_dequantize(seam_infer *ic) {
    const ir_type *x = infer_in(ic, 0);
    int32_t dt = infer_in_dtype(ic, 1) ? infer_in_dtype(ic, 1) : SEAM_DTYPE_FLOAT32;
    infer_set_tensor(ic, 0, dt, x && x->kind == IR_TYPE_TENSOR ? x->rank : -1, x ? x->dims : NULL);
}

static void infer_dyn_quantize(seam_infer *ic) {
    const ir_type *x = infer_in(ic, 0);
    infer_set_tensor(ic, 0, SEAM_DTYPE_UINT8, x && x->kind == IR_TYPE_TENSOR ? x->rank : -1, x ? x->dims : NULL);
    infer_set_tensor(ic, 1, SEAM_DTYPE_FLOAT32, 0, NULL);
    infer_set_tensor(ic, 2, SEAM_DTYPE_UINT8, 0, NULL);
}

/* QLinearConv: x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B. */
static void infer_qlinear_conv(seam_infer *ic) { conv_shape(ic, infer_in_dtype(ic, 7), 0, 3); }
/* QLinearMatMul: a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp. */
static void infer_qlinear_matmul(seam_infer *ic) { matmul_shape(ic, infer_in_dtype(ic, 7), 0, 3); }
static void infer_matmul_integer(seam_infer *ic) { matmul_shape(ic, SEAM_DTYPE_INT32, 0, 1); }
static void infer_conv_integer(seam_infer *ic) { conv_shape(ic, SEAM_DTYPE_INT32, 0, 1); }

const seam_op_def seam_ops_quant[] = {
    {"", "QuantizeLinear", 10, infer_quantize},
    {"", "DequantizeLinear", 10, infer_dequantize},
    {"", "DynamicQuantizeLinear", 11, infer_dyn_quantize},
    {"", "QLinearConv", 10, infer_qlinear_conv},
    {"", "QLinearMatMul", 10, infer_qlinear_matmul},
    {"", "MatMulInteger", 10, infer_matmul_integer},
    {"", "ConvInteger", 10, infer_conv_integer},
};
const size_t seam_ops_quant_count = sizeof(seam_ops_quant) / sizeof(seam_ops_quant[0]);
