/*
 * Folding, the whole of it (seam_model_fold): inference computes the
 * content of the shape arithmetic it has rules for (Shape, Gather, Concat,
 * integer Add/Sub/Mul/Div, ...); every other node whose inputs are all
 * known, whatever its op (Mod, Pow, Range, Expand, Where, ScatterND, Tile,
 * a float Cast or Sqrt, ...), is computed here once, by the CPU backend's
 * own kernel on a one-node graph, so that it folds too. Inference then
 * runs again, since the new contents make more shapes known (a Reshape's
 * target, a Pad's pads), which make more Shape nodes constant; the two
 * alternate until nothing changes. partition/fold.c then turns every node
 * with known content into a Constant.
 *
 * Not computed here: QuantizeLinear and DequantizeLinear (the QDQ units,
 * partition/qdq.c, need them as they are), random generators, control flow
 * (bodies), ops of other domains, graph outputs, and outputs above
 * EVAL_MAX_BYTES (a folded value is kept in the model). A node whose kernel
 * refuses its inputs is left to run, and to fail, at run time, where the
 * error names it; the error is not reported here.
 */
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels.h"
#include "core/context.h"
#include "core/pool.h"
#include "ir/ir.h"
#include "ops/ops.h"
#include "ops/symdim.h"
#include "partition/fold.h"
#include "runtime/exec.h"
#include "runtime/fold_eval.h"

/* The largest output a node may have to be computed here. */
#define EVAL_MAX_BYTES ((size_t)4 << 20)
/* The most outputs a node may have to be computed here (ONNX ops have a
 * handful; more is no op this folds). */
#define EVAL_MAX_OUTPUTS 16
/* Rounds of computing and inferring again (each folds at least one more
 * link of a chain; real models need 2 to 4). */
#define EVAL_MAX_ROUNDS 16

static bool never_computed(const ir_node *n) {
    static const char *const ops[] = {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "Constant",
                                      "Identity", "If", "Loop", "Scan", "SequenceMap", "Multinomial", "Bernoulli",
                                      "Dropout" /* (its mask output is random in training mode) */};
    if (n->domain[0] || !strncmp(n->op_type, "Random", 6)) return true;
    for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++)
        if (!strcmp(n->op_type, ops[k])) return true;
    return ir_node_has_body(n);
}

/* Whether node n is to be computed: its inputs all have content, some
 * output has none, none is a graph output. */
static bool wanted(const ir_graph *g, const ir_node *n) {
    if (n->n_implicit > 0 || n->n_outputs < 1 || never_computed(n)) return false;
    bool missing = false;
    for (int32_t k = 0; k < n->n_outputs; k++) {
        int32_t v = n->outputs[k];
        if (v < 0) continue;
        if (g->values[v].flags & IR_VALUE_OUTPUT) return false;
        missing |= !g->values[v].konst;
    }
    if (!missing) return false;
    for (int32_t k = 0; k < n->n_inputs; k++) {
        int32_t v = n->inputs[k];
        if (v < 0) continue;
        const ir_tensor *c = g->values[v].konst;
        if (!c || c->dtype == SEAM_DTYPE_STRING || (c->numel && !c->data)) return false;
    }
    return true;
}

/* Computes node idx of g on a graph of its own (its inputs initializers
 * holding their contents) in arena `scratch`; the outputs' contents go into
 * the model's arena. False when it was not computed (refused, too big, out
 * of memory: the node then simply stays). */
