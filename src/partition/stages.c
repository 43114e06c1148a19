/* Pipeline stages (seam_plan_stages, include/seam_partition.h): a plan's
 * nodes in execution order cut into contiguous stages, the slowest stage
 * or link as fast as it can be, every stage within a memory budget, and
 * the pipeline's schedule simulated for a number of micro-batches.
 *
 * The cut is a dynamic program over cut positions: best[s][e] is the
 * smallest bottleneck (the slowest stage or link so far) of s stages
 * covering positions [0, e), ties broken by the links' summed time. A
 * stage [j, e)'s time is a prefix-sum difference; its memory grows with e
 * for a fixed start j (weights and received values are added, and the live
 * values of its earlier positions do not change when it grows: a value
 * that a later position reads is held to the stage's end until that
 * position joins), so one sweep per start finds the furthest end that
 * fits. Models of more than CUT_POSITIONS nodes are cut only every
 * ceil(n / CUT_POSITIONS) positions, which keeps the program at
 * n_stages x CUT_POSITIONS^2 steps.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "partition.h"

#define CUT_POSITIONS 4096

struct seam_stages {
    const seam_plan *plan;
    seam_stage_options o;
    int32_t n_pos, n_stages;
    int32_t *order;      /* position -> node */
    int32_t *node_stage; /* node -> stage, -1 for constants */
    seam_stage_info *info;
    char *json;
    size_t json_len;
};

seam_stage_options seam_stage_defaults(void) {
    return (seam_stage_options){.n_stages = 2, .memory_bytes = 0, .link_gbits = 10, .link_latency_us = 20};
}

/* What the cut reads of the plan, per position and per value. */
typedef struct stage_model {
    const ir_graph *g;
    const seam_plan *p;
    int32_t n;          /* positions */
    int32_t *order;     /* position -> node */
    int32_t *pos;       /* node -> position, -1 for constants */
    int32_t *made_at;   /* value -> its producer's position; -1 a graph input; -2 a weight (initializer, constant) */
    int32_t *last_use;  /* value -> its last reader's position, -1 none */
    double *time;       /* prefix sums of the positions' times: time[e] - time[j] */
    double *cut;        /* cut[c]: bytes made before position c and read at or after it */
    int32_t *stamp, *freed; /* per value: scratch of the memory sweep, marked with its number */
    int32_t sweeps;
} stage_model;

static double link_us(const seam_stage_options *o, double bytes) {
    return o->link_latency_us + bytes * 8.0 / (o->link_gbits * 1e3);
}

/* Node i's own estimate on its target (the CPU's for plans made without one). */
static double own_us(const stage_model *sm, int32_t i) {
    return sm->p->node_us ? sm->p->node_us[i] : cpu_estimate_us(sm->g, &sm->g->nodes[i]);
}

/* Each position's share of its subgraph's estimate, in proportion to its
 * node's own estimate (evenly where they are all 0). */
static void position_times(stage_model *sm) {
    const seam_plan *p = sm->p;
    int32_t at = 0;
    sm->time[0] = 0;
    for (int32_t s = 0; s < p->n_subgraphs; s++) {
        const plan_subgraph *sg = &p->subgraphs[s];
        double sum = 0;
        for (int32_t k = 0; k < sg->n_nodes; k++)
            sum += own_us(sm, sg->nodes[k]);
        for (int32_t k = 0; k < sg->n_nodes; k++, at++) {
            double share = sum > 0 ? sg->est_us * own_us(sm, sg->nodes[k]) / sum : sg->est_us / sg->n_nodes;
            sm->time[at + 1] = sm->time[at] + (isfinite(share) && share > 0 ? share : 0);
        }
    }
}

static void stage_model_free(stage_model *sm) {
    free(sm->order), free(sm->pos), free(sm->made_at), free(sm->last_use), free(sm->time), free(sm->cut);
    free(sm->stamp), free(sm->freed);
}

