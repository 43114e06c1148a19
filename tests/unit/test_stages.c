/*
 * Property tests of pipeline stages (seam_plan_stages, issue 34): random
 * DAGs with random value sizes, random stage counts, memory budgets and
 * links. Every cut seam returns is evaluated here from the definition in
 * seam_partition.h alone (each stage's time, memory and the bytes crossing
 * each cut, recomputed from the model by a plain scan, never by the code
 * under test), must fit the budget and must reach the smallest bottleneck
 * (the slowest stage or link) of every way to cut the nodes into the
 * stages, found by brute force; where no cut fits, seam must refuse,
 * naming the node that alone does not fit when there is one. The
 * simulated schedule is checked against the flow-shop makespan of
 * identical jobs (the sum of the stations' times plus M - 1 times the
 * slowest), the bubble against its definition.
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
#include "seam_partition.h"

#include "random_graph.h"

#define MAXN 12

typedef struct oracle {
    const ir_graph *g;
    int32_t n, order[MAXN], pos[MAXN];
    double gbits, latency;
} oracle;

static bool is_weight(const ir_graph *g, int32_t v) { return (g->values[v].flags & IR_VALUE_INIT) != 0; }

/* The position of value v's producer, -1 for a graph input. */
static int32_t made_at(const oracle *o, int32_t v) {
    int32_t pr = o->g->values[v].producer;
    return pr < 0 ? -1 : o->pos[pr];
}

static bool read_at(const oracle *o, int32_t q, int32_t v) {
    const ir_node *n = &o->g->nodes[o->order[q]];
    for (int32_t k = 0; k < n->n_inputs; k++)
        if (n->inputs[k] == v) return true;
    return false;
}

/* Bytes made before position c (graph inputs included) and read at or after it. */
static double cut_bytes(const oracle *o, int32_t c) {
    double b = 0;
    for (int32_t v = 0; v < o->g->n_values; v++) {
        if (is_weight(o->g, v) || made_at(o, v) >= c) continue;
        bool later = false;
        for (int32_t q = c; q < o->n && !later; q++) later = read_at(o, q, v);
        if (later) b += oracle_value_bytes(o->g, o->g->values[v].name);
    }
    return b;
}

static double link_time(const oracle *o, double bytes) { return o->latency + bytes * 8 / (o->gbits * 1e3); }

/* Stage [a, b)'s memory by the definition: distinct weights read, distinct
 * values read that it did not make, and the peak of the values it makes,
 * each held from its node to its last reader in the stage, or to the end
 * when a later stage reads it or it is a graph output. */
static double stage_memory(const oracle *o, int32_t a, int32_t b, double *weights_out) {
    const ir_graph *g = o->g;
    double weights = 0, received = 0, peak = 0;
    for (int32_t v = 0; v < g->n_values; v++) {
        bool read = false;
        for (int32_t q = a; q < b && !read; q++) read = read_at(o, q, v);
        if (!read) continue;
        if (is_weight(g, v)) weights += oracle_value_bytes(g, g->values[v].name);
        else if (made_at(o, v) < a) received += oracle_value_bytes(g, g->values[v].name);
    }
    for (int32_t t = a; t < b; t++) { /* live just after position t's node ran */
        double live = 0;
        for (int32_t v = 0; v < g->n_values; v++) {
            int32_t m = is_weight(g, v) ? -2 : made_at(o, v);
            if (m < a || m > t) continue;
            /* held: a graph output, or read at t or later (in this stage or a later
             * one), or made at t and read by nobody (freed once t ran) */
            bool needed = (g->values[v].flags & IR_VALUE_OUTPUT) != 0, read_ever = false;
            for (int32_t q = t; q < o->n && !needed; q++) needed = read_at(o, q, v);
            for (int32_t q = 0; q < o->n && !read_ever; q++) read_ever = read_at(o, q, v);
            needed |= m == t && !read_ever;
            if (needed) live += oracle_value_bytes(g, g->values[v].name);
        }
        if (live > peak) peak = live;
    }
    if (weights_out) *weights_out = weights;
    return weights + received + peak;
}

static double stage_time(const oracle *o, int32_t a, int32_t b) {
    double t = 0;
    for (int32_t q = a; q < b; q++) t += oracle_cpu_us(o->g, o->order[q]);
    return t;
}

/* The bottleneck of the cut ends[0..S) (ends[S-1] == n), or INFINITY when a stage does not fit. */
static double bottleneck(const oracle *o, const int32_t *ends, int32_t S, double budget) {
    double worst = 0;
    for (int32_t s = 0, a = 0; s < S; a = ends[s++]) {
        if (budget > 0 && stage_memory(o, a, ends[s], NULL) > budget * (1 + 1e-12)) return INFINITY;
        worst = fmax(worst, stage_time(o, a, ends[s]));
        if (s + 1 < S) worst = fmax(worst, link_time(o, cut_bytes(o, ends[s])));
    }
    return worst;
}

