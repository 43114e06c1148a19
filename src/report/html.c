/* seam_report_write_html: one self-contained page of a plan. The graph is
 * laid out by graphviz's C library (dot) into SVG at write time; the
 * page's script only shows details, never lays anything out. dot grows
 * faster than linearly, so big graphs get one box per subgraph (limits in
 * seam_report.h). */
#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "report/report.h"

/* Labels go to graphviz, which reads backslash escapes (\N, \l) in them
 * and needs valid text: printable ASCII only, backslashes doubled, at most
 * max characters. */
static void gv_text(char *out, size_t n, const char *s, size_t max) {
    size_t k = 0, used = 0;
    for (; *s && k + 3 < n && used < max; s++, used++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\\') out[k++] = '\\', out[k++] = '\\';
        else out[k++] = c >= 32 && c < 127 ? (char)c : '?';
    }
    if (*s && k + 3 < n) out[k++] = '.', out[k++] = '.';
    out[k] = 0;
}

/* graphviz keeps global state (cgraph's current graph, the error level,
 * the layout's statics): one page at a time is laid out in the process,
 * so threads with contexts of their own need no lock of their own. */
static pthread_mutex_t gv_lock = PTHREAD_MUTEX_INITIALIZER;

static void set(void *obj, const char *key, const char *value) { agsafeset(obj, (char *)key, (char *)value, (char *)""); }

static void fmt_bytes(char *out, size_t n, int64_t b) {
    if (b < 0) snprintf(out, n, "? B");
    else if (b >= 1 << 20) snprintf(out, n, "%.1f MB", (double)b / (1 << 20));
    else if (b >= 1 << 10) snprintf(out, n, "%.1f KB", (double)b / (1 << 10));
    else snprintf(out, n, "%lld B", (long long)b);
}

/* Lays out g and writes its SVG element (without the XML prologue). */
static bool render_svg(GVC_t *gvc, Agraph_t *g, FILE *f) {
    if (gvLayout(gvc, g, "dot") != 0) return false;
    char *buf = NULL;
    unsigned int len = 0;
    bool ok = gvRenderData(gvc, g, "svg", &buf, &len) == 0 && buf;
    if (ok) {
        const char *svg = strstr(buf, "<svg");
        if (svg) fwrite(svg, 1, len - (size_t)(svg - buf), f);
        ok = svg != NULL;
    }
    if (buf) gvFreeRenderData(buf);
    gvFreeLayout(gvc, g);
    return ok;
}

static Agraph_t *new_graph(const char *name) {
    Agraph_t *g = agopen((char *)name, Agdirected, NULL);
    if (!g) return NULL;
    agattr(g, AGRAPH, (char *)"rankdir", (char *)"TB");
    agattr(g, AGRAPH, (char *)"fontname", (char *)"Helvetica");
    agattr(g, AGRAPH, (char *)"fontsize", (char *)"11");
    agattr(g, AGNODE, (char *)"shape", (char *)"box");
    agattr(g, AGNODE, (char *)"style", (char *)"rounded,filled");
    agattr(g, AGNODE, (char *)"fontname", (char *)"Helvetica");
    agattr(g, AGNODE, (char *)"fontsize", (char *)"10");
    agattr(g, AGNODE, (char *)"height", (char *)"0.3");
    agattr(g, AGNODE, (char *)"fillcolor", (char *)"#ffffff");
    agattr(g, AGNODE, (char *)"color", (char *)"#555555");
    agattr(g, AGNODE, (char *)"penwidth", (char *)"1");
    agattr(g, AGNODE, (char *)"id", (char *)"");
    agattr(g, AGNODE, (char *)"label", (char *)"\\N");
    agattr(g, AGEDGE, (char *)"penwidth", (char *)"1");
    agattr(g, AGEDGE, (char *)"color", (char *)"#777777");
    /* edge labels are xlabels, placed after layout: dot 2.42 frees a
     * labelled edge between clusters twice (gvFreeLayout), and labels as
     * layout nodes also cost time */
    agattr(g, AGRAPH, (char *)"forcelabels", (char *)"true");
    agattr(g, AGEDGE, (char *)"xlabel", (char *)"");
    agattr(g, AGEDGE, (char *)"fontname", (char *)"Helvetica");
    agattr(g, AGEDGE, (char *)"fontsize", (char *)"9");
    agattr(g, AGEDGE, (char *)"arrowsize", (char *)"0.6");
    return g;
}

