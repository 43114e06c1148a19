/* seam quantize MODEL -o OUT.onnx [--calibration DIR | --dynamic] [options] */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "core/tensor.h"
#include "run.h"

static const char *HELP =
    "usage: seam quantize MODEL -o OUT.onnx --calibration DIR [options]\n"
    "       seam quantize MODEL -o OUT.onnx --dynamic [options]\n"
    "\n"
    "Writes MODEL quantized to int8 in the form ONNX Runtime's quantizer\n"
    "writes, which seam's int8 targets and ONNX Runtime both run.\n"
    "\n"
    "Static (QDQ, the default): activations uint8 per tensor, their ranges\n"
    "measured by running MODEL on the calibration sets; weights int8\n"
    "symmetric per output channel; biases int32. Quantized: Conv, MatMul,\n"
    "Gemm, Add, Mul, AveragePool, GlobalAveragePool, Concat, and MaxPool,\n"
    "Flatten, Reshape between them; a Relu or Clip from 0 after a quantized\n"
    "op is absorbed by its QuantizeLinear.\n"
    "\n"
    "Dynamic (--dynamic): each MatMul and Gemm with constant 2-D weights\n"
    "becomes DynamicQuantizeLinear -> MatMulInteger (weights int8 per\n"
    "tensor); for transformers, no calibration.\n"
    "\n"
    "  --calibration DIR    the calibration sets: DIR/SET/ folders, each with one\n"
    "                       file per input (NAME.npy or NAME.pb, or input_K.pb as\n"
    "                       ONNX's test data names them); for a model of one\n"
    "                       input, DIR may instead hold one .npy or .pb per set\n"
    "  --method M           minmax (default) or percentile\n"
    "  --percentile P       the share of values the range keeps, in percent\n"
    "                       (default 99.999; implies --method percentile)\n"
    "  --per-tensor         one scale per weight (default: per output channel;\n"
    "                       per tensor for --dynamic)\n"
    "  --per-channel        one scale per output channel or column\n"
    "  --exclude NODE,...   nodes left in float (may repeat)\n"
    "  --threads N          calibration threads (default: one per core)\n"
    "  --quiet              print nothing but errors\n"
    "\n"
    "OUT is written to a temporary file and renamed; it may not be MODEL.\n"
    "Exit status: 0 written, 1 bad model or calibration data, 2 bad usage.\n";

#define MAX_EXCLUDE 256

typedef struct qopts {
    const char *path, *out, *calib;
    seam_quantize_options o;
    const char *exclude[MAX_EXCLUDE];
    char *exclude_buf[MAX_EXCLUDE];
    int n_exclude_buf;
    bool quiet;
} qopts;

