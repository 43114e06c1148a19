/*
 * seam backend-check: does a backend do what it claims? Every ONNX backend
 * node test (model.onnx, test_data_set_0/input_K.pb and output_K.pb) runs
 * through the target, each in a child process of its own (a crash is a
 * verdict, not the end of the check):
 *
 *   1. the model, its inputs' shapes fixed from the test's files, folded,
 *      is partitioned with every supported node on the target (placement
 *      by capability): a test of which the target claims no node is
 *      "unclaimed";
 *   2. a session is made (the target compiles its subgraphs): a failure is
 *      "compile failed", a claimed node the backend could not build;
 *   3. it runs (a test seam's CPU kernels cannot run either is "skipped",
 *      not the backend's fault); its outputs must match the test's expected outputs (floats
 *      within rtol 1e-3, atol 1e-7, the ONNX backend tests' tolerance;
 *      the rest exactly), or, where seam's CPU kernels miss those too, the
 *      CPU kernels' outputs: else "wrong";
 *   4. two sessions of it (two contexts) run at once on two threads, 40
 *      runs each, every output equal to the single run's: a backend's run
 *      must be safe on two compiled handles at once (else "wrong");
 *   5. the target's time against the CPU kernels' (medians of --repeat).
 *
 * With --models DIR the same runs over every distinct node of a folder's
 * models at the shapes it has there, each cut out as a node test of its
 * own with random inputs and the CPU kernels' outputs as the expected ones
 * (backend_cases.c): what a backend meets on its users' models, not only
 * on the suite's small shapes.
 *
 * Prints a table per op and, under an op of several, per form (input 0's
 * dtype and rank, the attributes that pick a kernel: tests, claimed,
 * compiled, correct, the time ratio's geometric mean), then every claimed
 * test that failed, and with
 * --json a record per test. Exits 1 when a claimed test failed to compile,
 * to run, was wrong, crashed or ran over --timeout; 2 for bad usage.
 */
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend_cases.h"
#include "cli.h"
#include "ir/ir.h"
#include "run.h"
#include "seam_partition.h"
#include "targets.h"

#define NODE_TESTS "/usr/share/libonnx-testdata/data/node"
#define MAX_IO BACKEND_CASE_MAX_IO
#define MAX_K 64

static bool g_threads = true; /* --no-threads turns the two-thread run off */

typedef enum verdict { V_UNCLAIMED, V_CORRECT, V_SKIPPED, V_COMPILE, V_RUN, V_WRONG, V_CRASH, V_TIMEOUT } verdict;
static const char *const verdict_name[] = {"unclaimed", "correct", "skipped", "compile failed",
                                           "run failed", "wrong",   "crashed", "timed out"};

typedef struct result {
    char test[256], op[64];
    char form[160]; /* the op's form: input 0's dtype and rank, and the attributes that pick a kernel */
    verdict v;
    int claimed, nodes;
    double ratio; /* target / CPU time; 0 when not timed */
    char msg[600];
} result;

static bool exists(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0;
}

/* One test's data: the inputs and expected outputs of test_data_set_0. */
typedef struct test_data {
    seam_tensor in[MAX_IO], want[MAX_IO];
    int n_in, n_want;
} test_data;

static void free_data(test_data *d) {
    for (int k = 0; k < d->n_in; k++) free(d->in[k].data);
    for (int k = 0; k < d->n_want; k++) free(d->want[k].data);
}

static bool read_data(seam_context *ctx, const char *dir, test_data *d, char *err, size_t en) {
    char path[1600];
    for (int k = 0; k < MAX_IO; k++) {
        snprintf(path, sizeof(path), "%s/test_data_set_0/input_%d.pb", dir, k);
        if (!exists(path)) break;
        if (!run_read_input(ctx, path, NULL, &d->in[d->n_in], err, en)) return false;
        d->n_in++;
    }
    for (int k = 0; k < MAX_IO; k++) {
        snprintf(path, sizeof(path), "%s/test_data_set_0/output_%d.pb", dir, k);
        if (!exists(path)) break;
        if (!run_read_input(ctx, path, NULL, &d->want[d->n_want], err, en)) return false;
        d->n_want++;
    }
    if (!d->n_want) return snprintf(err, en, "no test_data_set_0/output_0.pb"), false;
    return true;
}

/* The model, its inputs' shapes from the data, folded. */
static seam_model *load(seam_context *ctx, const char *dir, const test_data *d, char *err, size_t en) {
    char path[1600];
    snprintf(path, sizeof(path), "%s/model.onnx", dir);
    seam_model *m = NULL;
    if (seam_model_load(ctx, path, &m)) {
        snprintf(err, en, "%s", seam_context_last_error(ctx));
        return NULL;
    }
    const ir_graph *g = m->graph;
    int k = 0;
    for (int32_t i = 0; i < g->n_inputs && k < d->n_in; i++) {
        const ir_value *v = &g->values[g->inputs[i]];
        if (v->flags & IR_VALUE_INIT) continue;
        char arg[1024];
        if (run_shape_from_input(v, &d->in[k], arg, sizeof(arg)) && cli_set_shape("backend-check", ctx, m, arg)) {
            snprintf(err, en, "input %d's shape: %s", k, seam_context_last_error(ctx));
            seam_model_free(m);
            return NULL;
        }
        k++;
    }
    if (seam_model_fold(m, NULL)) {
        snprintf(err, en, "folding: %s", seam_context_last_error(ctx));
        seam_model_free(m);
        return NULL;
    }
    return m;
}

