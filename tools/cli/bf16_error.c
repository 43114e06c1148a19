/* --precision bf16 --max-error E --calibration DIR (run, partition): the
 * partitioned model's dnnl subgraphs in bfloat16 where the outputs stay
 * within E of the float32 model's, float32 elsewhere.
 *
 * The error of a model is, as for int8 (precision.c), the largest over
 * the calibration sets and the float outputs of max |y - y_fp32| /
 * max |y_fp32|, y_fp32 the outputs with every subgraph in float32. All
 * subgraphs in bf16 are tried first; if the model is off by more than E,
 * each subgraph is measured in bf16 alone, and subgraphs go back to
 * float32, the worst first, measuring the model again after each, until
 * it is within E. A subgraph's precision is its target option
 * precision=bf16 or precision=fp32, which the saved model keeps. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib.h"
#include "cli.h"
#include "ir/ir.h"
#include "targets.h"

static const char BF16[] = "precision=bf16", FP32[] = "precision=fp32";

typedef struct sub {
    ir_bytes *opt; /* its "precision=..." target option */
    const char *name;
    double alone;  /* the model's error with this subgraph alone in bf16 */
} sub;

/* The Subgraph nodes whose target options ask for bf16. */
static int32_t bf16_subgraphs(seam_model *m, sub *out, int32_t max) {
    ir_graph *g = m->graph;
    int32_t n = 0;
    for (int32_t i = 0; i < g->n_nodes && n < max; i++) {
        ir_node *nd = &g->nodes[i];
        if (strcmp(nd->domain, "ai.seam") || strcmp(nd->op_type, "Subgraph")) continue;
        for (int32_t a = 0; a < nd->n_attrs; a++) {
            ir_attr *at = &nd->attrs[a];
            if (strcmp(at->name, "target_options") || at->kind != IR_ATTR_STRINGS) continue;
            for (int32_t k = 0; k < at->n; k++)
                if (at->strings[k].len == sizeof(BF16) - 1 && !memcmp(at->strings[k].data, BF16, sizeof(BF16) - 1))
                    out[n++] = (sub){&at->strings[k], nd->name ? nd->name : "", 0};
        }
    }
    return n;
}

static void set_precision(sub *s, bool bf16) { s->opt->data = (const uint8_t *)(bf16 ? BF16 : FP32); }

/* Runs every set through a session of m: into ref (the float32 outputs,
 * kept) when ref->n == 0, else the error against ref into *err. */
typedef struct outs {
    int32_t n;          /* sets * outputs kept */
    float **y;
    size_t *numel;
    double *scale;
} outs;

static seam_status measure(cli_targets *t, seam_model *m, const cli_calib *c, outs *ref, double *err) {
    targets_for_sessions(t);
    seam_session_options so = {t->threads, false, false, t->avail, t->n_avail, NULL, NULL};
    seam_session *s = NULL;
    seam_status st = seam_session_create(m, &so, &s);
    int32_t n_out = seam_model_output_count(m);
    bool keep = ref->n == 0;
    if (!st && keep) {
        ref->n = c->n_sets * n_out;
        ref->y = calloc((size_t)ref->n + 1, sizeof(float *));
        ref->numel = calloc((size_t)ref->n + 1, sizeof(size_t));
        ref->scale = calloc((size_t)ref->n + 1, sizeof(double));
        if (!ref->y || !ref->numel || !ref->scale) st = SEAM_STATUS_OUT_OF_MEMORY;
    }
    *err = 0;
    for (int32_t set = 0; set < c->n_sets && !st; set++) {
        if ((st = cli_calib_bind(c, set, s)) || (st = seam_session_run(s))) break;
        for (int32_t k = 0; k < n_out && !st; k++) {
            seam_tensor_view v;
            if (seam_session_output(s, k, &v) || v.dtype != SEAM_DTYPE_FLOAT32) continue; /* float outputs only */
            size_t n = v.nbytes / sizeof(float), at = (size_t)(set * n_out + k);
            const float *y = v.data;
            if (keep) {
                if (!(ref->y[at] = malloc(v.nbytes + 1))) st = SEAM_STATUS_OUT_OF_MEMORY;
                else memcpy(ref->y[at], y, v.nbytes), ref->numel[at] = n;
                for (size_t i = 0; ref->y[at] && i < n; i++) ref->scale[at] = fmax(ref->scale[at], fabs(y[i]));
                continue;
            }
            if (!ref->y[at] || ref->numel[at] != n) continue;
            double worst = 0;
            for (size_t i = 0; i < n; i++) { /* (a NaN where float32 has a number counts as infinitely off) */
                double d = fabs((double)y[i] - ref->y[at][i]);
                if (isnan(d) && !isnan(ref->y[at][i])) d = INFINITY;
                if (d > worst) worst = d;
            }
            *err = fmax(*err, worst / (ref->scale[at] > 0 ? ref->scale[at] : 1));
        }
    }
    seam_session_free(s);
    return st;
}

