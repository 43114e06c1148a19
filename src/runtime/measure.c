/*
 * Measured placement (seam_partition_measured, `--placement measured`): the
 * cost model's guesses replaced by this machine's times.
 *
 *   1. the capability plan (every supported node on its target);
 *   2. the model on the CPU alone, profiled: each node's time;
 *   3. a copy of the model with the capability plan applied, profiled: each
 *      device subgraph's time, its boundary copies included;
 *   4. each device subgraph slower than its nodes on the CPU goes to the
 *      CPU; a plan measured slower than the CPU alone, or than the
 *      capability plan, is replaced by it.
 * Both sessions run on random inputs (fixed seed) of the model's shapes,
 * after a warm-up, up to `runs` times within the time budget; each node
 * keeps its fastest run. The plan's notes say what was measured and what it
 * decided; its subgraphs' est_us are the measured times.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/context.h"
#include "onnx/onnx.h"
#include "partition/partition.h"
#include "backends/kernel.h"

#define MEASURE_RUNS 5

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

typedef struct feeds {
    int32_t n;
    void **data;
    seam_value_info *info;  /* the model's inputs, static */
} feeds;

static void feeds_free(feeds *f) {
    for (int32_t k = 0; k < f->n; k++) free(f->data[k]);
    free(f->data);
    free(f->info);
    memset(f, 0, sizeof(*f));
}

/* Random inputs of the model's (static) shapes; floats in [-1, 1), other
 * types zero (a valid index, a false mask). */
static seam_status make_feeds(seam_model *m, feeds *f) {
    seam_context *ctx = m->ctx;
    int32_t n = seam_model_input_count(m);
    f->data = calloc((size_t)n + 1, sizeof(void *));
    f->info = calloc((size_t)n + 1, sizeof(seam_value_info));
    if (!f->data || !f->info) return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (int32_t k = 0; k < n; k++, f->n++) {
        seam_value_info vi;
        seam_model_input(m, k, &vi);
        f->info[k] = vi; /* dims live in the model's arena */
        if (vi.rank < 0 || vi.dtype == SEAM_DTYPE_UNDEFINED || vi.dtype == SEAM_DTYPE_STRING)
            return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT,
                              "measured placement: input '%s' has no known tensor type to make data for", vi.name);
        int64_t numel = 1;
        size_t es = seam_dtype_size(vi.dtype);
        for (int32_t d = 0; d < vi.rank; d++) {
            if (vi.dims[d] < 0)
                return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT,
                                  "measured placement runs the model, so its input shapes must be known: input '%s' "
                                  "has a symbolic dim (axis %d); give it with --shape (seam run takes it from --input)",
                                  vi.name, d);
            if (vi.dims[d] > 0 && numel > (int64_t)(SEAM_MAX_TENSOR_BYTES / (es ? es : 1)) / vi.dims[d])
                return seam_error(ctx, SEAM_STATUS_UNSUPPORTED,
                                  "measured placement: input '%s' would take more than seam's limit of %zu bytes for "
                                  "one tensor", vi.name, SEAM_MAX_TENSOR_BYTES);
            numel *= vi.dims[d];
        }
        size_t bytes = (size_t)numel * es;
        f->data[k] = calloc(bytes + 1, 1);
        if (!f->data[k]) return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        if (vi.dtype == SEAM_DTYPE_FLOAT32) {
            float *x = f->data[k];
            for (int64_t i = 0; i < numel; i++) {
                s ^= s << 13, s ^= s >> 7, s ^= s << 17;
                x[i] = (float)((double)(s >> 11) / 4503599627370496.0 - 1.0);
            }
        }
    }
    return SEAM_STATUS_OK;
}

/* Runs a profiled session up to MEASURE_RUNS times within budget_ms (at
 * least once after the warm-up) and keeps each node's fastest time in ms[]
 * (graph order) and the fastest whole run in *total. */
