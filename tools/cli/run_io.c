/* seam run's files and printouts (run.h): the --input files read, random
 * data for inputs without one, --report's table, and --output-dir's files
 * written all or nothing. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "core/npy.h"
#include "ir/ir.h"
#include "onnx/onnx.h"
#include "run.h"

static bool read_file(const char *path, unsigned char **buf, size_t *n, char *err, size_t errn) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errn, "cannot open '%s': %s", path, strerror(errno));
        return false;
    }
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fclose(f);
        snprintf(err, errn, "'%s' is not a regular file", path);
        return false;
    }
    *n = (size_t)sb.st_size;
    *buf = malloc(*n ? *n : 1);
    bool ok = *buf && fread(*buf, 1, *n, f) == *n;
    fclose(f);
    if (!ok) {
        free(*buf);
        snprintf(err, errn, "cannot read '%s'", path);
    }
    return ok;
}

bool run_read_input(seam_context *ctx, const char *file, const ir_type *type, seam_tensor *t, char *err,
                    size_t errn) {
    memset(t, 0, sizeof(*t));
    size_t fl = strlen(file);
    if (!(fl > 4 && strcmp(file + fl - 4, ".npy") == 0)) {
        if (seam_onnx_value_read_file(ctx, file, type, t) == SEAM_STATUS_OK) return true;
        snprintf(err, errn, "%s", seam_context_last_error(ctx));
        return false;
    }
    if (type && type->kind != IR_TYPE_TENSOR && type->kind != IR_TYPE_NONE &&
        !(type->kind == IR_TYPE_OPTIONAL && type->inner && type->inner->kind == IR_TYPE_TENSOR)) {
        snprintf(err, errn, "'%s': .npy holds a tensor; this input is a %s: give an ONNX %s .pb file", file,
                 type->kind == IR_TYPE_SEQUENCE ? "sequence" : type->kind == IR_TYPE_OPTIONAL ? "optional sequence" : "map",
                 type->kind == IR_TYPE_SEQUENCE ? "SequenceProto" : "OptionalProto");
        return false;
    }
    unsigned char *buf;
    size_t n;
    if (!read_file(file, &buf, &n, err, errn)) return false;
    bool ok = npy_parse(buf, n, t, err, errn);
    free(buf);
    const ir_type *tt = type && type->kind == IR_TYPE_OPTIONAL ? type->inner : type;
    /* numpy has no bfloat16 or float8: their bits come as uint16 / uint8
     * (what ml_dtypes' types view) */
    if (ok && tt && tt->elem == SEAM_DTYPE_BFLOAT16 && t->dtype == SEAM_DTYPE_UINT16) t->dtype = SEAM_DTYPE_BFLOAT16;
    if (ok && tt && tt->elem >= SEAM_DTYPE_FLOAT8E4M3FN && tt->elem <= SEAM_DTYPE_FLOAT8E5M2FNUZ &&
        t->dtype == SEAM_DTYPE_UINT8)
        t->dtype = tt->elem;
    return ok;
}

/* The shape of an input file fixes the model's symbolic dims of that input
 * when it agrees with the model's rank and fixed dims: backends that
 * compile for static shapes then take the model. "NAME=AxBxC" in arg, or
 * false to leave the input as it is (a contradiction is reported when the
 * input is set). */
bool run_shape_from_input(const ir_value *v, const seam_tensor *t, char *arg, size_t n) {
    if (v->type.kind != IR_TYPE_TENSOR || v->type.rank != t->rank) return false;
    bool symbolic = false;
    for (int32_t d = 0; d < t->rank; d++) {
        if (v->type.dims[d].v >= 0 && v->type.dims[d].v != t->dims[d]) return false;
        symbolic |= v->type.dims[d].v < 0;
    }
    if (!symbolic) return false;
    size_t off = (size_t)snprintf(arg, n, "%s=", v->name);
    for (int32_t d = 0; d < t->rank && off < n; d++)
        off += (size_t)snprintf(arg + off, n - off, "%s%lld", d ? "x" : "", (long long)t->dims[d]);
    return off < n && t->rank > 0;
}

