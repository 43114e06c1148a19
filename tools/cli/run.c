/* seam run MODEL [--input NAME=FILE]... [--output-dir DIR] [--output-format npy|pb]
 *               [--repeat N] [--threads N] [--shape NAME=1x3x224x224]...
 *
 * cmd_run's steps, in order: the options (run_parse), load, read the
 * --input files, partition, make the session, set the inputs, run (and
 * time), then the reports and the outputs; the files and printouts are
 * run_io.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "ir/ir.h"
#include "run.h"
#include "runtime/subgraph.h"
#include "seam_report.h"
#include "targets.h"

static const char *RUN_HELP =
    "usage: seam run MODEL [options]\n"
    "\n"
    "Runs MODEL and writes its outputs: on the CPU, or split between the\n"
    "--target devices and the CPU (partitioned on the fly, as seam partition\n"
    "would). A model saved by seam partition -o runs as it was partitioned.\n"
    "\n"
    "  --input NAME=FILE     data for input NAME: a .npy file (numeric, or numpy\n"
    "                        str/bytes for strings; uint16 bits for bfloat16)\n"
    "                        or an ONNX .pb file: a TensorProto, or a\n"
    "                        SequenceProto / OptionalProto for an input the\n"
    "                        model declares a sequence / optional; inputs\n"
    "                        without a file get random data from a fixed seed\n"
    "  --shape NAME=AxBxC    fixes the shape of an input with symbolic dims (by\n"
    "                        default the shape of its --input file fixes them)\n"
    "  --output-dir DIR      write each output to DIR/<name>.npy (characters\n"
    "                        outside [A-Za-z0-9._-] become _), only when the\n"
    "                        run succeeded and all at once: a failed run\n"
    "                        leaves DIR as it was\n"
    "  --output-format F     npy (default): .npy where numpy holds the value,\n"
    "                        else .pb (a sequence, an empty optional,\n"
    "                        bfloat16, strings that are not UTF-8; said);\n"
    "                        pb: every output as the ONNX message the model\n"
    "                        declares (TensorProto, SequenceProto,\n"
    "                        OptionalProto)\n"
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
    "A model saved by seam partition --stages N -o runs as a pipeline of N\n"
    "processes: mpirun -np N seam run STAGED.onnx --input ... (docs/scale-out.md).\n"
    "Rank 0 reads the inputs and writes the outputs; each rank holds its stage.\n"
    "  --micro-batches M     split every input's first dim into M parts that flow\n"
    "                        through the stages one after another (M must divide it);\n"
    "                        the outputs are joined again\n"
    "  --stage-timeout S     a rank waiting S seconds (default 10) for a value from\n"
    "                        another rank, or for one to be taken, stops the run\n"
    "                        with an error naming that rank\n"
    "  --stage-report        each rank prints its stage, times and peak resident\n"
    "                        memory on stderr\n"
    "  --ignore-stages       run a staged model in this one process\n"
    "\n"
    "Partitioning (all of seam partition's options):\n" TARGET_HELP;

typedef struct named {
    const char *name;
    const char *value;
} named;

#define MAX_NAMED 64

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

/* The model's metadata value for key, or NULL. */
static const char *model_metadata(const seam_model *m, const char *key) {
    for (int32_t k = 0; k < m->n_metadata; k++)
        if (strcmp(m->metadata[k].key, key) == 0) return m->metadata[k].value;
    return NULL;
}

/* What the command line asks for. */
typedef struct run_opts {
    const char *path, *out_dir, *format, *html, *trace, *workdir;
    named inputs[MAX_NAMED], shapes[MAX_NAMED];
    int n_inputs, n_shapes, repeat, threads, micro_batches;
    bool report, dynamic_batch, quiet, compile_log, dump_values;
    bool stage_report, ignore_stages;
    double stage_timeout;
    bool help; /* --help: printed, nothing else to do */
    cli_targets tg;
} run_opts;

