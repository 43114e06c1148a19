/* A tensor at run time: dtype, shape and a pointer to its elements (dense,
 * row-major, packed). Who owns `data` is the executor's business; kernels
 * only read inputs and write outputs.
 *
 * The same struct carries the values of ONNX's sequence and optional
 * types, which live on the host only (device backends and ai.seam Subgraph
 * boundaries see tensors; kernels that take them say so in
 * seam_kernel_def.values, and the executor refuses them elsewhere):
 *
 *   dtype SEAM_VALUE_SEQUENCE  data: numel seam_tensor elements, each a
 *                              tensor of dtype elem; the sequence owns its
 *                              elements and their data (seam_value_free)
 *   dtype SEAM_VALUE_NONE      an optional without a value (numel 0, data
 *                              NULL); an optional with a value is that value
 *
 * String elements (ir_bytes) point at bytes that outlive the run: the
 * model's, the caller's, or the root executor's (kernel_bytes). */
#ifndef SEAM_TENSOR_H
#define SEAM_TENSOR_H

#include <stdbool.h>
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
    int32_t elem;    /* SEAM_VALUE_SEQUENCE: the elements' dtype */
} seam_tensor;

enum { SEAM_VALUE_SEQUENCE = 1000, SEAM_VALUE_NONE = 1001 };

static inline bool seam_is_value(int32_t dtype) { return dtype == SEAM_VALUE_SEQUENCE || dtype == SEAM_VALUE_NONE; }

/* Frees what t owns (for a sequence, every element's data too) and leaves
 * it empty. */
void seam_value_free(seam_tensor *t);
/* The public API's view of t (seam_session_set_input_value); a sequence's
 * element views in *elems, which the caller frees (count -1 when out of
 * memory). The views point into t. */
seam_value_view seam_value_view_of(const char *name, const seam_tensor *t, seam_tensor_view **elems);
/* dst = a copy of src that owns its data (elements of a sequence copied
 * too; string bytes shared). False when out of memory (dst untouched). */
bool seam_value_copy(seam_tensor *dst, const seam_tensor *src);

/* The largest dimension accepted at load; more is "absurd". */
#define SEAM_MAX_DIM ((int64_t)1 << 40)
/* The largest element count of a tensor; more is "absurd". */
#define SEAM_MAX_NUMEL ((int64_t)1 << 56)

/* numel of dims (rank 0: 1); -1 on overflow, a negative dim or one over
 * SEAM_MAX_DIM, or a count over SEAM_MAX_NUMEL. */
int64_t seam_shape_numel(const int64_t *dims, int32_t rank);

#endif
