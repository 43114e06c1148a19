/*
 * Property tests of the partitioner: thousands of random DAGs x random
 * capabilities x random configurations. Every plan is checked for
 *   - every node in exactly one subgraph (constants in none);
 *   - an acyclic quotient graph, listed in topological order, with the
 *     nodes of each subgraph in topological order;
 *   - exact boundary inputs and outputs, recomputed here independently;
 *   - the constraints (support, min size, max count, cpu_ops);
 *   - a minimal number of device subgraphs for the plan's assignment,
 *     against a brute-force search over all topological orders (small
 *     graphs, no size/count constraints): exactly, with one device target;
 *     with two device targets the wave order is a heuristic, so at least
 *     99% must be exact and none more than one above the minimum.
 * The same checks run on callback plans (seam_partition_by_callback) over
 * random DAGs stored out of topological order, with random ids refused
 * exactly when our own search finds a cycle among them. (Placement by
 * cost, several targets and memory budgets: test_partition_cost.c.)
 * Also: the callback assignment, with and without a cycle; the plan's JSON
 * text against jansson's own compact dump of it (names with quotes,
 * control characters and multibyte UTF-8).
 */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/context.h"
#include "ir/ir.h"
#include "partition/partition.h"
#include "seam_backend.h"

#include "random_graph.h"

/* A target that supports a random set of (node index) entries. */
typedef struct cap {
    const uint8_t *ok;
} cap;

static bool cap_supports(void *ctx, const seam_node_view *n, char *why, size_t len) {
    const cap *c = ctx;
    if (c->ok[n->index]) return true;
    snprintf(why, len, "not in the random capability");
    return false;
}

/* Brute force: the fewest device runs over all topological orders of the
 * nodes with their given targets (DP over subsets of placed nodes). */
static int32_t brute_min_device(const ir_graph *g, const int32_t *target, int32_t cpu) {
    int32_t n = g->n_nodes;
    uint32_t *pred = calloc((size_t)n, sizeof(uint32_t));
    for (int32_t i = 0; i < n; i++)
        for (int32_t k = 0; k < g->nodes[i].n_inputs; k++) {
            int32_t v = g->nodes[i].inputs[k];
            if (v >= 0 && g->values[v].producer >= 0) pred[i] |= 1u << g->values[v].producer;
        }
    int32_t ncol = cpu + 1;
    size_t states = ((size_t)1 << n) * (size_t)(ncol + 1);
    int32_t *dp = malloc(sizeof(int32_t) * states);
    for (size_t s = 0; s < states; s++) dp[s] = 1 << 20;
    /* last color ncol = "nothing placed yet" */
    dp[(size_t)ncol] = 0;
    for (uint32_t mask = 0; mask < (1u << n); mask++)
        for (int32_t last = 0; last <= ncol; last++) {
            int32_t cur = dp[(size_t)mask * (size_t)(ncol + 1) + (size_t)last];
            if (cur >= 1 << 20) continue;
            for (int32_t i = 0; i < n; i++) {
                if (mask >> i & 1 || (pred[i] & ~mask)) continue;
                int32_t c = target[i];
                int32_t add = (c != last && c != cpu) ? 1 : 0;
                size_t s2 = (size_t)(mask | 1u << i) * (size_t)(ncol + 1) + (size_t)c;
                if (cur + add < dp[s2]) dp[s2] = cur + add;
            }
        }
    int32_t best = 1 << 20;
    for (int32_t last = 0; last <= ncol; last++) {
        int32_t v = dp[(size_t)((1u << n) - 1) * (size_t)(ncol + 1) + (size_t)last];
        if (v < best) best = v;
    }
    free(dp);
    free(pred);
    return best;
}

static int target_of(const seam_plan_subgraph_info *sg, const char *const *names, int32_t nt) {
    for (int32_t t = 0; t < nt; t++)
        if (strcmp(sg->target, names[t]) == 0) return t;
    return nt; /* cpu */
}

