/* --precision, --calibration and --max-error (analyze, partition, run): a
 * float model quantized on the way in, as seam quantize does, and with
 * --max-error, per subgraph, kept in float where int8 would be off by more
 * than asked.
 *
 * --max-error E: the error of a model is the largest, over the calibration
 * sets and the float32 outputs, of max |y - y_fp32| / max |y_fp32|. The
 * whole model quantized is tried first; if it is off by more than E, it is
 * partitioned for the targets, and each subgraph holding quantized nodes
 * is measured quantized alone (every other node in float). The subgraphs
 * go back to float worst first until the model is within E. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib.h"
#include "cli.h"
#include "targets.h"

int precision_option(cli_targets *t, const char *cmd, int argc, char **argv, int *k) {
    const char *a = argv[*k];
    bool prec = !strcmp(a, "--precision"), cal = !strcmp(a, "--calibration"), err = !strcmp(a, "--max-error");
    if (!prec && !cal && !err) return 0;
    if (*k + 1 >= argc) {
        cli_usage(cmd, "%s needs a value", a);
        return TARGETS_USAGE;
    }
    const char *v = argv[++*k];
    if (prec) {
        if (strcmp(v, "fp32") && strcmp(v, "int8") && strcmp(v, "int8-dynamic") && strcmp(v, "bf16")) {
            cli_usage(cmd, "--precision wants fp32, int8, int8-dynamic or bf16, got '%s'", v);
            return TARGETS_USAGE;
        }
        t->precision = v;
    } else if (cal) {
        t->calibration = v;
    } else {
        char *end;
        double e = strtod(v, &end);
        if (*end == '%') e /= 100, end++;
        if (*end || end == v || !(e > 0 && e < 1e9)) {
            cli_usage(cmd, "--max-error wants a relative error above 0 (0.02 or 2%%), got '%s'", v);
            return TARGETS_USAGE;
        }
        t->max_error = e;
    }
    return 1;
}

/* The options that go together; CLI_OK or CLI_USAGE after the message. */
static int precision_usage(const cli_targets *t, const char *cmd) {
    const char *p = t->precision ? t->precision : "fp32";
    bool int8 = !strncmp(p, "int8", 4);
    if (!strcmp(p, "bf16"))
        return cli_usage(cmd, "--precision bf16 is not built yet (int8, int8-dynamic and fp32 are; docs/quantized.md)");
    if (!int8 && (t->calibration || t->max_error > 0))
        return cli_usage(cmd, "--calibration and --max-error go with --precision int8 or int8-dynamic");
    if (!strcmp(p, "int8") && !t->calibration)
        return cli_usage(cmd, "--precision int8 needs --calibration DIR (or --precision int8-dynamic)");
    if (t->max_error > 0 && !t->calibration)
        return cli_usage(cmd, "--max-error needs --calibration DIR: the error is measured on those inputs");
    if (t->no_fold && int8) return cli_usage(cmd, "--precision %s folds the model; it does not go with --no-fold", p);
    return CLI_OK;
}

/* The float32 outputs of each set on m (run on the CPU kernels). */
typedef struct outputs {
    int32_t n_sets, n_out;
    float **y;       /* [set * n_out + o], NULL for an output that is not float32 */
    int64_t *numel;  /* [o] */
} outputs;

static void outputs_free(outputs *o) {
    for (int32_t k = 0; o->y && k < o->n_sets * o->n_out; k++) free(o->y[k]);
    free(o->y), free(o->numel);
    memset(o, 0, sizeof(*o));
}

/* Runs m (QDQ units made first, so that the CPU runs them in int8) on
 * every set; the outputs into *o when ref is NULL, else the error against
 * ref into *err. */
