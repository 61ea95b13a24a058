/* cuda_dequant.c — dequantization by bit manipulation (Tilus section 5):
 * the CUDA form of
 *
 *     q = view w -> register uN|iN|fNeXmY[...]     (w: bytes, u16 or u32 words)
 *     y = cast q -> register f16|f32|bf16[...]
 *
 * The cast reads the thread's words of w directly instead of the view's
 * one-byte-per-element registers: slot l of q is bits [l*N, (l+1)*N) of the
 * thread's bit stream (the view's meaning). How the codes become floats is
 * the target's dequantization row (src/target/dequant.c, which also gives
 * its semantics): to f16, pairs of slots in one f16x2 register by prmt or
 * lop3 under the magic 0x6400 and one sub.f16x2 (integers), or the fields
 * shifted into f16's and one mul.f16x2 (floats); to f32 (and through f32
 * to bf16, or to f16 where no f16 row is exact), the 2^23 magic number or
 * tsl_lbdec. The PTX is printed from the row; under TSL_EMULATE (the host
 * emulation of the tests) the same instructions are spelled in C. The view
 * is still emitted (the cast no longer reads it; ptxas drops it when
 * nothing else does). */
#include <string.h>

#include "codegen/cuda_int.h"
#include "target/dequant.h"

/* Is register tensor v written in place anywhere in block b (an
 * instruction's `-> v`)? */
static int written_in_place(const tile_block *b, const tile_value *v)
{
    for (int i = 0; b && i < b->n; i++) {
        const tile_stmt *s = b->items[i];
        if (s->kind == TILE_S_INSTR && s->instr.has_dst && s->instr.dst.v == v) return 1;
        if (written_in_place(s->body, v) || written_in_place(s->els, v)) return 1;
        if (s->kind == TILE_S_PIPELINE && written_in_place(s->pipe.body, v)) return 1;
        if (s->kind == TILE_S_INSTR && written_in_place(s->instr.decomp, v)) return 1;
    }
    return 0;
}

static int is_f16(tile_dtype d) { return d.kind == TILE_DT_FLOAT && d.bits == 16 && d.exp == 5; }

/* C text of the code of slot l (bits [l*b, (l+1)*b) of tsl_w) */
static void code_text(char *buf, size_t n, int64_t l, int b)
{
    int64_t off = l * b, j = off / 32, sh = off % 32;
    unsigned m = (1u << b) - 1u;
    if (sh + b <= 32) snprintf(buf, n, "((tsl_w[%lld] >> %lld) & 0x%xu)", (long long)j, (long long)sh, m);
    else
        snprintf(buf, n, "(((tsl_w[%lld] >> %lld) | (tsl_w[%lld] << %lld)) & 0x%xu)", (long long)j, (long long)sh,
                 (long long)j + 1, (long long)(32 - sh), m);
}

/* Is slot l's field (b bits) inside its 32-bit word and not its top? */
static int field_inside(int64_t l, int b) { return l * b % 32 + b < 32; }

/* The f32 rows (dequant.magic.f32, dequant.lbdec.f32), then a conversion
 * to y when y is not f32. An unsigned field inside its word takes the
 * magic row's instruction (mask and magic in one lop3: ptxas, given the C,
 * keeps the two constants in two), printed from the row as tsl_dq_ao. */
