/* CPU kernels: the Reduce* family, ArgMax and ArgMin.
 *
 * The input is viewed as [outer, len, inner] after moving the reduced axes
 * together: when they are contiguous (the usual case: the last axis, or
 * the spatial axes) no copy is made; otherwise the input is first
 * transposed into that order. Sums accumulate in double (int64 for
 * integer sums and products, which stay exact). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu.h"

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
        int32_t a = cpu_axis(axes[i], x->rank);
        if (a < 0) return false;
        red[a] = true;
    }
    return true;
}

typedef struct red_job {
    rop op;
    const seam_tensor *x; /* [outer, len, inner], possibly a transposed copy */
    seam_tensor *y;
    int64_t len, inner;
} red_job;

static double finish_f(rop op, double acc, int64_t len) {
    switch (op) {
    case R_MEAN: return len ? acc / (double)len : NAN;
    case R_L2: return sqrt(acc);
    case R_LOGSUM: return log(acc);
    default: return acc;
    }
}

static void reduce_range(void *arg, int64_t begin, int64_t end) {
    red_job *j = arg;
    int32_t dt = j->x->dtype;
    bool is_int = !cpu_is_float(dt);
    for (int64_t o = begin; o < end; o++) {
        int64_t outer = o / j->inner, in = o % j->inner, base = outer * j->len * j->inner + in;
        if (dt == SEAM_DTYPE_FLOAT32 && j->inner == 1 && (j->op == R_SUM || j->op == R_MEAN)) {
            const float *p = (const float *)j->x->data + base;
            double acc = 0;
            for (int64_t i = 0; i < j->len; i++) acc += p[i];
            cpu_set(j->y->data, j->y->dtype, o, finish_f(j->op, acc, j->len));
            continue;
        }
        if (is_int && j->op != R_MEAN && j->op != R_L2 && j->op != R_LOGSUM && j->op != R_LOGSUMEXP) {
            int64_t acc = j->op == R_PROD ? 1 : j->op == R_MAX ? INT64_MIN : j->op == R_MIN ? INT64_MAX : 0;
            for (int64_t i = 0; i < j->len; i++) {
                int64_t v = cpu_get_i64(j->x->data, dt, base + i * j->inner);
                switch (j->op) {
                case R_MAX: acc = v > acc ? v : acc; break;
                case R_MIN: acc = v < acc ? v : acc; break;
                case R_PROD: acc = (int64_t)((uint64_t)acc * (uint64_t)v); break;
                case R_SUMSQ: acc = (int64_t)((uint64_t)acc + (uint64_t)v * (uint64_t)v); break;
                case R_L1: acc = (int64_t)((uint64_t)acc + (uint64_t)(v < 0 ? -v : v)); break;
                default: acc = (int64_t)((uint64_t)acc + (uint64_t)v); break;
                }
            }
            cpu_set_i64(j->y->data, j->y->dtype, o, acc);
            continue;
        }
        double acc = j->op == R_PROD ? 1 : j->op == R_MAX ? -INFINITY : j->op == R_MIN ? INFINITY : 0, mx = -INFINITY;
        if (j->op == R_LOGSUMEXP)
            for (int64_t i = 0; i < j->len; i++) mx = fmax(mx, cpu_get(j->x->data, dt, base + i * j->inner));
        for (int64_t i = 0; i < j->len; i++) {
            double v = cpu_get(j->x->data, dt, base + i * j->inner);
            switch (j->op) {
            case R_MAX: acc = v != v || v > acc ? v : acc; break;
            case R_MIN: acc = v != v || v < acc ? v : acc; break;
            case R_PROD: acc *= v; break;
            case R_SUMSQ: case R_L2: acc += v * v; break;
            case R_L1: acc += fabs(v); break;
            case R_LOGSUMEXP: acc += exp(v - mx); break;
            default: acc += v; break;
            }
        }
        double v = j->op == R_LOGSUMEXP ? (j->len ? mx + log(acc) : -INFINITY) : finish_f(j->op, acc, j->len);
        if (is_int) v = j->op == R_MEAN ? trunc(v) : v; /* integer mean truncates */
        cpu_set(j->y->data, j->y->dtype, o, v);
    }
}

/* Moves the reduced axes of x behind the kept ones (a copy when they are
 * not already together). Sets outer/len/inner and *view (x or the copy,
 * which the caller frees when it differs from x). */
static seam_status group_axes(seam_kernel *k, const seam_tensor *x, const bool *red, seam_tensor *view, int64_t *outer,
                              int64_t *len, int64_t *inner) {
    int32_t first = -1, last = -1;
    for (int32_t d = 0; d < x->rank; d++)
        if (red[d]) {
            if (first < 0) first = d;
            last = d;
        }
    bool together = true;
    for (int32_t d = first; first >= 0 && d <= last; d++) together &= red[d];
    *view = *x;
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
    size_t es = cpu_dtype_size(x->dtype);
    void *buf = malloc(x->nbytes ? x->nbytes : 1);
    if (!buf) return kernel_oom(k);
    int64_t st[SEAM_MAX_RANK], idx[SEAM_MAX_RANK] = {0}, pd[SEAM_MAX_RANK];
    cpu_strides(x->rank, x->dims, st);
    for (int32_t d = 0; d < x->rank; d++) pd[d] = x->dims[perm[d]];
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t off = 0;
        for (int32_t d = 0; d < x->rank; d++) off += idx[d] * st[perm[d]];
        cpu_copy_elem(buf, i, x->data, off, es);
        for (int32_t d = x->rank - 1; d >= 0; d--) {
            if (++idx[d] < pd[d]) break;
            idx[d] = 0;
        }
    }
    view->data = buf;
    *outer = cpu_span(pd, 0, n_kept), *len = cpu_span(pd, n_kept, x->rank), *inner = 1;
    return SEAM_STATUS_OK;
}

