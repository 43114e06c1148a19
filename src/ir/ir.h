/*
 * seam's graph IR. Protobuf ends at the loader (src/onnx/): everything from
 * here on sees only these structs.
 *
 * A graph owns arrays of values and nodes. Values and nodes refer to each
 * other by index (int32_t), never by name after loading:
 *
 *     inputs: x(v0)  W(v1, initializer)
 *         node 0  Conv  (v0, v1) -> v2
 *         node 1  Relu  (v2)     -> v3
 *     outputs: v3
 *
 *     v2.producer == 0, v2.consumers == {1}, v0.producer == -1
 *
 * An absent optional input or output is the index -1. Every struct and
 * array hangs off the model's arena and is freed with it.
 *
 * Subgraphs (If/Loop/Scan bodies) are ir_graphs of their own, reached from
 * a node attribute. A name a body uses but does not define is resolved in
 * the enclosing graphs; it becomes a value of the body with the
 * IR_VALUE_OUTER flag and `outer` set to the enclosing graph's value index.
 */
#ifndef SEAM_IR_H
#define SEAM_IR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/tensor.h"
#include "seam.h"

typedef struct ir_graph ir_graph;
typedef struct seam_op_def seam_op_def;

/* A dimension: v >= 0 is known. v < 0 is not known statically; sym then
 * may name it (ONNX dim_param, e.g. "batch"). */
typedef struct ir_dim {
    int64_t v;
    const char *sym;
} ir_dim;

#define IR_DIM_UNKNOWN ((ir_dim){-1, NULL})

/* The largest dimension accepted at load; more is "absurd". */
#define IR_MAX_DIM SEAM_MAX_DIM
/* The largest element count of a tensor; more is "absurd". */
#define IR_MAX_NUMEL SEAM_MAX_NUMEL

typedef enum ir_type_kind {
    IR_TYPE_NONE = 0,      /* not known */
    IR_TYPE_TENSOR = 1,
    IR_TYPE_SEQUENCE = 4,  /* numbers are TypeProto's oneof field numbers */
    IR_TYPE_MAP = 5,
    IR_TYPE_SPARSE_TENSOR = 8,
    IR_TYPE_OPTIONAL = 9,
} ir_type_kind;

/* The type of a value. For tensors, elem is the dtype and rank/dims the
 * shape (rank -1: not known). For sequence and optional, inner is the
 * element type; for map, elem is the key dtype and inner the value type. */
typedef struct ir_type {
    ir_type_kind kind;
    int32_t elem;
    int32_t rank;
    ir_dim *dims;
    struct ir_type *inner;
    const char *denotation;
} ir_type;

typedef struct ir_bytes {
    const uint8_t *data;
    size_t len;
} ir_bytes;

/* A tensor with its data: an initializer, a tensor attribute, or a
 * constant found by inference. data holds numel elements, little-endian,
 * packed; for SEAM_DTYPE_STRING it is an array of numel ir_bytes. */
typedef struct ir_tensor {
    const char *name;
    const char *doc;
    int32_t dtype;
    int32_t rank;
    int64_t *dims;
    int64_t numel;
    void *data;
    size_t nbytes;
    /* where the file kept the bytes, for messages: NULL if inside it */
    const char *external_location;
} ir_tensor;

typedef struct ir_sparse_tensor {
    ir_tensor *values;
    ir_tensor *indices;
    int32_t rank;
    int64_t *dims;
} ir_sparse_tensor;

/* Attribute kinds: ONNX AttributeProto.AttributeType numbers. */
typedef enum ir_attr_kind {
    IR_ATTR_UNDEFINED = 0,
    IR_ATTR_FLOAT = 1,
    IR_ATTR_INT = 2,
    IR_ATTR_STRING = 3,
    IR_ATTR_TENSOR = 4,
    IR_ATTR_GRAPH = 5,
    IR_ATTR_FLOATS = 6,
    IR_ATTR_INTS = 7,
    IR_ATTR_STRINGS = 8,
    IR_ATTR_TENSORS = 9,
    IR_ATTR_GRAPHS = 10,
    IR_ATTR_SPARSE_TENSOR = 11,
    IR_ATTR_SPARSE_TENSORS = 12,
    IR_ATTR_TYPE_PROTO = 13,
    IR_ATTR_TYPE_PROTOS = 14,
} ir_attr_kind;

typedef struct ir_attr {
    const char *name;
    const char *doc;
    const char *ref_attr_name;  /* inside function bodies; else NULL */
    ir_attr_kind kind;
    /* one of, by kind: */
    float f;
    int64_t i;
    ir_bytes s;
    ir_tensor *t;
    ir_graph *g;
    ir_sparse_tensor *sparse;
    ir_type *tp;
    /* lists: n entries of the array matching kind */
    int32_t n;
    float *floats;
    int64_t *ints;
    ir_bytes *strings;
    ir_tensor **tensors;
    ir_graph **graphs;
    ir_sparse_tensor **sparse_tensors;
    ir_type **type_protos;
} ir_attr;

