/* seam_report: a snapshot of a plan, and of the measured run that followed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/context.h"
#include "ir/ir.h"
#include "onnx/onnx.h"
#include "report/report.h"

static seam_status oom(seam_context *ctx) { return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "report: out of memory"); }

const char *report_color(const char *target) {
    static const char *palette[] = {"#8ecae6", "#ffb703", "#b5e48c", "#f4a261", "#cdb4db", "#90be6d", "#f28482"};
    if (strcmp(target, "cpu") == 0) return "#e9ecef";
    if (strcmp(target, "constant") == 0) return "#ffffff";
    uint32_t h = 2166136261u; /* FNV-1a: one colour per name, the same on every page */
    for (const char *p = target; *p; p++) h = (h ^ (uint8_t)*p) * 16777619u;
    return palette[h % (sizeof(palette) / sizeof(palette[0]))];
}

/* "name\tfloat32[1,3,224,224]" per value, one per line. */
static const char *value_lines(seam_arena *a, const ir_graph *g, const int32_t *vals, int32_t n) {
    size_t cap = 64, len = 0;
    for (int32_t k = 0; k < n; k++) cap += (vals[k] >= 0 ? strlen(g->values[vals[k]].name) : 0) + 48 + 24 * 8;
    char *s = seam_arena_alloc(a, cap);
    if (!s) return NULL;
    s[0] = 0;
    for (int32_t k = 0; k < n; k++) {
        if (vals[k] < 0) continue;
        const ir_value *v = &g->values[vals[k]];
        len += (size_t)snprintf(s + len, cap - len, "%s%s\t", len ? "\n" : "", v->name);
        if (v->type.kind != IR_TYPE_TENSOR) {
            len += (size_t)snprintf(s + len, cap - len, "?");
            continue;
        }
        len += (size_t)snprintf(s + len, cap - len, "%s", seam_dtype_name((seam_dtype)v->type.elem));
        if (v->type.rank < 0) {
            len += (size_t)snprintf(s + len, cap - len, "[?]");
            continue;
        }
        len += (size_t)snprintf(s + len, cap - len, "[");
        for (int32_t d = 0; d < v->type.rank && d < 8; d++) {
            if (v->type.dims[d].v >= 0) len += (size_t)snprintf(s + len, cap - len, "%s%lld", d ? "," : "", (long long)v->type.dims[d].v);
            else len += (size_t)snprintf(s + len, cap - len, "%s?", d ? "," : "");
        }
        len += (size_t)snprintf(s + len, cap - len, "%s]", v->type.rank > 8 ? ",..." : "");
    }
    return s;
}

static int64_t value_bytes(const ir_value *v) {
    if (v->type.kind != IR_TYPE_TENSOR || v->type.rank < 0) return -1;
    int64_t n = 1;
    for (int32_t d = 0; d < v->type.rank; d++) {
        if (v->type.dims[d].v < 0) return -1;
        n *= v->type.dims[d].v;
        if (n > IR_MAX_NUMEL) return -1;
    }
    return n * (int64_t)seam_dtype_size((seam_dtype)v->type.elem);
}

