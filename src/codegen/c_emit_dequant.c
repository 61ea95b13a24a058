/* c_emit_dequant.c — prints the cpu.ukr.dequant atom (target/cpu.c): the
 * quantized matmul's row loop on the CPU (docs/sched.md, "The quantized
 * matmul"), which the CPU plan asks for by writing the atom on the loop's
 * accumulating add. Which loops fit is the target's (target/ukr.c).
 *
 * Per row r the loop computes acc[i] += value(field i of WB's row) *
 * X[XR, XC] — the interpreter's mul then add, here one fused multiply-add.
 * Emitted: a run-time pre-pass over r (step 1; every row and X element in
 * bounds; WB's and X's offsets linear in r; the last strides 1); if it
 * holds, one static function runs the rows in passes (acc read and
 * written once per chunk and pass; each row still multiply-added in r
 * order), each pass prefetching the next pass's rows a cache line at a
 * time (the rows of a pass lie a row stride apart, each run a new page the
 * hardware prefetchers are slow to follow). The unpackings, the first
 * the compiler's target has taken (kernels are built with -march=native):
 *
 *   - the table path (emit_table: 3- and 4-bit dtypes, AVX-512, runs of
 *     whole 128-field chunks; 3 bits on AVX2 alone: emit_ytable, 64-field
 *     chunks): 8 fields to a 32-bit lane (4 bits: the lanes loaded
 *     straight from the row, again at byte offsets 1-3 for the fields 8,
 *     16 and 24 bits up; 3 bits: each lane's 3 bytes put in place by one
 *     byte permute), set s of a chunk the lanes shifted by s * B, and a
 *     field's f32 value one vpermps of a table of the dtype's values by
 *     the lane's low bits (no mask, no conversion, signed and float
 *     codes alike); 8 rows a pass, the chunk's sets held in registers
 *     across it, acc permuted into the sets' order by the first pass and
 *     back by the last;
 *   - the byte path (B dividing 8, 8-byte chunks, AVX2): a chunk's 8 bytes
 *     widened to 8 32-bit lanes (vpmovzxbd), set s of its 8 / B fields the
 *     lanes shifted by s * B and masked (constant shifts); lane b of set
 *     s is field b * 8 / B + s, so acc is held in that order while the
 *     rows run (4 a pass) and permuted on entry and exit;
 *   - otherwise (widths 5, 6, 7, or no AVX2) 32-bit lanes, 4 rows a pass
 *     and the rows left one at a time: per chunk of 8 fields (B bytes) one
 *     4- or 8-byte load (exactly B bytes for the last chunks, where a
 *     whole word would end past the run), its fields as 8 lanes of a GNU
 *     C vector (B <= 4: the word in every lane; B > 4: fields 0-3 from the
 *     low word, 4-7 from the word at bit 4B), each lane shifted by its
 *     field's offset and masked;
 *
 * then (the last two) converted (an int-to-float conversion, a signed
 * field sign-extended by a shift pair first; a low-bit float through a
 * table of its 2^B values) and multiply-added (the scalar loop without GNU
 * C); otherwise the generic loop runs. The micro-kernel alone (8192 x 8192,
 * 4096 columns a block, groups of 128, 1 core, thread CPU time on the
 * shared 2-core VM, a Xeon with AVX-512): uint4 2.8-3.0 GB/s with none of
 * these, 3.9-4.1 with the prefetch, 5.3-6.2 with the byte path, 12.7-13.3
 * with the table path (14.7 with W in the 2 MB L2); uint3 4.5-4.9 on the
 * 32-bit lanes, 8.0-9.2 on the table path (AVX2 alone: 3.7-4.6 -> 5.9-6.1). */
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

/* The value of row `row`'s x as float (f16 and bf16 widened). */
static const char *x_at(cgc *c, tile_dtype xd, const char *row)
{
    const char *cv = xd.bits == 32 ? "" : xd.exp == 8 ? "tsl_bf2f" : "tsl_h2f";
    return arena_printf(c->ar, "%s(x[(%s) * xs])", cv, row);
}

/* The body of `static inline fn_f f(const fn_u c)`: the f32 lanes of the
 * masked codes c (a signed field sign-extended by a shift pair; a low-bit
 * float through its table). */