enum {
    IR_VALUE_INPUT = 1u << 0,      /* a graph input */
    IR_VALUE_OUTPUT = 1u << 1,     /* a graph output */
    IR_VALUE_INIT = 1u << 2,       /* an initializer: `init` has its data */
    IR_VALUE_OUTER = 1u << 3,      /* defined in an enclosing graph */
    IR_VALUE_DECLARED = 1u << 4,   /* the file gave a value_info for it */
};

/* 88 bytes: a million-value graph holds a million of these, and every
 * byte is a page the kernel clears. What few values have (a doc string)
 * lives in the graph's side arrays (ir_value_doc). */
typedef struct ir_value {
    const char *name;
    ir_type type;
    uint32_t flags;
    int32_t producer;        /* node index, or -1 */
    int32_t n_consumers;
    int32_t outer;           /* IR_VALUE_OUTER: index in graph->parent */
    int32_t *consumers;      /* node indices, a node once per use (implicit
                                uses by a body included) */
    ir_tensor *init;         /* the initializer's data (IR_VALUE_INIT) */
    const ir_tensor *konst;  /* known content, for inference; may be NULL */
} ir_value;

/* 80 bytes, for the same reason as ir_value: a node's doc string and the
 * op type folding replaced live in the graph's side arrays (ir_node_doc,
 * ir_node_folded_op), its implicit inputs right after its inputs. */
typedef struct ir_node {
    const char *name;
    const char *op_type;
    const char *domain;      /* "" for ai.onnx */
    int32_t n_inputs, n_outputs, n_attrs;
    int32_t opset;           /* version of the node's domain in the model */
    int32_t *inputs;         /* value indices, -1 for an absent optional */
    int32_t *outputs;
    ir_attr *attrs;
    const seam_op_def *def;  /* the registry entry, or NULL if unknown */
    /* Values of the graph that the node's bodies read from outside
     * (If/Loop/Scan); they order the node like inputs do. Linking stores
     * them right after the inputs: ir_node_implicit(n). */
    int32_t n_implicit;
    bool name_generated;     /* the file had no name; `name` is seam's */
} ir_node;

/* Whether the node has a body (a graph attribute: If, Loop, Scan). */
static inline bool ir_node_has_body(const ir_node *n) {
    for (int32_t a = 0; a < n->n_attrs; a++)
        if (n->attrs[a].kind == IR_ATTR_GRAPH || n->attrs[a].kind == IR_ATTR_GRAPHS) return true;
    return false;
}

/* The node's implicit inputs (n_implicit of them): inputs[n_inputs ...],
 * so inputs[k] for k < n_inputs + n_implicit walks both. */
static inline const int32_t *ir_node_implicit(const ir_node *n) { return n->inputs + n->n_inputs; }

typedef struct ir_opset {
    const char *domain;
    int64_t version;
} ir_opset;

typedef struct ir_name_map ir_name_map;

struct ir_graph {
    const char *name;
    const char *doc;
    int32_t n_values, n_nodes, n_inputs, n_outputs, n_inits, n_sparse_inits;
    int32_t cap_values, cap_nodes;
    ir_value *values;
    ir_node *nodes;
    /* Side arrays of what few values and nodes have, cap_values or
     * cap_nodes entries, NULL while none has it: doc strings, and the op
     * type the model gave a node that folding (partition/fold.c) made a
     * Constant or bypassed (an Identity of an initializer whose readers
     * now read the initializer). Read and set with the ir_*_doc and
     * ir_node_*folded_op calls. */
    const char **value_docs;
    const char **node_docs;
    const char **folded_ops;
    int32_t *inputs;         /* value indices, file order (initializers included) */
    int32_t *outputs;
    int32_t *inits;          /* value indices of initializers, file order */
    ir_sparse_tensor **sparse_inits;
    int32_t *topo;           /* n_nodes node indices in a topological order */
    ir_graph *parent;        /* enclosing graph of a body, or NULL */
    int32_t parent_node;     /* the node in parent that holds this body */
    ir_name_map *names;      /* value name -> index; NULL for a loaded top
                                graph (lookups scan, building remakes it) */
    struct seam_model *model;
};

typedef struct ir_string_pair {
    const char *key, *value;
} ir_string_pair;