/* The node-level view of the nodes with keep[i] (all when keep is NULL):
 * one cluster per subgraph, id c<id>; nodes n<index>. Constants (folded,
 * in no subgraph) are not drawn: they are computed once, and a model has
 * many (shape chains, shared weights' Identities) that would only crowd
 * the picture. */
static bool node_view(GVC_t *gvc, const seam_report *r, const uint8_t *keep, FILE *f) {
    Agraph_t *g = new_graph("plan");
    if (!g) return false;
    Agraph_t **clusters = calloc((size_t)r->n_subgraphs + 1, sizeof(Agraph_t *));
    Agnode_t **gn = calloc((size_t)r->n_nodes + 1, sizeof(Agnode_t *));
    bool ok = clusters && gn;
    char buf[512], lab[256];
    for (int32_t i = 0; i < r->n_nodes && ok; i++) {
        if ((keep && !keep[i]) || r->nodes[i].subgraph < 0) continue;
        const rep_node *n = &r->nodes[i];
        Agraph_t *parent = g;
        int32_t s = n->subgraph;
        if (s >= 0 && s < r->n_subgraphs) {
            if (!clusters[s]) {
                snprintf(buf, sizeof(buf), "cluster_%d", s);
                clusters[s] = agsubg(g, buf, 1);
                if (!clusters[s]) break;
                const rep_subgraph *sg = &r->subgraphs[s];
                gv_text(lab, sizeof(lab), sg->target, 40);
                int len = snprintf(buf, sizeof(buf), "%s #%d (%d node%s)", lab, s, sg->n_nodes, sg->n_nodes == 1 ? "" : "s");
                if (sg->ms >= 0) snprintf(buf + len, sizeof(buf) - (size_t)len, " %.3f ms", sg->ms);
                set(clusters[s], "label", buf);
                snprintf(buf, sizeof(buf), "c%d", s);
                set(clusters[s], "id", buf);
                set(clusters[s], "style", "filled,rounded");
                set(clusters[s], "fillcolor", report_color(sg->target));
                set(clusters[s], "color", sg->device ? "#1d3557" : "#adb5bd");
            }
            parent = clusters[s];
        }
        snprintf(buf, sizeof(buf), "n%d", i);
        gn[i] = agnode(parent, buf, 1);
        if (!gn[i]) break;
        set(gn[i], "id", buf);
        gv_text(lab, sizeof(lab), n->op, 40);
        if (n->ms >= 0) { /* measured: CPU nodes (a device subgraph's nodes have no time of their own) */
            snprintf(buf, sizeof(buf), "%s\\n%.3f ms", lab, n->ms);
            set(gn[i], "label", buf);
        } else {
            set(gn[i], "label", lab);
        }
        set(gn[i], "fillcolor", s >= 0 ? "#ffffff" : "#f8f9fa");
        if (n->reason == SEAM_REASON_UNSUPPORTED) set(gn[i], "color", "#d00000"), set(gn[i], "penwidth", "2");
        if (n->reason == SEAM_REASON_CONSTANT) set(gn[i], "style", "rounded,dashed");
    }
    for (int32_t i = 0; i < r->n_nodes && ok; i++) {
        if (!gn[i]) continue;
        const rep_node *n = &r->nodes[i];
        for (int32_t k = 0; k < n->n_preds; k++) {
            int32_t p = n->pred[k];
            if (p < 0 || p >= r->n_nodes || !gn[p]) continue;
            bool dup = false;
            for (int32_t j = 0; j < k && !dup; j++) dup = n->pred[j] == p;
            if (dup) continue;
            Agedge_t *e = agedge(g, gn[p], gn[i], NULL, 1);
            if (!e) continue;
            int32_t sa = r->nodes[p].subgraph, sb = n->subgraph;
            bool dev = (sa >= 0 && r->subgraphs[sa].device) || (sb >= 0 && r->subgraphs[sb].device);
            if (sa != sb && sa >= 0 && sb >= 0 && dev) {
                fmt_bytes(buf, sizeof(buf), n->pred_bytes[k]);
                set(e, "xlabel", buf);
                set(e, "penwidth", "3");
                set(e, "color", "#e63946");
            }
        }
    }
    if (ok) ok = render_svg(gvc, g, f);
    agclose(g);
    free(clusters);
    free(gn);
    return ok;
}