static const char *conv_text(cgc *c, const char *fn, tile_dtype q)
{
    int B = q.bits;
    if (dtype_desc_is_lowfloat(q))
        return arena_printf(c->ar, "%s_f f;\n    for (int t = 0; t < 8; t++) f[t] = %s_lut[c[t]];\n    return f;", fn, fn);
    if (q.kind == TILE_DT_INT)
        return arena_printf(c->ar, "return __builtin_convertvector(((%s_i)c << %d) >> %d, %s_f);", fn, 32 - B, 32 - B, fn);
    return arena_printf(c->ar, "return __builtin_convertvector((%s_i)c, %s_f);", fn, fn);
}

/* A low-bit float's 2^B values by code, as fn_lut; the scalar value of
 * field `code` is returned (the loop without GNU C). */
static const char *emit_values(cgc *c, strbuf *o, const char *fn, tile_dtype q)
{
    int B = q.bits;
    if (q.kind == TILE_DT_INT) return arena_printf(c->ar, "(float)((int32_t)(code << %d) >> %d)", 32 - B, 32 - B);
    if (!dtype_desc_is_lowfloat(q)) return "(float)code";
    sb_printf(o, "\n/* the %d values of the low-bit float f%de%dm%d, by code */\nstatic const float %s_lut[%d] = {", 1 << B, B,
              q.exp, q.man, fn, 1 << B);
    for (unsigned k = 0; k < (1u << B); k++) {
        float v = dtype_lowfloat_decode(q, k);
        if (v != v) sb_printf(o, "%sNAN", k ? ", " : "");
        else if (v > 3.4e38f || v < -3.4e38f) sb_printf(o, "%s%sINFINITY", k ? ", " : "", v < 0 ? "-" : "");
        else sb_printf(o, "%s%.8ef", k ? ", " : "", (double)v);
    }
    sb_puts(o, "};\n");
    return arena_printf(c->ar, "%s_lut[code]", fn);
}

/* The heading, the fp-contract macros (printed once a file) and the GNU C
 * vector types every path uses. */
static void emit_types(strbuf *o, const char *fn, int64_t n, int B)
{
    sb_printf(o, "\n/* dequantize and accumulate: %lld fields of %d bits a row, times one x per row */\n", (long long)n, B);
    sb_puts(o, "#ifndef TSL_GEMM_FN\n"
               "#if defined(__clang__)\n#define TSL_GEMM_FN\n#define TSL_GEMM_CONTRACT _Pragma(\"clang fp contract(fast)\")\n"
               "#elif defined(__GNUC__)\n#define TSL_GEMM_FN __attribute__((optimize(\"fp-contract=fast\")))\n"
               "#define TSL_GEMM_CONTRACT\n#else\n#define TSL_GEMM_FN\n#define TSL_GEMM_CONTRACT\n#endif\n#endif\n");
    sb_printf(o,
              "#if defined(__GNUC__)\n"
              "typedef uint32_t %s_u __attribute__((vector_size(32)));\n"
              "typedef int32_t %s_i __attribute__((vector_size(32)));\n"
              "typedef float %s_f __attribute__((vector_size(32)));\n"
              "typedef float %s_fu __attribute__((vector_size(32), aligned(4)));\n",
              fn, fn, fn, fn);
}

/* The 32-bit-lane path's helpers (closing the types' #if): 8 fields (B
 * bytes) as 32-bit lanes: B <= 4, one 32-bit word in every lane, lane t
 * shifted by t * B; B > 4, fields 0-3 from the low word, 4-7 from the
 * word at bit 4 * B (8 * B <= 64). A chunk's word is read whole (4 or 8
 * bytes: a load of B bytes, B odd, is a byte-by-byte assembly GCC does
 * not vectorise, 4x slower for uint3) where it ends inside the run
 * (`whole`); the last chunks read exactly B bytes. W's rows 4 on (the
 * next pass) are prefetched every pfm + 1 chunks (the largest power of
 * two with (pfm + 1) * B <= 64, so that no cache line is skipped). */
