/* CPU kernels: TopK, NonZero (nonzero.c), Where, CumSum, OneHot, Range, Unique,
 * NonMaxSuppression. Several have outputs whose size depends on the data;
 * they size them here and kernel_out allocates at run time.
 *
 * Inputs may be hostile: a tensor with a zero dim may have other dims up
 * to 2^40, so products of dims are only formed once the element count is
 * known to be non-zero (or the product is checked), and data-sized
 * outputs are refused above MAX_DATA_NUMEL elements. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu.h"

/* Kernels here read elements as numbers (cpu_is_real): strings and
 * complex numbers would be copied as raw structs or misread. */

/* ---- TopK ---- */

typedef struct topk_item {
    double v;   /* floats */
    int64_t iv; /* integers, exact */
    int64_t i;
} topk_item;

typedef int (*topk_cmp)(const void *, const void *);

/* Orders: the first element ranks first. NaN counts as the largest value;
 * ties go to the lower index, as the spec's tests expect. */
static int by_index(const topk_item *x, const topk_item *y) { return x->i < y->i ? -1 : x->i > y->i; }

static int cmp_largest(const void *a, const void *b) {
    const topk_item *x = a, *y = b;
    bool nx = x->v != x->v, ny = y->v != y->v;
    if (nx || ny) return nx && ny ? by_index(x, y) : nx ? -1 : 1;
    if (x->v != y->v) return x->v > y->v ? -1 : 1;
    return by_index(x, y);
}

static int cmp_smallest(const void *a, const void *b) {
    const topk_item *x = a, *y = b;
    bool nx = x->v != x->v, ny = y->v != y->v;
    if (nx || ny) return nx && ny ? by_index(x, y) : nx ? 1 : -1;
    if (x->v != y->v) return x->v < y->v ? -1 : 1;
    return by_index(x, y);
}

static int cmp_largest_i(const void *a, const void *b) {
    const topk_item *x = a, *y = b;
    if (x->iv != y->iv) return x->iv > y->iv ? -1 : 1;
    return by_index(x, y);
}

static int cmp_smallest_i(const void *a, const void *b) {
    const topk_item *x = a, *y = b;
    if (x->iv != y->iv) return x->iv < y->iv ? -1 : 1;
    return by_index(x, y);
}

/* uint64 compares as unsigned: its values are stored offset by 2^63. */
static int64_t u64_key(uint64_t v) { return (int64_t)(v ^ ((uint64_t)1 << 63)); }

/* Keeps the best k of v[0..n) in v[0..k), sorted: a heap of the k best so
 * far with the worst on top, so a long row with a small k costs n log k. */
static void select_best(topk_item *v, int64_t n, int64_t k, topk_cmp cmp) {
    if (k * 4 >= n) {
        qsort(v, (size_t)n, sizeof(topk_item), cmp);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t at;
        if (i < k) { /* grow: sift up */
            at = i;
            topk_item t = v[i];
            while (at > 0 && cmp(&v[(at - 1) / 2], &t) < 0) {
                v[at] = v[(at - 1) / 2];
                at = (at - 1) / 2;
            }
            v[at] = t;
            continue;
        }
        if (cmp(&v[i], &v[0]) >= 0) continue; /* not better than the worst kept */
        topk_item t = v[i];
        at = 0;
        for (;;) { /* replace the top: sift down */
            int64_t c = 2 * at + 1;
            if (c >= k) break;
            if (c + 1 < k && cmp(&v[c + 1], &v[c]) > 0) c++;
            if (cmp(&v[c], &t) <= 0) break;
            v[at] = v[c];
            at = c;
        }
        v[at] = t;
    }
    qsort(v, (size_t)k, sizeof(topk_item), cmp);
}

/* float32 rows, the common case, sort 64-bit keys instead of calling
 * qsort's comparator: the high half is the value mapped to an unsigned
 * integer in the requested order (-0 as +0; NaN, made positive, above
 * +inf, as cmp_largest and cmp_smallest rank it), the low half the index,
 * so that ascending keys are the result's order, ties by lower index. */
static uint64_t topk_key(float f, bool largest, uint32_t q) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if (f != f) u = 0x7fc00000u;
    else if (u == 0x80000000u) u = 0;
    u = u & 0x80000000u ? ~u : u | 0x80000000u; /* ascending with the value */
    if (largest) u = ~u;
    return (uint64_t)u << 32 | q;
}

/* Sorts keys ascending, stably, from bit `from` up (32: by value alone,
 * for a row whose low halves, the indices, are still ascending; 0: the
 * whole key): passes of 8 bits through tmp, a pass skipped where every
 * key has the same byte. Returns the array holding the result (keys or
 * tmp). */
static uint64_t *radix_sort(uint64_t *keys, uint64_t *tmp, int64_t n, int32_t from) {
    for (int32_t shift = from; shift < 64; shift += 8) {
        int64_t count[256] = {0};
        for (int64_t i = 0; i < n; i++) count[(keys[i] >> shift) & 255]++;
        if (count[(keys[0] >> shift) & 255] == n) continue;
        int64_t at = 0;
        for (int32_t d = 0; d < 256; d++) {
            int64_t c = count[d];
            count[d] = at, at += c;
        }
        for (int64_t i = 0; i < n; i++) tmp[count[(keys[i] >> shift) & 255]++] = keys[i];
        uint64_t *t = keys;
        keys = tmp, tmp = t;
    }
    return keys;
}

/* The k smallest of keys[0..n) in keys[0..k), in any order: a max-heap of
 * the k best so far, a row of n costing n compares plus log k per key
 * that enters. */
static void heap_smallest(uint64_t *keys, int64_t n, int64_t k) {
    for (int64_t i = 1; i < k; i++) { /* grow: sift up */
        uint64_t t = keys[i];
        int64_t at = i;
        while (at > 0 && keys[(at - 1) / 2] < t) keys[at] = keys[(at - 1) / 2], at = (at - 1) / 2;
        keys[at] = t;
    }
    for (int64_t i = k; i < n; i++) {
        uint64_t t = keys[i];
        if (t >= keys[0]) continue;
        int64_t at = 0;
        for (;;) { /* replace the top: sift down */
            int64_t c = 2 * at + 1;
            if (c >= k) break;
            if (c + 1 < k && keys[c + 1] > keys[c]) c++;
            if (keys[c] <= t) break;
            keys[at] = keys[c], at = c;
        }
        keys[at] = t;
    }
}