static int by_alone(const void *a, const void *b) {
    double x = ((const sub *)a)->alone, y = ((const sub *)b)->alone;
    return x < y ? 1 : x > y ? -1 : 0;
}

int targets_bf16_within(cli_targets *t, const char *cmd, seam_context *ctx, seam_model *m) {
    if (!t->precision || strcmp(t->precision, "bf16") || t->max_error <= 0) return CLI_OK;
    cli_calib c;
    memset(&c, 0, sizeof(c));
    int rc = cli_calib_load(cmd, ctx, m, t->calibration, &c);
    sub subs[256];
    int32_t n = rc ? 0 : bf16_subgraphs(m, subs, 256);
    outs ref = {0};
    double err = 0, e;
    seam_status st = SEAM_STATUS_OK;
    if (!rc && n == 0) fprintf(stderr, "seam %s: --max-error: no subgraph is in bf16\n", cmd);
    if (!rc && n > 0) {
        for (int32_t k = 0; k < n; k++) set_precision(&subs[k], false);
        st = measure(t, m, &c, &ref, &e);
        for (int32_t k = 0; k < n; k++) set_precision(&subs[k], true);
        if (!st) st = measure(t, m, &c, &ref, &err);
    }
    if (!rc && !st && n > 0) {
        fprintf(stderr, "seam %s: --max-error %g: every subgraph in bf16 (%d): off by %.3g over %d calibration sets\n", cmd,
                t->max_error, n, err, c.n_sets);
        if (err > t->max_error) {
            for (int32_t k = 0; k < n && !st; k++) { /* each alone in bf16 */
                for (int32_t j = 0; j < n; j++) set_precision(&subs[j], j == k);
                st = measure(t, m, &c, &ref, &subs[k].alone);
                if (!st) fprintf(stderr, "seam %s: --max-error: subgraph '%s' alone in bf16: off by %.3g\n", cmd,
                                 subs[k].name, subs[k].alone);
            }
            qsort(subs, (size_t)n, sizeof(sub), by_alone);
            int32_t kept = n;
            for (int32_t j = 0; j < n; j++) set_precision(&subs[j], true);
            for (int32_t k = 0; k < n && err > t->max_error && !st; k++) { /* the worst back to float32 */
                set_precision(&subs[k], false), kept--;
                st = measure(t, m, &c, &ref, &err);
                if (!st) fprintf(stderr, "seam %s: --max-error: subgraph '%s' back to fp32: the model off by %.3g\n", cmd,
                                 subs[k].name, err);
            }
            if (!st) fprintf(stderr, "seam %s: --max-error %g: %d of %d subgraphs in bf16, off by %.3g%s\n", cmd,
                             t->max_error, kept, n, err, err > t->max_error ? " (all in fp32 is the float model)" : "");
        }
    }
    for (int32_t k = 0; k < ref.n; k++) free(ref.y[k]);
    free(ref.y), free(ref.numel), free(ref.scale);
    cli_calib_free(&c);
    if (st) return cli_fail(cmd, ctx, st) == CLI_USAGE ? CLI_USAGE : CLI_BAD_INPUT;
    return rc;
}