static int multi_exact, multi_off;

static void check_plan(const struct seam_model *m, const seam_plan *plan, const seam_partition_options *o,
                       const uint8_t *const *caps, bool check_min, int *minimal_checked) {
    const ir_graph *g = m->graph;
    int32_t nn = g->n_nodes, ns = seam_plan_subgraph_count(plan);
    int32_t *sub = malloc(sizeof(int32_t) * (size_t)nn), *pos = malloc(sizeof(int32_t) * (size_t)nn);
    int32_t *tgt = malloc(sizeof(int32_t) * (size_t)nn);
    for (int32_t i = 0; i < nn; i++) sub[i] = -1;
    const char *names[8];
    for (int32_t t = 0; t < o->n_targets; t++) names[t] = o->targets[t]->name;
    int32_t n_dev = 0, seen = 0;
    for (int32_t s = 0; s < ns; s++) {
        seam_plan_subgraph_info sg;
        CHECK(seam_plan_subgraph(plan, s, &sg) == SEAM_STATUS_OK);
        int32_t t = target_of(&sg, names, o->n_targets);
        if (t < o->n_targets) {
            n_dev++;
            CHECK(sg.n_nodes >= o->min_subgraph_size);
        }
        CHECK(sg.n_nodes > 0);
        for (int32_t k = 0; k < sg.n_nodes; k++) {
            int32_t i = sg.nodes[k];
            CHECK(sub[i] == -1); /* in exactly one subgraph */
            sub[i] = s;
            pos[i] = seen++;
            tgt[i] = t;
            if (t < o->n_targets) CHECK(caps[t][i]); /* a device runs only what it supports */
            seam_plan_node_info info;
            seam_plan_node(plan, i, &info);
            CHECK(info.subgraph == s && strcmp(info.target, sg.target) == 0);
            for (int32_t c = 0; c < o->n_cpu_ops; c++)
                if (strcmp(info.op_type, o->cpu_ops[c]) == 0) CHECK(t == o->n_targets);
        }
        /* boundaries, recomputed */
        int32_t ins = 0, outs = 0;
        for (int32_t v = 0; v < g->n_values; v++) {
            const ir_value *val = &g->values[v];
            bool read_here = false, made_here = val->producer >= 0 && sub[val->producer] == s;
            bool read_elsewhere = (val->flags & IR_VALUE_OUTPUT) != 0;
            for (int32_t c = 0; c < val->n_consumers; c++) {
                int32_t cs = -2;
                for (int32_t k = 0; k < sg.n_nodes; k++)
                    if (sg.nodes[k] == val->consumers[c]) cs = s;
                if (cs == s) read_here = true;
                else read_elsewhere = true;
            }
            bool is_in = read_here && !made_here && !(val->flags & IR_VALUE_INIT);
            bool is_out = made_here && read_elsewhere;
            bool listed_in = false, listed_out = false;
            for (int32_t k = 0; k < sg.n_inputs; k++) listed_in |= strcmp(sg.inputs[k], val->name) == 0;
            for (int32_t k = 0; k < sg.n_outputs; k++) listed_out |= strcmp(sg.outputs[k], val->name) == 0;
            CHECK(is_in == listed_in);
            CHECK(is_out == listed_out);
            ins += is_in;
            outs += is_out;
        }
        CHECK(ins == sg.n_inputs && outs == sg.n_outputs);
    }
    CHECK(seen == nn);
    CHECK(n_dev == seam_plan_device_subgraph_count(plan));
    /* no pins here, so the count limit always holds */
    if (o->max_subgraph_count) CHECK(ns <= o->max_subgraph_count);
    /* topological: producers come first (earlier subgraph, or earlier in the same one) */
    for (int32_t i = 0; i < nn; i++)
        for (int32_t k = 0; k < g->nodes[i].n_inputs; k++) {
            int32_t v = g->nodes[i].inputs[k], p = v >= 0 ? g->values[v].producer : -1;
            if (p >= 0) CHECK(sub[p] <= sub[i] && pos[p] < pos[i]);
        }
    if (check_min && nn <= 12) {
        int32_t best = brute_min_device(g, tgt, o->n_targets);
        if (o->n_targets == 1) {
            if (n_dev != best) fprintf(stderr, "not minimal: %d device subgraphs, brute force %d (%d nodes)\n", n_dev, best, nn);
            CHECK(n_dev == best);
        } else {
            CHECK(n_dev <= best + 1);
            if (n_dev == best) multi_exact++;
            else multi_off++;
        }
        (*minimal_checked)++;
    }
    free(sub);
    free(pos);
    free(tgt);
}