typedef struct sg_edge {
    int32_t a, b;
    int64_t bytes;
} sg_edge;
static int cmp_edge(const void *x, const void *y) {
    const sg_edge *p = x, *q = y;
    return p->a != q->a ? (p->a > q->a) - (p->a < q->a) : (p->b > q->b) - (p->b < q->b);
}

/* One box per subgraph (id s<id>), edges with the bytes between them. */
static bool box_view(GVC_t *gvc, const seam_report *r, FILE *f) {
    size_t n_e = 0, cap = 0;
    for (int32_t i = 0; i < r->n_nodes; i++) cap += (size_t)r->nodes[i].n_preds;
    sg_edge *es = malloc(sizeof(sg_edge) * (cap + 1));
    Agnode_t **gn = calloc((size_t)r->n_subgraphs + 1, sizeof(Agnode_t *));
    Agraph_t *g = es && gn ? new_graph("subgraphs") : NULL;
    if (!g) {
        free(es);
        free(gn);
        return false;
    }
    for (int32_t i = 0; i < r->n_nodes; i++) {
        const rep_node *n = &r->nodes[i];
        for (int32_t k = 0; k < n->n_preds; k++) {
            int32_t sa = r->nodes[n->pred[k]].subgraph;
            if (sa >= 0 && n->subgraph >= 0 && sa != n->subgraph) es[n_e++] = (sg_edge){sa, n->subgraph, n->pred_bytes[k]};
        }
    }
    qsort(es, n_e, sizeof(sg_edge), cmp_edge);
    char buf[512], lab[256];
    for (int32_t s = 0; s < r->n_subgraphs; s++) {
        const rep_subgraph *sg = &r->subgraphs[s];
        snprintf(buf, sizeof(buf), "s%d", s);
        gn[s] = agnode(g, buf, 1);
        if (!gn[s]) continue;
        set(gn[s], "id", buf);
        gv_text(lab, sizeof(lab), sg->target, 40);
        int len = snprintf(buf, sizeof(buf), "%s #%d\\n%d node%s", lab, s, sg->n_nodes, sg->n_nodes == 1 ? "" : "s");
        if (sg->ms >= 0) snprintf(buf + len, sizeof(buf) - (size_t)len, "\\n%.3f ms", sg->ms);
        set(gn[s], "label", buf);
        set(gn[s], "fillcolor", report_color(sg->target));
        if (sg->device) set(gn[s], "penwidth", "2");
    }
    for (size_t k = 0; k < n_e;) {
        size_t j = k;
        int64_t bytes = 0;
        bool known = true;
        for (; j < n_e && es[j].a == es[k].a && es[j].b == es[k].b; j++) {
            if (es[j].bytes < 0) known = false;
            else bytes += es[j].bytes;
        }
        Agedge_t *e = gn[es[k].a] && gn[es[k].b] ? agedge(g, gn[es[k].a], gn[es[k].b], NULL, 1) : NULL;
        if (e && (r->subgraphs[es[k].a].device || r->subgraphs[es[k].b].device)) {
            if (known) fmt_bytes(buf, sizeof(buf), bytes);
            else snprintf(buf, sizeof(buf), "%zu value%s", j - k, j - k == 1 ? "" : "s");
            set(e, "xlabel", buf);
            set(e, "penwidth", "3");
            set(e, "color", "#e63946");
        }
        k = j;
    }
    bool ok = render_svg(gvc, g, f);
    agclose(g);
    free(es);
    free(gn);
    return ok;
}

/* A JSON string of s; text that is not valid UTF-8 gets its non-ASCII
 * bytes replaced (jansson refuses it). */
static json_t *jstr(const char *s) {
    json_t *j = json_string(s);
    if (j) return j;
    char *c = strdup(s);
    if (!c) return NULL;
    for (char *p = c; *p; p++)
        if ((unsigned char)*p >= 128) *p = '?';
    j = json_string(c);
    free(c);
    return j;
}

/* Writes JSON text for a <script> element: '<' as \u003c, so no name can
 * close the element or open a comment. */
