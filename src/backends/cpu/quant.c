/* CPU kernels: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
 * MatMulInteger, QLinearMatMul, ConvInteger and QLinearConv.
 * Requantization rounds half to even and saturates, as the spec says.
 *
 * The integer products take 8-bit operands only: with the zero points
 * subtracted every operand lies in [-255, 255], so they are widened once to
 * int16 and 2^15 products at a time fit an int32 sum (which vectorizes)
 * before joining an exact int64 total. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu.h"
#include "backends/cpu/iconv.h"
#include "backends/cpu/linalg.h"
#include "ops/quant_math.h"

static int64_t sat(int32_t dt, double v) {
    double lo = dt == SEAM_DTYPE_INT8 ? -128 : dt == SEAM_DTYPE_UINT8 ? 0 : dt == SEAM_DTYPE_INT16 ? -32768
              : dt == SEAM_DTYPE_UINT16 ? 0 : -2147483648.0;
    double hi = dt == SEAM_DTYPE_INT8 ? 127 : dt == SEAM_DTYPE_UINT8 ? 255 : dt == SEAM_DTYPE_INT16 ? 32767
              : dt == SEAM_DTYPE_UINT16 ? 65535 : 2147483647.0;
    if (!(v == v)) return 0;
    return (int64_t)(v < lo ? lo : v > hi ? hi : v);
}

static bool is_8bit(int32_t dt) { return dt == SEAM_DTYPE_UINT8 || dt == SEAM_DTYPE_INT8; }

/* ---- QuantizeLinear and DequantizeLinear ---- */

/* How x splits for per-axis parameters: outer blocks of `len` slices along
 * the axis, each of `inner` elements, slice a using parameter a. Per-tensor
 * parameters make it one slice of every element. */
typedef struct qblocks {
    int64_t outer, len, inner;
} qblocks;

static bool fits_axis(const seam_tensor *p, const seam_tensor *x, int32_t axis) {
    return p->numel == 1 || (axis >= 0 && p->rank == 1 && p->dims[0] == x->dims[axis]);
}

/* Checks that the scale and zero point are scalars or 1-D along axis, and
 * fills b. */
static bool quant_blocks(const seam_tensor *x, const seam_tensor *s, const seam_tensor *z, int32_t axis, qblocks *b) {
    *b = (qblocks){x->numel ? 1 : 0, 1, x->numel}; /* an empty x: no blocks (and maybe an empty scale) */
    if (!fits_axis(s, x, axis) || (z && !fits_axis(z, x, axis))) return false;
    if (s->numel == 1 && (!z || z->numel == 1)) return true;
    if (x->numel == 0) return true; /* (x's dims past its 0 may be anything) */
    *b = (qblocks){cpu_span(x->dims, 0, axis), x->dims[axis], cpu_span(x->dims, axis + 1, x->rank)};
    return true;
}

static inline void put_int(void *p, int32_t dt, int64_t i, int64_t v) {
    switch (dt) {
    case SEAM_DTYPE_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case SEAM_DTYPE_INT8: ((int8_t *)p)[i] = (int8_t)v; break;
    default: cpu_set_i64(p, dt, i, v); break;
    }
}

/* The axis attribute against x's rank; -1 for a scalar x (only per-tensor
 * parameters fit it) or an axis out of range. */
static int32_t quant_axis(const seam_kernel *k, const seam_tensor *x) {
    return x->rank ? op_axis(node_attr_int(k->n, "axis", 1), x->rank) : -1;
}

/* QuantizeLinear's output types (ONNX: 8-bit since opset 10, 16-bit since
 * 21; never int32, whose zero point of 300 would otherwise be taken). */
static bool quant_out_ok(int32_t dt) {
    return dt == SEAM_DTYPE_UINT8 || dt == SEAM_DTYPE_INT8 || dt == SEAM_DTYPE_UINT16 || dt == SEAM_DTYPE_INT16;
}

/* A scale must be a finite positive number (a zero divides by zero, a
 * negative one flips the range): the first one that is not, named. */
static seam_status check_scales(seam_kernel *k, const seam_tensor *s, const char *which) {
    for (int64_t i = 0; s && i < s->numel; i++) {
        double v = cpu_get(s->data, s->dtype, i);
        if (!(v > 0) || !isfinite(v))
            return kernel_fail(k, "%s[%lld] is %g: scales must be finite and positive", which, (long long)i, v);
    }
    return SEAM_STATUS_OK;
}

/* float32 to 8 bits (ops/quant_math.h, the arithmetic dnnl shares) */
CPU_HOT static void f32_quantize_8(const float *x, uint8_t *y, int64_t n, float scale, float zp, bool is_signed) {
    quant_f32_to_8bit(x, y, n, scale, zp, is_signed);
}

/* A per-tensor float32 <-> 8-bit conversion of n elements over the pool,
 * in chunks of 16384 (each element computed alone: the same bytes on any
 * thread count). */
typedef struct q8_job {
    const void *x;
    void *y;
    float scale, zp;
    int32_t zi;
    bool is_signed, dequant;
} q8_job;

enum { Q8_CHUNK = 16384 };

/* 8-bit x (signed or not) to float32: (x - zp) has at most 9 bits, so the
 * float product rounds once. */
static void dq8_f32(const void *x, bool is_signed, int32_t zp, float scale, float *y, int64_t n) {
    if (is_signed)
        for (int64_t i = 0; i < n; i++) y[i] = (float)(((const int8_t *)x)[i] - zp) * scale;
    else
        for (int64_t i = 0; i < n; i++) y[i] = (float)(((const uint8_t *)x)[i] - zp) * scale;
}

static void q8_chunks(void *arg, int64_t begin, int64_t end) {
    const q8_job *j = arg;
    for (int64_t c = begin; c < end; c++) {
        int64_t at = c * Q8_CHUNK;
        if (!j->dequant) {
            f32_quantize_8((const float *)j->x + at, (uint8_t *)j->y + at, Q8_CHUNK, j->scale, j->zp, j->is_signed);
            continue;
        }
        dq8_f32((const char *)j->x + at, j->is_signed, j->zi, j->scale, (float *)j->y + at, Q8_CHUNK);
    }
}

/* Runs the whole chunks of j over the pool; returns how many elements
 * they covered (the caller does the rest). */
static int64_t q8_parallel(seam_kernel *k, const q8_job *j, int64_t n) {
    int64_t chunks = n / Q8_CHUNK;
    if (chunks < 2) return 0;
    seam_parallel_for(k->pool, chunks, 1, q8_chunks, (void *)j);
    return chunks * Q8_CHUNK;
}

/* A folded quantized add (seam_kernel.qadd, runtime/fuse.c): y =
 * Q(DQ(a) + DQ(b)), every scale and zero point per tensor, computed as the
 * three nodes compute it: each side (float)(x - zp) * scale in float32
 * (dq8_f32), their float32 sum (the Add), then QuantizeLinear's
 * arithmetic (quant_f32_to_8bit): the same bytes, in one pass over a and
 * b instead of three over float tensors four times their size. */
typedef struct qadd_job {
    const void *a, *b;
    bool as8, bs8, ys8;
    int32_t za, zb;
    float sa, sb, sy, zy;
    uint8_t *y;
} qadd_job;