/* The struct behind seam_model. */
struct seam_model {
    seam_context *ctx;
    seam_arena arena;
    ir_graph *graph;
    int64_t ir_version;
    int64_t model_version;
    const char *producer_name, *producer_version, *domain, *doc;
    int32_t n_opsets, n_metadata;
    ir_opset *opsets;
    ir_string_pair *metadata;
    /* FunctionProtos and TrainingInfoProtos are kept as the file's bytes, so
     * export can write them back; seam does not look inside them. */
    int32_t n_functions, n_training_infos;
    ir_bytes *functions;
    ir_bytes *training_infos;
    /* nodes seam_model_fuse_qdq absorbed into QDQ units: key the
     * absorbed node's name, value the unit node's (pins name either) */
    int32_t n_absorbed;
    ir_string_pair *absorbed;
    /* path of the folder external data was read from, or NULL */
    const char *base_dir;
    /* big buffers owned by the model (tensor data), freed with it */
    void **owned;
    int32_t n_owned, cap_owned;
    /* what the introspection calls (query.c) handed out, in the arena, so
     * that asking again does not grow it: per value its dims and symbols,
     * and the metadata's keys and values */
    struct ir_info_cache *info_cache;
    int32_t n_info_cache;
    const char **meta_keys, **meta_values;
    int32_t n_meta_cached; /* n_metadata when they were made (a plan's apply adds entries) */
    /* what seam_model_rewrite and the reading of contrib ops
     * (ops/contrib_quant.c) did, a line each; every plan of the model
     * repeats them in its notes */
    const char **rewrites;
    int32_t n_rewrites;
    /* the symbolic dims' expressions of the last inference of the top
     * graph (ops/symdim.c), or NULL */
    struct sym_state *sym;
};

/* ---- element types ---- */
bool ir_dtype_valid(int32_t dtype);

/* ---- building ---- */
ir_graph *ir_graph_new(struct seam_model *m, ir_graph *parent);
/* Appends a value; returns its index or -1 when out of memory. */
int32_t ir_graph_add_value(ir_graph *g, const char *name);
/* The value named name (which must outlive the graph), added if g has
 * none; -1 when out of memory. */
int32_t ir_graph_find_or_add(ir_graph *g, const char *name);
/* The same with the name's hash (ir_names_hash) given, for the loader. */
int32_t ir_graph_find_or_add_hashed(ir_graph *g, const char *name, uint32_t hash);
/* Finds a value by name in g only; -1 if absent. Without a name map (the
 * loader drops the top graph's) it scans: a caller about to look up many
 * names makes the map first with ir_graph_index_names. */
int32_t ir_graph_find(const ir_graph *g, const char *name);
/* Makes g's name map if it has none; false when out of memory. */
bool ir_graph_index_names(ir_graph *g);
/* Appends a node; returns its index or -1. */
int32_t ir_graph_add_node(ir_graph *g);
/* Doc strings ("" when none) and folded op types (NULL when the node was
 * not folded). The setters return false when out of memory. */
const char *ir_value_doc(const ir_graph *g, int32_t v);
const char *ir_node_doc(const ir_graph *g, int32_t node);
const char *ir_node_folded_op(const ir_graph *g, int32_t node);
bool ir_value_set_doc(ir_graph *g, int32_t v, const char *doc);
bool ir_node_set_doc(ir_graph *g, int32_t node, const char *doc);
bool ir_node_set_folded_op(ir_graph *g, int32_t node, const char *op);
/* Removes the nodes with dead[i] set (and their side-array entries),
 * keeping the others' order; link the graph again after. */
void ir_graph_remove_nodes(ir_graph *g, const bool *dead);
/* Adds a line to m's notes on how it was rewritten (m->rewrites, which
 * every plan of the model repeats); false when out of memory. */
bool ir_model_add_note(struct seam_model *m, const char *text);
/* Imports domain at version into m when m does not import it yet; false
 * when out of memory. */
bool ir_model_import(struct seam_model *m, const char *domain, int64_t version);
/* Registers a big malloc'd buffer to be freed with the model. */
bool ir_model_own(struct seam_model *m, void *p);

/* ---- derived structure ---- */
/* Fills producer/consumers for every value and the topological order.
 * Fails (message in ctx) on a value produced twice, a value used but never
 * defined, a graph output nothing defines, or a cycle. Recurses into
 * bodies. */
seam_status ir_graph_link(seam_context *ctx, ir_graph *g);

/* "node 3 'conv1' (Conv)" into buf; returns buf. */
const char *ir_node_label(const ir_graph *g, int32_t node, char *buf, size_t n);

/* ---- tensors ---- */
/* Element count of dims, or -1 if a dim is negative or above IR_MAX_DIM,
 * or the product is above IR_MAX_NUMEL. */
int64_t ir_numel(const int64_t *dims, int32_t rank);

/* Attribute lookup on a node; NULL if absent. */
const ir_attr *ir_node_attr(const ir_node *n, const char *name);

/* Deep comparison of two graphs, for round-trip tests. Returns true when
 * equal; otherwise writes where they differ into why. */
bool ir_graph_equal(const ir_graph *a, const ir_graph *b, char *why, size_t n);

/* Type/shape inference over the whole model (src/ops/). Never fails a
 * valid model: what cannot be known stays unknown. */
seam_status ir_infer_model(struct seam_model *m);

#endif
