/* CPU kernels: tensor manipulation, and the tensor family's table (the
 * Gather and Scatter ops are gather.c's, Upsample resize.c's). Most of
 * these move elements without looking at them, so they work on bytes (any
 * dtype of a fixed size) and share one strided copy: Transpose, Slice,
 * Expand, DepthToSpace and SpaceToDepth are each a copy from a strided
 * view of the input. */
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu.h"
#include "backends/cpu/gather.h"

/* dst (dense, shape dims) = the view of src at base with strides (in
 * elements, possibly 0 or negative). */
static void strided_copy(void *dst, const char *src, size_t es, int32_t rank, const int64_t *dims,
                         const int64_t *strides) {
    int64_t numel = seam_shape_numel(dims, rank);
    if (numel <= 0) return;
    if (rank == 0) {
        memcpy(dst, src, es);
        return;
    }
    int64_t idx[SEAM_MAX_RANK] = {0};
    int64_t inner = dims[rank - 1], is = strides[rank - 1];
    char *out = dst;
    int64_t off = 0;
    for (int64_t row = 0, rows = numel / inner; row < rows; row++) {
        const char *p = src + off * (int64_t)es;
        if (is == 1) {
            memcpy(out, p, (size_t)inner * es);
            out += (size_t)inner * es;
        } else if (es == 4) {
            for (int64_t i = 0; i < inner; i++, out += 4) memcpy(out, p + i * is * 4, 4);
        } else {
            for (int64_t i = 0; i < inner; i++, out += es) memcpy(out, p + i * is * (int64_t)es, es);
        }
        for (int32_t d = rank - 2; d >= 0; d--) {
            off += strides[d];
            if (++idx[d] < dims[d]) break;
            off -= strides[d] * dims[d];
            idx[d] = 0;
        }
    }
}

seam_status check_fixed_size(seam_check *c) {
    int32_t dt = check_in_dtype(c, 0);
    if (dt == SEAM_DTYPE_STRING || (dt != SEAM_DTYPE_UNDEFINED && seam_dtype_size(dt) == 0))
        return check_refuse(c, "%s on %s tensors is not supported", c->n->op_type, seam_dtype_name(dt));
    return SEAM_STATUS_OK;
}

static seam_status copy_out(seam_kernel *k, const seam_tensor *x, int32_t rank, const int64_t *dims) {
    seam_tensor *y = kernel_out(k, 0, x->dtype, rank, dims);
    if (!y) return kernel_oom(k);
    if (x->nbytes) memcpy(y->data, x->data, x->nbytes);
    return SEAM_STATUS_OK;
}

/* ---- Reshape, Flatten, Squeeze, Unsqueeze: the same bytes, a new shape ---- */

static seam_status run_reshape(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0), *s = kernel_in(k, 1);
    int64_t want[SEAM_MAX_RANK], dims[SEAM_MAX_RANK];
    int32_t r;
    if (k->n->opset < 5) {
        const int64_t *a;
        r = node_attr_ints(k->n, "shape", &a);
        if (r > SEAM_MAX_RANK) r = -1;
        for (int32_t d = 0; d < r; d++) want[d] = a[d];
    } else {
        r = cpu_read_ints(s, want, SEAM_MAX_RANK);
    }
    if (!x || r < 0) return kernel_fail(k, "the shape must be an int64 tensor of at most %d entries", SEAM_MAX_RANK);
    bool allowzero = node_attr_int(k->n, "allowzero", 0) != 0;
    int32_t infer_at = -1;
    int64_t known = 1;
    for (int32_t d = 0; d < r; d++) {
        int64_t v = want[d];
        if (v == 0 && !allowzero) {
            if (d >= x->rank) return kernel_fail(k, "shape[%d] = 0 copies a dim the input (rank %d) lacks", d, x->rank);
            v = x->dims[d];
        }
        if (v == -1) {
            if (infer_at >= 0) return kernel_fail(k, "the shape has more than one -1");
            infer_at = d;
            dims[d] = 1;
            continue;
        }
        if (v < 0) return kernel_fail(k, "shape[%d] = %lld is not valid", d, (long long)v);
        dims[d] = v;
        if (v && known > MAX_DATA_NUMEL / v) return kernel_fail(k, "the shape is too large");
        known *= v;
    }
    if (infer_at >= 0) {
        if (known == 0 || x->numel % known) return kernel_fail(k, "cannot reshape %lld elements with a -1 in the shape", (long long)x->numel);
        dims[infer_at] = x->numel / known;
    }
    if (seam_shape_numel(dims, r) != x->numel)
        return kernel_fail(k, "cannot reshape '%s' (%lld elements) to a shape of %lld elements", cpu_in_name(k, 0),
                           (long long)x->numel, (long long)seam_shape_numel(dims, r));
    return copy_out(k, x, r, dims);
}

static seam_status run_flatten(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (!x) return kernel_fail(k, "needs an input");
    int64_t axis = node_attr_int(k->n, "axis", 1);
    if (axis < 0) axis += x->rank;
    if (axis < 0 || axis > x->rank) return kernel_fail(k, "axis is out of range for rank %d", x->rank);
    int64_t dims[2] = {cpu_span(x->dims, 0, (int32_t)axis), cpu_span(x->dims, (int32_t)axis, x->rank)};
    return copy_out(k, x, 2, dims);
}

