/* The ONNX layer: load (load.c; tensor.c, external.c, stream.c, wire.c
 * behind it), save (save.c), standalone models of Subgraph nodes
 * (subgraph_model.c). Public entry points are declared in seam.h; this
 * header holds what the layers share, with no protobuf type in it. */
#ifndef SEAM_ONNX_H
#define SEAM_ONNX_H

#include "core/tensor.h"
#include "ir/ir.h"

/* The model as serialized ONNX bytes (weights inline), malloc'd into
 * *buf_out: a copy seam_model_load_buffer reads back. */
seam_status onnx_model_pack(seam_model *model, uint8_t **buf_out, size_t *n_out);

/* Node `node` of the main graph of m on its own, as serialized ONNX
 * bytes malloc'd into *buf_out: the node (as the file had it), its inputs
 * of known content as initializers (weights, folded shapes), the others
 * as graph inputs of their inferred type with every dim a number, its
 * outputs of their inferred type; m's IR version and opsets. UNSUPPORTED,
 * with the reason, when an input's type or a dim is not known, when the
 * node has a body (If, Loop, Scan) or reads a value of a body's scope, or
 * a known input is of strings. canonical: the node, its graph and values
 * renamed (in0, in1 ... by input position, out0 ...), so that two nodes
 * of the same op, attributes, input types and known contents give the
 * same bytes (save.c). */
seam_status onnx_node_model_pack(seam_model *m, int32_t node, bool canonical, uint8_t **buf_out, size_t *n_out);

/* Called with each standalone model onnx_subgraph_models makes: the
 * Subgraph node's name and the model's bytes, valid during the call. A
 * status other than OK ends the walk. */
typedef seam_status (*onnx_subgraph_model_fn)(void *arg, const char *node_name, const uint8_t *bytes, size_t n);
/* Each ai.seam Subgraph node (named, with a body) of the serialized model
 * at model (size bytes: what onnx_model_pack gives for a model
 * seam_plan_apply rewrote), in graph order, as a standalone model handed
 * to fn: the node's body, named after the node, with the main graph's
 * initializers and Constant nodes that it reads copied in; the model's
 * other fields (IR version, opsets, metadata) as they are. Bytes that do
 * not parse are PARSE_ERROR; else fn's first failure, or OK
 * (subgraph_model.c). */
seam_status onnx_subgraph_models(seam_context *ctx, const void *model, size_t size, onnx_subgraph_model_fn fn,
                                 void *arg);

/* Reads one serialized TensorProto (the format of ONNX's test data,
 * input_0.pb ...). On success t->data is malloc'd and *name_out strdup'd;
 * the caller frees both. Errors name `what` (e.g. the file). */
seam_status seam_onnx_tensor_read(seam_context *ctx, const void *bytes, size_t size, const char *what, seam_tensor *t,
                                  char **name_out);
/* Writes t as a TensorProto file named path (through a temporary file). */
seam_status seam_onnx_tensor_write(seam_context *ctx, const char *path, const char *name, const seam_tensor *t);

/* A value of the type the model declares, from the bytes of a file
 * (value.c): a TensorProto of any dtype (strings: data is numel ir_bytes
 * and then their bytes, one block) for a tensor or an unknown type (NULL);
 * a SequenceProto of tensors for a sequence; an OptionalProto for an
 * optional (SEAM_VALUE_NONE when it holds nothing). uint16 data where the
 * type says bfloat16 is taken as bfloat16 (the same bits: ONNX's older
 * test data and numpy write it so). On success *t owns its data
 * (seam_value_free); errors name `what`. A declared map is refused. */
seam_status seam_onnx_value_read(seam_context *ctx, const void *bytes, size_t size, const char *what,
                                 const ir_type *type, seam_tensor *t);
/* The same from the file at path. */
seam_status seam_onnx_value_read_file(seam_context *ctx, const char *path, const ir_type *type, seam_tensor *t);
/* Writes t as the message its declared type calls for (TensorProto,
 * SequenceProto, or OptionalProto when type is an optional; type NULL:
 * by t's kind), through a temporary file renamed to path. */
seam_status seam_onnx_value_write(seam_context *ctx, const char *path, const char *name, const ir_type *type,
                                  const seam_tensor *t);
/* Writes n bytes to path through a temporary file in its folder (save.c). */
seam_status onnx_write_atomic(seam_context *ctx, const char *path, const uint8_t *buf, size_t n);

#endif
