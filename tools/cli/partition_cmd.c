/* seam analyze and seam partition. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "ir/ir.h"
#include "seam_report.h"
#include "stages.h"
#include "targets.h"
#include "what_if.h"

/* Prints the plan (or its analysis) as `--json` shows it: one line; with
 * stages asked (stg), their "pipeline" object inside it. */
static int print_json(const char *cmd, seam_context *ctx, const seam_plan *plan, const char *path, bool analysis,
                      const cli_stages *stg) {
    size_t need = 0;
    seam_status st = analysis ? seam_plan_analysis_json(plan, path, NULL, 0, &need) : seam_plan_json(plan, path, NULL, 0, &need);
    char *text = st ? NULL : malloc(need);
    if (!st && !text) return fprintf(stderr, "seam %s: out of memory\n", cmd), CLI_BAD_INPUT;
    if (!st) st = analysis ? seam_plan_analysis_json(plan, path, text, need, NULL) : seam_plan_json(plan, path, text, need, NULL);
    if (st) {
        free(text);
        cli_fail(cmd, ctx, st);
        return CLI_BAD_INPUT;
    }
    int rc = CLI_OK;
    if (stg && stg->asked) rc = stages_print(stg, cmd, ctx, plan, text);
    else printf("%s\n", text);
    free(text);
    return rc;
}

typedef struct count {
    const char *op;
    int32_t n;
} count;

/* Adds op to a small histogram kept in first-seen order. The loader keeps
 * one copy of each op type string, so pointers are compared first. */
static void hist_add(count *h, int32_t *n, const char *op) {
    for (int32_t k = 0; k < *n; k++)
        if (h[k].op == op) {
            h[k].n++;
            return;
        }
    for (int32_t k = 0; k < *n; k++)
        if (strcmp(h[k].op, op) == 0) {
            h[k].n++;
            return;
        }
    h[(*n)++] = (count){op, 1};
}

static int parse_common(const char *cmd, const char *help, int argc, char **argv, cli_targets *t, const char **path,
                        bool *as_json, const char **out_path) {
    for (int k = 1; k < argc; k++) {
        int r = targets_option(t, cmd, argc, argv, &k);
        if (r > 1) return CLI_USAGE;
        if (r == 1) continue;
        if (strcmp(argv[k], "--help") == 0 || strcmp(argv[k], "-h") == 0) {
            fputs(help, stdout);
            return -1;
        } else if (strcmp(argv[k], "--json") == 0) {
            *as_json = true;
        } else if (out_path && strcmp(argv[k], "-o") == 0) {
            if (k + 1 >= argc) return cli_usage(cmd, "-o needs a file name");
            *out_path = argv[++k];
        } else if (argv[k][0] == '-' && argv[k][1]) {
            return cli_usage(cmd, "unknown option '%s'", argv[k]);
        } else if (*path) {
            return cli_usage(cmd, "one model at a time ('%s' and '%s' given)", *path, argv[k]);
        } else {
            *path = argv[k];
        }
    }
    if (!*path) return cli_usage(cmd, "no model given");
    return CLI_OK;
}

/* Each unsupported node with its reason; nodes of the same op refused for
 * the same reason are one entry, the first in full and the rest by name
 * (eight at most). */
static void print_refusals(const seam_plan *plan, int32_t nn) {
    bool *done = calloc((size_t)nn + 1, sizeof(bool));
    if (!done) return;
    for (int32_t i = 0; i < nn; i++) {
        seam_plan_node_info n;
        seam_plan_node(plan, i, &n);
        if (done[i] || n.reason != SEAM_REASON_UNSUPPORTED) continue;
        printf("  node %d '%s' (%s): %s\n", i, n.name, n.op_type, n.detail);
        int32_t same = 0;
        for (int32_t j = i + 1; j < nn; j++) {
            seam_plan_node_info o;
            seam_plan_node(plan, j, &o);
            if (o.reason != SEAM_REASON_UNSUPPORTED || strcmp(o.op_type, n.op_type) || strcmp(o.detail, n.detail)) continue;
            done[j] = true;
            if (same < 8) printf("%s node %d '%s'", same ? "," : "    the same for", j, o.name);
            same++;
        }
        if (same > 8) printf(" and %d more", same - 8);
        if (same) printf(" (%d %s node%s)\n", same, n.op_type, same == 1 ? "" : "s");
    }
    free(done);
}

