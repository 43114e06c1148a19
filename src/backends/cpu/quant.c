/* CPU kernels: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
 * MatMulInteger, QLinearMatMul, ConvInteger and QLinearConv. Integer
 * products accumulate exactly in int64; requantization rounds half to
 * even and saturates, as the spec says. Plain loops: correctness first. */
#include <math.h>
#include <string.h>

#include "backends/cpu/cpu.h"

static int64_t sat(int32_t dt, double v) {
    double lo = dt == SEAM_DTYPE_INT8 ? -128 : dt == SEAM_DTYPE_UINT8 ? 0 : dt == SEAM_DTYPE_INT16 ? -32768
              : dt == SEAM_DTYPE_UINT16 ? 0 : -2147483648.0;
    double hi = dt == SEAM_DTYPE_INT8 ? 127 : dt == SEAM_DTYPE_UINT8 ? 255 : dt == SEAM_DTYPE_INT16 ? 32767
              : dt == SEAM_DTYPE_UINT16 ? 65535 : 2147483647.0;
    if (!(v == v)) return 0;
    return (int64_t)(v < lo ? lo : v > hi ? hi : v);
}

/* The scale/zero point for element i of x: per tensor, or per slice along
 * axis when the parameter is 1-D of that axis's length. */
static int64_t param_at(const seam_tensor *x, const seam_tensor *p, int32_t axis, int64_t i) {
    if (!p || p->numel == 1) return 0;
    int64_t inner = cpu_span(x->dims, axis + 1, x->rank);
    return (i / inner) % x->dims[axis];
}

static bool param_ok(const seam_tensor *x, const seam_tensor *p, int32_t axis) {
    return !p || p->numel == 1 || (axis >= 0 && p->rank == 1 && p->dims[0] == x->dims[axis]);
}

static seam_status run_quantize(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0), *s = kernel_in(k, 1), *z = kernel_in(k, 2);
    if (!x || !s) return kernel_fail(k, "needs x and y_scale");
    int32_t axis = x->rank ? cpu_axis(node_attr_int(k->n, "axis", 1), x->rank) : 0;
    if (!param_ok(x, s, axis) || !param_ok(x, z, axis)) return kernel_fail(k, "y_scale and y_zero_point must be scalars or 1-D along axis");
    int32_t odt = z ? z->dtype : SEAM_DTYPE_UINT8;
    if (odt != SEAM_DTYPE_UINT8 && odt != SEAM_DTYPE_INT8 && odt != SEAM_DTYPE_INT16 && odt != SEAM_DTYPE_UINT16 &&
        odt != SEAM_DTYPE_INT32)
        return kernel_fail(k, "output type %s is not supported", seam_dtype_name(odt));
    seam_tensor *y = kernel_out(k, 0, odt, x->rank, x->dims);
    if (!y) return kernel_oom(k);
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t p = param_at(x, s, axis, i);
        double sc = cpu_get(s->data, s->dtype, p);
        double zp = z ? (double)cpu_get_i64(z->data, z->dtype, param_at(x, z, axis, i)) : 0;
        /* float32 inputs divide in float32, as the reference does: the
         * halfway cases of the rounding depend on it */
        double q = x->dtype == SEAM_DTYPE_FLOAT32 ? (double)nearbyintf(((const float *)x->data)[i] / (float)sc) + zp
                                                  : nearbyint(cpu_get(x->data, x->dtype, i) / sc) + zp;
        cpu_set_i64(y->data, odt, i, sat(odt, q));
    }
    return SEAM_STATUS_OK;
}

static seam_status run_dequantize(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0), *s = kernel_in(k, 1), *z = kernel_in(k, 2);
    if (!x || !s) return kernel_fail(k, "needs x and x_scale");
    int32_t axis = x->rank ? cpu_axis(node_attr_int(k->n, "axis", 1), x->rank) : 0;
    if (!param_ok(x, s, axis) || !param_ok(x, z, axis)) return kernel_fail(k, "x_scale and x_zero_point must be scalars or 1-D along axis");
    seam_tensor *y = kernel_out(k, 0, s->dtype, x->rank, x->dims);
    if (!y) return kernel_oom(k);
    for (int64_t i = 0; i < x->numel; i++) {
        double sc = cpu_get(s->data, s->dtype, param_at(x, s, axis, i));
        int64_t zp = z ? cpu_get_i64(z->data, z->dtype, param_at(x, z, axis, i)) : 0;
        cpu_set(y->data, y->dtype, i, (double)(cpu_get_i64(x->data, x->dtype, i) - zp) * sc);
    }
    return SEAM_STATUS_OK;
}

