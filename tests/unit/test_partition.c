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
 * exactly when our own search finds a cycle among them. The cost property
 * tests recompute every plan's estimate from the cost model's definition
 * and the random inputs (oracle_plan_us), never from seam's estimator.
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
typedef struct costed {
    const uint8_t *ok;
    const double *factor; /* per node index: time as a fraction of the CPU's */
    double launch_us, gbps;
} costed;

static bool costed_supports(void *ctx, const seam_node_view *n, char *why, size_t len) {
    const costed *c = ctx;
    if (c->ok[n->index]) return true;
    snprintf(why, len, "not in the random capability");
    return false;
}
static double costed_cost(void *ctx, const seam_node_view *n) { return ((const costed *)ctx)->factor[n->index]; }
static void costed_traits(void *ctx, double *launch_us, double *gbps) {
    *launch_us = ((const costed *)ctx)->launch_us;
    *gbps = ((const costed *)ctx)->gbps;
}

/* Gives every value of a random model a float32 shape of random size, so
 * boundaries have bytes and nodes have work. */
static double oracle_plan_us(const struct seam_model *m, const seam_plan *plan, const costed *c) {
    const ir_graph *g = m->graph;
    double total = 0;
    for (int32_t s = 0; s < seam_plan_subgraph_count(plan); s++) {
        seam_plan_subgraph_info sg;
        seam_plan_subgraph(plan, s, &sg);
        bool dev = strcmp(sg.target, "cpu") != 0;
        for (int32_t k = 0; k < sg.n_nodes; k++)
            total += oracle_cpu_us(g, sg.nodes[k]) * (dev ? c->factor[sg.nodes[k]] : 1);
        if (!dev) continue;
        double bytes = 0;
        for (int32_t k = 0; k < sg.n_inputs; k++) bytes += oracle_value_bytes(g, sg.inputs[k]);
        for (int32_t k = 0; k < sg.n_outputs; k++) bytes += oracle_value_bytes(g, sg.outputs[k]);
        total += c->launch_us + bytes / (c->gbps * 1e3);
    }
    return total;
}

/* The plan for o, its estimate recomputed by the oracle (checked against
 * seam's own); -1 when partitioning fails. */
static double plan_total(struct seam_model *m, const seam_partition_options *o, const costed *c) {
    seam_plan *plan = NULL;
    if (seam_partition(m, o, &plan)) return -1;
    seam_plan_estimate e;
    seam_plan_estimate_get(plan, &e);
    double mine = oracle_plan_us(m, plan, c);
    if (fabs(mine - e.total_us) > 1e-6 * mine + 1e-9)
        fprintf(stderr, "cost: seam estimates %.4f us, the oracle %.4f us\n", e.total_us, mine);
    CHECK(fabs(mine - e.total_us) <= 1e-6 * mine + 1e-9);
    seam_plan_free(plan);
    return mine;
}

/* Random DAGs with random costs: the cost plan's estimate is never above
 * the capability plan's nor the all-CPU plan's, and is within 5% of the
 * best over every way of keeping supported nodes on the CPU (brute force
 * through pins, each plan estimated by the oracle above, which also checks
 * seam's own estimate of every plan it sees). Run with the
 * exhaustive search off, so the local search is what is measured. */
