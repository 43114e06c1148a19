/* Step 1 of seam_partition: every target is asked about every node, the
 * reasons of its refusals kept; Constant nodes are data, placed nowhere.
 * Nodes no target takes because the model's inputs have symbolic dims are
 * named in a note. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "core/context.h"
#include "partition/partitioner.h"

/* Targets decide from ranks, dtypes and attributes (symbolic dims are
 * compiled per shape at run time); a value whose rank is unknown is what
 * keeps a node from them. */
static bool view_ranks_known(const seam_node_view *v) {
    for (int32_t k = 0; k < v->n_inputs + v->n_outputs; k++) {
        const seam_value_info *x = k < v->n_inputs ? &v->inputs[k] : &v->outputs[k - v->n_inputs];
        if (x->name && x->rank < 0) return false; /* (no name: an absent optional input) */
    }
    return true;
}

/* Never silent about nodes left on the CPU because the model's inputs have
 * symbolic dims: shape computations that fixed dims would fold away, and
 * nodes whose values' ranks inference could not tell (targets decide from
 * ranks; sizes are compiled per shape at run time). */
static bool input_symbolic(const ir_value *v) {
    if (v->flags & IR_VALUE_INIT || v->type.kind != IR_TYPE_TENSOR) return false;
    bool symbolic = v->type.rank < 0;
    for (int32_t d = 0; d < v->type.rank; d++) symbolic |= v->type.dims[d].v < 0;
    return symbolic;
}

static bool is_dimexpr(const ir_node *n) { return !strcmp(n->op_type, "DimExpr") && !strcmp(n->domain, "ai.seam"); }

/* Per node: a DimExpr (ops/symdim.c: seam's own op, which no target is
 * asked about), or one that reads only values computed from the inputs'
 * shapes, constants and initializers, at least one of the first kind: a
 * mask or position table made from the shapes. NULL when the graph has no
 * DimExpr (or out of memory: then nothing is pinned). */
static bool *from_shapes(const ir_graph *g) {
    bool any = false;
    for (int32_t i = 0; i < g->n_nodes && !any; i++) any = is_dimexpr(&g->nodes[i]);
    bool *node = any ? calloc((size_t)g->n_nodes + (size_t)g->n_values + 1, sizeof(bool)) : NULL;
    if (!node) return NULL;
    bool *val = node + g->n_nodes;
    for (int32_t t = 0; t < g->n_nodes; t++) {
        int32_t i = g->topo[t];
        const ir_node *n = &g->nodes[i];
        bool mine = is_dimexpr(n), some = false, all = true;
        if (!mine && !n->domain[0] && !ir_node_has_body(n) && !n->n_implicit && !plan_is_constant_node(g, i)) {
            for (int32_t k = 0; k < n->n_inputs && all; k++) {
                int32_t v = n->inputs[k];
                if (v < 0) continue;
                const ir_value *x = &g->values[v];
                if (val[v]) some = true;
                else all = x->konst || (x->flags & IR_VALUE_INIT) || (x->producer >= 0 && plan_is_constant_node(g, x->producer));
            }
            node[i] = some && all;
        }
        node[i] |= mine;
        for (int32_t k = 0; k < n->n_outputs && node[i]; k++)
            if (n->outputs[k] >= 0) val[n->outputs[k]] = true;
    }
    return node;
}

static void note_symbolic(seam_plan *p, const ir_graph *g, int32_t n_refused) {
    char syms[400];
    size_t off = 0;
    syms[0] = 0;
    for (int32_t i = 0; i < g->n_inputs && off < sizeof(syms); i++) {
        const ir_value *v = &g->values[g->inputs[i]];
        if (!input_symbolic(v)) continue;
        off += (size_t)snprintf(syms + off, sizeof(syms) - off, "%s'%s' [", off ? ", " : "", v->name);
        for (int32_t d = 0; d < v->type.rank && off < sizeof(syms); d++) {
            const ir_dim *dm = &v->type.dims[d];
            if (dm->v >= 0) off += (size_t)snprintf(syms + off, sizeof(syms) - off, "%s%lld", d ? "," : "", (long long)dm->v);
            else off += (size_t)snprintf(syms + off, sizeof(syms) - off, "%s%s", d ? "," : "", dm->sym ? dm->sym : "?");
        }
        if (off < sizeof(syms)) off += (size_t)snprintf(syms + off, sizeof(syms) - off, "]");
    }
    if (!syms[0]) return;
    plan_note(p, "%d node%s went to the CPU between device subgraphs: %s shapes from the model's symbolic dims (%s) "
              "or %s values whose rank is not known before the run; fix: give the dims with --shape NAME=AxBxC "
              "(seam run takes them from its --input files), which folds shape computations away",
              n_refused, n_refused == 1 ? "" : "s", n_refused == 1 ? "it computes" : "they compute", syms,
              n_refused == 1 ? "reads or writes" : "read or write");
}

/* The int8 products of a quantized model (QDQ units become these). */
static bool is_int8_product(const ir_node *n) {
    return !n->domain[0] && (!strcmp(n->op_type, "QLinearConv") || !strcmp(n->op_type, "QLinearMatMul") ||
                             !strcmp(n->op_type, "MatMulInteger") || !strcmp(n->op_type, "ConvInteger"));
}

