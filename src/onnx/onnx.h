/* The ONNX layer: load (load.c) and save (save.c). Public entry points are
 * declared in seam.h; this header holds what the layers share. */
#ifndef SEAM_ONNX_H
#define SEAM_ONNX_H

#include "ir/ir.h"

/* The model as serialized ONNX bytes (weights inline), malloc'd into
 * *buf_out: a copy seam_model_load_buffer reads back. */
seam_status onnx_model_pack(seam_model *model, uint8_t **buf_out, size_t *n_out);

#endif

#include "core/tensor.h"

/* Reads one serialized TensorProto (the format of ONNX's test data,
 * input_0.pb ...). On success t->data is malloc'd and *name_out strdup'd;
 * the caller frees both. Errors name `what` (e.g. the file). */
seam_status seam_onnx_tensor_read(seam_context *ctx, const void *bytes, size_t size, const char *what, seam_tensor *t,
                                  char **name_out);
/* Writes t as a TensorProto file named path (through a temporary file). */
seam_status seam_onnx_tensor_write(seam_context *ctx, const char *path, const char *name, const seam_tensor *t);
