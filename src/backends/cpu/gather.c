/* CPU kernels: the tensor family's Gather and Scatter ops (bound in
 * tensor.c's table, declared in gather.h): Gather, GatherElements and
 * GatherND copy elements (any dtype of a fixed size) from where their
 * indices say; ScatterElements and ScatterND copy the data and write or
 * reduce the updates into it. A negative index counts from the end of
 * its axis; one out of range fails the run, naming it. */
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu.h"
#include "backends/cpu/gather.h"

/* ---- Gather family ---- */

seam_status cpu_gather_run(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0), *ix = kernel_in(k, 1);
    if (!x || !ix) return kernel_fail(k, "needs data and indices");
    if (!cpu_is_int(ix->dtype)) return kernel_fail(k, "indices must be integers");
    int32_t axis = op_axis(node_attr_int(k->n, "axis", 0), x->rank);
    if (axis < 0) return kernel_fail(k, "axis is out of range for rank %d", x->rank);
    int32_t r = x->rank - 1 + ix->rank;
    if (r > SEAM_MAX_RANK) return kernel_fail(k, "the result would have rank %d", r);
    int64_t dims[SEAM_MAX_RANK];
    int32_t o = 0;
    for (int32_t d = 0; d < axis; d++) dims[o++] = x->dims[d];
    for (int32_t d = 0; d < ix->rank; d++) dims[o++] = ix->dims[d];
    for (int32_t d = axis + 1; d < x->rank; d++) dims[o++] = x->dims[d];
    seam_tensor *y = kernel_out(k, 0, x->dtype, r, dims);
    if (!y) return kernel_oom(k);
    size_t es = seam_dtype_size(x->dtype);
    int64_t outer = cpu_span(x->dims, 0, axis), inner = cpu_span(x->dims, axis + 1, x->rank), len = x->dims[axis];
    size_t block = (size_t)inner * es;
    char *out = y->data;
    for (int64_t a = 0; a < outer; a++)
        for (int64_t i = 0; i < ix->numel; i++) {
            int64_t j = cpu_get_i64(ix->data, ix->dtype, i);
            if (j < 0) j += len;
            if (j < 0 || j >= len)
                return kernel_fail(k, "index %lld is out of range for axis %d of size %lld",
                                   (long long)cpu_get_i64(ix->data, ix->dtype, i), axis, (long long)len);
            memcpy(out, (const char *)x->data + (size_t)((a * len + j) * inner) * es, block);
            out += block;
        }
    return SEAM_STATUS_OK;
}

/* GatherElements and ScatterElements: the offset in x of the element that
 * element i of ix (at multi-index idx) names: idx with ix[i] at axis. */
static seam_status element_of(seam_kernel *k, const seam_tensor *x, const seam_tensor *ix, int32_t axis,
                              const int64_t *xs, const int64_t *idx, int64_t i, int64_t *off) {
    int64_t j = cpu_get_i64(ix->data, ix->dtype, i);
    if (j < 0) j += x->dims[axis];
    if (j < 0 || j >= x->dims[axis]) return kernel_fail(k, "index %lld is out of range", (long long)j);
    *off = 0;
    for (int32_t d = 0; d < x->rank; d++) {
        int64_t v = d == axis ? j : idx[d];
        if (v >= x->dims[d]) return kernel_fail(k, "indices are larger than the data on axis %d", d);
        *off += v * xs[d];
    }
    return SEAM_STATUS_OK;
}

