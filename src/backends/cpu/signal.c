/* CPU kernels: DFT, STFT, window generators, MelWeightMatrix. The
 * transforms are direct O(n^2) sums in double: exact enough for the spec's
 * tolerance and simple; no FFT library is linked for them. */
#include <math.h>
#include <string.h>

#include "backends/cpu/cpu.h"

#define MAX_DFT ((int64_t)1 << 20)

static bool scalar_i64(const seam_tensor *t, int64_t *v) {
    if (!t || t->numel != 1 || !cpu_is_int(t->dtype)) return false;
    *v = cpu_get_i64(t->data, t->dtype, 0);
    return true;
}

/* One transform of length n over `len` input points (zero padded or cut)
 * at in[0], in[stride], ...; complex input when cplx. Writes `bins`
 * complex outputs at out[0], out[ostride], ... (real, imag adjacent). */
static void dft_1d(const seam_tensor *x, int64_t in_off, int64_t stride, int64_t len, bool cplx, int64_t n,
                   int64_t bins, bool inverse, const double *window, double *out, int64_t ostride) {
    for (int64_t f = 0; f < bins; f++) {
        double re = 0, im = 0;
        for (int64_t t = 0; t < n && t < len; t++) {
            double w = window ? window[t] : 1;
            double xr = w * cpu_get(x->data, x->dtype, in_off + t * stride);
            double xi = cplx ? w * cpu_get(x->data, x->dtype, in_off + t * stride + 1) : 0;
            double ang = (inverse ? 2 : -2) * M_PI * (double)((f * t) % n) / (double)n;
            double c = cos(ang), s = sin(ang);
            re += xr * c - xi * s;
            im += xr * s + xi * c;
        }
        if (inverse) re /= (double)n, im /= (double)n;
        out[f * ostride] = re;
        out[f * ostride + 1] = im;
    }
}

static seam_status run_dft(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (!x || x->rank < 2 || (x->dims[x->rank - 1] != 1 && x->dims[x->rank - 1] != 2))
        return kernel_fail(k, "the input must be [..., signal, 1 or 2]");
    bool cplx = x->dims[x->rank - 1] == 2;
    int64_t axis;
    if (k->n->opset >= 20) {
        axis = -2;
        if (kernel_in(k, 2) && !scalar_i64(kernel_in(k, 2), &axis)) return kernel_fail(k, "axis must be an integer scalar");
    } else {
        axis = node_attr_int(k->n, "axis", 1);
    }
    int32_t a = op_axis(axis, x->rank);
    if (a < 0 || a == x->rank - 1) return kernel_fail(k, "axis %lld is not a signal axis", (long long)axis);
    int64_t n = x->dims[a];
    if (kernel_in(k, 1) && !scalar_i64(kernel_in(k, 1), &n)) return kernel_fail(k, "dft_length must be an integer scalar");
    if (n < 1 || n > MAX_DFT) return kernel_fail(k, "dft_length %lld is out of range", (long long)n);
    bool inverse = node_attr_int(k->n, "inverse", 0) != 0, onesided = node_attr_int(k->n, "onesided", 0) != 0;
    if (onesided && (cplx || inverse)) return kernel_fail(k, "onesided needs a real, forward transform");
    int64_t bins = onesided ? n / 2 + 1 : n;
    int64_t dims[SEAM_MAX_RANK];
    memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
    dims[a] = bins;
    dims[x->rank - 1] = 2;
    seam_tensor *y = kernel_out(k, 0, x->dtype, x->rank, dims);
    if (!y) return kernel_oom(k);
    int64_t outer = cpu_span(x->dims, 0, a), inner_x = cpu_span(x->dims, a + 1, x->rank);
    int64_t inner_y = cpu_span(dims, a + 1, x->rank);
    double *buf = kernel_scratch(k, sizeof(double) * (size_t)(2 * bins));
    if (!buf) return kernel_oom(k);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t q = 0; q < inner_x / x->dims[x->rank - 1]; q++) {
            int64_t cw = x->dims[x->rank - 1];
            int64_t in_off = o * x->dims[a] * inner_x + q * cw;
            dft_1d(x, in_off, inner_x, x->dims[a], cplx, n, bins, inverse, NULL, buf, 2);
            for (int64_t f = 0; f < bins; f++) {
                int64_t out_off = o * bins * inner_y + f * inner_y + q * 2;
                cpu_set(y->data, y->dtype, out_off, buf[2 * f]);
                cpu_set(y->data, y->dtype, out_off + 1, buf[2 * f + 1]);
            }
        }
    return SEAM_STATUS_OK;
}

static seam_status run_stft(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0), *w = kernel_in(k, 2);
    if (!x || x->rank != 3 || (x->dims[2] != 1 && x->dims[2] != 2)) return kernel_fail(k, "the signal must be [batch, length, 1 or 2]");
    int64_t step, len = -1;
    if (!scalar_i64(kernel_in(k, 1), &step) || step < 1) return kernel_fail(k, "frame_step must be a positive integer");
    if (kernel_in(k, 3) && !scalar_i64(kernel_in(k, 3), &len)) return kernel_fail(k, "frame_length must be an integer scalar");
    if (len < 0 && w) len = w->numel;
    if (len < 1 || len > MAX_DFT || len > x->dims[1]) return kernel_fail(k, "frame length %lld is out of range", (long long)len);
    if (w && (w->rank != 1 || w->numel != len)) return kernel_fail(k, "window must be [frame_length]");
    bool cplx = x->dims[2] == 2, onesided = node_attr_int(k->n, "onesided", 1) != 0;
    if (onesided && cplx) return kernel_fail(k, "onesided needs a real signal");
    int64_t frames = (x->dims[1] - len) / step + 1, bins = onesided ? len / 2 + 1 : len;
    int64_t dims[4] = {x->dims[0], frames, bins, 2};
    seam_tensor *y = kernel_out(k, 0, x->dtype, 4, dims);
    if (!y) return kernel_oom(k);
    double *buf = kernel_scratch(k, sizeof(double) * (size_t)(2 * bins + len));
    if (!buf) return kernel_oom(k);
    double *win = w ? buf + 2 * bins : NULL;
    for (int64_t t = 0; w && t < len; t++) win[t] = cpu_get(w->data, w->dtype, t);
    int64_t cw = x->dims[2];
    for (int64_t b = 0; b < x->dims[0]; b++)
        for (int64_t f = 0; f < frames; f++) {
            dft_1d(x, (b * x->dims[1] + f * step) * cw, cw, len, cplx, len, bins, false, win, buf, 2);
            for (int64_t q = 0; q < 2 * bins; q++) cpu_set(y->data, y->dtype, ((b * frames + f) * bins) * 2 + q, buf[q]);
        }
    return SEAM_STATUS_OK;
}