static seam_status run_reduce(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (!x) return kernel_fail(k, "needs an input");
    red_job j = {R_SUM, NULL, NULL, 0, 0};
    for (size_t i = 0; i < sizeof(rops) / sizeof(rops[0]); i++)
        if (strcmp(k->n->op_type, rops[i].name) == 0) j.op = rops[i].op;
    bool from_input = k->n->opset >= (j.op == R_SUM ? 13 : 18), red[SEAM_MAX_RANK], noop;
    if (!reduced_axes(k, x, from_input, red, &noop)) return kernel_fail(k, "axes must be integers in range for rank %d", x->rank);
    bool keep = node_attr_int(k->n, "keepdims", 1) != 0;
    int64_t dims[SEAM_MAX_RANK];
    int32_t r = 0;
    for (int32_t d = 0; d < x->rank; d++) {
        if (!red[d]) dims[r++] = x->dims[d];
        else if (keep) dims[r++] = 1;
    }
    seam_tensor *y = kernel_out(k, 0, x->dtype, r, dims);
    if (!y) return kernel_oom(k);
    if (noop) { /* noop_with_empty_axes: the input as is */
        if (x->nbytes) memcpy(y->data, x->data, x->nbytes);
        return SEAM_STATUS_OK;
    }
    if ((j.op == R_MAX || j.op == R_MIN) && y->numel > 0 && x->numel == 0)
        return kernel_fail(k, "%s over an empty axis has no value", k->n->op_type);
    seam_tensor view;
    int64_t outer = 0, len = 0, inner = 1;
    seam_status st = group_axes(k, x, red, &view, &outer, &len, &inner);
    if (st) return st;
    j.x = &view, j.y = y, j.len = len, j.inner = inner;
    seam_parallel_for(k->pool, outer * inner, 64, reduce_range, &j);
    if (view.data != x->data) free(view.data);
    return SEAM_STATUS_OK;
}

static seam_status check_reduce(seam_check *c) {
    int32_t dt = check_in_dtype(c, 0);
    if (dt != SEAM_DTYPE_UNDEFINED && !cpu_is_float(dt) && !cpu_is_int(dt) && dt != SEAM_DTYPE_BOOL)
        return check_refuse(c, "%s on %s is not supported", c->n->op_type, seam_dtype_name(dt));
    return SEAM_STATUS_OK;
}

/* ---- ArgMax, ArgMin ---- */

static seam_status run_arg(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (!x) return kernel_fail(k, "needs an input");
    int32_t axis = cpu_axis(node_attr_int(k->n, "axis", 0), x->rank);
    if (axis < 0) return kernel_fail(k, "axis is out of range for rank %d", x->rank);
    bool keep = node_attr_int(k->n, "keepdims", 1) != 0, last = node_attr_int(k->n, "select_last_index", 0) != 0;
    bool is_max = k->n->op_type[3] == 'M' && k->n->op_type[4] == 'a';
    int64_t dims[SEAM_MAX_RANK];
    int32_t r = 0;
    for (int32_t d = 0; d < x->rank; d++) {
        if (d != axis) dims[r++] = x->dims[d];
        else if (keep) dims[r++] = 1;
    }
    int64_t len = x->dims[axis];
    if (len == 0) return kernel_fail(k, "%s over an empty axis has no value", k->n->op_type);
    seam_tensor *y = kernel_out(k, 0, SEAM_DTYPE_INT64, r, dims);
    if (!y) return kernel_oom(k);
    int64_t inner = cpu_span(x->dims, axis + 1, x->rank), outer = cpu_span(x->dims, 0, axis);
    bool fl = cpu_is_float(x->dtype);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * len * inner + i, best = 0;
            double bv = fl ? cpu_get(x->data, x->dtype, base) : 0;
            int64_t bi = fl ? 0 : cpu_get_i64(x->data, x->dtype, base);
            for (int64_t q = 1; q < len; q++) {
                bool better;
                if (fl) {
                    double v = cpu_get(x->data, x->dtype, base + q * inner);
                    better = is_max ? (last ? v >= bv : v > bv) : (last ? v <= bv : v < bv);
                    if (better) bv = v;
                } else {
                    int64_t v = cpu_get_i64(x->data, x->dtype, base + q * inner);
                    better = is_max ? (last ? v >= bi : v > bi) : (last ? v <= bi : v < bi);
                    if (better) bi = v;
                }
                if (better) best = q;
            }
            ((int64_t *)y->data)[o * inner + i] = best;
        }
    return SEAM_STATUS_OK;
}

#define RED {run_reduce, check_reduce}

const seam_cpu_binding seam_cpu_reduce[] = {
    {"", "ReduceSum", 1, RED}, {"", "ReduceMean", 1, RED}, {"", "ReduceMax", 1, RED}, {"", "ReduceMin", 1, RED},
    {"", "ReduceProd", 1, RED}, {"", "ReduceSumSquare", 1, RED}, {"", "ReduceL1", 1, RED}, {"", "ReduceL2", 1, RED},
    {"", "ReduceLogSum", 1, RED}, {"", "ReduceLogSumExp", 1, RED},
    {"", "ArgMax", 1, {run_arg, check_reduce}}, {"", "ArgMin", 1, {run_arg, check_reduce}},
};
const size_t seam_cpu_reduce_count = sizeof(seam_cpu_reduce) / sizeof(seam_cpu_reduce[0]);
