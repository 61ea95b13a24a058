/* target.h — the hardware instructions ("atoms") tessel's targets have, as
 * table rows, and the lookups over them (DESIGN.md §4-5, docs/target.md).
 *
 * One row per instruction, in the spirit of CuTe's MMA and Copy traits: its
 * name as `atom NAME` spells it in the tile IR, what kind of instruction it
 * is, its shape, the thread group that issues it, its operands' layouts in
 * tessel's layout algebra (parsed once), memory spaces and dtypes, the
 * minimum architecture, how each generator prints it, and its semantics for
 * the tile interpreter. The tables are sm80.c, sm90.c and cpu.c; atom.c
 * holds the lookups and the reference semantics of the collective atoms
 * (the fragment-level mma, ldmatrix / stmatrix lane maps) that the tile
 * interpreter and the C generator both run.
 *
 * This header sits below the tile IR (it knows layouts and dtypes, not tile
 * instructions): the verifier and the interpreter read it. The selection
 * pass, which walks tile IR, is above it (select.h). */
#ifndef TSL_TARGET_H
#define TSL_TARGET_H

#include "base/base.h"
#include "layout/layout.h"

/* ---- what a row is ---------------------------------------------------------- */

typedef enum target_kind {
    TARGET_K_MMA,      /* warp-level mma.sync over register fragments */
    TARGET_K_WGMMA,    /* warpgroup-level wgmma.mma_async (A shared or registers, B shared) */
    TARGET_K_LDMATRIX, /* shared -> registers, 8x8 16-bit matrices, per warp */
    TARGET_K_STMATRIX, /* registers -> shared, the inverse */
    TARGET_K_CP_ASYNC, /* global -> shared, one chunk per thread, lands at the wait */
    TARGET_K_TMA,      /* cp.async.bulk.tensor: a whole box, one issuing thread */
    TARGET_K_VEC,      /* one thread's vector load or store */
    TARGET_K_COPY,     /* CPU: a transfer as C loops the C compiler vectorises */
    TARGET_K_UKR,      /* CPU: a register-blocked micro-kernel over a loop */
    TARGET_K_SCALAR,   /* the explicit fallback: a per-thread loop, one element at a time */
    TARGET_K_COUNT
} target_kind;

/* The tile interpreter dispatches on this. */
typedef enum target_sem {
    TARGET_SEM_MOVE,       /* the elements move unchanged: the instruction's own semantics */
    TARGET_SEM_ASYNC,      /* a move that lands only at the matching wait (cp.async) */
    TARGET_SEM_MMA,        /* D = A.B + C over the row's fragment layouts, f32 accumulation */
    TARGET_SEM_WGMMA,      /* the same per warpgroup, results only after wgmma.wait_group */
    TARGET_SEM_LDMATRIX,   /* collective: lane rows in, the fragment of layout[3] out */
    TARGET_SEM_STMATRIX,   /* collective: the fragment of layout[3] in, lane rows out */
    TARGET_SEM_TMA,        /* a box that lands when its mbarrier's transaction count completes */
    TARGET_SEM_OUTER_ACC,  /* micro-kernel: acc += a (column) x b (row) per loop step */
    TARGET_SEM_DEQUANT_ACC,/* micro-kernel: acc += dequantize(packed bytes) * x per loop step */
    TARGET_SEM_COUNT
} target_sem;

/* The tile IR operations a row can implement (a bit set). The selection
 * pass maps tile instructions to these; the lead's Hopper instructions map
 * to WGMMA, TMA_LOAD and TMA_STORE. */
enum {
    TARGET_OP_LD_GLOBAL = 1u << 0,  /* load_global: global -> registers */
    TARGET_OP_ST_GLOBAL = 1u << 1,  /* store_global */
    TARGET_OP_LD_SHARED = 1u << 2,  /* load_shared: shared -> registers */
    TARGET_OP_ST_SHARED = 1u << 3,  /* store_shared */
    TARGET_OP_CP_ASYNC = 1u << 4,   /* copy_async: global -> shared */
    TARGET_OP_MMA = 1u << 5,        /* mma on register fragments */
    TARGET_OP_WGMMA = 1u << 6,      /* warpgroup mma */
    TARGET_OP_TMA_LOAD = 1u << 7,   /* bulk tensor copy global -> shared */
    TARGET_OP_TMA_STORE = 1u << 8,  /* bulk tensor copy shared -> global */
    TARGET_OP_ACC_STEP = 1u << 9,   /* `add acc, p -> acc` closing a micro-kernel's loop body */
    TARGET_OP_MOVES = TARGET_OP_LD_GLOBAL | TARGET_OP_ST_GLOBAL | TARGET_OP_LD_SHARED | TARGET_OP_ST_SHARED |
                      TARGET_OP_CP_ASYNC,
};