static void cost_property_tests(void) {
    seam_context *ctx;
    seam_context_create(&ctx);
    rng r = {0x2545f4914f6cdd1dull};
    int graphs = 0, optimal = 0, within = 0, moved = 0;
    double worst = 1;
    int32_t saved_limit = partition_exhaustive_limit;
    for (int round = 0; round < 300; round++) {
        partition_exhaustive_limit = round % 2 ? 0 : saved_limit;
        int32_t n = 3 + (int32_t)rnd(&r, 14), op_of[32];
        struct seam_model *m = random_model(ctx, &r, n, op_of);
        random_shapes(m, &r);
        uint8_t ok[32];
        double factor[32];
        int32_t sup[32], n_sup = 0;
        for (int32_t i = 0; i < n; i++) {
            ok[i] = rnd(&r, 100) < 70;
            factor[i] = 0.05 + rnd(&r, 1000) / 500.0; /* 0.05 .. 2.05 */
            if (ok[i]) sup[n_sup++] = i;
        }
        costed c = {ok, factor, (double)rnd(&r, 50), 0.5 + rnd(&r, 400) / 10.0};
        seam_backend be = {.abi_version = SEAM_BACKEND_ABI_VERSION, .name = "npu", .ctx = &c, .supports = costed_supports,
                           .node_cost = costed_cost, .cost_traits = costed_traits};
        const seam_backend *list[1] = {&be};
        seam_partition_options o = seam_partition_defaults();
        o.targets = list;
        o.n_targets = 1;
        double chosen = plan_total(m, &o, &c);
        seam_plan *plan = NULL;
        CHECK(seam_partition(m, &o, &plan) == SEAM_STATUS_OK);
        seam_plan_estimate e = {0};
        if (plan) seam_plan_estimate_get(plan, &e);
        for (int32_t i = 0; plan && i < seam_plan_node_count(plan); i++) {
            seam_plan_node_info ni;
            seam_plan_node(plan, i, &ni);
            moved += ni.reason == SEAM_REASON_COST;
        }
        seam_plan_free(plan);
        o.placement = SEAM_PLACEMENT_CAPABILITY;
        double capability = plan_total(m, &o, &c);
        CHECK(chosen >= 0 && capability >= 0);
        CHECK(chosen <= capability * (1 + 1e-9) + 1e-9);
        double all_cpu = 0;
        for (int32_t i = 0; i < n; i++) all_cpu += oracle_cpu_us(m->graph, i);
        CHECK(fabs(e.all_cpu_us - all_cpu) <= 1e-6 * all_cpu);
        CHECK(chosen <= all_cpu * (1 + 1e-9) + 1e-9);
        CHECK(fabs(e.capability_us - capability) <= 1e-6 * capability + 1e-9);
        /* brute force: every subset of the supported nodes pinned to the CPU */
        seam_pin pins[32];
        char names[32][16];
        double best = capability;
        for (uint32_t mask = 1; mask < (1u << n_sup) && n_sup <= 12; mask++) {
            int32_t np = 0;
            for (int32_t k = 0; k < n_sup; k++)
                if (mask >> k & 1) {
                    snprintf(names[np], sizeof(names[np]), "n%d", sup[k]);
                    pins[np] = (seam_pin){names[np], "cpu"};
                    np++;
                }
            o.pins = pins;
            o.n_pins = np;
            double t = plan_total(m, &o, &c);
            if (t >= 0 && t < best) best = t;
        }
        o.pins = NULL;
        o.n_pins = 0;
        /* with size and count constraints too, cost never loses to capability */
        o.min_subgraph_size = 1 + (int32_t)rnd(&r, 3);
        o.max_subgraph_count = (int32_t)rnd(&r, 4);
        o.placement = SEAM_PLACEMENT_CAPABILITY;
        double cap_c = plan_total(m, &o, &c);
        o.placement = SEAM_PLACEMENT_COST;
        double cost_c = plan_total(m, &o, &c);
        CHECK(cap_c >= 0 && cost_c >= 0 && cost_c <= cap_c * (1 + 1e-9) + 1e-9);
        o.min_subgraph_size = 1;
        o.max_subgraph_count = 0;
        if (n_sup <= 12) {
            graphs++;
            optimal += chosen <= best * (1 + 1e-9) + 1e-9;
            within += chosen <= best * 1.05 + 1e-9;
            if (best > 0 && chosen / best > worst) worst = chosen / best;
            if (chosen > best * 1.05 + 1e-9)
                fprintf(stderr, "cost: %d nodes (%d supported), chosen %.2f us, brute force %.2f us (search %s)\n", n, n_sup,
                        chosen, best, partition_exhaustive_limit ? "exhaustive" : "local");
        }
        free_model(m);
    }
    partition_exhaustive_limit = saved_limit;
    printf("cost property tests: %d graphs against brute force: %d optimal, %d within 5%% (worst %.3fx); %d nodes kept "
           "on the CPU by cost\n", graphs, optimal, within, worst, moved);
    CHECK(graphs > 200 && within == graphs && moved > 0);
    seam_context_free(ctx);
}

