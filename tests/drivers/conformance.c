/*
 * conformance [--list FILE] [--update] [-v] [-k PATTERN]... [--min-pass F] [--min-passes N] DIR...
 *
 * Runs ONNX backend test directories (model.onnx, test_data_set_N/
 * input_*.pb and output_*.pb) on seam's CPU session and compares with the
 * expected outputs: floats within rtol 1e-3 / atol 1e-7 (the ONNX backend
 * tests' tolerance), everything else exactly (strings byte by byte,
 * sequences element by element). A model with sequence or optional inputs
 * or outputs runs on the executor directly, since the public API takes
 * and gives tensors only. Each test runs in a forked
 * child, so a crash is counted as one, not the end of the run.
 *
 * Prints passed / failed / unsupported / crashed counts. With --list, the
 * names in FILE are the tests known not to pass: any other test that does
 * not pass is a regression (exit 1), and a listed test that now passes
 * must be removed from the list (exit 1). --update rewrites FILE.
 * -k keeps only the tests whose name contains PATTERN, or matches it as a
 * shell pattern when it holds * ? or [; several -k (or a comma-separated
 * list, or the older --match A,B) keep the tests any of them selects, and
 * a selection that keeps no test is an error (exit 2).
 * Each line of FILE is a name, then optionally "# why it does not pass";
 * --update keeps the reasons of the names that stay and gives a new name
 * the run's verdict and message.
 * --min-pass F fails the run when fewer than F (a fraction) pass, and
 * --min-passes N when fewer than N tests pass. A test
 * that crashes or runs over 300 s always fails the run.
 */
#include <dirent.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ir/ir.h"
#include "onnx/onnx.h"
#include "seam.h"

enum { PASS = 0, FAIL = 1, UNSUPPORTED = 2, ERROR = 3, CRASH = 4 };
static const char *verdict_name[] = {"pass", "fail", "unsupported", "error", "crash"};

/* A value file of the test data (TensorProto, SequenceProto or
 * OptionalProto, by the model's type), read as seam run reads it. */
static bool load_pb(seam_context *ctx, const char *path, const ir_type *type, seam_tensor *t) {
    return seam_onnx_value_read_file(ctx, path, type, t) == SEAM_STATUS_OK;
}

static double as_double(const void *p, int32_t dtype, int64_t i) {
    switch (dtype) {
    case SEAM_DTYPE_FLOAT32: return ((const float *)p)[i];
    case SEAM_DTYPE_FLOAT64: return ((const double *)p)[i];
    case SEAM_DTYPE_FLOAT16: {
        uint16_t h = ((const uint16_t *)p)[i];
        int e = (h >> 10) & 31, m = h & 1023;
        double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
        return h & 0x8000 ? -v : v;
    }
    case SEAM_DTYPE_BFLOAT16: {
        uint32_t b = (uint32_t)((const uint16_t *)p)[i] << 16;
        float f;
        memcpy(&f, &b, 4);
        return f;
    }
    default: return 0;
    }
}

/* Compares an output with its expected tensor; writes why on mismatch. */
static bool compare(const seam_tensor_view *got, const seam_tensor *want, char *why, size_t n) {
    int32_t wdt = want->dtype;
    /* onnx 1.12's test data stores bfloat16 outputs as uint16 */
    if (got->dtype == SEAM_DTYPE_BFLOAT16 && wdt == SEAM_DTYPE_UINT16) wdt = SEAM_DTYPE_BFLOAT16;
    if ((int32_t)got->dtype != wdt) {
        snprintf(why, n, "output '%s' dtype %s, expected %s", got->name, seam_dtype_name(got->dtype),
                 seam_dtype_name((seam_dtype)want->dtype));
        return false;
    }
    bool shape_ok = got->rank == want->rank;
    for (int32_t d = 0; shape_ok && d < got->rank; d++) shape_ok = got->dims[d] == want->dims[d];
    if (!shape_ok) {
        snprintf(why, n, "output '%s' has a different shape", got->name);
        return false;
    }
    int64_t numel = want->numel;
    if (wdt == SEAM_DTYPE_STRING) {
        const ir_bytes *a = got->data, *b = want->data;
        for (int64_t i = 0; i < numel; i++)
            if (a[i].len != b[i].len || (a[i].len && memcmp(a[i].data, b[i].data, a[i].len) != 0)) {
                snprintf(why, n, "output '%s'[%lld] = \"%.*s\", expected \"%.*s\"", got->name, (long long)i,
                         (int)(a[i].len > 64 ? 64 : a[i].len), (const char *)a[i].data,
                         (int)(b[i].len > 64 ? 64 : b[i].len), (const char *)b[i].data);
                return false;
            }
        return true;
    }
    bool fl = wdt == SEAM_DTYPE_FLOAT32 || wdt == SEAM_DTYPE_FLOAT64 || wdt == SEAM_DTYPE_FLOAT16 ||
              wdt == SEAM_DTYPE_BFLOAT16;
    if (!fl) {
        if (got->nbytes != want->nbytes || memcmp(got->data, want->data, want->nbytes) != 0) {
            snprintf(why, n, "output '%s' differs", got->name);
            return false;
        }
        return true;
    }
    for (int64_t i = 0; i < numel; i++) {
        double a = as_double(got->data, wdt, i), b = as_double(want->data, wdt, i);
        if (isnan(a) && isnan(b)) continue;
        if (isinf(a) || isinf(b)) {
            if (a == b) continue;
        } else if (fabs(a - b) <= 1e-7 + 1e-3 * fabs(b)) {
            continue;
        }
        snprintf(why, n, "output '%s'[%lld] = %.9g, expected %.9g", got->name, (long long)i, a, b);
        return false;
    }
    return true;
}

