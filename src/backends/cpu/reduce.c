/* CPU kernels: the Reduce* family, ArgMax and ArgMin.
 *
 * The input is viewed as [outer, len, inner] with the reduced axes in the
 * middle: when they are adjacent (the usual case: the last axis, or the
 * spatial axes) no copy is made; otherwise the input is first transposed
 * into that order. The work is split into units of (outer index, block of
 * up to COLS inner columns), so that a reduction over a leading axis still
 * reads memory row by row. Floats accumulate in double; integer sums,
 * products and extrema stay in int64, exact (wrapping like the C types). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu.h"

/* Inner columns reduced together by one unit of work. */
#define COLS 64

typedef enum { R_SUM, R_MEAN, R_MAX, R_MIN, R_PROD, R_SUMSQ, R_L1, R_L2, R_LOGSUM, R_LOGSUMEXP } rop;

static const struct {
    const char *name;
    rop op;
} rops[] = {
    {"ReduceSum", R_SUM}, {"ReduceMean", R_MEAN}, {"ReduceMax", R_MAX}, {"ReduceMin", R_MIN},
    {"ReduceProd", R_PROD}, {"ReduceSumSquare", R_SUMSQ}, {"ReduceL1", R_L1}, {"ReduceL2", R_L2},
    {"ReduceLogSum", R_LOGSUM}, {"ReduceLogSumExp", R_LOGSUMEXP},
};

/* Which axes are reduced; the axes moved from an attribute to input 1 in
 * opset 13 (ReduceSum) and 18 (the others). Returns false on a bad axis;
 * *noop when empty axes mean "do nothing". */
static bool reduced_axes(seam_kernel *k, const seam_tensor *x, bool from_input, bool *red, bool *noop) {
    int64_t axes[SEAM_MAX_RANK];
    int32_t na = 0;
    *noop = false;
    if (from_input) {
        const seam_tensor *a = kernel_in(k, 1);
        if (a && a->numel > 0) {
            na = cpu_read_ints(a, axes, SEAM_MAX_RANK);
            if (na < 0) return false;
        }
    } else {
        const int64_t *a;
        na = node_attr_ints(k->n, "axes", &a);
        if (na > SEAM_MAX_RANK) return false;
        for (int32_t i = 0; i < na; i++) axes[i] = a[i];
        if (na < 0) na = 0;
    }
    for (int32_t d = 0; d < x->rank; d++) red[d] = na == 0;
    if (na == 0 && node_attr_int(k->n, "noop_with_empty_axes", 0)) {
        for (int32_t d = 0; d < x->rank; d++) red[d] = false;
        *noop = true;
    }
    for (int32_t i = 0; i < na; i++) {
        int32_t a = op_axis(axes[i], x->rank);
        if (a < 0) return false;
        red[a] = true;
    }
    return true;
}

static int64_t int_lowest(int32_t dt) {
    switch (dt) {
    case SEAM_DTYPE_INT8: return INT8_MIN;
    case SEAM_DTYPE_INT16: return INT16_MIN;
    case SEAM_DTYPE_INT32: return INT32_MIN;
    case SEAM_DTYPE_INT64: return INT64_MIN;
    default: return 0; /* unsigned, bool */
    }
}

static int64_t int_highest(int32_t dt) {
    switch (dt) {
    case SEAM_DTYPE_INT8: return INT8_MAX;
    case SEAM_DTYPE_UINT8: return UINT8_MAX;
    case SEAM_DTYPE_INT16: return INT16_MAX;
    case SEAM_DTYPE_UINT16: return UINT16_MAX;
    case SEAM_DTYPE_INT32: return INT32_MAX;
    case SEAM_DTYPE_UINT32: return UINT32_MAX;
    case SEAM_DTYPE_INT64: return INT64_MAX;
    case SEAM_DTYPE_UINT64: return -1; /* all ones: stored as UINT64_MAX */
    default: return 1; /* bool */
    }
}

/* A reduction over no values (the spec since opset 18): 0 for the sums,
 * 1 for the product, the lowest / highest value of the type for max / min,
 * -inf for the log sums and NaN for the mean (undefined; numpy's value). */