/* What the steps of a run make, freed by run_free. */
typedef struct run_state {
    seam_context *ctx;
    seam_model *m;
    const ir_graph *g; /* m's graph as loaded */
    seam_session *s;
    seam_report *rep; /* --html, --workdir: the plan, before it is applied */
    const char *feed_names[MAX_NAMED];
    seam_tensor feeds[MAX_NAMED], loaded[MAX_NAMED]; /* loaded: the --input files, by option */
    int n_feeds;
    int32_t n_outputs; /* the model's own, without the boundary values --dump-values adds */
    size_t log_seen;   /* the session log printed so far */
    double t_load, t_partition, t_session;
} run_state;

/* A step's result that ends the command with exit 0 and nothing more. */
#define RUN_STOP (-1)

/* --input NAME=FILE or --shape NAME=AxBxC at argv[*k]. */
static int option_named(run_opts *o, int argc, char **argv, int *k) {
    const char *a = argv[*k];
    bool is_in = a[2] == 'i';
    if (*k + 1 >= argc) return cli_usage("run", "%s needs NAME=%s", a, is_in ? "FILE" : "SHAPE");
    if ((is_in ? o->n_inputs : o->n_shapes) >= MAX_NAMED) return cli_usage("run", "too many %s options", a);
    if (!split_named(argv[++*k], is_in ? &o->inputs[o->n_inputs++] : &o->shapes[o->n_shapes++]))
        return cli_usage("run", "%s wants NAME=%s, got '%s'", a, is_in ? "FILE" : "AxBxC", argv[*k]);
    return CLI_OK;
}

/* --repeat N or --threads N at argv[*k]. */
static int option_number(run_opts *o, int argc, char **argv, int *k) {
    const char *a = argv[*k];
    if (*k + 1 >= argc) return cli_usage("run", "%s needs a number", a);
    char *end;
    long v = strtol(argv[++*k], &end, 10);
    bool rep = a[2] == 'r';
    if (*end || end == argv[*k] || v < (rep ? 1 : 0) || v > 1000000)
        return cli_usage("run", "%s wants a number %s, got '%s'", a, rep ? ">= 1" : ">= 0", argv[*k]);
    if (rep) o->repeat = (int)v;
    else o->threads = (int)v;
    return CLI_OK;
}

/* One of run's own options (or the model) at argv[*k], *k moved past its
 * value. CLI_OK, or CLI_USAGE after the message. */
static int run_option(run_opts *o, int argc, char **argv, int *k) {
    const char *a = argv[*k];
    bool has_val = *k + 1 < argc;
    if (strcmp(a, "--input") == 0 || strcmp(a, "--shape") == 0) return option_named(o, argc, argv, k);
    if (strcmp(a, "--repeat") == 0 || strcmp(a, "--threads") == 0) return option_number(o, argc, argv, k);
    if (strcmp(a, "--micro-batches") == 0 || strcmp(a, "--stage-timeout") == 0) {
        bool mb = a[2] == 'm';
        if (!has_val) return cli_usage("run", "%s needs a number", a);
        char *end;
        double v = strtod(argv[++*k], &end);
        if (*end || end == argv[*k] || !(v >= (mb ? 1 : 0.001)) || v > 1e6 || (mb && v != (double)(long)v))
            return cli_usage("run", "%s wants %s, got '%s'", a, mb ? "a whole number from 1" : "seconds above 0",
                             argv[*k]);
        if (mb) o->micro_batches = (int)v;
        else o->stage_timeout = v;
    } else if (strcmp(a, "--stage-report") == 0) {
        o->stage_report = true;
    } else if (strcmp(a, "--ignore-stages") == 0) {
        o->ignore_stages = true;
    } else if (strcmp(a, "--report") == 0) {
        o->report = true;
    } else if (strcmp(a, "--html") == 0 || strcmp(a, "--profile") == 0 || strcmp(a, "--workdir") == 0) {
        if (!has_val) return cli_usage("run", "%s needs a %s", a, a[2] == 'w' ? "folder" : "file name");
        *(a[2] == 'h' ? &o->html : a[2] == 'p' ? &o->trace : &o->workdir) = argv[++*k];
    } else if (strcmp(a, "--dump-values") == 0) {
        o->dump_values = true;
    } else if (strcmp(a, "--quiet") == 0) {
        o->quiet = true;
    } else if (strcmp(a, "--compile-log") == 0) {
        o->compile_log = true;
    } else if (strcmp(a, "--dynamic-batch") == 0) {
        o->dynamic_batch = true;
    } else if (strcmp(a, "--output-dir") == 0) {
        if (!has_val) return cli_usage("run", "--output-dir needs a folder");
        o->out_dir = argv[++*k];
    } else if (strcmp(a, "--output-format") == 0) {
        if (!has_val) return cli_usage("run", "--output-format needs npy or pb");
        o->format = argv[++*k];
        if (strcmp(o->format, "npy") != 0 && strcmp(o->format, "pb") != 0)
            return cli_usage("run", "--output-format must be npy or pb, not '%s'", o->format);
    } else if (a[0] == '-' && a[1]) {
        return cli_usage("run", "unknown option '%s'", a);
    } else if (o->path) {
        return cli_usage("run", "one model at a time ('%s' and '%s' given)", o->path, a);
    } else {
        o->path = a;
    }
    return CLI_OK;
}

