/* cuda_hopper.c — the CUDA generator's Hopper part (sm_90a; docs/tile-ir.md
 * section 5b, docs/codegen.md "Hopper"):
 *
 *   - warpgroups: one branch per role on the warp-uniform warpgroup index,
 *     each starting with setmaxnreg and re-declaring `tid` as the thread's
 *     index in its 128-thread instance (and the role's index variable); a
 *     `sync` inside is a named barrier of the instance (id 1 + warpgroup);
 *     each instance has its own scratch area;
 *   - mbarriers: init / arrive (expect_tx) by thread 0 of the instance,
 *     try_wait.parity loops by every thread;
 *   - TMA: one `cp.async.bulk.tensor` per box (a box row wider than the
 *     shared tensor's swizzle is split into swizzle-wide boxes, each placed
 *     where the layout puts it), issued by thread 0, through tensor maps
 *     the launcher builds (cg_cuda_tmaps lists them) and passes as
 *     __grid_constant__ parameters after the regular ones;
 *   - wgmma: descriptors from tile_wgmma_smem_of (the layout algebra), one
 *     wgmma.mma_async.m64nNk16 per k16 step, the accumulators fenced as
 *     operands after each wgmma_wait so no read of them moves above it.
 * Shared addresses in descriptors and TMA destinations are the unswizzled
 * offsets: the hardware applies the swizzle to the address bits, which
 * equals the layout's swizzle because every swizzled shared tensor starts
 * on a 1024-byte boundary (cuda.c plan_block). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/cuda_int.h"

const char cg_hopper_prelude[] =
    "#ifndef TSL_EMULATE\n"
    "/* Hopper: tensor maps (opaque, 128 bytes), mbarriers, TMA, wgmma */\n"
    "struct __align__(64) tsl_tmap { unsigned long long v[16]; };\n"
    "static __device__ __forceinline__ unsigned tsl_saddr(const void *p) {\n"
    "    return (unsigned)__cvta_generic_to_shared(p);\n"
    "}\n"
    "static __device__ __forceinline__ void tsl_mbar_init(unsigned bar, unsigned count) {\n"
    "    asm volatile(\"mbarrier.init.shared::cta.b64 [%0], %1;\\n\" :: \"r\"(bar), \"r\"(count) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void tsl_mbar_init_fence() {\n"
    "    asm volatile(\"fence.mbarrier_init.release.cluster;\\n\" ::: \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void tsl_mbar_arrive(unsigned bar) {\n"
    "    asm volatile(\"mbarrier.arrive.shared::cta.b64 _, [%0];\\n\" :: \"r\"(bar) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void tsl_mbar_arrive_tx(unsigned bar, unsigned bytes) {\n"
    "    asm volatile(\"mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\\n\" :: \"r\"(bar), \"r\"(bytes) : \"memory\");\n"
    "}\n"
    "/* clusters: an arrive on the barrier at the same place in block `cta`\n"
    " * of the cluster (release at CTA scope, as CUTLASS's cluster pipelines:\n"
    " * .release.cluster fences every earlier access at cluster scope first),\n"
    " * and the barrier every thread of the cluster passes */\n"
    "static __device__ __forceinline__ void tsl_mbar_arrive_cta(unsigned bar, unsigned cta) {\n"
    "    asm volatile(\"{\\n\\t.reg .b32 ra;\\n\\tmapa.shared::cluster.u32 ra, %0, %1;\\n\\t\"\n"
    "                 \"mbarrier.arrive.shared::cluster.b64 _, [ra];\\n}\\n\" :: \"r\"(bar), \"r\"(cta) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void tsl_cluster_sync() {\n"
    "    asm volatile(\"barrier.cluster.arrive.release.aligned;\\n\\tbarrier.cluster.wait.acquire.aligned;\\n\" ::: \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void tsl_mbar_wait(unsigned bar, unsigned parity) {\n"
    "    asm volatile(\"{\\n\\t.reg .pred p;\\n\\tTSL_MBAR_WAIT_%=:\\n\\t\"\n"
    "                 \"mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\\n\\t\"\n"
    "                 \"@!p bra TSL_MBAR_WAIT_%=;\\n}\\n\" :: \"r\"(bar), \"r\"(parity) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void tsl_fence_async() {\n"
    "    asm volatile(\"fence.proxy.async.shared::cta;\\n\" ::: \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void tsl_bar_sync(int id, int n) {\n"
    "    asm volatile(\"bar.sync %0, %1;\\n\" :: \"r\"(id), \"r\"(n) : \"memory\");\n"
    "}\n"
    "#define TSL_TMA_LOAD(D, DST, TM, BAR, ...) asm volatile(\"cp.async.bulk.tensor.\" #D \"d.shared::cluster.global\"\\\n"
    "    \".mbarrier::complete_tx::bytes [%0], [%1, {\" TSL_TMA_C##D \"}], [%2];\\n\"\\\n"
    "    :: \"r\"(DST), \"l\"((unsigned long long)&(TM)), \"r\"(BAR), __VA_ARGS__ : \"memory\")\n"
    "#define TSL_TMA_STORE(D, SRC, TM, ...) asm volatile(\"cp.async.bulk.tensor.\" #D \"d.global.shared::cta\"\\\n"
    "    \".bulk_group [%0, {\" TSL_TMA_S##D \"}], [%1];\\n\"\\\n"
    "    :: \"l\"((unsigned long long)&(TM)), \"r\"(SRC), __VA_ARGS__ : \"memory\")\n"
    "#define TSL_TMA_LOAD_MC(D, DST, TM, BAR, MASK, ...) asm volatile(\"cp.async.bulk.tensor.\" #D \"d.shared::cluster\"\\\n"
    "    \".global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {\" TSL_TMA_M##D \"}], [%2], %3;\\n\"\\\n"
    "    :: \"r\"(DST), \"l\"((unsigned long long)&(TM)), \"r\"(BAR), \"h\"((unsigned short)(MASK)), __VA_ARGS__ : \"memory\")\n"
    "#define TSL_TMA_M1 \"%4\"\n"
    "#define TSL_TMA_M2 \"%4, %5\"\n"
    "#define TSL_TMA_M3 \"%4, %5, %6\"\n"
    "#define TSL_TMA_M4 \"%4, %5, %6, %7\"\n"
    "#define TSL_TMA_M5 \"%4, %5, %6, %7, %8\"\n"
    "#define TSL_TMA_C1 \"%3\"\n"
    "#define TSL_TMA_C2 \"%3, %4\"\n"
    "#define TSL_TMA_C3 \"%3, %4, %5\"\n"
    "#define TSL_TMA_C4 \"%3, %4, %5, %6\"\n"
    "#define TSL_TMA_C5 \"%3, %4, %5, %6, %7\"\n"
    "#define TSL_TMA_S1 \"%2\"\n"
    "#define TSL_TMA_S2 \"%2, %3\"\n"
    "#define TSL_TMA_S3 \"%2, %3, %4\"\n"
    "#define TSL_TMA_S4 \"%2, %3, %4, %5\"\n"
    "#define TSL_TMA_S5 \"%2, %3, %4, %5, %6\"\n"
    "static __device__ __forceinline__ void tsl_bulk_commit() {\n"
    "    asm volatile(\"cp.async.bulk.commit_group;\\n\" ::: \"memory\");\n"
    "}\n"
    "template <int N> static __device__ __forceinline__ void tsl_bulk_wait() {\n"
    "    asm volatile(\"cp.async.bulk.wait_group.read %0;\\n\" :: \"n\"(N) : \"memory\");\n"
    "}\n"
    "/* a shared-memory matrix descriptor: start, leading and stride byte offsets, swizzle mode */\n"
    "static __device__ __forceinline__ unsigned long long tsl_wgmma_desc(unsigned addr, unsigned lbo, unsigned sbo,\n"
    "                                                                   unsigned mode) {\n"
    "    return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)((lbo & 0x3FFFF) >> 4) << 16) |\n"
    "           ((unsigned long long)((sbo & 0x3FFFF) >> 4) << 32) | ((unsigned long long)mode << 62);\n"
    "}\n"
    "static __device__ __forceinline__ void tsl_wgmma_fence() { asm volatile(\"wgmma.fence.sync.aligned;\\n\" ::: \"memory\"); }\n"
    "static __device__ __forceinline__ void tsl_wgmma_commit() {\n"
    "    asm volatile(\"wgmma.commit_group.sync.aligned;\\n\" ::: \"memory\");\n"
    "}\n"
    "template <int N> static __device__ __forceinline__ void tsl_wgmma_wait() {\n"
    "    asm volatile(\"wgmma.wait_group.sync.aligned %0;\\n\" :: \"n\"(N) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void tsl_fence_reg(float &x) { asm volatile(\"\" : \"+f\"(x) :: \"memory\"); }\n"
    "static __device__ __forceinline__ void tsl_fence_reg(unsigned &x) { asm volatile(\"\" : \"+r\"(x) :: \"memory\"); }\n"
    "#endif\n";

