/* test_target.c — the atom tables (src/target): every layout parses and
 * fits its row's shape, the fragment layouts against the PTX ISA's index
 * formulas written here independently of the tables, the lookups (by
 * name, alias, PTX spelling, kind + shape + dtypes + arch), the targets'
 * availability rules, and the reference semantics of the collective atoms
 * against a plain matrix product / transpose. */
#include <string.h>

#include "target/target.h"
#include "test.h"

static const target_atom *named(const char *name)
{
    const target_atom *a = target_atom_by_name(name);
    CHECK_MSG(a != NULL, "no row named %s", name);
    return a;
}

/* ---- tables ------------------------------------------------------------------------ */

static void test_layouts_parse(void)
{
    int n = target_atom_count();
    CHECK(n == target_sm80_natoms + target_sm90_natoms + target_cpu_natoms);
    for (int i = 0; i < n; i++) {
        const target_atom *a = target_atom_at(i);
        CHECK_MSG(a->name && a->what, "row %d lacks a name or a description", i);
        CHECK_MSG(a->ptx || a->c, "%s prints nowhere", a->name);
        for (int o = 0; o < TARGET_NOPER; o++) {
            if (!a->layout[o]) continue;
            const dist_layout *l = target_atom_layout(a, o);
            CHECK_MSG(l != NULL, "%s: operand %d layout '%s' does not parse", a->name, o, a->layout[o]);
            if (!l) continue;
            CHECK_MSG(l->threads == a->threads, "%s: operand %d spreads over %lld threads, the row says %d",
                      a->name, o, (long long)l->threads, a->threads);
            if (a->kind == TARGET_K_MMA || a->kind == TARGET_K_WGMMA || (a->kind == TARGET_K_SCALAR && a->m)) {
                int64_t want[4][2] = {{a->m, a->k}, {a->k, a->n}, {a->m, a->n}, {a->m, a->n}};
                CHECK_MSG(l->rank == 2 && l->shape[0] == want[o][0] && l->shape[1] == want[o][1],
                          "%s: operand %d layout covers %lldx%lld", a->name, o, (long long)l->shape[0],
                          (long long)l->shape[1]);
            }
            if (a->kind == TARGET_K_LDMATRIX || a->kind == TARGET_K_STMATRIX)
                CHECK_MSG(l->rank == 2 && l->shape[0] == 8 && l->shape[1] == 8 && l->locals == 2,
                          "%s: one 8x8 matrix, 2 elements per lane", a->name);
        }
        /* a dtype left 0 would mean f16: every row says ANY or a dtype on purpose */
        if (a->kind == TARGET_K_VEC || a->kind == TARGET_K_CP_ASYNC || a->kind == TARGET_K_TMA ||
            a->kind == TARGET_K_LDMATRIX || a->kind == TARGET_K_STMATRIX)
            CHECK_MSG(a->dtype[2] == TARGET_DT_ANY, "%s: a move's dtypes are ANY", a->name);
    }
}

/* The same (name, bytes, dtypes) twice would make lookups ambiguous. */
static void test_rows_distinct(void)
{
    int n = target_atom_count();
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            const target_atom *a = target_atom_at(i), *b = target_atom_at(j);
            int same = !strcmp(a->name, b->name) && a->bytes == b->bytes && !memcmp(a->dtype, b->dtype, sizeof a->dtype);
            CHECK_MSG(!same, "rows %d and %d are both %s", i, j, a->name);
        }
}

/* ---- fragments against the PTX ISA, formulas written here ----------------------------- */

/* lane l, slot i -> (row, col); g = l / 4, q = l % 4 */
static void ptx_m16n8k16(int op, int l, int i, int64_t *r, int64_t *c)
{
    int g = l / 4, q = l % 4;
    if (op == TARGET_A) *r = g + 8 * ((i / 2) % 2), *c = 2 * q + i % 2 + 8 * (i / 4);
    else if (op == TARGET_B) *r = 2 * q + i % 2 + 8 * (i / 2), *c = g;
    else *r = g + 8 * (i / 2), *c = 2 * q + i % 2;
}

static void ptx_m16n8k8(int op, int l, int i, int64_t *r, int64_t *c)
{
    int g = l / 4, q = l % 4;
    if (op == TARGET_A) *r = g + 8 * (i / 2), *c = 2 * q + i % 2;
    else if (op == TARGET_B) *r = 2 * q + i, *c = g;
    else *r = g + 8 * (i / 2), *c = 2 * q + i % 2;
}

