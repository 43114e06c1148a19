/*
 * seam analyze --what-if: for each form of node the first target refuses
 * (the op and the target's reason, with value and node names taken out),
 * what supporting it would change. The answer is not a guess: the model is
 * partitioned again with that target saying yes to that form (a wrapper
 * table around it, same placement policy), and the two plans compared:
 * device subgraphs, nodes on the target, bytes crossing subgraph
 * boundaries and the estimated time. Ranked by time saved, then
 * subgraphs removed.
 */
#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "seam_backend.h"
#include "seam_partition.h"
#include "targets.h"
#include "what_if.h"

#define MAX_FORMS 4096
#define FORM_LEN 256

typedef struct form {
    char op[64], why[FORM_LEN];
    int nodes;
    int32_t subgraphs, offloaded;
    double est_us;
    int64_t bytes;
    bool done;
} form;

/* The reason without names: 'x', 'conv1/out' and the like become '…', so
 * that nodes refused for the same cause share a form (an apostrophe inside
 * a word, "cuda's", quotes nothing). */
static void normalize(const char *in, char *out, size_t n) {
    size_t o = 0;
    bool quoted = false;
    for (const char *p = in; *p && o + 6 < n; p++) {
        bool opens = *p == '\'' && !quoted && (p == in || !isalnum((unsigned char)p[-1])) && strchr(p + 1, '\'');
        bool closes = *p == '\'' && quoted && !isalnum((unsigned char)p[1]);
        if (opens) memcpy(out + o, "'…'", 5), o += 5;
        if (opens || closes) {
            quoted = opens;
            continue;
        }
        if (!quoted) out[o++] = *p;
    }
    out[o] = 0;
}

/* The target's reason for refusing node view v, normalized. */
typedef struct wrap {
    const seam_backend *inner;
    const form *f;
} wrap;

static bool wrap_supports(void *ctx, const seam_node_view *v, char *why, size_t wn) {
    const wrap *w = ctx;
    if (w->inner->supports(w->inner->ctx, v, why, wn)) return true;
    if (strcmp(v->op_type, w->f->op)) return false;
    char norm[FORM_LEN];
    normalize(why, norm, sizeof(norm));
    return !strcmp(norm, w->f->why);
}
static double wrap_cost(void *ctx, const seam_node_view *v) {
    const wrap *w = ctx;
    return w->inner->node_cost ? w->inner->node_cost(w->inner->ctx, v) : 1.0;
}
static void wrap_traits(void *ctx, double *launch_us, double *gbps) {
    const wrap *w = ctx;
    *launch_us = 0, *gbps = 0;
    if (w->inner->abi_version >= 2 && w->inner->cost_traits) w->inner->cost_traits(w->inner->ctx, launch_us, gbps);
}

/* The plan's numbers: device subgraphs, nodes on target name, boundary
 * bytes of its device subgraphs, estimated time. */
static void measure(const seam_plan *p, const char *name, int32_t *subgraphs, int32_t *offloaded, int64_t *bytes,
                    double *us) {
    *subgraphs = seam_plan_device_subgraph_count(p);
    *offloaded = 0, *bytes = 0;
    for (int32_t i = 0; i < seam_plan_node_count(p); i++) {
        seam_plan_node_info n;
        if (!seam_plan_node(p, i, &n) && !strcmp(n.target, name)) (*offloaded)++;
    }
    for (int32_t s = 0; s < seam_plan_subgraph_count(p); s++) {
        seam_plan_subgraph_info si;
        if (!seam_plan_subgraph(p, s, &si) && strcmp(si.target, "cpu")) *bytes += si.boundary_bytes;
    }
    seam_plan_estimate e;
    seam_plan_estimate_get(p, &e);
    *us = e.total_us;
}

static int cmp_form(const void *a, const void *b) {
    const form *x = a, *y = b;
    double dx = x->est_us, dy = y->est_us; /* smaller estimate first (ties: within 1e-6 of it) */
    if (fabs(dx - dy) > 1e-6 * (fabs(dx) + fabs(dy))) return dx < dy ? -1 : 1;
    if (x->subgraphs != y->subgraphs) return x->subgraphs - y->subgraphs;
    return y->nodes - x->nodes;
}

static void json_str(const char *s) {
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20) printf("\\u%04x", *s);
        else putchar(*s);
    }
    putchar('"');
}

