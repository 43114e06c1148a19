/* seam partition --stages (stages.h). */
#include "stages.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "targets.h"

void stages_init(cli_stages *s) {
    memset(s, 0, sizeof(*s));
    s->o = seam_stage_defaults();
}

static bool number(const char *v, double lo, double *out) {
    char *end;
    double d = v ? strtod(v, &end) : NAN;
    if (!v || end == v || *end || !isfinite(d) || d < lo) return false;
    *out = d;
    return true;
}

int stages_option(cli_stages *s, const char *cmd, int argc, char **argv, int *k) {
    const char *a = argv[*k];
    if (!strcmp(a, "--simulate")) return s->simulate = true, 1;
    bool takes = !strcmp(a, "--stages") || !strcmp(a, "--stage-memory") || !strcmp(a, "--link-gbits") ||
                 !strcmp(a, "--link-latency-us") || !strcmp(a, "--micro-batches");
    if (!takes) return 0;
    if (*k + 1 >= argc) return cli_usage(cmd, "%s needs a value", a);
    const char *v = argv[++*k];
    double d;
    if (!strcmp(a, "--stages")) {
        if (!number(v, 1, &d) || d > 4096 || d != floor(d)) return cli_usage(cmd, "--stages wants 1 to 4096, got '%s'", v);
        s->o.n_stages = (int32_t)d, s->asked = true;
    } else if (!strcmp(a, "--micro-batches")) {
        if (!number(v, 1, &d) || d > 1e6 || d != floor(d))
            return cli_usage(cmd, "--micro-batches wants 1 to 1000000, got '%s'", v);
        s->micro_batches = (int32_t)d, s->other = true;
    } else if (!strcmp(a, "--stage-memory")) {
        if (!cli_parse_size(v, &s->o.memory_bytes))
            return cli_usage(cmd, "--stage-memory wants a number of bytes, or with K, M or G; got '%s'", v);
        s->other = true;
    } else if (!strcmp(a, "--link-gbits")) {
        if (!number(v, 0, &d) || d <= 0) return cli_usage(cmd, "--link-gbits wants a bandwidth above 0, got '%s'", v);
        s->o.link_gbits = d, s->other = true;
    } else {
        if (!number(v, 0, &d)) return cli_usage(cmd, "--link-latency-us wants a time of 0 or more, got '%s'", v);
        s->o.link_latency_us = d, s->other = true;
    }
    return 1;
}

int stages_check(const cli_stages *s, const char *cmd) {
    if ((s->other || s->simulate) && !s->asked)
        return cli_usage(cmd, "--stage-memory, --link-gbits, --link-latency-us, --micro-batches and --simulate need --stages N");
    return CLI_OK;
}

/* bytes as "12.3 MiB" */
static const char *human(double b, char *buf, size_t n) {
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int k = 0;
    while (b >= 1024 && k < 4) b /= 1024, k++;
    snprintf(buf, n, k ? "%.1f %s" : "%.0f %s", b, u[k]);
    return buf;
}

static void print_table(const cli_stages *s, const seam_stages *st, const seam_plan *plan) {
    char a[32], b[32], c[32], d[32], e[32];
    printf("pipeline: %d stage%s, links of %g Gb/s and %g us", s->o.n_stages, s->o.n_stages == 1 ? "" : "s",
           s->o.link_gbits, s->o.link_latency_us);
    if (s->o.memory_bytes > 0) printf(", at most %s a stage", human((double)s->o.memory_bytes, a, sizeof(a)));
    printf(" (estimates)\n");
    for (int32_t k = 0; k < seam_stages_count(st); k++) {
        seam_stage_info in;
        seam_stages_stage(st, k, &in);
        seam_plan_node_info f, l;
        seam_plan_node(plan, seam_stages_node_at(st, in.first), &f);
        seam_plan_node(plan, seam_stages_node_at(st, in.first + in.n_nodes - 1), &l);
        printf("  stage %d  %d node%s ('%s' .. '%s')  %.3f ms  memory %s (weights %s, received %s, its own %s)", k,
               in.n_nodes, in.n_nodes == 1 ? "" : "s", f.name, l.name, in.compute_us / 1e3,
               human((double)in.memory_bytes, a, sizeof(a)), human((double)in.weight_bytes, b, sizeof(b)),
               human((double)in.receive_bytes, c, sizeof(c)),
               human((double)(in.memory_bytes - in.weight_bytes - in.receive_bytes), d, sizeof(d)));
        if (k + 1 < seam_stages_count(st))
            printf("; sends %s in %.3f ms", human((double)in.send_bytes, e, sizeof(e)), in.send_us / 1e3);
        printf("\n");
    }
}

