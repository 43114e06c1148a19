// Kernels of seam's own for the CUDA backend; see kernels.h. Compiled by
// nvcc at build time (sm_90 code and compute_90 PTX): no compiler at run
// time, and a kernel that does not compile breaks the build, not a run on
// the GPU machine.
#include "kernels.h"

#include <math.h>

namespace {

const int THREADS = 256;

// Blocks for n elements in grid-stride loops.
unsigned blocks_for(int64_t n) {
    int64_t b = (n + THREADS - 1) / THREADS;
    if (b < 1) b = 1;
    if (b > 65535LL * 8) b = 65535LL * 8;
    return (unsigned)b;
}

__device__ __forceinline__ float unary(int op, float x, float a, float b) {
    switch (op) {
    case SC_RELU: return x > 0.f ? x : 0.f;
    case SC_SIGMOID: return 1.f / (1.f + expf(-x));
    case SC_TANH: return tanhf(x);
    case SC_LEAKY_RELU: return x >= 0.f ? x : a * x;
    case SC_CLIP: return fminf(fmaxf(x, a), b);
    case SC_ERF: return erff(x);
    case SC_GELU: return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
    case SC_GELU_TANH: return 0.5f * x * (1.f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
    case SC_EXP: return expf(x);
    case SC_LOG: return logf(x);
    case SC_SQRT: return sqrtf(x);
    case SC_ABS: return fabsf(x);
    case SC_NEG: return -x;
    case SC_RECIPROCAL: return 1.f / x;
    case SC_ELU: return x >= 0.f ? x : a * (expf(x) - 1.f);
    case SC_HARD_SIGMOID: return fminf(fmaxf(a * x + b, 0.f), 1.f);
    case SC_HARD_SWISH: return x * fminf(fmaxf(x / 6.f + 0.5f, 0.f), 1.f);
    case SC_SOFTPLUS: return x > 20.f ? x : log1pf(expf(x));
    case SC_FLOOR: return floorf(x);
    case SC_CEIL: return ceilf(x);
    case SC_SIN: return sinf(x);
    case SC_COS: return cosf(x);
    default: return x;
    }
}

__global__ void unary_kernel(int op, const float *__restrict__ x, float *__restrict__ y, int64_t n, float a, float b) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = unary(op, x[i], a, b);
}

__device__ __forceinline__ float binary(int op, float u, float v) {
    switch (op) {
    case SC_ADD: return u + v;
    case SC_SUB: return u - v;
    case SC_MUL: return u * v;
    case SC_DIV: return u / v;
    case SC_POW: return powf(u, v);
    case SC_MAX: return fmaxf(u, v);
    case SC_MIN: return fminf(u, v);
    case SC_PRELU: return u >= 0.f ? u : u * v;
    default: return u;
    }
}

// same shapes, or b of one element (sb all 0) / a of one element
__global__ void binary_flat(int op, const float *__restrict__ a, const float *__restrict__ b, float *__restrict__ y,
                            int64_t n, int a_scalar, int b_scalar) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = binary(op, a[a_scalar ? 0 : i], b[b_scalar ? 0 : i]);
}

__global__ void binary_bcast(int op, const float *__restrict__ a, const float *__restrict__ b, float *__restrict__ y,
                             sc_bcast bc, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i, ia = 0, ib = 0;
        for (int d = bc.rank - 1; d >= 0; d--) {
            int64_t q = r % bc.dims[d];
            r /= bc.dims[d];
            ia += q * bc.sa[d];
            ib += q * bc.sb[d];
        }
        y[i] = binary(op, a[ia], b[ib]);
    }
}

// x may be y (a convolution's epilogue in place): no __restrict__ on them
__global__ void channel_affine_kernel(const float *x, const float *__restrict__ scale,
                                      const float *__restrict__ shift, const float *__restrict__ z,
                                      float *y, int64_t n, int64_t channels, int64_t inner, int relu) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t c = (i / inner) % channels;
        float v = x[i] * (scale ? scale[c] : 1.f) + (shift ? shift[c] : 0.f);
        if (z) v += z[i];
        y[i] = relu && v < 0.f ? 0.f : v;
    }
}