/* The command line into o (o->tg and the names are run_free's to free):
 * CLI_OK, or the exit code after a message. --help prints the help. */
static int run_parse(int argc, char **argv, run_opts *o) {
    memset(o, 0, sizeof(*o));
    o->format = "npy";
    targets_init(&o->tg);
    for (int k = 1; k < argc; k++) {
        const char *a = argv[k];
        int tr = strcmp(a, "--shape") == 0 ? 0 : targets_option(&o->tg, "run", argc, argv, &k);
        if (tr > 1) return CLI_USAGE;
        if (tr == 1) continue;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(RUN_HELP, stdout);
            o->help = true;
            return CLI_OK;
        }
        int rc = run_option(o, argc, argv, &k);
        if (rc) return rc;
    }
    if (!o->path) return cli_usage("run", "no model given");
    if (o->dump_values && !o->workdir) return cli_usage("run", "--dump-values needs --workdir");
    if (o->dynamic_batch && (o->html || o->workdir))
        return cli_usage("run", "--html and --workdir do not go with --dynamic-batch");
    const char *outs[] = {o->html, o->trace, o->workdir};
    for (int k = 0; k < 3; k++)
        if (cli_same_file(o->path, outs[k])) {
            fprintf(stderr, "seam run: %s is the input model; write the report elsewhere\n", outs[k]);
            return CLI_BAD_INPUT;
        }
    return CLI_OK;
}

/* Loads the model, applies --shape, and checks that every --input names
 * one of its inputs. */
static int run_load(const run_opts *o, run_state *r) {
    r->t_load = cli_now_ms();
    seam_status st = seam_model_load(r->ctx, o->path, &r->m);
    r->t_load = cli_now_ms() - r->t_load;
    if (st) return cli_fail("run", r->ctx, st);
    const ir_graph *g = r->g = r->m->graph;
    int rc;
    for (int k = 0; k < o->n_shapes; k++) {
        char arg[1024];
        snprintf(arg, sizeof(arg), "%s=%s", o->shapes[k].name, o->shapes[k].value);
        if ((rc = cli_set_shape("run", r->ctx, r->m, arg))) return rc;
    }
    for (int k = 0; k < o->n_inputs; k++) {
        bool known = false;
        for (int32_t i = 0; i < g->n_inputs; i++)
            known |= strcmp(g->values[g->inputs[i]].name, o->inputs[k].name) == 0 &&
                     !(g->values[g->inputs[i]].flags & IR_VALUE_INIT);
        if (!known) {
            fprintf(stderr, "seam run: the model has no input '%s'\n", o->inputs[k].name);
            return CLI_BAD_INPUT;
        }
    }
    return CLI_OK;
}

/* The input files are read before partitioning: their shapes fix the
 * model's symbolic dims (a --shape for that input, or --dynamic-batch,
 * says otherwise), so that the targets see static shapes and shape
 * computations fold. A model saved with --pad keeps its dims symbolic:
 * the session pads its inputs up to a bucket. */