static void emit_lanes(strbuf *o, const char *fn, int B, const char *conv)
{
    int lw = B <= 4 ? 4 : 8, pfm = 1;
    while (2 * pfm * B <= 64) pfm *= 2;
    pfm--;
    sb_printf(o, "/* the 8 fields of chunk word v as f32 lanes */\nstatic inline %s_f %s_fields(uint64_t v)\n{\n", fn, fn);
    if (B <= 4) /* lanes 4-7 shift on from lane 3 */
        sb_printf(o, "    const %s_u sh = {0, %d, %d, %d, %d, %d, %d, %d};\n    const %s_u c = ((%s_u){0} + (uint32_t)v)", fn, B,
                  2 * B, 3 * B, 4 * B, 5 * B, 6 * B, 7 * B, fn, fn);
    else /* lanes 4-7 restart at the word at 4 * B */
        sb_printf(o,
                  "    const %s_u sh = {0, %d, %d, %d, 0, %d, %d, %d};\n"
                  "    const %s_u c = ((%s_u){(uint32_t)v, (uint32_t)v, (uint32_t)v, (uint32_t)v, (uint32_t)(v >> %d), "
                  "(uint32_t)(v >> %d), (uint32_t)(v >> %d), (uint32_t)(v >> %d)})",
                  fn, B, 2 * B, 3 * B, B, 2 * B, 3 * B, fn, fn, 4 * B, 4 * B, 4 * B, 4 * B);
    sb_printf(o, " >> sh & 0x%xu;\n    %s\n}\n", (1u << B) - 1, conv);
    sb_printf(o,
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
              "#endif\n",
              fn, pfm, B, fn, fn, B, lw, B, B, fn, fn);
}

/* The byte path's helpers, for B dividing 8 and whole 8-byte chunks, where
 * AVX2 is (its zero-extending load vpmovzxbd; GCC 12 does not make one
 * from __builtin_convertvector): a chunk of 8 bytes holds F = 64 / B
 * fields, byte b's S = 8 / B fields at b * S + s; the 8 bytes widened to
 * 8 32-bit lanes, set s is the lanes shifted by s * B and masked (constant
 * shifts, no per-lane ones) and lane b of set s is field b * S + s. acc
 * is kept in that order (set s of chunk j at j * F + s * 8) while the rows
 * run, permuted on entry and back on exit (twice over acc per call,
 * against n rows of it). Returns 0 (nothing printed) where the path does
 * not apply. */
static int emit_bytes(strbuf *o, const char *fn, int B, int64_t nb, const char *conv)
{
    if (8 % B || nb % 8) return 0;
    int S = 8 / B, F = 64 / B;
    long long nj = nb / 8;
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
                  S, F, fn, F, nj, F, S, S, S);
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
              fn, nj, fn, S, S, fn, F, fn, fn, S, fn, B, (1u << B) - 1, S, fn, F);
    return 1;
}

/* The f32 value of field code k & (2^B - 1) for k < nv, as fn_<nm>[nv]. */
static void emit_tab(strbuf *o, const char *fn, const char *nm, tile_dtype q, unsigned nv)
{
    int B = q.bits;
    sb_printf(o, "static const float %s_%s[%u] = {", fn, nm, nv);
    for (unsigned k = 0; k < nv; k++) {
        unsigned code = k & ((1u << B) - 1);
        float v = dtype_desc_is_lowfloat(q) ? dtype_lowfloat_decode(q, code)
                  : q.kind == TILE_DT_INT    ? (float)((int32_t)(code << (32 - B)) >> (32 - B))
                                             : (float)code;
        if (v != v) sb_printf(o, "%sNAN", k ? ", " : "");
        else if (v > 3.4e38f || v < -3.4e38f) sb_printf(o, "%s%sINFINITY", k ? ", " : "", v < 0 ? "-" : "");
        else sb_printf(o, "%s%.8ef", k ? ", " : "", (double)v);
    }
    sb_puts(o, "};\n");
}

