/* seam inspect MODEL [--json] [--values] [--fold] */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ir/ir.h"

static const char *INSPECT_HELP =
    "usage: seam inspect MODEL [--json] [--values] [--fold] [--shape NAME=AxBxC]...\n"
    "\n"
    "Loads MODEL, checks it, infers types and shapes, and prints the node\n"
    "count, a histogram of op types, the inputs and outputs with dtype and\n"
    "shape, the initializers' count and bytes, and the opsets.\n"
    "\n"
    "  --fold    fold first, as partition and run do: every node whose\n"
    "            outputs depend only on constants and known shapes becomes a\n"
    "            Constant (counted so in the histogram), and the shapes that\n"
    "            makes known are inferred\n"
    "  --json    print one JSON object instead of text\n"
    "  --shape NAME=AxBxC\n"
    "            fix the shape of an input with symbolic dims before inference\n"
    "  --values  also list every value of the main graph with its inferred\n"
    "            dtype and shape (a ? marks a dimension not known statically)\n";

typedef struct op_count {
    const char *op;
    int64_t n;
} op_count;

static int cmp_count(const void *a, const void *b) {
    const op_count *x = a, *y = b;
    if (x->n != y->n) return x->n < y->n ? 1 : -1;
    return strcmp(x->op, y->op);
}

/* Op types with their counts, most frequent first. The loader stores each
 * op type string once, so counting compares pointers; a model has few
 * distinct op types, and the last one seen is tried first. */
static op_count *histogram(const ir_graph *g, int32_t *n_out) {
    op_count *h = calloc(256, sizeof(op_count));
    int32_t n = 0, cap = 256, last = 0;
    if (!h) return NULL;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const char *op = g->nodes[i].op_type;
        if (n && h[last].op == op) {
            h[last].n++;
            continue;
        }
        int32_t k = 0;
        while (k < n && h[k].op != op) k++;
        if (k == n) {
            if (n == cap) {
                op_count *grown = realloc(h, sizeof(op_count) * (size_t)cap * 2);
                if (!grown) break;
                h = grown;
                cap *= 2;
            }
            h[n++] = (op_count){op, 0};
        }
        h[k].n++;
        last = k;
    }
    qsort(h, (size_t)n, sizeof(op_count), cmp_count);
    *n_out = n;
    return h;
}

static json_t *shape_json(const ir_type *t) {
    if (t->kind != IR_TYPE_TENSOR || t->rank < 0) return json_null();
    json_t *a = json_array();
    for (int32_t k = 0; k < t->rank; k++) {
        const ir_dim *d = &t->dims[k];
        json_array_append_new(a, d->v >= 0 ? json_integer(d->v) : d->sym ? json_string(d->sym) : json_null());
    }
    return a;
}

static const char *type_name(const ir_type *t, char *buf, size_t n) {
    switch (t->kind) {
    case IR_TYPE_TENSOR: return t->elem ? seam_dtype_name((seam_dtype)t->elem) : "?";
    case IR_TYPE_SEQUENCE: return "sequence";
    case IR_TYPE_MAP: return "map";
    case IR_TYPE_OPTIONAL: return "optional";
    case IR_TYPE_SPARSE_TENSOR: snprintf(buf, n, "sparse %s", seam_dtype_name((seam_dtype)t->elem)); return buf;
    default: return "?";
    }
}

static json_t *value_json(const ir_value *v) {
    char buf[64];
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(v->name));
    bool known = v->type.kind != IR_TYPE_NONE && !(v->type.kind == IR_TYPE_TENSOR && !v->type.elem);
    json_object_set_new(o, "dtype", known ? json_string(type_name(&v->type, buf, sizeof(buf))) : json_null());
    json_object_set_new(o, "shape", shape_json(&v->type));
    return o;
}

static void print_shape(const ir_type *t) {
    if (t->kind != IR_TYPE_TENSOR || t->rank < 0) {
        printf("[?]");
        return;
    }
    printf("[");
    for (int32_t k = 0; k < t->rank; k++) {
        const ir_dim *d = &t->dims[k];
        if (k) printf(",");
        if (d->v >= 0) printf("%lld", (long long)d->v);
        else printf("%s", d->sym ? d->sym : "?");
    }
    printf("]");
}

static void print_value(const char *label, const ir_value *v) {
    char buf[64];
    printf("  %-8s %-24s %-9s ", label, v->name, type_name(&v->type, buf, sizeof(buf)));
    print_shape(&v->type);
    printf("\n");
}

static bool is_feed(const ir_value *v) { return !(v->flags & IR_VALUE_INIT); }

