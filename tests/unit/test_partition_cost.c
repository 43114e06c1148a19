/*
 * Property tests of placement by cost (split from test_partition.c):
 * random DAGs with random costs, one to three costed targets and random
 * memory budgets. Every plan's estimate is recomputed from the cost
 * model's definition and the random inputs (oracle_multi_us), never from
 * seam's estimator; the cost plan is never worse than the capability or
 * all-CPU plans and within 5% of the brute force over the ways of placing
 * the supported nodes; with several
 * targets, the joint search equals the brute-force optimum; with memory
 * budgets, no plan puts more on a target than it holds (each subgraph's
 * need recomputed by oracle_need) and the plan is the best that fits.
 * Also the rules targets' declared costs.
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

/* A plan's estimate recomputed from the cost model's definition
 * (partition/cost.c's header) and the random inputs alone, so that the
 * property tests do not take the code under test as their oracle: a
 * node's CPU time (oracle_cpu_us, the built-in rates) on the CPU, times
 * its factor on the costed target of its subgraph's name ("t0", "t1",
 * ...); a device subgraph adds one launch and its boundary values' bytes
 * (the plan's own boundary lists, which check_plan verifies
 * independently) at gbps. */
/* The index of a test target by its name: "t0", "t1", or "t0:1" (an
 * instance of t0, standing as the second target). */
static int32_t target_index(const char *name) { return strchr(name, ':') ? 1 : name[1] - '0'; }

static double oracle_multi_us(const struct seam_model *m, const seam_plan *plan, const costed *cs) {
    const ir_graph *g = m->graph;
    double total = 0;
    for (int32_t s = 0; s < seam_plan_subgraph_count(plan); s++) {
        seam_plan_subgraph_info sg;
        seam_plan_subgraph(plan, s, &sg);
        const costed *c = strcmp(sg.target, "cpu") != 0 ? &cs[target_index(sg.target)] : NULL;
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
        seam_backend be = {.abi_version = SEAM_BACKEND_ABI_VERSION, .name = "t0", .ctx = &c, .supports = costed_supports,
                           .node_cost = costed_cost, .cost_traits = costed_traits};
        const seam_backend *list[1] = {&be};
        seam_partition_options o = seam_partition_defaults();
        o.targets = list;
        o.n_targets = 1;
        double chosen = multi_total(m, &o, &c);
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
        double capability = multi_total(m, &o, &c);
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
            double t = multi_total(m, &o, &c);
            if (t >= 0 && t < best) best = t;
        }
        o.pins = NULL;
        o.n_pins = 0;
        /* with size and count constraints too, cost never loses to capability */
        o.min_subgraph_size = 1 + (int32_t)rnd(&r, 3);
        o.max_subgraph_count = (int32_t)rnd(&r, 4);
        o.placement = SEAM_PLACEMENT_CAPABILITY;
        double cap_c = multi_total(m, &o, &c);
        o.placement = SEAM_PLACEMENT_COST;
        double cost_c = multi_total(m, &o, &c);
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
        int32_t t = target_index(sg.target);
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
    int graphs = 0, within = 0, binding = 0, instances = 0;
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
        /* every third round of two targets: two instances of one device
         * (seam_backend_instance), each with its own memory */
        seam_backend *inst = NULL;
        const char *tname[2] = {names[0], names[1]};
        if (nt == 2 && round % 3 == 2) {
            memcpy(ok[1], ok[0], sizeof(ok[0]));
            memcpy(factor[1], factor[0], sizeof(factor[0]));
            cs[1] = (costed){ok[1], factor[1], cs[0].launch_us, cs[0].gbps};
            CHECK(seam_backend_instance(ctx, &be[0], 1, NULL, 0, &inst) == SEAM_STATUS_OK && inst &&
                  !strcmp(inst->name, "t0:1"));
            list[1] = inst, tname[1] = inst->name;
            instances++;
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
                pins[i] = (seam_pin){pname[i], t < 0 ? "cpu" : tname[t]};
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
        seam_backend_free(inst);
        free_model(m);
    }
    partition_exhaustive_limit = saved_limit;
    printf("memory property tests: %d graphs against brute force over the plans that fit: %d within 5%% (worst %.3fx); "
           "the memory bound the optimum in %d; %d rounds of two instances of one target\n", graphs, within, worst, binding,
           instances);
    CHECK(graphs > 100 && within == graphs && binding > 20 && instances > 10);
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

int main(void) {
    setenv("SEAM_COST_RATES", "off", 1); /* the oracle's rates are the guesses, whatever this machine calibrated */
    cost_property_tests();
    multi_target_property_tests();
    memory_property_tests();
    rules_cost_tests();
    CHECK_DONE();
}
