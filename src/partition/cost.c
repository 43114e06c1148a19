/*
 * The cost model placement uses (seam_placement COST), in one place.
 *
 * A plan's estimated time is the sum over its subgraphs of
 *     its nodes' times on its target
 *   + for a device subgraph: one launch (cost_traits' launch_us)
 *   + for a device subgraph: the bytes of its boundary values (inputs and
 *     outputs of known shape) at the target's transfer_gbps.
 * A node's CPU time is seam's estimate from its shapes: Conv, ConvTranspose,
 * MatMul and Gemm by their multiply-adds, reductions and pools (a first
 * input over 4x the output) by the elements they read, TopK by the
 * elements it reads (or writes, if more) times log2 of the k it keeps
 * (above 2), everything else by the elements it writes, each class at
 * its rate (TopK the elementwise one), plus a fixed cost per
 * node (rates.c: guesses, or this machine's as `seam calibrate` measured
 * them). Its time on a target is that times the target's node_cost (a
 * fraction: 0.1 = ten times faster), times the target's measured scale
 * where the calibration ran it.
 *
 * The estimates rank plans; calibrated, they also tell the user what a
 * plan will take (within 2x on most unseen models: bench/RESULTS.md). A target
 * that declares nothing (node_cost 1, no launch, free transfers) can never
 * make offloading look worse, so it gets the capability plan unchanged.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "core/context.h"
#include "ops/attr.h"
#include "ops/conv_geom.h"
#include "partition/partition.h"

/* A dim not known before the run (symbolic) counts as this many: estimates
 * of a model with symbolic dims then weigh work and boundaries as for a
 * small concrete size, instead of as for an empty tensor. */
#define COST_UNKNOWN_DIM 32.0

static double dim_size(const ir_dim *d) { return d->v < 0 ? COST_UNKNOWN_DIM : (double)d->v; }

/* The input holding a product op's weights (Conv, ConvTranspose, MatMul,
 * Gemm and their quantized forms), or -1 for other ops. (The first letter
 * first: these run for every node of a million-node graph.) */
static int32_t product_weights(const char *op) {
    switch (op[0]) {
    case 'C': return !strcmp(op, "Conv") || !strcmp(op, "ConvTranspose") || !strcmp(op, "ConvInteger") ? 1 : -1;
    case 'M': return !strcmp(op, "MatMul") || !strcmp(op, "MatMulInteger") ? 1 : -1;
    case 'G': return !strcmp(op, "Gemm") ? 1 : -1;
    case 'Q': return !strcmp(op, "QLinearConv") || !strcmp(op, "QLinearMatMul") ? 3 : -1;
    }
    return -1;
}

static double elems_of(const ir_graph *g, int32_t v) {
    if (v < 0) return 0;
    const ir_type *t = &g->values[v].type;
    if (t->kind != IR_TYPE_TENSOR || t->rank < 0) return 0;
    double e = 1;
    for (int32_t d = 0; d < t->rank; d++) e *= t->dims[d].v ? dim_size(&t->dims[d]) : 1;
    return e;
}

static bool is_int8_product(const char *op) {
    return op[0] == 'Q' ? !strcmp(op, "QLinearConv") || !strcmp(op, "QLinearMatMul")
                        : !strcmp(op, "ConvInteger") || !strcmp(op, "MatMulInteger");
}

static double rnn_macs(const ir_graph *g, const ir_node *n);

/* An ints attribute absent (the default) or all ones. */
static bool all_ones(const ir_attr *a) {
    if (!a) return true;
    if (a->kind != IR_ATTR_INTS) return false;
    for (int32_t k = 0; k < a->n; k++)
        if (a->ints[k] != 1) return false;
    return true;
}
static bool is_rnn(const char *op);

/* A float Conv without groups whose windows read padding for most of
 * their taps (DeepLab's dilated convs on a small map): the share of
 * (output, tap) pairs that read the input, which is the work the CPU's
 * tap-by-tap path (and oneDNN, which skips padding) does; else 1. */
static double taps_read(const ir_graph *g, const ir_node *n, const ir_type *w) {
    if (strcmp(n->op_type, "Conv") || w->rank != 4 || n->n_inputs < 1 || n->inputs[0] < 0) return 1;
    const ir_type *x = &g->values[n->inputs[0]].type;
    if (x->kind != IR_TYPE_TENSOR || x->rank != 4) return 1;
    int64_t in[2] = {x->dims[2].v, x->dims[3].v}, ks[2] = {w->dims[2].v, w->dims[3].v};
    conv_geom geom;
    char why[160];
    if (in[0] < 1 || in[1] < 1 || ks[0] < 1 || ks[1] < 1 || !conv_geom_init(n, 2, in, ks, false, &geom, why, sizeof why))
        return 1;
    double f = conv_geom_read_fraction(&geom);
    return f >= 0 && f <= CONV_TAPS_FRACTION ? f : 1;
}

