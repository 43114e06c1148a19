/*
 * dnnl, an op family (see program.h for the order): MatMul and Gemm
 * (matmul.c).
 */
#ifndef SEAM_DNNL_MATMUL_H
#define SEAM_DNNL_MATMUL_H

#include "fuse.h"

/* The family's rows (see dx_op), ended by a row whose op is NULL. */
extern const dx_op dx_matmul_rows[];

#endif
