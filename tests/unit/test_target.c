/* test_target.c — the atom tables (src/target): every layout parses and
 * fits its row's shape, the fragment layouts against the PTX ISA's index
 * formulas written here independently of the tables, the lookups (by
 * name, alias, PTX spelling, kind + shape + dtypes + arch), the targets'
 * availability rules, and the reference semantics of the collective atoms
 * against a plain matrix product / transpose. */
#include <math.h>
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

/* m16n8k8 with .tf32 A and B (one 32-bit element a register) */
static void ptx_m16n8k8_tf32(int op, int l, int i, int64_t *r, int64_t *c)
{
    int g = l / 4, q = l % 4;
    if (op == TARGET_A) *r = g + 8 * (i % 2), *c = q + 4 * (i / 2);
    else if (op == TARGET_B) *r = q + 4 * i, *c = g;
    else *r = g + 8 * (i / 2), *c = 2 * q + i % 2;
}

/* the dequantizing mma.q rows over the tile IR's X [8, 16], W [16, 128],
 * Y [8, 128] (frags.h): g = l / 4, t = l % 4 */
static void q_m8n128k16(int op, int l, int i, int64_t *r, int64_t *c)
{
    int g = l / 4, t = l % 4;
    if (op == TARGET_A) *r = g, *c = 4 * t + i;
    else if (op == TARGET_B) *r = 4 * t + i / 16, *c = 16 * g + i % 16;
    else *r = 2 * t + i / 16, *c = 16 * g + i % 16;
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
    static const struct { const char *name; tsl_dtype b; } q[] = {
        {"mma.q.m8n128k16.f32.f16.u1", TSL_DTYPE_U1}, {"mma.q.m8n128k16.f32.f16.u2", TSL_DTYPE_U2},
        {"mma.q.m8n128k16.f32.f16.u4", TSL_DTYPE_U4}, {"mma.q.m8n128k16.f32.f16.u8", TSL_DTYPE_U8}};
    for (size_t i = 0; i < TSL_COUNTOF(q); i++) {
        const target_atom *a = named(q[i].name);
        if (!a) continue;
        check_frag(a, TARGET_A, 4, q_m8n128k16);
        check_frag(a, TARGET_B, 64, q_m8n128k16);
        check_frag(a, TARGET_C, 32, q_m8n128k16);
        /* found by B's dtype under the shared alias, never for an f16 B */
        CHECK(target_mma_resolve_ab("q.m8n128k16", TSL_DTYPE_F16, (int)q[i].b, TSL_DTYPE_F32, NULL) == a);
        CHECK(target_mma_resolve("q.m8n128k16", TSL_DTYPE_F16, TSL_DTYPE_F32, NULL) == NULL);
    }
    const target_atom *t = named("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32");
    CHECK(t && t->tf32);
    if (t) {
        check_frag(t, TARGET_A, 4, ptx_m16n8k8_tf32);
        check_frag(t, TARGET_B, 2, ptx_m16n8k8_tf32);
        check_frag(t, TARGET_C, 4, ptx_m16n8k8_tf32);
    }
    /* never chosen for a plain f32 mma: no alias resolves to it */
    CHECK(target_mma_resolve("m16n8k8", TSL_DTYPE_F32, TSL_DTYPE_F32, NULL) == NULL);
    CHECK(target_mma_resolve(NULL, TSL_DTYPE_F32, TSL_DTYPE_F32, NULL) == NULL);
}