/* Each QDQ unit kept as nodes that runs on the CPU, with why: its op's
 * reason (unsupported, cost, or a member that took the unit there). */
static void print_units_on_cpu(const seam_plan *plan, int32_t nn) {
    int32_t shown = 0;
    for (int32_t i = 0; i < nn; i++) {
        seam_plan_node_info n;
        seam_plan_node(plan, i, &n);
        if (seam_plan_node_unit(plan, i) != i || strcmp(n.target, "cpu")) continue;
        if (!shown++) printf("QDQ units on the CPU:\n");
        printf("  the unit of node %d '%s' (%s): %s%s%s\n", i, n.name, n.op_type, seam_reason_name(n.reason),
               n.detail[0] ? ": " : "", n.detail);
    }
}

static const char *ANALYZE_HELP =
    "usage: seam analyze MODEL --target T [--target T2 ...] [--json] [--what-if]\n"
    "       seam analyze FOLDER --target T --what-if [--json]\n"
    "\n"
    "Reports which operations the targets support: supported and unsupported\n"
    "op types with counts, each unsupported node with the reason, and the\n"
    "fraction supported.\n"
    "\n"
    "  --what-if             for each form of node the first target refuses (its op\n"
    "                        and reason), the model partitioned again with that form\n"
    "                        supported: device subgraphs, nodes on the target,\n"
    "                        boundary bytes and estimated time, ranked by the time;\n"
    "                        for a FOLDER, summed over its .onnx files per form (in how\n"
    "                        many models, and the mean share of a model's time saved),\n"
    "                        ranked by the device subgraphs it removes\n"
    "\n" TARGET_HELP;