/* Operand memory spaces (a bit set), in tile_space order: global 0,
 * shared 1, register 2 (select.c checks the correspondence). */
enum { TARGET_SP_GLOBAL = 1u << 0, TARGET_SP_SHARED = 1u << 1, TARGET_SP_REGISTER = 1u << 2 };

#define TARGET_DT_ANY (-1) /* a dtype field that any dtype matches */

/* Operands: mma rows A, B, C, D; moves [0] source, [1] destination;
 * ldmatrix/stmatrix [3] is one matrix's register fragment per warp. */
enum { TARGET_A = 0, TARGET_B = 1, TARGET_C = 2, TARGET_D = 3, TARGET_NOPER = 4 };

typedef struct target_atom {
    const char *name;   /* as `atom NAME` spells it (unique with its dtypes/bytes) */
    const char *alias;  /* a short spelling also accepted (m16n8k16), or NULL */
    target_kind kind;
    target_sem sem;
    unsigned ops;       /* TARGET_OP_* it can implement */
    int threads;        /* the group issuing one instruction: 1, 32 (warp), 128 (warpgroup) */
    int m, n, k;        /* mma / wgmma shape; micro-kernel: the largest register tile m x n */
    int bytes;          /* moves: bytes one thread moves per instruction (0: any) */
    int count;          /* ldmatrix/stmatrix: matrices (x1/x2/x4); tma: tensor rank */
    int trans;          /* ldmatrix/stmatrix .trans */
    int mcast;          /* tma loads: 1 one block's, 2 multicast to a cluster's blocks; 0 not a tma load */
    int regs;           /* micro-kernel: accumulators it may hold (m x n at most this) */
    int tf32;           /* mma: A and B are f32 registers rounded to tf32 (cvt.rna.tf32.f32: 10 fraction
                           bits, to nearest, ties away from zero) before the product; chosen only by
                           its exact name, never for a plain f32 mma */
    unsigned space[TARGET_NOPER];     /* TARGET_SP_* per operand (0: none) */
    int dtype[TARGET_NOPER];          /* tsl_dtype per operand, or TARGET_DT_ANY */
    const char *layout[TARGET_NOPER]; /* per-group operand layouts (distributed), or NULL */
    int sm;             /* minimum CUDA architecture (80, 90); 0: not a CUDA instruction */
    int sm_a;           /* needs the arch-specific target (sm_90a) */
    const char *ptx;    /* CUDA: the PTX it prints, or NULL */
    const char *cu;     /* CUDA, mma, ldmatrix, stmatrix and cp.async rows: the helper (codegen/cuda.c's
                           preamble) the CUDA generator calls for it; NULL (mma, ldmatrix, stmatrix):
                           it does not print the row yet, so selection never chooses it there */
    const char *c;      /* CPU: the C it prints (helper or template), or NULL */
    const char *cond;   /* CPU: the preprocessor condition under which it exists, or NULL */
    const char *what;   /* one line: what it does */
} target_atom;

/* ---- the tables ------------------------------------------------------------ */
extern const target_atom target_sm80_atoms[];
extern const int target_sm80_natoms;
extern const target_atom target_sm90_atoms[];
extern const int target_sm90_natoms;
extern const target_atom target_cpu_atoms[];
extern const int target_cpu_natoms;

/* Every row of every table, in table order (sm80, sm90, cpu). */
int target_atom_count(void);
const target_atom *target_atom_at(int i);

/* ---- targets ------------------------------------------------------------------ */
typedef struct target {
    const char *name; /* "cpu", "sm_80", "sm_90a", ... */
    int cuda;         /* 0: the C generator (CPU) */
    int sm;           /* CUDA: 80, 86, 89, 90, ...; 0 for the CPU */
    int sm_a;         /* the arch-specific variant (sm_90a) */
} target;

extern const target target_cpu;
extern const target target_sm80;  /* the CUDA default: what runs on every tessel GPU */
extern const target target_sm90a; /* Hopper with wgmma and setmaxnreg */

/* "cpu", "cuda" (= sm_80), "sm_NN" or "sm_NNa" (NN >= 80); NULL otherwise. */
const target *target_by_name(const char *name);

