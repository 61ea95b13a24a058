/* c_int.h — internals shared by the C generator's files (c.c: kernel,
 * statements, storage plan; c_emit_base.c: vocabulary; c_emit_ops.c:
 * instructions; c_emit_decomp.c: decompositions; c_run.c: running).
 * Every name here starts with cgc_. */
#ifndef TSL_CODEGEN_C_INT_H
#define TSL_CODEGEN_C_INT_H

#include "codegen/codegen.h"
#include "layout/layout.h"
#include "target/select.h"
#include "target/target.h"

#define CGC_MAX_RANK 8
#define CGC_DEFAULT_SMEM (228 * 1024)
#define CGC_CHAIN 8


/* The (thread, local) -> coordinate table of one register type (layout
 * text + dims), emitted once as static arrays when used. */
typedef struct cgc_tab {
    const dist_layout *lay;
    const char *text;
    int rank;
    int64_t dims[CGC_MAX_RANK];
    int64_t nthreads, nlocals, ns;
    int32_t *coord;  /* [ns * rank]; -1 in every dim when outside the dims */
    uint8_t *own;    /* 1: inside the dims and the lowest owner of its coordinate */
    int used_coord, used_own;
    int ident;       /* slot s is the s-th element row-major (closed form, no tables) */
    int tident;      /* rank 2, slot s is the s-th element column-major: coordinate
                      * (s % dims[0], s / dims[0]) (a transposing view's tile) */
} cgc_tab;

/* A run-time error a block can return (1-based index in the list). */
typedef struct cgc_err {
    tsl_status st;
    char *msg;   /* with info: a format taking info[0], info[1] (long long) */
    char *where; /* " (in `statement`)" or "" */
    int info;
} cgc_err;

typedef struct cgc {
    const tile_kernel *k;
    tsl_arena *ar;
    tsl_diag *d;
    tsl_status st;   /* first generation error */
    strbuf tabs;     /* static tables */
    strbuf body;     /* the block function's statements */
    int ind;
    cgc_tab *tabv;
    int ntab, captab;
    int64_t *soff;   /* per value id: byte offset of a shared tensor, -1 none */
    int64_t *roff;   /* per value id: byte offset of a register tensor in the register area */
    int *rtab;       /* per value id: its table, -1 none */
    uint8_t *mut;    /* per value id: some instruction writes it in place (-> dst) */
    uint8_t *uniform; /* per value id: every slot holds the same value (a broadcast
                       * fill of one slot, never written in place) */
    uint8_t *ref;    /* per value id: a register array read through a pointer that a
                      * load_global points into the global tensor (c_emit_ops.c) */
    int64_t smem, regs, scratch;
    cgc_err *errs;
    int nerrs, caperrs;
    int tmp;         /* unique temporaries */
    int divs;        /* an emitted expression may divide by zero */
    const char *text; /* the current statement's text (comments, messages) */
    char **lines;    /* the printed kernel, one statement header per line */
    int nlines, caplines, line_at;
    int in_decomp;
    const tile_value *loopvar; /* the innermost `for` loop's var when its step is 1, else NULL */
} cgc;


/* An operand T[...].tile([..])[...] as, per dimension, a chain of steps:
 * coord = off0 + T0(off1 + T1(... x)) (interp view_of / view_map). */
typedef struct cgc_view {
    const tile_value *v;
    int rank;
    int nchain[CGC_MAX_RANK];
    const layout *tiler[CGC_MAX_RANK][CGC_CHAIN];
    char *off[CGC_MAX_RANK][CGC_CHAIN];
    int64_t ext[CGC_MAX_RANK]; /* extent; -1: the other operand's */
    int64_t dims[CGC_MAX_RANK]; /* shared: constant dims; .local: the local shape */
    int local;                  /* R.local: coordinates index this thread's slots */
} cgc_view;

/* What the kernel emitter gives: the source and its run-time errors. */
typedef struct cgc_result {
    char *source;
    cgc_err *errs;
    int nerrs;
} cgc_result;

