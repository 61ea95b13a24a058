/* test_tile_interp.c — the tile interpreter: its shared-memory model
 * (hazards, cp.async groups), the lane semantics of mma.m16n8k16 and
 * ldmatrix.x4 against the Tilus layouts, and the seed programs of
 * examples/tile/ run on random data against a plain C reference. */
#include <math.h>
#include <string.h>

#include "layout/layout.h"
#include "test.h"
#include "tile/interp.h"
#include "tile/interp_atom.h"
#include "tile/interp_mem.h"
#include "tile/tile.h"

/* ---- the memory model ------------------------------------------------------ */

static void test_mem_raw_needs_sync(void)
{
    imem_shared s;
    CHECK(imem_init(&s, 64) == 0);
    int other;
    uint32_t v = (uint32_t)test_rand(), got = 0;
    int a = (int)test_rand_int(0, 63), b = (a + (int)test_rand_int(1, 63)) % 64;
    CHECK_EQ_INT(imem_write(&s, 8, 4, a, &v, &other), IMEM_OK);
    /* the writer may read its own write */
    CHECK_EQ_INT(imem_read(&s, 8, 4, a, &got, &other), IMEM_OK);
    CHECK_EQ_INT(got, v);
    /* another thread may not, until a barrier */
    CHECK_EQ_INT(imem_read(&s, 10, 2, b, &got, &other), IMEM_RAW);
    CHECK_EQ_INT(other, a);
    imem_sync(&s);
    got = 0;
    CHECK_EQ_INT(imem_read(&s, 8, 4, b, &got, &other), IMEM_OK);
    CHECK_EQ_INT(got, v);
    /* a write over what b read in this epoch is a WAR hazard */
    CHECK_EQ_INT(imem_write(&s, 8, 1, a, &v, &other), IMEM_WAR);
    imem_sync(&s);
    CHECK_EQ_INT(imem_write(&s, 8, 1, a, &v, &other), IMEM_OK);
    CHECK_EQ_INT(imem_write(&s, 8, 1, b, &v, &other), IMEM_WAW);
    CHECK_EQ_INT(imem_read(&s, 60, 8, a, &got, &other), IMEM_OOB);
    imem_free(&s);
}

static void test_mem_async_groups(void)
{
    imem_shared s;
    CHECK(imem_init(&s, 256) == 0);
    int other, th = (int)test_rand_int(0, 127);
    uint8_t src[3][16], got[16];
    for (int g = 0; g < 3; g++)
        for (int i = 0; i < 16; i++) src[g][i] = (uint8_t)test_rand();
    /* three groups of one 16-byte copy each */
    for (int g = 0; g < 3; g++) {
        CHECK_EQ_INT(imem_copy_async(&s, (size_t)g * 16, 16, th, src[g], &other), IMEM_OK);
        imem_commit(&s);
    }
    CHECK_EQ_INT(imem_pending_count(&s), 3);
    /* nothing landed: reading is a missing-wait hazard, even for the issuer */
    CHECK_EQ_INT(imem_read(&s, 0, 16, th, got, &other), IMEM_PENDING_READ);
    imem_wait(&s, 2); /* the oldest group completes */
    CHECK_EQ_INT(imem_pending_count(&s), 2);
    CHECK_EQ_INT(imem_read(&s, 0, 16, th, got, &other), IMEM_OK);
    CHECK(memcmp(got, src[0], 16) == 0);
    CHECK_EQ_INT(imem_read(&s, 16, 1, th, got, &other), IMEM_PENDING_READ);
    /* another thread needs a barrier after the wait */
    CHECK_EQ_INT(imem_read(&s, 0, 4, (th + 1) % 128, got, &other), IMEM_RAW);
    imem_wait(&s, 0);
    imem_sync(&s);
    CHECK_EQ_INT(imem_read(&s, 32, 16, (th + 5) % 128, got, &other), IMEM_OK);
    CHECK(memcmp(got, src[2], 16) == 0);
    /* an uncommitted copy is not completed by wait 0 */
    CHECK_EQ_INT(imem_copy_async(&s, 100, 4, th, src[0], &other), IMEM_OK);
    imem_wait(&s, 0);
    CHECK_EQ_INT(imem_read(&s, 100, 4, th, got, &other), IMEM_PENDING_READ);
    imem_commit(&s);
    imem_wait(&s, 0);
    CHECK_EQ_INT(imem_read(&s, 100, 4, th, got, &other), IMEM_OK);
    imem_free(&s);
}

