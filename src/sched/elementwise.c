/* elementwise.c — the elementwise strategy (stub) and the dispatch. */
#include <stdlib.h>
#include <string.h>

#include "sched/strategy.h"

int sched_lower_elementwise(sched_plan *p, const graph *g, const graph_group *grp)
{
    (void)p;
    (void)g;
    (void)grp;
    return 0;
}

int sched_lower_strategy(sched_plan *p, const graph *g, const graph_group *grp)
{
    const char *env = getenv("TESSEL_SCHED");
    if (env && !strcmp(env, "generic")) return 0;
    if (grp->strategy == GRAPH_ROW_REDUCTION) return sched_lower_rowred(p, g, grp);
    if (grp->strategy == GRAPH_ELEMENTWISE) return sched_lower_elementwise(p, g, grp);
    if (grp->strategy == GRAPH_CONTRACTION) return sched_lower_contract(p, g, grp);
    return 0;
}
