/* interp_mem.c — one block's shared memory for the tile interpreter:
 * bytes with per-byte hazard state, barrier epochs and cp.async groups
 * (the rules are in interp_mem.h). Knows nothing of tensors or layouts;
 * the interpreter turns a hazard into a message naming the tensor. */
#include <stdlib.h>
#include <string.h>

#include "tile/interp_mem.h"

int imem_init(imem_shared *s, size_t size)
{
    memset(s, 0, sizeof *s);
    s->size = size;
    size_t n = size ? size : 1;
    s->data = malloc(n);
    s->writer = malloc(n * sizeof *s->writer);
    s->wepoch = malloc(n * sizeof *s->wepoch);
    s->reader = malloc(n * sizeof *s->reader);
    s->repoch = malloc(n * sizeof *s->repoch);
    s->pending = malloc(n * sizeof *s->pending);
    if (!s->data || !s->writer || !s->wepoch || !s->reader || !s->repoch || !s->pending) {
        imem_free(s);
        return -1;
    }
    imem_reset(s);
    return 0;
}

void imem_free(imem_shared *s)
{
    free(s->data);
    free(s->writer);
    free(s->wepoch);
    free(s->reader);
    free(s->repoch);
    free(s->pending);
    free(s->copies);
    free(s->stage);
    memset(s, 0, sizeof *s);
}

void imem_reset(imem_shared *s)
{
    memset(s->data, 0xAB, s->size);
    for (size_t i = 0; i < s->size; i++) {
        s->writer[i] = -1;
        s->reader[i] = -1;
        s->pending[i] = -1;
        s->wepoch[i] = s->repoch[i] = 0;
    }
    s->epoch = 1;
    s->ncopies = 0;
    s->nstage = 0;
    s->next_group = 0;
    s->oldest_group = 0;
}

static int in_bounds(const imem_shared *s, size_t off, size_t n)
{
    return off <= s->size && n <= s->size - off;
}

imem_hazard imem_read(imem_shared *s, size_t off, size_t n, int thread, void *out, int *other)
{
    *other = -1;
    if (!in_bounds(s, off, n)) return IMEM_OOB;
    for (size_t i = off; i < off + n; i++) {
        if (s->pending[i] >= 0) {
            *other = s->copies[s->pending[i]].thread;
            return IMEM_PENDING_READ;
        }
        if (s->writer[i] >= 0 && s->writer[i] != thread && s->wepoch[i] == s->epoch) {
            *other = s->writer[i];
            return IMEM_RAW;
        }
    }
    for (size_t i = off; i < off + n; i++) {
        if (s->repoch[i] != s->epoch || s->reader[i] == -1) s->reader[i] = thread;
        else if (s->reader[i] != thread) s->reader[i] = -2;
        s->repoch[i] = s->epoch;
    }
    memcpy(out, s->data + off, n);
    return IMEM_OK;
}

/* The hazards of thread writing byte i now. */
static imem_hazard write_check(const imem_shared *s, size_t i, int thread, int *other)
{
    if (s->pending[i] >= 0) {
        *other = s->copies[s->pending[i]].thread;
        return IMEM_PENDING_WRITE;
    }
    if (s->writer[i] >= 0 && s->writer[i] != thread && s->wepoch[i] == s->epoch) {
        *other = s->writer[i];
        return IMEM_WAW;
    }
    if (s->repoch[i] == s->epoch && s->reader[i] != -1 && s->reader[i] != thread) {
        *other = s->reader[i] >= 0 ? s->reader[i] : -1;
        return IMEM_WAR;
    }
    return IMEM_OK;
}

imem_hazard imem_write(imem_shared *s, size_t off, size_t n, int thread, const void *src,
                       int *other)
{
    *other = -1;
    if (!in_bounds(s, off, n)) return IMEM_OOB;
    for (size_t i = off; i < off + n; i++) {
        imem_hazard h = write_check(s, i, thread, other);
        if (h) return h;
    }
    memcpy(s->data + off, src, n);
    for (size_t i = off; i < off + n; i++) {
        s->writer[i] = thread;
        s->wepoch[i] = s->epoch;
    }
    return IMEM_OK;
}