__global__ void pool_kernel(const float *__restrict__ x, float *__restrict__ y, sc_pool_desc d) {
    int64_t n = d.nc * d.oh * d.ow;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t ox = i % d.ow, oy = (i / d.ow) % d.oh, c = i / (d.ow * d.oh);
        const float *p = x + c * d.h * d.w;
        int64_t y0 = oy * d.sh - d.ph, x0 = ox * d.sw - d.pw;
        if (d.max) {
            float m = -INFINITY;
            for (int ky = 0; ky < d.kh; ky++) {
                int64_t yy = y0 + (int64_t)ky * d.dh;
                if (yy < 0 || yy >= d.h) continue;
                for (int kx = 0; kx < d.kw; kx++) {
                    int64_t xx = x0 + (int64_t)kx * d.dw;
                    if (xx < 0 || xx >= d.w) continue;
                    m = fmaxf(m, p[yy * d.w + xx]);
                }
            }
            y[i] = m;
        } else {
            // the window within the padded input, and within the input
            int64_t y1 = min(y0 + (int64_t)d.kh, d.h + d.ph1), x1 = min(x0 + (int64_t)d.kw, d.w + d.pw1);
            int64_t padded = (y1 - y0) * (x1 - x0);
            int64_t ya = max(y0, (int64_t)0), xa = max(x0, (int64_t)0), yb = min(y1, d.h), xb = min(x1, d.w);
            float sum = 0.f;
            for (int64_t yy = ya; yy < yb; yy++)
                for (int64_t xx = xa; xx < xb; xx++) sum += p[yy * d.w + xx];
            int64_t count = d.count_include_pad ? padded : (yb - ya) * (xb - xa);
            y[i] = count > 0 ? sum / (float)count : 0.f;
        }
    }
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ __forceinline__ float warp_min(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fminf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// One warp per row.
__global__ void softmax_kernel(const float *__restrict__ x, float *__restrict__ y, int64_t rows, int64_t cols, int log) {
    int lane = threadIdx.x & 31;
    int64_t warps = (int64_t)gridDim.x * (blockDim.x / 32);
    for (int64_t r = blockIdx.x * (int64_t)(blockDim.x / 32) + threadIdx.x / 32; r < rows; r += warps) {
        const float *p = x + r * cols;
        float *q = y + r * cols;
        float m = -INFINITY;
        for (int64_t c = lane; c < cols; c += 32) m = fmaxf(m, p[c]);
        m = warp_max(m);
        float s = 0.f;
        for (int64_t c = lane; c < cols; c += 32) s += expf(p[c] - m);
        s = warp_sum(s);
        if (log) {
            float ls = logf(s);
            for (int64_t c = lane; c < cols; c += 32) q[c] = p[c] - m - ls;
        } else {
            float inv = 1.f / s;
            for (int64_t c = lane; c < cols; c += 32) q[c] = expf(p[c] - m) * inv;
        }
    }
}

__global__ void layernorm_kernel(const float *__restrict__ x, const float *__restrict__ g, const float *__restrict__ b,
                                 float *__restrict__ y, int64_t rows, int64_t cols, float eps) {
    int lane = threadIdx.x & 31;
    int64_t warps = (int64_t)gridDim.x * (blockDim.x / 32);
    for (int64_t r = blockIdx.x * (int64_t)(blockDim.x / 32) + threadIdx.x / 32; r < rows; r += warps) {
        const float *p = x + r * cols;
        float *q = y + r * cols;
        float s = 0.f;
        for (int64_t c = lane; c < cols; c += 32) s += p[c];
        float mean = warp_sum(s) / (float)cols;
        float v = 0.f;
        for (int64_t c = lane; c < cols; c += 32) {
            float d = p[c] - mean;
            v += d * d;
        }
        float inv = rsqrtf(warp_sum(v) / (float)cols + eps);
        for (int64_t c = lane; c < cols; c += 32) q[c] = (p[c] - mean) * inv * g[c] + (b ? b[c] : 0.f);
    }
}

// One warp per output element.
__global__ void reduce_kernel(int op, const float *__restrict__ x, float *__restrict__ y, sc_reduce_desc d) {
    int lane = threadIdx.x & 31;
    int64_t warps = (int64_t)gridDim.x * (blockDim.x / 32);
    for (int64_t o = blockIdx.x * (int64_t)(blockDim.x / 32) + threadIdx.x / 32; o < d.n_out; o += warps) {
        int64_t base = 0, r = o;
        for (int k = d.orank - 1; k >= 0; k--) {
            base += (r % d.odims[k]) * d.ostride[k];
            r /= d.odims[k];
        }
        float acc = op == SC_REDUCE_MAX ? -INFINITY : op == SC_REDUCE_MIN ? INFINITY : 0.f;
        for (int64_t j = lane; j < d.n_red; j += 32) {
            int64_t off = base, q = j;
            for (int k = d.rrank - 1; k >= 0; k--) {
                off += (q % d.rdims[k]) * d.rstride[k];
                q /= d.rdims[k];
            }
            float v = x[off];
            acc = op == SC_REDUCE_MAX ? fmaxf(acc, v) : op == SC_REDUCE_MIN ? fminf(acc, v) : acc + v;
        }
        acc = op == SC_REDUCE_MAX ? warp_max(acc) : op == SC_REDUCE_MIN ? warp_min(acc) : warp_sum(acc);
        if (lane == 0) y[o] = op == SC_REDUCE_MEAN ? acc / (float)d.n_red : acc;
    }
}

__global__ void strided_kernel(const float *__restrict__ x, float *__restrict__ y, sc_strided d, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i, off = d.base;
        for (int k = d.rank - 1; k >= 0; k--) {
            off += (r % d.dims[k]) * d.istride[k];
            r /= d.dims[k];
        }
        y[i] = x[off];
    }
}

