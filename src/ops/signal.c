/* Op family: signal processing: DFT, STFT, the window generators and
 * MelWeightMatrix. */
#include "ops/infer.h"

static int64_t scalar_int(const seam_infer *ic, int32_t i) {
    int64_t v[1];
    return infer_in_ints(ic, i, v, 1) == 1 ? v[0] : -1;
}

/* DFT: the signal axis becomes dft_length (or half of it plus one when
 * onesided), and the last axis holds (real, imaginary). */
static void infer_dft(seam_infer *ic) {
    const ir_type *x = infer_in(ic, 0);
    int32_t dt = infer_in_dtype(ic, 0);
    if (!x || x->kind != IR_TYPE_TENSOR || x->rank < 2 || x->rank > INFER_MAX_RANK) {
        infer_set_dtype(ic, 0, dt);
        return;
    }
    int64_t axis = ic->n->opset >= 20 ? (infer_has_input(ic, 2) ? scalar_int(ic, 2) : -2) : node_attr_int(ic->n, "axis", 1);
    ir_dim out[INFER_MAX_RANK];
    for (int32_t d = 0; d < x->rank; d++) out[d] = x->dims[d];
    out[x->rank - 1] = (ir_dim){2, NULL};
    int32_t a = op_axis(axis, x->rank);
    if (a >= 0 && a < x->rank - 1) {
        int64_t n = infer_has_input(ic, 1) ? scalar_int(ic, 1) : x->dims[a].v;
        if (n >= 0 && node_attr_int(ic->n, "onesided", 0)) n = n / 2 + 1;
        out[a] = n >= 0 ? (ir_dim){n, NULL} : IR_DIM_UNKNOWN;
    }
    infer_set_tensor(ic, 0, dt, x->rank, out);
}

/* STFT: [batch, frames, bins, 2]. */
static void infer_stft(seam_infer *ic) {
    const ir_type *x = infer_in(ic, 0), *w = infer_in(ic, 2);
    int32_t dt = infer_in_dtype(ic, 0);
    int64_t step = scalar_int(ic, 1), len = infer_has_input(ic, 3) ? scalar_int(ic, 3) : -1;
    if (len < 0 && w && w->kind == IR_TYPE_TENSOR && w->rank == 1) len = w->dims[0].v;
    int64_t dims[4] = {-1, -1, -1, 2};
    if (x && x->kind == IR_TYPE_TENSOR && x->rank == 3) {
        dims[0] = x->dims[0].v;
        int64_t l = x->dims[1].v;
        if (l >= 0 && len > 0 && step > 0 && l >= len) dims[1] = (l - len) / step + 1;
    }
    if (len > 0) dims[2] = node_attr_int(ic->n, "onesided", 1) ? len / 2 + 1 : len;
    infer_set_tensor_i64(ic, 0, dt, 4, dims);
}

static void infer_window(seam_infer *ic) {
    int64_t n = scalar_int(ic, 0);
    infer_set_tensor_i64(ic, 0, (int32_t)node_attr_int(ic->n, "output_datatype", SEAM_DTYPE_FLOAT32), 1, &n);
}

static void infer_mel(seam_infer *ic) {
    int64_t bins = scalar_int(ic, 0), dft = scalar_int(ic, 1);
    int64_t dims[2] = {dft >= 0 ? dft / 2 + 1 : -1, bins};
    infer_set_tensor_i64(ic, 0, (int32_t)node_attr_int(ic->n, "output_datatype", SEAM_DTYPE_FLOAT32), 2, dims);
}

const seam_op_def seam_ops_signal[] = {
    {"", "DFT", 17, infer_dft},
    {"", "STFT", 17, infer_stft},
    {"", "HannWindow", 17, infer_window},
    {"", "HammingWindow", 17, infer_window},
    {"", "BlackmanWindow", 17, infer_window},
    {"", "MelWeightMatrix", 17, infer_mel},
};
const size_t seam_ops_signal_count = sizeof(seam_ops_signal) / sizeof(seam_ops_signal[0]);
