#include "targets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/backend.h"
#include "cli.h"

void targets_init(cli_targets *t) {
    memset(t, 0, sizeof(*t));
    t->opts = seam_partition_defaults();
}

#define TUSAGE TARGETS_USAGE

/* --no-rewrite and --target-memory NAME=SIZE: 1 when taken, TUSAGE on a
 * bad value, 0 for another option. */
static int placement_option(cli_targets *t, const char *cmd, int argc, char **argv, int *k) {
    const char *a = argv[*k];
    if (strcmp(a, "--no-rewrite") == 0) {
        t->no_rewrite = true;
        return 1;
    }
    bool threads = strcmp(a, "--target-threads") == 0;
    if (strcmp(a, "--target-memory") != 0 && !threads) return 0;
    const char *v = *k + 1 < argc ? argv[++*k] : NULL;
    const char *eq = v ? strrchr(v, '=') : NULL;
    if (!eq || eq == v || !eq[1] || (threads ? t->n_thread_args : t->n_memory_args) >= MAX_TARGETS) {
        if (threads) cli_usage(cmd, "--target-threads wants NAME=N (N >= 1), got '%s'", v ? v : "");
        else cli_usage(cmd, "--target-memory wants NAME=SIZE (bytes, or with K, M or G), got '%s'", v ? v : "");
        return TUSAGE;
    }
    if (threads) t->thread_args[t->n_thread_args++] = v;
    else t->memory_args[t->n_memory_args++] = v;
    return 1;
}