static int parse(qopts *a, int argc, char **argv) {
    a->o = seam_quantize_defaults();
    for (int k = 1; k < argc; k++) {
        const char *s = argv[k];
        bool val = k + 1 < argc;
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
            fputs(HELP, stdout);
            return -1;
        } else if (!strcmp(s, "-o") || !strcmp(s, "--calibration") || !strcmp(s, "--method") ||
                   !strcmp(s, "--percentile") || !strcmp(s, "--exclude") || !strcmp(s, "--threads")) {
            if (!val) return cli_usage("quantize", "%s needs a value", s);
            const char *v = argv[++k];
            char *end;
            if (!strcmp(s, "-o")) a->out = v;
            else if (!strcmp(s, "--calibration")) a->calib = v;
            else if (!strcmp(s, "--method")) {
                if (!strcmp(v, "minmax")) a->o.method = SEAM_CALIB_MINMAX;
                else if (!strcmp(v, "percentile")) a->o.method = SEAM_CALIB_PERCENTILE;
                else return cli_usage("quantize", "--method wants minmax or percentile, got '%s'", v);
            } else if (!strcmp(s, "--percentile")) {
                a->o.percentile = strtod(v, &end);
                if (*end || end == v || !(a->o.percentile > 50 && a->o.percentile <= 100))
                    return cli_usage("quantize", "--percentile wants a number in (50, 100], got '%s'", v);
                a->o.method = SEAM_CALIB_PERCENTILE;
            } else if (!strcmp(s, "--threads")) {
                long n = strtol(v, &end, 10);
                if (*end || end == v || n < 0 || n > 4096) return cli_usage("quantize", "--threads wants a number >= 0, got '%s'", v);
                a->o.n_threads = (int32_t)n;
            } else {
                if (a->n_exclude_buf == MAX_EXCLUDE) return cli_usage("quantize", "too many --exclude options");
                char *buf = strdup(v);
                if (!buf) return cli_usage("quantize", "out of memory");
                a->exclude_buf[a->n_exclude_buf++] = buf;
                for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
                    if (a->o.n_exclude == MAX_EXCLUDE) return cli_usage("quantize", "too many nodes in --exclude");
                    a->exclude[a->o.n_exclude++] = t;
                }
            }
        } else if (!strcmp(s, "--dynamic")) {
            a->o.mode = SEAM_QUANT_DYNAMIC;
        } else if (!strcmp(s, "--per-tensor") || !strcmp(s, "--per-channel")) {
            a->o.weights = s[6] == 't' ? SEAM_QUANT_PER_TENSOR : SEAM_QUANT_PER_CHANNEL;
        } else if (!strcmp(s, "--quiet")) {
            a->quiet = true;
        } else if (s[0] == '-' && s[1]) {
            return cli_usage("quantize", "unknown option '%s'", s);
        } else if (a->path) {
            return cli_usage("quantize", "one model at a time ('%s' and '%s' given)", a->path, s);
        } else {
            a->path = s;
        }
    }
    a->o.exclude = a->exclude;
    if (!a->path) return cli_usage("quantize", "no model given");
    if (!a->out) return cli_usage("quantize", "-o OUT.onnx is required");
    if (a->o.mode == SEAM_QUANT_STATIC && !a->calib)
        return cli_usage("quantize", "static quantization needs --calibration DIR (or --dynamic)");
    if (a->o.mode == SEAM_QUANT_DYNAMIC && a->calib)
        return cli_usage("quantize", "--dynamic takes no --calibration: its ranges are found at run time");
    if (a->o.mode == SEAM_QUANT_DYNAMIC && a->o.method == SEAM_CALIB_PERCENTILE)
        return cli_usage("quantize", "--dynamic has no calibration --method or --percentile");
    if (cli_same_file(a->path, a->out))
        return cli_usage("quantize", "-o %s would overwrite the float model; write the quantized one elsewhere", a->out);
    return CLI_OK;
}

/* ---- calibration sets ---------------------------------------------------- */

static int cmp_str(const void *x, const void *y) { return strcmp(*(char *const *)x, *(char *const *)y); }

/* The entries of dir (sorted, hidden ones left out) that are folders
 * (want_dirs) or regular files; *n of them, malloc'd. NULL on error. */
static char **list_dir(const char *dir, bool want_dirs, int *n) {
    DIR *d = opendir(dir);
    *n = 0;
    if (!d) return NULL;
    int cap = 16;
    char **v = malloc(sizeof(char *) * (size_t)cap);
    struct dirent *e;
    while (v && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char p[4096];
        struct stat sb;
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        if (stat(p, &sb) || (want_dirs ? !S_ISDIR(sb.st_mode) : !S_ISREG(sb.st_mode))) continue;
        if (*n == cap) {
            char **w = realloc(v, sizeof(char *) * (size_t)(cap *= 2));
            if (!w) break;
            v = w;
        }
        v[(*n)++] = strdup(p);
    }
    closedir(d);
    if (v) qsort(v, (size_t)*n, sizeof(char *), cmp_str);
    return v;
}

static void free_list(char **v, int n) {
    for (int k = 0; k < n; k++) free(v[k]);
    free(v);
}