/* The table path (AVX-512; B = 4, or B = 3 with VBMI's byte permute), for
 * runs of whole chunks of 128 fields: a chunk is 16 32-bit lanes of 8
 * fields each (B = 4: 64 bytes, the lanes loaded straight from the row;
 * B = 3: 48 bytes, each lane's 3 bytes gathered by one vpermb), set s of
 * the chunk the lanes' field s: lane l of set s is field 8l + s. A
 * field's f32 value is one vpermps of a table of the dtype's 16 values by
 * the lane's low 4 bits (B = 3: the 8 values twice, so the bit above the
 * field is ignored), so a set costs a shift (none for set 0), the permute
 * and the multiply-add, against a shift, a mask, a conversion and the
 * multiply-add on the byte path, each of them on 16 lanes rather than 8.
 * B = 4 takes the shifts by 8, 16 and 24 from loads at byte offsets 1, 2
 * and 3 (load ports, not vector ALU ones): 20 vector operations per 128
 * fields, B = 3 24 (a core with two 512-bit vector ports: at most 12.8
 * and 10.7 fields a cycle; measured 85-90% of that with W in L2, the
 * per-group scaling included). Rows run 8 a pass, the chunk's 8 sets held in
 * registers across the pass; acc is kept in the sets' order between passes
 * (the first pass permutes each chunk in, the last one back; three
 * two-source permutes a register each way, in blocks of 1, 2 and 4
 * lanes). Where a load would end past the run (B = 4 at byte offsets 1-3,
 * B = 3's 64-byte loads of 48 bytes), the chunk's last load is masked.
 * The table also decodes signed fields and low-bit floats (its values are
 * the dtype's), so every 3- and 4-bit dtype takes it. Returns 0 (nothing
 * printed) where the path does not apply. */
