/* c_emit_ukr.c — the f32 register-tile micro-kernel of the cpu.ukr atoms
 * (target/cpu.c), which c_emit_gemm.c (cpu.ukr.f32: the contraction's k
 * loop) and c_emit_rblk.c (cpu.ukr.f32.gather: a reduction block's
 * tabulated steps) print where selection put them.
 *
 * The kernel keeps acc[TM][TN] (row-major, contiguous) in TM x TN/VW vector
 * registers and, per step, loads TN/VW vectors of b, broadcasts one scalar
 * of a per row and multiply-adds: the outer product a_i * b_j. One variant
 * per f32 vector row of the CPU table (cpu.vec.f32x16 / x8 / x4 / x1:
 * AVX-512, AVX, SSE, scalar), chosen by the preprocessor. */
#include <string.h>

#include "codegen/c_int.h"

const cgc_tab *cgc_vtab(cgc *c, const tile_value *v)
{
    int t = v ? cgc_rt(c, v) : -1;
    return t >= 0 ? &c->tabv[t] : NULL;
}

int cgc_tab_microtile(const cgc_tab *tab, int64_t *tm, int64_t *tn)
{
    int64_t ld[CGC_MAX_RANK > DIST_MAX_RANK ? CGC_MAX_RANK : DIST_MAX_RANK];
    int lr = tab->lay->rank;
    if (tab->rank != 2 || lr < 2) return 0;
    cgc_local_shape(tab->lay, ld);
    *tm = ld[lr - 2];
    *tn = ld[lr - 1];
    if (*tm * *tn != tab->nlocals) return 0;
    for (int64_t t = 0; t < tab->nthreads; t++) {
        const int32_t *o = &tab->coord[t * tab->nlocals * 2];
        for (int64_t i = 0; i < *tm; i++)
            for (int64_t j = 0; j < *tn; j++) {
                const int32_t *q = &tab->coord[(t * tab->nlocals + i * *tn + j) * 2];
                if (o[0] < 0 || q[0] != o[0] + i || q[1] != o[1] + j) return 0;
            }
    }
    return 1;
}

/* A `for` whose body's last statement asks for a micro-kernel atom
 * (cpu.ukr.f32 or cpu.ukr.f32.gather, selected and checked by
 * target/select.c): prints it and opens `if (fast) { ... } else {`,
 * returning 1; 0 for any other loop. */
int cgc_emit_ukr_for(cgc *c, const tile_stmt *f)
{
    const tile_block *b = f->body;
    const tile_stmt *last = b && b->n ? b->items[b->n - 1] : NULL;
    const target_atom *a = last && last->kind == TILE_S_INSTR ? target_atom_of(&last->instr) : NULL;
    if (!a || a->kind != TARGET_K_UKR) return 0;
    target_ukr u;
    char why[256];
    if (!target_ukr_match(c->k, f, &u, why, sizeof why)) {
        cgc_fail(c, TSL_ERR_INTERNAL, "the selected %s does not fit its loop: %s", a->name, why);
        return 0;
    }
    if (a->sem == TARGET_SEM_DEQUANT_ACC) return cgc_emit_dequant_for(c, f, &u);
    return a->space[TARGET_A] == TARGET_SP_SHARED ? cgc_emit_gemm_for(c, f, &u) : cgc_emit_rblk_for(c, f, &u);
}

