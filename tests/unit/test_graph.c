/* test_graph.c — structured ops, edges, fusion groups and strategies of
 * TC programs compiled with lang_parse_check (sources inline). */
#include <string.h>

#include "graph/graph.h"
#include "lang/lang.h"
#include "test.h"

typedef struct fixture {
    tsl_arena *a;
    tsl_diag d;
    tsl_source src;
    const lang_def *def;
    graph *g;
} fixture;

/* Compile `text`, build the graph of its def `name` (NULL: the first). */
static bool fx_open(fixture *f, const char *text, const char *name)
{
    memset(f, 0, sizeof *f);
    f->a = arena_create();
    f->src.name = "test.tc";
    f->src.text = text;
    lang_module *m = lang_parse_check(f->a, &f->src, &f->d);
    CHECK_MSG(m != NULL, "%s", sb_str(&f->d.msg));
    if (!m) return false;
    f->def = name ? lang_module_find(m, name) : lang_module_def(m, 0);
    CHECK(f->def != NULL);
    if (!f->def) return false;
    f->g = graph_build(f->a, f->def, &f->d);
    CHECK(f->g != NULL);
    return f->g != NULL;
}

static void fx_close(fixture *f)
{
    diag_free(&f->d);
    arena_free(f->a);
}

static const graph_tensor *fx_tensor(const fixture *f, const char *name)
{
    const lang_tensor *t = lang_def_tensor(f->def, name);
    TSL_ASSERT(t);
    return &f->g->tensors[t->index];
}

/* Expected groups as "strategy:nops" separated by spaces, e.g.
 * "contraction:3 row-reduction:2". */
static void check_groups(const fixture *f, const char *want)
{
    strbuf b = {0};
    for (int i = 0; i < f->g->ngroups; i++)
        sb_printf(&b, "%s%s:%d", i ? " " : "", graph_strategy_name(f->g->groups[i].strategy),
                  f->g->groups[i].nops);
    if (strcmp(sb_str(&b), want) != 0) {
        strbuf p = {0};
        graph_print(&p, f->g);
        CHECK_MSG(0, "groups of %s: got \"%s\", want \"%s\"\n%s", f->def->name, sb_str(&b), want,
                  sb_str(&p));
        sb_free(&p);
    }
    sb_free(&b);
}

static bool reason_has(const fixture *f, int group, const char *s)
{
    return strstr(f->g->groups[group].reason, s) != NULL;
}

/* ---- the brief's programs ------------------------------------------------------ */

static void test_matmul(void)
{
    fixture f;
    if (!fx_open(&f, "def matmul(float(M,K) A, float(K,N) B) -> (C) {\n"
                     "  C(m,n) +=! A(m,k) * B(k,n)\n}\n", NULL))
        goto out;
    check_groups(&f, "contraction:1");
    const graph_op *op = &f.g->ops[0];
    CHECK(op->contraction);
    CHECK_EQ_INT(op->nvars, 3);
    CHECK_EQ_INT(op->niter, 2);
    CHECK(op->iters[2] == GRAPH_REDUCTION && op->iters[0] == GRAPH_PARALLEL);
    CHECK_EQ_INT(op->noperands, 3);
    CHECK(op->operands[0].write && op->operands[0].identity);
    CHECK(op->operands[1].affine && !op->operands[1].identity);
    CHECK_EQ_INT(op->operands[2].idx[0].var, 2); /* B(k, n): k is var 2 */
    CHECK_EQ_INT(op->operands[2].idx[1].var, 1);
    CHECK(reason_has(&f, 0, "M=(m) N=(n) K=(k)"));
    CHECK(!fx_tensor(&f, "C")->internal);
    CHECK_EQ_INT(f.g->groups[0].ninputs, 2);
    CHECK_EQ_INT(f.g->groups[0].noutputs, 1);
out:
    fx_close(&f);
}

