/* Accuracy chosen per subgraph (seam_quantizer_keep_within, seam_quantize.h):
 * which subgraphs of a quantized model stay in float so that the model is
 * within an error the caller names. The CLI's --max-error and Python's
 * seam.quantize(max_error=...) both come here.
 *
 * The error of a model is the largest, over the calibration sets and the
 * float32 outputs, of max |y - y_fp32| / max |y_fp32|. The whole model
 * quantized is tried first; if it is off by more than asked, it is
 * partitioned for the targets, and each subgraph holding quantized nodes
 * is measured quantized alone (every other node in float). The subgraphs
 * go back to float worst first until the model is within the bound (or
 * every one is back). Every run is on the CPU kernels, with QDQ units made
 * first, so int8 runs as int8 there. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "runtime/quantize.h"
#include "seam_partition.h"

/* The float32 outputs of each set on a model. */
typedef struct outputs {
    int32_t n_sets, n_out;
    float **y;      /* [set * n_out + o], NULL for an output that is not float32 */
    int64_t *numel; /* [o] */
} outputs;

static void outputs_free(outputs *o) {
    for (int32_t k = 0; o->y && k < o->n_sets * o->n_out; k++) free(o->y[k]);
    free(o->y), free(o->numel);
    memset(o, 0, sizeof(*o));
}

typedef struct sets {
    int32_t n;
    seam_calibration_bind_fn bind;
    void *user;
    int32_t threads;
} sets;

/* Runs m on every set; its outputs into *o when ref is NULL, else its
 * error against ref into *err. */
static seam_status run_sets(seam_model *m, const sets *c, outputs *o, const outputs *ref, double *err) {
    seam_session_options so;
    memset(&so, 0, sizeof(so));
    so.n_threads = c->threads;
    seam_session *s = NULL;
    seam_status st = seam_model_fuse_qdq(m, SEAM_QDQ_UNITS | SEAM_QDQ_FOLD, NULL);
    if (!st) st = seam_session_create(m, &so, &s);
    int32_t n_out = seam_model_output_count(m);
    if (!st && !ref) {
        o->n_sets = c->n, o->n_out = n_out;
        o->y = calloc((size_t)(c->n * n_out) + 1, sizeof(float *));
        o->numel = calloc((size_t)n_out + 1, sizeof(int64_t));
        if (!o->y || !o->numel) st = SEAM_STATUS_OUT_OF_MEMORY;
    }
    if (err) *err = 0;
    for (int32_t k = 0; !st && k < c->n; k++) {
        if ((st = c->bind(c->user, k, s)) || (st = seam_session_run(s))) break;
        for (int32_t i = 0; !st && i < n_out; i++) {
            seam_tensor_view v;
            if ((st = seam_session_output(s, i, &v)) || v.dtype != SEAM_DTYPE_FLOAT32) continue;
            int64_t n = (int64_t)(v.nbytes / sizeof(float));
            const float *y = v.data;
            if (!ref) {
                o->numel[i] = n;
                if (!(o->y[k * n_out + i] = malloc(v.nbytes + 1))) st = SEAM_STATUS_OUT_OF_MEMORY;
                else memcpy(o->y[k * n_out + i], y, v.nbytes);
                continue;
            }
            const float *r = ref->y[k * n_out + i];
            if (!r || ref->numel[i] != n) continue;
            double big = 0, d = 0;
            for (int64_t e = 0; e < n; e++) {
                big = fmax(big, fabs((double)r[e]));
                d = fmax(d, fabs((double)y[e] - (double)r[e]));
            }
            double rel = d / (big > 0 ? big : 1e-30);
            *err = fmax(*err, rel != rel ? INFINITY : rel);
        }
    }
    seam_session_free(s);
    return st;
}