static void put_json(FILE *f, json_t *j) {
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!s) {
        fputs("null", f);
        return;
    }
    for (const char *p = s; *p;) {
        size_t n = strcspn(p, "<");
        fwrite(p, 1, n, f);
        p += n;
        if (*p) fputs("\\u003c", f), p++;
    }
    free(s);
}

static const char *PAGE_STYLE =
    "body{font-family:Helvetica,Arial,sans-serif;margin:16px;color:#222}"
    "h1{font-size:18px;margin:0 0 6px}#support{font-weight:bold}"
    "#main{display:flex;gap:12px;align-items:flex-start}"
    "#graph,#subview{flex:1;overflow:auto;border:1px solid #ccc;max-height:80vh}"
    "#info{width:360px;min-width:360px;border:1px solid #ccc;padding:8px;font-size:12px;white-space:pre-wrap;"
    "word-break:break-all;position:sticky;top:8px}"
    "#info b{display:inline-block;min-width:70px}"
    "table{border-collapse:collapse;font-size:12px;margin-top:12px}td,th{border:1px solid #ccc;padding:2px 6px;"
    "text-align:left;vertical-align:top}tr.dev{background:#eef6fb}tr:hover{background:#fff3bf;cursor:pointer}"
    "g.node{cursor:pointer}g.node.sel polygon,g.node.sel path{stroke:#000;stroke-width:3}"
    ".legend span{display:inline-block;padding:1px 6px;margin-right:4px;border:1px solid #999}"
    "pre{font-size:11px;background:#f8f9fa;padding:6px;max-height:200px;overflow:auto}";

/* The page's script: details of a node on hover or click (n<index>), a
 * subgraph's nodes on a click on its box or row (s<id>). Text goes in
 * with textContent only. #click=n5, #click=s2 or #click=row-s2 (the
 * table's row) in the URL clicks it when the page opens (links, tests). */
static const char *PAGE_SCRIPT =
    "(function(){\n"
    "var D=JSON.parse(document.getElementById('seam-data').textContent);\n"
    "var info=document.getElementById('info');\n"
    "function el(t,x){var e=document.createElement(t);if(x!==undefined)e.textContent=x;return e;}\n"
    "function line(k,v){var d=el('div');d.appendChild(el('b',k));d.appendChild(document.createTextNode(' '+v));"
    "info.appendChild(d);}\n"
    "function vals(s){return s?s.split('\\n').map(function(l){var p=l.split('\\t');return '  '+p[0]+': '+p[1];})"
    ".join('\\n'):'  -';}\n"
    "function why(n){return n[4]==='supported'&&!n[5]?'supported by '+n[2]:n[4]+(n[5]?': '+n[5]:'');}\n"
    "function subInfo(s){var g=D.subgraphs[s];if(!g)return;info.textContent='';line('subgraph','#'+s);"
    "line('target',g.target);line('nodes',String(g.nodes.length));var h={},o=[];g.nodes.forEach(function(i){"
    "var op=D.nodes[i][1];if(!(op in h)){h[op]=0;o.push(op);}h[op]++;});"
    "line('ops',o.map(function(x){return x+':'+h[x];}).join(', '));line('','click for its nodes');}\n"
    "function showNode(i){var n=D.nodes[i];if(!n)return;info.textContent='';\n"
    " line('node',n[0]);line('op',n[1]);line('index',String(i));line('target',n[2]);\n"
    " line('subgraph',n[3]<0?'none (constant)':'#'+n[3]);\n"
    " var r=el('div');r.id='reason';r.appendChild(el('b','reason'));"
    "r.appendChild(document.createTextNode(' '+why(n)));info.appendChild(r);\n"
    " line('time',n[8]<0?(D.measured?'not measured (inside a device subgraph)':'not run'):n[8].toFixed(3)+' ms');\n"
    " line('inputs','\\n'+vals(n[6]));line('outputs','\\n'+vals(n[7]));}\n"
    "function showSub(s){var v=document.getElementById('subview');var g=D.subgraphs[s];if(!v||!g)return;"
    "v.textContent='';v.appendChild(el('h3','subgraph #'+s+' ('+g.target+', '+g.nodes.length+' nodes)'));\n"
    " var t=document.getElementById('sv'+s);\n"
    " if(t){v.appendChild(t.content.cloneNode(true));}\n"
    " else{var tb=el('table');var h=el('tr');['node','op','reason','ms'].forEach(function(x){h.appendChild(el('th',x));});"
    "tb.appendChild(h);\n"
    "  var lim=Math.min(g.nodes.length,2000);for(var k=0;k<lim;k++){var i=g.nodes[k],n=D.nodes[i],tr=el('tr');"
    "tr.id='n'+i;tr.className='node';\n"
    "   [n[0],n[1],why(n),n[8]<0?'-':n[8].toFixed(3)].forEach(function(x){tr.appendChild(el('td',x));});"
    "tb.appendChild(tr);}\n"
    "  v.appendChild(tb);if(lim<g.nodes.length)v.appendChild(el('p','first '+lim+' of '+g.nodes.length+' nodes'));}\n"
    " v.scrollIntoView();}\n"
    "var cur=null;\n"
    "function target(e){for(var t=e.target;t&&t!==document;t=t.parentNode){var m=t.id&&"
    "/^(?:row-)?([ns])([0-9]+)$/.exec(t.id);if(m&&(t.classList.contains('node')||t.tagName==='TR'))"
    "return {k:m[1],i:parseInt(m[2],10),el:t};}return null;}\n"
    "function act(e,click){var t=target(e);if(!t)return;\n"
    " if(t.k==='n'){if(click){if(cur)cur.classList.remove('sel');cur=t.el;t.el.classList.add('sel');}"
    "if(click||!cur)showNode(t.i);}\n"
    " else if(click)showSub(t.i);else subInfo(t.i);}\n"
    "document.addEventListener('click',function(e){act(e,true);});\n"
    "document.addEventListener('mouseover',function(e){act(e,false);});\n"
    "var m=/#click=((?:row-)?[ns][0-9]+)$/.exec(location.hash);if(m){var t=document.getElementById(m[1]);\n"
    " if(t){var ev=new MouseEvent('click',{bubbles:true});(t.querySelector('polygon,path,td')||t).dispatchEvent(ev);}}\n"
    "})();\n";

