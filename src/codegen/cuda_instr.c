/* cuda_instr.c — one CUDA emitter per tile instruction (the instruction
 * table of docs/tile-ir.md, semantics of src/tile/interp.c).
 *
 * Every emitter writes one brace-enclosed block. Per-thread work over a
 * register tensor is unrolled in the generator (each local index a literal),
 * so register arrays are only indexed by constants. Movement between
 * threads: shuffles where the layouts allow it (shuffle.*, reductions
 * inside warps, mma fragments), otherwise the shared scratch area after
 * the allocations: every fallback starts with a barrier (earlier readers
 * are done), writes, synchronizes, reads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/cuda_int.h"

/* ---- helpers ---------------------------------------------------------------------- */

/* The register tensor an instruction writes: its result or `-> dst`. */
static const tile_value *dst_reg(cg *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    const tile_value *v = in->result;
    if (!v && in->has_dst) v = in->dst.v;
    if (!v || v->kind != TILE_V_TENSOR || v->type.space != TILE_REGISTER || (!in->result && in->dst.nsteps)) {
        cg_err(c, TSL_ERR_SEMANTIC, "%s: the destination must be a whole register tensor",
               tile_op_info_of(in->op)->name);
        return NULL;
    }
    return v;
}

static const tile_value *arg_reg(cg *c, const tile_operand *o)
{
    if (!o->v || o->v->kind != TILE_V_TENSOR || o->v->type.space != TILE_REGISTER || o->nsteps) {
        cg_err(c, TSL_ERR_SEMANTIC, "expected a whole register tensor operand");
        return NULL;
    }
    return o->v;
}

/* Declare a register result at its definition. */
static void declare(cg *c, const tile_stmt *s, const rinfo *ri)
{
    if (s->instr.result)
        cg_line(c, "%s %s[%lld];", cg_ctype(ri->v->type.dt), cg_name(c, ri->v), (long long)ri->locals);
}

/* Thread parts of every dim as `const I <p><d>`. */
static void declare_tparts(cg *c, const rinfo *ri, const char *p)
{
    for (int d = 0; d < ri->rank; d++) {
        strbuf sb = {0};
        cg_tpart(c, &sb, ri, d);
        cg_line(c, "const I %s%d = %s; (void)%s%d;", p, d, sb_str(&sb), p, d);
        sb_free(&sb);
    }
}

static void need_scratch(cg *c, int64_t bytes)
{
    if (bytes > c->scratch) c->scratch = bytes;
}

/* The type values of dtype dt are combined in (reductions, scratch):
 * float for f16/bf16/f32, double for f64, and integers exactly in 64 bits
 * (a double keeps only 53: INT64_MAX, a u64 past 2^63). */
static const char *math_type(tile_dtype dt)
{
    if (cg_dt_int(dt)) return dt.kind == TILE_DT_UINT && dt.bits == 64 ? "unsigned long long" : "long long";
    return cg_is_float_math(dt) ? "float" : "double";
}

/* A math_type value p as the argument of tsl_to<T>::f (whose overloads
 * take double and long long). */
static const char *to_arg(tile_dtype dt)
{
    return cg_dt_int(dt) ? "(long long)" : "";
}

/* The number form for converting dtype `from` to `to`: between integer
 * dtypes tsl_i (long long, exact), otherwise tsl_c (float or double). */
static const char *conv_num(tile_dtype from, tile_dtype to)
{
    return cg_dt_int(from) && cg_dt_int(to) ? "tsl_i" : "tsl_c";
}

/* Row-major flat index over dims of coordinate "(p<d> + K)". */
static void flat_index(strbuf *sb, const rinfo *ri, const char *p, int64_t l, int skip_dim,
                       const char *dim_var)
{
    sb_puts(sb, "(");
    int64_t mult = 1;
    int any = 0;
    for (int d = ri->rank - 1; d >= 0; d--) {
        if (any) sb_puts(sb, " + ");
        any = 1;
        if (d == skip_dim) sb_printf(sb, "(%s) * %lld", dim_var, (long long)mult);
        else sb_printf(sb, "(%s%d + %lld) * %lld", p, d, (long long)ri->lc[l * ri->rank + d], (long long)mult);
        mult *= ri->dims[d];
    }
    if (!any) sb_puts(sb, "0");
    sb_puts(sb, ")");
}

/* Fallback step 1: barrier, every thread writes its elements of register
 * tensor `ri` (as `mt` numbers) into scratch at byte `base` row-major,
 * barrier. */
static void scratch_write(cg *c, const rinfo *ri, const char *mt, int64_t base, const char *p)
{
    cg_sync(c);
    declare_tparts(c, ri, p);
    const char *cv = cg_dt_int(ri->v->type.dt) && strcmp(mt, "float") && strcmp(mt, "double") ? "tsl_i" : "tsl_c";
    for (int64_t l = 0; l < ri->locals; l++) {
        strbuf fi = {0};
        flat_index(&fi, ri, p, l, -1, NULL);
        cg_line(c, "((%s *)(tsl_scr + %lld))[%s] = %s(%s[%lld]);", mt, (long long)base, sb_str(&fi), cv,
                cg_name(c, ri->v), (long long)l);
        sb_free(&fi);
    }
    cg_sync(c);
}

/* ---- alloc -------------------------------------------------------------------------- */

static void emit_alloc(cg *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    const tile_value *v = in->result;
    if (!v) {
        cg_err(c, TSL_ERR_SEMANTIC, "alloc needs a result name");
        return;
    }
    strbuf init = {0};
    if (in->init) cg_num_to(c, &init, v->type.dt, in->init);
    if (v->type.space == TILE_REGISTER) {
        rinfo ri;
        if (cg_rinfo(c, v, &ri)) return;
        declare(c, s, &ri);
        if (in->init) {
            cg_line(c, "#pragma unroll");
            cg_line(c, "for (int l = 0; l < %lld; l++) %s[l] = %s;", (long long)ri.locals, cg_name(c, v),
                    sb_str(&init));
        }
        cg_hopper_acc_decl(c, v, ri.locals);
        cg_rinfo_free(&ri);
    } else if (v->type.space == TILE_SHARED && in->init) {
        int64_t dims[CG_MAX_RANK], n = 1;
        if (cg_shared_dims(c, v, dims)) return;
        for (int i = 0; i < v->type.rank; i++) n *= dims[i];
        char *co[CG_MAX_RANK];
        char names[CG_MAX_RANK][16]; /* "x" and an int */
        for (int i = 0; i < v->type.rank; i++) {
            snprintf(names[i], sizeof names[i], "x%d", i);
            co[i] = names[i];
        }
        strbuf off = {0};
        cg_shared_off(c, &off, v, co);
        cg_line(c, "for (I e = tid; e < %lld; e += %d) {", (long long)n, c->threads);
        c->ind++;
        cg_line(c, "I r = e;");
        for (int i = v->type.rank - 1; i >= 0; i--)
            cg_line(c, "const I x%d = r %% %lld; r /= %lld;", i, (long long)dims[i], (long long)dims[i]);
        cg_line(c, "((%s *)(tsl_smem + %lld))[%s] = %s;", cg_ctype(v->type.dt), (long long)c->soff[v->id],
                sb_str(&off), sb_str(&init));
        c->ind--;
        cg_line(c, "}");
        sb_free(&off);
    }
    sb_free(&init);
}

/* ---- load/store global and shared --------------------------------------------------- */

/* The row selection gave an instruction (target/select.c): what it prints. */
static const target_atom *selected(cg *c, const tile_instr *in)
{
    const target_atom *a = target_atom_of(in);
    if (!a) cg_err(c, TSL_ERR_INTERNAL, "%s: no atom was selected for it", tile_op_info_of(in->op)->name);
    return a;
}

/* One term `(bit of lane / 8) * step` of an ldmatrix lane's row address
 * (target_ldmatrix_plan: the matrix origins are linear in the bits). */
static void lane_term(strbuf *sb, int bit, int64_t step)
{
    if (!step) return;
    if (sb->len) sb_puts(sb, " + ");
    if (bit == 0) sb_printf(sb, "((lane >> 3) & 1) * %lld", (long long)step);
    else sb_printf(sb, "(lane >> 4) * %lld", (long long)step);
}

/* ldmatrix for load_shared into mma fragments, as selected: the plan of
 * the selected row (target/frag.c) gives the fragment (an A or B operand
 * of an mma row), the tile slots and the matrix origins; per tile slot one
 * instruction through the row's helper, lanes below 8 x count giving the
 * addresses of the rows selection checked contiguous and aligned. 1 when
 * emitted. */
static int emit_ldmatrix(cg *c, const tile_stmt *s, const rinfo *ri, const gview *gv, const target_atom *at)
{
    target_ldmatrix_plan p;
    int store = at->kind == TARGET_K_STMATRIX;
    if (s->instr.op != (store ? TILE_I_STORE_SHARED : TILE_I_LOAD_SHARED) || ri->rank != 2 || gv->rank < 2 ||
        ri->lead || !at->cu || target_ldmatrix_plan_make(&p, at, ri->L, ri->threads))
        return 0;
    int64_t per = p.per, slots = p.slots;
    const char *rn = cg_name(c, ri->v);
    char rname[96];
    snprintf(rname, sizeof rname, "%s", rn);
    if (!store) declare(c, s, ri);
    cg_line(c, "{");
    c->ind++;
    const char *dot = strchr(at->name, '.'), *suffix = dot ? dot + 1 : at->name;
    cg_line(c, "/* %s: %s (%s) fragments, %lld tile slot(s) per thread */", store ? "stmatrix" : "ldmatrix",
            p.operand == TARGET_A ? "A" : "B", suffix, (long long)slots);
    cg_line(c, "const I wb = tid & ~(I)31, lane = tid & 31;");
    for (int d = 0; d < 2; d++) {
        strbuf tp = {0}, w = {0};
        cg_tpart(c, &tp, ri, d);
        /* the warp's origin: the thread part at lane 0 */
        for (const char *q = sb_str(&tp); *q; q++) {
            if (!strncmp(q, "tid", 3)) {
                sb_puts(&w, "wb");
                q += 2;
            } else {
                sb_putc(&w, *q);
            }
        }
        cg_line(c, "const I o%d = %s + (%s);", d, gv->off[gv->rank - 2 + d], sb_str(&w));
        sb_free(&tp);
        sb_free(&w);
    }
    /* lane l addresses row l % 8 of matrix l / 8, at that matrix's origin */
    strbuf rr = {0}, cc = {0};
    for (int bit = 0; bit < 2; bit++) lane_term(&rr, bit, p.step[bit][0]);
    sb_puts(&rr, rr.len ? " + (lane & 7)" : "(lane & 7)");
    for (int bit = 0; bit < 2; bit++) lane_term(&cc, bit, p.step[bit][1]);
    if (!cc.len) sb_puts(&cc, "0");
    cg_line(c, "const I rr = %s, cc = %s;", sb_str(&rr), sb_str(&cc));
    sb_free(&rr);
    sb_free(&cc);
    for (int64_t sl = 0; sl < slots; sl++) {
        char r0[64], c0[64];
        snprintf(r0, sizeof r0, "o0 + %lld + rr", (long long)ri->lc[sl * per * 2 + 0]);
        snprintf(c0, sizeof c0, "o1 + %lld + cc", (long long)ri->lc[sl * per * 2 + 1]);
        char *co[CG_MAX_RANK];
        for (int i = 0; i < gv->rank - 2; i++) co[i] = gv->off[i];
        co[gv->rank - 2] = r0;
        co[gv->rank - 1] = c0;
        strbuf off = {0}, regs = {0};
        cg_shared_off(c, &off, gv->v, co);
        cg_line(c, "{");
        c->ind++;
        cg_line(c, "%s%s *p = (%s%s *)(tsl_smem + %lld) + %s;", store ? "" : "const ", cg_ctype(gv->v->type.dt),
                store ? "" : "const ", cg_ctype(gv->v->type.dt), (long long)c->soff[gv->v->id], sb_str(&off));
        for (int r = 0; r < at->count; r++) sb_printf(&regs, "%sr%d", r ? ", " : "", r);
        if (store) {
            /* register m of the instruction: the slot's locals 2m (low half) and 2m + 1 */
            for (int r = 0; r < at->count; r++)
                cg_line(c, "const unsigned r%d = tsl_pack2(%s[%lld], %s[%lld]);", r, rname,
                        (long long)(sl * per + 2 * r), rname, (long long)(sl * per + 2 * r + 1));
            cg_line(c, "%s(p, %s);", at->cu, sb_str(&regs));
        } else {
            cg_line(c, "unsigned %s;", sb_str(&regs));
            cg_line(c, "%s(%s, p);", at->cu, sb_str(&regs));
            for (int64_t j = 0; j < per; j++)
                cg_line(c, "%s[%lld] = tsl_from_bits<%s>((r%lld >> %d) & 0xffffu);", rname, (long long)(sl * per + j),
                        cg_ctype(ri->v->type.dt), (long long)(j / 2), (int)(j % 2) * 16);
        }
        c->ind--;
        cg_line(c, "}");
        sb_free(&off);
        sb_free(&regs);
    }
    c->ind--;
    cg_line(c, "}");
    return 1;
}

