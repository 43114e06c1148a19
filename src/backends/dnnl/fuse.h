/*
 * dnnl, layer 4 (see program.h for the order): fusion (fuse.c). Who reads
 * each value (the readers index), the post-op chains a Conv, MatMul or
 * Gemm absorbs and where their result is written, and the patterns
 * exporters write that become one primitive: the decomposed layer norm,
 * GELU with Erf, a scalar factor deferred to the MatMul it feeds, a
 * squeeze-excite scale folded into a convolution's weights.
 */
#ifndef SEAM_DNNL_FUSE_H
#define SEAM_DNNL_FUSE_H

#include "map.h"

bool dx_readers_build(const seam_subgraph_view *sg, readers_index *ix);
int32_t dx_readers(const builder *b, const char *name, int32_t *out, int32_t max);
int32_t dx_sole_reader(const builder *b, const char *name);
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
bool dx_compile_layernorm_pattern(builder *b, bool *fused, int32_t sin);
bool dx_defer_scale(builder *b, int32_t sin);
bool dx_compile_gelu_pattern(builder *b, bool *fused, int32_t sin);
/* The squeeze-excite scale a Conv (node b->index, reading `input` as slot
 * sin) applies to its weights per input channel at each run: its slot, or
 * -1 when the input is no such Mul's (fuse.c; the error set only when out
 * of memory). */
int32_t dx_se_scale_for_conv(builder *b, int32_t sin, const char *input);
/* Layer normalization over the last axis, with optional scale and shift
 * (constant vectors, by name; NULL: none): the LayerNormalization op
 * (pool_norm.c), or the decomposed form exporters write. */
bool dx_layernorm_step(builder *b, int32_t sin, const char *scale, const char *shift, float eps,
                       const seam_value_info *out);

#endif