static void property_tests(void) {
    seam_context *ctx;
    seam_context_create(&ctx);
    rng r = {0x9e3779b97f4a7c15ull};
    int plans = 0, minimal = 0, errors = 0;
    for (int round = 0; round < 4000; round++) {
        int32_t n = round % 3 == 0 ? 40 + (int32_t)rnd(&r, 200) : 2 + (int32_t)rnd(&r, 11);
        int32_t op_of[300];
        struct seam_model *m = random_model(ctx, &r, n, op_of);
        int32_t nt = 1 + (int32_t)rnd(&r, 2);
        uint8_t *ok[2];
        cap caps[2];
        seam_backend be[2];
        const seam_backend *list[2];
        const char *tn[2] = {"npu", "dsp"};
        for (int32_t t = 0; t < nt; t++) {
            ok[t] = calloc((size_t)n, 1);
            int32_t density = 30 + (int32_t)rnd(&r, 65);
            for (int32_t i = 0; i < n; i++) ok[t][i] = (int32_t)rnd(&r, 100) < density;
            caps[t].ok = ok[t];
            be[t] = (seam_backend){.abi_version = SEAM_BACKEND_ABI_VERSION, .name = tn[t], .ctx = &caps[t], .supports = cap_supports};
            list[t] = &be[t];
        }
        seam_partition_options o = seam_partition_defaults();
        o.targets = list;
        o.n_targets = nt;
        /* the cost search between two targets regroups a big graph hundreds
         * of times: one big graph in 8 takes it, the others the targets'
         * order (capability placement) */
        if (n >= 40 && round % 8 != 0) o.placement = SEAM_PLACEMENT_CAPABILITY;
        bool constrained = rnd(&r, 2) == 0;
        const char *cpu_ops[1] = {"Concat"};
        if (constrained) {
            o.min_subgraph_size = 1 + (int32_t)rnd(&r, 4);
            o.max_subgraph_count = (int32_t)rnd(&r, 6);
            if (rnd(&r, 2)) {
                o.cpu_ops = cpu_ops;
                o.n_cpu_ops = 1;
            }
        }
        seam_plan *plan = NULL;
        seam_status st = seam_partition(m, &o, &plan);
        if (st) {
            errors++;
        } else {
            plans++;
            check_plan(m, plan, &o, (const uint8_t *const *)ok, !constrained, &minimal);
        }
        seam_plan_free(plan);
        for (int32_t t = 0; t < nt; t++) free(ok[t]);
        free_model(m);
    }
    printf("property tests: %d plans checked (%d against brute force), %d refused; two device targets: %d of %d minimal\n",
           plans, minimal, errors, multi_exact, multi_exact + multi_off);
    CHECK(multi_off * 100 <= multi_exact + multi_off);
    CHECK(plans > 3500 && minimal > 1200 && errors == 0);
    seam_context_free(ctx);
}

/* ---- placement by cost ---- */

/* A target with random per-node speed (node_cost), launch and transfer. */
static int32_t by_half(void *user, const seam_node_view *n) { return n->index < *(int32_t *)user ? 0 : 1; }
static int32_t alternate(void *user, const seam_node_view *n) { return n->index % 2; }