/* xorshift64*: the fixed-seed source of random inputs. */
static uint64_t rng_next(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

bool run_fill_random(seam_tensor *t, uint64_t seed) {
    size_t es = seam_dtype_size((seam_dtype)t->dtype);
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    if (t->dtype == SEAM_DTYPE_STRING) { /* words "w0".."w9": numel seam_bytes, then their bytes */
        t->nbytes = (size_t)t->numel * sizeof(seam_bytes);
        t->data = malloc(t->nbytes + (size_t)t->numel * 2 + 1);
        if (!t->data) return false;
        seam_bytes *b = t->data;
        char *at = (char *)(b + t->numel);
        for (int64_t i = 0; i < t->numel; i++, at += 2) {
            at[0] = 'w';
            at[1] = (char)('0' + rng_next(&s) % 10);
            b[i] = (seam_bytes){at, 2};
        }
        return true;
    }
    t->nbytes = (size_t)t->numel * es;
    t->data = malloc(t->nbytes ? t->nbytes : 1);
    if (!t->data) return false;
    for (int64_t i = 0; i < t->numel; i++) {
        uint64_t r = rng_next(&s);
        double u = (double)(r >> 11) / 9007199254740992.0; /* [0,1) */
        switch (t->dtype) {
        case SEAM_DTYPE_FLOAT32: ((float *)t->data)[i] = (float)(2 * u - 1); break;
        case SEAM_DTYPE_FLOAT64: ((double *)t->data)[i] = 2 * u - 1; break;
        case SEAM_DTYPE_BOOL: ((uint8_t *)t->data)[i] = r >> 63; break;
        /* small non-negative integers: safe as indices and token ids */
        case SEAM_DTYPE_INT64: ((int64_t *)t->data)[i] = (int64_t)(r % 10); break;
        case SEAM_DTYPE_INT32: ((int32_t *)t->data)[i] = (int32_t)(r % 10); break;
        default: memset((char *)t->data + (size_t)i * es, (int)(r % 10), es); break;
        }
    }
    return true;
}

/* One line per device subgraph and per run of CPU nodes between them, in
 * execution order, from the last run's profile. */
void run_print_report(seam_session *s, const ir_graph *g) {
    printf("report (last run): part, target, nodes, ms, bytes in, bytes out\n");
    double total = 0, cpu_ms = 0;
    int32_t cpu_nodes = 0;
    int64_t moved = 0;
    for (int32_t p = 0; p <= g->n_nodes; p++) {
        seam_node_stats st = {0};
        bool device = false;
        if (p < g->n_nodes) {
            seam_session_node_stats(s, g->topo[p], &st);
            device = strcmp(st.target, "cpu") != 0 || strcmp(st.op_type, "Subgraph") == 0;
            total += st.ms;
        }
        if ((device || p == g->n_nodes) && cpu_nodes) {
            printf("  %-28s %-10s %5d %9.3f %12s %12s\n", "cpu nodes", "cpu", cpu_nodes, cpu_ms, "-", "-");
            cpu_nodes = 0, cpu_ms = 0;
        }
        if (p == g->n_nodes) break;
        if (device) {
            const ir_attr *body = ir_node_attr(&g->nodes[g->topo[p]], "body");
            int32_t n_body = body && body->kind == IR_ATTR_GRAPH ? body->g->n_nodes : 1;
            printf("  %-28s %-10s %5d %9.3f %12lld %12lld\n", st.name, st.target, n_body, st.ms, (long long)st.bytes_in,
                   (long long)st.bytes_out);
            moved += st.bytes_in + st.bytes_out;
        } else {
            cpu_nodes++, cpu_ms += st.ms;
        }
    }
    printf("  total %.3f ms; %lld bytes crossed device boundaries\n", total, (long long)moved);
    seam_session_stats ss;
    if (seam_session_stats_get(s, &ss) == SEAM_STATUS_OK && ss.compiles + ss.cache_hits + ss.cpu_shapes > 0)
        printf("  device compiles: %lld (%lld at runs, for shapes not seen before), %.1f ms; runs of a compiled shape: "
               "%lld; evictions: %lld; shapes run on the CPU: %lld\n",
               (long long)ss.compiles, (long long)ss.run_compiles, ss.compile_ms, (long long)ss.cache_hits,
               (long long)ss.evictions, (long long)ss.cpu_shapes);
}

/* The value of an output view as seam's tensor struct; a sequence's
 * elements in *els (the caller frees the array, not the data). */
static bool value_of(const seam_value_view *v, seam_tensor *t, seam_tensor **els) {
    *els = NULL;
    memset(t, 0, sizeof(*t));
    if (v->kind == SEAM_KIND_NONE) {
        t->dtype = SEAM_VALUE_NONE;
        return true;
    }
    const seam_tensor_view *src = v->kind == SEAM_KIND_TENSOR ? &v->tensor : v->elements;
    int32_t n = v->kind == SEAM_KIND_TENSOR ? 1 : v->count;
    seam_tensor *out = v->kind == SEAM_KIND_TENSOR ? t : (*els = calloc((size_t)n + 1, sizeof(seam_tensor)));
    if (!out) return false;
    for (int32_t i = 0; i < n; i++) {
        out[i] = (seam_tensor){.dtype = src[i].dtype, .rank = src[i].rank, .data = (void *)src[i].data,
                               .nbytes = src[i].nbytes};
        for (int32_t d = 0; d < src[i].rank; d++) out[i].dims[d] = src[i].dims[d];
        out[i].numel = seam_shape_numel(out[i].dims, out[i].rank);
    }
    if (v->kind == SEAM_KIND_SEQUENCE)
        *t = (seam_tensor){.dtype = SEAM_VALUE_SEQUENCE, .numel = n, .data = *els, .elem = (int32_t)v->elem_dtype,
                           .nbytes = (size_t)n * sizeof(seam_tensor)};
    return true;
}

/* Why .npy cannot hold a value as it is, or NULL when it can. */
static const char *npy_cannot(const seam_tensor *t) {
    if (t->dtype == SEAM_VALUE_NONE) return "it is an optional without a value";
    if (t->dtype == SEAM_VALUE_SEQUENCE) return "it is a sequence";
    if (t->dtype == SEAM_DTYPE_BFLOAT16) return "numpy has no bfloat16";
    if (t->dtype >= SEAM_DTYPE_FLOAT8E4M3FN && t->dtype <= SEAM_DTYPE_FLOAT8E5M2FNUZ) return "numpy has no float8";
    if (t->dtype == SEAM_DTYPE_STRING && !npy_holds(t)) return "a string is not UTF-8 or holds a NUL";
    if (!npy_holds(t)) return "numpy has no such dtype";
    return NULL;
}

/* Writes every output to DIR/<name>.<format>: npy where .npy holds the
 * value (numeric tensors, UTF-8 strings as numpy unicode), else pb (a
 * TensorProto, SequenceProto or OptionalProto, as the model declares the
 * output), said once per output; with format pb, all as pb. Each file goes
 * to a temporary name in DIR first, and only when all are written are
 * they renamed into place. On a failure the temporary files are removed,
 * and DIR too when this run made it, so DIR is left as it was. */
int run_write_outputs(seam_context *ctx, seam_session *s, const ir_graph *g, int32_t n_outputs, const char *out_dir,
                      const char *format) {
    bool made_dir = mkdir(out_dir, 0755) == 0;
    if (!made_dir && errno != EEXIST) {
        fprintf(stderr, "seam run: cannot create '%s': %s\n", out_dir, strerror(errno));
        return CLI_BAD_INPUT;
    }
    char(*tmp)[4096] = calloc((size_t)n_outputs + 1, sizeof(*tmp));
    char(*dst)[4096] = calloc((size_t)n_outputs + 1, sizeof(*dst));
    seam_tensor *vals = calloc((size_t)n_outputs + 1, sizeof(seam_tensor));
    seam_tensor **els = calloc((size_t)n_outputs + 1, sizeof(seam_tensor *));
    const char **why = calloc((size_t)n_outputs + 1, sizeof(char *));
    int rc = CLI_OK;
    int32_t written = 0;
    if (!tmp || !dst || !vals || !els || !why) {
        fprintf(stderr, "seam run: out of memory\n");
        rc = CLI_BAD_INPUT;
    }
    /* each output's value and file; two outputs whose names map to one
     * file (a:0 and a_0) would overwrite each other: refused before
     * anything is written */
    for (int32_t o = 0; o < n_outputs && rc == CLI_OK; o++) {
        seam_value_view view;
        seam_status st = seam_session_output_value(s, o, &view);
        if (!st && !value_of(&view, &vals[o], &els[o])) st = SEAM_STATUS_OUT_OF_MEMORY;
        if (st) {
            rc = cli_fail("run", ctx, st) == CLI_USAGE ? CLI_USAGE : CLI_BAD_INPUT;
            break;
        }
        const char *name = g->values[g->outputs[o]].name;
        why[o] = format[0] == 'n' ? npy_cannot(&vals[o]) : NULL;
        char fname[512];
        npy_file_name(name, fname, sizeof(fname), "output");
        snprintf(dst[o], sizeof(dst[o]), "%s/%s.%s", out_dir, fname, format[0] == 'n' && !why[o] ? "npy" : "pb");
        for (int32_t q = 0; q < o && rc == CLI_OK; q++)
            if (strcmp(dst[q], dst[o]) == 0) {
                fprintf(stderr, "seam run: outputs '%s' and '%s' would both be written to '%s'; nothing was written\n",
                        g->values[g->outputs[q]].name, name, dst[o]);
                rc = CLI_BAD_INPUT;
            }
    }
    for (int32_t o = 0; o < n_outputs && rc == CLI_OK; o++) {
        const ir_value *v = &g->values[g->outputs[o]];
        char fname[512], err[1024];
        bool npy = format[0] == 'n' && !why[o];
        npy_file_name(v->name, fname, sizeof(fname), "output");
        snprintf(tmp[o], sizeof(tmp[o]), "%s/.%s.%s.%d.tmp%ld", out_dir, fname, npy ? "npy" : "pb", (int)o,
                 (long)getpid());
        bool ok;
        if (!npy) {
            ok = seam_onnx_value_write(ctx, tmp[o], v->name, &v->type, &vals[o]) == SEAM_STATUS_OK;
            if (!ok) snprintf(err, sizeof(err), "%s", seam_context_last_error(ctx));
        } else {
            ok = npy_write(tmp[o], &vals[o], err, sizeof(err));
        }
        written = o + 1;
        if (!ok) {
            fprintf(stderr, "seam run: output '%s': %s\n", v->name, err);
            rc = CLI_BAD_INPUT;
        }
    }
    for (int32_t o = 0; o < written && rc == CLI_OK; o++) {
        if (rename(tmp[o], dst[o]) != 0) {
            fprintf(stderr, "seam run: cannot write '%s': %s\n", dst[o], strerror(errno));
            rc = CLI_BAD_INPUT;
        }
    }
    if (rc != CLI_OK) {
        for (int32_t o = 0; o < written; o++) unlink(tmp[o]);
        if (made_dir) rmdir(out_dir);
    }
    for (int32_t o = 0; rc == CLI_OK && o < n_outputs; o++)
        if (why[o])
            fprintf(stderr, "seam run: output '%s' written as %s (an ONNX %s), not .npy: %s\n",
                    g->values[g->outputs[o]].name, dst[o],
                    g->values[g->outputs[o]].type.kind == IR_TYPE_OPTIONAL ? "OptionalProto"
                    : vals[o].dtype == SEAM_VALUE_SEQUENCE                 ? "SequenceProto"
                                                                           : "TensorProto",
                    why[o]);
    for (int32_t o = 0; els && o < n_outputs; o++) free(els[o]);
    free(els);
    free(vals);
    free(why);
    free(tmp);
    free(dst);
    return rc;
}