/* ---- what a kernel uses ------------------------------------------------------------- */

/* Hopper instructions or warpgroups; with `atoms`, also an instruction
 * naming an sm_90 row (stmatrix), which needs sm_90a but none of the
 * Hopper machinery. */
static int block_uses_hopper(const tile_block *b, int atoms)
{
    for (int i = 0; b && i < b->n; i++) {
        const tile_stmt *s = b->items[i];
        if (s->kind == TILE_S_WARPGROUPS) return 1;
        if (s->kind == TILE_S_INSTR && tile_op_is_hopper(s->instr.op)) return 1;
        const target_atom *at =
            atoms && s->kind == TILE_S_INSTR && s->instr.atom ? target_atom_by_name(s->instr.atom) : NULL;
        if (at && at->sm >= 90) return 1;
        if (s->kind == TILE_S_INSTR && block_uses_hopper(s->instr.decomp, atoms)) return 1;
        if (block_uses_hopper(s->body, atoms) || block_uses_hopper(s->els, atoms)) return 1;
        if (s->kind == TILE_S_PIPELINE && block_uses_hopper(s->pipe.body, atoms)) return 1;
    }
    return 0;
}

int cg_hopper_used(const tile_kernel *k) { return block_uses_hopper(k->body, 0); }
int cg_hopper_block_used(const tile_block *b) { return block_uses_hopper(b, 0); }
int cg_sm90_needed(const tile_kernel *k) { return block_uses_hopper(k->body, 1); }

