/*
 * dnnl, layer 4 (see program.h for the order): the patterns exporters
 * write that become one primitive (pattern.c): the decomposed layer norm,
 * GELU with Erf, a scalar factor deferred to the MatMul it feeds, a
 * squeeze-excite scale folded into a convolution's weights.
 */
#ifndef SEAM_DNNL_PATTERN_H
#define SEAM_DNNL_PATTERN_H

#include "map.h"

bool dx_compile_layernorm_pattern(builder *b, bool *fused, int32_t sin);
bool dx_defer_scale(builder *b, int32_t sin);
bool dx_compile_gelu_pattern(builder *b, bool *fused, int32_t sin);
/* The squeeze-excite scale a Conv (node b->index, reading `input` as slot
 * sin) applies to its weights per input channel at each run: its slot, or
 * -1 when the input is no such Mul's (pattern.c; the error set only when out
 * of memory). */
int32_t dx_se_scale_for_conv(builder *b, int32_t sin, const char *input);
/* Layer normalization over the last axis, with optional scale and shift
 * (constant vectors, by name; NULL: none): the LayerNormalization op
 * (pool_norm.c), or the decomposed form exporters write. */
bool dx_layernorm_step(builder *b, int32_t sin, const char *scale, const char *shift, float eps,
                       const seam_value_info *out);
/* GELU's five nodes, x * 0.5 * (1 + Erf(x / sqrt(2))), from the Div/Mul
 * `first` (fuse.c looks for them after a product too). */
bool dx_gelu_nodes(builder *b, int32_t first, int32_t nodes[5]);

#endif