static bool feed(seam_session *s, const seam_model *m, const test_data *d) {
    const ir_graph *g = m->graph;
    int k = 0;
    for (int32_t i = 0; i < g->n_inputs && k < d->n_in; i++) {
        const ir_value *v = &g->values[g->inputs[i]];
        if (v->flags & IR_VALUE_INIT) continue;
        const seam_tensor *t = &d->in[k++];
        if (seam_session_set_input(s, v->name, (seam_dtype)t->dtype, t->rank, t->dims, t->data)) return false;
    }
    return true;
}

/* Element i of a tensor as a double (NaN for types not compared so). */
static double elem(seam_dtype t, const void *p, int64_t i) {
    switch (t) {
    case SEAM_DTYPE_FLOAT32: return ((const float *)p)[i];
    case SEAM_DTYPE_FLOAT64: return ((const double *)p)[i];
    default: return NAN;
    }
}

/* The test being run is a case of --models: its expected outputs are the
 * CPU kernels' on random inputs at a model's size, where sums of hundreds
 * of products differ by their order, so floats are compared against the
 * output's scale (atol 1e-4 of its largest magnitude), not element by
 * element alone. (Set before each test's child is forked.) */
static bool g_model_case;

/* Whether got matches want: floats within rtol 1e-3 / atol 1e-7 (NaN where
 * NaN; a model case's atol: 1e-4 of the output's scale), other types byte
 * for byte. why says where it differs. */
static bool same(const seam_tensor_view *got, const void *want, seam_dtype wt, int32_t wrank, const int64_t *wdims,
                 size_t wbytes, char *why, size_t wn) {
    if (got->dtype != wt || got->rank != wrank || got->nbytes != wbytes || memcmp(got->dims, wdims, sizeof(int64_t) * (size_t)wrank))
        return snprintf(why, wn, "output '%s': type or shape differs", got->name), false;
    if (wt != SEAM_DTYPE_FLOAT32 && wt != SEAM_DTYPE_FLOAT64) {
        if (memcmp(got->data, want, wbytes)) return snprintf(why, wn, "output '%s': values differ", got->name), false;
        return true;
    }
    int64_t n = (int64_t)(wbytes / (wt == SEAM_DTYPE_FLOAT32 ? 4 : 8));
    double atol = 1e-7;
    for (int64_t i = 0; g_model_case && i < n; i++) {
        double b = fabs(elem(wt, want, i));
        if (isfinite(b) && 1e-4 * b > atol) atol = 1e-4 * b;
    }
    for (int64_t i = 0; i < n; i++) {
        double a = elem(wt, got->data, i), b = elem(wt, want, i);
        if (isnan(a) && isnan(b)) continue;
        if (!(fabs(a - b) <= atol + 1e-3 * fabs(b)) && !(a == b))
            return snprintf(why, wn, "output '%s'[%lld]: %.9g, expected %.9g", got->name, (long long)i, a, b), false;
    }
    return true;
}

static double median_ms(seam_session *s, int repeat) {
    double t[64];
    if (repeat > 64) repeat = 64;
    for (int k = 0; k < repeat; k++) {
        double t0 = cli_now_ms();
        if (seam_session_run(s)) return -1;
        t[k] = cli_now_ms() - t0;
    }
    qsort(t, (size_t)repeat, sizeof(double), cli_cmp_double);
    return t[repeat / 2];
}

/* The CPU kernels' session for the same test (NULL when they cannot). */
static seam_session *cpu_session(seam_context *ctx, const char *dir, const test_data *d, seam_model **m_out) {
    char err[512];
    seam_model *m = load(ctx, dir, d, err, sizeof(err));
    seam_session *s = NULL;
    seam_session_options o = {1, false, false, NULL, 0, NULL, NULL};
    if (!m || seam_session_create(m, &o, &s) || !feed(s, m, d) || seam_session_run(s)) {
        seam_session_free(s);
        seam_model_free(m);
        return NULL;
    }
    *m_out = m;
    return s;
}

/* A second session of the test on a context of its own (seam's rule: a
 * context, its models and sessions per thread), placed as the first. */
