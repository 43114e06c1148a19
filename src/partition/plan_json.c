/* The plan as JSON: seam_plan_json (seam partition --json), written
 * directly as text, and seam_plan_analysis_json (seam analyze --json),
 * through jansson. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "partition/partition.h"

/* Counts op in a JSON object kept in first-seen order. */
static void count_op(json_t *hist, const char *op) {
    json_t *c = json_object_get(hist, op);
    json_object_set_new(hist, op, json_integer(c ? json_integer_value(c) + 1 : 1));
}

static json_t *plan_head(const seam_plan *p, const char *model_name) {
    json_t *o = json_object(), *jt = json_array();
    int32_t supported, counted;
    seam_plan_support(p, &supported, &counted);
    json_object_set_new(o, "model", json_string(model_name ? model_name : ""));
    for (int32_t t = 0; t <= p->n_targets; t++) json_array_append_new(jt, json_string(p->target_names[t]));
    json_object_set_new(o, "targets", jt);
    json_object_set_new(o, "supported_fraction", json_real(counted ? (double)supported / counted : 1.0));
    return o;
}

/* ---- the plan as JSON text ----
 * A million-node plan is about 100 MB of JSON: it is written directly as
 * text, in the exact form jansson's compact dump gives (the analysis, which
 * is small, still goes through jansson). */

typedef struct jtext {
    char *s;
    size_t len, cap;
    bool oom;
} jtext;

static bool jt_reserve(jtext *j, size_t n) {
    if (j->oom) return false;
    if (j->cap - j->len >= n) return true;
    size_t cap = j->cap ? j->cap : 4096;
    while (cap - j->len < n) {
        if (cap > SIZE_MAX / 2) {
            j->oom = true;
            return false;
        }
        cap *= 2;
    }
    char *s = realloc(j->s, cap);
    if (!s) {
        j->oom = true;
        return false;
    }
    j->s = s;
    j->cap = cap;
    return true;
}

static void jt_put(jtext *j, const char *s, size_t n) {
    if (!jt_reserve(j, n)) return;
    memcpy(j->s + j->len, s, n);
    j->len += n;
}

#define JT_LIT(j, lit) jt_put((j), (lit), sizeof(lit) - 1)

static void jt_int(jtext *j, long long v) {
    char tmp[24];
    int n = 0;
    unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
    do tmp[sizeof(tmp) - 1 - n++] = (char)('0' + u % 10);
    while ((u /= 10) != 0);
    if (v < 0) tmp[sizeof(tmp) - 1 - n++] = '-';
    jt_put(j, tmp + sizeof(tmp) - n, (size_t)n);
}

/* jansson's real format: %.17g, ".0" added when the text reads as an
 * integer, the exponent without '+' and leading zeros. */