int targets_option(cli_targets *t, const char *cmd, int argc, char **argv, int *k) {
    const char *a = argv[*k];
    int pr = precision_option(t, cmd, argc, argv, k);
    if (pr) return pr;
    if (strcmp(a, "--no-fold") == 0) {
        t->no_fold = true;
        return 1;
    }
    int placement = placement_option(t, cmd, argc, argv, k);
    if (placement) return placement;
    if (strcmp(a, "--no-jit") == 0) {
        t->no_jit = true;
        return 1;
    }
    if (strcmp(a, "--pad") == 0) {
        const char *v = *k + 1 < argc ? argv[++*k] : NULL;
        const char *colon = v ? strrchr(v, ':') : NULL;
        if (!colon || colon == v || !colon[1] || t->n_pads >= 64) {
            cli_usage(cmd, "--pad wants NAME:AXIS or NAME:AXIS=VALUE (at most 64), got '%s'", v ? v : "");
            return TUSAGE;
        }
        t->pads[t->n_pads++] = v;
        return 1;
    }
    if (strcmp(a, "--bucket") == 0) {
        const char *v = *k + 1 < argc ? argv[++*k] : NULL;
        const char *eq = v ? strrchr(v, '=') : NULL;
        if (!eq || eq == v || !eq[1] || t->n_buckets >= 64) {
            cli_usage(cmd, "--bucket wants NAME=AxBxC (at most 64), got '%s'", v ? v : "");
            return TUSAGE;
        }
        t->buckets[t->n_buckets++] = v;
        return 1;
    }
    if (strcmp(a, "--target-option") == 0) {
        if (*k + 1 >= argc || t->n_target_options >= 64) {
            cli_usage(cmd, "--target-option needs a value (at most 64)");
            return TUSAGE;
        }
        t->target_options[t->n_target_options++] = argv[++*k];
        return 1;
    }
    if (strcmp(a, "--placement") == 0) {
        const char *v = *k + 1 < argc ? argv[++*k] : NULL;
        t->measured = v && strcmp(v, "measured") == 0;
        if (v && (strcmp(v, "cost") == 0 || t->measured)) t->opts.placement = SEAM_PLACEMENT_COST;
        else if (v && strcmp(v, "capability") == 0) t->opts.placement = SEAM_PLACEMENT_CAPABILITY;
        else {
            cli_usage(cmd, "--placement must be cost, capability or measured%s%s%s", v ? ", not '" : "", v ? v : "",
                      v ? "'" : "");
            return TUSAGE;
        }
        return 1;
    }
    if (strcmp(a, "--backend-lib") == 0) {
        if (*k + 1 >= argc || t->n_libs >= MAX_TARGETS) {
            cli_usage(cmd, "--backend-lib needs a path (at most %d)", MAX_TARGETS);
            return TUSAGE;
        }
        t->libs[t->n_libs++] = argv[++*k];
        return 1;
    }
    static const char *const names[] = {"--target", "--min-support", "--min-subgraph-size", "--max-subgraph-count",
                                        "--on-violation", "--cpu-ops", "--pin", "--shape"};
    int which = -1;
    for (int n = 0; n < 8; n++)
        if (strcmp(a, names[n]) == 0) which = n;
    if (which < 0) return 0;
    if (*k + 1 >= argc) {
        cli_usage(cmd, "%s needs a value", a);
        return TUSAGE;
    }
    const char *v = argv[++*k];
    char *end;
    switch (which) {
    case 7:
        if (t->n_shapes >= 64) {
            cli_usage(cmd, "too many --shape options");
            return TUSAGE;
        }
        t->shapes[t->n_shapes++] = v;
        return 1;
    case 0:
        if (t->n_paths >= MAX_TARGETS) {
            cli_usage(cmd, "at most %d targets", MAX_TARGETS);
            return TUSAGE;
        }
        t->paths[t->n_paths++] = v;
        return 1;
    case 1: {
        double f = strtod(v, &end);
        if (*end || end == v || !(f >= 0 && f <= 1)) {
            cli_usage(cmd, "--min-support wants a fraction from 0 to 1, got '%s'", v);
            return TUSAGE;
        }
        t->opts.min_support = f;
        return 1;
    }
    case 2:
    case 3: {
        long n = strtol(v, &end, 10);
        if (*end || end == v || n < (which == 2 ? 1 : 1) || n > 1000000000) {
            cli_usage(cmd, "%s wants a whole number >= 1, got '%s'", a, v);
            return TUSAGE;
        }
        if (which == 2) t->opts.min_subgraph_size = (int32_t)n;
        else t->opts.max_subgraph_count = (int32_t)n;
        return 1;
    }
    case 4:
        if (strcmp(v, "fallback") == 0) t->opts.on_violation = SEAM_ON_VIOLATION_FALLBACK;
        else if (strcmp(v, "error") == 0) t->opts.on_violation = SEAM_ON_VIOLATION_ERROR;
        else {
            cli_usage(cmd, "--on-violation wants fallback or error, got '%s'", v);
            return TUSAGE;
        }
        return 1;
    case 5: {
        free(t->cpu_ops_buf);
        t->cpu_ops_buf = strdup(v);
        t->opts.n_cpu_ops = 0;
        for (char *s = strtok(t->cpu_ops_buf, ","); s && t->opts.n_cpu_ops < 256; s = strtok(NULL, ","))
            if (*s) t->cpu_ops[t->opts.n_cpu_ops++] = s;
        t->opts.cpu_ops = t->cpu_ops;
        return 1;
    }
    case 6: {
        const char *eq = strrchr(v, '=');
        if (!eq || eq == v || !eq[1]) {
            cli_usage(cmd, "--pin wants NODE=TARGET, got '%s'", v);
            return TUSAGE;
        }
        if (t->opts.n_pins >= MAX_PINS) {
            cli_usage(cmd, "at most %d pins", MAX_PINS);
            return TUSAGE;
        }
        t->pins[t->opts.n_pins++] = (seam_pin){strndup(v, (size_t)(eq - v)), eq + 1};
        t->opts.pins = t->pins;
        return 1;
    }
    }
    return 0;
}