static seam_session *target_session(cli_targets *tg, const char *dir, const test_data *d, seam_context **ctx_out,
                                    seam_model **m_out) {
    char err[512];
    seam_context *ctx = NULL;
    seam_model *m = NULL;
    seam_plan *plan = NULL;
    seam_session *s = NULL;
    seam_partition_options po = tg->opts;
    po.placement = SEAM_PLACEMENT_CAPABILITY;
    seam_session_options so = {1, false, false, tg->avail, tg->n_avail, NULL, NULL};
    bool ok = !seam_context_create(&ctx) && (m = load(ctx, dir, d, err, sizeof(err))) && !seam_partition(m, &po, &plan) &&
              !seam_plan_apply(m, plan, tg->opts.targets, tg->opts.n_targets, tg->target_options, tg->n_target_options) &&
              !seam_session_create(m, &so, &s) && feed(s, m, d);
    seam_plan_free(plan);
    if (!ok) {
        seam_session_free(s), seam_model_free(m), seam_context_free(ctx);
        return NULL;
    }
    *ctx_out = ctx, *m_out = m;
    return s;
}

/* Two sessions of one backend run at once on two threads (the ABI lets
 * run be called concurrently on different compiled handles): each run's
 * first output must equal the one the test's single run gave. */
typedef struct racer {
    seam_session *s;
    const void *want;
    size_t nbytes;
    int runs, bad; /* bad: the run (from 1) that differed, -1 one that failed */
} racer;

static void *race(void *p) {
    racer *r = p;
    for (int k = 0; k < r->runs && !r->bad; k++) {
        seam_tensor_view v;
        if (seam_session_run(r->s) || seam_session_output(r->s, 0, &v)) r->bad = -1;
        else if (v.nbytes != r->nbytes || memcmp(v.data, r->want, r->nbytes)) r->bad = k + 1;
    }
    return NULL;
}

static void check_threads(cli_targets *tg, const char *dir, const test_data *d, seam_session *s, result *r) {
    seam_tensor_view first;
    if (seam_session_output(s, 0, &first)) return;
    void *want = malloc(first.nbytes + 1);
    seam_context *c2 = NULL;
    seam_model *m2 = NULL;
    seam_session *s2 = want ? target_session(tg, dir, d, &c2, &m2) : NULL;
    if (!s2) {
        free(want);
        return; /* (the single session ran: nothing to race) */
    }
    memcpy(want, first.data, first.nbytes);
    racer a = {s, want, first.nbytes, 40, 0}, b = {s2, want, first.nbytes, 40, 0};
    pthread_t th;
    if (pthread_create(&th, NULL, race, &b) == 0) {
        race(&a);
        pthread_join(th, NULL);
        int bad = a.bad ? a.bad : b.bad;
        if (bad) {
            r->v = bad < 0 ? V_RUN : V_WRONG;
            snprintf(r->msg, sizeof(r->msg), bad < 0 ? "two sessions run at once on two threads: a run failed"
                                                     : "two sessions run at once on two threads: run %d's output differs from "
                                                       "the single run's (a backend's run must be safe on two compiled "
                                                       "handles at once)", bad);
        }
    }
    seam_session_free(s2), seam_model_free(m2), seam_context_free(c2);
    free(want);
}

/* Integer attributes that pick another kernel when not their default. */
static const struct {
    const char *name;
    int64_t def;
} FORM_INTS[] = {
    {"allowzero", 0}, {"antialias", 0}, {"batch_dims", 0}, {"ceil_mode", 0}, {"center_point_box", 0},
    {"count_include_pad", 0}, {"exclude_outside", 0}, {"exclusive", 0}, {"fmod", 0}, {"keepdims", 1},
    {"largest", 1}, {"layout", 0}, {"linear_before_reset", 0}, {"noop_with_empty_axes", 0}, {"reverse", 0},
    {"saturate", 1}, {"select_last_index", 0}, {"sorted", 1}, {"storage_order", 0}, {"training_mode", 0},
    {"transA", 0}, {"transB", 0}, {"upper", 1},
};

/* Node i's form (backend-check's table rows): input 0's dtype and rank,
 * its string attributes (mode=..., auto_pad=...), integer ones off their
 * default, grouped and dilated windows. */
static void node_form(const ir_graph *g, int32_t i, char *out, size_t n) {
    const ir_node *nd = &g->nodes[i];
    size_t at = 0;
#define PUT(...)                                                                         \
    do {                                                                                 \
        int w_ = snprintf(out + at, n - at, __VA_ARGS__);                                \
        if (w_ > 0) at = (size_t)w_ < n - at ? at + (size_t)w_ : n - 1;                  \
    } while (0)
    out[0] = 0;
    const ir_type *t = nd->n_inputs > 0 && nd->inputs[0] >= 0 ? &g->values[nd->inputs[0]].type : NULL;
    if (t && t->kind == IR_TYPE_TENSOR) {
        PUT("%s", seam_dtype_name((seam_dtype)t->elem));
        if (t->rank >= 0) PUT(" %dd", t->rank);
    }
    for (int32_t a = 0; a < nd->n_attrs; a++) {
        const ir_attr *x = &nd->attrs[a];
        if (x->kind == IR_ATTR_STRING && x->s.len && x->s.len < 40)
            PUT(" %s=%.*s", x->name, (int)x->s.len, (const char *)x->s.data);
        for (size_t k = 0; x->kind == IR_ATTR_INT && k < sizeof(FORM_INTS) / sizeof(FORM_INTS[0]); k++)
            if (!strcmp(x->name, FORM_INTS[k].name) && x->i != FORM_INTS[k].def) PUT(" %s=%lld", x->name, (long long)x->i);
        if (x->kind == IR_ATTR_INT && !strcmp(x->name, "group") && x->i > 1) PUT(" grouped");
        bool dilated = false;
        for (int32_t k = 0; x->kind == IR_ATTR_INTS && !strcmp(x->name, "dilations") && k < x->n; k++) dilated |= x->ints[k] > 1;
        if (dilated) PUT(" dilated");
    }
    if (!out[0]) PUT("-");
#undef PUT
}

