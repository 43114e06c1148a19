/* Op family: tensor manipulation. Where the inputs are known small integer
 * constants (torch's shape arithmetic), Gather, Unsqueeze, Squeeze, Concat,
 * Slice and Reshape compute their constant outputs too. */
#include <string.h>

#include "ops/infer.h"

#define MAXC 64 /* the largest constant worth computing at inference */

/* The input's tensor type if its rank is known, else NULL. */
static const ir_type *ranked(const seam_infer *ic, int32_t i) {
    const ir_type *t = infer_in(ic, i);
    return t && t->kind == IR_TYPE_TENSOR && t->rank >= 0 && t->rank <= INFER_MAX_RANK ? t : NULL;
}

/* Integer list from input i (opset >= some version) or attribute name. */
static int32_t ints_from(const seam_infer *ic, int32_t input, const char *attr, int64_t *out, int32_t max) {
    if (input >= 0 && infer_has_input(ic, input)) return infer_in_ints(ic, input, out, max);
    const int64_t *a;
    int32_t n = attr ? node_attr_ints(ic->n, attr, &a) : -1;
    if (n < 0 || n > max) return -1;
    if (n > 0) memcpy(out, a, sizeof(int64_t) * (size_t)n);
    return n;
}

static int64_t dimv(const ir_dim *d) { return d->v; }

/* ---- Reshape ---- */
static void infer_reshape(seam_infer *ic) {
    int32_t dt = infer_in_dtype(ic, 0);
    int64_t shape[INFER_MAX_RANK];
    int32_t n = infer_in_ints(ic, 1, shape, INFER_MAX_RANK);
    const ir_type *x = ranked(ic, 0);
    if (n < 0) {
        const ir_type *s = ranked(ic, 1);
        int64_t r = s && s->rank == 1 ? s->dims[0].v : -1;
        if (r >= 0 && r <= INFER_MAX_RANK) {
            for (int32_t k = 0; k < r; k++) shape[k] = -1;
            infer_set_tensor_i64(ic, 0, dt, (int32_t)r, shape);
        } else {
            infer_set_dtype(ic, 0, dt);
        }
        return;
    }
    bool allowzero = node_attr_int(ic->n, "allowzero", 0) != 0;
    ir_dim out[INFER_MAX_RANK];
    int32_t minus = -1;
    int64_t known_prod = 1;
    bool all_known = true;
    for (int32_t k = 0; k < n; k++) {
        if (shape[k] == 0 && !allowzero) {
            out[k] = x && k < x->rank ? x->dims[k] : IR_DIM_UNKNOWN;
        } else if (shape[k] == -1) {
            if (minus >= 0) { /* two -1: invalid, leave unknown */
                infer_set_dtype(ic, 0, dt);
                return;
            }
            minus = k;
            out[k] = IR_DIM_UNKNOWN;
            continue;
        } else if (shape[k] < -1) {
            infer_set_dtype(ic, 0, dt);
            return;
        } else {
            out[k] = (ir_dim){shape[k], NULL};
        }
        if (out[k].v < 0) all_known = false;
        else if (out[k].v > 0 && known_prod <= IR_MAX_NUMEL / out[k].v) known_prod *= out[k].v;
        else if (out[k].v == 0) known_prod = 0;
    }
    if (minus >= 0 && all_known && x) {
        int64_t total = 1;
        bool xk = true;
        for (int32_t k = 0; k < x->rank && xk; k++) {
            xk = x->dims[k].v >= 0;
            if (xk && x->dims[k].v && total <= IR_MAX_NUMEL / x->dims[k].v) total *= x->dims[k].v;
            else if (xk && !x->dims[k].v) total = 0;
        }
        if (xk && known_prod > 0 && total % known_prod == 0) out[minus] = (ir_dim){total / known_prod, NULL};
    }
    infer_set_tensor(ic, 0, dt, n, out);
    const ir_tensor *c = infer_in_const(ic, 0);
    if (c && c->numel <= MAXC && c->dtype != SEAM_DTYPE_STRING) {
        int64_t d[INFER_MAX_RANK];
        bool ok = true;
        for (int32_t k = 0; k < n; k++) ok &= (d[k] = out[k].v) >= 0;
        if (ok && ir_numel(d, n) == c->numel) infer_set_const(ic, 0, c->dtype, n, d, c->data);
    }
}