/* ---- c_emit_base.c, c.c, c_emit_ops.c, c_emit_decomp.c ---- */
int64_t cgc_align_up(int64_t x, int64_t a);
/* Is dt one the generator holds (the 13 byte-sized tessel dtypes)? */
int cgc_dt_ok(tile_dtype t);
/* Coded dtypes: low-bit floats (any width) and integers of 1..7 bits. A
 * global tensor of one (a packed or low-bit float input) is read as codes
 * through a `uint8_t` pointer (cgc_global_elem gives the code at bit
 * offset e * bits, cgc_load_conv decodes it) and written with
 * cgc_global_put (byte-atomic read-modify-write: neighbours share bytes). */
int cgc_dt_coded(tile_dtype t);
/* C type of an element in memory (global, shared). */
const char *cgc_mem_ctype(tile_dtype t);
/* C type of a register element (sub-byte integers: the next C width). */
const char *cgc_reg_ctype(tile_dtype t);
/* Registers also hold integers of any width 1..64; floats only the
 * tessel ones. */
int cgc_dt_reg_ok(tile_dtype t);
/* An int64 expression wrapped to integer register dtype t. */
char *cgc_wrap(cgc *c, tile_dtype t, const char *v);
int64_t cgc_reg_size(tile_dtype t);
/* A double expression `v` rounded to register dtype t (interp round_to). */
char *cgc_rnd(cgc *c, tile_dtype t, const char *v);
/* A memory element `x` of dtype t as a double (dtype_load). */
char *cgc_mem_to_dbl(cgc *c, tile_dtype t, const char *x);
/* A double `v` as a memory element of dtype t (dtype_store). */
char *cgc_dbl_to_mem(cgc *c, tile_dtype t, const char *v);
/* The float32 transcendentals (exp, log, tanh, sigmoid, erf) and float16
 * rounding as vectorizable C, put at the top of every kernel (c_vmath.c). */
extern const char cgc_vmath_prelude[];

/* Integer or bool dtype? */
int cgc_dt_int(tile_dtype t);
/* Memory element x (dtype m) -> register value of dtype r. */
char *cgc_load_conv(cgc *c, tile_dtype m, tile_dtype r, const char *x);
/* Register value x (dtype r) -> memory element of dtype m. */
char *cgc_store_conv(cgc *c, tile_dtype r, tile_dtype m, const char *x);
/* The value a register slot outside the tensor holds (the interpreter's
 * NaN; integer registers cannot hold it and get 0). */
const char *cgc_pad_value(tile_dtype t);
int cgc_tab_of(cgc *c, const tile_type *ty, const char *name);
const char *cgc_tab_coord(cgc *c, int t);
const char *cgc_tab_own(cgc *c, int t);
/* Coordinate d of slot expression i; "slot inside the tensor"; "slot is
 * the lowest owner" (closed forms for row-major identity layouts). */
char *cgc_tab_at(cgc *c, int t, const char *i, int d);
char *cgc_tab_valid(cgc *c, int t, const char *i);
char *cgc_tab_owner(cgc *c, int t, const char *i);
void cgc_emit_tables(cgc *c);
/* A static int32 table of n entries; gives its name. */
const char *cgc_emit_i32_table(cgc *c, const char *what, const int64_t *v, int64_t n);
/* An int expression as C (int64_t), with the interpreter's meaning. */
char *cgc_cx(cgc *c, const tile_expr *e);
/* A scalar operand or fill value as a double (interp eval_num). */
char *cgc_cnum(cgc *c, const tile_expr *e);
/* An int scalar expression (no float literal or float scalar in it)? */
int cgc_int_expr(const tile_expr *e);
/* A scalar as a register element of dtype t (integers exactly). */
char *cgc_num_to_reg(cgc *c, tile_dtype t, const tile_expr *e);
/* After a statement whose expressions may divide by zero. */
void cgc_div_check(cgc *c);
/* A temporary holding an int expression (evaluated once, here). */
char *cgc_tmp_int(cgc *c, const tile_expr *e);
char *cgc_gname(cgc *c, const tile_value *v);
char *cgc_rname(cgc *c, const tile_value *v);
/* Constant dims of a shared or register tensor. */
int cgc_cdims(cgc *c, const tile_value *v, int64_t *dims);
/* The thread's local shape of a distributed layout: per dim, the product
 * of its local factors (interp local_shape). Slot of a local coordinate:
 * row-major over it. */