static void emit_f32(cg *c, tile_dtype qd, tile_dtype yd, const char *yn, int64_t locals)
{
    int b = qd.bits, lowf = dtype_desc_is_lowfloat(qd);
    const target_dequant *r = target_dequant_find(qd, dtype_desc_make(DT_FLOAT, 32, 8, 23));
    int ao = qd.kind == TILE_DT_UINT && r && r->how == TARGET_DQ_MAGIC32 && r->ptx;
    if (ao) {
        cg_line(c, "/* %s (src/target/dequant.c): (a & m) | c */", r->name);
        cg_line(c, "#ifndef TSL_EMULATE");
        cg_line(c, "auto tsl_dq_ao = [](unsigned a, unsigned m, unsigned c) -> unsigned {");
        cg_line(c, "    unsigned r;");
        cg_line(c, "    asm(\"%s\" : \"=r\"(r) : \"r\"(a), \"r\"(m), \"r\"(c));", r->ptx);
        cg_line(c, "    return r;");
        cg_line(c, "};");
        cg_line(c, "#else");
        cg_line(c, "auto tsl_dq_ao = [](unsigned a, unsigned m, unsigned c) -> unsigned { return (a & m) | c; };");
        cg_line(c, "#endif");
    }
    for (int64_t l = 0; l < locals; l++) {
        char code[160], val[400];
        code_text(code, sizeof code, l, b);
        if (lowf)
            snprintf(val, sizeof val, "tsl_lbdec(%s, %d, %d, %d, %d)", code, qd.exp, qd.man, qd.bias, qd.special);
        else if (ao && field_inside(l, b))
            snprintf(val, sizeof val, "(__uint_as_float(tsl_dq_ao(tsl_w[%lld] >> %lld, 0x%xu, 0x4B000000u)) - 8388608.0f)",
                     (long long)(l * b / 32), (long long)(l * b % 32), (1u << b) - 1u);
        else if (qd.kind == TILE_DT_UINT) /* the top field (its shift is the mask), or straddling two words */
            snprintf(val, sizeof val, "(__uint_as_float(%s | 0x4B000000u) - 8388608.0f)", code);
        else /* sign-extended, then 1.5 * 2^23 + v */
            snprintf(val, sizeof val,
                     "(__uint_as_float((unsigned)(((int)(%s << %d) >> %d) + 0x4B400000)) - 12582912.0f)", code,
                     32 - b, 32 - b);
        if (yd.bits == 32) cg_line(c, "%s[%lld] = %s;", yn, (long long)l, val);
        else cg_line(c, "%s[%lld] = tsl_to<%s>::f((double)%s);", yn, (long long)l, cg_ctype(yd), val);
    }
}