/* ---- Flatten ---- */
static void infer_flatten(seam_infer *ic) {
    const ir_type *x = ranked(ic, 0);
    int32_t dt = infer_in_dtype(ic, 0);
    if (!x) {
        infer_set_tensor_i64(ic, 0, dt, 2, (int64_t[]){-1, -1});
        return;
    }
    int64_t axis = node_attr_int(ic->n, "axis", 1);
    if (axis < 0) axis += x->rank;
    if (axis < 0 || axis > x->rank) return;
    int64_t a = 1, b = 1;
    for (int32_t k = 0; k < x->rank; k++) {
        int64_t *p = k < axis ? &a : &b;
        if (x->dims[k].v < 0 || *p < 0) *p = -1;
        else if (x->dims[k].v == 0) *p = 0;
        else if (*p <= IR_MAX_NUMEL / x->dims[k].v) *p *= x->dims[k].v;
        else *p = -1;
    }
    infer_set_tensor_i64(ic, 0, dt, 2, (int64_t[]){a, b});
}

/* ---- Transpose ---- */
static void infer_transpose(seam_infer *ic) {
    const ir_type *x = ranked(ic, 0);
    int32_t dt = infer_in_dtype(ic, 0);
    if (!x) {
        infer_set_dtype(ic, 0, dt);
        return;
    }
    const int64_t *perm;
    int32_t n = node_attr_ints(ic->n, "perm", &perm);
    ir_dim out[INFER_MAX_RANK];
    bool used[INFER_MAX_RANK] = {false};
    for (int32_t k = 0; k < x->rank; k++) {
        int64_t p = n < 0 ? x->rank - 1 - k : (k < n ? perm[k] : -1);
        if (n >= 0 && n != x->rank) p = -1;
        if (p < 0 || p >= x->rank || used[p]) { /* not a permutation */
            infer_set_dtype(ic, 0, dt);
            return;
        }
        used[p] = true;
        out[k] = x->dims[p];
    }
    infer_set_tensor(ic, 0, dt, x->rank, out);
}

/* ---- Concat ---- */
static void infer_concat(seam_infer *ic) {
    int32_t dt = SEAM_DTYPE_UNDEFINED, rank = -1;
    for (int32_t i = 0; i < infer_n_inputs(ic) && !dt; i++) dt = infer_in_dtype(ic, i);
    for (int32_t i = 0; i < infer_n_inputs(ic); i++)
        if (ranked(ic, i)) rank = ranked(ic, i)->rank;
    if (rank < 0) {
        infer_set_dtype(ic, 0, dt);
        return;
    }
    int32_t axis = op_axis(node_attr_int(ic->n, "axis", 0), rank);
    if (axis < 0) {
        infer_set_dtype(ic, 0, dt);
        return;
    }
    ir_dim out[INFER_MAX_RANK];
    for (int32_t k = 0; k < rank; k++) out[k] = IR_DIM_UNKNOWN;
    int64_t sum = 0;
    bool sum_known = true;
    for (int32_t i = 0; i < infer_n_inputs(ic); i++) {
        const ir_type *t = ranked(ic, i);
        if (!t || t->rank != rank) {
            sum_known = false;
            continue;
        }
        for (int32_t k = 0; k < rank; k++) {
            if (k == axis) {
                if (t->dims[k].v < 0) sum_known = false;
                else sum += t->dims[k].v;
            } else if (out[k].v < 0 && (t->dims[k].v >= 0 || t->dims[k].sym)) {
                out[k] = t->dims[k];
            }
        }
    }
    out[axis] = sum_known ? (ir_dim){sum, NULL} : IR_DIM_UNKNOWN;
    infer_set_tensor(ic, 0, dt, rank, out);
    /* 1-D integer constants joined: the classic shape vector */
    if (rank != 1 || !sum_known || sum > MAXC) return;
    int64_t vals[MAXC];
    int32_t at = 0;
    for (int32_t i = 0; i < infer_n_inputs(ic); i++) {
        int32_t got = infer_in_ints(ic, i, vals + at, MAXC - at);
        if (got < 0) return;
        at += got;
    }
    if (dt == SEAM_DTYPE_INT64) infer_set_const(ic, 0, dt, 1, &sum, vals);
}

