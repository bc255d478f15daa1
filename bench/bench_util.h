/*
 * bench_util.h: small helpers shared by the benchmark programs of bench/
 * (osc_bench.c, p2p_bench.c, fi_floor.c): option parsing, size lists,
 * medians, the output line format and the data patterns used to verify.
 *
 * Output format of every benchmark, one measurement per line:
 *
 *     op size metric value
 *
 * metric is "lat" (microseconds), "bw" (MB/s, 1 MB = 1e6 bytes) or "rate"
 * (millions of messages per second). Lines starting with '#' are comments
 * (configuration, what was checked); the last comment line of a successful
 * run is "# verify ok".
 */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BENCH_MAX_SIZES 64
#define BENCH_MAX_RUNS 101

/* Parameters every benchmark takes; defaults set by bench_defaults(). */
struct bench_opts {
    size_t lat_min, lat_max;   /* latency sweep */
    size_t bw_min, bw_max;     /* bandwidth / message-rate sweep */
    size_t step;               /* size multiplier of the sweeps (2 or 4) */
    int window;                /* operations in flight per completion wait */
    size_t window_bytes;       /* ... but at most this many bytes in flight */
    int runs;                  /* timed runs per point; the median is printed */
    double run_ms;             /* target duration of one timed run */
    double warm_ms;            /* warmup/calibration duration per point */
    long min_iters, max_iters; /* bounds of the iterations of one timed run */
    char ops[256];             /* comma-separated list of what to measure */
    size_t sizes[BENCH_MAX_SIZES];
    int nsizes; /* nonzero: explicit list (-sizes) replaces both sweeps */
};

static inline void bench_defaults(struct bench_opts *o, const char *ops)
{
    memset(o, 0, sizeof(*o));
    o->lat_min = 8;
    o->lat_max = (size_t) 4 << 20;
    o->bw_min = 1;
    o->bw_max = (size_t) 4 << 20;
    o->step = 2;
    o->window = 64;
    o->window_bytes = (size_t) 64 << 20;
    o->runs = 5;
    o->run_ms = 10.0;
    o->warm_ms = 5.0;
    o->min_iters = 2;
    o->max_iters = 1000000;
    snprintf(o->ops, sizeof(o->ops), "%s", ops);
}

/* "8", "64k", "4m", "1g" -> bytes; 0 on a malformed value. */
static inline size_t bench_parse_size(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s) {
        return 0;
    }
    switch (*end) {
    case 'k': case 'K': v <<= 10; end++; break;
    case 'm': case 'M': v <<= 20; end++; break;
    case 'g': case 'G': v <<= 30; end++; break;
    default: break;
    }
    if ('\0' != *end) {
        return 0;
    }
    return (size_t) v;
}

/* Is the word w in the comma-separated list? */
static inline int bench_has(const char *list, const char *w)
{
    size_t n = strlen(w);
    const char *p = list;
    while (NULL != (p = strstr(p, w))) {
        if ((p == list || ',' == p[-1]) && (',' == p[n] || '\0' == p[n])) {
            return 1;
        }
        p += n;
    }
    return 0;
}

static inline void bench_usage_common(FILE *f)
{
    fprintf(f,
            "  -ops LIST        what to measure (comma-separated)\n"
            "  -lat MIN:MAX     latency sweep sizes (default 8:4m)\n"
            "  -bw MIN:MAX      bandwidth/rate sweep sizes (default 1:4m)\n"
            "  -step N          size multiplier (default 2)\n"
            "  -sizes A,B,...   explicit sizes for both sweeps\n"
            "  -window W        operations in flight (default 64)\n"
            "  -wbytes N        at most N bytes in flight (default 64m)\n"
            "  -runs R          timed runs per point, median printed (default 5)\n"
            "  -run-ms T        target duration of one timed run (default 10)\n"
            "  -warm-ms T       warmup per point (default 5)\n"
            "  -iters MIN:MAX   bounds on iterations per timed run (default 2:1000000)\n");
}

static inline int bench_parse_range(const char *s, size_t *lo, size_t *hi)
{
    char buf[64];
    char *colon;
    snprintf(buf, sizeof(buf), "%s", s);
    colon = strchr(buf, ':');
    if (NULL == colon) {
        return -1;
    }
    *colon = '\0';
    *lo = bench_parse_size(buf);
    *hi = bench_parse_size(colon + 1);
    return (0 == *lo || 0 == *hi || *lo > *hi) ? -1 : 0;
}

/* Parses the common options at argv[*i] (and its value); returns 1 when it
 * took one, 0 when the option is not a common one, -1 on a bad value. */