/* The axes of Squeeze/Unsqueeze: input 1 from opset 13, an attribute before. */
static int32_t read_axes(seam_kernel *k, int64_t *axes) {
    if (k->n->opset >= 13) {
        const seam_tensor *a = kernel_in(k, 1);
        return a ? cpu_read_ints(a, axes, SEAM_MAX_RANK) : 0;
    }
    const int64_t *a;
    int32_t n = node_attr_ints(k->n, "axes", &a);
    if (n < 0) return 0;
    if (n > SEAM_MAX_RANK) return -1;
    for (int32_t i = 0; i < n; i++) axes[i] = a[i];
    return n;
}

static seam_status run_squeeze(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    int64_t axes[SEAM_MAX_RANK], dims[SEAM_MAX_RANK];
    int32_t na = read_axes(k, axes);
    if (!x || na < 0) return kernel_fail(k, "bad axes");
    bool drop[SEAM_MAX_RANK] = {false};
    for (int32_t i = 0; i < na; i++) {
        int32_t a = op_axis(axes[i], x->rank);
        if (a < 0) return kernel_fail(k, "axis %lld is out of range for rank %d", (long long)axes[i], x->rank);
        if (x->dims[a] != 1) return kernel_fail(k, "cannot squeeze axis %d of size %lld", a, (long long)x->dims[a]);
        drop[a] = true;
    }
    int32_t r = 0;
    for (int32_t d = 0; d < x->rank; d++)
        if (!(na ? drop[d] : x->dims[d] == 1)) dims[r++] = x->dims[d];
    return copy_out(k, x, r, dims);
}

static seam_status run_unsqueeze(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    int64_t axes[SEAM_MAX_RANK], dims[SEAM_MAX_RANK];
    int32_t na = read_axes(k, axes);
    if (!x || na < 0) return kernel_fail(k, "bad axes");
    int32_t r = x->rank + na;
    if (r > SEAM_MAX_RANK) return kernel_fail(k, "the result would have rank %d; seam supports %d", r, SEAM_MAX_RANK);
    bool ins[SEAM_MAX_RANK] = {false};
    for (int32_t i = 0; i < na; i++) {
        int32_t a = op_axis(axes[i], r);
        if (a < 0 || ins[a]) return kernel_fail(k, "axis %lld is out of range or repeated", (long long)axes[i]);
        ins[a] = true;
    }
    for (int32_t d = 0, j = 0; d < r; d++) dims[d] = ins[d] ? 1 : x->dims[j++];
    return copy_out(k, x, r, dims);
}

/* ---- Transpose ---- */

/* A transpose of 4-byte elements whose output's last axis reads the input
 * with a stride, and whose input's last axis (stride 1) is output axis
 * `a`: blocks of TT x TT elements, read along a and written along the
 * last axis, each in cache while it is moved (the element by element copy
 * read a new line for every element: a head split of 48 x 16 x 64 to 16
 * x 64 x 48, 168 us, 3x ONNX Runtime), over the pool by blocks of the
 * other axes. */
#define TT 16
typedef struct tt_job {
    const uint32_t *x;
    uint32_t *y;
    int32_t r, a;
    const int64_t *dims, *st;
    int64_t outer, a_blocks, ost_a, last;
} tt_job;

static void tt_blocks(void *arg, int64_t begin, int64_t end) {
    const tt_job *j = arg;
    int64_t A = j->dims[j->a], L = j->dims[j->r - 1], sl = j->st[j->r - 1];
    for (int64_t t = begin; t < end; t++) {
        int64_t o = t / j->a_blocks, a0 = t % j->a_blocks * TT, xo = 0, yo = 0, rem = o;
        for (int32_t d = j->r - 2; d >= 0; d--) { /* the other axes' index of block o */
            if (d == j->a) continue;
            int64_t i = rem % j->dims[d];
            rem /= j->dims[d];
            xo += i * j->st[d];
            int64_t ost = 1;
            for (int32_t e = d + 1; e < j->r; e++) ost *= j->dims[e];
            yo += i * ost;
        }
        int64_t a1 = a0 + TT < A ? a0 + TT : A;
        for (int64_t b0 = 0; b0 < L; b0 += TT) {
            int64_t b1 = b0 + TT < L ? b0 + TT : L;
            for (int64_t ia = a0; ia < a1; ia++) {
                uint32_t *dst = j->y + yo + ia * j->ost_a;
                const uint32_t *src = j->x + xo + ia;
                for (int64_t ib = b0; ib < b1; ib++) dst[ib] = src[ib * sl];
            }
        }
    }
}

static bool tiled_transpose(seam_kernel *k, seam_tensor *y, const seam_tensor *x, int32_t r, const int64_t *dims,
                            const int64_t *st) {
    if (seam_dtype_size(x->dtype) != 4 || r < 2 || st[r - 1] == 1 || dims[r - 1] < 4 || y->numel < 4096) return false;
    int32_t a = -1;
    for (int32_t d = 0; d < r - 1; d++)
        if (st[d] == 1 && dims[d] > 1) a = d;
    if (a < 0) return false;
    tt_job j = {x->data, y->data, r, a, dims, st, 1, (dims[a] + TT - 1) / TT, 1, dims[r - 1]};
    for (int32_t d = a + 1; d < r; d++) j.ost_a *= dims[d];
    for (int32_t d = 0; d < r - 1; d++)
        if (d != a) j.outer *= dims[d];
    seam_parallel_for(k->pool, j.outer * j.a_blocks, 4, tt_blocks, &j);
    return true;
}