/* Can target t run row a? CUDA: a CUDA row (sm > 0) with PTX at t's
 * architecture; the CPU: a row with a C form (its own rows, and the sm80
 * collective atoms the C generator emulates). */
int target_has(const target *t, const target_atom *a);

/* ---- lookups -------------------------------------------------------------------- */

/* What an instruction asks of a row; 0 / TARGET_DT_ANY fields match anything. */
typedef struct target_query {
    unsigned op;                 /* TARGET_OP_* the row must implement */
    int dtype[TARGET_NOPER];
    int bytes;
    int m, n, k;
    int count;
    int mcast;                   /* tma loads: 1 one block, 2 multicast; 0 any */
} target_query;

/* A query that matches every row (op 0, any dtype). */
target_query target_query_any(void);

/* The first row named exactly `name`, in any table; NULL when none. */
const target_atom *target_atom_by_name(const char *name);

/* The row a written atom name means for the query: an exact name, an
 * alias (m16n8k16, mma.m16n8k16), or a PTX vector spelling such as
 * st.shared.v2.f32 (st.shared of 8 bytes), restricted to rows matching q
 * (dtypes, bytes, op). With several, the first in table order. NULL: none.
 * *named (may be NULL) is set to 1 when the name exists at all. */
const target_atom *target_atom_resolve(const char *name, const target_query *q, int *named);

/* The rows of kind `kind` available on t that match q, in table order
 * (the tables list the widest first): writes up to max into out and
 * returns how many match. */
int target_atom_find(const target *t, target_kind kind, const target_query *q, const target_atom **out, int max);

/* The warp-level mma row `mma ... [atom NAME]` means: NAME (m16n8k16 when
 * NULL) resolved for A's (= B's) and C's dtypes (tsl_dtype, or
 * TARGET_DT_ANY to take the first row of that name). NULL when none; *named
 * (may be NULL) says whether the name exists at all. */
const target_atom *target_mma_resolve(const char *name, int adt, int cdt, int *named);
/* The same with B's dtype given too: a B of unsigned integers of 1 to 8
 * bits asks for the dequantizing mma.q rows (f16 A, B its own dtype); any
 * other B is taken to be A's dtype, as in target_mma_resolve. */
const target_atom *target_mma_resolve_ab(const char *name, int adt, int bdt, int cdt, int *named);
/* The dtype a query's B operand takes for an mma with operand dtypes adt,
 * bdt (tsl_dtype or TARGET_DT_ANY): bdt for 1-8 bit unsigned, else adt. */
int target_mma_bdt(int adt, int bdt);

/* Does row a match q (op, dtypes, bytes, shape, count)? */
int target_atom_matches(const target_atom *a, const target_query *q);

/* Operand i's layout, parsed once (thread-safe); NULL when the row has
 * none. A row whose layout text does not parse is a bug caught by the
 * unit tests (target.layouts_parse). */
const dist_layout *target_atom_layout(const target_atom *a, int operand);

/* ---- reference semantics of the collective atoms ----------------------------------
 * Plain arrays of doubles, indexed [lane][slot] of one group (a warp), so
 * the tile interpreter and the C generator's tables use the same maps. */

/* Row of the fragment-level mma a (kind MMA): d[lane][i] = sum_k A*B + C
 * with the fragments placed by the row's layouts; products of 16-bit
 * values (and of tf32 values: a tf32 row rounds A and B first) are exact
 * in f32 and summed in k order; an f16 D is rounded to f16 once per
 * instruction, as the hardware writes it. Arrays hold one warp:
 * a[32][slots of A], b[32][slots of B], c and d [32][slots of C]. */
void target_mma_ref(const target_atom *a, const double *fa, const double *fb, const double *fc, double *fd);

/* x rounded to tf32 as cvt.rna.tf32.f32 does (PTX ISA): the 13 low fraction
 * bits dropped, rounding to nearest with ties away from zero; NaN and
 * infinity unchanged, a finite value may round up to infinity. The value
 * stays an f32 (tf32 has f32's exponent range). */
float target_tf32_rna(float x);

/* ldmatrix (kind LDMATRIX): lane l < 8 * count supplies the address of row
 * l % 8 of matrix l / 8 (rows[l][0..7]); lane l receives in register m <
 * count the two elements the row's fragment layout (layout[3]) gives it in
 * matrix m: out[l][2m + e]. */
