/* seam_session_write_trace: the last profiled run as Chrome trace events
 * (the JSON object format: {"traceEvents": [...]}, times in microseconds).
 * Tracks (tid) per target: 1 is the CPU, then one per device target in
 * first-seen order; compiles go on a track of their own per target. The
 * run starts after the compiles, as it does in the process. */
#include <jansson.h>
#include <string.h>

#include "core/context.h"
#include "ir/ir.h"
#include "report/report.h"

static json_t *span(const char *name, const char *cat, double ts_us, double dur_us, int tid, json_t *args) {
    json_t *e = json_object();
    json_object_set_new(e, "name", json_string(name));
    if (!json_object_get(e, "name")) json_object_set_new(e, "name", json_string("(name not UTF-8)"));
    json_object_set_new(e, "cat", json_string(cat));
    json_object_set_new(e, "ph", json_string("X"));
    json_object_set_new(e, "ts", json_real(ts_us));
    json_object_set_new(e, "dur", json_real(dur_us < 0 ? 0 : dur_us));
    json_object_set_new(e, "pid", json_integer(1));
    json_object_set_new(e, "tid", json_integer(tid));
    json_object_set_new(e, "args", args ? args : json_object());
    return e;
}

static json_t *thread_name(int tid, const char *name) {
    json_t *e = json_object(), *args = json_object();
    json_object_set_new(args, "name", json_string(name));
    json_object_set_new(e, "name", json_string("thread_name"));
    json_object_set_new(e, "ph", json_string("M"));
    json_object_set_new(e, "pid", json_integer(1));
    json_object_set_new(e, "tid", json_integer(tid));
    json_object_set_new(e, "args", args);
    return e;
}

static json_t *shapes(const ir_graph *g, const int32_t *vals, int32_t n) {
    json_t *a = json_array();
    for (int32_t k = 0; k < n; k++) {
        if (vals[k] < 0) continue;
        const ir_value *v = &g->values[vals[k]];
        char buf[256];
        size_t len = (size_t)snprintf(buf, sizeof(buf), "%s[", v->type.kind == IR_TYPE_TENSOR ? seam_dtype_name((seam_dtype)v->type.elem) : "?");
        for (int32_t d = 0; d < v->type.rank && len < sizeof(buf) - 24; d++)
            len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%lld", d ? "," : "", (long long)v->type.dims[d].v);
        snprintf(buf + len, sizeof(buf) - len, "]");
        json_array_append_new(a, json_string(buf));
    }
    return a;
}

/* The session log's lines about one subgraph, without their prefix: for
 * dnnl the primitives it chose, their implementations and layouts, what it
 * fused (the nodes inside a device subgraph have no times of their own). */
static json_t *log_lines(const char *log, const char *name) {
    json_t *a = json_array();
    char prefix[600];
    snprintf(prefix, sizeof(prefix), "subgraph '%s' (", name);
    size_t pl = strlen(prefix);
    for (const char *p = log; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        const char *body = len > pl && strncmp(p, prefix, pl) == 0 ? strstr(p + pl, "): ") : NULL;
        if (body && body < p + len) {
            json_t *l = json_stringn(body + 3, (size_t)(p + len - body - 3));
            if (l) json_array_append_new(a, l);
        }
        p += len + (nl ? 1 : 0);
    }
    return a;
}