static seam_status run_dynamic_quantize(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (!x) return kernel_fail(k, "needs an input");
    double lo = 0, hi = 0;
    for (int64_t i = 0; i < x->numel; i++) {
        double v = cpu_get(x->data, x->dtype, i);
        lo = fmin(lo, v), hi = fmax(hi, v);
    }
    /* in float32, as the spec's reference computes it: the rounding of
     * x / scale must land where it does there */
    float scale = (float)(hi - lo) / 255.0f;
    float zp = scale != 0 ? (float)sat(SEAM_DTYPE_UINT8, nearbyintf(-(float)lo / scale)) : 0;
    seam_tensor *y = kernel_out(k, 0, SEAM_DTYPE_UINT8, x->rank, x->dims);
    seam_tensor *ys = kernel_out(k, 1, x->dtype, 0, NULL), *yz = kernel_out(k, 2, SEAM_DTYPE_UINT8, 0, NULL);
    if (!y || !ys || !yz) return kernel_oom(k);
    for (int64_t i = 0; i < x->numel; i++) {
        float v = (float)cpu_get(x->data, x->dtype, i);
        ((uint8_t *)y->data)[i] = (uint8_t)(scale != 0 ? sat(SEAM_DTYPE_UINT8, nearbyintf(v / scale) + zp) : (int64_t)zp);
    }
    cpu_set(ys->data, ys->dtype, 0, (float)scale);
    ((uint8_t *)yz->data)[0] = (uint8_t)zp;
    return SEAM_STATUS_OK;
}

/* ---- integer MatMul: batched, with per-row (A) / per-column (B) zero points ---- */

typedef struct qmm {
    const seam_tensor *a, *b, *azp, *bzp;
    int64_t M, K, N;
} qmm;

/* Calls out(i) with the int64 product for every output element. */
static seam_status int_matmul(seam_kernel *k, qmm *q, int32_t odt, double (*post)(void *ctx, int64_t acc, int64_t i, int64_t j),
                              void *ctx) {
    const seam_tensor *a = q->a, *b = q->b;
    if (a->rank < 1 || b->rank < 1) return kernel_fail(k, "inputs must have rank >= 1");
    int64_t M = a->rank == 1 ? 1 : a->dims[a->rank - 2], K = a->dims[a->rank - 1];
    int64_t K2 = b->rank == 1 ? b->dims[0] : b->dims[b->rank - 2], N = b->rank == 1 ? 1 : b->dims[b->rank - 1];
    if (K != K2) return kernel_fail(k, "inner dims differ (%lld and %lld)", (long long)K, (long long)K2);
    seam_tensor ba = {.rank = a->rank > 2 ? a->rank - 2 : 0}, bb = {.rank = b->rank > 2 ? b->rank - 2 : 0};
    for (int32_t d = 0; d < ba.rank; d++) ba.dims[d] = a->dims[d];
    for (int32_t d = 0; d < bb.rank; d++) bb.dims[d] = b->dims[d];
    const seam_tensor *bt[2] = {&ba, &bb};
    int32_t br;
    int64_t bdims[SEAM_MAX_RANK], sa[SEAM_MAX_RANK], sb[SEAM_MAX_RANK], dims[SEAM_MAX_RANK];
    if (!cpu_broadcast(bt, 2, &br, bdims)) return kernel_fail(k, "batch dims do not broadcast");
    int32_t r = 0;
    for (int32_t d = 0; d < br; d++) dims[r++] = bdims[d];
    if (a->rank > 1) dims[r++] = M;
    if (b->rank > 1) dims[r++] = N;
    if ((q->azp && q->azp->numel != 1 && q->azp->numel != M) || (q->bzp && q->bzp->numel != 1 && q->bzp->numel != N))
        return kernel_fail(k, "zero points must be scalars, per row of A or per column of B");
    seam_tensor *y = kernel_out(k, 0, odt, r, dims);
    if (!y) return kernel_oom(k);
    cpu_bcast_strides(&ba, br, bdims, sa);
    cpu_bcast_strides(&bb, br, bdims, sb);
    int64_t batches = cpu_span(bdims, 0, br), idx[SEAM_MAX_RANK] = {0};
    for (int64_t t = 0; t < batches; t++) {
        int64_t oa = 0, ob = 0;
        for (int32_t d = 0; d < br; d++) oa += idx[d] * sa[d], ob += idx[d] * sb[d];
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                int64_t az = q->azp ? cpu_get_i64(q->azp->data, q->azp->dtype, q->azp->numel == 1 ? 0 : i) : 0;
                int64_t bz = q->bzp ? cpu_get_i64(q->bzp->data, q->bzp->dtype, q->bzp->numel == 1 ? 0 : j) : 0;
                int64_t acc = 0;
                for (int64_t p = 0; p < K; p++)
                    acc += (cpu_get_i64(a->data, a->dtype, oa * M * K + i * K + p) - az) *
                           (cpu_get_i64(b->data, b->dtype, ob * K * N + p * N + j) - bz);
                cpu_set_i64(y->data, odt, t * M * N + i * N + j, (int64_t)post(ctx, acc, i, j));
            }
        for (int32_t d = br - 1; d >= 0; d--) {
            if (++idx[d] < bdims[d]) break;
            idx[d] = 0;
        }
    }
    return SEAM_STATUS_OK;
}