void cgc_local_shape(const dist_layout *l, int64_t *ld);
int cgc_view_of(cgc *c, const tile_operand *o, cgc_view *vw);
/* Base coordinate of view dim i for view coordinate expression x. */
char *cgc_view_map(cgc *c, const cgc_view *vw, int i, const char *x);
/* A tile of rank r and dims fits the view (interp view_fit): extents
 * agree where the view has one, and dims the view lacks are 1 (so the
 * slots' leading coordinates are 0). */
int cgc_view_fit_dims(cgc *c, const cgc_view *vw, const int64_t *dims, int r);
int cgc_view_fit(cgc *c, const cgc_view *vw, int t);
/* Emit `const int64_t cN = ...` for every dim of the view from register
 * coordinates; gives the names. */
char **cgc_emit_coords(cgc *c, const cgc_view *vw, int t, const char *slot, const char *pfx);
/* Condition "coordinate inside the global tensor". */
char *cgc_global_inb(cgc *c, const cgc_view *vw, char **cs);
char *cgc_global_elem(cgc *c, const cgc_view *vw, char **cs);
/* A coded global's store (a statement without ';'): tsl_lbput of code. */
char *cgc_global_put(cgc *c, const cgc_view *vw, char **cs, const char *code);
/* Shared access: a bounds check returning a run-time error, then the
 * element expression through the tensor's data layout. */
char *cgc_shared_elem(cgc *c, const cgc_view *vw, char **cs, int write);
/* The element expression alone (the caller has checked the bounds). */
char *cgc_shared_elem_at(cgc *c, const cgc_view *vw, char **cs);
/* The register tensor an instruction writes: its result or `-> dst`. */
const tile_value *cgc_reg_dst(cgc *c, const tile_stmt *s);
const tile_value *cgc_reg_arg(cgc *c, const tile_operand *o);
int cgc_rt(cgc *c, const tile_value *v);
void cgc_need_scratch(cgc *c, int64_t bytes);
/* The printed text of the next statement (preorder), for comments. */
const char *cgc_next_line(cgc *c);
void cgc_emit_stmts(cgc *c, const tile_block *b);
tsl_status cgc_emit_kernel(const tile_kernel *k, tsl_arena *ar, tsl_diag *d, cgc_result *res);
/* Kernel k itself, or (when it has pipelines) its expansion in a copy of
 * the module parsed into `ar`. */
tsl_status cgc_prepare(const tile_module *m, const tile_kernel *k, tsl_arena *ar, tsl_diag *d,
                          const tile_kernel **out);
void cgc_emit_load(cgc *c, const tile_stmt *s);
void cgc_emit_store(cgc *c, const tile_stmt *s);
/* copy_async global -> shared: the tile is the shared tensor, its slice
 * S[i, ...] of the trailing dims, or a tile of a tiled view; taken from
 * the global tensor right-aligned at the source's offsets, zero past the
 * bounds (interp exec_copy_async). */
void cgc_emit_copy_async(cgc *c, const tile_stmt *s);
void cgc_emit_alloc(cgc *c, const tile_stmt *s);
void cgc_emit_elementwise(cgc *c, const tile_stmt *s);
/* iota [OFF] dim D: each element is its coordinate along D plus OFF. */
void cgc_emit_iota(cgc *c, const tile_stmt *s);
/* gather T, i... -> R [mask M] / scatter x -> T, i... [mask M]: per lane
 * (a slot inside the tensor), the element of global T at the indices; a
 * masked-off lane moves nothing (gather: 0); an index outside T's extent
 * is a run-time error naming the tensor, dim, index and bound. */
