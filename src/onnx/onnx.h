/* The ONNX layer: load (load.c) and save (save.c). Public entry points are
 * declared in seam.h; this header holds what the layers share. */
#ifndef SEAM_ONNX_H
#define SEAM_ONNX_H

#include "ir/ir.h"

#endif