/* One model's forms: each refused form of the first target with the plan
 * made with it supported (done set where that worked), and the plan as it
 * is (*now). forms has room for MAX_FORMS. Returns how many. */
typedef struct now_numbers {
    int32_t subgraphs, offloaded;
    int64_t bytes;
    double us;
} now_numbers;

static int model_forms(seam_context *ctx, seam_model *m, const seam_plan *plan, const seam_partition_options *o, form *forms,
                       now_numbers *now) {
    const seam_backend *t0 = o->targets[0];
    int n_forms = 0;
    /* the forms: what the first target said of each unsupported node */
    size_t tl = strlen(t0->name);
    for (int32_t i = 0; i < seam_plan_node_count(plan); i++) {
        seam_plan_node_info n;
        if (seam_plan_node(plan, i, &n) || n.reason != SEAM_REASON_UNSUPPORTED || !n.detail) continue;
        /* the detail: "T1: why; T2: why; cpu: why", or a host-only cause */
        const char *d = strstr(n.detail, t0->name);
        if (!d || d[tl] != ':') continue; /* not the target's refusal (a sequence, a body) */
        char why[FORM_LEN], norm[FORM_LEN];
        snprintf(why, sizeof(why), "%s", d + tl + 2);
        char *semi = strstr(why, "; ");
        if (semi) *semi = 0;
        normalize(why, norm, sizeof(norm));
        int f = 0;
        while (f < n_forms && (strcmp(forms[f].op, n.op_type) || strcmp(forms[f].why, norm))) f++;
        if (f == n_forms) {
            if (n_forms == MAX_FORMS) continue;
            memset(&forms[f], 0, sizeof(form));
            snprintf(forms[f].op, sizeof(forms[f].op), "%s", n.op_type);
            snprintf(forms[f].why, sizeof(forms[f].why), "%s", norm);
            n_forms++;
        }
        forms[f].nodes++;
    }
    measure(plan, t0->name, &now->subgraphs, &now->offloaded, &now->bytes, &now->us);
    for (int f = 0; f < n_forms; f++) {
        wrap w = {t0, &forms[f]};
        seam_backend b = *t0;
        b.ctx = &w;
        b.supports = wrap_supports;
        b.node_cost = wrap_cost;
        b.release = NULL;
        if (b.abi_version >= 2) {
            b.cost_traits = wrap_traits;
            b.compile = NULL, b.run = NULL, b.release_compiled = NULL, b.compile_log = NULL, b.run_team = NULL;
        }
        const seam_backend *targets[16];
        for (int32_t k = 0; k < o->n_targets && k < 16; k++) targets[k] = k ? o->targets[k] : &b;
        seam_partition_options po = *o;
        po.targets = targets;
        seam_plan *p = NULL;
        if (seam_partition(m, &po, &p)) {
            fprintf(stderr, "seam analyze: --what-if %s (%s): %s\n", forms[f].op, forms[f].why, seam_context_last_error(ctx));
            continue;
        }
        measure(p, t0->name, &forms[f].subgraphs, &forms[f].offloaded, &forms[f].bytes, &forms[f].est_us);
        forms[f].done = true;
        seam_plan_free(p);
    }
    return n_forms;
}

