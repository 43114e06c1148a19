/*
 * backend-check --models DIR (backend_cases.h): each distinct node of a
 * folder's models, at the shapes it has there, written as an ONNX node
 * test (model.onnx, test_data_set_0/input_K.pb and output_K.pb) that
 * backend_check.c then runs like the ONNX suite's own.
 *
 * Per model (the .onnx files of DIR, in name order): loaded, inputs with unknown dims
 * given the shapes of NAME.input.npy (input 0) and NAME.input_K.npy
 * (input K) where those files are there, folded (shape arithmetic on
 * known shapes becomes constants, as for a partition). Every node of the
 * main graph that is not a Constant and has no body is cut out as a model
 * of its own (onnx_node_model_pack, canonical names): its known inputs
 * (weights, folded shapes) stay initializers, the others become inputs of
 * the inferred shape; two nodes whose models are the same bytes (the same
 * op, attributes, input types and constants) are one case. A case's inputs
 * are random: floats uniform in [-1, 1] (in [0.5, 1.5] for the ops that
 * need positive or nonzero ones: Log, Sqrt, Reciprocal, Pow, Div's
 * divisor), 8-bit values over their range, booleans at random, and other
 * integers 0 (an index, a shape entry that keeps the dim). Its expected
 * outputs are seam's CPU kernels' on those inputs; a case the CPU kernels
 * cannot run (an integer input 0 does not suit) is left out and counted.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend_cases.h"
#include "cli.h"
#include "core/tensor.h"
#include "ir/ir.h"
#include "onnx/onnx.h"
#include "run.h"

typedef struct seen_case {
    uint64_t hash;
    uint8_t *bytes;
    size_t n;
} seen_case;

static uint64_t fnv(const uint8_t *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t k = 0; k < n; k++) h = (h ^ p[k]) * 1099511628211ull;
    return h;
}

static uint64_t rng_next(uint64_t *s) {
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

static double urand(uint64_t *s) { return (double)(rng_next(s) >> 11) / (double)(1ull << 53); } /* [0, 1) */

/* Whether input k of op wants values away from 0 and positive. */
static bool wants_positive(const char *op, int32_t k) {
    return !strcmp(op, "Log") || !strcmp(op, "Sqrt") || !strcmp(op, "Reciprocal") || (!strcmp(op, "Pow") && k == 0) ||
           (!strcmp(op, "Div") && k == 1);
}

/* Random data for t (dtype, rank, dims set): false when out of memory or
 * of a dtype not filled here. */
static bool fill(seam_tensor *t, bool positive, uint64_t *rng) {
    size_t es = seam_dtype_size((seam_dtype)t->dtype);
    t->numel = 1;
    for (int32_t d = 0; d < t->rank; d++) {
        if (t->dims[d] < 0 || (t->dims[d] > 0 && t->numel > ((int64_t)1 << 28) / t->dims[d])) return false;
        t->numel *= t->dims[d];
    }
    if (!es || t->numel > ((int64_t)1 << 28)) return false;
    t->nbytes = es * (size_t)t->numel;
    t->data = calloc(t->nbytes ? t->nbytes : 1, 1);
    if (!t->data) return false;
    for (int64_t i = 0; i < t->numel; i++) {
        double u = urand(rng), f = positive ? 0.5 + u : 2 * u - 1;
        switch (t->dtype) {
        case SEAM_DTYPE_FLOAT32: ((float *)t->data)[i] = (float)f; break;
        case SEAM_DTYPE_FLOAT64: ((double *)t->data)[i] = f; break;
        case SEAM_DTYPE_BFLOAT16: { /* (a float's top half: exact for the values 2^-8 apart drawn here) */
            float v = (float)(round(f * 256) / 256);
            uint32_t b;
            memcpy(&b, &v, 4);
            ((uint16_t *)t->data)[i] = (uint16_t)(b >> 16);
            break;
        }
        case SEAM_DTYPE_UINT8: ((uint8_t *)t->data)[i] = (uint8_t)(rng_next(rng) & 255); break;
        case SEAM_DTYPE_INT8: ((int8_t *)t->data)[i] = (int8_t)(rng_next(rng) & 255); break;
        case SEAM_DTYPE_BOOL: ((uint8_t *)t->data)[i] = (uint8_t)(rng_next(rng) & 1); break;
        default: break; /* other integers: 0 */
        }
    }
    return true;
}

