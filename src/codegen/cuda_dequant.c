/* cuda_dequant.c — dequantization by bit manipulation (Tilus section 6.2):
 * the CUDA form of
 *
 *     q = view w -> register uN|iN|fNeXmY[...]     (w: bytes, u16 or u32 words)
 *     y = cast q -> register f32|f16|bf16[...]
 *
 * The cast reads the thread's words of w directly instead of the view's
 * one-byte-per-element registers: slot l of q is bits [l*N, (l+1)*N) of the
 * thread's bit stream (the view's meaning), extracted with a shift and a
 * mask (a funnel shift where it straddles two words), and turned into a
 * float with no conversion instruction: an unsigned code c is the float
 * 2^23 + c (its bits 0x4B000000 | c) minus 2^23, a signed one (sign-
 * extended) 1.5 * 2^23 + c minus 1.5 * 2^23; a low-bit float is decoded by
 * the one conversion text (lowbit_conv.h's tsl_lbdec, exact and flush-to-
 * zero safe). So a u4 weight costs a shift-and-mask, an or and a subtract
 * (ptxas folds the first two into one LOP3 or BFE). The view is still
 * emitted (the cast no longer reads it; ptxas drops it when nothing else
 * does).
 *
 * This is a generator-side pattern until the target tables (src/target/)
 * select conversions; it moves there as a row with its PTX. */
#include <string.h>

#include "codegen/cuda_int.h"

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

int cg_emit_dequant(cg *c, const tile_stmt *s, const tile_value *xv, const tile_value *dv, const rinfo *rd)
{
    const tile_stmt *vs = xv->def;
    if (!vs || vs->kind != TILE_S_INSTR || vs->instr.op != TILE_I_VIEW || vs->instr.result != xv ||
        vs->instr.nargs != 1)
        return 0;
    const tile_value *wv = vs->instr.args[0].v;
    if (!wv || wv->kind != TILE_V_TENSOR || wv->type.space != TILE_REGISTER || vs->instr.args[0].nsteps) return 0;
    tile_dtype wd = wv->type.dt, qd = xv->type.dt, yd = dv->type.dt;
    if ((wd.kind != TILE_DT_UINT && wd.kind != TILE_DT_INT) || (wd.bits != 8 && wd.bits != 16 && wd.bits != 32))
        return 0;
    int lowf = dtype_desc_is_lowfloat(qd);
    if (!lowf && !((qd.kind == TILE_DT_UINT || qd.kind == TILE_DT_INT) && qd.bits >= 1 && qd.bits <= 8)) return 0;
    if (yd.kind != TILE_DT_FLOAT || yd.bits > 32 || dtype_desc_is_lowfloat(yd)) return 0;
    if (written_in_place(c->k->body, wv) || written_in_place(c->k->body, xv)) return 0;
    rinfo rw;
    if (cg_rinfo(c, wv, &rw)) return 0;
    int64_t nbits = rw.locals * wd.bits;
    int b = qd.bits;
    if (nbits != rd->locals * b) {
        cg_rinfo_free(&rw);
        return 0;
    }
    int64_t nw = (nbits + 31) / 32;
    const char *wn0 = cg_name(c, wv);
    char wn[96];
    snprintf(wn, sizeof wn, "%s", wn0);
    const char *yt = cg_ctype(yd);
    int f32 = yd.bits == 32;
    cg_line(c, "{");
    c->ind++;
    cg_line(c, "/* dequantize: the words of %s, %d-bit fields, magic-number floats */", wv->name, b);
    cg_line(c, "unsigned tsl_w[%lld];", (long long)nw + 1);
    int per = 32 / wd.bits;
    for (int64_t j = 0; j < nw; j++) {
        strbuf e = {0};
        for (int i = 0; i < per; i++) {
            int64_t l = j * per + i;
            if (l >= rw.locals) break;
            const char *mask = wd.bits == 8 ? "0xffu" : wd.bits == 16 ? "0xffffu" : "0xffffffffu";
            if (i) sb_puts(&e, " | ");
            if (i) sb_printf(&e, "(((unsigned)%s[%lld] & %s) << %d)", wn, (long long)l, mask, i * wd.bits);
            else sb_printf(&e, "((unsigned)%s[%lld] & %s)", wn, (long long)l, mask);
        }
        cg_line(c, "tsl_w[%lld] = %s;", (long long)j, e.len ? sb_str(&e) : "0u");
        sb_free(&e);
    }
    cg_line(c, "tsl_w[%lld] = 0u;", (long long)nw);
    const char *yn0 = cg_name(c, dv);
    char yn[96];
    snprintf(yn, sizeof yn, "%s", yn0);
    unsigned m = (1u << b) - 1u;
    for (int64_t l = 0; l < rd->locals; l++) {
        int64_t off = l * b, j = off / 32, sh = off % 32;
        char code[160];
        if (sh + b <= 32) snprintf(code, sizeof code, "((tsl_w[%lld] >> %lld) & 0x%xu)", (long long)j, (long long)sh, m);
        else
            snprintf(code, sizeof code, "(((tsl_w[%lld] >> %lld) | (tsl_w[%lld] << %lld)) & 0x%xu)", (long long)j,
                     (long long)sh, (long long)j + 1, (long long)(32 - sh), m);
        char val[400];
        if (lowf)
            snprintf(val, sizeof val, "tsl_lbdec(%s, %d, %d, %d, %d)", code, qd.exp, qd.man, qd.bias, qd.special);
        else if (qd.kind == TILE_DT_UINT)
            snprintf(val, sizeof val, "(__uint_as_float(%s | 0x4B000000u) - 8388608.0f)", code);
        else /* sign-extended, then 1.5 * 2^23 + v */
            snprintf(val, sizeof val,
                     "(__uint_as_float((unsigned)(((int)(%s << %d) >> %d) + 0x4B400000)) - 12582912.0f)", code,
                     32 - b, 32 - b);
        if (f32) cg_line(c, "%s[%lld] = %s;", yn, (long long)l, val);
        else cg_line(c, "%s[%lld] = tsl_to<%s>::f((double)%s);", yn, (long long)l, yt, val);
    }
    c->ind--;
    cg_line(c, "}");
    cg_rinfo_free(&rw);
    (void)s;
    return 1;
}