int analyze_what_if(seam_context *ctx, seam_model *m, const seam_plan *plan, const seam_partition_options *o, bool as_json) {
    if (o->n_targets < 1) return cli_usage("analyze", "--what-if needs a --target");
    const seam_backend *t0 = o->targets[0];
    form *forms = calloc(MAX_FORMS, sizeof(form));
    if (!forms) return CLI_BAD_INPUT;
    now_numbers now;
    int n_forms = model_forms(ctx, m, plan, o, forms, &now);
    int32_t sub0 = now.subgraphs, off0 = now.offloaded;
    int64_t bytes0 = now.bytes;
    double us0 = now.us;
    qsort(forms, (size_t)n_forms, sizeof(form), cmp_form);
    if (as_json) {
        printf("{\"target\":");
        json_str(t0->name);
        printf(",\"now\":{\"device_subgraphs\":%d,\"offloaded\":%d,\"boundary_bytes\":%lld,\"estimated_us\":%.3f},\"forms\":[",
               sub0, off0, (long long)bytes0, us0);
        for (int f = 0, first = 1; f < n_forms; f++) {
            if (!forms[f].done) continue;
            printf("%s{\"op\":", first ? "" : ",");
            json_str(forms[f].op);
            printf(",\"reason\":");
            json_str(forms[f].why);
            printf(",\"nodes\":%d,\"device_subgraphs\":%d,\"offloaded\":%d,\"boundary_bytes\":%lld,\"estimated_us\":%.3f}",
                   forms[f].nodes, forms[f].subgraphs, forms[f].offloaded, (long long)forms[f].bytes, forms[f].est_us);
            first = 0;
        }
        printf("]}\n");
    } else {
        printf("What supporting each refused form on '%s' would change (the model partitioned again with it):\n", t0->name);
        printf("  now: %d device subgraphs, %d nodes on %s, %lld bytes across their boundaries, %.1f us estimated\n", sub0,
               off0, t0->name, (long long)bytes0, us0);
        for (int f = 0; f < n_forms; f++) {
            if (!forms[f].done) continue;
            printf("  %s, %d node%s (%s): %d device subgraphs (%+d), %d nodes on %s (%+d), %lld bytes (%+lld), %.1f us (%+.1f)\n",
                   forms[f].op, forms[f].nodes, forms[f].nodes == 1 ? "" : "s", forms[f].why, forms[f].subgraphs,
                   forms[f].subgraphs - sub0, forms[f].offloaded, t0->name, forms[f].offloaded - off0,
                   (long long)forms[f].bytes, (long long)(forms[f].bytes - bytes0), forms[f].est_us, forms[f].est_us - us0);
        }
        if (!n_forms) printf("  (nothing: '%s' takes every node it could)\n", t0->name);
    }
    free(forms);
    return CLI_OK;
}

/* ---- a folder of models ---- */

typedef struct agg_form {
    char op[64], why[FORM_LEN];
    int models, nodes;
    int32_t d_subgraphs, d_offloaded;
    int64_t d_bytes;
    double d_us, saved_frac; /* the sum over models of the time saved over the time now */
} agg_form;