/* ---- Split ---- */
static void infer_split(seam_infer *ic) {
    const ir_type *x = ranked(ic, 0);
    int32_t dt = infer_in_dtype(ic, 0), nout = infer_n_outputs(ic);
    if (!x) {
        for (int32_t o = 0; o < nout; o++) infer_set_dtype(ic, o, dt);
        return;
    }
    int32_t axis = op_axis(node_attr_int(ic->n, "axis", 0), x->rank);
    if (axis < 0) return;
    int64_t split[MAXC];
    int32_t n = ints_from(ic, ic->n->opset >= 13 ? 1 : -1, ic->n->opset >= 13 ? NULL : "split", split, MAXC);
    int64_t len = x->dims[axis].v;
    bool split_given = ic->n->opset >= 13 ? infer_has_input(ic, 1) : node_attr_ints(ic->n, "split", &(const int64_t *){NULL}) >= 0;
    if (n < 0 && !split_given && len >= 0 && nout > 0) {
        /* equal parts; with num_outputs (opset 18) the last may be smaller */
        int64_t part = (len + nout - 1) / nout;
        n = nout <= MAXC ? nout : -1;
        for (int32_t k = 0; k < n; k++) split[k] = k < nout - 1 ? part : len - part * (nout - 1);
        if (len % nout == 0)
            for (int32_t k = 0; k < n; k++) split[k] = len / nout;
    }
    ir_dim out[INFER_MAX_RANK];
    for (int32_t o = 0; o < nout; o++) {
        if (x->rank > 0) memcpy(out, x->dims, sizeof(ir_dim) * (size_t)x->rank);
        out[axis] = n == nout && split[o] >= 0 ? (ir_dim){split[o], NULL} : IR_DIM_UNKNOWN;
        infer_set_tensor(ic, o, dt, x->rank, out);
    }
}

/* ---- Slice ---- */
static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* The number of elements a slice takes from a dim of length len, per the
 * ONNX spec's clamping rules. */
static int64_t slice_len(int64_t len, int64_t start, int64_t end, int64_t step) {
    if (start < 0) start += len;
    if (end < 0) end += len;
    if (step > 0) {
        start = clamp64(start, 0, len);
        end = clamp64(end, 0, len);
        return end > start ? (end - start + step - 1) / step : 0;
    }
    start = clamp64(start, 0, len - 1);
    end = clamp64(end, -1, len - 1);
    return start > end ? (start - end + (-step) - 1) / (-step) : 0;
}