typedef struct topk_job {
    const seam_tensor *x;
    seam_tensor *y, *ind;
    int64_t len, inner, kk;
    topk_cmp cmp;
    bool oom;
} topk_job;

CPU_HOT static void topk_rows_f32(topk_job *j, int64_t begin, int64_t end) {
    const float *x = j->x->data;
    float *y = j->y->data;
    int64_t *ind = j->ind ? j->ind->data : NULL, len = j->len, inner = j->inner, kk = j->kk;
    bool largest = j->cmp == cmp_largest;
    uint64_t *keys = malloc(sizeof(uint64_t) * 2 * (size_t)len);
    if (!keys) {
        __atomic_store_n(&j->oom, true, __ATOMIC_RELAXED);
        return;
    }
    for (int64_t r = begin; r < end; r++) {
        int64_t o = r / inner, i = r % inner, base = o * len * inner + i;
        for (int64_t q = 0; q < len; q++) keys[q] = topk_key(x[base + q * inner], largest, (uint32_t)q);
        uint64_t *sorted;
        if (kk * 4 >= len) {
            sorted = radix_sort(keys, keys + len, len, 32);
        } else { /* the heap leaves the indices out of order: sort whole keys */
            heap_smallest(keys, len, kk);
            sorted = radix_sort(keys, keys + len, kk, 0);
        }
        for (int64_t q = 0; q < kk; q++) {
            int64_t at = o * kk * inner + q * inner + i, src = (int64_t)(uint32_t)sorted[q];
            y[at] = x[base + src * inner];
            if (ind) ind[at] = src;
        }
    }
    free(keys);
}

static void topk_rows(void *arg, int64_t begin, int64_t end) {
    topk_job *j = arg;
    const seam_tensor *x = j->x;
    int32_t dt = x->dtype;
    if (dt == SEAM_DTYPE_FLOAT32 && j->len <= UINT32_MAX) {
        topk_rows_f32(j, begin, end);
        return;
    }
    bool fl = cpu_is_float(dt);
    size_t es = seam_dtype_size(dt);
    topk_item *items = malloc(sizeof(topk_item) * (size_t)j->len);
    if (!items) {
        __atomic_store_n(&j->oom, true, __ATOMIC_RELAXED);
        return;
    }
    for (int64_t r = begin; r < end; r++) {
        int64_t o = r / j->inner, i = r % j->inner, base = o * j->len * j->inner + i;
        for (int64_t q = 0; q < j->len; q++) {
            int64_t at = base + q * j->inner;
            topk_item *t = &items[q];
            t->i = q;
            if (dt == SEAM_DTYPE_FLOAT32) t->v = ((const float *)x->data)[at];
            else if (fl) t->v = cpu_get(x->data, dt, at);
            else if (dt == SEAM_DTYPE_UINT64) t->iv = u64_key(((const uint64_t *)x->data)[at]);
            else t->iv = cpu_get_i64(x->data, dt, at);
        }
        select_best(items, j->len, j->kk, j->cmp);
        for (int64_t q = 0; q < j->kk; q++) {
            int64_t at = o * j->kk * j->inner + q * j->inner + i;
            cpu_copy_elem(j->y->data, at, x->data, base + items[q].i * j->inner, es);
            if (j->ind) ((int64_t *)j->ind->data)[at] = items[q].i;
        }
    }
    free(items);
}

static seam_status run_topk(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (!x || x->rank < 1) return kernel_fail(k, "needs an input of rank >= 1");
    if (!cpu_is_real(x->dtype)) return kernel_fail(k, "TopK on %s is not supported", seam_dtype_name(x->dtype));
    int64_t kk;
    if (k->n->opset < 10) {
        kk = node_attr_int(k->n, "k", -1);
    } else {
        const seam_tensor *kt = kernel_in(k, 1);
        if (!kt || kt->numel != 1 || !cpu_is_int(kt->dtype))
            return kernel_fail(k, "K must be a one-element integer tensor");
        kk = cpu_get_i64(kt->data, kt->dtype, 0);
    }
    int32_t axis = op_axis(node_attr_int(k->n, "axis", -1), x->rank);
    if (axis < 0) return kernel_fail(k, "axis is out of range for rank %d", x->rank);
    int64_t len = x->dims[axis];
    if (kk < 0 || kk > len)
        return kernel_fail(k, "K = %lld is out of range for an axis of %lld", (long long)kk, (long long)len);
    bool largest = node_attr_int(k->n, "largest", 1) != 0;
    int64_t dims[SEAM_MAX_RANK];
    memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
    dims[axis] = kk;
    if (seam_shape_numel(dims, x->rank) < 0) return kernel_fail(k, "the result is too large");
    seam_tensor *y = kernel_out(k, 0, x->dtype, x->rank, dims);
    seam_tensor *ind = kernel_has_out(k, 1) ? kernel_out(k, 1, SEAM_DTYPE_INT64, x->rank, dims) : NULL;
    if (!y || (kernel_has_out(k, 1) && !ind)) return kernel_oom(k);
    if (y->numel == 0) return SEAM_STATUS_OK; /* also: x is not empty below */
    bool fl = cpu_is_float(x->dtype);
    /* sorted or not, the k best in order: the spec leaves the order of an
     * unsorted result open */
    topk_job j = {x, y, ind, len, cpu_span(x->dims, axis + 1, x->rank), kk,
                  fl ? (largest ? cmp_largest : cmp_smallest) : (largest ? cmp_largest_i : cmp_smallest_i), false};
    int64_t rows = x->numel / len;
    seam_parallel_for(k->pool, rows, 65536 / len + 1, topk_rows, &j);
    return j.oom ? kernel_oom(k) : SEAM_STATUS_OK;
}

/* ---- Where ---- */

typedef struct where_job {
    const seam_tensor *in[3]; /* condition, X, Y */
    seam_tensor *y;
    int32_t rank;
    int64_t dims[SEAM_MAX_RANK], st[3][SEAM_MAX_RANK]; /* broadcast strides */
    int64_t last;                                       /* the innermost dim: one row */
} where_job;

