/*
 * One session on a model, run several times with inputs of different
 * shapes: the driver of tests/checks/check_dynamic.py, which checks what it
 * prints against torch.
 *
 * usage: dynamic_session MODEL [--cache N] RUN...
 *   RUN is NAME=AxBxC:IN.f32:OUT.f32 (one float32 input, raw little-endian
 *   bytes; the first output is written to OUT.f32)
 *
 * After each run it prints one line:
 *   run K shape AxBxC: out AxBxC compiles C run_compiles R hits H evictions E cpu_shapes S
 * and at the end the session's log. Exit 1 when a run fails (the error on
 * stderr), 2 for bad usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "seam.h"
#include "seam_backend.h"

static void *read_file(const char *path, size_t want) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    void *p = malloc(want ? want : 1);
    if (p && fread(p, 1, want, f) != want) free(p), p = NULL;
    fclose(f);
    return p;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: dynamic_session MODEL [--cache N] NAME=AxBxC:IN.f32:OUT.f32...\n");
        return 2;
    }
    seam_context *ctx = NULL;
    seam_model *m = NULL;
    seam_session *s = NULL;
    int rc = 1, first = 2;
    int32_t cache = 0;
    if (argc > 4 && !strcmp(argv[2], "--cache")) cache = atoi(argv[3]), first = 4;
    if (seam_context_create(&ctx) || seam_model_load(ctx, argv[1], &m)) {
        fprintf(stderr, "dynamic_session: %s\n", ctx ? seam_context_last_error(ctx) : "no context");
        goto done;
    }
    const seam_backend *targets[] = {seam_backend_dnnl()};
    seam_session_options o = {0};
    o.targets = targets;
    o.n_targets = 1;
    if (seam_session_create(m, &o, &s) || (cache > 0 && seam_session_set_shape_cache(s, cache))) {
        fprintf(stderr, "dynamic_session: %s\n", seam_context_last_error(ctx));
        goto done;
    }
    for (int a = first; a < argc; a++) {
        char name[256], in[1024], out[1024], shape[256];
        int64_t dims[8];
        int32_t rank = 0;
        const char *eq = strchr(argv[a], '='), *c1 = eq ? strchr(eq, ':') : NULL, *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!eq || !c2 || eq - argv[a] >= 256 || c1 - eq > 255 || c2 - c1 > 1023 || strlen(c2) > 1023) {
            fprintf(stderr, "dynamic_session: bad run '%s'\n", argv[a]);
            rc = 2;
            goto done;
        }
        snprintf(name, sizeof(name), "%.*s", (int)(eq - argv[a]), argv[a]);
        snprintf(shape, sizeof(shape), "%.*s", (int)(c1 - eq - 1), eq + 1);
        snprintf(in, sizeof(in), "%.*s", (int)(c2 - c1 - 1), c1 + 1);
        snprintf(out, sizeof(out), "%s", c2 + 1);
        int64_t numel = 1;
        for (char *p = shape; *p && rank < 8;) {
            dims[rank] = strtoll(p, &p, 10);
            numel *= dims[rank++];
            if (*p == 'x') p++;
            else if (*p) break;
        }
        float *x = read_file(in, (size_t)numel * sizeof(float));
        if (!x) {
            fprintf(stderr, "dynamic_session: cannot read %lld floats from %s\n", (long long)numel, in);
            goto done;
        }
        seam_status st = seam_session_set_input(s, name, SEAM_DTYPE_FLOAT32, rank, dims, x);
        if (!st) st = seam_session_run(s);
        free(x);
        if (st) {
            fprintf(stderr, "dynamic_session: run %d: %s\n", a - first, seam_context_last_error(ctx));
            goto done;
        }
        seam_tensor_view y;
        seam_session_stats stats;
        seam_session_output(s, 0, &y);
        seam_session_stats_get(s, &stats);
        FILE *f = fopen(out, "wb");
        if (!f || fwrite(y.data, 1, y.nbytes, f) != y.nbytes) {
            fprintf(stderr, "dynamic_session: cannot write %s\n", out);
            if (f) fclose(f);
            goto done;
        }
        fclose(f);
        printf("run %d shape %s: out ", a - first, shape);
        for (int32_t d = 0; d < y.rank; d++) printf("%s%lld", d ? "x" : "", (long long)y.dims[d]);
        printf(" compiles %lld run_compiles %lld hits %lld evictions %lld cpu_shapes %lld\n", (long long)stats.compiles,
               (long long)stats.run_compiles, (long long)stats.cache_hits, (long long)stats.evictions,
               (long long)stats.cpu_shapes);
    }
    printf("log:\n%s", seam_session_log(s));
    rc = 0;
done:
    seam_session_free(s);
    seam_model_free(m);
    seam_context_free(ctx);
    return rc;
}