/* Global element (co[0], ..., co[rank-1]) of local l as C text: the
 * reference into `mn` (ref) and, when v > 1, the condition that the v
 * elements from it are in bounds, contiguous and 16/8/4-byte aligned. */
static void transfer_ref(const rinfo *ri, const gview *gv, int lead, int64_t l, int64_t v, int es, const char *mn,
                         strbuf *ref, strbuf *cond)
{
    char co[CG_MAX_RANK][64];
    int L = gv->rank - 1;
    for (int i = 0; i < gv->rank; i++) {
        int64_t K = i >= lead ? ri->lc[l * ri->rank + i - lead] : 0;
        if (K) snprintf(co[i], sizeof co[i], "b%d + %lld", i, (long long)K);
        else snprintf(co[i], sizeof co[i], "b%d", i);
    }
    strbuf addr = {0};
    for (int i = 0; i < gv->rank; i++) sb_printf(&addr, "%s(I)(%s) * %s_s%d", i ? " + " : "", co[i], mn, i);
    if (!gv->rank) sb_puts(&addr, "0");
    sb_printf(ref, "%s[%s]", mn, sb_str(&addr));
    sb_free(&addr);
    if (!cond) return;
    sb_puts(cond, "true");
    for (int i = 0; i < L; i++) sb_printf(cond, " && (%s) >= 0 && (%s) < %s_d%d", co[i], co[i], mn, i);
    sb_printf(cond, " && (%s) >= 0 && (%s) + %lld < %s_d%d && ((unsigned long long)&%s %% %lld) == 0", co[L], co[L],
              (long long)(v - 1), mn, L, sb_str(ref), (long long)(v * es));
}

/* The fast path of a global transfer in several wide groups: when every
 * group is in bounds and aligned, all the wide loads are issued before any
 * of their registers is used (so a thread has them all in flight), or all
 * the packed stores follow each other. Opens `if (...) { ... } else {`; the
 * caller emits the general per-group code and closes the else. */
static void transfer_wide_all(cg *c, const rinfo *ri, const gview *gv, int lead, int64_t vec, int es, int load,
                              const char *vt, const char *rt, const char *mn, const char *rn)
{
    int64_t n = ri->locals / vec;
    int L = gv->rank - 1;
    strbuf all = {0};
    sb_printf(&all, "%s_s%d == 1", mn, L);
    /* Every group is in bounds when each dim's extreme offsets are (the
     * offsets are constants added to one base per dim). The groups share
     * the first group's alignment when they lie a multiple of vec apart
     * along the last dim and, in an outer dim where they differ, that
     * dim's stride is a multiple of vec: then one test serves them all
     * (else each group tests its own alignment). */
    int64_t lo[CG_MAX_RANK], hi[CG_MAX_RANK];
    int differs[CG_MAX_RANK] = {0}, shared = gv->rank > 0;
    for (int i = 0; i < gv->rank; i++) lo[i] = INT64_MAX, hi[i] = INT64_MIN;
    for (int64_t g = 0; g < n; g++)
        for (int i = 0; i < gv->rank; i++) {
            int64_t K = i >= lead ? ri->lc[g * vec * ri->rank + i - lead] : 0;
            int64_t K0 = i >= lead ? ri->lc[i - lead] : 0;
            if (K != K0) differs[i] = 1;
            if (i == L && (K - K0) % vec != 0) shared = 0;
            if (K < lo[i]) lo[i] = K;
            if (K > hi[i]) hi[i] = K;
        }
    if (shared) {
        for (int i = 0; i <= L; i++)
            sb_printf(&all, " && (b%d + %lld) >= 0 && (b%d + %lld) < %s_d%d", i, (long long)lo[i], i,
                      (long long)(hi[i] + (i == L ? vec - 1 : 0)), mn, i);
        for (int i = 0; i < L; i++)
            if (differs[i]) sb_printf(&all, " && (%s_s%d %% %lld) == 0", mn, i, (long long)vec);
        strbuf ref = {0};
        transfer_ref(ri, gv, lead, 0, vec, es, mn, &ref, NULL);
        sb_printf(&all, " && ((unsigned long long)&%s %% %lld) == 0", sb_str(&ref), (long long)(vec * es));
        sb_free(&ref);
    }
    for (int64_t g = 0; g < n && !shared; g++) {
        strbuf ref = {0}, cond = {0};
        transfer_ref(ri, gv, lead, g * vec, vec, es, mn, &ref, &cond);
        sb_printf(&all, " && %s", sb_str(&cond));
        sb_free(&ref);
        sb_free(&cond);
    }
    /* a load's words are declared outside both paths: the element-wise path
     * sets them too, and the elements are split off after the join (as for
     * a single group, emit_transfer) */
    if (load)
        for (int64_t g = 0; g < n; g++) cg_line(c, "%s w%lld;", vt, (long long)g);
    cg_line(c, "if (%s) {", sb_str(&all));
    sb_free(&all);
    c->ind++;
    if (!load) {
        for (int64_t g = 0; g < n; g++) {
            cg_line(c, "%s w%lld = tsl_vzero<%s>();", vt, (long long)g, vt);
            for (int64_t j = 0; j < vec; j++)
                cg_line(c, "tsl_vset(w%lld, tsl_bits(%s[%lld]), %lld);", (long long)g, rn, (long long)(g * vec + j),
                        (long long)(j * es * 8));
        }
    }
    for (int64_t g = 0; g < n; g++) {
        strbuf ref = {0};
        transfer_ref(ri, gv, lead, g * vec, vec, es, mn, &ref, NULL);
        if (load) cg_line(c, "w%lld = *(const %s *)&%s;", (long long)g, vt, sb_str(&ref));
        else cg_line(c, "*(%s *)&%s = w%lld;", vt, sb_str(&ref), (long long)g);
        sb_free(&ref);
    }
    c->ind--;
    cg_line(c, "} else {");
    c->ind++;
    if (load)
        for (int64_t g = 0; g < n; g++) cg_line(c, "w%lld = tsl_vzero<%s>();", (long long)g, vt);
}

/* Locals first .. first + vec - 1 of rn (C type rt, es bytes each) as the
 * fields of word w. */
static void split_word(cg *c, const char *w, const char *rn, const char *rt, int64_t first, int64_t vec, int es)
{
    for (int64_t j = 0; j < vec; j++)
        cg_line(c, "%s[%lld] = tsl_from_bits<%s>(tsl_vget(%s, %lld, %d));", rn, (long long)(first + j), rt, w,
                (long long)(j * es * 8), es * 8);
}

/* After both paths of a wide load (transfer_wide_all): the elements, as
 * fields of the words. */
static void transfer_wide_split(cg *c, const rinfo *ri, int64_t vec, int es, const char *rt, const char *rn)
{
    for (int64_t g = 0; g < ri->locals / vec; g++) {
        char w[32];
        snprintf(w, sizeof w, "w%lld", (long long)g);
        split_word(c, w, rn, rt, g * vec, vec, es);
    }
}

/* One load or store between a register tile and memory (emit_transfer):
 * what its per-element and per-group emitters share. */
typedef struct xfer {
    cg *c;
    const rinfo *ri;
    const gview *gv;
    const tile_value *mv, *rv;
    int lead, load, global, coded, same, es;
    int64_t vec;
    const char *vt, *mt, *rt, *mn, *rn; /* word, memory and register C types; the names */
} xfer;

/* Local e's memory reference and (global) its in-bounds test, as C text. */
static void xfer_ref(const xfer *x, int64_t e, strbuf *ref, strbuf *mask)
{
    const gview *gv = x->gv;
    char co[CG_MAX_RANK][64];
    char *cop[CG_MAX_RANK];
    for (int i = 0; i < gv->rank; i++) {
        int64_t K = i >= x->lead ? x->ri->lc[e * x->ri->rank + i - x->lead] : 0;
        if (K) snprintf(co[i], sizeof co[i], "b%d + %lld", i, (long long)K);
        else snprintf(co[i], sizeof co[i], "b%d", i);
        cop[i] = co[i];
    }
    strbuf addr = {0};
    if (x->global) {
        for (int i = 0; i < gv->rank; i++) {
            sb_printf(&addr, "%s(I)(%s) * %s_s%d", i ? " + " : "", co[i], x->mn, i);
            sb_printf(mask, "%s(%s) >= 0 && (%s) < %s_d%d", i ? " && " : "", co[i], co[i], x->mn, i);
        }
        if (!gv->rank) {
            sb_puts(&addr, "0");
            sb_puts(mask, "true");
        }
        sb_printf(ref, "%s[%s]", x->mn, sb_str(&addr));
    } else {
        cg_shared_off(x->c, &addr, x->mv, cop);
        sb_printf(ref, "((%s *)(tsl_smem + %lld))[%s]", x->mt, (long long)x->c->soff[x->mv->id], sb_str(&addr));
    }
    sb_free(&addr);
}

/* Local e moved on its own. A global load's value goes into word `word`
 * (at its field e % vec) when the caller builds words, else into the
 * tile; a global access is masked by its bounds. */
static void xfer_elem(const xfer *x, int64_t e, const char *word)
{
    cg *c = x->c;
    strbuf ref = {0}, mask = {0};
    xfer_ref(x, e, &ref, &mask);
    if (x->load) {
        char val[768];
        if (x->coded) {
            /* ref is `name[addr]`: the code at element addr */
            const char *br = strchr(sb_str(&ref), '[');
            strbuf cv = {0}, off = {0};
            sb_putn(&off, br + 1, strlen(br + 1) - 1);
            cg_coded_read(&cv, x->mv->type.dt, x->mn, sb_str(&off), x->rv->type.dt);
            snprintf(val, sizeof val, "%s", sb_str(&cv));
            sb_free(&cv);
            sb_free(&off);
        } else if (x->same) {
            snprintf(val, sizeof val, "%s", sb_str(&ref));
        } else {
            snprintf(val, sizeof val, "tsl_to<%s>::f(%s(%s))", x->rt, conv_num(x->mv->type.dt, x->rv->type.dt),
                     sb_str(&ref));
        }
        if (word)
            cg_line(c, "tsl_vset(%s, tsl_bits((%s) ? %s : fillv), %lld);", word, sb_str(&mask), val,
                    (long long)(e % x->vec * x->es * 8));
        else if (x->global) cg_line(c, "%s[%lld] = (%s) ? %s : fillv;", x->rn, (long long)e, sb_str(&mask), val);
        else cg_line(c, "%s[%lld] = %s;", x->rn, (long long)e, val);
    } else {
        char val[256];
        if (x->same) snprintf(val, sizeof val, "%s[%lld]", x->rn, (long long)e);
        else
            snprintf(val, sizeof val, "tsl_to<%s>::f(%s(%s[%lld]))", x->mt, conv_num(x->rv->type.dt, x->mv->type.dt),
                     x->rn, (long long)e);
        if (x->global) cg_line(c, "if (%s) %s = %s;", sb_str(&mask), sb_str(&ref), val);
        else cg_line(c, "%s = %s;", sb_str(&ref), val);
    }
    sb_free(&ref);
    sb_free(&mask);
}

/* Locals l .. l + vec - 1 as one wide access. Shared: always (the
 * layout keeps a group contiguous and aligned). Global: when the group is
 * in bounds, contiguous and aligned, else element by element; a load's
 * group goes through one word w on both paths, so its locals leave as
 * fields of one value and a later view of them as wider words folds away
 * (bytes merged from two paths cost a PRMT each: the quantized GEMV's
 * packed rows). */
static void xfer_group(const xfer *x, int64_t l)
{
    cg *c = x->c;
    const gview *gv = x->gv;
    int L = gv->rank - 1, gword = x->global && x->load;
    strbuf ref = {0}, mask = {0};
    xfer_ref(x, l, &ref, &mask);
    if (gword) {
        cg_line(c, "{");
        c->ind++;
        cg_line(c, "%s w;", x->vt);
    }
    if (x->global) {
        char co[CG_MAX_RANK][64];
        for (int i = 0; i < gv->rank; i++) {
            int64_t K = i >= x->lead ? x->ri->lc[l * x->ri->rank + i - x->lead] : 0;
            if (K) snprintf(co[i], sizeof co[i], "b%d + %lld", i, (long long)K);
            else snprintf(co[i], sizeof co[i], "b%d", i);
        }
        strbuf vc = {0};
        sb_puts(&vc, "true");
        for (int i = 0; i < L; i++) sb_printf(&vc, " && (%s) >= 0 && (%s) < %s_d%d", co[i], co[i], x->mn, i);
        sb_printf(&vc, " && (%s) >= 0 && (%s) + %lld < %s_d%d && %s_s%d == 1 && ((unsigned long long)&%s %% %lld) == 0",
                  co[L], co[L], (long long)(x->vec - 1), x->mn, L, x->mn, L, sb_str(&ref), (long long)(x->vec * x->es));
        cg_line(c, "if (%s) {", sb_str(&vc));
        sb_free(&vc);
    } else {
        cg_line(c, "{");
    }
    c->ind++;
    if (gword) {
        cg_line(c, "w = *(const %s *)&%s;", x->vt, sb_str(&ref));
    } else if (x->load) {
        cg_line(c, "const %s w = *(const %s *)&%s;", x->vt, x->vt, sb_str(&ref));
        split_word(c, "w", x->rn, x->rt, l, x->vec, x->es);
    } else {
        cg_line(c, "%s w = tsl_vzero<%s>();", x->vt, x->vt);
        for (int64_t j = 0; j < x->vec; j++)
            cg_line(c, "tsl_vset(w, tsl_bits(%s[%lld]), %lld);", x->rn, (long long)(l + j), (long long)(j * x->es * 8));
        cg_line(c, "*(%s *)&%s = w;", x->vt, sb_str(&ref));
    }
    c->ind--;
    if (x->global) {
        cg_line(c, "} else {");
        c->ind++;
        if (gword) cg_line(c, "w = tsl_vzero<%s>();", x->vt);
        for (int64_t e = l; e < l + x->vec; e++) xfer_elem(x, e, gword ? "w" : NULL);
        c->ind--;
    }
    cg_line(c, "}");
    if (gword) {
        split_word(c, "w", x->rn, x->rt, l, x->vec, x->es);
        c->ind--;
        cg_line(c, "}");
    }
    sb_free(&ref);
    sb_free(&mask);
}