/* The select over one row with each input either walking (stride 1) or
 * fixed (stride 0, broadcast). Constant strides and loads made whatever
 * the condition let the compiler vectorize. */
#define WHERE_LOOP(T, S0, S1, S2)             \
    for (int64_t t = 0; t < n; t++) {         \
        T va = a[t * (S1)], vb = b[t * (S2)]; \
        o[t] = c[t * (S0)] ? va : vb;         \
    }
#define WHERE_ROW(T)                                                                              \
    do {                                                                                          \
        const T *a = (const T *)j->in[1]->data + off[1], *b = (const T *)j->in[2]->data + off[2]; \
        T *o = (T *)j->y->data + r * n;                                                           \
        switch (s0 * 4 + s1 * 2 + s2) {                                                           \
        case 7: WHERE_LOOP(T, 1, 1, 1) break;                                                     \
        case 6: WHERE_LOOP(T, 1, 1, 0) break;                                                     \
        case 5: WHERE_LOOP(T, 1, 0, 1) break;                                                     \
        case 4: WHERE_LOOP(T, 1, 0, 0) break;                                                     \
        case 3: WHERE_LOOP(T, 0, 1, 1) break;                                                     \
        case 2: WHERE_LOOP(T, 0, 1, 0) break;                                                     \
        case 1: WHERE_LOOP(T, 0, 0, 1) break;                                                     \
        default: WHERE_LOOP(T, 0, 0, 0) break;                                                    \
        }                                                                                         \
    } while (0)

/* Rows of the output: the offsets of each input move with an odometer
 * over the outer dims; the inner loop is a typed select. */
CPU_HOT static void where_rows(void *arg, int64_t begin, int64_t end) {
    const where_job *j = arg;
    int32_t outer_rank = j->rank > 0 ? j->rank - 1 : 0;
    int64_t idx[SEAM_MAX_RANK], off[3] = {0, 0, 0}, rest = begin, n = j->last;
    for (int32_t d = outer_rank - 1; d >= 0; d--) {
        idx[d] = rest % j->dims[d];
        rest /= j->dims[d];
        for (int32_t q = 0; q < 3; q++) off[q] += idx[d] * j->st[q][d];
    }
    /* the innermost strides: 1, or 0 where broadcast */
    int64_t s0 = j->rank && j->st[0][j->rank - 1], s1 = j->rank && j->st[1][j->rank - 1];
    int64_t s2 = j->rank && j->st[2][j->rank - 1];
    size_t es = seam_dtype_size(j->y->dtype);
    for (int64_t r = begin; r < end; r++) {
        const uint8_t *c = (const uint8_t *)j->in[0]->data + off[0];
        switch (es) {
        case 1: WHERE_ROW(uint8_t); break;
        case 2: WHERE_ROW(uint16_t); break;
        case 4: WHERE_ROW(uint32_t); break;
        case 8: WHERE_ROW(uint64_t); break;
        default:
            for (int64_t t = 0; t < n; t++)
                cpu_copy_elem(j->y->data, r * n + t, c[t * s0] ? j->in[1]->data : j->in[2]->data,
                              c[t * s0] ? off[1] + t * s1 : off[2] + t * s2, es);
        }
        for (int32_t d = outer_rank - 1; d >= 0; d--) {
            for (int32_t q = 0; q < 3; q++) off[q] += j->st[q][d];
            if (++idx[d] < j->dims[d]) break;
            for (int32_t q = 0; q < 3; q++) off[q] -= j->st[q][d] * j->dims[d];
            idx[d] = 0;
        }
    }
}

static seam_status run_where(seam_kernel *k) {
    const seam_tensor *c = kernel_in(k, 0), *a = kernel_in(k, 1), *b = kernel_in(k, 2);
    if (!c || !a || !b || c->dtype != SEAM_DTYPE_BOOL) return kernel_fail(k, "needs a bool condition and two values");
    if (a->dtype != b->dtype) return kernel_fail(k, "X and Y have different dtypes");
    if (a->dtype == SEAM_DTYPE_STRING) return kernel_fail(k, "Where on strings is not supported");
    where_job j = {{c, a, b}, NULL, 0, {0}, {{0}}, 1};
    if (!cpu_broadcast(j.in, 3, &j.rank, j.dims)) return kernel_fail(k, "condition, X and Y do not broadcast");
    if (seam_shape_numel(j.dims, j.rank) < 0) return kernel_fail(k, "the broadcast result is too large");
    j.y = kernel_out(k, 0, a->dtype, j.rank, j.dims);
    if (!j.y) return kernel_oom(k);
    if (j.y->numel == 0) return SEAM_STATUS_OK;
    for (int32_t q = 0; q < 3; q++) cpu_bcast_strides(j.in[q], j.rank, j.dims, j.st[q]);
    if (j.rank > 0) j.last = j.dims[j.rank - 1];
    int64_t rows = j.y->numel / j.last;
    seam_parallel_for(k->pool, rows, 16384 / j.last + 1, where_rows, &j);
    return SEAM_STATUS_OK;
}

/* ---- CumSum ---- */

static seam_status run_cumsum(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0), *ax = kernel_in(k, 1);
    if (!x || !ax || ax->numel != 1 || !cpu_is_int(ax->dtype))
        return kernel_fail(k, "needs X and a scalar integer axis");
    if (!cpu_is_float(x->dtype) && !cpu_is_int(x->dtype))
        return kernel_fail(k, "CumSum on %s is not supported", seam_dtype_name(x->dtype));
    int32_t axis = op_axis(cpu_get_i64(ax->data, ax->dtype, 0), x->rank);
    if (axis < 0) return kernel_fail(k, "axis is out of range for rank %d", x->rank);
    bool excl = node_attr_int(k->n, "exclusive", 0) != 0, rev = node_attr_int(k->n, "reverse", 0) != 0;
    seam_tensor *y = kernel_out(k, 0, x->dtype, x->rank, x->dims);
    if (!y) return kernel_oom(k);
    if (x->numel == 0) return SEAM_STATUS_OK;
    int64_t len = x->dims[axis], inner = cpu_span(x->dims, axis + 1, x->rank), outer = cpu_span(x->dims, 0, axis);
    bool fl = cpu_is_float(x->dtype);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            double acc = 0;
            int64_t iacc = 0;
            for (int64_t q = 0; q < len; q++) {
                int64_t p = rev ? len - 1 - q : q, at = (o * len + p) * inner + i;
                if (fl) {
                    double v = cpu_get(x->data, x->dtype, at);
                    if (!excl) acc += v;
                    cpu_set(y->data, y->dtype, at, acc);
                    if (excl) acc += v;
                } else { /* exact, wrapping like the C type */
                    int64_t v = cpu_get_i64(x->data, x->dtype, at);
                    if (!excl) iacc = (int64_t)((uint64_t)iacc + (uint64_t)v);
                    cpu_set_i64(y->data, y->dtype, at, iacc);
                    if (excl) iacc = (int64_t)((uint64_t)iacc + (uint64_t)v);
                }
            }
        }
    return SEAM_STATUS_OK;
}