static seam_status run_window(seam_kernel *k) {
    int64_t n;
    if (!scalar_i64(kernel_in(k, 0), &n) || n < 0 || n > MAX_DFT) return kernel_fail(k, "size must be an integer scalar in range");
    int32_t dt = (int32_t)node_attr_int(k->n, "output_datatype", SEAM_DTYPE_FLOAT32);
    if (!cpu_is_float(dt) && !cpu_is_int(dt)) return kernel_fail(k, "output_datatype is not numeric");
    seam_tensor *y = kernel_out(k, 0, dt, 1, &n);
    if (!y) return kernel_oom(k);
    double N = node_attr_int(k->n, "periodic", 1) ? (double)n : (double)(n - 1);
    char kind = k->n->op_type[0] == 'B' ? 'b' : k->n->op_type[2] == 'n' ? 'n' : 'm';
    for (int64_t i = 0; i < n; i++) {
        double p = N > 0 ? 2 * M_PI * (double)i / N : 0, v;
        if (kind == 'n') v = 0.5 - 0.5 * cos(p);
        else if (kind == 'm') v = 25.0 / 46 - 21.0 / 46 * cos(p);
        else v = 0.42 - 0.5 * cos(p) + 0.08 * cos(2 * p);
        cpu_set(y->data, dt, i, v);
    }
    return SEAM_STATUS_OK;
}

/* MelWeightMatrix: triangular filters between mel-spaced edges, mapped to
 * DFT bins ((dft_length + 1) * hz / sample_rate, floored). */
static seam_status run_mel(seam_kernel *k) {
    int64_t mels, dft, rate;
    if (!scalar_i64(kernel_in(k, 0), &mels) || !scalar_i64(kernel_in(k, 1), &dft) || !scalar_i64(kernel_in(k, 2), &rate))
        return kernel_fail(k, "num_mel_bins, dft_length and sample_rate must be integer scalars");
    const seam_tensor *lo = kernel_in(k, 3), *hi = kernel_in(k, 4);
    if (!lo || !hi || lo->numel != 1 || hi->numel != 1) return kernel_fail(k, "edge frequencies must be scalars");
    if (mels < 1 || dft < 1 || rate < 1 || mels > 65536 || dft > MAX_DFT) return kernel_fail(k, "sizes out of range");
    int32_t dt = (int32_t)node_attr_int(k->n, "output_datatype", SEAM_DTYPE_FLOAT32);
    int64_t nb = dft / 2 + 1, dims[2] = {nb, mels};
    seam_tensor *y = kernel_out(k, 0, dt, 2, dims);
    if (!y) return kernel_oom(k);
    for (int64_t i = 0; i < y->numel; i++) cpu_set(y->data, dt, i, 0);
    double lm = 2595 * log10(1 + cpu_get(lo->data, lo->dtype, 0) / 700);
    double hm = 2595 * log10(1 + cpu_get(hi->data, hi->dtype, 0) / 700);
    double step = (hm - lm) / (double)(mels + 2);
    int64_t *bin = kernel_scratch(k, sizeof(int64_t) * (size_t)(mels + 2));
    if (!bin) return kernel_oom(k);
    for (int64_t i = 0; i < mels + 2; i++) {
        double hz = 700 * (pow(10, ((double)i * step + lm) / 2595) - 1);
        bin[i] = (int64_t)floor((double)(dft + 1) * hz / (double)rate);
    }
    for (int64_t m = 0; m < mels; m++) {
        int64_t l = bin[m], c = bin[m + 1], h = bin[m + 2];
        if (c - l == 0) {
            if (c >= 0 && c < nb) cpu_set(y->data, dt, c * mels + m, 1);
        } else {
            for (int64_t j = l; j <= c; j++)
                if (j >= 0 && j < nb) cpu_set(y->data, dt, j * mels + m, (double)(j - l) / (double)(c - l));
        }
        if (h - c > 0)
            for (int64_t j = c; j < h; j++)
                if (j >= 0 && j < nb) cpu_set(y->data, dt, j * mels + m, (double)(h - j) / (double)(h - c));
    }
    return SEAM_STATUS_OK;
}

const seam_cpu_binding seam_cpu_signal[] = {
    {"", "DFT", 17, {run_dft, NULL}},
    {"", "STFT", 17, {run_stft, NULL}},
    {"", "HannWindow", 17, {run_window, NULL}},
    {"", "HammingWindow", 17, {run_window, NULL}},
    {"", "BlackmanWindow", 17, {run_window, NULL}},
    {"", "MelWeightMatrix", 17, {run_mel, NULL}},
};
const size_t seam_cpu_signal_count = sizeof(seam_cpu_signal) / sizeof(seam_cpu_signal[0]);
