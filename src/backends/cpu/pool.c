/* CPU kernels: MaxPool (with Indices), AveragePool, LpPool, their global
 * forms, and MaxUnpool. One N-d window walker serves them all; pads are
 * outside the input (skipped by max, counted or not by average). */
#include <math.h>
#include <string.h>

#include "backends/cpu/cpu.h"

typedef enum { P_MAX, P_AVG, P_LP } pool_kind;

typedef struct pool_job {
    pool_kind kind;
    const seam_tensor *x;
    seam_tensor *y, *ind;
    conv_geom w;
    bool count_pad, col_major;
    double p;
    int64_t in_prod, out_prod;
} pool_job;

#if defined(__GNUC__) && !defined(__clang__)
#define POOL_VEC 1
/* Eight floats as one value (GCC's vector extension): the accumulators of
 * eight output columns stay in one register over every tap. (GCC does not
 * vectorize the eight scalar lanes of a max by itself.) */
typedef float pool_v8 __attribute__((vector_size(32)));
typedef int32_t pool_v8i __attribute__((vector_size(32)));

/* *v = src[0], src[s], ..., src[7s] for s = 1 or 2; s = 2 reads
 * src[0..15]. (Through a pointer: a vector return value would change the
 * ABI between the AVX2 and the baseline builds.) */
static inline __attribute__((always_inline)) void pool_load(pool_v8 *v, const float *src, int64_t s) {
    pool_v8 b;
    memcpy(v, src, sizeof(*v));
    if (s == 1) return;
    memcpy(&b, src + 8, sizeof(b));
    *v = __builtin_shuffle(*v, b, (pool_v8i){0, 2, 4, 6, 8, 10, 12, 14});
}
#endif

/* Output columns [lo, hi) of one output row whose windows lie inside the
 * input row: taps in row-major order, so each output is what one window at
 * a time gives (the max with NaN passed over, as elsewhere here). x0 is
 * the row of the window's top-left tap at column 0, minus the padding.
 * Inlined with constant s and is_max. */
static inline __attribute__((always_inline)) void pool_row(const float *x0, int64_t W, const conv_geom *w, int64_t kh0,
                                                           int64_t kh1, int64_t lo, int64_t hi, int64_t s, bool is_max,
                                                           float den, float *yr) {
    int64_t kw = w->kernel[1], dh = w->dil[0], dw = w->dil[1];
    int64_t ow = lo;
#ifdef POOL_VEC
    int64_t pl = w->pad_lo[1];
    /* eight columns at a time while their last load stays inside the row */
    for (; (s == 1 || s == 2) && ow + 8 <= hi && (ow + 8) * s - 1 + (kw - 1) * dw + (s - 1) - pl < W; ow += 8) {
        const pool_v8 ninf = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
        pool_v8 acc = is_max ? ninf : (pool_v8){0};
        for (int64_t a = kh0; a < kh1; a++)
            for (int64_t b = 0; b < kw; b++) {
                pool_v8 v;
                pool_load(&v, x0 + a * dh * W + b * dw + ow * s, s);
                if (is_max) { /* v > acc ? v : acc, lane by lane */
                    pool_v8i m = v > acc;
                    acc = (pool_v8)(((pool_v8i)v & m) | ((pool_v8i)acc & ~m));
                } else {
                    acc += v;
                }
            }
        if (!is_max) acc /= den;
        memcpy(yr + ow, &acc, sizeof(acc));
    }
#endif
    for (; ow < hi; ow++) {
        float acc = is_max ? -INFINITY : 0.0f;
        for (int64_t a = kh0; a < kh1; a++)
            for (int64_t b = 0; b < kw; b++) {
                float v = x0[a * dh * W + b * dw + ow * s];
                acc = is_max ? (v > acc ? v : acc) : acc + v;
            }
        yr[ow] = is_max ? acc : acc / den;
    }
}

/* 2-D float32 max and average pooling without indices: the hot case of
 * CNNs, with the window clipped per row instead of per tap. */
