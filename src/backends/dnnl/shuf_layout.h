/*
 * dnnl: strided layouts through the view ops (layout.c). A value in a
 * layout without inner blocks (channels-last `acdb`, a Slice's or a
 * Transpose's strided view) is sliced, split, transposed and reshaped as
 * a view of its bytes, and copied only when a reader needs it dense: into
 * the dense layout of the same dim order (a channels-last value's slice
 * stays channels-last for the convolution that reads it), not plain.
 */
#ifndef SEAM_DNNL_SHUF_LAYOUT_H
#define SEAM_DNNL_SHUF_LAYOUT_H

#include "dnnl_internal.h"

/* Whether slot s holds float32 in a layout oneDNN describes by strides
 * alone (no inner blocks) other than plain: channels-last, or a strided
 * view (a boundary value of another type is its readers' to convert). */
bool dx_is_strided(const slot *s);
/* Whether slot s is a float32 value of rank 3 to 6 in the dense
 * channels-last layout (acb, acdb, acdeb, ...: dim 1 innermost). */
bool dx_is_channels_last(const slot *s);
/* Slot s dense: s itself when it is not a lazy view, else a copy in the
 * dense layout with the dims in the order of s's strides (reordered once,
 * then reused; plain when that order is plain). */
int32_t dx_as_dense(builder *b, int32_t s);

#endif