int cmd_analyze(int argc, char **argv) {
    cli_targets t;
    targets_init(&t);
    const char *path = NULL;
    bool as_json = false, what_if = false;
    for (int k = 1; k < argc; k++) /* analyze's own option, out of the shared ones' way */
        if (!strcmp(argv[k], "--what-if")) {
            what_if = true;
            memmove(&argv[k], &argv[k + 1], sizeof(char *) * (size_t)(argc - k - 1));
            argc--, k--;
        }
    int rc = parse_common("analyze", ANALYZE_HELP, argc, argv, &t, &path, &as_json, NULL);
    if (rc) {
        targets_free(&t);
        return rc < 0 ? CLI_OK : rc;
    }
    struct stat sb;
    if (what_if && stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) { /* a folder of models */
        rc = analyze_what_if_dir(path, &t, as_json);
        targets_free(&t);
        return rc;
    }
    seam_context *ctx;
    seam_context_create(&ctx);
    seam_model *m = NULL;
    seam_plan *plan = NULL;
    seam_status st = seam_model_load(ctx, path, &m);
    if (st) {
        rc = CLI_BAD_INPUT;
        cli_fail("analyze", ctx, st);
        goto done;
    }
    if (t.measured) {
        rc = cli_usage("analyze", "--placement measured runs the model; analyze does not (use seam partition)");
        goto done;
    }
    if ((rc = targets_apply_shapes(&t, "analyze", ctx, m))) goto done;
    if ((rc = targets_load(&t, "analyze", ctx))) goto done;
    /* analysis is about support: no constraints, no forcing; the placement
     * policy decides the estimate it prints */
    seam_partition_options o = seam_partition_defaults();
    o.targets = t.opts.targets;
    o.n_targets = t.opts.n_targets;
    o.placement = t.opts.placement;
    o.memory_bytes = t.opts.memory_bytes;
    if ((!t.no_rewrite && (st = seam_model_rewrite(m, &o, NULL))) || (st = seam_partition(m, &o, &plan))) {
        rc = cli_fail("analyze", ctx, st);
        goto done;
    }
    if (what_if) {
        rc = analyze_what_if(ctx, m, plan, &o, as_json);
        goto done;
    }
    int32_t nn = seam_plan_node_count(plan), supported, counted, ns = 0, nu = 0, nsu = 0, nuu = 0;
    seam_plan_support(plan, &supported, &counted);
    count *sup = calloc((size_t)nn + 1, sizeof(count)), *uns = calloc((size_t)nn + 1, sizeof(count));
    count *sup_u = calloc((size_t)nn + 1, sizeof(count)), *uns_u = calloc((size_t)nn + 1, sizeof(count));
    if (!sup || !uns || !sup_u || !uns_u) {
        free(sup), free(uns), free(sup_u), free(uns_u);
        rc = CLI_BAD_INPUT;
        fprintf(stderr, "seam analyze: out of memory\n");
        goto done;
    }
    /* a QDQ unit kept as nodes counts once, as its op (its DQs and Qs not
     * apart); it is unsupported when a member is */
    bool *unit_refused = calloc((size_t)nn + 1, sizeof(bool));
    for (int32_t i = 0; i < nn && unit_refused; i++) {
        seam_plan_node_info n;
        seam_plan_node(plan, i, &n);
        int32_t u = seam_plan_node_unit(plan, i);
        if (u >= 0 && n.reason == SEAM_REASON_UNSUPPORTED) unit_refused[u] = true;
    }
    for (int32_t i = 0; i < nn; i++) {
        seam_plan_node_info n;
        seam_plan_node(plan, i, &n);
        if (n.reason == SEAM_REASON_CONSTANT) continue;
        int32_t u = seam_plan_node_unit(plan, i);
        if (u == i) hist_add(unit_refused && unit_refused[i] ? uns_u : sup_u, unit_refused && unit_refused[i] ? &nuu : &nsu,
                             n.op_type);
        else if (u >= 0) continue;
        else if (n.reason == SEAM_REASON_UNSUPPORTED) hist_add(uns, &nu, n.op_type);
        else hist_add(sup, &ns, n.op_type);
    }
    free(unit_refused);
    double frac = counted ? (double)supported / counted : 1.0;
    if (as_json) {
        rc = print_json("analyze", ctx, plan, path, true, NULL);
    } else {
        printf("The following operations are supported:\n");
        for (int32_t k = 0; k < ns; k++) printf("  %s: %d\n", sup[k].op, sup[k].n);
        for (int32_t k = 0; k < nsu; k++) printf("  %s, as QDQ units: %d\n", sup_u[k].op, sup_u[k].n);
        if (!ns && !nsu) printf("  (none)\n");
        printf("The following operations are not supported:\n");
        for (int32_t k = 0; k < nu; k++) printf("  %s: %d\n", uns[k].op, uns[k].n);
        for (int32_t k = 0; k < nuu; k++) printf("  %s, as QDQ units: %d\n", uns_u[k].op, uns_u[k].n);
        if (!nu && !nuu) printf("  (none)\n");
        if (nu || nuu) printf("Unsupported nodes:\n");
        print_refusals(plan, nn);
        print_units_on_cpu(plan, nn);
        printf("%.2f%% of operations (%d of %d) are supported\n", 100.0 * frac, supported, counted);
        if (t.opts.n_targets > 0) {
            seam_plan_estimate est;
            seam_plan_estimate_get(plan, &est);
            printf("Estimated time (cost model): this plan %.1f us; all on the CPU %.1f us; every supported node offloaded "
                   "%.1f us\n", est.total_us, est.all_cpu_us, est.capability_us);
            int32_t guessed = seam_plan_estimate_guessed(plan);
            if (guessed)
                printf("The estimate guesses the sizes of %d node%s: %s known only at run time (symbolic, or set by "
                       "the data), counted as 32 each; seam run --report measures them\n", guessed,
                       guessed == 1 ? "" : "s", guessed == 1 ? "a dim of it is" : "dims of theirs are");
            printf("The cost model's CPU rates: %s\n", seam_cost_rates_source());
        }
    }
    free(sup);
    free(uns);
    free(sup_u);
    free(uns_u);
done:
    seam_plan_free(plan);
    seam_model_free(m);
    targets_free(&t);
    seam_context_free(ctx);
    return rc;
}

/* -o and --workdir: the plan applied to m, and with -o the result saved
 * (with --stages, the stages recorded in it first). Returns an exit code. */