static inline int bench_parse_common(struct bench_opts *o, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    const char *v = (*i + 1 < argc) ? argv[*i + 1] : NULL;
    if (0 == strcmp(a, "-ops") || 0 == strcmp(a, "-lat") || 0 == strcmp(a, "-bw")
        || 0 == strcmp(a, "-step") || 0 == strcmp(a, "-sizes") || 0 == strcmp(a, "-window")
        || 0 == strcmp(a, "-wbytes") || 0 == strcmp(a, "-runs") || 0 == strcmp(a, "-run-ms")
        || 0 == strcmp(a, "-warm-ms") || 0 == strcmp(a, "-iters")) {
        if (NULL == v) {
            return -1;
        }
        (*i)++;
    } else {
        return 0;
    }
    if (0 == strcmp(a, "-ops")) {
        snprintf(o->ops, sizeof(o->ops), "%s", v);
    } else if (0 == strcmp(a, "-lat")) {
        return bench_parse_range(v, &o->lat_min, &o->lat_max) ? -1 : 1;
    } else if (0 == strcmp(a, "-bw")) {
        return bench_parse_range(v, &o->bw_min, &o->bw_max) ? -1 : 1;
    } else if (0 == strcmp(a, "-step")) {
        o->step = bench_parse_size(v);
        return o->step < 2 ? -1 : 1;
    } else if (0 == strcmp(a, "-sizes")) {
        char buf[1024], *save = NULL, *tok;
        snprintf(buf, sizeof(buf), "%s", v);
        o->nsizes = 0;
        for (tok = strtok_r(buf, ",", &save); NULL != tok && o->nsizes < BENCH_MAX_SIZES;
             tok = strtok_r(NULL, ",", &save)) {
            size_t s = bench_parse_size(tok);
            if (0 == s) {
                return -1;
            }
            o->sizes[o->nsizes++] = s;
        }
        return o->nsizes ? 1 : -1;
    } else if (0 == strcmp(a, "-window")) {
        o->window = atoi(v);
        return o->window < 1 ? -1 : 1;
    } else if (0 == strcmp(a, "-wbytes")) {
        o->window_bytes = bench_parse_size(v);
        return 0 == o->window_bytes ? -1 : 1;
    } else if (0 == strcmp(a, "-runs")) {
        o->runs = atoi(v);
        return (o->runs < 1 || o->runs > BENCH_MAX_RUNS) ? -1 : 1;
    } else if (0 == strcmp(a, "-run-ms")) {
        o->run_ms = atof(v);
        return o->run_ms <= 0 ? -1 : 1;
    } else if (0 == strcmp(a, "-warm-ms")) {
        o->warm_ms = atof(v);
        return o->warm_ms < 0 ? -1 : 1;
    } else if (0 == strcmp(a, "-iters")) {
        size_t lo, hi;
        if (bench_parse_range(v, &lo, &hi)) {
            return -1;
        }
        o->min_iters = (long) lo;
        o->max_iters = (long) hi;
        return 1;
    }
    return 1;
}

/* The sizes of a sweep from lo to hi (or the explicit list, filtered to
 * [lo, hi] when filter is set); returns how many. */
static inline int bench_sizes(const struct bench_opts *o, size_t lo, size_t hi, size_t *out)
{
    int n = 0;
    if (o->nsizes) {
        for (int k = 0; k < o->nsizes; ++k) {
            out[n++] = o->sizes[k];
        }
        return n;
    }
    for (size_t s = lo; s <= hi && n < BENCH_MAX_SIZES; s *= o->step) {
        out[n++] = s;
    }
    /* hi itself always ends the sweep, e.g. 4m with step 4 from 8 */
    if (n > 0 && out[n - 1] != hi && n < BENCH_MAX_SIZES) {
        out[n++] = hi;
    }
    return n;
}

/* Largest size any sweep of o uses. */
static inline size_t bench_largest(const struct bench_opts *o)
{
    size_t m = o->lat_max > o->bw_max ? o->lat_max : o->bw_max;
    if (o->nsizes) {
        m = 0;
        for (int k = 0; k < o->nsizes; ++k) {
            m = o->sizes[k] > m ? o->sizes[k] : m;
        }
    }
    return m;
}

/* Operations in flight for messages of `size` bytes. */
static inline int bench_window(const struct bench_opts *o, size_t size)
{
    size_t w = o->window_bytes / (size ? size : 1);
    if (w < 1) {
        w = 1;
    }
    return (int) (w < (size_t) o->window ? w : (size_t) o->window);
}

static int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t) n, sizeof(*v), bench_cmp_double);
    return (n & 1) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Iterations of one timed run, from a calibration that took `secs` for
 * `done` iterations. */
static inline long bench_iters(const struct bench_opts *o, double secs, long done)
{
    double per = (done > 0 && secs > 0) ? secs / (double) done : 1e-6;
    double want = o->run_ms * 1e-3 / per;
    long n = want > 1e12 ? o->max_iters : (long) want;
    if (n < o->min_iters) {
        n = o->min_iters;
    }
    if (n > o->max_iters) {
        n = o->max_iters;
    }
    return n;
}

/* Enough timed runs of a point? All -runs of them, except that a point
 * stops after 3 runs once its runs took 3 times what -runs x -run-ms
 * should: on a busy machine the iterations calibrated on the fastest
 * warmup pass run much slower, and the comparison must still end. */
static inline int bench_enough(const struct bench_opts *o, int done, double used_secs)
{
    if (done >= o->runs) {
        return 1;
    }
    return done >= 3 && used_secs > 3.0 * o->runs * o->run_ms * 1e-3;
}

static inline void bench_line(const char *op, size_t size, const char *metric, double value)
{
    printf("%s %zu %s %.4g\n", op, size, metric, value);
    fflush(stdout);
}

/* Byte k of pattern `seed`: differs between seeds and between neighbouring
 * bytes, never constant over a power-of-two stride. */
static inline unsigned char bench_pattern(unsigned seed, size_t k)
{
    uint64_t x = (uint64_t) k * 0x9E3779B97F4A7C15ull + (uint64_t) seed * 0xD1B54A32D192ED03ull;
    x ^= x >> 29;
    return (unsigned char) (x ^ (x >> 8));
}

static inline void bench_fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t k = 0; k < n; ++k) {
        p[k] = bench_pattern(seed, k);
    }
}

/* Number of bytes that differ from the pattern (prints the first few). */
static inline long bench_check(const char *who, const unsigned char *p, size_t n, unsigned seed)
{
    long bad = 0;
    for (size_t k = 0; k < n; ++k) {
        unsigned char want = bench_pattern(seed, k);
        if (p[k] != want) {
            if (bad < 4) {
                fprintf(stderr, "%s: byte %zu is 0x%02x, expected 0x%02x\n", who, k, p[k], want);
            }
            bad++;
        }
    }
    return bad;
}

#endif
