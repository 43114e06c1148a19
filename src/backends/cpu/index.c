/* CPU kernels: TopK, NonZero, Where, CumSum, OneHot, Range, Unique,
 * NonMaxSuppression. Several have outputs whose size depends on the data;
 * they size them here and kernel_out allocates at run time. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu.h"


/* ---- TopK ---- */

typedef struct topk_item {
    double v;
    int64_t i;
} topk_item;

static int cmp_largest(const void *a, const void *b) {
    const topk_item *x = a, *y = b;
    if (x->v != y->v) {
        if (x->v != x->v) return -1; /* NaN first, as numpy's sort puts it last of ascending */
        if (y->v != y->v) return 1;
        return x->v > y->v ? -1 : 1;
    }
    return x->i < y->i ? -1 : x->i > y->i;
}

static int cmp_smallest(const void *a, const void *b) {
    const topk_item *x = a, *y = b;
    if (x->v != y->v) {
        if (x->v != x->v) return 1;
        if (y->v != y->v) return -1;
        return x->v < y->v ? -1 : 1;
    }
    return x->i < y->i ? -1 : x->i > y->i;
}

static seam_status run_topk(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (!x || x->rank < 1) return kernel_fail(k, "needs an input of rank >= 1");
    int64_t kk;
    if (k->n->opset < 10) {
        kk = node_attr_int(k->n, "k", -1);
    } else {
        const seam_tensor *kt = kernel_in(k, 1);
        if (!kt || kt->numel != 1 || !cpu_is_int(kt->dtype)) return kernel_fail(k, "K must be a one-element integer tensor");
        kk = cpu_get_i64(kt->data, kt->dtype, 0);
    }
    int32_t axis = cpu_axis(node_attr_int(k->n, "axis", -1), x->rank);
    if (axis < 0) return kernel_fail(k, "axis is out of range for rank %d", x->rank);
    int64_t len = x->dims[axis];
    if (kk < 0 || kk > len) return kernel_fail(k, "K = %lld is out of range for an axis of %lld", (long long)kk, (long long)len);
    bool largest = node_attr_int(k->n, "largest", 1) != 0;
    int64_t dims[SEAM_MAX_RANK];
    memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
    dims[axis] = kk;
    seam_tensor *y = kernel_out(k, 0, x->dtype, x->rank, dims);
    seam_tensor *ind = kernel_has_out(k, 1) ? kernel_out(k, 1, SEAM_DTYPE_INT64, x->rank, dims) : NULL;
    if (!y || (kernel_has_out(k, 1) && !ind)) return kernel_oom(k);
    topk_item *items = kernel_scratch(k, sizeof(topk_item) * (size_t)(len + 1));
    if (!items) return kernel_oom(k);
    int64_t inner = cpu_span(x->dims, axis + 1, x->rank), outer = cpu_span(x->dims, 0, axis);
    size_t es = cpu_dtype_size(x->dtype);
    bool fl = cpu_is_float(x->dtype);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * len * inner + i;
            for (int64_t q = 0; q < len; q++)
                items[q] = (topk_item){fl ? cpu_get(x->data, x->dtype, base + q * inner)
                                          : (double)cpu_get_i64(x->data, x->dtype, base + q * inner), q};
            /* sorted or not, the k best in order: the spec leaves the order
             * of an unsorted result open */
            qsort(items, (size_t)len, sizeof(topk_item), largest ? cmp_largest : cmp_smallest);
            for (int64_t q = 0; q < kk; q++) {
                int64_t at = o * kk * inner + q * inner + i;
                cpu_copy_elem(y->data, at, x->data, base + items[q].i * inner, es);
                if (ind) ((int64_t *)ind->data)[at] = items[q].i;
            }
        }
    return SEAM_STATUS_OK;
}

/* ---- NonZero ---- */

static seam_status run_nonzero(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (!x) return kernel_fail(k, "needs an input");
    int64_t n = 0;
    bool fl = cpu_is_float(x->dtype);
    for (int64_t i = 0; i < x->numel; i++) n += fl ? cpu_get(x->data, x->dtype, i) != 0 : cpu_get_i64(x->data, x->dtype, i) != 0;
    int32_t r = x->rank ? x->rank : 1;
    int64_t dims[2] = {x->rank, n};
    seam_tensor *y = kernel_out(k, 0, SEAM_DTYPE_INT64, 2, dims);
    if (!y) return kernel_oom(k);
    int64_t *out = y->data, idx[SEAM_MAX_RANK] = {0}, at = 0;
    for (int64_t i = 0; i < x->numel; i++) {
        bool nz = fl ? cpu_get(x->data, x->dtype, i) != 0 : cpu_get_i64(x->data, x->dtype, i) != 0;
        if (nz) {
            for (int32_t d = 0; d < x->rank; d++) out[d * n + at] = idx[d];
            at++;
        }
        for (int32_t d = x->rank - 1; d >= 0; d--) {
            if (++idx[d] < x->dims[d]) break;
            idx[d] = 0;
        }
    }
    (void)r;
    return SEAM_STATUS_OK;
}

