/*
 * Applying a plan: the model's graph is rebuilt so that each device
 * subgraph is one node of domain "ai.seam", op "Subgraph", whose "body"
 * attribute holds the subgraph's nodes. CPU nodes stay as they were. The
 * result is an ordinary model: it runs on the executor (the Subgraph
 * kernel runs its body on the target), and it saves as one ONNX file.
 *
 *     x -> Conv -> Relu -> TopK -> y        (Conv, Relu on npu)
 *
 * becomes
 *
 *     x -> Subgraph[target=npu, body: x -> Conv -> Relu -> r] -> r -> TopK -> y
 *
 * Weights are not copied: a body reads the main graph's initializers (and
 * the outputs of Constant nodes) as outer-scope values, which ONNX allows
 * for nested graphs; they stay resident with the device across runs. Every
 * other value crossing the boundary is an explicit input or output of the
 * Subgraph node: those are the transfers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "core/context.h"
#include "ir/ir.h"
#include "partition/partition.h"
#include "seam_backend.h"

/* The rules text of a rules target; NULL for other backends. */
const char *seam_rules_source(const seam_backend *b);

static seam_status oom(seam_context *ctx) { return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory"); }

/* Sets body graphs of a copied node to point at their new parent. */
static void reparent(ir_node *n, ir_graph *parent) {
    for (int32_t a = 0; a < n->n_attrs; a++) {
        ir_attr *at = &n->attrs[a];
        if (at->kind == IR_ATTR_GRAPH && at->g) at->g->parent = parent;
        for (int32_t b = 0; at->kind == IR_ATTR_GRAPHS && b < at->n; b++) at->graphs[b]->parent = parent;
    }
}

static ir_attr string_attr(seam_arena *a, const char *name, const char *value) {
    ir_attr at;
    memset(&at, 0, sizeof(at));
    at.name = name;
    at.kind = IR_ATTR_STRING;
    at.s.data = (const uint8_t *)seam_arena_strdup(a, value);
    at.s.len = strlen(value);
    return at;
}

/* Builds the body of device subgraph `s` and the Subgraph node for it in
 * ng. map_in is scratch of g->n_values entries. */
/* ---- buckets ----
 * Options "seam.bucket=NAME=AxBxC" (seam partition --bucket) are shapes of
 * the model's inputs to compile ahead of time; the k-th of each input make
 * bucket k. "seam.jit=off" (--no-jit) forbids compiles at run time. They
 * are not the backend's options: each Subgraph node gets, instead, its
 * boundary inputs' shapes at every bucket ("buckets", see
 * runtime/subgraph.c for the layout) and "jit" = 0. */
#define MAX_BUCKETS 64

typedef struct buckets {
    int32_t n;                    /* buckets */
    ir_value *vals[MAX_BUCKETS];  /* per bucket: the graph's values, inferred at its shapes */
    seam_arena arena;
    bool no_jit;
} buckets;

static void buckets_free(buckets *bk) {
    for (int32_t b = 0; b < bk->n; b++) free(bk->vals[b]);
    seam_arena_free(&bk->arena);
}

/* "AxBxC" into dims; its rank, or -1. */
static int32_t parse_dims(const char *s, int64_t *dims, int32_t max) {
    int32_t r = 0;
    if (!*s) return -1;
    while (*s) {
        char *end;
        long long v = strtoll(s, &end, 10);
        if (end == s || v < 0 || v > IR_MAX_DIM || r >= max) return -1;
        dims[r++] = v;
        s = end;
        if (*s == 'x') s++;
        else if (*s) return -1;
    }
    return r;
}

/* The graph's values with the bucket's input shapes inferred: a copy of
 * g's values and nodes, on a model that is m but for its graph and arena. */
static seam_status infer_bucket(seam_context *ctx, struct seam_model *m, const ir_graph *g, const char *const *names,
                                const char *const *shapes, int32_t n, buckets *bk, ir_value **out) {
    ir_graph cg = *g;
    cg.values = malloc(sizeof(ir_value) * ((size_t)g->n_values + 1));
    cg.nodes = malloc(sizeof(ir_node) * ((size_t)g->n_nodes + 1));
    if (!cg.values || !cg.nodes) return free(cg.values), free(cg.nodes), oom(ctx);
    memcpy(cg.values, g->values, sizeof(ir_value) * (size_t)g->n_values);
    memcpy(cg.nodes, g->nodes, sizeof(ir_node) * (size_t)g->n_nodes);
    for (int32_t v = 0; v < g->n_values; v++)
        if (cg.values[v].producer >= 0) cg.values[v].type = (ir_type){IR_TYPE_NONE, 0, -1, NULL, NULL, NULL}, cg.values[v].konst = NULL;
    seam_status st = SEAM_STATUS_OK;
    for (int32_t k = 0; k < n && !st; k++) {
        int32_t v = -1;
        for (int32_t i = 0; i < g->n_inputs && v < 0; i++)
            if (!strcmp(g->values[g->inputs[i]].name, names[k]) && !(g->values[g->inputs[i]].flags & IR_VALUE_INIT)) v = g->inputs[i];
        int64_t dims[16];
        int32_t r = parse_dims(shapes[k], dims, 16);
        const ir_type *t = v >= 0 ? &g->values[v].type : NULL;
        bool ok = v >= 0 && r >= 0 && t->kind == IR_TYPE_TENSOR && (t->rank < 0 || t->rank == r);
        for (int32_t d = 0; ok && t->rank >= 0 && d < r; d++) ok = t->dims[d].v < 0 || t->dims[d].v == dims[d];
        if (!ok) {
            st = seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "bucket %s=%s: %s", names[k], shapes[k],
                            v < 0 ? "the model has no such input" : r < 0 ? "not a shape AxBxC" : "it contradicts the model's input (rank or a fixed dim)");
            break;
        }
        ir_dim *dd = seam_arena_calloc(&bk->arena, (size_t)r + 1, sizeof(ir_dim));
        if (!dd) {
            st = oom(ctx);
            break;
        }
        for (int32_t d = 0; d < r; d++) dd[d] = (ir_dim){dims[d], NULL};
        cg.values[v].type = (ir_type){IR_TYPE_TENSOR, t->elem, r, dd, NULL, NULL};
    }
    if (!st) {
        struct seam_model tm = *m;
        tm.graph = &cg;
        tm.arena = bk->arena;
        st = ir_infer_model(&tm);
        bk->arena = tm.arena;
    }
    free(cg.nodes);
    if (st) return free(cg.values), st;
    *out = cg.values;
    return SEAM_STATUS_OK;
}

