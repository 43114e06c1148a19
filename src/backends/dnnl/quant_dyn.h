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

/* The family's rows (see dx_op), ended by a row whose op is NULL. */
extern const dx_op dx_qdyn_rows[];

#endif
