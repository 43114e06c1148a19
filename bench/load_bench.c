/*
 * load_bench MODEL [REPS]
 *
 * Compares seam_model_load (parse, convert to IR, check, infer) with the
 * cost of reading the file once into memory, alternating the two so that
 * both see the same machine state. Prints the medians and their ratio.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "seam.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* read(2) of the whole file into a fresh buffer; returns a checksum so the
 * compiler cannot drop the work. */
static unsigned read_once(const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return 0;
    struct stat sb;
    fstat(fd, &sb);
    unsigned char *buf = malloc((size_t)sb.st_size);
    size_t got = 0;
    while (buf && got < (size_t)sb.st_size) {
        ssize_t r = read(fd, buf + got, (size_t)sb.st_size - got);
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    unsigned sum = buf && got ? buf[got / 2] : 0;
    free(buf);
    return sum;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: load_bench MODEL [REPS]\n");
        return 2;
    }
    int reps = argc > 2 ? atoi(argv[2]) : 15;
    if (reps < 1) reps = 1;
    seam_context *ctx;
    if (seam_context_create(&ctx)) return 1;
    double *tr = calloc((size_t)reps, sizeof(double)), *tl = calloc((size_t)reps, sizeof(double));
    unsigned sink = read_once(argv[1]); /* warm the page cache */
    for (int k = 0; k < reps; k++) {
        double t0 = now_ms();
        sink += read_once(argv[1]);
        double t1 = now_ms();
        seam_model *m;
        seam_status st = seam_model_load(ctx, argv[1], &m);
        double t2 = now_ms();
        if (st) {
            fprintf(stderr, "load_bench: %s\n", seam_context_last_error(ctx));
            return 1;
        }
        seam_model_free(m);
        tr[k] = t1 - t0;
        tl[k] = t2 - t1;
    }
    qsort(tr, (size_t)reps, sizeof(double), cmp_double);
    qsort(tl, (size_t)reps, sizeof(double), cmp_double);
    struct stat sb;
    stat(argv[1], &sb);
    printf("%s: %.1f MB, %d reps\n", argv[1], (double)sb.st_size / 1e6, reps);
    printf("  read once : median %.2f ms (min %.2f)\n", tr[reps / 2], tr[0]);
    printf("  seam load : median %.2f ms (min %.2f)\n", tl[reps / 2], tl[0]);
    printf("  ratio load/read: %.2f (median), %.2f (min)\n", tl[reps / 2] / tr[reps / 2], tl[0] / tr[0]);
    free(tr);
    free(tl);
    seam_context_free(ctx);
    return sink == 12345 ? 3 : 0;
}
