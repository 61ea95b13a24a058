/* test_tile_hopper.c — Hopper in the tile interpreter (docs/tile-interp.md
 * "Warpgroups, mbarriers, TMA and wgmma"): the task memory model, the
 * warp-specialised wgmma GEMM of examples/tile/gemm_wgmma.tile against a
 * float64 product at sizes no tile divides (and under shuffled
 * interleavings), the small programs of tests/tile_hopper/ against plain C
 * references, and every hazard program there (hz_*.tile) failing with
 * exactly the located message its `// expect:` line gives. A program's
 * `// sizes: K=200` line binds its size symbols; its inputs are random,
 * its outputs poisoned with NaN. The scheduler's sm_90a GEMM plan
 * (src/sched/contract.c) is run here too, against the TC interpreter. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/cuda.h"
#include "graph/graph.h"
#include "runtime/runtime.h"
#include "sched/attn_sm90.h"
#include "sched/sched.h"
#include "sched_runners.h"
#include "test.h"
#include "tile/interp.h"
#include "tile/interp_mem.h"
#include "tile/tile.h"

/* ---- the memory model of tasks ---------------------------------------------------- */

/* Two tasks: a write is visible to the other only through a release
 * (mbarrier arrive, by the task's thread 0) it has acquired (wait); the
 * release covers its thread 0 and, for the other threads, what they did
 * before the task's last sync; a write over another task's unordered
 * read is a hazard; sync is per task. */
static void test_mem_tasks(void)
{
    imem_shared s;
    CHECK(imem_init(&s, 256) == 0 && imem_enable_tasks(&s, IMEM_MAX_TASKS) == 0);
    imem_vc bar;
    memset(&bar, 0, sizeof bar);
    int other;
    uint32_t v = (uint32_t)test_rand(), w = (uint32_t)test_rand(), got = 0;
    imem_sync(&s); /* the block's barrier before the warpgroups */
    imem_task_spawn(&s, 1, 0);
    imem_task_spawn(&s, 2, 128);
    imem_task_switch(&s, 1);
    CHECK_EQ_INT(imem_write(&s, 16, 4, 3, &v, &other), IMEM_OK);
    imem_task_switch(&s, 2);
    CHECK_EQ_INT(imem_read(&s, 16, 4, 130, &got, &other), IMEM_XRAW);
    CHECK_EQ_INT(other, 3);
    CHECK_EQ_INT(s.why.agent, 1);
    /* thread 0 writes and arrives: its write is released, thread 3's not */
    imem_task_switch(&s, 1);
    CHECK_EQ_INT(imem_write(&s, 48, 4, 0, &w, &other), IMEM_OK);
    imem_release(&s, &bar);
    imem_task_switch(&s, 2);
    imem_acquire(&s, &bar);
    CHECK_EQ_INT(imem_read(&s, 48, 4, 130, &got, &other), IMEM_OK);
    CHECK_EQ_INT(got, w);
    CHECK_EQ_INT(imem_read(&s, 16, 4, 130, &got, &other), IMEM_XRAW);
    /* with a sync before the arrive, every thread's write is */
    imem_task_switch(&s, 1);
    imem_sync(&s);
    imem_release(&s, &bar);
    CHECK_EQ_INT(imem_write(&s, 32, 4, 3, &v, &other), IMEM_OK); /* after the release */
    imem_task_switch(&s, 2);
    imem_acquire(&s, &bar);
    CHECK_EQ_INT(imem_read(&s, 16, 4, 130, &got, &other), IMEM_OK);
    CHECK_EQ_INT(got, v);
    CHECK_EQ_INT(imem_read(&s, 32, 4, 130, &got, &other), IMEM_XRAW);
    /* task 1 overwrites what task 2 read, unordered */
    imem_task_switch(&s, 1);
    CHECK_EQ_INT(imem_write(&s, 16, 4, 0, &v, &other), IMEM_XWAR);
    CHECK_EQ_INT(s.why.agent, 2);
    /* sync is per task: task 2's barrier does not order task 1's threads */
    imem_task_switch(&s, 2);
    imem_sync(&s);
    CHECK_EQ_INT(imem_read(&s, 32, 4, 131, &got, &other), IMEM_XRAW);
    imem_free(&s);
}

/* The async proxy: a TMA load is pending until it lands, then visible
 * only to tasks that observed its barrier phase; an async read needs a
 * fence_async after ordinary writes and holds its bytes until done. */
static void test_mem_async_proxy(void)
{
    imem_shared s;
    CHECK(imem_init(&s, 256) == 0 && imem_enable_tasks(&s, IMEM_MAX_TASKS) == 0);
    int other;
    uint8_t src[16], got[16];
    for (int i = 0; i < 16; i++) src[i] = (uint8_t)test_rand();
    imem_task_spawn(&s, 1, 128);
    imem_task_switch(&s, 1);
    CHECK_EQ_INT(imem_tma_issue(&s, 64, 16, 0), IMEM_OK);
    CHECK_EQ_INT(imem_read(&s, 64, 2, 130, got, &other), IMEM_TMA_PENDING);
    CHECK_EQ_INT(imem_tma_issue(&s, 72, 4, 1), IMEM_TMA_PENDING);
    CHECK_EQ_INT(imem_tma_land(&s, 64, 16, 5, 7, src), IMEM_OK);
    CHECK_EQ_INT(imem_read(&s, 64, 2, 130, got, &other), IMEM_TMA_UNSEEN);
    CHECK_EQ_INT(s.why.agent, IMEM_VC_BAR(5));
    CHECK_EQ_INT(s.why.clock, 7);
    imem_vc ph;
    memset(&ph, 0, sizeof ph);
    ph.c[IMEM_VC_BAR(5)] = 8; /* the completed phase 7, as a wait acquires it */
    imem_acquire(&s, &ph);
    CHECK_EQ_INT(imem_read(&s, 64, 16, 130, got, &other), IMEM_OK);
    CHECK(memcmp(got, src, 16) == 0);
    /* an ordinary write read by the async proxy */
    CHECK_EQ_INT(imem_write(&s, 128, 8, 129, src, &other), IMEM_OK);
    imem_sync(&s);
    CHECK_EQ_INT(imem_async_read(&s, 128, 8, 3, NULL), IMEM_UNFENCED);
    imem_fence_async(&s);
    CHECK_EQ_INT(imem_async_read(&s, 128, 8, 3, got), IMEM_OK);
    CHECK(memcmp(got, src, 8) == 0);
    CHECK_EQ_INT(imem_write(&s, 132, 1, 129, src, &other), IMEM_ASYNC_READING);
    CHECK_EQ_INT(s.why.op, 3);
    CHECK_EQ_INT(imem_tma_issue(&s, 120, 16, 2), IMEM_ASYNC_READING);
    imem_async_done(&s, 128, 8);
    CHECK_EQ_INT(imem_write(&s, 132, 1, 129, src, &other), IMEM_OK);
    CHECK_EQ_INT(imem_async_read(&s, 200, 4, 4, NULL), IMEM_UNWRITTEN);
    /* an async read counts as made when it completes: a release between
     * its issue and its completion does not order it */
    imem_task_spawn(&s, 2, 256);
    imem_vc rel;
    memset(&rel, 0, sizeof rel);
    CHECK_EQ_INT(imem_async_read(&s, 64, 4, 6, NULL), IMEM_OK);
    imem_release(&s, &rel);
    imem_async_done(&s, 64, 4);
    imem_task_switch(&s, 2);
    imem_acquire(&s, &rel);
    CHECK_EQ_INT(imem_tma_issue(&s, 64, 4, 7), IMEM_XWAR);
    imem_task_switch(&s, 1);
    imem_release(&s, &rel);
    imem_task_switch(&s, 2);
    imem_acquire(&s, &rel);
    CHECK_EQ_INT(imem_tma_issue(&s, 64, 4, 7), IMEM_OK);
    CHECK_EQ_INT(imem_tma_land(&s, 64, 4, 5, 9, src), IMEM_OK);
    imem_task_switch(&s, 1);
    ph.c[IMEM_VC_BAR(5)] = 10; /* task 1 waits on that phase */
    imem_acquire(&s, &ph);
    /* a TMA load (issued by thread 0) over another thread's read needs a sync */
    CHECK_EQ_INT(imem_read(&s, 64, 4, 131, got, &other), IMEM_OK);
    CHECK_EQ_INT(imem_tma_issue(&s, 64, 4, 5), IMEM_WAR);
    imem_sync(&s);
    CHECK_EQ_INT(imem_tma_issue(&s, 64, 4, 5), IMEM_OK);
    imem_free(&s);
}