/* One test, in the child: its verdict and numbers into r; what it knows
 * after partitioning also goes to fd at once (the op and the claim, for a
 * crash or hang that follows). */
static void check_one(seam_context *ctx, cli_targets *tg, const char *dir, int repeat, result *r, int fd) {
    char err[600] = "";
    test_data d;
    memset(&d, 0, sizeof(d));
    r->v = V_SKIPPED;
    if (!read_data(ctx, dir, &d, err, sizeof(err))) {
        snprintf(r->msg, sizeof(r->msg), "its data: %.580s", err);
        return free_data(&d);
    }
    seam_model *m = load(ctx, dir, &d, err, sizeof(err));
    if (!m) {
        snprintf(r->msg, sizeof(r->msg), "%s", err);
        return free_data(&d);
    }
    seam_partition_options po = tg->opts;
    po.placement = SEAM_PLACEMENT_CAPABILITY;
    seam_plan *plan = NULL;
    if (seam_partition(m, &po, &plan)) {
        snprintf(r->msg, sizeof(r->msg), "partition: %.580s", seam_context_last_error(ctx));
        seam_model_free(m);
        return free_data(&d);
    }
    r->nodes = seam_plan_node_count(plan);
    const char *tname = tg->list[0]->name;
    for (int32_t i = 0; i < r->nodes; i++) {
        seam_plan_node_info ni;
        if (seam_plan_node(plan, i, &ni)) continue;
        if (!strcmp(ni.target, tname)) r->claimed++;
        if (strcmp(ni.op_type, "Constant")) {
            snprintf(r->op, sizeof(r->op), "%s", ni.op_type);
            node_form(m->graph, i, r->form, sizeof(r->form));
        }
    }
    r->v = V_CRASH;
    if (write(fd, r, sizeof(*r)) != (ssize_t)sizeof(*r)) _exit(3);
    r->v = V_UNCLAIMED;
    seam_session *s = NULL;
    seam_session_options so = {1, false, false, tg->avail, tg->n_avail, NULL, NULL};
    if (r->claimed && seam_plan_apply(m, plan, tg->opts.targets, tg->opts.n_targets, tg->target_options, tg->n_target_options)) {
        r->v = V_COMPILE;
        snprintf(r->msg, sizeof(r->msg), "applying the plan: %.570s", seam_context_last_error(ctx));
    } else if (r->claimed && seam_session_create(m, &so, &s)) {
        r->v = V_COMPILE;
        snprintf(r->msg, sizeof(r->msg), "%s", seam_context_last_error(ctx));
    } else if (r->claimed && (!feed(s, m, &d) || seam_session_run(s))) {
        r->v = V_RUN;
        snprintf(r->msg, sizeof(r->msg), "%s", seam_context_last_error(ctx));
        /* not the backend's fault when seam cannot run the test at all (its
         * data in a type seam's interface does not read yet) */
        seam_model *cm = NULL;
        seam_session *cs = cpu_session(ctx, dir, &d, &cm);
        if (!cs) {
            r->v = V_SKIPPED;
            char m2[sizeof(r->msg)];
            memcpy(m2, r->msg, sizeof(m2));
            m2[sizeof(m2) - 64] = 0; /* room for the words in front */
            snprintf(r->msg, sizeof(r->msg), "the CPU kernels cannot run it either: %.500s", m2);
        }
        seam_session_free(cs);
        seam_model_free(cm);
    } else if (r->claimed) {
        r->v = V_CORRECT;
        seam_model *cm = NULL;
        seam_session *cs = NULL;
        int32_t n_out = seam_model_output_count(m);
        for (int32_t k = 0; k < n_out && k < d.n_want && r->v == V_CORRECT; k++) {
            seam_tensor_view got;
            if (seam_session_output(s, k, &got)) {
                r->v = V_RUN;
                snprintf(r->msg, sizeof(r->msg), "output %d: %.580s", k, seam_context_last_error(ctx));
                break;
            }
            const seam_tensor *w = &d.want[k];
            if (same(&got, w->data, (seam_dtype)w->dtype, w->rank, w->dims, w->nbytes, err, sizeof(err))) continue;
            /* the expected data, or where the CPU kernels miss it too, theirs */
            seam_tensor_view cpu;
            if (!cs) cs = cpu_session(ctx, dir, &d, &cm);
            char cpu_err[300];
            if (cs && !seam_session_output(cs, k, &cpu) &&
                !same(&cpu, w->data, (seam_dtype)w->dtype, w->rank, w->dims, w->nbytes, cpu_err, sizeof(cpu_err)) &&
                same(&got, cpu.data, cpu.dtype, cpu.rank, cpu.dims, cpu.nbytes, cpu_err, sizeof(cpu_err)))
                continue;
            r->v = V_WRONG;
            snprintf(r->msg, sizeof(r->msg), "%s", err);
        }
        if (r->v == V_CORRECT && g_threads) check_threads(tg, dir, &d, s, r);
        if (r->v == V_CORRECT && repeat > 0) {
            if (!cs) cs = cpu_session(ctx, dir, &d, &cm);
            double tt = median_ms(s, repeat), tc = cs ? median_ms(cs, repeat) : -1;
            if (tt > 0 && tc > 0) r->ratio = tt / tc;
        }
        seam_session_free(cs);
        seam_model_free(cm);
    }
    seam_session_free(s);
    seam_plan_free(plan);
    seam_model_free(m);
    free_data(&d);
}

