/*
 * The sliding-window geometry of Conv, the pools and their quantized forms,
 * in one place: kernel, strides, dilations, pads, auto_pad and ceil_mode
 * give each spatial axis's output size and the pads actually applied.
 * Inference, the CPU kernels and the dnnl backend all read it here, so they
 * agree on every shape and refuse the same attributes with the same words.
 *
 *     in = 7, kernel = 3, stride = 2, auto_pad = SAME_UPPER
 *       out = ceil(7 / 2) = 4; total pad = (4 - 1) * 2 + 3 - 7 = 2
 *       pad_lo = 1, pad_hi = 1 (SAME_LOWER puts the odd one first)
 */
#ifndef SEAM_OPS_CONV_GEOM_H
#define SEAM_OPS_CONV_GEOM_H

#include "ir/ir.h"

#define CONV_MAX_SPATIAL 16
/* Largest kernel, stride, dilation or pad accepted (hostile attributes
 * fail with a message instead of overflowing the window arithmetic). */
#define CONV_MAX_WINDOW ((int64_t)1 << 20)

typedef enum conv_auto_pad {
    CONV_PAD_NOTSET = 0,
    CONV_PAD_SAME_UPPER,
    CONV_PAD_SAME_LOWER,
    CONV_PAD_VALID,
} conv_auto_pad;

typedef struct conv_geom {
    int32_t n; /* spatial axes */
    conv_auto_pad auto_pad;
    int64_t in[CONV_MAX_SPATIAL], out[CONV_MAX_SPATIAL], kernel[CONV_MAX_SPATIAL];
    int64_t stride[CONV_MAX_SPATIAL], dil[CONV_MAX_SPATIAL];
    int64_t pad_lo[CONV_MAX_SPATIAL], pad_hi[CONV_MAX_SPATIAL];
} conv_geom;

/* The node's auto_pad (absent: NOTSET); false if it is none of the four. */
bool conv_auto_pad_of(const ir_node *n, conv_auto_pad *out);

/* Fills g for the spatial input sizes in[0..n_sp) (-1 where not known yet)
 * and the kernel sizes, reading strides, dilations, pads and auto_pad
 * from n. Where an input size is unknown, its output size (and its pads
 * under SAME_*) are -1. Returns false, with the reason in why, when an
 * attribute is invalid or the window is larger than the padded input. */
bool conv_geom_init(const ir_node *n, int32_t n_sp, const int64_t *in, const int64_t *kernel, bool ceil_mode,
                    conv_geom *g, char *why, size_t why_size);

/* The pad after axis d that makes the last window end where out says:
 * (out - 1) * stride + (kernel - 1) * dil + 1 - in - pad_lo, at least 0;
 * -1 when the sizes are not known.
 * It can exceed pad_hi under ceil_mode (oneDNN takes this one). */
int64_t conv_geom_pad_end(const conv_geom *g, int32_t d);

/* The outputs [*lo, *hi) of axis d whose window reads the input (not
 * padding) at kernel element k; sizes known. */
void conv_geom_tap_range(const conv_geom *g, int32_t d, int64_t k, int64_t *lo, int64_t *hi);

/* The share of (output, kernel element) pairs whose window reads the input
 * (1: no padding is ever read); -1 when a size is not known. Below
 * CONV_TAPS_FRACTION, the CPU runs a conv without groups tap by tap
 * (backends/cpu/tapconv.c), and the cost model counts those pairs only. */
double conv_geom_read_fraction(const conv_geom *g);
#define CONV_TAPS_FRACTION 0.6

/* For inference: the output dims of x's spatial axes (x dims from index
 * 2) into out[0..n_sp); false (out unknown) when conv_geom_init fails. */
bool conv_geom_infer(const ir_node *n, const ir_type *x, const int64_t *kernel, int32_t n_sp, bool ceil_mode,
                     ir_dim *out);

#endif
