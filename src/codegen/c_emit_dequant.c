/* c_emit_dequant.c — prints the cpu.ukr.dequant atom (target/cpu.c): the
 * quantized matmul's row loop on the CPU (docs/sched.md, "The quantized
 * matmul"), which the CPU plan asks for by writing the atom on the loop's
 * accumulating add. Which loops fit is the target's (target/ukr.c).
 *
 * Per row r the loop computes acc[i] += value(field i of WB's row) *
 * X[XR, XC] — the interpreter's mul then add, here one fused multiply-add.
 * Emitted: a run-time pre-pass over r (step 1; every row and X element in
 * bounds; WB's and X's offsets linear in r; the last strides 1); if it
 * holds, one static function runs the rows, 4 a pass (acc read and
 * written once per chunk and pass; each row still multiply-added in r
 * order, the rows left one at a time), each pass prefetching the next
 * pass's rows a cache line at a time (the 4 rows of a pass lie a row
 * stride apart, each run a new page the hardware prefetchers are slow to
 * follow). Two unpackings:
 *
 *   - the byte path (B dividing 8, 8-byte chunks, AVX2 at compile time:
 *     kernels are built with -march=native): a chunk's 8 bytes widened to
 *     8 32-bit lanes (vpmovzxbd), set s of its 8 / B fields the lanes
 *     shifted by s * B and masked (constant shifts); lane b of set s is
 *     field b * 8 / B + s, so acc is held in that order while the rows
 *     run and permuted on entry and exit;
 *   - otherwise (widths 3, 5, 6, 7, or no AVX2) 32-bit lanes: per chunk
 *     of 8 fields (B bytes) one 4- or 8-byte load (exactly B bytes for the
 *     last chunks, where a whole word would end past the run), its fields
 *     as 8 lanes of a GNU C vector (B <= 4: the word in every lane; B > 4:
 *     fields 0-3 from the low word, 4-7 from the word at bit 4B), each lane
 *     shifted by its field's offset and masked;
 *
 * then converted (an int-to-float conversion, a signed field sign-extended
 * by a shift pair first; a low-bit float through a table of its 2^B
 * values) and multiply-added (the scalar loop without GNU C); otherwise the
 * generic loop runs. The micro-kernel alone (uint4 8192 x 8192, 4096
 * columns a block, 1 core, thread CPU time on the shared 2-core VM at load
 * 8-20): 2.8-3.0 GB/s with neither, 3.9-4.1 with the prefetch (then as
 * fast as with W in cache), 4.8-6.2 with the byte path. */
#include <stdlib.h>
#include <string.h>

#include "codegen/c_int.h"

/* The element offset of a rank-2 global's anchor (an index view), with the
 * bounds test for `ext` elements along the last dim folded into ok. */
static char *anchor(cgc *c, const tile_stmt *ls, int64_t ext, const char *ok)
{
    cgc_view vw;
    if (!cgc_view_of(c, &ls->instr.args[0], &vw)) return NULL;
    const char *g = cgc_gname(c, vw.v);
    char *r0 = cgc_view_map(c, &vw, 0, "(int64_t)0"), *r1 = cgc_view_map(c, &vw, 1, "(int64_t)0");
    cgc_line(c, "if ((uint64_t)%s >= (uint64_t)%s_d0 || %s < 0 || %s + %lld > %s_d1) %s = 0;", r0, g, r1, r1,
             (long long)ext, g, ok);
    return arena_printf(c->ar, "%s * %s_s0 + %s", r0, g, r1);
}

/* The byte path, for B dividing 8 and whole 8-byte chunks, where AVX2
 * is (its zero-extending load vpmovzxbd; GCC 12 does not make one from
 * __builtin_convertvector): a chunk of 8 bytes holds F = 64 / B fields,
 * byte b's S = 8 / B fields at b * S + s; the 8 bytes widened to 8 32-bit
 * lanes, set s is the lanes shifted by s * B and masked (constant shifts,
 * no per-lane ones) and lane b of set s is field b * S + s. acc is kept
 * in that order (set s of chunk j at j * F + s * 8) while the rows run,
 * permuted on entry and back on exit (twice over acc per call, against
 * n rows of it). Prints the helpers into o and returns the text that
 * opens the micro-kernel's body (the byte path, then the 32-bit-lane
 * path behind #elif; only the latter when the path does not apply). */