static void emit_transfer(cg *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    int load = in->op == TILE_I_LOAD_GLOBAL || in->op == TILE_I_LOAD_SHARED;
    int global = in->op == TILE_I_LOAD_GLOBAL || in->op == TILE_I_STORE_GLOBAL;
    const tile_value *rv = load ? dst_reg(c, s) : arg_reg(c, &in->args[0]);
    const tile_operand *mo = load ? &in->args[0] : &in->dst;
    if (!rv) return;
    if (!load && !in->has_dst) {
        cg_err(c, TSL_ERR_SEMANTIC, "store needs '-> destination'");
        return;
    }
    rinfo ri;
    gview gv;
    if (cg_rinfo(c, rv, &ri)) return;
    if (cg_view(c, mo, &gv)) {
        cg_rinfo_free(&ri);
        return;
    }
    const tile_value *mv = gv.v;
    if ((int)mv->type.space != (global ? TILE_GLOBAL : TILE_SHARED)) {
        cg_err(c, TSL_ERR_SEMANTIC, "%s: '%s' is in the wrong memory space", tile_op_info_of(in->op)->name,
               mv->name);
        goto done;
    }
    int lead = gv.rank - ri.rank;
    if (lead < 0) {
        cg_err(c, TSL_ERR_UNAVAILABLE, "%s: a rank-%d tile of rank-%d '%s'", tile_op_info_of(in->op)->name,
               ri.rank, gv.rank, mv->name);
        goto done;
    }
    for (int i = lead; i < gv.rank; i++)
        if (gv.ext[i] >= 0 && gv.ext[i] != ri.dims[i - lead]) {
            cg_err(c, TSL_ERR_SHAPE, "tile of '%s' has extent %lld in dim %d, the other operand %lld",
                   mv->name, (long long)gv.ext[i], i, (long long)ri.dims[i - lead]);
            goto done;
        }
    /* packed and low-bit float memory (pure inputs): codes read element by element */
    int coded = global && cg_dt_coded(mv->type.dt);
    if (coded && !load) {
        char nb[16];
        cg_err(c, TSL_ERR_UNAVAILABLE, "store_global: '%s' is %s memory (packed or low-bit float codes); stores of "
               "them are not generated (low-bit outputs cross as carriers: sched/lowbit.c)", mv->name,
               tile_dtype_name(mv->type.dt, nb));
        goto done;
    }
    const target_atom *at = selected(c, in);
    if (!at) goto done;
    if (at->kind == TARGET_K_LDMATRIX || at->kind == TARGET_K_STMATRIX) {
        if (!emit_ldmatrix(c, s, &ri, &gv, at))
            cg_err(c, TSL_ERR_INTERNAL, "%s: the selected %s does not fit its operands", tile_op_info_of(in->op)->name,
                   at->name);
        goto done;
    }
    if (load) declare(c, s, &ri);
    cg_line(c, "{");
    c->ind++;
    const char *mt = cg_ctype(mv->type.dt), *rt = cg_ctype(rv->type.dt);
    int same = tile_dtype_eq(mv->type.dt, rv->type.dt);
    int es = cg_esize(mv->type.dt);
    int64_t vec = at->kind == TARGET_K_VEC && same && es && !coded ? at->bytes / es : 1;
    const char *vt = vec * es == 16 ? "tsl_u128" : vec * es == 8 ? "tsl_u64" : "unsigned";
    const char *mn = cg_name(c, mv);
    char mname[96];
    snprintf(mname, sizeof mname, "%s", mn);
    declare_tparts(c, &ri, "tp");
    for (int i = 0; i < gv.rank; i++) {
        if (i >= lead) cg_line(c, "const I b%d = %s + tp%d;", i, gv.off[i], i - lead);
        else cg_line(c, "const I b%d = %s;", i, gv.off[i]);
    }
    if (load && global) {
        strbuf f = {0};
        if (in->init) cg_num_to(c, &f, rv->type.dt, in->init);
        else sb_printf(&f, "tsl_from_bits<%s>(0ull)", rt); /* zero bits: a constant (tsl_to from 0.0 left
                                                               * an 8-bit fill 4 DMULs a load) */
        cg_line(c, "const %s fillv = %s;", rt, sb_str(&f));
        sb_free(&f);
    }
    if (!load) {
        strbuf ow = {0};
        cg_owner(c, &ow, &ri);
        cg_line(c, "if (%s) {", sb_str(&ow));
        c->ind++;
        sb_free(&ow);
    }
    const char *rn0 = cg_name(c, rv);
    char rn[96];
    snprintf(rn, sizeof rn, "%s", rn0);
    xfer x = {c, &ri, &gv, mv, rv, lead, load, global, coded, same, es, vec, vt, mt, rt, mname, rn};
    /* Several groups in global memory: one test for all of them
     * (transfer_wide_all), and behind it element by element: that path runs
     * only at edges and for unaligned tensors, and a wide attempt per group
     * there cost NVRTC a quarter of a GEMM's compile (its epilogue has 64
     * groups). Otherwise wide groups one at a time (xfer_group), or single
     * elements (vec 1). */
    int fast = global && vec > 1 && ri.locals / vec >= 2;
    if (fast) transfer_wide_all(c, &ri, &gv, lead, vec, es, load, vt, rt, mname, rn);
    for (int64_t l = 0; l < ri.locals && !c->st; l++) {
        char word[32];
        if (fast && load) snprintf(word, sizeof word, "w%lld", (long long)(l / vec));
        if (vec > 1 && !fast) {
            xfer_group(&x, l);
            l += vec - 1;
        } else {
            xfer_elem(&x, l, fast && load ? word : NULL);
        }
    }
    if (fast) {
        c->ind--;
        cg_line(c, "}");
        if (load) transfer_wide_split(c, &ri, vec, es, rt, rn);
    }
    if (!load) {
        c->ind--;
        cg_line(c, "}");
    }
    c->ind--;
    cg_line(c, "}");
done:
    cg_rinfo_free(&ri);
    cg_view_free(&gv);
}

/* ---- copy_async ----------------------------------------------------------------------- */

/* The fast path's source offset (elements) of box coordinate (x[0], ...)
 * as C text: sum over the source dims j of (g<j> + x[i]) * s<j>, the box
 * right-aligned against the source (i = j - slead; g<j> alone where i < 0),
 * the last stride 1. */
static void copy_gaddr(strbuf *sb, const char *gn, int slead, int L, const char *const *x)
{
    for (int j = 0; j <= L; j++) {
        int i = j - slead;
        char sv[120] = "";
        if (j < L) snprintf(sv, sizeof sv, " * %s_s%d", gn, j);
        if (i >= 0) sb_printf(sb, "(I)(g%d + %s)%s + ", j, x[i], sv);
        else sb_printf(sb, "(I)g%d%s + ", j, sv);
    }
    sb_puts(sb, "0");
}

