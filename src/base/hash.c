/* hash.c — 64-bit FNV-1a for cache keys, and the string map behind
 * symbol tables. */
#include <string.h>

#include "base.h"

uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

uint64_t hash_str(uint64_t h, const char *s) { return hash_bytes(h, s, strlen(s) + 1); }

uint64_t hash_u64(uint64_t h, uint64_t v) { return hash_bytes(h, &v, sizeof v); }

/* ---- string map ---------------------------------------------------------
 * Open addressing with linear probing; the table doubles at half full, in
 * the arena (the old table is left there: at most as much again). */

void strmap_init(strmap *m, tsl_arena *a)
{
    memset(m, 0, sizeof *m);
    m->a = a;
}

static strmap_slot *strmap_slot_of(const strmap *m, const char *key, size_t len, uint64_t h)
{
    size_t mask = m->cap - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        strmap_slot *s = &m->slot[i];
        if (!s->key || (s->h == h && s->len == len && !memcmp(s->key, key, len))) return s;
    }
}

int64_t *strmap_find(const strmap *m, const char *key, size_t len)
{
    if (!m->cap) return NULL;
    strmap_slot *s = strmap_slot_of(m, key, len, hash_bytes(HASH_SEED, key, len));
    return s->key ? &s->val : NULL;
}

void strmap_put(strmap *m, const char *key, size_t len, int64_t val)
{
    if (2 * (m->n + 1) > m->cap) {
        strmap old = *m;
        m->cap = m->cap ? 2 * m->cap : 16;
        m->slot = arena_alloc(m->a, sizeof(strmap_slot) * m->cap);
        for (size_t i = 0; i < old.cap; i++)
            if (old.slot[i].key) *strmap_slot_of(m, old.slot[i].key, old.slot[i].len, old.slot[i].h) = old.slot[i];
    }
    uint64_t h = hash_bytes(HASH_SEED, key, len);
    strmap_slot *s = strmap_slot_of(m, key, len, h);
    if (!s->key) {
        *s = (strmap_slot){key, len, h, 0};
        m->n++;
    }
    s->val = val;
}

/* ---- int map ------------------------------------------------------------ */

static imap_slot *imap_slot_of(const imap *m, int64_t key)
{
    size_t mask = m->cap - 1;
    for (size_t i = (size_t)(hash_u64(HASH_SEED, (uint64_t)key)) & mask;; i = (i + 1) & mask) {
        imap_slot *s = &m->slot[i];
        if (!s->used || s->key == key) return s;
    }
}

void imap_init(imap *m, tsl_arena *a)
{
    memset(m, 0, sizeof *m);
    m->a = a;
}

void *imap_get(const imap *m, int64_t key)
{
    if (!m->cap) return NULL;
    const imap_slot *s = imap_slot_of(m, key);
    return s->used ? s->val : NULL;
}

void imap_put(imap *m, int64_t key, void *val)
{
    if (2 * (m->n + 1) > m->cap) {
        imap old = *m;
        m->cap = m->cap ? 2 * m->cap : 16;
        m->slot = arena_alloc(m->a, sizeof(imap_slot) * m->cap);
        for (size_t i = 0; i < old.cap; i++)
            if (old.slot[i].used) *imap_slot_of(m, old.slot[i].key) = old.slot[i];
    }
    imap_slot *s = imap_slot_of(m, key);
    if (!s->used) {
        s->used = 1;
        s->key = key;
        m->n++;
    }
    s->val = val;
}