static seam_status profile(seam_model *m, const feeds *f, const seam_session_options *so, double budget_ms, double *ms,
                           double *total, int32_t *runs) {
    seam_session *s = NULL;
    seam_status st = seam_session_create(m, so, &s);
    int32_t nn = seam_model_node_count(m), ni = seam_model_input_count(m);
    for (int32_t k = 0; k < ni && k < f->n && !st; k++) {
        const seam_value_info *vi = &f->info[k];
        st = seam_session_set_input(s, vi->name, vi->dtype, vi->rank, vi->dims, f->data[k]);
    }
    if (!st) st = seam_session_run(s); /* warm-up */
    for (int32_t i = 0; i < nn; i++) ms[i] = 1e300;
    *total = 1e300;
    *runs = 0;
    double start = now_ms();
    while (!st && *runs < MEASURE_RUNS && (*runs == 0 || now_ms() - start < budget_ms)) {
        double t0 = now_ms();
        st = seam_session_run(s);
        double t = now_ms() - t0;
        if (st) break;
        (*runs)++;
        if (t < *total) *total = t;
        for (int32_t i = 0; i < nn; i++) {
            seam_node_stats ns;
            if (seam_session_node_stats(s, i, &ns) == SEAM_STATUS_OK && ns.ms < ms[i]) ms[i] = ns.ms;
        }
    }
    seam_session_free(s);
    return st;
}

