/* seam calibrate: measures this machine's CPU speed per op class, for the
 * cost model's estimates (issue 31). Each model runs on the CPU kernels
 * with random inputs, profiled; every node's median time over the runs
 * goes to seam_cost_fit, which fits a rate per class and keeps it in the
 * cache file for this machine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ir/ir.h"
#include "run.h"
#include "seam_partition.h"
#include "targets.h"

static const char *HELP =
    "usage: seam calibrate MODEL... [--target T]... [--threads N] [--repeat R] [--no-save]\n"
    "\n"
    "Measures this machine's CPU speed for the cost model behind placement by\n"
    "cost and the estimates analyze and partition print (not quantization's\n"
    "calibration: see seam quantize). Each MODEL (fixed input shapes) runs R\n"
    "times on the CPU kernels with random inputs; a rate per op class (dense\n"
    "products, grouped convolutions, int8 products, recurrent layers,\n"
    "elementwise, reductions and pools) and a cost per node are fitted to the\n"
    "nodes' median times and kept for this machine in the cache file\n"
    "($SEAM_CACHE_DIR/cost-rates.json, else $XDG_CACHE_HOME/seam/, else\n"
    "~/.cache/seam/), which every later seam on this machine reads. A few\n"
    "models of the kinds you deploy are enough; a class none of them has keeps\n"
    "its built-in guess. Prints the rates and, per model, the estimate against\n"
    "the measured time before and after.\n"
    "\n"
    "  --target T    also run each model with every node T supports on T\n"
    "                (dnnl, a plug-in; --target-option and --backend-lib as for\n"
    "                run): T's measured time over its estimate scales its nodes'\n"
    "                estimates from then on\n"
    "  --threads N   threads per run (default: one per core, as seam run)\n"
    "  --repeat R    timed runs per model (default 10, after one warm-up)\n"
    "  --no-save     fit and print, but leave the cache file as it is\n";

/* Random data (seam run's, from a fixed seed) for every graph input of g
 * into session s; feeds (one per input) keeps it for the caller to free.
 * 0, or a CLI exit code after saying why. */
static int feed_random(seam_context *ctx, const ir_graph *g, seam_session *s, seam_tensor *feeds) {
    for (int32_t i = 0; i < g->n_inputs; i++) {
        const ir_value *v = &g->values[g->inputs[i]];
        if (v->flags & IR_VALUE_INIT) continue;
        int rc = run_random_input("calibrate", v, i, &feeds[i]);
        if (rc) return rc;
        seam_status st = seam_session_set_input(s, v->name, (seam_dtype)feeds[i].dtype, feeds[i].rank, feeds[i].dims,
                                                feeds[i].data);
        if (st) return cli_fail("calibrate", ctx, st);
    }
    return CLI_OK;
}

/* Runs model path R times, adding each node's median time to fit. Returns
 * 0, or a CLI exit code after saying why. */
static int measure(int index, const char *path, int32_t threads, int32_t repeat, seam_cost_fit *fit, seam_model **keep) {
    seam_context *ctx;
    if (seam_context_create(&ctx)) return CLI_BAD_INPUT;
    seam_model *m = NULL;
    seam_session *s = NULL;
    seam_tensor *feeds = NULL;
    double *ms = NULL;
    const ir_graph *g = NULL;
    int rc = CLI_OK;
    seam_status st = seam_model_load(ctx, path, &m);
    if (!st) st = seam_model_fold(m, NULL);
    if (!st) st = seam_model_fuse_qdq(m, SEAM_QDQ_UNITS | SEAM_QDQ_FOLD, NULL);
    if (st) {
        rc = cli_fail("calibrate", ctx, st);
        goto done;
    }
    g = m->graph;
    for (int32_t i = 0; i < g->n_inputs; i++) {
        const ir_value *v = &g->values[g->inputs[i]];
        for (int32_t d = 0; !(v->flags & IR_VALUE_INIT) && v->type.kind == IR_TYPE_TENSOR && d < v->type.rank; d++)
            if (v->type.dims[d].v < 0) {
                fprintf(stderr, "seam calibrate: %s: input '%s' has a symbolic dimension (axis %d): give models with "
                        "fixed input shapes\n", path, v->name, d);
                rc = CLI_BAD_INPUT;
                goto done;
            }
    }
    seam_session_options so = {0};
    so.n_threads = threads;
    so.profile = true;
    if ((st = seam_session_create(m, &so, &s))) {
        rc = cli_fail("calibrate", ctx, st);
        goto done;
    }
    feeds = calloc((size_t)g->n_inputs + 1, sizeof(seam_tensor));
    int32_t nn = g->n_nodes;
    ms = malloc(sizeof(double) * ((size_t)nn * (size_t)repeat + 1));
    if (!feeds || !ms) {
        rc = CLI_BAD_INPUT;
        fprintf(stderr, "seam calibrate: out of memory\n");
        goto done;
    }
    if ((rc = feed_random(ctx, g, s, feeds))) goto done;
    for (int32_t r = -1; r < repeat; r++) { /* one warm-up run */
        if ((st = seam_session_run(s))) {
            rc = cli_fail("calibrate", ctx, st);
            goto done;
        }
        for (int32_t i = 0; r >= 0 && i < nn; i++) {
            seam_node_stats ns;
            ms[(size_t)i * (size_t)repeat + (size_t)r] = seam_session_node_stats(s, i, &ns) ? 0 : ns.ms;
        }
    }
    int32_t timed = 0;
    for (int32_t i = 0; i < nn; i++) {
        double *t = ms + (size_t)i * (size_t)repeat;
        qsort(t, (size_t)repeat, sizeof(double), cli_cmp_double);
        double med = t[repeat / 2];
        if (med <= 0) continue; /* did not run (a constant) */
        if ((st = seam_cost_fit_add_node(fit, m, i, med))) {
            rc = CLI_BAD_INPUT;
            fprintf(stderr, "seam calibrate: out of memory\n");
            goto done;
        }
        timed++;
    }
    printf("model %d: %s: %d nodes timed, median of %d runs each\n", index, path, timed, repeat);
done:
    for (int32_t i = 0; feeds && i < g->n_inputs; i++) free(feeds[i].data);
    free(feeds);
    free(ms);
    seam_session_free(s);
    if (rc) {
        seam_model_free(m);
        m = NULL;
    }
    if (!m) seam_context_free(ctx);
    *keep = m;
    return rc;
}