static void fill_empty(seam_tensor *y, rop op) {
    int32_t dt = y->dtype;
    double v = 0;
    int64_t iv = 0;
    switch (op) {
    case R_PROD: v = 1, iv = 1; break;
    case R_MEAN: v = NAN; break;
    case R_MAX: case R_LOGSUM: case R_LOGSUMEXP: v = -INFINITY, iv = int_lowest(dt); break;
    case R_MIN: v = INFINITY, iv = int_highest(dt); break;
    default: break;
    }
    bool fl = cpu_is_float(dt);
    for (int64_t i = 0; i < y->numel; i++) {
        if (fl) cpu_set(y->data, dt, i, v);
        else cpu_set_i64(y->data, dt, i, iv);
    }
}

typedef struct red_job {
    rop op;
    int32_t dt;
    bool in_int;        /* exact int64 accumulation */
    const void *x;      /* [outer, len, inner], possibly a transposed copy */
    void *y;            /* [outer, inner] */
    int64_t len, inner, blocks;
} red_job;

/* a < b, as unsigned for uint64 */
static inline bool ilt(int64_t a, int64_t b, bool u) { return u ? (uint64_t)a < (uint64_t)b : a < b; }

/* The LayerNorm case: a contiguous float32 row. Eight partial sums let the
 * loop vectorize (a single double accumulator is a serial chain). */
CPU_HOT static double row_sum_f32(const float *p, int64_t n) {
    double s[8] = {0, 0, 0, 0, 0, 0, 0, 0}, t = 0;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int32_t l = 0; l < 8; l++) s[l] += (double)p[i + l];
    for (; i < n; i++) t += (double)p[i];
    return ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7])) + t;
}

/* w float32 columns summed down len rows `stride` apart. */
CPU_HOT static void col_sum_f32(const float *p, int64_t len, int64_t stride, int64_t w, double *acc) {
    for (int64_t c = 0; c < w; c++) acc[c] = 0;
    for (int64_t q = 0; q < len; q++) {
        const float *r = p + q * stride;
        for (int64_t c = 0; c < w; c++) acc[c] += (double)r[c];
    }
}

/* Float32 max or min of w columns. NaN is tracked apart so that the
 * compare loop vectorizes; a contiguous row is read eight lanes at a time. */
CPU_HOT static void col_ext_f32(const float *p, int64_t len, int64_t stride, int64_t w, bool is_max, double *acc) {
    float m[COLS];
    int32_t nan[COLS];
    if (stride == 1 && w == 1) {
        float l8[8];
        int32_t n8[8];
        for (int32_t l = 0; l < 8; l++) l8[l] = is_max ? -INFINITY : INFINITY, n8[l] = 0;
        int64_t i = 0;
        if (is_max) {
            for (; i + 8 <= len; i += 8)
                for (int32_t l = 0; l < 8; l++) {
                    float v = p[i + l];
                    l8[l] = v > l8[l] ? v : l8[l];
                    n8[l] |= v != v;
                }
        } else {
            for (; i + 8 <= len; i += 8)
                for (int32_t l = 0; l < 8; l++) {
                    float v = p[i + l];
                    l8[l] = v < l8[l] ? v : l8[l];
                    n8[l] |= v != v;
                }
        }
        for (; i < len; i++) {
            float v = p[i];
            l8[0] = is_max ? (v > l8[0] ? v : l8[0]) : (v < l8[0] ? v : l8[0]);
            n8[0] |= v != v;
        }
        float r = l8[0];
        int32_t any = n8[0];
        for (int32_t l = 1; l < 8; l++) {
            r = is_max ? (l8[l] > r ? l8[l] : r) : (l8[l] < r ? l8[l] : r);
            any |= n8[l];
        }
        acc[0] = any ? NAN : r;
        return;
    }
    for (int64_t c = 0; c < w; c++) m[c] = is_max ? -INFINITY : INFINITY, nan[c] = 0;
    for (int64_t q = 0; q < len; q++) {
        const float *r = p + q * stride;
        if (is_max)
            for (int64_t c = 0; c < w; c++) m[c] = r[c] > m[c] ? r[c] : m[c], nan[c] |= r[c] != r[c];
        else
            for (int64_t c = 0; c < w; c++) m[c] = r[c] < m[c] ? r[c] : m[c], nan[c] |= r[c] != r[c];
    }
    for (int64_t c = 0; c < w; c++) acc[c] = nan[c] ? NAN : m[c];
}