seam_status seam_report_create(const seam_plan *plan, const char *model_name, seam_report **out) {
    if (!out) return SEAM_STATUS_INVALID_ARGUMENT;
    *out = NULL;
    const seam_model *m = seam_plan_model(plan);
    if (!m) return SEAM_STATUS_INVALID_ARGUMENT;
    seam_context *ctx = m->ctx;
    const ir_graph *g = m->graph;
    if (g->n_nodes != seam_plan_node_count(plan))
        return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "report: the plan no longer describes its model (applied?)");
    seam_report *r = calloc(1, sizeof(*r));
    if (!r) return oom(ctx);
    seam_arena_init(&r->arena, 1 << 16);
    seam_arena *a = &r->arena;
    r->ctx = ctx;
    r->model_name = seam_arena_strdup(a, model_name ? model_name : (g->name ? g->name : "model"));
    r->n_nodes = g->n_nodes;
    r->n_subgraphs = seam_plan_subgraph_count(plan);
    seam_plan_support(plan, &r->supported, &r->counted);
    seam_plan_estimate_get(plan, &r->est);
    r->notes = seam_arena_strdup(a, seam_plan_notes(plan));
    r->nodes = seam_arena_calloc(a, (size_t)r->n_nodes + 1, sizeof(rep_node));
    r->subgraphs = seam_arena_calloc(a, (size_t)r->n_subgraphs + 1, sizeof(rep_subgraph));
    if (!r->model_name || !r->notes || !r->nodes || !r->subgraphs) goto fail;
    for (int32_t i = 0; i < r->n_nodes; i++) {
        seam_plan_node_info pn;
        seam_plan_node(plan, i, &pn);
        const ir_node *n = &g->nodes[i];
        rep_node *rn = &r->nodes[i];
        rn->name = seam_arena_strdup(a, pn.name ? pn.name : "");
        rn->op = seam_arena_strdup(a, pn.op_type ? pn.op_type : "");
        rn->target = seam_arena_strdup(a, pn.target ? pn.target : "");
        rn->detail = seam_arena_strdup(a, pn.detail ? pn.detail : "");
        rn->subgraph = pn.subgraph;
        rn->reason = (int32_t)pn.reason;
        rn->ms = -1;
        rn->ins = value_lines(a, g, n->inputs, n->n_inputs);
        rn->outs = value_lines(a, g, n->outputs, n->n_outputs);
        rn->pred = seam_arena_alloc(a, sizeof(int32_t) * (size_t)(n->n_inputs + 1));
        rn->pred_bytes = seam_arena_alloc(a, sizeof(int64_t) * (size_t)(n->n_inputs + 1));
        if (!rn->name || !rn->op || !rn->target || !rn->detail || !rn->ins || !rn->outs || !rn->pred || !rn->pred_bytes)
            goto fail;
        for (int32_t k = 0; k < n->n_inputs; k++) {
            int32_t v = n->inputs[k];
            if (v < 0 || g->values[v].producer < 0) continue;
            rn->pred[rn->n_preds] = g->values[v].producer;
            rn->pred_bytes[rn->n_preds++] = value_bytes(&g->values[v]);
        }
    }
    for (int32_t s = 0; s < r->n_subgraphs; s++) {
        seam_plan_subgraph_info si;
        seam_plan_subgraph(plan, s, &si);
        rep_subgraph *rs = &r->subgraphs[s];
        rs->target = seam_arena_strdup(a, si.target);
        rs->n_nodes = si.n_nodes, rs->n_inputs = si.n_inputs, rs->n_outputs = si.n_outputs;
        rs->nodes = seam_arena_memdup(a, si.nodes, sizeof(int32_t) * (size_t)si.n_nodes + 1);
        rs->est_us = si.est_us;
        rs->boundary_bytes = si.boundary_bytes;
        rs->ms = rs->compile_ms = -1;
        rs->device = strcmp(si.target, "cpu") != 0;
        if (!rs->target || !rs->nodes) goto fail;
    }
    /* the plan's JSON, in one pass when the guess of its size holds */
    size_t size = 4096 + 160 * (size_t)r->n_nodes, need = 0;
    char *js = malloc(size);
    if (!js || seam_plan_json(plan, r->model_name, js, size, &need)) goto fail_js;
    if (need > size) {
        free(js);
        js = malloc(need);
        if (!js || seam_plan_json(plan, r->model_name, js, need, NULL)) goto fail_js;
    }
    r->plan_json = seam_arena_strdup(a, js);
    free(js);
    if (!r->plan_json) goto fail;
    *out = r;
    return SEAM_STATUS_OK;
fail_js:
    free(js);
fail:
    seam_report_free(r);
    return oom(ctx);
}

void seam_report_free(seam_report *r) {
    if (!r) return;
    free(r->partitioned);
    seam_arena_free(&r->arena);
    free(r);
}