enum { QADD_CHUNK = 16384, QADD_STEP = 512 };

CPU_HOT static void qadd_step(const qadd_job *j, int64_t at, int64_t n, float *t) {
    const uint8_t *au = (const uint8_t *)j->a + at, *bu = (const uint8_t *)j->b + at;
    const int8_t *as = (const int8_t *)j->a + at, *bs = (const int8_t *)j->b + at;
    for (int64_t i = 0; i < n; i++) {
        float fa = (float)((j->as8 ? (int32_t)as[i] : (int32_t)au[i]) - j->za) * j->sa;
        float fb = (float)((j->bs8 ? (int32_t)bs[i] : (int32_t)bu[i]) - j->zb) * j->sb;
        t[i] = fa + fb;
    }
    quant_f32_to_8bit(t, j->y + at, n, j->sy, j->zy, j->ys8);
}

static void qadd_chunks(void *arg, int64_t begin, int64_t end) {
    const qadd_job *j = arg;
    float t[QADD_STEP];
    for (int64_t at = begin * QADD_CHUNK; at < end * QADD_CHUNK; at += QADD_STEP) qadd_step(j, at, QADD_STEP, t);
}

static seam_status run_qadd(seam_kernel *k) {
    const seam_tensor *a = kernel_node_in(k, k->qadd_dq[0], 0), *b = kernel_node_in(k, k->qadd_dq[1], 0);
    const seam_tensor *sa = kernel_node_in(k, k->qadd_dq[0], 1), *sb = kernel_node_in(k, k->qadd_dq[1], 1);
    const seam_tensor *za = kernel_node_in(k, k->qadd_dq[0], 2), *zb = kernel_node_in(k, k->qadd_dq[1], 2);
    const seam_tensor *sy = kernel_in(k, 1), *zy = kernel_in(k, 2);
    /* (runtime/fuse.c folds only these: 8-bit a and b of one shape, scalar float32 scales, scalar zero points) */
    if (!a || !b || !sa || !sb || !sy || a->rank != b->rank || a->numel != b->numel ||
        (a->rank && memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->rank)))
        return kernel_fail(k, "the folded Add's inputs do not match (a bug: run with SEAM_CPU_QADD=0)");
    if (check_scales(k, sa, "x_scale") || check_scales(k, sb, "x_scale") || check_scales(k, sy, "y_scale"))
        return SEAM_STATUS_RUN_FAILED;
    int32_t odt = zy ? zy->dtype : SEAM_DTYPE_UINT8;
    seam_tensor *y = kernel_out(k, 0, odt, a->rank, a->dims);
    if (!y) return kernel_oom(k);
    qadd_job j = {a->data, b->data, a->dtype == SEAM_DTYPE_INT8, b->dtype == SEAM_DTYPE_INT8, odt == SEAM_DTYPE_INT8,
                  za ? (int32_t)cpu_get_i64(za->data, za->dtype, 0) : 0, zb ? (int32_t)cpu_get_i64(zb->data, zb->dtype, 0) : 0,
                  ((const float *)sa->data)[0], ((const float *)sb->data)[0], ((const float *)sy->data)[0],
                  zy ? (float)cpu_get_i64(zy->data, zy->dtype, 0) : 0.0f, y->data};
    int64_t chunks = a->numel / QADD_CHUNK;
    if (chunks > 1) seam_parallel_for(k->pool, chunks, 1, qadd_chunks, &j);
    else chunks = 0;
    float t[QADD_STEP];
    for (int64_t at = chunks * QADD_CHUNK; at < a->numel; at += QADD_STEP)
        qadd_step(&j, at, a->numel - at < QADD_STEP ? a->numel - at : QADD_STEP, t);
    return SEAM_STATUS_OK;
}

static seam_status run_quantize(seam_kernel *k) {
    if (k->qadd) return run_qadd(k);
    const seam_tensor *x = kernel_in(k, 0), *s = kernel_in(k, 1), *z = kernel_in(k, 2);
    if (!x || !s) return kernel_fail(k, "needs x and y_scale");
    if (check_scales(k, s, "y_scale")) return SEAM_STATUS_RUN_FAILED;
    qblocks q;
    if (!quant_blocks(x, s, z, quant_axis(k, x), &q))
        return kernel_fail(k, "y_scale and y_zero_point must be scalars or 1-D along axis");
    /* the zero point's type; without one, opset 21's output_dtype or uint8 */
    int32_t odt = z ? z->dtype : (int32_t)node_attr_int(k->n, "output_dtype", 0);
    if (!odt) odt = SEAM_DTYPE_UINT8;
    if (!quant_out_ok(odt)) return kernel_fail(k, "output type %s is not supported", seam_dtype_name(odt));
    seam_tensor *y = kernel_out(k, 0, odt, x->rank, x->dims);
    if (!y) return kernel_oom(k);
    for (int64_t o = 0; o < q.outer; o++)
        for (int64_t a = 0; a < q.len; a++) {
            double sc = cpu_get(s->data, s->dtype, s->numel == 1 ? 0 : a);
            double zp = z ? (double)cpu_get_i64(z->data, z->dtype, z->numel == 1 ? 0 : a) : 0;
            int64_t base = (o * q.len + a) * q.inner;
            if (x->dtype == SEAM_DTYPE_FLOAT32 && is_8bit(odt)) {
                int64_t done = 0;
                if (q.outer == 1 && q.len == 1) { /* per tensor: over the pool */
                    q8_job j = {x->data, y->data, (float)sc, (float)zp, 0, odt == SEAM_DTYPE_INT8, false};
                    done = q8_parallel(k, &j, q.inner);
                }
                f32_quantize_8((const float *)x->data + base + done, (uint8_t *)y->data + base + done, q.inner - done,
                               (float)sc, (float)zp, odt == SEAM_DTYPE_INT8);
            } else if (x->dtype == SEAM_DTYPE_FLOAT32) {
                /* divide in float32, as the reference does: the halfway
                 * cases of the rounding depend on it */
                const float *xp = (const float *)x->data + base;
                float fs = (float)sc;
                for (int64_t i = 0; i < q.inner; i++)
                    put_int(y->data, odt, base + i, sat(odt, (double)nearbyintf(xp[i] / fs) + zp));
            } else {
                for (int64_t i = 0; i < q.inner; i++) {
                    double v = cpu_get(x->data, x->dtype, base + i);
                    put_int(y->data, odt, base + i, sat(odt, nearbyint(v / sc) + zp));
                }
            }
        }
    return SEAM_STATUS_OK;
}