static seam_status stage_model_init(stage_model *sm, seam_context *ctx, const seam_plan *p) {
    const ir_graph *g = p->model->graph;
    memset(sm, 0, sizeof(*sm));
    sm->g = g, sm->p = p;
    for (int32_t s = 0; s < p->n_subgraphs; s++) sm->n += p->subgraphs[s].n_nodes;
    size_t nn = (size_t)g->n_nodes + 1, nv = (size_t)g->n_values + 1, np = (size_t)sm->n + 2;
    sm->order = malloc(sizeof(int32_t) * np), sm->pos = malloc(sizeof(int32_t) * nn);
    sm->made_at = malloc(sizeof(int32_t) * nv), sm->last_use = malloc(sizeof(int32_t) * nv);
    sm->time = malloc(sizeof(double) * np), sm->cut = calloc(np, sizeof(double));
    sm->stamp = malloc(sizeof(int32_t) * nv), sm->freed = malloc(sizeof(int32_t) * nv);
    if (!sm->order || !sm->pos || !sm->made_at || !sm->last_use || !sm->time || !sm->cut || !sm->stamp || !sm->freed) {
        stage_model_free(sm);
        return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    for (int32_t i = 0; i < g->n_nodes; i++) sm->pos[i] = -1;
    int32_t at = 0;
    for (int32_t s = 0; s < p->n_subgraphs; s++)
        for (int32_t k = 0; k < p->subgraphs[s].n_nodes; k++) sm->pos[sm->order[at] = p->subgraphs[s].nodes[k]] = at, at++;
    for (int32_t v = 0; v < g->n_values; v++) {
        const ir_value *val = &g->values[v];
        int32_t pr = val->producer;
        sm->made_at[v] = (val->flags & IR_VALUE_INIT) || (pr >= 0 && sm->pos[pr] < 0) ? -2 : pr >= 0 ? sm->pos[pr] : -1;
        sm->last_use[v] = -1;
        for (int32_t c = 0; c < val->n_consumers; c++) {
            int32_t q = sm->pos[val->consumers[c]];
            if (q > sm->last_use[v]) sm->last_use[v] = q;
        }
        sm->stamp[v] = sm->freed[v] = -1;
        /* a value made at m and read until u crosses the cuts m + 1 .. u */
        if (sm->made_at[v] >= -1 && sm->last_use[v] > sm->made_at[v]) {
            double b = cost_value_bytes(val);
            sm->cut[sm->made_at[v] + 1] += b;
            sm->cut[sm->last_use[v] + 1] -= b;
        }
    }
    for (int32_t c = 1; c <= sm->n; c++) sm->cut[c] += sm->cut[c - 1];
    position_times(sm);
    return SEAM_STATUS_OK;
}

/* The stage starting at position j, grown one position at a time up to
 * `stop`: returns the furthest end e (j < e <= stop, e a multiple of step
 * or stop itself) whose memory is within budget (budget <= 0: no limit),
 * j when not even the first fits; mem gets that end's parts (weights,
 * received, peak), or the first end's when none fits. */
typedef struct stage_mem {
    double weights, received, peak;
} stage_mem;

static int32_t sweep(stage_model *sm, int32_t j, int32_t stop, int32_t step, double budget, stage_mem *mem) {
    const ir_graph *g = sm->g;
    double weights = 0, received = 0, live = 0, peak = 0;
    int32_t best = j, mark = ++sm->sweeps;
    *mem = (stage_mem){0, 0, 0};
    for (int32_t i = j; i < stop; i++) {
        const ir_node *n = &g->nodes[sm->order[i]];
        for (int32_t k = 0; k < n->n_inputs + n->n_implicit; k++) {
            int32_t v = n->inputs[k];
            if (v < 0 || sm->stamp[v] == mark || sm->made_at[v] >= j) continue;
            sm->stamp[v] = mark;
            if (sm->made_at[v] == -2) weights += cost_value_bytes(&g->values[v]);
            else received += cost_value_bytes(&g->values[v]);
        }
        for (int32_t o = 0; o < n->n_outputs; o++)
            if (n->outputs[o] >= 0) live += cost_value_bytes(&g->values[n->outputs[o]]);
        if (live > peak) peak = live;
        /* values made in the stage read here for the last time, and this
         * node's outputs that nothing reads, are freed (graph outputs are not) */
        for (int32_t k = 0; k < n->n_inputs + n->n_implicit; k++) {
            int32_t v = n->inputs[k];
            if (v >= 0 && sm->made_at[v] >= j && sm->last_use[v] == i && sm->freed[v] != mark &&
                !(g->values[v].flags & IR_VALUE_OUTPUT))
                sm->freed[v] = mark, live -= cost_value_bytes(&g->values[v]);
        }
        for (int32_t o = 0; o < n->n_outputs; o++) {
            int32_t v = n->outputs[o];
            if (v >= 0 && sm->last_use[v] < 0 && !(g->values[v].flags & IR_VALUE_OUTPUT))
                live -= cost_value_bytes(&g->values[v]);
        }
        int32_t e = i + 1;
        if (e != stop && e % step) continue;
        if (budget > 0 && weights + received + peak > budget) {
            if (best == j) *mem = (stage_mem){weights, received, peak};
            break;
        }
        best = e;
        *mem = (stage_mem){weights, received, peak};
    }
    return best;
}

static double mem_total(const stage_mem *m) { return m->weights + m->received + m->peak; }

/* A byte count as int64 (dims up to 2^40 each can multiply past it). */
static int64_t bytes_i64(double v) { return v >= 9.2e18 ? INT64_MAX : v > 0 ? (int64_t)v : 0; }

/* Why no cut fits, into the context: the node that alone needs more than
 * the budget, or how many stages the budget needs. */
static seam_status no_cut(stage_model *sm, seam_context *ctx, const seam_stage_options *o, const int32_t *reach,
                          const int32_t *cuts, int32_t n_cuts, int32_t step) {
    for (int32_t i = 0; step == 1 && i < sm->n; i++) {
        stage_mem m;
        if (sweep(sm, i, i + 1, 1, (double)o->memory_bytes, &m) == i) {
            const ir_node *n = &sm->g->nodes[sm->order[i]];
            return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT,
                              "node %d '%s' (%s) alone needs %.0f bytes (weights %.0f, inputs %.0f, outputs %.0f), more "
                              "than a stage's memory of %lld bytes: no number of stages fits it",
                              sm->order[i], n->name ? n->name : "", n->op_type, mem_total(&m), m.weights, m.received,
                              m.peak, (long long)o->memory_bytes);
        }
    }
    /* the fewest stages that fit: a shortest path over the cuts */
    int32_t *fewest = malloc(sizeof(int32_t) * ((size_t)n_cuts + 1));
    if (!fewest) return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    for (int32_t k = 0; k < n_cuts; k++) fewest[k] = k ? INT32_MAX : 0;
    for (int32_t k = 0; k < n_cuts; k++)
        for (int32_t e = k + 1; fewest[k] < INT32_MAX && e < n_cuts && cuts[e] <= reach[k]; e++)
            if (fewest[k] + 1 < fewest[e]) fewest[e] = fewest[k] + 1;
    int32_t need = fewest[n_cuts - 1];
    free(fewest);
    if (need == INT32_MAX)
        return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT,
                          "no cut of the model fits a stage's memory of %lld bytes at the %d-node granularity this "
                          "model's size allows", (long long)o->memory_bytes, step);
    return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT,
                      "%d stages cannot hold the model in %lld bytes each: it needs at least %d (or more memory a stage)",
                      o->n_stages, (long long)o->memory_bytes, need);
}

