/*
 * dnnl, an op family (see program.h for the order): pools, batch and
 * layer normalization, LRN, Softmax, LogSoftmax, Resize (pool_norm.c).
 */
#ifndef SEAM_DNNL_POOL_NORM_H
#define SEAM_DNNL_POOL_NORM_H

#include "host.h"
#include "pattern.h"

/* The family's rows (see dx_op), ended by a row whose op is NULL. */
extern const dx_op dx_pool_norm_rows[];

#endif