/* compare() for any value the API gives: sequences element by element. */
static bool compare_value(const char *name, const seam_value_view *got, const seam_tensor *want, char *why, size_t n) {
    int32_t wkind = want->dtype == SEAM_VALUE_SEQUENCE ? SEAM_KIND_SEQUENCE
                    : want->dtype == SEAM_VALUE_NONE   ? SEAM_KIND_NONE
                                                       : SEAM_KIND_TENSOR;
    static const char *kinds[] = {"a tensor", "a sequence", "no value", "a map"};
    if ((int32_t)got->kind != wkind || (wkind == SEAM_KIND_SEQUENCE && got->count != want->numel)) {
        snprintf(why, n, "output '%s' is %s of %d, expected %s of %lld", name, kinds[got->kind & 3], got->count,
                 kinds[wkind], (long long)want->numel);
        return false;
    }
    if (wkind == SEAM_KIND_TENSOR) return compare(&got->tensor, want, why, n);
    for (int32_t i = 0; wkind == SEAM_KIND_SEQUENCE && i < got->count; i++) {
        seam_tensor_view e = got->elements[i];
        e.name = name;
        if (!compare(&e, &((const seam_tensor *)want->data)[i], why, n)) return false;
    }
    return true;
}

/* Runs one test directory; returns a verdict, with a reason in why. */
static int run_test(const char *dir, char *why, size_t n) {
    seam_context *ctx;
    if (seam_context_create(&ctx)) return ERROR;
    char path[4096];
    snprintf(path, sizeof(path), "%s/model.onnx", dir);
    seam_model *m = NULL;
    seam_session *s = NULL;
    int verdict = PASS;
    seam_status st = seam_model_load(ctx, path, &m);
    if (!st) st = seam_session_create(m, NULL, &s);
    if (st) {
        snprintf(why, n, "%s", seam_context_last_error(ctx));
        verdict = st == SEAM_STATUS_UNSUPPORTED ? UNSUPPORTED : ERROR;
        goto done;
    }
    for (int set = 0; verdict == PASS; set++) {
        char sd[4200];
        snprintf(sd, sizeof(sd), "%s/test_data_set_%d", dir, set);
        struct stat sb;
        if (stat(sd, &sb) != 0) break;
        seam_tensor ins[64];
        int n_in = 0;
        const ir_graph *g = m->graph;
        for (int32_t k = 0; k < g->n_inputs && n_in < 64; k++) {
            const ir_value *v = &g->values[g->inputs[k]];
            if (v->flags & IR_VALUE_INIT) continue;
            snprintf(path, sizeof(path), "%s/input_%d.pb", sd, n_in);
            if (stat(path, &sb) != 0) break; /* optional inputs left out */
            if (!load_pb(ctx, path, &v->type, &ins[n_in])) {
                snprintf(why, n, "cannot read %s: %s", path, seam_context_last_error(ctx));
                verdict = ERROR;
                break;
            }
            seam_tensor_view *elems;
            seam_value_view vv = seam_value_view_of(v->name, &ins[n_in], &elems);
            st = seam_session_set_input_value(s, v->name, &vv);
            free(elems);
            n_in++;
            if (st) {
                snprintf(why, n, "%s", seam_context_last_error(ctx));
                verdict = ERROR;
                break;
            }
        }
        if (verdict == PASS && (st = seam_session_run(s))) {
            snprintf(why, n, "%s", seam_context_last_error(ctx));
            verdict = st == SEAM_STATUS_UNSUPPORTED ? UNSUPPORTED : FAIL;
        }
        for (int32_t o = 0; verdict == PASS && o < g->n_outputs; o++) {
            const ir_value *v = &g->values[g->outputs[o]];
            seam_tensor want;
            snprintf(path, sizeof(path), "%s/output_%d.pb", sd, o);
            if (!load_pb(ctx, path, &v->type, &want)) {
                snprintf(why, n, "cannot read %s: %s", path, seam_context_last_error(ctx));
                verdict = UNSUPPORTED;
                break;
            }
            seam_value_view got;
            if (seam_session_output_value(s, o, &got)) {
                snprintf(why, n, "%s", seam_context_last_error(ctx));
                verdict = FAIL;
            } else if (!compare_value(v->name, &got, &want, why, n)) {
                verdict = FAIL;
            }
            seam_value_free(&want);
        }
        for (int k = 0; k < n_in; k++) seam_value_free(&ins[k]);
    }
done:
    seam_session_free(s);
    seam_model_free(m);
    seam_context_free(ctx);
    return verdict;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Whether a -k pattern (a comma-separated list of substrings or shell
 * patterns) selects the test name. */
static bool matches(const char *name, const char *list) {
    /* the whole list (a cut one could leave a prefix such as "test_" that
     * selects everything) */
    char *buf = strdup(list);
    bool hit = false;
    for (char *save = NULL, *tok = buf ? strtok_r(buf, ",", &save) : NULL; tok && !hit; tok = strtok_r(NULL, ",", &save))
        hit = strpbrk(tok, "*?[") ? fnmatch(tok, name, 0) == 0 : strstr(name, tok) != NULL;
    free(buf);
    return hit;
}

static bool selected(const char *name, const char *const *patterns, int n_patterns) {
    for (int k = 0; k < n_patterns; k++)
        if (matches(name, patterns[k])) return true;
    return n_patterns == 0;
}

/* The command line. */
typedef struct options {
    const char *list;
    const char *patterns[64]; /* -k and --match */
    int n_patterns;
    double min_pass; /* fail when fewer pass than this fraction */
    int min_passes;  /* or than this many */
    bool update, verbose;
} options;

/* The tests and what they did. */
typedef struct results {
    char **tests; /* DIR/name, sorted */
    size_t n_tests;
    int counts[5]; /* by verdict */
    char **not_passing;
    char **np_why; /* "verdict: why", by not_passing's index */
    size_t n_np;
} results;

/* The --list file: the names known not to pass, each with its reason (or
 * NULL). */
typedef struct known_list {
    char **names, **why;
    size_t n;
} known_list;

/* The options first, wherever they are, so that -k applies to every DIR;
 * the rest are the DIRs. 0, or the exit code. */
static int parse_args(int argc, char **argv, options *o, char **dirs, int *n_dirs) {
    memset(o, 0, sizeof(*o));
    for (int k = 1; k < argc; k++) {
        if (strcmp(argv[k], "--list") == 0 && k + 1 < argc) {
            o->list = argv[++k];
        } else if (strcmp(argv[k], "--update") == 0) {
            o->update = true;
        } else if (strcmp(argv[k], "-v") == 0) {
            o->verbose = true;
        } else if (strcmp(argv[k], "--min-passes") == 0 && k + 1 < argc) {
            o->min_passes = atoi(argv[++k]);
        } else if (strcmp(argv[k], "--min-pass") == 0 && k + 1 < argc) {
            o->min_pass = atof(argv[++k]);
        } else if ((strcmp(argv[k], "-k") == 0 || strcmp(argv[k], "--match") == 0) && k + 1 < argc) {
            if (o->n_patterns == (int)(sizeof(o->patterns) / sizeof(o->patterns[0]))) {
                fprintf(stderr, "conformance: too many -k\n");
                return 2;
            }
            o->patterns[o->n_patterns++] = argv[++k];
        } else {
            dirs[(*n_dirs)++] = argv[k];
        }
    }
    return 0;
}

/* The test directories (those with a model.onnx) in each DIR that -k
 * selects, into r->tests. 0, or the exit code. */
static int collect_tests(const options *o, char **dirs, int n_dirs, results *r) {
    size_t cap = 0;
    for (int k = 0; k < n_dirs; k++) {
        DIR *d = opendir(dirs[k]);
        if (!d) {
            fprintf(stderr, "conformance: cannot open %s\n", dirs[k]);
            return 2;
        }
        struct dirent *de;
        while ((de = readdir(d))) {
            if (de->d_name[0] == '.') continue;
            char p[4096];
            snprintf(p, sizeof(p), "%s/%s/model.onnx", dirs[k], de->d_name);
            if (access(p, R_OK) != 0) continue;
            if (!selected(de->d_name, o->patterns, o->n_patterns)) continue;
            if (r->n_tests == cap) {
                cap = cap ? cap * 2 : 1024;
                r->tests = realloc(r->tests, cap * sizeof(char *));
            }
            snprintf(p, sizeof(p), "%s/%s", dirs[k], de->d_name);
            r->tests[r->n_tests++] = strdup(p);
        }
        closedir(d);
    }
    return 0;
}

/* Runs test t in a forked child (a crash or a hang kills only the child)
 * and returns its verdict, its message in why. -1: no pipe. */
static int run_forked(const char *test, char *why, size_t n) {
    int fds[2];
    if (pipe(fds) != 0) return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        alarm(300); /* a hang counts as a crash */
        char cwhy[1024] = "";
        int v = run_test(test, cwhy, sizeof(cwhy));
        if (write(fds[1], cwhy, strlen(cwhy)) < 0) v = ERROR;
        _exit(v);
    }
    close(fds[1]);
    ssize_t r = read(fds[0], why, n - 1);
    why[r > 0 ? r : 0] = 0;
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) <= ERROR ? WEXITSTATUS(status) : CRASH;
}