static seam_status run_transpose(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (!x) return kernel_fail(k, "needs an input");
    int32_t r = x->rank;
    int64_t perm[SEAM_MAX_RANK], dims[SEAM_MAX_RANK], src[SEAM_MAX_RANK], st[SEAM_MAX_RANK];
    const int64_t *p;
    int32_t np = node_attr_ints(k->n, "perm", &p);
    if (np >= 0 && np != r) return kernel_fail(k, "perm has %d entries for an input of rank %d", np, r);
    bool seen[SEAM_MAX_RANK] = {false};
    for (int32_t d = 0; d < r; d++) {
        perm[d] = np >= 0 ? p[d] : r - 1 - d;
        if (perm[d] < 0 || perm[d] >= r || seen[perm[d]]) return kernel_fail(k, "perm is not a permutation");
        seen[perm[d]] = true;
    }
    cpu_strides(r, x->dims, src);
    for (int32_t d = 0; d < r; d++) {
        dims[d] = x->dims[perm[d]];
        st[d] = src[perm[d]];
    }
    seam_tensor *y = kernel_out(k, 0, x->dtype, r, dims);
    if (!y) return kernel_oom(k);
    if (!tiled_transpose(k, y, x, r, dims, st))
        strided_copy(y->data, x->data, seam_dtype_size(x->dtype), r, dims, st);
    return SEAM_STATUS_OK;
}

/* ---- Concat and Split ---- */

/* Concat copies the output in pieces of CONCAT_PIECE bytes over the pool:
 * each piece is a few copies of contiguous runs of the inputs' rows. */
#define CONCAT_PIECE ((int64_t)1 << 16)
typedef struct concat_job {
    seam_kernel *k;
    int32_t n;
    int64_t total, row; /* bytes of the output and of one output row */
    char *y;
    int64_t *start;     /* [n + 1]: where input i's part of an output row starts */
} concat_job;

static void concat_pieces(void *arg, int64_t begin, int64_t end) {
    const concat_job *j = arg;
    int64_t p = begin * CONCAT_PIECE, stop = end * CONCAT_PIECE < j->total ? end * CONCAT_PIECE : j->total;
    int32_t i = 0;
    while (p < stop) {
        int64_t o = p / j->row, in_row = p % j->row;
        while (i > 0 && j->start[i] > in_row) i--; /* a new output row */
        while (j->start[i + 1] <= in_row) i++;
        int64_t len = j->start[i + 1] - in_row;
        if (len > stop - p) len = stop - p;
        const seam_tensor *x = kernel_in(j->k, i);
        int64_t xrow = j->start[i + 1] - j->start[i];
        memcpy(j->y + p, (const char *)x->data + o * xrow + (in_row - j->start[i]), (size_t)len);
        p += len;
    }
}

/* Output rows of at most CONCAT_SMALL bytes (boxes' coordinates
 * concatenated on their last axis: 3234 rows of 2 + 2 floats): each
 * input's part copied row by row, its pointer and size read once, no
 * division per piece. */
#define CONCAT_SMALL 256
typedef struct concat_rows_job {
    int32_t n;
    int64_t row;
    char *y;
    const char **x;
    const int64_t *size; /* [n]: bytes of input i's part of a row */
} concat_rows_job;

static void concat_rows(void *arg, int64_t begin, int64_t end) {
    const concat_rows_job *j = arg;
    bool all4 = true, all8 = true;
    for (int32_t i = 0; i < j->n; i++) all4 &= j->size[i] == 4, all8 &= j->size[i] == 8;
    for (int64_t o = begin; o < end; o++) {
        char *dst = j->y + o * j->row;
        if (all4) {
            for (int32_t i = 0; i < j->n; i++) memcpy(dst + 4 * i, j->x[i] + 4 * o, 4);
        } else if (all8) {
            for (int32_t i = 0; i < j->n; i++) memcpy(dst + 8 * i, j->x[i] + 8 * o, 8);
        } else {
            for (int32_t i = 0; i < j->n; i++) {
                memcpy(dst, j->x[i] + j->size[i] * o, (size_t)j->size[i]);
                dst += j->size[i];
            }
        }
    }
}

static seam_status run_concat(seam_kernel *k) {
    int32_t n = kernel_n_in(k);
    const seam_tensor *x0 = NULL;
    for (int32_t i = 0; i < n && !x0; i++) x0 = kernel_in(k, i);
    if (!x0) return kernel_fail(k, "needs inputs");
    int32_t r = x0->rank;
    int32_t axis = op_axis(node_attr_int(k->n, "axis", 0), r);
    if (axis < 0) return kernel_fail(k, "axis is out of range for rank %d", r);
    int64_t dims[SEAM_MAX_RANK];
    memcpy(dims, x0->dims, sizeof(int64_t) * (size_t)r);
    dims[axis] = 0;
    for (int32_t i = 0; i < n; i++) {
        const seam_tensor *x = kernel_in(k, i);
        if (!x) continue;
        if (x->rank != r || x->dtype != x0->dtype)
            return kernel_fail(k, "input %d ('%s') has another rank or dtype", i, cpu_in_name(k, i));
        for (int32_t d = 0; d < r; d++)
            if (d != axis && x->dims[d] != x0->dims[d])
                return kernel_fail(k, "input %d ('%s') has dim %d = %lld, input 0 has %lld", i, cpu_in_name(k, i), d,
                                   (long long)x->dims[d], (long long)x0->dims[d]);
        dims[axis] += x->dims[axis];
    }
    seam_tensor *y = kernel_out(k, 0, x0->dtype, r, dims);
    if (!y) return kernel_oom(k);
    if (!y->nbytes) return SEAM_STATUS_OK;
    size_t es = seam_dtype_size(x0->dtype);
    int64_t inner = cpu_span(dims, axis + 1, r);
    /* the bytes of each input's row within an output row, as prefix sums */
    /* (one scratch buffer: the prefix sums, and the small-row path's pointers and sizes) */
    concat_job j = {k, n, (int64_t)y->nbytes, 0, y->data, kernel_scratch(k, sizeof(int64_t) * 3 * (size_t)(n + 1))};
    if (!j.start) return kernel_oom(k);
    j.start[0] = 0;
    for (int32_t i = 0; i < n; i++) {
        const seam_tensor *x = kernel_in(k, i);
        j.start[i + 1] = j.start[i] + (x ? x->dims[axis] * inner * (int64_t)es : 0);
    }
    j.row = j.start[n];
    if (j.row <= CONCAT_SMALL) {
        const char **xs = (const char **)(j.start + n + 1);
        int64_t *size = j.start + 2 * (n + 1);
        int32_t m = 0;
        for (int32_t i = 0; i < n; i++) {
            const seam_tensor *x = kernel_in(k, i);
            if (!x || j.start[i + 1] == j.start[i]) continue; /* (absent or empty on the axis) */
            xs[m] = x->data, size[m++] = j.start[i + 1] - j.start[i];
        }
        concat_rows_job cj = {m, j.row, y->data, xs, size};
        int64_t rows = j.total / j.row;
        seam_parallel_for(k->pool, rows, CONCAT_PIECE / j.row + 1, concat_rows, &cj);
        return SEAM_STATUS_OK;
    }
    seam_parallel_for(k->pool, (j.total + CONCAT_PIECE - 1) / CONCAT_PIECE, 1, concat_pieces, &j);
    return SEAM_STATUS_OK;
}