/* GatherElements: y[i...] = x[... index[i...] at axis ...]. */
seam_status cpu_gather_elements_run(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0), *ix = kernel_in(k, 1);
    if (!x || !ix || !cpu_is_int(ix->dtype)) return kernel_fail(k, "needs data and integer indices");
    if (ix->rank != x->rank) return kernel_fail(k, "indices must have the data's rank");
    int32_t axis = op_axis(node_attr_int(k->n, "axis", 0), x->rank);
    if (axis < 0) return kernel_fail(k, "axis is out of range for rank %d", x->rank);
    seam_tensor *y = kernel_out(k, 0, x->dtype, ix->rank, ix->dims);
    if (!y) return kernel_oom(k);
    size_t es = seam_dtype_size(x->dtype);
    int64_t xs[SEAM_MAX_RANK], idx[SEAM_MAX_RANK] = {0};
    cpu_strides(x->rank, x->dims, xs);
    for (int64_t i = 0; i < ix->numel; i++) {
        int64_t off;
        seam_status st = element_of(k, x, ix, axis, xs, idx, i, &off);
        if (st) return st;
        cpu_copy_elem(y->data, i, x->data, off, es);
        cpu_index_next(idx, ix->dims, ix->rank);
    }
    return SEAM_STATUS_OK;
}

seam_status cpu_gather_nd_run(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0), *ix = kernel_in(k, 1);
    if (!x || !ix || !cpu_is_int(ix->dtype) || ix->rank < 1) return kernel_fail(k, "needs data and integer indices");
    int64_t b = node_attr_int(k->n, "batch_dims", 0), m = ix->dims[ix->rank - 1];
    if (b < 0 || b >= ix->rank || b >= x->rank || m < 1 || b + m > x->rank) return kernel_fail(k, "bad batch_dims or index depth");
    int64_t dims[SEAM_MAX_RANK];
    int32_t r = 0;
    for (int32_t d = 0; d < ix->rank - 1; d++) dims[r++] = ix->dims[d];
    for (int32_t d = (int32_t)(b + m); d < x->rank; d++) {
        if (r >= SEAM_MAX_RANK) return kernel_fail(k, "result rank too large");
        dims[r++] = x->dims[d];
    }
    for (int32_t d = 0; d < b; d++)
        if (x->dims[d] != ix->dims[d]) return kernel_fail(k, "batch dims of data and indices differ");
    seam_tensor *y = kernel_out(k, 0, x->dtype, r, dims);
    if (!y) return kernel_oom(k);
    size_t es = seam_dtype_size(x->dtype);
    int64_t xs[SEAM_MAX_RANK];
    cpu_strides(x->rank, x->dims, xs);
    int64_t slice = cpu_span(x->dims, (int32_t)(b + m), x->rank);
    int64_t n_batch = cpu_span(x->dims, 0, (int32_t)b), per_batch = ix->numel / m / (n_batch ? n_batch : 1);
    int64_t batch_stride = b ? xs[b - 1] : 0;
    for (int64_t t = 0; t < ix->numel / m; t++) {
        int64_t bi = per_batch ? t / per_batch : 0, off = bi * batch_stride;
        for (int64_t q = 0; q < m; q++) {
            int32_t d = (int32_t)(b + q);
            int64_t j = cpu_get_i64(ix->data, ix->dtype, t * m + q);
            if (j < 0) j += x->dims[d];
            if (j < 0 || j >= x->dims[d]) return kernel_fail(k, "index %lld is out of range for axis %d", (long long)j, d);
            off += j * xs[d];
        }
        memcpy((char *)y->data + (size_t)(t * slice) * es, (const char *)x->data + (size_t)off * es, (size_t)slice * es);
    }
    return SEAM_STATUS_OK;
}

/* ---- Scatter family ---- */

typedef enum { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN } reduction;

static reduction reduction_of(const ir_node *n) {
    if (node_attr_is(n, "reduction", "add")) return RED_ADD;
    if (node_attr_is(n, "reduction", "mul")) return RED_MUL;
    if (node_attr_is(n, "reduction", "max")) return RED_MAX;
    if (node_attr_is(n, "reduction", "min")) return RED_MIN;
    return RED_NONE;
}