static void tensors_free(seam_tensor *t, int32_t n) {
    for (int32_t k = 0; k < n; k++) free(t[k].data);
}

/* Removes dir and the files of a case in it (model.onnx, its test data). */
static void remove_case(const char *dir) {
    char p[1500];
    for (int k = 0; k < BACKEND_CASE_MAX_IO; k++) {
        snprintf(p, sizeof(p), "%s/test_data_set_0/input_%d.pb", dir, k), unlink(p);
        snprintf(p, sizeof(p), "%s/test_data_set_0/output_%d.pb", dir, k), unlink(p);
    }
    snprintf(p, sizeof(p), "%s/test_data_set_0", dir), rmdir(p);
    snprintf(p, sizeof(p), "%s/model.onnx", dir), unlink(p);
    rmdir(dir);
}

void backend_cases_remove(const char *out, char **names, int n) {
    char p[1400];
    for (int k = 0; k < n; k++) {
        snprintf(p, sizeof(p), "%s/%s", out, names[k]);
        remove_case(p);
    }
}

/* Writes one case (the node model's bytes) as a node test in out/name,
 * its expected outputs from the CPU kernels; false (and nothing left)
 * when the CPU kernels cannot run it, with the reason in why. */
static bool write_case(seam_context *ctx, const char *dir, const uint8_t *bytes, size_t n, uint64_t *rng, char *why,
                       size_t wn) {
    seam_model *m = NULL;
    seam_session *s = NULL;
    seam_tensor in[BACKEND_CASE_MAX_IO];
    int32_t n_in = 0;
    memset(in, 0, sizeof(in));
    bool ok = false;
    char p[1500];
    if (mkdir(dir, 0755) && errno != EEXIST) {
        snprintf(why, wn, "%.400s: %.100s", dir, strerror(errno));
        return false;
    }
    snprintf(p, sizeof(p), "%s/test_data_set_0", dir);
    if (mkdir(p, 0755) && errno != EEXIST) {
        snprintf(why, wn, "%.400s: %.100s", p, strerror(errno));
        goto out;
    }
    snprintf(p, sizeof(p), "%s/model.onnx", dir);
    if (onnx_write_atomic(ctx, p, bytes, n) || seam_model_load_buffer(ctx, bytes, n, NULL, &m)) {
        snprintf(why, wn, "%s", seam_context_last_error(ctx));
        goto out;
    }
    const ir_graph *g = m->graph;
    const char *op = g->n_nodes ? g->nodes[0].op_type : "";
    seam_session_options so = {1, false, false, NULL, 0, NULL, NULL};
    if (seam_session_create(m, &so, &s)) {
        snprintf(why, wn, "%s", seam_context_last_error(ctx));
        goto out;
    }
    for (int32_t i = 0; i < g->n_inputs && n_in < BACKEND_CASE_MAX_IO; i++) {
        const ir_value *v = &g->values[g->inputs[i]];
        if (v->flags & IR_VALUE_INIT) continue;
        seam_tensor *t = &in[n_in];
        t->dtype = v->type.elem, t->rank = v->type.rank;
        for (int32_t d = 0; d < t->rank; d++) t->dims[d] = v->type.dims[d].v;
        int32_t pos = 0; /* the node's input this is (its name: in<pos>) */
        sscanf(v->name, "in%d", &pos);
        if (!fill(t, wants_positive(op, pos), rng)) {
            snprintf(why, wn, "input '%s': no random data of type %s", v->name, seam_dtype_name((seam_dtype)t->dtype));
            goto out;
        }
        n_in++;
        snprintf(p, sizeof(p), "%s/test_data_set_0/input_%d.pb", dir, (int)(n_in - 1));
        if (seam_session_set_input(s, v->name, (seam_dtype)t->dtype, t->rank, t->dims, t->data) ||
            seam_onnx_tensor_write(ctx, p, v->name, t)) {
            snprintf(why, wn, "%s", seam_context_last_error(ctx));
            goto out;
        }
    }
    if (seam_session_run(s)) {
        snprintf(why, wn, "the CPU kernels: %s", seam_context_last_error(ctx));
        goto out;
    }
    int32_t n_out = seam_model_output_count(m);
    for (int32_t k = 0; k < n_out && k < BACKEND_CASE_MAX_IO; k++) {
        seam_tensor_view o;
        if (seam_session_output(s, k, &o)) {
            snprintf(why, wn, "output %d: %s", (int)k, seam_context_last_error(ctx));
            goto out;
        }
        seam_tensor t = {.dtype = o.dtype, .rank = o.rank, .data = (void *)o.data, .nbytes = o.nbytes, .numel = 1};
        for (int32_t d = 0; d < o.rank; d++) t.dims[d] = o.dims[d], t.numel *= o.dims[d];
        snprintf(p, sizeof(p), "%s/test_data_set_0/output_%d.pb", dir, (int)k);
        if (seam_onnx_tensor_write(ctx, p, o.name, &t)) {
            snprintf(why, wn, "%s", seam_context_last_error(ctx));
            goto out;
        }
    }
    ok = true;
out:
    tensors_free(in, n_in);
    seam_session_free(s);
    seam_model_free(m);
    if (!ok) remove_case(dir);
    return ok;
}