/* Runs model path with every node the targets support on them (placement
 * by capability), R times: each device target's subgraphs' median time
 * against the plan's estimate for them goes to fit. */
static int measure_targets(const char *path, cli_targets *tg, int32_t threads, int32_t repeat, seam_cost_fit *fit) {
    seam_context *ctx;
    if (seam_context_create(&ctx)) return CLI_BAD_INPUT;
    seam_model *m = NULL;
    seam_plan *plan = NULL;
    seam_session *s = NULL;
    seam_tensor *feeds = NULL;
    double *ms = NULL;
    int rc = CLI_OK;
    enum { MAXT = 8 };
    const char *names[MAXT];
    double est[MAXT] = {0};
    int32_t nt = 0;
    seam_status st = seam_model_load(ctx, path, &m);
    if (st) {
        rc = cli_fail("calibrate", ctx, st);
        goto done;
    }
    tg->threads = threads, tg->quiet = true;
    if ((rc = targets_apply_shapes(tg, "calibrate", ctx, m)) || (rc = targets_load(tg, "calibrate", ctx))) goto done;
    tg->opts.placement = SEAM_PLACEMENT_CAPABILITY;
    if ((st = targets_partition(tg, m, threads, &plan))) {
        rc = cli_fail("calibrate", ctx, st);
        goto done;
    }
    for (int32_t k = 0; k < seam_plan_subgraph_count(plan); k++) {
        seam_plan_subgraph_info sg;
        if (seam_plan_subgraph(plan, k, &sg) || !strcmp(sg.target, "cpu")) continue;
        int32_t t = 0;
        while (t < nt && strcmp(names[t], sg.target)) t++;
        if (t == nt && nt == MAXT) continue;
        if (t == nt) names[nt++] = sg.target;
        est[t] += sg.est_us;
    }
    if (!nt) {
        printf("%s: no node on a target; nothing to measure there\n", path);
        goto done;
    }
    if ((st = seam_plan_apply(m, plan, tg->opts.targets, tg->opts.n_targets, tg->target_options, tg->n_target_options))) {
        rc = cli_fail("calibrate", ctx, st);
        goto done;
    }
    targets_for_sessions(tg); /* (as seam run: the built-in accelerated backend is always there) */
    seam_session_options so = {0};
    so.n_threads = threads, so.profile = true, so.targets = tg->avail, so.n_targets = tg->n_avail;
    if ((st = seam_session_create(m, &so, &s))) {
        rc = cli_fail("calibrate", ctx, st);
        goto done;
    }
    const ir_graph *g = m->graph;
    feeds = calloc((size_t)g->n_inputs + 1, sizeof(seam_tensor));
    ms = calloc((size_t)MAXT * (size_t)repeat + 1, sizeof(double));
    if (!feeds || !ms) {
        rc = CLI_BAD_INPUT;
        fprintf(stderr, "seam calibrate: out of memory\n");
        goto done;
    }
    if ((rc = feed_random(ctx, g, s, feeds))) goto done;
    for (int32_t r = -1; r < repeat; r++) {
        if ((st = seam_session_run(s))) {
            rc = cli_fail("calibrate", ctx, st);
            goto done;
        }
        for (int32_t i = 0; r >= 0 && i < g->n_nodes; i++) {
            seam_node_stats ns;
            if (seam_session_node_stats(s, i, &ns)) continue;
            for (int32_t t = 0; t < nt; t++)
                if (!strcmp(ns.target, names[t])) ms[(size_t)t * (size_t)repeat + (size_t)r] += ns.ms;
        }
    }
    for (int32_t t = 0; t < nt; t++) {
        double *v = ms + (size_t)t * (size_t)repeat;
        qsort(v, (size_t)repeat, sizeof(double), cli_cmp_double);
        double med = v[repeat / 2];
        printf("%s on %s: %.3f ms measured, %.3f ms estimated\n", path, names[t], med, est[t] / 1e3);
        if (med > 0 && est[t] > 0 && (st = seam_cost_fit_add_target(fit, names[t], med, est[t]))) {
            rc = CLI_BAD_INPUT;
            fprintf(stderr, "seam calibrate: %s: too many measurements\n", names[t]);
            goto done;
        }
    }
done:
    for (int32_t i = 0; feeds && m && i < m->graph->n_inputs; i++) free(feeds[i].data);
    free(feeds);
    free(ms);
    seam_session_free(s);
    seam_plan_free(plan);
    seam_model_free(m);
    seam_context_free(ctx);
    return rc;
}