cost_class cost_node_work(const ir_graph *g, const ir_node *n, double *work) {
    const char *op = n->op_type;
    if (is_rnn(op)) {
        *work = rnn_macs(g, n);
        return COST_RNN;
    }
    double out = n->n_outputs > 0 ? elems_of(g, n->outputs[0]) : 0;
    if (n->n_outputs > 0 && n->outputs[0] >= 0 && out == 0 && g->values[n->outputs[0]].type.kind != IR_TYPE_TENSOR) out = 1;
    if (n->n_outputs == 0 || n->outputs[0] < 0) out = 1;
    int32_t wi = product_weights(op);
    /* TopK reads every element and orders the k it keeps: about log2(k)
     * comparisons an element (a full sort, the seeds' MLP's TopK of 4096
     * of 4096, is n log n), at the elementwise rate */
    if (op[0] == 'T' && !strcmp(op, "TopK") && n->n_inputs > 0) {
        double in = elems_of(g, n->inputs[0]), rows = 1, kept = out;
        const ir_type *x = &g->values[n->inputs[0]].type;
        const ir_attr *ax = node_attr(n, "axis");
        int64_t axis = ax && ax->kind == IR_ATTR_INT ? ax->i : -1;
        if (x->kind == IR_TYPE_TENSOR && x->rank > 0) {
            if (axis < 0) axis += x->rank;
            if (axis >= 0 && axis < x->rank) rows = in / dim_size(&x->dims[axis]);
        }
        double k = rows > 0 ? kept / rows : kept;
        *work = (in > out ? in : out) * (k > 2 ? log2(k) : 1);
        return COST_ELEM;
    }
    if (wi < 0) {
        /* a reduction or pool reads more than it writes: its input counts */
        double in = n->n_inputs > 0 ? elems_of(g, n->inputs[0]) : 0;
        if (in > 4 * out) {
            *work = in;
            return COST_REDUCE;
        }
        *work = out;
        return COST_ELEM;
    }
    double k = 1;
    cost_class c = is_int8_product(op) ? COST_INT8 : COST_GEMM;
    if (n->n_inputs > wi && n->inputs[wi] >= 0) {
        const ir_type *w = &g->values[n->inputs[wi]].type;
        if (w->kind == IR_TYPE_TENSOR && w->rank >= 2) {
            if (strstr(op, "Conv")) {
                for (int32_t d = 1; d < w->rank; d++) k *= w->dims[d].v ? dim_size(&w->dims[d]) : 1;
                const ir_attr *grp = node_attr(n, "group");
                if (c == COST_GEMM && !(grp && grp->kind == IR_ATTR_INT && grp->i > 1)) k *= taps_read(g, n, w);
                /* (int8 grouped convs too: the CPU runs an int8 depthwise conv on the
                 * float depthwise kernel, and a grouped one pads its GEMM's panels) */
                if (grp && grp->kind == IR_ATTR_INT && grp->i > 1) c = COST_GROUPED;
                else if (c == COST_GEMM && w->rank == 4 && w->dims[2].v == 3 && w->dims[3].v == 3 && !strcmp(op, "Conv") &&
                         all_ones(node_attr(n, "strides")) && all_ones(node_attr(n, "dilations")))
                    c = COST_CONV3;
            } else {
                int32_t kd = w->rank - 2;
                const ir_attr *tb = node_attr(n, "transB");
                if (strcmp(op, "Gemm") == 0 && tb && tb->kind == IR_ATTR_INT && tb->i) kd = w->rank - 1;
                k = w->dims[kd].v ? dim_size(&w->dims[kd]) : 1;
            }
        }
    }
    *work = out * k;
    return c;
}

static bool is_rnn(const char *op) {
    return (op[0] == 'L' && !strcmp(op, "LSTM")) || (op[0] == 'G' && !strcmp(op, "GRU")) ||
           (op[0] == 'R' && !strcmp(op, "RNN"));
}