CPU_HOT static void pool_planes_2d(pool_job *j, int64_t begin, int64_t end) {
    const conv_geom *w = &j->w;
    int64_t H = w->in[0], W = w->in[1], OH = w->out[0], OW = w->out[1];
    for (int64_t plane = begin; plane < end; plane++) {
        const float *x = (const float *)j->x->data + plane * H * W;
        float *y = (float *)j->y->data + plane * OH * OW;
        for (int64_t oh = 0; oh < OH; oh++) {
            int64_t h0 = oh * w->stride[0] - w->pad_lo[0];
            int64_t kh0 = 0, kh1 = w->kernel[0];
            while (kh0 < kh1 && h0 + kh0 * w->dil[0] < 0) kh0++;
            while (kh1 > kh0 && h0 + (kh1 - 1) * w->dil[0] >= H) kh1--;
            int64_t ph1 = w->kernel[0];
            while (ph1 > 0 && h0 + (ph1 - 1) * w->dil[0] >= H + w->pad_hi[0]) ph1--;
            /* the output columns whose window is all inside the row, [lo, hi):
             * tap by tap over the whole range (the same taps in the same order
             * as one window at a time, so the same result) */
            int64_t s = w->stride[1], pl = w->pad_lo[1], span = (w->kernel[1] - 1) * w->dil[1];
            int64_t lo = (pl + s - 1) / s, hi = W - 1 - span + pl >= 0 ? (W - 1 - span + pl) / s + 1 : 0;
            if (hi > OW) hi = OW;
            if (lo > hi || kh0 >= kh1) lo = hi = 0;
            if (hi > lo) {
                int64_t count = (kh1 - kh0) * w->kernel[1];
                float den = (float)(j->count_pad ? ph1 * w->kernel[1] : count);
                const float *x0 = x + h0 * W - pl;
                float *yr = y + oh * OW;
                /* constant strides and kinds, so each copy vectorizes */
                if (j->kind == P_MAX && s == 1) pool_row(x0, W, w, kh0, kh1, lo, hi, 1, true, den, yr);
                else if (j->kind == P_MAX && s == 2) pool_row(x0, W, w, kh0, kh1, lo, hi, 2, true, den, yr);
                else if (j->kind == P_MAX) pool_row(x0, W, w, kh0, kh1, lo, hi, s, true, den, yr);
                else if (s == 1) pool_row(x0, W, w, kh0, kh1, lo, hi, 1, false, den, yr);
                else if (s == 2) pool_row(x0, W, w, kh0, kh1, lo, hi, 2, false, den, yr);
                else pool_row(x0, W, w, kh0, kh1, lo, hi, s, false, den, yr);
            }
            for (int64_t ow = 0; ow < OW; ow++) {
                if (ow == lo && hi > lo) {
                    ow = hi - 1;
                    continue;
                }
                int64_t w0 = ow * w->stride[1] - w->pad_lo[1];
                int64_t kw0 = 0, kw1 = w->kernel[1];
                while (kw0 < kw1 && w0 + kw0 * w->dil[1] < 0) kw0++;
                while (kw1 > kw0 && w0 + (kw1 - 1) * w->dil[1] >= W) kw1--;
                float acc = j->kind == P_MAX ? -INFINITY : 0;
                for (int64_t a = kh0; a < kh1; a++) {
                    const float *row = x + (h0 + a * w->dil[0]) * W + w0;
                    if (j->kind == P_MAX)
                        for (int64_t b = kw0; b < kw1; b++) acc = row[b * w->dil[1]] > acc ? row[b * w->dil[1]] : acc;
                    else
                        for (int64_t b = kw0; b < kw1; b++) acc += row[b * w->dil[1]];
                }
                int64_t count = (kh1 - kh0) * (kw1 - kw0);
                if (j->kind == P_AVG) {
                    int64_t pw1 = w->kernel[1];
                    while (pw1 > 0 && w0 + (pw1 - 1) * w->dil[1] >= W + w->pad_hi[1]) pw1--;
                    int64_t den = j->count_pad ? ph1 * pw1 : count;
                    acc = count ? acc / (float)den : 0;
                } else if (count == 0) {
                    acc = 0;
                }
                y[oh * OW + ow] = acc;
            }
        }
    }
}

#ifdef POOL_VEC
/* *acc = v > acc ? v : acc, lane by lane (a NaN in v passed over). (Eight
 * lanes: GCC lowers wider vectors badly for the AVX2 clone.) */
static inline __attribute__((always_inline)) void pool_max8(pool_v8 *acc, const pool_v8 *v) {
    pool_v8i m = *v > *acc;
    *acc = (pool_v8)(((pool_v8i)*v & m) | ((pool_v8i)*acc & ~m));
}