/* The test in a child: its result through a pipe; a crash or a timeout
 * is the parent's verdict. */
static void run_child(seam_context *ctx, cli_targets *tg, const char *dir, int repeat, int timeout, result *r) {
    int fd[2];
    if (pipe(fd)) {
        r->v = V_CRASH;
        snprintf(r->msg, sizeof(r->msg), "pipe: %s", strerror(errno));
        return;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        alarm((unsigned)timeout);
        result mine = *r;
        check_one(ctx, tg, dir, repeat, &mine, fd[1]);
        ssize_t w = write(fd[1], &mine, sizeof(mine));
        _exit(w == (ssize_t)sizeof(mine) ? 0 : 3);
    }
    close(fd[1]);
    /* up to two records: after partitioning, then the verdict */
    result got;
    bool done = false;
    for (int k = 0; pid > 0 && k < 2; k++) {
        size_t have = 0;
        while (have < sizeof(got)) {
            ssize_t n = read(fd[0], (char *)&got + have, sizeof(got) - have);
            if (n <= 0) break;
            have += (size_t)n;
        }
        if (have != sizeof(got)) break;
        *r = got;
        done = got.v != V_CRASH;
    }
    close(fd[0]);
    int status = 0;
    if (pid > 0) waitpid(pid, &status, 0);
    if (done) return;
    if (pid > 0 && WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) {
        r->v = V_TIMEOUT;
        snprintf(r->msg, sizeof(r->msg), "over %d s", timeout);
    } else {
        r->v = V_CRASH;
        snprintf(r->msg, sizeof(r->msg), pid < 0 ? "fork failed" : WIFSIGNALED(status) ? "killed by signal %d" : "exit %d",
                 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    }
}

static bool selected(const char *name, char **pats, int n_pats) {
    if (!n_pats) return true;
    for (int k = 0; k < n_pats; k++)
        if (strpbrk(pats[k], "*?[") ? !fnmatch(pats[k], name, 0) : strstr(name, pats[k]) != NULL) return true;
    return false;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static bool failed(verdict v) { return v >= V_COMPILE; }

static int write_json(const char *path, const char *target, const result *rs, int n) {
    json_t *root = json_object(), *tests = json_array();
    json_object_set_new(root, "target", json_string(target));
    for (int k = 0; k < n; k++) {
        json_t *t = json_object();
        json_object_set_new(t, "test", json_string(rs[k].test));
        json_object_set_new(t, "op", json_string(rs[k].op));
        json_object_set_new(t, "form", json_string(rs[k].form));
        json_object_set_new(t, "verdict", json_string(verdict_name[rs[k].v]));
        json_object_set_new(t, "claimed_nodes", json_integer(rs[k].claimed));
        json_object_set_new(t, "nodes", json_integer(rs[k].nodes));
        json_object_set_new(t, "time_vs_cpu", rs[k].ratio > 0 ? json_real(rs[k].ratio) : json_null());
        json_object_set_new(t, "message", json_string(rs[k].msg));
        json_array_append_new(tests, t);
    }
    json_object_set_new(root, "tests", tests);
    char tmp[1100];
    snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, (int)getpid());
    int rc = json_dump_file(root, tmp, JSON_INDENT(1)) == 0 && rename(tmp, path) == 0 ? CLI_OK : CLI_BAD_INPUT;
    if (rc) {
        unlink(tmp);
        fprintf(stderr, "seam backend-check: cannot write %s\n", path);
    }
    json_decref(root);
    return rc;
}

/* One row: the results k.. sharing the op (and the form, when by_form);
 * returns the index past them. */
static int table_row(const result *rs, int n, int k, bool by_form) {
    int j = k, tests = 0, claimed = 0, compiled = 0, correct = 0, timed = 0;
    double logsum = 0;
    for (; j < n && !strcmp(rs[j].op, rs[k].op) && (!by_form || !strcmp(rs[j].form, rs[k].form)); j++) {
        tests++;
        if (rs[j].v == V_UNCLAIMED || rs[j].v == V_SKIPPED) continue;
        claimed++;
        compiled += rs[j].v != V_COMPILE && rs[j].v != V_CRASH && rs[j].v != V_TIMEOUT;
        correct += rs[j].v == V_CORRECT;
        if (rs[j].ratio > 0) logsum += log(rs[j].ratio), timed++;
    }
    char ratio[32] = "-", label[200];
    if (timed) snprintf(ratio, sizeof(ratio), "%.2fx", exp(logsum / timed));
    if (by_form) snprintf(label, sizeof(label), "  %s", rs[k].form[0] ? rs[k].form : "-");
    else snprintf(label, sizeof(label), "%s", rs[k].op[0] ? rs[k].op : "?");
    printf("%-44s %6d %8d %9d %8d %12s\n", label, tests, claimed, compiled, correct, ratio);
    return j;
}

/* A row per op, and under it a row per form when the op has several. */
static void print_table(const result *rs, int n) {
    printf("%-44s %6s %8s %9s %8s %12s\n", "op / form (dtype, rank, attributes)", "tests", "claimed", "compiled",
           "correct", "time vs cpu");
    for (int k = 0; k < n;) {
        int j = table_row(rs, n, k, false);
        bool several = false;
        for (int q = k + 1; q < j && !several; q++) several = strcmp(rs[q].form, rs[k].form) != 0;
        for (int q = k; several && q < j;) q = table_row(rs, j, q, true);
        k = j;
    }
}

static int cmp_result(const void *a, const void *b) {
    const result *x = a, *y = b;
    int c = strcmp(x->op, y->op);
    if (!c) c = strcmp(x->form, y->form);
    return c ? c : strcmp(x->test, y->test);
}

/* Appends a copy of s to the list; false when out of memory. */
static bool push_name(char ***names, int *n, int *cap, const char *s) {
    if (*n == *cap) {
        char **grown = realloc(*names, sizeof(char *) * (size_t)(*cap = *cap ? 2 * *cap : 256));
        if (!grown) return false;
        *names = grown;
    }
    if (!((*names)[*n] = strdup(s))) return false;
    (*n)++;
    return true;
}

/* --models: the folder's cases written into --keep-cases or a temporary
 * folder (case_dir; *temp), summed up on stdout, the ones -k selects
 * appended to names. CLI_OK, or an exit status with its message printed
 * (and the cases removed). */
static int model_cases(seam_context *ctx, const char *models, const char *keep, int max_cases, char **pats, int n_pats,
                       backend_cases *bc, char *case_dir, size_t cdn, bool *temp, char ***names, int *n_names, int *cap) {
    int rc = CLI_OK, before = *n_names;
    if (keep) {
        snprintf(case_dir, cdn, "%s", keep);
        if (mkdir(case_dir, 0755) && errno != EEXIST) {
            fprintf(stderr, "seam backend-check: --keep-cases %s: %s\n", keep, strerror(errno));
            return CLI_BAD_INPUT;
        }
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(case_dir, cdn, "%s/seam-backend-check-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
        *temp = mkdtemp(case_dir) != NULL;
        if (!*temp) {
            fprintf(stderr, "seam backend-check: a temporary folder %s: %s\n", case_dir, strerror(errno));
            return CLI_BAD_INPUT;
        }
    }
    if (backend_cases_write(ctx, models, case_dir, max_cases, bc)) {
        fprintf(stderr, "seam backend-check: %s\n", bc->err);
        rc = CLI_BAD_INPUT;
    } else {
        printf("backend-check: %d models from %s (%d could not be read: %s), %d nodes: %d cases; %d the same as a case "
               "before, %d with an input of unknown shape, %d the CPU kernels cannot run on random inputs%s%s%s, %d past "
               "--max-cases\n\n",
               bc->models, models, bc->models_failed, bc->models_failed ? bc->first_failure : "none", bc->nodes, bc->n,
               bc->dups, bc->no_shape, bc->cpu_failed, bc->cpu_failed ? " (first: " : "",
               bc->cpu_failed ? bc->first_cpu_failure : "", bc->cpu_failed ? ")" : "", bc->over);
        for (int k = 0; k < bc->n; k++)
            if (selected(bc->names[k], pats, n_pats) && !push_name(names, n_names, cap, bc->names[k])) {
                fprintf(stderr, "seam backend-check: out of memory\n");
                rc = CLI_BAD_INPUT;
                break;
            }
        if (!rc && *n_names == before) {
            fprintf(stderr, "seam backend-check: no case from --models %s%s\n", models, n_pats ? " matches -k" : "");
            rc = n_pats ? CLI_USAGE : CLI_BAD_INPUT;
        }
    }
    if (rc) {
        if (*temp) backend_cases_remove(case_dir, bc->names, bc->n), rmdir(case_dir);
        backend_cases_free(bc);
    }
    return rc;
}

static const char *const help =
    "usage: seam backend-check --target T [options]\n\n"
    "Runs every ONNX backend node test through target T (a rules file, a built-in\n"
    "target, or a plug-in: --backend-lib X.so --target NAME): each test's nodes\n"
    "that T supports are placed on it; the session must compile, run and match the\n"
    "test's expected outputs (or, where seam's CPU kernels miss them too, the CPU\n"
    "kernels' outputs). Prints a table per op (and per form: input 0's dtype and\n"
    "rank, the attributes that pick a kernel) and every claimed test that failed;\n"
    "exits 1 when one did (compile failed, run failed, wrong, crashed, timed out).\n\n"
    "  --node-tests DIR      the node tests (default " NODE_TESTS ")\n"
    "  --models DIR          instead (or with --node-tests, as well): every distinct\n"
    "                        node of the models in DIR at its shapes there (its known\n"
    "                        inputs kept, the others random; expected outputs from\n"
    "                        seam's CPU kernels), a node test of its own; inputs of\n"
    "                        unknown dims take NAME.input.npy's (NAME.input_K.npy's)\n"
    "  --max-cases N         at most N cases from --models (default 2000)\n"
    "  --keep-cases DIR      write those cases into DIR and keep them (default: a\n"
    "                        temporary folder, removed after)\n"
    "  -k PATTERN            only tests whose name contains PATTERN (or matches it,\n"
    "                        with * ? [); repeatable\n"
    "  --repeat N            time N runs of each correct test on T and on the CPU\n"
    "                        kernels (default 5; 0: no timing)\n"
    "  --timeout S           a test running over S seconds fails (default 60)\n"
    "  --json FILE           a record per test\n"
    "  --no-threads          skip the run of two sessions at once on two threads\n"
    "                        (each correct test's, 40 runs each, outputs compared)\n"
    "  --target-option OPT   an option for T's compiler (repeatable)\n"
    "  --backend-lib PATH    load a backend from a shared library\n";

int cmd_backend_check(int argc, char **argv) {
    cli_targets tg;
    targets_init(&tg);
    const char *dir = NODE_TESTS, *json = NULL, *models = NULL, *keep = NULL;
    bool node_tests = true, node_tests_given = false;
    char *pats[MAX_K];
    int n_pats = 0, repeat = 5, timeout = 60, max_cases = 2000, rc = CLI_OK;
    for (int k = 1; k < argc; k++) {
        const char *a = argv[k];
        int tr = targets_option(&tg, "backend-check", argc, argv, &k);
        if (tr == 1) continue;
        if (tr) return targets_free(&tg), CLI_USAGE;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(help, stdout);
            return targets_free(&tg), CLI_OK;
        }
        bool has = k + 1 < argc;
        if (!strcmp(a, "--node-tests") && has) dir = argv[++k], node_tests_given = true;
        else if (!strcmp(a, "--models") && has) models = argv[++k];
        else if (!strcmp(a, "--keep-cases") && has) keep = argv[++k];
        else if (!strcmp(a, "--max-cases") && has) {
            char *end;
            long v = strtol(argv[++k], &end, 10);
            if (*end || v < 1 || v > 100000)
                return targets_free(&tg), cli_usage("backend-check", "--max-cases %s: a whole number from 1 to 100000", argv[k]);
            max_cases = (int)v;
        }
        else if (!strcmp(a, "--json") && has) json = argv[++k];
        else if (!strcmp(a, "--no-threads")) g_threads = false;
        else if (!strcmp(a, "-k") && has && n_pats < MAX_K) pats[n_pats++] = argv[++k];
        else if ((!strcmp(a, "--repeat") || !strcmp(a, "--timeout")) && has) {
            char *end;
            long v = strtol(argv[++k], &end, 10);
            if (*end || v < 0 || v > 3600 || (v == 0 && a[2] == 't'))
                return targets_free(&tg), cli_usage("backend-check", "%s %s: a whole number (0 to 3600; --timeout at least 1)", a, argv[k]);
            *(a[2] == 'r' ? &repeat : &timeout) = (int)v;
        } else {
            targets_free(&tg);
            return cli_usage("backend-check", "unknown option or missing value '%s' (see --help)", a);
        }
    }
    if (tg.n_paths != 1) return targets_free(&tg), cli_usage("backend-check", "give one --target to check (see --help)");
    seam_context *ctx = NULL;
    if (seam_context_create(&ctx)) return targets_free(&tg), CLI_BAD_INPUT;
    if ((rc = targets_load(&tg, "backend-check", ctx))) goto done;
    if (tg.opts.n_targets != 1 || !tg.list[0]) {
        rc = cli_usage("backend-check", "--target %s: a target other than cpu to check", tg.paths[0]);
        goto done;
    }
    bool listed = false; /* the session's backends: the target (a built-in one is in no list yet) */
    for (int32_t k = 0; k < tg.n_avail; k++) listed |= tg.avail[k] == tg.list[0];
    if (!listed) tg.avail[tg.n_avail++] = tg.list[0];
    if (keep && !models) {
        rc = cli_usage("backend-check", "--keep-cases goes with --models (see --help)");
        goto done;
    }
    node_tests = !models || node_tests_given;
    char **names = NULL;
    int n_names = 0, cap = 0, n_node_tests = 0;
    DIR *dd = node_tests ? opendir(dir) : NULL;
    if (node_tests && !dd) {
        fprintf(stderr, "seam backend-check: --node-tests %s: %s\n", dir, strerror(errno));
        rc = CLI_BAD_INPUT;
        goto done;
    }
    for (struct dirent *e; dd && (e = readdir(dd));) {
        char p[1100];
        snprintf(p, sizeof(p), "%s/%s/model.onnx", dir, e->d_name);
        if (e->d_name[0] == '.' || !selected(e->d_name, pats, n_pats) || !exists(p)) continue;
        if (!push_name(&names, &n_names, &cap, e->d_name)) break;
    }
    if (dd) closedir(dd);
    if (node_tests && !n_names) {
        fprintf(stderr, "seam backend-check: no node test in %s%s\n", dir, n_pats ? " matches -k" : "");
        rc = n_pats ? CLI_USAGE : CLI_BAD_INPUT;
        free(names);
        goto done;
    }
    if (n_names) qsort(names, (size_t)n_names, sizeof(char *), cmp_str);
    n_node_tests = n_names;
    /* the models' cases, after the node tests */
    backend_cases bc;
    memset(&bc, 0, sizeof(bc));
    char case_dir[1100] = "";
    bool temp_cases = false;
    if (models && (rc = model_cases(ctx, models, keep, max_cases, pats, n_pats, &bc, case_dir, sizeof(case_dir),
                                    &temp_cases, &names, &n_names, &cap))) {
        for (int k = 0; k < n_names; k++) free(names[k]);
        free(names);
        goto done;
    }
    result *rs = calloc((size_t)n_names, sizeof(result));
    int bad = 0;
    double t0 = cli_now_ms();
    for (int k = 0; rs && k < n_names; k++) {
        char p[1400];
        snprintf(p, sizeof(p), "%s/%s", k < n_node_tests ? dir : case_dir, names[k]);
        g_model_case = k >= n_node_tests;
        snprintf(rs[k].test, sizeof(rs[k].test), "%s", names[k]);
        run_child(ctx, &tg, p, repeat, timeout, &rs[k]);
        if (!rs[k].op[0]) snprintf(rs[k].op, sizeof(rs[k].op), "(%s)", verdict_name[rs[k].v]);
        bad += failed(rs[k].v);
    }
    if (rs) {
        qsort(rs, (size_t)n_names, sizeof(result), cmp_result);
        int claimed = 0, correct = 0;
        for (int k = 0; k < n_names; k++) claimed += rs[k].v != V_UNCLAIMED && rs[k].v != V_SKIPPED, correct += rs[k].v == V_CORRECT;
        char from[1300];
        if (n_node_tests && n_names > n_node_tests)
            snprintf(from, sizeof(from), "%d node tests from %s and %d cases from %s", n_node_tests, dir,
                     n_names - n_node_tests, models);
        else if (n_node_tests) snprintf(from, sizeof(from), "%d node tests from %s", n_names, dir);
        else snprintf(from, sizeof(from), "%d cases from the models in %s", n_names, models);
        printf("backend-check: target '%s', %s in %.1f s: %d claimed, %d correct, %d failed\n\n", tg.list[0]->name,
               from, (cli_now_ms() - t0) / 1e3, claimed, correct, bad);
        print_table(rs, n_names);
        if (bad) printf("\nclaimed and failed:\n");
        for (int k = 0; k < n_names; k++)
            if (failed(rs[k].v)) printf("  %s (%s): %s: %s\n", rs[k].test, rs[k].op, verdict_name[rs[k].v], rs[k].msg);
        if (json && write_json(json, tg.list[0]->name, rs, n_names)) rc = CLI_BAD_INPUT;
        if (!rc && bad) rc = CLI_BAD_INPUT;
    } else {
        rc = CLI_BAD_INPUT;
    }
    for (int k = 0; k < n_names; k++) free(names[k]);
    free(names);
    free(rs);
    if (temp_cases) backend_cases_remove(case_dir, bc.names, bc.n), rmdir(case_dir);
    else if (models) printf("\nthe cases are in %s (each a node test: model.onnx, test_data_set_0)\n", case_dir);
    backend_cases_free(&bc);
done:
    targets_free(&tg);
    seam_context_free(ctx);
    return rc;
}