/* The f16 rows: one f16x2 register per pair of slots (dequant.h). */
static void emit_f16_pairs(cg *c, const target_dequant *r, tile_dtype qd, const char *yn, int64_t locals)
{
    int b = qd.bits;
    uint32_t mask, magic, k2 = target_dequant_f16x2(qd);
    unsigned lut;
    target_dequant_lop3(qd, &mask, &magic, &lut);
    cg_line(c, "/* %s (src/target/dequant.c) */", r->name);
    /* the instructions in C for the host emulation: the same semantics */
    cg_line(c, "#ifdef TSL_EMULATE");
    cg_line(c, "auto tsl_dq_h2 = [](unsigned a, unsigned b, int mul) -> unsigned {");
    cg_line(c, "    unsigned r = 0;");
    cg_line(c, "    for (int h = 0; h < 2; h++) {");
    cg_line(c, "        float x = tsl_cvt_f16_f32((unsigned short)(a >> 16 * h)), y = tsl_cvt_f16_f32((unsigned short)(b >> 16 * h));");
    cg_line(c, "        r |= (unsigned)tsl_cvt_f32_f16(mul ? x * y : x - y) << 16 * h;");
    cg_line(c, "    }");
    cg_line(c, "    return r;");
    cg_line(c, "};");
    cg_line(c, "auto tsl_dq_lop3 = [](unsigned a, unsigned b, unsigned c, unsigned lut) -> unsigned {");
    cg_line(c, "    unsigned r = 0;");
    cg_line(c, "    for (unsigned i = 0; i < 8; i++)");
    cg_line(c, "        if (lut >> i & 1) r |= (i & 4 ? a : ~a) & (i & 2 ? b : ~b) & (i & 1 ? c : ~c);");
    cg_line(c, "    return r;");
    cg_line(c, "};");
    cg_line(c, "auto tsl_dq_prmt = [](unsigned a, unsigned b, unsigned sel) -> unsigned {");
    cg_line(c, "    unsigned long long x = (unsigned long long)b << 32 | a;");
    cg_line(c, "    unsigned d = 0;");
    cg_line(c, "    for (int k = 0; k < 4; k++) d |= (unsigned)(x >> 8 * ((sel >> 4 * k) & 7) & 0xff) << 8 * k;");
    cg_line(c, "    return d;");
    cg_line(c, "};");
    cg_line(c, "#endif");
    cg_line(c, "unsigned tsl_r, tsl_x;");
    for (int64_t l = 0; l < locals; l++) {
        int64_t p;
        int hi;
        target_dequant_pair(r, qd, l, locals, &p, &hi);
        if (hi) continue; /* its register was the lower slot's */
        char c0[160], c1[160];
        code_text(c0, sizeof c0, l, b);
        code_text(c1, sizeof c1, p, b);
        switch (r->how) {
        case TARGET_DQ_PRMT:
            cg_line(c, "tsl_x = tsl_w[%lld]%s;", (long long)(l * 8 / 32), qd.kind == TILE_DT_INT ? " ^ 0x80808080u" : "");
            break;
        case TARGET_DQ_LOP3:
            cg_line(c, "tsl_x = tsl_w[%lld] >> %lld;", (long long)(l * b / 32), (long long)(l * b % 32));
            break;
        case TARGET_DQ_PAIR:
            cg_line(c, "tsl_x = %s | %s << 16;", c0, c1);
            break;
        default: { /* TARGET_DQ_FLOAT: the fields placed */
            int n = b - 1;
            cg_line(c, "tsl_x = ((%s >> %d & 1u) << 15 | (%s & 0x%xu) << %d) | ((%s >> %d & 1u) << 31 | (%s & 0x%xu) << %d);", c0,
                    n, c0, (1u << n) - 1u, 10 - qd.man, c1, n, c1, (1u << n) - 1u, 26 - qd.man);
            break;
        }
        }
        cg_line(c, "#ifndef TSL_EMULATE");
        if (r->how == TARGET_DQ_PRMT)
            cg_line(c, "asm(\"%s\" : \"=r\"(tsl_r) : \"r\"(tsl_x), \"r\"(0x64646464u), \"r\"(0x%xu));", r->ptx,
                    target_dequant_prmt_sel((int)(l % 4 / 2)));
        else if (r->ptx)
            cg_line(c, "asm(\"%s\" : \"=r\"(tsl_r) : \"r\"(tsl_x), \"r\"(0x%xu), \"r\"(0x%xu), \"n\"(0x%x));", r->ptx, mask,
                    magic, lut);
        else cg_line(c, "tsl_r = tsl_x;");
        if (k2) cg_line(c, "asm(\"%s\" : \"=r\"(tsl_r) : \"r\"(tsl_r), \"r\"(0x%xu));", r->ptx2, k2);
        cg_line(c, "#else");
        if (r->how == TARGET_DQ_PRMT)
            cg_line(c, "tsl_r = tsl_dq_prmt(tsl_x, 0x64646464u, 0x%xu);", target_dequant_prmt_sel((int)(l % 4 / 2)));
        else if (r->ptx) cg_line(c, "tsl_r = tsl_dq_lop3(tsl_x, 0x%xu, 0x%xu, 0x%xu);", mask, magic, lut);
        else cg_line(c, "tsl_r = tsl_x;");
        if (k2) cg_line(c, "tsl_r = tsl_dq_h2(tsl_r, 0x%xu, %d);", k2, r->how == TARGET_DQ_FLOAT);
        cg_line(c, "#endif");
        if (r->how == TARGET_DQ_FLOAT && qd.special == DT_SPECIAL_FN) {
            unsigned em = (1u << (b - 1)) - 1u;
            cg_line(c, "if ((%s & 0x%xu) == 0x%xu) tsl_r = (tsl_r & 0xffff0000u) | 0x7e00u | (%s >> %d & 1u) << 15;", c0, em, em,
                    c0, b - 1);
            cg_line(c, "if ((%s & 0x%xu) == 0x%xu) tsl_r = (tsl_r & 0xffffu) | 0x7e000000u | (%s >> %d & 1u) << 31;", c1, em, em,
                    c1, b - 1);
        }
        cg_line(c, "%s[%lld].x = (unsigned short)tsl_r;", yn, (long long)l);
        if (p < locals) cg_line(c, "%s[%lld].x = (unsigned short)(tsl_r >> 16);", yn, (long long)p);
    }
}

/* The register tensor of bytes, u16 or u32 words a `view` made xv from (not
 * written in place anywhere), or NULL. */