/* ---- OneHot ---- */

static seam_status run_onehot(seam_kernel *k) {
    const seam_tensor *ix = kernel_in(k, 0), *dp = kernel_in(k, 1), *vals = kernel_in(k, 2);
    if (!ix || !dp || !vals || dp->numel != 1 || vals->numel != 2)
        return kernel_fail(k, "needs indices, a scalar depth and two values");
    if (!cpu_is_real(ix->dtype) || !cpu_is_real(dp->dtype) || !cpu_is_real(vals->dtype))
        return kernel_fail(k, "indices, depth and values must be numbers");
    double dd = cpu_get(dp->data, dp->dtype, 0);
    if (!(dd >= 1 && dd <= (double)MAX_DATA_NUMEL)) return kernel_fail(k, "depth %g is out of range", dd);
    int64_t depth = (int64_t)dd;
    int32_t r = ix->rank + 1;
    if (r > SEAM_MAX_RANK) return kernel_fail(k, "the result's rank would be over %d", SEAM_MAX_RANK);
    int32_t axis = op_axis(node_attr_int(k->n, "axis", -1), r);
    if (axis < 0) return kernel_fail(k, "axis is out of range for rank %d", r);
    int64_t dims[SEAM_MAX_RANK];
    for (int32_t d = 0, j = 0; d < r; d++) dims[d] = d == axis ? depth : ix->dims[j++];
    int64_t numel = seam_shape_numel(dims, r);
    if (numel < 0 || numel > MAX_DATA_NUMEL) return kernel_fail(k, "the result is too large");
    seam_tensor *y = kernel_out(k, 0, vals->dtype, r, dims);
    if (!y) return kernel_oom(k);
    if (numel == 0) return SEAM_STATUS_OK;
    size_t es = seam_dtype_size(vals->dtype);
    int64_t outer = cpu_span(ix->dims, 0, axis), inner = cpu_span(ix->dims, axis, ix->rank);
    for (int64_t i = 0; i < numel; i++) cpu_copy_elem(y->data, i, vals->data, 0, es);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            double v = cpu_get(ix->data, ix->dtype, o * inner + i);
            /* out of range (or NaN): all off; checked before the cast */
            if (!(v > -(double)depth - 1 && v < (double)depth)) continue;
            int64_t h = (int64_t)v; /* truncates, as the indices' cast to int64 in the spec */
            if (h < 0) h += depth;
            if (h < 0 || h >= depth) continue;
            cpu_copy_elem(y->data, (o * depth + h) * inner + i, vals->data, 1, es);
        }
    return SEAM_STATUS_OK;
}

static seam_status check_onehot(seam_check *c) {
    int32_t dt = check_in_dtype(c, 2);
    if (dt != SEAM_DTYPE_UNDEFINED && !cpu_is_real(dt))
        return check_refuse(c, "OneHot on %s values is not supported", seam_dtype_name(dt));
    return SEAM_STATUS_OK;
}

/* ---- Range ---- */

static seam_status run_range(seam_kernel *k) {
    const seam_tensor *s = kernel_in(k, 0), *l = kernel_in(k, 1), *d = kernel_in(k, 2);
    if (!s || !l || !d || s->numel != 1 || l->numel != 1 || d->numel != 1)
        return kernel_fail(k, "start, limit and delta must be scalars");
    int32_t dt = s->dtype;
    if (l->dtype != dt || d->dtype != dt) return kernel_fail(k, "start, limit and delta must have the same type");
    if (!cpu_is_float(dt) && !cpu_is_int(dt))
        return kernel_fail(k, "Range on %s is not supported", seam_dtype_name(dt));
    int64_t n;
    if (cpu_is_float(dt)) {
        double a = cpu_get(s->data, dt, 0), b = cpu_get(l->data, dt, 0), c = cpu_get(d->data, dt, 0);
        if (c == 0) return kernel_fail(k, "delta is 0");
        if (!isfinite(a) || !isfinite(b) || !isfinite(c))
            return kernel_fail(k, "start, limit and delta must be finite");
        double f = ceil((b - a) / c);
        if (f > (double)MAX_DATA_NUMEL)
            return kernel_fail(k, "the range has %g elements, more than %lld", f, (long long)MAX_DATA_NUMEL);
        n = f > 0 ? (int64_t)f : 0;
        seam_tensor *y = kernel_out(k, 0, dt, 1, &n);
        if (!y) return kernel_oom(k);
        for (int64_t i = 0; i < n; i++) cpu_set(y->data, dt, i, a + (double)i * c);
        return SEAM_STATUS_OK;
    }
    int64_t a = cpu_get_i64(s->data, dt, 0), b = cpu_get_i64(l->data, dt, 0), c = cpu_get_i64(d->data, dt, 0);
    if (c == 0) return kernel_fail(k, "delta is 0");
    /* the count, exactly: the distance fits in uint64 however far apart */
    uint64_t dist = 0, step = c > 0 ? (uint64_t)c : 0 - (uint64_t)c;
    if (c > 0 && b > a) dist = (uint64_t)b - (uint64_t)a;
    if (c < 0 && a > b) dist = (uint64_t)a - (uint64_t)b;
    uint64_t count = dist / step + (dist % step != 0);
    if (count > (uint64_t)MAX_DATA_NUMEL)
        return kernel_fail(k, "the range has %llu elements, more than %lld", (unsigned long long)count,
                           (long long)MAX_DATA_NUMEL);
    n = (int64_t)count;
    seam_tensor *y = kernel_out(k, 0, dt, 1, &n);
    if (!y) return kernel_oom(k);
    /* start + i * delta stays between start and limit; unsigned to keep
     * the intermediate product defined */
    for (int64_t i = 0; i < n; i++) cpu_set_i64(y->data, dt, i, (int64_t)((uint64_t)a + (uint64_t)i * (uint64_t)c));
    return SEAM_STATUS_OK;
}