static double post_identity(void *ctx, int64_t acc, int64_t i, int64_t j) { return (double)acc; }

static seam_status run_matmul_integer(seam_kernel *k) {
    qmm q = {kernel_in(k, 0), kernel_in(k, 1), kernel_in(k, 2), kernel_in(k, 3), 0, 0, 0};
    if (!q.a || !q.b) return kernel_fail(k, "needs A and B");
    return int_matmul(k, &q, SEAM_DTYPE_INT32, post_identity, NULL);
}

typedef struct requant {
    const seam_tensor *as, *bs, *ys, *yz;
    int32_t odt;
    bool per_col; /* b_scale per column */
} requant;

static double post_requant(void *ctx, int64_t acc, int64_t i, int64_t j) {
    requant *r = ctx;
    double s = cpu_get(r->as->data, r->as->dtype, r->as->numel == 1 ? 0 : i) *
               cpu_get(r->bs->data, r->bs->dtype, r->bs->numel == 1 ? 0 : j) / cpu_get(r->ys->data, r->ys->dtype, 0);
    double zp = r->yz ? (double)cpu_get_i64(r->yz->data, r->yz->dtype, 0) : 0;
    return (double)sat(r->odt, nearbyint((double)acc * s) + zp);
}

static seam_status run_qlinear_matmul(seam_kernel *k) {
    qmm q = {kernel_in(k, 0), kernel_in(k, 3), kernel_in(k, 2), kernel_in(k, 5), 0, 0, 0};
    requant r = {kernel_in(k, 1), kernel_in(k, 4), kernel_in(k, 6), kernel_in(k, 7), 0, false};
    if (!q.a || !q.b || !r.as || !r.bs || !r.ys) return kernel_fail(k, "needs a, a_scale, b, b_scale and y_scale");
    r.odt = r.yz ? r.yz->dtype : SEAM_DTYPE_UINT8;
    return int_matmul(k, &q, r.odt, post_requant, &r);
}

/* ---- integer Conv: direct loops over the window ---- */

static seam_status int_conv(seam_kernel *k, const seam_tensor *x, const seam_tensor *w, const seam_tensor *xz,
                            const seam_tensor *wz, int32_t odt, const seam_tensor *xs, const seam_tensor *ws,
                            const seam_tensor *ys, const seam_tensor *yz, const seam_tensor *bias) {
    if (!x || !w || x->rank < 3 || w->rank != x->rank) return kernel_fail(k, "needs x [N, C, ...] and w of the same rank");
    int64_t group = node_attr_int(k->n, "group", 1), N = x->dims[0], C = x->dims[1], M = w->dims[0];
    if (group < 1 || C % group || M % group || w->dims[1] != C / group) return kernel_fail(k, "w does not fit the channels and groups");
    if (wz && wz->numel != 1 && wz->numel != M) return kernel_fail(k, "w_zero_point must be a scalar or per output channel");
    if (ws && ws->numel != 1 && ws->numel != M) return kernel_fail(k, "w_scale must be a scalar or per output channel");
    if (bias && bias->numel != M) return kernel_fail(k, "B must have one entry per output channel");
    cpu_window win;
    seam_status st = cpu_window_init(k, x, w->dims + 2, false, &win);
    if (st) return st;
    int64_t dims[SEAM_MAX_RANK];
    dims[0] = N, dims[1] = M;
    for (int32_t d = 0; d < win.n; d++) dims[2 + d] = win.out[d];
    seam_tensor *y = kernel_out(k, 0, odt, x->rank, dims);
    if (!y) return kernel_oom(k);
    int64_t Cg = C / group, Mg = M / group, kprod = cpu_span(w->dims, 2, w->rank);
    int64_t in_prod = cpu_span(win.in, 0, win.n), out_prod = cpu_span(win.out, 0, win.n);
    int64_t xzp = xz ? cpu_get_i64(xz->data, xz->dtype, 0) : 0;
    for (int64_t n = 0; n < N; n++)
        for (int64_t m = 0; m < M; m++) {
            int64_t g = m / Mg, wzp = wz ? cpu_get_i64(wz->data, wz->dtype, wz->numel == 1 ? 0 : m) : 0;
            int64_t oidx[SEAM_MAX_RANK] = {0};
            for (int64_t o = 0; o < out_prod; o++) {
                int64_t acc = 0;
                for (int64_t c = 0; c < Cg; c++)
                    for (int64_t kk = 0; kk < kprod; kk++) {
                        int64_t rem = kk, off = 0;
                        bool inside = true;
                        int64_t koff[SEAM_MAX_RANK];
                        for (int32_t d = win.n - 1; d >= 0; d--) {
                            koff[d] = rem % win.kernel[d];
                            rem /= win.kernel[d];
                        }
                        for (int32_t d = 0; d < win.n && inside; d++) {
                            int64_t i = oidx[d] * win.stride[d] - win.pad_lo[d] + koff[d] * win.dil[d];
                            inside = i >= 0 && i < win.in[d];
                            off = off * win.in[d] + i;
                        }
                        /* padding holds the zero point, which contributes 0 */
                        if (!inside) continue;
                        int64_t xv = cpu_get_i64(x->data, x->dtype, (n * C + g * Cg + c) * in_prod + off) - xzp;
                        int64_t wv = cpu_get_i64(w->data, w->dtype, (m * Cg + c) * kprod + kk) - wzp;
                        acc += xv * wv;
                    }
                int64_t at = (n * M + m) * out_prod + o;
                if (!ys) {
                    cpu_set_i64(y->data, odt, at, acc);
                } else {
                    if (bias) acc += cpu_get_i64(bias->data, bias->dtype, m);
                    double s = cpu_get(xs->data, xs->dtype, 0) * cpu_get(ws->data, ws->dtype, ws->numel == 1 ? 0 : m) /
                               cpu_get(ys->data, ys->dtype, 0);
                    double zp = yz ? (double)cpu_get_i64(yz->data, yz->dtype, 0) : 0;
                    cpu_set_i64(y->data, odt, at, sat(odt, nearbyint((double)acc * s) + zp));
                }
                for (int32_t d = win.n - 1; d >= 0; d--) {
                    if (++oidx[d] < win.out[d]) break;
                    oidx[d] = 0;
                }
            }
        }
    return SEAM_STATUS_OK;
}

