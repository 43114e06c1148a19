/*
 * A small ONNX model the unit tests make themselves (protobuf-c, the
 * loader's own schema), so they need no files:
 *
 *   x [1,4,12,12] -> Conv 3x3 pad 1 -> Relu -> MaxPool 2x2 -> Conv 3x3 pad 1
 *     -> Add (residual) -> Neg -> Sigmoid -> GlobalAveragePool -> Flatten
 *     -> Gemm (transB) -> y [1,5]; the Sigmoid's output is output s too.
 *
 * dnnl takes everything but Neg, so a plan for dnnl has two dnnl
 * subgraphs with a CPU node between them. Weights are fixed pseudo-random
 * values.
 *
 *     size_t n;
 *     uint8_t *bytes = tiny_model_bytes(&n);   // free() when done
 *     seam_model_load_buffer(ctx, bytes, n, NULL, &model);
 */
#ifndef SEAM_TEST_TINY_MODEL_H
#define SEAM_TEST_TINY_MODEL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx.pb-c.h"

#define TINY_C 4   /* input channels */
#define TINY_HW 12 /* input height and width */

typedef struct tiny_builder {
    char *pool; /* every message and array, freed at once */
    size_t used, cap;
    Onnx__NodeProto *nodes[16];
    Onnx__TensorProto *inits[16];
    size_t n_nodes, n_inits;
    uint32_t seed;
} tiny_builder;

static inline void *tiny_alloc(tiny_builder *b, size_t n) {
    size_t at = (b->used + 15) & ~(size_t)15;
    if (at + n > b->cap) abort(); /* the pool is sized for this model */
    b->used = at + n;
    memset(b->pool + at, 0, n);
    return b->pool + at;
}

static inline char *tiny_str(tiny_builder *b, const char *s) {
    char *d = tiny_alloc(b, strlen(s) + 1);
    memcpy(d, s, strlen(s) + 1);
    return d;
}

static inline Onnx__NodeProto *tiny_node(tiny_builder *b, const char *op, const char *name, const char *const *ins,
                                         size_t n_in, const char *out) {
    Onnx__NodeProto *n = tiny_alloc(b, sizeof(*n));
    onnx__node_proto__init(n);
    n->op_type = tiny_str(b, op);
    n->name = tiny_str(b, name);
    n->domain = tiny_str(b, "");
    n->n_input = n_in;
    n->input = tiny_alloc(b, sizeof(char *) * n_in);
    for (size_t k = 0; k < n_in; k++) n->input[k] = tiny_str(b, ins[k]);
    n->n_output = 1;
    n->output = tiny_alloc(b, sizeof(char *));
    n->output[0] = tiny_str(b, out);
    n->attribute = tiny_alloc(b, sizeof(Onnx__AttributeProto *) * 4);
    b->nodes[b->n_nodes++] = n;
    return n;
}

static inline Onnx__AttributeProto *tiny_attr(tiny_builder *b, Onnx__NodeProto *n, const char *name) {
    Onnx__AttributeProto *a = tiny_alloc(b, sizeof(*a));
    onnx__attribute_proto__init(a);
    a->name = tiny_str(b, name);
    a->has_type = 1;
    n->attribute[n->n_attribute++] = a;
    return a;
}

static inline void tiny_attr_int(tiny_builder *b, Onnx__NodeProto *n, const char *name, int64_t v) {
    Onnx__AttributeProto *a = tiny_attr(b, n, name);
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    a->has_i = 1;
    a->i = v;
}

static inline void tiny_attr_ints(tiny_builder *b, Onnx__NodeProto *n, const char *name, const int64_t *v,
                                  size_t count) {
    Onnx__AttributeProto *a = tiny_attr(b, n, name);
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    a->n_ints = count;
    a->ints = tiny_alloc(b, sizeof(int64_t) * count);
    memcpy(a->ints, v, sizeof(int64_t) * count);
}

/* A float32 initializer of values in [-0.5, 0.5), from a fixed sequence. */
static inline void tiny_weight(tiny_builder *b, const char *name, const int64_t *dims, size_t rank) {
    Onnx__TensorProto *t = tiny_alloc(b, sizeof(*t));
    onnx__tensor_proto__init(t);
    t->name = tiny_str(b, name);
    t->has_data_type = 1;
    t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    t->n_dims = rank;
    t->dims = tiny_alloc(b, sizeof(int64_t) * rank);
    size_t numel = 1;
    for (size_t d = 0; d < rank; d++) t->dims[d] = dims[d], numel *= (size_t)dims[d];
    t->n_float_data = numel;
    t->float_data = tiny_alloc(b, sizeof(float) * numel);
    for (size_t k = 0; k < numel; k++) {
        b->seed = b->seed * 1664525u + 1013904223u;
        t->float_data[k] = (float)(b->seed >> 8) / (float)(1u << 24) - 0.5f;
    }
    b->inits[b->n_inits++] = t;
}

