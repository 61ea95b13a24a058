/* options.h — the strategies' options: the tuning space as data
 * (DESIGN.md §3, §6). Each strategy that has choices has an options struct;
 * one table (options.c) describes every parameter — its key, the
 * strategy and targets it applies to, its default and the values a search
 * draws from —; a validity check says why a candidate is rejected; a
 * canonical text (only what differs from the defaults, keys in table
 * order) is what the cache key holds. The library reads no environment:
 * the CLI, the API and the tuner pass options. */
#ifndef TSL_SCHED_OPTIONS_H
#define TSL_SCHED_OPTIONS_H

#include <stddef.h>

#include "base/base.h"

/* The contraction strategy's block plan (contract.c). bm x bn is the block
 * tile of C, bk the depth of a k step; the f32 plans give each thread a
 * tm x tn micro-tile (threads = (bm/tm)(bn/tn)), the mma plan has wm x wn
 * warps; pad elements per shared row; stages of the copy pipeline. */
typedef struct sched_contract_options {
    int bm, bn, bk;
    int tm, tn; /* f32 (cpu, fma) */
    int wm, wn; /* mma */
    int pad;    /* mma: elements of padding per shared row */
    int stages;
} sched_contract_options;

typedef struct sched_options {
    int generic;                /* 1: every group through the generic strategy */
    int conv;                   /* the CPU convolution plan (lower.c) for two-operand f32 reductions */
    int full_reductions;        /* the two-launch plan of reductions to a scalar (lower.c) */
    int micro_kernels;          /* the CPU plans ask for the micro-kernel atoms (target/cpu.c) */
    int threads;                /* CPU: threads a run uses (0: the pool's) */
    int splitk;                 /* GPU contraction with M <= 64: K split in this many
                                 * slices (0: from the SM count at run time, 1: never) */
    int splitk_bk;              /* the split-K pair's k step depth (f16/bf16, M <= 64 on the GPU) */
    int chains;                 /* 0: merged chains (attention, GEMM chains) as the groups before the merge */
    int qmma;                   /* the quantized GEMV on tensor cores (mma.q): 1 uint1/2/4 (and uint8 on sm_90),
                                 * 2 every width, 0 never */
    int qprefetch;              /* the tensor-core GEMV loads X and the scales a group ahead: 1 where a group
                                 * is not two loads of W, 2 always, 0 never */
    int qload;                  /* the tensor-core GEMV: bytes of W a lane loads at once (0: 128 for uint4/uint8
                                 * on sm_90, else 64) */
    int qdequant;               /* the quantized GEMV's dequantization: 32 to f32, 16 to f16 pairs first,
                                 * 0: f16 for float weights, uint2 and uint4, f32 for the other integers */
    int chain_bm;               /* the GEMM chain's tensor-core plan: rows a block (64: 8 warps,
                                 * one block an SM; 32: 4 warps, 80 KB, two an SM) */
    int lstm;                   /* 0: an LSTM cell as the groups before the merge (also off with chains=0) */
    int lstm_bm, lstm_bh;       /* the LSTM cell's tensor-core plan: rows b and columns h a block
                                 * (each h with its four gates: 4 x bh accumulator columns) */
    int lstm_cpu_bm;            /* the LSTM cell's CPU plan: rows a block (48 or 96) */
    sched_contract_options cpu; /* f32 contraction on the CPU target */
    sched_contract_options fma; /* f32 contraction on a GPU */
    sched_contract_options mma; /* f16/bf16 contraction on a GPU (mma.sync) */
    int attn_bn_wide;           /* sm_90a attention: K/V rows a block past head dim 128 (64, 80) */
    int attn_pingpong;          /* sm_90a attention: the two consumers issue their products in turns (0, 1;
                                 * 2: where e > 64) */
    int attn_persistent;        /* sm_90a attention: a block a multiprocessor over the tiles (0 never, 1 short
                                 * K/V without a causal mask, 2 always) */
    int sm90_cluster;           /* sm_90a GEMM (the wide plan): blocks a cluster along M (1, 2) */
    int sm90_bn;                /* sm_90a GEMM, a bare product: columns of C a block (256, 192 or 128) */
    int sm90_group;             /* sm_90a GEMM: M-tiles (pairs in a cluster) down a column of the tile order */
    /* Not a tuning choice but a numerics one, so not in the table the tuner
     * searches: 1 lets f32 contractions on CUDA use tf32 tensor cores (A and
     * B rounded to 10 fraction bits). Off by default: f32 stays f32. Set by
     * tsl_program_set_allow_tf32 (the CLI's --allow-tf32); in the canonical
     * text, and so in the cache key, as a trailing "allow_tf32=1". */
    int allow_tf32;
} sched_options;

/* The built-in choices: what every strategy did before it had options. */
extern const sched_options sched_options_defaults;

/* One parameter of the space. */
typedef struct sched_option {
    const char *key;      /* "contract.cpu.bm" */
    const char *strategy; /* "contract", "conv", ...; "all": every strategy; "run": read when a plan runs */
    unsigned targets;     /* 1 << tsl_target it applies to */
    size_t offset;        /* of its int in sched_options */
    const int *values;    /* what a search draws from (TC: powers of two, divisors) */
    int nvalues;
    int lo, hi;           /* what a user may set */
    const char *help;
} sched_option;

const sched_option *sched_option_table(int *n);
const sched_option *sched_option_find(const char *key, size_t len);
int sched_option_get(const sched_options *o, const sched_option *p);
void sched_option_set(sched_options *o, const sched_option *p, int v);

/* The options as canonical text: "key=value" for each parameter that
 * differs from the default, in table order, joined by ','; "" for the
 * defaults. Appends to out. */
void sched_options_text(strbuf *out, const sched_options *o);
/* Parse "key=value,key=value" (whitespace allowed around the parts; a key
 * may repeat, the last wins) onto *o (start from the defaults). A bad key,
 * value or range is TSL_ERR_ARG naming it. "allow_tf32=0|1" sets
 * o->allow_tf32 (not a table parameter). */
tsl_status sched_options_parse(const char *text, sched_options *o, tsl_diag *d);

/* 0 when o is a plan the strategies can build for target t; else 1 with
 * the reason in why ("contract.cpu: 48 threads ((bm/tm)(bn/tn)) is not a
 * multiple of 16"). Parameters of other targets are not judged. */
int sched_options_check(const sched_options *o, tsl_target t, char *why, size_t n);

#endif