seam_status seam_partition_measured(seam_model *m, const seam_partition_options *opts, const char *const *target_options,
                                    int32_t n_target_options, int32_t n_threads, double budget_ms, seam_plan **out) {
    if (!out) return SEAM_STATUS_INVALID_ARGUMENT;
    *out = NULL;
    if (!m) return SEAM_STATUS_INVALID_ARGUMENT;
    seam_context *ctx = m->ctx;
    seam_partition_options o = opts ? *opts : seam_partition_defaults();
    o.placement = SEAM_PLACEMENT_CAPABILITY;
    seam_plan *p = NULL;
    seam_status st = seam_partition(m, &o, &p);
    if (st) return st;
    if (p->n_device_subgraphs == 0) {
        *out = p;
        return SEAM_STATUS_OK;
    }
    if (!(budget_ms > 0)) budget_ms = 2000;
    const ir_graph *g = m->graph;
    int32_t nn = g->n_nodes, ns = p->n_subgraphs;
    feeds f = {0};
    seam_model *copy = NULL;
    seam_plan *cp = NULL, *p2 = NULL;
    int32_t *copy_to_orig = NULL;
    seam_pin *pins = NULL;
    bool *move_sg = calloc((size_t)ns + 1, sizeof(bool));
    uint8_t *bytes = NULL;
    size_t n_bytes = 0;
    double *cpu_ms = calloc((size_t)nn + 1, sizeof(double)), *dev_node_ms = NULL, *dev_ms = calloc((size_t)ns + 1, sizeof(double));
    int32_t *cap_of = malloc(sizeof(int32_t) * ((size_t)nn + 1)); /* each node's capability subgraph */
    if (!cpu_ms || !dev_ms || !cap_of || !move_sg) {
        st = seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    double t_start = now_ms(), cpu_total = 0, cap_total = 0;
    int32_t cpu_runs = 0, dev_runs = 0;
    if ((st = make_feeds(m, &f))) { /* inputs it cannot make (symbolic dims, no type): placed by cost */
        if (st == SEAM_STATUS_OUT_OF_MEMORY) goto done;
        goto fallback;
    }
    /* the CPU alone, on the model as it is */
    seam_session_options so = {.n_threads = n_threads, .profile = true};
    if ((st = profile(m, &f, &so, budget_ms / 2, cpu_ms, &cpu_total, &cpu_runs))) goto fallback;
    /* the capability plan, on a copy (applying a plan rewrites the model):
     * the copy's plan is the same, its subgraphs found by their nodes' names */
    if ((st = onnx_model_pack(m, &bytes, &n_bytes))) goto done;
    if ((st = seam_model_load_buffer(ctx, bytes, n_bytes, NULL, &copy))) goto done;
    for (int32_t k = 0; k < f.n && !st; k++) /* the shapes the original was given (--shape) */
        st = seam_model_set_input_shape(copy, f.info[k].name, f.info[k].rank, f.info[k].dims);
    if (st || (st = seam_partition(copy, &o, &cp))) goto done;
    int32_t cns = cp->n_subgraphs;
    copy_to_orig = malloc(sizeof(int32_t) * ((size_t)cns + 1));
    if (!copy_to_orig) {
        st = seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    /* the copy's nodes are the original's, in the same order */
    bool same = copy->graph->n_nodes == nn;
    for (int32_t i = 0; same && i < nn; i++) same = strcmp(copy->graph->nodes[i].op_type, g->nodes[i].op_type) == 0;
    for (int32_t s = 0; s < cns; s++) {
        const plan_subgraph *sg = &cp->subgraphs[s];
        int32_t first = sg->n_nodes > 0 ? sg->nodes[0] : -1;
        copy_to_orig[s] = same && first >= 0 && p->node_target[first] >= 0 ? p->node_subgraph[first] : -1;
        /* the same nodes, or the measurement is not this subgraph's */
        if (copy_to_orig[s] >= 0 && p->subgraphs[copy_to_orig[s]].n_nodes != sg->n_nodes) same = false;
    }
    if (!same) {
        st = seam_error(ctx, SEAM_STATUS_INTERNAL, "the copy of the model was partitioned differently");
        goto fallback;
    }
    if ((st = seam_plan_apply(copy, cp, o.targets, o.n_targets, target_options, n_target_options))) goto done;
    int32_t cn = seam_model_node_count(copy);
    dev_node_ms = calloc((size_t)cn + 1, sizeof(double));
    if (!dev_node_ms) {
        st = seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    so.targets = o.targets;
    so.n_targets = o.n_targets;
    if ((st = profile(copy, &f, &so, budget_ms / 2, dev_node_ms, &cap_total, &dev_runs))) goto fallback;
    for (int32_t i = 0; i < cn; i++) {
        seam_node_info ni;
        int32_t id;
        if (seam_model_node(copy, i, &ni) == SEAM_STATUS_OK && strcmp(ni.domain, "ai.seam") == 0 &&
            strcmp(ni.op_type, "Subgraph") == 0 && sscanf(ni.name, "seam_subgraph_%d_", &id) == 1 && id >= 0 && id < cns &&
            copy_to_orig[id] >= 0)
            dev_ms[copy_to_orig[id]] += dev_node_ms[i];
    }
    for (int32_t i = 0; i < nn; i++) cap_of[i] = p->node_target[i] >= 0 ? p->node_subgraph[i] : -1;
    /* decide, subgraph by subgraph: a device subgraph of nodes placed only
     * by capability goes to the CPU when its nodes ran faster there */
    bool pinned_on_device = false;
    for (int32_t i = 0; i < nn; i++)
        pinned_on_device |= p->reason[i] == SEAM_REASON_PINNED && p->node_target[i] >= 0 && p->node_target[i] < p->n_targets;
    int32_t moved = 0, moved_nodes = 0;
    double plan_ms = 0;
    for (int32_t s = 0; s < ns; s++) {
        const plan_subgraph *sg = &p->subgraphs[s];
        double on_cpu = 0;
        bool free_to_move = true;
        for (int32_t k = 0; k < sg->n_nodes; k++) {
            on_cpu += cpu_ms[sg->nodes[k]];
            free_to_move &= p->reason[sg->nodes[k]] == SEAM_REASON_SUPPORTED;
        }
        move_sg[s] = sg->target != p->n_targets && free_to_move && dev_ms[s] > on_cpu;
        plan_ms += move_sg[s] || sg->target == p->n_targets ? on_cpu : dev_ms[s];
        if (move_sg[s]) moved++, moved_nodes += sg->n_nodes;
    }
    /* never worse than one backend alone (the CPU alone only when no pin
     * holds a node on a device) */
    bool all_cpu = !pinned_on_device && cpu_total < plan_ms && cpu_total < cap_total;
    bool cap = !all_cpu && cap_total < plan_ms;
    if (cap) moved = 0;
    for (int32_t s = 0; s < ns; s++)
        if (all_cpu && p->subgraphs[s].target != p->n_targets) {
            bool free_to_move = true;
            for (int32_t k = 0; k < p->subgraphs[s].n_nodes; k++)
                free_to_move &= p->reason[p->subgraphs[s].nodes[k]] == SEAM_REASON_SUPPORTED;
            move_sg[s] = free_to_move;
        } else if (cap) {
            move_sg[s] = false;
        }
    /* the decision as pins to the CPU, on top of the caller's: partitioning
     * again applies every constraint (min size, max count, the error policy) */
    int32_t n_pins = o.n_pins;
    for (int32_t s = 0; s < ns; s++) n_pins += move_sg[s] ? p->subgraphs[s].n_nodes : 0;
    pins = malloc(sizeof(seam_pin) * ((size_t)n_pins + 1));
    if (!pins) {
        st = seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    int32_t np = 0;
    for (int32_t k = 0; k < o.n_pins; k++) pins[np++] = o.pins[k];
    for (int32_t s = 0; s < ns; s++)
        for (int32_t k = 0; move_sg[s] && k < p->subgraphs[s].n_nodes; k++)
            pins[np++] = (seam_pin){g->nodes[p->subgraphs[s].nodes[k]].name, "cpu"};
    seam_partition_options o2 = o;
    o2.pins = pins;
    o2.n_pins = np;
    if ((st = seam_partition(m, &o2, &p2))) goto done;
    for (int32_t s = 0; s < ns; s++) {
        if (!move_sg[s]) continue;
        const plan_subgraph *sg = &p->subgraphs[s];
        double on_cpu = 0;
        for (int32_t k = 0; k < sg->n_nodes; k++) on_cpu += cpu_ms[sg->nodes[k]];
        char buf[300];
        if (all_cpu)
            snprintf(buf, sizeof(buf), "measured: the CPU alone took %.3f ms, offloading every supported node %.3f ms",
                     cpu_total, cap_total);
        else
            snprintf(buf, sizeof(buf), "measured: its %s subgraph took %.3f ms with its boundary copies, its nodes %.3f ms "
                     "on cpu", p->target_names[sg->target], dev_ms[s], on_cpu);
        const char *d = seam_arena_strdup(&p2->arena, buf);
        for (int32_t k = 0; k < sg->n_nodes; k++) {
            int32_t i = sg->nodes[k];
            if (p2->reason[i] != SEAM_REASON_PINNED || p2->node_target[i] != p2->n_targets) continue;
            p2->reason[i] = SEAM_REASON_COST;
            p2->detail[i] = d;
        }
    }
    /* per subgraph of the final plan: measured times where the subgraph is
     * one that was measured (CPU nodes, or a whole device subgraph), the cost
     * model's estimate otherwise; the plan's total is their sum */
    double total_us = 0;
    for (int32_t s = 0; s < p2->n_subgraphs; s++) {
        plan_subgraph *sg = &p2->subgraphs[s];
        double t = 0;
        if (sg->target == p2->n_targets) {
            for (int32_t k = 0; k < sg->n_nodes; k++) t += cpu_ms[sg->nodes[k]];
            sg->est_us = t * 1e3;
        } else if (sg->n_nodes > 0 && cap_of[sg->nodes[0]] >= 0 &&
                   p->subgraphs[cap_of[sg->nodes[0]]].n_nodes == sg->n_nodes) {
            sg->est_us = dev_ms[cap_of[sg->nodes[0]]] * 1e3;
        }
        total_us += sg->est_us;
    }
    p2->est = (seam_plan_estimate){all_cpu ? cpu_total * 1e3 : cap ? cap_total * 1e3 : total_us, cpu_total * 1e3,
                                   cap_total * 1e3};
    plan_note(p2, "measured placement: %d run%s on the CPU alone (%.3f ms), %d with every supported node offloaded "
              "(%.3f ms), %.0f ms measuring in all (random inputs of the model's shapes)", cpu_runs,
              cpu_runs == 1 ? "" : "s", cpu_total, dev_runs, cap_total, now_ms() - t_start);
    if (all_cpu)
        plan_note(p2, "measured placement: the CPU alone is fastest: every node placed only by capability runs on the CPU");
    else if (cap)
        plan_note(p2, "measured placement: offloading every supported node is fastest");
    else if (moved)
        plan_note(p2, "measured placement: %d device subgraph%s (%d nodes) ran faster on the CPU and moved there (the "
                  "plan, from the parts' times: %.3f ms)", moved, moved == 1 ? "" : "s", moved_nodes, plan_ms);
    seam_plan_free(p);
    p = p2;
    p2 = NULL;
    goto done;
fallback:
    /* the model could not be measured (random data a kernel refuses, a copy
     * that differs): placed by cost instead, and the plan says why */
    {
        char why[600];
        snprintf(why, sizeof(why), "%s", seam_context_last_error(ctx));
        o.placement = SEAM_PLACEMENT_COST;
        seam_plan_free(p);
        p = NULL;
        if ((st = seam_partition(m, &o, &p))) goto done;
        plan_note(p, "measured placement could not measure the model (%s): placed by the cost model instead", why);
    }
done:
    feeds_free(&f);
    seam_plan_free(cp);
    free(copy_to_orig);
    seam_model_free(copy);
    free(bytes);
    free(cpu_ms);
    free(dev_node_ms);
    free(dev_ms);
    free(cap_of);
    free(move_sg);
    free(pins);
    seam_plan_free(p2);
    if (st) {
        seam_plan_free(p);
        return st;
    }
    *out = p;
    return SEAM_STATUS_OK;
}