/* Every element of the unit's rows: v is element (q, c). */
#define EACH_F(stmt)                                        \
    for (int64_t q = 0; q < len; q++)                       \
        for (int64_t c = 0; c < w; c++) {                   \
            double v = cpu_ld(x, dt, base + q * inner + c);     \
            stmt;                                           \
        }

/* The general float path: w columns from `base`, results in acc. */
static void float_cols(const red_job *j, int64_t base, int64_t w, double *acc) {
    const void *x = j->x;
    int32_t dt = j->dt;
    int64_t len = j->len, inner = j->inner;
    if (j->op == R_SUM || j->op == R_MEAN) {
        if (dt == SEAM_DTYPE_FLOAT32 && inner == 1) {
            acc[0] = row_sum_f32((const float *)x + base, len);
        } else if (dt == SEAM_DTYPE_FLOAT32) {
            col_sum_f32((const float *)x + base, len, inner, w, acc);
        } else {
            for (int64_t c = 0; c < w; c++) acc[c] = 0;
            EACH_F(acc[c] += v);
        }
        if (j->op == R_MEAN)
            for (int64_t c = 0; c < w; c++) acc[c] /= (double)len;
        return;
    }
    if (dt == SEAM_DTYPE_FLOAT32 && (j->op == R_MAX || j->op == R_MIN)) {
        col_ext_f32((const float *)x + base, len, inner, w, j->op == R_MAX, acc);
        return;
    }
    double init = j->op == R_PROD ? 1 : j->op == R_MAX ? -INFINITY : j->op == R_MIN ? INFINITY : 0;
    for (int64_t c = 0; c < w; c++) acc[c] = init;
    switch (j->op) {
    case R_MAX: EACH_F(if (v > acc[c] || v != v) acc[c] = v); break; /* NaN sticks */
    case R_MIN: EACH_F(if (v < acc[c] || v != v) acc[c] = v); break;
    case R_PROD: EACH_F(acc[c] *= v); break;
    case R_SUMSQ: case R_L2: EACH_F(acc[c] += v * v); break;
    case R_L1: EACH_F(acc[c] += fabs(v)); break;
    case R_LOGSUM: EACH_F(acc[c] += v); break;
    case R_LOGSUMEXP: {
        /* shifted by the max so exp does not overflow */
        double mx[COLS];
        for (int64_t c = 0; c < w; c++) mx[c] = -INFINITY;
        EACH_F(if (v > mx[c]) mx[c] = v);
        for (int64_t c = 0; c < w; c++) mx[c] = isfinite(mx[c]) ? mx[c] : 0;
        EACH_F(acc[c] += exp(v - mx[c]));
        for (int64_t c = 0; c < w; c++) acc[c] = mx[c] + log(acc[c]);
        return;
    }
    default: break;
    }
    for (int64_t c = 0; c < w; c++) {
        if (j->op == R_L2) acc[c] = sqrt(acc[c]);
        else if (j->op == R_LOGSUM) acc[c] = log(acc[c]);
    }
}

#define EACH_I(stmt)                                                   \
    for (int64_t q = 0; q < len; q++)                                  \
        for (int64_t c = 0; c < w; c++) {                              \
            int64_t v = cpu_get_i64(x, dt, base + q * inner + c);      \
            stmt;                                                      \
        }