/* Warpgroup instances of the kernel (1 when it has no warpgroups): each has
 * its own scratch area. */
static int block_instances(const tile_block *b)
{
    int n = 1;
    for (int i = 0; b && i < b->n; i++) {
        const tile_stmt *s = b->items[i];
        int m = 1;
        if (s->kind == TILE_S_WARPGROUPS) {
            m = 0;
            for (int r = 0; r < s->nroles; r++) m += s->roles[r].count;
        } else {
            int a = block_instances(s->body), e = block_instances(s->els);
            m = a > e ? a : e;
        }
        if (m > n) n = m;
    }
    return n;
}

int cg_hopper_instances(const tile_kernel *k) { return block_instances(k->body); }

/* ---- TMA boxes and tensor maps -------------------------------------------------------- */

/* A TMA instruction's geometry: the shared side (tensor, leading slice
 * indices) and global side (tensor), the box in the global tensor's rank,
 * and how the innermost dim splits into swizzle-wide chunks. */
typedef struct tma_geo {
    const tile_operand *gop, *sop;
    const tile_value *g, *s;
    int nlead;                   /* slice indices on the shared side */
    int rank;                    /* = the global tensor's rank */
    int64_t box[5];              /* full box, outermost first (leading 1s) */
    int64_t sdims[CG_MAX_RANK];
    int swizzle;                 /* bytes: 0, 32, 64, 128 */
    int64_t chunk;               /* elements of the innermost dim per hardware box */
    int nchunks;
    int esize;
} tma_geo;

static int tma_geometry(const tile_instr *in, tma_geo *t, char *why, size_t nwhy)
{
    memset(t, 0, sizeof *t);
    int load = in->op == TILE_I_TMA_LOAD;
    t->gop = load ? &in->args[0] : &in->dst;
    t->sop = load ? &in->dst : &in->args[0];
    t->g = t->gop->v;
    t->s = t->sop->v;
    if (!t->g || !t->s) {
        snprintf(why, nwhy, "operands are not tensors");
        return 0;
    }
    t->nlead = t->sop->nsteps ? t->sop->steps[0].n : 0;
    t->rank = t->g->type.rank;
    t->esize = t->g->type.dt.bits / 8;
    int sr = t->s->type.rank, br = sr - t->nlead;
    for (int i = 0; i < sr; i++)
        if (!tile_expr_const(t->s->type.dims[i], &t->sdims[i])) {
            snprintf(why, nwhy, "'%s' needs constant dims", t->s->name);
            return 0;
        }
    if (br < 1 || br > t->rank || t->rank > 5) {
        snprintf(why, nwhy, "a rank-%d box of the rank-%d '%s'", br, t->rank, t->g->name);
        return 0;
    }
    for (int d = 0; d < t->rank; d++) {
        int j = d - (t->rank - br);
        t->box[d] = j >= 0 ? t->sdims[t->nlead + j] : 1;
    }
    const tile_layout *L = t->s->type.layout;
    t->swizzle = L && L->v.kind == LAYOUT_VALUE_DATA && L->v.data.sw.b ? 16 << L->v.data.sw.b : 0;
    int64_t row = t->box[t->rank - 1] * t->esize;
    t->chunk = t->box[t->rank - 1];
    t->nchunks = 1;
    if (t->swizzle && row > t->swizzle) {
        if (row % t->swizzle) {
            snprintf(why, nwhy, "a box row of %lld bytes does not split into %d-byte swizzle rows", (long long)row,
                     t->swizzle);
            return 0;
        }
        t->chunk = t->swizzle / t->esize;
        t->nchunks = (int)(row / t->swizzle);
    }
    return 1;
}

/* Every distinct (tensor, box, swizzle) of the kernel's TMA instructions,
 * in program order; `guarded` when every use is in the then-arm of an `if`
 * with an else arm (the pipeline's size branch, whose else arm copies with
 * cp.async when the rows are not 16-byte aligned). */