/* ---- programs ------------------------------------------------------------------------- */

#define MAXT 8

typedef struct prog {
    DLTensor *t[MAXT];
    const char *name[MAXT];
    tsl_dtype dt[MAXT];
    int out[MAXT];
    int n;
    char *msg;   /* the diagnostics */
    tsl_status st;
} prog;

static DLTensor *filled(tsl_dtype dt, int rank, const int64_t *shape, int nan)
{
    DLTensor *t = tsl_tensor_alloc(dt, rank, shape);
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    size_t es = tsl_dtype_size(dt);
    for (int64_t i = 0; i < n; i++)
        dtype_store(dt, (char *)t->data + i * (int64_t)es, nan ? NAN : test_rand_double(-1, 1));
    return t;
}

static double at(const prog *p, int k, int64_t i)
{
    return dtype_load(p->dt[k], (char *)p->t[k]->data + i * (int64_t)tsl_dtype_size(p->dt[k]));
}

static int find(const prog *p, const char *name)
{
    for (int k = 0; k < p->n; k++)
        if (!strcmp(p->name[k], name)) return k;
    CHECK_MSG(0, "no tensor '%s'", name);
    return 0;
}

/* Parse `text` (named `fname` in messages), bind the sizes (NAME=N,
 * space-separated), give every global tensor random data (outputs NaN)
 * and run it. Keeps the tensors in p (free with prog_free). */
static void prog_run(prog *p, const char *fname, const char *text, const char *sizes, int shuffle, uint64_t seed)
{
    memset(p, 0, sizeof *p);
    tsl_arena *ar = arena_create();
    tsl_source src = {fname, text};
    tsl_diag d = {0};
    tile_module *m = NULL;
    p->st = tile_parse(ar, &src, &d, &m);
    const char *names[8];
    int64_t vals[8];
    char buf[256];
    int ns = 0;
    snprintf(buf, sizeof buf, "%s", sizes ? sizes : "");
    for (char *tok = strtok(buf, " "); tok && ns < 8; tok = strtok(NULL, " ")) {
        char *eq = strchr(tok, '=');
        if (!eq) continue;
        *eq = 0;
        names[ns] = tok;
        vals[ns++] = strtoll(eq + 1, NULL, 10);
    }
    if (!p->st) {
        const tile_kernel *k = m->kernels[0];
        /* the sizes, less the int parameters given with them (c_nsm) */
        const char *snames[8];
        int64_t svals[8];
        int nss = 0;
        for (int j = 0; j < ns; j++) {
            int scalar = 0;
            for (int i = 0; i < k->nparams; i++)
                scalar |= k->params[i]->kind == TILE_V_SCALAR && !strcmp(k->params[i]->name, names[j]);
            if (!scalar) snames[nss] = names[j], svals[nss++] = vals[j];
        }
        int64_t symv[16];
        p->st = tile_interp_bind_symbols(k, NULL, 0, snames, svals, nss, symv, &d);
        const tile_value *outs[MAXT];
        int nout = tile_interp_outputs(k, outs, MAXT);
        tile_interp_arg args[MAXT];
        int nargs = 0;
        for (int i = 0; i < k->nparams && !p->st && p->n < MAXT; i++) {
            const tile_value *v = k->params[i];
            if (v->kind == TILE_V_SCALAR) { /* an int parameter (c_nsm) given with the sizes */
                for (int j = 0; j < ns; j++)
                    if (!strcmp(names[j], v->name)) args[nargs++] = (tile_interp_arg){v->name, NULL, vals[j]};
                continue;
            }
            if (v->kind != TILE_V_TENSOR) continue;
            int64_t shape[8];
            p->st = tile_interp_param_shape(k, v, symv, shape, &d);
            int isout = 0;
            for (int j = 0; j < nout; j++) isout |= outs[j] == v;
            tile_dtype_to_tsl(v->type.dt, &p->dt[p->n]);
            p->name[p->n] = v->name;
            p->out[p->n] = isout;
            p->t[p->n] = filled(p->dt[p->n], v->type.rank, shape, isout);
            args[nargs++] = (tile_interp_arg){v->name, p->t[p->n], 0};
            p->n++;
        }
        if (!p->st) {
            tile_interp_opts o = {0};
            o.shuffle_blocks = shuffle;
            o.seed = seed;
            p->st = tile_interp_run(k, &src, args, nargs, &o, &d);
        }
    }
    /* names point into the arena: copy them */
    for (int k = 0; k < p->n; k++) p->name[k] = strdup(p->name[k]);
    p->msg = strdup(sb_str(&d.msg));
    diag_free(&d);
    arena_free(ar);
}

static void prog_free(prog *p)
{
    for (int k = 0; k < p->n; k++) {
        tsl_tensor_free(p->t[k]);
        free((char *)p->name[k]);
    }
    free(p->msg);
}

/* Tensor k as doubles (malloc'd). */
static double *as_doubles(const prog *p, int k, int64_t n)
{
    double *r = malloc((size_t)(n ? n : 1) * sizeof *r);
    for (int64_t i = 0; i < n; i++) r[i] = at(p, k, i);
    return r;
}

/* C (f16 or f32) against the float64 product of A [M, K] and B [K, N]:
 * f32 accumulation, then the rounding of C's dtype; with acc16, an f16
 * accumulator rounded after every k16 step (K / 16 roundings of partial
 * sums, each within half an f16 ulp of at most the sum of |products|). */
static int check_matmul_acc(const prog *p, const char *what, int acc16)
{
    int ia = find(p, "A"), ib = find(p, "B"), ic = find(p, "C");
    int64_t M = p->t[ia]->shape[0], K = p->t[ia]->shape[1], N = p->t[ib]->shape[1];
    double rel = p->dt[ic] == TSL_DTYPE_F16 ? 4.9e-4 : 1e-6;
    double magtol = acc16 ? (double)(K / 16 + 1) * 4.9e-4 : 1e-5;
    double *a = as_doubles(p, ia, M * K), *b = as_doubles(p, ib, K * N);
    int ok = 1;
    for (int64_t i = 0; i < M && ok; i++)
        for (int64_t j = 0; j < N && ok; j++) {
            double want = 0, mag = 0;
            for (int64_t k = 0; k < K; k++) {
                double x = a[i * K + k] * b[k * N + j];
                want += x;
                mag += fabs(x);
            }
            double got = at(p, ic, i * N + j);
            if (!(fabs(got - want) <= rel * fabs(want) + magtol * mag + 1e-6)) {
                CHECK_MSG(0, "%s %lldx%lldx%lld: C[%lld,%lld] = %.7g, want %.7g", what, (long long)M, (long long)N,
                          (long long)K, (long long)i, (long long)j, got, want);
                ok = 0;
            }
        }
    free(a);
    free(b);
    return ok;
}

