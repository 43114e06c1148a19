/* Random DAG models for the partitioner's property tests
 * (test_partition.c, test_stages.c), and the cost model's definition
 * recomputed from them: oracles that do not call the code under test. */
#ifndef SEAM_TEST_RANDOM_GRAPH_H
#define SEAM_TEST_RANDOM_GRAPH_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/context.h"
#include "ir/ir.h"

typedef struct rng {
    uint64_t s;
} rng;

static inline uint32_t rnd(rng *r, uint32_t n) {
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return (uint32_t)(r->s % n);
}

static const char *OPS[] = {"Conv", "Relu", "Add", "TopK", "MatMul", "Concat"};

/* A random DAG: logical node i reads 1-3 values made by earlier nodes (or
 * the input). With shuffle, the nodes are stored in the file in a random
 * order (logical node i named "n<i>" at file index perm[i], logical_of
 * mapping back), so that file order is not topological and only the IR's
 * own topological order is; otherwise file order is logical order. op_of
 * is per file index. */
static inline struct seam_model *random_model_ex(seam_context *ctx, rng *r, int32_t n, int32_t *op_of, bool shuffle,
                                          int32_t *logical_of) {
    struct seam_model *m = calloc(1, sizeof(*m));
    m->ctx = ctx;
    seam_arena_init(&m->arena, 1 << 16);
    ir_graph *g = ir_graph_new(m, NULL);
    m->graph = g;
    char name[32];
    int32_t x = ir_graph_add_value(g, "x");
    g->values[x].flags |= IR_VALUE_INPUT;
    g->inputs = seam_arena_alloc(&m->arena, sizeof(int32_t));
    g->inputs[g->n_inputs++] = x;
    int32_t w = ir_graph_add_value(g, "w");
    g->values[w].flags |= IR_VALUE_INIT;
    int32_t *out = malloc(sizeof(int32_t) * (size_t)n), *perm = malloc(sizeof(int32_t) * (size_t)n);
    int32_t(*ins)[4] = malloc(sizeof(*ins) * (size_t)n);
    int32_t *n_in = malloc(sizeof(int32_t) * (size_t)n), *op = malloc(sizeof(int32_t) * (size_t)n);
    for (int32_t i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "t%d", i);
        out[i] = ir_graph_add_value(g, seam_arena_strdup(&m->arena, name));
    }
    for (int32_t i = 0; i < n; i++) {
        op[i] = (int32_t)rnd(r, 6);
        int32_t k = 1 + (int32_t)rnd(r, 3);
        n_in[i] = 0;
        for (int32_t j = 0; j < k; j++) {
            int32_t src = i == 0 ? -1 : (int32_t)rnd(r, (uint32_t)i + 1) - 1;
            /* mostly recent producers: long chains with some skips */
            if (src >= 0 && rnd(r, 3)) src = i - 1 - (int32_t)rnd(r, (uint32_t)(i < 3 ? i : 3));
            ins[i][n_in[i]++] = src < 0 ? x : out[src];
        }
        if (rnd(r, 5) == 0) ins[i][n_in[i]++] = w;
    }
    for (int32_t i = 0; i < n; i++) perm[i] = i;
    for (int32_t i = n - 1; shuffle && i > 0; i--) { /* Fisher-Yates */
        int32_t j = (int32_t)rnd(r, (uint32_t)i + 1), t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    int32_t *at = malloc(sizeof(int32_t) * (size_t)n); /* file index -> logical node */
    for (int32_t i = 0; i < n; i++) at[perm[i]] = i;
    for (int32_t f = 0; f < n; f++) {
        int32_t i = at[f], idx = ir_graph_add_node(g);
        ir_node *nd = &g->nodes[idx];
        snprintf(name, sizeof(name), "n%d", i);
        nd->name = seam_arena_strdup(&m->arena, name);
        op_of[idx] = op[i];
        if (logical_of) logical_of[idx] = i;
        nd->op_type = OPS[op[i]];
        nd->domain = "";
        nd->inputs = seam_arena_alloc(&m->arena, sizeof(int32_t) * 4);
        for (int32_t j = 0; j < n_in[i]; j++) nd->inputs[nd->n_inputs++] = ins[i][j];
        nd->outputs = seam_arena_alloc(&m->arena, sizeof(int32_t));
        nd->outputs[nd->n_outputs++] = out[i];
    }
    g->outputs = seam_arena_alloc(&m->arena, sizeof(int32_t));
    g->outputs[g->n_outputs++] = out[n - 1];
    g->values[out[n - 1]].flags |= IR_VALUE_OUTPUT;
    free(out), free(perm), free(ins), free(n_in), free(op), free(at);
    if (ir_graph_link(ctx, g) != SEAM_STATUS_OK) {
        fprintf(stderr, "link failed: %s\n", seam_context_last_error(ctx));
        exit(2);
    }
    return m;
}