static seam_status run_split(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (!x) return kernel_fail(k, "needs an input");
    int32_t nout = kernel_n_out(k), r = x->rank;
    int32_t axis = op_axis(node_attr_int(k->n, "axis", 0), r);
    if (axis < 0) return kernel_fail(k, "axis is out of range for rank %d", r);
    int64_t len = x->dims[axis];
    int64_t *parts = kernel_scratch(k, sizeof(int64_t) * (size_t)(nout + 1));
    if (!parts) return kernel_oom(k);
    int32_t np = -1;
    if (k->n->opset >= 13 && kernel_in(k, 1)) {
        const seam_tensor *s = kernel_in(k, 1);
        if (s->numel != nout) return kernel_fail(k, "split has %lld entries for %d outputs", (long long)s->numel, nout);
        np = cpu_read_ints(s, parts, nout);
    } else if (k->n->opset < 13) {
        const int64_t *a;
        np = node_attr_ints(k->n, "split", &a);
        if (np >= 0 && np != nout) return kernel_fail(k, "split has %d entries for %d outputs", np, nout);
        for (int32_t i = 0; i < np; i++) parts[i] = a[i];
    }
    if (np < 0) { /* equal parts; with num_outputs the last may be smaller */
        int64_t part = (len + nout - 1) / nout;
        for (int32_t i = 0; i < nout; i++) parts[i] = i < nout - 1 ? part : len - part * (nout - 1);
        if (len % nout == 0)
            for (int32_t i = 0; i < nout; i++) parts[i] = len / nout;
    }
    int64_t total = 0;
    for (int32_t i = 0; i < nout; i++) {
        if (parts[i] < 0) return kernel_fail(k, "split entry %d is negative", i);
        total += parts[i];
    }
    if (total != len) return kernel_fail(k, "split sums to %lld but the axis has %lld", (long long)total, (long long)len);
    size_t es = seam_dtype_size(x->dtype);
    int64_t outer = cpu_span(x->dims, 0, axis), inner = cpu_span(x->dims, axis + 1, r), at = 0;
    for (int32_t i = 0; i < nout; i++) {
        int64_t dims[SEAM_MAX_RANK];
        memcpy(dims, x->dims, sizeof(int64_t) * (size_t)r);
        dims[axis] = parts[i];
        if (kernel_has_out(k, i)) {
            seam_tensor *y = kernel_out(k, i, x->dtype, r, dims);
            if (!y) return kernel_oom(k);
            int64_t row = parts[i] * inner;
            for (int64_t o = 0; o < outer; o++)
                memcpy((char *)y->data + (size_t)(o * row) * es,
                       (const char *)x->data + (size_t)(o * len * inner + at) * es, (size_t)row * es);
        }
        at += parts[i] * inner;
    }
    return SEAM_STATUS_OK;
}

/* ---- Slice ---- */

