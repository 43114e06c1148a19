/*
 * dnnl, with the op families (see program.h for the order): the channel
 * shuffle as exporters write it (ShuffleNet's
 * Reshape [N, g, C/g, ...] -> Transpose (0, 2, 1, ...) -> Reshape [N, C,
 * ...], often after a Concat and before Slices or a Split of the
 * channels), compiled in the layout the convolutions around it use. See
 * shuf_shuffle.c.
 */
#ifndef SEAM_DNNL_SHUF_SHUFFLE_H
#define SEAM_DNNL_SHUF_SHUFFLE_H

#include "builder.h"

/* Tried at a Concat or a Reshape (b->n, input 0 in slot sin): when it
 * starts a channel shuffle, compiles the whole pattern (marking the nodes
 * it absorbs in fused) and returns true. False when the pattern does not
 * match (nothing made) or on an error (b->err set). */
bool dx_compile_shuffle_pattern(builder *b, bool *fused, int32_t sin);

#endif