seam_status seam_session_write_trace(seam_session *s, const seam_model *m, const char *path) {
    if (!s || !m || !path) return SEAM_STATUS_INVALID_ARGUMENT;
    seam_context *ctx = m->ctx;
    const ir_graph *g = m->graph;
    seam_node_stats *st = calloc((size_t)g->n_nodes + 1, sizeof(seam_node_stats));
    if (!st) return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "trace: out of memory");
    for (int32_t i = 0; i < g->n_nodes; i++) {
        seam_status e = seam_session_node_stats(s, i, &st[i]);
        if (e) {
            free(st);
            return e;
        }
    }
    const char *targets[64];
    int32_t n_targets = 0;
    targets[n_targets++] = "cpu";
    json_t *events = json_array();
    /* compiles first: at session creation */
    double t = 0;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        int32_t tt = 0;
        while (tt < n_targets && strcmp(targets[tt], st[i].target) != 0) tt++;
        if (tt == n_targets && n_targets < 64) targets[n_targets++] = st[i].target;
        if (tt >= 64 || st[i].compile_ms <= 0) continue;
        char name[300];
        snprintf(name, sizeof(name), "compile %s", st[i].name);
        json_t *args = json_object();
        json_object_set_new(args, "target", json_string(st[i].target));
        json_object_set_new(args, "log", log_lines(seam_session_log(s), st[i].name));
        json_array_append_new(events, span(name, "compile", t, st[i].compile_ms * 1e3, 100 + tt, args));
        t += st[i].compile_ms * 1e3;
    }
    double base = t > 0 ? t + 10 : 0;
    json_array_append_new(events, thread_name(1, "cpu"));
    for (int32_t k = 1; k < n_targets; k++) {
        json_array_append_new(events, thread_name(1 + k, targets[k]));
        char nm[128];
        snprintf(nm, sizeof(nm), "%s compile (session creation)", targets[k]);
        json_array_append_new(events, thread_name(100 + k, nm));
    }
    double end = base;
    /* the CPU's parts: each run of plain nodes between device subgraphs is
     * one span (the executor runs nodes one at a time, in this order) */
    for (int32_t p = 0, first = -1, count = 0; p <= g->n_nodes; p++) {
        bool plain = p < g->n_nodes && strcmp(g->nodes[g->topo[p]].op_type, "Subgraph") != 0;
        if (plain && first < 0) first = p, count = 0;
        if (plain) count++;
        if (plain || first < 0) continue;
        const seam_node_stats *a = &st[g->topo[first]], *b = &st[g->topo[p - 1]];
        char name[64];
        snprintf(name, sizeof(name), "cpu nodes (%d)", count);
        json_t *args = json_object();
        json_object_set_new(args, "nodes", json_integer(count));
        json_array_append_new(events, span(name, "cpu part", base + a->start_ms * 1e3, (b->start_ms + b->ms - a->start_ms) * 1e3, 1, args));
        first = -1;
    }
    for (int32_t p = 0; p < g->n_nodes; p++) {
        int32_t i = g->topo[p];
        const ir_node *n = &g->nodes[i];
        int32_t tt = 0;
        while (tt < n_targets && strcmp(targets[tt], st[i].target) != 0) tt++;
        int tid = 1 + (tt < n_targets ? tt : 0);
        double ts = base + st[i].start_ms * 1e3, dur = st[i].ms * 1e3;
        if (ts + dur > end) end = ts + dur;
        json_t *args = json_object();
        json_object_set_new(args, "op", json_string(st[i].op_type));
        json_object_set_new(args, "inputs", shapes(g, n->inputs, n->n_inputs));
        json_object_set_new(args, "outputs", shapes(g, n->outputs, n->n_outputs));
        const ir_attr *body = strcmp(n->op_type, "Subgraph") == 0 ? ir_node_attr(n, "body") : NULL;
        bool sub = body && body->kind == IR_ATTR_GRAPH && body->g;
        if (sub) {
            json_t *ops = json_array();
            for (int32_t k = 0; k < body->g->n_nodes; k++) json_array_append_new(ops, json_string(body->g->nodes[k].op_type));
            json_object_set_new(args, "nodes", ops);
            json_object_set_new(args, "bytes_in", json_integer(st[i].bytes_in));
            json_object_set_new(args, "bytes_out", json_integer(st[i].bytes_out));
            json_object_set_new(args, "compile_ms", json_real(st[i].compile_ms));
            json_object_set_new(args, "compile_log", log_lines(seam_session_log(s), st[i].name));
        }
        json_array_append_new(events, span(st[i].name, sub ? "subgraph" : "node", ts, dur, tid, args));
        if (sub && st[i].copy_ms > 0) {
            /* one copy time is measured; it is drawn split by bytes, copy in at the start, out at the end */
            double c = st[i].copy_ms * 1e3, tot = (double)(st[i].bytes_in + st[i].bytes_out);
            double cin = tot > 0 ? c * (double)st[i].bytes_in / tot : c;
            if (cin > dur) cin = dur;
            double cout = c - cin > dur - cin ? dur - cin : c - cin;
            json_t *a1 = json_object(), *a2 = json_object();
            json_object_set_new(a1, "bytes", json_integer(st[i].bytes_in));
            json_object_set_new(a2, "bytes", json_integer(st[i].bytes_out));
            json_array_append_new(events, span("copy in", "copy", ts, cin, tid, a1));
            json_array_append_new(events, span("copy out", "copy", ts + dur - cout, cout, tid, a2));
        }
    }
    json_t *root = json_object(), *meta = json_object();
    json_object_set_new(root, "traceEvents", events);
    json_object_set_new(root, "displayTimeUnit", json_string("ms"));
    json_object_set_new(meta, "producer", json_string("seam"));
    json_object_set_new(meta, "run_start_us", json_real(base));
    json_object_set_new(meta, "run_end_us", json_real(end));
    json_object_set_new(meta, "device_subgraphs",
                        json_string("A device subgraph is one span: the times of the nodes inside it are not measured "
                                    "(its args list them; seam run --compile-log shows what its backend compiled). "
                                    "Its boundary copies are measured as one time, drawn split by bytes."));
    json_object_set_new(root, "metadata", meta);
    free(st);
    char *text = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    if (!text) return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "trace: out of memory");
    seam_status e = rep_write_bytes(ctx, path, text, strlen(text));
    free(text);
    return e;
}