/* ---- several targets placed jointly (issue 34) ---- */

/* oracle_plan_us with a costed target per name ("t0", "t1", ...). */
static double oracle_multi_us(const struct seam_model *m, const seam_plan *plan, const costed *cs) {
    const ir_graph *g = m->graph;
    double total = 0;
    for (int32_t s = 0; s < seam_plan_subgraph_count(plan); s++) {
        seam_plan_subgraph_info sg;
        seam_plan_subgraph(plan, s, &sg);
        const costed *c = strcmp(sg.target, "cpu") != 0 ? &cs[sg.target[1] - '0'] : NULL;
        for (int32_t k = 0; k < sg.n_nodes; k++)
            total += oracle_cpu_us(g, sg.nodes[k]) * (c ? c->factor[sg.nodes[k]] : 1);
        if (!c) continue;
        double bytes = 0;
        for (int32_t k = 0; k < sg.n_inputs; k++) bytes += oracle_value_bytes(g, sg.inputs[k]);
        for (int32_t k = 0; k < sg.n_outputs; k++) bytes += oracle_value_bytes(g, sg.outputs[k]);
        total += c->launch_us + bytes / (c->gbps * 1e3);
    }
    return total;
}

static double multi_total(struct seam_model *m, const seam_partition_options *o, const costed *cs) {
    seam_plan *plan = NULL;
    if (seam_partition(m, o, &plan)) return -1;
    seam_plan_estimate e;
    seam_plan_estimate_get(plan, &e);
    double mine = oracle_multi_us(m, plan, cs);
    if (fabs(mine - e.total_us) > 1e-6 * mine + 1e-9)
        fprintf(stderr, "multi: seam estimates %.4f us, the oracle %.4f us\n", e.total_us, mine);
    CHECK(fabs(mine - e.total_us) <= 1e-6 * mine + 1e-9);
    seam_plan_free(plan);
    return mine;
}

/* Random DAGs with two and three targets of overlapping coverage, random
 * speeds, launches and transfers: the plan is never above the targets'
 * order (capability placement, which takes the first target by order),
 * nor any target alone, nor the CPU alone; it is within 5% of the brute
 * force over every place of every node (each assignment pinned, estimated
 * by the oracle); and the targets listed in reverse give the same
 * estimate within 5% (the order breaks ties only). Half the graphs with
 * the exhaustive search off. */