static void callback_tests(void) {
    seam_context *ctx;
    seam_context_create(&ctx);
    rng r = {42};
    int32_t op_of[64];
    /* a chain: a split in two halves is fine; alternating ids make a cycle */
    struct seam_model *m = random_model(ctx, &r, 1, op_of);
    free_model(m);
    struct seam_model *chain = calloc(1, sizeof(*chain));
    chain->ctx = ctx;
    seam_arena_init(&chain->arena, 1 << 12);
    ir_graph *g = ir_graph_new(chain, NULL);
    chain->graph = g;
    int32_t prev = ir_graph_add_value(g, "x");
    g->values[prev].flags |= IR_VALUE_INPUT;
    g->inputs = seam_arena_alloc(&chain->arena, sizeof(int32_t));
    g->inputs[g->n_inputs++] = prev;
    char nm[16];
    for (int32_t i = 0; i < 6; i++) {
        snprintf(nm, sizeof(nm), "v%d", i);
        int32_t v = ir_graph_add_value(g, seam_arena_strdup(&chain->arena, nm));
        int32_t idx = ir_graph_add_node(g);
        ir_node *n = &g->nodes[idx];
        snprintf(nm, sizeof(nm), "r%d", i);
        n->name = seam_arena_strdup(&chain->arena, nm);
        n->op_type = "Relu";
        n->domain = "";
        n->inputs = seam_arena_alloc(&chain->arena, sizeof(int32_t));
        n->outputs = seam_arena_alloc(&chain->arena, sizeof(int32_t));
        n->inputs[n->n_inputs++] = prev;
        n->outputs[n->n_outputs++] = v;
        prev = v;
    }
    g->outputs = seam_arena_alloc(&chain->arena, sizeof(int32_t));
    g->outputs[g->n_outputs++] = prev;
    g->values[prev].flags |= IR_VALUE_OUTPUT;
    CHECK(ir_graph_link(ctx, g) == SEAM_STATUS_OK);
    int32_t half = 3;
    seam_plan *plan = NULL;
    CHECK(seam_partition_by_callback(chain, by_half, &half, &plan) == SEAM_STATUS_OK);
    CHECK(seam_plan_subgraph_count(plan) == 2);
    seam_plan_subgraph_info sg;
    seam_plan_subgraph(plan, 1, &sg);
    CHECK(sg.n_inputs == 1 && strcmp(sg.inputs[0], "v2") == 0);
    seam_plan_free(plan);
    plan = NULL;
    CHECK(seam_partition_by_callback(chain, alternate, NULL, &plan) == SEAM_STATUS_INVALID_ARGUMENT);
    CHECK(plan == NULL);
    const char *e = seam_context_last_error(ctx);
    CHECK_CONTAINS(e, "cycle");
    CHECK_CONTAINS(e, "'r0' (Relu)");
    CHECK_CONTAINS(e, "'r1' (Relu)");
    seam_arena_free(&chain->arena);
    free(chain);
    seam_context_free(ctx);
}

/* Callback plans on random DAGs stored out of topological order: ids by
 * contiguous ranges of a topological order (never a cycle) or at random
 * (often one). Whether the ids' quotient graph has a cycle is decided here
 * by a search of our own; seam must refuse exactly those, and every plan it
 * makes passes check_plan (every node once, subgraphs and their nodes in an
 * order that runs, exact boundaries) and has one subgraph per id. */
static const int32_t *callback_ids;
static int32_t by_table(void *user, const seam_node_view *n) { return callback_ids[n->index]; }

/* Whether the graph of ids (an edge a -> b when a node of b reads a value
 * a node of a makes) has a cycle: a depth-first search with colours. */
static bool id_visit(const bool *edge, int32_t k, int32_t a, uint8_t *colour) {
    colour[a] = 1;
    for (int32_t b = 0; b < k; b++) {
        if (!edge[a * k + b] || a == b) continue;
        if (colour[b] == 1 || (colour[b] == 0 && id_visit(edge, k, b, colour))) return true;
    }
    colour[a] = 2;
    return false;
}