/* cvt.rna.tf32.f32: 10 fraction bits kept, to nearest, ties away from zero */
static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void test_tf32_rna(void)
{
    struct {
        uint32_t in, want;
    } cases[] = {
        {0x3f800000u, 0x3f800000u}, /* 1 */
        {0x3f801000u, 0x3f802000u}, /* 1 + 2^-11: a tie, away from zero */
        {0xbf801000u, 0xbf802000u}, /* its negative: away from zero too */
        {0x3f800fffu, 0x3f800000u}, /* just below the tie: down */
        {0x3f803000u, 0x3f804000u}, /* a tie with an odd kept part: up under either rule */
        {0x3f805000u, 0x3f806000u}, /* 1 + 5 * 2^-11: a tie; to even would give 1 + 2 * 2^-10 */
        {0x3fffffffu, 0x40000000u}, /* carry into the exponent */
        {0x7f7fffffu, 0x7f800000u}, /* the largest float rounds to infinity (no .satfinite) */
        {0x7f800000u, 0x7f800000u}, /* infinity */
        {0x00001fffu, 0x00002000u}, /* a subnormal rounds at the same bit */
        {0x00000fffu, 0x00000000u},
        {0x80000000u, 0x80000000u}, /* -0 */
    };
    for (size_t i = 0; i < TSL_COUNTOF(cases); i++) {
        float got = target_tf32_rna(from_bits(cases[i].in));
        uint32_t g;
        memcpy(&g, &got, 4);
        CHECK_MSG(g == cases[i].want, "tf32(0x%08x) = 0x%08x, want 0x%08x", cases[i].in, g, cases[i].want);
    }
    float nan = target_tf32_rna(from_bits(0x7fc00001u));
    CHECK(nan != nan);
    /* random values: the result has no bit below the 10th fraction bit and
     * is the nearer of the two tf32 neighbours */
    for (int i = 0; i < 1000; i++) {
        float x = (float)test_rand_double(-1e6, 1e6);
        float y = target_tf32_rna(x);
        uint32_t u, v;
        memcpy(&u, &x, 4);
        memcpy(&v, &y, 4);
        CHECK((v & 0x1fffu) == 0);
        uint32_t lo = u & ~0x1fffu, hi = lo + 0x2000u;
        double dl = fabs((double)x - from_bits(lo)), dh = fabs((double)from_bits(hi) - x);
        CHECK_MSG(v == (dh <= dl ? hi : lo), "tf32(%.9g) = %.9g", x, y);
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

/* target_mma_ref against a plain product, on random multiples of 1/16 (every
 * partial sum exact in f32, so the f32 accumulation must match exactly) */
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
            for (int j = 0; j < 8; j++) B[i][j] = (double)test_rand_int(-64, 64) / 16, C[i][j] = (double)test_rand_int(-64, 64) / 16;
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
                double want = C[r][c];
                for (int k = 0; k < a->k; k++) want += A[r][k] * B[k][c];
                CHECK_MSG(fd[l * 4 + i] == want, "%s lane %d reg %d: %.9g, want %.9g", a->name, l, i, fd[l * 4 + i], want);
            }
    }
}

/* The tf32 row's reference: A and B rounded to tf32 (checked above), then
 * exact products summed in f32 in k order; f32 inputs with low bits set,
 * so an unrounded product differs. */
static void test_mma_ref_tf32(void)
{
    const target_atom *a = named("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32");
    if (!a) return;
    double A[16][8], B[8][8], C[16][8], fa[32 * 4], fb[32 * 2], fc[32 * 4], fd[32 * 4];
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 8; j++) A[i][j] = (float)test_rand_double(-2, 2), C[i][j] = (float)test_rand_double(-2, 2);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++) B[i][j] = (float)test_rand_double(-2, 2);
    for (int l = 0; l < 32; l++) {
        int g = l / 4, q = l % 4;
        for (int i = 0; i < 4; i++) fa[l * 4 + i] = A[g + 8 * (i % 2)][q + 4 * (i / 2)];
        for (int i = 0; i < 2; i++) fb[l * 2 + i] = B[q + 4 * i][g];
        for (int i = 0; i < 4; i++) fc[l * 4 + i] = C[g + 8 * (i / 2)][2 * q + i % 2];
    }
    target_mma_ref(a, fa, fb, fc, fd);
    int differs = 0;
    for (int l = 0; l < 32; l++)
        for (int i = 0; i < 4; i++) {
            int g = l / 4, q = l % 4, r = g + 8 * (i / 2), c = 2 * q + i % 2;
            float want = (float)C[r][c], plain = want;
            for (int k = 0; k < 8; k++) {
                want += target_tf32_rna((float)A[r][k]) * target_tf32_rna((float)B[k][c]);
                plain += (float)A[r][k] * (float)B[k][c];
            }
            CHECK_MSG(fd[l * 4 + i] == want, "tf32 lane %d reg %d: %.9g, want %.9g", l, i, fd[l * 4 + i], want);
            differs += want != plain;
        }
    CHECK(differs > 0);
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

/* ---- fragment plans (frag.c) ------------------------------------------------------------ */

