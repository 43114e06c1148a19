/* Op family: recurrent: LSTM, GRU, RNN. */
#include <string.h>

#include "ops/infer.h"

/* All three share one shape rule. With layout 0 (the default):
 *   X [seq, batch, input]  ->  Y [seq, dirs, batch, hidden],
 *                              Y_h (and LSTM's Y_c) [dirs, batch, hidden];
 * with layout 1 (opset 14) batch comes first:
 *   X [batch, seq, input]  ->  Y [batch, seq, dirs, hidden],
 *                              Y_h [batch, dirs, hidden].
 * hidden comes from the attribute, else from R [dirs, gates*hidden, hidden]. */
static void infer_recurrent(seam_infer *ic) {
    int32_t dt = infer_in_dtype(ic, 0);
    const ir_type *x = infer_in(ic, 0), *r = infer_in(ic, 2);
    const char *dir = node_attr_string(ic->n, "direction", "forward");
    int64_t dirs = strcmp(dir, "bidirectional") == 0 ? 2 : 1;
    int64_t hidden = node_attr_int(ic->n, "hidden_size", -1);
    if (hidden < 0 && r && r->kind == IR_TYPE_TENSOR && r->rank == 3) hidden = r->dims[2].v;
    bool batch_first = node_attr_int(ic->n, "layout", 0) == 1;
    if (!x || x->kind != IR_TYPE_TENSOR || x->rank != 3) {
        for (int32_t o = 0; o < infer_n_outputs(ic); o++) infer_set_dtype(ic, o, dt);
        return;
    }
    ir_dim seq = x->dims[batch_first ? 1 : 0], batch = x->dims[batch_first ? 0 : 1];
    ir_dim d = {dirs, NULL}, h = {hidden, NULL};
    if (hidden < 0) h = IR_DIM_UNKNOWN;
    ir_dim y[4], yh[3];
    if (batch_first) {
        y[0] = batch, y[1] = seq, y[2] = d, y[3] = h;
        yh[0] = batch, yh[1] = d, yh[2] = h;
    } else {
        y[0] = seq, y[1] = d, y[2] = batch, y[3] = h;
        yh[0] = d, yh[1] = batch, yh[2] = h;
    }
    infer_set_tensor(ic, 0, dt, 4, y);
    for (int32_t o = 1; o < infer_n_outputs(ic); o++) infer_set_tensor(ic, o, dt, 3, yh);
}

const seam_op_def seam_ops_rnn[] = {
    {"", "LSTM", 1, infer_recurrent},
    {"", "GRU", 1, infer_recurrent},
    {"", "RNN", 1, infer_recurrent},
};
const size_t seam_ops_rnn_count = sizeof(seam_ops_rnn) / sizeof(seam_ops_rnn[0]);