static bool ids_cycle(const ir_graph *g, const int32_t *ids, int32_t k) {
    bool *edge = calloc((size_t)k * (size_t)k, sizeof(bool));
    uint8_t *colour = calloc((size_t)k, 1);
    for (int32_t i = 0; i < g->n_nodes; i++)
        for (int32_t j = 0; j < g->nodes[i].n_inputs; j++) {
            int32_t v = g->nodes[i].inputs[j], pr = v >= 0 ? g->values[v].producer : -1;
            if (pr >= 0) edge[ids[pr] * k + ids[i]] = true;
        }
    bool cyc = false;
    for (int32_t a = 0; a < k && !cyc; a++)
        if (!colour[a]) cyc = id_visit(edge, k, a, colour);
    free(edge);
    free(colour);
    return cyc;
}

static void callback_property_tests(void) {
    seam_context *ctx;
    seam_context_create(&ctx);
    rng r = {0x51ed270b27ull};
    int made = 0, refused = 0, unsorted = 0;
    for (int round = 0; round < 600; round++) {
        int32_t n = 2 + (int32_t)rnd(&r, 40), op_of[64], logical[64], ids[64];
        struct seam_model *m = random_model_ex(ctx, &r, n, op_of, true, logical);
        const ir_graph *g = m->graph;
        for (int32_t i = 0; i + 1 < n; i++) /* a file index that reads a later one */
            for (int32_t j = 0; j < g->nodes[i].n_inputs; j++) {
                int32_t v = g->nodes[i].inputs[j];
                if (v >= 0 && g->values[v].producer > i) {
                    unsorted++;
                    i = n;
                    break;
                }
            }
        int32_t k = 1 + (int32_t)rnd(&r, 5);
        if (round % 2) { /* contiguous ranges of the logical (topological) order: k ids, in order */
            int32_t cut[6] = {0};
            for (int32_t c = 1; c < k; c++) cut[c] = (int32_t)rnd(&r, (uint32_t)n + 1);
            cut[k] = n;
            for (int32_t a = 1; a < k; a++) /* sort the cuts */
                for (int32_t b = a; b > 0 && cut[b] < cut[b - 1]; b--) {
                    int32_t t = cut[b];
                    cut[b] = cut[b - 1], cut[b - 1] = t;
                }
            for (int32_t i = 0; i < n; i++) {
                int32_t c = 0;
                while (c + 1 < k && logical[i] >= cut[c + 1]) c++;
                ids[i] = c;
            }
        } else {
            for (int32_t i = 0; i < n; i++) ids[i] = (int32_t)rnd(&r, (uint32_t)k);
        }
        callback_ids = ids;
        bool cycle = ids_cycle(g, ids, k);
        seam_plan *plan = NULL;
        seam_status st = seam_partition_by_callback(m, by_table, NULL, &plan);
        if (cycle) {
            CHECK(st == SEAM_STATUS_INVALID_ARGUMENT && plan == NULL);
            refused++;
        } else {
            CHECK(st == SEAM_STATUS_OK && plan != NULL);
            if (plan) {
                seam_partition_options o = seam_partition_defaults();
                int dummy = 0;
                check_plan(m, plan, &o, NULL, false, &dummy);
                int32_t used = 0, seen_id[8] = {0};
                for (int32_t i = 0; i < n; i++) used += !seen_id[ids[i]]++;
                CHECK(seam_plan_subgraph_count(plan) == used);
                for (int32_t s2 = 0; s2 < seam_plan_subgraph_count(plan); s2++) { /* one id per subgraph */
                    seam_plan_subgraph_info sg;
                    seam_plan_subgraph(plan, s2, &sg);
                    for (int32_t q = 1; q < sg.n_nodes; q++) CHECK(ids[sg.nodes[q]] == ids[sg.nodes[0]]);
                }
                made++;
            }
        }
        seam_plan_free(plan);
        free_model(m);
    }
    printf("callback property tests: %d plans checked, %d cycles refused (%d files out of topological order)\n", made,
           refused, unsorted);
    CHECK(made > 300 && refused > 50 && unsorted > 300);
    seam_context_free(ctx);
}