/* Runs every test, counting verdicts and keeping the names and messages
 * of those that do not pass. 0, or the exit code. */
static int run_tests(const options *o, results *r) {
    r->not_passing = calloc(r->n_tests + 1, sizeof(char *));
    r->np_why = calloc(r->n_tests + 1, sizeof(char *));
    for (size_t t = 0; t < r->n_tests; t++) {
        char why[1024] = "";
        int v = run_forked(r->tests[t], why, sizeof(why));
        if (v < 0) return 2;
        r->counts[v]++;
        const char *name = strrchr(r->tests[t], '/') + 1;
        if (v != PASS) {
            char line[1200];
            for (char *c = why; *c; c++)
                if (*c == '\n') *c = ' ';
            snprintf(line, sizeof(line), "%s: %s", verdict_name[v], why);
            r->np_why[r->n_np] = strdup(line);
            r->not_passing[r->n_np++] = strdup(name);
        }
        if (o->verbose || v == CRASH) printf("%-12s %s: %s\n", verdict_name[v], name, why);
    }
    return 0;
}

/* The counts, and 1 when a test crashed or fewer passed than required. */
static int print_summary(const options *o, const results *r) {
    const int *counts = r->counts;
    size_t n_tests = r->n_tests;
    printf("conformance: %zu tests: %d passed, %d failed, %d unsupported, %d errors, %d crashed (%.1f%% pass)\n",
           n_tests, counts[PASS], counts[FAIL], counts[UNSUPPORTED], counts[ERROR], counts[CRASH],
           n_tests ? 100.0 * counts[PASS] / (double)n_tests : 0.0);
    int rc = counts[CRASH] ? 1 : 0;
    if (o->min_passes > 0 && counts[PASS] < o->min_passes) {
        printf("conformance: %d pass, fewer than the required %d\n", counts[PASS], o->min_passes);
        rc = 1;
    }
    if (n_tests && (double)counts[PASS] / (double)n_tests < o->min_pass) {
        printf("conformance: %.1f%% pass is below the required %.1f%%\n", 100.0 * counts[PASS] / (double)n_tests,
               100.0 * o->min_pass);
        rc = 1;
    }
    return rc;
}