/* Whether pool_planes_small_max takes j: float32 max pooling without
 * indices, stride and dilation 1, at most 16 output columns, 8 window
 * columns and 64 output rows (googlenet's 3x3 pools at 14 x 14 and 7 x 7:
 * the column vectors of pool_row need 8 whole windows in a row). */
static bool small_max_fits(const pool_job *j) {
    const conv_geom *w = &j->w;
    return w->n == 2 && j->x->dtype == SEAM_DTYPE_FLOAT32 && !j->ind && j->kind == P_MAX && w->stride[0] == 1 &&
           w->stride[1] == 1 && w->dil[0] == 1 && w->dil[1] == 1 && w->out[1] <= 16 && w->kernel[1] <= 8 &&
           w->kernel[0] <= 8 && w->out[0] <= 64 && w->pad_lo[1] + w->in[1] <= 24 && w->pad_lo[0] < w->kernel[0];
}

/* Max pooling of small planes, stride 1: each padded input row's maxima
 * over the window's columns as two vectors of 8 output columns (the
 * padding -inf, which no max takes), then the window's rows of those. The
 * same values as one window at a time: the max of the same taps, NaN
 * passed over. */
CPU_HOT static void pool_planes_small_max(pool_job *j, int64_t begin, int64_t end) {
    const conv_geom *w = &j->w;
    int64_t H = w->in[0], W = w->in[1], OH = w->out[0], OW = w->out[1], kh = w->kernel[0], kw = w->kernel[1];
    int64_t pt = w->pad_lo[0], pl = w->pad_lo[1], rows = OH + kh - 1, halves = OW > 8 ? 2 : 1;
    pool_v8 hm[72][2];
    float buf[48];
    const pool_v8 ninf = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    for (int64_t plane = begin; plane < end; plane++) {
        const float *x = (const float *)j->x->data + plane * H * W;
        float *y = (float *)j->y->data + plane * OH * OW;
        for (int64_t r = 0; r < rows; r++) {
            int64_t ih = r - pt;
            hm[r][0] = hm[r][1] = ninf;
            if (ih < 0 || ih >= H) continue;
            for (int k = 0; k < 6; k++) memcpy(buf + 8 * k, &ninf, sizeof(ninf));
            memcpy(buf + pl, x + ih * W, sizeof(float) * (size_t)W);
            for (int64_t h = 0; h < halves; h++)
                for (int64_t b = 0; b < kw; b++) {
                    pool_v8 v;
                    memcpy(&v, buf + 8 * h + b, sizeof(v));
                    pool_max8(&hm[r][h], &v);
                }
        }
        for (int64_t oh = 0; oh < OH; oh++) {
            pool_v8 acc[2] = {hm[oh][0], hm[oh][1]};
            for (int64_t a = 1; a < kh; a++)
                for (int64_t h = 0; h < halves; h++) pool_max8(&acc[h], &hm[oh + a][h]);
            memcpy(y + oh * OW, acc, sizeof(float) * (size_t)OW);
        }
    }
}
#endif

/* Max or average of each whole float32 plane (global pooling, or a window
 * that is the plane): eight running lanes, so the loop vectorizes without
 * reassociating one sum, and the lanes folded at the end. */
CPU_HOT static void pool_planes_whole(pool_job *j, int64_t begin, int64_t end) {
    int64_t n = j->in_prod;
    for (int64_t plane = begin; plane < end; plane++) {
        const float *x = (const float *)j->x->data + plane * n;
        float lane[8], r;
        int64_t i = 0;
        if (j->kind == P_MAX) {
            for (int k = 0; k < 8; k++) lane[k] = -INFINITY;
            for (; i + 8 <= n; i += 8)
                for (int k = 0; k < 8; k++) lane[k] = x[i + k] > lane[k] ? x[i + k] : lane[k];
            r = -INFINITY; /* (NaN is passed over, as by the windowed kernels) */
            for (; i < n; i++) r = x[i] > r ? x[i] : r;
            for (int k = 0; k < 8; k++) r = lane[k] > r ? lane[k] : r;
        } else {
            for (int k = 0; k < 8; k++) lane[k] = 0;
            for (; i + 8 <= n; i += 8)
                for (int k = 0; k < 8; k++) lane[k] += x[i + k];
            r = 0;
            for (; i < n; i++) r += x[i];
            for (int k = 0; k < 8; k++) r += lane[k];
            r = n ? r / (float)n : 0;
        }
        ((float *)j->y->data)[plane] = r;
    }
}