static seam_status run_dequantize(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0), *s = kernel_in(k, 1), *z = kernel_in(k, 2);
    if (!x || !s) return kernel_fail(k, "needs x and x_scale");
    if (check_scales(k, s, "x_scale")) return SEAM_STATUS_RUN_FAILED;
    qblocks q;
    if (!quant_blocks(x, s, z, quant_axis(k, x), &q))
        return kernel_fail(k, "x_scale and x_zero_point must be scalars or 1-D along axis");
    if (!cpu_is_float(s->dtype)) return kernel_fail(k, "x_scale must be a float tensor");
    if (z && z->dtype != x->dtype) return kernel_fail(k, "x_zero_point must have x's type");
    seam_tensor *y = kernel_out(k, 0, s->dtype, x->rank, x->dims);
    if (!y) return kernel_oom(k);
    for (int64_t o = 0; o < q.outer; o++)
        for (int64_t a = 0; a < q.len; a++) {
            double sc = cpu_get(s->data, s->dtype, s->numel == 1 ? 0 : a);
            int64_t zp = z ? cpu_get_i64(z->data, z->dtype, z->numel == 1 ? 0 : a) : 0;
            int64_t base = (o * q.len + a) * q.inner;
            if (y->dtype == SEAM_DTYPE_FLOAT32 && is_8bit(x->dtype)) {
                float *yp = (float *)y->data + base, fs = (float)sc;
                int32_t zi = (int32_t)zp;
                if (q.outer == 1 && q.len == 1) { /* per tensor: the whole chunks over the pool */
                    q8_job j = {x->data, y->data, fs, 0, zi, x->dtype == SEAM_DTYPE_INT8, true};
                    int64_t done = q8_parallel(k, &j, q.inner);
                    base += done, yp += done;
                    q.inner -= done;
                }
                dq8_f32((const char *)x->data + base, x->dtype == SEAM_DTYPE_INT8, zi, fs, yp, q.inner);
            } else {
                for (int64_t i = 0; i < q.inner; i++)
                    cpu_set(y->data, y->dtype, base + i, (double)(cpu_get_i64(x->data, x->dtype, base + i) - zp) * sc);
            }
        }
    return SEAM_STATUS_OK;
}

