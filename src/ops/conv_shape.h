/* The spatial output size shared by Conv, pooling and their quantized
 * forms: kernel, strides, pads, dilations, auto_pad and ceil_mode. */
#ifndef SEAM_CONV_SHAPE_H
#define SEAM_CONV_SHAPE_H

#include <string.h>

#include "ops/infer.h"

/* out[k] for spatial axis k (x dims from index 2). kernel[k] must be > 0.
 * Returns false when an attribute is invalid (dims stay unknown). */
static inline bool conv_spatial(const seam_infer *ic, const ir_type *x, const int64_t *kernel, int32_t n_sp, bool ceil_mode,
                                ir_dim *out) {
    const int64_t *strides = NULL, *pads = NULL, *dil = NULL;
    int32_t ns = infer_attr_ints(ic, "strides", &strides), np = infer_attr_ints(ic, "pads", &pads);
    int32_t nd = infer_attr_ints(ic, "dilations", &dil);
    const char *ap = infer_attr_string(ic, "auto_pad", "NOTSET");
    if ((ns >= 0 && ns != n_sp) || (np >= 0 && np != 2 * n_sp) || (nd >= 0 && nd != n_sp)) return false;
    for (int32_t k = 0; k < n_sp; k++) {
        int64_t in = x->dims[2 + k].v, s = ns > 0 ? strides[k] : 1, d = nd > 0 ? dil[k] : 1;
        int64_t kern = kernel[k];
        out[k] = IR_DIM_UNKNOWN;
        if (s <= 0 || d <= 0 || kern <= 0 || kern > IR_MAX_DIM || d > IR_MAX_DIM / kern) return false;
        if (in < 0) continue;
        int64_t eff = (kern - 1) * d + 1;
        if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
            out[k] = (ir_dim){(in + s - 1) / s, NULL};
        } else if (!strcmp(ap, "VALID")) {
            out[k] = (ir_dim){in >= eff ? (in - eff) / s + 1 : 0, NULL};
        } else {
            int64_t total = in + (np > 0 ? pads[k] + pads[k + n_sp] : 0) - eff;
            if (total < 0) return false;
            int64_t o = ceil_mode ? (total + s - 1) / s + 1 : total / s + 1;
            /* ceil mode: the last window must start inside the input or left pad */
            if (ceil_mode && (o - 1) * s >= in + (np > 0 ? pads[k] : 0)) o--;
            out[k] = (ir_dim){o, NULL};
        }
    }
    return true;
}

#endif