static int run_read_inputs(const run_opts *o, run_state *r) {
    const ir_graph *g = r->g;
    bool padded = model_metadata(r->m, "seam.pad") != NULL;
    char err[1024];
    int rc;
    for (int k = 0; k < o->n_inputs; k++) {
        const ir_type *type = NULL;
        for (int32_t i = 0; i < g->n_inputs && !type; i++)
            if (strcmp(g->values[g->inputs[i]].name, o->inputs[k].name) == 0) type = &g->values[g->inputs[i]].type;
        if (!run_read_input(r->ctx, o->inputs[k].value, type, &r->loaded[k], err, sizeof(err))) {
            fprintf(stderr, "seam run: input '%s': %s\n", o->inputs[k].name, err);
            return CLI_BAD_INPUT;
        }
        bool given = o->dynamic_batch || padded;
        for (int j = 0; j < o->n_shapes; j++) given |= strcmp(o->shapes[j].name, o->inputs[k].name) == 0;
        for (int32_t i = 0; i < g->n_inputs && !given; i++) {
            char arg[1024];
            if (strcmp(g->values[g->inputs[i]].name, o->inputs[k].name) == 0 &&
                run_shape_from_input(&g->values[g->inputs[i]], &r->loaded[k], arg, sizeof(arg)) &&
                (rc = cli_set_shape("run", r->ctx, r->m, arg)))
                return rc;
        }
    }
    return CLI_OK;
}

/* Partitions on the fly for --target, and applies the plan; prints what
 * placement gave up (a fallback to the CPU, and why), once. */
static int run_partition_targets(run_opts *o, run_state *r) {
    cli_targets *tg = &o->tg;
    seam_plan *plan = NULL;
    seam_status st;
    int rc;
    tg->threads = o->threads, tg->quiet = o->quiet;
    if ((rc = targets_apply_shapes(tg, "run", r->ctx, r->m))) return rc; /* shapes are applied; this folds */
    if ((rc = targets_load(tg, "run", r->ctx))) return rc;
    if ((st = targets_partition(tg, r->m, o->threads, &plan)) ||
        ((o->html || o->workdir) && (st = seam_report_create(plan, o->path, &r->rep))) ||
        (st = seam_plan_apply(r->m, plan, tg->opts.targets, tg->opts.n_targets, tg->target_options,
                              tg->n_target_options))) {
        seam_plan_free(plan);
        cli_fail("run", r->ctx, st);
        return CLI_BAD_INPUT;
    }
    if ((rc = targets_bf16_within(tg, "run", r->ctx, r->m))) {
        seam_plan_free(plan);
        return rc;
    }
    const char *notes = seam_plan_notes(plan);
    for (const char *p = notes; *p && !o->quiet;) {
        const char *nl = strchr(p, '\n');
        int len = nl ? (int)(nl - p) : (int)strlen(p);
        fprintf(stderr, "seam: %.*s\n", len, p);
        p += len + (nl ? 1 : 0);
    }
    seam_plan_free(plan);
    return CLI_OK;
}

/* A saved model's device subgraphs name their targets: a plug-in not
 * given with --backend-lib is looked for by name, as --target NAME does
 * (NAME.so or libseam_NAME.so on $SEAM_BACKEND_PATH, then next to seam).
 * One not found is left to the session, which names it and the fix. */
void run_find_saved_targets(cli_targets *tg, seam_context *ctx, const seam_model *m) {
    tg->n_avail = subgraph_find_targets(ctx, m, tg->avail, tg->n_avail, (int32_t)(sizeof(tg->avail) / sizeof(tg->avail[0])));
}

/* The model's placement: partitioned for --target, the backends a saved
 * model needs loaded, and for --html and --workdir the plan reported. */