static int emit_table(strbuf *o, const char *fn, tile_dtype q, int64_t n)
{
    int B = q.bits;
    if ((B != 3 && B != 4) || n % 128) return 0;
    long long nch = n / 128;
    int cb = 16 * B; /* a chunk's bytes */
    sb_printf(o, "#if defined(__GNUC__) && defined(__AVX512F__) && defined(__AVX512BW__)%s\n#include <immintrin.h>\n",
              B == 3 ? " && defined(__AVX512VBMI__)" : "");
    sb_printf(o, "/* the dtype's value of a lane's low 4 bits (B = %d%s) */\n", B, B == 3 ? ": the 8 values twice" : "");
    emit_tab(o, fn, "ztab", q, 16);
    /* the interleaving permutes: blocks of w lanes of u and v alternated
     * (lanes 0-7 of each into lo, 8-15 into hi), and their inverse */
    sb_printf(o,
              "/* lane k of interleave (step w, half h): block k / (2w) of u (k %% 2w < w) or v, lanes 8h on */\n"
              "static inline __m512i %s_zil(int w, int h)\n{\n"
              "    int32_t ix[16];\n"
              "    for (int k = 0; k < 16; k++) ix[k] = (k %% (2 * w) < w ? 0 : 16 - w) + k / (2 * w) * w + k %% (2 * w) + 8 * h;\n"
              "    return _mm512_loadu_si512(ix);\n}\n"
              "/* lane k of de-interleave (u: h = 0, v: h = 1) of lo (lanes < 8) and hi */\n"
              "static inline __m512i %s_zdl(int w, int h)\n{\n"
              "    int32_t ix[16];\n"
              "    for (int k = 0; k < 16; k++) ix[k] = (k < 8 ? 0 : 16) + (k %% 8) / w * 2 * w + h * w + k %% w;\n"
              "    return _mm512_loadu_si512(ix);\n}\n",
              fn, fn);
    sb_printf(o,
              "/* a chunk's 8 registers from the sets' order (a[s] lane l: field 8l + s)\n"
              "   to column order (a[q] lane t: field 16q + t): interleave sets s, s + 1\n"
              "   by lanes, then pairs by 2, then fours by 4 */\n"
              "static inline __attribute__((always_inline)) void %s_znat(__m512 a[8])\n{\n"
              "    __m512 b[8], d[8];\n"
              "    for (int i = 0; i < 4; i++) {\n"
              "        b[i] = _mm512_permutex2var_ps(a[2 * i], %s_zil(1, 0), a[2 * i + 1]);\n"
              "        b[4 + i] = _mm512_permutex2var_ps(a[2 * i], %s_zil(1, 1), a[2 * i + 1]);\n"
              "    }\n"
              "    for (int h = 0; h < 2; h++)\n"
              "        for (int j = 0; j < 2; j++) {\n"
              "            d[4 * h + j] = _mm512_permutex2var_ps(b[4 * h + 2 * j], %s_zil(2, 0), b[4 * h + 2 * j + 1]);\n"
              "            d[4 * h + 2 + j] = _mm512_permutex2var_ps(b[4 * h + 2 * j], %s_zil(2, 1), b[4 * h + 2 * j + 1]);\n"
              "        }\n"
              "    for (int h = 0; h < 2; h++)\n"
              "        for (int x = 0; x < 2; x++) {\n"
              "            a[4 * h + 2 * x] = _mm512_permutex2var_ps(d[4 * h + 2 * x], %s_zil(4, 0), d[4 * h + 2 * x + 1]);\n"
              "            a[4 * h + 2 * x + 1] = _mm512_permutex2var_ps(d[4 * h + 2 * x], %s_zil(4, 1), d[4 * h + 2 * x + 1]);\n"
              "        }\n"
              "}\n"
              "/* the inverse of %s_znat: column order to the sets' order */\n"
              "static inline __attribute__((always_inline)) void %s_zset(__m512 a[8])\n{\n"
              "    __m512 b[8], d[8];\n"
              "    for (int h = 0; h < 2; h++)\n"
              "        for (int x = 0; x < 2; x++) {\n"
              "            d[4 * h + 2 * x] = _mm512_permutex2var_ps(a[4 * h + 2 * x], %s_zdl(4, 0), a[4 * h + 2 * x + 1]);\n"
              "            d[4 * h + 2 * x + 1] = _mm512_permutex2var_ps(a[4 * h + 2 * x], %s_zdl(4, 1), a[4 * h + 2 * x + 1]);\n"
              "        }\n"
              "    for (int h = 0; h < 2; h++)\n"
              "        for (int j = 0; j < 2; j++) {\n"
              "            b[4 * h + 2 * j] = _mm512_permutex2var_ps(d[4 * h + j], %s_zdl(2, 0), d[4 * h + 2 + j]);\n"
              "            b[4 * h + 2 * j + 1] = _mm512_permutex2var_ps(d[4 * h + j], %s_zdl(2, 1), d[4 * h + 2 + j]);\n"
              "        }\n"
              "    for (int i = 0; i < 4; i++) {\n"
              "        a[2 * i] = _mm512_permutex2var_ps(b[i], %s_zdl(1, 0), b[4 + i]);\n"
              "        a[2 * i + 1] = _mm512_permutex2var_ps(b[i], %s_zdl(1, 1), b[4 + i]);\n"
              "    }\n"
              "}\n",
              fn, fn, fn, fn, fn, fn, fn, fn, fn, fn, fn, fn, fn, fn, fn);
    /* one row's sets into a[] */
    sb_printf(o,
              "/* every chunk of R rows (R <= 8): the chunk's sets in registers over the\n"
              "   rows, multiply-added in row order; acc permuted in on the first pass\n"
              "   and back on the last; the next pass's rows prefetched */\n"
              "static inline __attribute__((always_inline)) void %s_zrows(float *restrict acc, const uint8_t *const *wr,\n"
              "    const float *xv, int R, int first, int last, int64_t pf)\n{\n"
              "    const __m512 tab = _mm512_loadu_ps(%s_ztab);\n",
              fn, fn);
    if (B == 3)
        sb_printf(o,
                  "    uint8_t gb[64];\n"
                  "    for (int k = 0; k < 64; k++) gb[k] = (uint8_t)(k %% 4 < 3 ? k / 4 * 3 + k %% 4 : k / 4 * 3 + 2);\n"
                  "    const __m512i gx = _mm512_loadu_si512(gb); /* lane l: bytes 3l, 3l + 1, 3l + 2 */\n");
    sb_printf(o,
              "    for (int64_t j = 0; j < %lld; j++) {\n"
              "        __m512 a[8];\n"
              "        for (int s = 0; s < 8; s++) a[s] = _mm512_loadu_ps(acc + j * 128 + s * 16);\n"
              "        if (first) %s_zset(a);\n"
              "        const int end = j == %lld; /* the run's last chunk: no load past it */\n"
              "        for (int i = 0; i < R; i++) {\n"
              "            const uint8_t *p = wr[i] + j * %d;\n"
              "            _mm_prefetch((const char *)(p + pf), _MM_HINT_T0);\n"
              "            const __m512 xb = _mm512_set1_ps(xv[i]);\n",
              nch, fn, nch - 1, cb);
    if (B == 4)
        sb_printf(o,
                  "            for (int k = 0; k < 4; k++) { /* bytes 4l + k: sets 2k, 2k + 1 */\n"
                  "                const __m512i v = k && end ? _mm512_maskz_loadu_epi8(~0ull >> k, p + k) : _mm512_loadu_si512(p + k);\n"
                  "                a[2 * k] = _mm512_fmadd_ps(_mm512_permutexvar_ps(v, tab), xb, a[2 * k]);\n"
                  "                a[2 * k + 1] = _mm512_fmadd_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(v, 4), tab), xb, a[2 * k + 1]);\n"
                  "            }\n");
    else
        sb_printf(o,
                  "            const __m512i v = _mm512_permutexvar_epi8(gx, end ? _mm512_maskz_loadu_epi8(~0ull >> 16, p) : _mm512_loadu_si512(p));\n"
                  "            a[0] = _mm512_fmadd_ps(_mm512_permutexvar_ps(v, tab), xb, a[0]);\n"
                  "            for (int s = 1; s < 8; s++)\n"
                  "                a[s] = _mm512_fmadd_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(v, 3 * s), tab), xb, a[s]);\n");
    sb_printf(o,
              "        }\n"
              "        if (last) %s_znat(a);\n"
              "        for (int s = 0; s < 8; s++) _mm512_storeu_ps(acc + j * 128 + s * 16, a[s]);\n"
              "    }\n}\n"
              "#endif\n",
              fn);
    return 1;
}