static bool has_ext(const char *p) {
    size_t l = strlen(p);
    return (l > 4 && (!strcmp(p + l - 4, ".npy") || !strcmp(p + l - 4, ".pb")));
}

/* Whether file (a path) is input k named name: NAME.npy/.pb (characters
 * outside [A-Za-z0-9._-] may be _), or input_K.npy/.pb. */
static bool names_input(const char *file, int32_t k, const char *name) {
    const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
    size_t bl = strlen(base), stem = bl > 4 && !strcmp(base + bl - 4, ".npy") ? bl - 4 : bl > 3 && !strcmp(base + bl - 3, ".pb") ? bl - 3 : 0;
    if (!stem) return false;
    char idx[32];
    snprintf(idx, sizeof(idx), "input_%d", k);
    if (stem == strlen(idx) && !strncmp(base, idx, stem)) return true;
    if (stem != strlen(name)) return false;
    for (size_t c = 0; c < stem; c++) {
        char want = name[c];
        bool plain = (want >= 'a' && want <= 'z') || (want >= 'A' && want <= 'Z') || (want >= '0' && want <= '9') ||
                     want == '.' || want == '_' || want == '-';
        if (base[c] != want && !(!plain && base[c] == '_')) return false;
    }
    return true;
}

/* Binds each model input to its file of the set (files[n_files]) and runs
 * one calibration. */
static int observe_set(seam_context *ctx, seam_quantizer *q, const seam_model *m, const char *set, char **files, int n_files,
                       bool single) {
    int32_t ni = seam_model_input_count(m);
    seam_tensor *t = calloc((size_t)ni + 1, sizeof(seam_tensor));
    int rc = t ? CLI_OK : CLI_BAD_INPUT;
    for (int f = 0; f < n_files && !rc; f++) {
        bool used = single;
        for (int32_t k = 0; k < ni && !used; k++) {
            seam_value_info vi;
            used = !seam_model_input(m, k, &vi) && names_input(files[f], k, vi.name);
        }
        if (!used && has_ext(files[f]))
            rc = (fprintf(stderr, "seam quantize: calibration file '%s' names no input of the model\n", files[f]), CLI_BAD_INPUT);
    }
    for (int32_t k = 0; k < ni && !rc; k++) {
        seam_value_info vi;
        seam_model_input(m, k, &vi);
        const char *file = single ? set : NULL;
        for (int f = 0; f < n_files && !file; f++)
            if (names_input(files[f], k, vi.name)) file = files[f];
        if (!file) {
            fprintf(stderr, "seam quantize: calibration set '%s' has no file for input '%s' (%s.npy, %s.pb or input_%d.pb)\n",
                    set, vi.name, vi.name, vi.name, k);
            rc = CLI_BAD_INPUT;
            break;
        }
        char err[512];
        if (!run_read_input(ctx, file, &t[k], err, sizeof(err))) {
            fprintf(stderr, "seam quantize: %s\n", err);
            rc = CLI_BAD_INPUT;
            break;
        }
        seam_status st = seam_quantizer_set_input(q, vi.name, (seam_dtype)t[k].dtype, t[k].rank, t[k].dims, t[k].data);
        if (st) {
            cli_fail("quantize", ctx, st);
            rc = CLI_BAD_INPUT;
        }
    }
    if (!rc) {
        seam_status st = seam_quantizer_observe(q);
        if (st) {
            fprintf(stderr, "seam quantize: calibration set '%s': ", set);
            cli_fail("quantize", ctx, st);
            rc = CLI_BAD_INPUT;
        }
    }
    for (int32_t k = 0; t && k < ni; k++) free(t[k].data);
    free(t);
    return rc;
}