/* Integer sums, products and extrema, exact in int64 (wrapping). */
static void int_cols(const red_job *j, int64_t base, int64_t w, int64_t *acc) {
    const void *x = j->x;
    int32_t dt = j->dt;
    int64_t len = j->len, inner = j->inner;
    bool u = dt == SEAM_DTYPE_UINT64;
    if (j->op == R_MAX || j->op == R_MIN) {
        for (int64_t c = 0; c < w; c++) acc[c] = cpu_get_i64(x, dt, base + c);
        if (j->op == R_MAX) {
            EACH_I(if (ilt(acc[c], v, u)) acc[c] = v);
        } else {
            EACH_I(if (ilt(v, acc[c], u)) acc[c] = v);
        }
        return;
    }
    for (int64_t c = 0; c < w; c++) acc[c] = j->op == R_PROD ? 1 : 0;
    switch (j->op) {
    case R_PROD: EACH_I(acc[c] = (int64_t)((uint64_t)acc[c] * (uint64_t)v)); break;
    case R_SUMSQ: EACH_I(acc[c] = (int64_t)((uint64_t)acc[c] + (uint64_t)v * (uint64_t)v)); break;
    case R_L1: EACH_I(acc[c] = (int64_t)((uint64_t)acc[c] + (u || v >= 0 ? (uint64_t)v : 0 - (uint64_t)v))); break;
    default: EACH_I(acc[c] = (int64_t)((uint64_t)acc[c] + (uint64_t)v)); break;
    }
    if (j->op == R_MEAN) /* truncates toward zero, as numpy's mean cast back */
        for (int64_t c = 0; c < w; c++)
            acc[c] = u ? (int64_t)((uint64_t)acc[c] / (uint64_t)len) : acc[c] / len;
}

static void reduce_units(void *arg, int64_t begin, int64_t end) {
    const red_job *j = arg;
    for (int64_t unit = begin; unit < end; unit++) {
        int64_t o = unit / j->blocks, c0 = (unit % j->blocks) * COLS;
        int64_t w = j->inner - c0 < COLS ? j->inner - c0 : COLS;
        int64_t base = o * j->len * j->inner + c0, at = o * j->inner + c0;
        if (j->in_int) {
            int64_t acc[COLS];
            int_cols(j, base, w, acc);
            for (int64_t c = 0; c < w; c++) cpu_set_i64(j->y, j->dt, at + c, acc[c]);
            continue;
        }
        double acc[COLS];
        float_cols(j, base, w, acc);
        if (j->dt == SEAM_DTYPE_FLOAT32)
            for (int64_t c = 0; c < w; c++) ((float *)j->y)[at + c] = (float)acc[c];
        else
            for (int64_t c = 0; c < w; c++) cpu_set(j->y, j->dt, at + c, acc[c]);
    }
}

/* Rows [begin, end) of a float32 reduction over the last axis (inner 1):
 * the same arithmetic as float_cols' row paths, without the per-unit
 * bookkeeping that dominated short rows (a detector's 27000 rows of 4). */
static void reduce_rows_f32(void *arg, int64_t begin, int64_t end) {
    const red_job *j = arg;
    const float *x = j->x;
    float *y = j->y;
    int64_t len = j->len;
    bool is_max = j->op == R_MAX;
    for (int64_t o = begin; o < end; o++) {
        const float *p = x + o * len;
        if (j->op == R_SUM || j->op == R_MEAN) {
            double a = row_sum_f32(p, len);
            y[o] = (float)(j->op == R_MEAN ? a / (double)len : a);
            continue;
        }
        float m = is_max ? -INFINITY : INFINITY;
        int32_t nan = 0;
        for (int64_t q = 0; q < len; q++) {
            float v = p[q];
            m = is_max ? (v > m ? v : m) : (v < m ? v : m);
            nan |= v != v;
        }
        y[o] = nan ? NAN : m;
    }
}

/* Long float32 rows (a reduction of a whole tensor to one number: the
 * detector's 27000 x 4 boxes' max) in chunks of RED_CHUNK elements over the
 * pool, each chunk's max, min or sum kept and the chunks combined in order:
 * the same result whatever the thread count. */
#define RED_CHUNK 16384
typedef struct chunk_job {
    const red_job *j;
    int64_t chunks; /* per row */
    double *part;   /* [rows * chunks] */
    uint8_t *nan;   /* [rows * chunks] */
} chunk_job;