static int run_partition(run_opts *o, run_state *r) {
    seam_status st;
    int rc;
    if (o->tg.n_paths > 0 && (rc = run_partition_targets(o, r))) return rc;
    /* without a target, the CPU runs a quantized model's units in int8
     * too (its QLinear kernels: exact, and ~10x faster than the float
     * QDQ form, which dequantizes every weight at every run) */
    seam_qdq_stats q;
    if (o->tg.n_paths == 0) {
        o->tg.threads = o->threads, o->tg.quiet = o->quiet;
        if ((rc = targets_precision(&o->tg, "run", r->ctx, r->m))) return rc;
    }
    if (o->tg.n_paths == 0 && !o->tg.no_fold) {
        if ((st = seam_model_fuse_qdq(r->m, SEAM_QDQ_UNITS | SEAM_QDQ_FOLD, &q))) {
            cli_fail("run", r->ctx, st);
            return CLI_BAD_INPUT;
        }
        if (!o->quiet) cli_qdq_note("run", r->m, &q, false);
    }
    if (o->tg.n_paths == 0 && o->tg.n_libs > 0 && (rc = targets_load(&o->tg, "run", r->ctx)))
        return rc; /* backends for a saved model */
    if (o->tg.n_paths == 0) run_find_saved_targets(&o->tg, r->ctx, r->m);
    if ((o->html || o->workdir) && !r->rep) { /* no --target: the plan of the model as it is (every node on the CPU) */
        seam_partition_options po = seam_partition_defaults();
        seam_plan *plan = NULL;
        st = seam_partition(r->m, &po, &plan);
        if (!st) st = seam_report_create(plan, o->path, &r->rep);
        seam_plan_free(plan);
        if (st) {
            cli_fail("run", r->ctx, st);
            return CLI_BAD_INPUT;
        }
    }
    r->n_outputs = r->g->n_outputs;
    if (r->rep && ((o->workdir && (st = seam_report_set_partitioned(r->rep, r->m))) ||
                   (o->dump_values && (st = seam_report_expose_boundaries(r->rep, r->m))))) {
        cli_fail("run", r->ctx, st);
        return CLI_BAD_INPUT;
    }
    return CLI_OK;
}

/* The session, with every backend loaded (and the built-in accelerated
 * one, always there for saved models). */
static int run_session(run_opts *o, run_state *r) {
    cli_targets *tg = &o->tg;
    targets_for_sessions(tg);
    bool profile = o->report || o->html || o->trace || o->workdir;
    seam_session_options opts = {o->threads, profile, o->dynamic_batch, tg->avail, tg->n_avail, NULL, NULL};
    if (isatty(2)) opts.progress = show_progress; /* only on a terminal */
    r->t_session = cli_now_ms();
    r->t_partition = r->t_session - r->t_partition;
    /* the options were checked above: a session or a run that fails is the
     * model's or the data's fault, bad input (exit 1) */
    seam_status st = seam_session_create(r->m, &opts, &r->s);
    if (st) {
        cli_fail("run", r->ctx, st);
        return CLI_BAD_INPUT;
    }
    r->t_session = cli_now_ms() - r->t_session;
    print_session_log(seam_session_log(r->s), o->compile_log, o->quiet);
    r->log_seen = strlen(seam_session_log(r->s)); /* runs may add lines (a shape compiled, or not) */
    return CLI_OK;
}

int run_random_input(const char *cmd, const ir_value *v, int32_t i, seam_tensor *t) {
    if (v->type.kind != IR_TYPE_TENSOR || v->type.rank < 0 || !v->type.elem) {
        fprintf(stderr, "seam %s: input '%s' has no known type or shape; give it with --input\n", cmd, v->name);
        return CLI_BAD_INPUT;
    }
    t->dtype = v->type.elem;
    t->rank = v->type.rank;
    for (int32_t d = 0; d < t->rank; d++) {
        if (v->type.dims[d].v < 0) {
            fprintf(stderr, "seam %s: input '%s' has symbolic dimension '%s' (axis %d); give it with --shape %s=...\n",
                    cmd, v->name, v->type.dims[d].sym ? v->type.dims[d].sym : "?", d, v->name);
            return CLI_USAGE;
        }
        t->dims[d] = v->type.dims[d].v;
    }
    t->numel = seam_shape_numel(t->dims, t->rank);
    if (t->numel < 0 || !run_fill_random(t, (uint64_t)i + 1)) {
        fprintf(stderr, "seam %s: input '%s': cannot make random data\n", cmd, v->name);
        return CLI_BAD_INPUT;
    }
    return CLI_OK;
}