static bool compute(seam_model *m, ir_graph *g, int32_t idx, seam_pool *pool, seam_arena *scratch) {
    const ir_node *n = &g->nodes[idx];
    struct seam_model tm = *m;
    tm.arena = *scratch;
    bool ok = false;
    seam_exec *e = NULL;
    ir_graph *tg = ir_graph_new(&tm, NULL);
    int32_t *ins = tg ? seam_arena_alloc(&tm.arena, sizeof(int32_t) * ((size_t)n->n_inputs + 1)) : NULL;
    int32_t *outs = tg ? seam_arena_alloc(&tm.arena, sizeof(int32_t) * ((size_t)n->n_outputs + 1)) : NULL;
    int32_t *inits = tg ? seam_arena_alloc(&tm.arena, sizeof(int32_t) * ((size_t)n->n_inputs + 1)) : NULL;
    if (!ins || !outs || !inits) goto done;
    int32_t n_inits = 0;
    for (int32_t k = 0; k < n->n_inputs; k++) {
        ins[k] = -1;
        int32_t v = n->inputs[k];
        if (v < 0) continue;
        int32_t tv = ir_graph_find_or_add(tg, g->values[v].name);
        if (tv < 0) goto done;
        ins[k] = tv;
        ir_value *val = &tg->values[tv];
        if (val->init) continue; /* (an input given twice) */
        const ir_tensor *c = g->values[v].konst;
        ir_tensor *t = seam_arena_memdup(&tm.arena, c, sizeof(*t));
        ir_dim *dims = seam_arena_calloc(&tm.arena, (size_t)c->rank + 1, sizeof(ir_dim));
        if (!t || !dims) goto done;
        for (int32_t d = 0; d < c->rank; d++) dims[d] = (ir_dim){c->dims[d], NULL};
        t->name = val->name;
        val->type = (ir_type){IR_TYPE_TENSOR, c->dtype, c->rank, dims, NULL, NULL};
        val->init = t, val->konst = t;
        val->flags = IR_VALUE_INIT | IR_VALUE_DECLARED;
        inits[n_inits++] = tv;
    }
    int32_t ni = ir_graph_add_node(tg);
    if (ni < 0) goto done;
    ir_node *tn = &tg->nodes[ni];
    *tn = *n;
    tn->inputs = ins, tn->outputs = outs, tn->n_implicit = 0;
    for (int32_t k = 0; k < n->n_outputs; k++) {
        outs[k] = -1;
        if (n->outputs[k] < 0) continue;
        int32_t tv = ir_graph_find_or_add(tg, g->values[n->outputs[k]].name);
        if (tv < 0) goto done;
        outs[k] = tv;
        tg->values[tv].flags = IR_VALUE_OUTPUT;
    }
    tg->inputs = inits, tg->n_inputs = 0;
    tg->inits = inits, tg->n_inits = n_inits;
    tg->outputs = outs, tg->n_outputs = n->n_outputs;
    for (int32_t k = 0; k < n->n_outputs; k++)
        if (outs[k] < 0) goto done; /* (an absent optional output: the graph's outputs must all exist) */
    tm.graph = tg;
    if (ir_graph_link(m->ctx, tg) || ir_infer_model(&tm)) goto done;
    /* every output's size known before it is made, and small */
    for (int32_t k = 0; k < n->n_outputs; k++) {
        const ir_type *t = &tg->values[outs[k]].type;
        if (t->kind != IR_TYPE_TENSOR || t->rank < 0 || t->elem == SEAM_DTYPE_STRING) goto done;
        int64_t numel = 1;
        for (int32_t d = 0; d < t->rank; d++) {
            if (t->dims[d].v < 0 || (t->dims[d].v && numel > (int64_t)EVAL_MAX_BYTES / t->dims[d].v)) goto done;
            numel *= t->dims[d].v;
        }
        if ((size_t)numel * seam_dtype_size(t->elem) > EVAL_MAX_BYTES) goto done;
    }
    if (seam_exec_create_with(m->ctx, tg, NULL, pool, cpu_host_kernels(), NULL, 0, NULL, NULL, &e)) goto done;
    if (seam_exec_run(e)) goto done;
    ir_tensor *res[EVAL_MAX_OUTPUTS];
    if (n->n_outputs > EVAL_MAX_OUTPUTS) goto done;
    for (int32_t k = 0; k < n->n_outputs; k++) {
        const seam_tensor *y = seam_exec_output(e, k);
        if (!y || seam_is_value(y->dtype) || y->dtype == SEAM_DTYPE_STRING || y->nbytes > EVAL_MAX_BYTES ||
            (y->numel && !y->data))
            goto done;
        ir_tensor *t = seam_arena_calloc(&m->arena, 1, sizeof(*t));
        if (!t) goto done;
        *t = (ir_tensor){g->values[n->outputs[k]].name, NULL, y->dtype, y->rank, NULL, y->numel, NULL, y->nbytes, NULL};
        /* (one byte or dim more than needed: an empty or scalar value gets
         * memory of its own too) */
        t->dims = seam_arena_calloc(&m->arena, (size_t)y->rank + 1, sizeof(int64_t));
        t->data = seam_arena_alloc(&m->arena, y->nbytes + 1);
        if (!t->dims || !t->data) goto done;
        memcpy(t->dims, y->dims, sizeof(int64_t) * (size_t)y->rank);
        if (y->nbytes) memcpy(t->data, y->data, y->nbytes);
        res[k] = t;
    }
    /* a value the file declares otherwise (another rank or dtype) is not
     * folded: the run meets the contradiction and names it */
    for (int32_t k = 0; k < n->n_outputs; k++) {
        const ir_type *ty = &g->values[n->outputs[k]].type;
        if (ty->kind == IR_TYPE_TENSOR && ((ty->rank >= 0 && ty->rank != res[k]->rank) ||
                                           (ty->elem != SEAM_DTYPE_UNDEFINED && ty->elem != res[k]->dtype)))
            goto done;
        for (int32_t d = 0; ty->kind == IR_TYPE_TENSOR && ty->rank == res[k]->rank && d < ty->rank; d++)
            if (ty->dims[d].v >= 0 && ty->dims[d].v != res[k]->dims[d]) goto done;
    }
    for (int32_t k = 0; k < n->n_outputs; k++) {
        ir_value *val = &g->values[n->outputs[k]];
        const ir_tensor *t = res[k];
        if (val->type.kind == IR_TYPE_NONE || val->type.rank < 0) { /* what inference did not know */
            ir_dim *dims = seam_arena_calloc(&m->arena, (size_t)t->rank + 1, sizeof(ir_dim));
            if (!dims) goto done; /* (the exec freed and the scratch arena kept there) */
            for (int32_t d = 0; d < t->rank; d++) dims[d] = (ir_dim){t->dims[d], NULL};
            val->type = (ir_type){IR_TYPE_TENSOR, t->dtype, t->rank, dims, NULL, val->type.denotation};
        } else if (val->type.kind == IR_TYPE_TENSOR && val->type.rank == t->rank) {
            for (int32_t d = 0; d < t->rank; d++)
                if (val->type.dims[d].v < 0) val->type.dims[d].v = t->dims[d];
        }
        val->konst = t;
    }
    ok = true;
done:
    if (e) seam_exec_free(e);
    seam_arena_reset(&tm.arena);
    *scratch = tm.arena;
    return ok;
}