/* The dynamic program (see the top of the file) over the allowed cuts;
 * ends[s] the end position of stage s. */
static seam_status best_cut(stage_model *sm, seam_context *ctx, const seam_stage_options *o, int32_t *ends) {
    int32_t S = o->n_stages, step = sm->n > CUT_POSITIONS ? (sm->n + CUT_POSITIONS - 1) / CUT_POSITIONS : 1;
    int32_t n_cuts = (sm->n + step - 1) / step + 1;
    int32_t *cuts = malloc(sizeof(int32_t) * (size_t)n_cuts), *reach = malloc(sizeof(int32_t) * (size_t)n_cuts);
    double *bott = malloc(sizeof(double) * (size_t)n_cuts * (size_t)(S + 1));
    double *links = malloc(sizeof(double) * (size_t)n_cuts * (size_t)(S + 1));
    int32_t *from = malloc(sizeof(int32_t) * (size_t)n_cuts * (size_t)(S + 1));
    seam_status st = SEAM_STATUS_OK;
    if (!cuts || !reach || !bott || !links || !from) {
        st = seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    for (int32_t k = 0; k < n_cuts; k++) cuts[k] = k == n_cuts - 1 ? sm->n : k * step;
    for (int32_t k = 0; k + 1 < n_cuts; k++) {
        stage_mem m;
        reach[k] = o->memory_bytes > 0 ? sweep(sm, cuts[k], sm->n, step, (double)o->memory_bytes, &m) : sm->n;
    }
    reach[n_cuts - 1] = sm->n;
    for (size_t k = 0; k < (size_t)n_cuts * (size_t)(S + 1); k++) bott[k] = INFINITY, links[k] = INFINITY, from[k] = -1;
    bott[0] = 0, links[0] = 0;
    for (int32_t s = 1; s <= S; s++) {
        const double *pb = bott + (size_t)(s - 1) * (size_t)n_cuts, *pl = links + (size_t)(s - 1) * (size_t)n_cuts;
        double *cb = bott + (size_t)s * (size_t)n_cuts, *cl = links + (size_t)s * (size_t)n_cuts;
        int32_t *cf = from + (size_t)s * (size_t)n_cuts;
        for (int32_t j = 0; j + 1 < n_cuts; j++) {
            if (!isfinite(pb[j])) continue;
            double in = s > 1 ? link_us(o, sm->cut[cuts[j]]) : 0, base = pb[j] > in ? pb[j] : in;
            for (int32_t e = j + 1; e < n_cuts && cuts[e] <= reach[j]; e++) {
                double t = sm->time[cuts[e]] - sm->time[cuts[j]], b = base > t ? base : t, l = pl[j] + in;
                if (b < cb[e] || (b == cb[e] && l < cl[e])) cb[e] = b, cl[e] = l, cf[e] = j;
            }
        }
    }
    if (!isfinite(bott[(size_t)S * (size_t)n_cuts + (size_t)n_cuts - 1])) {
        st = no_cut(sm, ctx, o, reach, cuts, n_cuts, step);
        goto done;
    }
    for (int32_t s = S, e = n_cuts - 1; s >= 1; s--) {
        ends[s - 1] = cuts[e];
        e = from[(size_t)s * (size_t)n_cuts + (size_t)e];
    }
done:
    free(cuts), free(reach), free(bott), free(links), free(from);
    return st;
}

seam_status seam_plan_stages(const seam_plan *plan, const seam_stage_options *opts, seam_stages **out) {
    if (!out) return SEAM_STATUS_INVALID_ARGUMENT;
    *out = NULL;
    if (!plan || !opts) return SEAM_STATUS_INVALID_ARGUMENT;
    seam_context *ctx = plan->model->ctx;
    seam_stage_options o = *opts;
    if (o.n_stages < 1 || o.n_stages > 4096)
        return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "stages: %d stages asked; 1 to 4096 can be", o.n_stages);
    if (o.memory_bytes < 0 || !(o.link_gbits > 0) || !isfinite(o.link_gbits) || !(o.link_latency_us >= 0) ||
        !isfinite(o.link_latency_us))
        return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT,
                          "stages: the memory must be >= 0, the link's bandwidth > 0 and its latency >= 0 (finite)");
    stage_model sm;
    seam_status st = stage_model_init(&sm, ctx, plan);
    if (st) return st;
    if (sm.n < o.n_stages) {
        stage_model_free(&sm);
        return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "stages: %d stages need at least %d nodes; the plan runs %d",
                          o.n_stages, o.n_stages, sm.n);
    }
    seam_stages *r = calloc(1, sizeof(*r));
    int32_t *ends = malloc(sizeof(int32_t) * (size_t)o.n_stages);
    if (r) {
        r->node_stage = malloc(sizeof(int32_t) * ((size_t)plan->model->graph->n_nodes + 1));
        r->info = calloc((size_t)o.n_stages, sizeof(seam_stage_info));
    }
    if (!r || !ends || !r->node_stage || !r->info) {
        st = seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        goto fail;
    }
    if ((st = best_cut(&sm, ctx, &o, ends))) goto fail;
    r->plan = plan, r->o = o, r->n_pos = sm.n, r->n_stages = o.n_stages, r->order = sm.order;
    for (int32_t i = 0; i < plan->model->graph->n_nodes; i++) r->node_stage[i] = -1;
    for (int32_t s = 0, j = 0; s < o.n_stages; j = ends[s++]) {
        seam_stage_info *in = &r->info[s];
        stage_mem m;
        sweep(&sm, j, ends[s], 1, 0, &m);
        in->first = j, in->n_nodes = ends[s] - j;
        in->compute_us = sm.time[ends[s]] - sm.time[j];
        in->weight_bytes = bytes_i64(m.weights), in->receive_bytes = bytes_i64(m.received);
        in->memory_bytes = bytes_i64(mem_total(&m));
        if (s + 1 < o.n_stages) in->send_bytes = bytes_i64(sm.cut[ends[s]]), in->send_us = link_us(&o, sm.cut[ends[s]]);
        for (int32_t q = j; q < ends[s]; q++) r->node_stage[r->order[q]] = s;
    }
    free(ends);
    sm.order = NULL; /* (the result's now) */
    stage_model_free(&sm);
    *out = r;
    return SEAM_STATUS_OK;
