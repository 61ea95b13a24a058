/* atom.c — lookups over the atom tables (sm80.c, sm90.c, cpu.c), the
 * targets, the operand layouts parsed once, and the reference semantics of
 * the collective atoms (fragment mma, ldmatrix, stmatrix) that the tile
 * interpreter runs and the C generator emulates. */
#include <pthread.h>
#include <string.h>

#include "target/target.h"

/* ---- names ------------------------------------------------------------------------- */

static const char *const kind_names[] = {"mma", "wgmma", "ldmatrix", "stmatrix", "cp.async", "tma",
                                         "vector",  "copy",     "micro-kernel", "scalar"};
_Static_assert(TSL_COUNTOF(kind_names) == TARGET_K_COUNT, "one name per kind");
static const char *const sem_names[] = {"move", "async move", "mma", "wgmma", "ldmatrix", "stmatrix", "tma",
                                        "outer-product accumulation", "dequantize and accumulate"};
_Static_assert(TSL_COUNTOF(sem_names) == TARGET_SEM_COUNT, "one name per semantics");

const char *target_kind_name(target_kind k)
{
    return (unsigned)k < TARGET_K_COUNT ? kind_names[k] : "?";
}

const char *target_sem_name(target_sem s)
{
    return (unsigned)s < TARGET_SEM_COUNT ? sem_names[s] : "?";
}

/* ---- every row --------------------------------------------------------------------- */

int target_atom_count(void)
{
    return target_sm80_natoms + target_sm90_natoms + target_cpu_natoms;
}

const target_atom *target_atom_at(int i)
{
    if (i < 0) return NULL;
    if (i < target_sm80_natoms) return &target_sm80_atoms[i];
    i -= target_sm80_natoms;
    if (i < target_sm90_natoms) return &target_sm90_atoms[i];
    i -= target_sm90_natoms;
    return i < target_cpu_natoms ? &target_cpu_atoms[i] : NULL;
}

static int atom_index(const target_atom *a)
{
    if (a >= target_sm80_atoms && a < target_sm80_atoms + target_sm80_natoms) return (int)(a - target_sm80_atoms);
    if (a >= target_sm90_atoms && a < target_sm90_atoms + target_sm90_natoms)
        return target_sm80_natoms + (int)(a - target_sm90_atoms);
    if (a >= target_cpu_atoms && a < target_cpu_atoms + target_cpu_natoms)
        return target_sm80_natoms + target_sm90_natoms + (int)(a - target_cpu_atoms);
    return -1;
}

/* ---- targets ------------------------------------------------------------------------ */

const target target_cpu = {.name = "cpu"};
const target target_sm80 = {.name = "sm_80", .cuda = 1, .sm = 80};
const target target_sm90a = {.name = "sm_90a", .cuda = 1, .sm = 90, .sm_a = 1};
static const target known_targets[] = {
    {.name = "sm_86", .cuda = 1, .sm = 86}, {.name = "sm_87", .cuda = 1, .sm = 87},
    {.name = "sm_89", .cuda = 1, .sm = 89}, {.name = "sm_90", .cuda = 1, .sm = 90},
    {.name = "sm_100", .cuda = 1, .sm = 100}, {.name = "sm_120", .cuda = 1, .sm = 120},
};

const target *target_by_name(const char *name)
{
    if (!name) return NULL;
    if (!strcmp(name, "cpu")) return &target_cpu;
    if (!strcmp(name, "cuda") || !strcmp(name, "sm_80")) return &target_sm80;
    if (!strcmp(name, "sm_90a")) return &target_sm90a;
    for (size_t i = 0; i < TSL_COUNTOF(known_targets); i++)
        if (!strcmp(name, known_targets[i].name)) return &known_targets[i];
    return NULL;
}

int target_has(const target *t, const target_atom *a)
{
    if (!t || !a) return 0;
    if (!t->cuda) return a->c != NULL;
    if (a->sm <= 0 || !a->ptx || t->sm < a->sm) return 0;
    /* arch-specific features (sm_90a) exist on that architecture only */
    return !a->sm_a || (t->sm_a && t->sm == a->sm);
}

/* ---- matching ------------------------------------------------------------------------- */

target_query target_query_any(void)
{
    target_query q;
    memset(&q, 0, sizeof q);
    for (int i = 0; i < TARGET_NOPER; i++) q.dtype[i] = TARGET_DT_ANY;
    return q;
}

static int eq_or_any(int want, int have)
{
    return want == 0 || have == 0 || want == have;
}

int target_atom_matches(const target_atom *a, const target_query *q)
{
    if (!q) return 1;
    if (q->op && !(a->ops & q->op)) return 0;
    for (int i = 0; i < TARGET_NOPER; i++)
        if (q->dtype[i] != TARGET_DT_ANY && a->dtype[i] != TARGET_DT_ANY && q->dtype[i] != a->dtype[i]) return 0;
    return eq_or_any(q->bytes, a->bytes) && eq_or_any(q->m, a->m) && eq_or_any(q->n, a->n) &&
           eq_or_any(q->k, a->k) && eq_or_any(q->count, a->count) && eq_or_any(q->mcast, a->mcast);
}

