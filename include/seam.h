/*
 * seam.h - load an ONNX model into seam's graph IR, check it, infer its
 * types and shapes, inspect it and write it back.
 *
 * Usage:
 *
 *     seam_context *ctx;
 *     seam_model *model;
 *     if (seam_context_create(&ctx) != SEAM_STATUS_OK) return 1;
 *     seam_status st = seam_model_load(ctx, "resnet18.onnx", &model);
 *     if (st != SEAM_STATUS_OK) {
 *         fprintf(stderr, "%s: %s\n", seam_status_string(st),
 *                 seam_context_last_error(ctx));
 *         seam_context_free(ctx);
 *         return 1;
 *     }
 *     printf("%d nodes\n", seam_model_node_count(model));
 *     seam_model_save(model, "copy.onnx", NULL);
 *     seam_model_free(model);
 *     seam_context_free(ctx);
 *
 * Building against an installed seam: `cc app.c $(pkg-config --cflags --libs
 * seam)`, or in CMake `find_package(seam)` and `target_link_libraries(app
 * PRIVATE seam::seam)`. libseam.so exports the SEAM_API functions of this
 * header, seam_partition.h, seam_quantize.h and seam_backend.h, nothing else.
 *
 * Threading: a context, and every handle made from it (model, plan,
 * session), is used by one thread at a time. Two contexts never share
 * state, so two threads with a context each need no locking, whatever
 * backends their sessions use (the built-in ones set up their process-wide
 * state once, safely). A session is never run by two threads at once: a
 * run keeps its state in the session (bound inputs, intermediates, the
 * backends' compiled subgraphs). For parallel inference make one session
 * per thread (each has its own worker threads, n_threads); threads that
 * share one session must take turns, under a lock of their own.
 *
 * Errors: every fallible call returns a seam_status. The detailed message
 * of the last failure (which names the node, value, file or option) is
 * read with seam_context_last_error() on the context the handle came from.
 */
#ifndef SEAM_H
#define SEAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks the public API: libseam.so is built with -fvisibility=hidden and
 * exports only what is declared with SEAM_API. */
#ifndef SEAM_API
#if defined(__GNUC__) || defined(__clang__)
#define SEAM_API __attribute__((visibility("default")))
#else
#define SEAM_API
#endif
#endif

#define SEAM_VERSION_MAJOR 0
#define SEAM_VERSION_MINOR 1
#define SEAM_VERSION_PATCH 0

/* The numbers are stable: new statuses are added at the end. */
typedef enum seam_status {
    SEAM_STATUS_OK = 0,
    SEAM_STATUS_INVALID_ARGUMENT,  /* the caller's argument: a bad option, a NULL where one is not allowed, an input
                                      of the wrong dtype or shape */
    SEAM_STATUS_IO_ERROR,          /* a file could not be opened, read or written */
    SEAM_STATUS_PARSE_ERROR,       /* the bytes are not an ONNX ModelProto */
    SEAM_STATUS_INVALID_MODEL,     /* it parses, but the graph breaks ONNX's rules */
    SEAM_STATUS_UNSUPPORTED,       /* valid, but seam cannot do it (yet) */
    SEAM_STATUS_OUT_OF_MEMORY,     /* an allocation failed, or a run asked for a size no machine has */
    SEAM_STATUS_INTERNAL,          /* a bug in seam: please report it */
    SEAM_STATUS_RUN_FAILED,        /* a run could not compute a node from the values it was given (a shape or value
                                      the model does not allow); the message names the node */
} seam_status;

/* Returns a static string such as "invalid model". Never NULL. */
SEAM_API const char *seam_status_string(seam_status status);