/* The table path on AVX2 for B = 3 (8-lane vpermps takes exactly a 3-bit
 * index), for runs of whole chunks of 64 fields: a chunk is 24 bytes, its
 * 8 32-bit lanes the 3-byte groups (bytes 0-15 and 12-27 loaded as two
 * halves, vpshufb placing each group in its lane), set s the lanes shifted
 * by 3s; lane l of set s is field 8l + s, an 8 x 8 transpose (its own
 * inverse) from column order. 25 vector operations per 64 fields against
 * about 40 on the 32-bit-lane path. Rows, passes, permutes, prefetch and
 * the last chunk's masked load (the upper half's 3 words) as emit_table's.
 * Returns 0 (nothing printed) where it does not apply. */
static int emit_ytable(strbuf *o, const char *fn, tile_dtype q, int64_t n)
{
    if (q.bits != 3 || n % 64) return 0;
    long long nch = n / 64;
    sb_puts(o, "#if defined(__GNUC__) && defined(__AVX2__)\n#include <immintrin.h>\n/* the dtype's value of a 3-bit code */\n");
    emit_tab(o, fn, "ytab", q, 8);
    sb_printf(o,
              "/* a chunk's 8 registers between the sets' order (a[s] lane l: field\n"
              "   8l + s) and column order (a[q] lane t: field 8q + t): a transpose */\n"
              "static inline __attribute__((always_inline)) void %s_ytr(__m256 a[8])\n{\n"
              "    __m256 b[8], d[8];\n"
              "    for (int i = 0; i < 4; i++) {\n"
              "        b[2 * i] = _mm256_unpacklo_ps(a[2 * i], a[2 * i + 1]);\n"
              "        b[2 * i + 1] = _mm256_unpackhi_ps(a[2 * i], a[2 * i + 1]);\n"
              "    }\n"
              "    for (int i = 0; i < 2; i++) {\n"
              "        d[4 * i] = _mm256_shuffle_ps(b[4 * i], b[4 * i + 2], 0x44);\n"
              "        d[4 * i + 1] = _mm256_shuffle_ps(b[4 * i], b[4 * i + 2], 0xee);\n"
              "        d[4 * i + 2] = _mm256_shuffle_ps(b[4 * i + 1], b[4 * i + 3], 0x44);\n"
              "        d[4 * i + 3] = _mm256_shuffle_ps(b[4 * i + 1], b[4 * i + 3], 0xee);\n"
              "    }\n"
              "    for (int i = 0; i < 4; i++) {\n"
              "        a[i] = _mm256_permute2f128_ps(d[i], d[4 + i], 0x20);\n"
              "        a[4 + i] = _mm256_permute2f128_ps(d[i], d[4 + i], 0x31);\n"
              "    }\n"
              "}\n",
              fn);
    sb_printf(o,
              "/* every chunk of R rows (R <= 8), as %s_zrows */\n"
              "static inline __attribute__((always_inline)) void %s_yrows(float *restrict acc, const uint8_t *const *wr,\n"
              "    const float *xv, int R, int first, int last, int64_t pf)\n{\n"
              "    const __m256 tab = _mm256_loadu_ps(%s_ytab);\n"
              "    const __m256i gx = _mm256_setr_epi8(0, 1, 2, 2, 3, 4, 5, 5, 6, 7, 8, 8, 9, 10, 11, 11,\n"
              "                                        0, 1, 2, 2, 3, 4, 5, 5, 6, 7, 8, 8, 9, 10, 11, 11);\n"
              "    const __m128i m3 = _mm_setr_epi32(-1, -1, -1, 0); /* the last chunk's upper half: 12 bytes */\n"
              "    for (int64_t j = 0; j < %lld; j++) {\n"
              "        __m256 a[8];\n"
              "        for (int s = 0; s < 8; s++) a[s] = _mm256_loadu_ps(acc + j * 64 + s * 8);\n"
              "        if (first) %s_ytr(a);\n"
              "        const int end = j == %lld;\n"
              "        for (int i = 0; i < R; i++) {\n"
              "            const uint8_t *p = wr[i] + j * 24;\n"
              "            _mm_prefetch((const char *)(p + pf), _MM_HINT_T0);\n"
              "            const __m256 xb = _mm256_set1_ps(xv[i]);\n"
              "            const __m128i lo = _mm_loadu_si128((const __m128i *)p);\n"
              "            const __m128i hi = end ? _mm_maskload_epi32((const int *)(p + 12), m3) : _mm_loadu_si128((const __m128i *)(p + 12));\n"
              "            const __m256i v = _mm256_shuffle_epi8(_mm256_set_m128i(hi, lo), gx);\n"
              "            a[0] = _mm256_fmadd_ps(_mm256_permutevar8x32_ps(tab, v), xb, a[0]);\n"
              "            for (int s = 1; s < 8; s++)\n"
              "                a[s] = _mm256_fmadd_ps(_mm256_permutevar8x32_ps(tab, _mm256_srli_epi32(v, 3 * s)), xb, a[s]);\n"
              "        }\n"
              "        if (last) %s_ytr(a);\n"
              "        for (int s = 0; s < 8; s++) _mm256_storeu_ps(acc + j * 64 + s * 8, a[s]);\n"
              "    }\n}\n"
              "#endif\n",
              fn, fn, fn, nch, fn, nch - 1, fn);
    return 1;
}