static int print_schedule(const seam_stages *st, int32_t mb, const char *cmd, seam_context *ctx) {
    int32_t n = seam_stages_count(st);
    double *busy = calloc((size_t)n, sizeof(double));
    seam_stage_schedule sc;
    seam_status rc = busy ? seam_stages_simulate(st, mb, &sc, busy) : SEAM_STATUS_OUT_OF_MEMORY;
    if (rc) {
        free(busy);
        return cli_fail(cmd, ctx, rc);
    }
    printf("schedule of %d micro-batches: %.3f ms in all (%.1f a second); one every %.3f ms in steady state, set by %s "
           "%d; one alone takes %.3f ms; the stages idle %.1f%% of the time (busy:",
           mb, sc.makespan_us / 1e3, sc.throughput_per_s, sc.interval_us / 1e3,
           sc.bottleneck_is_link ? "the link after stage" : "stage", sc.bottleneck, sc.latency_us / 1e3,
           100.0 * sc.bubble_fraction);
    for (int32_t k = 0; k < n; k++) printf(" %d: %.0f%%", k, 100.0 * busy[k]);
    printf(")\n");
    free(busy);
    return CLI_OK;
}

int stages_print(const cli_stages *s, const char *cmd, seam_context *ctx, const seam_plan *plan, const char *plan_json) {
    seam_stages *st = NULL;
    seam_status rc = seam_plan_stages(plan, &s->o, &st);
    if (rc) return cli_fail(cmd, ctx, rc);
    int32_t mb = s->simulate ? (s->micro_batches ? s->micro_batches : 4 * s->o.n_stages) : 0;
    if (plan_json) {
        size_t need = 0;
        char *text = NULL;
        int out = CLI_OK;
        rc = seam_stages_json(st, mb, NULL, 0, &need);
        if (!rc && !(text = malloc(need))) rc = SEAM_STATUS_OUT_OF_MEMORY;
        if (!rc) rc = seam_stages_json(st, mb, text, need, NULL);
        if (!rc) {
            size_t n = strlen(plan_json);
            while (n && plan_json[n - 1] != '}') n--;
            printf("%.*s,\"pipeline\":%s}\n", (int)(n ? n - 1 : 0), plan_json, text);
        } else {
            out = cli_fail(cmd, ctx, rc);
        }
        free(text);
        seam_stages_free(st);
        return out;
    }
    print_table(s, st, plan);
    int out = mb ? print_schedule(st, mb, cmd, ctx) : CLI_OK;
    seam_stages_free(st);
    return out;
}

int stages_source(const cli_stages *s, const char *cmd, seam_context *ctx, const seam_plan *plan, staged_source *out) {
    memset(out, 0, sizeof(*out));
    seam_stages *st = NULL;
    seam_status rc = seam_plan_stages(plan, &s->o, &st);
    if (rc) return cli_fail(cmd, ctx, rc);
    int32_t n = seam_plan_node_count(plan);
    char **names = calloc((size_t)n + 1, sizeof(char *));
    int32_t *stage = malloc(sizeof(int32_t) * ((size_t)n + 1));
    bool ok = names && stage;
    for (int32_t i = 0; ok && i < n; i++) {
        seam_plan_node_info in;
        seam_plan_node(plan, i, &in);
        ok = (names[i] = strdup(in.name ? in.name : "")) != NULL;
        stage[i] = seam_stages_node_stage(st, i);
    }
    int32_t n_stages = seam_stages_count(st);
    seam_stages_free(st);
    *out = (staged_source){n, n_stages, (const char *const *)names, stage};
    if (!ok) {
        stages_source_free(out);
        fprintf(stderr, "seam %s: out of memory\n", cmd);
        return CLI_BAD_INPUT;
    }
    return CLI_OK;
}

void stages_source_free(staged_source *src) {
    for (int32_t i = 0; src->names && i < src->n_nodes; i++) free((char *)src->names[i]);
    free((void *)src->names);
    free((void *)src->stage);
    memset(src, 0, sizeof(*src));
}

int stages_record(const char *cmd, seam_context *ctx, seam_model *m, const staged_source *src, bool quiet) {
    char *notes = NULL;
    seam_status st = staged_record(m, src, &notes);
    if (st) return cli_fail(cmd, ctx, st);
    if (!quiet && notes && *notes) fputs(notes, stdout);
    free(notes);
    return CLI_OK;
}