static void check_frag(const target_atom *a, int op, int slots,
                       void (*want)(int op, int l, int i, int64_t *r, int64_t *c))
{
    for (int l = 0; l < 32; l++)
        for (int i = 0; i < slots; i++) {
            int64_t r, c, wr, wc;
            CHECK(target_frag_coord(a, op, l, i, &r, &c) == 0);
            want(op, l, i, &wr, &wc);
            CHECK_MSG(r == wr && c == wc, "%s operand %d lane %d slot %d: (%lld,%lld), PTX (%lld,%lld)", a->name, op,
                      l, i, (long long)r, (long long)c, (long long)wr, (long long)wc);
        }
    CHECK(target_frag_coord(a, op, 0, slots, &(int64_t){0}, &(int64_t){0}) == -1);
}

static void test_mma_fragments(void)
{
    const char *k16[] = {"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
                         "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
                         "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16", "scalar.mma.m16n8k16"};
    for (size_t i = 0; i < TSL_COUNTOF(k16); i++) {
        const target_atom *a = named(k16[i]);
        if (!a) continue;
        check_frag(a, TARGET_A, 8, ptx_m16n8k16);
        check_frag(a, TARGET_B, 4, ptx_m16n8k16);
        check_frag(a, TARGET_C, 4, ptx_m16n8k16);
        check_frag(a, TARGET_D, 4, ptx_m16n8k16);
    }
    /* Tilus' example: thread 5, local 3 of the C fragment holds (9, 3) */
    int64_t r9, c3;
    const target_atom *dflt = target_mma_resolve(NULL, TSL_DTYPE_F16, TSL_DTYPE_F32, NULL);
    CHECK(dflt && target_frag_coord(dflt, TARGET_C, 5, 3, &r9, &c3) == 0 && r9 == 9 && c3 == 3);
    const char *k8[] = {"mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32", "scalar.mma.m16n8k8"};
    for (size_t i = 0; i < TSL_COUNTOF(k8); i++) {
        const target_atom *a = named(k8[i]);
        if (!a) continue;
        check_frag(a, TARGET_A, 4, ptx_m16n8k8);
        check_frag(a, TARGET_B, 2, ptx_m16n8k8);
        check_frag(a, TARGET_C, 4, ptx_m16n8k8);
    }
}

/* wgmma m64nNk16 (PTX ISA "Register Fragments" of wgmma): thread t of
 * the warpgroup, w = t / 32, lane l: D slot i -> row 16w + l/4 + 8((i/2)%2),
 * col 8(i/4) + 2(l%4) + i%2; A in registers the same with N = 16 */
static void test_wgmma_fragments(void)
{
    int rows = 0;
    for (int i = 0, n = target_atom_count(); i < n; i++) {
        const target_atom *a = target_atom_at(i);
        if (a->kind != TARGET_K_WGMMA) continue;
        rows++;
        CHECK(a->m == 64 && a->k == 16 && a->n % 8 == 0 && a->n >= 8 && a->n <= 256 && a->threads == 128);
        CHECK(a->sm == 90 && a->sm_a && (a->space[TARGET_A] & TARGET_SP_SHARED) &&
              (a->space[TARGET_A] & TARGET_SP_REGISTER) && a->space[TARGET_B] == TARGET_SP_SHARED);
        const dist_layout *ld = target_atom_layout(a, TARGET_D), *la = target_atom_layout(a, TARGET_A);
        CHECK(ld && ld->locals == a->n / 2 && la && la->locals == 8);
        for (int t = 0; t < 128; t++) {
            int w = t / 32, l = t % 32;
            for (int s = 0; s < a->n / 2; s++) {
                int64_t r, c;
                CHECK(target_frag_coord(a, TARGET_D, t, s, &r, &c) == 0);
                int64_t wr = 16 * w + l / 4 + 8 * ((s / 2) % 2), wc = 8 * (s / 4) + 2 * (l % 4) + s % 2;
                CHECK_MSG(r == wr && c == wc, "%s D thread %d slot %d: (%lld,%lld), PTX (%lld,%lld)", a->name, t, s,
                          (long long)r, (long long)c, (long long)wr, (long long)wc);
            }
            for (int s = 0; s < 8; s++) {
                int64_t r, c;
                CHECK(target_frag_coord(a, TARGET_A, t, s, &r, &c) == 0);
                CHECK(r == 16 * w + l / 4 + 8 * ((s / 2) % 2) && c == 8 * (s / 4) + 2 * (l % 4) + s % 2);
            }
        }
    }
    CHECK_EQ_INT(rows, 32 * 3); /* N = 8..256 step 8; f16->f32, bf16->f32, f16->f16 */
    const target_atom *a = named("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16");
    CHECK(a && a->dtype[TARGET_A] == TSL_DTYPE_BF16 && a->dtype[TARGET_D] == TSL_DTYPE_F32 && a->n == 256);
}

/* ldmatrix / stmatrix: lane l, element e of register m is (row l/4, col
 * 2(l%4) + e) of matrix m; .trans: (row 2(l%4) + e, col l/4) */