imem_hazard imem_copy_async(imem_shared *s, size_t off, size_t n, int thread, const void *src,
                            int *other)
{
    *other = -1;
    if (!in_bounds(s, off, n)) return IMEM_OOB;
    for (size_t i = off; i < off + n; i++) {
        imem_hazard h = write_check(s, i, thread, other);
        if (h) return h;
    }
    if (s->ncopies == s->capcopies) {
        int nc = s->capcopies ? 2 * s->capcopies : 64;
        imem_copy *c = realloc(s->copies, (size_t)nc * sizeof *c);
        if (!c) return IMEM_OOB;
        s->copies = c;
        s->capcopies = nc;
    }
    if (s->nstage + n > s->capstage) {
        size_t nc = s->capstage ? 2 * s->capstage : 4096;
        while (nc < s->nstage + n) nc *= 2;
        uint8_t *st = realloc(s->stage, nc);
        if (!st) return IMEM_OOB;
        s->stage = st;
        s->capstage = nc;
    }
    memcpy(s->stage + s->nstage, src, n);
    s->copies[s->ncopies] = (imem_copy){.off = off, .n = n, .src = s->nstage, .thread = thread,
                                        .group = -1};
    for (size_t i = off; i < off + n; i++) s->pending[i] = s->ncopies;
    s->ncopies++;
    s->nstage += n;
    return IMEM_OK;
}

void imem_commit(imem_shared *s)
{
    int g = s->next_group++;
    for (int i = 0; i < s->ncopies; i++)
        if (s->copies[i].n && s->copies[i].group == -1) s->copies[i].group = g;
}

/* Land one copy: its bytes become a write by the issuing thread now. */
static void complete(imem_shared *s, imem_copy *c)
{
    memcpy(s->data + c->off, s->stage + c->src, c->n);
    for (size_t i = c->off; i < c->off + c->n; i++) {
        s->pending[i] = -1;
        s->writer[i] = c->thread;
        s->wepoch[i] = s->epoch;
    }
    c->n = 0;
}

void imem_wait(imem_shared *s, int keep)
{
    int upto = s->next_group - (keep < 0 ? 0 : keep); /* groups below complete */
    int live = 0;
    for (int i = 0; i < s->ncopies; i++) {
        imem_copy *c = &s->copies[i];
        if (c->n && c->group >= 0 && c->group < upto) complete(s, c);
        if (c->n) live++;
    }
    if (upto > s->oldest_group) s->oldest_group = upto;
    /* Compact: keep only copies in flight (their staged bytes move down and
     * the pending marks follow their new index). */
    if (live * 2 + 64 < s->ncopies) {
        int j = 0;
        size_t at = 0;
        for (int i = 0; i < s->ncopies; i++) {
            imem_copy c = s->copies[i];
            if (!c.n) continue;
            memmove(s->stage + at, s->stage + c.src, c.n);
            c.src = at;
            at += c.n;
            for (size_t b = c.off; b < c.off + c.n; b++) s->pending[b] = j;
            s->copies[j++] = c;
        }
        s->ncopies = j;
        s->nstage = at;
    }
}

void imem_sync(imem_shared *s)
{
    s->epoch++;
}

int imem_pending_count(const imem_shared *s)
{
    int n = 0;
    for (int i = 0; i < s->ncopies; i++) n += s->copies[i].n != 0;
    return n;
}

const char *imem_hazard_text(imem_hazard h)
{
    switch (h) {
    case IMEM_OK: return "no hazard";
    case IMEM_RAW: return "read after another thread's write with no synchronize between";
    case IMEM_WAR: return "write over an element another thread read with no synchronize between";
    case IMEM_WAW: return "write over an element another thread wrote with no synchronize between";
    case IMEM_PENDING_READ:
        return "read before the cp.async that writes it completed (missing wait?)";
    case IMEM_PENDING_WRITE: return "write over an element a pending cp.async writes (missing wait?)";
    case IMEM_OOB: return "access outside the block's shared memory";
    }
    return "hazard";
}