static void test_fcrelu(void)
{
    fixture f;
    /* the example: contraction then two epilogue ops */
    if (fx_open(&f, "def fcrelu(float(B,I) X, float(O,I) weight, float(O) bias) -> (out) {\n"
                    "  out(b,o) +=! X(b,i) * weight(o,i)\n"
                    "  out(b,o) = out(b,o) + bias(o)\n"
                    "  out(b,o) = fmaxf(out(b,o), 0)\n}\n", NULL)) {
        check_groups(&f, "contraction:3");
        CHECK(reason_has(&f, 0, "2 epilogue ops"));
        CHECK_EQ_INT(f.g->groups[0].anchor, 0);
        CHECK(f.g->ops[1].reads_lhs);
        CHECK(!fx_tensor(&f, "out")->internal);
    }
    fx_close(&f);
    /* init, accumulate (no `!`), epilogue: one group, accumulator not an input */
    if (fx_open(&f, "def fcrelu2(float(B,I) X, float(O,I) W, float(O) bias) -> (C) {\n"
                    "  C(b,o) = bias(o)\n"
                    "  C(b,o) += X(b,i) * W(o,i)\n"
                    "  C(b,o) = fmaxf(C(b,o), 0)\n}\n", NULL)) {
        check_groups(&f, "contraction:3");
        CHECK_EQ_INT(f.g->groups[0].anchor, 1);
        CHECK(reason_has(&f, 0, "1 init/prologue op, 1 epilogue op"));
        int raw = 0, waw = 0;
        for (int i = 0; i < f.g->nedges; i++) {
            const graph_edge *e = &f.g->edges[i];
            CHECK(e->from < e->to);
            raw += e->dep == GRAPH_DEP_RAW;
            waw += e->dep == GRAPH_DEP_WAW && e->from + 1 == e->to;
        }
        CHECK_EQ_INT(raw, 1); /* op 2 reads C after op 1 */
        CHECK_EQ_INT(waw, 2); /* 0 -> 1 -> 2 */
        for (int i = 0; i < f.g->groups[0].ninputs; i++)
            CHECK(strcmp(f.g->tensors[f.g->groups[0].inputs[i]].lt->name, "C") != 0);
    }
    fx_close(&f);
}

static void test_softmax(void)
{
    fixture f;
    if (fx_open(&f, "def softmax(float(N,D) X) -> (Y) {\n"
                    "  mx(n) max=! X(n,d)\n"
                    "  e(n,d) = exp(X(n,d) - mx(n))\n"
                    "  s(n) +=! e(n,d)\n"
                    "  Y(n,d) = e(n,d) / s(n)\n}\n", NULL)) {
        check_groups(&f, "row-reduction:4");
        CHECK_EQ_INT(f.g->groups[0].rows, 1);
        CHECK(fx_tensor(&f, "mx")->internal);
        CHECK(fx_tensor(&f, "e")->internal);
        CHECK(fx_tensor(&f, "s")->internal);
        CHECK(!fx_tensor(&f, "Y")->internal);
        CHECK_EQ_INT(f.g->groups[0].ninputs, 1);
        CHECK_EQ_INT(f.g->groups[0].noutputs, 1);
    }
    fx_close(&f);
}

static void test_layernorm(void)
{
    fixture f;
    if (fx_open(&f, "def layernorm(float(N,D) X, float(D) gamma, float(D) beta) -> (Y) {\n"
                    "  mean(n) +=! X(n,d)\n"
                    "  mean(n) = mean(n) / D\n"
                    "  xc(n,d) = X(n,d) - mean(n)\n"
                    "  var(n) +=! xc(n,d) * xc(n,d)\n"
                    "  var(n) = var(n) / D\n"
                    "  Y(n,d) = xc(n,d) * rsqrt(var(n) + 1e-5) * gamma(d) + beta(d)\n}\n",
                NULL)) {
        check_groups(&f, "row-reduction:6");
        CHECK(fx_tensor(&f, "mean")->internal && fx_tensor(&f, "xc")->internal &&
              fx_tensor(&f, "var")->internal);
        /* xc(n,d) * xc(n,d) is one operand read twice */
        CHECK_EQ_INT(f.g->ops[3].noperands, 2);
    }
    fx_close(&f);
}

/* conv1d: O(i) +=! K(x) * I(i + x) is generic, not a contraction: only K
 * misses the parallel index i, so there is no GEMM N dimension (a sliding
 * dot product), and the window index i + x is not a plain trailing dim, so
 * it is no row reduction either. conv2d with channels is an implicit GEMM. */