/* Element types. The numbers are ONNX's TensorProto.DataType. */
typedef enum seam_dtype {
    SEAM_DTYPE_UNDEFINED = 0,
    SEAM_DTYPE_FLOAT32 = 1,
    SEAM_DTYPE_UINT8 = 2,
    SEAM_DTYPE_INT8 = 3,
    SEAM_DTYPE_UINT16 = 4,
    SEAM_DTYPE_INT16 = 5,
    SEAM_DTYPE_INT32 = 6,
    SEAM_DTYPE_INT64 = 7,
    SEAM_DTYPE_STRING = 8,
    SEAM_DTYPE_BOOL = 9,
    SEAM_DTYPE_FLOAT16 = 10,
    SEAM_DTYPE_FLOAT64 = 11,
    SEAM_DTYPE_UINT32 = 12,
    SEAM_DTYPE_UINT64 = 13,
    SEAM_DTYPE_COMPLEX64 = 14,
    SEAM_DTYPE_COMPLEX128 = 15,
    SEAM_DTYPE_BFLOAT16 = 16,
    /* 8-bit floats (ONNX opset 19): sign, exponent and mantissa bits;
     * FN: no infinities, FNUZ: no infinities and no negative zero */
    SEAM_DTYPE_FLOAT8E4M3FN = 17,
    SEAM_DTYPE_FLOAT8E4M3FNUZ = 18,
    SEAM_DTYPE_FLOAT8E5M2 = 19,
    SEAM_DTYPE_FLOAT8E5M2FNUZ = 20,
    SEAM_DTYPE_COUNT_
} seam_dtype;

/* "float32", "int64", ...; "undefined" for anything unknown. Never NULL. */
SEAM_API const char *seam_dtype_name(seam_dtype dtype);
/* Bytes per element; 0 for string, undefined and unknown types. */
SEAM_API size_t seam_dtype_size(seam_dtype dtype);

/* ---- context ----------------------------------------------------------- */

typedef struct seam_context seam_context;

SEAM_API seam_status seam_context_create(seam_context **ctx_out);
/* Frees the context. Every model made from it must be freed first. */
SEAM_API void seam_context_free(seam_context *ctx);
/* The message of the last failed call made with this context or any handle
 * from it; "" if none failed. Owned by the context, valid until the next
 * call that fails. */
SEAM_API const char *seam_context_last_error(const seam_context *ctx);

/* ---- model --------------------------------------------------------------- */

typedef struct seam_model seam_model;

/* Loads, checks and type/shape-infers an ONNX file. External data is read
 * from files next to the model; a location that is absolute or leaves the
 * model's folder is refused. On failure *model_out is set to NULL and the
 * message names the node (index, name, op), value or file at fault. */
SEAM_API seam_status seam_model_load(seam_context *ctx, const char *path, seam_model **model_out);

/* As seam_model_load, from bytes in memory. base_dir is where external data
 * files are looked up; NULL refuses any external data. The bytes are not
 * kept after return. */
SEAM_API seam_status seam_model_load_buffer(seam_context *ctx, const void *data, size_t size,
                                   const char *base_dir, seam_model **model_out);

typedef struct seam_save_options {
    /* When not NULL, tensors of at least external_min_bytes bytes go to this
     * file, named relative to the model's folder (a plain file name such as
     * "model.weights"). Default: NULL, everything inside the .onnx file. */
    const char *external_data;
    size_t external_min_bytes; /* default (0): 1024 */
} seam_save_options;

/* Writes the model as ONNX. The file is written to a temporary name in the
 * same folder and renamed, so an existing file is never left half-written.
 * opts may be NULL. */
SEAM_API seam_status seam_model_save(seam_model *model, const char *path, const seam_save_options *opts);

/* Replaces the model's weights (initializers of its main graph) with the
 * ones of the same name in donor, e.g. a partitioned model gets retrained
 * weights without partitioning again. Each of donor's initializers must
 * name a weight of the model with the same dtype and shape; otherwise
 * nothing changes and the error names the weight. The data is copied.
 * *replaced_out (may be NULL) gets the count. */
SEAM_API seam_status seam_model_replace_weights(seam_model *model, const seam_model *donor, int32_t *replaced_out);

/* Frees the model and everything it owns. NULL is allowed. */
SEAM_API void seam_model_free(seam_model *model);

/* ---- introspection ------------------------------------------------------ */
/* Strings and arrays returned here are owned by the model and stay valid
 * until seam_model_free. */

typedef struct seam_value_info {
    const char *name;
    seam_dtype dtype;     /* SEAM_DTYPE_UNDEFINED if unknown or not a tensor */
    int32_t rank;         /* -1 if unknown */
    const int64_t *dims;  /* rank entries; -1 for a dimension not known statically */
    const char *const *dim_params; /* rank entries; symbolic name or NULL */
} seam_value_info;