static void emit_copy_async(cg *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    gview src, dst;
    memset(&dst, 0, sizeof dst);
    if (!in->has_dst) {
        cg_err(c, TSL_ERR_SEMANTIC, "copy_async needs '-> destination'");
        return;
    }
    if (cg_view(c, &in->args[0], &src) || cg_view(c, &in->dst, &dst)) goto done;
    const tile_value *gvv = src.v, *svv = dst.v;
    if (gvv->type.space != TILE_GLOBAL || svv->type.space != TILE_SHARED) {
        cg_err(c, TSL_ERR_SEMANTIC, "copy_async copies global -> shared");
        goto done;
    }
    /* leading dims fixed by an untiled index (S[i, ...]); the box is the
     * rest of the destination, the source view right-aligned against it */
    int lead = 0;
    if (in->dst.nsteps == 1 && in->dst.steps[0].kind == TILE_STEP_INDEX) lead = in->dst.steps[0].n;
    int rank = dst.rank - lead;
    if (rank < 1 || src.rank < 1) {
        cg_err(c, TSL_ERR_SHAPE, "copy_async: %d indices leave nothing of '%s'", lead, svv->name);
        goto done;
    }
    int slead = src.rank - rank;
    int64_t dims[CG_MAX_RANK], box[CG_MAX_RANK], fullbox[CG_MAX_RANK], n = 1;
    if (cg_shared_dims(c, svv, dims)) goto done;
    for (int i = 0; i < rank; i++) {
        box[i] = dst.ext[lead + i] >= 0 ? dst.ext[lead + i] : dims[lead + i];
        n *= box[i];
    }
    if (slead < 0) {
        for (int i = 0; i < -slead; i++)
            if (box[i] != 1) {
                cg_err(c, TSL_ERR_SHAPE, "copy_async: the tile does not fit '%s'", gvv->name);
                goto done;
            }
    }
    for (int i = 0; i < dst.rank; i++) fullbox[i] = i < lead ? 1 : box[i - lead];
    int esz = cg_esize(svv->type.dt);
    const target_atom *at = selected(c, in);
    if (!at) goto done;
    /* cp.async (16: .cg, 8 and 4: .ca) as selected, else element by element */
    int64_t bytes = in->bytes ? in->bytes : 16, vec = esz ? bytes / esz : 1;
    int vector = at->kind == TARGET_K_CP_ASYNC;
    if (vector && !at->cu) {
        cg_err(c, TSL_ERR_INTERNAL, "copy_async: the selected %s has no CUDA helper", at->name);
        goto done;
    }
    if (vector && at->bytes != bytes) {
        cg_err(c, TSL_ERR_INTERNAL, "copy_async: the selected %s moves %d bytes, not %lld", at->name, at->bytes,
               (long long)bytes);
        goto done;
    }
    if (!vector) vec = 1;
    (void)fullbox;
    int T = c->threads;
    int64_t nch = n / vec, iters = (nch + T - 1) / T;
    const char *gt = cg_ctype(gvv->type.dt), *st = cg_ctype(svv->type.dt);
    char gn[96];
    snprintf(gn, sizeof gn, "%s", cg_name(c, gvv));
    char *co[CG_MAX_RANK];
    char cnames[CG_MAX_RANK][24];
    for (int i = 0; i < dst.rank; i++) {
        if (i < lead) snprintf(cnames[i], sizeof cnames[i], "b%d", i);
        else snprintf(cnames[i], sizeof cnames[i], "b%d + x%d", i, i - lead);
        co[i] = cnames[i];
    }
    strbuf soff = {0};
    cg_shared_off(c, &soff, svv, co);
    cg_line(c, "{");
    c->ind++;
    for (int i = 0; i < dst.rank; i++) cg_line(c, "const I b%d = %s;", i, dst.off[i]);
    /* source coordinates: g<j> = offset + box coordinate (right-aligned) */
    for (int j = 0; j < src.rank; j++) {
        int i = j - slead;
        if (i >= 0) cg_line(c, "const I g%d = %s;", j, src.off[j]);
        else cg_line(c, "const I g%d = %s;", j, src.off[j]);
    }
    int L = src.rank - 1;
    int fast = vector && box[rank - 1] % vec == 0;
    if (fast) {
        /* the whole box inside the tensor, its last dim contiguous and
         * every chunk aligned (the interior tiles of a GEMM): one loop of
         * unconditional copies; the checked loop below is the edges' */
        strbuf in_box = {0}, base = {0};
        sb_printf(&in_box, "%s_s%d == 1", gn, L);
        for (int j = 0; j <= L; j++) {
            int i = j - slead;
            int64_t ext = i >= 0 ? box[i] : 1;
            sb_printf(&in_box, " && g%d >= 0 && g%d + %lld <= %s_d%d", j, j, (long long)ext, gn, j);
            if (j < L && vec > 1) sb_printf(&in_box, " && %s_s%d %% %lld == 0", gn, j, (long long)vec);
            sb_printf(&base, "(I)g%d * %s_s%d + ", j, gn, j);
        }
        sb_puts(&base, "0");
        if (vec > 1) sb_printf(&in_box, " && ((unsigned long long)(%s + %s) %% %lld) == 0", gn, sb_str(&base), (long long)bytes);
        cg_line(c, "if (%s) {", sb_str(&in_box));
        c->ind++;
        /* rows of whole chunks that the threads cover in equal steps (a
         * 2-D box, T a multiple of the chunks per row, every round full):
         * a thread's column and first row are fixed, round `it` moves it
         * T / cpr rows down, so the addresses are a per-thread base plus
         * constants (no division per chunk) */
        int64_t cpr = box[rank - 1] / vec;
        int rows = rank >= 2 && T % cpr == 0 && nch % T == 0;
        for (int i = 0; rows && i < rank - 2; i++) rows = box[i] == 1;
        if (rows) {
            /* the thread's source pointer steps T / cpr rows a round: one
             * 64-bit add a chunk, where (g + x) * s per chunk kept a row
             * index a round live across the main loop */
            const char *xs[CG_MAX_RANK];
            for (int i = 0; i < rank; i++) xs[i] = i == rank - 1 ? "xc" : i == rank - 2 ? "xr" : "0";
            strbuf g0 = {0};
            copy_gaddr(&g0, gn, slead, L, xs);
            cg_line(c, "const I xc = (tid %% %lld) * %lld, xr = tid / %lld;", (long long)cpr, (long long)vec,
                    (long long)cpr);
            cg_line(c, "const %s *gp = %s + (%s);", gt, gn, sb_str(&g0));
            if (L >= 1) cg_line(c, "const I gs = (I)%lld * %s_s%d;", (long long)(T / cpr), gn, L - 1);
            else cg_line(c, "const I gs = 0;");
            sb_free(&g0);
        }
        cg_line(c, "#pragma unroll");
        cg_line(c, "for (int it = 0; it < %lld; it++) {", (long long)iters);
        c->ind++;
        if (rows) {
            cg_line(c, "{");
            c->ind++;
            for (int i = 0; i < rank - 2; i++) cg_line(c, "const I x%d = 0;", i);
            cg_line(c, "const I x%d = xr + (I)it * %lld;", rank - 2, (long long)(T / cpr));
            cg_line(c, "const I x%d = xc;", rank - 1);
        } else {
            cg_line(c, "const I ch = tid + (I)it * %d;", T);
            if (iters * T > nch) cg_line(c, "if (ch < %lld) {", (long long)nch);
            else cg_line(c, "{");
            c->ind++;
            cg_line(c, "I r = ch * %lld;", (long long)vec);
            for (int i = rank - 1; i >= 0; i--)
                cg_line(c, "const I x%d = r %% %lld; r /= %lld;", i, (long long)box[i], (long long)box[i]);
        }
        cg_line(c, "%s *sp = (%s *)(tsl_smem + %lld) + %s;", st, st, (long long)c->soff[svv->id], sb_str(&soff));
        if (rows) {
            cg_line(c, "%s(sp, gp, %lld);", at->cu, (long long)bytes);
            cg_line(c, "gp += gs;");
        } else {
            const char *xs[CG_MAX_RANK] = {"x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7"};
            strbuf ga = {0};
            copy_gaddr(&ga, gn, slead, L, xs);
            cg_line(c, "%s(sp, %s + (%s), %lld);", at->cu, gn, sb_str(&ga), (long long)bytes);
            sb_free(&ga);
        }
        c->ind--;
        cg_line(c, "}");
        c->ind--;
        cg_line(c, "}");
        c->ind--;
        cg_line(c, "} else {");
        c->ind++;
        sb_free(&in_box);
        sb_free(&base);
    }
    /* Behind the fast path this is the edges' loop: its chunk coordinates
     * come from an opaque copy of tid, so that they are computed here when
     * an edge is copied. From tid itself the compiler hoists them (and the
     * rows' pointers and tests, loop-invariant for A's block) out of the
     * main loop into registers held through every k step: the f32 GEMM's
     * edge path held ~40 of its 168 registers that way (128 without). */
    if (fast) cg_line(c, "const I te = tsl_opaque(tid);");
    cg_line(c, "#pragma unroll");
    cg_line(c, "for (int it = 0; it < %lld; it++) {", (long long)iters);
    c->ind++;
    cg_line(c, "const I ch = %s + (I)it * %d;", fast ? "te" : "tid", T);
    if (iters * T > nch) cg_line(c, "if (ch < %lld) {", (long long)nch);
    else cg_line(c, "{");
    c->ind++;
    cg_line(c, "I r = ch * %lld;", (long long)vec);
    for (int i = rank - 1; i >= 0; i--)
        cg_line(c, "const I x%d = r %% %lld; r /= %lld;", i, (long long)box[i], (long long)box[i]);
    cg_line(c, "%s *sp = (%s *)(tsl_smem + %lld) + %s;", st, st, (long long)c->soff[svv->id], sb_str(&soff));
    strbuf rowok = {0}, gaddr = {0};
    sb_puts(&rowok, "true");
    for (int j = 0; j < L; j++) {
        int i = j - slead;
        char cj[48];
        if (i >= 0) snprintf(cj, sizeof cj, "(g%d + x%d)", j, i);
        else snprintf(cj, sizeof cj, "g%d", j);
        sb_printf(&rowok, " && %s >= 0 && %s < %s_d%d", cj, cj, gn, j);
        sb_printf(&gaddr, "(I)%s * %s_s%d + ", cj, gn, j);
    }
    sb_puts(&gaddr, "0");
    cg_line(c, "const bool rowok = %s;", sb_str(&rowok));
    cg_line(c, "const I cl = g%d + x%d;", L, rank - 1);
    cg_line(c, "const %s *rp = %s + (rowok ? %s : (I)0);", gt, gn, sb_str(&gaddr));
    if (vector) {
        cg_line(c, "if (!rowok || cl >= %s_d%d) {", gn, L);
        cg_line(c, "    %s(sp, %s, 0);", at->cu, gn);
        /* a chunk the row's end cuts goes element by element: cp.async
         * with a short source size still reads the whole chunk (memcheck
         * reports it past the allocation's end: mlp3 f16, 41x29 weights) */
        cg_line(c, "} else if (cl >= 0 && cl + %lld <= %s_d%d && %s_s%d == 1 && ((unsigned long long)(rp + cl) %% %lld) == 0) {",
                (long long)vec, gn, L, gn, L, (long long)bytes);
        cg_line(c, "    %s(sp, rp + cl, %lld);", at->cu, (long long)bytes);
        /* (rolled: the edge path is rare, and unrolled it was half the
         * PTX of a 20-layer MLP kernel, 14 copies a layer) */
        cg_line(c, "} else {");
        cg_line(c, "    #pragma unroll 1");
        cg_line(c, "    for (int j = 0; j < %lld; j++)", (long long)vec);
        cg_line(c, "        sp[j] = (rowok && cl + j >= 0 && cl + j < %s_d%d) ? rp[(I)(cl + j) * %s_s%d] : tsl_to<%s>::f(0.0);",
                gn, L, gn, L, st);
        cg_line(c, "}");
    } else {
        /* element by element (layouts that break chunks, mixed dtypes) */
        cg_line(c, "sp[0] = (rowok && cl >= 0 && cl < %s_d%d) ? tsl_to<%s>::f(%s(rp[(I)cl * %s_s%d])) : tsl_to<%s>::f(0.0);",
                gn, L, st, conv_num(gvv->type.dt, svv->type.dt), gn, L, st);
    }
    sb_free(&rowok);
    sb_free(&gaddr);
    c->ind--;
    cg_line(c, "}");
    c->ind--;
    cg_line(c, "}");
    if (fast) {
        c->ind--;
        cg_line(c, "}");
    }
    c->ind--;
    cg_line(c, "}");
    sb_free(&soff);
done:
    cg_view_free(&src);
    cg_view_free(&dst);
}

/* ---- elementwise, cast, copy ----------------------------------------------------------- */

/* Text of one slot's operation on numbers x, y, z (C expressions of the
 * math type); `fl`: float math, `in`: integer operands. */
static const char *ew_text(tile_op op, int fl, int in, int approx)
{
    /* `.approx` in f32 math: the hardware's ex2 / rcp (a few ulp; the
     * scheduler asks for it where a 16-bit rounding follows) */
    if (approx && fl && op == TILE_I_EXP) return "tsl_ex2_exp(x)";
    if (approx && fl && op == TILE_I_EXP2) return "tsl_ex2(x)";
    if (approx && fl && op == TILE_I_SIGMOID) return "tsl_sigmoid_approx(x)";
    if (approx && fl && op == TILE_I_TANH) return "tsl_tanh_approx(x)";
    switch (op) {
    case TILE_I_NEG: return "(-(x))";
    case TILE_I_ABS: return fl ? "fabsf(x)" : "fabs(x)";
    case TILE_I_EXP: return fl ? "expf(x)" : "(double)expf((float)(x))";
    case TILE_I_EXP2: return fl ? "exp2f(x)" : "(double)exp2f((float)(x))";
    case TILE_I_LOG: return fl ? "logf(x)" : "(double)logf((float)(x))";
    case TILE_I_SQRT: return fl ? "sqrtf(x)" : "(double)sqrtf((float)(x))";
    case TILE_I_RSQRT: return fl ? "(1.0f / sqrtf(x))" : "(double)(1.0f / sqrtf((float)(x)))";
    case TILE_I_TANH: return fl ? "tanhf(x)" : "(double)tanhf((float)(x))";
    case TILE_I_SIGMOID: return fl ? "(1.0f / (1.0f + expf(-(x))))" : "(double)(1.0f / (1.0f + expf(-(float)(x))))";
    case TILE_I_RELU: return "((x) > 0 ? (x) : 0)";
    case TILE_I_ERF: return fl ? "erff(x)" : "(double)erff((float)(x))";
    case TILE_I_NOT: return "((x) == 0)";
    case TILE_I_ADD: return "((x) + (y))";
    case TILE_I_SUB: return "((x) - (y))";
    case TILE_I_MUL: return "((x) * (y))";
    case TILE_I_DIV: return in ? "((y) == 0 ? 0.0 : trunc((x) / (y)))" : "((x) / (y))";
    case TILE_I_MOD: return in ? "((y) == 0 ? 0.0 : fmod((x), (y)))" : fl ? "fmodf((x), (y))" : "fmod((x), (y))";
    case TILE_I_MAX: return in ? "((x) > (y) ? (x) : (y))" : fl ? "tsl_maxnf((x), (y))" : "tsl_maxn((x), (y))";
    case TILE_I_MIN: return in ? "((x) < (y) ? (x) : (y))" : fl ? "tsl_minnf((x), (y))" : "tsl_minn((x), (y))";
    case TILE_I_POW: return "powf((float)(x), (float)(y))";
    case TILE_I_AND: return "((x) != 0 && (y) != 0)";
    case TILE_I_OR: return "((x) != 0 || (y) != 0)";
    case TILE_I_LT: return "((x) < (y))";
    case TILE_I_LE: return "((x) <= (y))";
    case TILE_I_GT: return "((x) > (y))";
    case TILE_I_GE: return "((x) >= (y))";
    case TILE_I_EQ: return "((x) == (y))";
    case TILE_I_NE: return "((x) != (y))";
    case TILE_I_SELECT: return "((x) != 0 ? (y) : (z))";
    case TILE_I_FMA: return fl ? "fmaf((x), (y), (z))" : "fma((x), (y), (z))"; /* f32, f64; 16-bit: emit_fma16 */
    default: return "(x)";
    }
}

/* f64 operands: the math functions in double, as the tile interpreter and
 * the C generator compute them (the float rows above would round through
 * float32 and lose 9 digits) */
static const struct {
    tile_op op;
    const char *text;
} ew_f64_rows[] = {
    {TILE_I_EXP, "exp(x)"},   {TILE_I_EXP2, "exp2(x)"}, {TILE_I_LOG, "log(x)"},   {TILE_I_SQRT, "sqrt(x)"},
    {TILE_I_RSQRT, "(1.0 / sqrt(x))"}, {TILE_I_TANH, "tanh(x)"},
    {TILE_I_SIGMOID, "(1.0 / (1.0 + exp(-(x))))"}, {TILE_I_ERF, "erf(x)"}, {TILE_I_POW, "pow((x), (y))"},
};

static const char *ew_text_f64(tile_op op)
{
    for (size_t k = 0; k < TSL_COUNTOF(ew_f64_rows); k++)
        if (ew_f64_rows[k].op == op) return ew_f64_rows[k].text;
    return NULL;
}

static void subst3(strbuf *out, const char *pat, const char *x, const char *y, const char *z)
{
    for (const char *p = pat; *p; p++) {
        int var = (*p == 'x' || *p == 'y' || *p == 'z') && p > pat && p[-1] == '(' && p[1] == ')';
        if (var) sb_puts(out, *p == 'x' ? x : *p == 'y' ? y : z);
        else sb_putc(out, *p);
    }
}

static void subst(strbuf *out, const char *pat, const char *x, const char *y)
{
    subst3(out, pat, x, y, "");
}

/* A scalar operand's value as a C double: a typed scalar parameter, an int
 * scalar, or a literal / int expression. */
static void scalar_value(cg *c, strbuf *sb, const tile_operand *o)
{
    if (o->v) sb_printf(sb, "(double)%s", cg_name(c, o->v));
    else cg_num(c, sb, o->scalar);
}

/* A scalar operand as a value of dtype t (integers exactly: cg_num_to). */
static void scalar_to(cg *c, strbuf *sb, tile_dtype t, const tile_operand *o)
{
    int intv = o->v && !(tile_value_is_typed_scalar(o->v) && o->v->type.dt.kind == TILE_DT_FLOAT);
    if (o->v && cg_dt_int(t) && intv) {
        sb_printf(sb, "tsl_to<%s>::f((long long)%s)", cg_ctype(t), cg_name(c, o->v));
    } else if (o->v) {
        sb_printf(sb, "tsl_to<%s>::f(", cg_ctype(t));
        scalar_value(c, sb, o);
        sb_putc(sb, ')');
    } else {
        cg_num_to(c, sb, t, o->scalar);
    }
}

