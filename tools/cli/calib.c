/* Calibration sets (calib.h). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "calib.h"
#include "cli.h"
#include "run.h"

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
        if (!(v[*n] = strdup(p))) break;
        (*n)++;
    }
    closedir(d);
    if (v) qsort(v, (size_t)*n, sizeof(char *), cmp_str);
    return v;
}

static void free_list(char **v, int n) {
    for (int k = 0; v && k < n; k++) free(v[k]);
    free(v);
}

static bool has_ext(const char *p) {
    size_t l = strlen(p);
    return (l > 4 && !strcmp(p + l - 4, ".npy")) || (l > 3 && !strcmp(p + l - 3, ".pb"));
}

/* Whether file (a path) is input k named name: NAME.npy/.pb (characters
 * outside [A-Za-z0-9._-] may be _), or input_K.npy/.pb. */
static bool names_input(const char *file, int32_t k, const char *name) {
    const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
    size_t bl = strlen(base);
    size_t stem = bl > 4 && !strcmp(base + bl - 4, ".npy") ? bl - 4 : bl > 3 && !strcmp(base + bl - 3, ".pb") ? bl - 3 : 0;
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

/* Reads set s (files[n_files], or the one file `set` for a single-input
 * model) into c->t[s * n_inputs ...]. */
static int read_set(const char *cmd, seam_context *ctx, cli_calib *c, int32_t s, const char *set, char **files,
                    int n_files, bool single) {
    for (int f = 0; f < n_files; f++) {
        bool used = false;
        for (int32_t k = 0; k < c->n_inputs && !used; k++) used = names_input(files[f], k, c->inputs[k]);
        const char *base = strrchr(files[f], '/') ? strrchr(files[f], '/') + 1 : files[f];
        if (!strncmp(base, "output_", 7)) continue; /* (ONNX's test data sets hold the expected outputs too) */
        if (!used && has_ext(files[f])) {
            fprintf(stderr, "seam %s: calibration file '%s' names no input of the model\n", cmd, files[f]);
            return CLI_BAD_INPUT;
        }
    }
    for (int32_t k = 0; k < c->n_inputs; k++) {
        const char *file = single ? set : NULL;
        for (int f = 0; f < n_files && !file; f++)
            if (names_input(files[f], k, c->inputs[k])) file = files[f];
        if (!file) {
            fprintf(stderr, "seam %s: calibration set '%s' has no file for input '%s' (%s.npy, %s.pb or input_%d.pb)\n",
                    cmd, set ? set : "", c->inputs[k], c->inputs[k], c->inputs[k], k);
            return CLI_BAD_INPUT;
        }
        char err[512];
        if (!run_read_input(ctx, file, NULL, &c->t[s * c->n_inputs + k], err, sizeof(err))) {
            fprintf(stderr, "seam %s: %s\n", cmd, err);
            return CLI_BAD_INPUT;
        }
    }
    return CLI_OK;
}

static bool grow_sets(cli_calib *c, int32_t n) {
    char **names = realloc(c->set_names, sizeof(char *) * (size_t)(n + 1));
    if (names) c->set_names = names;
    seam_tensor *t = names ? realloc(c->t, sizeof(seam_tensor) * (size_t)((n + 1) * c->n_inputs + 1)) : NULL;
    if (!t) return false;
    c->t = t;
    memset(c->t + n * c->n_inputs, 0, sizeof(seam_tensor) * (size_t)c->n_inputs);
    c->set_names[n] = NULL;
    c->n_slots = n + 1;
    return true;
}

int cli_calib_load(const char *cmd, seam_context *ctx, const seam_model *m, const char *dir, cli_calib *c) {
    memset(c, 0, sizeof(*c));
    struct stat sb;
    if (stat(dir, &sb) || !S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "seam %s: --calibration %s is not a folder\n", cmd, dir);
        return CLI_BAD_INPUT;
    }
    c->n_inputs = seam_model_input_count(m);
    c->inputs = calloc((size_t)c->n_inputs + 1, sizeof(char *));
    if (!c->inputs) return CLI_BAD_INPUT;
    for (int32_t k = 0; k < c->n_inputs; k++) {
        seam_value_info vi;
        seam_model_input(m, k, &vi);
        c->inputs[k] = vi.name;
    }
    int nd = 0, nf = 0, rc = CLI_OK;
    char **dirs = list_dir(dir, true, &nd), **files = list_dir(dir, false, &nf);
    if (!dirs || !files) {
        fprintf(stderr, "seam %s: cannot read the folder %s\n", cmd, dir);
        rc = CLI_BAD_INPUT;
    } else if (nd) {
        for (int s = 0; s < nd && !rc; s++) {
            int n = 0;
            char **set = list_dir(dirs[s], false, &n);
            if (!set || !grow_sets(c, c->n_sets)) rc = CLI_BAD_INPUT;
            else if (!(rc = read_set(cmd, ctx, c, c->n_sets, dirs[s], set, n, false))) c->set_names[c->n_sets++] = strdup(dirs[s]);
            free_list(set, n);
        }
    } else if (c->n_inputs != 1) {
        fprintf(stderr, "seam %s: the model has %d inputs: put each calibration set in a folder of its own under %s, one "
                "file per input\n", cmd, c->n_inputs, dir);
        rc = CLI_BAD_INPUT;
    } else {
        for (int f = 0; f < nf && !rc; f++) {
            if (!has_ext(files[f])) continue;
            if (!grow_sets(c, c->n_sets)) rc = CLI_BAD_INPUT;
            else if (!(rc = read_set(cmd, ctx, c, c->n_sets, files[f], NULL, 0, true))) c->set_names[c->n_sets++] = strdup(files[f]);
        }
    }
    if (!rc && !c->n_sets) {
        fprintf(stderr, "seam %s: %s holds no calibration set (.npy or .pb files, or folders)\n", cmd, dir);
        rc = CLI_BAD_INPUT;
    }
    free_list(dirs, nd);
    free_list(files, nf);
    return rc;
}

void cli_calib_free(cli_calib *c) {
    for (int32_t k = 0; c->t && k < c->n_slots * c->n_inputs; k++) free(c->t[k].data);
    for (int32_t s = 0; c->set_names && s < c->n_sets; s++) free(c->set_names[s]);
    free(c->set_names);
    free(c->t);
    free(c->inputs);
    memset(c, 0, sizeof(*c));
}

int cli_calib_observe(const char *cmd, seam_context *ctx, seam_quantizer *q, const cli_calib *c) {
    for (int32_t s = 0; s < c->n_sets; s++) {
        seam_status st = SEAM_STATUS_OK;
        for (int32_t k = 0; k < c->n_inputs && !st; k++) {
            const seam_tensor *t = &c->t[s * c->n_inputs + k];
            st = seam_quantizer_set_input(q, c->inputs[k], (seam_dtype)t->dtype, t->rank, t->dims, t->data);
        }
        if (!st) st = seam_quantizer_observe(q);
        if (st) {
            fprintf(stderr, "seam %s: calibration set '%s': ", cmd, c->set_names[s]);
            cli_fail(cmd, ctx, st);
            return CLI_BAD_INPUT;
        }
    }
    return CLI_OK;
}

seam_status cli_calib_bind(const cli_calib *c, int32_t s, seam_session *session) {
    seam_status st = SEAM_STATUS_OK;
    for (int32_t k = 0; k < c->n_inputs && !st; k++) {
        const seam_tensor *t = &c->t[s * c->n_inputs + k];
        st = seam_session_set_input(session, c->inputs[k], (seam_dtype)t->dtype, t->rank, t->dims, t->data);
    }
    return st;
}
