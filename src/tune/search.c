/* search.c — the candidates a tuning session tries (tune.h), after Tensor
 * Comprehensions' autotuner: the space is the options table
 * (sched/options.c) cut to the parameters of one target; random search
 * draws every parameter from its values; genetic search keeps the best
 * few (elites), picks parents in proportion to their speed, builds a child
 * by three-parent uniform crossover (each parameter from one of three
 * parents) and mutates each parameter with a small probability. Only
 * candidates the validity check accepts and that were not tried before
 * are proposed; what the check rejects is counted with its reason. */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "sched/sched.h"
#include "tune/tune.h"

void tune_space_init(tune_space *s, tsl_target t)
{
    memset(s, 0, sizeof *s);
    s->target = t;
    int n = 0;
    const sched_option *tab = sched_option_table(&n);
    for (int i = 0; i < n && s->n < TUNE_MAX_PARAMS; i++)
        if (tab[i].targets & (1u << t)) s->param[s->n++] = &tab[i];
}

/* def's plan under o at sm (sched_print), or NULL when it does not
 * schedule; the plan in an arena of its own, gone when printed. */
static char *plan_text(const graph *g, tsl_target t, int sm, const sched_options *o)
{
    tsl_arena *a = arena_create();
    tsl_diag d = {0};
    sched_plan *p = a ? sched_lower_opt(a, g, t, sm, o, &d) : NULL;
    diag_free(&d);
    char *text = NULL;
    if (p) {
        strbuf b = {0};
        sched_print(&b, p);
        text = sb_take(&b);
    }
    if (a) arena_free(a);
    return text;
}

/* Is p read when a plan runs rather than when it is scheduled? */
static int read_at_run(const sched_option *p) { return !strcmp(p->strategy, "run"); }

/* The first value of p (other than base's) whose plan differs from
 * base's texts on a probed arch (a plan that fails differs too). With
 * out, only a value whose plan schedules on every arch counts, and its
 * options and plan texts go to *out and outt[] (the caller frees them). */
static int first_change(const graph *g, const tune_space *s, const int *sms, int nsm, char *const *texts,
                        const sched_options *base, const sched_option *p, sched_options *out, char **outt)
{
    int was = sched_option_get(base, p);
    for (int v = 0; v < p->nvalues; v++) {
        if (p->values[v] == was) continue;
        sched_options o = *base;
        sched_option_set(&o, p, p->values[v]);
        char why[160];
        if (sched_options_check(&o, s->target, why, sizeof why)) continue;
        char *t[2] = {NULL, NULL};
        int differs = 0, all = 1;
        for (int k = 0; k < nsm && (out || !differs); k++) {
            t[k] = plan_text(g, s->target, sms[k], &o);
            differs |= !t[k] || strcmp(t[k], texts[k]) != 0;
            all &= t[k] != NULL;
        }
        if (differs && out && all) {
            *out = o;
            outt[0] = t[0], outt[1] = t[1];
            return 1;
        }
        free(t[0]);
        free(t[1]);
        if (differs && !out) return 1;
    }
    return 0;
}

/* Does a value of p other than base's change the plan? */
static int changes_plan(const graph *g, const tune_space *s, const int *sms, int nsm, char *const *texts,
                        const sched_options *base, const sched_option *p)
{
    return first_change(g, s, sms, nsm, texts, base, p, NULL, NULL);
}

/* The TC space is every parameter of the target; most leave a given
 * program's plan as it is (a matmul's plan reads no LSTM or attention
 * option), and a search that redraws them times the same plan again and
 * again: on an H200 the quantized GEMV at 57344 x 8192 tried 3 candidates
 * in a 40 s budget and missed the one option that made it 1.25x faster.
 * A parameter that matters only beside another's value (qmatmul.dequant
 * only with qmatmul.mma=0) is found by a second pass: from the first
 * plan-changing value of a strategy's first live parameter, the cut
 * parameters of that strategy are tried again. */
int tune_space_cut(tune_space *s, const lang_def *def)
{
    tsl_arena *a = arena_create();
    tsl_diag d = {0};
    graph *g = a ? graph_build(a, def, &d) : NULL;
    diag_free(&d);
    const int sms[2] = {80, 90};
    int nsm = s->target == TSL_TARGET_CUDA ? 2 : 1, n = s->n;
    char *base[2] = {NULL, NULL};
    int ok = g != NULL;
    for (int k = 0; ok && k < nsm; k++) ok = (base[k] = plan_text(g, s->target, sms[k], &sched_options_defaults)) != NULL;
    char live[TUNE_MAX_PARAMS] = {0}, first[TUNE_MAX_PARAMS] = {0};
    for (int i = 0; ok && i < n; i++)
        live[i] = read_at_run(s->param[i]) || changes_plan(g, s, sms, nsm, base, &sched_options_defaults, s->param[i]);
    memcpy(first, live, sizeof live);
    for (int i = 0; ok && i < n; i++) {
        const sched_option *p = s->param[i];
        if (!first[i] || read_at_run(p) || !strcmp(p->strategy, "all")) continue;
        int same = 0, earlier = 0; /* cut parameters of p's strategy left to try; a base for it already */
        for (int j = 0; j < n; j++) {
            same += !live[j] && !strcmp(s->param[j]->strategy, p->strategy);
            earlier |= j < i && first[j] && !read_at_run(s->param[j]) && !strcmp(s->param[j]->strategy, p->strategy);
        }
        if (!same || earlier) continue;
        /* p's first value that changes the plan (and schedules), as the base */
        sched_options o;
        char *texts[2] = {NULL, NULL};
        int found = first_change(g, s, sms, nsm, base, &sched_options_defaults, p, &o, texts);
        for (int j = 0; found && j < n; j++)
            if (!live[j] && !strcmp(s->param[j]->strategy, p->strategy))
                live[j] = changes_plan(g, s, sms, nsm, texts, &o, s->param[j]);
        free(texts[0]);
        free(texts[1]);
    }
    int cut = 0;
    for (int i = 0; ok && i < n; i++) {
        if (!live[i]) {
            cut++;
            continue;
        }
        s->param[i - cut] = s->param[i];
    }
    s->n -= cut;
    free(base[0]);
    free(base[1]);
    if (a) arena_free(a);
    return cut;
}