static void test_conv(void)
{
    fixture f;
    if (fx_open(&f, "def conv1d(float(M) I, float(N) K) -> (O) {\n"
                    "  O(i) +=! K(x) * I(i + x)\n}\n", NULL)) {
        check_groups(&f, "generic:1");
        const graph_index *ix = &f.g->ops[0].operands[2].idx[0];
        CHECK(ix->kind == GRAPH_IX_AFFINE && ix->var < 0);
        CHECK(ix->coef[0] == 1 && ix->coef[1] == 1 && ix->c == 0);
    }
    fx_close(&f);
    if (fx_open(&f, "def conv2d(float(B,IP,H,W) X, float(OP,IP,KH,KW) weight) -> (out) {\n"
                    "  out(b,op,h,w) +=! X(b,ip,h + kh,w + kw) * weight(op,ip,kh,kw)\n}\n",
                NULL)) {
        check_groups(&f, "contraction:1");
        CHECK(reason_has(&f, 0, "implicit GEMM"));
    }
    fx_close(&f);
    if (fx_open(&f, "def maxpool(float(B,C,H,W) X) -> (out) {\n"
                    "  out(b,c,i,j) max=! X(b,c,2*i + kh,2*j + kw) where kh in 0:2, kw in 0:2\n}\n",
                NULL)) {
        check_groups(&f, "generic:1");
        const graph_index *ix = &f.g->ops[0].operands[1].idx[2];
        CHECK(ix->kind == GRAPH_IX_AFFINE && ix->coef[2] == 2 && ix->coef[4] == 1);
    }
    fx_close(&f);
}

static void test_transpose_matmul(void)
{
    fixture f;
    if (fx_open(&f, "def tmm(float(M,K) A, float(K,N) B) -> (C) {\n"
                    "  AT(k,m) = A(m,k)\n"
                    "  C(m,n) +=! AT(k,m) * B(k,n)\n}\n", NULL)) {
        check_groups(&f, "elementwise:1 contraction:1");
        CHECK(!fx_tensor(&f, "AT")->internal);
    }
    fx_close(&f);
    /* a pure-map prologue (scaling) fuses into the contraction */
    if (fx_open(&f, "def smm(float(M,K) A, float(K,N) B) -> (C) {\n"
                    "  S(m,k) = 2 * A(m,k)\n"
                    "  C(m,n) +=! S(m,k) * B(k,n)\n}\n", NULL)) {
        check_groups(&f, "contraction:2");
        CHECK(fx_tensor(&f, "S")->internal);
    }
    fx_close(&f);
}

static void test_elementwise(void)
{
    fixture f;
    if (fx_open(&f, "def chain(float(N,D) X, float(D) b, float alpha) -> (Y) {\n"
                    "  t(n,d) = X(n,d) * alpha + b(d)\n"
                    "  u(n,d) = tanh(t(n,d))\n"
                    "  Y(n,d) = u(n,d) > 0 ? u(n,d) : 0.1 * t(n,d)\n}\n", NULL)) {
        check_groups(&f, "elementwise:3");
        CHECK(fx_tensor(&f, "t")->internal && fx_tensor(&f, "u")->internal);
        CHECK(fx_tensor(&f, "alpha")->kind == GRAPH_T_SCALAR);
    }
    fx_close(&f);
    /* overwriting, row by row, a tensor the group read across rows */
    if (fx_open(&f, "def inplace(float(N,N) X) -> (X) {\n"
                    "  t(i,j) = X(j,i) * 2\n"
                    "  X(i,j) = t(i,j) + 1\n}\n", NULL)) {
        check_groups(&f, "elementwise:1 elementwise:1");
        CHECK(fx_tensor(&f, "X")->kind == GRAPH_T_INOUT);
    }
    fx_close(&f);
    /* the same, read within the row: one group */
    if (fx_open(&f, "def inplace2(float(N,N) X) -> (X) {\n"
                    "  t(i,j) = X(i,j) * 2\n"
                    "  X(i,j) = t(i,j) + 1\n}\n", NULL))
        check_groups(&f, "elementwise:2");
    fx_close(&f);
    /* independent ops are not fused side by side */
    if (fx_open(&f, "def indep(float(N,D) X, float(N) Z) -> (Y, W) {\n"
                    "  Y(n,d) = X(n,d) * 2\n"
                    "  W(n) = Z(n) + 1\n}\n", NULL))
        check_groups(&f, "elementwise:1 elementwise:1");
    fx_close(&f);
    /* a transposed and a shifted read of a result go through memory */
    if (fx_open(&f, "def tr(float(N,D) X) -> (Y, Z) {\n"
                    "  t(n,d) = X(n,d) + 1\n"
                    "  Y(d,n) = t(n,d)\n"
                    "  Z(d,n) = Y(d,n + 1)\n}\n", NULL)) {
        check_groups(&f, "elementwise:1 elementwise:1 elementwise:1");
        CHECK(!fx_tensor(&f, "t")->internal);
    }
    fx_close(&f);
}

