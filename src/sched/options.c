/* options.c — the tuning space as one table (options.h): every parameter
 * of every strategy with its default, its values and its range; the
 * canonical text; the validity check. The defaults are the plans the
 * strategies chose before they had options (contract.c explains each). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sched/options.h"

const sched_options sched_options_defaults = {
    .generic = 0,
    .conv = 1,
    .full_reductions = 1,
    .micro_kernels = 1,
    .threads = 0,
    .splitk = 0,
    .splitk_bk = 64,
    .chains = 1,
    .qdequant = 0,
    .qmma = 1,
    .qprefetch = 1,
    .qload = 0,
    .chain_bm = 64,
    .lstm = 1,
    .lstm_bm = 128,
    .lstm_bh = 32,
    .lstm_cpu_bm = 96,
    .cpu = {.bm = 96, .bn = 128, .bk = 256, .tm = 6, .tn = 16, .pad = 16, .stages = 1},
    .fma = {.bm = 128, .bn = 128, .bk = 16, .tm = 8, .tn = 8, .pad = 4, .stages = 3},
    .mma = {.bm = 128, .bn = 128, .bk = 32, .wm = 2, .wn = 4, .pad = 8, .stages = 3},
    .attn_bn_wide = 80,
    .attn_pingpong = 2,
    .attn_persistent = 1,
    .sm90_cluster = 1,
    .sm90_group = 8,
    .sm90_bn = 256,
};

#define CPU (1u << TSL_TARGET_CPU)
#define GPU (1u << TSL_TARGET_CUDA)
#define V(...) (const int[]){__VA_ARGS__}, (int)(sizeof((const int[]){__VA_ARGS__}) / sizeof(int))
#define F(field) offsetof(sched_options, field)

static const sched_option params[] = {
    {"sched.generic", "all", CPU | GPU, F(generic), V(0, 1), 0, 1, "1: every group through the generic strategy"},
    {"sched.chains", "chains", CPU | GPU, F(chains), V(0, 1), 0, 1,
     "0: merged chains (attention, GEMM chains) as the groups before the merge"},
    {"chain.mma.bm", "chain", GPU, F(chain_bm), V(32, 64), 32, 64,
     "GEMM chain (f16/bf16): rows a block, 32 (4 warps, two blocks an SM) or 64 (8 warps)"},
    {"sched.lstm", "lstm", CPU | GPU, F(lstm), V(0, 1), 0, 1,
     "0: an LSTM cell as its groups before the merge (two products through memory, then the cell update)"},
    {"lstm.mma.bm", "lstm", GPU, F(lstm_bm), V(64, 128), 64, 128,
     "LSTM cell (f16/bf16): rows b a block, 64 (4 warps) or 128 (8 warps)"},
    {"lstm.mma.bh", "lstm", GPU, F(lstm_bh), V(32, 64), 32, 64,
     "LSTM cell (f16/bf16): columns h a block, each with its four gates (128 or 256 accumulator columns)"},
    {"lstm.cpu.bm", "lstm", CPU, F(lstm_cpu_bm), V(48, 96), 48, 96, "LSTM cell on the CPU: rows b a block (48 or 96)"},
    {"cpu.threads", "run", CPU, F(threads), V(0, 1, 2, 4, 8, 16, 32, 64), 0, 1024, "CPU threads a run uses (0: all)"},
    {"cpu.micro_kernels", "contract", CPU, F(micro_kernels), V(0, 1), 0, 1, "register-tile f32 micro-kernels"},
    {"conv.cpu", "conv", CPU, F(conv), V(0, 1), 0, 1, "the CPU plan for two-operand f32 reductions"},
    {"sched.full_reductions", "fullred", CPU | GPU, F(full_reductions), V(0, 1), 0, 1,
     "the two-launch plan of reductions to a scalar"},
    {"qmatmul.mma", "qmatmul", GPU, F(qmma), V(0, 1, 2), 0, 2,
     "the quantized GEMV (M < 16) on tensor cores (the dequantizing mma.q rows; uint1/2/4/8 W, f16 X, no zero "
     "points): 1 the widths measured faster (uint1, uint2, uint4; uint8 on sm_90), 2 every width it takes, 0 "
     "never (CUDA cores)"},
    {"qmatmul.prefetch", "qmatmul", GPU, F(qprefetch), V(0, 1, 2), 0, 2,
     "the quantized GEMV on tensor cores: X's block and the scales of the next group by cp.async (1 where a group "
     "is not two loads of W: uint1, uint8; 2 always; 0 never: plain loads at the group's start and end)"},
    {"qmatmul.load", "qmatmul", GPU, F(qload), V(0, 32, 64, 128), 0, 128,
     "the quantized GEMV on tensor cores: bytes of W a lane loads at once (0: 128 for uint4 and uint8 on sm_90, "
     "else 64; at least a k16 step's 8 x bits)"},
    {"qmatmul.dequant", "qmatmul", GPU, F(qdequant), V(0, 16, 32), 0, 32,
     "the streaming quantized GEMV's dequantization: 32 straight to f32, 16 through f16 pairs (lop3), "
     "0: f16 for float weights, uint2 and uint4, f32 for the other integers"},
    {"contract.cpu.bm", "contract", CPU, F(cpu.bm), V(16, 32, 48, 64, 96, 128, 192, 256), 16, 1024, "block rows of C"},
    {"contract.cpu.bn", "contract", CPU, F(cpu.bn), V(16, 32, 64, 128, 256), 16, 1024, "block columns of C"},
    {"contract.cpu.bk", "contract", CPU, F(cpu.bk), V(32, 64, 128, 256, 512), 1, 4096, "depth of a k step"},
    {"contract.cpu.tm", "contract", CPU, F(cpu.tm), V(1, 2, 3, 4, 6, 8), 1, 64, "a thread's rows"},
    {"contract.cpu.tn", "contract", CPU, F(cpu.tn), V(4, 8, 16, 32), 1, 64, "a thread's columns"},
    {"contract.cpu.stages", "contract", CPU, F(cpu.stages), V(1, 2), 1, 4, "copy pipeline stages"},
    {"contract.splitk", "contract", GPU, F(splitk), V(0, 1, 2, 4, 8, 16), 0, 32,
     "M <= 64 (and the quantized GEMV, on the CPU too, and the quantized tensor-core GEMM, M >= 16): K split in S "
     "slices, summed by a second kernel (0: S from the SM count; the quantized kernels' own defaults, from the "
     "sizes; 1: never)"},
    {"contract.splitk.bk", "contract", GPU, F(splitk_bk), V(32, 64), 16, 128,
     "the split-K pair (M <= 64, f16/bf16 on tensor cores): depth of a k step, the bytes of B a stage"},
    {"contract.fma.bm", "contract", GPU, F(fma.bm), V(32, 64, 128, 256), 8, 512, "block rows of C"},
    {"contract.fma.bn", "contract", GPU, F(fma.bn), V(32, 64, 128, 256), 8, 512, "block columns of C"},
    {"contract.fma.bk", "contract", GPU, F(fma.bk), V(8, 16, 32), 4, 256, "depth of a k step"},
    {"contract.fma.tm", "contract", GPU, F(fma.tm), V(2, 4, 8), 1, 16, "a thread's rows"},
    {"contract.fma.tn", "contract", GPU, F(fma.tn), V(4, 8), 1, 16, "a thread's columns"},
    {"contract.fma.stages", "contract", GPU, F(fma.stages), V(2, 3, 4), 1, 8, "cp.async pipeline stages"},
    {"contract.mma.bm", "contract", GPU, F(mma.bm), V(64, 128, 256), 16, 512, "block rows of C"},
    {"contract.mma.bn", "contract", GPU, F(mma.bn), V(64, 128, 256), 8, 512, "block columns of C"},
    {"contract.mma.bk", "contract", GPU, F(mma.bk), V(16, 32, 64), 16, 256, "depth of a k step"},
    {"contract.mma.wm", "contract", GPU, F(mma.wm), V(1, 2, 4), 1, 16, "warps along m"},
    {"contract.mma.wn", "contract", GPU, F(mma.wn), V(1, 2, 4, 8), 1, 16, "warps along n"},
    {"contract.mma.pad", "contract", GPU, F(mma.pad), V(0, 8), 0, 64, "padding per shared row (elements)"},
    {"contract.mma.stages", "contract", GPU, F(mma.stages), V(2, 3, 4), 1, 8, "cp.async pipeline stages"},
    {"attention.sm90.bn_wide", "attention", GPU, F(attn_bn_wide), V(64, 80), 64, 80,
     "sm_90a attention: K/V rows a block past head dim 128 (64 or 80)"},
    {"attention.sm90.pingpong", "attention", GPU, F(attn_pingpong), V(0, 1, 2), 0, 2,
     "sm_90a attention: the two consumer warpgroups issue their products in turns (FlashAttention-3's ping-pong); "
     "1 always, 0 never, 2 where the head dim e is past 64"},
    {"attention.sm90.persistent", "attention", GPU, F(attn_persistent), V(0, 1, 2), 0, 2,
     "sm_90a attention (head dim e <= 128): one block a multiprocessor looping over the query blocks, the next "
     "one's loads under this one's last product and store; 1: where K/V has at most 1024 rows and no causal mask, "
     "2: always, 0: never"},
    {"contract.sm90.cluster", "contract", GPU, F(sm90_cluster), V(1, 2), 1, 2,
     "sm_90a GEMM: blocks a cluster along M (2: each loads half of B and multicasts it to both)"},
    {"contract.sm90.bn", "contract", GPU, F(sm90_bn), V(128, 192, 256), 64, 256,
     "sm_90a GEMM (a bare product; with epilogue ops it is 128): columns of C a block, the wgmma's N; fewer "
     "columns, more tiles, a shorter last wave"},
    {"contract.sm90.group", "contract", GPU, F(sm90_group), V(1, 4, 8, 16), 1, 64,
     "sm_90a GEMM: M-tiles (a cluster's pairs) down a column of the persistent tile order"},
};

const sched_option *sched_option_table(int *n)
{
    *n = (int)TSL_COUNTOF(params);
    return params;
}

const sched_option *sched_option_find(const char *key, size_t len)
{
    for (size_t i = 0; i < TSL_COUNTOF(params); i++)
        if (strlen(params[i].key) == len && !strncmp(params[i].key, key, len)) return &params[i];
    return NULL;
}

int sched_option_get(const sched_options *o, const sched_option *p) { return *(const int *)((const char *)o + p->offset); }

void sched_option_set(sched_options *o, const sched_option *p, int v) { *(int *)((char *)o + p->offset) = v; }

void sched_options_text(strbuf *out, const sched_options *o)
{
    int first = 1;
    for (size_t i = 0; i < TSL_COUNTOF(params); i++) {
        int v = sched_option_get(o, &params[i]);
        if (v == sched_option_get(&sched_options_defaults, &params[i])) continue;
        sb_printf(out, "%s%s=%d", first ? "" : ",", params[i].key, v);
        first = 0;
    }
    if (o->allow_tf32 > 0) sb_puts(out, first ? "allow_tf32=1" : ",allow_tf32=1");
}

static const char tf32_key[] = "allow_tf32";

static const char *skip_space(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n') p++;
    return p;
}

tsl_status sched_options_parse(const char *text, sched_options *o, tsl_diag *d)
{
    for (const char *p = text ? text : ""; *(p = skip_space(p));) {
        size_t n = strcspn(p, ",");
        const char *eq = memchr(p, '=', n);
        size_t klen = eq ? (size_t)(eq - p) : n;
        while (klen && (p[klen - 1] == ' ' || p[klen - 1] == '\t')) klen--;
        if (klen == sizeof tf32_key - 1 && !strncmp(p, tf32_key, klen) && eq) {
            const char *v = skip_space(eq + 1);
            const char *e = skip_space(v + 1);
            if ((*v != '0' && *v != '1') || (e != p + n && *e != ',')) {
                diag_error(d, TSL_ERR_ARG, "option allow_tf32=%.*s: the value must be 0 or 1", (int)(p + n - v), v);
                return TSL_ERR_ARG;
            }
            o->allow_tf32 = *v == '1';
            p += n;
            if (*p == ',') p++;
            continue;
        }
        const sched_option *sp = sched_option_find(p, klen);
        if (!sp || !eq) {
            diag_error(d, TSL_ERR_ARG, "option '%.*s': %s (options are key=value; `tessel tune --space` lists the keys)",
                       (int)n, p, sp ? "needs a value" : "no such key");
            return TSL_ERR_ARG;
        }
        const char *v = skip_space(eq + 1);
        char *end;
        errno = 0;
        long val = strtol(v, &end, 10);
        end = (char *)skip_space(end);
        if (end == v || errno || (end != p + n && *end != ',') || val < sp->lo || val > sp->hi) {
            diag_error(d, TSL_ERR_ARG, "option %s=%.*s: the value must be an integer in [%d, %d]", sp->key,
                       (int)(p + n - v), v, sp->lo, sp->hi);
            return TSL_ERR_ARG;
        }
        sched_option_set(o, sp, (int)val);
        p += n;
        if (*p == ',') p++;
    }
    return TSL_OK;
}

/* The f32 plans (CPU and GPU): threads from the micro-tile. */
static int check_f32(const char *name, const sched_contract_options *c, int cpu, char *why, size_t n)
{
    if (c->bm % c->tm || c->bn % c->tn) {
        snprintf(why, n, "contract.%s: the block %dx%d is not a whole number of %dx%d thread tiles", name, c->bm,
                 c->bn, c->tm, c->tn);
        return 1;
    }
    int threads = (c->bm / c->tm) * (c->bn / c->tn), unit = cpu ? 16 : 32;
    if (threads < unit || threads > 1024 || threads % unit) {
        snprintf(why, n, "contract.%s: %d threads ((bm/tm)(bn/tn)) is not a multiple of %d in [%d, 1024]", name,
                 threads, unit, unit);
        return 1;
    }
    if (cpu && (c->bm % 16 || c->bn % 16)) {
        snprintf(why, n, "contract.cpu: bm %d and bn %d must be multiples of 16", c->bm, c->bn);
        return 1;
    }
    if (!cpu && c->bk % 4) {
        snprintf(why, n, "contract.fma: bk %d must be a multiple of 4 (16-byte copies)", c->bk);
        return 1;
    }
    return 0;
}