/* The error of q's variant leaving `exclude` in float; -1 on failure. */
static double variant_error(seam_quantizer *q, const char *const *exclude, int32_t n, const sets *c, const outputs *ref,
                            seam_status *st) {
    seam_model *v = NULL;
    double e = -1;
    if (!(*st = seam_quantizer_variant(q, exclude, n, &v, NULL))) *st = run_sets(v, c, NULL, ref, &e);
    seam_model_free(v);
    return *st ? -1 : e;
}

typedef struct group {
    int32_t id, n_nodes, n_names;
    const char *target;
    const char **names; /* the float model's nodes in it */
    double alone;       /* its error quantized alone */
    bool fp32;
} group;

static int cmp_group(const void *a, const void *b) {
    double x = ((const group *)a)->alone, y = ((const group *)b)->alone;
    return (x < y) - (x > y);
}

static bool is_quantized_op(const char *op) {
    return !strcmp(op, "QLinearConv") || !strcmp(op, "QLinearMatMul") || !strcmp(op, "QuantizeLinear") ||
           !strcmp(op, "DequantizeLinear") || !strcmp(op, "MatMulInteger") || !strcmp(op, "DynamicQuantizeLinear");
}

/* The subgraphs of the whole model quantized (rewritten and partitioned as
 * seam_partition does after seam_model_rewrite), each with the names of
 * the float model's nodes it holds; only those with quantized nodes. */
static seam_status quantized_groups(seam_quantizer *q, const seam_partition_options *opts, const seam_model *fm,
                                    group **out, int32_t *n_out, seam_plan **plan_out, seam_model **model_out) {
    seam_model *v = NULL;
    seam_status st = seam_quantizer_variant(q, NULL, 0, &v, NULL);
    if (!st) st = seam_model_fuse_qdq(v, SEAM_QDQ_UNITS | SEAM_QDQ_FOLD, NULL);
    if (!st) st = seam_model_rewrite(v, opts, NULL);
    seam_plan *plan = NULL;
    if (!st) st = seam_partition(v, opts, &plan);
    int32_t ns = st ? 0 : seam_plan_subgraph_count(plan), n = 0;
    group *g = calloc((size_t)ns + 1, sizeof(group));
    if (!st && !g) st = SEAM_STATUS_OUT_OF_MEMORY;
    int32_t nfm = seam_model_node_count(fm);
    for (int32_t s = 0; !st && s < ns; s++) {
        seam_plan_subgraph_info si;
        seam_plan_subgraph(plan, s, &si);
        group *gr = &g[n];
        *gr = (group){si.id, si.n_nodes, 0, si.target, calloc((size_t)si.n_nodes + 1, sizeof(char *)), 0, false};
        if (!gr->names) {
            st = SEAM_STATUS_OUT_OF_MEMORY;
            break;
        }
        bool quantized = false;
        for (int32_t k = 0; k < si.n_nodes; k++) {
            seam_plan_node_info ni;
            seam_plan_node(plan, si.nodes[k], &ni);
            quantized |= is_quantized_op(ni.op_type);
            for (int32_t i = 0; i < nfm; i++) {
                seam_node_info fi;
                if (!seam_model_node(fm, i, &fi) && !strcmp(fi.name, ni.name)) {
                    gr->names[gr->n_names++] = fi.name;
                    break;
                }
            }
        }
        if (quantized && gr->n_names) n++;
        else free(gr->names);
    }
    /* (the plan reads v: the caller frees both, the plan first) */
    *out = g, *n_out = n, *plan_out = plan, *model_out = v;
    return st;
}

/* Every node name of fm but those in g. */
static int32_t names_outside(const seam_model *fm, const group *g, const char **out) {
    int32_t n = 0;
    for (int32_t i = 0; i < seam_model_node_count(fm); i++) {
        seam_node_info fi;
        if (seam_model_node(fm, i, &fi)) continue;
        bool inside = false;
        for (int32_t k = 0; k < g->n_names && !inside; k++) inside = g->names[k] == fi.name || !strcmp(g->names[k], fi.name);
        if (!inside) out[n++] = fi.name;
    }
    return n;
}