static void scatter_one(void *y, int32_t dt, int64_t at, const void *u, int64_t ui, reduction red, size_t es) {
    if (red == RED_NONE) {
        cpu_copy_elem(y, at, u, ui, es);
        return;
    }
    if (cpu_is_float(dt)) {
        double a = cpu_get(y, dt, at), b = cpu_get(u, dt, ui);
        double v = red == RED_ADD ? a + b : red == RED_MUL ? a * b : red == RED_MAX ? (a > b ? a : b) : (a < b ? a : b);
        cpu_set(y, dt, at, v);
    } else {
        int64_t a = cpu_get_i64(y, dt, at), b = cpu_get_i64(u, dt, ui);
        int64_t v = red == RED_ADD ? (int64_t)((uint64_t)a + (uint64_t)b)
                    : red == RED_MUL ? (int64_t)((uint64_t)a * (uint64_t)b)
                    : red == RED_MAX ? (a > b ? a : b) : (a < b ? a : b);
        cpu_set_i64(y, dt, at, v);
    }
}

seam_status cpu_scatter_elements_run(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0), *ix = kernel_in(k, 1), *u = kernel_in(k, 2);
    if (!x || !ix || !u || !cpu_is_int(ix->dtype)) return kernel_fail(k, "needs data, integer indices and updates");
    if (ix->rank != x->rank || u->rank != ix->rank || u->dtype != x->dtype)
        return kernel_fail(k, "data, indices and updates must have one rank, and updates the data's dtype");
    for (int32_t d = 0; d < ix->rank; d++)
        if (u->dims[d] != ix->dims[d]) return kernel_fail(k, "updates and indices must have one shape");
    int32_t axis = op_axis(node_attr_int(k->n, "axis", 0), x->rank);
    if (axis < 0) return kernel_fail(k, "axis is out of range for rank %d", x->rank);
    seam_tensor *y = kernel_out(k, 0, x->dtype, x->rank, x->dims);
    if (!y) return kernel_oom(k);
    if (x->nbytes) memcpy(y->data, x->data, x->nbytes);
    size_t es = seam_dtype_size(x->dtype);
    reduction red = reduction_of(k->n);
    int64_t xs[SEAM_MAX_RANK], idx[SEAM_MAX_RANK] = {0};
    cpu_strides(x->rank, x->dims, xs);
    for (int64_t i = 0; i < ix->numel; i++) {
        int64_t off;
        seam_status st = element_of(k, x, ix, axis, xs, idx, i, &off);
        if (st) return st;
        scatter_one(y->data, x->dtype, off, u->data, i, red, es);
        cpu_index_next(idx, ix->dims, ix->rank);
    }
    return SEAM_STATUS_OK;
}

seam_status cpu_scatter_nd_run(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0), *ix = kernel_in(k, 1), *u = kernel_in(k, 2);
    if (!x || !ix || !u || !cpu_is_int(ix->dtype) || ix->rank < 1 || u->dtype != x->dtype)
        return kernel_fail(k, "needs data, integer indices and updates of the data's dtype");
    int64_t m = ix->dims[ix->rank - 1];
    if (m < 1 || m > x->rank) return kernel_fail(k, "index depth %lld does not fit rank %d", (long long)m, x->rank);
    int64_t slice = cpu_span(x->dims, (int32_t)m, x->rank), n = ix->numel / m;
    if (u->numel != n * slice) return kernel_fail(k, "updates have %lld elements, expected %lld", (long long)u->numel, (long long)(n * slice));
    seam_tensor *y = kernel_out(k, 0, x->dtype, x->rank, x->dims);
    if (!y) return kernel_oom(k);
    if (x->nbytes) memcpy(y->data, x->data, x->nbytes);
    size_t es = seam_dtype_size(x->dtype);
    reduction red = reduction_of(k->n);
    int64_t xs[SEAM_MAX_RANK];
    cpu_strides(x->rank, x->dims, xs);
    for (int64_t t = 0; t < n; t++) {
        int64_t off = 0;
        for (int64_t q = 0; q < m; q++) {
            int64_t j = cpu_get_i64(ix->data, ix->dtype, t * m + q);
            if (j < 0) j += x->dims[q];
            if (j < 0 || j >= x->dims[q]) return kernel_fail(k, "index %lld is out of range for axis %lld", (long long)j, (long long)q);
            off += j * xs[q];
        }
        for (int64_t e = 0; e < slice; e++) scatter_one(y->data, x->dtype, off + e, u->data, t * slice + e, red, es);
    }
    return SEAM_STATUS_OK;
}
