/* seam_report_write_workdir: everything about one partition in a folder,
 * written as DIR.tmp-XXXXXX and renamed into place. The standalone models
 * of device subgraphs are cut from the partitioned model's ONNX bytes by
 * the onnx layer (onnx_subgraph_models). */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/npy.h"
#include "core/context.h"
#include "onnx/onnx.h"
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

/* Where write_subgraph writes. */
typedef struct sub_writer {
    seam_context *ctx;
    const char *dir;
    const char *log;  /* the session's log */
    bool with_log;    /* a session: each subgraph's compile log too */
} sub_writer;

/* A device subgraph's standalone model (onnx_subgraph_models), and its
 * compile log. */
static seam_status write_subgraph(void *arg, const char *name, const uint8_t *bytes, size_t n) {
    const sub_writer *w = arg;
    char path[4096], fname[300];
    const char *nm = strncmp(name, "seam_", 5) == 0 ? name + 5 : name;
    npy_file_name(nm, fname, sizeof(fname), "value");
    snprintf(path, sizeof(path), "%s/%s.onnx", w->dir, fname);
    seam_status st = rep_write_bytes(w->ctx, path, bytes, n);
    if (!st && w->with_log) {
        snprintf(path, sizeof(path), "%s/%s.log", w->dir, fname);
        st = write_log(w->ctx, w->log, name, path);
    }
    return st;
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
    if (r->partitioned) {
        snprintf(path, sizeof(path), "%s/partitioned.onnx", tmp);
        if ((st = rep_write_bytes(ctx, path, r->partitioned, r->partitioned_len))) return st;
        sub_writer w = {ctx, tmp, s ? seam_session_log(s) : NULL, s != NULL};
        st = onnx_subgraph_models(ctx, r->partitioned, r->partitioned_len, write_subgraph, &w);
        if (st == SEAM_STATUS_PARSE_ERROR)
            return seam_error(ctx, SEAM_STATUS_INTERNAL, "workdir: the partitioned model does not parse");
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