static void test_gather(void)
{
    fixture f;
    if (fx_open(&f, "def gather(float(N) X, int64(A,B) I) -> (Z) {\n"
                    "  Z(i,j) = X(I(i,j))\n}\n", NULL)) {
        check_groups(&f, "generic:1");
        CHECK(reason_has(&f, 0, "gather"));
        const graph_op *op = &f.g->ops[0];
        CHECK_EQ_INT(op->noperands, 3); /* Z, then I (nested), then X */
        int xo = op->body->operand;
        CHECK(op->operands[xo].idx[0].kind == GRAPH_IX_INDIRECT);
        CHECK(op->operands[3 - xo].identity);
    }
    fx_close(&f);
}

/* attention: one group (graph/attention.c) — QK^T, its scaling, the
 * softmax rows and PV with the division by the row sum; every
 * intermediate internal (the strategy keeps them on chip). */
static void test_attention(void)
{
    fixture f;
    if (fx_open(&f, "def attention(float(B,Tq,D) Q, float(B,Tk,D) K, float(B,Tk,E) V) -> (O) {\n"
                    "  scores(b,i,j) +=! Q(b,i,d) * K(b,j,d)\n"
                    "  scores(b,i,j) = scores(b,i,j) / sqrt(D)\n"
                    "  rowmax(b,i) max=! scores(b,i,j)\n"
                    "  p(b,i,j) = exp(scores(b,i,j) - rowmax(b,i))\n"
                    "  denom(b,i) +=! p(b,i,j)\n"
                    "  O(b,i,e) +=! p(b,i,j) * V(b,j,e)\n"
                    "  O(b,i,e) = O(b,i,e) / denom(b,i)\n}\n", NULL)) {
        check_groups(&f, "attention:7");
        CHECK(reason_has(&f, 0, "batch=(b)"));
        CHECK(reason_has(&f, 0, "1 score op"));
        CHECK(fx_tensor(&f, "rowmax")->internal);
        CHECK(fx_tensor(&f, "scores")->internal);
        CHECK(fx_tensor(&f, "p")->internal);
        CHECK(fx_tensor(&f, "denom")->internal);
        CHECK_EQ_INT(f.g->groups[0].rows, 2);
        /* the groups before the merge, for the scheduler's fallback */
        const graph_group *gr = &f.g->groups[0];
        CHECK_EQ_INT(gr->nparts, 3);
        if (gr->nparts == 3) {
            CHECK(gr->parts[0].strategy == GRAPH_CONTRACTION && gr->parts[0].nops == 2);
            CHECK(gr->parts[1].strategy == GRAPH_ROW_REDUCTION && gr->parts[1].nops == 3);
            CHECK(gr->parts[2].strategy == GRAPH_CONTRACTION && gr->parts[2].nops == 2);
            CHECK(graph_internal_to(f.g, fx_tensor(&f, "rowmax")->lt->index, &gr->parts[1]));
            CHECK(!graph_internal_to(f.g, fx_tensor(&f, "p")->lt->index, &gr->parts[1]));
            CHECK(graph_internal_to(f.g, fx_tensor(&f, "p")->lt->index, gr));
            CHECK_EQ_INT(gr->parts[1].noutputs, 2); /* p, denom */
        }
    }
    fx_close(&f);
    /* heads as a second batch dim, a causal mask and an additive mask
     * tensor, PV before the row sum: still one group */
    if (fx_open(&f, "def mha(float(B,H,T,D) Q, float(B,H,S,D) K, float(B,H,S,D) V, float(T,S) M, float sc) -> (O) {\n"
                    "  s(b,h,i,j) +=! Q(b,h,i,d) * K(b,h,j,d)\n"
                    "  t(b,h,i,j) = j <= i ? s(b,h,i,j) * sc + M(i,j) : -1e30\n"
                    "  m(b,h,i) max=! t(b,h,i,j)\n"
                    "  p(b,h,i,j) = exp(t(b,h,i,j) - m(b,h,i))\n"
                    "  O(b,h,i,e) +=! p(b,h,i,j) * V(b,h,j,e)\n"
                    "  l(b,h,i) +=! p(b,h,i,j)\n"
                    "  O(b,h,i,e) = O(b,h,i,e) / l(b,h,i)\n}\n", NULL)) {
        check_groups(&f, "attention:7");
        CHECK(reason_has(&f, 0, "batch=(b,h)"));
    }
    fx_close(&f);
    /* the scores read after the softmax (returned): not merged */
    if (fx_open(&f, "def att2(float(B,Tq,D) Q, float(B,Tk,D) K, float(B,Tk,E) V) -> (O, p) {\n"
                    "  s(b,i,j) +=! Q(b,i,d) * K(b,j,d)\n"
                    "  m(b,i) max=! s(b,i,j)\n"
                    "  p(b,i,j) = exp(s(b,i,j) - m(b,i))\n"
                    "  l(b,i) +=! p(b,i,j)\n"
                    "  O(b,i,e) +=! p(b,i,j) * V(b,j,e)\n"
                    "  O(b,i,e) = O(b,i,e) / l(b,i)\n}\n", NULL)) {
        check_groups(&f, "contraction:1 row-reduction:3 contraction:2");
    }
    fx_close(&f);
}