static void infer_slice(seam_infer *ic) {
    const ir_type *x = ranked(ic, 0);
    int32_t dt = infer_in_dtype(ic, 0);
    if (!x) {
        infer_set_dtype(ic, 0, dt);
        return;
    }
    int64_t starts[MAXC], ends[MAXC], axes[MAXC], steps[MAXC];
    bool v10 = ic->n->opset >= 10;
    int32_t ns = ints_from(ic, v10 ? 1 : -1, v10 ? NULL : "starts", starts, MAXC);
    int32_t ne = ints_from(ic, v10 ? 2 : -1, v10 ? NULL : "ends", ends, MAXC);
    int32_t na = (v10 ? infer_has_input(ic, 3) : node_attr(ic->n, "axes") != NULL) ? ints_from(ic, v10 ? 3 : -1, v10 ? NULL : "axes", axes, MAXC) : -2;
    int32_t nst = v10 && infer_has_input(ic, 4) ? infer_in_ints(ic, 4, steps, MAXC) : -2;
    ir_dim out[INFER_MAX_RANK];
    if (x->rank > 0) memcpy(out, x->dims, sizeof(ir_dim) * (size_t)x->rank);
    if (ns < 0 || ne != ns || na == -1 || nst == -1) {
        /* which axes are sliced is unknown unless axes are known */
        if (na >= 0)
            for (int32_t k = 0; k < na; k++) {
                int32_t a = op_axis(axes[k], x->rank);
                if (a >= 0) out[a] = IR_DIM_UNKNOWN;
            }
        else
            for (int32_t k = 0; k < x->rank; k++) out[k] = IR_DIM_UNKNOWN;
        infer_set_tensor(ic, 0, dt, x->rank, out);
        return;
    }
    if (na == -2)
        for (int32_t k = 0; k < ns; k++) axes[k] = k;
    if (nst == -2)
        for (int32_t k = 0; k < ns; k++) steps[k] = 1;
    if ((na >= 0 && na != ns) || (nst >= 0 && nst != ns)) return;
    int64_t first = 0, step0 = 1;
    for (int32_t k = 0; k < ns; k++) {
        int32_t a = op_axis(axes[k], x->rank);
        if (a < 0 || steps[k] == 0) return;
        int64_t len = x->dims[a].v;
        out[a] = len >= 0 ? (ir_dim){slice_len(len, starts[k], ends[k], steps[k]), NULL} : IR_DIM_UNKNOWN;
        if (a == 0 && len >= 0) {
            first = starts[k] < 0 ? starts[k] + len : starts[k];
            first = steps[k] > 0 ? clamp64(first, 0, len) : clamp64(first, 0, len - 1);
            step0 = steps[k];
        }
    }
    infer_set_tensor(ic, 0, dt, x->rank, out);
    /* 1-D constants: compute the slice */
    int64_t src[MAXC], res[MAXC];
    int32_t n = infer_in_ints(ic, 0, src, MAXC);
    if (n < 0 || x->rank != 1 || out[0].v < 0 || dt != SEAM_DTYPE_INT64) return;
    for (int64_t k = 0; k < out[0].v; k++) {
        int64_t at = first + k * step0;
        if (at < 0 || at >= n) return;
        res[k] = src[at];
    }
    infer_set_const(ic, 0, dt, 1, &out[0].v, res);
}

/* ---- Gather family ---- */
static void infer_gather(seam_infer *ic) {
    const ir_type *x = ranked(ic, 0), *idx = ranked(ic, 1);
    int32_t dt = infer_in_dtype(ic, 0);
    if (!x || !idx || x->rank + idx->rank - 1 > INFER_MAX_RANK) {
        infer_set_dtype(ic, 0, dt);
        return;
    }
    int32_t axis = op_axis(node_attr_int(ic->n, "axis", 0), x->rank);
    if (axis < 0) return;
    ir_dim out[INFER_MAX_RANK];
    int32_t r = 0;
    for (int32_t k = 0; k < axis; k++) out[r++] = x->dims[k];
    for (int32_t k = 0; k < idx->rank; k++) out[r++] = idx->dims[k];
    for (int32_t k = axis + 1; k < x->rank; k++) out[r++] = x->dims[k];
    infer_set_tensor(ic, 0, dt, r, out);
    /* constant 1-D data, constant indices */
    int64_t data[MAXC], ind[MAXC], res[MAXC], dims[INFER_MAX_RANK];
    int32_t nd = infer_in_ints(ic, 0, data, MAXC), ni = infer_in_ints(ic, 1, ind, MAXC);
    if (nd < 0 || ni < 0 || x->rank != 1 || dt != SEAM_DTYPE_INT64) return;
    for (int32_t k = 0; k < ni; k++) {
        int64_t at = ind[k] < 0 ? ind[k] + nd : ind[k];
        if (at < 0 || at >= nd) return;
        res[k] = data[at];
    }
    for (int32_t k = 0; k < idx->rank; k++) dims[k] = idx->dims[k].v;
    infer_set_const(ic, 0, dt, idx->rank, dims, res);
}

