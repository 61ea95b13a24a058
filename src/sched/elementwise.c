/* elementwise.c — the elementwise strategy and the dispatch of the fast
 * strategies (strategy.h).
 *
 * A group with no reduction, every op over the same box, becomes one
 * kernel through the row engine (rowred.c) in one of two forms:
 *   flat  every read and write is the op's own index list over the whole
 *         tensor: the box is one long row, each block one contiguous chunk
 *         of SCHED_EW_WIDTH elements (spatial(T).local(E): wide loads and
 *         stores), internal temporaries recomputed in registers;
 *   row   otherwise, when every read is the identity, a row scalar
 *         (s(n) over out(n,d)) or a column vector (bias(d) over out(n,d)):
 *         rows = niter - 1, one block per row streaming its chunks, so a
 *         broadcast operand costs no index arithmetic at all.
 * Anything else (transposes, shifted or gathered reads) stays generic. */
#include <stdlib.h>
#include <string.h>

#include "sched/strategy.h"
#include "sched/strategy_int.h"

int sched_lower_elementwise(sched_plan *p, const graph *g, const graph_group *grp)
{
    if (sched_rr_lower(p, g, grp, 0, 1, "elementwise")) return 1;
    int niter = g->ops[grp->first].niter;
    if (niter >= 2 && sched_rr_lower(p, g, grp, niter - 1, 0, "elementwise")) return 1;
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