/* ---- Where ---- */

static seam_status run_where(seam_kernel *k) {
    const seam_tensor *c = kernel_in(k, 0), *a = kernel_in(k, 1), *b = kernel_in(k, 2);
    if (!c || !a || !b || c->dtype != SEAM_DTYPE_BOOL) return kernel_fail(k, "needs a bool condition and two values");
    if (a->dtype != b->dtype) return kernel_fail(k, "X and Y have different dtypes");
    const seam_tensor *ins[3] = {c, a, b};
    int32_t rank;
    int64_t dims[SEAM_MAX_RANK];
    if (!cpu_broadcast(ins, 3, &rank, dims)) return kernel_fail(k, "condition, X and Y do not broadcast");
    seam_tensor *y = kernel_out(k, 0, a->dtype, rank, dims);
    if (!y) return kernel_oom(k);
    size_t es = cpu_dtype_size(a->dtype);
    cpu_iter it;
    cpu_iter_init(&it, rank, dims, ins, 3);
    const uint8_t *cd = c->data;
    for (int64_t i = 0; i < y->numel; i++, cpu_iter_next(&it)) {
        if (cd[it.off[0]]) cpu_copy_elem(y->data, i, a->data, it.off[1], es);
        else cpu_copy_elem(y->data, i, b->data, it.off[2], es);
    }
    return SEAM_STATUS_OK;
}

/* ---- CumSum ---- */

static seam_status run_cumsum(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0), *ax = kernel_in(k, 1);
    if (!x || !ax || ax->numel != 1 || !cpu_is_int(ax->dtype)) return kernel_fail(k, "needs X and a scalar integer axis");
    int32_t axis = cpu_axis(cpu_get_i64(ax->data, ax->dtype, 0), x->rank);
    if (axis < 0) return kernel_fail(k, "axis is out of range for rank %d", x->rank);
    bool excl = node_attr_int(k->n, "exclusive", 0) != 0, rev = node_attr_int(k->n, "reverse", 0) != 0;
    seam_tensor *y = kernel_out(k, 0, x->dtype, x->rank, x->dims);
    if (!y) return kernel_oom(k);
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
                } else {
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
    if (!ix || !dp || !vals || dp->numel != 1 || vals->numel != 2) return kernel_fail(k, "needs indices, a scalar depth and two values");
    double dd = cpu_get(dp->data, dp->dtype, 0);
    if (!(dd >= 1 && dd <= (double)(1 << 24))) return kernel_fail(k, "depth %g is out of range", dd);
    int64_t depth = (int64_t)dd;
    int32_t r = ix->rank + 1;
    if (r > SEAM_MAX_RANK) return kernel_fail(k, "result rank too large");
    int32_t axis = cpu_axis(node_attr_int(k->n, "axis", -1), r);
    if (axis < 0) return kernel_fail(k, "axis is out of range");
    int64_t dims[SEAM_MAX_RANK];
    for (int32_t d = 0, j = 0; d < r; d++) dims[d] = d == axis ? depth : ix->dims[j++];
    int64_t numel = seam_shape_numel(dims, r);
    if (numel < 0 || numel > MAX_DATA_NUMEL) return kernel_fail(k, "the result is too large");
    seam_tensor *y = kernel_out(k, 0, vals->dtype, r, dims);
    if (!y) return kernel_oom(k);
    size_t es = cpu_dtype_size(vals->dtype);
    int64_t outer = cpu_span(ix->dims, 0, axis), inner = cpu_span(ix->dims, axis, ix->rank);
    for (int64_t i = 0; i < numel; i++) cpu_copy_elem(y->data, i, vals->data, 0, es);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            double v = cpu_get(ix->data, ix->dtype, o * inner + i);
            int64_t h = (int64_t)(v < 0 ? v + (double)depth : v);
            if (v < -(double)depth || h < 0 || h >= depth) continue; /* out of range: all off */
            cpu_copy_elem(y->data, (o * depth + h) * inner + i, vals->data, 1, es);
        }
    return SEAM_STATUS_OK;
}