fail:
    free(ends);
    stage_model_free(&sm);
    seam_stages_free(r);
    return st;
}

void seam_stages_free(seam_stages *st) {
    if (!st) return;
    free(st->order), free(st->node_stage), free(st->info), free(st->json), free(st);
}

int32_t seam_stages_count(const seam_stages *st) { return st ? st->n_stages : 0; }

seam_status seam_stages_stage(const seam_stages *st, int32_t k, seam_stage_info *out) {
    if (!st || !out || k < 0 || k >= st->n_stages) return SEAM_STATUS_INVALID_ARGUMENT;
    *out = st->info[k];
    return SEAM_STATUS_OK;
}

int32_t seam_stages_node_at(const seam_stages *st, int32_t pos) {
    return st && pos >= 0 && pos < st->n_pos ? st->order[pos] : -1;
}

int32_t seam_stages_node_stage(const seam_stages *st, int32_t node) {
    return st && node >= 0 && node < st->plan->model->graph->n_nodes ? st->node_stage[node] : -1;
}

seam_status seam_stages_simulate(const seam_stages *st, int32_t micro_batches, seam_stage_schedule *out, double *busy) {
    if (!st || !out || micro_batches < 1) return SEAM_STATUS_INVALID_ARGUMENT;
    if ((double)micro_batches * st->n_stages > 1e8) /* (a step per stage and micro-batch) */
        return seam_error(st->plan->model->ctx, SEAM_STATUS_INVALID_ARGUMENT,
                          "stages: %d micro-batches through %d stages: at most 1e8 steps are simulated", micro_batches,
                          st->n_stages);
    int32_t S = st->n_stages;
    /* done[k]: when stage k finished the last micro-batch; sent[k]: when
     * link k delivered it */
    double *done = calloc((size_t)S, sizeof(double)), *sent = calloc((size_t)S, sizeof(double));
    if (!done || !sent) {
        free(done), free(sent);
        return SEAM_STATUS_OUT_OF_MEMORY;
    }
    *out = (seam_stage_schedule){.micro_batches = micro_batches};
    for (int32_t m = 0; m < micro_batches; m++)
        for (int32_t k = 0; k < S; k++) {
            double ready = k ? sent[k - 1] : 0, start = ready > done[k] ? ready : done[k];
            done[k] = start + st->info[k].compute_us;
            if (k + 1 < S) sent[k] = (done[k] > sent[k] ? done[k] : sent[k]) + st->info[k].send_us;
        }
    out->makespan_us = done[S - 1];
    double work = 0;
    for (int32_t k = 0; k < S; k++) {
        const seam_stage_info *in = &st->info[k];
        out->latency_us += in->compute_us + in->send_us;
        work += in->compute_us * micro_batches;
        if (busy) busy[k] = out->makespan_us > 0 ? in->compute_us * micro_batches / out->makespan_us : 0;
        if (in->compute_us > out->interval_us) out->interval_us = in->compute_us, out->bottleneck = k, out->bottleneck_is_link = false;
        if (in->send_us > out->interval_us) out->interval_us = in->send_us, out->bottleneck = k, out->bottleneck_is_link = true;
    }
    out->throughput_per_s = out->makespan_us > 0 ? micro_batches / out->makespan_us * 1e6 : 0;
    out->bubble_fraction = out->makespan_us > 0 ? 1.0 - work / ((double)S * out->makespan_us) : 0;
    free(done), free(sent);
    return SEAM_STATUS_OK;
}