static seam_status run_sets(seam_model *m, const cli_calib *c, int32_t threads, outputs *o, const outputs *ref,
                            double *err) {
    seam_session_options so;
    memset(&so, 0, sizeof(so));
    so.n_threads = threads;
    seam_session *s = NULL;
    seam_status st = seam_model_fuse_qdq(m, SEAM_QDQ_UNITS | SEAM_QDQ_FOLD, NULL);
    if (!st) st = seam_session_create(m, &so, &s);
    int32_t n_out = seam_model_output_count(m);
    if (!st && !ref) {
        o->n_sets = c->n_sets, o->n_out = n_out;
        o->y = calloc((size_t)(c->n_sets * n_out) + 1, sizeof(float *));
        o->numel = calloc((size_t)n_out + 1, sizeof(int64_t));
        if (!o->y || !o->numel) st = SEAM_STATUS_OUT_OF_MEMORY;
    }
    if (err) *err = 0;
    for (int32_t k = 0; !st && k < c->n_sets; k++) {
        if ((st = cli_calib_bind(c, k, s)) || (st = seam_session_run(s))) break;
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
static double variant_error(seam_quantizer *q, const char *const *exclude, int32_t n, const cli_calib *c, int32_t threads,
                            const outputs *ref, seam_status *st) {
    seam_model *v = NULL;
    double e = -1;
    if (!(*st = seam_quantizer_variant(q, exclude, n, &v, NULL))) *st = run_sets(v, c, threads, NULL, ref, &e);
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

/* The plan's subgraphs of the whole model quantized, each with the names
 * of the float model's nodes it holds; only those with quantized nodes. */
static seam_status quantized_groups(cli_targets *t, seam_quantizer *q, const seam_model *fm, group **out, int32_t *n_out,
                                    seam_plan **plan_out) {
    seam_model *v = NULL;
    seam_status st = seam_quantizer_variant(q, NULL, 0, &v, NULL);
    if (!st) st = seam_model_fuse_qdq(v, SEAM_QDQ_UNITS | SEAM_QDQ_FOLD, NULL);
    seam_plan *plan = NULL;
    if (!st) st = targets_partition(t, v, 0, &plan);
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
    seam_model_free(v);
    *out = g, *n_out = n, *plan_out = plan;
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

/* --max-error: which subgraphs stay in float. */
static seam_status keep_within(cli_targets *t, const char *cmd, seam_quantizer *q, const seam_model *fm, const cli_calib *c,
                               int32_t threads) {
    outputs ref;
    memset(&ref, 0, sizeof(ref));
    int32_t nfm = seam_model_node_count(fm);
    const char **all = calloc((size_t)nfm + 1, sizeof(char *)), **ex = calloc((size_t)nfm + 1, sizeof(char *));
    if (!all || !ex) return free(all), free(ex), SEAM_STATUS_OUT_OF_MEMORY;
    for (int32_t i = 0; i < nfm; i++) {
        seam_node_info fi;
        all[i] = seam_model_node(fm, i, &fi) ? "" : fi.name;
    }
    seam_model *f = NULL;
    seam_status st = seam_quantizer_variant(q, all, nfm, &f, NULL); /* the float model itself */
    if (!st) st = run_sets(f, c, threads, &ref, NULL, NULL);
    seam_model_free(f);
    double err = st ? -1 : variant_error(q, NULL, 0, c, threads, &ref, &st);
    group *g = NULL;
    int32_t ng = 0, n_ex = 0;
    seam_plan *plan = NULL;
    if (!st && err > t->max_error) st = quantized_groups(t, q, fm, &g, &ng, &plan);
    for (int32_t k = 0; !st && k < ng; k++) g[k].alone = variant_error(q, ex, names_outside(fm, &g[k], ex), c, threads, &ref, &st);
    if (!st && ng) qsort(g, (size_t)ng, sizeof(group), cmp_group);
    for (int32_t k = 0; !st && k < ng && err > t->max_error; k++) {
        g[k].fp32 = true;
        for (int32_t j = 0; j < g[k].n_names; j++) ex[n_ex++] = g[k].names[j];
        err = variant_error(q, ex, n_ex, c, threads, &ref, &st);
    }
    if (!st) st = seam_quantizer_exclude(q, ex, n_ex, "kept in fp32 by --max-error");
    if (!st) {
        for (int32_t k = 0; k < ng; k++)
            fprintf(stderr, "seam %s: --max-error %g: subgraph %d (%s, %d nodes): %s; quantized alone it is off by %.3g%%\n",
                    cmd, t->max_error, g[k].id, g[k].target, g[k].n_nodes, g[k].fp32 ? "kept in fp32" : "int8",
                    100 * g[k].alone);
        fprintf(stderr, "seam %s: --max-error %g: the model is off by %.3g%% of its outputs' largest magnitude over %d "
                "calibration sets (%s)\n", cmd, t->max_error, 100 * err, c->n_sets,
                n_ex ? "subgraphs above kept in fp32" : "all of it in int8");
    }
    for (int32_t k = 0; g && k < ng; k++) free(g[k].names);
    free(g), free(all), free(ex);
    seam_plan_free(plan);
    outputs_free(&ref);
    return st;
}

int targets_precision(cli_targets *t, const char *cmd, seam_context *ctx, seam_model *m) {
    int32_t threads = t->threads;
    bool quiet = t->quiet;
    int rc = precision_usage(t, cmd);
    if (rc || !t->precision || !strcmp(t->precision, "fp32")) return rc;
    bool dynamic = !strcmp(t->precision, "int8-dynamic");
    cli_calib c;
    memset(&c, 0, sizeof(c));
    if (t->calibration && (rc = cli_calib_load(cmd, ctx, m, t->calibration, &c))) return cli_calib_free(&c), rc;
    if (t->max_error > 0 && (rc = targets_load(t, cmd, ctx))) return cli_calib_free(&c), rc;
    seam_quantize_options o = seam_quantize_defaults();
    o.mode = dynamic ? SEAM_QUANT_DYNAMIC : SEAM_QUANT_STATIC;
    o.n_threads = threads;
    seam_quantizer *q = NULL;
    seam_status st = seam_quantizer_create(m, &o, &q);
    if (!st && !dynamic && (rc = cli_calib_observe(cmd, ctx, q, &c))) goto done;
    if (!st && t->max_error > 0) st = keep_within(t, cmd, q, m, &c, threads);
    seam_quantize_stats qs;
    if (!st) st = seam_quantizer_finish(q, &qs);
    if (st) {
        rc = cli_fail(cmd, ctx, st) == CLI_USAGE ? CLI_USAGE : CLI_BAD_INPUT;
        goto done;
    }
    if (!quiet) {
        const char *notes = seam_quantizer_notes(q);
        for (const char *p = notes; *p;) {
            const char *e = strchr(p, '\n');
            int len = e ? (int)(e - p) : (int)strlen(p);
            fprintf(stderr, "seam %s: --precision %s: %.*s\n", cmd, t->precision, len, p);
            p += len + (e ? 1 : 0);
        }
        if (dynamic)
            fprintf(stderr, "seam %s: --precision int8-dynamic: %d MatMul/Gemm quantized dynamically\n", cmd, qs.dynamic_matmuls);
        else
            fprintf(stderr, "seam %s: --precision int8: %d ops quantized from %d calibration sets (%d activations, %d weights)\n",
                    cmd, qs.quantized_ops, qs.calibration_runs, qs.activations, qs.weights);
    }
done:
    seam_quantizer_free(q);
    cli_calib_free(&c);
    return rc;
}