/* The range of float32 x (holding 0), and whether it has a NaN. */
CPU_HOT static void f32_range(const float *x, int64_t n, float *lo_out, float *hi_out, bool *nan_out) {
    float lo = 0, hi = 0;
    int nan = 0;
    for (int64_t i = 0; i < n; i++) {
        float v = x[i];
        nan |= v != v;
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    *lo_out = lo, *hi_out = hi, *nan_out = nan != 0;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* f32_range in vectors (the compiler does not turn its selects into
 * vminps without -ffinite-math-only): the same lo and hi, as neither a
 * min nor a max depends on the order and a NaN is reported apart. */
__attribute__((target("avx2"))) static void f32_range_avx2(const float *x, int64_t n, float *lo_out, float *hi_out,
                                                           bool *nan_out) {
    __m256 l = _mm256_setzero_ps(), h = l, u = l;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        u = _mm256_or_ps(u, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
        l = _mm256_min_ps(v, l); /* (v < l ? v : l, as f32_range) */
        h = _mm256_max_ps(v, h);
    }
    float lv[8], hv[8], lo, hi;
    bool nan;
    _mm256_storeu_ps(lv, l), _mm256_storeu_ps(hv, h);
    f32_range(x + i, n - i, &lo, &hi, &nan);
    for (int e = 0; e < 8; e++) lo = lv[e] < lo ? lv[e] : lo, hi = hv[e] > hi ? hv[e] : hi;
    *lo_out = lo, *hi_out = hi, *nan_out = nan || _mm256_movemask_ps(u) != 0;
}
#endif

static seam_status run_dynamic_quantize(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (!x) return kernel_fail(k, "needs an input");
    double lo = 0, hi = 0; /* the range always holds 0 */
    bool fast = false;
    if (x->dtype == SEAM_DTYPE_FLOAT32) { /* (fmin/fmax skip NaN: so does this, unless all is NaN) */
        float flo, fhi;
        bool nan;
#if defined(__x86_64__) && defined(__GNUC__)
        if (__builtin_cpu_supports("avx2")) f32_range_avx2(x->data, x->numel, &flo, &fhi, &nan);
        else
#endif
            f32_range(x->data, x->numel, &flo, &fhi, &nan);
        fast = !nan;
        lo = flo, hi = fhi;
    }
    for (int64_t i = 0; !fast && i < x->numel; i++) {
        double v = cpu_get(x->data, x->dtype, i);
        lo = fmin(lo, v), hi = fmax(hi, v);
    }
    /* in float32, as the spec's reference computes it: the rounding of
     * x / scale must land where it does there */
    float scale = (float)(hi - lo) / 255.0f;
    float zp = scale != 0 ? (float)sat(SEAM_DTYPE_UINT8, nearbyintf(-(float)lo / scale)) : 0;
    seam_tensor *y = kernel_out(k, 0, SEAM_DTYPE_UINT8, x->rank, x->dims);
    seam_tensor *ys = kernel_out(k, 1, SEAM_DTYPE_FLOAT32, 0, NULL), *yz = kernel_out(k, 2, SEAM_DTYPE_UINT8, 0, NULL);
    if (!y || !ys || !yz) return kernel_oom(k);
    if (fast && scale != 0 && isfinite(scale)) { /* (QuantizeLinear's arithmetic: no NaN here) */
        q8_job j = {x->data, y->data, scale, zp, 0, false, false};
        int64_t done = q8_parallel(k, &j, x->numel);
        f32_quantize_8((const float *)x->data + done, (uint8_t *)y->data + done, x->numel - done, scale, zp, false);
    } else
        for (int64_t i = 0; i < x->numel; i++) {
            float v = (float)cpu_get(x->data, x->dtype, i);
            int64_t q = scale != 0 ? sat(SEAM_DTYPE_UINT8, nearbyintf(v / scale) + zp) : (int64_t)zp;
            ((uint8_t *)y->data)[i] = (uint8_t)q;
        }
    ((float *)ys->data)[0] = scale;
    ((uint8_t *)yz->data)[0] = (uint8_t)zp;
    return SEAM_STATUS_OK;
}

/* ---- integer products ---- */

/* Sum of a[p] * b[p] for entries in [-255, 255]. */
CPU_HOT static int64_t dot16(const int16_t *a, const int16_t *b, int64_t n) {
    int64_t total = 0;
    for (int64_t p0 = 0; p0 < n; p0 += 32768) {
        int64_t e = n - p0 < 32768 ? n : p0 + 32768;
        int32_t acc = 0;
        for (int64_t p = p0; p < e; p++) acc += (int32_t)a[p] * b[p];
        total += acc;
    }
    return total;
}

static inline int32_t get8(const void *p, int32_t dt, int64_t i) {
    return dt == SEAM_DTYPE_UINT8 ? ((const uint8_t *)p)[i] : ((const int8_t *)p)[i];
}

/* A zero point or scale of A (per row) or B (per column): one value, one
 * per row/column, or one per row/column of each of the operand's batches. */
static bool qp_ok(const seam_tensor *p, int64_t batches, int64_t n) {
    return !p || p->numel == 1 || p->numel == n || p->numel == batches * n;
}

static int64_t qp_at(const seam_tensor *p, int64_t batch, int64_t i, int64_t n) {
    return p->numel == 1 ? 0 : p->numel == n ? i : batch * n + i;
}

/* A zero point of an 8-bit operand: it must be of the operand's type, so
 * that operand - zero point stays within [-255, 255]. */
static bool zp_type_ok(const seam_tensor *zp, const seam_tensor *of) { return !zp || zp->dtype == of->dtype; }

/* Requantization: y = saturate(round(acc * scale) + zero point). */
typedef struct requant {
    const seam_tensor *as, *bs, *ys, *yz; /* NULL as: none, the int32 sum is the output */
    int32_t odt;
} requant;

typedef struct imm_job {
    const int16_t *a, *bt; /* A - a_zp [a batches, M, K]; (B - b_zp)^T [b batches, N, K] */
    seam_tensor *y;
    int64_t M, K, N, br, a_batches, b_batches;
    int64_t bdims[SEAM_MAX_RANK], sa[SEAM_MAX_RANK], sb[SEAM_MAX_RANK]; /* batch dims; A's and B's batch strides */
    const requant *rq;
    const void *c;  /* the sums made by OpenBLAS ([batches, M, N]), or NULL */
    bool c64;       /* c is float64 (else float32) */
} imm_job;

/* Output rows [begin, end) of all batches: row = batch * M + i. */
static void imm_rows(void *arg, int64_t begin, int64_t end) {
    imm_job *j = arg;
    const requant *rq = j->rq;
    for (int64_t row = begin; row < end; row++) {
        int64_t t = row / j->M, i = row % j->M, rem = t, oa = 0, ob = 0;
        for (int64_t d = j->br - 1; d >= 0; d--) {
            int64_t idx = rem % j->bdims[d];
            rem /= j->bdims[d];
            oa += idx * j->sa[d], ob += idx * j->sb[d];
        }
        const int16_t *arow = j->a + (oa * j->M + i) * j->K;
        for (int64_t c = 0; c < j->N; c++) {
            int64_t at = row * j->N + c;
            int64_t acc = !j->c  ? dot16(arow, j->bt + (ob * j->N + c) * j->K, j->K)
                          : j->c64 ? (int64_t)((const double *)j->c)[at]
                                   : (int64_t)((const float *)j->c)[at];
            if (!rq->as) {
                cpu_set_i64(j->y->data, SEAM_DTYPE_INT32, at, acc);
                continue;
            }
            float s = cpu_requant_scale(cpu_get(rq->as->data, rq->as->dtype, qp_at(rq->as, oa, i, j->M)),
                                        cpu_get(rq->bs->data, rq->bs->dtype, qp_at(rq->bs, ob, c, j->N)),
                                        cpu_get(rq->ys->data, rq->ys->dtype, 0));
            int32_t zp = rq->yz ? (int32_t)cpu_get_i64(rq->yz->data, rq->yz->dtype, 0) : 0;
            put_int(j->y->data, rq->odt, at, cpu_requant(acc, 0, s, zp, rq->odt == SEAM_DTYPE_INT8));
        }
    }
}

/* The integer sums of a large product by OpenBLAS, exactly: every operand
 * minus its zero point is an integer in [-255, 255], so every partial sum
 * is an integer below K * max|a| * max|b|: exact in float32 when that is
 * below 2^24, else in float64 (below 2^53 for any K seam accepts). A and
 * B are read once, in their own order. *c_out (the caller's to free)
 * holds [batches, M, N]; false when out of memory. */
static bool blas_sums(seam_kernel *k, imm_job *j, int32_t br, const seam_tensor *a, const seam_tensor *b,
                      const seam_tensor *azp, const seam_tensor *bzp, void **c_out) {
    int64_t M = j->M, N = j->N, K = j->K, na = a->numel, nb = b->numel;
    int32_t amax = 0, bmax = 0;
    for (int64_t t = 0; t < j->a_batches; t++)
        for (int64_t i = 0; i < M; i++) {
            int32_t zp = azp ? get8(azp->data, azp->dtype, qp_at(azp, t, i, M)) : 0;
            for (int64_t p = 0; p < K; p++) {
                int32_t v = abs(get8(a->data, a->dtype, (t * M + i) * K + p) - zp);
                amax = v > amax ? v : amax;
            }
        }
    for (int64_t t = 0; t < j->b_batches; t++)
        for (int64_t p = 0; p < K; p++)
            for (int64_t c = 0; c < N; c++) {
                int32_t zp = bzp ? get8(bzp->data, bzp->dtype, qp_at(bzp, t, c, N)) : 0;
                int32_t v = abs(get8(b->data, b->dtype, (t * K + p) * N + c) - zp);
                bmax = v > bmax ? v : bmax;
            }
    bool f64 = (double)K * amax * bmax >= 16777216.0;
    size_t es = f64 ? 8 : 4;
    int64_t batches = cpu_span(j->bdims, 0, br);
    char *af = malloc(es * (size_t)(na + 1)), *bf = malloc(es * (size_t)(nb + 1));
    char *cf = malloc(es * (size_t)(batches * M * N + 1));
    if (!af || !bf || !cf) return free(af), free(bf), free(cf), false;
    for (int64_t t = 0; t < j->a_batches; t++)
        for (int64_t i = 0; i < M; i++) {
            int32_t zp = azp ? get8(azp->data, azp->dtype, qp_at(azp, t, i, M)) : 0;
            int64_t row = (t * M + i) * K;
            for (int64_t p = 0; p < K; p++) {
                int32_t v = get8(a->data, a->dtype, row + p) - zp;
                if (f64) ((double *)af)[row + p] = v;
                else ((float *)af)[row + p] = (float)v;
            }
        }
    for (int64_t t = 0; t < j->b_batches; t++)
        for (int64_t p = 0; p < K; p++)
            for (int64_t c = 0; c < N; c++) {
                int32_t zp = bzp ? get8(bzp->data, bzp->dtype, qp_at(bzp, t, c, N)) : 0;
                int64_t at = (t * K + p) * N + c;
                int32_t v = get8(b->data, b->dtype, at) - zp;
                if (f64) ((double *)bf)[at] = v;
                else ((float *)bf)[at] = (float)v;
            }
    /* one B for every batch of A (a weight): one product of all A's rows */
    if (j->b_batches == 1 && j->a_batches == batches) {
        cpu_blas_gemm(k->pool, f64, false, false, batches * M, N, K, 1.0, af, K, bf, N, 0.0, cf, N);
        batches = 0;
    }
    for (int64_t t = 0; t < batches; t++) {
        int64_t rem = t, oa = 0, ob = 0;
        for (int64_t d = br - 1; d >= 0; d--) {
            int64_t idx = rem % j->bdims[d];
            rem /= j->bdims[d];
            oa += idx * j->sa[d], ob += idx * j->sb[d];
        }
        cpu_blas_gemm(k->pool, f64, false, false, M, N, K, 1.0, af + es * (size_t)(oa * M * K), K,
                      bf + es * (size_t)(ob * K * N), N, 0.0, cf + es * (size_t)(t * M * N), N);
    }
    free(af), free(bf);
    j->c = cf, j->c64 = f64;
    *c_out = cf;
    return true;
}

/* A MatMul by a 2-D B on iconv.c's int16 GEMM: A's rows are the 1x1
 * images of a convolution by B^T, [N, K, 1, 1], whose output [rows, N, 1,
 * 1] is Y. B packed at session creation (state) when it was constant. */
static seam_status imm_fast(seam_kernel *k, const imm_job *j, const seam_tensor *a, const seam_tensor *b,
                            const seam_tensor *azp, const seam_tensor *bzp) {
    const requant *rq = j->rq;
    int64_t K = j->K, N = j->N;
    const cpu_iconv_w *pw = k->state;
    cpu_iconv_w *now = NULL;
    if (!pw || pw->src != b->data || pw->zsrc != (bzp ? bzp->data : NULL) || pw->M != N || pw->K != K || pw->group != 1 ||
        pw->kprod != 1)
        pw = now = cpu_iconv_pack(b->data, b->dtype, bzp ? bzp->data : NULL, bzp ? bzp->dtype : 0, bzp ? bzp->numel : 1, N,
                                  1, K, 1, true);
    float *scale = rq->as ? malloc(sizeof(float) * (size_t)N) : NULL;
    bool ok = pw && (!rq->as || scale);
    for (int64_t c = 0; ok && scale && c < N; c++)
        scale[c] = cpu_requant_scale(cpu_get(rq->as->data, rq->as->dtype, 0),
                                     cpu_get(rq->bs->data, rq->bs->dtype, rq->bs->numel == 1 ? 0 : c),
                                     cpu_get(rq->ys->data, rq->ys->dtype, 0));
    conv_geom win;
    memset(&win, 0, sizeof(win)); /* no spatial axes */
    int64_t koff[1] = {0};
    if (ok) {
        cpu_iconv_args ar = {.x = a->data, .xdt = a->dtype, .xzp = azp ? get8(azp->data, azp->dtype, 0) : 0, .win = &win,
                             .koff = koff, .N = a->numel / K, .C = K, .Cg = K, .kprod = 1, .in_prod = 1, .out_prod = 1,
                             .w = pw, .scale = scale, .odt = rq->odt, .y = j->y->data,
                             .zp = rq->as && rq->yz ? (int32_t)cpu_get_i64(rq->yz->data, rq->yz->dtype, 0) : 0};
        ok = cpu_iconv_run(k->pool, &ar);
    }
    cpu_iconv_free(now);
    free(scale);
    return ok ? SEAM_STATUS_OK : kernel_oom(k);
}

/* Batched integer MatMul of a and b (numpy rules), zero points subtracted,
 * requantized when rq->as is set. */
static seam_status int_matmul(seam_kernel *k, const seam_tensor *a, const seam_tensor *b, const seam_tensor *azp,
                              const seam_tensor *bzp, const requant *rq) {
    if (a->rank < 1 || b->rank < 1) return kernel_fail(k, "inputs must have rank >= 1");
    if (!is_8bit(a->dtype) || !is_8bit(b->dtype) || !zp_type_ok(azp, a) || !zp_type_ok(bzp, b))
        return kernel_fail(k, "A and B must be int8 or uint8, with zero points of their own types");
    int64_t M = a->rank == 1 ? 1 : a->dims[a->rank - 2], K = a->dims[a->rank - 1];
    int64_t K2 = b->rank == 1 ? b->dims[0] : b->dims[b->rank - 2], N = b->rank == 1 ? 1 : b->dims[b->rank - 1];
    if (K != K2) return kernel_fail(k, "inner dims differ (%lld and %lld)", (long long)K, (long long)K2);
    seam_tensor ba = {.rank = a->rank > 2 ? a->rank - 2 : 0}, bb = {.rank = b->rank > 2 ? b->rank - 2 : 0};
    for (int32_t d = 0; d < ba.rank; d++) ba.dims[d] = a->dims[d];
    for (int32_t d = 0; d < bb.rank; d++) bb.dims[d] = b->dims[d];
    const seam_tensor *bt[2] = {&ba, &bb};
    imm_job j = {.M = M, .K = K, .N = N, .rq = rq};
    int32_t br;
    int64_t dims[SEAM_MAX_RANK];
    if (!cpu_broadcast(bt, 2, &br, j.bdims)) return kernel_fail(k, "batch dims do not broadcast");
    j.br = br;
    int32_t r = 0;
    for (int32_t d = 0; d < br; d++) dims[r++] = j.bdims[d];
    if (a->rank > 1) dims[r++] = M;
    if (b->rank > 1) dims[r++] = N;
    j.y = kernel_out(k, 0, rq->odt, r, dims);
    if (!j.y) return kernel_oom(k);
    if (j.y->numel == 0) return SEAM_STATUS_OK; /* (empty operands' dims past their 0 may be anything) */
    /* with a non-empty output, A and B are empty only when K is 0 */
    j.a_batches = cpu_span(a->dims, 0, ba.rank), j.b_batches = cpu_span(b->dims, 0, bb.rank);
    if (!qp_ok(azp, j.a_batches, M) || !qp_ok(bzp, j.b_batches, N) || (rq->as && !qp_ok(rq->as, j.a_batches, M)) ||
        (rq->bs && !qp_ok(rq->bs, j.b_batches, N)))
        return kernel_fail(k, "zero points and scales must be scalars, per row of A or per column of B");
    if (rq->as && (rq->ys->numel != 1 || (rq->yz && rq->yz->numel != 1)))
        return kernel_fail(k, "y_scale and y_zero_point must be scalars");
    cpu_bcast_strides(&ba, br, j.bdims, j.sa);
    cpu_bcast_strides(&bb, br, j.bdims, j.sb);
    if (b->rank == 2 && a->rank >= 2 && M * N * K >= (1 << 15) && cpu_iconv_available() &&
        (cpu_iconv_fits(K) || a->numel / K <= ICONV_ROWS_MAX) &&
        (!azp || azp->numel == 1) && (!rq->as || rq->as->numel == 1))
        return imm_fast(k, &j, a, b, azp, bzp);
    if (M * N * K >= (1 << 15)) { /* large: OpenBLAS, exactly */
        void *cf = NULL;
        if (!blas_sums(k, &j, br, a, b, azp, bzp, &cf)) return kernel_oom(k);
        seam_parallel_for(k->pool, cpu_span(j.bdims, 0, br) * M, 1 + 65536 / (1 + N * K), imm_rows, &j);
        free(cf);
        return SEAM_STATUS_OK;
    }
    int16_t *a16 = malloc(sizeof(int16_t) * (size_t)(a->numel + 1));
    int16_t *b16 = malloc(sizeof(int16_t) * (size_t)(b->numel + 1));
    if (!a16 || !b16) {
        free(a16), free(b16);
        return kernel_oom(k);
    }
    for (int64_t t = 0; t < j.a_batches; t++)
        for (int64_t i = 0; i < M; i++) {
            int32_t zp = azp ? get8(azp->data, azp->dtype, qp_at(azp, t, i, M)) : 0;
            int64_t row = (t * M + i) * K;
            for (int64_t p = 0; p < K; p++) a16[row + p] = (int16_t)(get8(a->data, a->dtype, row + p) - zp);
        }
    for (int64_t t = 0; t < j.b_batches; t++) /* transposed: each column's K entries contiguous */
        for (int64_t c = 0; c < N; c++) {
            int32_t zp = bzp ? get8(bzp->data, bzp->dtype, qp_at(bzp, t, c, N)) : 0;
            int16_t *col = b16 + (t * N + c) * K;
            for (int64_t p = 0; p < K; p++) col[p] = (int16_t)(get8(b->data, b->dtype, (t * K + p) * N + c) - zp);
        }
    j.a = a16, j.bt = b16;
    seam_parallel_for(k->pool, cpu_span(j.bdims, 0, br) * M, 1 + 65536 / (1 + N * K), imm_rows, &j);
    free(a16), free(b16);
    return SEAM_STATUS_OK;
}

static seam_status run_matmul_integer(seam_kernel *k) {
    const seam_tensor *a = kernel_in(k, 0), *b = kernel_in(k, 1);
    if (!a || !b) return kernel_fail(k, "needs A and B");
    requant rq = {NULL, NULL, NULL, NULL, SEAM_DTYPE_INT32};
    return int_matmul(k, a, b, kernel_in(k, 2), kernel_in(k, 3), &rq);
}

static seam_status run_qlinear_matmul(seam_kernel *k) {
    const seam_tensor *a = kernel_in(k, 0), *b = kernel_in(k, 3);
    requant rq = {kernel_in(k, 1), kernel_in(k, 4), kernel_in(k, 6), kernel_in(k, 7), SEAM_DTYPE_UINT8};
    if (!a || !b || !rq.as || !rq.bs || !rq.ys) return kernel_fail(k, "needs a, a_scale, b, b_scale and y_scale");
    if (check_scales(k, rq.as, "a_scale") || check_scales(k, rq.bs, "b_scale") || check_scales(k, rq.ys, "y_scale"))
        return SEAM_STATUS_RUN_FAILED;
    if (rq.yz) rq.odt = rq.yz->dtype;
    if (!is_8bit(rq.odt)) return kernel_fail(k, "y_zero_point must be int8 or uint8");
    return int_matmul(k, a, b, kernel_in(k, 2), kernel_in(k, 5), &rq);
}

/* ---- integer Conv: an int16 window per output position, a dot product per output channel ---- */

enum { CONV_TILE = 32 }; /* output positions per work item */

typedef struct iconv_job {
    const seam_tensor *x, *xs, *ws, *ys, *yz, *bias;
    seam_tensor *y;
    const int16_t *w;       /* w - w_zp, [M, Cg * kprod] */
    const int64_t *koff;    /* per kernel element, its offset along each spatial axis */
    conv_geom win;
    int64_t C, M, group, Cg, Mg, kprod, in_prod, out_prod, tiles;
    int32_t xzp, odt;
    atomic_bool failed; /* a work item could not get its buffer */
} iconv_job;

/* Work items [begin, end) of (image, group, tile of output positions). */
static void iconv_items(void *arg, int64_t begin, int64_t end) {
    iconv_job *j = arg;
    const conv_geom *win = &j->win;
    int64_t K = j->Cg * j->kprod;
    int16_t *col = malloc(sizeof(int16_t) * (size_t)(CONV_TILE * K + 1));
    if (!col) {
        atomic_store(&j->failed, true);
        return;
    }
    for (int64_t item = begin; item < end; item++) {
        int64_t tile = item % j->tiles, ng = item / j->tiles, n = ng / j->group, g = ng % j->group;
        int64_t o0 = tile * CONV_TILE, o1 = o0 + CONV_TILE < j->out_prod ? o0 + CONV_TILE : j->out_prod;
        /* the windows of this tile's positions, x - x_zp (padding: 0) */
        for (int64_t o = o0; o < o1; o++) {
            int64_t start[SEAM_MAX_RANK], rem = o;
            for (int32_t d = win->n - 1; d >= 0; d--) {
                start[d] = (rem % win->out[d]) * win->stride[d] - win->pad_lo[d];
                rem /= win->out[d];
            }
            int16_t *dst = col + (o - o0) * K;
            for (int64_t kk = 0; kk < j->kprod; kk++) {
                int64_t off = 0;
                bool inside = true;
                for (int32_t d = 0; d < win->n && inside; d++) {
                    int64_t at = start[d] + j->koff[kk * win->n + d];
                    inside = at >= 0 && at < win->in[d];
                    off = off * win->in[d] + at;
                }
                int64_t at = (n * j->C + g * j->Cg) * j->in_prod + off; /* channel c adds c * in_prod */
                for (int64_t c = 0; c < j->Cg; c++) {
                    int32_t v = inside ? get8(j->x->data, j->x->dtype, at + c * j->in_prod) - j->xzp : 0;
                    dst[c * j->kprod + kk] = (int16_t)v;
                }
            }
        }
        for (int64_t m = g * j->Mg; m < (g + 1) * j->Mg; m++) {
            float s = 0;
            int32_t zp = 0;
            int64_t bias = j->bias ? cpu_get_i64(j->bias->data, j->bias->dtype, m) : 0;
            if (j->ys) {
                double wsc = cpu_get(j->ws->data, j->ws->dtype, j->ws->numel == 1 ? 0 : m);
                s = cpu_requant_scale(cpu_get(j->xs->data, j->xs->dtype, 0), wsc, cpu_get(j->ys->data, j->ys->dtype, 0));
                zp = j->yz ? (int32_t)cpu_get_i64(j->yz->data, j->yz->dtype, 0) : 0;
            }
            for (int64_t o = o0; o < o1; o++) {
                int64_t acc = dot16(j->w + m * K, col + (o - o0) * K, K), at = (n * j->M + m) * j->out_prod + o;
                if (!j->ys) cpu_set_i64(j->y->data, SEAM_DTYPE_INT32, at, acc);
                else put_int(j->y->data, j->odt, at, cpu_requant(acc, bias, s, zp, j->odt == SEAM_DTYPE_INT8));
            }
        }
    }
    free(col);
}

/* The kernel offsets along each spatial axis of win, [kprod][win->n]. */
static void kernel_offsets(const conv_geom *win, int64_t kprod, int64_t *koff) {
    for (int64_t kk = 0; kk < kprod; kk++) {
        int64_t rem = kk;
        for (int32_t d = win->n - 1; d >= 0; d--) {
            koff[kk * win->n + d] = (rem % win->kernel[d]) * win->dil[d];
            rem /= win->kernel[d];
        }
    }
}

/* The int16 GEMM path (iconv.c): the weight packed at session creation
 * (state) when it was constant, else now; the requantization's scale per
 * output channel computed as the plain loop computes it. */
static seam_status iconv_fast(seam_kernel *k, const iconv_job *j, const seam_tensor *w, const seam_tensor *wz) {
    int64_t K = j->Cg * j->kprod, N = j->x->dims[0];
    const cpu_iconv_w *pw = k->state;
    cpu_iconv_w *now = NULL;
    if (!pw || pw->src != w->data || pw->zsrc != (wz ? wz->data : NULL) || pw->M != j->M || pw->K != K ||
        pw->group != j->group || pw->kprod != j->kprod)
        pw = now = cpu_iconv_pack(w->data, w->dtype, wz ? wz->data : NULL, wz ? wz->dtype : 0, wz ? wz->numel : 1, j->M,
                                  j->group, K, j->kprod, false);
    float *scale = j->ys ? malloc(sizeof(float) * (size_t)j->M) : NULL;
    int64_t *bias = j->bias ? malloc(sizeof(int64_t) * (size_t)j->M) : NULL;
    int64_t *koff = malloc(sizeof(int64_t) * (size_t)(j->kprod * j->win.n + 1));
    bool ok = pw && koff && (!j->ys || scale) && (!j->bias || bias);
    for (int64_t m = 0; ok && m < j->M; m++) {
        if (bias) bias[m] = cpu_get_i64(j->bias->data, j->bias->dtype, m);
        if (scale) {
            double wsc = cpu_get(j->ws->data, j->ws->dtype, j->ws->numel == 1 ? 0 : m);
            scale[m] = cpu_requant_scale(cpu_get(j->xs->data, j->xs->dtype, 0), wsc, cpu_get(j->ys->data, j->ys->dtype, 0));
        }
    }
    if (ok) {
        kernel_offsets(&j->win, j->kprod, koff);
        cpu_iconv_args a = {.x = j->x->data, .xdt = j->x->dtype, .xzp = j->xzp, .win = &j->win, .koff = koff, .N = N,
                            .C = j->C, .Cg = j->Cg, .kprod = j->kprod, .in_prod = j->in_prod, .out_prod = j->out_prod,
                            .w = pw, .bias = bias, .scale = scale, .odt = j->odt, .y = j->y->data,
                            .zp = j->ys && j->yz ? (int32_t)cpu_get_i64(j->yz->data, j->yz->dtype, 0) : 0};
        ok = cpu_iconv_run(k->pool, &a);
    }
    cpu_iconv_free(now);
    free(scale), free(bias), free(koff);
    return ok ? SEAM_STATUS_OK : kernel_oom(k);
}

/* ConvInteger (ys NULL: the int32 sums) and QLinearConv. */
static seam_status int_conv(seam_kernel *k, const seam_tensor *x, const seam_tensor *w, const seam_tensor *xz,
                            const seam_tensor *wz, int32_t odt, const seam_tensor *xs, const seam_tensor *ws,
                            const seam_tensor *ys, const seam_tensor *yz, const seam_tensor *bias) {
    if (!x || !w || x->rank < 3 || w->rank != x->rank)
        return kernel_fail(k, "needs x [N, C, ...] and w of the same rank");
    if (!is_8bit(x->dtype) || !is_8bit(w->dtype) || !zp_type_ok(xz, x) || !zp_type_ok(wz, w))
        return kernel_fail(k, "x and w must be int8 or uint8, with zero points of their own types");
    iconv_job j = {.x = x, .xs = xs, .ws = ws, .ys = ys, .yz = yz, .bias = bias, .odt = odt};
    int64_t N = x->dims[0];
    j.C = x->dims[1], j.M = w->dims[0], j.group = node_attr_int(k->n, "group", 1);
    if (j.group < 1 || j.C % j.group || j.M % j.group || w->dims[1] != j.C / j.group)
        return kernel_fail(k, "w does not fit the channels and groups");
    if (xz && xz->numel != 1) return kernel_fail(k, "x_zero_point must be a scalar");
    if (wz && wz->numel != 1 && wz->numel != j.M)
        return kernel_fail(k, "w_zero_point must be a scalar or per output channel");
    if (ys && (xs->numel != 1 || ys->numel != 1 || (yz && yz->numel != 1)))
        return kernel_fail(k, "x_scale, y_scale and y_zero_point must be scalars");
    if (ws && ws->numel != 1 && ws->numel != j.M)
        return kernel_fail(k, "w_scale must be a scalar or per output channel");
    if (bias && (bias->numel != j.M || bias->dtype != SEAM_DTYPE_INT32))
        return kernel_fail(k, "B must be int32 with one entry per output channel");
    seam_status st = cpu_conv_geom(k, x, w->dims + 2, false, &j.win);
    if (st) return st;
    int64_t dims[SEAM_MAX_RANK];
    dims[0] = N, dims[1] = j.M;
    for (int32_t d = 0; d < j.win.n; d++) dims[2 + d] = j.win.out[d];
    j.y = kernel_out(k, 0, odt, x->rank, dims);
    if (!j.y) return kernel_oom(k);
    if (j.y->numel == 0) return SEAM_STATUS_OK;
    /* with a non-empty output, w is real and so are the sizes below (x may
     * be empty: no channels, or only padding) */
    j.Cg = j.C / j.group, j.Mg = j.M / j.group, j.kprod = cpu_span(w->dims, 2, w->rank);
    j.in_prod = x->numel ? cpu_span(j.win.in, 0, j.win.n) : 0, j.out_prod = cpu_span(j.win.out, 0, j.win.n);
    j.xzp = xz ? get8(xz->data, xz->dtype, 0) : 0;
    j.tiles = (j.out_prod + CONV_TILE - 1) / CONV_TILE;
    int64_t K = j.Cg * j.kprod;
    bool rows = j.group == 1 && N * j.out_prod <= ICONV_ROWS_MAX; /* cpu_iconv_rows_fits */
    if (cpu_iconv_available() && (cpu_iconv_fits(K) || rows) && (!ys || is_8bit(odt))) return iconv_fast(k, &j, w, wz);
    int16_t *w16 = malloc(sizeof(int16_t) * (size_t)(j.M * K + 1));
    int64_t *koff = malloc(sizeof(int64_t) * (size_t)(j.kprod * j.win.n + 1));
    if (!w16 || !koff) {
        free(w16), free(koff);
        return kernel_oom(k);
    }
    for (int64_t m = 0; m < j.M; m++) {
        int32_t zp = wz ? get8(wz->data, wz->dtype, wz->numel == 1 ? 0 : m) : 0;
        for (int64_t q = 0; q < K; q++) w16[m * K + q] = (int16_t)(get8(w->data, w->dtype, m * K + q) - zp);
    }
    kernel_offsets(&j.win, j.kprod, koff);
    j.w = w16, j.koff = koff;
    atomic_init(&j.failed, false);
    seam_parallel_for(k->pool, N * j.group * j.tiles, 1, iconv_items, &j);
    free(w16), free(koff);
    return atomic_load(&j.failed) ? kernel_oom(k) : SEAM_STATUS_OK;
}

static seam_status run_conv_integer(seam_kernel *k) {
    return int_conv(k, kernel_in(k, 0), kernel_in(k, 1), kernel_in(k, 2), kernel_in(k, 3), SEAM_DTYPE_INT32, NULL, NULL,
                    NULL, NULL, NULL);
}

static seam_status run_qlinear_conv(seam_kernel *k) {
    const seam_tensor *xs = kernel_in(k, 1), *ws = kernel_in(k, 4), *ys = kernel_in(k, 6), *yz = kernel_in(k, 7);
    if (!xs || !ws || !ys) return kernel_fail(k, "needs x_scale, w_scale and y_scale");
    if (check_scales(k, xs, "x_scale") || check_scales(k, ws, "w_scale") || check_scales(k, ys, "y_scale"))
        return SEAM_STATUS_RUN_FAILED;
    int32_t odt = yz ? yz->dtype : SEAM_DTYPE_UINT8;
    if (!is_8bit(odt)) return kernel_fail(k, "y_zero_point must be int8 or uint8");
    return int_conv(k, kernel_in(k, 0), kernel_in(k, 3), kernel_in(k, 2), kernel_in(k, 5), odt, xs, ws, ys, yz,
                    kernel_in(k, 8));
}

/* ---- checks ---- */

static seam_status check_8bit_inputs(seam_check *c, int32_t i0, int32_t i1) {
    int32_t a = check_in_dtype(c, i0), b = check_in_dtype(c, i1);
    if ((a != SEAM_DTYPE_UNDEFINED && !is_8bit(a)) || (b != SEAM_DTYPE_UNDEFINED && !is_8bit(b)))
        return check_refuse(c, "%s on %s and %s is not supported (int8 and uint8 are)", c->n->op_type,
                            seam_dtype_name(a), seam_dtype_name(b));
    return SEAM_STATUS_OK;
}

static void iconv_state_free(void *p) { cpu_iconv_free(p); }

/* A constant 2-D B (input bi, its zero point zi) packed for imm_fast. */
static void imm_prepare(seam_check *c, int32_t bi, int32_t zi) {
    const ir_tensor *b = cpu_constant_input(c, bi);
    bool has_z = zi < c->n->n_inputs && c->n->inputs[zi] >= 0;
    const ir_tensor *z = has_z ? cpu_constant_input(c, zi) : NULL;
    if (!cpu_iconv_available() || !b || !b->data || !is_8bit(b->dtype) || b->rank != 2 || (has_z && !z) ||
        (z && (z->dtype != b->dtype || (z->numel != 1 && z->numel != b->dims[1]))) || b->dims[0] < 1 ||
        b->dims[1] < 1 || (size_t)b->numel != b->nbytes) /* (any K: a few rows of A take it whatever K is) */
        return;
    cpu_iconv_w *p = cpu_iconv_pack(b->data, b->dtype, z ? z->data : NULL, z ? z->dtype : 0, z ? z->numel : 1, b->dims[1], 1,
                                    b->dims[0], 1, true);
    if (!p) return;
    p->src = b->data, p->zsrc = z ? z->data : NULL;
    *c->state = p;
    *c->free_state = iconv_state_free;
}

static seam_status check_matmul_integer(seam_check *c) {
    seam_status st = check_8bit_inputs(c, 0, 1);
    if (!st) imm_prepare(c, 1, 3);
    return st;
}

static seam_status check_qlinear(seam_check *c) {
    seam_status st = check_8bit_inputs(c, 0, 3);
    if (!st) imm_prepare(c, 3, 5);
    return st;
}

/* A constant weight (input wi, its zero point zi) packed for iconv.c's
 * path once, at session creation; nothing when it does not apply (the run
 * packs then, or takes the plain loop). */
static void iconv_prepare(seam_check *c, int32_t wi, int32_t zi) {
    const ir_tensor *w = cpu_constant_input(c, wi);
    const ir_tensor *z = zi < c->n->n_inputs && c->n->inputs[zi] >= 0 ? cpu_constant_input(c, zi) : NULL;
    bool has_z = zi < c->n->n_inputs && c->n->inputs[zi] >= 0;
    if (!cpu_iconv_available() || !w || !w->data || !is_8bit(w->dtype) || w->rank < 3 || (has_z && !z) ||
        (z && (z->dtype != w->dtype || (z->numel != 1 && z->numel != w->dims[0]))))
        return;
    int64_t group = node_attr_int(c->n, "group", 1), M = w->dims[0], K = cpu_span(w->dims, 1, w->rank);
    bool k1 = cpu_span(w->dims, 2, w->rank) == 1; /* (1x1: a few 1x1 images take it whatever K is) */
    if (group < 1 || M < 1 || M % group || K < 1 || (!cpu_iconv_fits(K) && !k1) || (size_t)w->numel != w->nbytes) return;
    cpu_iconv_w *p = cpu_iconv_pack(w->data, w->dtype, z ? z->data : NULL, z ? z->dtype : 0, z ? z->numel : 1, M, group, K,
                                    cpu_span(w->dims, 2, w->rank), false);
    if (!p) return;
    p->src = w->data, p->zsrc = z ? z->data : NULL;
    *c->state = p;
    *c->free_state = iconv_state_free;
}

/* The convolutions also refuse an auto_pad ONNX does not define, as Conv does. */
static seam_status check_conv_integer(seam_check *c) {
    seam_status st = check_8bit_inputs(c, 0, 1);
    if (!st) st = check_auto_pad(c);
    if (!st) iconv_prepare(c, 1, 3);
    return st;
}

static seam_status check_qlinear_conv(seam_check *c) {
    seam_status st = check_8bit_inputs(c, 0, 3);
    if (!st) st = check_auto_pad(c);
    if (!st) iconv_prepare(c, 3, 5);
    return st;
}

static seam_status check_quantize(seam_check *c) {
    if (node_attr_int(c->n, "block_size", 0) != 0) return check_refuse(c, "blocked quantization is not supported");
    int64_t odt = node_attr_int(c->n, "output_dtype", 0);
    if (odt != 0 && !quant_out_ok((int32_t)odt))
        return check_refuse(c, "output_dtype %lld is not supported", (long long)odt);
    int32_t dt = check_in_dtype(c, 0), zdt = check_in_dtype(c, 2);
    if (dt != SEAM_DTYPE_UNDEFINED && !cpu_is_float(dt) && dt != SEAM_DTYPE_INT32)
        return check_refuse(c, "QuantizeLinear on %s is not supported", seam_dtype_name(dt));
    if (zdt != SEAM_DTYPE_UNDEFINED && !quant_out_ok(zdt))
        return check_refuse(c, "QuantizeLinear to %s is not supported", seam_dtype_name(zdt));
    c->qadd = true; /* (run_qadd) */
    return SEAM_STATUS_OK;
}

static seam_status check_dequantize(seam_check *c) {
    if (node_attr_int(c->n, "block_size", 0) != 0) return check_refuse(c, "blocked quantization is not supported");
    int32_t dt = check_in_dtype(c, 0);
    if (dt != SEAM_DTYPE_UNDEFINED && !cpu_is_int(dt))
        return check_refuse(c, "DequantizeLinear on %s is not supported", seam_dtype_name(dt));
    return SEAM_STATUS_OK;
}

const seam_cpu_binding seam_cpu_quant[] = {
    {"", "QuantizeLinear", 10, {run_quantize, check_quantize}},
    {"", "DequantizeLinear", 10, {run_dequantize, check_dequantize}},
    {"", "DynamicQuantizeLinear", 11, {run_dynamic_quantize, check_float_input}},
    {"", "MatMulInteger", 10, {run_matmul_integer, check_matmul_integer}},
    {"", "QLinearMatMul", 10, {run_qlinear_matmul, check_qlinear}},
    {"", "ConvInteger", 10, {run_conv_integer, check_conv_integer}},
    {"", "QLinearConv", 10, {run_qlinear_conv, check_qlinear_conv}},
};
const size_t seam_cpu_quant_count = sizeof(seam_cpu_quant) / sizeof(seam_cpu_quant[0]);
