/* test_guard.c — reads behind a guard (lang/guard.c): a zero-padded
 * convolution, a concatenation, shifts and differences written with `?:`
 * and `&&` over index variables are accepted (proven in bounds under their
 * guard), inferred (a guard does not shrink a range), and run on every
 * target without reading the element the guard excludes: every input lies
 * between inaccessible pages, once ending at one and once starting after
 * one, so a read one element past either end faults. CPU plan (cg_c_run),
 * GPU plan on the tile interpreter and in the CUDA emulation, against the
 * interpreter. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../sched_runners.h"
#include "../test.h"
#include "graph/graph.h"
#include "lang/lang.h"
#include "sched/sched.h"

static const char gd_src[] =
    "def pad1(float(N,C,H) x, float(K,C,3) w) -> (y) {\n"
    "  y(n,k,i) +=! (i + kh >= 1 && i + kh <= H ? x(n,c,i + kh - 1) : 0) * w(k,c,kh) where i in 0:H\n"
    "}\n"
    "def pad2(float(H,W) x, float(3,3) w) -> (y) {\n"
    "  y(i,j) +=! (i + r >= 1 && i + r <= H && j + s >= 1 && j + s <= W ? x(i + r - 1, j + s - 1) : 0.0)"
    " * w(r,s) where i in 0:H, j in 0:W\n"
    "}\n"
    "def cat(float(N) A, float(M) B) -> (C) { C(i) = i < N ? A(i) : B(i - N) }\n"
    "def catw(float(N) A, float(M) B) -> (C) { C(i) = i >= N ? B(i - N) : A(i) where i in 0:N + M }\n"
    "def shift(float(N) X) -> (Y) { Y(i) = i >= 1 ? X(i - 1) : X(0) where i in 0:N }\n"
    "def next(float(N) X) -> (Y) { Y(i) = i + 1 < N && X(i + 1) > X(i) ? 1.0 : 0.0 where i in 0:N }\n"
    "def diff(float(N) X) -> (D) { D(i,j) = j <= i ? X(i - j) : 0.0 where i in 0:N, j in 0:N }\n"
    "def low(float(N) h) -> (o) { o(i) = i >= 1 ? h(i) : 0.5 }\n"
    "def red(float(N,M) X) -> (S) { S(i) +=! j + i < M ? X(i, j + i) : 0.0 where j in 0:M }\n";

typedef struct gd_mem {
    void *base[64];
    size_t len[64];
    int n;
    int start; /* the data starts right after a page (else ends right at one) */
} gd_mem;

/* bytes between two inaccessible pages, flush against one of them */
static void *gd_alloc(size_t bytes, void *ctx)
{
    gd_mem *m = ctx;
    size_t pg = (size_t)sysconf(_SC_PAGESIZE), data = (bytes + pg - 1) / pg * pg, len = data + 2 * pg;
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED || m->n == 64) return NULL;
    mprotect(p, pg, PROT_NONE);
    mprotect(p + pg + data, pg, PROT_NONE);
    m->base[m->n] = p;
    m->len[m->n++] = len;
    return m->start ? p + pg : p + pg + data - bytes;
}

static void gd_free(gd_mem *m)
{
    for (int i = 0; i < m->n; i++) munmap(m->base[i], m->len[i]);
    m->n = 0;
}

static void gd_run(const char *which, tsl_target target, const test_runner *fn, const char *what)
{
    tsl_arena *a = arena_create();
    tsl_source ts = {"guard.tc", gd_src};
    tsl_diag d = {0};
    lang_module *mod = lang_parse_check(a, &ts, &d);
    CHECK_MSG(mod != NULL, "%s", sb_str(&d.msg));
    /* sizes: 1 and primes past a lane block (M > N for cat) */
    static const int64_t sets[][2] = {{1, 1}, {5, 7}, {13, 601}};
    for (int di = 0; mod && di < mod->ndefs; di++) {
        const lang_def *def = mod->defs[di];
        if (which && strcmp(which, def->name)) continue;
        graph *g = graph_build(a, def, &d);
        sched_plan *p = g ? sched_lower_for(a, g, target, &d) : NULL;
        CHECK_MSG(p != NULL, "%s: %s", def->name, sb_str(&d.msg));
        for (size_t k = 0; p && k < TSL_COUNTOF(sets); k++)
            for (int start = 0; start < 2; start++) {
                int64_t sz[8];
                for (int s = 0; s < def->nsizes && s < 8; s++)
                    sz[s] = !strcmp(def->sizes[s], "M") || !strcmp(def->sizes[s], "W") ? sets[k][1]
                            : !strcmp(def->sizes[s], "K") || !strcmp(def->sizes[s], "C") ? 3
                                                                                            : sets[k][0];
                gd_mem m = {.start = start};
                /* (sums of up to 601 values of either sign: f32 against f64) */
                test_draw dr = {.ctx = &m, .tol = 2e-5, .alloc = gd_alloc};
                test_compare_plan_draw(a, def, p, sz, fn, what, &dr);
                gd_free(&m);
            }
    }
    diag_free(&d);
    arena_free(a);
}

static void test_cpu(void) { gd_run(NULL, TSL_TARGET_CPU, test_run_cpu, "cpu"); }
static void test_gpu_plan_interp(void) { gd_run(NULL, TSL_TARGET_CUDA, test_run_tile_interp, "gpu plan, tile interpreter"); }
static void test_gpu_plan_emulated(void)
{
    if (!test_have_cxx()) return;
    gd_run("pad2", TSL_TARGET_CUDA, test_run_cuda_emu, "gpu plan, cuda emulated");
    gd_run("cat", TSL_TARGET_CUDA, test_run_cuda_emu, "gpu plan, cuda emulated");
}

/* The reads a guard keeps in bounds are marked, read masked (not affine in
 * the graph); one its guard does not concern stays a plain read. */
static void test_marking(void)
{
    tsl_arena *a = arena_create();
    tsl_source ts = {"mark.tc", "def f(float(N,N) S, float(N) X) -> (P, Q) {\n"
                                "  P(i,j) = j <= i ? S(i,j) : -1.0\n"
                                "  Q(i) = X(i) + (i >= 1 ? X(i - 1) : 0.0)\n}\n"};
    tsl_diag d = {0};
    lang_module *mod = lang_parse_check(a, &ts, &d);
    graph *g = mod ? graph_build(a, mod->defs[0], &d) : NULL;
    CHECK_MSG(g != NULL, "%s", sb_str(&d.msg));
    if (g) {
        const graph_op *p = &g->ops[0], *q = &g->ops[1];
        /* a causal mask compares two variables: S(i,j) is in bounds anyway, a plain read */
        CHECK(p->noperands == 2 && !p->operands[1].guarded && p->operands[1].affine);
        int guarded = 0, plain = 0;
        for (int i = 1; i < q->noperands; i++) {
            guarded += q->operands[i].guarded && !q->operands[i].affine;
            plain += !q->operands[i].guarded;
        }
        CHECK_MSG(guarded == 1 && plain == 1, "X(i - 1) guarded, X(i) plain: %d, %d", guarded, plain);
    }
    diag_free(&d);
    arena_free(a);
}

TEST_SUITE(guard) = {
    {"marking", test_marking},
    {"cpu", test_cpu},
    {"gpu_plan_interp", test_gpu_plan_interp},
    {"gpu_plan_emulated", test_gpu_plan_emulated},
    {0},
};