/* GatherElements: the shape of the indices. */
static void infer_gather_elements(seam_infer *ic) {
    const ir_type *idx = ranked(ic, 1);
    infer_set_tensor(ic, 0, infer_in_dtype(ic, 0), idx ? idx->rank : -1, idx ? idx->dims : NULL);
}

/* GatherND: indices[:-1] + data[batch_dims + last:]. */
static void infer_gather_nd(seam_infer *ic) {
    const ir_type *x = ranked(ic, 0), *idx = ranked(ic, 1);
    int32_t dt = infer_in_dtype(ic, 0);
    int64_t b = node_attr_int(ic->n, "batch_dims", 0);
    if (!x || !idx || idx->rank < 1 || idx->dims[idx->rank - 1].v < 0 || b < 0 || b > x->rank) {
        infer_set_dtype(ic, 0, dt);
        return;
    }
    int64_t last = idx->dims[idx->rank - 1].v;
    int64_t r = idx->rank - 1 + x->rank - last - b;
    if (r < 0 || r > INFER_MAX_RANK || b + last > x->rank) return;
    ir_dim out[INFER_MAX_RANK];
    int32_t k = 0;
    for (int32_t j = 0; j < idx->rank - 1; j++) out[k++] = idx->dims[j];
    for (int64_t j = b + last; j < x->rank; j++) out[k++] = x->dims[j];
    infer_set_tensor(ic, 0, dt, k, out);
}

/* Scatter*, Trilu, ReverseSequence: the data's type. */
static void infer_like_data(seam_infer *ic) { infer_copy_type(ic, 0, 0); }

/* ---- Expand and Tile ---- */
static void infer_expand(seam_infer *ic) {
    const ir_type *x = ranked(ic, 0);
    int32_t dt = infer_in_dtype(ic, 0);
    int64_t shape[INFER_MAX_RANK];
    int32_t n = infer_in_ints(ic, 1, shape, INFER_MAX_RANK);
    if (n < 0 || !x) {
        infer_set_dtype(ic, 0, dt);
        return;
    }
    ir_dim sd[INFER_MAX_RANK];
    for (int32_t k = 0; k < n; k++) sd[k] = (ir_dim){shape[k] >= 0 ? shape[k] : -1, NULL};
    ir_type st = {IR_TYPE_TENSOR, dt, n, sd, NULL, NULL};
    const ir_type *ts[2] = {x, &st};
    ir_dim out[INFER_MAX_RANK];
    infer_set_tensor(ic, 0, dt, infer_broadcast(ts, 2, out), out);
}

static void infer_tile(seam_infer *ic) {
    const ir_type *x = ranked(ic, 0);
    int32_t dt = infer_in_dtype(ic, 0);
    int64_t rep[INFER_MAX_RANK];
    int32_t n = infer_in_ints(ic, 1, rep, INFER_MAX_RANK);
    if (!x) {
        infer_set_dtype(ic, 0, dt);
        return;
    }
    ir_dim out[INFER_MAX_RANK];
    for (int32_t k = 0; k < x->rank; k++) {
        int64_t d = x->dims[k].v;
        out[k] = n == x->rank && d >= 0 && rep[k] >= 0 && (d == 0 || rep[k] <= IR_MAX_DIM / d) ? (ir_dim){d * rep[k], NULL}
                                                                                            : IR_DIM_UNKNOWN;
    }
    infer_set_tensor(ic, 0, dt, x->rank, out);
}