static void tmaps_walk(const tile_kernel *k, const tile_block *b, int guarded, cg_cuda_tmap *out, int max, int *n)
{
    for (int i = 0; b && i < b->n; i++) {
        const tile_stmt *s = b->items[i];
        if (s->kind == TILE_S_INSTR && (s->instr.op == TILE_I_TMA_LOAD || s->instr.op == TILE_I_TMA_STORE)) {
            tma_geo t;
            char why[160];
            if (!tma_geometry(&s->instr, &t, why, sizeof why)) continue;
            cg_cuda_tmap m;
            memset(&m, 0, sizeof m);
            m.param = -1;
            for (int p = 0; p < k->nparams; p++)
                if (k->params[p] == t.g) m.param = p;
            m.rank = t.rank;
            for (int d = 0; d < t.rank; d++) m.box[d] = t.box[d];
            m.box[t.rank - 1] = t.chunk;
            m.swizzle = t.swizzle;
            m.esize = t.esize;
            m.dtype = t.g->type.dt;
            int found = 0;
            for (int j = 0; j < *n && j < max; j++) {
                m.guarded = out[j].guarded;
                if (!memcmp(&out[j], &m, sizeof m)) found = 1, out[j].guarded &= guarded;
            }
            if (!found) {
                m.guarded = guarded;
                if (*n < max) out[*n] = m;
                (*n)++;
            }
        }
        int branch = s->kind == TILE_S_IF && s->els && s->els->n > 0;
        tmaps_walk(k, s->body, guarded || branch, out, max, n);
        tmaps_walk(k, s->els, guarded, out, max, n);
        for (int r = 0; r < s->nroles; r++) tmaps_walk(k, s->roles[r].body, guarded, out, max, n);
    }
}

int cg_cuda_tmaps(const tile_kernel *k, cg_cuda_tmap *out, int max)
{
    int n = 0;
    tmaps_walk(k, k->body, 0, out, max, &n);
    return n;
}

static int tmap_index(cg *c, const tma_geo *t)
{
    cg_cuda_tmap all[CG_MAX_TMAPS];
    int n = cg_cuda_tmaps(c->k, all, CG_MAX_TMAPS);
    for (int j = 0; j < n && j < CG_MAX_TMAPS; j++) {
        const cg_cuda_tmap *m = &all[j];
        if (m->param < 0 || c->k->params[m->param] != t->g || m->swizzle != t->swizzle) continue;
        int same = m->rank == t->rank;
        for (int d = 0; same && d < t->rank; d++)
            same = m->box[d] == (d == t->rank - 1 ? t->chunk : t->box[d]);
        if (same) return j;
    }
    return -1;
}

/* ---- addresses ---------------------------------------------------------------------------- */

/* "tsl_saddr(tsl_smem + BYTES)" of shared tensor v at the operand's
 * anchor (leading indices given, the rest + `extra`), unswizzled. */
static void shared_addr(cg *c, strbuf *sb, const tile_operand *o, const int64_t *extra)
{
    const tile_value *v = o->v;
    int r = v->type.rank;
    char *co[CG_MAX_RANK] = {0};
    strbuf parts[CG_MAX_RANK];
    memset(parts, 0, sizeof parts);
    int n = o->nsteps ? o->steps[0].n : 0;
    for (int i = 0; i < r; i++) {
        if (i < n) {
            sb_puts(&parts[i], "(");
            cg_expr(c, &parts[i], o->steps[0].idx[i]);
            sb_puts(&parts[i], ")");
        } else {
            sb_puts(&parts[i], "(I)0");
        }
        if (extra && extra[i]) sb_printf(&parts[i], " + %lld", (long long)extra[i]);
        co[i] = (char *)sb_str(&parts[i]);
    }
    strbuf off = {0};
    cg_shared_off_plain(c, &off, v, co);
    sb_printf(sb, "tsl_saddr(tsl_smem + %lld + (%s) * %d)", (long long)c->soff[v->id], sb_str(&off),
              cg_esize(v->type.dt));
    sb_free(&off);
    for (int i = 0; i < r; i++) sb_free(&parts[i]);
}

/* The barrier operand's shared address (element 0 of the view). */
static void bar_addr(cg *c, strbuf *sb, const tile_operand *o) { shared_addr(c, sb, o, NULL); }

/* ---- instructions --------------------------------------------------------------------------- */

static void emit_mbar_init(cg *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    const tile_operand *b = &in->args[0];
    strbuf cnt = {0};
    cg_expr(c, &cnt, in->args[1].scalar);
    cg_line(c, "if (tid == 0) {");
    c->ind++;
    if (b->nsteps && b->steps[0].n == b->v->type.rank) {
        strbuf a = {0};
        bar_addr(c, &a, b);
        cg_line(c, "tsl_mbar_init(%s, (unsigned)(%s));", sb_str(&a), sb_str(&cnt));
        sb_free(&a);
    } else {
        int64_t n = tile_type_numel(&b->v->type);
        cg_line(c, "for (int i = 0; i < %lld; i++) tsl_mbar_init(tsl_saddr(tsl_smem + %lld) + 8 * i, (unsigned)(%s));",
                (long long)n, (long long)c->soff[b->v->id], sb_str(&cnt));
    }
    cg_line(c, "tsl_mbar_init_fence();");
    c->ind--;
    cg_line(c, "}");
    sb_free(&cnt);
}

