/*
 * conformance [--list FILE] [--update] [-v] [-k PATTERN]... [--min-pass F] DIR...
 *
 * Runs ONNX backend test directories (model.onnx, test_data_set_N/
 * input_*.pb and output_*.pb) on seam's CPU session and compares with the
 * expected outputs: floats within rtol 1e-3 / atol 1e-7 (the ONNX backend
 * tests' tolerance), everything else exactly. Each test runs in a forked
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
 * --min-pass F fails the run when fewer than F (a fraction) pass. A test
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

static bool read_all(const char *path, unsigned char **buf, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    struct stat sb;
    fstat(fileno(f), &sb);
    *n = (size_t)sb.st_size;
    *buf = malloc(*n + 1);
    bool ok = *buf && fread(*buf, 1, *n, f) == *n;
    fclose(f);
    return ok;
}

static bool load_pb(seam_context *ctx, const char *path, seam_tensor *t) {
    unsigned char *buf;
    size_t n;
    if (!read_all(path, &buf, &n)) return false;
    char *name = NULL;
    seam_status st = seam_onnx_tensor_read(ctx, buf, n, path, t, &name);
    free(buf);
    free(name);
    return st == SEAM_STATUS_OK;
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
            if (!load_pb(ctx, path, &ins[n_in])) {
                snprintf(why, n, "cannot read %s: %s", path, seam_context_last_error(ctx));
                verdict = ERROR;
                break;
            }
            /* the older test data stores bfloat16 tensors with data_type
             * UINT16 (the same bits): read them as what the model declares */
            if (ins[n_in].dtype == SEAM_DTYPE_UINT16 && v->type.elem == SEAM_DTYPE_BFLOAT16)
                ins[n_in].dtype = SEAM_DTYPE_BFLOAT16;
            st = seam_session_set_input(s, v->name, (seam_dtype)ins[n_in].dtype, ins[n_in].rank, ins[n_in].dims,
                                        ins[n_in].data);
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
            seam_tensor want;
            snprintf(path, sizeof(path), "%s/output_%d.pb", sd, o);
            if (!load_pb(ctx, path, &want)) {
                snprintf(why, n, "cannot read %s (not a plain tensor?)", path);
                verdict = UNSUPPORTED;
                break;
            }
            seam_tensor_view got;
            seam_session_output(s, o, &got);
            if (!compare(&got, &want, why, n)) verdict = FAIL;
            free(want.data);
        }
        for (int k = 0; k < n_in; k++) free(ins[k].data);
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
    char buf[1024];
    snprintf(buf, sizeof(buf), "%s", list);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        if (strpbrk(tok, "*?[") ? fnmatch(tok, name, 0) == 0 : strstr(name, tok) != NULL) return true;
    return false;
}

static bool selected(const char *name, const char *const *patterns, int n_patterns) {
    for (int k = 0; k < n_patterns; k++)
        if (matches(name, patterns[k])) return true;
    return n_patterns == 0;
}