CPU_HOT static void reduce_chunks_f32(void *arg, int64_t begin, int64_t end) {
    const chunk_job *c = arg;
    const red_job *j = c->j;
    bool is_max = j->op == R_MAX, ext = j->op == R_MAX || j->op == R_MIN;
    for (int64_t u = begin; u < end; u++) {
        int64_t row = u / c->chunks, q0 = (u % c->chunks) * RED_CHUNK;
        int64_t n = j->len - q0 < RED_CHUNK ? j->len - q0 : RED_CHUNK;
        const float *p = (const float *)j->x + row * j->len + q0;
        if (!ext) {
            c->part[u] = row_sum_f32(p, n), c->nan[u] = 0;
            continue;
        }
        float m = is_max ? -INFINITY : INFINITY;
        int32_t any = 0;
        int64_t i = 0;
#if defined(__GNUC__) && !defined(__clang__)
        /* two vectors of eight lanes (GCC leaves scalar lanes of a max as they are) */
        typedef float v8 __attribute__((vector_size(32)));
        typedef int32_t v8i __attribute__((vector_size(32)));
        v8 acc[2];
        acc[0] = (v8){0, 0, 0, 0, 0, 0, 0, 0} + m, acc[1] = acc[0];
        v8i nl[2] = {{0}, {0}};
        for (; i + 16 <= n; i += 16)
            for (int h = 0; h < 2; h++) {
                v8 v;
                memcpy(&v, p + i + 8 * h, sizeof(v));
                v8i sel = is_max ? v > acc[h] : v < acc[h];
                acc[h] = (v8)(((v8i)v & sel) | ((v8i)acc[h] & ~sel));
                nl[h] |= v != v;
            }
        for (int h = 0; h < 2; h++)
            for (int k = 0; k < 8; k++) m = is_max ? (acc[h][k] > m ? acc[h][k] : m) : (acc[h][k] < m ? acc[h][k] : m), any |= nl[h][k];
#endif
        for (; i < n; i++) m = is_max ? (p[i] > m ? p[i] : m) : (p[i] < m ? p[i] : m), any |= p[i] != p[i];
        c->part[u] = m, c->nan[u] = (uint8_t)(any != 0);
    }
}

static seam_status reduce_long_rows(seam_kernel *k, const red_job *j, int64_t rows) {
    chunk_job c = {j, (j->len + RED_CHUNK - 1) / RED_CHUNK, NULL, NULL};
    c.part = malloc((sizeof(double) + 1) * (size_t)(rows * c.chunks) + 1);
    if (!c.part) return kernel_oom(k);
    c.nan = (uint8_t *)(c.part + rows * c.chunks);
    seam_parallel_for(k->pool, rows * c.chunks, 1, reduce_chunks_f32, &c);
    bool is_max = j->op == R_MAX, ext = j->op == R_MAX || j->op == R_MIN;
    for (int64_t r = 0; r < rows; r++) {
        double a = ext ? (is_max ? -INFINITY : INFINITY) : 0;
        bool nan = false;
        for (int64_t q = 0; q < c.chunks; q++) {
            double v = c.part[r * c.chunks + q];
            nan |= c.nan[r * c.chunks + q] != 0;
            a = !ext ? a + v : is_max ? (v > a ? v : a) : (v < a ? v : a);
        }
        if (j->op == R_MEAN) a /= (double)j->len;
        ((float *)j->y)[r] = nan ? NAN : (float)a;
    }
    free(c.part);
    return SEAM_STATUS_OK;
}

/* Moves the reduced axes of x behind the kept ones (a copy when they are
 * not already together). Sets outer/len/inner and *data (x's, or a copy
 * the caller frees when it differs). x is not empty. */