/* The page's head and the paragraphs above the graph: support, counts,
 * estimates, the legend, constants, notes. */
static void page_head(const seam_report *r, FILE *f) {
    fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>seam: ", f);
    rep_html_escape(f, r->model_name);
    fprintf(f, "</title><style>%s</style></head><body>\n<h1>seam plan: ", PAGE_STYLE);
    rep_html_escape(f, r->model_name);
    fputs("</h1>\n", f);
    double frac = r->counted ? (double)r->supported / r->counted : 1.0;
    fprintf(f, "<p id=\"support\">%.2f%% of operations (%d of %d) are supported</p>\n", 100.0 * frac, r->supported,
            r->counted);
    int32_t n_dev = 0;
    for (int32_t s = 0; s < r->n_subgraphs; s++) n_dev += r->subgraphs[s].device;
    fprintf(f, "<p id=\"counts\">%d nodes; %d subgraphs (%d on devices)%s</p>\n", r->n_nodes, r->n_subgraphs, n_dev,
            r->measured ? "; times measured in the last run" : "");
    fprintf(f, "<p id=\"estimate\">Estimated time (cost model): this plan %.1f us; all on the CPU %.1f us; every "
               "supported node offloaded %.1f us</p>\n", r->est.total_us, r->est.all_cpu_us, r->est.capability_us);
    fputs("<p class=\"legend\">", f);
    for (int32_t s = 0; s < r->n_subgraphs; s++) { /* one swatch per target, first-seen order */
        bool seen = false;
        for (int32_t q = 0; q < s && !seen; q++) seen = strcmp(r->subgraphs[q].target, r->subgraphs[s].target) == 0;
        if (seen) continue;
        fprintf(f, "<span style=\"background:%s\">", report_color(r->subgraphs[s].target));
        rep_html_escape(f, r->subgraphs[s].target);
        fputs("</span>", f);
    }
    fputs("<span style=\"border:2px solid #d00000\">unsupported</span>"
          "<span style=\"border:2px solid #e63946\">red edges: values crossing a device boundary</span></p>\n", f);
    int32_t n_const = 0;
    for (int32_t i = 0; i < r->n_nodes; i++) n_const += r->nodes[i].subgraph < 0;
    if (n_const)
        fprintf(f, "<p id=\"constants\">%d constant node%s (folded: computed once, in no subgraph) %s not drawn.</p>\n",
                n_const, n_const == 1 ? "" : "s", n_const == 1 ? "is" : "are");
    if (r->notes && *r->notes) {
        fputs("<pre id=\"notes\">", f);
        rep_html_escape(f, r->notes);
        fputs("</pre>\n", f);
    }
}