/* Planes [begin, end): one plane is one (n, c). */
static void pool_planes(void *arg, int64_t begin, int64_t end) {
    pool_job *j = arg;
    const conv_geom *w = &j->w;
    bool whole = j->x->dtype == SEAM_DTYPE_FLOAT32 && !j->ind && j->kind != P_LP && j->out_prod == 1;
    for (int32_t d = 0; d < w->n && whole; d++) /* (any rank: a 3-D GlobalAveragePool too) */
        whole = w->kernel[d] == w->in[d] && !w->pad_lo[d] && !w->pad_hi[d] && w->dil[d] == 1;
    if (whole) {
        pool_planes_whole(j, begin, end);
        return;
    }
#ifdef POOL_VEC
    if (small_max_fits(j)) {
        pool_planes_small_max(j, begin, end);
        return;
    }
#endif
    if (w->n == 2 && j->x->dtype == SEAM_DTYPE_FLOAT32 && !j->ind && j->kind != P_LP) {
        pool_planes_2d(j, begin, end);
        return;
    }
    int32_t n = w->n, dt = j->x->dtype;
    bool f32 = dt == SEAM_DTYPE_FLOAT32;
    for (int64_t plane = begin; plane < end; plane++) {
        int64_t xbase = plane * j->in_prod, ybase = plane * j->out_prod;
        int64_t oidx[SEAM_MAX_RANK] = {0};
        for (int64_t o = 0; o < j->out_prod; o++) {
            /* per axis: the first input index and the kernel taps that land inside */
            int64_t start[SEAM_MAX_RANK], k0[SEAM_MAX_RANK], k1[SEAM_MAX_RANK];
            int64_t padded_count = 1;
            bool empty = false;
            for (int32_t d = 0; d < n; d++) {
                start[d] = oidx[d] * w->stride[d] - w->pad_lo[d];
                int64_t lo = 0, hi = w->kernel[d];
                while (lo < hi && start[d] + lo * w->dil[d] < 0) lo++;
                while (hi > lo && start[d] + (hi - 1) * w->dil[d] >= w->in[d]) hi--;
                k0[d] = lo, k1[d] = hi;
                if (lo >= hi) empty = true;
                /* taps inside the padded input (ceil_mode windows may pass it) */
                int64_t plo = 0, phi = w->kernel[d];
                while (phi > plo && start[d] + (phi - 1) * w->dil[d] >= w->in[d] + w->pad_hi[d]) phi--;
                padded_count *= phi - plo;
            }
            double acc = j->kind == P_MAX ? -INFINITY : 0;
            int64_t best = -1, count = 0;
            if (!empty) {
                int64_t kidx[SEAM_MAX_RANK];
                for (int32_t d = 0; d < n; d++) kidx[d] = k0[d];
                for (;;) {
                    int64_t off = 0;
                    for (int32_t d = 0; d < n; d++) off = off * w->in[d] + start[d] + kidx[d] * w->dil[d];
                    double v = f32 ? ((const float *)j->x->data)[xbase + off] : cpu_get(j->x->data, dt, xbase + off);
                    if (j->kind == P_MAX) {
                        if (v > acc || best < 0) acc = v, best = off;
                    } else if (j->kind == P_AVG) {
                        acc += v;
                    } else {
                        acc += pow(fabs(v), j->p);
                    }
                    count++;
                    int32_t d = n - 1;
                    for (; d >= 0; d--) {
                        if (++kidx[d] < k1[d]) break;
                        kidx[d] = k0[d];
                    }
                    if (d < 0) break;
                }
            }
            double v = acc;
            if (j->kind == P_AVG) v = count ? acc / (double)(j->count_pad ? padded_count : count) : 0;
            if (j->kind == P_LP) v = pow(acc, 1.0 / j->p);
            if (j->kind == P_MAX && best < 0) v = 0;
            if (f32) ((float *)j->y->data)[ybase + o] = (float)v;
            else cpu_set(j->y->data, j->y->dtype, ybase + o, v);
            if (j->ind) {
                int64_t flat = best < 0 ? 0 : best;
                if (j->col_major) { /* storage_order 1: the first spatial axis varies fastest */
                    int64_t rem = flat, coord[SEAM_MAX_RANK], mul = 1;
                    for (int32_t d = n - 1; d >= 0; d--) {
                        coord[d] = rem % w->in[d];
                        rem /= w->in[d];
                    }
                    flat = 0;
                    for (int32_t d = 0; d < n; d++) {
                        flat += coord[d] * mul;
                        mul *= w->in[d];
                    }
                }
                ((int64_t *)j->ind->data)[ybase + o] = xbase + flat;
            }
            cpu_index_next(oidx, w->out, n);
        }
    }
}

