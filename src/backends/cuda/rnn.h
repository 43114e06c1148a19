/* The recurrent ops (LSTM, GRU) of the CUDA backend: one launch per time
 * step (rnn.cu), callable from C. */
#ifndef SEAM_CUDA_RNN_H
#define SEAM_CUDA_RNN_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An LSTM (gates i, o, f, c; sigmoid, tanh, tanh; no peepholes, no clip)
 * or a GRU (gates z, r, h; linear_before_reset = 1) over a sequence, in
 * ONNX's layout 0: x [seq, batch, input], w [dirs, G*hidden, input], r
 * [dirs, G*hidden, hidden], b [dirs, 2*G*hidden] (the input's biases,
 * then the recurrence's) or NULL, G 4 (LSTM) or 3 (GRU). With two
 * directions the second runs backwards; with one, reverse says which way. */
typedef struct sc_rnn_desc {
    int32_t gru;          /* 0 LSTM, 1 GRU */
    int32_t dirs, reverse;
    int64_t seq, batch, input, hidden;
} sc_rnn_desc;

/* Step s (0 .. seq-1) of every direction: direction d's time is s, or
 * seq-1-s running backwards. h_{t-1} is read back from y (every step's
 * hidden state, [seq, dirs, batch, hidden]), h0 [dirs, batch, hidden] (NULL:
 * zeros) at s = 0; the LSTM's cell state c [dirs, batch, hidden] is
 * updated in place (c0, or zeros, read at s = 0). At s = seq-1 the last
 * states go to yh and yc (each may be NULL). */
cudaError_t sc_rnn_step(const sc_rnn_desc *d, int64_t s, const float *x, const float *w, const float *r, const float *b,
                        const float *h0, const float *c0, float *y, float *c, float *yh, float *yc, cudaStream_t st);

#ifdef __cplusplus
}
#endif
#endif