/* The table path's body (p "z": AVX-512, "y": AVX2): passes of 8 rows
 * (the last of fewer). */
static void body_table(cgc *c, strbuf *o, const char *fn, const char *p, tile_dtype xd)
{
    sb_printf(o,
              "    for (int64_t r = 0; r < n; r += 8) {\n"
              "        const int R = n - r < 8 ? (int)(n - r) : 8;\n"
              "        const uint8_t *wr[8];\n        float xv[8];\n"
              "        for (int i = 0; i < R; i++) {\n"
              "            wr[i] = w + (r + i) * ws;\n            xv[i] = %s;\n"
              "        }\n"
              "        if (R == 8) %s_%srows(acc, wr, xv, 8, r == 0, r + 8 >= n, 8 * ws);\n"
              "        else %s_%srows(acc, wr, xv, R, r == 0, 1, 8 * ws);\n"
              "    }\n",
              x_at(c, xd, "r + i"), fn, p, fn, p);
}

/* The byte path's body: passes of up to 4 rows, acc permuted around them. */
static void body_bytes(cgc *c, strbuf *o, const char *fn, int B, tile_dtype xd)
{
    int S = 8 / B;
    if (S > 1) sb_printf(o, "    %s_perm(acc, 0);\n", fn);
    sb_printf(o,
              "    for (int64_t r = 0; r < n; r += 4) {\n"
              "        const int R = n - r < 4 ? (int)(n - r) : 4;\n"
              "        const uint8_t *wr[4];\n        float xv[4];\n"
              "        for (int i = 0; i < R; i++) {\n"
              "            wr[i] = w + (r + i) * ws;\n            xv[i] = %s;\n"
              "        }\n"
              "        if (R == 4) %s_brows(acc, wr, xv, 4, 4 * ws);\n"
              "        else for (int i = 0; i < R; i++) %s_brows(acc, wr + i, xv + i, 1, 4 * ws);\n"
              "    }\n",
              x_at(c, xd, "r + i"), fn, fn);
    if (S > 1) sb_printf(o, "    %s_perm(acc, 1);\n", fn);
}