/* One operand as a number: a register tensor laid out like the result
 * (slot l) or a scalar rounded to the operands' dtype `odt` (as the
 * interpreter does). 0 on error. */
static int ew_operand(cg *c, const tile_operand *o, const rinfo *rd, tile_dtype odt, strbuf *out)
{
    if (!o->v || o->v->kind == TILE_V_SCALAR) {
        /* converted once, before the loop: the conversion (the
         * interpreter's rounding, with its NaN test) is not hoisted by
         * the compiler out of a fully unrolled loop */
        strbuf v = {0};
        scalar_to(c, &v, odt, o);
        int id = c->uid++;
        cg_line(c, "const %s tsl_s%d = %s;", cg_ctype(odt), id, sb_str(&v));
        sb_printf(out, "tsl_c(tsl_s%d)", id);
        sb_free(&v);
        return 1;
    }
    const tile_value *v = arg_reg(c, o);
    if (!v || cg_check_dtype(c, v)) return 0;
    if (v->type.layout->v.kind != LAYOUT_VALUE_DIST || !dist_layout_equal(&v->type.layout->v.dist, rd->L) ||
        v->type.rank != rd->rank) {
        cg_err(c, TSL_ERR_SHAPE, "'%s' is not laid out like the result", v->name);
        return 0;
    }
    sb_printf(out, "tsl_c(%s[l])", cg_name(c, v));
    return 1;
}

/* fma on f16/bf16 registers: two adjacent locals through one
 * fma.rn.{f16,bf16}x2, an odd last local through fma.rn.{f16,bf16} (sm_80+;
 * one rounding, as the instruction asks; a float fmaf then a conversion
 * would round twice). The host emulation computes tsl_fma16, the
 * interpreter's rounding (base/fma16.h). x[k]: the operands as ew_operand
 * gives them, "tsl_c(NAME[l])" or "tsl_c(tsl_sN)" (a scalar, one value). */
static void emit_fma16(cg *c, const tile_stmt *s, const tile_value *dv, const rinfo *rd, tile_dtype odt,
                       strbuf *x)
{
    const char *dn = cg_name(c, dv), *dt = cg_ctype(dv->type.dt);
    const char *ty = tile_dtype_eq(odt, tile_dtype_from_tsl(TSL_DTYPE_BF16)) ? "bf16" : "f16";
    long long n = (long long)rd->locals;
    strbuf pair[3] = {{0}, {0}, {0}}, last[3] = {{0}, {0}, {0}};
    for (int k = 0; k < 3; k++) {
        const tile_operand *o = &s->instr.args[k];
        if (o->v && o->v->kind == TILE_V_TENSOR) {
            const char *v = cg_name(c, o->v);
            sb_printf(&pair[k], "\"h\"(%s[l].x), \"h\"(%s[l + 1].x)", v, v);
            sb_printf(&last[k], "%s[%lld].x", v, n - 1);
        } else {
            int len = (int)x[k].len - 7; /* tsl_sN inside tsl_c(...) */
            const char *v = sb_str(&x[k]) + 6;
            sb_printf(&pair[k], "\"h\"(%.*s.x), \"h\"(%.*s.x)", len, v, len, v);
            sb_printf(&last[k], "%.*s.x", len, v);
        }
    }
    cg_line(c, "#if !defined(TSL_EMULATE) && __CUDA_ARCH__ >= 800");
    if (n >= 2) {
        cg_line(c, "#pragma unroll");
        cg_line(c, "for (int l = 0; l < %lld; l += 2) {", n - n % 2);
        /* the halves in and out through mov.b32's pairs, which ptxas
         * keeps in one register: shifts and masks in C left it splitting
         * and rejoining every result after each fma (two more instructions) */
        cg_line(c, "    asm(\"{.reg .b32 a, b, c, d; mov.b32 a, {%%2, %%3}; mov.b32 b, {%%4, %%5}; mov.b32 c, {%%6, %%7}; "
                   "fma.rn.%sx2 d, a, b, c; mov.b32 {%%0, %%1}, d;}\"",
                ty);
        cg_line(c, "        : \"=h\"(%s[l].x), \"=h\"(%s[l + 1].x) : %s, %s, %s);", dn, dn, sb_str(&pair[0]), sb_str(&pair[1]),
                sb_str(&pair[2]));
        cg_line(c, "}");
    }
    if (n % 2)
        cg_line(c, "asm(\"fma.rn.%s %%0, %%1, %%2, %%3;\" : \"=h\"(%s[%lld].x) : \"h\"(%s), \"h\"(%s), \"h\"(%s));", ty, dn,
                n - 1, sb_str(&last[0]), sb_str(&last[1]), sb_str(&last[2]));
    cg_line(c, "#else");
    cg_line(c, "#pragma unroll");
    cg_line(c, "for (int l = 0; l < %lld; l++)", n);
    cg_line(c, "    %s[l] = tsl_to<%s>::f(tsl_fma16((double)%s, (double)%s, (double)%s, %d, %d));", dn, dt, sb_str(&x[0]),
            sb_str(&x[1]), sb_str(&x[2]), odt.man, 1 - odt.bias);
    cg_line(c, "#endif");
    for (int k = 0; k < 3; k++) {
        sb_free(&pair[k]);
        sb_free(&last[k]);
    }
}

static void emit_elementwise(cg *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    const tile_value *dv = dst_reg(c, s);
    if (!dv) return;
    rinfo rd;
    if (cg_rinfo(c, dv, &rd)) return;
    const char *dt = cg_ctype(dv->type.dt);
    strbuf x[3] = {{0}, {0}, {0}}, e = {0};
    if (in->op == TILE_I_COPY || in->op == TILE_I_CAST) {
        const tile_value *xv = arg_reg(c, &in->args[0]);
        if (!xv || cg_check_dtype(c, xv)) goto done;
        if (!dist_layout_equal(&xv->type.layout->v.dist, rd.L)) {
            cg_err(c, TSL_ERR_SHAPE, "%s: '%s' is not laid out like the result", tile_op_info_of(in->op)->name,
                   xv->name);
            goto done;
        }
        declare(c, s, &rd);
        if (in->op == TILE_I_CAST && cg_emit_dequant(c, s, xv, dv, &rd)) goto done;
        int bf = tile_dtype_eq(dv->type.dt, tile_dtype_from_tsl(TSL_DTYPE_BF16));
        int half = (bf || tile_dtype_eq(dv->type.dt, tile_dtype_from_tsl(TSL_DTYPE_F16))) &&
                   tile_dtype_eq(xv->type.dt, tile_dtype_from_tsl(TSL_DTYPE_F32)) && rd.locals % 2 == 0;
        if (half && in->op == TILE_I_CAST) {
            /* f32 -> f16/bf16 two at a time: one cvt.rn.{f16,bf16}x2.f32 (sm_80+)
             * instead of two single conversions (quarter-rate on sm_90),
             * split by a mov.b32 into halves ptxas keeps in the one
             * register: masks and shifts (cvt.u16.u32, shr) cost a SHF
             * and, once a pack reads the pair again (a register-A wgmma),
             * a PRMT per pair, the attention loop's P among them */
            const char *xn = cg_name(c, xv);
            char xb[96];
            snprintf(xb, sizeof xb, "%s", xn);
            const char *dn = cg_name(c, dv);
            cg_line(c, "#pragma unroll");
            cg_line(c, "for (int l = 0; l < %lld; l += 2) {", (long long)rd.locals);
            cg_line(c, "#if !defined(TSL_EMULATE) && __CUDA_ARCH__ >= 800");
            cg_line(c, "    unsigned p;");
            cg_line(c, "    asm(\"cvt.rn.%s.f32 %%0, %%1, %%2;\" : \"=r\"(p) : \"f\"(%s[l + 1]), \"f\"(%s[l]));",
                    bf ? "bf16x2" : "f16x2", xb, xb);
            cg_line(c, "    asm(\"mov.b32 {%%0, %%1}, %%2;\" : \"=h\"(%s[l].x), \"=h\"(%s[l + 1].x) : \"r\"(p));", dn, dn);
            cg_line(c, "#else");
            cg_line(c, "    %s[l] = tsl_to<%s>::f(%s[l]);", dn, dt, xb);
            cg_line(c, "    %s[l + 1] = tsl_to<%s>::f(%s[l + 1]);", dn, dt, xb);
            cg_line(c, "#endif");
            cg_line(c, "}");
            goto done;
        }
        tile_dtype ld = dv->type.dt;
        if (dtype_desc_is_lowfloat(ld)) /* round to the low-bit float; the register holds its value */
            sb_printf(&e, "tsl_lbdec(tsl_lbenc((float)tsl_c(%s[l]), %d, %d, %d, %d), %d, %d, %d, %d)", cg_name(c, xv),
                      ld.exp, ld.man, ld.bias, ld.special, ld.exp, ld.man, ld.bias, ld.special);
        else if (tile_dtype_eq(xv->type.dt, dv->type.dt))
            sb_printf(&e, "%s[l]", cg_name(c, xv));
        else if (cg_dt_int(xv->type.dt) && cg_dt_int(dv->type.dt))
            sb_printf(&e, "tsl_to<%s>::f(tsl_i(%s[l]))", dt, cg_name(c, xv));
        else
            sb_printf(&e, "tsl_to<%s>::f(tsl_c(%s[l]))", dt, cg_name(c, xv));
    } else {
        int n = in->nargs < 3 ? in->nargs : 3;
        /* the operands' dtype: the first tensor operand's (select: b or c) */
        tile_dtype odt = dv->type.dt;
        for (int k = in->op == TILE_I_SELECT ? 1 : 0; k < n; k++)
            if (in->args[k].v && in->args[k].v->kind == TILE_V_TENSOR) {
                odt = in->args[k].v->type.dt;
                break;
            }
        if (!cg_ctype(odt)) {
            cg_err(c, TSL_ERR_UNAVAILABLE, "%s: operands of a dtype the CUDA generator does not handle",
                   tile_op_info_of(in->op)->name);
            goto done;
        }
        int fl = cg_is_float_math(odt), isint = odt.kind != TILE_DT_FLOAT;
        /* integer and bool operands: exact integer math where the op is
         * (the interpreter's doubles agree below 2^53); transcendental
         * ops and pow go through double as the interpreter does */
        int imath = isint && (tile_op_is_binary(in->op) || in->op == TILE_I_NEG || in->op == TILE_I_ABS ||
                              in->op == TILE_I_RELU || in->op == TILE_I_NOT || in->op == TILE_I_SELECT ||
                              tile_op_info_of(in->op)->res == TILE_RES_BOOL || in->op == TILE_I_MOD ||
                              in->op == TILE_I_AND || in->op == TILE_I_OR) &&
                    in->op != TILE_I_POW;
        /* u64 operands compute as unsigned long long (comparisons, max,
         * min, / and % are unsigned there; narrower ones fit long long) */
        int u64 = imath && odt.kind == TILE_DT_UINT && odt.bits == 64;
        for (int k = 0; k < n; k++) {
            tile_dtype kdt = odt;
            if (k == 0 && in->op == TILE_I_SELECT) kdt = tile_dtype_from_tsl(TSL_DTYPE_BOOL);
            if (!ew_operand(c, &in->args[k], &rd, kdt, &x[k])) goto done;
            if (imath) {
                /* tsl_c(...) -> tsl_i(...) for this operand */
                strbuf t = {0};
                sb_printf(&t, "%stsl_i(%s", u64 ? "(unsigned long long)" : "", sb_str(&x[k]) + 6);
                sb_free(&x[k]);
                x[k] = t;
            }
        }
        declare(c, s, &rd);
        if (in->op == TILE_I_FMA && odt.bits == 16) {
            emit_fma16(c, s, dv, &rd, odt, x);
            goto done;
        }
        const char *mt = u64 ? "unsigned long long" : imath ? "long long" : fl ? "float" : "double";
        const char *text = ew_text(in->op, fl, isint, in->approx);
        if (odt.kind == TILE_DT_FLOAT && odt.bits == 64 && ew_text_f64(in->op)) text = ew_text_f64(in->op);
        /* C's truncating / and %; x / -1 is a negation (INT64_MIN wraps) */
        if (imath && in->op == TILE_I_DIV)
            text = u64 ? "((y) == 0 ? 0ULL : (x) / (y))"
                       : "((y) == 0 ? 0LL : (y) == -1 ? (long long)(0ULL - (unsigned long long)(x)) : (x) / (y))";
        if (imath && in->op == TILE_I_MOD)
            text = u64 ? "((y) == 0 ? 0ULL : (x) % (y))" : "((y) == 0 || (y) == -1 ? 0LL : (x) % (y))";
        if (imath && in->op == TILE_I_ABS) text = u64 ? "(x)" : "((x) < 0 ? -(x) : (x))";
        if (imath && in->op == TILE_I_ABS && odt.kind == TILE_DT_INT && odt.bits < 32) text = "tsl_iabs_narrow(x)";
        strbuf body = {0};
        subst3(&body, text, sb_str(&x[0]), sb_str(&x[1]), sb_str(&x[2]));
        const char *rt = imath ? "long long" : cg_is_float_math(dv->type.dt) ? "float" : "double";
        if (imath && dv->type.dt.kind == TILE_DT_FLOAT) rt = "double";
        sb_printf(&e, "tsl_to<%s>::f((%s)(%s)(%s))", dt, rt, mt, sb_str(&body));
        sb_free(&body);
    }
    cg_line(c, "#pragma unroll");
    cg_line(c, "for (int l = 0; l < %lld; l++) %s[l] = %s;", (long long)rd.locals, cg_name(c, dv), sb_str(&e));
done:
    for (int k = 0; k < 3; k++) sb_free(&x[k]);
    sb_free(&e);
    cg_rinfo_free(&rd);
}