__global__ void pad_kernel(const float *__restrict__ x, float *__restrict__ y, sc_pad d, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i, off = 0, st = 1;
        bool inside = true;
        for (int k = d.rank - 1; k >= 0; k--) {
            int64_t q = r % d.odims[k] - d.p0[k], len = d.idims[k];
            r /= d.odims[k];
            if (q < 0 || q >= len) {
                if (d.mode == SC_PAD_EDGE) {
                    q = q < 0 ? 0 : len - 1;
                } else if (d.mode == SC_PAD_WRAP) {
                    q = (q % len + len) % len;
                } else if (d.mode == SC_PAD_REFLECT) {
                    int64_t period = 2 * (len - 1);
                    q = len == 1 ? 0 : (q % period + period) % period;
                    if (q >= len) q = period - q;
                } else {
                    inside = false;
                }
            }
            off += q * st;
            st *= len;
        }
        y[i] = inside ? x[off] : d.value;
    }
}

__global__ void gather_kernel(const float *__restrict__ x, const void *__restrict__ idx, int idx64,
                              float *__restrict__ y, int64_t outer, int64_t n_idx, int64_t axis_len, int64_t inner) {
    int64_t n = outer * n_idx * inner;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i % inner, j = (i / inner) % n_idx, o = i / (inner * n_idx);
        int64_t k = idx64 ? ((const int64_t *)idx)[j] : (int64_t)((const int32_t *)idx)[j];
        if (k < 0) k += axis_len;
        y[i] = k >= 0 && k < axis_len ? x[(o * axis_len + k) * inner + r] : 0.f;
    }
}

template <typename A, typename B>
__global__ void cast_kernel(const A *__restrict__ x, B *__restrict__ y, int64_t n, int to_bool) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = to_bool ? (B)(x[i] != (A)0) : (B)x[i];
}

template <typename A>
cudaError_t cast_from(const A *x, sc_num_type to, void *y, int64_t n, cudaStream_t s) {
    if (to == SC_F32) cast_kernel<<<blocks_for(n), THREADS, 0, s>>>(x, (float *)y, n, 0);
    else if (to == SC_I32) cast_kernel<<<blocks_for(n), THREADS, 0, s>>>(x, (int32_t *)y, n, 0);
    else if (to == SC_I64) cast_kernel<<<blocks_for(n), THREADS, 0, s>>>(x, (int64_t *)y, n, 0);
    else cast_kernel<<<blocks_for(n), THREADS, 0, s>>>(x, (uint8_t *)y, n, 1);
    return cudaGetLastError();
}