static seam_status run_slice(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (!x) return kernel_fail(k, "needs an input");
    int32_t r = x->rank;
    int64_t starts[SEAM_MAX_RANK], ends[SEAM_MAX_RANK], axes[SEAM_MAX_RANK], steps[SEAM_MAX_RANK];
    int32_t ns, ne, na, nst;
    if (k->n->opset < 10) {
        const int64_t *a, *b, *c;
        ns = node_attr_ints(k->n, "starts", &a);
        ne = node_attr_ints(k->n, "ends", &b);
        na = node_attr_ints(k->n, "axes", &c);
        if (ns < 0 || ns > SEAM_MAX_RANK || ne != ns || (na >= 0 && na != ns)) return kernel_fail(k, "bad starts/ends/axes");
        for (int32_t i = 0; i < ns; i++) {
            starts[i] = a[i];
            ends[i] = b[i];
            axes[i] = na >= 0 ? c[i] : i;
            steps[i] = 1;
        }
    } else {
        ns = cpu_read_ints(kernel_in(k, 1), starts, SEAM_MAX_RANK);
        ne = cpu_read_ints(kernel_in(k, 2), ends, SEAM_MAX_RANK);
        na = kernel_in(k, 3) ? cpu_read_ints(kernel_in(k, 3), axes, SEAM_MAX_RANK) : ns;
        nst = kernel_in(k, 4) ? cpu_read_ints(kernel_in(k, 4), steps, SEAM_MAX_RANK) : ns;
        if (ns < 0 || ne != ns || na != ns || nst != ns) return kernel_fail(k, "starts, ends, axes and steps must be int tensors of one length");
        if (!kernel_in(k, 3))
            for (int32_t i = 0; i < ns; i++) axes[i] = i;
        if (!kernel_in(k, 4))
            for (int32_t i = 0; i < ns; i++) steps[i] = 1;
    }
    int64_t dims[SEAM_MAX_RANK], st[SEAM_MAX_RANK], begin[SEAM_MAX_RANK];
    cpu_strides(r, x->dims, st);
    for (int32_t d = 0; d < r; d++) {
        dims[d] = x->dims[d];
        begin[d] = 0;
    }
    bool seen[SEAM_MAX_RANK] = {false};
    for (int32_t i = 0; i < ns; i++) {
        int32_t a = op_axis(axes[i], r);
        if (a < 0 || seen[a]) return kernel_fail(k, "axis %lld is out of range or repeated", (long long)axes[i]);
        seen[a] = true;
        int64_t len = x->dims[a], s = starts[i], e = ends[i], step = steps[i];
        if (step == 0) return kernel_fail(k, "step 0 on axis %d", a);
        if (s < 0) s += len;
        if (e < 0) e += len;
        int64_t n;
        if (step > 0) {
            s = s < 0 ? 0 : s > len ? len : s;
            e = e < 0 ? 0 : e > len ? len : e;
            n = e > s ? (e - s + step - 1) / step : 0;
        } else {
            s = s < 0 ? -1 : s > len - 1 ? len - 1 : s;
            e = e < -1 ? -1 : e > len - 1 ? len - 1 : e;
            n = s > e ? (s - e + (-step) - 1) / (-step) : 0;
        }
        dims[a] = n;
        begin[a] = n ? s : 0;
        st[a] *= step;
    }
    seam_tensor *y = kernel_out(k, 0, x->dtype, r, dims);
    if (!y) return kernel_oom(k);
    int64_t off = 0, own[SEAM_MAX_RANK];
    cpu_strides(r, x->dims, own);
    for (int32_t d = 0; d < r; d++) off += begin[d] * own[d];
    size_t es = seam_dtype_size(x->dtype);
    if (y->numel) strided_copy(y->data, (const char *)x->data + off * (int64_t)es, es, r, dims, st);
    return SEAM_STATUS_OK;
}

/* ---- Expand and Tile ---- */

static seam_status run_expand(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0), *s = kernel_in(k, 1);
    int64_t want[SEAM_MAX_RANK];
    int32_t ns = cpu_read_ints(s, want, SEAM_MAX_RANK);
    if (!x || ns < 0) return kernel_fail(k, "the shape must be an int64 tensor of at most %d entries", SEAM_MAX_RANK);
    seam_tensor shape = {.dtype = x->dtype, .rank = ns};
    for (int32_t d = 0; d < ns; d++) {
        if (want[d] < 0) return kernel_fail(k, "shape[%d] is negative", d);
        shape.dims[d] = want[d];
    }
    const seam_tensor *ins[2] = {x, &shape};
    int32_t r;
    int64_t dims[SEAM_MAX_RANK], st[SEAM_MAX_RANK];
    if (!cpu_broadcast(ins, 2, &r, dims))
        return kernel_fail(k, "'%s' does not broadcast to the shape", cpu_in_name(k, 0));
    int64_t numel = seam_shape_numel(dims, r);
    if (numel < 0 || numel > MAX_DATA_NUMEL) return kernel_fail(k, "the result is too large");
    seam_tensor *y = kernel_out(k, 0, x->dtype, r, dims);
    if (!y) return kernel_oom(k);
    cpu_bcast_strides(x, r, dims, st);
    strided_copy(y->data, x->data, seam_dtype_size(x->dtype), r, dims, st);
    return SEAM_STATUS_OK;
}

/* Tile, axis by axis from the first: the block of axis d is filled from
 * x's sub-blocks, then copied after itself, doubling, until it holds its
 * repeats: a few memcpy calls per input row, not an index per element. */
typedef struct tile_job {
    int32_t n;
    size_t es;
    const int64_t *xd, *reps;
    int64_t xs[SEAM_MAX_RANK], ys[SEAM_MAX_RANK]; /* strides in elements */
} tile_job;

static void tile_fill(const tile_job *t, int32_t d, char *y, const char *x) {
    size_t one; /* bytes of one repeat of axis d's block */
    if (d == t->n - 1) {
        one = (size_t)t->xd[d] * t->es;
        memcpy(y, x, one);
    } else {
        for (int64_t i = 0; i < t->xd[d]; i++)
            tile_fill(t, d + 1, y + (size_t)(i * t->ys[d]) * t->es, x + (size_t)(i * t->xs[d]) * t->es);
        one = (size_t)(t->xd[d] * t->ys[d]) * t->es;
    }
    size_t have = one, want = one * (size_t)t->reps[d];
    while (have < want) {
        size_t c = have < want - have ? have : want - have;
        memcpy(y + have, y, c);
        have += c;
    }
}