/* ---- Pad ---- */
static void infer_pad(seam_infer *ic) {
    const ir_type *x = ranked(ic, 0);
    int32_t dt = infer_in_dtype(ic, 0);
    if (!x) {
        infer_set_dtype(ic, 0, dt);
        return;
    }
    int64_t pads[2 * INFER_MAX_RANK], axes[INFER_MAX_RANK];
    bool v11 = ic->n->opset >= 11;
    int32_t np = ints_from(ic, v11 ? 1 : -1, v11 ? NULL : "pads", pads, 2 * INFER_MAX_RANK);
    int32_t na = v11 && infer_has_input(ic, 3) ? infer_in_ints(ic, 3, axes, INFER_MAX_RANK) : -2;
    ir_dim out[INFER_MAX_RANK];
    for (int32_t k = 0; k < x->rank; k++) out[k] = np < 0 || na == -1 ? IR_DIM_UNKNOWN : x->dims[k];
    if (np >= 0 && na != -1) {
        int32_t cnt = na >= 0 ? na : x->rank;
        if (np != 2 * cnt) return;
        for (int32_t k = 0; k < cnt; k++) {
            int32_t a = na >= 0 ? op_axis(axes[k], x->rank) : k;
            if (a < 0) return;
            int64_t d = x->dims[a].v, v;
            bool wrapped = __builtin_add_overflow(d, pads[k], &v) || __builtin_add_overflow(v, pads[k + cnt], &v);
            out[a] = d >= 0 && !wrapped && v >= 0 && v <= IR_MAX_DIM ? (ir_dim){v, NULL} : IR_DIM_UNKNOWN;
        }
    }
    infer_set_tensor(ic, 0, dt, x->rank, out);
}

/* ---- Resize / Upsample ---- */
static void infer_resize(seam_infer *ic) {
    const ir_type *x = ranked(ic, 0);
    int32_t dt = infer_in_dtype(ic, 0);
    if (!x) {
        infer_set_dtype(ic, 0, dt);
        return;
    }
    ir_dim out[INFER_MAX_RANK];
    for (int32_t k = 0; k < x->rank; k++) out[k] = IR_DIM_UNKNOWN;
    int64_t sizes[INFER_MAX_RANK];
    /* opset 11+: X, roi, scales, sizes; opset 10 and Upsample: X, scales */
    bool v11 = ic->n->opset >= 11 && strcmp(ic->n->op_type, "Resize") == 0;
    int32_t ns = v11 && infer_has_input(ic, 3) ? infer_in_ints(ic, 3, sizes, INFER_MAX_RANK) : -1;
    const ir_tensor *sc = infer_in_const(ic, v11 ? 2 : 1);
    const ir_attr *sa = node_attr(ic->n, "scales"); /* Upsample opset 7-8 */
    if (ns == x->rank) {
        for (int32_t k = 0; k < x->rank; k++) out[k] = (ir_dim){sizes[k], NULL};
    } else if (sc && sc->dtype == SEAM_DTYPE_FLOAT32 && sc->numel == x->rank) {
        for (int32_t k = 0; k < x->rank; k++) {
            float s;
            memcpy(&s, (const char *)sc->data + 4 * k, 4);
            double v = (double)x->dims[k].v * s; /* in range before the cast: inf or 1e30 is no size */
            if (x->dims[k].v >= 0 && v >= 0 && v <= (double)IR_MAX_DIM) out[k] = (ir_dim){(int64_t)v, NULL};
        }
    } else if (sa && sa->kind == IR_ATTR_FLOATS && sa->n == x->rank) {
        for (int32_t k = 0; k < x->rank; k++) {
            double v = (double)x->dims[k].v * sa->floats[k];
            if (x->dims[k].v >= 0 && v >= 0 && v <= (double)IR_MAX_DIM) out[k] = (ir_dim){(int64_t)v, NULL};
        }
    }
    infer_set_tensor(ic, 0, dt, x->rank, out);
}