/* The smallest bottleneck over every cut into S stages (INFINITY: none fits). */
static double brute(const oracle *o, int32_t S, double budget) {
    int32_t ends[MAXN];
    double best = INFINITY;
    for (int32_t s = 0; s < S - 1; s++) ends[s] = s + 1;
    ends[S - 1] = o->n;
    for (;;) {
        best = fmin(best, bottleneck(o, ends, S, budget));
        int32_t s = S - 2; /* the next combination of S - 1 cuts in 1 .. n - 1 */
        while (s >= 0 && ends[s] == o->n - (S - 1 - s)) s--;
        if (s < 0) break;
        ends[s]++;
        for (int32_t t = s + 1; t < S - 1; t++) ends[t] = ends[t - 1] + 1;
    }
    return best;
}

static int cases, refused, named, fitted;

static void one_case(seam_context *ctx, rng *r) {
    int32_t n = 3 + (int32_t)rnd(r, MAXN - 3), op_of[MAXN];
    struct seam_model *m = random_model(ctx, r, n, op_of);
    random_shapes(m, r);
    seam_plan *plan = NULL;
    seam_partition_options po = seam_partition_defaults();
    if (seam_partition(m, &po, &plan)) {
        CHECK(!"partition failed");
        free_model(m);
        return;
    }
    oracle o = {.g = m->graph, .gbits = 0.5 + rnd(r, 40), .latency = rnd(r, 30)};
    seam_plan_subgraph_info sg;
    CHECK(seam_plan_subgraph_count(plan) == 1 && seam_plan_subgraph(plan, 0, &sg) == SEAM_STATUS_OK);
    o.n = sg.n_nodes;
    for (int32_t q = 0; q < o.n; q++) o.order[q] = sg.nodes[q], o.pos[sg.nodes[q]] = q;
    int32_t S = 1 + (int32_t)rnd(r, (uint32_t)(o.n < 4 ? o.n : 4));
    /* budgets from tight to loose: a share of the whole model's memory */
    double whole = stage_memory(&o, 0, o.n, NULL), budget = rnd(r, 4) == 0 ? 0 : whole * (0.15 + rnd(r, 100) / 100.0);
    seam_stage_options so = {S, (int64_t)budget, o.gbits, o.latency};
    seam_stages *st = NULL;
    seam_status rc = seam_plan_stages(plan, &so, &st);
    double want = brute(&o, S, (double)(int64_t)budget);
    cases++;
    if (!isfinite(want)) {
        refused++;
        CHECK(rc == SEAM_STATUS_INVALID_ARGUMENT && !st);
        bool alone = false; /* some node alone does not fit: the message names one that does not */
        for (int32_t q = 0; q < o.n; q++) alone |= stage_memory(&o, q, q + 1, NULL) > (double)(int64_t)budget;
        if (alone && rc) {
            named++;
            const char *msg = seam_context_last_error(ctx);
            int32_t node = -1;
            const char *at = strstr(msg, "node ");
            CHECK(at && sscanf(at, "node %d", &node) == 1 && node >= 0 && node < o.n);
            if (node >= 0 && node < o.n) CHECK(stage_memory(&o, o.pos[node], o.pos[node] + 1, NULL) > (double)(int64_t)budget);
        }
    } else {
        fitted++;
        CHECK(rc == SEAM_STATUS_OK && st && seam_stages_count(st) == S);
        int32_t ends[MAXN];
        for (int32_t s = 0; st && s < S; s++) {
            seam_stage_info in;
            CHECK(seam_stages_stage(st, s, &in) == SEAM_STATUS_OK);
            ends[s] = in.first + in.n_nodes;
            CHECK(in.n_nodes >= 1 && in.first == (s ? ends[s - 1] : 0));
            double w, mem = stage_memory(&o, in.first, ends[s], &w);
            CHECK(fabs(mem - (double)in.memory_bytes) <= 1.0 && fabs(w - (double)in.weight_bytes) <= 1.0);
            CHECK(fabs(stage_time(&o, in.first, ends[s]) - in.compute_us) <= 1e-9 * (1 + in.compute_us));
            double cb = s + 1 < S ? cut_bytes(&o, ends[s]) : 0;
            CHECK(fabs(cb - (double)in.send_bytes) <= 1.0);
            CHECK(s + 1 == S ? in.send_us == 0 : fabs(link_time(&o, cb) - in.send_us) <= 1e-9 * (1 + in.send_us));
            for (int32_t q = in.first; q < ends[s]; q++) {
                CHECK(seam_stages_node_at(st, q) == o.order[q]);
                CHECK(seam_stages_node_stage(st, o.order[q]) == s);
            }
        }
        if (st) {
            CHECK(ends[S - 1] == o.n);
            double got = bottleneck(&o, ends, S, (double)(int64_t)budget);
            if (!(fabs(got - want) <= 1e-9 * want)) fprintf(stderr, "stages: bottleneck %.6f, brute force %.6f\n", got, want);
            CHECK(fabs(got - want) <= 1e-9 * want);
            /* the schedule: identical jobs through a line of stations */
            int32_t mb = 1 + (int32_t)rnd(r, 9);
            seam_stage_schedule sc;
            double busy[MAXN], sum = 0, slow = 0, work = 0;
            CHECK(seam_stages_simulate(st, mb, &sc, busy) == SEAM_STATUS_OK);
            for (int32_t s = 0; s < S; s++) {
                seam_stage_info in;
                seam_stages_stage(st, s, &in);
                sum += in.compute_us + in.send_us;
                slow = fmax(slow, fmax(in.compute_us, in.send_us));
                work += in.compute_us * mb;
                CHECK(fabs(busy[s] - in.compute_us * mb / sc.makespan_us) <= 1e-9);
            }
            CHECK(fabs(sc.makespan_us - (sum + (mb - 1) * slow)) <= 1e-9 * sc.makespan_us);
            CHECK(fabs(sc.latency_us - sum) <= 1e-9 * sum && fabs(sc.interval_us - slow) <= 1e-9 * slow);
            CHECK(fabs(sc.bubble_fraction - (1 - work / (S * sc.makespan_us))) <= 1e-9);
            CHECK(fabs(sc.throughput_per_s - mb / sc.makespan_us * 1e6) <= 1e-6 * sc.throughput_per_s);
        }
    }
    seam_stages_free(st);
    seam_plan_free(plan);
    free_model(m);
}