/* contract.c's block layouts for 2 x 2 warps, each 2 x 2 C tiles and 2 k
 * steps deep (m16n8k16 fragments under R) */
#define PLAN_C "spatial(2,2).local(2,2).local(2,1).spatial(8,4).local(1,2)"
#define PLAN_A "spatial(2,1).replicate(2).local(2,2).column_local(2,2).spatial(8,4).local(1,2)"
#define PLAN_B "replicate(2).spatial(1,2).local(2,2).local(2,1).column_spatial(4,8).local(2,1)"

static int plan_layout(const char *text, layout_value *v)
{
    layout_err e;
    tsl_status st = layout_parse(text, strlen(text), v, &e);
    CHECK_MSG(st == TSL_OK && v->kind == LAYOUT_VALUE_DIST, "'%s' does not parse as a register layout", text);
    return st == TSL_OK && v->kind == LAYOUT_VALUE_DIST;
}

/* The plan names, for every warp's C tile and k step, the A and B tiles
 * that a plain matrix product needs: tile origins read from the block
 * layouts here (each fragment's lane 0, local 0 is its tile's origin). */
static void test_mma_plan(void)
{
    layout_value A, B, C, A2;
    if (!plan_layout(PLAN_A, &A) || !plan_layout(PLAN_B, &B) || !plan_layout(PLAN_C, &C)) return;
    const target_atom *row = named("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32");
    target_mma_plan p;
    CHECK(target_mma_plan_make(&p, row, &A.dist, &B.dist, &C.dist, 128) == 0);
    CHECK(p.warps == 4 && p.tiles == 4 && p.ksteps == 2);
    CHECK(p.per[0] == 8 && p.per[1] == 4 && p.per[2] == 4);
    for (int64_t w = 0; w < p.warps && p.a; w++)
        for (int64_t t = 0; t < p.tiles; t++)
            for (int64_t kt = 0; kt < p.ksteps; kt++) {
                int64_t c0[2], a0[2], b0[2];
                dist_layout_map(&C.dist, 32 * w, 4 * t, c0);
                dist_layout_map(&A.dist, 32 * w, 8 * p.a[t * p.ksteps + kt], a0);
                dist_layout_map(&B.dist, 32 * w, 4 * p.b[t * p.ksteps + kt], b0);
                CHECK_MSG(a0[0] == c0[0] && a0[1] == 16 * kt, "warp %lld tile %lld k %lld: A tile at (%lld, %lld)",
                          (long long)w, (long long)t, (long long)kt, (long long)a0[0], (long long)a0[1]);
                CHECK_MSG(b0[0] == 16 * kt && b0[1] == c0[1], "warp %lld tile %lld k %lld: B tile at (%lld, %lld)",
                          (long long)w, (long long)t, (long long)kt, (long long)b0[0], (long long)b0[1]);
            }
    target_mma_plan_free(&p);
    /* warps splitting k do not hold the A tiles their C tiles need */
    if (plan_layout("spatial(2,2).local(2,1).column_local(2,2).spatial(8,4).local(1,2)", &A2))
        CHECK(target_mma_plan_make(&p, row, &A2.dist, &B.dist, &C.dist, 128) == -1);
    CHECK(target_mma_plan_make(&p, row, &A.dist, &B.dist, &C.dist, 256) == -1); /* not the block's threads */
    CHECK(target_mma_plan_make(&p, row, &B.dist, &A.dist, &C.dist, 128) == -1); /* operands swapped */
    CHECK(target_mma_plan_make(&p, named("ldmatrix.x4"), &A.dist, &B.dist, &C.dist, 128) == -1);
}

/* ldmatrix plans: x4 delivers the m16n8k16 A fragment, matrix m at the
 * PTX ISA's (8 (m % 2), 8 (m / 2)); x2.trans delivers B, matrix m at
 * (8m, 0); no other pairing fits. */
