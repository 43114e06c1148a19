/*
 * dnnl, an op family (see program.h for the order): dynamic quantization
 * (quant_dyn.c): DynamicQuantizeLinear as a host step, MatMulInteger on
 * oneDNN's int8 matmul (A's zero point read at run time, B's per column
 * corrected exactly), and the quantized residual Add as one host pass.
 */
#ifndef SEAM_DNNL_QUANT_DYN_H
#define SEAM_DNNL_QUANT_DYN_H

#include "quant.h"

/* DequantizeLinear b->n (input 0 in slot sin) as the first of DQ(a),
 * DQ(b) -> Add (or Mul) -> QuantizeLinear, per tensor, same shapes: one host step
 * (the nodes fused). 1 when made, 0 when the pattern does not apply
 * (nothing changed), -1 on an error. */
int32_t dx_compile_qadd_pattern(builder *b, bool *fused, int32_t sin);

/* DequantizeLinear b->n (input 0 in slot sin) as the first of DQ ->
 * MaxPool -> QuantizeLinear with the same scale and zero point: one max
 * pooling on the 8-bit values (the nodes fused). 1 when made, 0 when the
 * pattern does not apply (nothing changed), -1 on an error. */
int32_t dx_compile_qpool_pattern(builder *b, bool *fused, int32_t sin);

/* Mul b->n, when it ends a MatMulInteger -> Cast(float) -> Mul(scale)
 * chain whose MatMulInteger deferred its dequantization to it: one host
 * pass from the int32 product to float32 (B's zero points per column,
 * the Cast, the scale, and a bias Add after it when there is one). 1 when
 * made, 0 when b->n is no such Mul, -1 on an error. */
int32_t dx_compile_qmm_epilogue(builder *b, bool *fused);
/* An error message when a deferred dequantization was never made (its Mul
 * was absorbed by something else), else NULL; and what the pending list
 * holds, freed. */
const char *dx_qmm_unfinished(program *p);
void dx_qmm_release(program *p);

/* The subgraph node writing value `name`, or -1. */
int32_t dx_producer_of(builder *b, const char *name);
/* Scale and zero point of a per-tensor (De)QuantizeLinear node m, from
 * constants; false for anything else (b's error left empty). */
bool dx_qdq_params(builder *b, const seam_node_view *m, double *s, double *z);
/* Slot s as an 8-bit value of type dt, in layout `like` when given (else
 * s's own layout, plain if s holds it in float32). */
int32_t dx_as_8bit(builder *b, int32_t s, dnnl_data_type_t dt, const dnnl_memory_desc_t *like);
/* DequantizeLinear b->n (input 0 in slot sin) as one of the DQ nodes
 * feeding a Concat whose output is quantized again, per tensor: the
 * 8-bit values concatenated, each input requantized first where its scale
 * or zero point differs from the output's (quant_concat.c). 1 when made
 * or deferred to the last of those DQ nodes, 0 when the pattern does not
 * apply (nothing changed), -1 on an error. */
int32_t dx_compile_qconcat_pattern(builder *b, bool *fused, int32_t sin);

/* The family's rows (see dx_op), ended by a row whose op is NULL. */
extern const dx_op dx_qdyn_rows[];

#endif