seam_status seam_report_set_partitioned(seam_report *r, seam_model *m) {
    if (!r || !m) return SEAM_STATUS_INVALID_ARGUMENT;
    if (r->exposed)
        return seam_error(r->ctx, SEAM_STATUS_INVALID_ARGUMENT, "report: set the partitioned model before exposing its boundaries");
    free(r->partitioned);
    r->partitioned = NULL;
    return onnx_model_pack(m, &r->partitioned, &r->partitioned_len);
}

seam_status seam_report_expose_boundaries(seam_report *r, seam_model *m) {
    if (!r || !m) return SEAM_STATUS_INVALID_ARGUMENT;
    ir_graph *g = m->graph;
    uint8_t *is_out = calloc((size_t)g->n_values + 1, 1);
    int32_t *outs = is_out ? seam_arena_alloc(&m->arena, sizeof(int32_t) * ((size_t)g->n_values + 1)) : NULL;
    if (!outs) {
        free(is_out);
        return oom(m->ctx);
    }
    int32_t n = 0;
    for (int32_t o = 0; o < g->n_outputs; o++) {
        outs[n++] = g->outputs[o];
        is_out[g->outputs[o]] = 1;
    }
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const ir_node *nd = &g->nodes[i];
        if (strcmp(nd->domain, "ai.seam") != 0 || strcmp(nd->op_type, "Subgraph") != 0) continue;
        for (int32_t side = 0; side < 2; side++) {
            int32_t cnt = side ? nd->n_outputs : nd->n_inputs;
            const int32_t *vs = side ? nd->outputs : nd->inputs;
            for (int32_t k = 0; k < cnt; k++) {
                int32_t v = vs[k];
                /* graph inputs are the caller's; weights and constants are in the model */
                if (v < 0 || is_out[v] || (g->values[v].flags & (IR_VALUE_INPUT | IR_VALUE_INIT))) continue;
                if (g->values[v].producer >= 0 && strcmp(g->nodes[g->values[v].producer].op_type, "Constant") == 0) continue;
                is_out[v] = 1;
                outs[n++] = v;
                g->values[v].flags |= IR_VALUE_OUTPUT;
            }
        }
    }
    free(is_out);
    g->outputs = outs;
    g->n_outputs = n;
    r->exposed = true;
    return SEAM_STATUS_OK;
}

/* The plan subgraph of an ai.seam Subgraph node: apply names it
 * seam_subgraph_<id>_<target>. */
static int32_t subgraph_of_name(const char *name) {
    const char *p = "seam_subgraph_";
    if (strncmp(name, p, strlen(p)) != 0) return -1;
    char *end;
    long s = strtol(name + strlen(p), &end, 10);
    return end != name + strlen(p) && *end == '_' && s >= 0 && s < INT32_MAX ? (int32_t)s : -1;
}

typedef struct name_ix {
    const char *name;
    int32_t ix;
} name_ix;
static int cmp_name_ix(const void *a, const void *b) {
    return strcmp(((const name_ix *)a)->name, ((const name_ix *)b)->name);
}