bool cli_parse_size(const char *s, int64_t *out) {
    char *end;
    double size = strtod(s, &end);
    double unit = *end == 'K' || *end == 'k' ? 1024.0 : *end == 'M' ? 1048576.0 : *end == 'G' ? 1073741824.0 : 1.0;
    if (unit > 1) end++;
    if (end == s || *end || !(size >= 0) || size * unit > 9e18) return false;
    *out = (int64_t)(size * unit);
    return true;
}

/* Each target's memory: a rules file's "memory_bytes", or --target-memory
 * NAME=SIZE (which wins); an unknown name or a bad size is a usage error. */
static int targets_memory(cli_targets *t, const char *cmd) {
    bool any = false;
    for (int32_t k = 0; k < t->opts.n_targets; k++) any |= (t->memory[k] = seam_rules_memory_bytes(t->list[k])) > 0;
    for (int32_t a = 0; a < t->n_memory_args; a++) {
        const char *v = t->memory_args[a], *eq = strrchr(v, '=');
        int64_t size;
        if (!cli_parse_size(eq + 1, &size))
            return cli_usage(cmd, "--target-memory %s: the size must be a number of bytes, or with K, M or G", v);
        int32_t k = 0;
        while (k < t->opts.n_targets && (strlen(t->list[k]->name) != (size_t)(eq - v) || strncmp(t->list[k]->name, v, (size_t)(eq - v))))
            k++;
        if (k == t->opts.n_targets) return cli_usage(cmd, "--target-memory %s: no --target is named '%.*s'", v, (int)(eq - v), v);
        t->memory[k] = size;
        any |= t->memory[k] > 0;
    }
    t->opts.memory_bytes = any ? t->memory : NULL;
    return CLI_OK;
}

/* The index K of a target named BASE:K (an instance), or -1; *base_len
 * the length of BASE. A file of that name is no instance. */
static int32_t instance_index(const char *p, size_t *base_len) {
    const char *colon = strrchr(p, ':');
    if (!colon || colon == p || !colon[1] || strlen(colon + 1) > 6 || access(p, F_OK) == 0) return -1;
    for (const char *c = colon + 1; *c; c++)
        if (*c < '0' || *c > '9') return -1;
    *base_len = (size_t)(colon - p);
    return atoi(colon + 1);
}

/* The backend a --target names (not an instance): built in, a --backend-lib
 * library's, a plug-in found by name, or a rules file (kept in *loaded).
 * NULL after saying why. */
static const seam_backend *target_of(cli_targets *t, const char *cmd, seam_context *ctx, const char *p,
                                     const seam_backend *const *libs, int32_t n_libs, seam_backend **loaded) {
    const seam_backend *found = NULL;
    for (int32_t j = 0; j < n_libs && !found; j++)
        if (strcmp(libs[j]->name, p) == 0) found = libs[j];
    if (!found && strcmp(p, "dnnl") == 0 && access(p, F_OK) != 0) {
#if SEAM_WITH_DNNL
        return seam_backend_dnnl(); /* built in */
#else
        fprintf(stderr,
                "seam %s: --target dnnl: this seam was built without oneDNN (-DSEAM_WITH_DNNL=OFF); its built-in "
                "targets are: %s (rules files and --backend-lib add more)\n",
                cmd, SEAM_TARGETS_BUILT);
        return NULL;
#endif
    }
    if (!found && access(p, F_OK) != 0 && !strchr(p, '/')) { /* a plug-in by name (seam_backend_find) */
        seam_status st = seam_backend_find(ctx, p, &found);
        if (st && (st != SEAM_STATUS_IO_ERROR || !strchr(p, '.'))) return cli_fail(cmd, ctx, st), NULL;
        if (found) t->avail[t->n_avail++] = found;
    }
    if (!found) { /* a rules file */
        seam_status st = seam_rules_load(ctx, p, loaded);
        if (st) return cli_fail(cmd, ctx, st), NULL;
        found = *loaded;
        t->avail[t->n_avail++] = found;
    }
    return found;
}

