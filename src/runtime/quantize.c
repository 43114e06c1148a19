/*
 * The quantizer (include/seam_quantize.h): options, the calibration runs
 * and the ranges they show. What to quantize and the rewrite are in
 * quantize_graph.c.
 *
 * Calibration runs the float model on seam's own session, with every value
 * to be quantized made an extra graph output for the time of the runs
 * (an output is never fused away or aliased, so each is seen as the float
 * model computes it), then takes the outputs back off. Per value it keeps
 * the smallest and largest value seen and, for percentile calibration, a
 * histogram of QUANT_BINS bins whose range doubles (bins merged in pairs)
 * when a run goes past it: the bins stay aligned, so the counts stay exact
 * at the coarser width.
 *
 * Parameters, as ONNX Runtime's quantizer chooses them: uint8, the range
 * widened to hold 0, scale (hi - lo) / 255 rounded to float32, zero point
 * round(-lo / scale) half to even, clamped to [0, 255]; an empty range
 * gets scale 1 and zero point 0.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "onnx/onnx.h"
#include "runtime/fold_eval.h"
#include "runtime/quantize.h"

seam_quantize_options seam_quantize_defaults(void) {
    seam_quantize_options o;
    memset(&o, 0, sizeof(o));
    o.mode = SEAM_QUANT_STATIC;
    o.method = SEAM_CALIB_MINMAX;
    o.percentile = 99.999;
    o.weights = SEAM_QUANT_AUTO;
    return o;
}

void quant_left_float(seam_quantizer *q, int32_t node, const char *why) {
    q->st.left_float++;
    struct quant_reason *r = NULL;
    for (int32_t k = 0; k < q->n_reasons && !r; k++)
        if (!strcmp(q->reasons[k].why, why)) r = &q->reasons[k];
    if (!r) {
        if (q->n_reasons == (int32_t)(sizeof(q->reasons) / sizeof(q->reasons[0]))) return;
        r = &q->reasons[q->n_reasons++];
        memset(r, 0, sizeof(*r));
        r->why = why;
    }
    if (r->count < 3) r->first[r->count] = q->m->graph->nodes[node].name;
    r->count++;
}

const char *seam_quantizer_notes(const seam_quantizer *cq) {
    seam_quantizer *q = (seam_quantizer *)cq;
    if (!q) return "";
    free(q->notes);
    size_t cap = 256 * (size_t)(q->n_reasons + 1), len = 0;
    q->notes = malloc(cap);
    if (!q->notes) return "";
    q->notes[0] = 0;
    for (int32_t k = 0; k < q->n_reasons; k++) {
        const struct quant_reason *r = &q->reasons[k];
        len += (size_t)snprintf(q->notes + len, cap - len, "%d node%s left in float: %s (", r->count,
                                r->count == 1 ? "" : "s", r->why);
        for (int32_t j = 0; j < r->count && j < 3 && len < cap; j++)
            len += (size_t)snprintf(q->notes + len, cap - len, "%s'%s'", j ? ", " : "", r->first[j]);
        if (len < cap) len += (size_t)snprintf(q->notes + len, cap - len, "%s)\n", r->count > 3 ? ", ..." : "");
        if (len >= cap) break;
    }
    return q->notes;
}

static seam_status check_options(seam_context *ctx, const seam_model *m, const seam_quantize_options *o) {
    if (o->mode != SEAM_QUANT_STATIC && o->mode != SEAM_QUANT_DYNAMIC)
        return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "quantize: mode %d is not static (0) or dynamic (1)", o->mode);
    if (o->method != SEAM_CALIB_MINMAX && o->method != SEAM_CALIB_PERCENTILE)
        return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "quantize: calibration method %d is not minmax (0) or percentile (1)",
                          o->method);
    if (o->method == SEAM_CALIB_PERCENTILE && !(o->percentile > 50 && o->percentile <= 100))
        return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "quantize: percentile %g is not in (50, 100]", o->percentile);
    if (o->weights != SEAM_QUANT_AUTO && o->weights != SEAM_QUANT_PER_CHANNEL && o->weights != SEAM_QUANT_PER_TENSOR)
        return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "quantize: weight granularity %d is not auto, per channel or per tensor",
                          o->weights);
    if (o->n_threads < 0 || o->n_exclude < 0 || (o->n_exclude && !o->exclude))
        return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "quantize: negative thread or exclude count");
    const ir_graph *g = m->graph;
    for (int32_t k = 0; k < o->n_exclude; k++) {
        bool found = false;
        for (int32_t i = 0; i < g->n_nodes && !found; i++) found = o->exclude[k] && !strcmp(g->nodes[i].name, o->exclude[k]);
        if (!found)
            return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "quantize: exclude: the model has no node named '%s'",
                              o->exclude[k] ? o->exclude[k] : "(null)");
    }
    return SEAM_STATUS_OK;
}

/* A model quantized already is refused: its Q/DQ would be quantized again. */
static seam_status check_float(seam_context *ctx, const ir_graph *g) {
    static const char *const ops[] = {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "QLinearConv",
                                      "QLinearMatMul", "MatMulInteger", "ConvInteger"};
    for (int32_t i = 0; i < g->n_nodes; i++)
        for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++)
            if (!g->nodes[i].domain[0] && !strcmp(g->nodes[i].op_type, ops[k])) {
                char lb[300];
                return seam_error(ctx, SEAM_STATUS_INVALID_MODEL, "quantize: the model is quantized already (%s)",
                                  ir_node_label(g, i, lb, sizeof(lb)));
            }
    return SEAM_STATUS_OK;
}