static void test_ldmatrix_maps(void)
{
    const char *names[] = {"ldmatrix.x1", "ldmatrix.x2", "ldmatrix.x4", "ldmatrix.x1.trans", "ldmatrix.x2.trans",
                           "ldmatrix.x4.trans", "stmatrix.x1", "stmatrix.x2", "stmatrix.x4", "stmatrix.x4.trans"};
    double rows[32][8], out[32][8], back[32][8];
    for (size_t i = 0; i < TSL_COUNTOF(names); i++) {
        const target_atom *a = named(names[i]);
        if (!a) continue;
        int n = a->count, tr = a->trans;
        CHECK(n == (int)(names[i][10] - '0'));
        for (int r = 0; r < 32; r++)
            for (int c = 0; c < 8; c++) rows[r][c] = test_rand_double(-1, 1), out[r][c] = back[r][c] = NAN;
        if (a->kind == TARGET_K_LDMATRIX) {
            target_ldmatrix_ref(a, rows, out);
            for (int l = 0; l < 32; l++)
                for (int m = 0; m < 4; m++)
                    for (int e = 0; e < 2; e++) {
                        int r = tr ? 2 * (l % 4) + e : l / 4, c = tr ? l / 4 : 2 * (l % 4) + e;
                        if (m < n) CHECK_MSG(out[l][2 * m + e] == rows[8 * m + r][c], "%s lane %d reg %d", a->name, l, m);
                        else CHECK(isnan(out[l][2 * m + e]));
                    }
        } else {
            target_stmatrix_ref(a, rows, back);
            for (int l = 0; l < 32; l++)
                for (int m = 0; m < n; m++)
                    for (int e = 0; e < 2; e++) {
                        int r = tr ? 2 * (l % 4) + e : l / 4, c = tr ? l / 4 : 2 * (l % 4) + e;
                        CHECK_MSG(back[8 * m + r][c] == rows[l][2 * m + e], "%s lane %d reg %d", a->name, l, m);
                    }
        }
    }
}

/* target_mma_ref against a plain product in f32, on random f16-exact values */
static void test_mma_ref(void)
{
    const char *names[] = {"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
                           "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32"};
    for (size_t t = 0; t < TSL_COUNTOF(names); t++) {
        const target_atom *a = named(names[t]);
        if (!a) continue;
        double A[16][16], B[16][8], C[16][8], fa[32 * 8], fb[32 * 4], fc[32 * 4], fd[32 * 4];
        for (int i = 0; i < 16; i++)
            for (int j = 0; j < 16; j++) A[i][j] = (double)test_rand_int(-64, 64) / 16;
        for (int i = 0; i < 16; i++)
            for (int j = 0; j < 8; j++) B[i][j] = (double)test_rand_int(-64, 64) / 16, C[i][j] = test_rand_double(-1, 1);
        int na = (int)target_atom_layout(a, TARGET_A)->locals, nb = (int)target_atom_layout(a, TARGET_B)->locals;
        for (int l = 0; l < 32; l++) {
            int64_t r, c;
            for (int i = 0; i < na; i++) target_frag_coord(a, TARGET_A, l, i, &r, &c), fa[l * na + i] = A[r][c];
            for (int i = 0; i < nb; i++) target_frag_coord(a, TARGET_B, l, i, &r, &c), fb[l * nb + i] = B[r][c];
            for (int i = 0; i < 4; i++) target_frag_coord(a, TARGET_C, l, i, &r, &c), fc[l * 4 + i] = C[r][c];
        }
        target_mma_ref(a, fa, fb, fc, fd);
        for (int l = 0; l < 32; l++)
            for (int i = 0; i < 4; i++) {
                int g = l / 4, q = l % 4, r = g + 8 * (i / 2), c = 2 * q + i % 2;
                double want = C[r][c], mag = fabs(C[r][c]);
                for (int k = 0; k < a->k; k++) want += A[r][k] * B[k][c], mag += fabs(A[r][k] * B[k][c]);
                /* the reference accumulates in f32 as the hardware does: each
                 * of the k + 1 roundings is at most half an f32 ulp of a
                 * partial sum, which can be far larger than the result */
                CHECK_MSG(fabs(fd[l * 4 + i] - want) <= (a->k + 1) * 0x1p-24 * mag, "%.9g vs %.9g (terms %.3g)",
                          fd[l * 4 + i], want, mag);
            }
    }
}

/* ---- lookups ------------------------------------------------------------------------- */