static void emit_tma(cg *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    tma_geo t;
    char why[200];
    if (!tma_geometry(in, &t, why, sizeof why)) {
        cg_err(c, TSL_ERR_UNAVAILABLE, "%s: %s", tile_op_info_of(in->op)->name, why);
        return;
    }
    int mi = tmap_index(c, &t);
    if (mi < 0) {
        cg_err(c, TSL_ERR_INTERNAL, "tma: no tensor map for '%s'", t.g->name);
        return;
    }
    gview gv;
    if (cg_view(c, t.gop, &gv)) return;
    int load = in->op == TILE_I_TMA_LOAD;
    strbuf bar = {0}, mask = {0};
    if (load) bar_addr(c, &bar, &in->args[1]);
    if (load && in->mcast) cg_expr(c, &mask, in->mcast);
    /* the chunks' shared offsets: each must be a dense row-major
     * [rows x chunk] block, as the hardware writes it */
    int sr = t.s->type.rank;
    cg_line(c, "if (tid == 0) {");
    c->ind++;
    for (int j = 0; j < t.nchunks && !c->st; j++) {
        int64_t extra[CG_MAX_RANK] = {0};
        extra[sr - 1] = j * t.chunk;
        strbuf addr = {0};
        shared_addr(c, &addr, t.sop, extra);
        strbuf coords = {0};
        for (int d = t.rank - 1; d >= 0; d--) {
            sb_printf(&coords, "%s\"r\"((int)(%s", d == t.rank - 1 ? "" : ", ", gv.off[d]);
            if (d == t.rank - 1 && j) sb_printf(&coords, " + %lld", (long long)(j * t.chunk));
            sb_puts(&coords, "))");
        }
        if (load && in->mcast)
            cg_line(c, "TSL_TMA_LOAD_MC(%d, %s, tsl_tm%d, %s, %s, %s);", t.rank, sb_str(&addr), mi, sb_str(&bar),
                    sb_str(&mask), sb_str(&coords));
        else if (load)
            cg_line(c, "TSL_TMA_LOAD(%d, %s, tsl_tm%d, %s, %s);", t.rank, sb_str(&addr), mi, sb_str(&bar),
                    sb_str(&coords));
        else
            cg_line(c, "TSL_TMA_STORE(%d, %s, tsl_tm%d, %s);", t.rank, sb_str(&addr), mi, sb_str(&coords));
        sb_free(&addr);
        sb_free(&coords);
    }
    c->ind--;
    cg_line(c, "}");
    /* the chunks must sit where the layout puts them */
    const tile_layout *L = t.s->type.layout;
    if (L && L->v.kind == LAYOUT_VALUE_DATA && t.nchunks >= 1) {
        layout plain = L->v.data;
        plain.sw = (layout_swizzle){0, 0, 0};
        int64_t rows = 1;
        for (int d = t.nlead; d < sr - 1; d++) rows *= t.sdims[d];
        for (int j = 0; j < t.nchunks && !c->st; j++) {
            int64_t co[CG_MAX_RANK] = {0};
            co[sr - 1] = j * t.chunk;
            int64_t base = layout_eval_coord(&plain, co, sr);
            if ((base * t.esize) % 128) {
                cg_err(c, TSL_ERR_UNAVAILABLE, "tma: box %d of '%s' starts %lld bytes in, not on 128 bytes", j,
                       t.s->name, (long long)(base * t.esize));
                break;
            }
            for (int64_t r = 0; r < rows && !c->st; r++)
                for (int64_t e = 0; e < t.chunk; e += t.chunk > 1 ? t.chunk - 1 : 1) {
                    int64_t rc = r;
                    for (int d = sr - 2; d >= t.nlead; d--) {
                        co[d] = rc % t.sdims[d];
                        rc /= t.sdims[d];
                    }
                    co[sr - 1] = j * t.chunk + e;
                    if (layout_eval_coord(&plain, co, sr) - base != r * t.chunk + e) {
                        cg_err(c, TSL_ERR_UNAVAILABLE,
                               "tma: '%s' is not laid out as %lld-element rows the copy engine writes "
                               "(box %d, row %lld)",
                               t.s->name, (long long)t.chunk, j, (long long)r);
                        break;
                    }
                    if (t.chunk == 1) break;
                }
        }
    }
    sb_free(&bar);
    sb_free(&mask);
    cg_view_free(&gv);
}

/* f16 accumulators. wgmma keeps two f16 sums in each 32-bit register
 * (locals 2i and 2i + 1 of the f32 fragment's order), so an f16
 * accumulator has a packed shadow NAME_hd beside its halves and a flag
 * NAME_hf: the first wgmma after the halves were last the truth packs
 * them (hf 0 -> 1); wgmma chains on the shadow while groups are in flight;
 * wgmma_wait 0 unpacks it (hf 1 -> 0). Between a wgmma and its wait 0 the
 * program reads and writes the accumulator only through wgmma (the
 * verifier's and the interpreter's rule), so the halves are the truth
 * whenever anything else sees them. */
static int is_f16_acc(const tile_block *b, const tile_value *v)
{
    for (int i = 0; b && i < b->n; i++) {
        const tile_stmt *s = b->items[i];
        if (s->kind == TILE_S_INSTR && s->instr.op == TILE_I_WGMMA && s->instr.nargs == 3 &&
            s->instr.args[2].v == v)
            return 1;
        if (is_f16_acc(s->body, v) || is_f16_acc(s->els, v)) return 1;
        for (int r = 0; r < s->nroles; r++)
            if (is_f16_acc(s->roles[r].body, v)) return 1;
    }
    return 0;
}

