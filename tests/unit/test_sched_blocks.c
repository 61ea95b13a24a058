/* test_sched_blocks.c — the strategies' building blocks (src/sched/blocks.h)
 * on their own: a plan built by hand with the kernel shell (parameters
 * recorded in a first pass, the header in parameter order, verification,
 * the launch and its arguments), a statement body on a register tile and
 * the row reduction, run through the tile interpreter and the CPU target
 * against the TC interpreter on fresh random inputs (outputs poisoned) at
 * sizes 1, primes and non-multiples of the 16 x 64 tile; and a kernel whose
 * layout text does not parse is declined with a note, not a crash. */
#include <string.h>

#include "graph/graph.h"
#include "sched/blocks.h"
#include "sched_runners.h"
#include "test.h"

/* The def the hand-built kernel computes: per row m, the sum over n of
 * X(m, n) * w(m) + 0.5 (w a column vector read through the body block). */
static const char *const bk_src = "def rs(float(M,N) X, float(M) w) -> (Y) {\n"
                                  "  Y(m) +=! X(m,n)\n"
                                  "  Y(m) = Y(m) * w(m) + 0.5\n"
                                  "}\n";

typedef struct bk_ctx {
    const graph *g;
    int bad_layout; /* write a layout that does not parse */
} bk_ctx;

/* The tile origin: row block_idx.x * 16, column 0. */
static tile_expr *bk_origin(void *ctx, int var)
{
    sched_blk *kb = ctx;
    return var == 0 ? sched_blk_bin(kb, TILE_OP_MUL, sched_blk_bidx(kb, 0), sched_blk_int(kb, 16)) : sched_blk_int(kb, 0);
}

static int bk_covers(void *ctx, const graph_op *op, int var, int ti, int dim)
{
    (void)ctx, (void)op, (void)ti;
    return var == dim;
}

/* grid(cdiv(M, 16)) threads(128): X's [16, 64] tile (N <= 64), reduce.sum
 * along dim 1, the epilogue op's body on the [16] row tile, store Y. */
static int bk_build(sched_blk *kb, void *vctx)
{
    bk_ctx *ctx = vctx;
    const lang_def *def = kb->def;
    int tx = 0, ty = 2;
    tile_value *X = sched_blk_tensor(kb, tx);
    tile_value *Y = sched_blk_tensor(kb, ty);
    tile_expr *grid = sched_blk_bin(kb, TILE_OP_CDIV, sched_blk_extent(kb, def->tensors[tx]->shape[0]), sched_blk_int(kb, 16));
    sched_blk_grid(kb, 1, &grid, 128, 0);
    tile_layout *l2 = sched_blk_layout(kb, ctx->bad_layout ? "spatial(4,32).bogus(4,2)" : "spatial(4,32).local(4,2)");
    tile_expr *at[2] = {bk_origin(kb, 0), sched_blk_int(kb, 0)};
    tile_value *x = sched_blk_load_global(kb, "c_x", sched_blk_at(kb, X, 2, at),
                                          sched_blk_type2(kb, TILE_REGISTER, TSL_DTYPE_F32, 16, 64, l2));
    const char *rl = "spatial(4).replicate(32).local(4)";
    tile_value *s = sched_blk_reduce(kb, TILE_I_REDUCE_SUM, "c_s", x, 1, sched_blk_layout(kb, "%s", rl));
    /* the epilogue op (statement 1) on the row tile: Y's tile is [16] and
     * the body block works on rows x cols tiles, so it sees a 16 x 1 view */
    int64_t d2[2] = {16, 1};
    const char *vl = "spatial(4, 1).replicate(32).local(4, 1)";
    tile_value *s2 = sched_blk_view(kb, "c_s2", s, sched_blk_type(kb, TILE_REGISTER, TSL_DTYPE_F32, 2, d2,
                                                                   sched_blk_layout(kb, "%s", vl)));
    sched_blk_tile T = {.kb = kb, .tc = ty, .cur = s2, .rows = 16, .cols = 1, .threads = 128, .lay = vl,
                        .vm = 0, .vn = -1, .origin = bk_origin, .covers = bk_covers, .ctx = kb};
    sched_blk_val v;
    const graph_op *op = &ctx->g->ops[1];
    if (!sched_blk_body(&T, op, op->body, &v)) return 0;
    tile_value *r = sched_blk_as_tile(&T, v);
    int64_t d1 = 16;
    tile_value *r1 = sched_blk_view(kb, "c_r", r, sched_blk_type(kb, TILE_REGISTER, TSL_DTYPE_F32, 1, &d1,
                                                                 sched_blk_layout(kb, "%s", rl)));
    sched_blk_store_global(kb, r1, sched_blk_at1(kb, Y, bk_origin(kb, 0)));
    return 1;
}

static sched_plan *bk_plan(tsl_arena *a, const lang_def *def, const graph *g, int bad)
{
    sched_plan *p = arena_alloc(a, sizeof *p);
    memset(p, 0, sizeof *p);
    p->def = def;
    p->target = TSL_TARGET_CPU;
    p->sm = 80;
    p->opt = &sched_options_defaults;
    p->m = tile_module_new(a);
    bk_ctx ctx = {g, bad};
    sched_blk kb;
    tile_kernel *k = sched_blk_build(&kb, p, def, "rs_blocks", bk_build, &ctx);
    if (!k) return p;
    sched_blk_add(&kb, k, 0, 2, NULL);
    return p;
}

static void test_hand_built(void)
{
    tsl_arena *a = arena_create();
    tsl_source src = {"blocks.tc", bk_src};
    tsl_diag d = {0};
    lang_module *mod = lang_parse_check(a, &src, &d);
    CHECK_MSG(mod != NULL, "%s", sb_str(&d.msg));
    graph *g = mod ? graph_build(a, mod->defs[0], &d) : NULL;
    CHECK(g != NULL && g->nops == 2);
    if (g && g->nops == 2) {
        sched_plan *p = bk_plan(a, mod->defs[0], g, 0);
        CHECK_MSG(p->nlaunches == 1, "the kernel was declined: %s", p->notes ? p->notes : "");
        if (p->nlaunches == 1) {
            /* parameters in order: X, Y (tensors), w (read by the body), then
             * no int parameter (M and N are X's extents) */
            const tile_kernel *k = p->launches[0].k;
            CHECK(k->nparams == 3 && !strcmp(k->params[0]->name, "X") && !strcmp(k->params[1]->name, "Y") &&
                  !strcmp(k->params[2]->name, "w"));
            CHECK(p->launches[0].nargs == 3 && p->launches[0].args[2].tensor == 1);
            static const int64_t sizes[][2] = {{1, 1}, {17, 37}, {33, 64}, {5, 2}};
            for (size_t s = 0; s < TSL_COUNTOF(sizes); s++) {
                int64_t sz[2] = {sizes[s][0], sizes[s][1]};
                test_compare_plan(a, mod->defs[0], p, sz, test_run_tile_interp, "tile interpreter, blocks");
                test_compare_plan(a, mod->defs[0], p, sz, test_run_cpu, "cpu, blocks");
            }
        }
        sched_plan *bad = bk_plan(a, mod->defs[0], g, 1);
        CHECK(bad->nlaunches == 0 && bad->notes && strstr(bad->notes, "bogus"));
    }
    diag_free(&d);
    arena_free(a);
}

TEST_SUITE(sched_blocks) = {
    {"hand_built", test_hand_built},
    {0},
};