/* LSTM/GRU/RNN: steps x batch x directions x (gates x hidden) x (input +
 * hidden) multiply-adds, from X [seq, batch, input] and W [dirs, gates x
 * hidden, input]; 0 when a rank is not the expected one. */
static double rnn_macs(const ir_graph *g, const ir_node *n) {
    if (n->n_inputs < 3 || n->inputs[0] < 0 || n->inputs[1] < 0) return 0;
    const ir_type *x = &g->values[n->inputs[0]].type, *w = &g->values[n->inputs[1]].type;
    if (x->kind != IR_TYPE_TENSOR || w->kind != IR_TYPE_TENSOR || x->rank != 3 || w->rank != 3) return 0;
    double seq = dim_size(&x->dims[0]), batch = dim_size(&x->dims[1]), in = dim_size(&x->dims[2]);
    double dirs = dim_size(&w->dims[0]), gh = dim_size(&w->dims[1]);
    const char *op = n->op_type;
    double hidden = gh / (!strcmp(op, "LSTM") ? 4 : !strcmp(op, "GRU") ? 3 : 1);
    return seq * batch * dirs * gh * (in + hidden);
}

double cpu_estimate_us(const ir_graph *g, const ir_node *n) {
    const cost_rates *r = cost_rates_get();
    double w;
    cost_class c = cost_node_work(g, n, &w);
    return r->node_us + w / r->per_us[c];
}

/* Whether an output of n (or its first input) has a dim not known before
 * the run: a symbolic one, or one that depends on the data. */
static bool has_unknown_dim(const ir_graph *g, const ir_node *n) {
    for (int32_t k = -1; k < n->n_outputs; k++) {
        int32_t v = k < 0 ? (n->n_inputs > 0 ? n->inputs[0] : -1) : n->outputs[k];
        if (v < 0) continue;
        const ir_type *t = &g->values[v].type;
        if (t->kind != IR_TYPE_TENSOR) continue;
        if (t->rank < 0) return true;
        for (int32_t d = 0; d < t->rank; d++)
            if (t->dims[d].v < 0) return true;
    }
    return false;
}

double cost_value_bytes(const ir_value *v) {
    const ir_type *t = &v->type;
    if (t->kind != IR_TYPE_TENSOR || t->rank < 0) return 0;
    double n = (double)seam_dtype_size((seam_dtype)t->elem);
    for (int32_t d = 0; d < t->rank; d++) n *= dim_size(&t->dims[d]);
    return n;
}

seam_status cost_model_init(cost_model *cm, seam_context *ctx, const struct seam_model *m, const seam_backend *const *targets,
                            int32_t n_targets, const uint64_t *supported_by) {
    const ir_graph *g = m->graph;
    memset(cm, 0, sizeof(*cm));
    cm->n_targets = n_targets;
    cm->cpu_us = calloc((size_t)g->n_nodes + 1, sizeof(double));
    cm->dev_us = calloc((size_t)g->n_nodes * (size_t)(n_targets > 0 ? n_targets : 1) + 1, sizeof(double));
    cm->launch_us = calloc((size_t)n_targets + 1, sizeof(double));
    cm->us_per_byte = calloc((size_t)n_targets + 1, sizeof(double));
    cm->stamp = malloc(sizeof(int32_t) * ((size_t)g->n_values + 1));
    cm->last_use = malloc(sizeof(int32_t) * ((size_t)g->n_values + 1));
    cm->over = calloc(1, sizeof(int64_t));
    if (!cm->cpu_us || !cm->dev_us || !cm->launch_us || !cm->us_per_byte || !cm->stamp || !cm->last_use || !cm->over) {
        cost_model_free(cm);
        return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    cm->trivial = true;
    for (int32_t t = 0; t < n_targets; t++) {
        double launch, gbps;
        backend_cost_traits(targets[t], &launch, &gbps);
        cm->launch_us[t] = isfinite(launch) && launch > 0 ? launch : 0;
        cm->us_per_byte[t] = isfinite(gbps) && gbps > 0 ? 1.0 / (gbps * 1e3) : 0;
        cm->trivial &= cm->launch_us[t] == 0 && cm->us_per_byte[t] == 0;
    }
    for (int32_t v = 0; v < g->n_values; v++) cm->stamp[v] = -1;
    double scale[64];
    for (int32_t t = 0; t < n_targets && t < 64; t++) /* an instance is measured as its device */
        scale[t] = cost_rates_target_scale(backend_instance_base(targets[t])->name);
    view_builder vb;
    view_init(&vb, m);
    seam_status st = SEAM_STATUS_OK;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        cm->cpu_us[i] = cpu_estimate_us(g, &g->nodes[i]);
        cm->n_guessed += has_unknown_dim(g, &g->nodes[i]);
        if (!supported_by || !supported_by[i]) continue;
        seam_node_view view;
        if (!view_node(&vb, i, &view)) {
            st = seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
            break;
        }
        for (int32_t t = 0; t < n_targets; t++) {
            if (!(supported_by[i] >> t & 1)) continue;
            double f = backend_node_cost(targets[t], &view);
            if (!isfinite(f) || f <= 0) f = 1;
            cm->dev_us[(size_t)i * (size_t)n_targets + (size_t)t] = cm->cpu_us[i] * f * scale[t];
            cm->trivial &= f <= 1;
        }
    }
    view_free(&vb);
    if (st) cost_model_free(cm);
    return st;
}