static void say(char *buf, size_t len, size_t *at, const char *fmt, ...) {
    if (!buf || !len || *at >= len - 1) return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(buf + *at, len - *at, fmt, ap);
    va_end(ap);
    if (w > 0) *at = (size_t)w < len - *at ? *at + (size_t)w : len - 1;
}

seam_status seam_quantizer_keep_within(seam_quantizer *q, const seam_partition_options *opts, double max_error,
                                       int32_t n_sets, seam_calibration_bind_fn bind, void *user, double *error_out,
                                       char *report, size_t report_len) {
    if (report && report_len) report[0] = 0;
    if (!q || !opts || !bind || n_sets < 1 || !(max_error > 0) || !isfinite(max_error))
        return seam_error(q ? q->ctx : NULL, SEAM_STATUS_INVALID_ARGUMENT, "keep_within: %s",
                          !q ? "no quantizer" : !opts ? "no partition options" : !bind ? "no calibration binder"
                          : n_sets < 1 ? "no calibration sets: the error is measured on them"
                                       : "the error bound must be a finite number above 0");
    if (q->finished) return seam_error(q->ctx, SEAM_STATUS_INVALID_ARGUMENT, "keep_within: the quantizer has finished");
    const seam_model *fm = q->m;
    sets c = {n_sets, bind, user, q->o.n_threads};
    outputs ref;
    memset(&ref, 0, sizeof(ref));
    int32_t nfm = seam_model_node_count(fm);
    const char **all = calloc((size_t)nfm + 1, sizeof(char *)), **ex = calloc((size_t)nfm + 1, sizeof(char *));
    if (!all || !ex) return free(all), free(ex), seam_error(q->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    for (int32_t i = 0; i < nfm; i++) {
        seam_node_info fi;
        all[i] = seam_model_node(fm, i, &fi) ? "" : fi.name;
    }
    seam_model *f = NULL;
    seam_status st = seam_quantizer_variant(q, all, nfm, &f, NULL); /* the float model itself */
    if (!st) st = run_sets(f, &c, &ref, NULL, NULL);
    seam_model_free(f);
    double err = st ? -1 : variant_error(q, NULL, 0, &c, &ref, &st);
    group *g = NULL;
    int32_t ng = 0, n_ex = 0;
    seam_plan *plan = NULL;
    seam_model *pm = NULL;
    if (!st && err > max_error) st = quantized_groups(q, opts, fm, &g, &ng, &plan, &pm);
    for (int32_t k = 0; !st && k < ng; k++) g[k].alone = variant_error(q, ex, names_outside(fm, &g[k], ex), &c, &ref, &st);
    if (!st && ng) qsort(g, (size_t)ng, sizeof(group), cmp_group);
    for (int32_t k = 0; !st && k < ng && err > max_error; k++) {
        g[k].fp32 = true;
        for (int32_t j = 0; j < g[k].n_names; j++) ex[n_ex++] = g[k].names[j];
        err = variant_error(q, ex, n_ex, &c, &ref, &st);
    }
    if (!st) st = seam_quantizer_exclude(q, ex, n_ex, "kept in fp32 by --max-error");
    size_t at = 0;
    if (!st) {
        for (int32_t k = 0; k < ng; k++)
            say(report, report_len, &at, "--max-error %g: subgraph %d (%s, %d nodes): %s; quantized alone it is off by %.3g%%\n",
                max_error, g[k].id, g[k].target, g[k].n_nodes, g[k].fp32 ? "kept in fp32" : "int8", 100 * g[k].alone);
        say(report, report_len, &at, "--max-error %g: the model is off by %.3g%% of its outputs' largest magnitude over %d "
            "calibration sets (%s)\n", max_error, 100 * err, n_sets, n_ex ? "subgraphs above kept in fp32" : "all of it in int8");
        if (error_out) *error_out = err;
    }
    for (int32_t k = 0; g && k < ng; k++) free(g[k].names);
    free(g), free(all), free(ex);
    seam_plan_free(plan);
    seam_model_free(pm);
    outputs_free(&ref);
    return st;
}