/* The variant for vector width vw (TN % vw == 0). */
static void ukr_body(cgc *c, const char *fn, const cgc_ukr *u, int vw)
{
    strbuf *o = &c->tabs;
    int64_t nv = u->tn / vw;
    const char *vt = vw > 1 ? arena_printf(c->ar, "%s_v", fn) : "float",
               *vu = vw > 1 ? arena_printf(c->ar, "%s_vu", fn) : "float";
    if (vw > 1) {
        sb_printf(o, "typedef float %s __attribute__((vector_size(%d)));\n", vt, vw * 4);
        sb_printf(o, "typedef float %s __attribute__((vector_size(%d), aligned(4)));\n", vu, vw * 4);
    }
    sb_printf(o, "static TSL_GEMM_FN void %s(float *restrict acc, const float *restrict a, const float *restrict b,\n"
                 "    %s)\n{\n    TSL_GEMM_CONTRACT\n", fn, u->params);
    for (int64_t i = 0; i < u->tm; i++)
        for (int64_t j = 0; j < nv; j++)
            sb_printf(o, "    %s c%lld_%lld = *(const %s *)(acc + %lld);\n", vt, (long long)i, (long long)j, vu,
                      (long long)(i * u->tn + j * vw));
    if (u->row_ptr)
        for (int64_t i = 0; i < u->tm; i++) {
            sb_puts(o, "    ");
            sb_printf(o, u->row_ptr, (long long)i, (long long)i);
            sb_puts(o, "\n");
        }
    sb_printf(o, "    %sfor (int64_t k = 0; k < n; k++) {\n", u->unroll ? "TSL_GEMM_UNROLL\n    " : "");
    sb_printf(o, "        %s\n", u->step);
    for (int64_t j = 0; j < nv; j++)
        sb_printf(o, "        const %s b%lld = *(const %s *)(bp + %lld);\n", vt, (long long)j, vu, (long long)(j * vw));
    for (int64_t i = 0; i < u->tm; i++) {
        sb_puts(o, "        {\n            const float s = ");
        sb_printf(o, u->a_row, (long long)(i * u->a_mul));
        sb_puts(o, ";\n");
        if (vw > 1) {
            sb_printf(o, "            const %s x = {", vt);
            for (int l = 0; l < vw; l++) sb_printf(o, "%ss", l ? ", " : "");
            sb_puts(o, "};\n");
        } else {
            sb_puts(o, "            const float x = s;\n");
        }
        for (int64_t j = 0; j < nv; j++)
            sb_printf(o, "            c%lld_%lld += x * b%lld;\n", (long long)i, (long long)j, (long long)j);
        sb_puts(o, "        }\n");
    }
    sb_puts(o, "    }\n");
    for (int64_t i = 0; i < u->tm; i++)
        for (int64_t j = 0; j < nv; j++)
            sb_printf(o, "    *(%s *)(acc + %lld) = c%lld_%lld;\n", vu, (long long)(i * u->tn + j * vw), (long long)i,
                      (long long)j);
    sb_puts(o, "}\n");
}

void cgc_emit_ukr(cgc *c, const char *fn, const cgc_ukr *u)
{
    strbuf *o = &c->tabs;
    sb_printf(o, "\n/* f32 micro-kernel: a %lld x %lld tile in registers %s */\n", (long long)u->tm, (long long)u->tn,
              u->what);
    sb_puts(o, "#ifndef TSL_GEMM_FN\n"
               "#if defined(__clang__)\n"
               "#define TSL_GEMM_FN\n"
               "#define TSL_GEMM_CONTRACT _Pragma(\"clang fp contract(fast)\")\n"
               "#define TSL_GEMM_UNROLL _Pragma(\"clang loop unroll_count(4)\")\n"
               "#elif defined(__GNUC__)\n"
               "#define TSL_GEMM_FN __attribute__((optimize(\"fp-contract=fast\")))\n"
               "#define TSL_GEMM_CONTRACT\n"
               "#define TSL_GEMM_UNROLL _Pragma(\"GCC unroll 4\")\n"
               "#else\n"
               "#define TSL_GEMM_FN\n"
               "#define TSL_GEMM_CONTRACT\n"
               "#define TSL_GEMM_UNROLL\n"
               "#endif\n"
               "#endif\n");
    /* one variant per f32 vector row of the CPU table (widest first),
     * under its preprocessor condition; the row without one is the
     * scalar variant */
    int first = 1;
    const target_atom *rows[8];
    target_query q = target_query_any();
    q.dtype[TARGET_A] = TSL_DTYPE_F32;
    int nrows = target_atom_find(&target_cpu, TARGET_K_VEC, &q, rows, 8);
    for (int w = 0; w < nrows && w < 8; w++) {
        if (!rows[w]->cond || u->tn % rows[w]->n) continue;
        sb_printf(o, "#%s %s\n", first ? "if" : "elif", rows[w]->cond);
        first = 0;
        ukr_body(c, fn, u, rows[w]->n);
    }
    if (!first) sb_puts(o, "#else\n");
    ukr_body(c, fn, u, 1);
    if (!first) sb_puts(o, "#endif\n");
}
