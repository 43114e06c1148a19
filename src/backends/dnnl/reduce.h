/*
 * dnnl, an op family (see program.h for the order): the reductions
 * (reduce.c).
 */
#ifndef SEAM_DNNL_REDUCE_H
#define SEAM_DNNL_REDUCE_H

#include "map.h"

/* The family's rows (see dx_op), ended by a row whose op is NULL. */
extern const dx_op dx_reduce_rows[];
/* A ReduceMean or ReduceMax over exactly the spatial axes of a rank-4 or
 * rank-5 input (a classifier's head, a squeeze-excitation gate): a global
 * pooling, which reads the input in the layout it has (a convolution's
 * blocked output: no reorder to plain, no reduction kernel). Returns 1
 * when made, 0 when the node is not such a reduction (the caller goes
 * plain), -1 on an error. */
int32_t dx_reduce_as_pool(builder *b, int32_t sin);

#endif