/* Sets the model's metadata key to value (replacing it). */
static seam_status set_metadata(seam_context *ctx, struct seam_model *m, const char *key, const char *value) {
    seam_arena *a = &m->arena;
    const char *v = seam_arena_strdup(a, value);
    if (!v) return oom(ctx);
    for (int32_t k = 0; k < m->n_metadata; k++)
        if (!strcmp(m->metadata[k].key, key)) return m->metadata[k].value = v, SEAM_STATUS_OK;
    ir_string_pair *md = seam_arena_alloc(a, sizeof(ir_string_pair) * (size_t)(m->n_metadata + 1));
    if (!md) return oom(ctx);
    if (m->n_metadata) memcpy(md, m->metadata, sizeof(ir_string_pair) * (size_t)m->n_metadata);
    md[m->n_metadata++] = (ir_string_pair){key, v};
    m->metadata = md;
    return SEAM_STATUS_OK;
}

/* Padding (seam partition --pad): options "seam.pad=NAME:AXIS[=VALUE]"
 * become the model's metadata "seam.pad" (joined by ';'), with the
 * buckets' shapes in "seam.buckets"; the session pads a run's inputs up
 * to the smallest bucket that fits (runtime/session.c). */
static seam_status write_pads(seam_context *ctx, struct seam_model *m, const char *const *options, int32_t n_options) {
    size_t lp = 1, lb = 1;
    for (int32_t k = 0; k < n_options; k++) {
        if (!strncmp(options[k], "seam.pad=", 9)) lp += strlen(options[k]) + 1;
        if (!strncmp(options[k], "seam.bucket=", 12)) lb += strlen(options[k]) + 1;
    }
    if (lp == 1) return SEAM_STATUS_OK;
    char *pads = calloc(lp, 1), *bks = calloc(lb, 1);
    seam_status st = SEAM_STATUS_OK;
    if (!pads || !bks) st = oom(ctx);
    for (int32_t k = 0; !st && k < n_options; k++) {
        if (!strncmp(options[k], "seam.pad=", 9)) strcat(strcat(pads, pads[0] ? ";" : ""), options[k] + 9);
        if (!strncmp(options[k], "seam.bucket=", 12)) strcat(strcat(bks, bks[0] ? ";" : ""), options[k] + 12);
    }
    if (!st) st = set_metadata(ctx, m, "seam.pad", pads);
    if (!st) st = set_metadata(ctx, m, "seam.buckets", bks);
    free(pads);
    free(bks);
    return st;
}