/* seam_plan_json writes its text itself; jansson, parsing it and dumping
 * it again compactly, must give back the same bytes. */
static void json_text_tests(void) {
    seam_context *ctx;
    seam_context_create(&ctx);
    static const char *names[] = {"plain", "q\"uo\\te", "ctl\n\t\r\b\f\x01\x1f\x7f", "slash/é€😀", "x", "\xff\xfe bad"};
    int32_t n_names = (int32_t)(sizeof(names) / sizeof(names[0]));
    struct seam_model *m = calloc(1, sizeof(*m));
    m->ctx = ctx;
    seam_arena_init(&m->arena, 1 << 12);
    ir_graph *g = ir_graph_new(m, NULL);
    m->graph = g;
    int32_t prev = ir_graph_add_value(g, "in\"put");
    g->values[prev].flags |= IR_VALUE_INPUT;
    g->inputs = seam_arena_alloc(&m->arena, sizeof(int32_t));
    g->inputs[g->n_inputs++] = prev;
    char nm[64];
    for (int32_t i = 0; i < n_names; i++) {
        snprintf(nm, sizeof(nm), "v%d_%s", i, names[i]);
        int32_t v = ir_graph_add_value(g, seam_arena_strdup(&m->arena, nm));
        int32_t idx = ir_graph_add_node(g);
        ir_node *n = &g->nodes[idx];
        n->name = names[i];
        n->op_type = i % 2 ? "Relu" : "Sigmoid";
        n->domain = "";
        n->inputs = seam_arena_alloc(&m->arena, sizeof(int32_t));
        n->outputs = seam_arena_alloc(&m->arena, sizeof(int32_t));
        n->inputs[n->n_inputs++] = prev;
        n->outputs[n->n_outputs++] = v;
        prev = v;
    }
    g->outputs = seam_arena_alloc(&m->arena, sizeof(int32_t));
    g->outputs[g->n_outputs++] = prev;
    g->values[prev].flags |= IR_VALUE_OUTPUT;
    CHECK(ir_graph_link(ctx, g) == SEAM_STATUS_OK);
    seam_plan *plan = NULL;
    CHECK(seam_partition_by_callback(m, alternate, NULL, &plan) == SEAM_STATUS_INVALID_ARGUMENT);
    int32_t half = 3;
    CHECK(seam_partition_by_callback(m, by_half, &half, &plan) == SEAM_STATUS_OK);
    size_t need = 0;
    const char *model = "m\"od\\el\x02.onnx";
    CHECK(seam_plan_json(plan, model, NULL, 0, &need) == SEAM_STATUS_OK && need > 1);
    char *text = malloc(need);
    size_t need2 = 0;
    /* too small: a NUL-terminated prefix, and the same size needed */
    CHECK(seam_plan_json(plan, model, text, 10, &need2) == SEAM_STATUS_OK && need2 == need && strlen(text) == 9);
    CHECK(seam_plan_json(plan, model, text, need, NULL) == SEAM_STATUS_OK && strlen(text) == need - 1);
    json_error_t err;
    json_t *o = json_loads(text, 0, &err);
    CHECK(o != NULL);
    if (o) {
        char *again = json_dumps(o, JSON_PRESERVE_ORDER | JSON_COMPACT);
        CHECK(again && strcmp(again, text) == 0);
        if (again && strcmp(again, text) != 0) fprintf(stderr, "ours:    %s\njansson: %s\n", text, again);
        free(again);
        CHECK(strcmp(json_string_value(json_object_get(o, "model")), model) == 0);
        json_t *nodes = json_object_get(o, "nodes");
        CHECK(json_array_size(nodes) == (size_t)n_names);
        for (int32_t i = 0; i + 1 < n_names; i++)
            CHECK(strcmp(json_string_value(json_object_get(json_array_get(nodes, (size_t)i), "name")), names[i]) == 0);
        /* bytes that are not UTF-8 become U+FFFD */
        CHECK(strcmp(json_string_value(json_object_get(json_array_get(nodes, (size_t)n_names - 1), "name")),
                     "\xEF\xBF\xBD\xEF\xBF\xBD bad") == 0);
        CHECK(json_array_size(json_object_get(o, "subgraphs")) == 2);
        CHECK(json_is_real(json_object_get(json_object_get(o, "estimate"), "plan_us")));
        json_decref(o);
    }
    /* another model name gives another text; the first is not reused */
    CHECK(seam_plan_json(plan, NULL, NULL, 0, &need2) == SEAM_STATUS_OK && need2 < need);
    char *text2 = malloc(need2);
    CHECK(seam_plan_json(plan, NULL, text2, need2, NULL) == SEAM_STATUS_OK);
    CHECK(strncmp(text2, "{\"model\":\"\",", 12) == 0);
    free(text2);
    free(text);
    seam_plan_free(plan);
    seam_arena_free(&m->arena);
    free(m);
    seam_context_free(ctx);
}