static inline struct seam_model *random_model(seam_context *ctx, rng *r, int32_t n, int32_t *op_of) {
    return random_model_ex(ctx, r, n, op_of, false, NULL);
}

static inline void free_model(struct seam_model *m) {
    seam_arena_free(&m->arena);
    free(m);
}

static inline void random_shapes(struct seam_model *m, rng *r) {
    ir_graph *g = m->graph;
    for (int32_t v = 0; v < g->n_values; v++) {
        ir_type *t = &g->values[v].type;
        t->kind = IR_TYPE_TENSOR;
        t->elem = SEAM_DTYPE_FLOAT32;
        t->rank = 1;
        t->dims = seam_arena_alloc(&m->arena, sizeof(ir_dim));
        t->dims[0] = (ir_dim){1000 + (int64_t)rnd(r, 200000), NULL};
    }
}

/* The estimate of a plan recomputed here from the cost model's definition
 * (partition/cost.c's header) and the random inputs alone, so that the
 * property tests below do not take the code under test as their oracle: a
 * node's CPU time (the built-in guesses: SEAM_COST_RATES=off, set in main)
 * is 0.5 us plus its output's elements (its input's for a reduction; for
 * TopK the larger of the two times log2 of k) at 1000 per us (20000
 * multiply-adds per us for Conv and MatMul, whose random weights have rank 1:
 * one multiply-add per element); on the target that times its factor; a
 * device subgraph adds one launch and its boundary values' bytes (the plan's
 * own boundary lists, which check_plan verifies independently) at gbps. */
static inline double oracle_value_bytes(const ir_graph *g, const char *name) {
    for (int32_t v = 0; v < g->n_values; v++)
        if (strcmp(g->values[v].name, name) == 0) return 4.0 * (double)g->values[v].type.dims[0].v;
    CHECK(!"a boundary value the model does not have");
    return 0;
}

static inline double oracle_cpu_us(const ir_graph *g, int32_t i) {
    const ir_node *n = &g->nodes[i];
    double elems = (double)g->values[n->outputs[0]].type.dims[0].v;
    bool product = strcmp(n->op_type, "Conv") == 0 || strcmp(n->op_type, "MatMul") == 0;
    /* a node whose first input has more than 4x its output's elements is a
     * reduction: it counts the elements it reads, at the same rate */
    double in = !product && n->n_inputs > 0 && n->inputs[0] >= 0 ? (double)g->values[n->inputs[0]].type.dims[0].v : 0;
    /* TopK (along the one axis here) reads its input and orders the k it
     * keeps: the larger of the two, times log2 k (k above 2, else 1) */
    if (strcmp(n->op_type, "TopK") == 0)
        return 0.5 + (in > elems ? in : elems) * (elems > 2 ? log2(elems) : 1) / 1000.0;
    if (in > 4 * elems) elems = in;
    return 0.5 + elems / (product ? 20000.0 : 1000.0);
}

#endif