static int check_matmul(const prog *p, const char *what) { return check_matmul_acc(p, what, 0); }

static void gemm_file_case(const char *file, const char *text, int64_t M, int64_t N, int64_t K, int shuffle)
{
    char sizes[96];
    snprintf(sizes, sizeof sizes, "M=%lld N=%lld K=%lld", (long long)M, (long long)N, (long long)K);
    prog p;
    uint64_t seed = test_rand();
    prog_run(&p, file, text, sizes, shuffle, seed);
    CHECK_MSG(p.st == TSL_OK, "%s %s (shuffle %d, seed %llu): %s", file, sizes, shuffle, (unsigned long long)seed, p.msg);
    if (p.st == TSL_OK) check_matmul(&p, file);
    prog_free(&p);
}

static void gemm_case(const char *text, int64_t M, int64_t N, int64_t K, int shuffle)
{
    gemm_file_case("gemm_wgmma.tile", text, M, N, K, shuffle);
}

/* The warp-specialised GEMM: 128 x 256 x 64 tiles, a 4-stage TMA ring
 * wrapping several times, sizes no tile divides, M = 1. */
static void test_gemm_wgmma(void)
{
    char *text = test_read_text("examples/tile", "gemm_wgmma.tile");
    gemm_case(text, 100, 264, 520, 0);
    gemm_case(text, 1, 8, 8, 0);
    gemm_case(text, test_rand_int(1, 200), 8 * test_rand_int(1, 50), 8 * test_rand_int(1, 90), 0);
    free(text);
}

/* Other interleavings of the producer and the consumers, same answer. */
static void test_gemm_wgmma_shuffled(void)
{
    char *text = test_read_text("examples/tile", "gemm_wgmma.tile");
    gemm_case(text, 100, 264, 520, 1);
    gemm_case(text, test_rand_int(1, 140), 8 * test_rand_int(1, 40), 8 * test_rand_int(1, 70), 1);
    free(text);
}

/* A program of tests/tile_hopper/ run at its `// sizes:`. */
static void hopper_prog(prog *p, const char *name, int shuffle)
{
    char *text = test_read_text("tests/tile_hopper", name);
    char *sizes = text ? test_header(text, "sizes") : NULL;
    prog_run(p, name, text ? text : "", sizes, shuffle, test_rand());
    CHECK_MSG(p->st == TSL_OK, "%s: %s", name, p->msg);
    free(sizes);
    free(text);
}

static void test_programs(void)
{
    const char *mm[] = {"ring.tile", "wgmma_smem.tile", "wgmma_rega.tile"};
    for (int i = 0; i < 3; i++)
        for (int sh = 0; sh < 2; sh++) {
            prog p;
            hopper_prog(&p, mm[i], sh);
            if (p.st == TSL_OK) check_matmul(&p, mm[i]);
            prog_free(&p);
        }
    /* an f16 accumulator, chained in flight, then retired and reused */
    for (int sh = 0; sh < 2; sh++) {
        prog p;
        hopper_prog(&p, "wgmma_f16acc.tile", sh);
        if (p.st == TSL_OK) check_matmul_acc(&p, "wgmma_f16acc.tile", 1);
        prog_free(&p);
    }
    prog p;
    hopper_prog(&p, "tma_scale.tile", 1); /* Y = 2 X, masked at the edges */
    if (p.st == TSL_OK) {
        int ix = find(&p, "X"), iy = find(&p, "Y");
        int64_t n = p.t[ix]->shape[0] * p.t[ix]->shape[1];
        for (int64_t i = 0; i < n; i++) CHECK_CLOSE(at(&p, iy, i), 2 * at(&p, ix, i), 0);
    }
    prog_free(&p);
    hopper_prog(&p, "handoff.tile", 1); /* Y == X through ordinary stores */
    if (p.st == TSL_OK) {
        int ix = find(&p, "X"), iy = find(&p, "Y");
        for (int64_t i = 0; i < 32 * 64; i++) CHECK_CLOSE(at(&p, iy, i), at(&p, ix, i), 0);
    }
    prog_free(&p);
    hopper_prog(&p, "two_phases.tile", 1); /* Y = 3 X across two warpgroups statements */
    if (p.st == TSL_OK) {
        int ix = find(&p, "X"), iy = find(&p, "Y");
        for (int64_t i = 0; i < 32 * 64; i++) CHECK_CLOSE(at(&p, iy, i), (float)(3 * at(&p, ix, i)), 0);
    }
    prog_free(&p);
}

/* Every hazard program fails with exactly its expected located message
 * (the first line of the diagnostics). */
static void test_hazards(void)
{
    static const char *const files[] = {
        "hz_missing_wait.tile",        "hz_wrong_parity.tile",         "hz_wrong_parity_consumer.tile",
        "hz_missing_arrive.tile",      "hz_missing_wgmma_wait.tile",   "hz_missing_wgmma_fence.tile",
        "hz_missing_fence_async.tile", "hz_missing_fence_store.tile",  "hz_missing_bulk_wait.tile",
        "hz_tma_into_wgmma.tile",      "hz_unaligned_rows.tile",       "hz_no_init.tile",
        "hz_init_not_visible.tile",    "hz_init_in_use.tile",          "hz_arrive_too_early.tile",
        "hz_read_in_flight.tile",      "hz_unwaited_wgmma.tile",       "hz_unwaited_store.tile",
        "hz_arrive_without_sync.tile", "hz_no_sync_between.tile",
    };
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char *text = test_read_text("tests/tile_hopper", files[i]);
        if (!text) continue;
        char *sizes = test_header(text, "sizes"), *want = test_header(text, "expect");
        CHECK_MSG(want != NULL, "%s has no '// expect:' line", files[i]);
        prog p;
        prog_run(&p, files[i], text, sizes, 0, 0);
        size_t n = strcspn(p.msg, "\n");
        CHECK_MSG(p.st != TSL_OK && want && strlen(want) == n && !strncmp(p.msg, want, n),
                  "%s: status %d\n  got:  %.*s\n  want: %s", files[i], p.st, (int)n, p.msg, want ? want : "");
        prog_free(&p);
        free(sizes);
        free(want);
        free(text);
    }
}

/* The sm_90a plan of the one def in TC text `text` (named `name`) under
 * options o (NULL: the defaults), in arena a, which also holds the source;
 * *mod its module. NULL with d's message when it does not lower. */
static sched_plan *sm90_lower(tsl_arena *a, const char *name, const char *text, const sched_options *o,
                              lang_module **mod, tsl_diag *d)
{
    tsl_source *src = arena_alloc(a, sizeof *src);
    *src = (tsl_source){name, text};
    *mod = lang_parse_check(a, src, d);
    graph *g = *mod ? graph_build(a, (*mod)->defs[0], d) : NULL;
    return g ? sched_lower_opt(a, g, TSL_TARGET_CUDA, 90, o, d) : NULL;
}

/* The scheduler's sm_90a plan (TMA ring, wgmma, warpgroups; guarded to K
 * and N multiples of 8, the mma.sync plan otherwise) through the tile
 * interpreter against the TC interpreter: wide (M > 128) and narrow
 * blocks, sizes no tile divides, size 1, and a size the guard refuses. */