static const tile_value *view_source(cg *c, const tile_value *xv)
{
    const tile_stmt *vs = xv->def;
    if (!vs || vs->kind != TILE_S_INSTR || vs->instr.op != TILE_I_VIEW || vs->instr.result != xv ||
        vs->instr.nargs != 1)
        return NULL;
    const tile_value *wv = vs->instr.args[0].v;
    if (!wv || wv->kind != TILE_V_TENSOR || wv->type.space != TILE_REGISTER || vs->instr.args[0].nsteps) return NULL;
    tile_dtype wd = wv->type.dt;
    if ((wd.kind != TILE_DT_UINT && wd.kind != TILE_DT_INT) || (wd.bits != 8 && wd.bits != 16 && wd.bits != 32))
        return NULL;
    if (written_in_place(c->k->body, wv) || written_in_place(c->k->body, xv)) return NULL;
    return wv;
}

/* The words of register tensor wv (rw: its register info) into a fresh
 * array `name` of 32-bit words, one word of zeros past the end. */
static int64_t emit_words(cg *c, const tile_value *wv, const rinfo *rw, const char *name)
{
    tile_dtype wd = wv->type.dt;
    int64_t nbits = rw->locals * wd.bits, nw = (nbits + 31) / 32;
    const char *wn0 = cg_name(c, wv);
    char wn[96];
    snprintf(wn, sizeof wn, "%s", wn0);
    cg_line(c, "unsigned %s[%lld];", name, (long long)nw + 1);
    int per = 32 / wd.bits;
    for (int64_t j = 0; j < nw; j++) {
        strbuf e = {0};
        for (int i = 0; i < per; i++) {
            int64_t l = j * per + i;
            if (l >= rw->locals) break;
            const char *mask = wd.bits == 8 ? "0xffu" : wd.bits == 16 ? "0xffffu" : "0xffffffffu";
            if (i) sb_puts(&e, " | ");
            if (i) sb_printf(&e, "(((unsigned)%s[%lld] & %s) << %d)", wn, (long long)l, mask, i * wd.bits);
            else sb_printf(&e, "((unsigned)%s[%lld] & %s)", wn, (long long)l, mask);
        }
        cg_line(c, "%s[%lld] = %s;", name, (long long)j, e.len ? sb_str(&e) : "0u");
        sb_free(&e);
    }
    cg_line(c, "%s[%lld] = 0u;", name, (long long)nw);
    return nw;
}

int64_t cg_view_words(cg *c, const tile_value *xv, const char *name)
{
    const tile_value *wv = view_source(c, xv);
    rinfo rw;
    if (!wv || cg_rinfo(c, wv, &rw)) return -1;
    int64_t nw = emit_words(c, wv, &rw, name);
    cg_rinfo_free(&rw);
    return nw;
}

int cg_emit_dequant(cg *c, const tile_stmt *s, const tile_value *xv, const tile_value *dv, const rinfo *rd)
{
    const tile_value *wv = view_source(c, xv);
    if (!wv) return 0;
    tile_dtype qd = xv->type.dt, yd = dv->type.dt;
    int lowf = dtype_desc_is_lowfloat(qd);
    if (!lowf && !((qd.kind == TILE_DT_UINT || qd.kind == TILE_DT_INT) && qd.bits >= 1 && qd.bits <= 8)) return 0;
    if (yd.kind != TILE_DT_FLOAT || yd.bits > 32 || dtype_desc_is_lowfloat(yd)) return 0;
    rinfo rw;
    if (cg_rinfo(c, wv, &rw)) return 0;
    int b = qd.bits;
    if (rw.locals * wv->type.dt.bits != rd->locals * b) {
        cg_rinfo_free(&rw);
        return 0;
    }
    cg_line(c, "{");
    c->ind++;
    cg_line(c, "/* dequantize: the words of %s, %d-bit fields, magic-number floats */", wv->name, b);
    emit_words(c, wv, &rw, "tsl_w");
    cg_rinfo_free(&rw);
    const char *yn0 = cg_name(c, dv);
    char yn[96];
    snprintf(yn, sizeof yn, "%s", yn0);
    const target_dequant *r16 = is_f16(yd) ? target_dequant_find(qd, yd) : NULL;
    if (r16) emit_f16_pairs(c, r16, qd, yn, rd->locals);
    else emit_f32(c, qd, yd, yn, rd->locals);
    c->ind--;
    cg_line(c, "}");
    (void)s;
    return 1;
}