void cgc_emit_gather(cgc *c, const tile_stmt *s);
/* view: the same bytes per thread reinterpreted. */
void cgc_emit_view(cgc *c, const tile_stmt *s);
/* reduce.{sum,max,min} dim D (interp exec_reduce): per result coordinate,
 * the source slots (lowest owners, in slot order) accumulated in f32;
 * every owner of the result coordinate gets the value. */
void cgc_emit_reduce(cgc *c, const tile_stmt *s);
/* broadcast dim D: result[c] = x[c with dim D at 0 (or dropped)]. */
void cgc_emit_broadcast(cgc *c, const tile_stmt *s);
/* shuffle.{xor,up,down,idx} x, k: per warp; out of range keeps its own. */
void cgc_emit_shuffle(cgc *c, const tile_stmt *s);
void cgc_emit_mma(cgc *c, const tile_stmt *s);
void cgc_emit_print(cgc *c, const tile_stmt *s);
void cgc_emit_nothing(cgc *c, const tile_stmt *s);
/* `let a, b, i = indices g` (interp exec_indices) as a table per thread. */
void cgc_emit_indices(cgc *c, const tile_stmt *s);
void cgc_emit_decomp(cgc *c, const tile_stmt *s);
/* ---- the micro-kernel's printers (c_emit_ukr.c) ---- */
/* v's register table, or NULL */
const cgc_tab *cgc_vtab(cgc *c, const tile_value *v);

/* An f32 micro-kernel `fn(float *acc, const float *a, const float *b,
 * PARAMS)`: acc[tm][tn] += over n steps of a_i * b_j. Each step's
 * statements `step` set `bp` (b's row of tn); row i's scalar of a is
 * printf(a_row, i * a_mul); row_ptr, if set, a statement printf'd with
 * (i, i) before the loop (per-row pointers); unroll: unroll the step loop
 * by 4. Written into c->tabs, one variant per vector width. */
typedef struct cgc_ukr {
    int64_t tm, tn;
    const char *what;    /* the header comment's tail */
    const char *params;  /* the parameters after acc, a, b (must include `int64_t n`) */
    const char *row_ptr; /* or NULL */
    const char *step;
    const char *a_row;   /* one %lld */
    int64_t a_mul;
    int unroll;
} cgc_ukr;
void cgc_emit_ukr(cgc *c, const char *fn, const cgc_ukr *u);

/* A `for` whose body's last statement carries a micro-kernel atom
 * (cpu.ukr.f32, cpu.ukr.f32.gather): prints it and opens `if (fast) {...}
 * else {`, returns 1 (c_emit_ukr.c); 0 for any other loop. The two
 * printers: c_emit_gemm.c and c_emit_rblk.c. */
int cgc_emit_ukr_for(cgc *c, const tile_stmt *f);
int cgc_emit_gemm_for(cgc *c, const tile_stmt *f, const target_ukr *u);
int cgc_emit_rblk_for(cgc *c, const tile_stmt *f, const target_ukr *u);
/* c_emit_dequant.c: the cpu.ukr.dequant row loop, same protocol. */
int cgc_emit_dequant_for(cgc *c, const tile_stmt *f, const target_ukr *u);
/* A rank-2 register table whose every thread holds a contiguous TM x TN
 * row-major micro-tile (local l = i * TN + j at the thread's origin plus
 * (i, j)), every slot inside the tensor: 1 and *tm, *tn. */
int cgc_tab_microtile(const cgc_tab *tab, int64_t *tm, int64_t *tn);
void cgc_fail(cgc *c, tsl_status st, const char *fmt, ...) TSL_PRINTF(3, 4);
/* Register a run-time error; gives the code the block returns. */
int cgc_rterr(cgc *c, tsl_status st, const char *fmt, ...) TSL_PRINTF(3, 4);
/* One line of the block function, indented. */
void cgc_line(cgc *c, const char *fmt, ...) TSL_PRINTF(2, 3);

#endif