/* A target's options of its own: "threads=N" (--target-threads NAME=N)
 * and, on dnnl and its instances, "precision=bf16" (--precision bf16):
 * an instance made for target k under its own name, which seam_plan_apply
 * writes first into its subgraphs' target_options. */
static int own_options(cli_targets *t, const char *cmd, seam_context *ctx, int32_t k, const char *threads) {
    char opt[2][32];
    const char *opts[2];
    int32_t n = 0;
    if (threads) snprintf(opt[n], sizeof(opt[n]), "threads=%s", threads), opts[n] = opt[n], n++;
    bool bf16 = t->precision && !strcmp(t->precision, "bf16") && backend_instance_base(t->list[k]) == seam_backend_dnnl();
    if (bf16) snprintf(opt[n], sizeof(opt[n]), "precision=bf16"), opts[n] = opt[n], n++;
    if (!n) return CLI_OK;
    const char *colon = strrchr(t->list[k]->name, ':'); /* an instance keeps its index */
    int32_t index = t->instances[k] && colon ? atoi(colon + 1) : -1;
    seam_backend *inst = NULL;
    seam_status st = seam_backend_instance(ctx, backend_instance_base(t->list[k]), index, opts, n, &inst);
    if (st) return cli_fail(cmd, ctx, st), CLI_BAD_INPUT;
    bool replaced = false; /* the instance it replaces leaves the sessions' list too */
    for (int32_t j = 0; j < t->n_avail; j++)
        if (t->avail[j] == t->list[k] && t->instances[k]) t->avail[j] = inst, replaced = true;
    if (!replaced) t->avail[t->n_avail++] = inst;
    seam_backend_free(t->instances[k]);
    t->list[k] = t->instances[k] = inst;
    return CLI_OK;
}

/* --target-threads NAME=N and --precision bf16, after the list is made. */
static int targets_own_options(cli_targets *t, const char *cmd, seam_context *ctx) {
    const char *threads[MAX_TARGETS] = {NULL};
    char values[MAX_TARGETS][16];
    for (int32_t a = 0; a < t->n_thread_args; a++) {
        const char *v = t->thread_args[a], *eq = strrchr(v, '=');
        char *end;
        long n = strtol(eq + 1, &end, 10);
        if (*end || n < 1 || n > 4096) return cli_usage(cmd, "--target-threads %s: N must be a whole number from 1", v);
        int32_t k = 0;
        while (k < t->opts.n_targets && (strlen(t->list[k]->name) != (size_t)(eq - v) || strncmp(t->list[k]->name, v, (size_t)(eq - v))))
            k++;
        if (k == t->opts.n_targets) return cli_usage(cmd, "--target-threads %s: no --target is named '%.*s'", v, (int)(eq - v), v);
        snprintf(values[k], sizeof(values[k]), "%ld", n);
        threads[k] = values[k];
    }
    bool bf16 = t->precision && !strcmp(t->precision, "bf16"), any_dnnl = false;
    for (int32_t k = 0; k < t->opts.n_targets; k++) any_dnnl |= backend_instance_base(t->list[k]) == seam_backend_dnnl();
    if (bf16 && !any_dnnl)
        return cli_usage(cmd, "--precision bf16 runs on dnnl's subgraphs (Conv, MatMul and Gemm in bfloat16): give "
                              "--target dnnl");
    if (bf16 && !seam_backend_dnnl_bf16()) {
        fprintf(stderr,
                "seam %s: --precision bf16: this CPU has neither AVX512_BF16 nor AMX (as oneDNN sees it; "
                "ONEDNN_MAX_CPU_ISA may limit it): oneDNN would emulate bfloat16, slower than float32. Run in fp32, "
                "or int8 (--precision int8 --calibration DIR)\n",
                cmd);
        return CLI_BAD_INPUT;
    }
    for (int32_t k = 0; k < t->opts.n_targets; k++) {
        int rc = own_options(t, cmd, ctx, k, threads[k]);
        if (rc) return rc;
    }
    return CLI_OK;
}

