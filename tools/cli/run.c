/* seam run MODEL [--input NAME=FILE]... [--output-dir DIR] [--output-format npy|pb]
 *               [--repeat N] [--threads N] [--shape NAME=1x3x224x224]... */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "ir/ir.h"
#include "core/npy.h"
#include "onnx/onnx.h"
#include "seam_report.h"
#include "targets.h"

static const char *RUN_HELP =
    "usage: seam run MODEL [options]\n"
    "\n"
    "Runs MODEL and writes its outputs: on the CPU, or split between the\n"
    "--target devices and the CPU (partitioned on the fly, as seam partition\n"
    "would). A model saved by seam partition -o runs as it was partitioned.\n"
    "\n"
    "  --input NAME=FILE     data for input NAME, from a .npy file or an ONNX\n"
    "                        TensorProto .pb file; inputs without a file get\n"
    "                        random data from a fixed seed\n"
    "  --shape NAME=AxBxC    fixes the shape of an input with symbolic dims (by\n"
    "                        default the shape of its --input file fixes them)\n"
    "  --output-dir DIR      write each output to DIR/<name>.npy (characters\n"
    "                        outside [A-Za-z0-9._-] become _), only when the\n"
    "                        run succeeded and all at once: a failed run\n"
    "                        leaves DIR as it was\n"
    "  --output-format F     npy (default) or pb (TensorProto)\n"
    "  --repeat N            time N runs after a warm-up; prints the median and\n"
    "                        min, and the time it took to load, to partition and\n"
    "                        to make the session (backend compiles, memory plan)\n"
    "  --threads N           worker threads (default: one per core)\n"
    "  --dynamic-batch       accept any batch (dim 0) for a model made for batch B:\n"
    "                        the inputs run in chunks of B (the last padded) and\n"
    "                        the outputs are joined\n"
    "  --report              after the (last) run, print each part's time in\n"
    "                        execution order: every device subgraph with its\n"
    "                        target and the bytes copied in and out, and the CPU\n"
    "                        nodes between them\n"
    "  --compile-log         print each device subgraph's compile log (the\n"
    "                        kernels the backend chose, their implementations,\n"
    "                        what it fused) on stderr\n"
    "  --html OUT.html       write the plan as one self-contained HTML page (see seam\n"
    "                        partition --help) with the measured time of each\n"
    "                        subgraph and node of the (last) run\n"
    "  --profile TRACE.json  write the (last) run as Chrome trace events (open it in\n"
    "                        Perfetto or chrome://tracing): a span per node and per\n"
    "                        device subgraph, a track per target, boundary copies,\n"
    "                        the compiles at session creation\n"
    "  --workdir DIR         write DIR as seam partition --workdir does, with the\n"
    "                        compile logs of this session\n"
    "  --dump-values         with --workdir: every value that crossed a subgraph\n"
    "                        boundary in the (last) run, and the inputs, as\n"
    "                        DIR/values/<name>.npy\n"
    "  --quiet               do not print the notes about slower paths (nodes that\n"
    "                        went to the CPU and why, a backend's slow kernels),\n"
    "                        printed once per session on stderr otherwise\n"
    "\n"
    "Partitioning (all of seam partition's options):\n" TARGET_HELP;

typedef struct named {
    const char *name;
    const char *value;
} named;

#define MAX_NAMED 64

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The session's log: all of it with --compile-log; otherwise its "slow:"
 * lines (a backend took a slower path than asked), unless --quiet. */
