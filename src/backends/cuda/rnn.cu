// LSTM and GRU time steps for the CUDA backend; see rnn.h. A warp per
// (direction, batch row, hidden unit): its lanes share the dot products of
// the unit's gate rows of w with x_t and of r with h_{t-1}, a butterfly
// sums them, lane 0 applies the cell. One launch a step, in the subgraph's
// CUDA graph: a step's units all read h_{t-1} from y while writing h_t to
// another row of y, so no step races with itself.
#include "rnn.h"

#include <math.h>

namespace {

__device__ __forceinline__ float sigm(float v) { return 1.f / (1.f + expf(-v)); }

__global__ void rnn_step_kernel(sc_rnn_desc d, int64_t s, const float *__restrict__ x, const float *__restrict__ w,
                                const float *__restrict__ r, const float *__restrict__ b, const float *__restrict__ h0,
                                const float *__restrict__ c0, float *y, float *c, float *yh, float *yc) {
    const int64_t H = d.hidden, B = d.batch, I = d.input;
    const int64_t warp = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x & 31;
    if (warp >= d.dirs * B * H) return; // a whole warp: blockDim is a multiple of 32
    const int64_t j = warp % H, bb = warp / H % B, dir = warp / (H * B);
    const bool back = d.dirs == 2 ? dir == 1 : d.reverse != 0;
    const int64_t t = back ? d.seq - 1 - s : s, tp = back ? t + 1 : t - 1;
    const int G = d.gru ? 3 : 4;
    const float *xt = x + (t * B + bb) * I;
    const float *hp = s == 0 ? (h0 ? h0 + (dir * B + bb) * H : nullptr) : y + ((tp * d.dirs + dir) * B + bb) * H;
    const float *wd = w + dir * G * H * I, *rd = r + dir * G * H * H;
    float xs[4] = {0.f, 0.f, 0.f, 0.f}, hs[4] = {0.f, 0.f, 0.f, 0.f};
    for (int g = 0; g < G; g++) {
        const float *wr = wd + (g * H + j) * I;
        for (int64_t k = lane; k < I; k += 32) xs[g] += wr[k] * xt[k];
        if (hp) {
            const float *rr = rd + (g * H + j) * H;
            for (int64_t k = lane; k < H; k += 32) hs[g] += rr[k] * hp[k];
        }
    }
    for (int g = 0; g < G; g++)
        for (int o = 16; o > 0; o >>= 1) {
            xs[g] += __shfl_xor_sync(0xffffffffu, xs[g], o);
            hs[g] += __shfl_xor_sync(0xffffffffu, hs[g], o);
        }
    if (lane) return;
    float bw[4] = {0.f, 0.f, 0.f, 0.f}, br[4] = {0.f, 0.f, 0.f, 0.f};
    if (b)
        for (int g = 0; g < G; g++) bw[g] = b[dir * 2 * G * H + g * H + j], br[g] = b[dir * 2 * G * H + (G + g) * H + j];
    const int64_t o = (dir * B + bb) * H + j;
    const float hprev = hp ? hp[j] : 0.f;
    float hn;
    if (!d.gru) { // i, o, f, c
        float gi = sigm(xs[0] + hs[0] + bw[0] + br[0]), go = sigm(xs[1] + hs[1] + bw[1] + br[1]);
        float gf = sigm(xs[2] + hs[2] + bw[2] + br[2]), gc = tanhf(xs[3] + hs[3] + bw[3] + br[3]);
        float cprev = s == 0 ? (c0 ? c0[o] : 0.f) : c[o];
        float cn = gf * cprev + gi * gc;
        hn = go * tanhf(cn);
        c[o] = cn;
        if (s == d.seq - 1 && yc) yc[o] = cn;
    } else { // z, r, h; linear_before_reset: r scales h_{t-1} R_h^T + Rb_h
        float z = sigm(xs[0] + hs[0] + bw[0] + br[0]), rg = sigm(xs[1] + hs[1] + bw[1] + br[1]);
        float hh = tanhf(xs[2] + bw[2] + rg * (hs[2] + br[2]));
        hn = (1.f - z) * hh + z * hprev;
    }
    y[((t * d.dirs + dir) * B + bb) * H + j] = hn;
    if (s == d.seq - 1 && yh) yh[o] = hn;
}

} // namespace

extern "C" cudaError_t sc_rnn_step(const sc_rnn_desc *d, int64_t s, const float *x, const float *w, const float *r,
                                   const float *b, const float *h0, const float *c0, float *y, float *c, float *yh,
                                   float *yc, cudaStream_t st) {
    const int threads = 128; // 4 warps
    int64_t warps = d->dirs * d->batch * d->hidden;
    int64_t blocks = (warps * 32 + threads - 1) / threads;
    if (blocks < 1) return cudaSuccess;
    if (blocks > 2147483647LL) return cudaErrorInvalidConfiguration;
    rnn_step_kernel<<<(unsigned)blocks, threads, 0, st>>>(*d, s, x, w, r, b, h0, c0, y, c, yh, yc);
    return cudaGetLastError();
}