static void test_ldmatrix_plan(void)
{
    layout_value A, B;
    if (!plan_layout(PLAN_A, &A) || !plan_layout(PLAN_B, &B)) return;
    target_ldmatrix_plan p;
    CHECK(target_ldmatrix_plan_make(&p, named("ldmatrix.x4"), &A.dist, 128) == 0);
    CHECK(p.operand == TARGET_A && p.per == 8 && p.slots == 4 && p.mma && p.mma->k == 16);
    for (int m = 0; m < 4; m++)
        CHECK_MSG(p.org[m][0] == 8 * (m % 2) && p.org[m][1] == 8 * (m / 2), "x4 matrix %d at (%lld, %lld)", m,
                  (long long)p.org[m][0], (long long)p.org[m][1]);
    CHECK(p.step[0][0] == 8 && p.step[0][1] == 0 && p.step[1][0] == 0 && p.step[1][1] == 8);
    CHECK(target_ldmatrix_plan_make(&p, named("ldmatrix.x2.trans"), &B.dist, 128) == 0);
    CHECK(p.operand == TARGET_B && p.per == 4 && p.slots == 4);
    for (int m = 0; m < 2; m++) CHECK(p.org[m][0] == 8 * m && p.org[m][1] == 0);
    CHECK(target_ldmatrix_plan_make(&p, named("ldmatrix.x4"), &B.dist, 128) == -1);
    CHECK(target_ldmatrix_plan_make(&p, named("ldmatrix.x2"), &B.dist, 128) == -1);       /* B's matrices are transposed */
    CHECK(target_ldmatrix_plan_make(&p, named("ldmatrix.x2.trans"), &A.dist, 128) == -1);
    CHECK(target_ldmatrix_plan_make(&p, named("ldmatrix.x4"), &A.dist, 64) == -1);
}

/* target_frag_text: the fragment as text, and transposed: a thread holds
 * element (c, r) of the transposed operand in the slot where it held (r, c). */
static void test_frag_text(void)
{
    const target_atom *row = named("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32");
    const char *want[3][2] = {
        {"column_local(2,2).spatial(8,4).local(1,2)", "local(2,2).column_spatial(4,8).column_local(2,1)"},
        {"local(2,1).column_spatial(4,8).local(2,1)", "column_local(1,2).spatial(8,4).column_local(1,2)"},
        {"local(2,1).spatial(8,4).local(1,2)", "column_local(1,2).column_spatial(4,8).column_local(2,1)"},
    };
    for (int o = 0; o < 3; o++)
        for (int t = 0; t < 2; t++) {
            strbuf sb = {0};
            CHECK(target_frag_text(&sb, row, TARGET_A + o, t) == 0);
            CHECK_EQ_STR(sb_str(&sb), want[o][t]);
            layout_value v;
            layout_err e;
            if (t && layout_parse(sb_str(&sb), sb.len, &v, &e) == TSL_OK && v.kind == LAYOUT_VALUE_DIST) {
                const dist_layout *F = target_atom_layout(row, TARGET_A + o);
                int bad = v.dist.threads != F->threads || v.dist.locals != F->locals;
                for (int64_t l = 0; l < F->threads && !bad; l++)
                    for (int64_t i = 0; i < F->locals; i++) {
                        int64_t x[2], y[2];
                        dist_layout_map(F, l, i, x);
                        dist_layout_map(&v.dist, l, i, y);
                        if (x[0] != y[1] || x[1] != y[0]) bad = 1;
                    }
                CHECK_MSG(!bad, "operand %d: '%s' is not the transposed fragment", o, sb_str(&sb));
            } else if (t) {
                CHECK_MSG(0, "'%s' does not parse", sb_str(&sb));
            }
            sb_free(&sb);
        }
    strbuf sb = {0};
    CHECK(target_frag_text(&sb, named("cp.async.cg.shared.global"), TARGET_A, 0) == -1);
    sb_free(&sb);
}

TEST_SUITE(target) = {
    {"layouts_parse", test_layouts_parse},
    {"rows_distinct", test_rows_distinct},
    {"mma_fragments", test_mma_fragments},
    {"wgmma_fragments", test_wgmma_fragments},
    {"ldmatrix_maps", test_ldmatrix_maps},
    {"mma_ref", test_mma_ref},
    {"mma_ref_tf32", test_mma_ref_tf32},
    {"tf32_rna", test_tf32_rna},
    {"lookups", test_lookups},
    {"targets", test_targets},
    {"mma_plan", test_mma_plan},
    {"ldmatrix_plan", test_ldmatrix_plan},
    {"frag_text", test_frag_text},
    {0, 0},
};
