/* A tensor at run time: dtype, shape and a pointer to its elements (dense,
 * row-major, packed). Who owns `data` is the executor's business; kernels
 * only read inputs and write outputs. */
#ifndef SEAM_TENSOR_H
#define SEAM_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "seam.h"

#define SEAM_MAX_RANK 16

typedef struct seam_tensor {
    int32_t dtype;
    int32_t rank;
    int64_t dims[SEAM_MAX_RANK];
    int64_t numel;
    void *data;      /* numel elements; for strings, numel ir_bytes */
    size_t nbytes;
} seam_tensor;

/* numel of dims (rank 0: 1); -1 on overflow or a negative dim. */
int64_t seam_shape_numel(const int64_t *dims, int32_t rank);

#endif
