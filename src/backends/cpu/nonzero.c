/* The CPU's NonZero (registered in index.c): the indices of the elements
 * that are not zero, int64 [rank, count], counted first, then found row
 * by row along the last axis. */
#include <stdbool.h>
#include <stdint.h>

#include "backends/cpu/cpu.h"

static bool is_nonzero(const void *p, int32_t dt, int64_t i) {
    switch (dt) {
    case SEAM_DTYPE_FLOAT32: return ((const float *)p)[i] != 0;
    case SEAM_DTYPE_INT64: return ((const int64_t *)p)[i] != 0;
    case SEAM_DTYPE_BOOL: case SEAM_DTYPE_UINT8: case SEAM_DTYPE_INT8: return ((const uint8_t *)p)[i] != 0;
    default: return cpu_is_float(dt) ? cpu_get(p, dt, i) != 0 : cpu_get_i64(p, dt, i) != 0;
    }
}

/* The elements of one row [i0, i0 + len) that are not zero: their
 * positions in the row written to pos (room for `room`, which the count
 * never passes: the scan stops when it is full), their count returned.
 * Typed loops for the common dtypes, each position written and kept by
 * the count (no branch on the data). */
static int64_t nonzero_row(const void *p, int32_t dt, int64_t i0, int64_t len, int64_t *pos, int64_t room) {
    int64_t n = 0;
#define NZ_ROW(T)                                      \
    do {                                               \
        const T *v = (const T *)p + i0;                \
        for (int64_t j = 0; j < len && n < room; j++) { \
            pos[n] = j;                                \
            n += v[j] != 0;                            \
        }                                              \
    } while (0)
    switch (dt) {
    case SEAM_DTYPE_FLOAT32: NZ_ROW(float); break;
    case SEAM_DTYPE_INT64: NZ_ROW(int64_t); break;
    case SEAM_DTYPE_INT32: NZ_ROW(int32_t); break;
    case SEAM_DTYPE_BOOL: case SEAM_DTYPE_UINT8: case SEAM_DTYPE_INT8: NZ_ROW(uint8_t); break;
    default:
        for (int64_t j = 0; j < len && n < room; j++)
            if (is_nonzero(p, dt, i0 + j)) pos[n++] = j;
    }
#undef NZ_ROW
    return n;
}

/* Elements that are not zero in [0, numel): counted without a branch. */
static int64_t nonzero_count(const void *p, int32_t dt, int64_t numel) {
    int64_t n = 0;
    switch (dt) {
    case SEAM_DTYPE_FLOAT32: for (int64_t i = 0; i < numel; i++) n += ((const float *)p)[i] != 0; break;
    case SEAM_DTYPE_INT64: for (int64_t i = 0; i < numel; i++) n += ((const int64_t *)p)[i] != 0; break;
    case SEAM_DTYPE_INT32: for (int64_t i = 0; i < numel; i++) n += ((const int32_t *)p)[i] != 0; break;
    case SEAM_DTYPE_BOOL: case SEAM_DTYPE_UINT8: case SEAM_DTYPE_INT8:
        for (int64_t i = 0; i < numel; i++) n += ((const uint8_t *)p)[i] != 0;
        break;
    default:
        for (int64_t i = 0; i < numel; i++) n += is_nonzero(p, dt, i);
    }
    return n;
}

seam_status cpu_nonzero_run(seam_kernel *k) {
    const seam_tensor *x = kernel_in(k, 0);
    if (!x) return kernel_fail(k, "needs an input");
    if (!cpu_is_real(x->dtype)) return kernel_fail(k, "NonZero on %s is not supported", seam_dtype_name(x->dtype));
    int64_t n = nonzero_count(x->data, x->dtype, x->numel);
    /* a scalar is seen as one element of rank 1, as numpy and ONNX Runtime do */
    int64_t dims[2] = {x->rank ? x->rank : 1, n};
    seam_tensor *y = kernel_out(k, 0, SEAM_DTYPE_INT64, 2, dims);
    if (!y) return kernel_oom(k);
    int64_t *out = y->data, idx[SEAM_MAX_RANK] = {0}, at = 0;
    if (x->rank == 0) {
        if (n) out[0] = 0;
        return SEAM_STATUS_OK;
    }
    if (!n) return SEAM_STATUS_OK;
    /* row by row along the last axis: the positions found in a row go to
     * the last axis's row of the output, the outer indices repeated */
    int32_t last = x->rank - 1;
    int64_t len = x->dims[last], rows = x->numel / len;
    int64_t *pos = out + (int64_t)last * n; /* the last axis's row, written in place */
    for (int64_t r = 0; r < rows && at < n; r++) {
        int64_t c = nonzero_row(x->data, x->dtype, r * len, len, pos + at, n - at);
        for (int32_t d = 0; d < last; d++)
            for (int64_t q = 0; q < c; q++) out[d * n + at + q] = idx[d];
        at += c;
        cpu_index_next(idx, x->dims, last); /* the outer axes */
    }
    return SEAM_STATUS_OK;
}