int sched_options_check(const sched_options *o, tsl_target t, char *why, size_t n)
{
    for (size_t i = 0; i < TSL_COUNTOF(params); i++) {
        int v = sched_option_get(o, &params[i]);
        if (v < params[i].lo || v > params[i].hi) {
            snprintf(why, n, "%s=%d is outside [%d, %d]", params[i].key, v, params[i].lo, params[i].hi);
            return 1;
        }
    }
    if (t == TSL_TARGET_CPU && o->lstm_cpu_bm != 48 && o->lstm_cpu_bm != 96) {
        snprintf(why, n, "lstm.cpu.bm: %d rows a block; the plan has 48 or 96", o->lstm_cpu_bm);
        return 1;
    }
    if (t == TSL_TARGET_CPU) return check_f32("cpu", &o->cpu, 1, why, n);
    if (t != TSL_TARGET_CUDA) return 0;
    if (o->chain_bm != 32 && o->chain_bm != 64) {
        snprintf(why, n, "chain.mma.bm: %d rows a block; the plan has 32 or 64", o->chain_bm);
        return 1;
    }
    if ((o->lstm_bm != 64 && o->lstm_bm != 128) || (o->lstm_bh != 32 && o->lstm_bh != 64)) {
        snprintf(why, n, "lstm.mma: bm=%d bh=%d; the plan has bm 64 or 128, bh 32 or 64", o->lstm_bm, o->lstm_bh);
        return 1;
    }
    if (o->sm90_bn % 64) {
        snprintf(why, n, "contract.sm90.bn=%d: a multiple of 64 (B's 128-byte swizzled boxes)", o->sm90_bn);
        return 1;
    }
    if (o->sm90_cluster == 2 && o->sm90_bn % 128) {
        snprintf(why, n, "contract.sm90.bn=%d with contract.sm90.cluster=2: each block of a pair loads half of B's "
                 "columns, whole 64-column boxes (bn 128 or 256)", o->sm90_bn);
        return 1;
    }
    if (o->attn_bn_wide != 64 && o->attn_bn_wide != 80) {
        snprintf(why, n, "attention.sm90.bn_wide=%d: 64 or 80", o->attn_bn_wide);
        return 1;
    }
    if (check_f32("fma", &o->fma, 0, why, n)) return 1;
    const sched_contract_options *m = &o->mma;
    if (m->bm % (16 * m->wm) || m->bn % (8 * m->wn) || m->bk % 16) {
        snprintf(why, n, "contract.mma: bm %d must be a multiple of 16*wm (%d), bn %d of 8*wn (%d), bk %d of 16",
                 m->bm, 16 * m->wm, m->bn, 8 * m->wn, m->bk);
        return 1;
    }
    if (32 * m->wm * m->wn > 1024) {
        snprintf(why, n, "contract.mma: %d warps is more than a block's 32", m->wm * m->wn);
        return 1;
    }
    /* the stages' shared tiles, f16, or f32 when tf32 is allowed (its plan
     * takes these shapes with 4-byte elements and at most pad of them a
     * row, contract.c): what pipeline expansion would refuse anyway */
    long es = o->allow_tf32 > 0 ? 4 : 2;
    long smem = (long)m->stages * ((long)m->bm * (m->bk + m->pad) + (long)m->bk * (m->bn + m->pad)) * es;
    if (smem > 227L * 1024) {
        snprintf(why, n, "contract.mma: %ld bytes of shared memory for %d stages (at most 232448 on sm_90)", smem,
                 m->stages);
        return 1;
    }
    if (o->splitk_bk % 16) {
        snprintf(why, n, "contract.splitk.bk: %d must be a multiple of 16", o->splitk_bk);
        return 1;
    }
    /* the split-K pair's stages: 32 rows of A, splitk.bk rows of B */
    smem = (long)m->stages * (32L * (o->splitk_bk + m->pad) + (long)o->splitk_bk * (m->bn + m->pad)) * es;
    if (smem > 227L * 1024) {
        snprintf(why, n, "contract.splitk.bk: %ld bytes of shared memory for %d stages of the split-K pair (at most "
                 "232448 on sm_90)", smem, m->stages);
        return 1;
    }
    return 0;
}
