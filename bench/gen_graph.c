/*
 * gen_graph KIND N OUT.onnx [SEED]
 *
 * Writes a synthetic ONNX graph of N nodes for partitioning benchmarks:
 *   chain   a chain of unary ops with a skip connection (Add) every 8 nodes
 *   wide    16 parallel branches, joined by an Add every 32 nodes
 *   random  each node reads one or two of the 64 most recent values
 * Ops are Relu, Add, Mul, and Sigmoid on every 50th node (on average), so
 * a rules target without Sigmoid splits the graph into many subgraphs.
 * Every value is float32 [1, 16].
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "seam.h"

static uint64_t rng_state = 88172645463325252ull;
static uint32_t rnd(uint32_t n) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state % n);
}

static ir_dim dims16[2] = {{1, NULL}, {16, NULL}};

static int32_t new_value(struct seam_model *m, int64_t i) {
    char name[32];
    snprintf(name, sizeof(name), "t%lld", (long long)i);
    int32_t v = ir_graph_add_value(m->graph, seam_arena_strdup(&m->arena, name));
    return v;
}

static void add_node(struct seam_model *m, const char *op, int32_t a, int32_t b, int32_t out) {
    ir_graph *g = m->graph;
    int32_t i = ir_graph_add_node(g);
    ir_node *n = &g->nodes[i];
    char name[32];
    snprintf(name, sizeof(name), "n%d", i);
    n->name = seam_arena_strdup(&m->arena, name);
    n->op_type = op;
    n->domain = "";
    n->inputs = seam_arena_alloc(&m->arena, sizeof(int32_t) * 2);
    n->outputs = seam_arena_alloc(&m->arena, sizeof(int32_t));
    n->inputs[n->n_inputs++] = a;
    if (b >= 0) n->inputs[n->n_inputs++] = b;
    n->outputs[n->n_outputs++] = out;
}

static const char *unary(void) { return rnd(50) == 0 ? "Sigmoid" : "Relu"; }
static const char *binary(void) { return rnd(2) ? "Add" : "Mul"; }

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: gen_graph chain|wide|random N OUT.onnx [SEED]\n");
        return 2;
    }
    const char *kind = argv[1];
    long n = atol(argv[2]);
    if (argc > 4) rng_state ^= (uint64_t)atoll(argv[4]) * 0x9E3779B97F4A7C15ull;
    if (n < 2 || n > 50000000) return 2;
    seam_context *ctx;
    seam_context_create(&ctx);
    struct seam_model *m = calloc(1, sizeof(*m));
    m->ctx = ctx;
    seam_arena_init(&m->arena, 1 << 20);
    m->ir_version = 8;
    m->producer_name = "seam gen_graph";
    m->producer_version = m->domain = m->doc = "";
    m->opsets = seam_arena_alloc(&m->arena, sizeof(ir_opset));
    m->opsets[m->n_opsets++] = (ir_opset){"", 13};
    m->graph = ir_graph_new(m, NULL);
    ir_graph *g = m->graph;
    g->name = "synthetic";
    int32_t x = new_value(m, -1);
    g->values[x].name = "x";
    g->values[x].flags = IR_VALUE_INPUT;
    g->values[x].type = (ir_type){IR_TYPE_TENSOR, SEAM_DTYPE_FLOAT32, 2, dims16, NULL, NULL};
    g->inputs = seam_arena_alloc(&m->arena, sizeof(int32_t));
    g->inputs[g->n_inputs++] = x;
    int32_t *recent = calloc(64, sizeof(int32_t));
    for (int k = 0; k < 64; k++) recent[k] = x;
    int32_t last = x;
    for (long i = 0; i < n; i++) {
        int32_t out = new_value(m, i);
        if (strcmp(kind, "chain") == 0) {
            if (i % 8 == 7) add_node(m, "Add", last, recent[7], out);
            else add_node(m, unary(), last, -1, out);
            for (int k = 63; k > 0; k--) recent[k] = recent[k - 1];
            recent[0] = out;
        } else if (strcmp(kind, "wide") == 0) {
            int b = (int)(i % 16);
            if (i % 32 == 31) add_node(m, "Add", recent[0], recent[8], out);
            else add_node(m, unary(), recent[b], -1, out);
            recent[b] = out;
        } else {
            int32_t a = recent[rnd(64)];
            if (rnd(3) == 0) add_node(m, binary(), a, recent[rnd(64)], out);
            else add_node(m, unary(), a, -1, out);
            recent[rnd(64)] = out;
        }
        last = out;
    }
    /* every value nobody reads becomes a graph output, so nothing is dead */
    if (ir_graph_link(ctx, g) != SEAM_STATUS_OK) {
        fprintf(stderr, "gen_graph: %s\n", seam_context_last_error(ctx));
        return 1;
    }
    int32_t n_out = 0;
    for (int32_t v = 0; v < g->n_values; v++)
        if (g->values[v].producer >= 0 && g->values[v].n_consumers == 0) n_out++;
    g->outputs = seam_arena_alloc(&m->arena, sizeof(int32_t) * (size_t)(n_out + 1));
    for (int32_t v = 0; v < g->n_values; v++)
        if (g->values[v].producer >= 0 && g->values[v].n_consumers == 0) {
            g->values[v].flags |= IR_VALUE_OUTPUT;
            g->values[v].type = (ir_type){IR_TYPE_TENSOR, SEAM_DTYPE_FLOAT32, 2, dims16, NULL, NULL};
            g->outputs[g->n_outputs++] = v;
        }
    seam_status st = seam_model_save(m, argv[3], NULL);
    if (st) fprintf(stderr, "gen_graph: %s\n", seam_context_last_error(ctx));
    free(recent);
    seam_model_free(m);
    seam_context_free(ctx);
    return st ? 1 : 0;
}
