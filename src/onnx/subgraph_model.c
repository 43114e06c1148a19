/* onnx_subgraph_models: each ai.seam Subgraph node of a serialized model
 * as a standalone model, cut from the model's protobuf. A Subgraph node's
 * body already lists its boundary values as inputs and outputs; the
 * weights and Constant nodes it reads from the main graph are copied in. */
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "onnx/onnx.h"
#include "onnx/onnx.pb-c.h"

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
static bool in_sorted(char **names, size_t n, const char *s) { return n && bsearch(&s, names, n, sizeof(char *), cmp_str); }

/* The standalone model of Subgraph node sn of the main graph mg, handed
 * to fn. */
static seam_status subgraph_model(seam_context *ctx, const Onnx__ModelProto *mp, const Onnx__GraphProto *mg,
                                  const Onnx__NodeProto *sn, const Onnx__GraphProto *body, onnx_subgraph_model_fn fn,
                                  void *arg) {
    size_t n_def = 0, cap = body->n_input + 1;
    for (size_t k = 0; k < body->n_node; k++) cap += body->node[k]->n_output;
    char **def = malloc(sizeof(char *) * cap);
    Onnx__TensorProto **inits = malloc(sizeof(void *) * (mg->n_initializer + 1));
    Onnx__NodeProto **nodes = malloc(sizeof(void *) * (body->n_node + mg->n_node + 1));
    if (!def || !inits || !nodes) {
        free(def), free(inits), free(nodes);
        return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    for (size_t k = 0; k < body->n_input; k++)
        if (body->input[k]->name) def[n_def++] = body->input[k]->name;
    for (size_t k = 0; k < body->n_node; k++)
        for (size_t o = 0; o < body->node[k]->n_output; o++) def[n_def++] = body->node[k]->output[o];
    qsort(def, n_def, sizeof(char *), cmp_str);
    size_t n_inits = 0, n_nodes = 0;
    /* what the body reads from the main graph: weights, and Constant nodes' values */
    for (size_t i = 0; i < mg->n_initializer; i++) {
        const char *name = mg->initializer[i]->name;
        bool used = false;
        if (!name || in_sorted(def, n_def, name)) continue;
        for (size_t k = 0; k < body->n_node && !used; k++)
            for (size_t j = 0; j < body->node[k]->n_input && !used; j++) used = strcmp(body->node[k]->input[j], name) == 0;
        if (used) inits[n_inits++] = mg->initializer[i];
    }
    for (size_t i = 0; i < mg->n_node; i++) {
        const Onnx__NodeProto *c = mg->node[i];
        if (!c->op_type || strcmp(c->op_type, "Constant") != 0 || c->n_output != 1 || in_sorted(def, n_def, c->output[0])) continue;
        bool used = false;
        for (size_t k = 0; k < body->n_node && !used; k++)
            for (size_t j = 0; j < body->node[k]->n_input && !used; j++) used = strcmp(body->node[k]->input[j], c->output[0]) == 0;
        if (used) nodes[n_nodes++] = mg->node[i];
    }
    for (size_t k = 0; k < body->n_node; k++) nodes[n_nodes++] = body->node[k];
    Onnx__GraphProto g = *body;
    g.name = sn->name;
    g.node = nodes, g.n_node = n_nodes;
    g.initializer = inits, g.n_initializer = n_inits;
    Onnx__ModelProto m = *mp;
    m.graph = &g;
    size_t n = onnx__model_proto__get_packed_size(&m);
    uint8_t *buf = malloc(n ? n : 1);
    seam_status st = buf ? SEAM_STATUS_OK : seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    if (buf) {
        onnx__model_proto__pack(&m, buf);
        st = fn(arg, sn->name, buf, n);
    }
    free(buf), free(def), free(inits), free(nodes);
    return st;
}

seam_status onnx_subgraph_models(seam_context *ctx, const void *model, size_t size, onnx_subgraph_model_fn fn,
                                 void *arg) {
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, size, model);
    if (!mp || !mp->graph) {
        if (mp) onnx__model_proto__free_unpacked(mp, NULL);
        return seam_error(ctx, SEAM_STATUS_PARSE_ERROR, "not an ONNX model: the protobuf is malformed or truncated");
    }
    const Onnx__GraphProto *mg = mp->graph;
    seam_status st = SEAM_STATUS_OK;
    for (size_t i = 0; i < mg->n_node && !st; i++) {
        const Onnx__NodeProto *n = mg->node[i];
        if (!n->domain || strcmp(n->domain, "ai.seam") != 0 || !n->op_type || strcmp(n->op_type, "Subgraph") != 0 || !n->name)
            continue;
        const Onnx__GraphProto *body = NULL;
        for (size_t a = 0; a < n->n_attribute; a++)
            if (n->attribute[a]->name && strcmp(n->attribute[a]->name, "body") == 0) body = n->attribute[a]->g;
        if (!body) continue;
        st = subgraph_model(ctx, mp, mg, n, body, fn, arg);
    }
    onnx__model_proto__free_unpacked(mp, NULL);
    return st;
}