void target_ldmatrix_ref(const target_atom *a, const double rows[32][8], double out[32][8]);
/* stmatrix (kind STMATRIX): the inverse: lane l gives in[l][2m + e]; row r
 * of matrix m receives them at the fragment's coordinates: rows[8m + r][col]. */
void target_stmatrix_ref(const target_atom *a, const double in[32][8], double rows[32][8]);

/* The coordinate (row, col) of slot `slot` of lane `lane` in one group's
 * fragment of operand i (dist_layout_map of the row's layout). 0, or -1
 * when the row has no layout there or the slot is out of range. */
int target_frag_coord(const target_atom *a, int operand, int lane, int slot, int64_t *row, int64_t *col);

/* Names for messages and docs. */
const char *target_kind_name(target_kind k);
const char *target_sem_name(target_sem s);

/* ---- fragment plans (frag.c) ------------------------------------------------------------
 * How a warp-level row runs over block-level register tensors laid out
 * R.F (F the row's fragment, R's threads the warps): computed once from
 * the table's layouts and read by both the selection pass (a row fits
 * when its plan exists) and the CUDA generator (which prints the plan of
 * the row selection chose), so neither spells a fragment out. */

/* mma row `row` over A, B, C laid out La, Lb, Lc on `threads` threads:
 * warp w holds C fragment t's A and B fragments at k step kt in tile slots
 * a[(w * tiles + t) * ksteps + kt] and b[...]. uniform: the slots are the
 * same for every warp (warp 0's, the first tiles * ksteps entries, serve
 * all), which the CUDA generator needs (it indexes registers by
 * constants); the C generator and the interpreter take any plan. */
typedef struct target_mma_plan {
    int64_t warps, tiles, ksteps; /* warps; C fragments per warp; k steps (A's column tiles) */
    int per[3];                   /* locals of one A, B, C fragment (the row's layouts) */
    int64_t *a, *b;               /* [warps * tiles * ksteps] tile slots, malloc'd */
    int uniform;
    /* missing: make failed because a warp lacks a tile it needs (the
     * layouts divided): the warp, whether A's, the tile's coordinates and
     * those of the C tile that needs it */
    int missing, miss_a;
    int64_t miss_warp, miss[2], miss_c[2];
} target_mma_plan;

/* 0 and *p filled when the row runs over the three layouts (the dtypes are
 * the caller's: the row was resolved for them); -1 otherwise. */
int target_mma_plan_make(target_mma_plan *p, const target_atom *row, const dist_layout *La, const dist_layout *Lb,
                         const dist_layout *Lc, int64_t threads);
void target_mma_plan_free(target_mma_plan *p);

/* ldmatrix row `ld` delivering a register tensor laid out L (rank 2) on
 * `threads` threads (or a stmatrix row storing one: the same plan, the
 * lanes' addresses receiving the rows instead of giving them): L = R.F
 * with F an operand fragment of an mma row the CUDA generator prints, whose locals are ld's count matrices in register
 * order, each matrix m the ldmatrix fragment (layout[3]) moved to org[m].
 * Lane l < 8 * count gives the address of the tile's row org[l / 8][0] +
 * l % 8, columns org[l / 8][1] ... + 7. Matrix origins are linear in the
 * bits of m: org[m] = bit0(m) * step[0] + bit1(m) * step[1]. */
typedef struct target_ldmatrix_plan {
    const target_atom *mma; /* the mma row whose fragment it is */
    int operand;            /* TARGET_A or TARGET_B */
    int64_t slots;          /* tile slots per thread (R's locals) */
    int per;                /* locals per slot (F's locals: 2 * count) */
    int64_t org[4][2];      /* matrix m's origin in the fragment tile */
    int64_t step[2][2];     /* the origin added by bit 0 and bit 1 of m */
} target_ldmatrix_plan;

/* 0 and *p filled when it is; -1 otherwise. */
int target_ldmatrix_plan_make(target_ldmatrix_plan *p, const target_atom *ld, const dist_layout *L, int64_t threads);

/* Operand `operand`'s fragment layout of row a as layout text appended to
 * sb (for plans that compose a block layout R.F as text); transposed: the
 * fragment of the transposed operand (rows and columns swapped: spatial
 * <-> column_spatial, local <-> column_local, extents reversed), which
 * gives a thread the same elements in the same local order. 0, or -1 when
 * the row has no layout there. */
int target_frag_text(strbuf *sb, const target_atom *a, int operand, int transposed);

#endif