static int apply_and_write(seam_context *ctx, seam_model *m, const seam_plan *plan, const cli_targets *t,
                           const cli_stages *stg, const char *path, const char *out_path, const char *weights_file,
                           bool as_json) {
    struct stat a, b;
    if (out_path && stat(path, &a) == 0 && stat(out_path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
        fprintf(stderr, "seam partition: -o %s is the input model; write the partitioned model elsewhere\n", out_path);
        return CLI_BAD_INPUT;
    }
    seam_save_options so = {weights_file, 0};
    /* with --stages, each node's stage is taken from the plan before it is
     * applied, and recorded in the applied model (runtime/staged.h) */
    staged_source src = {0};
    int rc = stg->asked && out_path ? stages_source(stg, "partition", ctx, plan, &src) : CLI_OK;
    if (rc) return rc;
    seam_status st = seam_plan_apply(m, plan, t->opts.targets, t->opts.n_targets, t->target_options, t->n_target_options);
    if (!st) rc = targets_bf16_within((cli_targets *)t, "partition", ctx, m);
    if (!st && !rc && src.n_stages) rc = stages_record("partition", ctx, m, &src, as_json);
    stages_source_free(&src);
    if (!st && !rc && out_path) st = seam_model_save(m, out_path, weights_file ? &so : NULL);
    if (st) {
        cli_fail("partition", ctx, st);
        return CLI_BAD_INPUT;
    }
    if (!rc && out_path && !as_json) printf("wrote %s\n", out_path);
    return rc;
}

static const char *PARTITION_HELP =
    "usage: seam partition MODEL --target T [--target T2 ...] [options] [--json]\n"
    "\n"
    "Decides a target for every node and groups the nodes into subgraphs that\n"
    "never form a cycle. Prints each subgraph in execution order with its\n"
    "target and op histogram; --json prints the whole plan as one object,\n"
    "with a reason for every node's placement.\n\n"
    "  -o OUT.onnx           also write the partitioned model as one ONNX file: each\n"
    "                        device subgraph becomes an ai.seam Subgraph node (run it\n"
    "                        with seam run OUT.onnx)\n"
    "  --weights-file NAME   with -o: the weights go to NAME, a file next to OUT\n"
    "                        (ONNX external data), not inside it\n"
    "  --html OUT.html       also write the plan as one self-contained HTML page: the\n"
    "                        graph with a coloured box per subgraph, each node's target\n"
    "                        and reason on hover or click, and a summary table\n"
    "  --workdir DIR         also write DIR: plan.json, partitioned.onnx, each device\n"
    "                        subgraph as a model of its own (subgraph_<id>_<target>.onnx,\n"
    "                        which seam run accepts) and its backend's compile log\n"
    "                        (.log); an existing DIR must be one seam wrote\n" STAGES_HELP TARGET_HELP;

int cmd_partition(int argc, char **argv) {
    cli_targets t;
    targets_init(&t);
    const char *path = NULL, *out_path = NULL, *weights_file = NULL, *html = NULL, *workdir = NULL;
    bool as_json = false;
    cli_stages stg;
    stages_init(&stg);
    /* --weights-file, --html, --workdir and the stage options are partition's own; take them out before the common parse */
    char **args = calloc((size_t)argc + 1, sizeof(char *));
    int n_args = 0;
    if (!args) return CLI_BAD_INPUT;
    for (int k = 0; k < argc; k++) {
        int taken = k ? stages_option(&stg, "partition", argc, argv, &k) : 0;
        if (taken > 1) {
            free(args);
            targets_free(&t);
            return CLI_USAGE;
        }
        if (taken) continue;
        const char **own = strcmp(argv[k], "--weights-file") == 0 ? &weights_file
                           : strcmp(argv[k], "--html") == 0      ? &html
                           : strcmp(argv[k], "--workdir") == 0   ? &workdir
                                                                 : NULL;
        if (own) {
            if (k + 1 >= argc) {
                free(args);
                targets_free(&t);
                return cli_usage("partition", "%s needs a %s", argv[k], own == &workdir ? "folder" : "file name");
            }
            *own = argv[++k];
            continue;
        }
        args[n_args++] = argv[k];
    }
    int rc = parse_common("partition", PARTITION_HELP, n_args, args, &t, &path, &as_json, &out_path);
    free(args);
    if (!rc) rc = stages_check(&stg, "partition");
    if (!rc && weights_file && !out_path) {
        targets_free(&t);
        return cli_usage("partition", "--weights-file needs -o");
    }
    if (rc) {
        targets_free(&t);
        return rc < 0 ? CLI_OK : rc;
    }
    seam_context *ctx;
    seam_context_create(&ctx);
    seam_model *m = NULL;
    seam_plan *plan = NULL;
    seam_report *rep = NULL;
    seam_session *sess = NULL;
    seam_status st = seam_model_load(ctx, path, &m);
    if (st) {
        rc = CLI_BAD_INPUT;
        cli_fail("partition", ctx, st);
        goto done;
    }
    if ((rc = targets_apply_shapes(&t, "partition", ctx, m))) goto done;
    if ((rc = targets_load(&t, "partition", ctx))) goto done;
    if ((st = targets_partition(&t, m, 0, &plan))) {
        rc = cli_fail("partition", ctx, st);
        goto done;
    }
    int32_t ns = seam_plan_subgraph_count(plan), supported, counted;
    seam_plan_support(plan, &supported, &counted);
    double frac = counted ? (double)supported / counted : 1.0;
    if (as_json) {
        if ((rc = print_json("partition", ctx, plan, path, false, &stg))) goto done;
    } else {
        printf("%s: %d subgraph%s (%d on devices); %.2f%% of operations (%d of %d) are supported\n", path, ns,
               ns == 1 ? "" : "s", seam_plan_device_subgraph_count(plan), 100.0 * frac, supported, counted);
        count *h = calloc(256, sizeof(count));
        for (int32_t s = 0; s < ns && h; s++) {
            seam_plan_subgraph_info sg;
            seam_plan_subgraph(plan, s, &sg);
            int32_t nh = 0;
            for (int32_t k = 0; k < sg.n_nodes && nh < 255; k++) {
                seam_plan_node_info n;
                seam_plan_node(plan, sg.nodes[k], &n);
                hist_add(h, &nh, n.op_type);
            }
            printf("  subgraph %d  %-10s %d node%s  ", s, sg.target, sg.n_nodes, sg.n_nodes == 1 ? " " : "s");
            for (int32_t k = 0; k < nh && k < 12; k++) printf("%s%s:%d", k ? ", " : "", h[k].op, h[k].n);
            if (nh > 12) printf(", ...");
            printf("\n");
        }
        free(h);
        const char *notes = seam_plan_notes(plan);
        if (*notes) printf("notes:\n%s", notes);
        if (stg.asked && (rc = stages_print(&stg, "partition", ctx, plan, NULL))) goto done;
    }
    if (cli_same_file(path, html) || cli_same_file(path, workdir)) {
        fprintf(stderr, "seam partition: %s is the input model; write the report elsewhere\n",
                cli_same_file(path, html) ? html : workdir);
        rc = CLI_BAD_INPUT;
        goto done;
    }
    if ((html || workdir) && (st = seam_report_create(plan, path, &rep))) {
        rc = cli_fail("partition", ctx, st);
        goto done;
    }
    if (html) {
        if ((st = seam_report_write_html(rep, html))) {
            cli_fail("partition", ctx, st);
            rc = CLI_BAD_INPUT;
            goto done;
        }
        if (!as_json) printf("wrote %s\n", html);
    }
    if ((out_path || workdir) &&
        (rc = apply_and_write(ctx, m, plan, &t, &stg, path, out_path, weights_file, as_json)))
        goto done;
    if (workdir) {
        /* the compile logs come from compiling: a session is made, not run */
        targets_for_sessions(&t);
        seam_session_options so = {0, false, false, t.avail, t.n_avail, NULL, NULL};
        if ((st = seam_report_set_partitioned(rep, m)) || (st = seam_session_create(m, &so, &sess)) ||
            (st = seam_report_write_workdir(rep, sess, NULL, 0, workdir))) {
            cli_fail("partition", ctx, st);
            rc = CLI_BAD_INPUT;
            goto done;
        }
        if (!as_json) printf("wrote %s/\n", workdir);
    }
done:
    seam_session_free(sess);
    seam_report_free(rep);
    seam_plan_free(plan);
    seam_model_free(m);
    targets_free(&t);
    seam_context_free(ctx);
    return rc;
}
