/*
 * dnnl, an op family (see program.h for the order): Conv and
 * ConvTranspose (conv.c).
 */
#ifndef SEAM_DNNL_CONV_H
#define SEAM_DNNL_CONV_H

#include "fuse.h"

/* The family's rows (see dx_op), ended by a row whose op is NULL. */
extern const dx_op dx_conv_rows[];
/* Parses target option `conv=auto|direct|winograd` into *conv; false when
 * opt is not one of them. */
bool dx_conv_option(const char *opt, int32_t *conv);

#endif