static void multi_target_property_tests(void) {
    seam_context *ctx;
    seam_context_create(&ctx);
    rng r = {0x9e3779b97f4a7c15ull};
    int graphs = 0, optimal = 0, within = 0, off_order = 0;
    double worst = 1;
    int32_t saved_limit = partition_exhaustive_limit;
    for (int round = 0; round < 240; round++) {
        partition_exhaustive_limit = round % 2 ? 0 : saved_limit;
        int32_t nt = 2 + (int32_t)rnd(&r, 2), n = 3 + (int32_t)rnd(&r, nt == 2 ? 6 : 4), op_of[32];
        struct seam_model *m = random_model(ctx, &r, n, op_of);
        random_shapes(m, &r);
        uint8_t ok[3][32];
        double factor[3][32];
        costed cs[3];
        seam_backend be[3];
        char names[3][4];
        const seam_backend *list[3], *rev[3];
        for (int32_t t = 0; t < nt; t++) {
            for (int32_t i = 0; i < n; i++) {
                ok[t][i] = rnd(&r, 100) < 60;
                factor[t][i] = 0.05 + rnd(&r, 1000) / 500.0;
            }
            cs[t] = (costed){ok[t], factor[t], (double)rnd(&r, 40), 0.5 + rnd(&r, 400) / 10.0};
            snprintf(names[t], sizeof(names[t]), "t%d", t);
            be[t] = (seam_backend){.abi_version = SEAM_BACKEND_ABI_VERSION, .name = names[t], .ctx = &cs[t],
                                   .supports = costed_supports, .node_cost = costed_cost, .cost_traits = costed_traits};
            list[t] = &be[t];
            rev[nt - 1 - t] = &be[t];
        }
        seam_partition_options o = seam_partition_defaults();
        o.targets = list;
        o.n_targets = nt;
        double chosen = multi_total(m, &o, cs);
        o.targets = rev;
        double reversed = multi_total(m, &o, cs);
        o.targets = list;
        o.placement = SEAM_PLACEMENT_CAPABILITY;
        double greedy = multi_total(m, &o, cs);
        o.placement = SEAM_PLACEMENT_COST;
        CHECK(chosen >= 0 && reversed >= 0 && greedy >= 0);
        CHECK(chosen <= greedy * (1 + 1e-9) + 1e-9);
        for (int32_t t = 0; t < nt; t++) { /* each target alone */
            o.targets = &list[t];
            o.n_targets = 1;
            double alone = multi_total(m, &o, cs);
            CHECK(alone >= 0 && chosen <= alone * (1 + 1e-9) + 1e-9);
        }
        o.targets = list;
        o.n_targets = nt;
        double all_cpu = 0;
        for (int32_t i = 0; i < n; i++) all_cpu += oracle_cpu_us(m->graph, i);
        CHECK(chosen <= all_cpu * (1 + 1e-9) + 1e-9);
        /* brute force: every node pinned to the CPU or to a target that supports it */
        int32_t places[32][4], n_places[32], digit[32] = {0};
        double combos = 1;
        for (int32_t i = 0; i < n; i++) {
            n_places[i] = 0;
            places[i][n_places[i]++] = -1;
            for (int32_t t = 0; t < nt; t++)
                if (ok[t][i]) places[i][n_places[i]++] = t;
            combos *= n_places[i];
        }
        if (combos > 1024) {
            free_model(m);
            continue;
        }
        seam_pin pins[32];
        char pname[32][16];
        double best = INFINITY;
        for (double c = 0; c < combos; c++) {
            for (int32_t i = 0; i < n; i++) {
                snprintf(pname[i], sizeof(pname[i]), "n%d", i);
                int32_t t = places[i][digit[i]];
                pins[i] = (seam_pin){pname[i], t < 0 ? "cpu" : names[t]};
            }
            o.pins = pins;
            o.n_pins = n;
            double tot = multi_total(m, &o, cs);
            if (tot >= 0 && tot < best) best = tot;
            for (int32_t i = 0; i < n && ++digit[i] == n_places[i]; i++) digit[i] = 0;
        }
        o.pins = NULL;
        o.n_pins = 0;
        graphs++;
        optimal += chosen <= best * (1 + 1e-9) + 1e-9;
        within += chosen <= best * 1.05 + 1e-9 && reversed <= best * 1.05 + 1e-9;
        off_order += fabs(chosen - reversed) > 1e-6 * best;
        if (best > 0 && fmax(chosen, reversed) / best > worst) worst = fmax(chosen, reversed) / best;
        if (chosen > best * 1.05 + 1e-9 || reversed > best * 1.05 + 1e-9)
            fprintf(stderr, "multi: %d nodes, %d targets, chosen %.2f us (reversed %.2f), brute force %.2f us (search %s)\n",
                    n, nt, chosen, reversed, best, partition_exhaustive_limit ? "exhaustive" : "local");
        free_model(m);
    }
    partition_exhaustive_limit = saved_limit;
    printf("multi-target property tests: %d graphs against brute force: %d optimal, %d within 5%% in both target orders "
           "(worst %.3fx); %d where the order changed the estimate\n", graphs, optimal, within, worst, off_order);
    CHECK(graphs > 150 && within == graphs);
    seam_context_free(ctx);
}

/* ---- memory as a placement constraint (issue 34) ---- */

static int32_t value_named(const ir_graph *g, const char *name) {
    for (int32_t v = 0; v < g->n_values; v++)
        if (strcmp(g->values[v].name, name) == 0) return v;
    return -1;
}

/* A device subgraph's need, from the definition in seam_partition.h and
 * the plan's public lists alone: the distinct values its nodes read that
 * it does not make (weights, boundary inputs), plus the peak of the
 * values it makes, each held from its node to its last reader inside, or
 * to the end when it is one of the subgraph's outputs. */