void cg_hopper_acc_decl(cg *c, const tile_value *v, int64_t locals)
{
    if (v->type.dt.kind != TILE_DT_FLOAT || v->type.dt.bits != 16 || !is_f16_acc(c->k->body, v)) return;
    if (c->nhaccs >= CG_MAX_ACCS) return (void)cg_err(c, TSL_ERR_UNAVAILABLE, "more than %d f16 wgmma accumulators",
                                                      CG_MAX_ACCS);
    c->haccs[c->nhaccs++] = v;
    const char *n = cg_name(c, v);
    cg_line(c, "unsigned %s_hd[%lld];", n, (long long)(locals / 2));
    cg_line(c, "int %s_hf = 0;", n);
}

static int f16_acc_declared(const cg *c, const tile_value *v)
{
    for (int i = 0; i < c->nhaccs; i++)
        if (c->haccs[i] == v) return 1;
    return 0;
}

static void emit_wgmma(cg *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    const tile_operand *ao = &in->args[0], *bo = &in->args[1];
    const tile_value *cv = in->args[2].v, *a = ao->v, *b = bo->v;
    int64_t N, K;
    if (!tile_expr_const(cv->type.dims[1], &N)) return (void)cg_err(c, TSL_ERR_SHAPE, "wgmma: N");
    int rb = b->type.rank;
    if (!tile_expr_const(b->type.dims[rb - 2], &K)) return (void)cg_err(c, TSL_ERR_SHAPE, "wgmma: K");
    if (a->type.space == TILE_REGISTER && !tile_expr_const(a->type.dims[1], &K))
        return (void)cg_err(c, TSL_ERR_SHAPE, "wgmma: K");
    const char *ab = a->type.dt.exp == 8 ? "bf16" : "f16";
    int h = cv->type.dt.bits == 16;
    if (h && strcmp(ab, "f16"))
        return (void)cg_err(c, TSL_ERR_UNAVAILABLE, "wgmma: an f16 accumulator needs f16 operands, not %s", ab);
    if (h && !f16_acc_declared(c, cv))
        return (void)cg_err(c, TSL_ERR_UNAVAILABLE,
                            "wgmma: the f16 accumulator '%s' must be made by an alloc in the kernel", cv->name);
    /* the row selection gave it (target/sm90.c) is what prints */
    const target_atom *at = target_atom_of(in);
    if (!at || at->kind != TARGET_K_WGMMA || at->n != N || !at->ptx ||
        at->dtype[TARGET_D] != (h ? TSL_DTYPE_F16 : TSL_DTYPE_F32) ||
        at->dtype[TARGET_A] != (strcmp(ab, "f16") ? TSL_DTYPE_BF16 : TSL_DTYPE_F16))
        return (void)cg_err(c, TSL_ERR_INTERNAL, "wgmma: %s", at ? "the selected row does not fit it"
                                                                  : "no atom was selected for it");
    char why[256];
    tile_wgmma_smem sa, sb_;
    int areg = a->type.space == TILE_REGISTER;
    if (!areg && !tile_wgmma_smem_of(&a->type, a->type.rank - 2, 64, K, &sa, why, sizeof why))
        return (void)cg_err(c, TSL_ERR_UNAVAILABLE, "wgmma: A: %s", why);
    if (!tile_wgmma_smem_of(&b->type, rb - 1, N, K, &sb_, why, sizeof why))
        return (void)cg_err(c, TSL_ERR_UNAVAILABLE, "wgmma: B: %s", why);
    /* remember the accumulator: wgmma_wait fences its registers */
    int known = 0;
    for (int i = 0; i < c->naccs; i++) known |= c->accs[i] == cv;
    if (!known && c->naccs < CG_MAX_ACCS) c->accs[c->naccs++] = cv;
    const char *cn = cg_name(c, cv);
    char cname[96];
    snprintf(cname, sizeof cname, "%s", cn);
    cg_line(c, "{");
    c->ind++;
    strbuf addr = {0};
    if (!areg) {
        shared_addr(c, &addr, ao, NULL);
        cg_line(c, "const unsigned long long da = tsl_wgmma_desc(%s, %lld, %lld, %d);", sb_str(&addr),
                (long long)sa.lbo, (long long)sa.sbo, sa.swizzle_bytes == 128 ? 1 : sa.swizzle_bytes == 64 ? 2 : 3);
        sb_free(&addr);
    }
    shared_addr(c, &addr, bo, NULL);
    cg_line(c, "const unsigned long long db = tsl_wgmma_desc(%s, %lld, %lld, %d);", sb_str(&addr),
            (long long)sb_.lbo, (long long)sb_.sbo, sb_.swizzle_bytes == 128 ? 1 : sb_.swizzle_bytes == 64 ? 2 : 3);
    sb_free(&addr);
    /* per k16 step: the start address moves by the layout's offset of (0, 16 s) */
    layout pa, pb;
    if (!areg) {
        pa = a->type.layout->v.data;
        pa.sw = (layout_swizzle){0, 0, 0};
    }
    pb = b->type.layout->v.data;
    pb.sw = (layout_swizzle){0, 0, 0};
    int nd = (int)(h ? N / 4 : N / 2);
    /* a register A is packed into 32-bit pairs before the asm statements,
     * then fenced: PTX wants A's registers written before a wgmma.fence,
     * and a pack between the fence and each wgmma made ptxas insert a
     * warpgroup.arrive before every one (C7519; each its own scoreboard
     * group, the chain serialised) */
    /* an f16 accumulator's packed shadow is written first: PTX wants
     * every register a wgmma reads written before its fence */
    if (h) {
        cg_line(c, "if (!%s_hf) {", cname);
        cg_line(c, "    for (int r = 0; r < %d; r++) %s_hd[r] = tsl_pack2(%s[2 * r], %s[2 * r + 1]);", nd, cname,
                cname, cname);
        cg_line(c, "    %s_hf = 1;", cname);
        cg_line(c, "}");
    }
    if (areg) {
        const char *an = cg_name(c, a);
        cg_line(c, "unsigned %s_ra[%lld];", cname, (long long)(K / 4));
        cg_line(c, "for (int r = 0; r < %lld; r++) %s_ra[r] = tsl_pack2(%s[2 * r], %s[2 * r + 1]);", (long long)(K / 4),
                cname, an, an);
        cg_line(c, "tsl_wgmma_fence();");
    }
    for (int64_t ks = 0; ks < K / 16 && !c->st; ks++) {
        int64_t ca[CG_MAX_RANK] = {0}, cb[CG_MAX_RANK] = {0};
        int64_t offa = 0, offb;
        if (!areg) {
            ca[a->type.rank - 1] = 16 * ks;
            offa = layout_eval_coord(&pa, ca, a->type.rank) - layout_eval_coord(&pa, (int64_t[CG_MAX_RANK]){0}, a->type.rank);
        }
        cb[rb - 2] = 16 * ks;
        offb = layout_eval_coord(&pb, cb, rb) - layout_eval_coord(&pb, (int64_t[CG_MAX_RANK]){0}, rb);
        strbuf asmb = {0};
        sb_printf(&asmb, "asm volatile(\"%s {", at->ptx);
        for (int i = 0; i < nd; i++) sb_printf(&asmb, "%s%%%d", i ? ", " : "", i);
        if (areg)
            sb_printf(&asmb, "}, {%%%d, %%%d, %%%d, %%%d}, %%%d, 1, 1, 1, %d;\\n\"", nd, nd + 1, nd + 2, nd + 3, nd + 4,
                      sb_.mn_major);
        else
            sb_printf(&asmb, "}, %%%d, %%%d, 1, 1, 1, %d, %d;\\n\"", nd, nd + 1, sa.mn_major, sb_.mn_major);
        sb_puts(&asmb, " : ");
        for (int i = 0; i < nd; i++)
            sb_printf(&asmb, "%s\"%s\"(%s%s[%d])", i ? ", " : "", h ? "+r" : "+f", cname, h ? "_hd" : "", i);
        sb_puts(&asmb, " : ");
        if (areg) {
            for (int r = 0; r < 4; r++) sb_printf(&asmb, "\"r\"(%s_ra[%lld]), ", cname, (long long)(4 * ks + r));
        } else {
            sb_printf(&asmb, "\"l\"(da + %lld), ", (long long)(offa * cg_esize(a->type.dt) >> 4));
        }
        sb_printf(&asmb, "\"l\"(db + %lld));", (long long)(offb * cg_esize(b->type.dt) >> 4));
        cg_line(c, "%s", sb_str(&asmb));
        sb_free(&asmb);
    }
    c->ind--;
    cg_line(c, "}");
    (void)s;
}

