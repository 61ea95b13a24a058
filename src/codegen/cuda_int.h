/* cuda_int.h — shared between the CUDA generator's files: cuda.c (kernel,
 * statements, expressions, addressing) and cuda_instr.c (one emitter per
 * instruction). Not a public interface. */
#ifndef TSL_CODEGEN_CUDA_INT_H
#define TSL_CODEGEN_CUDA_INT_H

#include <stdarg.h>

#include "codegen/cuda.h"
#include "layout/layout.h"
#include "target/select.h"
#include "target/target.h"
#include "tile/pipeline.h"

#define CG_MAX_RANK 8
#define CG_NAMEBUFS 8
#define CG_MAX_ACCS 8

typedef struct cg {
    const tile_kernel *k;
    strbuf *o;
    tsl_diag *d;
    int ind;           /* indentation level of cg_line */
    int64_t *soff;     /* [nvalues]: byte offset of a shared tensor in tsl_smem, else -1 */
    int64_t smem;      /* bytes of shared allocations */
    int64_t scratch;   /* bytes of scratch the fallbacks need (after the allocations) */
    int uid;           /* fresh temporaries */
    tsl_status st;     /* first error; emission stops there */
    char names[CG_NAMEBUFS][96];
    int nameslot;
    cg_cuda_branches *br; /* size branches emitted as TSL_IF<n> (NULL: none, e.g. after pipeline expansion) */
    int threads;       /* threads of the SIMB context: the kernel's, 128 inside a role */
    int in_role;       /* inside a warpgroups role: sync is the instance's named barrier */
    const tile_value *accs[CG_MAX_ACCS]; /* wgmma accumulators of the role (fenced at wgmma_wait) */
    int naccs;
    const tile_value *haccs[CG_MAX_ACCS]; /* f16 wgmma accumulators whose packed shadow is declared */
    int nhaccs;
    int br_parent, br_arm;  /* the size branch arm being emitted (-1: none) */
    int expr_ll;       /* cg_expr computes in long long instead of I (values, not indices) */
} cg;

/* A register tensor: coordinate(tid, l)[d] = tpart(tid, d) + lc[l*rank + d]. */
typedef struct rinfo {
    const tile_value *v;
    const dist_layout *L;
    int rank, lead; /* tensor rank; layout rank - tensor rank (leading extent-1 dims) */
    int64_t dims[CG_MAX_RANK];
    int64_t threads, locals;
    int nterm;
    struct {
        int dim;
        int64_t div, ext, w; /* ((tid / div) % ext) * w */
    } term[DIST_MAX_AXES];
    int nrep;
    struct {
        int64_t div, ext; /* replica digit (tid / div) % ext */
    } rep[DIST_MAX_AXES];
    int64_t *lc; /* [locals * rank] */
} rinfo;

/* A global or shared operand view: tile offsets (C code) and extents. */
typedef struct gview {
    const tile_value *v;
    int rank;
    char *off[CG_MAX_RANK];
    int64_t ext[CG_MAX_RANK]; /* -1: untiled */
} gview;

tsl_status cg_err(cg *c, tsl_status st, const char *fmt, ...) TSL_PRINTF(3, 4);
void cg_line(cg *c, const char *fmt, ...) TSL_PRINTF(2, 3);
const char *cg_name(cg *c, const tile_value *v);
const char *cg_ctype(tile_dtype dt);
int cg_esize(tile_dtype dt);
int cg_is_float_math(tile_dtype dt);
tsl_status cg_check_dtype(cg *c, const tile_value *v);
/* Coded dtypes: a low-bit float (any width) or an integer of 1..7 bits.
 * In global memory they are read as codes (packed for the sub-byte ones:
 * docs/lowbit.md) through an `unsigned char` pointer; registers hold the
 * value (cg_ctype). cg_mem_ctype: the element type of a global pointer. */
int cg_dt_coded(tile_dtype dt);
/* cuda_dequant.c: `cast` of a register tensor xv that a `view` made from
 * byte (u16, u32) registers, to f32/f16/bf16, read from the words
 * directly (dv's array declared already). 1 when emitted, 0 when the
 * pattern does not hold (nothing emitted). */
int cg_emit_dequant(cg *c, const tile_stmt *s, const tile_value *xv, const tile_value *dv, const rinfo *rd);
/* cuda_dequant.c: the words of the register tensor of bytes, u16 or u32
 * words that a `view` made xv from, gathered into `unsigned NAME[n + 1]`
 * (the thread's bit stream: slot l of xv at bit l * bits; the last word
 * 0): n, or -1 when xv is not such a view (nothing emitted). */
int64_t cg_view_words(cg *c, const tile_value *xv, const char *name);
const char *cg_mem_ctype(tile_dtype dt);
/* The value of coded element `off` of global `ptr` (dtype md) as register
 * dtype rd, appended to out. */
void cg_coded_read(strbuf *out, tile_dtype md, const char *ptr, const char *off, tile_dtype rd);
void cg_expr(cg *c, strbuf *sb, const tile_expr *e);
void cg_num(cg *c, strbuf *sb, const tile_expr *e);
void cg_num_to(cg *c, strbuf *sb, tile_dtype t, const tile_expr *e);
int cg_int_expr(const tile_expr *e);
int cg_dt_int(tile_dtype t);

tsl_status cg_rinfo(cg *c, const tile_value *v, rinfo *ri);
void cg_rinfo_free(rinfo *ri);
int64_t cg_rinfo_tpart(const rinfo *ri, int64_t t, int d);
void cg_tpart(cg *c, strbuf *sb, const rinfo *ri, int d);
void cg_owner(cg *c, strbuf *sb, const rinfo *ri);

tsl_status cg_shared_dims(cg *c, const tile_value *v, int64_t *dims);
tsl_status cg_shared_off(cg *c, strbuf *sb, const tile_value *v, char *const *co);
int64_t cg_shared_off_const(const tile_value *v, const int64_t *dims, const int64_t *co);
tsl_status cg_view(cg *c, const tile_operand *o, gview *gv);
void cg_view_free(gview *gv);

/* cuda_instr.c */
void cg_instr(cg *c, const tile_stmt *s);
/* The barrier of the current SIMB context (__syncthreads, or the role
 * instance's named barrier). */
void cg_sync(cg *c);
/* Element offset of shared v at `co` without the layout's swizzle. */
tsl_status cg_shared_off_plain(cg *c, strbuf *sb, const tile_value *v, char *const *co);

/* cuda_decomp.c: an instruction with a decomposition, its body per
 * thread; declare(c, s) declares the instruction's register result. */
void cg_decomp(cg *c, const tile_stmt *s, void (*declare)(cg *, const tile_stmt *));

/* cuda_hopper.c */
extern const char cg_hopper_prelude[];
int cg_hopper_used(const tile_kernel *k);
int cg_hopper_block_used(const tile_block *b);
/* Hopper instructions, warpgroups, or a named sm_90 row (stmatrix): the
 * kernel is selected and compiled for sm_90a. */
int cg_sm90_needed(const tile_kernel *k);
int cg_hopper_instances(const tile_kernel *k);
void cg_hopper_instr(cg *c, const tile_stmt *s);
/* After the declaration of register tensor v: an f16 wgmma accumulator
 * gets its packed shadow (cuda_hopper.c, emit_wgmma). */
void cg_hopper_acc_decl(cg *c, const tile_value *v, int64_t locals);
void cg_hopper_warpgroups(cg *c, const tile_stmt *s, void (*emit_block)(cg *, const tile_block *));

#endif