uint64_t tune_rand(uint64_t *rng)
{
    /* splitmix64: fine and cheap for choosing among a handful of values */
    uint64_t z = (*rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int pick(uint64_t *rng, int n) { return n > 0 ? (int)(tune_rand(rng) % (uint64_t)n) : 0; }

void tune_random(const tune_space *s, uint64_t *rng, sched_options *out)
{
    *out = sched_options_defaults;
    for (int i = 0; i < s->n; i++) {
        const sched_option *p = s->param[i];
        sched_option_set(out, p, p->values[pick(rng, p->nvalues)]);
    }
}

void tune_crossover(const tune_space *s, const sched_options *a, const sched_options *b, const sched_options *c,
                    uint64_t *rng, sched_options *out)
{
    const sched_options *par[3] = {a, b, c};
    *out = *a;
    for (int i = 0; i < s->n; i++) sched_option_set(out, s->param[i], sched_option_get(par[pick(rng, 3)], s->param[i]));
}

void tune_mutate(const tune_space *s, double rate, uint64_t *rng, sched_options *o)
{
    for (int i = 0; i < s->n; i++) {
        if ((double)(tune_rand(rng) >> 11) / 9007199254740992.0 >= rate) continue;
        const sched_option *p = s->param[i];
        sched_option_set(o, p, p->values[pick(rng, p->nvalues)]);
    }
}

/* ---- a generation ---------------------------------------------------------------------------- */

int tune_tried(const tune_search *g, const char *text)
{
    for (int i = 0; i < g->ntried; i++)
        if (!strcmp(g->tried[i], text)) return 1;
    return 0;
}

void tune_remember(tune_search *g, const char *text)
{
    if (g->ntried == g->cap) {
        int cap = g->cap ? 2 * g->cap : 64;
        char **t = realloc(g->tried, sizeof *t * (size_t)cap);
        if (!t) return;
        g->tried = t;
        g->cap = cap;
    }
    g->tried[g->ntried++] = strdup(text);
}

void tune_search_free(tune_search *g)
{
    for (int i = 0; i < g->ntried; i++) free(g->tried[i]);
    free(g->tried);
    memset(g, 0, sizeof *g);
}

/* A parent drawn in proportion to its speed (1 / time). */
static const sched_options *roulette(const tune_scored *pop, int n, uint64_t *rng)
{
    double total = 0;
    for (int i = 0; i < n; i++) total += 1 / pop[i].ms;
    double x = (double)(tune_rand(rng) >> 11) / 9007199254740992.0 * total;
    for (int i = 0; i < n; i++) {
        x -= 1 / pop[i].ms;
        if (x <= 0) return &pop[i].opt;
    }
    return &pop[n - 1].opt;
}

int tune_propose(tune_search *g, const tune_space *s, const tune_scored *best, int nbest, int want,
                 sched_options *out, char (*why)[160])
{
    int n = 0;
    for (int tries = 0; n < want && tries < 200 * want; tries++) {
        sched_options o;
        /* elites go on as they are (already timed); children need three
         * timed parents, else the draw is random */
        if (!g->random && nbest >= 1 && tries % 8 != 7) {
            const sched_options *a = roulette(best, nbest, &g->rng), *b = roulette(best, nbest, &g->rng),
                                *c = roulette(best, nbest, &g->rng);
            tune_crossover(s, a, b, c, &g->rng, &o);
            tune_mutate(s, g->mutation, &g->rng, &o);
        } else {
            tune_random(s, &g->rng, &o);
        }
        strbuf text = {0};
        sched_options_text(&text, &o);
        char reason[160];
        if (sched_options_check(&o, s->target, reason, sizeof reason)) {
            g->rejected++;
            if (why) snprintf(why[0], sizeof why[0], "%s", reason);
        } else if (!tune_tried(g, sb_str(&text))) {
            tune_remember(g, sb_str(&text));
            out[n++] = o;
        }
        sb_free(&text);
    }
    return n;
}