static const char *byte_path(cgc *c, strbuf *o, const char *fn, int B, int64_t nb, const char *conv, const char *xconv)
{
    if (8 % B || nb % 8) return "#if defined(__GNUC__)\n";
    int S = 8 / B, F = 64 / B;
    int64_t nj = nb / 8;
    sb_printf(o,
              "#if defined(__GNUC__) && defined(__AVX2__)\n#include <immintrin.h>\n"
              "/* f32 lanes of the masked codes c */\n"
              "static inline %s_f %s_cv(const %s_u c)\n{\n    %s\n}\n",
              fn, fn, fn, conv);
    if (S > 1)
        sb_printf(o,
                  "/* acc between column order (back 1) and the byte path's (0): field\n"
                  "   b * %d + s of a %d-field chunk at s * 8 + b */\n"
                  "static void %s_perm(float *acc, int back)\n{\n"
                  "    float t[%d];\n"
                  "    for (int64_t j = 0; j < %lld; j++) {\n"
                  "        float *p = acc + j * %d;\n"
                  "        for (int b = 0; b < 8; b++)\n"
                  "            for (int s = 0; s < %d; s++) {\n"
                  "                if (back) t[b * %d + s] = p[s * 8 + b];\n"
                  "                else t[s * 8 + b] = p[b * %d + s];\n"
                  "            }\n"
                  "        memcpy(p, t, sizeof t);\n"
                  "    }\n}\n",
                  S, F, fn, F, (long long)nj, F, S, S, S);
    sb_printf(o,
              "/* every 8-byte chunk of R rows: acc read and written once per chunk,\n"
              "   the rows multiply-added in order; the next pass's rows prefetched */\n"
              "static inline __attribute__((always_inline)) void %s_brows(float *restrict acc, const uint8_t *const *wr,\n"
              "    const float *xv, int R, int64_t pf)\n{\n"
              "    for (int64_t j = 0; j < %lld; j++) {\n"
              "        if ((j & 7) == 0)\n"
              "            for (int i = 0; i < R; i++) __builtin_prefetch((const void *)((uintptr_t)wr[i] + (uintptr_t)pf + (uintptr_t)(j * 8)));\n"
              "        %s_f a[%d];\n"
              "        for (int s = 0; s < %d; s++) a[s] = *(%s_fu *)(acc + j * %d + s * 8);\n"
              "        for (int i = 0; i < R; i++) {\n"
              "            const %s_u v = (%s_u)_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(wr[i] + j * 8)));\n"
              "            for (int s = 0; s < %d; s++) a[s] += %s_cv(v >> (uint32_t)(s * %d) & 0x%xu) * xv[i];\n"
              "        }\n"
              "        for (int s = 0; s < %d; s++) *(%s_fu *)(acc + j * %d + s * 8) = a[s];\n"
              "    }\n}\n"
              "#endif\n",
              fn, (long long)nj, fn, S, S, fn, F, fn, fn, S, fn, B, (1u << B) - 1, S, fn, F);
    const char *perm0 = S > 1 ? arena_printf(c->ar, "    %s_perm(acc, 0);\n", fn) : "";
    const char *perm1 = S > 1 ? arena_printf(c->ar, "    %s_perm(acc, 1);\n", fn) : "";
    return arena_printf(c->ar,
                        "#if defined(__GNUC__) && defined(__AVX2__)\n"
                        "%s"
                        "    for (int64_t r0 = 0; r0 < n; r0 += 4) {\n"
                        "        const int R = n - r0 < 4 ? (int)(n - r0) : 4;\n"
                        "        const uint8_t *wr[4];\n        float xv[4];\n"
                        "        for (int i = 0; i < R; i++) {\n"
                        "            const int64_t r = r0;\n"
                        "            wr[i] = w + (r + i) * ws;\n            xv[i] = %s;\n"
                        "        }\n"
                        "        if (R == 4) %s_brows(acc, wr, xv, 4, 4 * ws);\n"
                        "        else for (int i = 0; i < R; i++) %s_brows(acc, wr + i, xv + i, 1, 4 * ws);\n"
                        "    }\n"
                        "%s"
                        "#elif defined(__GNUC__)\n",
                        perm0, xconv, fn, fn, perm1);
}