static seam_status run_tile(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0), *rp = kernel_in(k, 1);
    int64_t reps[SEAM_MAX_RANK], dims[SEAM_MAX_RANK];
    int32_t n = cpu_read_ints(rp, reps, SEAM_MAX_RANK);
    if (!x || n != x->rank) return kernel_fail(k, "repeats must have one entry per input dim");
    for (int32_t d = 0; d < n; d++) {
        if (reps[d] < 0) return kernel_fail(k, "repeats[%d] is negative", d);
        dims[d] = x->dims[d] * reps[d];
    }
    int64_t numel = seam_shape_numel(dims, n);
    if (numel < 0 || numel > MAX_DATA_NUMEL) return kernel_fail(k, "the result is too large");
    seam_tensor *y = kernel_out(k, 0, x->dtype, n, dims);
    if (!y) return kernel_oom(k);
    if (!numel) return SEAM_STATUS_OK;
    tile_job t = {n, seam_dtype_size(x->dtype), x->dims, reps, {0}, {0}};
    cpu_strides(n, x->dims, t.xs);
    cpu_strides(n, dims, t.ys);
    if (n == 0) memcpy(y->data, x->data, t.es);
    else tile_fill(&t, 0, (char *)y->data, (const char *)x->data);
    return SEAM_STATUS_OK;
}

/* ---- Pad ---- */

/* Where output index i of an axis of n input elements padded by lo in
 * front reads: i - lo inside; outside, per the mode (edge, wrap, reflect
 * without repeating the edge), or -1 for constant. */
static int64_t pad_source(char mode, int64_t i, int64_t lo, int64_t n) {
    int64_t v = i - lo;
    if (v >= 0 && v < n) return v;
    if (mode == 'c') return -1;
    if (mode == 'e') return v < 0 ? 0 : n - 1;
    if (mode == 'w') return ((v % n) + n) % n;
    if (n == 1) return 0;
    int64_t period = 2 * (n - 1);
    v = ((v % period) + period) % period;
    return v >= n ? period - v : v;
}

typedef struct pad_job {
    const seam_tensor *x;
    seam_tensor *y;
    int32_t r;
    char mode;
    double cval;
    size_t es;
    int64_t lo[SEAM_MAX_RANK], xs[SEAM_MAX_RANK];
} pad_job;

/* Output rows [begin, end) of the last axis: the part inside the input is
 * one copy; the pads around it element by element. */
static void pad_rows(void *arg, int64_t begin, int64_t end) {
    const pad_job *j = arg;
    const seam_tensor *x = j->x;
    seam_tensor *y = j->y;
    int32_t r = j->r, last = r - 1;
    int64_t W = y->dims[last], n = x->dims[last], lo = j->lo[last];
    /* the output columns that read input columns in order: [c0, c1) */
    int64_t c0 = lo > 0 ? lo : 0, c1 = lo + n < W ? lo + n : W;
    if (c1 < c0) c1 = c0;
    size_t es = j->es;
    bool f32 = y->dtype == SEAM_DTYPE_FLOAT32;
    float fval = (float)j->cval;
    for (int64_t row = begin; row < end; row++) {
        int64_t rem = row, off = 0;
        bool inside = true;
        for (int32_t d = last - 1; d >= 0; d--) {
            int64_t v = pad_source(j->mode, rem % y->dims[d], j->lo[d], x->dims[d]);
            rem /= y->dims[d];
            if (v < 0) inside = false;
            else off += v * j->xs[d];
        }
        char *yr = (char *)y->data + (size_t)(row * W) * es;
        const char *xr = (const char *)x->data + (size_t)off * es;
        for (int64_t c = 0; c < W; c++) {
            if (inside && c == c0 && c1 > c0) { /* the run inside the input */
                memcpy(yr + (size_t)c0 * es, xr + (size_t)(c0 - lo) * es, (size_t)(c1 - c0) * es);
                c = c1 - 1;
                continue;
            }
            int64_t v = inside ? pad_source(j->mode, c, lo, n) : -1;
            if (v >= 0) memcpy(yr + (size_t)c * es, xr + (size_t)v * es, es);
            else if (f32) ((float *)yr)[c] = fval;
            else cpu_set(yr, y->dtype, c, j->cval);
        }
    }
}