/* Splits the options: the bucket ones into bk (inferred), the rest into
 * rest (the backend's). */
static seam_status read_buckets(seam_context *ctx, struct seam_model *m, const char *const *options, int32_t n_options,
                                const char **rest, int32_t *n_rest, buckets *bk) {
    const char *names[MAX_BUCKETS * 8], *shapes[MAX_BUCKETS * 8];
    char *buf[MAX_BUCKETS * 8];
    int32_t n = 0;
    seam_status st = SEAM_STATUS_OK;
    *n_rest = 0;
    for (int32_t k = 0; k < n_options; k++) {
        const char *o = options[k];
        if (!strcmp(o, "seam.jit=off")) bk->no_jit = true;
        else if (!strncmp(o, "seam.pad=", 9)) continue;
        else if (!strncmp(o, "seam.bucket=", 12)) {
            const char *eq = strrchr(o + 12, '=');
            if (!eq || eq == o + 12 || n >= MAX_BUCKETS * 8) {
                st = seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "bucket '%s': want NAME=AxBxC (at most %d)", o + 12,
                                MAX_BUCKETS);
                break;
            }
            buf[n] = strndup(o + 12, (size_t)(eq - o - 12));
            if (!buf[n]) {
                st = oom(ctx);
                break;
            }
            names[n] = buf[n], shapes[n] = eq + 1, n++;
        } else rest[(*n_rest)++] = o;
    }
    /* bucket b: the b-th shape given for each input */
    for (int32_t b = 0; !st; b++) {
        const char *bn[64], *bs[64];
        int32_t c = 0;
        for (int32_t k = 0; k < n && c < 64; k++) {
            int32_t seen = 0;
            for (int32_t j = 0; j < k; j++) seen += !strcmp(names[j], names[k]);
            if (seen == b) bn[c] = names[k], bs[c++] = shapes[k];
        }
        if (!c) break;
        if (b >= MAX_BUCKETS) {
            st = seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "at most %d buckets", MAX_BUCKETS);
            break;
        }
        if ((st = infer_bucket(ctx, m, m->graph, bn, bs, c, bk, &bk->vals[b]))) break;
        bk->n++;
    }
    for (int32_t k = 0; k < n; k++) free(buf[k]);
    return st;
}

/* The "buckets" ints of a subgraph whose boundary inputs are ins (n_in of
 * them): those buckets at which every input's shape is known. */
static seam_status bucket_attr(seam_context *ctx, seam_arena *a, const buckets *bk, const int32_t *ins, int32_t n_in,
                               ir_attr *out) {
    int32_t cap = 1;
    for (int32_t b = 0; b < bk->n; b++)
        for (int32_t i = 0; i < n_in; i++) cap += 3 + (bk->vals[b][ins[i]].type.rank > 0 ? bk->vals[b][ins[i]].type.rank : 0) + 64;
    int64_t *q = seam_arena_alloc(a, sizeof(int64_t) * (size_t)cap);
    if (!q) return oom(ctx);
    int32_t n = 1, count = 0;
    for (int32_t b = 0; b < bk->n; b++) {
        int32_t start = n;
        bool known = true;
        for (int32_t i = 0; i < n_in && known; i++) {
            const ir_value *v = &bk->vals[b][ins[i]];
            const ir_type *t = &v->type;
            known = t->kind == IR_TYPE_TENSOR && t->rank >= 0;
            for (int32_t d = 0; known && d < t->rank; d++) known = t->dims[d].v >= 0;
            if (!known) break;
            q[n++] = t->elem, q[n++] = t->rank;
            for (int32_t d = 0; d < t->rank; d++) q[n++] = t->dims[d].v;
            const ir_tensor *kt = v->konst;
            bool ints = kt && (kt->dtype == SEAM_DTYPE_INT64 || kt->dtype == SEAM_DTYPE_INT32) && kt->numel <= 64 && kt->rank <= 1;
            q[n++] = ints ? kt->numel : -1;
            for (int64_t e = 0; ints && e < kt->numel; e++)
                q[n++] = kt->dtype == SEAM_DTYPE_INT64 ? ((const int64_t *)kt->data)[e] : ((const int32_t *)kt->data)[e];
        }
        if (known) count++;
        else n = start;
    }
    q[0] = count;
    memset(out, 0, sizeof(*out));
    out->name = "buckets";
    out->kind = IR_ATTR_INTS;
    out->ints = q;
    out->n = n;
    return SEAM_STATUS_OK;
}