/* The summary: subgraphs in execution order, with up to ten op counts
 * each; then the compile log. */
static bool page_summary(const seam_report *r, FILE *f, bool ok) {
    fputs("<table id=\"summary\"><tr><th>#</th><th>target</th><th>nodes</th><th>ops</th><th>inputs / outputs</th>"
          "<th>boundary bytes</th><th>estimated us</th><th>measured ms</th><th>compile ms</th></tr>\n", f);
    const char **hop = malloc(sizeof(char *) * 64);
    int32_t *hn = malloc(sizeof(int32_t) * 64);
    if (!hop || !hn) ok = false;
    for (int32_t s = 0; s < r->n_subgraphs && ok; s++) {
        const rep_subgraph *sg = &r->subgraphs[s];
        fprintf(f, "<tr id=\"row-s%d\" class=\"%s\"><td>%d</td><td>", s, sg->device ? "dev" : "cpu", s);
        rep_html_escape(f, sg->target);
        fprintf(f, "</td><td class=\"count\">%d</td><td>", sg->n_nodes);
        int32_t nh = 0;
        for (int32_t k = 0; k < sg->n_nodes; k++) {
            const char *op = r->nodes[sg->nodes[k]].op;
            int32_t j = 0;
            while (j < nh && strcmp(hop[j], op) != 0) j++;
            if (j < nh) hn[j]++;
            else if (nh < 64) hop[nh] = op, hn[nh++] = 1;
        }
        for (int32_t j = 0; j < nh && j < 10; j++) {
            fputs(j ? ", " : "", f);
            rep_html_escape(f, hop[j]);
            fprintf(f, ":%d", hn[j]);
        }
        if (nh > 10) fputs(", ...", f);
        fprintf(f, "</td><td>%d / %d</td><td>%lld</td><td>%.1f</td><td>", sg->n_inputs, sg->n_outputs,
                (long long)sg->boundary_bytes, sg->est_us);
        if (sg->ms >= 0) fprintf(f, "%.3f", sg->ms);
        else fputs("-", f);
        fputs("</td><td>", f);
        if (sg->compile_ms > 0) fprintf(f, "%.1f", sg->compile_ms);
        else fputs("-", f);
        fputs("</td></tr>\n", f);
    }
    free(hop);
    free(hn);
    fputs("</table>\n", f);
    if (r->session_log && *r->session_log) {
        fputs("<h3>compile log</h3><pre id=\"log\">", f);
        rep_html_escape(f, r->session_log);
        fputs("</pre>\n", f);
    }
    return ok;
}

/* The node views of a big graph's subgraphs, laid out now, shown on
 * demand (templates). */
static bool page_subviews(GVC_t *gvc, const seam_report *r, FILE *f) {
    bool ok = true;
    int64_t budget = 4 * SEAM_REPORT_SUBGRAPH_VIEW_MAX; /* nodes laid out in all: dot is the slow part */
    uint8_t *keep = calloc((size_t)r->n_nodes + 1, 1);
    if (!keep) ok = false;
    for (int32_t s = 0; s < r->n_subgraphs && ok; s++) {
        const rep_subgraph *sg = &r->subgraphs[s];
        if (sg->n_nodes > SEAM_REPORT_SUBGRAPH_VIEW_MAX || sg->n_nodes > budget) continue;
        budget -= sg->n_nodes;
        for (int32_t k = 0; k < sg->n_nodes; k++) keep[sg->nodes[k]] = 1;
        fprintf(f, "<template id=\"sv%d\">", s);
        ok = node_view(gvc, r, keep, f);
        fputs("</template>\n", f);
        for (int32_t k = 0; k < sg->n_nodes; k++) keep[sg->nodes[k]] = 0;
    }
    free(keep);
    return ok;
}

