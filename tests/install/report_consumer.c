/* A program that draws a plan through the installed libseam_report.so
 * (linked with -lseam_report: libseam.so has no report and no graphviz):
 * partitions the tiny model for the CPU, writes its HTML page and checks
 * that the page holds the model's nodes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <seam.h>
#include <seam_report.h>

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: report_consumer MODEL.onnx OUT.html\n");
        return 2;
    }
    seam_context *ctx;
    seam_model *model;
    seam_plan *plan = NULL;
    seam_report *report = NULL;
    if (seam_context_create(&ctx)) return 1;
    seam_partition_options opts = seam_partition_defaults();
    seam_status st = seam_model_load(ctx, argv[1], &model);
    if (!st) st = seam_partition(model, &opts, &plan);
    if (!st) st = seam_report_create(plan, "relu1", &report);
    if (!st) st = seam_report_write_html(report, argv[2]);
    if (st) {
        fprintf(stderr, "report_consumer: %s: %s\n", seam_status_string(st), seam_context_last_error(ctx));
        return 1;
    }
    FILE *f = fopen(argv[2], "rb");
    static char page[1 << 20];
    size_t n = f ? fread(page, 1, sizeof(page) - 1, f) : 0;
    if (f) fclose(f);
    page[n] = 0;
    int bad = !strstr(page, "<html") || !strstr(page, "Relu");
    printf("report_consumer: %zu bytes of HTML, %s\n", n, bad ? "WRONG" : "ok");
    seam_report_free(report);
    seam_plan_free(plan);
    seam_model_free(model);
    seam_context_free(ctx);
    return bad;
}
