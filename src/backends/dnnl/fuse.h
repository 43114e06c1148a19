/*
 * dnnl, layer 5 (see program.h for the order): post-op chains (fuse.c):
 * the nodes a Conv, MatMul or Gemm absorbs, where their result is
 * written, and the step of a primitive with weights and its chain.
 */
#ifndef SEAM_DNNL_FUSE_H
#define SEAM_DNNL_FUSE_H

#include "pattern.h"

void dx_collect_chain(builder *b, const seam_value_info *v, bool allow_views, chain *c);
int32_t dx_chain_sum_entry(const chain *c);
bool dx_chain_may_lead(const chain *c, int32_t k);
/* c cut to its first n entries (its output then theirs; `first` is the
 * primitive's own output, for n = 0). */
void dx_chain_cut(chain *c, int32_t n, const seam_value_info *first);
bool dx_chain_attr(builder *b, const chain *c, const dnnl_memory_desc_t *dst, dnnl_primitive_attr_t *attr,
                   int32_t *kinds, int32_t *slots, int32_t *n_args, int32_t *sum_from);
int32_t dx_sum_dst(builder *b, const chain *c, int32_t sum_from, const seam_value_info *result,
                   const dnnl_memory_desc_t *md, int32_t *final_out);
int32_t dx_reshaped_dst(builder *b, const chain *c, int32_t sum_from, const seam_value_info *result, const slot *prim);
void dx_take_chain(const chain *c, bool *fused);

/* The step of a primitive with weights: src, weights, dst and (when sb >= 0)
 * bias go in slots 0-3, post-op operands after them (already in
 * kinds/slots). Consumes pd; a dst that is a stand-in for a boundary
 * output (final_slot >= 0) is copied there after. */
bool dx_weighted_step(builder *b, dnnl_primitive_desc_t pd, int32_t n_args, const int32_t *kinds, int32_t *slots,
                      int32_t src, int32_t w, int32_t dst, int32_t sb, int32_t final_slot);
/* The log line of a post-op chain compiled otherwise than written, because
 * oneDNN has only its reference kernel for it as written: how (the sum
 * first, the bias, ...), and where the chain was cut. */
void dx_log_rearranged(builder *b, const chain *whole, const chain *c, const char *how);

#endif