/* The list: one name a line, then optionally "# why it does not pass".
 * A list that cannot be read is empty with --update, else an error
 * (false). */
static bool read_known(const options *o, known_list *kl) {
    size_t cap = 0;
    FILE *lf = o->list ? fopen(o->list, "r") : NULL;
    if (o->list && !lf && !o->update) {
        fprintf(stderr, "conformance: cannot read %s\n", o->list);
        return false;
    }
    char line[2048];
    while (lf && fgets(line, sizeof(line), lf)) {
        line[strcspn(line, "\n")] = 0;
        size_t len = strcspn(line, " \t#");
        if (len == 0) continue;
        char *hash = strchr(line + len, '#');
        if (kl->n == cap) {
            cap = cap ? cap * 2 : 64;
            kl->names = realloc(kl->names, cap * sizeof(char *));
            kl->why = realloc(kl->why, cap * sizeof(char *));
        }
        kl->names[kl->n] = strndup(line, len);
        kl->why[kl->n++] = hash ? strdup(hash + 1 + strspn(hash + 1, " ")) : NULL;
    }
    if (lf) fclose(lf);
    return true;
}

/* --update: the list rewritten with this run's tests that do not pass.
 * The reasons written by hand are kept; a new entry gets the run's. */
static bool write_list(const char *list, const results *r, const known_list *kl) {
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.tmp", list);
    FILE *f = fopen(tmp, "w");
    if (!f) return false;
    fprintf(f, "# ONNX backend tests seam does not pass yet, each with why (kept by tests/drivers/conformance "
               "--update)\n");
    for (size_t k = 0; k < r->n_np; k++) {
        const char *why = r->np_why[k];
        for (size_t j = 0; j < kl->n; j++)
            if (strcmp(kl->names[j], r->not_passing[k]) == 0 && kl->why[j]) why = kl->why[j];
        fprintf(f, "%s  # %.300s\n", r->not_passing[k], why);
    }
    if (fclose(f) != 0 || rename(tmp, list) != 0) return false;
    printf("conformance: wrote %zu names to %s\n", r->n_np, list);
    return true;
}