static void rules_tests(void) {
    seam_context *ctx;
    seam_context_create(&ctx);
    seam_backend *b = NULL;
    CHECK(seam_rules_parse(ctx, "{\"name\": \"npu\", \"ops\": {\"Conv\": {\"dtype\": [\"float32\"]}}}", "t.json", &b) ==
          SEAM_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(seam_context_last_error(ctx), "unknown key 'dtype'");
    CHECK(seam_rules_parse(ctx, "{\"name\": \"npu\", \"ops\": {\"Conv\": {\"dtypes\": [\"float33\"]}}}", "t.json", &b) ==
          SEAM_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(seam_context_last_error(ctx), "ops.Conv.dtypes[0]");
    CHECK(seam_rules_parse(ctx, "{\"name\": \"npu\", \"ops\": {\"Conv\": {\"max_rank\": -1}}}", "t.json", &b) ==
          SEAM_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(seam_context_last_error(ctx), "ops.Conv.max_rank");
    CHECK(seam_rules_parse(ctx, "{\"name\": \"npu\", \"defualt\": true}", "t.json", &b) == SEAM_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(seam_context_last_error(ctx), "unknown key 'defualt'");
    CHECK(seam_rules_parse(ctx, "{\"name\": \"npu\", ", "t.json", &b) == SEAM_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(seam_context_last_error(ctx), "t.json: line");
    CHECK(seam_rules_parse(ctx, "{\"name\": \"cpu\"}", "t.json", &b) == SEAM_STATUS_INVALID_ARGUMENT);
    CHECK(seam_rules_parse(ctx,
                           "{\"name\": \"npu\", \"default\": false, \"ops\": {\"Conv\": {\"dtypes\": [\"float32\"], "
                           "\"max_rank\": 4, \"attrs\": {\"group\": {\"max\": 1}}, \"cost\": 3}, \"Relu\": {\"after\": "
                           "[\"Conv\"]}, \"TopK\": false}}",
                           "t.json", &b) == SEAM_STATUS_OK);
    CHECK(b && strcmp(b->name, "npu") == 0 && b->abi_version == SEAM_BACKEND_ABI_VERSION);
    seam_backend_free(b);
    seam_context_free(ctx);
}

int main(void) {
    setenv("SEAM_COST_RATES", "off", 1); /* the oracle's rates are the guesses, whatever this machine calibrated */
    property_tests();
    callback_tests();
    callback_property_tests();
    json_text_tests();
    rules_tests();
    CHECK_DONE();
}