static json_t *stages_to_json(const seam_stages *st, int32_t micro_batches, seam_status *err) {
    const ir_graph *g = st->plan->model->graph;
    json_t *root = json_object(), *arr = json_array(), *link = json_object();
    json_object_set_new(root, "n_stages", json_integer(st->n_stages));
    json_object_set_new(root, "memory_limit", json_integer(st->o.memory_bytes));
    json_object_set_new(link, "gbits", json_real(st->o.link_gbits));
    json_object_set_new(link, "latency_us", json_real(st->o.link_latency_us));
    json_object_set_new(root, "link", link);
    double *busy = micro_batches > 0 ? calloc((size_t)st->n_stages, sizeof(double)) : NULL;
    seam_stage_schedule sc;
    *err = micro_batches > 0 ? busy ? seam_stages_simulate(st, micro_batches, &sc, busy) : SEAM_STATUS_OUT_OF_MEMORY
                             : SEAM_STATUS_OK;
    bool sim = micro_batches > 0 && !*err;
    if (*err) { /* (too many steps: said in the context) */
        free(busy);
        json_decref(root), json_decref(arr);
        return NULL;
    }
    for (int32_t k = 0; k < st->n_stages; k++) {
        const seam_stage_info *in = &st->info[k];
        const ir_node *a = &g->nodes[st->order[in->first]], *b = &g->nodes[st->order[in->first + in->n_nodes - 1]];
        json_t *s = json_object();
        json_object_set_new(s, "stage", json_integer(k));
        json_object_set_new(s, "first", json_integer(in->first));
        json_object_set_new(s, "nodes", json_integer(in->n_nodes));
        json_object_set_new(s, "first_node", json_string(a->name ? a->name : ""));
        json_object_set_new(s, "last_node", json_string(b->name ? b->name : ""));
        json_object_set_new(s, "compute_us", json_real(in->compute_us));
        json_object_set_new(s, "memory_bytes", json_integer(in->memory_bytes));
        json_object_set_new(s, "weight_bytes", json_integer(in->weight_bytes));
        json_object_set_new(s, "receive_bytes", json_integer(in->receive_bytes));
        json_object_set_new(s, "send_bytes", json_integer(in->send_bytes));
        json_object_set_new(s, "send_us", json_real(in->send_us));
        if (sim) json_object_set_new(s, "busy", json_real(busy[k]));
        json_array_append_new(arr, s);
    }
    json_object_set_new(root, "stages", arr);
    if (sim) {
        json_t *s = json_object();
        json_object_set_new(s, "micro_batches", json_integer(sc.micro_batches));
        json_object_set_new(s, "makespan_us", json_real(sc.makespan_us));
        json_object_set_new(s, "latency_us", json_real(sc.latency_us));
        json_object_set_new(s, "interval_us", json_real(sc.interval_us));
        json_object_set_new(s, "throughput_per_s", json_real(sc.throughput_per_s));
        json_object_set_new(s, "bubble_fraction", json_real(sc.bubble_fraction));
        json_object_set_new(s, "bottleneck", json_integer(sc.bottleneck));
        json_object_set_new(s, "bottleneck_is_link", json_boolean(sc.bottleneck_is_link));
        json_object_set_new(root, "schedule", s);
    }
    free(busy);
    return root;
}

seam_status seam_stages_json(const seam_stages *stc, int32_t micro_batches, char *buf, size_t size, size_t *needed) {
    if (!stc || (!buf && size)) return SEAM_STATUS_INVALID_ARGUMENT;
    seam_stages *st = (seam_stages *)stc; /* the text is kept between the size query and the fill */
    if (!buf || !st->json) {
        free(st->json);
        seam_status err = SEAM_STATUS_OK;
        json_t *root = stages_to_json(st, micro_batches, &err);
        st->json = root ? json_dumps(root, JSON_COMPACT | JSON_REAL_PRECISION(10)) : NULL;
        json_decref(root);
        if (!st->json) return err ? err : SEAM_STATUS_OUT_OF_MEMORY;
        st->json_len = strlen(st->json);
    }
    if (needed) *needed = st->json_len + 1;
    if (buf) {
        snprintf(buf, size, "%s", st->json);
        free(st->json), st->json = NULL;
    }
    return SEAM_STATUS_OK;
}