static void test_lookups(void)
{
    target_query q = target_query_any();
    int named_ = 0;
    /* an alias resolves by the operands' dtypes */
    q.dtype[TARGET_A] = TSL_DTYPE_BF16;
    q.dtype[TARGET_C] = TSL_DTYPE_F32;
    const target_atom *a = target_atom_resolve("m16n8k16", &q, &named_);
    CHECK(a && named_ && !strcmp(a->name, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"));
    q.dtype[TARGET_A] = TSL_DTYPE_BF16;
    q.dtype[TARGET_C] = TSL_DTYPE_F16; /* bf16 with f16 accumulators: PTX has none */
    CHECK(!target_atom_resolve("m16n8k16", &q, &named_) && named_);
    CHECK(!target_atom_resolve("m16n8k32", NULL, &named_) && !named_);
    /* PTX spellings of plain moves */
    q = target_query_any();
    a = target_atom_resolve("st.shared.v2.f32", &q, &named_);
    CHECK(a && !strcmp(a->name, "st.shared.v2.u32") && a->bytes == 8);
    a = target_atom_resolve("ld.global.b16", &q, NULL);
    CHECK(a && !strcmp(a->name, "scalar.ld.global"));
    CHECK(!target_atom_resolve("ld.local.v4.u32", &q, &named_) && !named_);
    q.op = TARGET_OP_LD_SHARED;
    CHECK(!target_atom_resolve("st.shared.v4.u32", &q, NULL));
    /* cp.async: the bytes pick the row */
    q = target_query_any();
    q.bytes = 8;
    a = target_atom_resolve("cp.async.ca.shared.global", &q, NULL);
    CHECK(a && a->bytes == 8 && a->kind == TARGET_K_CP_ASYNC);
    q.bytes = 16;
    CHECK(!target_atom_resolve("cp.async.ca.shared.global", &q, &named_) && named_);
    /* by kind + shape + dtypes + arch, widest first */
    const target_atom *out[8];
    q = target_query_any();
    q.op = TARGET_OP_LD_GLOBAL;
    CHECK_EQ_INT(target_atom_find(&target_sm80, TARGET_K_VEC, &q, out, 8), 3);
    CHECK(out[0]->bytes == 16 && out[1]->bytes == 8 && out[2]->bytes == 4);
    q = target_query_any();
    q.m = 64, q.n = 128, q.k = 16;
    q.dtype[TARGET_A] = TSL_DTYPE_F16;
    q.dtype[TARGET_D] = TSL_DTYPE_F32;
    CHECK_EQ_INT(target_atom_find(&target_sm80, TARGET_K_WGMMA, &q, out, 8), 0);
    CHECK_EQ_INT(target_atom_find(&target_sm90a, TARGET_K_WGMMA, &q, out, 8), 1);
    CHECK(!strcmp(out[0]->name, "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16"));
    CHECK_EQ_INT(target_atom_find(target_by_name("sm_90"), TARGET_K_WGMMA, &q, out, 8), 0); /* needs sm_90a */
    q = target_query_any();
    q.count = 3;
    CHECK_EQ_INT(target_atom_find(&target_sm90a, TARGET_K_TMA, &q, out, 8), 3); /* load, multicast, store */
    CHECK_EQ_INT(target_atom_find(&target_sm80, TARGET_K_TMA, &q, out, 8), 0);
}

static void test_targets(void)
{
    CHECK(target_by_name("cpu") == &target_cpu && !target_cpu.cuda);
    CHECK(target_by_name("cuda") == &target_sm80 && target_by_name("sm_80") == &target_sm80);
    CHECK(target_by_name("sm_90a") == &target_sm90a && target_by_name("sm_90")->sm == 90 && !target_by_name("sm_90")->sm_a);
    CHECK(!target_by_name("sm_70") && !target_by_name("gpu") && !target_by_name(NULL));
    /* the CPU runs its own rows and the sm80 collectives it emulates */
    CHECK(target_has(&target_cpu, named("cpu.copy")) && target_has(&target_cpu, named("ldmatrix.x2.trans")));
    CHECK(target_has(&target_cpu, named("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")));
    CHECK(!target_has(&target_cpu, named("cp.async.cg.shared.global")) && !target_has(&target_cpu, named("stmatrix.x4")));
    CHECK(!target_has(&target_sm80, named("cpu.copy")) && !target_has(&target_sm80, named("stmatrix.x4")));
    CHECK(target_has(&target_sm90a, named("stmatrix.x4")) && target_has(&target_sm90a, named("ldmatrix.x4")));
    CHECK(target_has(target_by_name("sm_100"), named("stmatrix.x4")) &&
          !target_has(target_by_name("sm_100"), named("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16")));
}

TEST_SUITE(target) = {
    {"layouts_parse", test_layouts_parse},
    {"rows_distinct", test_rows_distinct},
    {"mma_fragments", test_mma_fragments},
    {"wgmma_fragments", test_wgmma_fragments},
    {"ldmatrix_maps", test_ldmatrix_maps},
    {"mma_ref", test_mma_ref},
    {"lookups", test_lookups},
    {"targets", test_targets},
    {0, 0},
};