typedef struct seam_node_info {
    int32_t index;        /* position in the file's node list */
    const char *name;     /* the file's name, or a stable generated one */
    const char *op_type;
    const char *domain;   /* "" for the default ONNX domain */
    int32_t n_inputs, n_outputs;
} seam_node_info;

SEAM_API int32_t seam_model_node_count(const seam_model *model);
SEAM_API seam_status seam_model_node(const seam_model *model, int32_t index, seam_node_info *info_out);
SEAM_API int32_t seam_model_input_count(const seam_model *model);
SEAM_API int32_t seam_model_output_count(const seam_model *model);
/* Inputs listed here exclude initializers that old files also list as inputs. */
SEAM_API seam_status seam_model_input(const seam_model *model, int32_t index, seam_value_info *info_out);
SEAM_API seam_status seam_model_output(const seam_model *model, int32_t index, seam_value_info *info_out);

/* The model's metadata as the file gives it (ModelProto and GraphProto
 * fields; "" where the file has none). Owned by the model. */
typedef struct seam_model_meta {
    const char *producer_name, *producer_version, *domain, *description; /* ModelProto.doc_string */
    const char *graph_name, *graph_description;                          /* GraphProto.name, .doc_string */
    int64_t version;                                                     /* ModelProto.model_version */
    int64_t ir_version;
    int32_t n_props;                 /* metadata_props: key/value pairs */
    const char *const *prop_keys, *const *prop_values;
} seam_model_meta;
SEAM_API seam_status seam_model_metadata(const seam_model *model, seam_model_meta *meta_out);

/* Fixes the shape of a graph input whose dimensions are symbolic or
 * unknown (e.g. a batch of 4 for "batch"), and infers shapes again, so a
 * session can plan all its memory ahead. Fails, naming the input, when the
 * rank or a known dimension disagrees. dims is not kept. */
SEAM_API seam_status seam_model_set_input_shape(seam_model *model, const char *name, int32_t rank, const int64_t *dims);

/* ---- running on the CPU ------------------------------------------------ */
/*
 *     seam_session *s;
 *     seam_session_create(model, NULL, &s);            // checks every node
 *     seam_session_set_input(s, "x", SEAM_DTYPE_FLOAT32, 4, dims, pixels);
 *     seam_session_run(s);
 *     seam_tensor_view y;
 *     seam_session_output(s, 0, &y);                   // y.data owned by s
 */

typedef struct seam_session seam_session;

typedef struct seam_session_options {
    int32_t n_threads;  /* worker threads; default (0): one per core */
    bool profile;       /* time every node of each run (seam_session_node_stats) */
    /* torch-neuronx's dynamic_batch: a model made for batch B (a fixed dim
     * 0 on every input) accepts any batch N. The inputs are cut along dim
     * 0 into chunks of B (the last one padded with zeros), each chunk runs,
     * and the outputs (which must also have B as dim 0) are joined. Every
     * other dim must match the model's. */
    bool dynamic_batch;
    /* Targets (backend tables, see seam_backend.h) that the model's
     * ai.seam Subgraph nodes may name, besides cpu and rules targets
     * (whose rules travel in the file). Each table is checked when the
     * session is made. The array and the tables must outlive the session. */
    const struct seam_backend *const *targets;
    int32_t n_targets;
    /* (optional) Called while the session is made, after each device
     * subgraph is compiled: done of total. For progress displays. */
    void (*progress)(void *user, int32_t done, int32_t total);
    void *progress_user;
} seam_session_options;

/* Prepares the model to run on the CPU: every node is checked here, and an
 * op that seam cannot run fails now (naming the node and the op), never
 * in the middle of a run. Memory for values of known shape is planned
 * once. The model must outlive the session. opts may be NULL. */
SEAM_API seam_status seam_session_create(seam_model *model, const seam_session_options *opts, seam_session **session_out);
SEAM_API void seam_session_free(seam_session *session);

/* What making the session decided that a user may want to read: the
 * compile log of every device subgraph (see seam_backend.compile_log),
 * each line prefixed with "subgraph 'NAME' (TARGET): ". Lines about a
 * slower path than asked for read "subgraph 'NAME' (TARGET): slow: ...".
 * Empty when nothing was compiled. Owned by the session. */
