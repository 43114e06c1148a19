/* The fusable activations in float64, written from the ONNX operator
 * definitions (not from seam's kernels): the reference the kernel tests
 * compare fused outputs with. NULL or ACT_NONE: the identity. */
#ifndef SEAM_TEST_ACT_REF_H
#define SEAM_TEST_ACT_REF_H

#include <math.h>

#include "ops/activation.h"

static inline double act_ref(const act_params *a, double v) {
    if (!a) return v;
    switch (a->kind) {
    case ACT_RELU: return v < 0 ? 0 : v;
    case ACT_LEAKY_RELU: return v >= 0 ? v : a->alpha * v;
    case ACT_CLIP: return v < a->lo ? a->lo : v > a->hi ? a->hi : v;
    case ACT_HARD_SIGMOID: {
        double h = a->alpha * v + a->beta;
        return h < 0 ? 0 : h > 1 ? 1 : h;
    }
    case ACT_HARD_SWISH: {
        double h = v / 6 + 0.5;
        return v * (h < 0 ? 0 : h > 1 ? 1 : h);
    }
    case ACT_SILU: return v / (1 + exp(-v));
    default: return v;
    }
}

#endif
