/* c_emit_ukr.c — the f32 register-tile micro-kernel the C generator's
 * fast paths share (c_emit_gemm.c: the contraction's k loop; c_emit_rblk.c:
 * a reduction block's tabulated steps), and the small instruction tests
 * their pattern matchers use.
 *
 * The kernel keeps acc[TM][TN] (row-major, contiguous) in TM x TN/VW vector
 * registers and, per step, loads TN/VW vectors of b, broadcasts one scalar
 * of a per row and multiply-adds: the outer product a_i * b_j. One variant
 * per vector width the generated C may be compiled for (AVX-512, AVX,
 * SSE, scalar), chosen by the preprocessor. */
#include <string.h>

#include "codegen/c_int.h"

int cgc_is_f32(tile_dtype t)
{
    return t.kind == TILE_DT_FLOAT && t.bits == 32 && t.exp == 8;
}

int cgc_is_instr(const tile_stmt *s, tile_op op)
{
    return s->kind == TILE_S_INSTR && s->instr.op == op && !s->instr.decomp;
}

const tile_value *cgc_whole_reg(const tile_operand *o)
{
    if (!o->v || o->v->kind != TILE_V_TENSOR || o->nsteps || o->v->type.space != TILE_REGISTER) return NULL;
    return o->v;
}

const cgc_tab *cgc_vtab(cgc *c, const tile_value *v)
{
    int t = v ? cgc_rt(c, v) : -1;
    return t >= 0 ? &c->tabv[t] : NULL;
}

int cgc_mentions(const tile_block *b, const tile_stmt *skip, const tile_value *const *vals, int nv)
{
    for (int i = 0; b && i < b->n; i++) {
        const tile_stmt *s = b->items[i];
        if (s == skip) continue;
        if (s->kind == TILE_S_INSTR) {
            const tile_instr *in = &s->instr;
            for (int j = 0; j < nv; j++) {
                for (int a = 0; a < in->nargs; a++)
                    if (in->args[a].v == vals[j]) return 1;
                if ((in->has_dst && in->dst.v == vals[j]) || in->mask == vals[j]) return 1;
            }
            if (cgc_mentions(in->decomp, skip, vals, nv)) return 1;
        }
        if (cgc_mentions(s->body, skip, vals, nv) || cgc_mentions(s->els, skip, vals, nv)) return 1;
    }
    return 0;
}

int cgc_same_coords(const cgc_tab *x, const cgc_tab *y)
{
    return x && y && x->ns == y->ns && x->rank == y->rank &&
           !memcmp(x->coord, y->coord, sizeof(int32_t) * (size_t)(x->ns * x->rank));
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
    static const int widths[] = {16, 8, 4};
    static const char *const conds[] = {"defined(__GNUC__) && defined(__AVX512F__)",
                                        "defined(__GNUC__) && defined(__AVX__)", "defined(__GNUC__)"};
    int first = 1;
    for (int w = 0; w < 3; w++) {
        if (u->tn % widths[w]) continue;
        sb_printf(o, "#%s %s\n", first ? "if" : "elif", conds[w]);
        first = 0;
        ukr_body(c, fn, u, widths[w]);
    }
    if (!first) sb_puts(o, "#else\n");
    ukr_body(c, fn, u, 1);
    if (!first) sb_puts(o, "#endif\n");
}