static seam_status check_range(seam_check *c) {
    int32_t dt = check_in_dtype(c, 0);
    if (dt != SEAM_DTYPE_UNDEFINED && !cpu_is_float(dt) && !cpu_is_int(dt))
        return check_refuse(c, "Range on %s is not supported", seam_dtype_name(dt));
    return SEAM_STATUS_OK;
}

/* ---- Unique ---- */

typedef struct uniq_ctx {
    const seam_tensor *x;
    int64_t outer, len, inner; /* a slice: the elements of one index along the axis */
    bool fl, u64;
} uniq_ctx;

/* Total orders: NaN after every number and equal to NaN (numpy's unique
 * with equal_nan); integers exact, uint64 unsigned. */
static int cmp_elem(const uniq_ctx *u, int64_t pa, int64_t pb) {
    const void *p = u->x->data;
    int32_t dt = u->x->dtype;
    if (u->fl) {
        double x = cpu_get(p, dt, pa), y = cpu_get(p, dt, pb);
        bool nx = x != x, ny = y != y;
        if (nx || ny) return nx == ny ? 0 : nx ? 1 : -1;
        return x < y ? -1 : x > y;
    }
    if (u->u64) {
        uint64_t x = ((const uint64_t *)p)[pa], y = ((const uint64_t *)p)[pb];
        return x < y ? -1 : x > y;
    }
    int64_t x = cpu_get_i64(p, dt, pa), y = cpu_get_i64(p, dt, pb);
    return x < y ? -1 : x > y;
}

static int cmp_slice(int64_t a, int64_t b, const uniq_ctx *u) {
    for (int64_t o = 0; o < u->outer; o++)
        for (int64_t i = 0; i < u->inner; i++) {
            int c = cmp_elem(u, (o * u->len + a) * u->inner + i, (o * u->len + b) * u->inner + i);
            if (c) return c;
        }
    return 0;
}

/* A stable merge sort of slice indices (qsort takes no context, and a
 * global would not be thread-safe across sessions). */
static void sort_slices(int64_t *v, int64_t *tmp, int64_t n, const uniq_ctx *u) {
    if (n < 2) return;
    int64_t h = n / 2;
    sort_slices(v, tmp, h, u);
    sort_slices(v + h, tmp, n - h, u);
    int64_t i = 0, j = h, o = 0;
    while (i < h && j < n) tmp[o++] = cmp_slice(v[j], v[i], u) < 0 ? v[j++] : v[i++];
    while (i < h) tmp[o++] = v[i++];
    while (j < n) tmp[o++] = v[j++];
    memcpy(v, tmp, sizeof(int64_t) * (size_t)n);
}

static seam_status run_unique(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (!x) return kernel_fail(k, "needs an input");
    if (!cpu_is_real(x->dtype)) return kernel_fail(k, "Unique on %s is not supported", seam_dtype_name(x->dtype));
    bool sorted = node_attr_int(k->n, "sorted", 1) != 0;
    int32_t rank = x->rank, axis = 0;
    int64_t dims[SEAM_MAX_RANK];
    if (!node_attr(k->n, "axis")) { /* flattened */
        rank = 1;
        dims[0] = x->numel;
    } else {
        axis = op_axis(node_attr_int(k->n, "axis", INT64_MAX), x->rank); /* (not an int: out of range) */
        if (axis < 0) return kernel_fail(k, "axis is out of range for rank %d", x->rank);
        memcpy(dims, x->dims, sizeof(int64_t) * (size_t)rank);
    }
    int64_t len = dims[axis];
    if (len > MAX_DATA_NUMEL) return kernel_fail(k, "the axis has more than %lld slices", (long long)MAX_DATA_NUMEL);
    uniq_ctx u = {x, 0, len, 0, cpu_is_float(x->dtype), x->dtype == SEAM_DTYPE_UINT64};
    if (x->numel > 0) {
        u.outer = cpu_span(dims, 0, axis);
        u.inner = cpu_span(dims, axis + 1, rank);
    } /* else every slice is empty, so all are equal: cmp_slice sees no elements */
    size_t n = (size_t)len + 1;
    int64_t *order = malloc(sizeof(int64_t) * n), *tmp = malloc(sizeof(int64_t) * n);
    int64_t *first = malloc(sizeof(int64_t) * n), *group_of = malloc(sizeof(int64_t) * n);
    int64_t *counts = malloc(sizeof(int64_t) * n), *rank_of = malloc(sizeof(int64_t) * n);
    int64_t *by = malloc(sizeof(int64_t) * n);
    seam_status st = SEAM_STATUS_OK;
    if (!order || !tmp || !first || !group_of || !counts || !rank_of || !by) {
        st = kernel_oom(k);
        goto done;
    }
    for (int64_t i = 0; i < len; i++) order[i] = i;
    if (x->numel > 0) sort_slices(order, tmp, len, &u);
    /* groups of equal slices in sorted order, each with its first index
     * (the sort is stable, so the group's first member) */
    int64_t n_u = 0;
    for (int64_t i = 0; i < len; i++) {
        if (i == 0 || cmp_slice(order[i - 1], order[i], &u) != 0) {
            first[n_u] = order[i];
            counts[n_u] = 0;
            n_u++;
        }
        group_of[order[i]] = n_u - 1;
        counts[n_u - 1]++;
    }
    /* output order: sorted, or by first occurrence */
    if (sorted) {
        for (int64_t g = 0; g < n_u; g++) by[g] = g;
    } else {
        int64_t next = 0;
        for (int64_t g = 0; g < n_u; g++) rank_of[g] = -1;
        for (int64_t i = 0; i < len; i++)
            if (rank_of[group_of[i]] < 0) {
                rank_of[group_of[i]] = next;
                by[next++] = group_of[i];
            }
    }
    for (int64_t g = 0; g < n_u; g++) rank_of[by[g]] = g;
    dims[axis] = n_u;
    seam_tensor *y = kernel_out(k, 0, x->dtype, rank, dims);
    if (!y) {
        st = kernel_oom(k);
        goto done;
    }
    size_t es = seam_dtype_size(x->dtype);
    for (int64_t g = 0; g < n_u; g++)
        for (int64_t o = 0; o < u.outer; o++)
            for (int64_t i = 0; i < u.inner; i++)
                cpu_copy_elem(y->data, (o * n_u + g) * u.inner + i, x->data, (o * len + first[by[g]]) * u.inner + i,
                              es);
    for (int32_t out = 1; out < 4; out++) {
        if (!kernel_has_out(k, out)) continue;
        seam_tensor *t = kernel_out(k, out, SEAM_DTYPE_INT64, 1, out == 2 ? &len : &n_u);
        if (!t) {
            st = kernel_oom(k);
            goto done;
        }
        int64_t *v = t->data;
        if (out == 1) /* indices: each unique slice's first occurrence */
            for (int64_t g = 0; g < n_u; g++) v[g] = first[by[g]];
        else if (out == 2) /* inverse_indices: each slice's unique one */
            for (int64_t i = 0; i < len; i++) v[i] = rank_of[group_of[i]];
        else
            for (int64_t g = 0; g < n_u; g++) v[g] = counts[by[g]];
    }
done:
    free(order), free(tmp), free(first), free(group_of), free(counts), free(rank_of), free(by);
    return st;
}