int targets_load(cli_targets *t, const char *cmd, seam_context *ctx) {
    if (t->targets_loaded) return CLI_OK; /* (--max-error loads them early) */
    t->targets_loaded = true;
    const seam_backend *libs[MAX_TARGETS];
    int32_t n_libs = 0, n = 0;
    for (int32_t k = 0; k < t->n_libs; k++) {
        seam_status st = seam_backend_load_library(ctx, t->libs[k], &libs[n_libs]);
        if (st) return cli_fail(cmd, ctx, st), CLI_BAD_INPUT;
        t->avail[t->n_avail++] = libs[n_libs++];
    }
    for (int32_t k = 0; k < t->n_paths; k++) {
        const char *p = t->paths[k];
        if (strcmp(p, "cpu") == 0) continue;
        size_t base_len = 0;
        int32_t index = instance_index(p, &base_len);
        char base[4096];
        snprintf(base, sizeof(base), "%.*s", (int)(index >= 0 ? base_len : strlen(p)), p);
        if (index >= 0 && !strcmp(base, "cpu"))
            return cli_usage(cmd, "--target %s: cpu has no instances (it is always the last target; --threads sets its threads)", p);
        const seam_backend *found = target_of(t, cmd, ctx, base, libs, n_libs, &t->loaded[k]);
        if (!found) return CLI_BAD_INPUT;
        if (index >= 0) { /* an instance: BASE:K */
            seam_status st = seam_backend_instance(ctx, found, index, NULL, 0, &t->instances[n]);
            if (st) return cli_fail(cmd, ctx, st), CLI_BAD_INPUT;
            found = t->instances[n];
            t->avail[t->n_avail++] = found;
        }
        for (int32_t j = 0; j < n; j++)
            if (!strcmp(t->list[j]->name, found->name))
                return cli_usage(cmd, "--target %s: a target named '%s' is given twice (instances of one device: "
                                      "--target %s:0 --target %s:1)", p, found->name, base, base);
        t->list[n++] = found;
    }
    t->opts.targets = t->list;
    t->opts.n_targets = n;
    int rc = targets_own_options(t, cmd, ctx);
    return rc ? rc : targets_memory(t, cmd);
}

seam_status targets_partition(cli_targets *t, seam_model *m, int32_t n_threads, seam_plan **plan) {
    seam_status st = t->no_rewrite ? SEAM_STATUS_OK : seam_model_rewrite(m, &t->opts, NULL);
    if (st) return st;
    if (!t->measured) return seam_partition(m, &t->opts, plan);
    return seam_partition_measured(m, &t->opts, t->target_options, t->n_target_options, n_threads, 0, plan);
}

/* A --bucket against the model: an input of that name, of that rank, with
 * its fixed dims. CLI_OK, or CLI_BAD_INPUT after saying why. */