static void print_session_log(const char *log, bool all, bool quiet) {
    for (const char *p = log; *p;) {
        const char *nl = strchr(p, '\n');
        int len = nl ? (int)(nl - p) : (int)strlen(p);
        bool slow = strstr(p, "): slow: ") && strstr(p, "): slow: ") < p + len;
        if (all || (slow && !quiet)) fprintf(stderr, "seam: %.*s\n", len, p);
        p += len + (nl ? 1 : 0);
    }
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

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

/* xorshift64*: the fixed-seed source of random inputs. */
/* Reads an input file, .npy or else an ONNX TensorProto, into t (t->data
 * malloc'd). */
static bool read_input(seam_context *ctx, const char *file, seam_tensor *t, char *err, size_t errn) {
    unsigned char *buf;
    size_t n;
    memset(t, 0, sizeof(*t));
    if (!read_file(file, &buf, &n, err, errn)) return false;
    bool ok;
    size_t fl = strlen(file);
    if (fl > 4 && strcmp(file + fl - 4, ".npy") == 0) {
        ok = npy_parse(buf, n, t, err, errn);
    } else {
        char *pbname = NULL;
        ok = seam_onnx_tensor_read(ctx, buf, n, file, t, &pbname) == SEAM_STATUS_OK;
        free(pbname);
        if (!ok) snprintf(err, errn, "%s", seam_context_last_error(ctx));
    }
    free(buf);
    return ok;
}

/* The shape of an input file fixes the model's symbolic dims of that input
 * when it agrees with the model's rank and fixed dims: backends that
 * compile for static shapes then take the model. "NAME=AxBxC" in arg, or
 * false to leave the input as it is (a contradiction is reported when the
 * input is set). */
static bool shape_from_input(const ir_value *v, const seam_tensor *t, char *arg, size_t n) {
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

static uint64_t rng_next(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

static bool fill_random(seam_tensor *t, uint64_t seed) {
    size_t es = seam_dtype_size((seam_dtype)t->dtype);
    t->nbytes = (size_t)t->numel * es;
    t->data = malloc(t->nbytes ? t->nbytes : 1);
    if (!t->data) return false;
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
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

static bool split_named(const char *arg, named *out) {
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || !eq[1]) return false;
    char *name = strndup(arg, (size_t)(eq - arg));
    if (!name) return false;
    out->name = name;
    out->value = eq + 1;
    return true;
}

static void show_progress(void *user, int32_t done, int32_t total) {
    (void)user;
    if (total < 2) return;
    fprintf(stderr, "\rcompiling device subgraphs: %d of %d", done, total);
    if (done == total) fprintf(stderr, "\n");
}

/* One line per device subgraph and per run of CPU nodes between them, in
 * execution order, from the last run's profile. */
static void print_report(seam_session *s, const ir_graph *g) {
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

/* The model's metadata value for key, or NULL. */
static const char *model_metadata(const seam_model *m, const char *key) {
    for (int32_t k = 0; k < m->n_metadata; k++)
        if (strcmp(m->metadata[k].key, key) == 0) return m->metadata[k].value;
    return NULL;
}

/* Writes every output to DIR/<name>.<format>, all or nothing: each goes
 * to a temporary name in DIR first, and only when all are written are they
 * renamed into place. On a failure the temporary files are removed, and
 * DIR too when this run made it, so DIR is left as it was. */
static int write_outputs(seam_context *ctx, seam_session *s, int32_t n_outputs, const char *out_dir,
                         const char *format) {
    bool made_dir = mkdir(out_dir, 0755) == 0;
    if (!made_dir && errno != EEXIST) {
        fprintf(stderr, "seam run: cannot create '%s': %s\n", out_dir, strerror(errno));
        return CLI_BAD_INPUT;
    }
    char(*tmp)[4096] = calloc((size_t)n_outputs + 1, sizeof(*tmp));
    char(*dst)[4096] = calloc((size_t)n_outputs + 1, sizeof(*dst));
    int rc = CLI_OK;
    int32_t written = 0;
    if (!tmp || !dst) {
        fprintf(stderr, "seam run: out of memory\n");
        rc = CLI_BAD_INPUT;
    }
    /* two outputs whose names map to one file (a:0 and a_0) would overwrite
     * each other: refused before anything is written */
    for (int32_t o = 0; o < n_outputs && rc == CLI_OK; o++) {
        seam_tensor_view view;
        seam_status st = seam_session_output(s, o, &view);
        if (st) {
            rc = cli_fail("run", ctx, st) == CLI_USAGE ? CLI_USAGE : CLI_BAD_INPUT;
            break;
        }
        char fname[512];
        npy_file_name(view.name, fname, sizeof(fname), "output");
        snprintf(dst[o], sizeof(dst[o]), "%s/%s.%s", out_dir, fname, format);
        for (int32_t q = 0; q < o && rc == CLI_OK; q++)
            if (strcmp(dst[q], dst[o]) == 0) {
                seam_tensor_view other;
                seam_session_output(s, q, &other);
                fprintf(stderr, "seam run: outputs '%s' and '%s' would both be written to '%s'; nothing was written\n",
                        other.name, view.name, dst[o]);
                rc = CLI_BAD_INPUT;
            }
    }
    for (int32_t o = 0; o < n_outputs && rc == CLI_OK; o++) {
        seam_tensor_view view;
        seam_session_output(s, o, &view);
        char fname[512], err[1024];
        npy_file_name(view.name, fname, sizeof(fname), "output");
        snprintf(tmp[o], sizeof(tmp[o]), "%s/.%s.%s.%d.tmp%ld", out_dir, fname, format, (int)o, (long)getpid());
        seam_tensor t = {.dtype = view.dtype, .rank = view.rank, .data = (void *)view.data, .nbytes = view.nbytes};
        for (int32_t d = 0; d < view.rank; d++) t.dims[d] = view.dims[d];
        t.numel = seam_shape_numel(t.dims, t.rank);
        bool ok;
        if (format[0] == 'p') {
            ok = seam_onnx_tensor_write(ctx, tmp[o], view.name, &t) == SEAM_STATUS_OK;
            if (!ok) snprintf(err, sizeof(err), "%s", seam_context_last_error(ctx));
        } else {
            ok = npy_write(tmp[o], &t, err, sizeof(err));
        }
        written = o + 1;
        if (!ok) {
            fprintf(stderr, "seam run: output '%s': %s\n", view.name, err);
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
    free(tmp);
    free(dst);
    return rc;
}

int cmd_run(int argc, char **argv) {
    const char *path = NULL, *out_dir = NULL, *format = "npy", *html = NULL, *trace = NULL, *workdir = NULL;
    named inputs[MAX_NAMED], shapes[MAX_NAMED];
    int n_inputs = 0, n_shapes = 0, repeat = 0, threads = 0, rc = CLI_OK;
    bool report = false, dynamic_batch = false, quiet = false, compile_log = false, dump_values = false;
    cli_targets tg;
    targets_init(&tg);
    for (int k = 1; k < argc; k++) {
        const char *a = argv[k];
        bool has_val = k + 1 < argc;
        int tr = strcmp(a, "--shape") == 0 ? 0 : targets_option(&tg, "run", argc, argv, &k);
        if (tr > 1) {
            targets_free(&tg);
            return CLI_USAGE;
        }
        if (tr == 1) continue;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(RUN_HELP, stdout);
            targets_free(&tg);
            return CLI_OK;
        } else if (strcmp(a, "--input") == 0 || strcmp(a, "--shape") == 0) {
            bool is_in = a[2] == 'i';
            if (!has_val) return targets_free(&tg), cli_usage("run", "%s needs NAME=%s", a, is_in ? "FILE" : "SHAPE");
            if ((is_in ? n_inputs : n_shapes) >= MAX_NAMED) return targets_free(&tg), cli_usage("run", "too many %s options", a);
            if (!split_named(argv[++k], is_in ? &inputs[n_inputs++] : &shapes[n_shapes++]))
                return targets_free(&tg), cli_usage("run", "%s wants NAME=%s, got '%s'", a, is_in ? "FILE" : "AxBxC", argv[k]);
        } else if (strcmp(a, "--report") == 0) {
            report = true;
        } else if (strcmp(a, "--html") == 0 || strcmp(a, "--profile") == 0 || strcmp(a, "--workdir") == 0) {
            if (!has_val) return targets_free(&tg), cli_usage("run", "%s needs a %s", a, a[2] == 'w' ? "folder" : "file name");
            *(a[2] == 'h' ? &html : a[2] == 'p' ? &trace : &workdir) = argv[++k];
        } else if (strcmp(a, "--dump-values") == 0) {
            dump_values = true;
        } else if (strcmp(a, "--quiet") == 0) {
            quiet = true;
        } else if (strcmp(a, "--compile-log") == 0) {
            compile_log = true;
        } else if (strcmp(a, "--dynamic-batch") == 0) {
            dynamic_batch = true;
        } else if (strcmp(a, "--output-dir") == 0) {
            if (!has_val) return targets_free(&tg), cli_usage("run", "--output-dir needs a folder");
            out_dir = argv[++k];
        } else if (strcmp(a, "--output-format") == 0) {
            if (!has_val) return targets_free(&tg), cli_usage("run", "--output-format needs npy or pb");
            format = argv[++k];
            if (strcmp(format, "npy") != 0 && strcmp(format, "pb") != 0)
                return targets_free(&tg), cli_usage("run", "--output-format must be npy or pb, not '%s'", format);
        } else if (strcmp(a, "--repeat") == 0 || strcmp(a, "--threads") == 0) {
            if (!has_val) return targets_free(&tg), cli_usage("run", "%s needs a number", a);
            char *end;
            long v = strtol(argv[++k], &end, 10);
            bool rep = a[2] == 'r';
            if (*end || end == argv[k] || v < (rep ? 1 : 0) || v > 1000000)
                return targets_free(&tg), cli_usage("run", "%s wants a number %s, got '%s'", a, rep ? ">= 1" : ">= 0", argv[k]);
            if (rep) repeat = (int)v;
            else threads = (int)v;
        } else if (a[0] == '-' && a[1]) {
            return targets_free(&tg), cli_usage("run", "unknown option '%s'", a);
        } else if (path) {
            return targets_free(&tg), cli_usage("run", "one model at a time ('%s' and '%s' given)", path, a);
        } else {
            path = a;
        }
    }
    if (!path) return targets_free(&tg), cli_usage("run", "no model given");
    if (dump_values && !workdir) return targets_free(&tg), cli_usage("run", "--dump-values needs --workdir");
    if (dynamic_batch && (html || workdir))
        return targets_free(&tg), cli_usage("run", "--html and --workdir do not go with --dynamic-batch");

    const char *outs[] = {html, trace, workdir};
    for (int k = 0; k < 3; k++)
        if (cli_same_file(path, outs[k])) {
            fprintf(stderr, "seam run: %s is the input model; write the report elsewhere\n", outs[k]);
            targets_free(&tg);
            return CLI_BAD_INPUT;
        }
    seam_context *ctx;
    if (seam_context_create(&ctx)) return CLI_BAD_INPUT;
    seam_model *m = NULL;
    seam_session *s = NULL;
    seam_report *rep = NULL; /* --html, --workdir: the plan, before it is applied */
    const char *feed_names[MAX_NAMED];
    seam_tensor feeds[MAX_NAMED], loaded[MAX_NAMED]; /* loaded: the --input files, by option */
    int n_feeds = 0;
    memset(loaded, 0, sizeof(loaded));
    char err[1024];
    double t_load = now_ms();
    seam_status st = seam_model_load(ctx, path, &m);
    t_load = now_ms() - t_load;
    if (st) {
        rc = cli_fail("run", ctx, st);
        goto done;
    }
    const ir_graph *g = m->graph;
    for (int k = 0; k < n_shapes; k++) {
        char arg[1024];
        snprintf(arg, sizeof(arg), "%s=%s", shapes[k].name, shapes[k].value);
        if ((rc = cli_set_shape("run", ctx, m, arg))) goto done;
    }
    for (int k = 0; k < n_inputs; k++) {
        bool known = false;
        for (int32_t i = 0; i < g->n_inputs; i++)
            known |= strcmp(g->values[g->inputs[i]].name, inputs[k].name) == 0 &&
                     !(g->values[g->inputs[i]].flags & IR_VALUE_INIT);
        if (!known) {
            fprintf(stderr, "seam run: the model has no input '%s'\n", inputs[k].name);
            rc = CLI_BAD_INPUT;
            goto done;
        }
    }
    /* The input files are read before partitioning: their shapes fix the
     * model's symbolic dims (a --shape for that input, or --dynamic-batch,
     * says otherwise), so that the targets see static shapes and shape
     * computations fold. A model saved with --pad keeps its dims symbolic:
     * the session pads its inputs up to a bucket. */
    bool padded = model_metadata(m, "seam.pad") != NULL;
    for (int k = 0; k < n_inputs; k++) {
        if (!read_input(ctx, inputs[k].value, &loaded[k], err, sizeof(err))) {
            fprintf(stderr, "seam run: input '%s': %s\n", inputs[k].name, err);
            rc = CLI_BAD_INPUT;
            goto done;
        }
        bool given = dynamic_batch || padded;
        for (int j = 0; j < n_shapes; j++) given |= strcmp(shapes[j].name, inputs[k].name) == 0;
        for (int32_t i = 0; i < g->n_inputs && !given; i++) {
            char arg[1024];
            if (strcmp(g->values[g->inputs[i]].name, inputs[k].name) == 0 &&
                shape_from_input(&g->values[g->inputs[i]], &loaded[k], arg, sizeof(arg)) &&
                (rc = cli_set_shape("run", ctx, m, arg)))
                goto done;
        }
    }
    double t_partition = now_ms();
    if (tg.n_paths > 0) { /* partition on the fly */
        seam_plan *plan = NULL;
        if ((rc = targets_apply_shapes(&tg, "run", ctx, m))) goto done; /* shapes are applied; this folds */
        if ((rc = targets_load(&tg, "run", ctx))) goto done;
        if ((st = targets_partition(&tg, m, threads, &plan)) || ((html || workdir) && (st = seam_report_create(plan, path, &rep))) ||
            (st = seam_plan_apply(m, plan, tg.opts.targets, tg.opts.n_targets, tg.target_options, tg.n_target_options))) {
            seam_plan_free(plan);
            rc = cli_fail("run", ctx, st);
            rc = CLI_BAD_INPUT;
            goto done;
        }
        /* what placement gave up (a fallback to the CPU, and why), once */
        const char *notes = seam_plan_notes(plan);
        for (const char *p = notes; *p && !quiet;) {
            const char *nl = strchr(p, '\n');
            int len = nl ? (int)(nl - p) : (int)strlen(p);
            fprintf(stderr, "seam: %.*s\n", len, p);
            p += len + (nl ? 1 : 0);
        }
        seam_plan_free(plan);
    }
    if (tg.n_paths == 0 && tg.n_libs > 0 && (rc = targets_load(&tg, "run", ctx))) goto done; /* backends for a saved model */
    if ((html || workdir) && !rep) { /* no --target: the plan of the model as it is (every node on the CPU) */
        seam_partition_options po = seam_partition_defaults();
        seam_plan *plan = NULL;
        st = seam_partition(m, &po, &plan);
        if (!st) st = seam_report_create(plan, path, &rep);
        seam_plan_free(plan);
        if (st) {
            rc = cli_fail("run", ctx, st);
            rc = CLI_BAD_INPUT;
            goto done;
        }
    }
    int32_t n_outputs = g->n_outputs; /* the model's own, without the boundary values --dump-values adds */
    if (rep && ((workdir && (st = seam_report_set_partitioned(rep, m))) ||
                (dump_values && (st = seam_report_expose_boundaries(rep, m))))) {
        cli_fail("run", ctx, st);
        rc = CLI_BAD_INPUT;
        goto done;
    }
    /* the built-in accelerated backend is always there for saved models */
    bool has_dnnl = false;
    for (int32_t k = 0; k < tg.n_avail; k++) has_dnnl |= tg.avail[k] == seam_backend_dnnl();
    if (!has_dnnl && tg.n_avail < (int32_t)(sizeof(tg.avail) / sizeof(tg.avail[0]))) tg.avail[tg.n_avail++] = seam_backend_dnnl();
    bool profile = report || html || trace || workdir;
    seam_session_options opts = {threads, profile, dynamic_batch, tg.avail, tg.n_avail, NULL, NULL};
    if (isatty(2)) opts.progress = show_progress; /* only on a terminal */
    double t_session = now_ms();
    t_partition = t_session - t_partition;
    /* the options were checked above: a session or a run that fails is the
     * model's or the data's fault, bad input (exit 1) */
    if ((st = seam_session_create(m, &opts, &s))) {
        cli_fail("run", ctx, st);
        rc = CLI_BAD_INPUT;
        goto done;
    }
    t_session = now_ms() - t_session;
    print_session_log(seam_session_log(s), compile_log, quiet);
    size_t log_seen = strlen(seam_session_log(s)); /* runs may add lines (a shape compiled, or not) */
    for (int32_t i = 0; i < g->n_inputs; i++) {
        const ir_value *v = &g->values[g->inputs[i]];
        if (v->flags & IR_VALUE_INIT) continue;
        feed_names[n_feeds] = v->name;
        seam_tensor *t = &feeds[n_feeds++];
        memset(t, 0, sizeof(*t));
        int file = -1; /* the last --input for this name */
        for (int k = 0; k < n_inputs; k++)
            if (strcmp(inputs[k].name, v->name) == 0) file = k;
        if (file >= 0) {
            *t = loaded[file];
            loaded[file].data = NULL; /* feeds own it now */
        } else {
            if (v->type.kind != IR_TYPE_TENSOR || v->type.rank < 0 || !v->type.elem) {
                fprintf(stderr, "seam run: input '%s' has no known type or shape; give it with --input\n", v->name);
                rc = CLI_BAD_INPUT;
                goto done;
            }
            t->dtype = v->type.elem;
            t->rank = v->type.rank;
            for (int32_t d = 0; d < t->rank; d++) {
                if (v->type.dims[d].v < 0) {
                    fprintf(stderr, "seam run: input '%s' has symbolic dimension '%s' (axis %d); give it with --shape %s=...\n",
                            v->name, v->type.dims[d].sym ? v->type.dims[d].sym : "?", d, v->name);
                    rc = CLI_USAGE;
                    goto done;
                }
                t->dims[d] = v->type.dims[d].v;
            }
            t->numel = seam_shape_numel(t->dims, t->rank);
            if (t->numel < 0 || !fill_random(t, (uint64_t)i + 1)) {
                fprintf(stderr, "seam run: input '%s': cannot make random data\n", v->name);
                rc = CLI_BAD_INPUT;
                goto done;
            }
        }
        if ((st = seam_session_set_input(s, v->name, (seam_dtype)t->dtype, t->rank, t->dims, t->data))) {
            rc = cli_fail("run", ctx, st);
            rc = CLI_BAD_INPUT;
            goto done;
        }
    }
    if ((st = seam_session_run(s))) {
        cli_fail("run", ctx, st);
        rc = CLI_BAD_INPUT;
        goto done;
    }
    if (repeat > 0) {
        double *times = malloc(sizeof(double) * (size_t)repeat);
        if (!times) goto done;
        for (int r = 0; r < repeat && !st; r++) {
            double t0 = now_ms();
            st = seam_session_run(s);
            times[r] = now_ms() - t0;
        }
        if (!st) {
            qsort(times, (size_t)repeat, sizeof(double), cmp_double);
            printf("%s: median %.3f ms, min %.3f ms over %d runs\n", path, times[repeat / 2], times[0], repeat);
            printf("%s: ready in %.1f ms: loading %.1f ms, partitioning %.1f ms, session (backend compiles, memory plan) %.1f ms\n",
                   path, t_load + t_partition + t_session, t_load, t_partition, t_session);
        }
        free(times);
        if (st) {
            cli_fail("run", ctx, st);
            rc = CLI_BAD_INPUT;
            goto done;
        }
    }
    print_session_log(seam_session_log(s) + log_seen, compile_log, quiet);
    if (report) print_report(s, m->graph);
    if (rep && (st = seam_report_add_run(rep, s, m))) {
        rc = cli_fail("run", ctx, st);
        goto done;
    }
    if ((html && (st = seam_report_write_html(rep, html))) || (trace && (st = seam_session_write_trace(s, m, trace)))) {
        cli_fail("run", ctx, st);
        rc = CLI_BAD_INPUT;
        goto done;
    }
    if (workdir) {
        seam_tensor_view views[MAX_NAMED];
        for (int k = 0; k < n_feeds; k++)
            views[k] = (seam_tensor_view){feed_names[k], (seam_dtype)feeds[k].dtype, feeds[k].rank, feeds[k].dims,
                                          feeds[k].data, feeds[k].nbytes};
        if ((st = seam_report_write_workdir(rep, s, views, dump_values ? n_feeds : 0, workdir))) {
            cli_fail("run", ctx, st);
            rc = CLI_BAD_INPUT;
            goto done;
        }
    }
    if (out_dir) {
        rc = write_outputs(ctx, s, n_outputs, out_dir, format);
        goto done;
    }
    for (int32_t o = 0; o < n_outputs; o++) {
        seam_tensor_view view;
        if ((st = seam_session_output(s, o, &view))) {
            cli_fail("run", ctx, st);
            rc = CLI_BAD_INPUT;
            goto done;
        }
        printf("output '%s': %s [", view.name, seam_dtype_name(view.dtype));
        for (int32_t d = 0; d < view.rank; d++) printf("%s%lld", d ? "," : "", (long long)view.dims[d]);
        printf("]\n");
    }
done:
    seam_report_free(rep);
    targets_free(&tg);
    for (int k = 0; k < n_feeds; k++) free(feeds[k].data);
    for (int k = 0; k < n_inputs; k++) free(loaded[k].data);
    for (int k = 0; k < n_inputs; k++) free((char *)inputs[k].name);
    for (int k = 0; k < n_shapes; k++) free((char *)shapes[k].name);
    seam_session_free(s);
    seam_model_free(m);
    seam_context_free(ctx);
    return rc;
}