static seam_status build_subgraph(seam_context *ctx, struct seam_model *m, const ir_graph *g, ir_graph *ng,
                                  const seam_plan *plan, int32_t s, const seam_backend *backend, int32_t *map,
                                  const char *const *options, int32_t n_options, const buckets *bk) {
    seam_arena *a = &m->arena;
    const plan_subgraph *sg = &plan->subgraphs[s];
    const char *target = plan->target_names[sg->target];
    char lab[256];
    ir_graph *b = ir_graph_new(m, ng);
    if (!b) return oom(ctx);
    char name[128];
    snprintf(name, sizeof(name), "seam_subgraph_%d_%s", s, target);
    b->name = seam_arena_strdup(a, name);
    for (int32_t v = 0; v < g->n_values; v++) map[v] = -1;
    /* inputs first, in the order the nodes meet them */
    int32_t n_in = 0, n_out = 0;
    int32_t *ins = seam_arena_alloc(a, sizeof(int32_t) * (size_t)(g->n_values + 1));
    int32_t *outs = seam_arena_alloc(a, sizeof(int32_t) * (size_t)(g->n_values + 1));
    if (!ins || !outs) return oom(ctx);
    for (int32_t k = 0; k < sg->n_nodes; k++) {
        const ir_node *n = &g->nodes[sg->nodes[k]];
        if (ir_node_has_body(n))
            return seam_error(ctx, SEAM_STATUS_UNSUPPORTED,
                              "%s: a node with a body (If/Loop/Scan) cannot go into a device subgraph yet; pin it to cpu",
                              ir_node_label(g, sg->nodes[k], lab, sizeof(lab)));
        for (int32_t i = 0; i < n->n_inputs; i++) {
            int32_t v = n->inputs[i];
            if (v < 0 || map[v] >= 0) continue;
            const ir_value *val = &g->values[v];
            if (val->producer >= 0 && plan->node_subgraph[val->producer] == s) continue; /* made inside */
            int32_t bv = ir_graph_add_value(b, val->name);
            if (bv < 0) return oom(ctx);
            map[v] = bv;
            b->values[bv].type = val->type;
            bool resident = (val->flags & IR_VALUE_INIT) || (val->producer >= 0 && plan->node_target[val->producer] < 0);
            if (resident) { /* a weight or a constant: read from the main graph */
                b->values[bv].flags |= IR_VALUE_OUTER;
                b->values[bv].outer = v;
            } else {
                b->values[bv].flags |= IR_VALUE_INPUT | IR_VALUE_DECLARED;
                ins[n_in++] = v;
            }
        }
    }
    /* the nodes, with values mapped into the body */
    for (int32_t k = 0; k < sg->n_nodes; k++) {
        const ir_node *n = &g->nodes[sg->nodes[k]];
        for (int32_t o = 0; o < n->n_outputs; o++) {
            int32_t v = n->outputs[o];
            if (v < 0) continue;
            int32_t bv = ir_graph_add_value(b, g->values[v].name);
            if (bv < 0) return oom(ctx);
            map[v] = bv;
            b->values[bv].type = g->values[v].type;
            /* an output of the subgraph: read outside it, or a graph output */
            const ir_value *val = &g->values[v];
            bool out = (val->flags & IR_VALUE_OUTPUT) != 0;
            for (int32_t c = 0; c < val->n_consumers && !out; c++) out = plan->node_subgraph[val->consumers[c]] != s;
            if (out) {
                b->values[bv].flags |= IR_VALUE_OUTPUT | IR_VALUE_DECLARED;
                outs[n_out++] = v;
            }
        }
    }
    for (int32_t k = 0; k < sg->n_nodes; k++) {
        const ir_node *n = &g->nodes[sg->nodes[k]];
        int32_t bi = ir_graph_add_node(b);
        if (bi < 0) return oom(ctx);
        ir_node *bn = &b->nodes[bi];
        *bn = *n;
        bn->n_implicit = 0;
        if (!ir_node_set_doc(b, bi, ir_node_doc(g, sg->nodes[k]))) return oom(ctx);
        bn->inputs = seam_arena_alloc(a, sizeof(int32_t) * (size_t)(n->n_inputs + 1));
        bn->outputs = seam_arena_alloc(a, sizeof(int32_t) * (size_t)(n->n_outputs + 1));
        if (!bn->inputs || !bn->outputs) return oom(ctx);
        for (int32_t i = 0; i < n->n_inputs; i++) bn->inputs[i] = n->inputs[i] < 0 ? -1 : map[n->inputs[i]];
        for (int32_t o = 0; o < n->n_outputs; o++) bn->outputs[o] = n->outputs[o] < 0 ? -1 : map[n->outputs[o]];
    }
    b->inputs = seam_arena_alloc(a, sizeof(int32_t) * (size_t)(n_in + 1));
    b->outputs = seam_arena_alloc(a, sizeof(int32_t) * (size_t)(n_out + 1));
    if (!b->inputs || !b->outputs) return oom(ctx);
    for (int32_t i = 0; i < n_in; i++) b->inputs[b->n_inputs++] = map[ins[i]];
    for (int32_t o = 0; o < n_out; o++) b->outputs[b->n_outputs++] = map[outs[o]];

    /* the Subgraph node in the main graph */
    int32_t ni = ir_graph_add_node(ng);
    if (ni < 0) return oom(ctx);
    ir_node *sn = &ng->nodes[ni];
    memset(sn, 0, sizeof(*sn));
    sn->name = b->name;
    sn->op_type = "Subgraph";
    sn->domain = "ai.seam";
    sn->n_inputs = n_in;
    sn->n_outputs = n_out;
    sn->inputs = seam_arena_alloc(a, sizeof(int32_t) * (size_t)(n_in + 1));
    sn->outputs = seam_arena_alloc(a, sizeof(int32_t) * (size_t)(n_out + 1));
    const char *rules = seam_rules_source(backend);
    sn->attrs = seam_arena_calloc(a, 6, sizeof(ir_attr));
    if (!sn->inputs || !sn->outputs || !sn->attrs) return oom(ctx);
    memcpy(sn->inputs, ins, sizeof(int32_t) * (size_t)n_in);
    memcpy(sn->outputs, outs, sizeof(int32_t) * (size_t)n_out);
    ir_attr body;
    memset(&body, 0, sizeof(body));
    body.name = "body";
    body.kind = IR_ATTR_GRAPH;
    body.g = b;
    sn->attrs[sn->n_attrs++] = body;
    sn->attrs[sn->n_attrs++] = string_attr(a, "target", target);
    if (rules) sn->attrs[sn->n_attrs++] = string_attr(a, "rules", rules);
    int32_t n_own = 0; /* an instance's own options first (backends/instance.c) */
    const char *const *own = backend_instance_options(backend, &n_own);
    if (n_own + n_options > 0) {
        ir_attr *oa = &sn->attrs[sn->n_attrs++];
        oa->name = "target_options";
        oa->kind = IR_ATTR_STRINGS;
        oa->strings = seam_arena_alloc(a, sizeof(ir_bytes) * (size_t)(n_own + n_options));
        if (!oa->strings) return oom(ctx);
        for (int32_t k = 0; k < n_own + n_options; k++) {
            const char *o = k < n_own ? own[k] : options[k - n_own];
            oa->strings[k].data = (const uint8_t *)seam_arena_strdup(a, o);
            oa->strings[k].len = strlen(o);
            if (!oa->strings[k].data) return oom(ctx);
        }
        oa->n = n_own + n_options;
    }
    if (bk->n > 0) {
        seam_status st = bucket_attr(ctx, a, bk, ins, n_in, &sn->attrs[sn->n_attrs++]);
        if (st) return st;
    }
    if (bk->no_jit) {
        ir_attr *ja = &sn->attrs[sn->n_attrs++];
        ja->name = "jit";
        ja->kind = IR_ATTR_INT;
        ja->i = 0;
    }
    for (int32_t k = 0; k < sn->n_attrs; k++)
        if (!sn->attrs[k].name || (sn->attrs[k].kind == IR_ATTR_STRING && !sn->attrs[k].s.data)) return oom(ctx);
    return SEAM_STATUS_OK;
}