seam_status seam_report_add_run(seam_report *r, seam_session *s, const seam_model *m) {
    if (!r || !s || !m) return SEAM_STATUS_INVALID_ARGUMENT;
    /* plain nodes keep their names through apply: find them by name */
    name_ix *byname = malloc(sizeof(name_ix) * ((size_t)r->n_nodes + 1));
    if (!byname) return oom(r->ctx);
    for (int32_t i = 0; i < r->n_nodes; i++) byname[i] = (name_ix){r->nodes[i].name, i};
    qsort(byname, (size_t)r->n_nodes, sizeof(name_ix), cmp_name_ix);
    for (int32_t k = 0; k < r->n_subgraphs; k++) r->subgraphs[k].ms = r->subgraphs[k].device ? -1 : 0;
    int32_t n = seam_model_node_count(m);
    bool any = false;
    for (int32_t i = 0; i < n; i++) {
        seam_node_stats st;
        if (seam_session_node_stats(s, i, &st) != SEAM_STATUS_OK) continue;
        any = true;
        int32_t sg = strcmp(st.op_type, "Subgraph") == 0 ? subgraph_of_name(st.name) : -1;
        /* the plan's own device subgraph (not a Subgraph node of a model
         * partitioned earlier, which this plan sees as a node) */
        if (sg >= 0 && sg < r->n_subgraphs && r->subgraphs[sg].device && strcmp(r->subgraphs[sg].target, st.target) == 0) {
            r->subgraphs[sg].ms = st.ms;
            r->subgraphs[sg].compile_ms = st.compile_ms;
            continue;
        }
        name_ix key = {st.name, 0};
        const name_ix *hit = bsearch(&key, byname, (size_t)r->n_nodes, sizeof(name_ix), cmp_name_ix);
        if (!hit) continue;
        rep_node *rn = &r->nodes[hit->ix];
        rn->ms = st.ms;
        if (rn->subgraph >= 0 && rn->subgraph < r->n_subgraphs) {
            rep_subgraph *rs = &r->subgraphs[rn->subgraph];
            rs->ms = (rs->ms < 0 ? 0 : rs->ms) + st.ms;
        }
    }
    free(byname);
    if (!any) return seam_error(r->ctx, SEAM_STATUS_INVALID_ARGUMENT, "report: the session has no profile (make it with options.profile)");
    r->measured = true;
    r->session_log = seam_arena_strdup(&r->arena, seam_session_log(s));
    return SEAM_STATUS_OK;
}

seam_status rep_open(seam_context *ctx, rep_file *rf, const char *path) {
    memset(rf, 0, sizeof(*rf));
    rf->path = path;
    size_t len = strlen(path);
    rf->tmp = malloc(len + 32);
    if (!rf->tmp) return oom(ctx);
    snprintf(rf->tmp, len + 32, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(rf->tmp);
    if (fd < 0) {
        seam_status st = seam_error(ctx, SEAM_STATUS_IO_ERROR, "cannot write '%s': %s", path, strerror(errno));
        free(rf->tmp);
        rf->tmp = NULL;
        return st;
    }
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask); /* mkstemp makes it 0600; a report is for others to read */
    rf->f = fdopen(fd, "wb");
    if (!rf->f) {
        close(fd);
        unlink(rf->tmp);
        free(rf->tmp);
        rf->tmp = NULL;
        return oom(ctx);
    }
    return SEAM_STATUS_OK;
}

seam_status rep_close(seam_context *ctx, rep_file *rf, bool ok) {
    if (!rf->f) return SEAM_STATUS_IO_ERROR;
    int err = ferror(rf->f) ? EIO : 0;
    if (fclose(rf->f) != 0 && !err) err = errno;
    rf->f = NULL;
    seam_status st = SEAM_STATUS_OK;
    if (ok && !err && rename(rf->tmp, rf->path) != 0) err = errno;
    if (!ok || err) {
        unlink(rf->tmp);
        if (ok) st = seam_error(ctx, SEAM_STATUS_IO_ERROR, "cannot write '%s': %s", rf->path, strerror(err));
        else st = SEAM_STATUS_IO_ERROR;
    }
    free(rf->tmp);
    rf->tmp = NULL;
    return st;
}

seam_status rep_write_bytes(seam_context *ctx, const char *path, const void *data, size_t n) {
    rep_file rf;
    seam_status st = rep_open(ctx, &rf, path);
    if (st) return st;
    bool ok = fwrite(data, 1, n, rf.f) == n;
    return rep_close(ctx, &rf, ok) ? seam_error(ctx, SEAM_STATUS_IO_ERROR, "cannot write '%s'", path) : SEAM_STATUS_OK;
}

void rep_html_escape(FILE *f, const char *s) {
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*s, f);
        }
    }
}