static int check_bucket(const char *cmd, seam_model *m, const char *arg) {
    const char *eq = strrchr(arg, '=');
    int64_t dims[16];
    int32_t rank = 0;
    for (const char *p = eq + 1; *p;) {
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end == p || v < 0 || rank >= 16) {
            fprintf(stderr, "seam %s: --bucket %s: the shape must be AxBxC with dims >= 0\n", cmd, arg);
            return CLI_BAD_INPUT;
        }
        dims[rank++] = v;
        p = *end == 'x' && end[1] ? end + 1 : end;
        if (*p && p == end) {
            fprintf(stderr, "seam %s: --bucket %s: the shape must be AxBxC with dims >= 0\n", cmd, arg);
            return CLI_BAD_INPUT;
        }
    }
    int32_t n = seam_model_input_count(m);
    for (int32_t k = 0; k < n; k++) {
        seam_value_info vi;
        if (seam_model_input(m, k, &vi) || strlen(vi.name) != (size_t)(eq - arg) || strncmp(vi.name, arg, (size_t)(eq - arg)))
            continue;
        char want[256];
        size_t off = (size_t)snprintf(want, sizeof(want), "[");
        for (int32_t d = 0; d < vi.rank && off < sizeof(want); d++)
            off += vi.dims[d] >= 0 ? (size_t)snprintf(want + off, sizeof(want) - off, "%s%lld", d ? "," : "", (long long)vi.dims[d])
                                   : (size_t)snprintf(want + off, sizeof(want) - off, "%s%s", d ? "," : "",
                                                      vi.dim_params && vi.dim_params[d] ? vi.dim_params[d] : "?");
        if (off < sizeof(want)) snprintf(want + off, sizeof(want) - off, "]");
        bool ok = vi.rank < 0 || vi.rank == rank;
        for (int32_t d = 0; ok && vi.rank >= 0 && d < rank; d++) ok = vi.dims[d] < 0 || vi.dims[d] == dims[d];
        if (!ok) {
            fprintf(stderr, "seam %s: --bucket %s contradicts the model's input '%s' %s (its rank and fixed dims)\n", cmd, arg,
                    vi.name, want);
            return CLI_BAD_INPUT;
        }
        return CLI_OK;
    }
    fprintf(stderr, "seam %s: --bucket %s: the model has no input '%.*s'\n", cmd, arg, (int)(eq - arg), arg);
    return CLI_BAD_INPUT;
}

/* A --pad against the model and the buckets: an input of that name with
 * --bucket shapes, AXIS one of its symbolic dims, VALUE a number. CLI_OK,
 * or CLI_BAD_INPUT after saying why. */
static int check_pad(const char *cmd, const cli_targets *t, seam_model *m, const char *arg) {
    const char *colon = strrchr(arg, ':');
    char *end;
    long axis = strtol(colon + 1, &end, 10);
    if (end == colon + 1 || (*end && *end != '=')) {
        fprintf(stderr, "seam %s: --pad %s: AXIS must be a whole number\n", cmd, arg);
        return CLI_BAD_INPUT;
    }
    if (*end == '=') {
        char *vend;
        strtod(end + 1, &vend);
        if (vend == end + 1 || *vend) {
            fprintf(stderr, "seam %s: --pad %s: VALUE must be a number\n", cmd, arg);
            return CLI_BAD_INPUT;
        }
    }
    size_t len = (size_t)(colon - arg);
    bool bucketed = false;
    for (int32_t k = 0; k < t->n_buckets; k++) bucketed |= !strncmp(t->buckets[k], arg, len) && t->buckets[k][len] == '=';
    int32_t n = seam_model_input_count(m);
    for (int32_t k = 0; k < n; k++) {
        seam_value_info vi;
        if (seam_model_input(m, k, &vi) || strlen(vi.name) != len || strncmp(vi.name, arg, len)) continue;
        if (vi.rank < 0 || axis < 0 || axis >= vi.rank) {
            fprintf(stderr, "seam %s: --pad %s: input '%s' has no axis %ld (its rank is %d)\n", cmd, arg, vi.name, axis,
                    vi.rank);
            return CLI_BAD_INPUT;
        }
        if (vi.dims[axis] >= 0) {
            fprintf(stderr, "seam %s: --pad %s: axis %ld of input '%s' is fixed (%lld), not symbolic: there is nothing "
                    "to pad\n", cmd, arg, axis, vi.name, (long long)vi.dims[axis]);
            return CLI_BAD_INPUT;
        }
        if (!bucketed) {
            fprintf(stderr, "seam %s: --pad %s: give --bucket shapes for '%s' to pad up to\n", cmd, arg, vi.name);
            return CLI_BAD_INPUT;
        }
        return CLI_OK;
    }
    fprintf(stderr, "seam %s: --pad %s: the model has no input '%.*s'\n", cmd, arg, (int)len, arg);
    return CLI_BAD_INPUT;
}