void cost_model_free(cost_model *cm) {
    free(cm->cpu_us);
    free(cm->dev_us);
    free(cm->launch_us);
    free(cm->us_per_byte);
    free(cm->stamp);
    free(cm->last_use);
    free(cm->over);
    memset(cm, 0, sizeof(*cm));
}

double cost_node_us(const cost_model *cm, int32_t i, int32_t target) {
    return target >= cm->n_targets ? cm->cpu_us[i] : cm->dev_us[(size_t)i * (size_t)cm->n_targets + (size_t)target];
}

/* A value's bytes count for a subgraph's boundary when it is computed at
 * run time: not an initializer, not made by a constant node. */
static bool runtime_value(const ir_graph *g, const seam_plan *p, int32_t v) {
    if (v < 0 || (g->values[v].flags & IR_VALUE_INIT)) return false;
    int32_t pr = g->values[v].producer;
    return pr < 0 || p->node_target[pr] >= 0;
}

/* Subgraph s's time; its boundary bytes in *bytes_out. Boundary values are
 * counted once per subgraph through cm->stamp (reset by cost_plan). */
static double cost_subgraph(const cost_model *cm, const seam_plan *p, int32_t s, double *bytes_out) {
    const ir_graph *g = p->model->graph;
    const plan_subgraph *sg = &p->subgraphs[s];
    double t = 0, bytes = 0;
    for (int32_t k = 0; k < sg->n_nodes; k++) t += cost_node_us(cm, sg->nodes[k], sg->target);
    for (int32_t k = 0; k < sg->n_nodes; k++) {
        const ir_node *n = &g->nodes[sg->nodes[k]];
        for (int32_t j = 0; j < n->n_inputs + n->n_implicit; j++) { /* inputs from outside, once each */
            int32_t v = n->inputs[j]; /* implicit inputs follow the inputs */
            if (!runtime_value(g, p, v) || cm->stamp[v] == s) continue;
            int32_t pr = g->values[v].producer;
            if (pr >= 0 && p->node_subgraph[pr] == s) continue;
            cm->stamp[v] = s;
            bytes += cost_value_bytes(&g->values[v]);
        }
        for (int32_t o = 0; o < n->n_outputs; o++) { /* outputs read outside or returned */
            int32_t v = n->outputs[o];
            if (v < 0) continue;
            const ir_value *val = &g->values[v];
            bool out = (val->flags & IR_VALUE_OUTPUT) != 0;
            for (int32_t c = 0; c < val->n_consumers && !out; c++) {
                int32_t j = val->consumers[c];
                out = p->node_target[j] >= 0 && p->node_subgraph[j] != s;
            }
            if (out) bytes += cost_value_bytes(&g->values[v]);
        }
    }
    if (bytes_out) *bytes_out = bytes;
    if (sg->target < cm->n_targets) t += cm->launch_us[sg->target] + bytes * cm->us_per_byte[sg->target];
    return t;
}

/* Device subgraph s's need on its target: the weights its nodes read
 * (each once), its inputs from outside, and the peak of the values it
 * makes, each held from its node to its last reader inside (to the end
 * when it leaves the subgraph). cm->stamp: s for weights and inputs
 * counted (so call it after cost_subgraph's boundary count, with a mark of
 * its own: -2 - s). */