static seam_status group_axes(seam_kernel *k, const seam_tensor *x, const bool *red, const void **data,
                              int64_t *outer, int64_t *len, int64_t *inner) {
    int32_t first = -1, last = -1;
    for (int32_t d = 0; d < x->rank; d++)
        if (red[d]) {
            if (first < 0) first = d;
            last = d;
        }
    bool together = true;
    for (int32_t d = first; first >= 0 && d <= last; d++) together &= red[d];
    *data = x->data;
    if (first < 0) {
        *outer = x->numel, *len = 1, *inner = 1;
        return SEAM_STATUS_OK;
    }
    if (together) {
        *outer = cpu_span(x->dims, 0, first);
        *len = cpu_span(x->dims, first, last + 1);
        *inner = cpu_span(x->dims, last + 1, x->rank);
        return SEAM_STATUS_OK;
    }
    /* transpose: kept axes first, then reduced ones */
    int32_t perm[SEAM_MAX_RANK], r = 0;
    for (int32_t d = 0; d < x->rank; d++)
        if (!red[d]) perm[r++] = d;
    int32_t n_kept = r;
    for (int32_t d = 0; d < x->rank; d++)
        if (red[d]) perm[r++] = d;
    size_t es = seam_dtype_size(x->dtype);
    void *buf = malloc(x->nbytes ? x->nbytes : 1);
    if (!buf) return kernel_oom(k);
    int64_t st[SEAM_MAX_RANK], idx[SEAM_MAX_RANK] = {0}, pd[SEAM_MAX_RANK], off = 0;
    cpu_strides(x->rank, x->dims, st);
    for (int32_t d = 0; d < x->rank; d++) pd[d] = x->dims[perm[d]];
    for (int64_t i = 0; i < x->numel; i++) {
        cpu_copy_elem(buf, i, x->data, off, es);
        for (int32_t d = x->rank - 1; d >= 0; d--) { /* odometer over the permuted shape */
            off += st[perm[d]];
            if (++idx[d] < pd[d]) break;
            off -= st[perm[d]] * pd[d];
            idx[d] = 0;
        }
    }
    *data = buf;
    *outer = cpu_span(pd, 0, n_kept), *len = cpu_span(pd, n_kept, x->rank), *inner = 1;
    return SEAM_STATUS_OK;
}

static seam_status run_reduce(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (!x) return kernel_fail(k, "needs an input");
    rop op = R_SUM;
    for (size_t i = 0; i < sizeof(rops) / sizeof(rops[0]); i++)
        if (strcmp(k->n->op_type, rops[i].name) == 0) op = rops[i].op;
    bool from_input = k->n->opset >= (op == R_SUM ? 13 : 18), red[SEAM_MAX_RANK], noop;
    if (!reduced_axes(k, x, from_input, red, &noop))
        return kernel_fail(k, "axes must be integers in [-%d, %d)", x->rank, x->rank);
    bool keep = node_attr_int(k->n, "keepdims", 1) != 0;
    int64_t dims[SEAM_MAX_RANK];
    int32_t r = 0;
    for (int32_t d = 0; d < x->rank; d++) {
        if (!red[d]) dims[r++] = x->dims[d];
        else if (keep) dims[r++] = 1;
    }
    int64_t n_out = seam_shape_numel(dims, r);
    if (n_out < 0 || (x->numel == 0 && n_out > MAX_DATA_NUMEL))
        return kernel_fail(k, "the result of reducing an empty input is too large");
    seam_tensor *y = kernel_out(k, 0, x->dtype, r, dims);
    if (!y) return kernel_oom(k);
    if (noop) { /* noop_with_empty_axes: the input as is */
        if (x->nbytes && y->data != x->data) memcpy(y->data, x->data, x->nbytes);
        return SEAM_STATUS_OK;
    }
    if (x->numel == 0) { /* also keeps the spans below from overflowing: other dims may be huge */
        fill_empty(y, op);
        return SEAM_STATUS_OK;
    }
    red_job j = {op, x->dtype, false, NULL, y->data, 0, 0, 0};
    j.in_int = !cpu_is_float(x->dtype) && op != R_L2 && op != R_LOGSUM && op != R_LOGSUMEXP;
    int64_t outer = 0;
    seam_status st = group_axes(k, x, red, &j.x, &outer, &j.len, &j.inner);
    if (st) return st;
    bool rows_f32 = j.inner == 1 && x->dtype == SEAM_DTYPE_FLOAT32 && (op == R_MAX || op == R_MIN || op == R_SUM || op == R_MEAN);
    if (rows_f32 && j.len >= 4 * RED_CHUNK && outer < 4) {
        st = reduce_long_rows(k, &j, outer);
        if (j.x != x->data) free((void *)j.x);
        return st;
    }
    if (rows_f32 && j.len <= 64) {
        seam_parallel_for(k->pool, outer, 16384 / j.len + 1, reduce_rows_f32, &j);
        if (j.x != x->data) free((void *)j.x);
        return SEAM_STATUS_OK;
    }
    j.blocks = (j.inner + COLS - 1) / COLS;
    int64_t per_unit = j.len * (j.inner < COLS ? j.inner : COLS);
    seam_parallel_for(k->pool, outer * j.blocks, 16384 / per_unit + 1, reduce_units, &j);
    if (j.x != x->data) free((void *)j.x);
    return SEAM_STATUS_OK;
}