__device__ __forceinline__ void bcast_offsets(const sc_bcast &bc, int64_t i, int64_t *ia, int64_t *ib, int64_t *ic) {
    int64_t r = i;
    *ia = *ib = *ic = 0;
    for (int d = bc.rank - 1; d >= 0; d--) {
        int64_t q = r % bc.dims[d];
        r /= bc.dims[d];
        *ia += q * bc.sa[d];
        *ib += q * bc.sb[d];
        *ic += q * bc.sc[d];
    }
}

template <typename T>
__global__ void mask_kernel(int op, const T *__restrict__ a, const T *__restrict__ b, uint8_t *__restrict__ y,
                            sc_bcast bc, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t ia, ib, ic;
        bcast_offsets(bc, i, &ia, &ib, &ic);
        T u = a[ia], v = op == SC_NOT ? u : b[ib];
        bool r;
        switch (op) {
        case SC_EQUAL: r = u == v; break;
        case SC_LESS: r = u < v; break;
        case SC_GREATER: r = u > v; break;
        case SC_LESS_EQUAL: r = u <= v; break;
        case SC_GREATER_EQUAL: r = u >= v; break;
        case SC_AND: r = u && v; break;
        case SC_OR: r = u || v; break;
        case SC_XOR: r = !u != !v; break;
        default: r = !u; break;
        }
        y[i] = r ? 1 : 0;
    }
}

template <typename T>
__global__ void where_kernel(const uint8_t *__restrict__ c, const T *__restrict__ a, const T *__restrict__ b,
                             T *__restrict__ y, sc_bcast bc, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t ic, ia, ib;
        bcast_offsets(bc, i, &ic, &ia, &ib);
        y[i] = c[ic] ? a[ia] : b[ib];
    }
}

// The input coordinate of output index o along resize dim k, in double and
// in the CPU kernels' order of operations (nearest picks flip on a last bit)
__device__ __forceinline__ double resize_coord(const sc_resize_desc &d, int k, int64_t o) {
    double xo = (double)o, scale = d.scale[k];
    int64_t in = d.in[k], out_int = d.out[k];
    if (out_int == in && scale == 1.0) return xo;
    double out = (double)in * scale;
    switch (d.coord) {
    case SC_RZ_TF_NN: return (xo + 0.5) / scale;
    case SC_RZ_PYTORCH_HALF: return out_int > 1 ? (xo + 0.5) / scale - 0.5 : 0.0;
    case SC_RZ_ALIGN: return out == 1.0 ? 0.0 : xo * (double)(in - 1) / (out - 1.0);
    case SC_RZ_ASYM: return xo / scale;
    case SC_RZ_HALF_SYM: {
        double adj = (double)out_int / out, center = (double)in / 2.0;
        return __dmul_rn(center, 1.0 - adj) + (xo + 0.5) / scale - 0.5; // __dmul_rn: no fused multiply-add
    }
    default: return (xo + 0.5) / scale - 0.5;
    }
}

// One thread per output element: per resize dim, the input index (nearest)
// or the two around the coordinate and the upper one's weight (linear).
__global__ void resize_kernel(const float *__restrict__ x, float *__restrict__ y, sc_resize_desc d, int64_t n) {
    int64_t plane = 1;
    for (int k = 0; k < d.nsp; k++) plane *= d.in[k];
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i, lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
        float t[3] = {0.f, 0.f, 0.f};
        for (int k = d.nsp - 1; k >= 0; k--) {
            int64_t o = r % d.out[k], len = d.in[k];
            r /= d.out[k];
            double xi = resize_coord(d, k, o);
            if (d.linear) {
                double c = xi < 0.0 ? 0.0 : xi > (double)(len - 1) ? (double)(len - 1) : xi;
                lo[k] = (int64_t)floor(c);
                hi[k] = lo[k] + 1 < len ? lo[k] + 1 : lo[k];
                t[k] = (float)(c - (double)lo[k]);
            } else {
                double f = floor(xi);
                int64_t v;
                if (d.nearest == SC_RZ_FLOOR) v = (int64_t)f;
                else if (d.nearest == SC_RZ_CEIL) v = (int64_t)ceil(xi);
                else if (xi - f == 0.5) v = d.nearest == SC_RZ_ROUND_CEIL ? (int64_t)f + 1 : (int64_t)f;
                else v = (int64_t)round(xi);
                lo[k] = v < 0 ? 0 : v >= len ? len - 1 : v;
            }
        }
        const float *p = x + r * plane; // r: the plane (the outer dims) of element i
        if (!d.linear) {
            int64_t off = 0;
            for (int k = 0; k < d.nsp; k++) off = off * d.in[k] + lo[k];
            y[i] = p[off];
            continue;
        }
        float acc = 0.f;
        for (int c = 0; c < (1 << d.nsp); c++) { // bit k of c: the upper input index along dim k
            int64_t off = 0;
            float w = 1.f;
            for (int k = 0; k < d.nsp; k++) {
                bool up = (c >> k) & 1;
                off = off * d.in[k] + (up ? hi[k] : lo[k]);
                w *= up ? t[k] : 1.f - t[k];
            }
            if (w != 0.f) acc += w * p[off];
        }
        y[i] = acc;
    }
}