int cmd_inspect(int argc, char **argv) {
    const char *path = NULL;
    bool as_json = false, values = false, fold = false;
    const char *shapes[64];
    int n_shapes = 0;
    for (int k = 1; k < argc; k++) {
        if (strcmp(argv[k], "--help") == 0 || strcmp(argv[k], "-h") == 0) {
            fputs(INSPECT_HELP, stdout);
            return CLI_OK;
        } else if (strcmp(argv[k], "--json") == 0) {
            as_json = true;
        } else if (strcmp(argv[k], "--values") == 0) {
            values = true;
        } else if (strcmp(argv[k], "--fold") == 0) {
            fold = true;
        } else if (strcmp(argv[k], "--shape") == 0) {
            if (k + 1 >= argc) return cli_usage("inspect", "--shape needs NAME=AxBxC");
            if (n_shapes >= 64) return cli_usage("inspect", "too many --shape options");
            shapes[n_shapes++] = argv[++k];
        } else if (argv[k][0] == '-' && argv[k][1]) {
            return cli_usage("inspect", "unknown option '%s'", argv[k]);
        } else if (path) {
            return cli_usage("inspect", "one model at a time ('%s' and '%s' given)", path, argv[k]);
        } else {
            path = argv[k];
        }
    }
    if (!path) return cli_usage("inspect", "no model given");

    seam_context *ctx;
    if (seam_context_create(&ctx) != SEAM_STATUS_OK) return CLI_BAD_INPUT;
    seam_model *m;
    seam_status st = seam_model_load(ctx, path, &m);
    if (st) {
        int rc = cli_fail("inspect", ctx, st);
        seam_context_free(ctx);
        return rc == CLI_USAGE ? CLI_BAD_INPUT : rc;
    }
    for (int k = 0; k < n_shapes; k++) {
        int rc = cli_set_shape("inspect", ctx, m, shapes[k]);
        if (rc) {
            seam_model_free(m);
            seam_context_free(ctx);
            return rc;
        }
    }
    if (fold && (st = seam_model_fold(m, NULL))) {
        int rc = cli_fail("inspect", ctx, st);
        seam_model_free(m);
        seam_context_free(ctx);
        return rc == CLI_USAGE ? CLI_BAD_INPUT : rc;
    }
    const ir_graph *g = m->graph;
    int32_t n_ops = 0;
    op_count *h = histogram(g, &n_ops);
    int64_t init_bytes = 0;
    for (int32_t k = 0; k < g->n_inits; k++) init_bytes += (int64_t)g->values[g->inits[k]].init->nbytes;

    if (as_json) {
        json_t *o = json_object();
        json_object_set_new(o, "model", json_string(path));
        json_object_set_new(o, "ir_version", json_integer(m->ir_version));
        json_object_set_new(o, "producer", json_string(m->producer_name));
        json_object_set_new(o, "node_count", json_integer(g->n_nodes));
        json_t *ops = json_object();
        for (int32_t k = 0; k < n_ops; k++) json_object_set_new(ops, h[k].op, json_integer(h[k].n));
        json_object_set_new(o, "ops", ops);
        json_t *ins = json_array(), *outs = json_array();
        for (int32_t k = 0; k < g->n_inputs; k++)
            if (is_feed(&g->values[g->inputs[k]])) json_array_append_new(ins, value_json(&g->values[g->inputs[k]]));
        for (int32_t k = 0; k < g->n_outputs; k++) json_array_append_new(outs, value_json(&g->values[g->outputs[k]]));
        json_object_set_new(o, "inputs", ins);
        json_object_set_new(o, "outputs", outs);
        json_t *inits = json_object();
        json_object_set_new(inits, "count", json_integer(g->n_inits + g->n_sparse_inits));
        json_object_set_new(inits, "bytes", json_integer(init_bytes));
        json_object_set_new(o, "initializers", inits);
        json_t *opsets = json_object();
        for (int32_t k = 0; k < m->n_opsets; k++)
            json_object_set_new(opsets, m->opsets[k].domain, json_integer(m->opsets[k].version));
        json_object_set_new(o, "opsets", opsets);
        if (values) {
            json_t *vs = json_array();
            for (int32_t v = 0; v < g->n_values; v++) json_array_append_new(vs, value_json(&g->values[v]));
            json_object_set_new(o, "values", vs);
        }
        json_dumpf(o, stdout, JSON_PRESERVE_ORDER | JSON_COMPACT);
        printf("\n");
        json_decref(o);
    } else {
        printf("%s\n", path);
        printf("  ir_version %lld, producer '%s %s'\n", (long long)m->ir_version, m->producer_name,
               m->producer_version);
        printf("  opsets:");
        for (int32_t k = 0; k < m->n_opsets; k++)
            printf(" %s %lld", m->opsets[k].domain[0] ? m->opsets[k].domain : "ai.onnx",
                   (long long)m->opsets[k].version);
        printf("\n  nodes: %d\n  ops:", g->n_nodes);
        for (int32_t k = 0; k < n_ops; k++) printf("%s %s:%lld", k ? "," : "", h[k].op, (long long)h[k].n);
        printf("\n");
        for (int32_t k = 0; k < g->n_inputs; k++)
            if (is_feed(&g->values[g->inputs[k]])) print_value("input", &g->values[g->inputs[k]]);
        for (int32_t k = 0; k < g->n_outputs; k++) print_value("output", &g->values[g->outputs[k]]);
        printf("  initializers: %d (%.1f MB)\n", g->n_inits + g->n_sparse_inits, (double)init_bytes / 1e6);
        if (values)
            for (int32_t v = 0; v < g->n_values; v++) print_value("value", &g->values[v]);
    }
    free(h);
    seam_model_free(m);
    seam_context_free(ctx);
    return CLI_OK;
}
