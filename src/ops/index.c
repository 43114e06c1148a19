/* Op family: indexing and sorting: TopK, NonZero, Where, CumSum, OneHot,
 * Range, Unique, NonMaxSuppression. ArgMax/ArgMin live with the reductions. */
#include <math.h>
#include <string.h>

#include "ops/infer.h"

static const ir_type *ranked(const seam_infer *ic, int32_t i) {
    const ir_type *t = infer_in(ic, i);
    return t && t->kind == IR_TYPE_TENSOR && t->rank >= 0 && t->rank <= INFER_MAX_RANK ? t : NULL;
}

/* TopK: Values and Indices are X's shape with dim `axis` = k. k is an
 * attribute before opset 10, input 1 after; a runtime k leaves it unknown. */
static void infer_topk(seam_infer *ic) {
    int32_t dt = infer_in_dtype(ic, 0);
    const ir_type *x = ranked(ic, 0);
    if (!x) {
        infer_set_dtype(ic, 0, dt);
        infer_set_dtype(ic, 1, SEAM_DTYPE_INT64);
        return;
    }
    int32_t axis = op_axis(node_attr_int(ic->n, "axis", -1), x->rank);
    if (axis < 0) return;
    int64_t k = -1;
    if (ic->n->opset < 10) {
        k = node_attr_int(ic->n, "k", -1);
    } else {
        int64_t kv[1];
        if (infer_in_ints(ic, 1, kv, 1) == 1) k = kv[0];
    }
    ir_dim out[INFER_MAX_RANK];
    if (x->rank > 0) memcpy(out, x->dims, sizeof(ir_dim) * (size_t)x->rank);
    out[axis] = k >= 0 ? (ir_dim){k, NULL} : IR_DIM_UNKNOWN;
    infer_set_tensor(ic, 0, dt, x->rank, out);
    infer_set_tensor(ic, 1, SEAM_DTYPE_INT64, x->rank, out);
}

/* NonZero: int64 [rank(X) (1 for a scalar), number of non-zeros]; the
 * count is data. */
static void infer_nonzero(seam_infer *ic) {
    int32_t r = infer_in_rank(ic, 0);
    int64_t dims[2] = {r == 0 ? 1 : r, -1}; /* a scalar counts as one axis, as numpy's nonzero does */
    if (r >= 0)
        infer_set_tensor_i64(ic, 0, SEAM_DTYPE_INT64, 2, dims);
    else
        infer_set_dtype(ic, 0, SEAM_DTYPE_INT64);
}

/* Where: X's dtype over the broadcast of all three. Small known integer
 * operands are computed, as torch's shape arithmetic uses Where to pick
 * between a shape and -1s. */
static void infer_where(seam_infer *ic) {
    const ir_type *ts[3] = {infer_in(ic, 0), infer_in(ic, 1), infer_in(ic, 2)};
    ir_dim out[INFER_MAX_RANK];
    int32_t rank = infer_broadcast(ts, 3, out);
    int32_t dt = infer_in_dtype(ic, 1);
    if (dt == SEAM_DTYPE_UNDEFINED) dt = infer_in_dtype(ic, 2);
    infer_set_tensor(ic, 0, dt, rank, out);

    const ir_tensor *c = infer_in_const(ic, 0), *tx = infer_in_const(ic, 1), *ty = infer_in_const(ic, 2);
    int64_t x[64], y[64], r[64];
    int32_t nx = infer_in_ints(ic, 1, x, 64), ny = infer_in_ints(ic, 2, y, 64);
    if (!c || c->dtype != SEAM_DTYPE_BOOL || c->numel > 64 || nx < 0 || ny < 0 || tx->dtype != ty->dtype) return;
    int32_t nc = (int32_t)c->numel, n = nc;
    if (nx > n) n = nx;
    if (ny > n) n = ny;
    /* only the element-wise and scalar cases shape code uses */
    if ((nc != n && nc != 1) || (nx != n && nx != 1) || (ny != n && ny != 1)) return;
    const ir_tensor *big = nc == n ? c : nx == n ? tx : ty;
    const uint8_t *cd = c->data;
    for (int32_t k = 0; k < n; k++)
        r[k] = cd[nc == 1 ? 0 : k] ? x[nx == 1 ? 0 : k] : y[ny == 1 ? 0 : k];
    if (tx->dtype == SEAM_DTYPE_INT64) {
        infer_set_const(ic, 0, SEAM_DTYPE_INT64, big->rank, big->dims, r);
    } else {
        int32_t r32[64];
        for (int32_t k = 0; k < n; k++) r32[k] = (int32_t)r[k];
        infer_set_const(ic, 0, SEAM_DTYPE_INT32, big->rank, big->dims, r32);
    }
}

/* OneHot: indices' shape with depth inserted at axis, in values' dtype. */
static void infer_onehot(seam_infer *ic) {
    int32_t dt = infer_in_dtype(ic, 2);
    const ir_type *x = ranked(ic, 0);
    if (!x || x->rank + 1 > INFER_MAX_RANK) {
        infer_set_dtype(ic, 0, dt);
        return;
    }
    int32_t r = x->rank + 1;
    int32_t axis = op_axis(node_attr_int(ic->n, "axis", -1), r);
    if (axis < 0) return;
    int64_t depth = -1;
    const ir_tensor *d = infer_in_const(ic, 1);
    if (d && d->numel == 1) {
        switch (d->dtype) {
        case SEAM_DTYPE_INT64: { int64_t v; memcpy(&v, d->data, 8); depth = v; break; }
        case SEAM_DTYPE_INT32: { int32_t v; memcpy(&v, d->data, 4); depth = v; break; }
        case SEAM_DTYPE_FLOAT32: { float v; memcpy(&v, d->data, 4); depth = v >= 0 && v <= IR_MAX_DIM ? (int64_t)v : -1; break; }
        case SEAM_DTYPE_FLOAT64: { double v; memcpy(&v, d->data, 8); depth = v >= 0 && v <= IR_MAX_DIM ? (int64_t)v : -1; break; }
        default: break;
        }
    }
    ir_dim out[INFER_MAX_RANK];
    for (int32_t k = 0, j = 0; k < r; k++)
        out[k] = k == axis ? (depth >= 0 ? (ir_dim){depth, NULL} : IR_DIM_UNKNOWN) : x->dims[j++];
    infer_set_tensor(ic, 0, dt, r, out);
}