const target_atom *target_atom_by_name(const char *name)
{
    for (int i = 0, n = target_atom_count(); name && i < n; i++)
        if (!strcmp(target_atom_at(i)->name, name)) return target_atom_at(i);
    return NULL;
}

/* A PTX spelling of a plain load or store: {ld,st}.{global,shared}[.v2|.v4].
 * {b,u,s,f}{8,16,32,64}; the op and the bytes one thread moves. 0 if not. */
static int ptx_move(const char *s, unsigned *op, int *bytes)
{
    int st;
    if (!strncmp(s, "ld.", 3)) st = 0;
    else if (!strncmp(s, "st.", 3)) st = 1;
    else return 0;
    s += 3;
    int shared;
    if (!strncmp(s, "global.", 7)) shared = 0, s += 7;
    else if (!strncmp(s, "shared.", 7)) shared = 1, s += 7;
    else return 0;
    int vec = 1;
    if (!strncmp(s, "v2.", 3)) vec = 2, s += 3;
    else if (!strncmp(s, "v4.", 3)) vec = 4, s += 3;
    if (!strchr("bufs", s[0])) return 0;
    int bits = 0;
    for (const char *p = s + 1; *p; p++) {
        if (*p < '0' || *p > '9') return 0;
        bits = bits * 10 + (*p - '0');
        if (bits > 64) return 0;
    }
    if (bits != 8 && bits != 16 && bits != 32 && bits != 64) return 0;
    static const unsigned ops[2][2] = {{TARGET_OP_LD_GLOBAL, TARGET_OP_LD_SHARED},
                                       {TARGET_OP_ST_GLOBAL, TARGET_OP_ST_SHARED}};
    *op = ops[st][shared];
    *bytes = vec * bits / 8;
    return 1;
}

const target_atom *target_atom_resolve(const char *name, const target_query *q, int *named)
{
    if (named) *named = 0;
    if (!name) return NULL;
    int n = target_atom_count();
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n; i++) {
            const target_atom *a = target_atom_at(i);
            const char *nm = pass ? a->alias : a->name;
            if (!nm || strcmp(nm, name)) continue;
            if (named) *named = 1;
            if (target_atom_matches(a, q)) return a;
        }
    /* st.shared.v2.f32 and the like: the vector row of that op and width,
     * or the element-by-element row for an element */
    unsigned op;
    int bytes;
    if (!ptx_move(name, &op, &bytes)) return NULL;
    if (named) *named = 1;
    if (q && q->op && !(q->op & op)) return NULL;
    for (int i = 0; i < n; i++) {
        const target_atom *a = target_atom_at(i);
        if (a->sm > 0 && a->kind == TARGET_K_VEC && (a->ops & op) && a->bytes == bytes) return a;
    }
    for (int i = 0; i < n; i++) {
        const target_atom *a = target_atom_at(i);
        if (a->sm > 0 && a->kind == TARGET_K_SCALAR && (a->ops & op)) return a;
    }
    return NULL;
}

int target_mma_bdt(int adt, int bdt)
{
    if (bdt == TARGET_DT_ANY) return adt;
    const dtype_info *di = dtype_info_of((tsl_dtype)bdt);
    return di->desc.kind == DT_UINT && di->bits <= 8 ? bdt : adt;
}

const target_atom *target_mma_resolve_ab(const char *name, int adt, int bdt, int cdt, int *named)
{
    target_query q = target_query_any();
    q.op = TARGET_OP_MMA;
    q.dtype[TARGET_A] = adt;
    q.dtype[TARGET_B] = target_mma_bdt(adt, bdt);
    q.dtype[TARGET_C] = q.dtype[TARGET_D] = cdt;
    return target_atom_resolve(name ? name : "m16n8k16", &q, named);
}

const target_atom *target_mma_resolve(const char *name, int adt, int cdt, int *named)
{
    return target_mma_resolve_ab(name, adt, adt, cdt, named);
}

int target_atom_find(const target *t, target_kind kind, const target_query *q, const target_atom **out, int max)
{
    int found = 0;
    for (int i = 0, n = target_atom_count(); i < n; i++) {
        const target_atom *a = target_atom_at(i);
        if (a->kind != kind || !target_has(t, a) || !target_atom_matches(a, q)) continue;
        if (found < max && out) out[found] = a;
        found++;
    }
    return found;
}

/* ---- layouts, parsed once ---------------------------------------------------------------- */

enum { MAX_ROWS = 512 };
static dist_layout parsed[MAX_ROWS][TARGET_NOPER];
static uint8_t have[MAX_ROWS][TARGET_NOPER];
static pthread_once_t parse_once = PTHREAD_ONCE_INIT;