/* ---- DepthToSpace / SpaceToDepth ---- */
static void infer_depth_space(seam_infer *ic) {
    const ir_type *x = ranked(ic, 0);
    int32_t dt = infer_in_dtype(ic, 0);
    int64_t b = node_attr_int(ic->n, "blocksize", 0);
    if (!x || x->rank != 4 || b <= 0 || b > 4096) {
        infer_set_dtype(ic, 0, dt);
        return;
    }
    bool d2s = strcmp(ic->n->op_type, "DepthToSpace") == 0;
    int64_t c = x->dims[1].v, h = x->dims[2].v, w = x->dims[3].v, cb, hb, wb;
    /* b <= 4096: b * b does not wrap; the dims' products may (-1: unknown) */
    if (c < 0 || __builtin_mul_overflow(c, b * b, &cb)) cb = -1;
    if (h < 0 || __builtin_mul_overflow(h, b, &hb)) hb = -1;
    if (w < 0 || __builtin_mul_overflow(w, b, &wb)) wb = -1;
    int64_t d[4] = {x->dims[0].v, c < 0 ? -1 : d2s ? c / (b * b) : cb, h < 0 ? -1 : d2s ? hb : h / b,
                    w < 0 ? -1 : d2s ? wb : w / b};
    ir_dim out[4] = {x->dims[0], {d[1], NULL}, {d[2], NULL}, {d[3], NULL}};
    infer_set_tensor(ic, 0, dt, 4, out);
}

/* ---- Squeeze / Unsqueeze ---- */
static void infer_squeeze(seam_infer *ic) {
    const ir_type *x = ranked(ic, 0);
    int32_t dt = infer_in_dtype(ic, 0);
    int64_t axes[INFER_MAX_RANK];
    bool v13 = ic->n->opset >= 13;
    bool given = v13 ? infer_has_input(ic, 1) : node_attr(ic->n, "axes") != NULL;
    int32_t na = given ? ints_from(ic, v13 ? 1 : -1, v13 ? NULL : "axes", axes, INFER_MAX_RANK) : 0;
    if (!x || na < 0) {
        infer_set_dtype(ic, 0, dt);
        return;
    }
    bool drop[INFER_MAX_RANK] = {false};
    for (int32_t k = 0; k < na; k++) {
        int32_t a = op_axis(axes[k], x->rank);
        if (a < 0) return;
        drop[a] = true;
    }
    ir_dim out[INFER_MAX_RANK];
    int32_t r = 0;
    for (int32_t k = 0; k < x->rank; k++) {
        if (!given) {
            if (x->dims[k].v < 0) { /* squeezing all 1s: unknown dims make the rank unknown */
                infer_set_dtype(ic, 0, dt);
                return;
            }
            if (x->dims[k].v == 1) continue;
        } else if (drop[k]) {
            continue;
        }
        out[r++] = x->dims[k];
    }
    infer_set_tensor(ic, 0, dt, r, out);
    const ir_tensor *c = infer_in_const(ic, 0);
    int64_t d[INFER_MAX_RANK];
    bool ok = c && c->numel <= MAXC && c->dtype != SEAM_DTYPE_STRING;
    for (int32_t k = 0; ok && k < r; k++) ok = (d[k] = out[k].v) >= 0;
    if (ok) infer_set_const(ic, 0, c->dtype, r, d, c->data);
}

static void infer_unsqueeze(seam_infer *ic) {
    const ir_type *x = ranked(ic, 0);
    int32_t dt = infer_in_dtype(ic, 0);
    int64_t axes[INFER_MAX_RANK];
    bool v13 = ic->n->opset >= 13;
    int32_t na = ints_from(ic, v13 ? 1 : -1, v13 ? NULL : "axes", axes, INFER_MAX_RANK);
    if (!x || na < 0 || x->rank + na > INFER_MAX_RANK) {
        infer_set_dtype(ic, 0, dt);
        return;
    }
    int32_t r = x->rank + na;
    bool ins[INFER_MAX_RANK] = {false};
    for (int32_t k = 0; k < na; k++) {
        int32_t a = op_axis(axes[k], r);
        if (a < 0 || ins[a]) return;
        ins[a] = true;
    }
    ir_dim out[INFER_MAX_RANK];
    for (int32_t k = 0, j = 0; k < r; k++) out[k] = ins[k] ? (ir_dim){1, NULL} : x->dims[j++];
    infer_set_tensor(ic, 0, dt, r, out);
    const ir_tensor *c = infer_in_const(ic, 0);
    int64_t d[INFER_MAX_RANK];
    bool ok = c && c->numel <= MAXC && c->dtype != SEAM_DTYPE_STRING;
    for (int32_t k = 0; ok && k < r; k++) ok = (d[k] = dimv(&out[k])) >= 0;
    if (ok) infer_set_const(ic, 0, c->dtype, r, d, c->data);
}

