/* softmax.c — the online softmax block (softmax.h): running row max and
 * sum over streamed score blocks, rescaling the accumulator, the final
 * divide; written as tile text for the strategies that assemble kernels as
 * text (attention.c). */
#include <stdio.h>

#include "sched/softmax.h"

void sched_softmax_online_init(strbuf *b, const sched_softmax *s, const char *in)
{
    sb_printf(b, "%s%s = alloc register f32[%d, 1] layout %s init -inf\n", in, s->m, s->rows, s->lay_row);
    sb_printf(b, "%s%s = alloc register f32[%d, 1] layout %s init 0.0\n", in, s->l, s->rows, s->lay_row);
    sb_printf(b, "%s%s = alloc register f32[%d, %d] layout %s init 0.0\n", in, s->acc, s->rows, s->n, s->lay_acc);
}

void sched_softmax_online_step(strbuf *b, const sched_softmax *s, const char *in, const char *x, int k, char *p,
                               size_t n)
{
    const char *q = s->pre;
    int r = s->rows, c = s->cols;
    /* the block's row max, the new running max, and the max used for the
     * subtraction (0 where it is still -inf) */
    sb_printf(b, "%s%sbm%d = reduce.max %s -> register f32[%d, 1] layout %s dim 1\n", in, q, k, x, r, s->lay_row);
    sb_printf(b, "%s%smn%d = max %s, %sbm%d\n", in, q, k, s->m, q, k);
    sb_printf(b, "%s%sinf%d = eq %smn%d, -inf\n", in, q, k, q, k);
    sb_printf(b, "%s%sms%d = select %sinf%d, 0.0, %smn%d\n", in, q, k, q, k, q, k);
    sb_printf(b, "%s%sal0_%d = sub %s, %sms%d\n", in, q, k, s->m, q, k);
    sb_printf(b, "%s%sal%d = exp %sal0_%d\n", in, q, k, q, k);
    sb_printf(b, "%smax %s, %sbm%d -> %s\n", in, s->m, q, k, s->m);
    sb_printf(b, "%s%smb%d = broadcast %sms%d -> register f32[%d, %d] layout %s dim 1\n", in, q, k, q, k, r, c,
              s->lay);
    sb_printf(b, "%s%sdx%d = sub %s, %smb%d\n", in, q, k, x, q, k);
    sb_printf(b, "%s%sp%d = exp %sdx%d\n", in, q, k, q, k);
    sb_printf(b, "%s%srs%d = reduce.sum %sp%d -> register f32[%d, 1] layout %s dim 1\n", in, q, k, q, k, r,
              s->lay_row);
    sb_printf(b, "%s%sl1_%d = mul %s, %sal%d\n", in, q, k, s->l, q, k);
    sb_printf(b, "%sadd %sl1_%d, %srs%d -> %s\n", in, q, k, q, k, s->l);
    sb_printf(b, "%s%salb%d = broadcast %sal%d -> register f32[%d, %d] layout %s dim 1\n", in, q, k, q, k, r, s->n,
              s->lay_acc);
    sb_printf(b, "%smul %s, %salb%d -> %s\n", in, s->acc, q, k, s->acc);
    snprintf(p, n, "%sp%d", q, k);
}

void sched_softmax_online_finish(strbuf *b, const sched_softmax *s, const char *in, char *out, size_t n)
{
    const char *q = s->pre;
    sb_printf(b, "%s%slb = broadcast %s -> register f32[%d, %d] layout %s dim 1\n", in, q, s->l, s->rows, s->n,
              s->lay_acc);
    sb_printf(b, "%s%sres = div %s, %slb\n", in, q, s->acc, q);
    snprintf(out, n, "%sres", q);
}