static seam_status run_pool(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (!x || x->rank < 3) return kernel_fail(k, "needs an input [N, C, spatial...]");
    const char *op = k->n->op_type;
    bool global = strncmp(op, "Global", 6) == 0;
    const char *base = global ? op + 6 : op;
    pool_job j = {0};
    j.kind = base[0] == 'M' ? P_MAX : base[0] == 'A' ? P_AVG : P_LP;
    j.x = x;
    /* p is an int since opset 2; LpPool-1 had it as a float */
    const ir_attr *pa = node_attr(k->n, "p");
    j.p = pa && pa->kind == IR_ATTR_FLOAT ? pa->f : (double)node_attr_int(k->n, "p", 2);
    int64_t kernel[SEAM_MAX_RANK];
    int32_t n_sp = x->rank - 2;
    if (global) {
        j.w.n = n_sp;
        for (int32_t d = 0; d < n_sp; d++) {
            j.w.in[d] = j.w.kernel[d] = x->dims[2 + d];
            j.w.out[d] = 1, j.w.stride[d] = 1, j.w.dil[d] = 1, j.w.pad_lo[d] = j.w.pad_hi[d] = 0;
        }
    } else {
        const int64_t *ks;
        if (node_attr_ints(k->n, "kernel_shape", &ks) != n_sp) return kernel_fail(k, "kernel_shape must have %d entries", n_sp);
        for (int32_t d = 0; d < n_sp; d++) kernel[d] = ks[d];
        seam_status st = cpu_conv_geom(k, x, kernel, node_attr_int(k->n, "ceil_mode", 0) != 0, &j.w);
        if (st) return st;
    }
    j.count_pad = node_attr_int(k->n, "count_include_pad", 0) != 0;
    j.col_major = node_attr_int(k->n, "storage_order", 0) != 0;
    int64_t dims[SEAM_MAX_RANK];
    dims[0] = x->dims[0], dims[1] = x->dims[1];
    for (int32_t d = 0; d < n_sp; d++) dims[2 + d] = j.w.out[d];
    j.y = kernel_out(k, 0, x->dtype, x->rank, dims);
    if (!j.y) return kernel_oom(k);
    if (kernel_has_out(k, 1)) {
        j.ind = kernel_out(k, 1, SEAM_DTYPE_INT64, x->rank, dims);
        if (!j.ind) return kernel_oom(k);
    }
    j.in_prod = cpu_span(x->dims, 2, x->rank);
    j.out_prod = cpu_span(dims, 2, x->rank);
    seam_parallel_for(k->pool, x->dims[0] * x->dims[1], 1, pool_planes, &j);
    return SEAM_STATUS_OK;
}


static seam_status check_pool(seam_check *c) {
    int32_t dt = check_in_dtype(c, 0);
    bool is_max = strstr(c->n->op_type, "MaxPool") != NULL;
    bool ok = dt == SEAM_DTYPE_UNDEFINED || cpu_is_float(dt) ||
              (is_max && (dt == SEAM_DTYPE_INT8 || dt == SEAM_DTYPE_UINT8));
    if (!ok) return check_refuse(c, "%s on %s is not supported", c->n->op_type, seam_dtype_name(dt));
    return check_auto_pad(c);
}

static seam_status check_max_unpool(seam_check *c) {
    int32_t dt = check_in_dtype(c, 0);
    if (dt != SEAM_DTYPE_UNDEFINED && !cpu_is_float(dt) && !cpu_is_int(dt))
        return check_refuse(c, "MaxUnpool on %s is not supported", seam_dtype_name(dt));
    return SEAM_STATUS_OK;
}