static void test_mlp(void)
{
    fixture f;
    if (fx_open(&f, "def mlp3(float(B,I) X, float(H1,I) W1, float(H1) B1, float(H2,H1) W2,\n"
                    "         float(H2) B2, float(O,H2) W3, float(O) B3) -> (Y) {\n"
                    "  h1(b,o) +=! X(b,i) * W1(o,i)\n"
                    "  h1(b,o) = fmaxf(h1(b,o) + B1(o), 0)\n"
                    "  h2(b,o) +=! h1(b,i) * W2(o,i)\n"
                    "  h2(b,o) = fmaxf(h2(b,o) + B2(o), 0)\n"
                    "  Y(b,o) +=! h2(b,i) * W3(o,i)\n"
                    "  Y(b,o) = fmaxf(Y(b,o) + B3(o), 0)\n}\n", NULL)) {
        check_groups(&f, "contraction:2 contraction:2 contraction:2");
        CHECK(!fx_tensor(&f, "h1")->internal && !fx_tensor(&f, "h2")->internal);
        CHECK(fx_tensor(&f, "h1")->kind == GRAPH_T_TEMP);
    }
    fx_close(&f);
}

static void test_other_reductions(void)
{
    fixture f;
    /* matrix-vector: every parallel var in A, so no GEMM: a row reduction */
    if (fx_open(&f, "def mv(float(M,K) A, float(K) x) -> (C) {\n"
                    "  C(i) +=! A(i,k) * x(k)\n}\n", NULL))
        check_groups(&f, "row-reduction:1");
    fx_close(&f);
    /* column sums: the reduction runs across rows */
    if (fx_open(&f, "def colsum(float(M,N) X) -> (S) {\n"
                    "  S(j) +=! X(i,j)\n}\n", NULL)) {
        check_groups(&f, "generic:1");
        CHECK(reason_has(&f, 0, "not along trailing"));
    }
    fx_close(&f);
    /* a full reduction has no rows to spread over */
    if (fx_open(&f, "def total(float(N) X) -> (S) {\n"
                    "  S() +=! X(i)\n}\n", NULL))
        check_groups(&f, "generic:1");
    fx_close(&f);
    /* a later row reduction over a contraction's result: new group */
    if (fx_open(&f, "def mmsum(float(M,K) A, float(K,N) B) -> (S) {\n"
                    "  C(m,n) +=! A(m,k) * B(k,n)\n"
                    "  S(m) +=! C(m,n)\n}\n", NULL))
        check_groups(&f, "contraction:1 row-reduction:1");
    fx_close(&f);
}

/* A random-length pointwise chain stays one group; a transposed read at a
 * random position splits it there. */
static void test_random_chain(void)
{
    for (int round = 0; round < 8; round++) {
        int n = (int)test_rand_int(1, 6), cut = (int)test_rand_int(1, n); /* inclusive */
        bool transpose = round % 2 == 1 && cut < n;
        strbuf s = {0};
        sb_puts(&s, "def chain(float(N,N) X) -> (Y) {\n  t0(a,b) = X(a,b) * 3\n");
        for (int i = 1; i < n; i++) {
            if (transpose && i == cut) sb_printf(&s, "  t%d(a,b) = t%d(b,a) + 1\n", i, i - 1);
            else sb_printf(&s, "  t%d(a,b) = exp(t%d(a,b)) - %d\n", i, i - 1, i);
        }
        sb_printf(&s, "  Y(a,b) = t%d(a,b)\n}\n", n - 1);
        fixture f;
        if (fx_open(&f, sb_str(&s), NULL)) {
            if (transpose) {
                char want[64];
                snprintf(want, sizeof want, "elementwise:%d elementwise:%d", cut, n + 1 - cut);
                check_groups(&f, want);
                CHECK(!fx_tensor(&f, "t0")->internal || cut > 1);
            } else {
                char want[32];
                snprintf(want, sizeof want, "elementwise:%d", n + 1);
                check_groups(&f, want);
            }
        }
        fx_close(&f);
        sb_free(&s);
    }
}