/* The 32-bit-lane path's body: passes of 4 rows, then the rows left one
 * at a time; chunks [0, jf) read whole words, [jf, nj) exactly B bytes. */
static void body_lanes(cgc *c, strbuf *o, const char *fn, tile_dtype xd, long long jf, long long nj)
{
    sb_printf(o,
              "    int64_t r = 0;\n"
              "    for (; r + 4 <= n; r += 4) {\n"
              "        const uint8_t *wr[4];\n        float xv[4];\n"
              "        for (int i = 0; i < 4; i++) { wr[i] = w + (r + i) * ws; xv[i] = %s; }\n"
              "        %s_rows(acc, wr, xv, 4, 0, %lld, 1, 4 * ws);\n"
              "        %s_rows(acc, wr, xv, 4, %lld, %lld, 0, 4 * ws);\n"
              "    }\n",
              x_at(c, xd, "r + i"), fn, jf, fn, jf, nj);
    sb_printf(o,
              "    for (; r < n; r++) {\n"
              "        const uint8_t *wr[1] = {w + r * ws};\n        const float xv[1] = {%s};\n"
              "        %s_rows(acc, wr, xv, 1, 0, %lld, 1, 4 * ws);\n"
              "        %s_rows(acc, wr, xv, 1, %lld, %lld, 0, 4 * ws);\n"
              "    }\n",
              x_at(c, xd, "r"), fn, jf, fn, jf, nj);
}

/* The body without GNU C: field by field, exactly B bytes a chunk. */
static void body_scalar(cgc *c, strbuf *o, int B, tile_dtype xd, const char *val, long long nj)
{
    sb_printf(o,
              "    for (int64_t r = 0; r < n; r++) {\n"
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
              "    }\n",
              x_at(c, xd, "r"), nj, B, B, B, (1u << B) - 1, val);
}

int cgc_emit_dequant_for(cgc *c, const tile_stmt *f, const target_ukr *u)
{
    int id = c->tmp++, kv = f->v->id;
    tile_dtype q = u->qdt, xd = u->xg->type.dt;
    int B = q.bits;
    int64_t n = u->bn, nb = n * B / 8;
    const char *fn = arena_printf(c->ar, "tsl_dq%d", id);
    strbuf *o = &c->tabs;
    const char *val = emit_values(c, o, fn, q), *conv = conv_text(c, fn, q);
    /* chunks of 8 fields: [0, jf) end inside the run when read as whole words */
    int lw = B <= 4 ? 4 : 8;
    int64_t nj = n / 8, jf = nb >= lw ? (nb - lw) / B + 1 : 0;
    if (jf > nj) jf = nj;
    emit_types(o, fn, n, B);
    emit_lanes(o, fn, B, conv);
    int bytes = emit_bytes(o, fn, B, nb, conv), table = emit_table(o, fn, q, n), ytable = emit_ytable(o, fn, q, n);
    sb_printf(o,
              "static TSL_GEMM_FN void %s(float *restrict acc, const uint8_t *restrict w, int64_t ws,\n"
              "    const %s *restrict x, int64_t xs, int64_t n)\n{\n    TSL_GEMM_CONTRACT\n",
              fn, xd.bits == 32 ? "float" : "uint16_t");
    const char *el = "#if";
    if (table) {
        sb_printf(o, "#if defined(__GNUC__) && defined(__AVX512F__) && defined(__AVX512BW__)%s\n",
                  B == 3 ? " && defined(__AVX512VBMI__)" : "");
        body_table(c, o, fn, "z", xd);
        el = "#elif";
    }
    if (ytable) {
        sb_printf(o, "%s defined(__GNUC__) && defined(__AVX2__)\n", el);
        body_table(c, o, fn, "y", xd);
        el = "#elif";
    }
    if (bytes) {
        sb_printf(o, "%s defined(__GNUC__) && defined(__AVX2__)\n", el);
        body_bytes(c, o, fn, B, xd);
        sb_puts(o, "#elif defined(__GNUC__)\n");
    } else {
        sb_printf(o, "%s defined(__GNUC__)\n", el);
    }
    body_lanes(c, o, fn, xd, (long long)jf, (long long)nj);
    sb_puts(o, "#else\n");
    body_scalar(c, o, B, xd, val, (long long)nj);
    sb_puts(o, "#endif\n}\n");
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
    return 1;
}
