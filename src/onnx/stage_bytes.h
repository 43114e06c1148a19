/* A pipeline stage's model cut from a staged model's protobuf bytes
 * (stage_bytes.c), without unpacking what the stage does not keep: the
 * other stages' nodes and weights are skipped by their lengths, so a
 * process holds only its own stage (runtime/staged.c says which nodes,
 * weights and boundary values a stage has). No protobuf type here. */
#ifndef SEAM_ONNX_STAGE_BYTES_H
#define SEAM_ONNX_STAGE_BYTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "seam.h"

/* A boundary value of a stage, written as a graph input or output: a
 * tensor of ONNX elem type `dtype`, rank entries of dims (-1: unknown,
 * with syms[d] its symbolic name or NULL). rank -1: shape unknown. */
typedef struct onnx_stage_io {
    const char *name;
    int32_t dtype, rank;
    const int64_t *dims;
    const char *const *syms;
} onnx_stage_io;

typedef struct onnx_stage_cut {
    const bool *keep_node;          /* per node of the main graph, in the file's order */
    int32_t n_nodes;                /* must be the file's node count */
    const char *const *weights;     /* initializers kept, sorted by strcmp */
    int32_t n_weights;
    const onnx_stage_io *inputs, *outputs; /* the stage graph's inputs and outputs, replacing the file's */
    int32_t n_inputs, n_outputs;
    const char *drop_metadata;      /* a metadata_props key left out (NULL: none) */
} onnx_stage_cut;

/* The serialized model at model[0, size) with its main graph cut to
 * `cut`: only the kept nodes and weights, the given inputs and outputs,
 * no value_info (shapes are inferred again); everything else as it was.
 * *out is malloc'd (the caller frees it). PARSE_ERROR for bytes that are
 * not a model, INVALID_MODEL when the node count disagrees. */
seam_status onnx_stage_bytes(seam_context *ctx, const uint8_t *model, size_t size, const onnx_stage_cut *cut,
                             uint8_t **out, size_t *n_out);

/* The value of the model's metadata_props entry `key`, malloc'd into
 * *value_out, or NULL there when it has none. Reads only the top-level
 * fields of ModelProto (the graph is skipped by its length, its pages
 * never touched). */
seam_status onnx_peek_metadata(seam_context *ctx, const uint8_t *model, size_t size, const char *key,
                               char **value_out);

#endif