/* ---- iota, gather, scatter ------------------------------------------------------------------ */

static void emit_iota(cg *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    const tile_value *dv = dst_reg(c, s);
    if (!dv) return;
    rinfo rd;
    if (cg_rinfo(c, dv, &rd)) return;
    if (in->dim < 0 || in->dim >= rd.rank) {
        cg_err(c, TSL_ERR_SHAPE, "iota: dim %d of a rank-%d tensor", in->dim, rd.rank);
    } else {
        strbuf off = {0};
        if (in->nargs > 0 && in->args[0].scalar) cg_expr(c, &off, in->args[0].scalar);
        else sb_puts(&off, "(I)0");
        declare(c, s, &rd);
        cg_line(c, "{");
        c->ind++;
        strbuf tp = {0};
        cg_tpart(c, &tp, &rd, in->dim);
        cg_line(c, "const long long base = (long long)(%s) + (long long)(%s);", sb_str(&tp), sb_str(&off));
        for (int64_t l = 0; l < rd.locals; l++)
            cg_line(c, "%s[%lld] = tsl_to<%s>::f((long long)(base + %lldLL));", cg_name(c, dv), (long long)l,
                    cg_ctype(dv->type.dt), (long long)rd.lc[l * rd.rank + in->dim]);
        c->ind--;
        cg_line(c, "}");
        sb_free(&tp);
        sb_free(&off);
    }
    cg_rinfo_free(&rd);
}

/* gather T, i0.. -> register [mask M] / scatter x -> T, i0.. [mask M]:
 * per slot, the global element at the indices; an unmasked index out of
 * range records the first such error in tsl_err (the runner reports it)
 * and reads 0 / writes nothing. */
static void emit_gather(cg *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    int scatter = in->op == TILE_I_SCATTER;
    const tile_value *dv = scatter ? arg_reg(c, &in->args[0]) : dst_reg(c, s);
    const tile_operand *gop = scatter ? &in->dst : &in->args[0];
    if (!dv) return;
    if (!gop->v || gop->v->kind != TILE_V_TENSOR || gop->v->type.space != TILE_GLOBAL || gop->nsteps) {
        cg_err(c, TSL_ERR_SEMANTIC, "%s: the tensor must be a whole global tensor", tile_op_info_of(in->op)->name);
        return;
    }
    const tile_value *g = gop->v;
    if (cg_check_dtype(c, g)) return;
    if (scatter && cg_dt_coded(g->type.dt)) {
        char nb[16];
        cg_err(c, TSL_ERR_UNAVAILABLE, "scatter: '%s' is %s memory (packed or low-bit float codes); stores of them "
               "are not generated (low-bit outputs cross as carriers: sched/lowbit.c)", g->name,
               tile_dtype_name(g->type.dt, nb));
        return;
    }
    int rank = g->type.rank;
    if (in->nargs - 1 != rank) {
        cg_err(c, TSL_ERR_SHAPE, "%s: %d indices for '%s' of rank %d", tile_op_info_of(in->op)->name, in->nargs - 1,
               g->name, rank);
        return;
    }
    int pidx = -1;
    for (int p = 0; p < c->k->nparams; p++)
        if (c->k->params[p] == g) pidx = p;
    rinfo rd;
    if (cg_rinfo(c, dv, &rd)) return;
    strbuf idx[CG_MAX_RANK];
    memset(idx, 0, sizeof idx);
    for (int k = 0; k < rank && !c->st; k++) {
        const tile_operand *o = &in->args[k + 1];
        if (!o->v || o->v->kind == TILE_V_SCALAR) {
            sb_puts(&idx[k], "(long long)(");
            if (o->v) sb_puts(&idx[k], cg_name(c, o->v));
            else cg_expr(c, &idx[k], o->scalar);
            sb_puts(&idx[k], ")");
        } else {
            const tile_value *iv = arg_reg(c, o);
            if (!iv || cg_check_dtype(c, iv)) break;
            if (!dist_layout_equal(&iv->type.layout->v.dist, rd.L)) {
                cg_err(c, TSL_ERR_SHAPE, "'%s' is not laid out like the data", iv->name);
                break;
            }
            if (iv->type.dt.kind == TILE_DT_FLOAT) sb_printf(&idx[k], "tsl_index(tsl_c(%s[%%L]))", cg_name(c, iv));
            else sb_printf(&idx[k], "tsl_i(%s[%%L])", cg_name(c, iv));
        }
    }
    if (in->mask && !c->st && !dist_layout_equal(&in->mask->type.layout->v.dist, rd.L))
        cg_err(c, TSL_ERR_SHAPE, "mask '%s' is not laid out like the data", in->mask->name);
    if (!c->st) {
        if (!scatter) declare(c, s, &rd);
        const char *gn = cg_name(c, g);
        char gname[96];
        snprintf(gname, sizeof gname, "%s", gn);
        cg_line(c, "{");
        c->ind++;
        if (scatter) {
            strbuf ow = {0};
            cg_owner(c, &ow, &rd);
            cg_line(c, "const bool owner = %s;", sb_str(&ow));
            sb_free(&ow);
        }
        for (int64_t l = 0; l < rd.locals; l++) {
            cg_line(c, "{");
            c->ind++;
            char lnum[24];
            snprintf(lnum, sizeof lnum, "%lld", (long long)l);
            strbuf cond = {0}, addr = {0};
            sb_puts(&cond, "true");
            for (int k = 0; k < rank; k++) {
                strbuf e = {0};
                for (const char *p = sb_str(&idx[k]); *p; p++) {
                    if (p[0] == '%' && p[1] == 'L') {
                        sb_puts(&e, lnum);
                        p++;
                    } else {
                        sb_putc(&e, *p);
                    }
                }
                cg_line(c, "const long long i%d = %s;", k, sb_str(&e));
                sb_free(&e);
                sb_printf(&cond, " && i%d >= 0 && i%d < (long long)%s_d%d", k, k, gname, k);
                sb_printf(&addr, "%si%d * (long long)%s_s%d", k ? " + " : "", k, gname, k);
            }
            if (!rank) sb_puts(&addr, "0");
            const char *on = in->mask ? cg_name(c, in->mask) : NULL;
            char act[160];
            if (on) snprintf(act, sizeof act, "%s%s[%lld]", scatter ? "owner && " : "", on, (long long)l);
            else snprintf(act, sizeof act, "%s", scatter ? "owner" : "true");
            cg_line(c, "const bool act = %s;", act);
            cg_line(c, "const bool inb = %s;", sb_str(&cond));
            for (int k = 0; k < rank; k++)
                cg_line(c, "if (act && !(i%d >= 0 && i%d < (long long)%s_d%d)) tsl_report(tsl_err, %d, %d, i%d, (long long)tid);",
                        k, k, gname, k, pidx, k, k);
            if (scatter) {
                cg_line(c, "if (act && inb) %s[%s] = tsl_to<%s>::f(%s(%s[%lld]));", gname, sb_str(&addr),
                        cg_ctype(g->type.dt), conv_num(dv->type.dt, g->type.dt), cg_name(c, dv), (long long)l);
            } else if (cg_dt_coded(g->type.dt)) {
                strbuf cv = {0};
                cg_coded_read(&cv, g->type.dt, gname, sb_str(&addr), dv->type.dt);
                cg_line(c, "%s[%lld] = (act && inb) ? %s : tsl_to<%s>::f(0.0);", cg_name(c, dv), (long long)l,
                        sb_str(&cv), cg_ctype(dv->type.dt));
                sb_free(&cv);
            } else {
                cg_line(c, "%s[%lld] = (act && inb) ? tsl_to<%s>::f(%s(%s[%s])) : tsl_to<%s>::f(0.0);",
                        cg_name(c, dv), (long long)l, cg_ctype(dv->type.dt), conv_num(g->type.dt, dv->type.dt), gname,
                        sb_str(&addr), cg_ctype(dv->type.dt));
            }
            sb_free(&cond);
            sb_free(&addr);
            c->ind--;
            cg_line(c, "}");
        }
        c->ind--;
        cg_line(c, "}");
    }
    for (int k = 0; k < CG_MAX_RANK; k++) sb_free(&idx[k]);
    cg_rinfo_free(&rd);
}

/* ---- view: the thread's bits reinterpreted ------------------------------------------------ */

static void emit_view(cg *c, const tile_stmt *s)
{
    if (s->instr.result && s->instr.result->type.space == TILE_SHARED) return; /* an alias (plan_block) */
    const tile_value *dv = dst_reg(c, s), *xv = arg_reg(c, &s->instr.args[0]);
    if (!dv || !xv) return;
    rinfo rd, rx;
    if (cg_rinfo(c, dv, &rd)) return;
    if (cg_rinfo(c, xv, &rx)) {
        cg_rinfo_free(&rd);
        return;
    }
    int bx = xv->type.dt.bits, bd = dv->type.dt.bits;
    if (rx.locals * bx != rd.locals * bd) {
        cg_err(c, TSL_ERR_SHAPE, "view: each thread holds %lld bits of '%s' but %lld bits of the result",
               (long long)(rx.locals * bx), xv->name, (long long)(rd.locals * bd));
    } else {
        declare(c, s, &rd);
        cg_line(c, "{");
        c->ind++;
        /* through a temporary: the result may be the source */
        cg_line(c, "%s tmp[%lld];", cg_ctype(dv->type.dt), (long long)rd.locals);
        for (int64_t l = 0; l < rd.locals; l++) {
            int64_t lo = l * bd, hi = lo + bd;
            strbuf e = {0};
            sb_puts(&e, "0ull");
            for (int64_t j = lo / bx; j * bx < hi; j++) {
                int64_t a = j * bx > lo ? j * bx : lo, b = (j + 1) * bx < hi ? (j + 1) * bx : hi;
                unsigned long long m = (b - a) >= 64 ? ~0ull : ((1ull << (b - a)) - 1);
                /* a low-bit float register holds its value: its bits are its code */
                tile_dtype xd = xv->type.dt;
                if (dtype_desc_is_lowfloat(xd))
                    sb_printf(&e, " | ((((unsigned long long)tsl_lbenc(%s[%lld], %d, %d, %d, %d)) >> %lld) & 0x%llxull) << %lld)",
                              cg_name(c, xv), (long long)j, xd.exp, xd.man, xd.bias, xd.special, (long long)(a - j * bx), m,
                              (long long)(a - lo));
                else
                    sb_printf(&e, " | (((tsl_bits(%s[%lld]) >> %lld) & 0x%llxull) << %lld)", cg_name(c, xv), (long long)j,
                              (long long)(a - j * bx), m, (long long)(a - lo));
            }
            tile_dtype dd = dv->type.dt;
            if (dtype_desc_is_lowfloat(dd))
                cg_line(c, "tmp[%lld] = tsl_lbdec((unsigned)(%s), %d, %d, %d, %d);", (long long)l, sb_str(&e), dd.exp,
                        dd.man, dd.bias, dd.special);
            else
                cg_line(c, "tmp[%lld] = tsl_from_bits<%s>(%s);", (long long)l, cg_ctype(dv->type.dt), sb_str(&e));
            sb_free(&e);
        }
        cg_line(c, "#pragma unroll");
        cg_line(c, "for (int l = 0; l < %lld; l++) %s[l] = tmp[l];", (long long)rd.locals, cg_name(c, dv));
        c->ind--;
        cg_line(c, "}");
    }
    cg_rinfo_free(&rd);
    cg_rinfo_free(&rx);
}

/* ---- reduce ---------------------------------------------------------------------------------- */

/* The combining step of a reduction of dtype dt over math_type(dt) values
 * x and y: float max / min are tsl_maxn[f] / tsl_minn[f] (one FMNMX). */
static const char *red_text(tile_op op, tile_dtype dt)
{
    int in = cg_dt_int(dt), fl = cg_is_float_math(dt);
    if (op == TILE_I_REDUCE_SUM && in) /* wraps, as the interpreter's integers */
        return "(long long)((unsigned long long)(x) + (unsigned long long)(y))";
    if (op == TILE_I_REDUCE_SUM) return "(x) + (y)";
    if (op == TILE_I_REDUCE_MAX)
        return in ? "((y) > (x) ? (y) : (x))" : fl ? "tsl_maxnf((x), (y))" : "tsl_maxn((x), (y))";
    return in ? "((y) < (x) ? (y) : (x))" : fl ? "tsl_minnf((x), (y))" : "tsl_minn((x), (y))";
}

/* The x coordinate (rank rx.rank) matching result coordinate rc: dim D
 * inserted (result rank one less) or kept. */