int cgc_emit_dequant_for(cgc *c, const tile_stmt *f, const target_ukr *u)
{
    int id = c->tmp++, kv = f->v->id;
    tile_dtype q = u->qdt, xd = u->xg->type.dt;
    int B = q.bits;
    int64_t n = u->bn, nb = n * B / 8;
    const char *fn = arena_printf(c->ar, "tsl_dq%d", id);
    strbuf *o = &c->tabs;
    /* the value of field `code` */
    char val[160];
    if (dtype_desc_is_lowfloat(q)) {
        sb_printf(o, "\n/* the %d values of the low-bit float f%de%dm%d, by code */\nstatic const float %s_lut[%d] = {", 1 << B,
                  B, q.exp, q.man, fn, 1 << B);
        for (unsigned k = 0; k < (1u << B); k++) {
            float v = dtype_lowfloat_decode(q, k);
            if (v != v) sb_printf(o, "%sNAN", k ? ", " : "");
            else if (v > 3.4e38f || v < -3.4e38f) sb_printf(o, "%s%sINFINITY", k ? ", " : "", v < 0 ? "-" : "");
            else sb_printf(o, "%s%.8ef", k ? ", " : "", (double)v);
        }
        sb_puts(o, "};\n");
        snprintf(val, sizeof val, "%s_lut[code]", fn);
    } else if (q.kind == TILE_DT_INT) {
        snprintf(val, sizeof val, "(float)((int32_t)(code << %d) >> %d)", 32 - B, 32 - B);
    } else {
        snprintf(val, sizeof val, "(float)code");
    }
    const char *xt = xd.bits == 32 ? "float" : "uint16_t";
    const char *xconv = xd.bits == 32 ? "x[(r + i) * xs]" : xd.exp == 8 ? "tsl_bf2f(x[(r + i) * xs])" : "tsl_h2f(x[(r + i) * xs])";
    /* 8 fields (B bytes) as 32-bit lanes: B <= 4, one 32-bit word in
     * every lane, lane t shifted by t * B; B > 4, fields 0-3 from the low
     * word, 4-7 from the word at bit 4 * B (8 * B <= 64). A chunk's word is
     * read whole (4 or 8 bytes: a load of B bytes, B odd, is a byte-by-byte
     * assembly GCC does not vectorise, 4x slower for uint3) where it ends
     * inside the run's NB bytes; the last chunks read exactly B bytes. */
    int lw = B <= 4 ? 4 : 8;
    int64_t nj = n / 8, jf = nb >= lw ? (nb - lw) / B + 1 : 0;
    if (jf > nj) jf = nj;
    char lanes[160], conv[320];
    if (B <= 4)
        snprintf(lanes, sizeof lanes, "((%s_u){0} + (uint32_t)v)", fn);
    else
        snprintf(lanes, sizeof lanes, "((%s_u){(uint32_t)v, (uint32_t)v, (uint32_t)v, (uint32_t)v, (uint32_t)(v >> %d), "
                 "(uint32_t)(v >> %d), (uint32_t)(v >> %d), (uint32_t)(v >> %d)})", fn, 4 * B, 4 * B, 4 * B, 4 * B);
    if (dtype_desc_is_lowfloat(q))
        snprintf(conv, sizeof conv, "%s_f f;\n    for (int t = 0; t < 8; t++) f[t] = %s_lut[c[t]];\n    return f;", fn, fn);
    else if (q.kind == TILE_DT_INT)
        snprintf(conv, sizeof conv, "return __builtin_convertvector(((%s_i)c << %d) >> %d, %s_f);", fn, 32 - B, 32 - B, fn);
    else
        snprintf(conv, sizeof conv, "return __builtin_convertvector((%s_i)c, %s_f);", fn, fn);
    /* W's rows 4 on (the next pass) are prefetched a cache line ahead of
     * their use: every pfm + 1 chunks (the largest power of two with
     * (pfm + 1) * B <= 64, so that no line is skipped) */
    int pfm = 1;
    while (2 * pfm * B <= 64) pfm *= 2;
    pfm--;
    int sh4 = B <= 4 ? 4 : 0; /* lanes 4-7 shift on from lane 3 (one word) or restart (the word at 4 * B) */
    strbuf bh = {0};
    const char *pre = byte_path(c, &bh, fn, B, nb, conv, xconv);
    sb_printf(o,
              "\n/* dequantize and accumulate: %lld fields of %d bits a row, times one x per row */\n"
              "#ifndef TSL_GEMM_FN\n"
              "#if defined(__clang__)\n#define TSL_GEMM_FN\n#define TSL_GEMM_CONTRACT _Pragma(\"clang fp contract(fast)\")\n"
              "#elif defined(__GNUC__)\n#define TSL_GEMM_FN __attribute__((optimize(\"fp-contract=fast\")))\n"
              "#define TSL_GEMM_CONTRACT\n#else\n#define TSL_GEMM_FN\n#define TSL_GEMM_CONTRACT\n#endif\n#endif\n"
              "#if defined(__GNUC__)\n"
              "typedef uint32_t %s_u __attribute__((vector_size(32)));\n"
              "typedef int32_t %s_i __attribute__((vector_size(32)));\n"
              "typedef float %s_f __attribute__((vector_size(32)));\n"
              "typedef float %s_fu __attribute__((vector_size(32), aligned(4)));\n"
              "/* the 8 fields of chunk word v as f32 lanes */\n"
              "static inline %s_f %s_fields(uint64_t v)\n{\n"
              "    const %s_u sh = {0, %d, %d, %d, %d, %d, %d, %d};\n"
              "    const %s_u c = %s >> sh & 0x%xu;\n"
              "    %s\n}\n"
              "/* chunks [j0, j1) of R rows: acc read and written once per chunk, the\n"
              "   rows multiply-added in order (the generic loop's order) */\n"
              "static inline __attribute__((always_inline)) void %s_rows(float *restrict acc, const uint8_t *const *wr,\n"
              "    const float *xv, int R, int64_t j0, int64_t j1, int whole, int64_t pf)\n{\n"
              "    for (int64_t j = j0; j < j1; j++) {\n"
              "        if ((j & %d) == 0)\n"
              "            for (int i = 0; i < R; i++) __builtin_prefetch((const void *)((uintptr_t)wr[i] + (uintptr_t)pf + (uintptr_t)(j * %d)));\n"
              "        %s_f a = *(%s_fu *)(acc + j * 8);\n"
              "        for (int i = 0; i < R; i++) {\n"
              "            uint64_t v = 0;\n"
              "            if (whole) memcpy(&v, wr[i] + j * %d, %d);\n"
              "            else memcpy(&v, wr[i] + j * %d, %d);\n"
              "            a += %s_fields(v) * xv[i];\n"
              "        }\n"
              "        *(%s_fu *)(acc + j * 8) = a;\n"
              "    }\n}\n"
              "#endif\n"
              "%s"
              "static TSL_GEMM_FN void %s(float *restrict acc, const uint8_t *restrict w, int64_t ws,\n"
              "    const %s *restrict x, int64_t xs, int64_t n)\n{\n    TSL_GEMM_CONTRACT\n"
              "%s"
              "    int64_t r = 0;\n"
              "    for (; r + 4 <= n; r += 4) {\n"
              "        const uint8_t *wr[4];\n        float xv[4];\n"
              "        for (int i = 0; i < 4; i++) { wr[i] = w + (r + i) * ws; xv[i] = %s; }\n"
              "        %s_rows(acc, wr, xv, 4, 0, %lld, 1, 4 * ws);\n"
              "        %s_rows(acc, wr, xv, 4, %lld, %lld, 0, 4 * ws);\n"
              "    }\n"
              "    for (; r < n; r++) {\n"
              "        const int i = 0;\n"
              "        const uint8_t *wr[1] = {w + r * ws};\n        const float xv[1] = {%s};\n"
              "        %s_rows(acc, wr, xv, 1, 0, %lld, 1, 4 * ws);\n"
              "        %s_rows(acc, wr, xv, 1, %lld, %lld, 0, 4 * ws);\n"
              "    }\n"
              "#else\n"
              "    for (int64_t r = 0; r < n; r++) {\n"
              "        const int i = 0;\n"
              "        const float xv = %s;\n"
              "        const uint8_t *wr = w + r * ws;\n"
              "        for (int64_t j = 0; j < %lld; j++) {\n"
              "            uint64_t v = 0;\n"
              "            memcpy(&v, wr + j * %d, %d);\n"
              "            for (int t = 0; t < 8; t++) {\n"
              "                const uint32_t code = (uint32_t)(v >> (t * %d)) & 0x%xu;\n"
              "                acc[j * 8 + t] += %s * xv;\n"
              "            }\n"
              "        }\n"
              "    }\n"
              "#endif\n}\n",
              (long long)n, B, fn, fn, fn, fn, fn, fn, fn, B, 2 * B, 3 * B, sh4 ? 4 * B : 0,
              sh4 ? 5 * B : B, sh4 ? 6 * B : 2 * B, sh4 ? 7 * B : 3 * B, fn, lanes, (1u << B) - 1, conv, fn, pfm, B, fn, fn, B, lw,
              B, B, fn, fn, sb_str(&bh), fn, xt, pre, xconv, fn, (long long)jf, fn, (long long)jf, (long long)nj, xconv, fn, (long long)jf,
              fn, (long long)jf, (long long)nj, xconv, (long long)nj, B, B, B, (1u << B) - 1, val);
    sb_free(&bh);
    cgc_line(c, "/* the loop dequantizes %lld fields of %d bits a row (cpu.ukr.dequant) when the pre-pass allows */",
             (long long)n, B);
    cgc_line(c, "int dq%d = step == 1 && hi > lo && %s_s1 == 1 && %s_s1 == 1;", id, cgc_gname(c, u->wb),
             cgc_gname(c, u->xg));
    cgc_line(c, "int64_t dw%d = 0, dx%d = 0, sw%d = 0, sx%d = 0;", id, id, id, id);
    cgc_line(c, "for (v%d = lo; dq%d && v%d < hi; v%d++) {", kv, id, kv, kv);
    c->ind++;
    char *ok = arena_printf(c->ar, "dq%d", id);
    char *ow = anchor(c, u->sw, nb, ok);
    char *ox = ow ? anchor(c, u->sx, 1, ok) : NULL;
    if (!ow || !ox) return 0;
    c->divs = 0; /* a division by zero: err set, the generic loop reports it */
    cgc_line(c, "if (err) dq%d = 0;", id);
    cgc_line(c, "const int64_t ow = %s, ox = %s;", ow, ox);
    cgc_line(c, "if (v%d == lo) { dw%d = ow; dx%d = ox; }", kv, id, id);
    cgc_line(c, "else if (v%d == lo + 1) { sw%d = ow - dw%d; sx%d = ox - dx%d; }", kv, id, id, id, id);
    cgc_line(c, "else if (ow != dw%d + (v%d - lo) * sw%d || ox != dx%d + (v%d - lo) * sx%d) dq%d = 0;", id, kv, id, id, kv,
             id, id);
    c->ind--;
    cgc_line(c, "}");
    cgc_line(c, "err = 0;");
    cgc_line(c, "if (dq%d) {", id);
    c->ind++;
    cgc_line(c, "%s(%s, %s + dw%d, sw%d, %s + dx%d, sx%d, hi - lo);", fn, cgc_rname(c, u->acc), cgc_gname(c, u->wb), id,
             id, cgc_gname(c, u->xg), id, id);
    cgc_line(c, "v%d = hi;", kv);
    c->ind--;
    cgc_line(c, "} else {");
    (void)xt;
    return 1;
}