SEAM_API const char *seam_session_log(const seam_session *session);

/* What one node of the model's graph cost in the last run (sessions made
 * with options.profile). For an ai.seam Subgraph node (a device subgraph
 * of a partitioned model), target is its target and bytes_in/bytes_out
 * what crossed its boundary: copied to the device's memory and back. */
typedef struct seam_node_stats {
    const char *name;
    const char *op_type;
    const char *target;   /* "cpu" for plain nodes */
    double ms;            /* the node's time in the last run */
    int64_t bytes_in, bytes_out;
    double start_ms;      /* when the node started, from the start of the last run */
    double compile_ms;    /* ai.seam Subgraph: its backend's compile at session creation; else 0 */
    double copy_ms;       /* ai.seam Subgraph on a device memory: copying its boundary values, part of ms */
} seam_node_stats;
/* node: an index in the graph (0 .. seam_model_node_count - 1). */
SEAM_API seam_status seam_session_node_stats(seam_session *session, int32_t node, seam_node_stats *stats_out);

/* Binds graph input `name` to caller-owned data (dense, row-major). seam
 * does not copy it: the data must stay valid and unchanged until the run
 * that uses it returns. A wrong dtype, rank or dimension is refused with a
 * message naming the input, what was expected and what was given. */
SEAM_API seam_status seam_session_set_input(seam_session *session, const char *name, seam_dtype dtype, int32_t rank,
                                   const int64_t *dims, const void *data);

/* Optionally gives a caller-owned buffer of `capacity` bytes for output
 * `name`; the run writes the output there when it fits (otherwise into
 * session memory; seam_session_output tells where). Not kept after
 * seam_session_free. */
SEAM_API seam_status seam_session_set_output_buffer(seam_session *session, const char *name, void *data, size_t capacity);

/* Runs the model once; can be called any number of times, by one thread at
 * a time: two concurrent runs of one session are a data race (see
 * Threading above). */
SEAM_API seam_status seam_session_run(seam_session *session);

/* Runs with shapes not known when the session was made. A device subgraph
 * whose boundary shapes are static was compiled by seam_session_create; a
 * run costs no compile. One whose shapes depend on the model's symbolic
 * dims is compiled at run time, per shape signature (the dtypes and shapes
 * of its inputs, and the values of small integer inputs that fix shapes,
 * such as a Reshape's target): the first run with a new signature infers
 * the subgraph's shapes for it and compiles it (as long as a compile at
 * session creation: milliseconds to seconds, see seam_session_stats), and
 * keeps the result; a later run with a seen signature compiles nothing.
 * Each subgraph keeps 8 signatures compiled (seam_session_set_shape_cache),
 * dropping the least recently used. A shape the backend cannot compile (a size it
 * does not take) runs that subgraph on the CPU, said once in
 * seam_session_log ("slow: ..."). */
typedef struct seam_session_stats {
    int64_t compiles;      /* device subgraph compiles, at session creation and at runs */
    int64_t run_compiles;  /* of which at runs: a shape signature not seen before */
    int64_t cache_hits;    /* subgraph runs whose shape signature was compiled already */
    int64_t evictions;     /* compiled shapes dropped from a full cache */
    int64_t cpu_shapes;    /* shapes a backend did not compile: those runs went to the CPU */
    double compile_ms;     /* time in those compiles */
} seam_session_stats;

/* How many shape signatures each device subgraph keeps compiled (n >= 1;
 * fewer drops the least recently used now). */
SEAM_API seam_status seam_session_set_shape_cache(seam_session *session, int32_t n);

/* Counts since the session was made, summed over its device subgraphs. */
SEAM_API seam_status seam_session_stats_get(const seam_session *session, seam_session_stats *stats_out);

typedef struct seam_tensor_view {
    const char *name;
    seam_dtype dtype;
    int32_t rank;
    const int64_t *dims;
    const void *data;   /* owned by the session (or the caller's buffer);
                           valid until the next run or seam_session_free */
    size_t nbytes;
} seam_tensor_view;

/* Output `index` when it is a tensor (an optional output holding one
 * included); a sequence or an empty optional is refused, naming
 * seam_session_output_value, which gives every kind. */