int main(int argc, char **argv) {
    const char *list = NULL;
    const char *patterns[64]; /* -k and --match */
    int n_patterns = 0;
    double min_pass = 0; /* fail when fewer pass than this fraction */
    bool update = false, verbose = false;
    char **tests = NULL;
    size_t n_tests = 0, cap = 0;
    /* the options first, wherever they are, so that -k applies to every DIR */
    char **dirs = calloc((size_t)argc, sizeof(char *));
    int n_dirs = 0;
    for (int k = 1; k < argc; k++) {
        if (strcmp(argv[k], "--list") == 0 && k + 1 < argc) {
            list = argv[++k];
        } else if (strcmp(argv[k], "--update") == 0) {
            update = true;
        } else if (strcmp(argv[k], "-v") == 0) {
            verbose = true;
        } else if (strcmp(argv[k], "--min-pass") == 0 && k + 1 < argc) {
            min_pass = atof(argv[++k]);
        } else if ((strcmp(argv[k], "-k") == 0 || strcmp(argv[k], "--match") == 0) && k + 1 < argc) {
            if (n_patterns == (int)(sizeof(patterns) / sizeof(patterns[0]))) {
                fprintf(stderr, "conformance: too many -k\n");
                return 2;
            }
            patterns[n_patterns++] = argv[++k];
        } else {
            dirs[n_dirs++] = argv[k];
        }
    }
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
            if (!selected(de->d_name, patterns, n_patterns)) continue;
            if (n_tests == cap) {
                cap = cap ? cap * 2 : 1024;
                tests = realloc(tests, cap * sizeof(char *));
            }
            snprintf(p, sizeof(p), "%s/%s", dirs[k], de->d_name);
            tests[n_tests++] = strdup(p);
        }
        closedir(d);
    }
    free(dirs);
    if (n_patterns && !n_tests) {
        printf("conformance: no test matches");
        for (int k = 0; k < n_patterns; k++) printf(" -k %s", patterns[k]);
        printf("\n");
        return 2;
    }
    if (n_tests) qsort(tests, n_tests, sizeof(char *), cmp_str);
    int counts[5] = {0};
    char **not_passing = calloc(n_tests + 1, sizeof(char *));
    size_t n_np = 0;
    for (size_t t = 0; t < n_tests; t++) {
        int fds[2];
        if (pipe(fds) != 0) return 2;
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            close(fds[0]);
            alarm(300); /* a hang counts as a crash */
            char why[1024] = "";
            int v = run_test(tests[t], why, sizeof(why));
            if (write(fds[1], why, strlen(why)) < 0) v = ERROR;
            _exit(v);
        }
        close(fds[1]);
        char why[1024] = "";
        ssize_t r = read(fds[0], why, sizeof(why) - 1);
        why[r > 0 ? r : 0] = 0;
        close(fds[0]);
        int status = 0;
        waitpid(pid, &status, 0);
        int v = WIFEXITED(status) && WEXITSTATUS(status) <= ERROR ? WEXITSTATUS(status) : CRASH;
        counts[v]++;
        const char *name = strrchr(tests[t], '/') + 1;
        if (v != PASS) not_passing[n_np++] = strdup(name);
        if (verbose || v == CRASH) printf("%-12s %s: %s\n", verdict_name[v], name, why);
    }
    printf("conformance: %zu tests: %d passed, %d failed, %d unsupported, %d errors, %d crashed (%.1f%% pass)\n",
           n_tests, counts[PASS], counts[FAIL], counts[UNSUPPORTED], counts[ERROR], counts[CRASH],
           n_tests ? 100.0 * counts[PASS] / (double)n_tests : 0.0);
    int rc = counts[CRASH] ? 1 : 0;
    if (n_tests && (double)counts[PASS] / (double)n_tests < min_pass) {
        printf("conformance: %.1f%% pass is below the required %.1f%%\n", 100.0 * counts[PASS] / (double)n_tests,
               100.0 * min_pass);
        rc = 1;
    }
    if (list && update) {
        FILE *f = fopen(list, "w");
        if (!f) return 2;
        fprintf(f, "# ONNX backend tests seam does not pass yet (kept by tests/drivers/conformance --update)\n");
        for (size_t k = 0; k < n_np; k++) fprintf(f, "%s\n", not_passing[k]);
        fclose(f);
        printf("conformance: wrote %zu names to %s\n", n_np, list);
    } else if (list) {
        FILE *f = fopen(list, "r");
        if (!f) {
            fprintf(stderr, "conformance: cannot read %s\n", list);
            return 2;
        }
        char line[512];
        /* every name in the list, however few tests -k kept */
        char **known = NULL;
        size_t n_known = 0, known_cap = 0;
        while (fgets(line, sizeof(line), f)) {
            line[strcspn(line, "\n")] = 0;
            if (!line[0] || line[0] == '#') continue;
            if (n_known == known_cap) {
                known_cap = known_cap ? known_cap * 2 : 64;
                known = realloc(known, known_cap * sizeof(char *));
            }
            known[n_known++] = strdup(line);
        }
        fclose(f);
        qsort(known, n_known, sizeof(char *), cmp_str);
        for (size_t k = 0; k < n_np; k++)
            if (!bsearch(&not_passing[k], known, n_known, sizeof(char *), cmp_str)) {
                printf("REGRESSION: %s does not pass and is not in %s\n", not_passing[k], list);
                rc = 1;
            }
        qsort(not_passing, n_np, sizeof(char *), cmp_str);
        for (size_t k = 0; k < n_known; k++) {
            bool in_set = false;
            for (size_t t = 0; t < n_tests && !in_set; t++) in_set = strcmp(strrchr(tests[t], '/') + 1, known[k]) == 0;
            if (in_set && !bsearch(&known[k], not_passing, n_np, sizeof(char *), cmp_str)) {
                printf("NOW PASSES: %s: remove it from %s (or run with --update)\n", known[k], list);
                rc = 1;
            }
        }
        for (size_t k = 0; k < n_known; k++) free(known[k]);
        free(known);
    }
    for (size_t k = 0; k < n_tests; k++) free(tests[k]);
    for (size_t k = 0; k < n_np; k++) free(not_passing[k]);
    free(tests);
    free(not_passing);
    fflush(stdout);
    return rc;
}