static void test_sm90_plan(void)
{
    static const struct {
        const char *src;
        int64_t sets[4][4]; /* size slots in declaration order */
    } cases[] = {
        {"def hmm(float16(M,K) A, float16(K,N) B) -> (C) {\n  C(m,n) +=! A(m,k) * B(k,n)\n}\n",
         {{70, 200, 264}, {300, 72, 40}, {1, 8, 8}, {67, 45, 40}}},
        {"def hbmm(float16(B,M,K) X, float16(B,K,N) Y) -> (Z) {\n  Z(b,m,n) +=! X(b,m,k) * Y(b,k,n)\n}\n",
         {{2, 33, 136, 24}, {1, 130, 16, 8}, {0}, {0}}},
        /* both operands transposed (views of the TMA stages) */
        {"def htt(float16(K,M) A, float16(N,K) B) -> (C) {\n  C(m,n) +=! A(k,m) * B(n,k)\n}\n",
         {{40, 136, 72}, {24, 37, 264}, {0}, {0}}},
        /* an epilogue: bias, GELU (erf), a residual (at BN 192 and 256) */
        {"def hgelu(float16(M,K) A, float16(N,K) W, float16(N) bias, float16(M,N) R) -> (C) {\n"
         "  C(m,n) +=! A(m,k) * W(n,k)\n  C(m,n) = C(m,n) + bias(n)\n"
         "  C(m,n) = 0.5 * C(m,n) * (1 + erf(C(m,n) * 0.7071067811865476)) + R(m,n)\n}\n",
         {{150, 40, 136}, {37, 24, 200}, {0}, {0}}},
    };
    /* each case also in clusters of two (contract.sm90.cluster=2: B
     * multicast, an odd number of M-tiles in several cases), with
     * another tile order and 192 or 128 columns a block */
    for (size_t c = 0; c < 2 * (sizeof cases / sizeof *cases); c++) {
        size_t ci = c % (sizeof cases / sizeof *cases);
        int cl = c >= sizeof cases / sizeof *cases;
        sched_options o = sched_options_defaults;
        if (cl) o.sm90_cluster = 2, o.sm90_group = 1 + (int)(test_rand() % 3);
        if (ci % 2) o.sm90_bn = cl ? 256 : 192;
        else o.sm90_bn = cl ? 128 : 256;
        tsl_arena *a = arena_create();
        tsl_diag d = {0};
        lang_module *mod;
        sched_plan *p = sm90_lower(a, "sm90.tc", cases[ci].src, &o, &mod, &d);
        CHECK_MSG(p != NULL, "%s", sb_str(&d.msg));
        int wg = 0, clusters = 0;
        for (int l = 0; p && l < p->nlaunches; l++) {
            wg += strstr(p->launches[l].k->name, "_wgmma") != NULL;
            clusters += p->launches[l].k->cluster == 2;
        }
        CHECK_MSG(!p || wg > 0, "case %d: no sm_90a launch", (int)ci);
        CHECK_MSG(!p || !cl || clusters == 1, "case %d: %d launches in clusters of two, want the wide plan's 1", (int)ci,
                  clusters);
        for (int i = 0; p && i < 4; i++)
            if (cases[ci].sets[i][0])
                test_compare_plan(a, mod->defs[0], p, cases[ci].sets[i], test_run_tile_interp,
                                  cl ? "tile interp sm_90a cluster" : "tile interp sm_90a");
        diag_free(&d);
        arena_free(a);
    }
}

/* The sm_90a GEMM's epilogue: 256 columns a block with bias and an
 * activation (tanh GELU, SiLU) or one residual, 128 with two residuals
 * (the accumulator and two more 64 x 256 tiles spill); a bias in the
 * accumulator's layout reduced over its rows; a 16-bit C asks for the
 * fast tanh and sigmoid, an f32 C for the exact ones. The two-
 * residual plan also runs in the tile interpreter at sizes no tile
 * divides. */
