/* seam_report_write_workdir: everything about one partition in a folder,
 * written as DIR.tmp-XXXXXX and renamed into place. The standalone models
 * of device subgraphs are cut from the partitioned model's ONNX bytes: a
 * Subgraph node's body already lists its boundary values as inputs and
 * outputs; the weights and Constant nodes it reads from the main graph
 * are copied in. */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/npy.h"
#include "core/context.h"
#include "onnx/onnx.pb-c.h"
#include "report/report.h"

#define MARKER ".seam-workdir"

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}
static void rm_tree(const char *dir) { nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS); }

/* A .npy of a tensor view (core/npy.c), written to a temporary name and renamed. */
static seam_status write_npy(seam_context *ctx, const char *path, const seam_tensor_view *v) {
    rep_file rf;
    seam_status st = rep_open(ctx, &rf, path);
    if (st) return st;
    int r = npy_write_file(rf.f, v->dtype, v->rank, v->dims, v->data, v->nbytes);
    st = rep_close(ctx, &rf, r != 1); /* a failed write: ferror, and rep_close says so */
    if (r == 1) return seam_error(ctx, SEAM_STATUS_UNSUPPORTED, "'%s': .npy cannot hold %s", v->name, seam_dtype_name(v->dtype));
    return st;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
static bool in_sorted(char **names, size_t n, const char *s) { return n && bsearch(&s, names, n, sizeof(char *), cmp_str); }

/* The standalone model of Subgraph node sn of the main graph mg. */
static seam_status write_subgraph_model(seam_context *ctx, const Onnx__ModelProto *mp, const Onnx__GraphProto *mg,
                                        const Onnx__NodeProto *sn, const Onnx__GraphProto *body, const char *path) {
    size_t n_def = 0, cap = body->n_input + 1;
    for (size_t k = 0; k < body->n_node; k++) cap += body->node[k]->n_output;
    char **def = malloc(sizeof(char *) * cap);
    Onnx__TensorProto **inits = malloc(sizeof(void *) * (mg->n_initializer + 1));
    Onnx__NodeProto **nodes = malloc(sizeof(void *) * (body->n_node + mg->n_node + 1));
    if (!def || !inits || !nodes) {
        free(def), free(inits), free(nodes);
        return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    for (size_t k = 0; k < body->n_input; k++)
        if (body->input[k]->name) def[n_def++] = body->input[k]->name;
    for (size_t k = 0; k < body->n_node; k++)
        for (size_t o = 0; o < body->node[k]->n_output; o++) def[n_def++] = body->node[k]->output[o];
    qsort(def, n_def, sizeof(char *), cmp_str);
    size_t n_inits = 0, n_nodes = 0;
    /* what the body reads from the main graph: weights, and Constant nodes' values */
    for (size_t i = 0; i < mg->n_initializer; i++) {
        const char *name = mg->initializer[i]->name;
        bool used = false;
        if (!name || in_sorted(def, n_def, name)) continue;
        for (size_t k = 0; k < body->n_node && !used; k++)
            for (size_t j = 0; j < body->node[k]->n_input && !used; j++) used = strcmp(body->node[k]->input[j], name) == 0;
        if (used) inits[n_inits++] = mg->initializer[i];
    }
    for (size_t i = 0; i < mg->n_node; i++) {
        const Onnx__NodeProto *c = mg->node[i];
        if (!c->op_type || strcmp(c->op_type, "Constant") != 0 || c->n_output != 1 || in_sorted(def, n_def, c->output[0])) continue;
        bool used = false;
        for (size_t k = 0; k < body->n_node && !used; k++)
            for (size_t j = 0; j < body->node[k]->n_input && !used; j++) used = strcmp(body->node[k]->input[j], c->output[0]) == 0;
        if (used) nodes[n_nodes++] = mg->node[i];
    }
    for (size_t k = 0; k < body->n_node; k++) nodes[n_nodes++] = body->node[k];
    Onnx__GraphProto g = *body;
    g.name = sn->name;
    g.node = nodes, g.n_node = n_nodes;
    g.initializer = inits, g.n_initializer = n_inits;
    Onnx__ModelProto m = *mp;
    m.graph = &g;
    size_t n = onnx__model_proto__get_packed_size(&m);
    uint8_t *buf = malloc(n ? n : 1);
    seam_status st = buf ? SEAM_STATUS_OK : seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    if (buf) {
        onnx__model_proto__pack(&m, buf);
        st = rep_write_bytes(ctx, path, buf, n);
    }
    free(buf), free(def), free(inits), free(nodes);
    return st;
}

/* The session log's lines about one subgraph ("subgraph 'NAME' (T): ...")
 * without the prefix. */
static seam_status write_log(seam_context *ctx, const char *log, const char *name, const char *path) {
    rep_file rf;
    seam_status st = rep_open(ctx, &rf, path);
    if (st) return st;
    char prefix[600];
    snprintf(prefix, sizeof(prefix), "subgraph '%s' (", name);
    size_t pl = strlen(prefix);
    for (const char *p = log ? log : ""; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (len > pl && strncmp(p, prefix, pl) == 0) {
            const char *body = strstr(p + pl, "): ");
            if (body && body < p + len) fprintf(rf.f, "%.*s\n", (int)(p + len - body - 3), body + 3);
        }
        p += len + (nl ? 1 : 0);
    }
    return rep_close(ctx, &rf, true);
}

static seam_status fill(const seam_report *r, seam_session *s, const seam_tensor_view *extra, int32_t n_extra,
                        const char *tmp) {
    seam_context *ctx = r->ctx;
    char path[4096], fname[300];
    seam_status st;
    snprintf(path, sizeof(path), "%s/%s", tmp, MARKER);
    const char *mark = "a seam work directory: seam partition/run --workdir replace it as a whole\n";
    if ((st = rep_write_bytes(ctx, path, mark, strlen(mark)))) return st;
    if (r->plan_json) {
        snprintf(path, sizeof(path), "%s/plan.json", tmp);
        if ((st = rep_write_bytes(ctx, path, r->plan_json, strlen(r->plan_json)))) return st;
    }
    const char *log = s ? seam_session_log(s) : NULL;
    if (r->partitioned) {
        snprintf(path, sizeof(path), "%s/partitioned.onnx", tmp);
        if ((st = rep_write_bytes(ctx, path, r->partitioned, r->partitioned_len))) return st;
        Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, r->partitioned_len, r->partitioned);
        if (!mp || !mp->graph) return seam_error(ctx, SEAM_STATUS_INTERNAL, "workdir: the partitioned model does not parse");
        const Onnx__GraphProto *mg = mp->graph;
        for (size_t i = 0; i < mg->n_node && !st; i++) {
            const Onnx__NodeProto *n = mg->node[i];
            if (!n->domain || strcmp(n->domain, "ai.seam") != 0 || !n->op_type || strcmp(n->op_type, "Subgraph") != 0 || !n->name)
                continue;
            const Onnx__GraphProto *body = NULL;
            for (size_t a = 0; a < n->n_attribute; a++)
                if (n->attribute[a]->name && strcmp(n->attribute[a]->name, "body") == 0) body = n->attribute[a]->g;
            if (!body) continue;
            const char *nm = strncmp(n->name, "seam_", 5) == 0 ? n->name + 5 : n->name;
            npy_file_name(nm, fname, sizeof(fname), "value");
            snprintf(path, sizeof(path), "%s/%s.onnx", tmp, fname);
            st = write_subgraph_model(ctx, mp, mg, n, body, path);
            if (!st && s) {
                snprintf(path, sizeof(path), "%s/%s.log", tmp, fname);
                st = write_log(ctx, log, n->name, path);
            }
        }
        onnx__model_proto__free_unpacked(mp, NULL);
        if (st) return st;
    }
    if (s && r->exposed) {
        snprintf(path, sizeof(path), "%s/values", tmp);
        if (mkdir(path, 0755) != 0) return seam_error(ctx, SEAM_STATUS_IO_ERROR, "cannot create '%s': %s", path, strerror(errno));
        seam_tensor_view v;
        for (int32_t k = 0;; k++) {
            if (k < n_extra) v = extra[k];
            else if (seam_session_output(s, k - n_extra, &v) != SEAM_STATUS_OK) break;
            npy_file_name(v.name, fname, sizeof(fname), "value");
            snprintf(path, sizeof(path), "%s/values/%s.npy", tmp, fname);
            if ((st = write_npy(ctx, path, &v))) return st;
        }
    }
    return SEAM_STATUS_OK;
}

seam_status seam_report_write_workdir(const seam_report *r, seam_session *s, const seam_tensor_view *extra,
                                      int32_t n_extra, const char *dir) {
    if (!r || !dir || !*dir || n_extra < 0 || (n_extra && !extra)) return SEAM_STATUS_INVALID_ARGUMENT;
    seam_context *ctx = r->ctx;
    struct stat sb;
    char path[4096];
    bool exists = stat(dir, &sb) == 0;
    if (exists) {
        snprintf(path, sizeof(path), "%s/%s", dir, MARKER);
        if (!S_ISDIR(sb.st_mode) || access(path, F_OK) != 0)
            return seam_error(ctx, SEAM_STATUS_IO_ERROR,
                              "'%s' exists and is not a seam work directory (no %s in it): choose another folder; "
                              "nothing was written", dir, MARKER);
    }
    size_t len = strlen(dir);
    char *tmp = malloc(len + 16), *old = malloc(len + 16);
    if (!tmp || !old) {
        free(tmp), free(old);
        return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    snprintf(tmp, len + 16, "%s.tmp-XXXXXX", dir);
    snprintf(old, len + 16, "%s.old-XXXXXX", dir);
    seam_status st = SEAM_STATUS_OK;
    if (!mkdtemp(tmp)) {
        st = seam_error(ctx, SEAM_STATUS_IO_ERROR, "cannot create the work directory '%s': %s", dir, strerror(errno));
        free(tmp), free(old);
        return st;
    }
    mode_t mask = umask(0);
    umask(mask);
    chmod(tmp, 0777 & ~mask); /* mkdtemp makes it 0700 */
    st = fill(r, s, extra, n_extra, tmp);
    if (!st && exists) { /* the old one is moved aside, replaced, then removed */
        if (!mkdtemp(old) || rename(dir, old) != 0)
            st = seam_error(ctx, SEAM_STATUS_IO_ERROR, "cannot replace '%s': %s", dir, strerror(errno));
    }
    if (!st && rename(tmp, dir) != 0) {
        st = seam_error(ctx, SEAM_STATUS_IO_ERROR, "cannot create '%s': %s", dir, strerror(errno));
        if (exists) rename(old, dir);
    }
    if (st) {
        rm_tree(tmp);
        if (exists) rmdir(old); /* the empty placeholder, if mkdtemp made it */
    }
    else if (exists) rm_tree(old);
    free(tmp), free(old);
    return st;
}