/* Many groups in flight: copies are compacted and still land right. */
static void test_mem_async_many(void)
{
    imem_shared s;
    CHECK(imem_init(&s, 3 * 512) == 0);
    int other;
    uint8_t want[3 * 512], got[512];
    for (int it = 0; it < 40; it++) {
        int buf = it % 3;
        for (int i = 0; i < 512; i += 4) {
            uint8_t v[4];
            for (int j = 0; j < 4; j++) v[j] = want[buf * 512 + i + j] = (uint8_t)test_rand();
            CHECK_EQ_INT(imem_copy_async(&s, (size_t)(buf * 512 + i), 4, i / 4, v, &other), IMEM_OK);
        }
        imem_commit(&s);
        imem_wait(&s, 2);
        imem_sync(&s);
        if (it >= 2) {
            int rb = (it - 2) % 3;
            CHECK_EQ_INT(imem_read(&s, (size_t)rb * 512, 512, 0, got, &other), IMEM_OK);
            CHECK(memcmp(got, want + rb * 512, 512) == 0);
            imem_sync(&s);
        }
    }
    CHECK(s.ncopies < 2000);
    imem_free(&s);
}

/* ---- the atoms against the layout algebra ------------------------------------ */

static void test_mma_fragments_match_layouts(void)
{
    for (int w = 0; w < 3; w++) {
        layout_value v;
        layout_err e;
        const char *t = iatom_mma_frag_text(w);
        CHECK(layout_parse(t, strlen(t), &v, &e) == TSL_OK);
        CHECK_EQ_INT(v.dist.threads, 32);
        CHECK_EQ_INT(v.dist.locals, iatom_mma_frag_slots(w));
        for (int l = 0; l < 32; l++)
            for (int i = 0; i < iatom_mma_frag_slots(w); i++) {
                int64_t c[2];
                int r, k;
                CHECK(dist_layout_map(&v.dist, l, i, c) == 0);
                iatom_mma_frag_coord(w, l, i, &r, &k);
                CHECK_MSG(c[0] == r && c[1] == k, "%s (%d,%d): layout (%lld,%lld), ISA (%d,%d)", t, l,
                          i, (long long)c[0], (long long)c[1], r, k);
            }
    }
    /* the check: thread 5, local 3 of C holds (9,3) */
    int r, k;
    iatom_mma_frag_coord(IATOM_MMA_C, 5, 3, &r, &k);
    CHECK(r == 9 && k == 3);
}

static void test_mma_atom_product(void)
{
    static double a[32][8], b[32][4], c[32][4], d[32][4];
    double A[16][16], B[16][8], C[16][8];
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 16; j++) A[i][j] = f16_to_f32(f32_to_f16((float)test_rand_double(-2, 2)));
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 8; j++) {
            B[i][j] = f16_to_f32(f32_to_f16((float)test_rand_double(-2, 2)));
            C[i][j] = (float)test_rand_double(-2, 2);
        }
    int r, k;
    for (int l = 0; l < 32; l++) {
        for (int i = 0; i < 8; i++) {
            iatom_mma_frag_coord(IATOM_MMA_A, l, i, &r, &k);
            a[l][i] = A[r][k];
        }
        for (int i = 0; i < 4; i++) {
            iatom_mma_frag_coord(IATOM_MMA_B, l, i, &r, &k);
            b[l][i] = B[r][k];
            iatom_mma_frag_coord(IATOM_MMA_C, l, i, &r, &k);
            c[l][i] = C[r][k];
        }
    }
    iatom_mma_m16n8k16(a, b, c, d);
    for (int l = 0; l < 32; l++)
        for (int i = 0; i < 4; i++) {
            iatom_mma_frag_coord(IATOM_MMA_C, l, i, &r, &k);
            double want = C[r][k];
            for (int kk = 0; kk < 16; kk++) want += A[r][kk] * B[kk][k];
            CHECK_CLOSE(d[l][i], want, 1e-5);
        }
}

static void test_ldmatrix_atom(void)
{
    static double rows[32][8], out[32][8];
    for (int l = 0; l < 32; l++)
        for (int j = 0; j < 8; j++) rows[l][j] = test_rand_double(-1, 1);
    for (int trans = 0; trans < 2; trans++) {
        iatom_ldmatrix_x4(rows, trans, out);
        /* lane l, register m, element e: matrix m row l/4 cols 2(l%4)+e */
        for (int l = 0; l < 32; l++)
            for (int m = 0; m < 4; m++)
                for (int e = 0; e < 2; e++) {
                    int rr = trans ? 2 * (l % 4) + e : l / 4, cc = trans ? l / 4 : 2 * (l % 4) + e;
                    CHECK(out[l][2 * m + e] == rows[8 * m + rr][cc]);
                }
    }
}

TEST_SUITE(tile_interp) = {
    {"mem_raw_needs_sync", test_mem_raw_needs_sync},
    {"mem_async_groups", test_mem_async_groups},
    {"mem_async_many", test_mem_async_many},
    {"mma_fragments_match_layouts", test_mma_fragments_match_layouts},
    {"mma_atom_product", test_mma_atom_product},
    {"ldmatrix_atom", test_ldmatrix_atom},
    {0},
};
