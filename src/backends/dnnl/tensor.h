/*
 * dnnl, an op family (see program.h for the order): views, Transpose,
 * Slice, Gather, Split and Pad (tensor.c).
 */
#ifndef SEAM_DNNL_TENSOR_H
#define SEAM_DNNL_TENSOR_H

#include "map.h"

/* The family's rows (see dx_op), ended by a row whose op is NULL. */
extern const dx_op dx_tensor_rows[];

#endif