static inline Onnx__ValueInfoProto *tiny_value(tiny_builder *b, const char *name, const int64_t *dims, size_t rank) {
    Onnx__TensorShapeProto *shape = tiny_alloc(b, sizeof(*shape));
    onnx__tensor_shape_proto__init(shape);
    shape->n_dim = rank;
    shape->dim = tiny_alloc(b, sizeof(Onnx__TensorShapeProto__Dimension *) * rank);
    for (size_t d = 0; d < rank; d++) {
        shape->dim[d] = tiny_alloc(b, sizeof(Onnx__TensorShapeProto__Dimension));
        onnx__tensor_shape_proto__dimension__init(shape->dim[d]);
        shape->dim[d]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        shape->dim[d]->dim_value = dims[d];
    }
    Onnx__TypeProto__Tensor *tt = tiny_alloc(b, sizeof(*tt));
    onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = 1;
    tt->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    tt->shape = shape;
    Onnx__TypeProto *type = tiny_alloc(b, sizeof(*type));
    onnx__type_proto__init(type);
    type->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    type->tensor_type = tt;
    Onnx__ValueInfoProto *v = tiny_alloc(b, sizeof(*v));
    onnx__value_info_proto__init(v);
    v->name = tiny_str(b, name);
    v->type = type;
    return v;
}

/* The model's bytes (malloc'd; *size_out gets the length), or NULL. */
static inline uint8_t *tiny_model_bytes(size_t *size_out) {
    tiny_builder b = {0};
    b.cap = 1 << 20;
    b.pool = malloc(b.cap);
    b.seed = 12345;
    if (!b.pool) return NULL;
    static const int64_t pads1[] = {1, 1, 1, 1}, k2[] = {2, 2};
    tiny_weight(&b, "w1", (const int64_t[]){8, TINY_C, 3, 3}, 4);
    tiny_weight(&b, "b1", (const int64_t[]){8}, 1);
    tiny_weight(&b, "w2", (const int64_t[]){8, 8, 3, 3}, 4);
    tiny_weight(&b, "w3", (const int64_t[]){5, 8}, 2);
    tiny_weight(&b, "b3", (const int64_t[]){5}, 1);
    Onnx__NodeProto *n = tiny_node(&b, "Conv", "conv1", (const char *[]){"x", "w1", "b1"}, 3, "c1");
    tiny_attr_ints(&b, n, "pads", pads1, 4);
    tiny_node(&b, "Relu", "relu1", (const char *[]){"c1"}, 1, "r1");
    n = tiny_node(&b, "MaxPool", "pool1", (const char *[]){"r1"}, 1, "p1");
    tiny_attr_ints(&b, n, "kernel_shape", k2, 2);
    tiny_attr_ints(&b, n, "strides", k2, 2);
    n = tiny_node(&b, "Conv", "conv2", (const char *[]){"p1", "w2"}, 2, "c2");
    tiny_attr_ints(&b, n, "pads", pads1, 4);
    tiny_node(&b, "Add", "add1", (const char *[]){"c2", "p1"}, 2, "a1");
    tiny_node(&b, "Neg", "neg1", (const char *[]){"a1"}, 1, "n1");
    tiny_node(&b, "Sigmoid", "sig1", (const char *[]){"n1"}, 1, "s");
    tiny_node(&b, "GlobalAveragePool", "gap1", (const char *[]){"s"}, 1, "g1");
    tiny_node(&b, "Flatten", "flat1", (const char *[]){"g1"}, 1, "f1");
    n = tiny_node(&b, "Gemm", "fc", (const char *[]){"f1", "w3", "b3"}, 3, "y");
    tiny_attr_int(&b, n, "transB", 1);

    Onnx__ValueInfoProto *ins[1] = {tiny_value(&b, "x", (const int64_t[]){1, TINY_C, TINY_HW, TINY_HW}, 4)};
    Onnx__ValueInfoProto *outs[2] = {tiny_value(&b, "y", (const int64_t[]){1, 5}, 2),
                                     tiny_value(&b, "s", (const int64_t[]){1, 8, TINY_HW / 2, TINY_HW / 2}, 4)};
    Onnx__GraphProto g = ONNX__GRAPH_PROTO__INIT;
    g.name = "tiny";
    g.n_node = b.n_nodes;
    g.node = b.nodes;
    g.n_initializer = b.n_inits;
    g.initializer = b.inits;
    g.n_input = 1;
    g.input = ins;
    g.n_output = 2;
    g.output = outs;
    Onnx__OperatorSetIdProto opset = ONNX__OPERATOR_SET_ID_PROTO__INIT, *opsets[1] = {&opset};
    opset.domain = "";
    opset.has_version = 1;
    opset.version = 13;
    Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
    m.has_ir_version = 1;
    m.ir_version = 8;
    m.n_opset_import = 1;
    m.opset_import = opsets;
    m.producer_name = "seam tests";
    m.graph = &g;
    size_t n_bytes = onnx__model_proto__get_packed_size(&m);
    uint8_t *bytes = malloc(n_bytes + 1);
    if (bytes) onnx__model_proto__pack(&m, bytes);
    free(b.pool);
    *size_out = n_bytes;
    return bytes;
}

/* The input: fixed values in [-1, 1). */
static inline void tiny_input(float *x) {
    uint32_t s = 777;
    for (int32_t k = 0; k < TINY_C * TINY_HW * TINY_HW; k++) {
        s = s * 1664525u + 1013904223u;
        x[k] = (float)(s >> 8) / (float)(1u << 23) - 1.0f;
    }
}

#endif