/* ---- ArgMax, ArgMin ---- */

typedef struct arg_job {
    const seam_tensor *x;
    int64_t *y;
    int64_t len, inner;
    bool is_max, last;
} arg_job;

/* Whether v replaces the best so far b. NaN counts as the extreme either
 * way (numpy returns the first NaN); select_last_index takes the last of
 * equal values. */
static inline bool arg_better_f(double v, double b, bool is_max, bool last) {
    if (b != b) return last && v != v;
    if (v != v) return true;
    if (v == b) return last;
    return is_max ? v > b : v < b;
}

static void arg_rows(void *arg, int64_t begin, int64_t end) {
    const arg_job *j = arg;
    int32_t dt = j->x->dtype;
    const void *x = j->x->data;
    bool fl = cpu_is_float(dt), u = dt == SEAM_DTYPE_UINT64;
    for (int64_t r = begin; r < end; r++) {
        int64_t base = (r / j->inner) * j->len * j->inner + r % j->inner, best = 0;
        if (fl) {
            double b = cpu_ld(x, dt, base);
            for (int64_t q = 1; q < j->len; q++) {
                double v = cpu_ld(x, dt, base + q * j->inner);
                if (arg_better_f(v, b, j->is_max, j->last)) b = v, best = q;
            }
        } else {
            int64_t b = cpu_get_i64(x, dt, base);
            for (int64_t q = 1; q < j->len; q++) {
                int64_t v = cpu_get_i64(x, dt, base + q * j->inner);
                bool better = v == b ? j->last : j->is_max ? ilt(b, v, u) : ilt(v, b, u);
                if (better) b = v, best = q;
            }
        }
        j->y[r] = best;
    }
}

static seam_status run_arg(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (!x) return kernel_fail(k, "needs an input");
    int64_t axis_attr = node_attr_int(k->n, "axis", 0);
    int32_t axis = op_axis(axis_attr, x->rank);
    if (axis < 0) return kernel_fail(k, "axis %lld is out of range for rank %d", (long long)axis_attr, x->rank);
    bool keep = node_attr_int(k->n, "keepdims", 1) != 0;
    int64_t dims[SEAM_MAX_RANK];
    int32_t r = 0;
    for (int32_t d = 0; d < x->rank; d++) {
        if (d != axis) dims[r++] = x->dims[d];
        else if (keep) dims[r++] = 1;
    }
    int64_t n_out = seam_shape_numel(dims, r);
    if (n_out < 0) return kernel_fail(k, "the result is too large");
    if (x->numel == 0 && n_out > 0) return kernel_fail(k, "%s over an empty axis has no value", k->n->op_type);
    seam_tensor *y = kernel_out(k, 0, SEAM_DTYPE_INT64, r, dims);
    if (!y) return kernel_oom(k);
    if (n_out == 0) return SEAM_STATUS_OK;
    arg_job j = {x, y->data, x->dims[axis], cpu_span(x->dims, axis + 1, x->rank), false, false};
    j.is_max = strcmp(k->n->op_type, "ArgMax") == 0;
    j.last = node_attr_int(k->n, "select_last_index", 0) != 0;
    seam_parallel_for(k->pool, n_out, 16384 / j.len + 1, arg_rows, &j);
    return SEAM_STATUS_OK;
}

#define RED {run_reduce, check_real_input}

const seam_cpu_binding seam_cpu_reduce[] = {
    {"", "ReduceSum", 1, RED}, {"", "ReduceMean", 1, RED}, {"", "ReduceMax", 1, RED}, {"", "ReduceMin", 1, RED},
    {"", "ReduceProd", 1, RED}, {"", "ReduceSumSquare", 1, RED}, {"", "ReduceL1", 1, RED}, {"", "ReduceL2", 1, RED},
    {"", "ReduceLogSum", 1, RED}, {"", "ReduceLogSumExp", 1, RED},
    {"", "ArgMax", 1, {run_arg, check_real_input}}, {"", "ArgMin", 1, {run_arg, check_real_input}},
};
const size_t seam_cpu_reduce_count = sizeof(seam_cpu_reduce) / sizeof(seam_cpu_reduce[0]);