void cg_hopper_instr(cg *c, const tile_stmt *s)
{
    const tile_instr *in = &s->instr;
    strbuf a = {0}, e = {0};
    int64_t n = 0;
    switch (in->op) {
    case TILE_I_MBAR_INIT: emit_mbar_init(c, s); break;
    case TILE_I_MBAR_ARRIVE:
        bar_addr(c, &a, &in->args[0]);
        if (in->bytes) cg_line(c, "if (tid == 0) tsl_mbar_arrive_tx(%s, %lldu);", sb_str(&a), (long long)in->bytes);
        else if (in->cta) {
            cg_expr(c, &e, in->cta);
            cg_line(c, "if (tid == 0) tsl_mbar_arrive_cta(%s, (unsigned)(%s));", sb_str(&a), sb_str(&e));
        } else cg_line(c, "if (tid == 0) tsl_mbar_arrive(%s);", sb_str(&a));
        break;
    case TILE_I_CLUSTER_SYNC: cg_line(c, "tsl_cluster_sync();"); break;
    case TILE_I_MBAR_WAIT:
        bar_addr(c, &a, &in->args[0]);
        cg_expr(c, &e, in->args[1].scalar);
        cg_line(c, "tsl_mbar_wait(%s, (unsigned)(%s) & 1u);", sb_str(&a), sb_str(&e));
        break;
    case TILE_I_TMA_LOAD:
    case TILE_I_TMA_STORE: emit_tma(c, s); break;
    case TILE_I_BULK_COMMIT: cg_line(c, "if (tid == 0) tsl_bulk_commit();"); break;
    case TILE_I_BULK_WAIT:
        if (!tile_expr_const(in->args[0].scalar, &n)) n = 0;
        cg_line(c, "if (tid == 0) tsl_bulk_wait<%lld>();", (long long)n);
        cg_sync(c);
        break;
    case TILE_I_FENCE_ASYNC: cg_line(c, "tsl_fence_async();"); break;
    case TILE_I_WGMMA: emit_wgmma(c, s); break;
    case TILE_I_WGMMA_FENCE: cg_line(c, "tsl_wgmma_fence();"); break;
    case TILE_I_WGMMA_COMMIT: cg_line(c, "tsl_wgmma_commit();"); break;
    case TILE_I_WGMMA_WAIT:
        if (!tile_expr_const(in->args[0].scalar, &n)) n = 0;
        cg_line(c, "tsl_wgmma_wait<%lld>();", (long long)n);
        /* no read of an accumulator may move above the wait; an f16 one
         * is unpacked once no group is left in flight */
        for (int i = 0; i < c->naccs; i++) {
            int64_t locals = c->accs[i]->type.layout ? c->accs[i]->type.layout->v.dist.locals : 0;
            const char *an = cg_name(c, c->accs[i]);
            if (c->accs[i]->type.dt.bits != 16) {
                cg_line(c, "for (int r = 0; r < %lld; r++) tsl_fence_reg(%s[r]);", (long long)locals, an);
                continue;
            }
            cg_line(c, "for (int r = 0; r < %lld; r++) tsl_fence_reg(%s_hd[r]);", (long long)(locals / 2), an);
            if (n) continue;
            cg_line(c, "if (%s_hf) {", an);
            cg_line(c, "    for (int r = 0; r < %lld; r++) {", (long long)(locals / 2));
            cg_line(c, "        %s[2 * r] = tsl_from_bits<tsl_f16>((unsigned short)(%s_hd[r] & 0xffffu));", an, an);
            cg_line(c, "        %s[2 * r + 1] = tsl_from_bits<tsl_f16>((unsigned short)(%s_hd[r] >> 16));", an, an);
            cg_line(c, "    }");
            cg_line(c, "    %s_hf = 0;", an);
            cg_line(c, "}");
        }
        break;
    default: cg_err(c, TSL_ERR_INTERNAL, "not a Hopper instruction"); break;
    }
    sb_free(&a);
    sb_free(&e);
}