static seam_status run_pad(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (!x) return kernel_fail(k, "needs an input");
    int32_t r = x->rank;
    int64_t pads[2 * SEAM_MAX_RANK], axes[SEAM_MAX_RANK];
    int32_t np, na = r;
    double cval = 0;
    char mode = 'c'; /* constant, reflect, edge, wrap */
    if (node_attr_is(k->n, "mode", "reflect")) mode = 'r';
    else if (node_attr_is(k->n, "mode", "edge")) mode = 'e';
    else if (node_attr_is(k->n, "mode", "wrap")) mode = 'w';
    else if (node_attr(k->n, "mode") && !node_attr_is(k->n, "mode", "constant"))
        return kernel_fail(k, "mode must be constant, reflect, edge or wrap");
    if (k->n->opset < 11) {
        const int64_t *p;
        np = node_attr_ints(k->n, "pads", &p);
        if (np != 2 * r) return kernel_fail(k, "pads must have 2 * rank entries");
        for (int32_t i = 0; i < np; i++) pads[i] = p[i];
        cval = node_attr_float(k->n, "value", 0);
    } else {
        np = cpu_read_ints(kernel_in(k, 1), pads, 2 * SEAM_MAX_RANK);
        const seam_tensor *cv = kernel_in(k, 2), *ax = kernel_in(k, 3);
        if (cv && cv->numel >= 1) cval = cpu_get(cv->data, cv->dtype, 0);
        if (ax) na = cpu_read_ints(ax, axes, SEAM_MAX_RANK);
        if (na < 0 || np != 2 * na) return kernel_fail(k, "pads must have 2 entries per padded axis");
    }
    int64_t lo[SEAM_MAX_RANK] = {0}, hi[SEAM_MAX_RANK] = {0}, dims[SEAM_MAX_RANK];
    for (int32_t i = 0; i < na; i++) {
        int32_t a = k->n->opset >= 11 && kernel_in(k, 3) ? op_axis(axes[i], r) : i;
        if (a < 0) return kernel_fail(k, "axis out of range");
        lo[a] = pads[i];
        hi[a] = pads[i + na];
    }
    for (int32_t d = 0; d < r; d++) {
        dims[d] = x->dims[d] + lo[d] + hi[d];
        if (dims[d] < 0) return kernel_fail(k, "pads make axis %d negative", d);
        if (mode != 'c' && (x->dims[d] == 0 && dims[d] > 0)) return kernel_fail(k, "cannot %c-pad an empty axis", mode);
    }
    int64_t numel = seam_shape_numel(dims, r);
    if (numel < 0 || numel > MAX_DATA_NUMEL) return kernel_fail(k, "the result is too large");
    seam_tensor *y = kernel_out(k, 0, x->dtype, r, dims);
    if (!y) return kernel_oom(k);
    pad_job j = {x, y, r, mode, cval, seam_dtype_size(x->dtype), {0}, {0}};
    memcpy(j.lo, lo, sizeof(lo));
    cpu_strides(r, x->dims, j.xs);
    if (r == 0) { /* nothing to pad */
        memcpy(y->data, x->data, y->nbytes);
        return SEAM_STATUS_OK;
    }
    /* one output row (the last axis) at a time; a row is worth a thread
     * piece when it is a few KB */
    int64_t rows = dims[r - 1] ? numel / dims[r - 1] : 0;
    seam_parallel_for(k->pool, rows, dims[r - 1] >= 4096 ? 1 : 4096 / (dims[r - 1] + 1) + 1, pad_rows, &j);
    return SEAM_STATUS_OK;
}

/* ---- DepthToSpace, SpaceToDepth: a reshape, a transpose, a reshape ---- */

static seam_status run_depth_space(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (!x || x->rank != 4) return kernel_fail(k, "the input must be 4-D");
    int64_t b = node_attr_int(k->n, "blocksize", 0);
    if (b <= 0) return kernel_fail(k, "blocksize must be positive");
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    bool to_space = k->n->op_type[0] == 'D';
    int64_t dims6[6], st6[6], out[4];
    if (to_space) {
        if (C % (b * b)) return kernel_fail(k, "channels %lld are not a multiple of blocksize^2", (long long)C);
        int64_t c = C / (b * b);
        bool crd = node_attr_is(k->n, "mode", "CRD");
        /* the input viewed as [N, b, b, c, H, W] (DCR) or [N, c, b, b, H, W]
         * (CRD), read as [N, c, H, b, W, b] */
        int64_t sW = 1, sH = W, sPlane = H * W;
        int64_t s_c = crd ? b * b * sPlane : sPlane, s_b1 = crd ? b * sPlane : b * c * sPlane,
                s_b2 = crd ? sPlane : c * sPlane;
        int64_t d6[6] = {N, c, H, b, W, b}, t6[6] = {C * sPlane, s_c, sH, s_b1, sW, s_b2};
        memcpy(dims6, d6, sizeof(d6));
        memcpy(st6, t6, sizeof(t6));
        out[0] = N, out[1] = c, out[2] = H * b, out[3] = W * b;
    } else {
        if (H % b || W % b) return kernel_fail(k, "height and width must be multiples of blocksize");
        int64_t h = H / b, w = W / b;
        /* output [N, b, b, C, h, w] read from x[n, c, hh*b + i, ww*b + j] */
        int64_t d6[6] = {N, b, b, C, h, w}, t6[6] = {C * H * W, W, 1, H * W, b * W, b};
        memcpy(dims6, d6, sizeof(d6));
        memcpy(st6, t6, sizeof(t6));
        out[0] = N, out[1] = C * b * b, out[2] = h, out[3] = w;
    }
    seam_tensor *y = kernel_out(k, 0, x->dtype, 4, out);
    if (!y) return kernel_oom(k);
    strided_copy(y->data, x->data, seam_dtype_size(x->dtype), 6, dims6, st6);
    return SEAM_STATUS_OK;
}

/* ---- Trilu, ReverseSequence, Compress ---- */

static seam_status run_trilu(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0), *kk = kernel_in(k, 1);
    if (!x || x->rank < 2) return kernel_fail(k, "the input must be at least 2-D");
    int64_t diag = kk && kk->numel == 1 ? cpu_get_i64(kk->data, kk->dtype, 0) : 0;
    bool upper = node_attr_int(k->n, "upper", 1) != 0;
    seam_tensor *y = kernel_out(k, 0, x->dtype, x->rank, x->dims);
    if (!y) return kernel_oom(k);
    size_t es = seam_dtype_size(x->dtype);
    int64_t R = x->dims[x->rank - 2], C = x->dims[x->rank - 1];
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t c = i % C, r = (i / C) % R;
        bool keep = upper ? c - r >= diag : c - r <= diag;
        if (keep) cpu_copy_elem(y->data, i, x->data, i, es);
        else memset((char *)y->data + (size_t)i * es, 0, es);
    }
    return SEAM_STATUS_OK;
}