/* Shapes for the model's inputs with unknown dims, from NAME.input.npy
 * (input 0) and NAME.input_K.npy beside it; false (err) when such a file
 * is there and does not fit. */
static bool shapes_from_files(seam_context *ctx, seam_model *m, const char *path, char *err, size_t en) {
    size_t len = strlen(path);
    if (len < 5) return true;
    const ir_graph *g = m->graph;
    int32_t k = 0;
    for (int32_t i = 0; i < g->n_inputs; i++) {
        const ir_value *v = &g->values[g->inputs[i]];
        if (v->flags & IR_VALUE_INIT) continue;
        char f[1200], arg[1024];
        if (k == 0) snprintf(f, sizeof(f), "%.*s.input.npy", (int)(len - 5), path);
        else snprintf(f, sizeof(f), "%.*s.input_%d.npy", (int)(len - 5), path, (int)k);
        k++;
        struct stat sb;
        if (stat(f, &sb)) continue;
        seam_tensor t;
        memset(&t, 0, sizeof(t));
        if (!run_read_input(ctx, f, NULL, &t, err, en)) return false;
        bool set = run_shape_from_input(v, &t, arg, sizeof(arg));
        free(t.data);
        if (set && cli_set_shape("backend-check", ctx, m, arg)) {
            snprintf(err, en, "%.300s: %.280s", f, seam_context_last_error(ctx));
            return false;
        }
    }
    return true;
}