/* ---- NonMaxSuppression ---- */

typedef struct nms_box {
    double score;
    int64_t i;
} nms_box;

/* Higher scores first, ties by index (NaN scores never get here). */
static int cmp_score(const void *a, const void *b) {
    const nms_box *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* The corners of box i as [y1, x1, y2, x2] with y1 <= y2, x1 <= x2. */
static void corners(const seam_tensor *b, int64_t at, bool center, double *c) {
    double p = cpu_get(b->data, b->dtype, at), q = cpu_get(b->data, b->dtype, at + 1);
    double r = cpu_get(b->data, b->dtype, at + 2), s = cpu_get(b->data, b->dtype, at + 3);
    if (center) { /* [x_center, y_center, width, height] */
        double x1 = p - r / 2, x2 = p + r / 2, y1 = q - s / 2, y2 = q + s / 2;
        c[0] = fmin(y1, y2), c[1] = fmin(x1, x2), c[2] = fmax(y1, y2), c[3] = fmax(x1, x2);
    } else { /* [y1, x1, y2, x2], either corner order */
        c[0] = fmin(p, r), c[1] = fmin(q, s), c[2] = fmax(p, r), c[3] = fmax(q, s);
    }
}

/* The boxes a class has selected so far that have an area, in columns.
 * Boxes that do not intersect, or have no area, never suppress each other
 * (as in the spec's reference and ONNX Runtime), so a selected box without
 * area is not kept here, and a box with an area holds no NaN (its corners
 * compare). */
typedef struct nms_kept {
    double *y1, *x1, *y2, *x2, *area;
    int64_t n;
} nms_kept;

/* Whether box c (area ca > 0) overlaps a kept box by more than t
 * (intersection over union): blocks of 32 without a branch, so the loop
 * vectorizes; min and max as selects, exact for boxes without NaN. */
CPU_HOT static bool nms_suppressed(const nms_kept *k, const double *c, double ca, double t) {
    const double *restrict y1 = k->y1, *restrict x1 = k->x1, *restrict y2 = k->y2, *restrict x2 = k->x2,
                           *restrict ar = k->area;
    for (int64_t s0 = 0; s0 < k->n; s0 += 32) {
        int64_t e = k->n - s0 < 32 ? k->n : s0 + 32;
        int hit = 0;
        for (int64_t s = s0; s < e; s++) {
            double lo_y = c[0] > y1[s] ? c[0] : y1[s], hi_y = c[2] < y2[s] ? c[2] : y2[s];
            double lo_x = c[1] > x1[s] ? c[1] : x1[s], hi_x = c[3] < x2[s] ? c[3] : x2[s];
            double ih = hi_y - lo_y, iw = hi_x - lo_x, inter = ih * iw, iou = inter / (ca + ar[s] - inter);
            hit |= (ih > 0) & (iw > 0) & (iou > t);
        }
        if (hit) return true;
    }
    return false;
}

/* Kept boxes in a grid of square cells at least as big as any box, so
 * that boxes that intersect lie in the same or neighbouring cells: a
 * candidate is checked against the kept boxes of 9 cells, not all. It pays
 * where boxes are spread over an area many boxes wide, as with the class
 * offsets of torchvision's batched_nms (one class, each class's boxes
 * moved far from the others'). The cells are a hash table of lists
 * (head per cell, next per kept box). Which kept box is checked first
 * does not change the result: a candidate goes if any overlaps. */
typedef struct nms_grid {
    double y0, x0, cell;
    int64_t cols, mask;
    int64_t *keys, *head, *next; /* table of mask + 1 cells; next per kept box */
} nms_grid;

/* Sets up the grid for candidate boxes cand[0..n) of box[] when it pays:
 * false (use the columns) when boxes are not spread out or not finite. */
static bool nms_grid_init(nms_grid *gr, const double *box, const nms_box *cand, int64_t n, int64_t max_out) {
    double y0 = INFINITY, x0 = INFINITY, y1 = -INFINITY, x1 = -INFINITY, big = 0;
    int64_t with_area = 0;
    for (int64_t q = 0; q < n; q++) {
        const double *b = box + 4 * cand[q].i;
        double h = b[2] - b[0], w = b[3] - b[1];
        if (!(h > 0 && w > 0)) continue; /* never kept in the grid */
        with_area++;
        y0 = fmin(y0, b[0]), x0 = fmin(x0, b[1]), y1 = fmax(y1, b[2]), x1 = fmax(x1, b[3]);
        big = fmax(big, fmax(h, w));
    }
    if (with_area < 256 || !isfinite(y0) || !isfinite(x0) || !isfinite(y1) || !isfinite(x1) || !isfinite(big))
        return false;
    /* cells at least `big` wide, at most 2^20 a side */
    double cell = fmax(big, fmax(y1 - y0, x1 - x0) / (double)(1 << 20));
    double rows = floor((y1 - y0) / cell) + 1, cols = floor((x1 - x0) / cell) + 1;
    if (rows * cols < 64) return false; /* all in a few cells: the columns are faster */
    int64_t cap = 64;
    int64_t keep = max_out < with_area ? max_out : with_area;
    while (cap < 2 * keep) cap *= 2;
    gr->y0 = y0, gr->x0 = x0, gr->cell = cell, gr->cols = (int64_t)cols + 2, gr->mask = cap - 1;
    gr->keys = malloc(sizeof(int64_t) * (size_t)cap);
    gr->head = malloc(sizeof(int64_t) * (size_t)cap);
    gr->next = malloc(sizeof(int64_t) * (size_t)(keep + 1));
    if (!gr->keys || !gr->head || !gr->next) {
        free(gr->keys), free(gr->head), free(gr->next);
        return false;
    }
    for (int64_t k = 0; k < cap; k++) gr->keys[k] = -1;
    return true;
}

static void nms_grid_free(nms_grid *gr) { free(gr->keys), free(gr->head), free(gr->next); }

/* The cell key of a point, 1-based so that the neighbours of row and
 * column 0 have keys too. */
static int64_t nms_cell(const nms_grid *gr, double y, double x) {
    int64_t r = (int64_t)floor((y - gr->y0) / gr->cell) + 1, c = (int64_t)floor((x - gr->x0) / gr->cell) + 1;
    return r * gr->cols + c;
}

/* The slot of key in the table: where it is, or the empty one to take. */
static int64_t nms_slot(const nms_grid *gr, int64_t key) {
    uint64_t h = (uint64_t)key * 0x9E3779B97F4A7C15ull;
    int64_t at = (int64_t)(h >> 20) & gr->mask;
    while (gr->keys[at] != key && gr->keys[at] != -1) at = (at + 1) & gr->mask;
    return at;
}

static bool nms_grid_suppressed(const nms_grid *gr, const nms_kept *k, const double *c, double ca, double t) {
    int64_t key = nms_cell(gr, c[0], c[1]);
    for (int64_t dr = -1; dr <= 1; dr++)
        for (int64_t dc = -1; dc <= 1; dc++) {
            int64_t at = nms_slot(gr, key + dr * gr->cols + dc);
            if (gr->keys[at] == -1) continue;
            for (int64_t s = gr->head[at]; s >= 0; s = gr->next[s]) {
                /* (selects, as in nms_suppressed: fmin and fmax are calls) */
                double lo_y = c[0] > k->y1[s] ? c[0] : k->y1[s], hi_y = c[2] < k->y2[s] ? c[2] : k->y2[s];
                double lo_x = c[1] > k->x1[s] ? c[1] : k->x1[s], hi_x = c[3] < k->x2[s] ? c[3] : k->x2[s];
                double ih = hi_y - lo_y, iw = hi_x - lo_x;
                if (ih > 0 && iw > 0 && ih * iw / (ca + k->area[s] - ih * iw) > t) return true;
            }
        }
    return false;
}

static void nms_grid_add(nms_grid *gr, int64_t s, const double *c) {
    int64_t key = nms_cell(gr, c[0], c[1]), at = nms_slot(gr, key);
    if (gr->keys[at] == -1) gr->keys[at] = key, gr->head[at] = -1;
    gr->next[s] = gr->head[at];
    gr->head[at] = s;
}

typedef struct nms_job {
    const seam_tensor *scores;
    const double *box; /* [B, N, 4] corners */
    int64_t C, N, max_out;
    double iou_t, sc_t;
    bool has_st, oom;
    int64_t *out, *count; /* per (b, c): max_out (b, c, i) rows, and how many */
} nms_job;

/* Classes [begin, end) of all B x C, each on its own: candidates above the
 * score threshold by score (float32 scores: sorted as 64-bit keys, see
 * topk_key), then kept greedily. */
static void nms_classes(void *arg, int64_t begin, int64_t end) {
    nms_job *j = arg;
    int64_t N = j->N;
    uint64_t *keys = malloc(sizeof(uint64_t) * 2 * (size_t)N);
    nms_box *cand = malloc(sizeof(nms_box) * (size_t)N);
    double *cols = malloc(sizeof(double) * 5 * (size_t)(j->max_out ? j->max_out : 1));
    if (!keys || !cand || !cols) {
        free(keys), free(cand), free(cols);
        __atomic_store_n(&j->oom, true, __ATOMIC_RELAXED);
        return;
    }
    const seam_tensor *sc = j->scores;
    for (int64_t bc = begin; bc < end; bc++) {
        int64_t b = bc / j->C, c = bc % j->C, n = 0;
        const double *box = j->box + b * N * 4;
        if (sc->dtype == SEAM_DTYPE_FLOAT32) {
            const float *sv = (const float *)sc->data + bc * N;
            for (int64_t i = 0; i < N; i++) {
                double v = sv[i];
                if (v == v && (!j->has_st || v > j->sc_t)) keys[n++] = topk_key(sv[i], true, (uint32_t)i);
            }
            uint64_t *sorted = radix_sort(keys, keys + N, n, 32);
            for (int64_t q = 0; q < n; q++) cand[q].i = (int64_t)(uint32_t)sorted[q];
        } else {
            for (int64_t i = 0; i < N; i++) {
                double v = cpu_get(sc->data, sc->dtype, bc * N + i);
                if (v == v && (!j->has_st || v > j->sc_t)) cand[n++] = (nms_box){v, i};
            }
            qsort(cand, (size_t)n, sizeof(nms_box), cmp_score);
        }
        int64_t mo = j->max_out, n_sel = 0, *out = j->out + bc * mo * 3;
        nms_kept kept = {cols, cols + mo, cols + 2 * mo, cols + 3 * mo, cols + 4 * mo, 0};
        nms_grid grid = {0};
        bool gridded = nms_grid_init(&grid, box, cand, n, mo);
        for (int64_t q = 0; q < n && n_sel < mo; q++) {
            const double *bq = box + 4 * cand[q].i;
            double area = (bq[2] - bq[0]) * (bq[3] - bq[1]);
            if (area > 0) {
                if (gridded ? nms_grid_suppressed(&grid, &kept, bq, area, j->iou_t)
                            : nms_suppressed(&kept, bq, area, j->iou_t))
                    continue;
                int64_t at = kept.n++;
                kept.y1[at] = bq[0], kept.x1[at] = bq[1], kept.y2[at] = bq[2], kept.x2[at] = bq[3], kept.area[at] = area;
                if (gridded) nms_grid_add(&grid, at, bq);
            }
            out[3 * n_sel] = b, out[3 * n_sel + 1] = c, out[3 * n_sel + 2] = cand[q].i;
            n_sel++;
        }
        if (gridded) nms_grid_free(&grid);
        j->count[bc] = n_sel;
    }
    free(keys), free(cand), free(cols);
}

static seam_status run_nms(seam_kernel *k) {
    const seam_tensor *boxes = kernel_in(k, 0), *scores = kernel_in(k, 1);
    const seam_tensor *tmax = kernel_in(k, 2), *tiou = kernel_in(k, 3), *tsc = kernel_in(k, 4);
    if (!boxes || !scores || boxes->rank != 3 || boxes->dims[2] != 4 || scores->rank != 3 ||
        scores->dims[0] != boxes->dims[0] || scores->dims[2] != boxes->dims[1])
        return kernel_fail(k, "needs boxes [B, N, 4] and scores [B, C, N] with the same B and N");
    if (!cpu_is_float(boxes->dtype) || !cpu_is_float(scores->dtype))
        return kernel_fail(k, "boxes and scores must be floats");
    if ((tmax && tmax->numel > 1) || (tiou && tiou->numel > 1) || (tsc && tsc->numel > 1))
        return kernel_fail(k, "max_output_boxes_per_class, iou_threshold and score_threshold must be scalars");
    if ((tmax && !cpu_is_real(tmax->dtype)) || (tiou && !cpu_is_real(tiou->dtype)) || (tsc && !cpu_is_real(tsc->dtype)))
        return kernel_fail(k, "the thresholds must be numbers");
    int64_t max_out = tmax && tmax->numel ? cpu_get_i64(tmax->data, tmax->dtype, 0) : 0;
    nms_job j = {scores, NULL, scores->dims[1], boxes->dims[1], 0, 0, 0, false, false, NULL, NULL};
    j.iou_t = tiou && tiou->numel ? cpu_get(tiou->data, tiou->dtype, 0) : 0;
    j.has_st = tsc && tsc->numel;
    j.sc_t = j.has_st ? cpu_get(tsc->data, tsc->dtype, 0) : 0;
    bool center = node_attr_int(k->n, "center_point_box", 0) != 0;
    int64_t B = boxes->dims[0], N = boxes->dims[1];
    if (max_out < 0) max_out = 0;
    if (max_out > N) max_out = N;
    if (scores->numel == 0 || max_out == 0) { /* nothing to select (and B, C may be anything) */
        int64_t dims[2] = {0, 3};
        return kernel_out(k, 0, SEAM_DTYPE_INT64, 2, dims) ? SEAM_STATUS_OK : kernel_oom(k);
    }
    if (N > UINT32_MAX) return kernel_fail(k, "more than 2^32 boxes");
    j.max_out = max_out;
    /* B * C * max_out <= B * C * N, the scores' element count; B * N * 4
     * is the boxes' */
    double *box = malloc(sizeof(double) * 4 * (size_t)(B * N));
    int64_t *out = malloc(sizeof(int64_t) * 3 * (size_t)(B * j.C * max_out));
    int64_t *count = malloc(sizeof(int64_t) * (size_t)(B * j.C));
    if (!box || !out || !count) {
        free(box), free(out), free(count);
        return kernel_oom(k);
    }
    for (int64_t i = 0; i < B * N; i++) corners(boxes, i * 4, center, box + 4 * i);
    j.box = box, j.out = out, j.count = count;
    seam_parallel_for(k->pool, B * j.C, 1, nms_classes, &j);
    int64_t n_out = 0;
    for (int64_t bc = 0; bc < B * j.C && !j.oom; bc++) { /* (b, c) in order, each in selection order */
        memmove(out + 3 * n_out, out + 3 * bc * max_out, sizeof(int64_t) * 3 * (size_t)count[bc]);
        n_out += count[bc];
    }
    int64_t dims[2] = {n_out, 3};
    seam_tensor *y = j.oom ? NULL : kernel_out(k, 0, SEAM_DTYPE_INT64, 2, dims);
    if (y && n_out) memcpy(y->data, out, sizeof(int64_t) * 3 * (size_t)n_out);
    free(box), free(out), free(count);
    return y ? SEAM_STATUS_OK : kernel_oom(k);
}

static seam_status check_nms(seam_check *c) {
    for (int32_t i = 0; i < 2; i++) {
        int32_t dt = check_in_dtype(c, i);
        if (dt != SEAM_DTYPE_UNDEFINED && !cpu_is_float(dt))
            return check_refuse(c, "NonMaxSuppression on %s boxes or scores is not supported", seam_dtype_name(dt));
    }
    return SEAM_STATUS_OK;
}

static seam_status check_where(seam_check *c) {
    int32_t dt = check_in_dtype(c, 1);
    if (dt == SEAM_DTYPE_STRING) return check_refuse(c, "Where on strings is not supported");
    return SEAM_STATUS_OK;
}

const seam_cpu_binding seam_cpu_index[] = {
    {"", "TopK", 1, {run_topk, check_real_input}},
    {"", "NonZero", 9, {cpu_nonzero_run, check_real_input}},
    {"", "Where", 9, {run_where, check_where}},
    {"", "CumSum", 11, {run_cumsum, check_numeric_input}},
    {"", "OneHot", 9, {run_onehot, check_onehot}},
    {"", "Range", 11, {run_range, check_range}},
    {"", "Unique", 11, {run_unique, check_real_input}},
    {"", "NonMaxSuppression", 10, {run_nms, check_nms}},
};
const size_t seam_cpu_index_count = sizeof(seam_cpu_index) / sizeof(seam_cpu_index[0]);