static void red_xcoord(const rinfo *rx, const rinfo *rd, int D, const int64_t *rc, int64_t *xc)
{
    int keep = rd->rank == rx->rank;
    for (int i = 0, j = 0; i < rx->rank; i++) {
        if (i == D) {
            xc[i] = 0;
            if (keep) j++;
        } else {
            xc[i] = rc[j++];
        }
    }
}

/* Shuffle fast path: dim D's thread factors are power-of-two lane bits
 * inside a warp and every result slot's source slots are the same for all
 * threads. Returns 1 when emitted. */
static int reduce_shuffle(cg *c, const tile_stmt *s, const rinfo *rx, const rinfo *rd, int D)
{
    int64_t xors[32];
    int nx = 0;
    for (int i = 0; i < rx->nterm; i++) {
        if (rx->term[i].dim != D) continue;
        int64_t dv = rx->term[i].div, ex = rx->term[i].ext;
        if ((dv & (dv - 1)) || (ex & (ex - 1)) || dv * ex > 32) return 0;
        for (int64_t m = dv; m < dv * ex; m *= 2) xors[nx++] = m;
    }
    /* for each result local: the x locals whose non-D coordinate it is */
    int64_t T = c->threads;
    int64_t *grp = calloc((size_t)(rd->locals * rx->locals), sizeof *grp);
    int64_t *ng = calloc((size_t)rd->locals, sizeof *ng);
    int ok = grp && ng;
    for (int64_t lr = 0; ok && lr < rd->locals; lr++) {
        for (int64_t t = 0; ok && t < T; t++) {
            int64_t rc[CG_MAX_RANK], xc[CG_MAX_RANK];
            for (int d = 0; d < rd->rank; d++) rc[d] = cg_rinfo_tpart(rd, t, d) + rd->lc[lr * rd->rank + d];
            red_xcoord(rx, rd, D, rc, xc);
            int64_t cnt = 0;
            for (int64_t l = 0; l < rx->locals; l++) {
                int match = 1;
                for (int d = 0; d < rx->rank && match; d++)
                    if (d != D && cg_rinfo_tpart(rx, t, d) + rx->lc[l * rx->rank + d] != xc[d]) match = 0;
                if (!match) continue;
                if (t == 0) grp[lr * rx->locals + cnt] = l;
                else if (cnt >= ng[lr] || grp[lr * rx->locals + cnt] != l) ok = 0;
                cnt++;
            }
            if (t == 0) ng[lr] = cnt;
            else if (cnt != ng[lr]) ok = 0;
            if (cnt == 0) ok = 0;
        }
    }
    if (ok) {
        const char *mt = math_type(rx->v->type.dt), *dt = cg_ctype(rd->v->type.dt);
        declare(c, s, rd);
        cg_line(c, "{");
        c->ind++;
        cg_line(c, "const unsigned mask = tsl_warp_mask(%d, (int)(tid & ~(I)31)); (void)mask;", c->threads);
        for (int64_t lr = 0; lr < rd->locals; lr++) {
            cg_line(c, "{");
            c->ind++;
            tile_dtype xdt = rx->v->type.dt;
            const char *cv = cg_dt_int(xdt) ? "tsl_i" : "tsl_c";
            cg_line(c, "%s p = %s(%s[%lld]);", mt, cv, cg_name(c, rx->v), (long long)grp[lr * rx->locals]);
            for (int64_t j = 1; j < ng[lr]; j++) {
                char y[128];
                snprintf(y, sizeof y, "%s(%s[%lld])", cv, cg_name(c, rx->v), (long long)grp[lr * rx->locals + j]);
                strbuf e = {0};
                subst(&e, red_text(s->instr.op, xdt), "p", y);
                cg_line(c, "p = %s;", sb_str(&e));
                sb_free(&e);
            }
            for (int i = 0; i < nx; i++) {
                /* every lane shuffles (outside any condition), then combines */
                strbuf e = {0};
                subst(&e, red_text(s->instr.op, xdt), "p", "q");
                cg_line(c, "{ const %s q = __shfl_xor_sync(mask, p, %lld); p = %s; }", mt, (long long)xors[i], sb_str(&e));
                sb_free(&e);
            }
            cg_line(c, "%s[%lld] = tsl_to<%s>::f(%sp);", cg_name(c, rd->v), (long long)lr, dt, to_arg(xdt));
            c->ind--;
            cg_line(c, "}");
        }
        c->ind--;
        cg_line(c, "}");
    }
    free(grp);
    free(ng);
    return ok;
}

static void emit_reduce(cg *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    const tile_value *dv = dst_reg(c, s), *xv = arg_reg(c, &in->args[0]);
    if (!dv || !xv) return;
    rinfo rd, rx;
    if (cg_rinfo(c, dv, &rd)) return;
    if (cg_rinfo(c, xv, &rx)) {
        cg_rinfo_free(&rd);
        return;
    }
    int D = in->dim;
    if (D < 0 || D >= rx.rank || (rd.rank != rx.rank && rd.rank != rx.rank - 1)) {
        cg_err(c, TSL_ERR_SHAPE, "reduce: dim %d from rank %d to rank %d", D, rx.rank, rd.rank);
    } else if (!reduce_shuffle(c, s, &rx, &rd, D)) {
        /* through scratch: each result element loops over dim D */
        const char *mt = math_type(xv->type.dt);
        int msz = cg_is_float_math(xv->type.dt) ? 4 : 8;
        int64_t n = 1;
        for (int i = 0; i < rx.rank; i++) n *= rx.dims[i];
        need_scratch(c, n * msz);
        declare(c, s, &rd);
        cg_line(c, "{");
        c->ind++;
        scratch_write(c, &rx, mt, 0, "tx");
        declare_tparts(c, &rd, "tr");
        int64_t stride = 1;
        for (int i = rx.rank - 1; i > D; i--) stride *= rx.dims[i];
        for (int64_t lr = 0; lr < rd.locals; lr++) {
            /* flat index of the x coordinate with dim D = 0 */
            strbuf fi = {0};
            int64_t mult = 1;
            sb_puts(&fi, "0");
            for (int i = rx.rank - 1; i >= 0; i--) {
                if (i != D) {
                    int j = rd.rank == rx.rank ? i : (i > D ? i - 1 : i);
                    sb_printf(&fi, " + (tr%d + %lld) * %lld", j, (long long)rd.lc[lr * rd.rank + j], (long long)mult);
                }
                mult *= rx.dims[i];
            }
            cg_line(c, "{");
            c->ind++;
            cg_line(c, "const %s *q = (const %s *)tsl_scr + %s;", mt, mt, sb_str(&fi));
            cg_line(c, "%s p = q[0];", mt);
            strbuf e = {0};
            char y[64];
            snprintf(y, sizeof y, "q[j * %lld]", (long long)stride);
            subst(&e, red_text(in->op, xv->type.dt), "p", y);
            cg_line(c, "for (int j = 1; j < %lld; j++) p = %s;", (long long)rx.dims[D], sb_str(&e));
            cg_line(c, "%s[%lld] = tsl_to<%s>::f(%sp);", cg_name(c, dv), (long long)lr, cg_ctype(dv->type.dt),
                    to_arg(xv->type.dt));
            sb_free(&e);
            sb_free(&fi);
            c->ind--;
            cg_line(c, "}");
        }
        c->ind--;
        cg_line(c, "}");
    }
    cg_rinfo_free(&rd);
    cg_rinfo_free(&rx);
}

/* ---- broadcast ---------------------------------------------------------------------------- */

static void emit_broadcast(cg *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    const tile_value *dv = dst_reg(c, s), *xv = arg_reg(c, &in->args[0]);
    if (!dv || !xv) return;
    rinfo rd, rx;
    if (cg_rinfo(c, dv, &rd)) return;
    if (cg_rinfo(c, xv, &rx)) {
        cg_rinfo_free(&rd);
        return;
    }
    int D = in->dim;
    if (D < 0 || D >= rd.rank || (rx.rank != rd.rank && rx.rank != rd.rank - 1)) {
        cg_err(c, TSL_ERR_SHAPE, "broadcast: dim %d from rank %d to rank %d", D, rx.rank, rd.rank);
        goto done;
    }
    /* x coordinate of result coordinate yc */
    int64_t T = c->threads;
    int64_t *src = malloc(sizeof *src * (size_t)rd.locals);
    int ok = src != NULL;
    for (int64_t ly = 0; ok && ly < rd.locals; ly++) {
        src[ly] = -1;
        for (int64_t t = 0; ok && t < T; t++) {
            int64_t xc[CG_MAX_RANK];
            for (int i = 0, j = 0; i < rd.rank; i++) {
                int64_t y = cg_rinfo_tpart(&rd, t, i) + rd.lc[ly * rd.rank + i];
                if (i != D) xc[j++] = y;
                else if (rx.rank == rd.rank) xc[j++] = 0;
            }
            int64_t found = -1;
            for (int64_t l = 0; l < rx.locals && found < 0; l++) {
                int m = 1;
                for (int d = 0; d < rx.rank && m; d++)
                    if (cg_rinfo_tpart(&rx, t, d) + rx.lc[l * rx.rank + d] != xc[d]) m = 0;
                if (m) found = l;
            }
            if (found < 0 || (t > 0 && found != src[ly])) ok = 0;
            src[ly] = found;
        }
    }
    declare(c, s, &rd);
    cg_line(c, "{");
    c->ind++;
    const char *dt = cg_ctype(dv->type.dt);
    int same = tile_dtype_eq(dv->type.dt, xv->type.dt);
    if (ok) {
        cg_line(c, "%s tmp[%lld];", dt, (long long)rd.locals);
        for (int64_t ly = 0; ly < rd.locals; ly++) {
            if (same) cg_line(c, "tmp[%lld] = %s[%lld];", (long long)ly, cg_name(c, xv), (long long)src[ly]);
            else cg_line(c, "tmp[%lld] = tsl_to<%s>::f(%s(%s[%lld]));", (long long)ly, dt,
                         conv_num(xv->type.dt, dv->type.dt), cg_name(c, xv), (long long)src[ly]);
        }
        cg_line(c, "#pragma unroll");
        cg_line(c, "for (int l = 0; l < %lld; l++) %s[l] = tmp[l];", (long long)rd.locals, cg_name(c, dv));
    } else {
        const char *mt = math_type(xv->type.dt);
        int msz = cg_is_float_math(xv->type.dt) ? 4 : 8;
        int64_t n = 1;
        for (int i = 0; i < rx.rank; i++) n *= rx.dims[i];
        need_scratch(c, n * msz);
        scratch_write(c, &rx, mt, 0, "tx");
        declare_tparts(c, &rd, "ty");
        for (int64_t ly = 0; ly < rd.locals; ly++) {
            strbuf fi = {0};
            int64_t mult = 1;
            sb_puts(&fi, "0");
            for (int i = rd.rank - 1; i >= 0; i--) {
                if (i == D) {
                    if (rx.rank == rd.rank) mult *= rx.dims[i];
                    continue;
                }
                int j = rx.rank == rd.rank ? i : (i > D ? i - 1 : i);
                sb_printf(&fi, " + (ty%d + %lld) * %lld", i, (long long)rd.lc[ly * rd.rank + i], (long long)mult);
                mult *= rx.dims[j];
            }
            cg_line(c, "%s[%lld] = tsl_to<%s>::f(%s((const %s *)tsl_scr)[%s]);", cg_name(c, dv), (long long)ly, dt,
                    to_arg(xv->type.dt), mt, sb_str(&fi));
            sb_free(&fi);
        }
    }
    c->ind--;
    cg_line(c, "}");
    free(src);
done:
    cg_rinfo_free(&rd);
    cg_rinfo_free(&rx);
}

/* ---- shuffles ---------------------------------------------------------------------------- */

static void emit_shuffle(cg *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    const tile_value *dv = dst_reg(c, s), *xv = arg_reg(c, &in->args[0]);
    if (!dv || !xv) return;
    if (in->args[1].v || !in->args[1].scalar) {
        if (!(in->args[1].v && in->args[1].v->kind == TILE_V_SCALAR)) {
            cg_err(c, TSL_ERR_SEMANTIC, "shuffle needs a lane operand");
            return;
        }
    }
    rinfo rd;
    if (cg_rinfo(c, dv, &rd)) return;
    if (xv->type.layout->v.dist.locals != rd.locals || !tile_dtype_eq(xv->type.dt, dv->type.dt)) {
        cg_err(c, TSL_ERR_SHAPE, "shuffle: the result must be laid out like the input");
        cg_rinfo_free(&rd);
        return;
    }
    strbuf k = {0};
    if (in->args[1].v) sb_puts(&k, cg_name(c, in->args[1].v));
    else cg_expr(c, &k, in->args[1].scalar);
    declare(c, s, &rd);
    cg_line(c, "{");
    c->ind++;
    cg_line(c, "const int lane = (int)(tid & 31), base = (int)tid - lane;");
    const char *from = in->op == TILE_I_SHUFFLE_XOR ? "lane ^ (int)(K)" : in->op == TILE_I_SHUFFLE_UP ? "lane - (int)(K)"
                       : in->op == TILE_I_SHUFFLE_DOWN ? "lane + (int)(K)" : "(int)(K)";
    strbuf f = {0};
    for (const char *p = from; *p; p++) {
        if (*p == 'K') sb_puts(&f, sb_str(&k));
        else sb_putc(&f, *p);
    }
    cg_line(c, "int from = %s;", sb_str(&f));
    cg_line(c, "if (from < 0 || from > 31 || base + from >= %d) from = lane;", c->threads);
    cg_line(c, "const unsigned mask = tsl_warp_mask(%d, base);", c->threads);
    cg_line(c, "#pragma unroll");
    cg_line(c, "for (int l = 0; l < %lld; l++) %s[l] = tsl_shfl(%s[l], from, mask);", (long long)rd.locals,
            cg_name(c, dv), cg_name(c, xv));
    c->ind--;
    cg_line(c, "}");
    sb_free(&f);
    sb_free(&k);
    cg_rinfo_free(&rd);
}

