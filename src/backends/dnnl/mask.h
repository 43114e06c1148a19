/*
 * dnnl, an op family (see program.h for the order): the mask and shape
 * ops exporters write around the fast ones (mask.c): the comparisons
 * (Equal, Greater, Less, GreaterOrEqual, LessOrEqual), Where, Expand,
 * Tile, Cast; and how values other than float32 live inside a dnnl
 * subgraph.
 *
 * oneDNN 2.6 has no int64 and no bool. Inside a subgraph every value is
 * held in float32: a bool as 0 or 1, an integer as its value. That is
 * exact for bool, int8 and uint8, for integers made from floats (Cast
 * truncates a float32, whose integer part is a float32), and for integer
 * constants of magnitude at most 2^24 (checked at compile time); an int32
 * computed outside the subgraph may not be (2^24 + 1 is not a float32), so
 * it is taken only where its conversion to float is what the op does
 * (Cast to float). A value that crosses the subgraph's boundary is
 * float32, bool (u8), int8, uint8 or int32; never int64 (no s64 in oneDNN).
 */
#ifndef SEAM_DNNL_MASK_H
#define SEAM_DNNL_MASK_H

#include "builder.h"

/* Whether node n's op is one of mask.c's (its row checks every dtype). */
bool dx_is_mask_op(const seam_node_view *n);
/* The oneDNN type a boundary value of dtype dt crosses in; undef when it
 * cannot cross. */
dnnl_data_type_t dx_boundary_type(seam_dtype dt);
/* Whether a view op (Reshape, ...) may move values of dtype dt: those held
 * exactly whatever their origin (float32, bool, int8, uint8). */
bool dx_view_dtype_ok(seam_dtype dt);
/* A constant of another dtype than float32 read by a node as data: its
 * float32 copy, made now, as the slot of that name (found by
 * dx_input_slot). False with b->err set when a value is not exact. */
bool dx_held_constant(builder *b, const seam_value_info *v);

/* The family's rows (see dx_op), ended by a row whose op is NULL. */
extern const dx_op dx_mask_rows[];

#endif