__global__ void empty_kernel() {}

}  // namespace

extern "C" {

cudaError_t sc_unary(sc_unary_op op, const float *x, float *y, int64_t n, float a, float b, cudaStream_t s) {
    if (n <= 0) return cudaSuccess;
    unary_kernel<<<blocks_for(n), THREADS, 0, s>>>((int)op, x, y, n, a, b);
    return cudaGetLastError();
}

cudaError_t sc_binary(sc_binary_op op, const float *a, const float *b, float *y, const sc_bcast *bc, int64_t n,
                      cudaStream_t s) {
    if (n <= 0) return cudaSuccess;
    bool a_full = true, b_full = true, a_one = true, b_one = true;
    int64_t st = 1;
    for (int d = bc->rank - 1; d >= 0; d--) {
        if (bc->dims[d] != 1) {
            a_full &= bc->sa[d] == st;
            b_full &= bc->sb[d] == st;
            a_one &= bc->sa[d] == 0;
            b_one &= bc->sb[d] == 0;
        }
        st *= bc->dims[d];
    }
    if ((a_full || a_one) && (b_full || b_one))
        binary_flat<<<blocks_for(n), THREADS, 0, s>>>((int)op, a, b, y, n, a_full ? 0 : 1, b_full ? 0 : 1);
    else
        binary_bcast<<<blocks_for(n), THREADS, 0, s>>>((int)op, a, b, y, *bc, n);
    return cudaGetLastError();
}

cudaError_t sc_channel_affine(const float *x, const float *scale, const float *shift, const float *z, float *y,
                              int64_t outer, int64_t channels, int64_t inner, int relu, cudaStream_t s) {
    int64_t n = outer * channels * inner;
    if (n <= 0) return cudaSuccess;
    channel_affine_kernel<<<blocks_for(n), THREADS, 0, s>>>(x, scale, shift, z, y, n, channels, inner, relu);
    return cudaGetLastError();
}

cudaError_t sc_pool2d(const float *x, float *y, const sc_pool_desc *d, cudaStream_t s) {
    int64_t n = d->nc * d->oh * d->ow;
    if (n <= 0) return cudaSuccess;
    pool_kernel<<<blocks_for(n), THREADS, 0, s>>>(x, y, *d);
    return cudaGetLastError();
}

static unsigned warp_blocks(int64_t rows) {
    return blocks_for(rows * 32);
}

cudaError_t sc_softmax(const float *x, float *y, int64_t rows, int64_t cols, int log, cudaStream_t s) {
    if (rows <= 0 || cols <= 0) return cudaSuccess;
    softmax_kernel<<<warp_blocks(rows), THREADS, 0, s>>>(x, y, rows, cols, log);
    return cudaGetLastError();
}

cudaError_t sc_layernorm(const float *x, const float *gamma, const float *beta, float *y, int64_t rows, int64_t cols,
                         float eps, cudaStream_t s) {
    if (rows <= 0 || cols <= 0) return cudaSuccess;
    layernorm_kernel<<<warp_blocks(rows), THREADS, 0, s>>>(x, gamma, beta, y, rows, cols, eps);
    return cudaGetLastError();
}

cudaError_t sc_reduce(sc_reduce_op op, const float *x, float *y, const sc_reduce_desc *d, cudaStream_t s) {
    if (d->n_out <= 0) return cudaSuccess;
    reduce_kernel<<<warp_blocks(d->n_out), THREADS, 0, s>>>((int)op, x, y, *d);
    return cudaGetLastError();
}

cudaError_t sc_strided_copy(const float *x, float *y, const sc_strided *d, int64_t n, cudaStream_t s) {
    if (n <= 0) return cudaSuccess;
    strided_kernel<<<blocks_for(n), THREADS, 0, s>>>(x, y, *d, n);
    return cudaGetLastError();
}

cudaError_t sc_pad_copy(const float *x, float *y, const sc_pad *d, int64_t n, cudaStream_t s) {
    if (n <= 0) return cudaSuccess;
    pad_kernel<<<blocks_for(n), THREADS, 0, s>>>(x, y, *d, n);
    return cudaGetLastError();
}

cudaError_t sc_gather(const float *x, const void *idx, int idx64, float *y, int64_t outer, int64_t n_idx,
                      int64_t axis_len, int64_t inner, cudaStream_t s) {
    int64_t n = outer * n_idx * inner;
    if (n <= 0) return cudaSuccess;
    gather_kernel<<<blocks_for(n), THREADS, 0, s>>>(x, idx, idx64, y, outer, n_idx, axis_len, inner);
    return cudaGetLastError();
}

cudaError_t sc_cast(const void *x, sc_num_type from, void *y, sc_num_type to, int64_t n, cudaStream_t s) {
    if (n <= 0) return cudaSuccess;
    if (from == SC_F32) return cast_from((const float *)x, to, y, n, s);
    if (from == SC_I32) return cast_from((const int32_t *)x, to, y, n, s);
    if (from == SC_I64) return cast_from((const int64_t *)x, to, y, n, s);
    return cast_from((const uint8_t *)x, to, y, n, s);
}

cudaError_t sc_mask(sc_mask_op op, int elem, const void *a, const void *b, uint8_t *y, const sc_bcast *bc, int64_t n,
                    cudaStream_t s) {
    if (n <= 0) return cudaSuccess;
    if (op >= SC_AND) mask_kernel<<<blocks_for(n), THREADS, 0, s>>>((int)op, (const uint8_t *)a, (const uint8_t *)b, y, *bc, n);
    else if (elem == 4) mask_kernel<<<blocks_for(n), THREADS, 0, s>>>((int)op, (const float *)a, (const float *)b, y, *bc, n);
    else if (elem == 5) mask_kernel<<<blocks_for(n), THREADS, 0, s>>>((int)op, (const int32_t *)a, (const int32_t *)b, y, *bc, n);
    else mask_kernel<<<blocks_for(n), THREADS, 0, s>>>((int)op, (const int64_t *)a, (const int64_t *)b, y, *bc, n);
    return cudaGetLastError();
}

cudaError_t sc_where(const uint8_t *c, const void *a, const void *b, void *y, int elem_bytes, const sc_bcast *bc,
                     int64_t n, cudaStream_t s) {
    if (n <= 0) return cudaSuccess;
    if (elem_bytes == 8)
        where_kernel<<<blocks_for(n), THREADS, 0, s>>>(c, (const uint64_t *)a, (const uint64_t *)b, (uint64_t *)y, *bc, n);
    else
        where_kernel<<<blocks_for(n), THREADS, 0, s>>>(c, (const uint32_t *)a, (const uint32_t *)b, (uint32_t *)y, *bc, n);
    return cudaGetLastError();
}

cudaError_t sc_resize(const float *x, float *y, const sc_resize_desc *d, int64_t n, cudaStream_t s) {
    if (n <= 0) return cudaSuccess;
    resize_kernel<<<blocks_for(n), THREADS, 0, s>>>(x, y, *d, n);
    return cudaGetLastError();
}

cudaError_t sc_empty(cudaStream_t s) {
    empty_kernel<<<1, 1, 0, s>>>();
    return cudaGetLastError();
}

}  // extern "C"