/* Bind random sizes (1, primes, others) and check the printed boxes. */
static void test_bind_print(void)
{
    fixture f;
    if (!fx_open(&f, "def matmul(float(M,K) A, float(K,N) B) -> (C) {\n"
                     "  C(m,n) +=! A(m,k) * B(k,n)\n}\n", NULL))
        goto out;
    strbuf p = {0};
    graph_print(&p, f.g);
    CHECK(strstr(sb_str(&p), "group 0: contraction (GEMM") != NULL);
    CHECK(strstr(sb_str(&p), "k in [0, K) reduction(+=!)") != NULL);
    sb_free(&p);
    static const int64_t pick[] = {1, 2, 7, 13, 31, 64, 97, 130};
    int64_t sizes[3];
    for (int s = 0; s < f.def->nsizes && s < 3; s++)
        sizes[s] = pick[test_rand_int(0, (long)TSL_COUNTOF(pick) - 1)];
    lang_bound *bd = NULL;
    int st = lang_bind(f.a, f.def, sizes, &bd, &f.d);
    CHECK_MSG(st == 0, "%s", sb_str(&f.d.msg));
    if (st == 0) {
        graph_bind(f.a, f.g, bd);
        graph_print(&p, f.g);
        char want[96];
        int km = lang_def_size_slot(f.def, "K"), mm = lang_def_size_slot(f.def, "M");
        snprintf(want, sizeof want, "k in [0, %lld) reduction", (long long)sizes[km]);
        CHECK_MSG(strstr(sb_str(&p), want) != NULL, "%s not in\n%s", want, sb_str(&p));
        snprintf(want, sizeof want, "A        float32 input (%lld, %lld)", (long long)sizes[mm],
                 (long long)sizes[km]);
        CHECK_MSG(strstr(sb_str(&p), want) != NULL, "%s not in\n%s", want, sb_str(&p));
        sb_free(&p);
    }
out:
    fx_close(&f);
}

/* Every def of every example builds, groups consistently and prints. */
static void test_examples(void)
{
    static const char *const names[] = {
        "attention", "conv1d", "conv2d", "fcrelu", "gather", "group_conv", "layernorm",
        "lstm", "lut2", "matmul", "maxpool2x2", "mlp3", "mv", "outer_product_mm",
        "sconv2d", "sgemm", "softmax", "tmm"};
    for (size_t i = 0; i < TSL_COUNTOF(names); i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/examples/%s.tc", test_root(), names[i]);
        char *text = file_read_all(path, NULL);
        if (!text) continue; /* examples are another engineer's; absent is fine */
        tsl_arena *a = arena_create();
        tsl_diag d = {0};
        tsl_source src = {path, text};
        lang_module *m = lang_parse_check(a, &src, &d);
        CHECK_MSG(m != NULL, "%s: %s", names[i], sb_str(&d.msg));
        for (int k = 0; m && k < lang_module_count(m); k++) {
            graph *g = graph_build(a, lang_module_def(m, k), &d);
            CHECK(g && g->ngroups >= 1);
            int next = 0;
            for (int gi = 0; g && gi < g->ngroups; gi++) {
                CHECK_EQ_INT(g->groups[gi].first, next);
                next += g->groups[gi].nops;
                CHECK(g->groups[gi].reason && g->groups[gi].reason[0]);
            }
            CHECK(!g || next == g->nops);
            strbuf p = {0};
            if (g) graph_print(&p, g);
            CHECK(strstr(sb_str(&p), "group 0:") != NULL);
            sb_free(&p);
        }
        diag_free(&d);
        arena_free(a);
        free(text);
    }
}

TEST_SUITE(graph) = {
    {"matmul", test_matmul},
    {"fcrelu", test_fcrelu},
    {"softmax", test_softmax},
    {"layernorm", test_layernorm},
    {"conv", test_conv},
    {"transpose_matmul", test_transpose_matmul},
    {"elementwise", test_elementwise},
    {"gather", test_gather},
    {"attention", test_attention},
    {"mlp", test_mlp},
    {"other_reductions", test_other_reductions},
    {"random_chain", test_random_chain},
    {"bind_print", test_bind_print},
    {"examples", test_examples},
    {0},
};
