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

/* What measuring finds, step by step. */
typedef struct measure {
    seam_model *m;
    seam_context *ctx;
    seam_partition_options o;    /* the caller's, placement by capability */
    seam_plan *p;                /* the capability plan (step 1) */
    int32_t nn, ns;              /* the model's nodes, p's subgraphs */
    feeds f;
    double *cpu_ms;              /* per node: its fastest time on the CPU alone (step 2) */
    double *dev_ms;              /* per subgraph of p: its time on its target with its boundary copies (step 3) */
    double cpu_total, cap_total; /* the fastest whole runs, ms */
    int32_t cpu_runs, dev_runs;
    int32_t *cap_of;             /* per node: its subgraph in p; -1 for constants */
    bool *move_sg;               /* per subgraph of p: it goes to the CPU (step 4) */
    bool all_cpu, cap;           /* the CPU alone, or p as it is, measured fastest */
    double plan_ms;              /* the plan from the parts' times */
    int32_t moved, moved_nodes;
} measure;

/* Step 2: the CPU alone, on the model as it is. *fallback: a failure of
 * the measurement (the model is then placed by cost), not of seam. */
static seam_status measure_cpu(measure *M, int32_t n_threads, double budget_ms, bool *fallback) {
    seam_status st = make_feeds(M->m, &M->f);
    if (st) { /* inputs it cannot make (symbolic dims, no type): placed by cost */
        *fallback = st != SEAM_STATUS_OUT_OF_MEMORY;
        return st;
    }
    seam_session_options so = {.n_threads = n_threads, .profile = true};
    st = profile(M->m, &M->f, &so, budget_ms / 2, M->cpu_ms, &M->cpu_total, &M->cpu_runs);
    *fallback = st != SEAM_STATUS_OK;
    return st;
}

/* Step 3: the capability plan, on a copy (applying a plan rewrites the
 * model): the copy's plan is the same, its subgraphs found by their nodes'
 * names; each device subgraph's time goes to dev_ms. *fallback as in
 * measure_cpu. */