/* The values to observe become extra graph outputs; graph inputs are read
 * from the bound data instead. */
static seam_status add_outputs(seam_quantizer *q) {
    ir_graph *g = q->m->graph;
    q->n_outputs0 = g->n_outputs;
    q->outputs0 = g->outputs;
    int32_t *outs = seam_arena_alloc(&q->m->arena, sizeof(int32_t) * ((size_t)g->n_outputs + (size_t)q->n_acts + 1));
    if (!outs) return seam_error(q->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    if (g->n_outputs) memcpy(outs, g->outputs, sizeof(int32_t) * (size_t)g->n_outputs);
    int32_t n = g->n_outputs;
    for (int32_t k = 0; k < q->n_acts; k++) {
        quant_act *a = &q->acts[k];
        a->output = -1;
        if (a->root != k || (g->values[a->v].flags & IR_VALUE_INPUT)) continue;
        int32_t found = -1;
        for (int32_t o = 0; o < n && found < 0; o++)
            if (outs[o] == a->v) found = o;
        a->output = found >= 0 ? found : n;
        if (found < 0) outs[n++] = a->v;
    }
    g->outputs = outs;
    g->n_outputs = n;
    for (int32_t o = q->n_outputs0; o < n; o++) g->values[outs[o]].flags |= IR_VALUE_OUTPUT;
    return SEAM_STATUS_OK;
}

static void remove_outputs(seam_quantizer *q) {
    ir_graph *g = q->m->graph;
    if (!q->outputs0) return;
    for (int32_t o = q->n_outputs0; o < g->n_outputs; o++) g->values[g->outputs[o]].flags &= ~(uint32_t)IR_VALUE_OUTPUT;
    g->outputs = q->outputs0;
    g->n_outputs = q->n_outputs0;
    q->outputs0 = NULL;
}

seam_status seam_quantizer_create(seam_model *m, const seam_quantize_options *opts, seam_quantizer **out) {
    if (out) *out = NULL;
    if (!m || !out) return SEAM_STATUS_INVALID_ARGUMENT;
    seam_quantize_options o = opts ? *opts : seam_quantize_defaults();
    seam_status st = check_options(m->ctx, m, &o);
    if (st) return st;
    if ((st = check_float(m->ctx, m->graph))) return st;
    if ((st = runtime_fold(m, false, NULL))) return st; /* (its file is for any runtime: no DimExpr) */
    seam_quantizer *q = calloc(1, sizeof(*q));
    if (!q) return seam_error(m->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    q->ctx = m->ctx, q->m = m, q->o = o, q->n_exclude_user = o.n_exclude;
    if ((st = quant_plan(q))) goto fail;
    if (o.mode == SEAM_QUANT_STATIC) {
        if ((st = add_outputs(q))) goto fail;
        seam_session_options so;
        memset(&so, 0, sizeof(so));
        so.n_threads = o.n_threads;
        st = seam_session_create(m, &so, &q->s);
        if (st) goto fail;
    }
    *out = q;
    return SEAM_STATUS_OK;
fail:
    seam_quantizer_free(q);
    return st;
}

seam_status seam_quantizer_set_input(seam_quantizer *q, const char *name, seam_dtype dtype, int32_t rank,
                                     const int64_t *dims, const void *data) {
    if (!q || !name) return SEAM_STATUS_INVALID_ARGUMENT;
    if (!q->s)
        return seam_error(q->ctx, SEAM_STATUS_INVALID_ARGUMENT,
                          q->finished ? "quantize: finished already" : "quantize: dynamic quantization takes no calibration inputs");
    seam_status st = seam_session_set_input(q->s, name, dtype, rank, dims, data);
    if (st) return st;
    int32_t k = 0;
    while (k < q->n_bound && strcmp(q->bound[k].name, name)) k++;
    if (k == q->n_bound) {
        if (q->n_bound == q->cap_bound) {
            int32_t cap = q->cap_bound ? 2 * q->cap_bound : 8;
            quant_input *b = realloc(q->bound, sizeof(quant_input) * (size_t)cap);
            if (!b) return seam_error(q->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
            q->bound = b, q->cap_bound = cap;
        }
        q->n_bound++;
    }
    /* (the session checked it: the name is the model's, kept by the model) */
    int32_t v = ir_graph_find(q->m->graph, name);
    q->bound[k] = (quant_input){v >= 0 ? q->m->graph->values[v].name : name, dtype, rank, dims, data};
    return SEAM_STATUS_OK;
}

/* Merges the histogram's bins in pairs; the range doubles to the right
 * (keep_left) or to the left. */
static void hist_double(quant_act *a, bool keep_left) {
    uint64_t *b = a->bins;
    if (keep_left) {
        for (int32_t j = 0; j < QUANT_BINS / 2; j++) b[j] = b[2 * j] + b[2 * j + 1];
        memset(b + QUANT_BINS / 2, 0, sizeof(uint64_t) * (QUANT_BINS / 2));
    } else {
        for (int32_t j = QUANT_BINS - 1; j >= QUANT_BINS / 2; j--) {
            int32_t o = 2 * (j - QUANT_BINS / 2);
            b[j] = b[o] + b[o + 1];
        }
        memset(b, 0, sizeof(uint64_t) * (QUANT_BINS / 2));
        a->left -= QUANT_BINS * a->width;
    }
    a->width *= 2;
}

static void hist_add(quant_act *a, const float *x, int64_t n, double lo, double hi) {
    if (!a->count) {
        a->left = lo;
        a->width = hi > lo ? (hi - lo) / QUANT_BINS * (1 + 1e-9) : fmax(fabs(lo), 1.0) / QUANT_BINS;
    }
    while (hi >= a->left + QUANT_BINS * a->width) hist_double(a, true);
    while (lo < a->left) hist_double(a, false);
    for (int64_t i = 0; i < n; i++) {
        int64_t j = (int64_t)(((double)x[i] - a->left) / a->width);
        a->bins[j < 0 ? 0 : j >= QUANT_BINS ? QUANT_BINS - 1 : j]++;
    }
}

static seam_status take(seam_quantizer *q, quant_act *a, const void *data, seam_dtype dtype, int64_t n) {
    const ir_value *val = &q->m->graph->values[a->v];
    if (dtype != SEAM_DTYPE_FLOAT32)
        return seam_error(q->ctx, SEAM_STATUS_RUN_FAILED, "quantize: value '%s' is %s, not float32", val->name,
                          seam_dtype_name(dtype));
    const float *x = data;
    float lo = INFINITY, hi = -INFINITY;
    bool finite = true;
    for (int64_t i = 0; i < n; i++) {
        lo = x[i] < lo ? x[i] : lo;
        hi = x[i] > hi ? x[i] : hi;
        finite &= isfinite(x[i]) != 0;
    }
    if (!finite)
        return seam_error(q->ctx, SEAM_STATUS_RUN_FAILED,
                          "quantize: value '%s' holds NaN or infinity in calibration run %d: its range is not defined",
                          val->name, q->st.calibration_runs + 1);
    if (!n) return SEAM_STATUS_OK;
    a->lo = a->seen ? fmin(a->lo, lo) : lo;
    a->hi = a->seen ? fmax(a->hi, hi) : hi;
    a->seen = true;
    if (q->o.method == SEAM_CALIB_PERCENTILE) {
        if (!a->bins && !(a->bins = calloc(QUANT_BINS, sizeof(uint64_t))))
            return seam_error(q->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        hist_add(a, x, n, lo, hi);
    }
    a->count += (uint64_t)n;
    return SEAM_STATUS_OK;
}

seam_status seam_quantizer_observe(seam_quantizer *q) {
    if (!q) return SEAM_STATUS_INVALID_ARGUMENT;
    if (!q->s)
        return seam_error(q->ctx, SEAM_STATUS_INVALID_ARGUMENT,
                          q->finished ? "quantize: finished already" : "quantize: dynamic quantization takes no calibration runs");
    seam_status st = seam_session_run(q->s);
    if (st) return st;
    const ir_graph *g = q->m->graph;
    for (int32_t k = 0; k < q->n_acts && !st; k++) {
        quant_act *a = &q->acts[k];
        if (a->root != k) continue;
        if (a->output >= 0) {
            seam_tensor_view t;
            if ((st = seam_session_output(q->s, a->output, &t))) break;
            st = take(q, a, t.data, t.dtype, (int64_t)(t.nbytes / (t.dtype == SEAM_DTYPE_FLOAT32 ? 4 : 1)));
            continue;
        }
        const quant_input *in = NULL;
        for (int32_t b = 0; b < q->n_bound && !in; b++)
            if (!strcmp(q->bound[b].name, g->values[a->v].name)) in = &q->bound[b];
        if (!in) /* (the run would have failed first) */
            return seam_error(q->ctx, SEAM_STATUS_INVALID_ARGUMENT, "quantize: input '%s' was not set", g->values[a->v].name);
        int64_t n = 1;
        for (int32_t d = 0; d < in->rank; d++) n *= in->dims[d];
        st = take(q, a, in->data, in->dtype, n);
    }
    if (!st) q->st.calibration_runs++;
    return st;
}

/* The range of a's values to quantize, by the calibration method. */
static void chosen_range(const seam_quantizer *q, const quant_act *a, double *lo, double *hi) {
    *lo = a->lo, *hi = a->hi;
    if (q->o.method != SEAM_CALIB_PERCENTILE || !a->bins || !a->count) return;
    double cut = (double)a->count * (100.0 - q->o.percentile) / 200.0, sum = 0;
    int32_t j = 0;
    while (j < QUANT_BINS - 1 && (sum += (double)a->bins[j]) <= cut) j++;
    double l = a->left + j * a->width;
    sum = 0;
    int32_t k = QUANT_BINS - 1;
    while (k > 0 && (sum += (double)a->bins[k]) <= cut) k--;
    double h = a->left + (k + 1) * a->width;
    if (l > *lo && l < *hi) *lo = l;
    if (h < *hi && h > *lo) *hi = h;
}

static void uint8_params(double lo, double hi, float *scale, uint8_t *zp) {
    lo = fmin(lo, 0.0), hi = fmax(hi, 0.0);
    float s = (float)((hi - lo) / 255.0);
    if (hi == lo || !(s > 0)) {
        *scale = 1.0f, *zp = 0;
        return;
    }
    double z = nearbyint(-lo / (double)s);
    *scale = s;
    *zp = (uint8_t)(z < 0 ? 0 : z > 255 ? 255 : z);
}

/* The parameters q chose for its act a (by its root's range). */
static void act_params(const seam_quantizer *q, const quant_act *a, float *scale, uint8_t *zp) {
    const quant_act *r = &q->acts[a->root];
    double lo = 0, hi = 0;
    if (r->seen) chosen_range(q, r, &lo, &hi);
    uint8_params(lo, hi, scale, zp);
}

/* q's act of the value named name, or NULL. */
static const quant_act *act_named(seam_quantizer *q, const char *name) {
    int32_t v = ir_graph_find(q->m->graph, name);
    return v >= 0 && q->act_of[v] >= 0 ? &q->acts[q->act_of[v]] : NULL;
}

/* The (folded) float model's bytes, without the calibration outputs: made
 * once, each variant is loaded from them. */
static seam_status float_bytes(seam_quantizer *q) {
    if (q->packed) return SEAM_STATUS_OK;
    ir_graph *g = q->m->graph;
    int32_t n_out = g->n_outputs, *outs = g->outputs;
    if (q->outputs0) g->outputs = q->outputs0, g->n_outputs = q->n_outputs0;
    for (int32_t o = g->n_outputs; o < n_out; o++) g->values[outs[o]].flags &= ~(uint32_t)IR_VALUE_OUTPUT;
    seam_status st = onnx_model_pack(q->m, &q->packed, &q->n_packed);
    for (int32_t o = g->n_outputs; o < n_out; o++) g->values[outs[o]].flags |= IR_VALUE_OUTPUT;
    g->outputs = outs, g->n_outputs = n_out;
    if (!st && !ir_graph_index_names(g)) st = seam_error(q->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    return st;
}

seam_status seam_quantizer_variant(seam_quantizer *q, const char *const *exclude, int32_t n_exclude,
                                   seam_model **model_out, seam_quantize_stats *stats_out) {
    if (model_out) *model_out = NULL;
    if (!q || !model_out || n_exclude < 0 || (n_exclude && !exclude)) return SEAM_STATUS_INVALID_ARGUMENT;
    if (q->finished) return seam_error(q->ctx, SEAM_STATUS_INVALID_ARGUMENT, "quantize: finished already");
    if (q->o.mode == SEAM_QUANT_STATIC && !q->st.calibration_runs)
        return seam_error(q->ctx, SEAM_STATUS_INVALID_ARGUMENT,
                          "quantize: a variant of static quantization needs at least one calibration run");
    seam_model *c = NULL;
    seam_status st = float_bytes(q);
    if (!st) st = seam_model_load_buffer(q->ctx, q->packed, q->n_packed, NULL, &c);
    if (st) return st;
    /* planned again with the exclusions added, each value's parameters q's */
    seam_quantizer *v = calloc(1, sizeof(*v));
    const char **ex = malloc(sizeof(char *) * (size_t)(q->o.n_exclude + n_exclude + 1));
    if (!v || !ex) {
        free(v), free(ex), seam_model_free(c);
        return seam_error(q->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    for (int32_t k = 0; k < q->o.n_exclude; k++) ex[k] = q->o.exclude[k];
    for (int32_t k = 0; k < n_exclude; k++) ex[q->o.n_exclude + k] = exclude[k];
    v->ctx = q->ctx, v->m = c, v->o = q->o, v->n_exclude_user = q->n_exclude_user, v->exclude_why = q->exclude_why;
    v->o.exclude = ex, v->o.n_exclude = q->o.n_exclude + n_exclude;
    st = quant_plan(v);
    for (int32_t k = 0; !st && k < v->n_acts; k++) {
        const quant_act *qa = act_named(q, c->graph->values[v->acts[k].v].name);
        if (!qa)
            st = seam_error(q->ctx, SEAM_STATUS_INTERNAL, "quantize: no calibrated range for value '%s'",
                            c->graph->values[v->acts[k].v].name);
        else act_params(q, qa, &v->acts[k].scale, &v->acts[k].zero_point);
    }
    v->finished = true;
    if (!st) st = quant_rewrite(v);
    if (!st && stats_out) *stats_out = v->st, stats_out->calibration_runs = q->st.calibration_runs;
    v->o.exclude = NULL, v->o.n_exclude = 0;
    free(ex);
    seam_quantizer_free(v);
    if (st) seam_model_free(c);
    else *model_out = c;
    return st;
}

seam_status seam_quantizer_exclude(seam_quantizer *q, const char *const *names, int32_t n, const char *why) {
    if (!q || n < 0 || (n && !names)) return SEAM_STATUS_INVALID_ARGUMENT;
    if (q->finished) return seam_error(q->ctx, SEAM_STATUS_INVALID_ARGUMENT, "quantize: finished already");
    if (why && !(q->exclude_why = seam_arena_strdup(&q->m->arena, why)))
        return seam_error(q->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    const char **ex = realloc(q->exclude_own, sizeof(char *) * (size_t)(q->o.n_exclude + n + 1));
    if (!ex) return seam_error(q->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    if (!q->exclude_own && q->o.n_exclude) memcpy(ex, q->o.exclude, sizeof(char *) * (size_t)q->o.n_exclude);
    q->exclude_own = ex;
    for (int32_t k = 0; k < n; k++) {
        char *c = names[k] ? seam_arena_strdup(&q->m->arena, names[k]) : NULL;
        if (!c) return seam_error(q->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        ex[q->o.n_exclude++] = c;
    }
    q->o.exclude = ex;
    q->replan = n > 0 || q->replan;
    return SEAM_STATUS_OK;
}

/* Plans q again with its exclusions, each value keeping the parameters its
 * first plan gave it (the model is the same: value indices are too). */
static seam_status replan(seam_quantizer *q) {
    quant_act *old = q->acts;
    int32_t n_old = q->n_acts, n_values = q->m->graph->n_values;
    int32_t *param_of = malloc(sizeof(int32_t) * ((size_t)n_values + 1));
    if (!param_of) return seam_error(q->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    for (int32_t v = 0; v < n_values; v++) param_of[v] = -1;
    for (int32_t k = 0; k < n_old; k++) param_of[old[k].v] = k;
    free(q->role), free(q->act_of);
    q->role = NULL, q->act_of = NULL, q->acts = NULL, q->n_acts = 0, q->n_reasons = 0;
    memset(&q->st, 0, sizeof(q->st));
    seam_status st = quant_plan(q);
    for (int32_t k = 0; !st && k < q->n_acts; k++) {
        int32_t o = param_of[q->acts[k].v];
        if (o < 0) st = seam_error(q->ctx, SEAM_STATUS_INTERNAL, "quantize: no calibrated range for value '%s'",
                                   q->m->graph->values[q->acts[k].v].name);
        else q->acts[k].scale = old[o].scale, q->acts[k].zero_point = old[o].zero_point;
    }
    for (int32_t k = 0; k < n_old; k++) free(old[k].bins);
    free(old);
    free(param_of);
    return st;
}

seam_status seam_quantizer_finish(seam_quantizer *q, seam_quantize_stats *stats_out) {
    if (!q) return SEAM_STATUS_INVALID_ARGUMENT;
    if (q->finished) return seam_error(q->ctx, SEAM_STATUS_INVALID_ARGUMENT, "quantize: finished already");
    if (q->o.mode == SEAM_QUANT_STATIC && !q->st.calibration_runs)
        return seam_error(q->ctx, SEAM_STATUS_INVALID_ARGUMENT,
                          "quantize: static quantization needs at least one calibration run (seam_quantizer_observe)");
    seam_session_free(q->s);
    q->s = NULL;
    remove_outputs(q);
    for (int32_t k = 0; k < q->n_acts; k++) act_params(q, &q->acts[k], &q->acts[k].scale, &q->acts[k].zero_point);
    int32_t runs = q->st.calibration_runs;
    seam_status st = q->replan ? replan(q) : SEAM_STATUS_OK;
    q->st.calibration_runs = runs;
    q->finished = true;
    if (!st) st = quant_rewrite(q);
    if (!st && stats_out) *stats_out = q->st;
    return st;
}

void seam_quantizer_free(seam_quantizer *q) {
    if (!q) return;
    seam_session_free(q->s);
    remove_outputs(q);
    for (int32_t k = 0; k < q->n_acts; k++) free(q->acts[k].bins);
    free(q->acts);
    free(q->act_of);
    free(q->role);
    free(q->bound);
    free(q->notes);
    free(q->exclude_own);
    free(q->packed);
    free(q);
}
