/* seam analyze and seam partition. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "ir/ir.h"
#include "targets.h"

static const char *reason_word(seam_reason r) {
    switch (r) {
    case SEAM_REASON_SUPPORTED: return "supported";
    case SEAM_REASON_UNSUPPORTED: return "unsupported";
    case SEAM_REASON_CPU_OPS: return "cpu_ops";
    case SEAM_REASON_PINNED: return "pinned";
    case SEAM_REASON_MIN_SIZE: return "min_subgraph_size";
    case SEAM_REASON_MAX_COUNT: return "max_subgraph_count";
    case SEAM_REASON_CONSTANT: return "constant";
    case SEAM_REASON_USER: return "user";
    case SEAM_REASON_COST: return "cost";
    }
    return "?";
}

/* "unsupported: npu: TopK is not supported" */
static void reason_text(const seam_plan_node_info *n, char *buf, size_t len) {
    if (n->detail[0]) snprintf(buf, len, "%s: %s", reason_word(n->reason), n->detail);
    else if (n->reason == SEAM_REASON_SUPPORTED) snprintf(buf, len, "supported by %s", n->target);
    else snprintf(buf, len, "%s", reason_word(n->reason));
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

static const char *ANALYZE_HELP =
    "usage: seam analyze MODEL --target T [--target T2 ...] [--json]\n"
    "\n"
    "Reports which operations the targets support: supported and unsupported\n"
    "op types with counts, each unsupported node with the reason, and the\n"
    "fraction supported.\n\n" TARGET_HELP;

int cmd_analyze(int argc, char **argv) {
    cli_targets t;
    targets_init(&t);
    const char *path = NULL;
    bool as_json = false;
    int rc = parse_common("analyze", ANALYZE_HELP, argc, argv, &t, &path, &as_json, NULL);
    if (rc) {
        targets_free(&t);
        return rc < 0 ? CLI_OK : rc;
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
    if ((rc = targets_apply_shapes(&t, "analyze", ctx, m))) goto done;
    if ((rc = targets_load(&t, "analyze", ctx))) goto done;
    /* analysis is about support: no constraints, no forcing */
    seam_partition_options o = seam_partition_defaults();
    o.targets = t.opts.targets;
    o.n_targets = t.opts.n_targets;
    if ((st = seam_partition(m, &o, &plan))) {
        rc = cli_fail("analyze", ctx, st);
        goto done;
    }
    int32_t nn = seam_plan_node_count(plan), supported, counted, ns = 0, nu = 0;
    seam_plan_support(plan, &supported, &counted);
    count *sup = calloc((size_t)nn + 1, sizeof(count)), *uns = calloc((size_t)nn + 1, sizeof(count));
    for (int32_t i = 0; i < nn; i++) {
        seam_plan_node_info n;
        seam_plan_node(plan, i, &n);
        if (n.reason == SEAM_REASON_CONSTANT) continue;
        if (n.reason == SEAM_REASON_UNSUPPORTED) hist_add(uns, &nu, n.op_type);
        else hist_add(sup, &ns, n.op_type);
    }
    double frac = counted ? (double)supported / counted : 1.0;
    if (as_json) {
        json_t *o2 = json_object(), *js = json_object(), *ju = json_object(), *jn = json_array(), *jt = json_array();
        json_object_set_new(o2, "model", json_string(path));
        for (int32_t k = 0; k < o.n_targets; k++) json_array_append_new(jt, json_string(o.targets[k]->name));
        json_array_append_new(jt, json_string("cpu"));
        json_object_set_new(o2, "targets", jt);
        json_object_set_new(o2, "supported_fraction", json_real(frac));
        json_object_set_new(o2, "supported_count", json_integer(supported));
        json_object_set_new(o2, "node_count", json_integer(counted));
        for (int32_t k = 0; k < ns; k++) json_object_set_new(js, sup[k].op, json_integer(sup[k].n));
        for (int32_t k = 0; k < nu; k++) json_object_set_new(ju, uns[k].op, json_integer(uns[k].n));
        json_object_set_new(o2, "supported_ops", js);
        json_object_set_new(o2, "unsupported_ops", ju);
        for (int32_t i = 0; i < nn; i++) {
            seam_plan_node_info n;
            seam_plan_node(plan, i, &n);
            if (n.reason != SEAM_REASON_UNSUPPORTED) continue;
            json_t *e = json_object();
            json_object_set_new(e, "index", json_integer(i));
            json_object_set_new(e, "name", json_string(n.name));
            json_object_set_new(e, "op", json_string(n.op_type));
            json_object_set_new(e, "reason", json_string(n.detail));
            json_array_append_new(jn, e);
        }
        json_object_set_new(o2, "unsupported_nodes", jn);
        json_dumpf(o2, stdout, JSON_PRESERVE_ORDER | JSON_COMPACT);
        printf("\n");
        json_decref(o2);
    } else {
        printf("The following operations are supported:\n");
        for (int32_t k = 0; k < ns; k++) printf("  %s: %d\n", sup[k].op, sup[k].n);
        printf("The following operations are not supported:\n");
        for (int32_t k = 0; k < nu; k++) printf("  %s: %d\n", uns[k].op, uns[k].n);
        if (nu) printf("Unsupported nodes:\n");
        for (int32_t i = 0; i < nn; i++) {
            seam_plan_node_info n;
            seam_plan_node(plan, i, &n);
            if (n.reason == SEAM_REASON_UNSUPPORTED) printf("  node %d '%s' (%s): %s\n", i, n.name, n.op_type, n.detail);
        }
        printf("%.2f%% of operations (%d of %d) are supported\n", 100.0 * frac, supported, counted);
        if (t.opts.n_targets > 0) {
            seam_plan_estimate est;
            seam_plan_estimate_get(plan, &est);
            printf("Estimated time (cost model): this plan %.1f us; all on the CPU %.1f us; every supported node offloaded "
                   "%.1f us\n", est.total_us, est.all_cpu_us, est.capability_us);
        }
    }
    free(sup);
    free(uns);
done:
    seam_plan_free(plan);
    seam_model_free(m);
    targets_free(&t);
    seam_context_free(ctx);
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
    "                        (ONNX external data), not inside it\n" TARGET_HELP;

int cmd_partition(int argc, char **argv) {
    cli_targets t;
    targets_init(&t);
    const char *path = NULL, *out_path = NULL, *weights_file = NULL;
    bool as_json = false;
    /* --weights-file is partition's own; take it out before the common parse */
    char **args = calloc((size_t)argc + 1, sizeof(char *));
    int n_args = 0;
    if (!args) return CLI_BAD_INPUT;
    for (int k = 0; k < argc; k++) {
        if (strcmp(argv[k], "--weights-file") == 0) {
            if (k + 1 >= argc) {
                free(args);
                targets_free(&t);
                return cli_usage("partition", "--weights-file needs a file name");
            }
            weights_file = argv[++k];
            continue;
        }
        args[n_args++] = argv[k];
    }
    int rc = parse_common("partition", PARTITION_HELP, n_args, args, &t, &path, &as_json, &out_path);
    free(args);
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
    seam_status st = seam_model_load(ctx, path, &m);
    if (st) {
        rc = CLI_BAD_INPUT;
        cli_fail("partition", ctx, st);
        goto done;
    }
    if ((rc = targets_apply_shapes(&t, "partition", ctx, m))) goto done;
    if ((rc = targets_load(&t, "partition", ctx))) goto done;
    if ((st = seam_partition(m, &t.opts, &plan))) {
        rc = cli_fail("partition", ctx, st);
        goto done;
    }
    int32_t nn = seam_plan_node_count(plan), ns = seam_plan_subgraph_count(plan), supported, counted;
    seam_plan_support(plan, &supported, &counted);
    double frac = counted ? (double)supported / counted : 1.0;
    if (as_json) {
        json_t *o = json_object(), *jt = json_array(), *jsg = json_array(), *jn = json_array(), *jnotes = json_array();
        json_object_set_new(o, "model", json_string(path));
        for (int32_t k = 0; k < t.opts.n_targets; k++) json_array_append_new(jt, json_string(t.opts.targets[k]->name));
        json_array_append_new(jt, json_string("cpu"));
        json_object_set_new(o, "targets", jt);
        json_object_set_new(o, "supported_fraction", json_real(frac));
        for (int32_t s = 0; s < ns; s++) {
            seam_plan_subgraph_info sg;
            seam_plan_subgraph(plan, s, &sg);
            json_t *e = json_object(), *nodes = json_array(), *ins = json_array(), *outs = json_array();
            json_object_set_new(e, "id", json_integer(s));
            json_object_set_new(e, "target", json_string(sg.target));
            for (int32_t k = 0; k < sg.n_nodes; k++) json_array_append_new(nodes, json_integer(sg.nodes[k]));
            for (int32_t k = 0; k < sg.n_inputs; k++) json_array_append_new(ins, json_string(sg.inputs[k]));
            for (int32_t k = 0; k < sg.n_outputs; k++) json_array_append_new(outs, json_string(sg.outputs[k]));
            json_object_set_new(e, "nodes", nodes);
            json_object_set_new(e, "inputs", ins);
            json_object_set_new(e, "outputs", outs);
            json_object_set_new(e, "estimated_us", json_real(sg.est_us));
            json_object_set_new(e, "boundary_bytes", json_integer(sg.boundary_bytes));
            json_array_append_new(jsg, e);
        }
        json_object_set_new(o, "subgraphs", jsg);
        seam_plan_estimate est;
        seam_plan_estimate_get(plan, &est);
        json_t *je = json_object();
        json_object_set_new(je, "plan_us", json_real(est.total_us));
        json_object_set_new(je, "all_cpu_us", json_real(est.all_cpu_us));
        json_object_set_new(je, "capability_us", json_real(est.capability_us));
        json_object_set_new(o, "estimate", je);
        char why[2400];
        for (int32_t i = 0; i < nn; i++) {
            seam_plan_node_info n;
            seam_plan_node(plan, i, &n);
            json_t *e = json_object();
            json_object_set_new(e, "index", json_integer(i));
            json_object_set_new(e, "name", json_string(n.name));
            json_object_set_new(e, "op", json_string(n.op_type));
            json_object_set_new(e, "target", json_string(n.target));
            reason_text(&n, why, sizeof(why));
            json_object_set_new(e, "reason", json_string(why));
            json_array_append_new(jn, e);
        }
        json_object_set_new(o, "nodes", jn);
        const char *notes = seam_plan_notes(plan);
        while (*notes) {
            const char *nl = strchr(notes, '\n');
            size_t len = nl ? (size_t)(nl - notes) : strlen(notes);
            json_array_append_new(jnotes, json_stringn(notes, len));
            notes += len + (nl ? 1 : 0);
        }
        json_object_set_new(o, "notes", jnotes);
        json_dumpf(o, stdout, JSON_PRESERVE_ORDER | JSON_COMPACT);
        printf("\n");
        json_decref(o);
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
    }
    if (out_path) {
        struct stat a, b;
        if (stat(path, &a) == 0 && stat(out_path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
            fprintf(stderr, "seam partition: -o %s is the input model; write the partitioned model elsewhere\n", out_path);
            rc = CLI_BAD_INPUT;
            goto done;
        }
        seam_save_options so = {weights_file, 0};
        if ((st = seam_plan_apply(m, plan, t.opts.targets, t.opts.n_targets, t.target_options, t.n_target_options)) ||
            (st = seam_model_save(m, out_path, weights_file ? &so : NULL))) {
            rc = cli_fail("partition", ctx, st);
            rc = CLI_BAD_INPUT;
            goto done;
        }
        if (!as_json) printf("wrote %s\n", out_path);
    }
done:
    seam_plan_free(plan);
    seam_model_free(m);
    targets_free(&t);
    seam_context_free(ctx);
    return rc;
}