static double need_subgraph(const cost_model *cm, const seam_plan *p, int32_t s, double *weights_out) {
    const ir_graph *g = p->model->graph;
    const plan_subgraph *sg = &p->subgraphs[s];
    double held = 0, live = 0, peak = 0, weights = 0;
    int32_t mark = -2 - s;
    for (int32_t k = 0; k < sg->n_nodes; k++) { /* the last reader of each value made here */
        const ir_node *n = &g->nodes[sg->nodes[k]];
        for (int32_t j = 0; j < n->n_inputs + n->n_implicit; j++)
            if (n->inputs[j] >= 0) cm->last_use[n->inputs[j]] = k;
        for (int32_t o = 0; o < n->n_outputs; o++)
            if (n->outputs[o] >= 0) cm->last_use[n->outputs[o]] = -1;
    }
    for (int32_t k = 0; k < sg->n_nodes; k++) {
        const ir_node *n = &g->nodes[sg->nodes[k]];
        for (int32_t j = 0; j < n->n_inputs + n->n_implicit; j++) {
            int32_t v = n->inputs[j];
            if (v < 0 || cm->stamp[v] == mark) continue;
            int32_t pr = g->values[v].producer;
            if (pr >= 0 && p->node_target[pr] >= 0 && p->node_subgraph[pr] == s) continue; /* made here */
            cm->stamp[v] = mark;
            if (!runtime_value(g, p, v)) weights += cost_value_bytes(&g->values[v]); /* a weight or a folded constant */
            else held += cost_value_bytes(&g->values[v]);                          /* a boundary input */
        }
        for (int32_t o = 0; o < n->n_outputs; o++)
            if (n->outputs[o] >= 0) live += cost_value_bytes(&g->values[n->outputs[o]]);
        peak = live > peak ? live : peak;
        for (int32_t j = 0; j < n->n_inputs + n->n_implicit; j++) { /* values made here read for the last time */
            int32_t v = n->inputs[j], pr = v >= 0 ? g->values[v].producer : -1;
            if (v < 0 || pr < 0 || p->node_target[pr] < 0 || p->node_subgraph[pr] != s || cm->last_use[v] != k)
                continue;
            bool leaves = (g->values[v].flags & IR_VALUE_OUTPUT) != 0;
            for (int32_t c = 0; c < g->values[v].n_consumers && !leaves; c++) {
                int32_t r = g->values[v].consumers[c];
                leaves = p->node_target[r] >= 0 && p->node_subgraph[r] != s;
            }
            if (!leaves) {
                live -= cost_value_bytes(&g->values[v]);
                cm->last_use[v] = -2; /* (freed once) */
            }
        }
    }
    *weights_out = weights;
    return held + peak;
}

double cost_plan(const cost_model *cm, seam_plan *p, bool store) {
    const ir_graph *g = p->model->graph;
    for (int32_t v = 0; v < g->n_values; v++) cm->stamp[v] = -1;
    double total = 0, over = 0, weights[64] = {0}, transient[64] = {0};
    for (int32_t s = 0; s < p->n_subgraphs; s++) {
        double bytes = 0, t = cost_subgraph(cm, p, s, &bytes), need = 0, w = 0;
        int32_t target = p->subgraphs[s].target;
        total += t;
        if (target < cm->n_targets && (store || (cm->capacity && cm->capacity[target] > 0))) {
            need = need_subgraph(cm, p, s, &w);
            /* a target holds the weights of all its subgraphs, and the rest of one at a time */
            weights[target] += w;
            transient[target] = need > transient[target] ? need : transient[target];
            need += w;
        }
        if (store) {
            p->subgraphs[s].est_us = t;
            p->subgraphs[s].boundary_bytes = (int64_t)bytes;
            p->subgraphs[s].need_bytes = (int64_t)need;
        }
    }
    for (int32_t t = 0; cm->capacity && t < cm->n_targets && t < 64; t++)
        if (cm->capacity[t] > 0 && weights[t] + transient[t] > (double)cm->capacity[t])
            over += weights[t] + transient[t] - (double)cm->capacity[t];
    *cm->over = over > 9e18 ? INT64_MAX : (int64_t)over;
    return total;
}

int64_t cost_target_need(const cost_model *cm, seam_plan *p, int32_t target) {
    const ir_graph *g = p->model->graph;
    for (int32_t v = 0; v < g->n_values; v++) cm->stamp[v] = -1;
    double weights = 0, transient = 0;
    for (int32_t s = 0; s < p->n_subgraphs; s++) {
        if (p->subgraphs[s].target != target) continue;
        double w = 0, need = need_subgraph(cm, p, s, &w);
        weights += w;
        transient = need > transient ? need : transient;
    }
    return (int64_t)(weights + transient);
}