static void test_sm90_epilogue(void)
{
    static const struct {
        const char *src;
        int bn, approx; /* the wgmma kernel's block width; `.approx` ops in it */
    } cases[] = {
        {"def g(float16(M,K) A, float16(K,N) B, float16(N) bias) -> (C) {\n  C(m,n) +=! A(m,k) * B(k,n)\n"
         "  C(m,n) = C(m,n) + bias(n)\n"
         "  C(m,n) = 0.5 * C(m,n) * (1 + tanh(0.7978845608028654 * (C(m,n) + 0.044715 * C(m,n) * C(m,n) * C(m,n))))\n}\n",
         256, 1},
        {"def s(bfloat16(M,K) A, bfloat16(K,N) B) -> (C) {\n  C(m,n) +=! A(m,k) * B(k,n)\n"
         "  C(m,n) = C(m,n) * sigmoid(C(m,n))\n}\n",
         256, 1},
        {"def f(float16(M,K) A, float16(K,N) B, float(N) bias, float(M,N) C) -> (C) {\n  C(m,n) +=! A(m,k) * B(k,n)\n"
         "  C(m,n) = tanh(C(m,n) + bias(n))\n}\n",
         256, 0},
        {"def r(float16(M,K) A, float16(K,N) B, float16(M,N) R) -> (C) {\n  C(m,n) +=! A(m,k) * B(k,n)\n"
         "  C(m,n) = C(m,n) + R(m,n)\n}\n",
         256, 0},
        {"def rr(float16(M,K) A, float16(K,N) B, float16(M,N) R, float16(M,N) Q) -> (C) {\n"
         "  C(m,n) +=! A(m,k) * B(k,n)\n  C(m,n) = tanh(C(m,n)) + R(m,n) * Q(m,n)\n}\n",
         128, 1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        tsl_arena *a = arena_create();
        tsl_diag d = {0};
        lang_module *mod;
        sched_plan *p = sm90_lower(a, "epi.tc", cases[c].src, &sched_options_defaults, &mod, &d);
        CHECK_MSG(p != NULL, "case %d: %s", (int)c, sb_str(&d.msg));
        int found = 0;
        for (int l = 0; p && l < p->nlaunches; l++) {
            const tile_kernel *k = p->launches[l].k;
            size_t n = strlen(k->name);
            if (n < 14 || strcmp(k->name + n - 14, "contract_wgmma")) continue;
            found = 1;
            strbuf sb = {0};
            tile_print_kernel(&sb, k);
            char want[32];
            snprintf(want, sizeof want, "cdiv(N, %d)", cases[c].bn);
            CHECK_MSG(strstr(sb_str(&sb), want) != NULL, "case %d: the grid is not in %s:\n%.300s", (int)c, want,
                      sb_str(&sb));
            /* a bias loads in the accumulator's layout reduced over the
             * rows (its broadcast in registers) */
            if (strstr(cases[c].src, "bias(n)"))
                CHECK_MSG(strstr(sb_str(&sb), "layout replicate(4).local(32).replicate(8).spatial(4).local(2)") != NULL,
                          "case %d: the bias is not in the accumulator's reduced layout:\n%.2000s", (int)c, sb_str(&sb));
            int approx = strstr(sb_str(&sb), "tanh.approx") || strstr(sb_str(&sb), "sigmoid.approx");
            CHECK_MSG(approx == cases[c].approx, "case %d: .approx ops %s, want %s", (int)c, approx ? "present" : "absent",
                      cases[c].approx ? "present" : "absent");
            sb_free(&sb);
        }
        CHECK_MSG(!p || found, "case %d: no contract_wgmma kernel", (int)c);
        if (p && c == 4) {
            static const int64_t sets[2][4] = {{150, 40, 136}, {37, 24, 200}};
            for (int i = 0; i < 2; i++)
                test_compare_plan(a, mod->defs[0], p, sets[i], test_run_tile_interp, "tile interp sm_90a epilogue");
        }
        diag_free(&d);
        arena_free(a);
    }
}

/* NVRTC compiles CUDA `source` for sm_90a (ptxas verbose) with no spills
 * to local memory; failures are CHECKed, naming `name` (also the .cu's
 * name in NVRTC's messages). -1 when NVRTC is not here (the check skips),
 * 0 when it did not compile, 1 when it did (its ptxas report into *out
 * when not NULL); a log holding `forbid` (when not NULL) fails the check. */
static int sm90a_compiles_clean(const char *source, const char *name, rt_ptxas_report *out, const char *forbid)
{
    tsl_diag d = {0};
    if (rt_cuda_nvrtc_available(&d) != TSL_OK) {
        diag_free(&d);
        return -1;
    }
    rt_cuda_options o = {0};
    o.ptxas_verbose = 1;
    o.name = name;
    void *cubin = NULL;
    size_t n = 0;
    char *log = NULL;
    tsl_status cs = rt_cuda_compile(source, "sm_90a", &o, &cubin, &n, &log, &d);
    CHECK_MSG(cs == TSL_OK, "%s: NVRTC: %s", name, sb_str(&d.msg));
    if (cs == TSL_OK) {
        rt_ptxas_report r;
        rt_cuda_ptxas_parse(log, &r);
        CHECK_MSG(r.found >= 1 && !r.spill_stores && !r.spill_loads, "%s: spills %d/%d", name, r.spill_stores,
                  r.spill_loads);
        if (out) *out = r;
        CHECK_MSG(!forbid || !log || !strstr(log, forbid), "%s: ptxas said %s:\n%.600s", name, forbid, log);
    }
    free(cubin);
    free(log);
    diag_free(&d);
    return cs == TSL_OK;
}

/* Tile IR text `text` (named `name`) parsed, verified and its first
 * kernel emitted as CUDA into *cu (the module in arena a). */
static tsl_status tile_text_cuda(tsl_arena *a, const char *name, const char *text, strbuf *cu, tsl_diag *d)
{
    tsl_source src = {name, text ? text : ""};
    tile_module *m = NULL;
    tsl_status st = tile_parse(a, &src, d, &m);
    if (!st) st = tile_verify(m, &src, d);
    if (!st) st = cg_cuda_emit(m, m->kernels[0], cu, d);
    return st;
}

/* The f16 accumulator's CUDA: m64nNk16.f16 on a packed shadow, packed
 * before the first wgmma and unpacked at wgmma_wait 0 only, and it
 * compiles for sm_90a with NVRTC with no spills. */
static void test_f16_acc_cuda(void)
{
    char *text = test_read_text("tests/tile_hopper", "wgmma_f16acc.tile");
    tsl_arena *a = arena_create();
    tsl_diag d = {0};
    strbuf cu = {0};
    tsl_status st = tile_text_cuda(a, "wgmma_f16acc.tile", text, &cu, &d);
    CHECK_MSG(st == TSL_OK, "%s", sb_str(&d.msg));
    const char *t = sb_str(&cu);
    int unpacks = 0;
    for (const char *q = t; (q = strstr(q, "_hf = 0;")); q++) unpacks++;
    CHECK_MSG(!st && strstr(t, "wgmma.mma_async.sync.aligned.m64n64k16.f16.f16.f16") && !strstr(t, "k16.f32"),
              "the f16 accumulator's wgmma is not .f16");
    /* the declaration's `int .._hf = 0;` and the two wait 0s: not wait 1 */
    CHECK_MSG(st || unpacks == 3, "%d places clear the packed flag, want 3 (declaration, two wait 0)", unpacks);
    if (!st) sm90a_compiles_clean(t, "wgmma_f16acc.cu", NULL, NULL);
    sb_free(&cu);
    diag_free(&d);
    arena_free(a);
    free(text);
}

/* ---- clusters --------------------------------------------------------------------------- */

/* The GEMM in clusters of two (examples/tile/gemm_wgmma_cluster.tile: B
 * multicast, remote releases): an odd number of M-tiles (the last
 * cluster's second block wholly past M), a ring that wraps, M = 1, random
 * sizes, blocks and instances interleaved at random. */
static void test_gemm_cluster(void)
{
    const char *f = "gemm_wgmma_cluster.tile";
    char *text = test_read_text("examples/tile", f);
    gemm_file_case(f, text, 300, 264, 520, 0);
    gemm_file_case(f, text, 1, 8, 8, 0);
    gemm_file_case(f, text, 300, 264, 520, 1);
    gemm_file_case(f, text, test_rand_int(1, 400), 8 * test_rand_int(1, 40), 8 * test_rand_int(1, 70), 1);
    free(text);
}

/* A cluster program with one line changed fails with a located message
 * containing `want` (in every interleaving tried). */
static void cluster_mutant2(const char *text, const char *old, const char *new, const char *old2, const char *new2,
                            const char *sizes, const char *want)
{
    const char *at = text ? strstr(text, old) : NULL;
    CHECK_MSG(at != NULL, "'%s' is not in the cluster GEMM", old);
    if (!at) return;
    strbuf m = {0}, m2 = {0};
    sb_printf(&m, "%.*s%s%s", (int)(at - text), text, new, at + strlen(old));
    if (old2) {
        const char *t = sb_str(&m), *at2 = strstr(t, old2);
        CHECK_MSG(at2 != NULL, "'%s' is not in the cluster GEMM", old2);
        if (!at2) {
            sb_free(&m);
            return;
        }
        sb_printf(&m2, "%.*s%s%s", (int)(at2 - t), t, new2, at2 + strlen(old2));
        sb_free(&m);
        m = m2;
    }
    for (int sh = 0; sh < 3; sh++) {
        prog p;
        prog_run(&p, "mut_cluster.tile", sb_str(&m), sizes, sh > 0, test_rand());
        CHECK_MSG(p.st != TSL_OK && strstr(p.msg, want), "mutant '%s' -> '%s' (shuffle %d): status %d\n  got: %.300s\n  want: %s",
                  old, new, sh > 0, p.st, p.msg, want);
        prog_free(&p);
    }
    sb_free(&m);
}

static void cluster_mutant(const char *text, const char *old, const char *new, const char *sizes, const char *want)
{
    cluster_mutant2(text, old, new, NULL, NULL, sizes, want);
}

/* What the interpreter catches in a cluster: a peer's barrier used
 * before a cluster_sync, a stage overwritten by the peer's multicast
 * before this block released it, a block exiting under its peer's
 * accesses, bytes that never arrive; and what the verifier refuses. */
static void test_cluster_hazards(void)
{
    char *text = test_read_text("examples/tile", "gemm_wgmma_cluster.tile");
    const char *sz = "M=300 N=264 K=520";
    cluster_mutant(text, "  sync\n  cluster_sync\n", "  sync\n", sz, "with no cluster_sync between its mbar_init and this use");
    /* each block releases only its own stages: the peer's multicast overwrites them unordered */
    cluster_mutant2(text, "          mbar_arrive empty[(k + 3) % 4] cta 0\n          mbar_arrive empty[(k + 3) % 4] cta 1\n",
                    "          mbar_arrive empty[(k + 3) % 4]\n", "mbar_init empty, 4", "mbar_init empty, 2", sz,
                    "hazard: the TMA load of producer 0 of block rank");
    cluster_mutant(text, "  }\n  cluster_sync\n}", "  }\n}", sz, "has exited");
    cluster_mutant(text, "multicast 3", "multicast 1", sz, "deadlock");
    cluster_mutant(text, "multicast 3", "multicast 4", sz, "multicast mask 4 names no block");
    cluster_mutant(text, "cta 1\n", "cta 2\n", sz, "cta 2 is not a block of the cluster");
    free(text);
    static const struct {
        const char *src, *want;
    } bad[] = {
        {"kernel k(X: global f32[8]) grid(1) threads(32) { cluster_sync }\n", "without cluster(N)"},
        {"kernel k(X: global f32[8]) grid(2) threads(32) cluster(2) { for i in 0 : 2 { cluster_sync } }\n",
         "top level"},
        {"kernel k(X: global f32[8]) grid(3) threads(32) cluster(2) { cluster_sync }\n", "not a multiple of cluster(2)"},
        {"kernel k(X: global f32[8]) grid(1) threads(32) { b = alloc shared u64[1]\n mbar_init b, 1\n mbar_arrive b[0] cta 0 }\n",
         "has no cluster"},
        {"kernel k(X: global f32[8]) grid(2) threads(32) cluster(2) { b = alloc shared u64[1]\n mbar_init b, 1\n "
         "mbar_arrive b[0] cta 2 }\n", "cta 2 is not a block"},
        {"kernel k(X: global f32[8]) grid(2) threads(32) cluster(2) { b = alloc shared u64[1]\n mbar_init b, 1\n "
         "mbar_arrive b[0] bytes 8 cta 1 }\n", "cannot expect transaction bytes"},
        {"kernel k(X: global f32[8]) grid(2) threads(32) cluster(9) { }\n", "cluster(9) is not in 1..8"},
    };
    for (size_t i = 0; i < TSL_COUNTOF(bad); i++) {
        tsl_arena *a = arena_create();
        tsl_source src = {"bad.tile", bad[i].src};
        tsl_diag d = {0};
        tile_module *m = NULL;
        tsl_status st = tile_parse(a, &src, &d, &m);
        if (!st) st = tile_verify(m, &src, &d);
        CHECK_MSG(st != TSL_OK && strstr(sb_str(&d.msg), bad[i].want), "bad program %d: got '%s', want '%s'", (int)i,
                  sb_str(&d.msg), bad[i].want);
        diag_free(&d);
        arena_free(a);
    }
}

/* Its CUDA: __cluster_dims__, a multicast TMA, remote arrives through
 * mapa, the cluster barrier; NVRTC compiles it for sm_90a with no spills. */
static void test_cluster_cuda(void)
{
    char *text = test_read_text("examples/tile", "gemm_wgmma_cluster.tile");
    tsl_arena *a = arena_create();
    tsl_diag d = {0};
    strbuf cu = {0};
    tsl_status st = tile_text_cuda(a, "gemm_wgmma_cluster.tile", text, &cu, &d);
    CHECK_MSG(st == TSL_OK, "%s", sb_str(&d.msg));
    const char *t = sb_str(&cu);
    CHECK_MSG(st || (strstr(t, "__cluster_dims__(2, 1, 1)") && strstr(t, "TSL_TMA_LOAD_MC(2,") &&
                     strstr(t, "tsl_mbar_arrive_cta(") && strstr(t, "tsl_cluster_sync();")),
              "the cluster GEMM's CUDA lacks a cluster construct");
    if (!st) sm90a_compiles_clean(t, "gemm_wgmma_cluster.cu", NULL, NULL);
    sb_free(&cu);
    diag_free(&d);
    arena_free(a);
    free(text);
    /* the contraction's wide sm_90a plan in clusters of two: its CUDA
     * compiles with no spills (the default plan's is checked elsewhere) */
    a = arena_create();
    tsl_source tc = {"hmm.tc", "def hmm(float16(M,K) A, float16(K,N) B) -> (C) {\n  C(m,n) +=! A(m,k) * B(k,n)\n}\n"};
    tsl_diag d2 = {0};
    sched_options o = sched_options_defaults;
    o.sm90_cluster = 2;
    lang_module *mod = lang_parse_check(a, &tc, &d2);
    graph *g = mod ? graph_build(a, mod->defs[0], &d2) : NULL;
    sched_plan *p = g ? sched_lower_opt(a, g, TSL_TARGET_CUDA, 90, &o, &d2) : NULL;
    const tile_kernel *k = NULL;
    for (int l = 0; p && l < p->nlaunches; l++)
        if (p->launches[l].k->cluster == 2) k = p->launches[l].k;
    CHECK_MSG(k != NULL, "no cluster launch in the plan: %s", sb_str(&d2.msg));
    strbuf cu2 = {0};
    tsl_diag d0 = {0};
    if (k && cg_cuda_emit(p->m, k, &cu2, &d2) == TSL_OK) {
        rt_ptxas_report r;
        if (sm90a_compiles_clean(sb_str(&cu2), "hmm_cluster.cu", &r, NULL) > 0)
            printf("    hmm sm_90a in clusters of two: %d registers, spills %d/%d\n", r.registers, r.spill_stores,
                   r.spill_loads);
    } else if (k) {
        CHECK_MSG(rt_cuda_nvrtc_available(&d0) != TSL_OK, "emit: %s", sb_str(&d2.msg));
    }
    diag_free(&d0);
    sb_free(&cu2);
    diag_free(&d2);
    arena_free(a);
}

/* ---- the sm_90a flash-attention kernel (sched/attn_sm90.c) ------------------------ */

/* O against a float64 softmax(Q K^T * scale) V over the unmasked columns,
 * per batch entry (the batch dims flattened). P is rounded to the input
 * dtype before the second product, O to the output's: a few ulps of it. */
static int check_attention(const prog *p, const sched_attn_sm90 *a, double scale, const char *what)
{
    int iq = find(p, "Q"), ik = find(p, "K"), iv = find(p, "V"), io = find(p, "O");
    const DLTensor *q = p->t[iq], *k = p->t[ik];
    int r = q->ndim;
    int64_t tq = q->shape[r - 2], tk = k->shape[r - 2], nb = 1;
    for (int i = 0; i < r - 2; i++) nb *= q->shape[i];
    double tol = a->dt == TSL_DTYPE_BF16 ? 2e-2 : 3e-3;
    double *s = malloc((size_t)(tk ? tk : 1) * sizeof *s);
    int ok = 1;
    for (int64_t b = 0; b < nb && ok; b++)
        for (int64_t i = 0; i < tq && ok; i++) {
            double mx = -INFINITY, sum = 0;
            for (int64_t j = 0; j < tk; j++) {
                double x = 0;
                for (int c = 0; c < a->d; c++)
                    x += at(p, iq, (b * tq + i) * a->d + c) * at(p, ik, (b * tk + j) * a->d + c);
                s[j] = a->causal && j > i ? -INFINITY : x * scale;
                if (s[j] > mx) mx = s[j];
            }
            for (int64_t j = 0; j < tk; j++) sum += s[j] = exp(s[j] - mx);
            for (int c = 0; c < a->e && ok; c++) {
                double want = 0;
                for (int64_t j = 0; j < tk; j++) want += s[j] / sum * at(p, iv, (b * tk + j) * a->e + c);
                double got = at(p, io, (b * tq + i) * a->e + c);
                if (!(fabs(got - want) <= tol)) {
                    CHECK_MSG(0, "%s: O[%lld, %lld, %d] = %.6g, want %.6g", what, (long long)b, (long long)i, c, got,
                              want);
                    ok = 0;
                }
            }
        }
    free(s);
    return ok;
}

/* The kernel for each shape it takes (batch ranks 0..2, head dims 64, 128,
 * 192, 256 and mixed, f16 and bf16, causal or not) verifies and, in the tile
 * interpreter at sizes no block divides (Tq, Tk = 1, primes, a block and
 * one over), matches the float64 softmax; the scale given as a literal. */
static void test_attn_sm90(void)
{
    static const struct {
        sched_attn_sm90 a;
        const char *sizes;
        int nsm; /* persistent: blocks (0: 1 to 3 by case) */
    } cases[] = {
        {{0, 64, 64, TSL_DTYPE_F16, 0, "0.125", 0, 1, 0}, "Tq=1 Tk=1", 0},
        {{1, 64, 64, TSL_DTYPE_F16, 0, "0.125", 0, 1, 0}, "B0=2 Tq=131 Tk=257", 0},
        {{1, 64, 64, TSL_DTYPE_F16, 1, "0.125", 0, 1, 0}, "B0=1 Tq=200 Tk=200", 0},
        {{2, 128, 128, TSL_DTYPE_F16, 0, "0.08838834764831845", 0, 1, 0}, "B0=1 B1=2 Tq=67 Tk=129", 0},
        {{1, 128, 128, TSL_DTYPE_BF16, 1, "0.08838834764831845", 0, 1, 0}, "B0=1 Tq=129 Tk=140", 0},
        {{1, 64, 128, TSL_DTYPE_BF16, 0, "0.125", 0, 1, 0}, "B0=1 Tq=37 Tk=300", 0},
        {{0, 128, 64, TSL_DTYPE_F16, 1, "0.08838834764831845", 0, 1, 0}, "Tq=17 Tk=5", 0},
        /* head dim 256: K/V blocks of 64 (bn_wide 0) through two stages a
         * ring; the rings wrap, rows past Tq and columns past Tk masked */
        {{0, 256, 256, TSL_DTYPE_BF16, 0, "0.0625", 0, 1, 0}, "Tq=1 Tk=1", 0},
        {{1, 256, 256, TSL_DTYPE_BF16, 0, "0.0625", 0, 1, 0}, "B0=1 Tq=67 Tk=197", 0},
        {{0, 256, 256, TSL_DTYPE_F16, 1, "0.0625", 0, 1, 0}, "Tq=131 Tk=140", 0},
        {{1, 256, 256, TSL_DTYPE_BF16, 1, "0.0625", 0, 1, 0}, "B0=1 Tq=70 Tk=37", 0},
        {{0, 64, 256, TSL_DTYPE_F16, 0, "0.125", 0, 1, 0}, "Tq=5 Tk=131", 0},
        /* blocks of 80 K/V rows (FlashAttention-3's d = 256 shape) */
        {{1, 256, 256, TSL_DTYPE_BF16, 1, "0.0625", 80, 1, 0}, "B0=1 Tq=131 Tk=197", 0},
        {{0, 256, 256, TSL_DTYPE_F16, 0, "0.0625", 80, 1, 0}, "Tq=37 Tk=161", 0},
        {{0, 192, 128, TSL_DTYPE_BF16, 1, "0.07216878364870323", 0, 1, 0}, "Tq=29 Tk=70", 0},
        /* causal, the query blocks taken last first (block 0 the partial
         * last one): Tq past Tk and short of it, neither a block multiple */
        {{1, 64, 64, TSL_DTYPE_F16, 1, "0.125", 0, 1, 0}, "B0=2 Tq=300 Tk=131", 0},
        {{0, 128, 128, TSL_DTYPE_F16, 1, "0.08838834764831845", 0, 1, 0}, "Tq=257 Tk=390", 0},
        /* two batch dims, causal, heads of one entry on one block */
        {{2, 64, 64, TSL_DTYPE_F16, 1, "0.125", 0, 1, 0}, "B0=1 B1=2 Tq=67 Tk=67", 0},
        {{2, 64, 64, TSL_DTYPE_F16, 1, "0.125", 0, 1, 0}, "B0=1 B1=2 Tq=131 Tk=131", 0},
        /* persistent causal: two whole rounds of 5 (the second dealt
         * backwards), groups of two entries and a last group of one */
        {{1, 64, 64, TSL_DTYPE_F16, 1, "0.125", 0, 1, 0}, "B0=5 Tq=200 Tk=200", 5},
        {{2, 64, 64, TSL_DTYPE_F16, 1, "0.125", 0, 1, 0}, "B0=3 B1=3 Tq=300 Tk=257", 7},
    };
    for (size_t r = 0; r < 2 * TSL_COUNTOF(cases); r++) {
        /* every case a block a query block, then persistent: blocks that
         * take 1 to 3 tiles each (c_nsm 1, 2, 3), so that a block's
         * rings, turns and Q barriers run on across its tiles; every
         * third case without the ping-pong turns */
        size_t c = r % TSL_COUNTOF(cases);
        int pers = r >= TSL_COUNTOF(cases);
        sched_attn_sm90 ac = cases[c].a;
        ac.pingpong = c % 3 != 1;
        ac.persistent = pers;
        const sched_attn_sm90 *a = &ac;
        char *text = sched_attn_sm90_text(a, "attn");
        CHECK_MSG(text != NULL, "case %d: no kernel", (int)c);
        if (!text) continue;
        char what[128], sizes[96];
        snprintf(sizes, sizeof sizes, "%s c_nsm=%d", cases[c].sizes, cases[c].nsm ? cases[c].nsm : (int)(c % 3) + 1);
        if (!pers) snprintf(sizes, sizeof sizes, "%s", cases[c].sizes);
        snprintf(what, sizeof what, "attention case %d (%s%s)", (int)c, sizes, pers ? ", persistent" : "");
        /* causal: the first tile is the last query block, the heaviest */
        CHECK_MSG(!a->causal || strstr(text, pers ? "let qb = nq - 1 - w / hc" : "let qb = cdiv(Tq, 128) - 1 - block_idx.x"),
                  "%s: query blocks not reversed", what);
        prog p;
        prog_run(&p, "attn.tile", text, sizes, (int)(c & 1), test_rand());
        CHECK_MSG(p.st == TSL_OK, "%s: %s\n%s", what, p.msg, text);
        if (p.st == TSL_OK) check_attention(&p, a, strtod(a->scale, NULL), what);
        prog_free(&p);
        free(text);
    }
    sched_attn_sm90 bad = {3, 64, 64, TSL_DTYPE_F16, 0, "0.1", 0, 0, 0};
    const char *why = NULL;
    CHECK(!sched_attn_sm90_fits(&bad, &why) && why && strstr(why, "batch"));
    bad.nbatch = 1, bad.d = 96;
    CHECK(!sched_attn_sm90_fits(&bad, &why) && strstr(why, "head dims") && !sched_attn_sm90_text(&bad, "x"));
    bad.d = 320;
    CHECK(!sched_attn_sm90_fits(&bad, &why) && strstr(why, "head dims") && !sched_attn_sm90_text(&bad, "x"));
}

/* The head-dim-256 kernel's CUDA (blocks of 80, the default) and the
 * persistent d = e = 128 one (causal) compile for sm_90a with NVRTC within
 * their registers (no spills), and ptxas inserts no warpgroup.arrive of
 * its own (C7519: the register-A operand P written between a fence and its
 * wgmma, which serialises the P V chain). */
static void test_attn_sm90_cuda(void)
{
    static const sched_attn_sm90 shapes[] = {
        {1, 256, 256, TSL_DTYPE_BF16, 1, "0.0625", 80, 1, 0},
        {2, 128, 128, TSL_DTYPE_F16, 1, "0.08838834764831845", 80, 1, 1},
    };
    for (size_t c = 0; c < TSL_COUNTOF(shapes); c++) {
        char *text = sched_attn_sm90_text(&shapes[c], "attn");
        tsl_arena *a = arena_create();
        tsl_diag d = {0};
        strbuf cu = {0};
        tsl_status st = tile_text_cuda(a, "attn.tile", text, &cu, &d);
        CHECK_MSG(st == TSL_OK, "shape %d: %s", (int)c, sb_str(&d.msg));
        if (!st) sm90a_compiles_clean(sb_str(&cu), c ? "attn128p.cu" : "attn256.cu", NULL, "C7519");
        sb_free(&cu);
        diag_free(&d);
        arena_free(a);
        free(text);
    }
}

/* A scalar scale drawn negative: max(x * c) is then min(x) * c, not
 * max(x) * c, so the kernel must scale before it takes the row max. */
static double negative(tsl_dtype t, void *ctx)
{
    (void)t, (void)ctx;
    return test_rand_double(-1.5, -0.5);
}

/* The attention strategy's sm_90a plan (sched/attn_sm90.c) run through the
 * tile interpreter against the TC interpreter: TC attention as users write
 * it (scale by 1/sqrt(D), a negative literal or a scalar parameter,
 * positive or negative; a causal mask j <= i with -1e30), f16 and bf16,
 * batch and heads leading, Tq != Tk, sizes no block divides; head dims
 * 64, 128 and 256 take the wgmma kernels, others (192 included: a symbol
 * gets no kernel for it) the fallback plan the guards leave them to. */
static void test_attn_sm90_plan(void)
{
    static const struct {
        const char *src;
        int64_t sets[3][6]; /* size slots in declaration order */
        int neg;            /* the scalar c drawn in [-1.5, -0.5) */
    } cases[] = {
        {"def ca(float16(B,H,Tq,D) Q, float16(B,H,Tk,D) K, float16(B,H,Tk,E) V) -> (O) {\n"
         "  S(b,h,i,j) +=! Q(b,h,i,d) * K(b,h,j,d)\n  S(b,h,i,j) = S(b,h,i,j) / sqrt(D)\n"
         "  S(b,h,i,j) = j <= i ? S(b,h,i,j) : -1e30\n  m(b,h,i) max=! S(b,h,i,j)\n"
         "  P(b,h,i,j) = exp(S(b,h,i,j) - m(b,h,i))\n  l(b,h,i) +=! P(b,h,i,j)\n"
         "  O(b,h,i,e) +=! P(b,h,i,j) * V(b,h,j,e)\n  O(b,h,i,e) = O(b,h,i,e) / l(b,h,i)\n}\n",
         {{1, 2, 67, 64, 67, 64}, {1, 1, 37, 128, 150, 64}, {1, 1, 5, 192, 7, 64}}, 0},
        {"def sa(bfloat16(B,Tq,D) Q, bfloat16(B,Tk,D) K, bfloat16(B,Tk,E) V, float c) -> (O) {\n"
         "  S(b,i,j) +=! Q(b,i,d) * K(b,j,d)\n  S(b,i,j) = S(b,i,j) * c\n  m(b,i) max=! S(b,i,j)\n"
         "  P(b,i,j) = exp(S(b,i,j) - m(b,i))\n  l(b,i) +=! P(b,i,j)\n"
         "  O(b,i,e) +=! P(b,i,j) * V(b,j,e)\n  O(b,i,e) = O(b,i,e) / l(b,i)\n}\n",
         {{2, 1, 128, 1, 128}, {1, 131, 64, 257, 128}, {1, 37, 256, 67, 256}}, 0},
        /* scales whose sign the kernel cannot count on, which it
         * multiplies in before the row max: a negative literal, a
         * scalar parameter drawn negative (neg) */
        {"def na(float16(B,H,Tq,D) Q, float16(B,H,Tk,D) K, float16(B,H,Tk,E) V) -> (O) {\n"
         "  S(b,h,i,j) +=! Q(b,h,i,d) * K(b,h,j,d)\n  S(b,h,i,j) = S(b,h,i,j) * -0.125\n"
         "  S(b,h,i,j) = j <= i ? S(b,h,i,j) : -1e30\n  m(b,h,i) max=! S(b,h,i,j)\n"
         "  P(b,h,i,j) = exp(S(b,h,i,j) - m(b,h,i))\n  l(b,h,i) +=! P(b,h,i,j)\n"
         "  O(b,h,i,e) +=! P(b,h,i,j) * V(b,h,j,e)\n  O(b,h,i,e) = O(b,h,i,e) / l(b,h,i)\n}\n",
         {{1, 2, 131, 64, 131, 64}, {1, 1, 67, 128, 257, 256}}, 0},
        {"def nc(float16(B,Tq,D) Q, float16(B,Tk,D) K, float16(B,Tk,E) V, float c) -> (O) {\n"
         "  S(b,i,j) +=! Q(b,i,d) * K(b,j,d)\n  S(b,i,j) = S(b,i,j) * c\n  m(b,i) max=! S(b,i,j)\n"
         "  P(b,i,j) = exp(S(b,i,j) - m(b,i))\n  l(b,i) +=! P(b,i,j)\n"
         "  O(b,i,e) +=! P(b,i,j) * V(b,j,e)\n  O(b,i,e) = O(b,i,e) / l(b,i)\n}\n",
         {{2, 131, 64, 200, 64}, {1, 37, 128, 257, 128}}, 1},
    };
    for (size_t c = 0; c < TSL_COUNTOF(cases); c++) {
        tsl_arena *a = arena_create();
        tsl_diag d = {0};
        lang_module *mod;
        sched_plan *p = sm90_lower(a, "attn90.tc", cases[c].src, NULL, &mod, &d);
        CHECK_MSG(p != NULL, "%s", sb_str(&d.msg));
        int wg = 0, tile = 0, unless = 0;
        for (int l = 0; p && l < p->nlaunches; l++) {
            int fl = strstr(p->launches[l].k->name, "_sm90_") != NULL;
            wg += fl;
            tile += strstr(p->launches[l].k->name, "_attention") != NULL && !fl;
            unless += !fl && sched_guard_nunless(&p->launches[l].guard) > 0;
        }
        /* one per head-dim pair; without a causal mask the six pairs of
         * e <= 128 twice, persistent under Tk <= 1024 and not past it
         * (the sizes below take the persistent one) */
        int causal = strstr(cases[c].src, "j <= i") != NULL, want = causal ? 9 : 15;
        CHECK_MSG(!p || wg == want, "case %d: %d sm_90a launches, want %d", (int)c, wg, want);
        /* other head dims: the group's parts (wgmma GEMMs, softmax rows),
         * each unless a flash kernel's head dims hold; not the generic
         * fused plan (D96 on an H100: 2.84 ms against the parts' 0.81) */
        CHECK_MSG(!p || (tile == 0 && unless == p->nlaunches - wg && unless >= 3),
                  "case %d: %d generic attention kernels, %d of %d other launches guarded by unless", (int)c, tile,
                  unless, p ? p->nlaunches - wg : 0);
        /* f16's tolerance as test_compare_plan's: the reference rounds S
         * to f16 (half an ulp at |S| >= 8 is 4e-3 of P), the kernel not */
        static const test_draw neg = {.scalar_value = negative, .tol = 2e-2};
        for (int i = 0; p && i < 3; i++) {
            if (!cases[c].sets[i][0]) continue;
            if (cases[c].neg)
                test_compare_plan_draw(a, mod->defs[0], p, cases[c].sets[i], test_run_tile_interp,
                                       "tile interp sm_90a, c < 0", &neg);
            else
                test_compare_plan(a, mod->defs[0], p, cases[c].sets[i], test_run_tile_interp, "tile interp sm_90a");
        }
        diag_free(&d);
        arena_free(a);
    }
}

TEST_SUITE(tile_hopper) = {
    {"f16_acc_cuda", test_f16_acc_cuda},
    {"mem_tasks", test_mem_tasks},
    {"mem_async_proxy", test_mem_async_proxy},
    {"gemm_wgmma", test_gemm_wgmma},
    {"gemm_wgmma_shuffled", test_gemm_wgmma_shuffled},
    {"programs", test_programs},
    {"hazards", test_hazards},
    {"sm90_plan", test_sm90_plan},
    {"sm90_epilogue", test_sm90_epilogue},
    {"attn_sm90", test_attn_sm90},
    {"attn_sm90_plan", test_attn_sm90_plan},
    {"attn_sm90_cuda", test_attn_sm90_cuda},
    {"gemm_cluster", test_gemm_cluster},
    {"cluster_hazards", test_cluster_hazards},
    {"cluster_cuda", test_cluster_cuda},
    {0, 0},
};