static seam_status run_reverse_sequence(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0), *sl = kernel_in(k, 1);
    if (!x || !sl || x->rank < 2 || !cpu_is_int(sl->dtype)) return kernel_fail(k, "needs input (rank >= 2) and sequence_lens");
    int64_t ba = node_attr_int(k->n, "batch_axis", 1), ta = node_attr_int(k->n, "time_axis", 0);
    if (!((ba == 0 && ta == 1) || (ba == 1 && ta == 0))) return kernel_fail(k, "batch_axis and time_axis must be 0 and 1");
    if (sl->numel != x->dims[ba]) return kernel_fail(k, "sequence_lens must have one entry per batch");
    seam_tensor *y = kernel_out(k, 0, x->dtype, x->rank, x->dims);
    if (!y) return kernel_oom(k);
    size_t es = seam_dtype_size(x->dtype);
    int64_t inner = cpu_span(x->dims, 2, x->rank), xs[SEAM_MAX_RANK];
    cpu_strides(x->rank, x->dims, xs);
    for (int64_t bi = 0; bi < x->dims[ba]; bi++) {
        int64_t len = cpu_get_i64(sl->data, sl->dtype, bi);
        if (len < 0 || len > x->dims[ta]) return kernel_fail(k, "sequence length %lld is out of range", (long long)len);
        for (int64_t t = 0; t < x->dims[ta]; t++) {
            int64_t src_t = t < len ? len - 1 - t : t;
            int64_t dst = bi * xs[ba] + t * xs[ta], src = bi * xs[ba] + src_t * xs[ta];
            memcpy((char *)y->data + (size_t)dst * es, (const char *)x->data + (size_t)src * es, (size_t)inner * es);
        }
    }
    return SEAM_STATUS_OK;
}

static seam_status run_compress(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0), *c = kernel_in(k, 1);
    if (!x || !c || c->rank != 1) return kernel_fail(k, "needs input and a 1-D condition");
    size_t es = seam_dtype_size(x->dtype);
    if (!node_attr(k->n, "axis")) { /* flattened */
        int64_t n = 0, lim = c->numel < x->numel ? c->numel : x->numel;
        for (int64_t i = 0; i < lim; i++) n += cpu_get_i64(c->data, c->dtype, i) != 0;
        seam_tensor *y = kernel_out(k, 0, x->dtype, 1, &n);
        if (!y) return kernel_oom(k);
        for (int64_t i = 0, o = 0; i < lim; i++)
            if (cpu_get_i64(c->data, c->dtype, i)) cpu_copy_elem(y->data, o++, x->data, i, es);
        return SEAM_STATUS_OK;
    }
    int32_t axis = op_axis(node_attr_int(k->n, "axis", INT64_MAX), x->rank); /* (not an int: out of range) */
    if (axis < 0) return kernel_fail(k, "axis is out of range");
    int64_t len = x->dims[axis], lim = c->numel < len ? c->numel : len, n = 0;
    for (int64_t i = 0; i < lim; i++) n += cpu_get_i64(c->data, c->dtype, i) != 0;
    int64_t dims[SEAM_MAX_RANK];
    memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
    dims[axis] = n;
    seam_tensor *y = kernel_out(k, 0, x->dtype, x->rank, dims);
    if (!y) return kernel_oom(k);
    int64_t outer = cpu_span(x->dims, 0, axis), inner = cpu_span(x->dims, axis + 1, x->rank);
    char *out = y->data;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < lim; i++)
            if (cpu_get_i64(c->data, c->dtype, i)) {
                memcpy(out, (const char *)x->data + (size_t)((o * len + i) * inner) * es, (size_t)inner * es);
                out += (size_t)inner * es;
            }
    return SEAM_STATUS_OK;
}

#define FIX(fn) {fn, check_fixed_size}

const seam_cpu_binding seam_cpu_tensor[] = {
    {"", "Reshape", 1, FIX(run_reshape)},
    {"", "Flatten", 1, FIX(run_flatten)},
    {"", "Squeeze", 1, FIX(run_squeeze)},
    {"", "Unsqueeze", 1, FIX(run_unsqueeze)},
    {"", "Transpose", 1, FIX(run_transpose)},
    {"", "Concat", 1, FIX(run_concat)},
    {"", "Split", 1, FIX(run_split)},
    {"", "Slice", 1, FIX(run_slice)},
    {"", "Gather", 1, FIX(cpu_gather_run)},
    {"", "GatherElements", 11, FIX(cpu_gather_elements_run)},
    {"", "GatherND", 11, FIX(cpu_gather_nd_run)},
    {"", "Scatter", 9, FIX(cpu_scatter_elements_run)},
    {"", "ScatterElements", 11, FIX(cpu_scatter_elements_run)},
    {"", "ScatterND", 11, FIX(cpu_scatter_nd_run)},
    {"", "Expand", 8, FIX(run_expand)},
    {"", "Tile", 6, FIX(run_tile)},
    {"", "Pad", 2, FIX(run_pad)},
    {"", "DepthToSpace", 1, FIX(run_depth_space)},
    {"", "SpaceToDepth", 1, FIX(run_depth_space)},
    {"", "Trilu", 14, FIX(run_trilu)},
    {"", "ReverseSequence", 10, FIX(run_reverse_sequence)},
    {"", "Compress", 9, FIX(run_compress)},
    {"", "Upsample", 7, {cpu_resize_general_run, cpu_resize_general_check}},
};
const size_t seam_cpu_tensor_count = sizeof(seam_cpu_tensor) / sizeof(seam_cpu_tensor[0]);