static int cmp_agg(const void *a, const void *b) {
    const agg_form *x = a, *y = b;
    if (x->d_subgraphs != y->d_subgraphs) return x->d_subgraphs - y->d_subgraphs; /* most removed first */
    if (fabs(x->saved_frac - y->saved_frac) > 1e-12) return x->saved_frac > y->saved_frac ? -1 : 1;
    return y->nodes - x->nodes;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int analyze_what_if_dir(const char *dir, cli_targets *t, bool as_json) {
    if (t->n_paths < 1) return cli_usage("analyze", "--what-if needs a --target");
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "seam analyze: cannot read the folder %s\n", dir);
        return CLI_BAD_INPUT;
    }
    char **files = NULL;
    int n_files = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 6 || strcmp(e->d_name + l - 5, ".onnx")) continue;
        if (n_files == cap) {
            cap = cap ? 2 * cap : 64;
            char **g = realloc(files, sizeof(char *) * (size_t)cap);
            if (!g) break;
            files = g;
        }
        size_t n = strlen(dir) + l + 2;
        if (!(files[n_files] = malloc(n))) break;
        snprintf(files[n_files++], n, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    int rc = CLI_OK;
    if (!n_files) {
        fprintf(stderr, "seam analyze: no .onnx file in %s\n", dir);
        free(files);
        return CLI_BAD_INPUT;
    }
    qsort(files, (size_t)n_files, sizeof(char *), cmp_str);
    seam_context *ctx = NULL;
    form *forms = calloc(MAX_FORMS, sizeof(form));
    agg_form *agg = calloc(MAX_FORMS, sizeof(agg_form));
    if (seam_context_create(&ctx) || !forms || !agg) {
        rc = CLI_BAD_INPUT;
        fprintf(stderr, "seam analyze: out of memory\n");
        goto done;
    }
    if ((rc = targets_load(t, "analyze", ctx))) goto done;
    const char *tname = t->opts.targets[0]->name;
    int n_agg = 0, used = 0, failed = 0;
    now_numbers total = {0, 0, 0, 0};
    for (int k = 0; k < n_files; k++) {
        seam_model *m = NULL;
        seam_plan *plan = NULL;
        seam_partition_options o = seam_partition_defaults();
        o.targets = t->opts.targets, o.n_targets = t->opts.n_targets, o.placement = t->opts.placement;
        if (seam_model_load(ctx, files[k], &m) || targets_apply_shapes(t, "analyze", ctx, m) || seam_partition(m, &o, &plan)) {
            fprintf(stderr, "seam analyze: %s: %s (left out)\n", files[k], seam_context_last_error(ctx));
            failed++;
            seam_model_free(m);
            continue;
        }
        now_numbers now;
        int nf = model_forms(ctx, m, plan, &o, forms, &now);
        total.subgraphs += now.subgraphs, total.offloaded += now.offloaded, total.bytes += now.bytes, total.us += now.us;
        for (int f = 0; f < nf; f++) {
            if (!forms[f].done) continue;
            int a = 0;
            while (a < n_agg && (strcmp(agg[a].op, forms[f].op) || strcmp(agg[a].why, forms[f].why))) a++;
            if (a == n_agg) {
                if (n_agg == MAX_FORMS) continue;
                snprintf(agg[a].op, sizeof(agg[a].op), "%s", forms[f].op);
                snprintf(agg[a].why, sizeof(agg[a].why), "%s", forms[f].why);
                n_agg++;
            }
            agg[a].models++;
            agg[a].nodes += forms[f].nodes;
            agg[a].d_subgraphs += forms[f].subgraphs - now.subgraphs;
            agg[a].d_offloaded += forms[f].offloaded - now.offloaded;
            agg[a].d_bytes += forms[f].bytes - now.bytes;
            agg[a].d_us += forms[f].est_us - now.us;
            if (now.us > 0) agg[a].saved_frac += (now.us - forms[f].est_us) / now.us;
        }
        used++;
        seam_plan_free(plan);
        seam_model_free(m);
    }
    qsort(agg, (size_t)n_agg, sizeof(agg_form), cmp_agg);
    if (as_json) {
        printf("{\"target\":");
        json_str(tname);
        printf(",\"folder\":");
        json_str(dir);
        printf(",\"models\":%d,\"left_out\":%d,\"now\":{\"device_subgraphs\":%d,\"offloaded\":%d,\"boundary_bytes\":%lld,"
               "\"estimated_us\":%.3f},\"forms\":[",
               used, failed, total.subgraphs, total.offloaded, (long long)total.bytes, total.us);
        for (int a = 0; a < n_agg; a++) {
            printf("%s{\"op\":", a ? "," : "");
            json_str(agg[a].op);
            printf(",\"reason\":");
            json_str(agg[a].why);
            printf(",\"models\":%d,\"nodes\":%d,\"device_subgraphs_delta\":%d,\"offloaded_delta\":%d,"
                   "\"boundary_bytes_delta\":%lld,\"estimated_us_delta\":%.3f,\"mean_time_saved\":%.6f}",
                   agg[a].models, agg[a].nodes, agg[a].d_subgraphs, agg[a].d_offloaded, (long long)agg[a].d_bytes,
                   agg[a].d_us, used ? agg[a].saved_frac / used : 0.0);
        }
        printf("]}\n");
    } else {
        printf("What supporting each refused form on '%s' would change across the %d model%s of %s (each partitioned "
               "again with it):\n", tname, used, used == 1 ? "" : "s", dir);
        printf("  now: %d device subgraphs, %d nodes on %s, %lld bytes across their boundaries, %.1f us estimated\n",
               total.subgraphs, total.offloaded, tname, (long long)total.bytes, total.us);
        for (int a = 0; a < n_agg; a++)
            printf("  %s, %d node%s in %d model%s (%s): %+d device subgraphs, %+d nodes on %s, %+lld bytes, %+.1f us "
                   "(%.1f%% of a model's time on average)\n",
                   agg[a].op, agg[a].nodes, agg[a].nodes == 1 ? "" : "s", agg[a].models, agg[a].models == 1 ? "" : "s",
                   agg[a].why, agg[a].d_subgraphs, agg[a].d_offloaded, tname, (long long)agg[a].d_bytes, agg[a].d_us,
                   used ? 100.0 * agg[a].saved_frac / used : 0.0);
        if (!n_agg) printf("  (nothing: '%s' takes every node it could)\n", tname);
    }
    if (failed) rc = CLI_BAD_INPUT;
done:
    for (int k = 0; k < n_files; k++) free(files[k]);
    free(files);
    free(forms);
    free(agg);
    seam_context_free(ctx);
    return rc;
}