static double oracle_need(const struct seam_model *m, const seam_plan_subgraph_info *sg, double *weights) {
    const ir_graph *g = m->graph;
    *weights = 0;
    bool inside[64] = {0};
    for (int32_t k = 0; k < sg->n_nodes; k++) inside[sg->nodes[k]] = true;
    double held = 0, live = 0, peak = 0;
    bool seen[256] = {0};
    for (int32_t k = 0; k < sg->n_nodes; k++) {
        const ir_node *n = &g->nodes[sg->nodes[k]];
        for (int32_t j = 0; j < n->n_inputs; j++) {
            int32_t v = n->inputs[j], pr = g->values[v].producer;
            if (seen[v] || (pr >= 0 && inside[pr])) continue;
            seen[v] = true;
            if (g->values[v].flags & IR_VALUE_INIT) *weights += oracle_value_bytes(g, g->values[v].name);
            else held += oracle_value_bytes(g, g->values[v].name);
        }
        live += oracle_value_bytes(g, g->values[n->outputs[0]].name);
        if (live > peak) peak = live;
        for (int32_t j = 0; j < n->n_inputs; j++) { /* made inside, read here for the last time, not an output */
            int32_t v = n->inputs[j], pr = g->values[v].producer;
            if (pr < 0 || !inside[pr] || seen[v]) continue;
            bool later = false, leaves = false;
            for (int32_t q = k + 1; q < sg->n_nodes && !later; q++)
                for (int32_t jj = 0; jj < g->nodes[sg->nodes[q]].n_inputs; jj++)
                    later |= g->nodes[sg->nodes[q]].inputs[jj] == v;
            for (int32_t o = 0; o < sg->n_outputs; o++) leaves |= value_named(g, sg->outputs[o]) == v;
            if (!later && !leaves) {
                live -= oracle_value_bytes(g, g->values[v].name);
                seen[v] = true;
            }
        }
    }
    return held + peak;
}

/* Whether plan fits the capacities: per target, its subgraphs' weights
 * plus the largest of their other needs (one runs at a time); each
 * subgraph's memory_bytes checked against the oracle on the way. */
static bool oracle_fits(const struct seam_model *m, const seam_plan *plan, const int64_t *cap, int32_t nt) {
    double w[2] = {0, 0}, rest[2] = {0, 0};
    for (int32_t s = 0; s < seam_plan_subgraph_count(plan); s++) {
        seam_plan_subgraph_info sg;
        seam_plan_subgraph(plan, s, &sg);
        if (strcmp(sg.target, "cpu") == 0) continue;
        int32_t t = sg.target[1] - '0';
        double ws, need = oracle_need(m, &sg, &ws);
        CHECK(fabs(need + ws - (double)sg.memory_bytes) <= 1.0);
        w[t] += ws;
        rest[t] = need > rest[t] ? need : rest[t];
    }
    bool fits = true;
    for (int32_t t = 0; t < nt; t++) fits &= w[t] + rest[t] <= (double)cap[t];
    return fits;
}

/* Random DAGs, one or two costed targets with random memory sizes: no
 * plan puts more on a target than it holds (needs recomputed by the
 * oracle above and checked against the plan's memory_bytes), and the plan
 * is within 5% of the brute force over the assignments that fit. */