/* Sets every graph input: its (last) --input file, else random data. */
static int run_feed(const run_opts *o, run_state *r) {
    const ir_graph *g = r->g;
    for (int32_t i = 0; i < g->n_inputs; i++) {
        const ir_value *v = &g->values[g->inputs[i]];
        if (v->flags & IR_VALUE_INIT) continue;
        r->feed_names[r->n_feeds] = v->name;
        seam_tensor *t = &r->feeds[r->n_feeds++];
        memset(t, 0, sizeof(*t));
        int file = -1; /* the last --input for this name */
        for (int k = 0; k < o->n_inputs; k++)
            if (strcmp(o->inputs[k].name, v->name) == 0) file = k;
        if (file >= 0) {
            *t = r->loaded[file];
            r->loaded[file].data = NULL; /* feeds own it now */
        } else {
            int rc = run_random_input("run", v, i, t);
            if (rc) return rc;
        }
        seam_tensor_view *elems;
        seam_value_view vv = seam_value_view_of(v->name, t, &elems);
        seam_status st = vv.count < 0 ? SEAM_STATUS_OUT_OF_MEMORY : seam_session_set_input_value(r->s, v->name, &vv);
        free(elems);
        if (st) {
            cli_fail("run", r->ctx, st);
            return CLI_BAD_INPUT;
        }
    }
    return CLI_OK;
}

/* Runs once, then --repeat N timed runs, printing their median and min. */
static int run_timed(const run_opts *o, run_state *r) {
    seam_status st = seam_session_run(r->s);
    if (st) {
        cli_fail("run", r->ctx, st);
        return CLI_BAD_INPUT;
    }
    if (o->repeat <= 0) return CLI_OK;
    int repeat = o->repeat;
    double *times = malloc(sizeof(double) * (size_t)repeat);
    if (!times) return RUN_STOP;
    for (int k = 0; k < repeat && !st; k++) {
        double t0 = cli_now_ms();
        st = seam_session_run(r->s);
        times[k] = cli_now_ms() - t0;
    }
    if (!st) {
        qsort(times, (size_t)repeat, sizeof(double), cli_cmp_double);
        printf("%s: median %.3f ms, min %.3f ms over %d runs\n", o->path, times[repeat / 2], times[0], repeat);
        printf("%s: ready in %.1f ms: loading %.1f ms, partitioning %.1f ms, session (backend compiles, memory plan) %.1f ms\n",
               o->path, r->t_load + r->t_partition + r->t_session, r->t_load, r->t_partition, r->t_session);
    }
    free(times);
    if (st) {
        cli_fail("run", r->ctx, st);
        return CLI_BAD_INPUT;
    }
    return CLI_OK;
}

/* What the runs added to the session log, --report, and the --html,
 * --profile and --workdir files. */
static int run_results(const run_opts *o, run_state *r) {
    seam_status st;
    print_session_log(seam_session_log(r->s) + r->log_seen, o->compile_log, o->quiet);
    if (o->report) run_print_report(r->s, r->m->graph);
    if (r->rep && (st = seam_report_add_run(r->rep, r->s, r->m))) return cli_fail("run", r->ctx, st);
    if ((o->html && (st = seam_report_write_html(r->rep, o->html))) ||
        (o->trace && (st = seam_session_write_trace(r->s, r->m, o->trace)))) {
        cli_fail("run", r->ctx, st);
        return CLI_BAD_INPUT;
    }
    if (o->workdir) {
        seam_tensor_view views[MAX_NAMED];
        int n_views = 0; /* the tensors among the inputs (a workdir's values are .npy files) */
        for (int k = 0; k < r->n_feeds; k++)
            if (!seam_is_value(r->feeds[k].dtype))
                views[n_views++] = (seam_tensor_view){r->feed_names[k], (seam_dtype)r->feeds[k].dtype, r->feeds[k].rank,
                                                      r->feeds[k].dims, r->feeds[k].data, r->feeds[k].nbytes};
        if ((st = seam_report_write_workdir(r->rep, r->s, views, o->dump_values ? n_views : 0, o->workdir))) {
            cli_fail("run", r->ctx, st);
            return CLI_BAD_INPUT;
        }
    }
    return CLI_OK;
}

static void print_shape(const seam_tensor_view *t) {
    printf("%s [", seam_dtype_name(t->dtype));
    for (int32_t d = 0; d < t->rank; d++) printf("%s%lld", d ? "," : "", (long long)t->dims[d]);
    printf("]");
}

