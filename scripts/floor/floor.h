// What the floor clients share: the clock, and the closing line with the process's own
// CPU per operation (getrusage, from the start of the measured loop).
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>

struct floor_start {
    double t;
    struct rusage r;
};

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static struct floor_start floor_begin(void) {
    struct floor_start s;
    getrusage(RUSAGE_SELF, &s.r);
    s.t = now();
    return s;
}

static double seconds(struct timeval a, struct timeval b) {
    return (b.tv_sec - a.tv_sec) + (b.tv_usec - a.tv_usec) * 1e-6;
}

// "NAME n=N: OPS ops, R ops/s, user U sys S us/op, total T us/op" (scripts/bench-floor.sh reads it).
static void floor_report(const char *name, int n, long ops, struct floor_start s) {
    double t = now() - s.t;
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    double u = seconds(s.r.ru_utime, r.ru_utime), sys = seconds(s.r.ru_stime, r.ru_stime);
    printf("%s n=%d: %ld ops, %.0f ops/s, user %.2f sys %.2f us/op, total %.2f us/op\n", name, n, ops,
           ops / t, u * 1e6 / ops, sys * 1e6 / ops, (u + sys) * 1e6 / ops);
}