/* The run against the list: a test not passing that is not listed is a
 * regression, a listed test that ran and passed must leave the list
 * (every name in the list, however few tests -k kept). 1 for either. */
static int check_list(const char *list, const results *r, const known_list *kl) {
    int rc = 0;
    char **sorted = malloc((kl->n + 1) * sizeof(char *));
    if (kl->n) memcpy(sorted, kl->names, kl->n * sizeof(char *));
    qsort(sorted, kl->n, sizeof(char *), cmp_str);
    for (size_t k = 0; k < r->n_np; k++)
        if (!bsearch(&r->not_passing[k], sorted, kl->n, sizeof(char *), cmp_str)) {
            printf("REGRESSION: %s does not pass and is not in %s (%s)\n", r->not_passing[k], list, r->np_why[k]);
            rc = 1;
        }
    char **np_sorted = malloc((r->n_np + 1) * sizeof(char *));
    if (r->n_np) memcpy(np_sorted, r->not_passing, r->n_np * sizeof(char *));
    qsort(np_sorted, r->n_np, sizeof(char *), cmp_str);
    for (size_t k = 0; k < kl->n; k++) {
        bool in_set = false;
        for (size_t t = 0; t < r->n_tests && !in_set; t++) in_set = strcmp(strrchr(r->tests[t], '/') + 1, sorted[k]) == 0;
        if (in_set && !bsearch(&sorted[k], np_sorted, r->n_np, sizeof(char *), cmp_str)) {
            printf("NOW PASSES: %s: remove it from %s (or run with --update)\n", sorted[k], list);
            rc = 1;
        }
    }
    free(sorted);
    free(np_sorted);
    return rc;
}

static void free_all(results *r, known_list *kl) {
    for (size_t k = 0; k < kl->n; k++) {
        free(kl->names[k]);
        free(kl->why[k]);
    }
    free(kl->names);
    free(kl->why);
    for (size_t k = 0; k < r->n_np; k++) free(r->np_why[k]);
    free(r->np_why);
    for (size_t k = 0; k < r->n_tests; k++) free(r->tests[k]);
    for (size_t k = 0; k < r->n_np; k++) free(r->not_passing[k]);
    free(r->tests);
    free(r->not_passing);
}

int main(int argc, char **argv) {
    options o;
    results r = {0};
    known_list kl = {0};
    char **dirs = calloc((size_t)argc, sizeof(char *));
    int n_dirs = 0;
    int rc = parse_args(argc, argv, &o, dirs, &n_dirs);
    if (rc || (rc = collect_tests(&o, dirs, n_dirs, &r))) return rc;
    free(dirs);
    if (o.n_patterns && !r.n_tests) {
        printf("conformance: no test matches");
        for (int k = 0; k < o.n_patterns; k++) printf(" -k %s", o.patterns[k]);
        printf("\n");
        return 2;
    }
    if (r.n_tests) qsort(r.tests, r.n_tests, sizeof(char *), cmp_str);
    if (run_tests(&o, &r)) return 2;
    rc = print_summary(&o, &r);
    if (!read_known(&o, &kl)) return 2;
    if (o.list && o.update) {
        if (!write_list(o.list, &r, &kl)) return 2;
    } else if (o.list && check_list(o.list, &r, &kl)) {
        rc = 1;
    }
    free_all(&r, &kl);
    fflush(stdout);
    return rc;
}
