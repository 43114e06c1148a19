/* seam: the command-line tool. One function per subcommand. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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

int cli_fail(const char *cmd, seam_context *ctx, seam_status st) {
    fprintf(stderr, "seam %s: %s: %s\n", cmd, seam_status_string(st), seam_context_last_error(ctx));
    return st == SEAM_STATUS_INVALID_ARGUMENT ? CLI_USAGE : CLI_BAD_INPUT;
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
};

static void usage(FILE *f) {
    fprintf(f, "usage: seam <command> [options]\n\ncommands:\n");
    for (size_t k = 0; k < sizeof(commands) / sizeof(commands[0]); k++)
        fprintf(f, "  %-10s %s\n", commands[k].name, commands[k].help);
    fprintf(f, "\n'seam <command> --help' describes a command.\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return CLI_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return CLI_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("seam %d.%d.%d\n", SEAM_VERSION_MAJOR, SEAM_VERSION_MINOR, SEAM_VERSION_PATCH);
        return CLI_OK;
    }
    for (size_t k = 0; k < sizeof(commands) / sizeof(commands[0]); k++)
        if (strcmp(argv[1], commands[k].name) == 0) return commands[k].fn(argc - 1, argv + 1);
    fprintf(stderr, "seam: unknown command '%s' (see 'seam --help')\n", argv[1]);
    return CLI_USAGE;
}