/* ---- Range ---- */

static seam_status run_range(seam_kernel *k) {
    const seam_tensor *s = kernel_in(k, 0), *l = kernel_in(k, 1), *d = kernel_in(k, 2);
    if (!s || !l || !d || s->numel != 1 || l->numel != 1 || d->numel != 1) return kernel_fail(k, "start, limit and delta must be scalars");
    int32_t dt = s->dtype;
    int64_t n;
    if (cpu_is_float(dt)) {
        double a = cpu_get(s->data, dt, 0), b = cpu_get(l->data, dt, 0), c = cpu_get(d->data, dt, 0);
        if (c == 0 || !isfinite(a) || !isfinite(b) || !isfinite(c)) return kernel_fail(k, "delta is 0 or a bound is not finite");
        double f = ceil((b - a) / c);
        if (f > (double)MAX_DATA_NUMEL) return kernel_fail(k, "the range has too many elements");
        n = f > 0 ? (int64_t)f : 0;
        seam_tensor *y = kernel_out(k, 0, dt, 1, &n);
        if (!y) return kernel_oom(k);
        for (int64_t i = 0; i < n; i++) cpu_set(y->data, dt, i, a + (double)i * c);
        return SEAM_STATUS_OK;
    }
    int64_t a = cpu_get_i64(s->data, dt, 0), b = cpu_get_i64(l->data, dt, 0), c = cpu_get_i64(d->data, dt, 0);
    if (c == 0) return kernel_fail(k, "delta is 0");
    double f = ceil(((double)b - (double)a) / (double)c);
    if (f > (double)MAX_DATA_NUMEL) return kernel_fail(k, "the range has too many elements");
    n = f > 0 ? (int64_t)f : 0;
    seam_tensor *y = kernel_out(k, 0, dt, 1, &n);
    if (!y) return kernel_oom(k);
    for (int64_t i = 0; i < n; i++) cpu_set_i64(y->data, dt, i, a + i * c);
    return SEAM_STATUS_OK;
}

/* ---- Unique ---- */

typedef struct uniq_ctx {
    const seam_tensor *x;
    int64_t slice, inner, len; /* a slice = the elements of one index along the axis */
} uniq_ctx;

