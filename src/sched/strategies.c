/* strategies.c — the fast strategies as one table (docs/sched.md,
 * "Strategies and their building blocks"): sched_lower_strategy tries, in
 * row order, every row whose graph class matches the group (or that takes
 * any group); the first that lowers it wins. A new strategy is its file
 * plus one row here. */
#include "sched/strategy.h"

typedef struct sched_strategy {
    const char *name;
    int any;                    /* tried on every group (it recognises its own shape) */
    graph_strategy cls;         /* else: the graph class it takes */
    int (*lower)(sched_plan *p, const graph *g, const graph_group *grp);
} sched_strategy;

static const sched_strategy strategies[] = {
    /* first: a quantized matmul's group is classed as a contraction or a
     * reduction, and its own plan beats both */
    {"qmatmul", 1, GRAPH_CONTRACTION, sched_lower_qmatmul},
    {"rowred", 0, GRAPH_ROW_REDUCTION, sched_lower_rowred},
    {"elementwise", 0, GRAPH_ELEMENTWISE, sched_lower_elementwise},
    {"contract", 0, GRAPH_CONTRACTION, sched_lower_contract},
    {"attention", 0, GRAPH_ATTENTION, sched_lower_attention},
    {"gemm-chain", 0, GRAPH_GEMM_CHAIN, sched_lower_gemm_chain},
    {"lstm", 0, GRAPH_LSTM, sched_lower_lstm},
};

int sched_lower_strategy(sched_plan *p, const graph *g, const graph_group *grp)
{
    if (p->opt->generic) return 0;
    for (size_t i = 0; i < sizeof strategies / sizeof strategies[0]; i++) {
        const sched_strategy *s = &strategies[i];
        if ((s->any || grp->strategy == s->cls) && s->lower(p, g, grp)) return 1;
    }
    return 0;
}
