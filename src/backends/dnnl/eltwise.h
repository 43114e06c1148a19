/*
 * dnnl, an op family (see program.h for the order): activations and
 * unary math, Clip, Pow, the broadcast binaries, Sum, PRelu, Erf
 * (eltwise.c).
 */
#ifndef SEAM_DNNL_ELTWISE_H
#define SEAM_DNNL_ELTWISE_H

#include "map.h"

/* The family's rows (see dx_op), ended by a row whose op is NULL. */
extern const dx_op dx_eltwise_rows[];
/* One eltwise or binary step (node n) in input 0's (blocked) layout, slot
 * sin: the residual Add of a ResNet, the Relu after it. Returns 1 when
 * made, 0 when the op does not fit (the caller then goes plain), -1 on an
 * error. */
int32_t dx_blocked_step(builder *b, const seam_node_view *n, int32_t sin);

#endif