static void parse_all(void)
{
    int n = target_atom_count();
    TSL_ASSERT(n <= MAX_ROWS);
    for (int i = 0; i < n; i++)
        for (int o = 0; o < TARGET_NOPER; o++) {
            const char *t = target_atom_at(i)->layout[o];
            layout_value v;
            layout_err e;
            memset(&e, 0, sizeof e);
            if (!t || layout_parse(t, strlen(t), &v, &e) != TSL_OK || v.kind != LAYOUT_VALUE_DIST) continue;
            parsed[i][o] = v.dist;
            have[i][o] = 1;
        }
}

const dist_layout *target_atom_layout(const target_atom *a, int operand)
{
    int i = a ? atom_index(a) : -1;
    if (i < 0 || operand < 0 || operand >= TARGET_NOPER) return NULL;
    pthread_once(&parse_once, parse_all);
    return have[i][operand] ? &parsed[i][operand] : NULL;
}

int target_frag_coord(const target_atom *a, int operand, int lane, int slot, int64_t *row, int64_t *col)
{
    const dist_layout *l = target_atom_layout(a, operand);
    int64_t c[DIST_MAX_RANK];
    if (!l || l->rank != 2 || dist_layout_map(l, lane, slot, c)) return -1;
    *row = c[0];
    *col = c[1];
    return 0;
}

/* ---- reference semantics ------------------------------------------------------------------- */

enum { MAX_MK = 16, MAX_N = 128 }; /* m and k, n of a warp-level mma row (the mma.q rows: n 128) */

float target_tf32_rna(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7f800000u) == 0x7f800000u) return x; /* NaN, infinity */
    /* ties away from zero on the magnitude: add half of the dropped unit,
     * then drop it (a carry into the exponent is the right rounding up) */
    u = (u + 0x1000u) & ~0x1fffu;
    memcpy(&x, &u, sizeof x);
    return x;
}

void target_mma_ref(const target_atom *a, const double *fa, const double *fb, const double *fc, double *fd)
{
    const dist_layout *la = target_atom_layout(a, TARGET_A), *lb = target_atom_layout(a, TARGET_B),
                      *lc = target_atom_layout(a, TARGET_C);
    TSL_ASSERT(la && lb && lc && a->m <= MAX_MK && a->n <= MAX_N && a->k <= MAX_MK);
    double A[MAX_MK][MAX_MK], B[MAX_MK][MAX_N], C[MAX_MK][MAX_N];
    int64_t r, c;
    int na = (int)la->locals, nb = (int)lb->locals, nc = (int)lc->locals;
    for (int l = 0; l < a->threads; l++) {
        for (int i = 0; i < na; i++)
            if (!target_frag_coord(a, TARGET_A, l, i, &r, &c)) A[r][c] = fa[l * na + i];
        for (int i = 0; i < nb; i++)
            if (!target_frag_coord(a, TARGET_B, l, i, &r, &c)) B[r][c] = fb[l * nb + i];
        for (int i = 0; i < nc; i++)
            if (!target_frag_coord(a, TARGET_C, l, i, &r, &c)) C[r][c] = fc[l * nc + i];
    }
    if (a->tf32)
        for (int i = 0; i < a->m; i++)
            for (int kk = 0; kk < a->k; kk++) A[i][kk] = target_tf32_rna((float)A[i][kk]);
    if (a->tf32)
        for (int kk = 0; kk < a->k; kk++)
            for (int j = 0; j < a->n; j++) B[kk][j] = target_tf32_rna((float)B[kk][j]);
    for (int l = 0; l < a->threads; l++)
        for (int i = 0; i < nc; i++) {
            if (target_frag_coord(a, TARGET_C, l, i, &r, &c)) continue;
            float acc = (float)C[r][c];
            for (int kk = 0; kk < a->k; kk++) acc += (float)A[r][kk] * (float)B[kk][c];
            fd[l * nc + i] = a->dtype[TARGET_D] == TSL_DTYPE_F16 ? f16_to_f32(f32_to_f16(acc)) : acc;
        }
}

void target_ldmatrix_ref(const target_atom *a, const double rows[32][8], double out[32][8])
{
    int64_t r, c;
    for (int l = 0; l < 32; l++)
        for (int m = 0; m < a->count; m++)
            for (int e = 0; e < 2; e++)
                if (!target_frag_coord(a, TARGET_D, l, e, &r, &c)) out[l][2 * m + e] = rows[8 * m + r][c];
}

void target_stmatrix_ref(const target_atom *a, const double in[32][8], double rows[32][8])
{
    int64_t r, c;
    for (int l = 0; l < 32; l++)
        for (int m = 0; m < a->count; m++)
            for (int e = 0; e < 2; e++)
                if (!target_frag_coord(a, TARGET_D, l, e, &r, &c)) rows[8 * m + r][c] = in[l][2 * m + e];
}