static void jt_real(jtext *j, double v) {
    char b[40];
    int n = snprintf(b, sizeof(b), "%.17g", v);
    if (n < 0 || (size_t)n >= sizeof(b) - 3) {
        j->oom = true;
        return;
    }
    if (!strchr(b, '.') && !strchr(b, 'e')) {
        memcpy(b + n, ".0", 3);
        n += 2;
    }
    char *e = strchr(b, 'e');
    if (e) {
        char *start = e + 1, *end = e + 2;
        if (*start == '-') start++;
        while (*end == '0') end++;
        if (end != start) {
            memmove(start, end, (size_t)(b + n + 1 - end));
            n -= (int)(end - start);
        }
    }
    jt_put(j, b, (size_t)n);
}

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    size_t len;
    uint32_t cp;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) len = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, cp = c & 0x07;
    else return 0;
    if (len > n) return 0;
    for (size_t k = 1; k < len; k++) {
        if ((s[k] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (s[k] & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

/* A JSON string: '"' and '\\' escaped, control characters as jansson
 * writes them; bytes that are not UTF-8 (which jansson refuses) become
 * U+FFFD. */
static void jt_esc(jtext *j, const char *str, size_t n) {
    const unsigned char *s = (const unsigned char *)str;
    size_t run = 0; /* start of the bytes not yet written */
    for (size_t k = 0; k < n;) {
        unsigned c = s[k];
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
            k++;
            continue;
        }
        size_t len = c >= 0x80 ? utf8_len(s + k, n - k) : 1;
        if (c >= 0x80 && len) {
            k += len;
            continue;
        }
        jt_put(j, str + run, k - run);
        switch (c) {
        case '"': JT_LIT(j, "\\\""); break;
        case '\\': JT_LIT(j, "\\\\"); break;
        case '\b': JT_LIT(j, "\\b"); break;
        case '\f': JT_LIT(j, "\\f"); break;
        case '\n': JT_LIT(j, "\\n"); break;
        case '\r': JT_LIT(j, "\\r"); break;
        case '\t': JT_LIT(j, "\\t"); break;
        default:
            if (c < 0x20) {
                char u[8];
                snprintf(u, sizeof(u), "\\u%04X", c);
                jt_put(j, u, 6);
            } else {
                JT_LIT(j, "\xEF\xBF\xBD");
            }
        }
        run = ++k;
    }
    jt_put(j, str + run, n - run);
}

static void jt_str(jtext *j, const char *str, size_t n) {
    JT_LIT(j, "\"");
    jt_esc(j, str, n);
    JT_LIT(j, "\"");
}

static void jt_cstr(jtext *j, const char *s) { jt_str(j, s, strlen(s)); }

/* ,"key": before a member (no comma before the first). */
static void jt_key(jtext *j, const char *key, bool first) {
    if (!first) JT_LIT(j, ",");
    jt_cstr(j, key);
    JT_LIT(j, ":");
}

/* A real member; jansson has no NaN or infinity, and leaves such a
 * member out. */
static void jt_real_member(jtext *j, const char *key, double v) {
    if (!isfinite(v)) return;
    jt_key(j, key, false);
    jt_real(j, v);
}

static void jt_names(jtext *j, const char *const *names, int32_t n) {
    JT_LIT(j, "[");
    for (int32_t k = 0; k < n; k++) {
        if (k) JT_LIT(j, ",");
        jt_cstr(j, names[k]);
    }
    JT_LIT(j, "]");
}

/* A subgraph's arithmetic: "int8" when its heavy ops (convolutions and
 * matrix products) are all quantized (QLinear*, *Integer), "fp32" when none
 * is, "mixed" when both kinds are there. */
static const char *subgraph_precision(const seam_plan *p, const seam_plan_subgraph_info *sg) {
    bool q = false, f = false;
    for (int32_t k = 0; k < sg->n_nodes; k++) {
        const char *op = p->model->graph->nodes[sg->nodes[k]].op_type;
        if (strncmp(op, "QLinear", 7) == 0 || strcmp(op, "ConvInteger") == 0 || strcmp(op, "MatMulInteger") == 0)
            q = true;
        else if (strcmp(op, "Conv") == 0 || strcmp(op, "ConvTranspose") == 0 || strcmp(op, "MatMul") == 0 ||
                 strcmp(op, "Gemm") == 0)
            f = true;
    }
    return q && f ? "mixed" : q ? "int8" : "fp32";
}

/* A DimExpr node's expressions (ops/symdim.c) as "dimexpr", with its
 * symbols' names for $k: what the shape arithmetic node computes. */
static void jt_dimexpr(jtext *j, const ir_node *n) {
    if (strcmp(n->op_type, "DimExpr") || strcmp(n->domain, "ai.seam")) return;
    const ir_attr *ex = ir_node_attr(n, "exprs"), *sy = ir_node_attr(n, "symbols");
    if (!ex || ex->kind != IR_ATTR_STRINGS || (sy && sy->kind != IR_ATTR_STRINGS)) return;
    jt_key(j, "dimexpr", false);
    JT_LIT(j, "[");
    for (int32_t k = 0; k < ex->n; k++) {
        char buf[1024];
        size_t at = 0;
        const char *e = (const char *)ex->strings[k].data, *end = e + ex->strings[k].len;
        while (e < end && at < sizeof(buf) - 1) {
            if (*e == '$') {
                const char *q = e + 1;
                long sym = 0;
                while (q < end && *q >= '0' && *q <= '9' && sym < 100000) sym = sym * 10 + (*q++ - '0');
                if (sy && q > e + 1 && sym < sy->n) {
                    size_t l = sy->strings[sym].len < sizeof(buf) - 1 - at ? sy->strings[sym].len : sizeof(buf) - 1 - at;
                    memcpy(buf + at, sy->strings[sym].data, l);
                    at += l, e = q;
                    continue;
                }
            }
            buf[at++] = *e++;
        }
        if (k) JT_LIT(j, ",");
        jt_str(j, buf, at);
    }
    JT_LIT(j, "]");
}

static void plan_text(const seam_plan *p, const char *model_name, jtext *j) {
    int32_t supported, counted;
    seam_plan_support(p, &supported, &counted);
    JT_LIT(j, "{");
    jt_key(j, "model", true);
    jt_cstr(j, model_name ? model_name : "");
    jt_key(j, "targets", false);
    jt_names(j, p->target_names, p->n_targets + 1);
    jt_real_member(j, "supported_fraction", counted ? (double)supported / counted : 1.0);
    jt_key(j, "subgraphs", false);
    JT_LIT(j, "[");
    for (int32_t s = 0; s < p->n_subgraphs && !j->oom; s++) {
        seam_plan_subgraph_info sg;
        seam_plan_subgraph(p, s, &sg);
        if (s) JT_LIT(j, ",");
        JT_LIT(j, "{\"id\":");
        jt_int(j, s);
        jt_key(j, "target", false);
        jt_cstr(j, sg.target);
        jt_key(j, "nodes", false);
        JT_LIT(j, "[");
        for (int32_t k = 0; k < sg.n_nodes; k++) {
            if (k) JT_LIT(j, ",");
            jt_int(j, sg.nodes[k]);
        }
        JT_LIT(j, "]");
        jt_key(j, "inputs", false);
        jt_names(j, sg.inputs, sg.n_inputs);
        jt_key(j, "outputs", false);
        jt_names(j, sg.outputs, sg.n_outputs);
        jt_real_member(j, "estimated_us", sg.est_us);
        jt_key(j, "boundary_bytes", false);
        jt_int(j, sg.boundary_bytes);
        if (strcmp(sg.target, "cpu") != 0) {
            jt_key(j, "memory_bytes", false);
            jt_int(j, sg.memory_bytes);
        }
        jt_key(j, "precision", false);
        jt_cstr(j, subgraph_precision(p, &sg));
        JT_LIT(j, "}");
    }
    JT_LIT(j, "]");
    jt_key(j, "estimate", false);
    JT_LIT(j, "{");
    /* the first member decides the commas: write them as jansson would */
    bool first = true;
    const char *ek[3] = {"plan_us", "all_cpu_us", "capability_us"};
    double ev[3] = {p->est.total_us, p->est.all_cpu_us, p->est.capability_us};
    for (int k = 0; k < 3; k++) {
        if (!isfinite(ev[k])) continue;
        jt_key(j, ek[k], first);
        jt_real(j, ev[k]);
        first = false;
    }
    jt_key(j, "guessed_nodes", first); /* nodes whose sizes are known only at run time */
    jt_int(j, p->est_guessed);
    first = false;
    jt_key(j, "rates", first); /* where the cost model's CPU rates come from */
    jt_cstr(j, seam_cost_rates_source());
    JT_LIT(j, "}");
    jt_key(j, "nodes", false);
    JT_LIT(j, "[");
    char why[2400];
    for (int32_t i = 0; i < p->n_nodes && !j->oom; i++) {
        seam_plan_node_info n;
        seam_plan_node(p, i, &n);
        if (i) JT_LIT(j, ",");
        JT_LIT(j, "{\"index\":");
        jt_int(j, i);
        jt_key(j, "name", false);
        jt_cstr(j, n.name);
        jt_key(j, "op", false);
        jt_cstr(j, n.op_type);
        jt_key(j, "target", false);
        jt_cstr(j, n.target);
        jt_key(j, "reason", false);
        /* "unsupported: npu: TopK is not supported", "supported by npu",
         * "constant": written in pieces (a million snprintf calls cost
         * more than the rest of the text), cut at sizeof(why) - 1 bytes
         * as the text always was */
        const char *word = seam_reason_name(n.reason);
        size_t wl = strlen(word), dl = strlen(n.detail), tl = strlen(n.target);
        if (n.detail[0] && wl + 2 + dl < sizeof(why)) {
            JT_LIT(j, "\"");
            jt_esc(j, word, wl);
            JT_LIT(j, ": ");
            jt_esc(j, n.detail, dl);
            JT_LIT(j, "\"");
        } else if (!n.detail[0] && n.reason == SEAM_REASON_SUPPORTED && 13 + tl < sizeof(why)) {
            JT_LIT(j, "\"supported by ");
            jt_esc(j, n.target, tl);
            JT_LIT(j, "\"");
        } else if (!n.detail[0] && n.reason != SEAM_REASON_SUPPORTED) {
            jt_str(j, word, wl);
        } else { /* longer than that: cut */
            size_t at = 0;
            const char *part[3] = {n.detail[0] ? word : "supported by ", n.detail[0] ? ": " : n.target, n.detail};
            for (int k = 0; k < (n.detail[0] ? 3 : 2); k++) {
                size_t pl = strlen(part[k]);
                if (pl > sizeof(why) - 1 - at) pl = sizeof(why) - 1 - at;
                memcpy(why + at, part[k], pl);
                at += pl;
            }
            jt_str(j, why, at);
        }
        if (p->node_unit && p->node_unit[i] >= 0) { /* a member of a QDQ unit kept as nodes: its op's index */
            jt_key(j, "unit", false);
            jt_int(j, p->node_unit[i]);
        }
        jt_dimexpr(j, &p->model->graph->nodes[i]);
        JT_LIT(j, "}");
    }
    JT_LIT(j, "]");
    jt_key(j, "notes", false);
    JT_LIT(j, "[");
    bool first_note = true;
    for (const char *notes = seam_plan_notes(p); *notes;) {
        const char *nl = strchr(notes, '\n');
        size_t len = nl ? (size_t)(nl - notes) : strlen(notes);
        if (!first_note) JT_LIT(j, ",");
        jt_str(j, notes, len);
        first_note = false;
        notes += len + (nl ? 1 : 0);
    }
    JT_LIT(j, "]}");
}

static json_t *analysis_object(const seam_plan *p, const char *model_name) {
    json_t *o = plan_head(p, model_name), *js = json_object(), *ju = json_object(), *jn = json_array();
    int32_t supported, counted;
    seam_plan_support(p, &supported, &counted);
    json_object_set_new(o, "supported_count", json_integer(supported));
    json_object_set_new(o, "node_count", json_integer(counted));
    for (int32_t i = 0; i < p->n_nodes; i++) {
        seam_plan_node_info n;
        seam_plan_node(p, i, &n);
        if (n.reason == SEAM_REASON_CONSTANT) continue;
        count_op(n.reason == SEAM_REASON_UNSUPPORTED ? ju : js, n.op_type);
        if (n.reason != SEAM_REASON_UNSUPPORTED) continue;
        json_t *e = json_object();
        json_object_set_new(e, "index", json_integer(i));
        json_object_set_new(e, "name", json_string(n.name));
        json_object_set_new(e, "op", json_string(n.op_type));
        json_object_set_new(e, "reason", json_string(n.detail));
        json_array_append_new(jn, e);
    }
    json_object_set_new(o, "supported_ops", js);
    json_object_set_new(o, "unsupported_ops", ju);
    json_object_set_new(o, "unsupported_nodes", jn);
    return o;
}

/* Writes o (taken) into buf as NUL-terminated text, snprintf-style. */
static seam_status plan_dump(const seam_plan *p, json_t *o, char *buf, size_t size, size_t *needed) {
    size_t n = o ? json_dumpb(o, buf, buf && size ? size - 1 : 0, JSON_PRESERVE_ORDER | JSON_COMPACT) : 0;
    json_decref(o);
    if (n == 0) return seam_error(p->model->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory writing the plan as JSON");
    if (needed) *needed = n + 1;
    if (buf && size) buf[n < size ? n : size - 1] = 0;
    return SEAM_STATUS_OK;
}

/* The text is made once for the size query and kept in the plan until the
 * call that receives it (a plan is used by one thread at a time). */
seam_status seam_plan_json(const seam_plan *plan, const char *model_name, char *buf, size_t size, size_t *needed) {
    if (!plan) return SEAM_STATUS_INVALID_ARGUMENT;
    seam_plan *p = (seam_plan *)plan;
    const char *mn = model_name ? model_name : "";
    if (!p->json || strcmp(p->json_model, mn) != 0) {
        plan_json_drop(p);
        jtext j = {0};
        plan_text(p, mn, &j);
        jt_put(&j, "", 1);
        p->json_model = strdup(mn);
        if (j.oom || !p->json_model) {
            free(j.s);
            free(p->json_model);
            p->json_model = NULL;
            return seam_error(p->model->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory writing the plan as JSON");
        }
        p->json = j.s;
        p->json_len = j.len - 1;
        seam_phase(p->model->ctx, "plan json");
    }
    if (needed) *needed = p->json_len + 1;
    if (buf && size) {
        size_t n = p->json_len < size ? p->json_len : size - 1;
        memcpy(buf, p->json, n);
        buf[n] = 0;
        if (n == p->json_len) plan_json_drop(p);
    }
    return SEAM_STATUS_OK;
}

seam_status seam_plan_analysis_json(const seam_plan *plan, const char *model_name, char *buf, size_t size,
                                    size_t *needed) {
    if (!plan) return SEAM_STATUS_INVALID_ARGUMENT;
    return plan_dump(plan, analysis_object(plan, model_name), buf, size, needed);
}
