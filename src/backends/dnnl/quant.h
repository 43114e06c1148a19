/*
 * dnnl, an op family (see program.h for the order): quantized ops
 * (quant.c): QLinearConv and QLinearMatMul on oneDNN's int8 primitives
 * (u8/s8 activations, s8 weights reordered once at compile time, scales
 * per output channel, zero points), QuantizeLinear and DequantizeLinear
 * between them and float ops.
 *
 * An int8 primitive's output is an int8 slot in the layout it picks; an
 * int8 value read by a float op is converted by that reader (dx_as_plain
 * makes the float32 copy every held value has, see mask.h), and an int8
 * primitive reading a value held in float32 (an integer from a view op)
 * reorders it to its type exactly.
 */
#ifndef SEAM_DNNL_QUANT_H
#define SEAM_DNNL_QUANT_H

#include "fuse.h"

/* Whether node n's op is one of quant.c's (its row checks every dtype). */
bool dx_is_quant_op(const seam_node_view *n);

/* DequantizeLinear b->n (input 0 in slot sin) as the first of DQ(a),
 * DQ(b) -> Add -> QuantizeLinear, per tensor, same shapes: one host step
 * (the nodes fused). 1 when made, 0 when the pattern does not apply
 * (nothing changed), -1 on an error. */
int32_t dx_compile_qadd_pattern(builder *b, bool *fused, int32_t sin);

/* The family's rows (see dx_op), ended by a row whose op is NULL. */
extern const dx_op dx_quant_rows[];

#endif