/* The graph (nodes, or one box per subgraph when big), the summary and
 * the subgraphs' views, laid out by graphviz under gv_lock. */
static bool page_graphs(const seam_report *r, FILE *f) {
    bool ok = true;
    bool big = r->n_nodes > SEAM_REPORT_NODE_VIEW_MAX;
    pthread_mutex_lock(&gv_lock);
    GVC_t *gvc = gvContext();
    if (!gvc) ok = false;
    agseterr(AGERR);
    fputs("<div id=\"main\"><div id=\"graph\">", f);
    bool boxes = big && r->n_subgraphs <= SEAM_REPORT_BOX_VIEW_MAX;
    if (ok && !big) ok = node_view(gvc, r, NULL, f);
    else if (ok && boxes) ok = box_view(gvc, r, f);
    else if (ok)
        fprintf(f, "<p>%d subgraphs: too many to draw (over %d); pick one in the table below.</p>", r->n_subgraphs,
                SEAM_REPORT_BOX_VIEW_MAX);
    fputs("</div><div id=\"info\">Hover over or click a node for its details.</div></div>\n", f);
    if (big) {
        fprintf(f, "<p>%d nodes: over %d, so the graph above has one box per subgraph; click a box or a row for its "
                   "nodes (laid out for subgraphs of up to %d nodes, listed otherwise).</p>\n<div id=\"subview\"></div>\n",
                r->n_nodes, SEAM_REPORT_NODE_VIEW_MAX, SEAM_REPORT_SUBGRAPH_VIEW_MAX);
    }
    ok = page_summary(r, f, ok);
    if (big && ok) ok = page_subviews(gvc, r, f);
    if (gvc) gvFreeContext(gvc);
    pthread_mutex_unlock(&gv_lock);
    return ok;
}

/* The data the script shows: nodes as arrays, to keep big pages small. */
static void page_data(const seam_report *r, FILE *f, bool ok) {
    fputs("<script type=\"application/json\" id=\"seam-data\">{\"measured\":", f);
    fputs(r->measured ? "true" : "false", f);
    fputs(",\"nodes\":[", f);
    for (int32_t i = 0; i < r->n_nodes && ok; i++) {
        const rep_node *n = &r->nodes[i];
        json_t *a = json_array();
        json_array_append_new(a, jstr(n->name));
        json_array_append_new(a, jstr(n->op));
        json_array_append_new(a, jstr(n->target));
        json_array_append_new(a, json_integer(n->subgraph));
        json_array_append_new(a, json_string(seam_reason_name(n->reason)));
        json_array_append_new(a, jstr(n->detail));
        json_array_append_new(a, jstr(n->ins));
        json_array_append_new(a, jstr(n->outs));
        json_array_append_new(a, json_real(isfinite(n->ms) ? n->ms : -1));
        if (i) fputc(',', f);
        put_json(f, a);
    }
    fputs("],\"subgraphs\":[", f);
    for (int32_t s = 0; s < r->n_subgraphs && ok; s++) {
        const rep_subgraph *sg = &r->subgraphs[s];
        json_t *o = json_object(), *nodes = json_array();
        json_object_set_new(o, "target", jstr(sg->target));
        for (int32_t k = 0; k < sg->n_nodes; k++) json_array_append_new(nodes, json_integer(sg->nodes[k]));
        json_object_set_new(o, "nodes", nodes);
        if (s) fputc(',', f);
        put_json(f, o);
    }
    fputs("]}</script>\n<script>", f);
    fputs(PAGE_SCRIPT, f);
    fputs("</script>\n</body></html>\n", f);
}

seam_status seam_report_write_html(const seam_report *r, const char *path) {
    if (!r || !path) return SEAM_STATUS_INVALID_ARGUMENT;
    seam_context *ctx = r->ctx;
    rep_file rf;
    seam_status st = rep_open(ctx, &rf, path);
    if (st) return st;
    page_head(r, rf.f);
    bool ok = page_graphs(r, rf.f);
    page_data(r, rf.f, ok);
    if (!ok) {
        rep_close(ctx, &rf, false);
        return seam_error(ctx, SEAM_STATUS_INTERNAL, "writing '%s': graphviz could not lay out the graph", path);
    }
    return rep_close(ctx, &rf, true);
}