static int calibrate(seam_context *ctx, seam_quantizer *q, const seam_model *m, const char *dir) {
    struct stat sb;
    if (stat(dir, &sb) || !S_ISDIR(sb.st_mode))
        return fprintf(stderr, "seam quantize: --calibration %s is not a folder\n", dir), CLI_BAD_INPUT;
    int nd = 0, nf = 0, rc = CLI_OK;
    char **dirs = list_dir(dir, true, &nd), **files = list_dir(dir, false, &nf);
    if (!dirs || !files) rc = (fprintf(stderr, "seam quantize: cannot read the folder %s\n", dir), CLI_BAD_INPUT);
    else if (nd) {
        for (int s = 0; s < nd && !rc; s++) {
            int n = 0;
            char **set = list_dir(dirs[s], false, &n);
            rc = set ? observe_set(ctx, q, m, dirs[s], set, n, false) : CLI_BAD_INPUT;
            free_list(set, n);
        }
    } else {
        int sets = 0;
        if (seam_model_input_count(m) != 1)
            rc = (fprintf(stderr, "seam quantize: the model has %d inputs: put each calibration set in a folder of its own "
                                 "under %s, one file per input\n", seam_model_input_count(m), dir), CLI_BAD_INPUT);
        for (int f = 0; f < nf && !rc; f++)
            if (has_ext(files[f])) rc = observe_set(ctx, q, m, files[f], NULL, 0, true), sets++;
        if (!rc && !sets) rc = (fprintf(stderr, "seam quantize: %s holds no calibration set (.npy or .pb files, or folders)\n", dir), CLI_BAD_INPUT);
    }
    free_list(dirs, nd);
    free_list(files, nf);
    return rc;
}

int cmd_quantize(int argc, char **argv) {
    qopts a;
    memset(&a, 0, sizeof(a));
    int rc = parse(&a, argc, argv);
    seam_context *ctx = NULL;
    seam_model *m = NULL;
    seam_quantizer *q = NULL;
    if (rc) goto done;
    if (seam_context_create(&ctx)) {
        rc = CLI_BAD_INPUT;
        goto done;
    }
    seam_status st = seam_model_load(ctx, a.path, &m);
    if (!st) st = seam_quantizer_create(m, &a.o, &q);
    if (st) {
        rc = cli_fail("quantize", ctx, st);
        goto done;
    }
    if (a.calib && (rc = calibrate(ctx, q, m, a.calib))) goto done;
    seam_quantize_stats qs;
    st = seam_quantizer_finish(q, &qs);
    if (!st) st = seam_model_save(m, a.out, NULL);
    if (st) {
        rc = cli_fail("quantize", ctx, st) == CLI_USAGE ? CLI_USAGE : CLI_BAD_INPUT;
        goto done;
    }
    if (!a.quiet) {
        const char *notes = seam_quantizer_notes(q);
        for (const char *p = notes; *p;) {
            const char *e = strchr(p, '\n');
            int len = e ? (int)(e - p) : (int)strlen(p);
            fprintf(stderr, "seam quantize: note: %.*s\n", len, p);
            p += len + (e ? 1 : 0);
        }
        if (a.o.mode == SEAM_QUANT_DYNAMIC)
            printf("quantized %d MatMul/Gemm dynamically (weights int8 %s); wrote %s\n", qs.dynamic_matmuls,
                   a.o.weights == SEAM_QUANT_PER_CHANNEL ? "per column" : "per tensor", a.out);
        else
            printf("quantized %d ops from %d calibration set%s (%s): %d activations uint8, %d weights int8/int32, "
                   "%d Relu/Clip absorbed; wrote %s\n",
                   qs.quantized_ops, qs.calibration_runs, qs.calibration_runs == 1 ? "" : "s",
                   a.o.method == SEAM_CALIB_PERCENTILE ? "percentile" : "minmax", qs.activations, qs.weights,
                   qs.removed_activations, a.out);
    }
done:
    seam_quantizer_free(q);
    seam_model_free(m);
    seam_context_free(ctx);
    for (int k = 0; k < a.n_exclude_buf; k++) free(a.exclude_buf[k]);
    return rc < 0 ? CLI_OK : rc;
}