/* Without --output-dir: each output's name, dtype and shape (of a
 * sequence, its length and its first elements'). */
static int run_print_outputs(run_state *r) {
    for (int32_t o = 0; o < r->n_outputs; o++) {
        seam_value_view view;
        seam_status st = seam_session_output_value(r->s, o, &view);
        if (st) {
            cli_fail("run", r->ctx, st);
            return CLI_BAD_INPUT;
        }
        printf("output '%s': ", r->m->graph->values[r->m->graph->outputs[o]].name);
        if (view.kind == SEAM_KIND_NONE) {
            printf("no value (an empty optional)\n");
            continue;
        }
        if (view.kind == SEAM_KIND_TENSOR) {
            print_shape(&view.tensor);
            printf("\n");
            continue;
        }
        printf("a sequence of %d %s tensors%s", view.count, seam_dtype_name(view.elem_dtype), view.count ? ": " : "");
        for (int32_t i = 0; i < view.count && i < 4; i++) {
            printf("%s", i ? ", " : "");
            print_shape(&view.elements[i]);
        }
        printf("%s\n", view.count > 4 ? ", ..." : "");
    }
    return CLI_OK;
}

static void run_free(run_opts *o, run_state *r) {
    seam_report_free(r->rep);
    for (int k = 0; k < r->n_feeds; k++) seam_value_free(&r->feeds[k]);
    for (int k = 0; k < o->n_inputs; k++) seam_value_free(&r->loaded[k]);
    for (int k = 0; k < o->n_inputs; k++) free((char *)o->inputs[k].name);
    for (int k = 0; k < o->n_shapes; k++) free((char *)o->shapes[k].name);
    seam_session_free(r->s);
    seam_model_free(r->m);
    targets_free(&o->tg); /* after the session: its compiled subgraphs are released through their targets */
    seam_context_free(r->ctx);
}

/* The steps of a run, in order, up to the first that fails. */
static int run_steps(run_opts *o, run_state *r) {
    int rc;
    if (seam_context_create(&r->ctx)) return CLI_BAD_INPUT;
    if ((rc = run_load(o, r)) || (rc = run_read_inputs(o, r))) return rc;
    r->t_partition = cli_now_ms();
    if ((rc = run_partition(o, r)) || (rc = run_session(o, r)) || (rc = run_feed(o, r)) || (rc = run_timed(o, r)) ||
        (rc = run_results(o, r)))
        return rc;
    if (o->out_dir) return run_write_outputs(r->ctx, r->s, r->m->graph, r->n_outputs, o->out_dir, o->format);
    return run_print_outputs(r);
}

/* A staged model, or a run under mpirun: run_staged decides (-1: the
 * plain run goes on). */
static int run_maybe_staged(run_opts *o) {
    stage_run_opts so;
    memset(&so, 0, sizeof(so));
    so.path = o->path, so.out_dir = o->out_dir, so.n_inputs = o->n_inputs;
    for (int k = 0; k < o->n_inputs; k++) so.input_names[k] = o->inputs[k].name, so.input_files[k] = o->inputs[k].value;
    so.threads = o->threads, so.micro_batches = o->micro_batches;
    so.timeout_s = o->stage_timeout > 0 ? o->stage_timeout : 10;
    so.report = o->stage_report, so.quiet = o->quiet, so.ignore_stages = o->ignore_stages;
    /* what a staged run does not do */
    so.other_options = o->repeat || o->html || o->trace || o->workdir || o->report || o->dynamic_batch ||
                       o->n_shapes || o->tg.n_paths || strcmp(o->format, "npy") != 0;
    so.tg = &o->tg;
    return run_staged(&so);
}

int cmd_run(int argc, char **argv) {
    run_opts o;
    run_state r;
    memset(&r, 0, sizeof(r));
    int rc = run_parse(argc, argv, &o);
    if (rc == CLI_OK && !o.help) {
        int staged = run_maybe_staged(&o);
        rc = staged >= 0 ? staged : run_steps(&o, &r);
    }
    run_free(&o, &r);
    return rc == RUN_STOP ? CLI_OK : rc;
}