static int cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int backend_cases_write(seam_context *ctx, const char *models, const char *out, int max_cases, backend_cases *bc) {
    memset(bc, 0, sizeof(*bc));
    DIR *dd = opendir(models);
    if (!dd) {
        snprintf(bc->err, sizeof(bc->err), "--models %s: %s", models, strerror(errno));
        return -1;
    }
    char **files = NULL;
    int n_files = 0, cap = 0;
    for (struct dirent *e; (e = readdir(dd));) {
        size_t l = strlen(e->d_name);
        if (e->d_name[0] == '.' || l < 6 || strcmp(e->d_name + l - 5, ".onnx")) continue;
        if (n_files == cap) {
            char **grown = realloc(files, sizeof(char *) * (size_t)(cap = cap ? 2 * cap : 64));
            if (!grown) break;
            files = grown;
        }
        if (!(files[n_files] = strdup(e->d_name))) break;
        n_files++;
    }
    closedir(dd);
    if (n_files) qsort(files, (size_t)n_files, sizeof(char *), cmp_name);
    seen_case *seen = NULL;
    int n_seen = 0, seen_cap = 0, rc = 0;
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    for (int f = 0; f < n_files && rc == 0; f++) {
        char path[1200];
        snprintf(path, sizeof(path), "%s/%s", models, files[f]);
        seam_model *m = NULL;
        char err[600] = "";
        bool loaded = !seam_model_load(ctx, path, &m);
        if (!loaded || !shapes_from_files(ctx, m, path, err, sizeof(err)) || seam_model_fold(m, NULL)) {
            bc->models_failed++;
            if (!bc->first_failure[0])
                snprintf(bc->first_failure, sizeof(bc->first_failure), "%s: %.500s", files[f],
                         err[0] ? err : seam_context_last_error(ctx));
            seam_model_free(m);
            continue;
        }
        bc->models++;
        const ir_graph *g = m->graph;
        for (int32_t i = 0; i < g->n_nodes && rc == 0; i++) {
            const ir_node *n = &g->nodes[i];
            if (!strcmp(n->op_type, "Constant") || ir_node_has_body(n)) continue;
            bc->nodes++;
            uint8_t *bytes = NULL;
            size_t nb = 0;
            if (onnx_node_model_pack(m, i, true, &bytes, &nb)) {
                bc->no_shape++;
                continue;
            }
            uint64_t h = fnv(bytes, nb);
            bool dup = false;
            for (int k = 0; k < n_seen && !dup; k++)
                dup = seen[k].hash == h && seen[k].n == nb && !memcmp(seen[k].bytes, bytes, nb);
            if (dup || bc->n >= max_cases) {
                bc->dups += dup, bc->over += !dup;
                free(bytes);
                continue;
            }
            if (n_seen == seen_cap) {
                seen_case *grown = realloc(seen, sizeof(*seen) * (size_t)(seen_cap = seen_cap ? 2 * seen_cap : 256));
                char **gn = realloc(bc->names, sizeof(char *) * (size_t)seen_cap);
                if (gn) bc->names = gn;
                if (!grown || !gn) {
                    free(grown ? grown : seen), seen = NULL, n_seen = 0;
                    free(bytes);
                    snprintf(bc->err, sizeof(bc->err), "out of memory");
                    rc = -1;
                    break;
                }
                seen = grown;
            }
            seen[n_seen++] = (seen_case){h, bytes, nb};
            /* the case's name: its number, the model (without .onnx) and the node */
            char name[256], dir[1300], why[600];
            snprintf(name, sizeof(name), "%04d_%.*s_%.80s_%.60s", bc->n, (int)(strlen(files[f]) - 5), files[f],
                     n->op_type, n->name ? n->name : "");
            for (char *c = name; *c; c++)
                if (*c == '/' || *c == ' ' || *c == ':') *c = '_';
            snprintf(dir, sizeof(dir), "%s/%s", out, name);
            if (!write_case(ctx, dir, bytes, nb, &rng, why, sizeof(why))) {
                bc->cpu_failed++;
                if (!bc->first_cpu_failure[0])
                    snprintf(bc->first_cpu_failure, sizeof(bc->first_cpu_failure), "%.120s: %.500s", name, why);
                continue;
            }
            if (!(bc->names[bc->n] = strdup(name))) {
                snprintf(bc->err, sizeof(bc->err), "out of memory");
                rc = -1;
                break;
            }
            bc->n++;
        }
        seam_model_free(m);
    }
    for (int k = 0; k < n_seen; k++) free(seen[k].bytes);
    free(seen);
    for (int k = 0; k < n_files; k++) free(files[k]);
    free(files);
    if (rc == 0 && n_files == 0) {
        snprintf(bc->err, sizeof(bc->err), "--models %s: no .onnx file in it", models);
        rc = -1;
    }
    return rc;
}

void backend_cases_free(backend_cases *bc) {
    for (int k = 0; k < bc->n; k++) free(bc->names[k]);
    free(bc->names);
    bc->names = NULL;
    bc->n = 0;
}