/* Compress: 1-D of unknown length without an axis; else one dim unknown. */
static void infer_compress(seam_infer *ic) {
    const ir_type *x = ranked(ic, 0);
    int32_t dt = infer_in_dtype(ic, 0);
    const ir_attr *a = node_attr(ic->n, "axis");
    if (!a || !x) {
        infer_set_tensor_i64(ic, 0, dt, 1, (int64_t[]){-1});
        return;
    }
    int32_t axis = op_axis(a->i, x->rank);
    if (axis < 0) return;
    ir_dim out[INFER_MAX_RANK];
    if (x->rank > 0) memcpy(out, x->dims, sizeof(ir_dim) * (size_t)x->rank);
    out[axis] = IR_DIM_UNKNOWN;
    infer_set_tensor(ic, 0, dt, x->rank, out);
}

/* CenterCropPad: the data with the given shape on the given axes. */
static void infer_center_crop_pad(seam_infer *ic) {
    const ir_type *x = ranked(ic, 0);
    int32_t dt = infer_in_dtype(ic, 0);
    int64_t shape[INFER_MAX_RANK];
    int32_t n = infer_in_ints(ic, 1, shape, INFER_MAX_RANK);
    const int64_t *axes;
    int32_t na = node_attr_ints(ic->n, "axes", &axes);
    if (!x || n < 0 || (na >= 0 && na != n) || (na < 0 && n != x->rank)) {
        infer_set_dtype(ic, 0, dt);
        return;
    }
    ir_dim out[INFER_MAX_RANK];
    if (x->rank > 0) memcpy(out, x->dims, sizeof(ir_dim) * (size_t)x->rank);
    for (int32_t k = 0; k < n; k++) {
        int32_t a = na >= 0 ? op_axis(axes[k], x->rank) : k;
        if (a < 0) return;
        out[a] = (ir_dim){shape[k], NULL};
    }
    infer_set_tensor(ic, 0, dt, x->rank, out);
}

const seam_op_def seam_ops_tensor[] = {
    {"", "Reshape", 1, infer_reshape},
    {"", "Flatten", 1, infer_flatten},
    {"", "Transpose", 1, infer_transpose},
    {"", "Concat", 1, infer_concat},
    {"", "Split", 1, infer_split},
    {"", "Slice", 1, infer_slice},
    {"", "Gather", 1, infer_gather},
    {"", "GatherElements", 11, infer_gather_elements},
    {"", "GatherND", 11, infer_gather_nd},
    {"", "Scatter", 9, infer_like_data},
    {"", "ScatterElements", 11, infer_like_data},
    {"", "ScatterND", 11, infer_like_data},
    {"", "Trilu", 14, infer_like_data},
    {"", "ReverseSequence", 10, infer_like_data},
    {"", "Expand", 8, infer_expand},
    {"", "Tile", 1, infer_tile},
    {"", "Pad", 1, infer_pad},
    {"", "Resize", 10, infer_resize},
    {"", "Upsample", 7, infer_resize},
    {"", "DepthToSpace", 1, infer_depth_space},
    {"", "SpaceToDepth", 1, infer_depth_space},
    {"", "Squeeze", 1, infer_squeeze},
    {"", "Unsqueeze", 1, infer_unsqueeze},
    {"", "Compress", 9, infer_compress},
    {"", "CenterCropPad", 18, infer_center_crop_pad},
};
const size_t seam_ops_tensor_count = sizeof(seam_ops_tensor) / sizeof(seam_ops_tensor[0]);