/* ---- mma ---------------------------------------------------------------------------------- */

/* Locals base .. base + n - 1 of register array `nm` as an mma operand's
 * 32-bit registers: pairs packed when the elements are 16-bit. */
static void frag_regs(strbuf *sb, const char *nm, int64_t base, int n, int bits)
{
    for (int i = 0; i < n; i += bits == 16 ? 2 : 1) {
        if (bits == 16)
            sb_printf(sb, "%stsl_pack2(%s[%lld], %s[%lld])", i ? ", " : "", nm, (long long)(base + i), nm,
                      (long long)(base + i + 1));
        else
            sb_printf(sb, "%s%s[%lld]", i ? ", " : "", nm, (long long)(base + i));
    }
}

/* The selected mma row through its plan (target/frag.c): per C fragment
 * and k step one call of the row's helper on the A and B fragments the
 * plan names, the fragments' registers packed in pairs. 1 when emitted. */
static int mma_fast(cg *c, const target_atom *at, const rinfo *ra, const rinfo *rb, const rinfo *rc, const rinfo *rd)
{
    const tile_value *a = ra->v, *b = rb->v, *cc = rc->v;
    target_mma_plan p;
    if (!at->cu || ra->lead || rb->lead || rc->lead || !dist_layout_equal(rc->L, rd->L) ||
        target_mma_plan_make(&p, at, ra->L, rb->L, rc->L, c->threads))
        return 0;
    if (!p.uniform) {
        target_mma_plan_free(&p);
        return 0;
    }
    char an[96], dn[96];
    snprintf(an, sizeof an, "%s", cg_name(c, a));
    snprintf(dn, sizeof dn, "%s", cg_name(c, rd->v));
    /* the dequantizing rows (mma.q): B's codes from the words of the view
     * that made it, tsl_qmma<BITS> per C tile and k step */
    int q = at->dtype[TARGET_B] != TARGET_DT_ANY && at->dtype[TARGET_B] != at->dtype[TARGET_A];
    if (q && (rb->locals * b->type.dt.bits % 32 || cg_view_words(c, b, "tsl_qw") < 0)) {
        target_mma_plan_free(&p);
        return 0;
    }
    const char *bn = cg_name(c, b);
    if (rd->v != cc)
        cg_line(c, "#pragma unroll\n    for (int l = 0; l < %lld; l++) %s[l] = %s[l];", (long long)rd->locals, dn,
                cg_name(c, cc));
    if (q) {
        for (int64_t t = 0; t < p.tiles; t++)
            for (int64_t kt = 0; kt < p.ksteps; kt++) {
                int64_t la = p.a[t * p.ksteps + kt] * p.per[0], lb = p.b[t * p.ksteps + kt] * p.per[1];
                strbuf l2 = {0};
                frag_regs(&l2, an, la, p.per[0], 16);
                cg_line(c, "%s<%d>(&%s[%lld], &tsl_qw[%lld], %s);", at->cu, b->type.dt.bits, dn,
                        (long long)(t * p.per[2]), (long long)(lb * b->type.dt.bits / 32), sb_str(&l2));
                sb_free(&l2);
            }
        target_mma_plan_free(&p);
        return 1;
    }
    for (int64_t t = 0; t < p.tiles; t++)
        for (int64_t kt = 0; kt < p.ksteps; kt++) {
            int64_t la = p.a[t * p.ksteps + kt] * p.per[0], lb = p.b[t * p.ksteps + kt] * p.per[1],
                    ld = t * p.per[2];
            strbuf l1 = {0}, l2 = {0}, l3 = {0};
            /* D by reference (a half's bits when 16-bit), A and B a 32-bit
             * register each: 16-bit elements packed in pairs */
            for (int i = 0; i < p.per[2]; i++)
                sb_printf(&l1, "%s%s[%lld]%s", i ? ", " : "", dn, (long long)(ld + i), rd->v->type.dt.bits == 16 ? ".x" : "");
            frag_regs(&l2, an, la, p.per[0], a->type.dt.bits);
            frag_regs(&l3, bn, lb, p.per[1], b->type.dt.bits);
            cg_line(c, "%s(%s,", at->cu, sb_str(&l1));
            cg_line(c, "    %s,", sb_str(&l2));
            cg_line(c, "    %s);", sb_str(&l3));
            sb_free(&l1);
            sb_free(&l2);
            sb_free(&l3);
        }
    target_mma_plan_free(&p);
    return 1;
}

static void emit_mma(cg *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    const target_atom *at = selected(c, in);
    if (!at) return;
    const tile_value *av = arg_reg(c, &in->args[0]), *bv = arg_reg(c, &in->args[1]),
                     *cv = arg_reg(c, &in->args[2]), *dv = dst_reg(c, s);
    if (!av || !bv || !cv || !dv) return;
    rinfo ra, rb, rc, rd;
    memset(&ra, 0, sizeof ra);
    memset(&rb, 0, sizeof rb);
    memset(&rc, 0, sizeof rc);
    memset(&rd, 0, sizeof rd);
    if (cg_rinfo(c, av, &ra) || cg_rinfo(c, bv, &rb) || cg_rinfo(c, cv, &rc) || cg_rinfo(c, dv, &rd)) goto done;
    if (ra.rank != 2 || rb.rank != 2 || rc.rank != 2 || ra.dims[1] != rb.dims[0] || ra.dims[0] != rc.dims[0] ||
        rb.dims[1] != rc.dims[1] || !dist_layout_equal(rc.L, rd.L)) {
        cg_err(c, TSL_ERR_SHAPE, "mma: shapes or layouts do not agree");
        goto done;
    }
    declare(c, s, &rd);
    cg_line(c, "{");
    c->ind++;
    if (at->kind == TARGET_K_MMA && !mma_fast(c, at, &ra, &rb, &rc, &rd))
        cg_err(c, TSL_ERR_INTERNAL, "mma: the selected %s does not fit its operands", at->name);
    else if (at->kind != TARGET_K_MMA) {
        /* generic: all three operands through scratch, each D element a dot product */
        int64_t M = ra.dims[0], K = ra.dims[1], N = rb.dims[1];
        need_scratch(c, (M * K + K * N + M * N) * 4);
        cg_line(c, "/* generic mma through shared scratch (layouts are not tiled atom fragments) */");
        scratch_write(c, &ra, "float", 0, "ta");
        scratch_write(c, &rb, "float", M * K * 4, "tb");
        scratch_write(c, &rc, "float", (M * K + K * N) * 4, "tc");
        declare_tparts(c, &rd, "td");
        cg_line(c, "const float *sa = (const float *)tsl_scr, *sb = sa + %lld, *sc = sb + %lld;",
                (long long)(M * K), (long long)(K * N));
        for (int64_t l = 0; l < rd.locals; l++) {
            cg_line(c, "{");
            c->ind++;
            cg_line(c, "const I i = td0 + %lld, j = td1 + %lld;", (long long)rd.lc[l * 2], (long long)rd.lc[l * 2 + 1]);
            cg_line(c, "float acc = sc[i * %lld + j];", (long long)N);
            cg_line(c, "for (int kk = 0; kk < %lld; kk++) acc = fmaf(sa[i * %lld + kk], sb[kk * %lld + j], acc);",
                    (long long)K, (long long)K, (long long)N);
            cg_line(c, "%s[%lld] = tsl_to<%s>::f(acc);", cg_name(c, dv), (long long)l, cg_ctype(dv->type.dt));
            c->ind--;
            cg_line(c, "}");
        }
    }
    c->ind--;
    cg_line(c, "}");
done:
    cg_rinfo_free(&ra);
    cg_rinfo_free(&rb);
    cg_rinfo_free(&rc);
    cg_rinfo_free(&rd);
}

/* ---- print ------------------------------------------------------------------------------------ */

static void emit_print(cg *c, const tile_stmt *s)
{
    const tile_operand *o = &s->instr.args[0];
    const char *blk = "(long long)blockIdx.x, (long long)blockIdx.y, (long long)blockIdx.z";
    if (!o->v || o->v->kind == TILE_V_SCALAR) {
        strbuf e = {0};
        if (o->v) sb_printf(&e, "(double)%s", cg_name(c, o->v));
        else cg_num(c, &e, o->scalar);
        cg_line(c, "if (tid == 0) printf(\"block (%%lld,%%lld,%%lld): %s = %%g\\n\", %s, %s);",
                o->v ? o->v->name : "value", blk, sb_str(&e));
        sb_free(&e);
        return;
    }
    const tile_value *v = arg_reg(c, o);
    if (!v) return;
    rinfo ri;
    if (cg_rinfo(c, v, &ri)) return;
    cg_sync(c);
    cg_line(c, "if (tid == 0) printf(\"block (%%lld,%%lld,%%lld): %s (thread, local) -> [coord] value\\n\", %s);",
            v->name, blk);
    cg_sync(c);
    cg_line(c, "{");
    c->ind++;
    declare_tparts(c, &ri, "tp");
    for (int64_t l = 0; l < ri.locals; l++) {
        strbuf fmt = {0}, args = {0};
        for (int d = 0; d < ri.rank; d++) {
            sb_printf(&fmt, "%s%%lld", d ? "," : "");
            sb_printf(&args, ", (long long)(tp%d + %lld)", d, (long long)ri.lc[l * ri.rank + d]);
        }
        cg_line(c, "printf(\"  (%%lld,%%lld) -> [%s] %%g\\n\", (long long)tid, %lldLL%s, (double)tsl_c(%s[%lld]));",
                sb_str(&fmt), (long long)l, sb_str(&args), cg_name(c, v), (long long)l);
        sb_free(&fmt);
        sb_free(&args);
    }
    c->ind--;
    cg_line(c, "}");
    cg_rinfo_free(&ri);
}

/* ---- dispatch ------------------------------------------------------------------------------- */

static void declare_result(cg *c, const tile_stmt *s)
{
    rinfo ri;
    memset(&ri, 0, sizeof ri);
    if (cg_rinfo(c, s->instr.result, &ri)) return;
    declare(c, s, &ri);
    cg_rinfo_free(&ri);
}

void cg_instr(cg *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    if (in->decomp && !tile_op_is_hopper(in->op)) {
        cg_decomp(c, s, declare_result);
        return;
    }
    if (tile_op_is_hopper(in->op)) {
        cg_hopper_instr(c, s);
        return;
    }
    switch (in->op) {
    case TILE_I_ALLOC: emit_alloc(c, s); return;
    case TILE_I_LOAD_GLOBAL:
    case TILE_I_STORE_GLOBAL:
    case TILE_I_LOAD_SHARED:
    case TILE_I_STORE_SHARED: emit_transfer(c, s); return;
    case TILE_I_COPY_ASYNC: emit_copy_async(c, s); return;
    case TILE_I_COMMIT: cg_line(c, "tsl_cp_commit();"); return;
    case TILE_I_WAIT: {
        int64_t n = 0;
        if (!in->nargs || !in->args[0].scalar || !tile_expr_const(in->args[0].scalar, &n) || n < 0 || n > 7) {
            cg_err(c, TSL_ERR_SEMANTIC, "wait needs a constant count 0..7");
            return;
        }
        cg_line(c, "tsl_cp_wait<%lld>();", (long long)n);
        return;
    }
    case TILE_I_SYNC: cg_sync(c); return;
    case TILE_I_MMA: emit_mma(c, s); return;
    case TILE_I_VIEW: emit_view(c, s); return;
    case TILE_I_REDUCE_SUM:
    case TILE_I_REDUCE_MAX:
    case TILE_I_REDUCE_MIN: emit_reduce(c, s); return;
    case TILE_I_BROADCAST: emit_broadcast(c, s); return;
    case TILE_I_SHUFFLE_XOR:
    case TILE_I_SHUFFLE_UP:
    case TILE_I_SHUFFLE_DOWN:
    case TILE_I_SHUFFLE_IDX: emit_shuffle(c, s); return;
    case TILE_I_PRINT: emit_print(c, s); return;
    default:
        if (in->op == TILE_I_IOTA) {
            emit_iota(c, s);
            return;
        }
        if (in->op == TILE_I_GATHER || in->op == TILE_I_SCATTER) {
            emit_gather(c, s);
            return;
        }
        if (in->op == TILE_I_CAST || in->op == TILE_I_COPY || tile_op_info_of(in->op)->res == TILE_RES_LIKE ||
            tile_op_info_of(in->op)->res == TILE_RES_BOOL) {
            emit_elementwise(c, s);
            return;
        }
        cg_err(c, TSL_ERR_UNAVAILABLE, "instruction '%s' is not supported by the CUDA generator",
               tile_op_info_of(in->op)->name);
    }
}