static seam_status apply_plan(seam_model *m, const seam_plan *plan, const seam_backend *const *targets, int32_t n_targets,
                              const char *const *options, int32_t n_options, const buckets *bk);

seam_status seam_plan_apply(seam_model *m, const seam_plan *plan, const seam_backend *const *targets, int32_t n_targets,
                            const char *const *options, int32_t n_options) {
    if (!m || !plan || plan->model != m || n_options < 0 || (n_options > 0 && !options)) return SEAM_STATUS_INVALID_ARGUMENT;
    seam_context *ctx = m->ctx;
    const ir_graph *g = m->graph;
    buckets bk;
    memset(&bk, 0, sizeof(bk));
    seam_arena_init(&bk.arena, 16384);
    const char **rest = calloc((size_t)n_options + 1, sizeof(char *));
    if (!rest) return oom(ctx);
    for (int32_t i = 0; i < g->n_nodes && n_options > 0; i++)
        if (ir_node_has_body(&g->nodes[i])) { /* inference at a bucket's shapes would write into the shared bodies */
            for (int32_t k = 0; k < n_options; k++)
                if (!strncmp(options[k], "seam.bucket=", 12)) {
                    free(rest);
                    return seam_error(ctx, SEAM_STATUS_UNSUPPORTED, "buckets on a model with If/Loop/Scan nodes are not supported yet");
                }
            break;
        }
    int32_t n_all = n_options;
    seam_status st = read_buckets(ctx, m, options, n_options, rest, &n_options, &bk);
    if (!st) st = apply_plan(m, plan, targets, n_targets, rest, n_options, &bk);
    if (!st) st = write_pads(ctx, m, options, n_all);
    buckets_free(&bk);
    free(rest);
    return st;
}

