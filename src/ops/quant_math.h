/*
 * ops: the arithmetic of QuantizeLinear that every backend must share to
 * give the same bits (the CPU kernel, backends/cpu/quant.c, and dnnl's
 * host step, backends/dnnl/quant.c).
 */
#ifndef SEAM_OPS_QUANT_MATH_H
#define SEAM_OPS_QUANT_MATH_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

/* float32 to 8 bits as QuantizeLinear does, saturate(round(x / scale) +
 * zp): divided in float32 (the reference's halfway cases depend on it, a
 * multiplication by 1 / scale rounds some of them the other way), rounded
 * half to even, a NaN to 0, then clamped to the type; y is int8 when
 * is_signed, else uint8. A loop the compiler vectorizes (with
 * -fno-trapping-math): callers wrap it in their AVX2/AVX-512 clones. */
static inline void quant_f32_to_8bit(const float *x, uint8_t *y, int64_t n, float scale, float zp, bool is_signed) {
    float lo = is_signed ? -128.0f : 0.0f, hi = is_signed ? 127.0f : 255.0f;
    if (is_signed) {
        int8_t *o = (int8_t *)y;
        for (int64_t i = 0; i < n; i++) {
            float v = nearbyintf(x[i] / scale);
            v = v == v ? v + zp : 0.0f;
            v = v < lo ? lo : v;
            o[i] = (int8_t)(int32_t)(v > hi ? hi : v);
        }
    } else {
        for (int64_t i = 0; i < n; i++) {
            float v = nearbyintf(x[i] / scale);
            v = v == v ? v + zp : 0.0f;
            v = v < lo ? lo : v;
            y[i] = (uint8_t)(int32_t)(v > hi ? hi : v);
        }
    }
}

#endif