static int cmp_slice(int64_t a, int64_t b, const uniq_ctx *u) {
    int64_t outer = u->x->numel / (u->len > 0 && u->inner > 0 ? u->len * u->inner : 1);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < u->inner; i++) {
            int64_t pa = (o * u->len + a) * u->inner + i, pb = (o * u->len + b) * u->inner + i;
            double x = cpu_get(u->x->data, u->x->dtype, pa), y = cpu_get(u->x->data, u->x->dtype, pb);
            if (x != y) return x < y ? -1 : 1;
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
    const ir_attr *aa = ir_node_attr(k->n, "axis");
    bool sorted = node_attr_int(k->n, "sorted", 1) != 0;
    seam_tensor flat = *x;
    int32_t axis = 0;
    if (!aa) {
        flat.rank = 1;
        flat.dims[0] = x->numel;
    } else {
        axis = cpu_axis(aa->i, x->rank);
        if (axis < 0) return kernel_fail(k, "axis is out of range");
    }
    uniq_ctx u = {&flat, 0, cpu_span(flat.dims, axis + 1, flat.rank), flat.dims[axis]};
    int64_t len = u.len;
    int64_t *order = malloc(sizeof(int64_t) * (size_t)(3 * len + 1));
    if (!order) return kernel_oom(k);
    int64_t *first = order + len, *inverse = order + 2 * len;
    for (int64_t i = 0; i < len; i++) order[i] = i;
    sort_slices(order, inverse, len, &u); /* inverse is free scratch until later */
    /* groups of equal slices in sorted order; each group's first index */
    int64_t n_u = 0;
    int64_t *group_of = malloc(sizeof(int64_t) * (size_t)(len + 1)), *counts = malloc(sizeof(int64_t) * (size_t)(len + 1));
    if (!group_of || !counts) {
        free(order), free(group_of), free(counts);
        return kernel_oom(k);
    }
    for (int64_t i = 0; i < len; i++) {
        if (i == 0 || cmp_slice(order[i - 1], order[i], &u) != 0) {
            first[n_u] = order[i];
            counts[n_u] = 0;
            n_u++;
        }
        group_of[order[i]] = n_u - 1;
        counts[n_u - 1]++;
    }
    /* unsorted: groups in order of first occurrence */
    int64_t *rank_of = malloc(sizeof(int64_t) * (size_t)(n_u + 1)), *by = malloc(sizeof(int64_t) * (size_t)(n_u + 1));
    if (!rank_of || !by) {
        free(order), free(group_of), free(counts), free(rank_of), free(by);
        return kernel_oom(k);
    }
    for (int64_t g = 0; g < n_u; g++) by[g] = g;
    if (!sorted) { /* insertion by first index (groups are few in practice) */
        for (int64_t a = 1; a < n_u; a++)
            for (int64_t b = a; b > 0 && first[by[b]] < first[by[b - 1]]; b--) {
                int64_t t = by[b];
                by[b] = by[b - 1];
                by[b - 1] = t;
            }
    }
    for (int64_t g = 0; g < n_u; g++) rank_of[by[g]] = g;
    for (int64_t i = 0; i < len; i++) inverse[i] = rank_of[group_of[i]];
    int64_t dims[SEAM_MAX_RANK];
    memcpy(dims, flat.dims, sizeof(int64_t) * (size_t)flat.rank);
    dims[axis] = n_u;
    seam_status st = SEAM_STATUS_OK;
    seam_tensor *y = kernel_out(k, 0, x->dtype, flat.rank, dims);
    if (!y) {
        st = kernel_oom(k);
        goto done;
    }
    size_t es = cpu_dtype_size(x->dtype);
    int64_t outer = flat.numel / (len > 0 && u.inner > 0 ? len * u.inner : 1);
    for (int64_t g = 0; g < n_u; g++)
        for (int64_t o = 0; o < outer; o++)
            for (int64_t i = 0; i < u.inner; i++)
                cpu_copy_elem(y->data, (o * n_u + g) * u.inner + i, x->data, (o * len + first[by[g]]) * u.inner + i, es);
    if (kernel_has_out(k, 1)) {
        seam_tensor *t = kernel_out(k, 1, SEAM_DTYPE_INT64, 1, &n_u);
        if (!t) {
            st = kernel_oom(k);
            goto done;
        }
        for (int64_t g = 0; g < n_u; g++) ((int64_t *)t->data)[g] = first[by[g]];
    }
    if (kernel_has_out(k, 2)) {
        seam_tensor *t = kernel_out(k, 2, SEAM_DTYPE_INT64, 1, &len);
        if (!t) {
            st = kernel_oom(k);
            goto done;
        }
        memcpy(t->data, inverse, sizeof(int64_t) * (size_t)len);
    }
    if (kernel_has_out(k, 3)) {
        seam_tensor *t = kernel_out(k, 3, SEAM_DTYPE_INT64, 1, &n_u);
        if (!t) {
            st = kernel_oom(k);
            goto done;
        }
        for (int64_t g = 0; g < n_u; g++) ((int64_t *)t->data)[g] = counts[by[g]];
    }
done:
    free(order), free(group_of), free(counts), free(rank_of), free(by);
    return st;
}

/* ---- NonMaxSuppression ---- */

typedef struct nms_box {
    double score;
    int64_t i;
} nms_box;

