/*
 * dnnl, layer 6 (see program.h for the order): host steps (host.c),
 * seam's own kernels between oneDNN's primitives where oneDNN has nothing
 * as fast. The compile driver tries concat_norm at a Concat; the pools
 * (pool_norm.c) try global_pool.
 */
#ifndef SEAM_DNNL_HOST_H
#define SEAM_DNNL_HOST_H

#include "builder.h"

/* A channels-last Concat (b->n, input 0 in slot sin) read only by a batch
 * norm (and its Relu), with fusion on: one host step writes the batch
 * norm's (or the Relu's) output. 1 when made (the nodes fused), 0 when the
 * pattern does not apply (nothing changed), -1 on an error. */
int32_t dx_compile_concat_norm(builder *b, bool *fused, int32_t sin);
/* GlobalAveragePool (b->n) of a channels-last input (slot sin): 1 when
 * made as a host step, 0 when not (nothing changed), -1 on an error. */
int32_t dx_compile_global_pool(builder *b, int32_t sin);
/* sd = s0 op s1 (Add, Sub, Mul, Div), all plain float32, s1 of s0's rank
 * broadcasting where its dims are 1, as one host step: for the broadcasts
 * oneDNN has only its reference kernel for (a per-row mean, a mask over
 * some heads). False (nothing made) for other ops or shapes, or out of
 * memory. */
bool dx_host_bcast_binary(builder *b, dnnl_alg_kind_t alg, int32_t s0, int32_t s1, int32_t sd);

#endif