static seam_status measure_devices(measure *M, const char *const *target_options, int32_t n_target_options,
                                   int32_t n_threads, double budget_ms, bool *fallback) {
    seam_context *ctx = M->ctx;
    const ir_graph *g = M->m->graph;
    const seam_plan *p = M->p;
    uint8_t *bytes = NULL;
    size_t n_bytes = 0;
    seam_model *copy = NULL;
    seam_plan *cp = NULL;
    int32_t *copy_to_orig = NULL;
    double *dev_node_ms = NULL;
    seam_status st;
    *fallback = false;
    if ((st = onnx_model_pack(M->m, &bytes, &n_bytes))) goto done;
    if ((st = seam_model_load_buffer(ctx, bytes, n_bytes, NULL, &copy))) goto done;
    for (int32_t k = 0; k < M->f.n && !st; k++) /* the shapes the original was given (--shape) */
        st = seam_model_set_input_shape(copy, M->f.info[k].name, M->f.info[k].rank, M->f.info[k].dims);
    if (st || (st = seam_partition(copy, &M->o, &cp))) goto done;
    int32_t cns = cp->n_subgraphs;
    copy_to_orig = malloc(sizeof(int32_t) * ((size_t)cns + 1));
    if (!copy_to_orig) {
        st = seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    /* the copy's nodes are the original's, in the same order */
    bool same = copy->graph->n_nodes == M->nn;
    for (int32_t i = 0; same && i < M->nn; i++) same = strcmp(copy->graph->nodes[i].op_type, g->nodes[i].op_type) == 0;
    for (int32_t s = 0; s < cns; s++) {
        const plan_subgraph *sg = &cp->subgraphs[s];
        int32_t first = sg->n_nodes > 0 ? sg->nodes[0] : -1;
        copy_to_orig[s] = same && first >= 0 && p->node_target[first] >= 0 ? p->node_subgraph[first] : -1;
        /* the same nodes, or the measurement is not this subgraph's */
        if (copy_to_orig[s] >= 0 && p->subgraphs[copy_to_orig[s]].n_nodes != sg->n_nodes) same = false;
    }
    if (!same) {
        st = seam_error(ctx, SEAM_STATUS_INTERNAL, "the copy of the model was partitioned differently");
        *fallback = true;
        goto done;
    }
    if ((st = seam_plan_apply(copy, cp, M->o.targets, M->o.n_targets, target_options, n_target_options))) goto done;
    int32_t cn = seam_model_node_count(copy);
    dev_node_ms = calloc((size_t)cn + 1, sizeof(double));
    if (!dev_node_ms) {
        st = seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    seam_session_options so = {.n_threads = n_threads, .profile = true, .targets = M->o.targets, .n_targets = M->o.n_targets};
    if ((st = profile(copy, &M->f, &so, budget_ms / 2, dev_node_ms, &M->cap_total, &M->dev_runs))) {
        *fallback = true;
        goto done;
    }
    for (int32_t i = 0; i < cn; i++) {
        seam_node_info ni;
        int32_t id;
        if (seam_model_node(copy, i, &ni) == SEAM_STATUS_OK && strcmp(ni.domain, "ai.seam") == 0 &&
            strcmp(ni.op_type, "Subgraph") == 0 && sscanf(ni.name, "seam_subgraph_%d_", &id) == 1 && id >= 0 && id < cns &&
            copy_to_orig[id] >= 0)
            M->dev_ms[copy_to_orig[id]] += dev_node_ms[i];
    }
done:
    seam_plan_free(cp);
    free(copy_to_orig);
    seam_model_free(copy);
    free(bytes);
    free(dev_node_ms);
    return st;
}

/* Whether every node of subgraph s of p was placed only by capability. */
static bool free_to_move(const seam_plan *p, int32_t s) {
    const plan_subgraph *sg = &p->subgraphs[s];
    bool free_ = true;
    for (int32_t k = 0; k < sg->n_nodes; k++) free_ &= p->reason[sg->nodes[k]] == SEAM_REASON_SUPPORTED;
    return free_;
}

/* Step 4: decide, subgraph by subgraph: a device subgraph of nodes placed
 * only by capability goes to the CPU when its nodes ran faster there; the
 * plan is never worse than one backend alone (the CPU alone only when no
 * pin holds a node on a device). */
static void decide(measure *M) {
    const seam_plan *p = M->p;
    for (int32_t i = 0; i < M->nn; i++) M->cap_of[i] = p->node_target[i] >= 0 ? p->node_subgraph[i] : -1;
    bool pinned_on_device = false;
    for (int32_t i = 0; i < M->nn; i++)
        pinned_on_device |= p->reason[i] == SEAM_REASON_PINNED && p->node_target[i] >= 0 && p->node_target[i] < p->n_targets;
    for (int32_t s = 0; s < M->ns; s++) {
        const plan_subgraph *sg = &p->subgraphs[s];
        double on_cpu = 0;
        for (int32_t k = 0; k < sg->n_nodes; k++) on_cpu += M->cpu_ms[sg->nodes[k]];
        M->move_sg[s] = sg->target != p->n_targets && free_to_move(p, s) && M->dev_ms[s] > on_cpu;
        M->plan_ms += M->move_sg[s] || sg->target == p->n_targets ? on_cpu : M->dev_ms[s];
        if (M->move_sg[s]) M->moved++, M->moved_nodes += sg->n_nodes;
    }
    M->all_cpu = !pinned_on_device && M->cpu_total < M->plan_ms && M->cpu_total < M->cap_total;
    M->cap = !M->all_cpu && M->cap_total < M->plan_ms;
    if (M->cap) M->moved = 0;
    for (int32_t s = 0; s < M->ns; s++)
        if (M->all_cpu && p->subgraphs[s].target != p->n_targets) M->move_sg[s] = free_to_move(p, s);
        else if (M->cap) M->move_sg[s] = false;
}

/* Step 5: the decision as pins to the CPU, on top of the caller's:
 * partitioning again applies every constraint (min size, max count, the
 * error policy). The moved nodes' reasons say what was measured. */
static seam_status replan(measure *M, seam_plan **p2_out) {
    const seam_plan *p = M->p;
    const ir_graph *g = M->m->graph;
    int32_t n_pins = M->o.n_pins;
    for (int32_t s = 0; s < M->ns; s++) n_pins += M->move_sg[s] ? p->subgraphs[s].n_nodes : 0;
    seam_pin *pins = malloc(sizeof(seam_pin) * ((size_t)n_pins + 1));
    if (!pins) return seam_error(M->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    int32_t np = 0;
    for (int32_t k = 0; k < M->o.n_pins; k++) pins[np++] = M->o.pins[k];
    for (int32_t s = 0; s < M->ns; s++)
        for (int32_t k = 0; M->move_sg[s] && k < p->subgraphs[s].n_nodes; k++)
            pins[np++] = (seam_pin){g->nodes[p->subgraphs[s].nodes[k]].name, "cpu"};
    seam_partition_options o2 = M->o;
    o2.pins = pins;
    o2.n_pins = np;
    seam_plan *p2 = NULL;
    seam_status st = seam_partition(M->m, &o2, &p2);
    free(pins);
    if (st) {
        seam_plan_free(p2);
        return st;
    }
    for (int32_t s = 0; s < M->ns; s++) {
        if (!M->move_sg[s]) continue;
        const plan_subgraph *sg = &p->subgraphs[s];
        double on_cpu = 0;
        for (int32_t k = 0; k < sg->n_nodes; k++) on_cpu += M->cpu_ms[sg->nodes[k]];
        char buf[300];
        if (M->all_cpu)
            snprintf(buf, sizeof(buf), "measured: the CPU alone took %.3f ms, offloading every supported node %.3f ms",
                     M->cpu_total, M->cap_total);
        else
            snprintf(buf, sizeof(buf), "measured: its %s subgraph took %.3f ms with its boundary copies, its nodes %.3f ms "
                     "on cpu", p->target_names[sg->target], M->dev_ms[s], on_cpu);
        const char *d = seam_arena_strdup(&p2->arena, buf);
        for (int32_t k = 0; k < sg->n_nodes; k++) {
            int32_t i = sg->nodes[k];
            if (p2->reason[i] != SEAM_REASON_PINNED || p2->node_target[i] != p2->n_targets) continue;
            p2->reason[i] = SEAM_REASON_COST;
            p2->detail[i] = d;
        }
    }
    *p2_out = p2;
    return SEAM_STATUS_OK;
}

/* Step 6: per subgraph of the final plan p2, measured times where the
 * subgraph is one that was measured (CPU nodes, or a whole device
 * subgraph), the cost model's estimate otherwise; the plan's total is
 * their sum. The notes say what was measured and decided. */
static void measured_estimate(const measure *M, seam_plan *p2, double t_start) {
    const seam_plan *p = M->p;
    double total_us = 0;
    for (int32_t s = 0; s < p2->n_subgraphs; s++) {
        plan_subgraph *sg = &p2->subgraphs[s];
        double t = 0;
        if (sg->target == p2->n_targets) {
            for (int32_t k = 0; k < sg->n_nodes; k++) t += M->cpu_ms[sg->nodes[k]];
            sg->est_us = t * 1e3;
        } else if (sg->n_nodes > 0 && M->cap_of[sg->nodes[0]] >= 0 &&
                   p->subgraphs[M->cap_of[sg->nodes[0]]].n_nodes == sg->n_nodes) {
            sg->est_us = M->dev_ms[M->cap_of[sg->nodes[0]]] * 1e3;
        }
        total_us += sg->est_us;
    }
    p2->est = (seam_plan_estimate){M->all_cpu ? M->cpu_total * 1e3 : M->cap ? M->cap_total * 1e3 : total_us,
                                   M->cpu_total * 1e3, M->cap_total * 1e3};
    plan_note(p2, "measured placement: %d run%s on the CPU alone (%.3f ms), %d with every supported node offloaded "
              "(%.3f ms), %.0f ms measuring in all (random inputs of the model's shapes)", M->cpu_runs,
              M->cpu_runs == 1 ? "" : "s", M->cpu_total, M->dev_runs, M->cap_total, now_ms() - t_start);
    if (M->all_cpu)
        plan_note(p2, "measured placement: the CPU alone is fastest: every node placed only by capability runs on the CPU");
    else if (M->cap)
        plan_note(p2, "measured placement: offloading every supported node is fastest");
    else if (M->moved)
        plan_note(p2, "measured placement: %d device subgraph%s (%d nodes) ran faster on the CPU and moved there (the "
                  "plan, from the parts' times: %.3f ms)", M->moved, M->moved == 1 ? "" : "s", M->moved_nodes, M->plan_ms);
}

/* The model could not be measured (random data a kernel refuses, a copy
 * that differs): placed by cost instead, and the plan says why. */
static seam_status place_by_cost_instead(measure *M) {
    char why[600];
    snprintf(why, sizeof(why), "%s", seam_context_last_error(M->ctx));
    M->o.placement = SEAM_PLACEMENT_COST;
    seam_plan_free(M->p);
    M->p = NULL;
    seam_status st = seam_partition(M->m, &M->o, &M->p);
    if (st) return st;
    plan_note(M->p, "measured placement could not measure the model (%s): placed by the cost model instead", why);
    return SEAM_STATUS_OK;
}

seam_status seam_partition_measured(seam_model *m, const seam_partition_options *opts, const char *const *target_options,
                                    int32_t n_target_options, int32_t n_threads, double budget_ms, seam_plan **out) {
    if (!out) return SEAM_STATUS_INVALID_ARGUMENT;
    *out = NULL;
    if (!m) return SEAM_STATUS_INVALID_ARGUMENT;
    measure M = {.m = m, .ctx = m->ctx, .o = opts ? *opts : seam_partition_defaults()};
    M.o.placement = SEAM_PLACEMENT_CAPABILITY;
    seam_status st = seam_partition(m, &M.o, &M.p); /* step 1 */
    if (st) return st;
    if (M.p->n_device_subgraphs == 0) {
        *out = M.p;
        return SEAM_STATUS_OK;
    }
    if (!(budget_ms > 0)) budget_ms = 2000;
    M.nn = m->graph->n_nodes;
    M.ns = M.p->n_subgraphs;
    M.move_sg = calloc((size_t)M.ns + 1, sizeof(bool));
    M.cpu_ms = calloc((size_t)M.nn + 1, sizeof(double));
    M.dev_ms = calloc((size_t)M.ns + 1, sizeof(double));
    M.cap_of = malloc(sizeof(int32_t) * ((size_t)M.nn + 1));
    if (!M.cpu_ms || !M.dev_ms || !M.cap_of || !M.move_sg) {
        st = seam_error(m->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    double t_start = now_ms();
    bool fallback = false;
    st = measure_cpu(&M, n_threads, budget_ms, &fallback);
    if (!st) st = measure_devices(&M, target_options, n_target_options, n_threads, budget_ms, &fallback);
    if (st) {
        if (fallback) st = place_by_cost_instead(&M);
        goto done;
    }
    decide(&M);
    seam_plan *p2 = NULL;
    if ((st = replan(&M, &p2))) goto done;
    measured_estimate(&M, p2, t_start);
    seam_plan_free(M.p);
    M.p = p2;
done:
    feeds_free(&M.f);
    free(M.cpu_ms);
    free(M.dev_ms);
    free(M.cap_of);
    free(M.move_sg);
    if (st) {
        seam_plan_free(M.p);
        return st;
    }
    *out = M.p;
    return SEAM_STATUS_OK;
}