/* ---- warpgroups ------------------------------------------------------------------------------ */

/* setmaxnreg raises or lowers from the kernel's cap at entry: what
 * __launch_bounds__(threads, min_blocks) leaves each thread. */
static int entry_regs(const tile_kernel *k)
{
    int blocks = k->min_blocks > 0 ? k->min_blocks : 1;
    int r = 65536 / (k->threads * blocks);
    r = r / 8 * 8;
    return r > 255 ? 255 : r;
}

void cg_hopper_warpgroups(cg *c, const tile_stmt *s, void (*emit_block)(cg *, const tile_block *))
{
    cg_line(c, "{");
    c->ind++;
    cg_line(c, "const int tsl_wgi = __shfl_sync(0xffffffffu, (int)(threadIdx.x / 128), 0);");
    int base = 0, saved_threads = c->threads, saved_naccs = c->naccs, saved_role = c->in_role;
    for (int r = 0; r < s->nroles && !c->st; r++) {
        const tile_role *ro = &s->roles[r];
        cg_line(c, "%sif (tsl_wgi >= %d && tsl_wgi < %d) { /* role %s */", r ? "else " : "", base, base + ro->count,
                ro->name);
        c->ind++;
        if (ro->regs) {
            int cap = entry_regs(c->k);
            cg_line(c, "asm volatile(\"setmaxnreg.%s.sync.aligned.u32 %d;\\n\" ::: \"memory\");",
                    ro->regs < cap ? "dec" : "inc", ro->regs);
        }
        cg_line(c, "const I tid = (I)(threadIdx.x %% 128); (void)tid;");
        cg_line(c, "unsigned char *const tsl_scr = tsl_smem + TSL_SCRATCH_BASE + tsl_wgi * TSL_SCRATCH_SIZE;"
                   " (void)tsl_scr;");
        if (ro->index) cg_line(c, "const I %s = (I)(tsl_wgi - %d); (void)%s;", cg_name(c, ro->index), base,
                               cg_name(c, ro->index));
        c->threads = 128;
        c->in_role = 1;
        c->naccs = 0;
        emit_block(c, ro->body);
        c->ind--;
        cg_line(c, "}");
        base += ro->count;
    }
    c->threads = saved_threads;
    c->in_role = saved_role;
    c->naccs = saved_naccs;
    c->ind--;
    cg_line(c, "}");
}

void cg_sync(cg *c)
{
    if (c->in_role) cg_line(c, "tsl_bar_sync(tsl_wgi + 1, 128);");
    else cg_line(c, "__syncthreads();");
}