static void memory_property_tests(void) {
    seam_context *ctx;
    seam_context_create(&ctx);
    rng r = {0x853c49e6748fea9bull};
    int graphs = 0, within = 0, binding = 0;
    double worst = 1;
    int32_t saved_limit = partition_exhaustive_limit;
    for (int round = 0; round < 160; round++) {
        partition_exhaustive_limit = round % 2 ? 0 : saved_limit;
        int32_t nt = 1 + (int32_t)rnd(&r, 2), n = 3 + (int32_t)rnd(&r, 6), op_of[32];
        struct seam_model *m = random_model(ctx, &r, n, op_of);
        random_shapes(m, &r);
        uint8_t ok[2][32];
        double factor[2][32];
        costed cs[2];
        seam_backend be[2];
        char names[2][4];
        const seam_backend *list[2];
        int64_t cap[2];
        for (int32_t t = 0; t < nt; t++) {
            for (int32_t i = 0; i < n; i++) {
                ok[t][i] = rnd(&r, 100) < 75;
                factor[t][i] = 0.05 + rnd(&r, 500) / 500.0;
            }
            cs[t] = (costed){ok[t], factor[t], (double)rnd(&r, 10), 5 + rnd(&r, 400) / 10.0};
            snprintf(names[t], sizeof(names[t]), "t%d", t);
            be[t] = (seam_backend){.abi_version = SEAM_BACKEND_ABI_VERSION, .name = names[t], .ctx = &cs[t],
                                   .supports = costed_supports, .node_cost = costed_cost, .cost_traits = costed_traits};
            list[t] = &be[t];
            cap[t] = (int64_t)(4000 + rnd(&r, 3000000)); /* from a value or two to most of the graph */
        }
        seam_partition_options o = seam_partition_defaults();
        o.targets = list;
        o.n_targets = nt;
        o.memory_bytes = cap;
        seam_plan *plan = NULL;
        CHECK(seam_partition(m, &o, &plan) == SEAM_STATUS_OK);
        double chosen = -1;
        CHECK(plan && oracle_fits(m, plan, cap, nt));
        if (plan) chosen = oracle_multi_us(m, plan, cs);
        seam_plan_free(plan);
        /* brute force over the assignments that fit */
        int32_t places[32][3], n_places[32], digit[32] = {0};
        double combos = 1;
        for (int32_t i = 0; i < n; i++) {
            n_places[i] = 0;
            places[i][n_places[i]++] = -1;
            for (int32_t t = 0; t < nt; t++)
                if (ok[t][i]) places[i][n_places[i]++] = t;
            combos *= n_places[i];
        }
        double best = INFINITY, unlimited = INFINITY;
        seam_pin pins[32];
        char pname[32][16];
        o.memory_bytes = NULL;
        for (double c = 0; c < combos && combos <= 1024; c++) {
            for (int32_t i = 0; i < n; i++) {
                snprintf(pname[i], sizeof(pname[i]), "n%d", i);
                int32_t t = places[i][digit[i]];
                pins[i] = (seam_pin){pname[i], t < 0 ? "cpu" : names[t]};
            }
            o.pins = pins;
            o.n_pins = n;
            seam_plan *bp = NULL;
            if (seam_partition(m, &o, &bp) == SEAM_STATUS_OK) {
                bool ok_fit = oracle_fits(m, bp, cap, nt);
                double tot = oracle_multi_us(m, bp, cs);
                if (tot < unlimited) unlimited = tot;
                if (ok_fit && tot < best) best = tot;
            }
            seam_plan_free(bp);
            for (int32_t i = 0; i < n && ++digit[i] == n_places[i]; i++) digit[i] = 0;
        }
        o.pins = NULL;
        o.n_pins = 0;
        if (combos <= 1024 && chosen >= 0) {
            graphs++;
            within += chosen <= best * 1.05 + 1e-9;
            binding += best > unlimited * (1 + 1e-9);
            if (best > 0 && chosen / best > worst) worst = chosen / best;
            if (chosen > best * 1.05 + 1e-9)
                fprintf(stderr, "memory: round %d: %d nodes, %d targets, chosen %.2f us, brute force %.2f us (search %s)\n", round, n, nt,
                        chosen, best, partition_exhaustive_limit ? "exhaustive" : "local");
        }
        free_model(m);
    }
    partition_exhaustive_limit = saved_limit;
    printf("memory property tests: %d graphs against brute force over the plans that fit: %d within 5%% (worst %.3fx); "
           "the memory bound the optimum in %d\n", graphs, within, worst, binding);
    CHECK(graphs > 100 && within == graphs && binding > 20);
    seam_context_free(ctx);
}

/* A rules target's "cost": with a high transfer cost a lone supported op
 * between CPU ops stays on the CPU; with free transfers and launches the
 * plan is the capability plan. */