/* Step 1: who supports what, with the reasons of the refusals. */
seam_status partition_support(partitioner *pr) {
    const ir_graph *g = pr->m->graph;
    seam_plan *p = pr->p;
    view_builder vb;
    view_init(&vb, pr->m);
    const seam_backend *cpu = seam_backend_cpu();
    char why[512], detail[2048];
    seam_status st = SEAM_STATUS_OK;
    /* counted only when the model has symbolic inputs (note_symbolic) */
    bool symbolic = false;
    for (int32_t k = 0; k < g->n_inputs && pr->n_targets > 0 && !symbolic; k++)
        symbolic = input_symbolic(&g->values[g->inputs[k]]);
    int32_t n_unknown = 0; /* refused by every target, with a rank unknown or computing a shape */
    /* per target, int8 products it refused: how many, and the first one's reason */
    enum { NOTE_TARGETS = 8 };
    int32_t int8_refused[NOTE_TARGETS] = {0};
    const char *int8_why[NOTE_TARGETS] = {0};
    /* values computed from a Shape or Size by int64 arithmetic: with symbolic
     * input dims they are not folded, so the nodes computing them run on the
     * CPU between device subgraphs */
    bool *shape_val = symbolic ? calloc((size_t)g->n_values + 1, sizeof(bool)) : NULL;
    for (int32_t p_ = 0; shape_val && p_ < g->n_nodes; p_++) {
        const ir_node *n = &g->nodes[g->topo[p_]];
        bool derived = !strcmp(n->op_type, "Shape") || !strcmp(n->op_type, "Size");
        for (int32_t k = 0; k < n->n_inputs && !derived; k++) derived = n->inputs[k] >= 0 && shape_val[n->inputs[k]];
        for (int32_t k = 0; k < n->n_outputs && derived; k++)
            derived = n->outputs[k] < 0 || g->values[n->outputs[k]].type.elem == SEAM_DTYPE_INT64;
        for (int32_t k = 0; k < n->n_outputs && derived; k++)
            if (n->outputs[k] >= 0) shape_val[n->outputs[k]] = true;
    }
    bool *shaped = from_shapes(g);
    for (int32_t i = 0; i < g->n_nodes && !st; i++) {
        const ir_node *n = &g->nodes[i];
        if (plan_is_constant_node(g, i)) {
            plan_set_constant(p, i);
            continue;
        }
        p->counted++;
        seam_node_view view;
        if (!view_node(&vb, i, &view)) {
            st = seam_error(pr->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
            break;
        }
        size_t off = 0;
        detail[0] = 0;
        /* sequences and optionals are host-only values: no target sees them */
        const ir_value *host_only = NULL;
        for (int32_t k = 0; k < n->n_inputs + n->n_outputs && !host_only; k++) {
            int32_t v = k < n->n_inputs ? n->inputs[k] : n->outputs[k - n->n_inputs];
            if (v >= 0 && g->values[v].type.kind != IR_TYPE_TENSOR && g->values[v].type.kind != IR_TYPE_NONE)
                host_only = &g->values[v];
        }
        /* a node with a body: plan_apply cannot put one in a device
         * subgraph yet (seam backend-check found a rules target given Scan,
         * and the session then refused) */
        bool body = !host_only && ir_node_has_body(n);
        bool from_shape = shaped && shaped[i] && !host_only && !body;
        if (from_shape) {
            off += (size_t)snprintf(detail, sizeof(detail),
                                    "computed from the inputs' shapes alone (DimExpr nodes' outputs and constants): the "
                                    "CPU computes it before the device subgraphs, which it then never cuts");
            body = true; /* (offered to no target) */
        } else if (body) {
            off += (size_t)snprintf(detail, sizeof(detail), "a node with a body (If/Loop/Scan); only the CPU runs those");
        } else if (host_only) {
            int kind = host_only->type.kind;
            off += (size_t)snprintf(detail, sizeof(detail), "'%s' is a%s value; only the CPU runs those", host_only->name,
                                    kind == IR_TYPE_SEQUENCE ? " sequence"
                                    : kind == IR_TYPE_OPTIONAL ? "n optional"
                                    : kind == IR_TYPE_MAP      ? " map"
                                                               : " sparse tensor");
        }
        for (int32_t t = 0; t < pr->n_targets && !host_only && !body; t++) {
            if (backend_supports(pr->targets[t], &view, why, sizeof(why))) {
                pr->supported_by[i] |= (uint64_t)1 << t;
            } else {
                if (t < NOTE_TARGETS && is_int8_product(n) && int8_refused[t]++ == 0) int8_why[t] = plan_strdup(p, why);
                if (off < sizeof(detail))
                    off += (size_t)snprintf(detail + off, sizeof(detail) - off, "%s%s: %s", off ? "; " : "",
                                            pr->targets[t]->name, why);
            }
        }
        if (pr->supported_by[i]) {
            p->supported++;
        } else {
            bool computes_shape = shape_val && n->n_outputs > 0 && n->outputs[0] >= 0 && shape_val[n->outputs[0]];
            if (symbolic && (!view_ranks_known(&view) || computes_shape)) n_unknown++;
            if (!backend_supports(cpu, &view, why, sizeof(why)) && off < sizeof(detail))
                snprintf(detail + off, sizeof(detail) - off, "%scpu: %s", off ? "; " : "", why);
            p->detail[i] = plan_strdup(p, detail);
        }
    }
    view_free(&vb);
    free(shape_val);
    free(shaped);
    if (!st && n_unknown > 0) note_symbolic(p, g, n_unknown);
    /* a quantized model's int8 work kept off a target is a slower path than
     * asked for: said once per target, with the first node's reason */
    for (int32_t t = 0; t < pr->n_targets && t < NOTE_TARGETS && !st; t++)
        if (int8_refused[t] && int8_why[t])
            plan_note(p, "target '%s' refuses %d int8 product node%s (QLinearConv, QLinearMatMul, MatMulInteger, "
                      "ConvInteger) of this model; the first one's reason: %s", pr->targets[t]->name, int8_refused[t],
                      int8_refused[t] == 1 ? "" : "s", int8_why[t]);
    return st;
}