SEAM_API seam_status seam_session_output(seam_session *session, int32_t index, seam_tensor_view *view_out);

/* ---- values of every ONNX type: strings, sequences, optionals ----------- */
/*
 * A string tensor (SEAM_DTYPE_STRING) is passed and returned like any other
 * tensor, its data an array of numel seam_bytes: ONNX strings are bytes (UTF-8
 * by convention), counted, not NUL-terminated. bfloat16, float16 and the
 * complex types are their bits (uint16, uint16, pairs of float/double).
 *
 * Sequences and optionals go through seam_value_view:
 *
 *     seam_tensor_view boxes[2] = {{.dtype = SEAM_DTYPE_FLOAT32, .rank = 2, .dims = d0, .data = b0},
 *                                  {.dtype = SEAM_DTYPE_FLOAT32, .rank = 2, .dims = d1, .data = b1}};
 *     seam_value_view seq = {.kind = SEAM_KIND_SEQUENCE, .elem_dtype = SEAM_DTYPE_FLOAT32,
 *                            .count = 2, .elements = boxes};
 *     seam_session_set_input_value(s, "boxes", &seq);
 *     seam_value_view none = {.kind = SEAM_KIND_NONE};        // an optional input left empty
 *     seam_session_set_input_value(s, "mask", &none);
 *     seam_session_run(s);
 *     seam_value_view out;
 *     seam_session_output_value(s, 0, &out);                  // out.count, out.elements[i]
 *
 * An optional input or output holding a value is that value (a tensor or a
 * sequence); SEAM_KIND_NONE is an optional without one. Maps (ai.onnx.ml) are
 * named by seam_model_value_type but no op seam runs takes or makes one. */
typedef struct seam_bytes {
    const char *data; /* len bytes; may hold NULs; NULL when len is 0 */
    size_t len;
} seam_bytes;

typedef enum seam_kind {
    SEAM_KIND_TENSOR = 0,
    SEAM_KIND_SEQUENCE = 1, /* of tensors */
    SEAM_KIND_NONE = 2,     /* an optional without a value */
    SEAM_KIND_MAP = 3,      /* seam_model_value_type only */
} seam_kind;

typedef struct seam_value_view {
    seam_kind kind;
    seam_tensor_view tensor;          /* SEAM_KIND_TENSOR */
    seam_dtype elem_dtype;            /* SEAM_KIND_SEQUENCE: its elements' dtype (UNDEFINED when not known) */
    int32_t count;                    /* SEAM_KIND_SEQUENCE: number of elements */
    const seam_tensor_view *elements; /* SEAM_KIND_SEQUENCE: count tensors (name unused) */
} seam_value_view;

/* What a graph input or output (by name) holds as the model declares it:
 * kind TENSOR, SEQUENCE or MAP (NONE is never declared: an optional is
 * optional = true with the kind it may hold), the tensors' element dtype
 * (of a sequence: its elements'; UNDEFINED when not known), and, for a
 * map, the key dtype. */
typedef struct seam_type_info {
    seam_kind kind;
    bool optional;
    seam_dtype elem_dtype;
    seam_dtype key_dtype;
} seam_type_info;
SEAM_API seam_status seam_model_value_type(const seam_model *model, const char *name, seam_type_info *info_out);

/* Binds graph input `name` to a value of any kind, checked against the
 * model's type: a tensor (as seam_session_set_input), a sequence of tensors
 * (for an input declared a sequence, or an optional of one), or NONE (an
 * optional input only). As with seam_session_set_input, the tensors' data
 * is not copied and must stay valid until the run returns; the view and its
 * elements array need not outlive the call. */
SEAM_API seam_status seam_session_set_input_value(seam_session *session, const char *name,
                                                  const seam_value_view *value);

/* Output `index` as a value of any kind. For a sequence, elements points
 * at count views owned by the session; they and the data they point at are
 * valid until the next run or seam_session_free. */
SEAM_API seam_status seam_session_output_value(seam_session *session, int32_t index, seam_value_view *value_out);

#ifdef __cplusplus
}
#endif

/* Partitioning between backends; the backend table itself is in
 * seam_backend.h. */
#include "seam_partition.h"
/* Quantizing a float model (seam quantize). */
#include "seam_quantize.h"

#endif /* SEAM_H */