static seam_status apply_plan(seam_model *m, const seam_plan *plan, const seam_backend *const *targets, int32_t n_targets,
                              const char *const *options, int32_t n_options, const buckets *bk) {
    seam_context *ctx = m->ctx;
    seam_arena *a = &m->arena;
    const ir_graph *g = m->graph;
    ir_graph *ng = ir_graph_new(m, NULL);
    if (!ng) return oom(ctx);
    ng->name = g->name;
    ng->doc = g->doc;
    /* the same values at the same indices */
    for (int32_t v = 0; v < g->n_values; v++) {
        int32_t nv = ir_graph_add_value(ng, g->values[v].name);
        if (nv != v) return nv < 0 ? oom(ctx) : seam_error(ctx, SEAM_STATUS_INTERNAL, "value order changed while applying a plan");
        ir_value *val = &ng->values[nv];
        if (!ir_value_set_doc(ng, nv, ir_value_doc(g, v))) return oom(ctx);
        val->type = g->values[v].type;
        val->flags = g->values[v].flags;
        val->init = g->values[v].init;
        val->outer = g->values[v].outer;
    }
    ng->inputs = g->inputs, ng->n_inputs = g->n_inputs;
    ng->outputs = g->outputs, ng->n_outputs = g->n_outputs;
    ng->inits = g->inits, ng->n_inits = g->n_inits;
    ng->sparse_inits = g->sparse_inits, ng->n_sparse_inits = g->n_sparse_inits;
    int32_t *map = seam_arena_alloc(a, sizeof(int32_t) * (size_t)(g->n_values + 1));
    bool *built = seam_arena_calloc(a, (size_t)plan->n_subgraphs + 1, sizeof(bool));
    if (!map || !built) return oom(ctx);
    seam_status st;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        int32_t s = plan->node_subgraph[i];
        bool device = s >= 0 && plan->subgraphs[s].target < plan->n_targets;
        if (!device) { /* CPU and constant nodes stay as they are */
            int32_t ni = ir_graph_add_node(ng);
            if (ni < 0) return oom(ctx);
            ng->nodes[ni] = g->nodes[i];
            if (!ir_node_set_doc(ng, ni, ir_node_doc(g, i)) || !ir_node_set_folded_op(ng, ni, ir_node_folded_op(g, i)))
                return oom(ctx);
            reparent(&ng->nodes[ni], ng);
            continue;
        }
        if (built[s]) continue;
        built[s] = true;
        const char *target = plan->target_names[plan->subgraphs[s].target];
        const seam_backend *backend = NULL;
        for (int32_t t = 0; t < n_targets && !backend; t++)
            if (targets[t] && strcmp(targets[t]->name, target) == 0) backend = targets[t];
        if ((st = build_subgraph(ctx, m, g, ng, plan, s, backend, map, options, n_options, bk))) return st;
    }
    /* the file now needs the ai.seam domain */
    if (!ir_model_import(m, "ai.seam", 1)) return oom(ctx);
    if ((st = ir_graph_link(ctx, ng))) return st;
    /* values now made inside a body are no longer declared here */
    for (int32_t v = 0; v < ng->n_values; v++) {
        ir_value *val = &ng->values[v];
        if (val->producer < 0 && !(val->flags & (IR_VALUE_INPUT | IR_VALUE_INIT | IR_VALUE_OUTER))) val->flags &= ~(uint32_t)IR_VALUE_DECLARED;
    }
    m->graph = ng;
    return ir_infer_model(m);
}
