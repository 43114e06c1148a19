/* seam: the command-line tool. One function per subcommand. */
#include <errno.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

int cli_usage(const char *cmd, const char *fmt, ...) {
    fprintf(stderr, "seam %s: ", cmd);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see 'seam %s --help')\n", cmd);
    return CLI_USAGE;
}

/* A bad argument is bad usage (2); everything else is bad input (1): the
 * model, a file, the data, or a run that could not be done with them
 * (RUN_FAILED, OUT_OF_MEMORY). Commands whose arguments were all checked
 * before the call (run, after its options) map every failure to 1. */
static int exit_code(seam_status st) {
    switch (st) {
    case SEAM_STATUS_INVALID_ARGUMENT:
        return CLI_USAGE;
    case SEAM_STATUS_OK:
    case SEAM_STATUS_IO_ERROR:
    case SEAM_STATUS_PARSE_ERROR:
    case SEAM_STATUS_INVALID_MODEL:
    case SEAM_STATUS_UNSUPPORTED:
    case SEAM_STATUS_OUT_OF_MEMORY:
    case SEAM_STATUS_INTERNAL:
    case SEAM_STATUS_RUN_FAILED:
        return CLI_BAD_INPUT;
    }
    return CLI_BAD_INPUT;
}

int cli_fail(const char *cmd, seam_context *ctx, seam_status st) {
    fprintf(stderr, "seam %s: %s: %s\n", cmd, seam_status_string(st), seam_context_last_error(ctx));
    return exit_code(st);
}

int cli_set_shape(const char *cmd, seam_context *ctx, seam_model *m, const char *arg) {
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || !eq[1]) return cli_usage(cmd, "--shape wants NAME=AxBxC, got '%s'", arg);
    char name[512];
    size_t len = (size_t)(eq - arg);
    if (len >= sizeof(name)) return cli_usage(cmd, "--shape: input name too long");
    memcpy(name, arg, len);
    name[len] = 0;
    int64_t dims[16]; /* seam's largest rank */
    int32_t rank = 0;
    for (const char *p = eq + 1; *p;) {
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno || v < 0 || rank >= 16 || (*end && *end != 'x') || (*end == 'x' && !end[1]))
            return cli_usage(cmd, "--shape %s: write the shape as AxBxC with dims >= 0", arg);
        dims[rank++] = v;
        p = *end ? end + 1 : end;
    }
    seam_status st = seam_model_set_input_shape(m, name, rank, dims);
    if (st) {
        cli_fail(cmd, ctx, st);
        return CLI_BAD_INPUT;
    }
    return CLI_OK;
}

double cli_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int cli_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

bool cli_same_file(const char *a, const char *b) {
    struct stat x, y;
    return a && b && stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

static const struct {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *help;
} commands[] = {
    {"inspect", cmd_inspect, "print a model's nodes, ops, inputs, outputs, weights and opsets"},
    {"run", cmd_run, "run a model on the CPU and write its outputs"},
    {"analyze", cmd_analyze, "report which operations the targets support"},
    {"partition", cmd_partition, "place every node on a target and group nodes into subgraphs"},
    {"replace-weights", cmd_replace_weights, "swap a (partitioned) model's weights by name"},
    {"quantize", cmd_quantize, "quantize a float model to int8 (QDQ from calibration sets, or dynamic)"},
    {"calibrate", cmd_calibrate, "measure this machine's speed per op class for the cost model's estimates"},
    {"backend-check", cmd_backend_check, "run the ONNX node tests through a backend: does it do what it claims?"},
};

static void usage(FILE *f) {
    fprintf(f, "usage: seam <command> [options]\n\ncommands:\n");
    for (size_t k = 0; k < sizeof(commands) / sizeof(commands[0]); k++)
        fprintf(f, "  %-16s %s\n", commands[k].name, commands[k].help);
    fprintf(f, "\n'seam <command> --help' describes a command.\n");
}

/* Two libraries read their tuning from the environment once, when they
 * load, so the CLI sets it and starts again (once) unless the user chose:
 * - oneDNN (the dnnl backend) runs on libgomp, whose idle threads spin for a
 *   while and then sleep. Between two primitives that sleep costs 30-60 us
 *   of wake-up, more than most primitives take; a finite spin under load
 *   was worst of all (a transformer took 80 ms instead of 1.5). ACTIVE keeps
 *   them spinning: measured faster both on a quiet machine and with two
 *   busy processes beside it (bench/RESULTS.md).
 * - OpenBLAS 0.3.21 does not know AMD's AVX-512 cores and picks its Haswell
 *   (AVX2) kernels; its SkylakeX kernels run them about 20% faster. */
static bool tune_environment(void) {
    bool changed = false;
    if (!getenv("OMP_WAIT_POLICY") && !getenv("GOMP_SPINCOUNT")) changed |= setenv("OMP_WAIT_POLICY", "ACTIVE", 1) == 0;
#if defined(__x86_64__)
    if (!getenv("OPENBLAS_CORETYPE") && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512cd"))
        changed |= setenv("OPENBLAS_CORETYPE", "SKYLAKEX", 1) == 0;
#endif
    return changed;
}

int main(int argc, char **argv) {
    if (tune_environment()) execv("/proc/self/exe", argv);
    if (argc < 2) {
        usage(stderr);
        return CLI_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return CLI_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("seam %d.%d.%d (built-in targets: %s)\n", SEAM_VERSION_MAJOR, SEAM_VERSION_MINOR, SEAM_VERSION_PATCH,
               SEAM_TARGETS_BUILT);
        return CLI_OK;
    }
    for (size_t k = 0; k < sizeof(commands) / sizeof(commands[0]); k++)
        if (strcmp(argv[1], commands[k].name) == 0) return commands[k].fn(argc - 1, argv + 1);
    fprintf(stderr, "seam: unknown command '%s' (see 'seam --help')\n", argv[1]);
    return CLI_USAGE;
}