/* Range: 1-D of max(ceil((limit - start) / delta), 0) elements. Known
 * integer inputs give a known (small) result, which shape code consumes. */
static bool scalar_double(const ir_tensor *t, double *out) {
    if (!t || t->numel != 1) return false;
    switch (t->dtype) {
    case SEAM_DTYPE_FLOAT32: { float v; memcpy(&v, t->data, 4); *out = v; return true; }
    case SEAM_DTYPE_FLOAT64: memcpy(out, t->data, 8); return true;
    case SEAM_DTYPE_INT16: { int16_t v; memcpy(&v, t->data, 2); *out = v; return true; }
    case SEAM_DTYPE_INT32: { int32_t v; memcpy(&v, t->data, 4); *out = v; return true; }
    case SEAM_DTYPE_INT64: { int64_t v; memcpy(&v, t->data, 8); *out = (double)v; return true; }
    default: return false;
    }
}

static void infer_range(seam_infer *ic) {
    int32_t dt = infer_in_dtype(ic, 0);
    double s, l, d;
    const ir_tensor *ts = infer_in_const(ic, 0), *tl = infer_in_const(ic, 1), *td = infer_in_const(ic, 2);
    if (!scalar_double(ts, &s) || !scalar_double(tl, &l) || !scalar_double(td, &d) || d == 0 ||
        !isfinite(s) || !isfinite(l) || !isfinite(d)) {
        int64_t unk = -1;
        infer_set_tensor_i64(ic, 0, dt, 1, &unk);
        return;
    }
    double nf = ceil((l - s) / d);
    int64_t n = nf > 0 ? (nf < (double)IR_MAX_DIM ? (int64_t)nf : -1) : 0;
    infer_set_tensor_i64(ic, 0, dt, 1, &n);
    if (n < 0 || n > 64 || (dt != SEAM_DTYPE_INT64 && dt != SEAM_DTYPE_INT32)) return;
    int64_t si, di;
    int64_t v[64];
    int32_t v32[64];
    int64_t one;
    si = (int64_t)s;
    di = (int64_t)d;
    for (int64_t k = 0; k < n; k++) {
        v[k] = si + k * di;
        v32[k] = (int32_t)v[k];
    }
    one = n;
    infer_set_const(ic, 0, dt, 1, &one, dt == SEAM_DTYPE_INT64 ? (const void *)v : (const void *)v32);
}

/* Unique: Y has X's dtype and either 1-D (flattened) or X's rank with the
 * axis dim unknown; indices, inverse_indices and counts are int64 1-D. */
static void infer_unique(seam_infer *ic) {
    int32_t dt = infer_in_dtype(ic, 0);
    const ir_type *x = ranked(ic, 0);
    const ir_attr *ax = node_attr(ic->n, "axis");
    int64_t unk = -1;
    if (!ax) {
        infer_set_tensor_i64(ic, 0, dt, 1, &unk);
    } else if (x) {
        int32_t axis = op_axis(ax->i, x->rank);
        if (axis < 0) return;
        ir_dim out[INFER_MAX_RANK];
        if (x->rank > 0) memcpy(out, x->dims, sizeof(ir_dim) * (size_t)x->rank);
        out[axis] = IR_DIM_UNKNOWN;
        infer_set_tensor(ic, 0, dt, x->rank, out);
    } else {
        infer_set_dtype(ic, 0, dt);
    }
    infer_set_tensor_i64(ic, 1, SEAM_DTYPE_INT64, 1, &unk);
    /* inverse_indices: one per element of X (flattened) or per slice */
    int64_t inv = -1;
    if (x && !ax) {
        inv = 1;
        for (int32_t k = 0; k < x->rank && inv >= 0; k++)
            if (x->dims[k].v < 0 || __builtin_mul_overflow(inv, x->dims[k].v, &inv)) inv = -1;
    } else if (x && ax) {
        int32_t axis = op_axis(ax->i, x->rank);
        inv = axis >= 0 ? x->dims[axis].v : -1;
    }
    infer_set_tensor_i64(ic, 2, SEAM_DTYPE_INT64, 1, &inv);
    infer_set_tensor_i64(ic, 3, SEAM_DTYPE_INT64, 1, &unk);
}

/* NonMaxSuppression: int64 [selected, 3]. */
static void infer_nms(seam_infer *ic) {
    int64_t dims[2] = {-1, 3};
    infer_set_tensor_i64(ic, 0, SEAM_DTYPE_INT64, 2, dims);
}

const seam_op_def seam_ops_index[] = {
    {"", "TopK", 1, infer_topk},
    {"", "NonZero", 9, infer_nonzero},
    {"", "Where", 9, infer_where},
    {"", "CumSum", 11, infer_same_as_input},
    {"", "OneHot", 9, infer_onehot},
    {"", "Range", 11, infer_range},
    {"", "Unique", 11, infer_unique},
    {"", "NonMaxSuppression", 10, infer_nms},
};
const size_t seam_ops_index_count = sizeof(seam_ops_index) / sizeof(seam_ops_index[0]);