int cmd_calibrate(int argc, char **argv) {
    int32_t threads = 0, repeat = 10;
    bool save = true;
    const char **paths = calloc((size_t)argc + 1, sizeof(char *));
    int n_paths = 0;
    if (!paths) return CLI_BAD_INPUT;
    cli_targets tg;
    targets_init(&tg);
    for (int k = 1; k < argc; k++) {
        bool ours = !strcmp(argv[k], "--target") || !strcmp(argv[k], "--target-option") || !strcmp(argv[k], "--backend-lib");
        int tr = ours ? targets_option(&tg, "calibrate", argc, argv, &k) : 0;
        if (tr > 1) {
            free(paths);
            targets_free(&tg);
            return CLI_USAGE;
        }
        if (tr == 1) continue;
        if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
            fputs(HELP, stdout);
            free(paths);
            targets_free(&tg);
            return CLI_OK;
        } else if (!strcmp(argv[k], "--no-save")) {
            save = false;
        } else if (!strcmp(argv[k], "--threads") || !strcmp(argv[k], "--repeat")) {
            char *end;
            long v = k + 1 < argc ? strtol(argv[k + 1], &end, 10) : -1;
            bool is_threads = !strcmp(argv[k], "--threads");
            if (k + 1 >= argc || *end || end == argv[k + 1] || v < (is_threads ? 0 : 1) || v > (is_threads ? 1024 : 10000)) {
                free(paths);
                targets_free(&tg);
                return cli_usage("calibrate", "%s wants a whole number in [%d, %d]", argv[k], is_threads ? 0 : 1,
                                 is_threads ? 1024 : 10000);
            }
            if (is_threads) threads = (int32_t)v;
            else repeat = (int32_t)v;
            k++;
        } else if (argv[k][0] == '-' && argv[k][1]) {
            free(paths);
            targets_free(&tg);
            return cli_usage("calibrate", "unknown option '%s'", argv[k]);
        } else {
            paths[n_paths++] = argv[k];
        }
    }
    if (!n_paths) {
        free(paths);
        targets_free(&tg);
        return cli_usage("calibrate", "no model given");
    }
    seam_cost_fit *fit = NULL;
    if (seam_cost_fit_create(&fit)) {
        free(paths);
        targets_free(&tg);
        fprintf(stderr, "seam calibrate: out of memory\n");
        return CLI_BAD_INPUT;
    }
    /* the fit tells models apart by address: the one before is freed only
     * once the next is loaded, so that no two share one */
    seam_model *prev = NULL;
    int rc = CLI_OK, used = 0;
    for (int k = 0; k < n_paths; k++) {
        seam_model *m = NULL;
        int r = measure(used + 1, paths[k], threads, repeat, fit, &m);
        if (r) rc = r;
        else used++;
        if (prev) {
            seam_context *c = prev->ctx;
            seam_model_free(prev);
            seam_context_free(c);
        }
        prev = m;
    }
    char report[8192];
    if (used && tg.n_paths > 0) {
        /* the CPU's rates first, in use for the targets' estimates; then
         * each target's runs */
        if (seam_cost_fit_finish(fit, false, report, sizeof(report)) == SEAM_STATUS_OK)
            for (int k = 0; k < n_paths; k++) {
                int r = measure_targets(paths[k], &tg, threads, repeat, fit);
                if (r) rc = r;
            }
    }
    if (used) {
        seam_status st = seam_cost_fit_finish(fit, save, report, sizeof(report));
        printf("%s\n", report);
        if (st) {
            fprintf(stderr, "seam calibrate: %s\n", st == SEAM_STATUS_IO_ERROR ? "the rates were not saved" : "nothing fitted");
            rc = CLI_BAD_INPUT;
        }
    } else {
        fprintf(stderr, "seam calibrate: no model could be measured\n");
    }
    if (prev) {
        seam_context *c = prev->ctx;
        seam_model_free(prev);
        seam_context_free(c);
    }
    seam_cost_fit_free(fit);
    targets_free(&tg);
    free(paths);
    return rc;
}