/* MaxUnpool: scatter X to the positions in I, zeros elsewhere. */
static seam_status run_max_unpool(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0), *ind = kernel_in(k, 1), *os = kernel_in(k, 2);
    if (!x || !ind || x->rank < 3 || ind->numel != x->numel || !cpu_is_int(ind->dtype))
        return kernel_fail(k, "needs X [N, C, ...] and integer indices of X's size");
    size_t es = seam_dtype_size(x->dtype);
    if (es == 0) return kernel_fail(k, "MaxUnpool on %s is not supported", seam_dtype_name(x->dtype));
    int32_t n_sp = x->rank - 2;
    /* indices count positions in the default output (from the kernel,
     * strides and pads); an explicit output_shape re-places them by their
     * coordinates */
    int64_t def[SEAM_MAX_RANK], dims[SEAM_MAX_RANK];
    const int64_t *ks, *st, *pads;
    int32_t nk = node_attr_ints(k->n, "kernel_shape", &ks), ns = node_attr_ints(k->n, "strides", &st);
    int32_t np = node_attr_ints(k->n, "pads", &pads);
    if (nk != n_sp || (ns >= 0 && ns != n_sp) || (np >= 0 && np != 2 * n_sp)) return kernel_fail(k, "bad kernel_shape, strides or pads");
    def[0] = x->dims[0], def[1] = x->dims[1];
    for (int32_t d = 0; d < n_sp; d++) {
        int64_t kd = ks[d], sd = ns > 0 ? st[d] : 1, lo = np > 0 ? pads[d] : 0, hi = np > 0 ? pads[d + n_sp] : 0;
        /* bounded first, so the size below cannot overflow */
        if (kd < 1 || kd > CONV_MAX_WINDOW || sd < 1 || sd > CONV_MAX_WINDOW || lo < 0 || lo > CONV_MAX_WINDOW ||
            hi < 0 || hi > CONV_MAX_WINDOW)
            return kernel_fail(k, "bad kernel_shape, strides or pads on axis %d", d);
        def[2 + d] = (x->dims[2 + d] - 1) * sd - lo - hi + kd;
        if (def[2 + d] < 0 || def[2 + d] > (1 << 24)) return kernel_fail(k, "the default output size is out of range");
    }
    int64_t def_numel = seam_shape_numel(def, x->rank);
    if (def_numel < 0) return kernel_fail(k, "the default output is too large");
    memcpy(dims, def, sizeof(int64_t) * (size_t)x->rank);
    if (os) {
        if (cpu_read_ints(os, dims, SEAM_MAX_RANK) != x->rank) return kernel_fail(k, "output_shape must have rank %d entries", x->rank);
        for (int32_t d = 0; d < x->rank; d++)
            if (dims[d] < 0 || dims[d] > (1 << 24)) return kernel_fail(k, "output_shape is out of range");
    }
    seam_tensor *y = kernel_out(k, 0, x->dtype, x->rank, dims);
    if (!y) return kernel_oom(k);
    memset(y->data, 0, y->nbytes);
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t at = cpu_get_i64(ind->data, ind->dtype, i), rem = at, to = 0;
        if (at < 0 || at >= def_numel) return kernel_fail(k, "index %lld is out of range", (long long)at);
        int64_t coord[SEAM_MAX_RANK];
        for (int32_t d = x->rank - 1; d >= 0; d--) {
            coord[d] = rem % def[d];
            rem /= def[d];
        }
        for (int32_t d = 0; d < x->rank; d++) {
            if (coord[d] >= dims[d]) return kernel_fail(k, "index %lld falls outside output_shape", (long long)at);
            to = to * dims[d] + coord[d];
        }
        at = to;
        cpu_copy_elem(y->data, at, x->data, i, es);
    }
    return SEAM_STATUS_OK;
}

const seam_cpu_binding seam_cpu_pool[] = {
    {"", "MaxPool", 1, {run_pool, check_pool}},
    {"", "AveragePool", 1, {run_pool, check_pool}},
    {"", "LpPool", 1, {run_pool, check_pool}},
    {"", "GlobalMaxPool", 1, {run_pool, check_pool}},
    {"", "GlobalAveragePool", 1, {run_pool, check_pool}},
    {"", "GlobalLpPool", 1, {run_pool, check_pool}},
    {"", "MaxUnpool", 9, {run_max_unpool, check_max_unpool}},
};
const size_t seam_cpu_pool_count = sizeof(seam_cpu_pool) / sizeof(seam_cpu_pool[0]);