/* Bad options are refused, each with a message; JSON parses back. */
static void option_tests(seam_context *ctx) {
    rng r = {99};
    int32_t op_of[MAXN];
    struct seam_model *m = random_model(ctx, &r, 6, op_of);
    random_shapes(m, &r);
    seam_plan *plan = NULL;
    seam_partition_options po = seam_partition_defaults();
    CHECK(seam_partition(m, &po, &plan) == SEAM_STATUS_OK);
    seam_stages *st = NULL;
    seam_stage_options bad[] = {{0, 0, 10, 20}, {7, 0, 10, 20}, {2, -1, 10, 20}, {2, 0, 0, 20}, {2, 0, NAN, 20},
                                {2, 0, 10, -1}, {2, 0, INFINITY, 20}, {5000, 0, 10, 20}};
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        CHECK(seam_plan_stages(plan, &bad[k], &st) == SEAM_STATUS_INVALID_ARGUMENT && !st);
        CHECK(seam_context_last_error(ctx)[0] != 0);
    }
    CHECK(seam_plan_stages(NULL, &bad[0], &st) == SEAM_STATUS_INVALID_ARGUMENT);
    seam_stage_options ok = seam_stage_defaults();
    CHECK(seam_plan_stages(plan, &ok, &st) == SEAM_STATUS_OK && seam_stages_count(st) == 2);
    CHECK(seam_stages_node_at(st, -1) == -1 && seam_stages_node_at(st, 6) == -1 && seam_stages_node_stage(st, 99) == -1);
    size_t need = 0;
    CHECK(seam_stages_json(st, 4, NULL, 0, &need) == SEAM_STATUS_OK && need > 2);
    char *text = malloc(need);
    CHECK(text && seam_stages_json(st, 4, text, need, NULL) == SEAM_STATUS_OK);
    json_error_t err;
    json_t *root = text ? json_loads(text, 0, &err) : NULL;
    CHECK(root && json_array_size(json_object_get(root, "stages")) == 2 && json_object_get(root, "schedule"));
    json_decref(root);
    free(text);
    seam_stage_schedule sc;
    CHECK(seam_stages_simulate(st, 0, &sc, NULL) == SEAM_STATUS_INVALID_ARGUMENT);
    /* a schedule past 1e8 steps is refused, not run for minutes */
    CHECK(seam_stages_simulate(st, INT32_MAX, &sc, NULL) == SEAM_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(seam_context_last_error(ctx), "at most 1e8 steps");
    CHECK(seam_stages_json(st, INT32_MAX, NULL, 0, &need) == SEAM_STATUS_INVALID_ARGUMENT);
    seam_stages_free(st);
    seam_plan_free(plan);
    free_model(m);
}

int main(void) {
    setenv("SEAM_COST_RATES", "off", 1); /* the oracle's rates are the guesses */
    seam_context *ctx;
    seam_context_create(&ctx);
    rng r = {12345};
    for (int k = 0; k < 600; k++) one_case(ctx, &r);
    printf("stage property tests: %d cases, %d cut by seam at the brute-force optimum, %d refused (%d naming the node "
           "that does not fit)\n", cases, fitted, refused, named);
    CHECK(fitted > 200 && refused > 30 && named > 10);
    option_tests(ctx);
    seam_context_free(ctx);
    CHECK_DONE();
}