static void rules_cost_tests(void) {
    seam_context *ctx;
    seam_context_create(&ctx);
    rng r = {7};
    int32_t op_of[16];
    /* n0..n7 in a chain-ish DAG; the target takes Relu only */
    struct seam_model *m = random_model(ctx, &r, 10, op_of);
    random_shapes(m, &r);
    const char *costly = "{\"name\": \"npu\", \"default\": false, \"ops\": {\"Relu\": true, \"Conv\": true},"
                         " \"cost\": {\"launch_us\": 50, \"transfer_gbps\": 0.5, \"speedup\": 2}}";
    const char *free_ = "{\"name\": \"npu\", \"default\": false, \"ops\": {\"Relu\": true, \"Conv\": true},"
                        " \"cost\": {\"speedup\": 2, \"ops\": {\"Conv\": {\"speedup\": 12}}}}";
    seam_backend *b1 = NULL, *b2 = NULL;
    CHECK(seam_rules_parse(ctx, costly, "costly", &b1) == SEAM_STATUS_OK);
    CHECK(seam_rules_parse(ctx, free_, "free", &b2) == SEAM_STATUS_OK);
    const seam_backend *l1[1] = {b1}, *l2[1] = {b2};
    seam_partition_options o = seam_partition_defaults();
    o.targets = l1;
    o.n_targets = 1;
    seam_plan *p = NULL;
    CHECK(seam_partition(m, &o, &p) == SEAM_STATUS_OK);
    int32_t on_dev = 0, by_cost = 0;
    for (int32_t i = 0; p && i < seam_plan_node_count(p); i++) {
        seam_plan_node_info ni;
        seam_plan_node(p, i, &ni);
        on_dev += strcmp(ni.target, "npu") == 0;
        by_cost += ni.reason == SEAM_REASON_COST && strstr(ni.detail, "cpu") != NULL;
    }
    CHECK(on_dev == 0 && by_cost > 0); /* 50 us launches and 0.5 GB/s: nothing is worth offloading */
    seam_plan_free(p);
    /* free transfers and launches: the same plan as capability */
    o.targets = l2;
    CHECK(seam_partition(m, &o, &p) == SEAM_STATUS_OK);
    o.placement = SEAM_PLACEMENT_CAPABILITY;
    seam_plan *q = NULL;
    CHECK(seam_partition(m, &o, &q) == SEAM_STATUS_OK);
    CHECK(p && q && seam_plan_subgraph_count(p) == seam_plan_subgraph_count(q));
    for (int32_t i = 0; p && q && i < seam_plan_node_count(p); i++) {
        seam_plan_node_info a, b;
        seam_plan_node(p, i, &a);
        seam_plan_node(q, i, &b);
        CHECK(strcmp(a.target, b.target) == 0 && a.subgraph == b.subgraph);
    }
    seam_plan_free(p);
    seam_plan_free(q);
    /* bad cost objects are refused, naming the key */
    seam_backend *bad = NULL;
    CHECK(seam_rules_parse(ctx, "{\"name\": \"x\", \"cost\": {\"launch\": 1}}", "bad", &bad) == SEAM_STATUS_INVALID_ARGUMENT);
    CHECK(strstr(seam_context_last_error(ctx), "cost: unknown key 'launch'") != NULL);
    CHECK(seam_rules_parse(ctx, "{\"name\": \"x\", \"cost\": {\"speedup\": 0}}", "bad", &bad) == SEAM_STATUS_INVALID_ARGUMENT);
    CHECK(seam_rules_parse(ctx, "{\"name\": \"x\", \"cost\": {\"ops\": {\"Conv\": {\"speedup\": -1}}}}", "bad", &bad) ==
          SEAM_STATUS_INVALID_ARGUMENT);
    seam_backend_free(b1);
    seam_backend_free(b2);
    free_model(m);
    seam_context_free(ctx);
}

/* The seed's error policy wording and the callback assignment. */
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
    cost_property_tests();
    multi_target_property_tests();
    memory_property_tests();
    rules_cost_tests();
    callback_tests();
    callback_property_tests();
    json_text_tests();
    rules_tests();
    CHECK_DONE();
}