int targets_apply_shapes(cli_targets *t, const char *cmd, seam_context *ctx, seam_model *m) {
    for (int32_t k = 0; k < t->n_shapes; k++) {
        int rc = cli_set_shape(cmd, ctx, m, t->shapes[k]);
        if (rc) return rc;
    }
    /* buckets and --no-jit travel to seam_plan_apply as target options */
    int32_t nb = t->n_buckets, np = t->n_pads;
    for (int32_t k = 0; k < nb + np + (t->no_jit ? 1 : 0); k++) {
        int rc = k < nb ? check_bucket(cmd, m, t->buckets[k]) : k < nb + np ? check_pad(cmd, t, m, t->pads[k - nb]) : CLI_OK;
        if (rc) return rc;
        const char *arg = k < nb ? t->buckets[k] : k < nb + np ? t->pads[k - nb] : "";
        size_t len = strlen(arg) + 32;
        char *o = t->n_target_options < 64 ? malloc(len) : NULL;
        if (!o) {
            fprintf(stderr, "seam %s: too many --bucket, --pad and --target-option options\n", cmd);
            return CLI_BAD_INPUT;
        }
        if (k < nb) snprintf(o, len, "seam.bucket=%s", arg);
        else if (k < nb + np) snprintf(o, len, "seam.pad=%s", arg);
        else snprintf(o, len, "seam.jit=off");
        t->bucket_opts[k] = o;
        t->target_options[t->n_target_options++] = o;
    }
    int rc = targets_precision(t, cmd, ctx, m);
    if (rc) return rc;
    if (!t->no_fold) {
        seam_status st = seam_model_fold(m, NULL);
        if (st) return cli_fail(cmd, ctx, st), CLI_BAD_INPUT;
        /* QDQ units for the targets to take whole, in int8 (the CPU's
         * QLinear kernels run those no target takes) */
        seam_qdq_stats q;
        st = seam_model_fuse_qdq(m, SEAM_QDQ_UNITS | SEAM_QDQ_FOLD, &q);
        if (st) return cli_fail(cmd, ctx, st), CLI_BAD_INPUT;
        cli_qdq_note(cmd, m, &q, t->n_paths > 0);
    }
    return CLI_OK;
}

/* What became of a quantized model's QDQ units, said once: run in int8 on
 * the targets that take them, or on the CPU's int8 kernels. */
void cli_qdq_note(const char *cmd, seam_model *m, const seam_qdq_stats *q, bool targets) {
    (void)m;
    int32_t n = q->conv_units + q->matmul_units + q->gemm_units;
    if (!n) return;
    fprintf(stderr,
            "seam %s: note: quantized model: %d QDQ units (DequantizeLinear -> Conv/MatMul/Gemm -> QuantizeLinear) "
            "became %d QLinearConv (%d of them Gemms, as 1x1 convolutions) and %d QLinearMatMul nodes, each placed "
            "whole and run in int8%s\n",
            cmd, n, q->conv_units + q->gemm_units, q->gemm_units, q->matmul_units,
            targets ? "" : " on the CPU's int8 kernels (exact, but slower than oneDNN's: give --target dnnl)");
}

void targets_for_sessions(cli_targets *t) {
    bool has_dnnl = false;
    for (int32_t k = 0; k < t->n_avail; k++) has_dnnl |= t->avail[k] == seam_backend_dnnl();
    if (!has_dnnl && t->n_avail < (int32_t)(sizeof(t->avail) / sizeof(t->avail[0]))) t->avail[t->n_avail++] = seam_backend_dnnl();
}

void targets_free(cli_targets *t) {
    for (int32_t k = 0; k < MAX_TARGETS; k++) seam_backend_free(t->instances[k]); /* before their bases */
    for (int32_t k = 0; k < MAX_TARGETS; k++) seam_backend_free(t->loaded[k]);
    for (int32_t k = 0; k < t->opts.n_pins; k++) free((char *)t->pins[k].node_name);
    free(t->cpu_ops_buf);
    for (int32_t k = 0; k < 129; k++) free(t->bucket_opts[k]);
}