static int cmp_score(const void *a, const void *b) {
    const nms_box *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

static void corners(const seam_tensor *b, int64_t at, bool center, double *y1, double *x1, double *y2, double *x2) {
    double a = cpu_get(b->data, b->dtype, at), c = cpu_get(b->data, b->dtype, at + 1);
    double d = cpu_get(b->data, b->dtype, at + 2), e = cpu_get(b->data, b->dtype, at + 3);
    if (center) { /* [x_center, y_center, width, height] */
        *x1 = a - d / 2, *x2 = a + d / 2, *y1 = c - e / 2, *y2 = c + e / 2;
    } else { /* [y1, x1, y2, x2], either corner order */
        *y1 = fmin(a, d), *y2 = fmax(a, d), *x1 = fmin(c, e), *x2 = fmax(c, e);
    }
}

static seam_status run_nms(seam_kernel *k) {
    const seam_tensor *boxes = kernel_in(k, 0), *scores = kernel_in(k, 1);
    const seam_tensor *tmax = kernel_in(k, 2), *tiou = kernel_in(k, 3), *tsc = kernel_in(k, 4);
    if (!boxes || !scores || boxes->rank != 3 || boxes->dims[2] != 4 || scores->rank != 3 ||
        scores->dims[0] != boxes->dims[0] || scores->dims[2] != boxes->dims[1])
        return kernel_fail(k, "needs boxes [B, N, 4] and scores [B, C, N]");
    int64_t max_out = tmax && tmax->numel ? cpu_get_i64(tmax->data, tmax->dtype, 0) : 0;
    double iou_t = tiou && tiou->numel ? cpu_get(tiou->data, tiou->dtype, 0) : 0;
    bool has_st = tsc && tsc->numel;
    double sc_t = has_st ? cpu_get(tsc->data, tsc->dtype, 0) : 0;
    bool center = node_attr_int(k->n, "center_point_box", 0) != 0;
    int64_t B = boxes->dims[0], C = scores->dims[1], N = boxes->dims[1];
    if (max_out < 0) max_out = 0;
    nms_box *cand = malloc(sizeof(nms_box) * (size_t)(N + 1));
    int64_t *sel = malloc(sizeof(int64_t) * (size_t)(N + 1));
    int64_t *out = malloc(sizeof(int64_t) * 3 * (size_t)(B * C * (max_out < N ? max_out : N) + 1));
    if (!cand || !sel || !out) {
        free(cand), free(sel), free(out);
        return kernel_oom(k);
    }
    int64_t n_out = 0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t c = 0; c < C; c++) {
            int64_t n = 0, n_sel = 0;
            for (int64_t i = 0; i < N; i++) {
                double s = cpu_get(scores->data, scores->dtype, (b * C + c) * N + i);
                if (!has_st || s > sc_t) cand[n++] = (nms_box){s, i};
            }
            qsort(cand, (size_t)n, sizeof(nms_box), cmp_score);
            for (int64_t q = 0; q < n && n_sel < max_out; q++) {
                double y1, x1, y2, x2;
                corners(boxes, (b * N + cand[q].i) * 4, center, &y1, &x1, &y2, &x2);
                bool keep = true;
                for (int64_t s = 0; s < n_sel && keep; s++) {
                    double v1, u1, v2, u2;
                    corners(boxes, (b * N + sel[s]) * 4, center, &v1, &u1, &v2, &u2);
                    double ih = fmin(y2, v2) - fmax(y1, v1), iw = fmin(x2, u2) - fmax(x1, u1);
                    double inter = ih > 0 && iw > 0 ? ih * iw : 0;
                    double uni = (y2 - y1) * (x2 - x1) + (v2 - v1) * (u2 - u1) - inter;
                    if (uni > 0 && inter / uni > iou_t) keep = false;
                }
                if (!keep) continue;
                sel[n_sel++] = cand[q].i;
                out[3 * n_out] = b, out[3 * n_out + 1] = c, out[3 * n_out + 2] = cand[q].i;
                n_out++;
            }
        }
    int64_t dims[2] = {n_out, 3};
    seam_tensor *y = kernel_out(k, 0, SEAM_DTYPE_INT64, 2, dims);
    if (y && n_out) memcpy(y->data, out, sizeof(int64_t) * 3 * (size_t)n_out);
    free(cand), free(sel), free(out);
    return y ? SEAM_STATUS_OK : kernel_oom(k);
}

static seam_status check_any_fixed(seam_check *c) {
    int32_t dt = check_in_dtype(c, 0);
    if (dt == SEAM_DTYPE_STRING) return check_refuse(c, "%s on strings is not supported", c->n->op_type);
    return SEAM_STATUS_OK;
}

static seam_status check_where(seam_check *c) {
    int32_t dt = check_in_dtype(c, 1);
    if (dt == SEAM_DTYPE_STRING) return check_refuse(c, "Where on strings is not supported");
    return SEAM_STATUS_OK;
}

const seam_cpu_binding seam_cpu_index[] = {
    {"", "TopK", 1, {run_topk, check_any_fixed}},
    {"", "NonZero", 9, {run_nonzero, check_any_fixed}},
    {"", "Where", 9, {run_where, check_where}},
    {"", "CumSum", 11, {run_cumsum, check_any_fixed}},
    {"", "OneHot", 9, {run_onehot, NULL}},
    {"", "Range", 11, {run_range, NULL}},
    {"", "Unique", 11, {run_unique, check_any_fixed}},
    {"", "NonMaxSuppression", 10, {run_nms, NULL}},
};
const size_t seam_cpu_index_count = sizeof(seam_cpu_index) / sizeof(seam_cpu_index[0]);