/* Rounds of computing every wanted node, then inferring again. */
static seam_status compute_constants(seam_model *m, int32_t *computed_out) {
    seam_context *ctx = m->ctx;
    seam_status saved_status = ctx->last_status;
    char *saved = malloc(SEAM_ERROR_MAX);
    seam_pool *pool = saved ? seam_pool_create(1) : NULL;
    if (!pool) {
        free(saved);
        return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    memcpy(saved, ctx->last_error, SEAM_ERROR_MAX);
    seam_arena scratch;
    seam_arena_init(&scratch, 64 << 10);
    seam_status st = SEAM_STATUS_OK;
    int32_t computed = 0;
    for (int32_t round = 0; round < EVAL_MAX_ROUNDS; round++) {
        ir_graph *g = m->graph;
        int32_t now = 0;
        for (int32_t t = 0; t < g->n_nodes; t++) {
            int32_t idx = g->topo[t];
            if (wanted(g, &g->nodes[idx]) && compute(m, g, idx, pool, &scratch)) now++;
        }
        /* a node refused here says nothing: the run will name it */
        ctx->last_status = saved_status;
        memcpy(ctx->last_error, saved, SEAM_ERROR_MAX);
        computed += now;
        if (!now) break;
        if ((st = ir_infer_model(m))) break;
    }
    seam_arena_free(&scratch);
    seam_pool_free(pool);
    free(saved);
    if (computed_out) *computed_out = computed;
    return st;
}

seam_status runtime_fold(seam_model *m, bool dimexpr, int32_t *folded_out) {
    if (folded_out) *folded_out = 0;
    if (!m) return SEAM_STATUS_INVALID_ARGUMENT;
    seam_status st = compute_constants(m, NULL);
    /* shape arithmetic on symbolic dims as DimExpr nodes (ops/symdim.c) */
    if (!st && dimexpr) st = sym_materialize(m, NULL);
    if (st) return st;
    return partition_fold_known(m, folded_out);
}

seam_status seam_model_fold(seam_model *m, int32_t *folded_out) { return runtime_fold(m, true, folded_out); }