static seam_status run_conv_integer(seam_kernel *k) {
    return int_conv(k, kernel_in(k, 0), kernel_in(k, 1), kernel_in(k, 2), kernel_in(k, 3), SEAM_DTYPE_INT32, NULL, NULL,
                    NULL, NULL, NULL);
}

static seam_status run_qlinear_conv(seam_kernel *k) {
    const seam_tensor *xs = kernel_in(k, 1), *ws = kernel_in(k, 4), *ys = kernel_in(k, 6), *yz = kernel_in(k, 7);
    if (!xs || !ws || !ys) return kernel_fail(k, "needs x_scale, w_scale and y_scale");
    return int_conv(k, kernel_in(k, 0), kernel_in(k, 3), kernel_in(k, 2), kernel_in(k, 5), yz ? yz->dtype : SEAM_DTYPE_UINT8,
                    xs, ws, ys, yz, kernel_in(k, 8));
}

static seam_status check_int_input(seam_check *c) {
    int32_t dt = check_in_dtype(c, 0);
    if (dt != SEAM_DTYPE_UNDEFINED && !cpu_is_int(dt))
        return check_refuse(c, "%s on %s is not supported", c->n->op_type, seam_dtype_name(dt));
    return SEAM_STATUS_OK;
}

static seam_status check_quantize(seam_check *c) {
    if (node_attr_int(c->n, "block_size", 0) != 0) return check_refuse(c, "blocked quantization is not supported");
    int32_t dt = check_in_dtype(c, 0);
    if (dt != SEAM_DTYPE_UNDEFINED && !cpu_is_float(dt) && dt != SEAM_DTYPE_INT32)
        return check_refuse(c, "QuantizeLinear on %s is not supported", seam_dtype_name(dt));
    return SEAM_STATUS_OK;
}

const seam_cpu_binding seam_cpu_quant[] = {
    {"", "QuantizeLinear", 10, {run_quantize, check_quantize}},
    {"", "DequantizeLinear", 10, {run_dequantize, check_int_input}},
    {"", "DynamicQuantizeLinear", 11, {run_dynamic_quantize, NULL}},
    {"", "MatMulInteger", 10, {run_matmul_integer, check_int_input}},
    {"", "QLinearMatMul", 10, {run_qlinear_matmul, check_int_input}},
    {"", "ConvInteger", 10, {run_conv_integer, check_int_input}},
    {"", "QLinearConv", 10, {run_qlinear_conv, check_int_input}},
};
const size_t seam_cpu_quant_count = sizeof(seam_cpu_quant) / sizeof(seam_cpu_quant[0]);
