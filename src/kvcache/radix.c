#include "kvcache/radix.h"

#include <stdlib.h>
#include <string.h>

struct radix_node {
    int32_t *tokens; /* the block_size token ids of the edge from the parent */
    int32_t block;   /* KV block holding them; -1 for the root */
    struct radix_node *parent;
    struct radix_node **children;
    int32_t *child_first; /* children[i]->tokens[0], scanned without touching the children */
    int n_children, cap_children;
    uint64_t last_used;
};

/* The LRU heap of evictable leaves, ordered by (last_used, block). */
static int entry_less(struct radix_lru_entry a, struct radix_lru_entry b)
{
    return a.last_used < b.last_used || (a.last_used == b.last_used && a.block < b.block);
}

static void heap_push(struct radix_tree *t, const struct radix_node *n)
{
    if (t->heap_n == t->heap_cap) {
        t->heap_cap = t->heap_cap ? 2 * t->heap_cap : 64;
        t->heap = xrealloc(t->heap, (size_t)t->heap_cap * sizeof *t->heap);
    }
    struct radix_lru_entry e = {n->last_used, n->block};
    int i = t->heap_n++;
    while (i > 0 && entry_less(e, t->heap[(i - 1) / 2])) {
        t->heap[i] = t->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    t->heap[i] = e;
}

static struct radix_lru_entry heap_pop(struct radix_tree *t)
{
    struct radix_lru_entry top = t->heap[0], last = t->heap[--t->heap_n];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= t->heap_n)
            break;
        if (c + 1 < t->heap_n && entry_less(t->heap[c + 1], t->heap[c]))
            c++;
        if (!entry_less(t->heap[c], last))
            break;
        t->heap[i] = t->heap[c];
        i = c;
    }
    if (t->heap_n > 0)
        t->heap[i] = last;
    return top;
}

static int is_evictable_leaf(const struct radix_tree *t, const struct radix_node *n)
{
    return n != t->root && n->n_children == 0 && t->pool->refs[n->block] == 1;
}

static void push_leaves_in(struct radix_tree *t, struct radix_node *n)
{
    for (int i = 0; i < n->n_children; i++)
        push_leaves_in(t, n->children[i]);
    if (is_evictable_leaf(t, n))
        heap_push(t, n);
}

/* Stale entries pile up while nothing is evicted (a leaf used again is
 * pushed again); past twice the tree's size the heap is rebuilt from it. */
static void push_evictable(struct radix_tree *t, struct radix_node *n)
{
    if (t->heap_n > 2 * t->n_nodes + 1024) {
        t->heap_n = 0;
        push_leaves_in(t, t->root);
        return; /* n, if evictable, is among them */
    }
    heap_push(t, n);
}

/* The pool says the tree alone holds block id now. */
static void on_cached_only(void *ctx, int32_t id)
{
    struct radix_tree *t = ctx;
    struct radix_node *n = t->node_of[id];
    if (n && n->n_children == 0)
        push_evictable(t, n);
}

static struct radix_node *node_new(struct radix_tree *t, struct radix_node *parent, const int32_t *tokens,
                                   int32_t block)
{
    struct radix_node *n = xcalloc(1, sizeof *n);
    n->parent = parent;
    n->block = block;
    if (tokens) {
        n->tokens = xmalloc((size_t)t->block_size * sizeof(int32_t));
        memcpy(n->tokens, tokens, (size_t)t->block_size * sizeof(int32_t));
        t->node_of[block] = n;
    }
    if (parent) {
        if (parent->n_children == parent->cap_children) {
            parent->cap_children = parent->cap_children ? 2 * parent->cap_children : 4;
            parent->children = xrealloc(parent->children, (size_t)parent->cap_children * sizeof *parent->children);
            parent->child_first =
                xrealloc(parent->child_first, (size_t)parent->cap_children * sizeof *parent->child_first);
        }
        parent->child_first[parent->n_children] = tokens[0];
        parent->children[parent->n_children++] = n;
    }
    return n;
}

static void node_free_subtree(struct radix_tree *t, struct radix_node *n)
{
    for (int i = 0; i < n->n_children; i++)
        node_free_subtree(t, n->children[i]);
    if (n->block >= 0) {
        t->node_of[n->block] = NULL;
        block_pool_drop_cached(t->pool, n->block);
    }
    free(n->children);
    free(n->child_first);
    free(n->tokens);
    free(n);
}

void radix_init(struct radix_tree *t, struct block_pool *pool, int block_size)
{
    memset(t, 0, sizeof *t);
    CHECK(block_size > 0);
    CHECK(pool->on_cached_only == NULL); /* one tree a pool */
    t->pool = pool;
    t->block_size = block_size;
    t->node_of = xcalloc((size_t)pool->n_blocks, sizeof *t->node_of);
    t->root = node_new(t, NULL, NULL, -1);
    pool->on_cached_only = on_cached_only;
    pool->on_cached_only_ctx = t;
}

void radix_free(struct radix_tree *t)
{
    if (t->pool) {
        t->pool->on_cached_only = NULL;
        t->pool->on_cached_only_ctx = NULL;
    }
    if (t->root)
        node_free_subtree(t, t->root);
    free(t->node_of);
    free(t->heap);
    memset(t, 0, sizeof *t);
}

static struct radix_node *child_with(const struct radix_tree *t, const struct radix_node *n, const int32_t *tokens)
{
    for (int i = 0; i < n->n_children; i++) {
        if (n->child_first[i] != tokens[0])
            continue;
        struct radix_node *c = n->children[i];
        if (!memcmp(c->tokens, tokens, (size_t)t->block_size * sizeof(int32_t)))
            return c;
    }
    return NULL;
}

int radix_match(struct radix_tree *t, const int32_t *tokens, int n, int32_t *blocks)
{
    const int full = n / t->block_size;
    struct radix_node *node = t->root;
    int k = 0;
    uint64_t now = ++t->clock;
    for (; k < full; k++) {
        struct radix_node *c = child_with(t, node, tokens + (size_t)k * t->block_size);
        if (!c)
            break;
        block_pool_ref(t->pool, c->block); /* held now: its heap entries go stale */
        blocks[k] = c->block;
        c->last_used = now;
        node = c;
    }
    t->stats.lookup_blocks += full;
    t->stats.hit_blocks += k;
    return k;
}

int radix_insert(struct radix_tree *t, const int32_t *tokens, int n_blocks, const int32_t *blocks)
{
    struct radix_node *node = t->root;
    uint64_t now = ++t->clock;
    int added = 0;
    for (int k = 0; k < n_blocks; k++) {
        const int32_t *chunk = tokens + (size_t)k * t->block_size;
        struct radix_node *c = child_with(t, node, chunk);
        if (!c) {
            block_pool_ref(t->pool, blocks[k]);
            c = node_new(t, node, chunk, blocks[k]);
            block_pool_mark_cached(t->pool, blocks[k]);
            t->n_nodes++;
            added++;
        }
        c->last_used = now;
        node = c;
    }
    /* a cached leaf the caller holds a copy of (not its block) may be
     * evictable already: its entry must carry the new time */
    if (node != t->root && is_evictable_leaf(t, node))
        push_evictable(t, node);
    t->stats.inserted += added;
    return added;
}

/* The least recently used evictable leaf, or NULL. */
static struct radix_node *pop_victim(struct radix_tree *t)
{
    while (t->heap_n > 0) {
        struct radix_lru_entry e = heap_pop(t);
        struct radix_node *n = t->node_of[e.block];
        if (n && n->last_used == e.last_used && is_evictable_leaf(t, n))
            return n;
    }
    return NULL;
}

int radix_evict(struct radix_tree *t, int n)
{
    int freed = 0;
    while (freed < n) {
        struct radix_node *v = pop_victim(t);
        if (!v)
            break;
        struct radix_node *p = v->parent;
        for (int i = 0; i < p->n_children; i++)
            if (p->children[i] == v) {
                p->n_children--;
                p->children[i] = p->children[p->n_children];
                p->child_first[i] = p->child_first[p->n_children];
                break;
            }
        node_free_subtree(t, v); /* a leaf: gives back its block, which frees it */
        t->n_nodes--;
        t->stats.evicted++;
        freed++;
        if (is_evictable_leaf(t, p))
            push_evictable(t, p);
    }
    return freed;
}

/* Nodes of n's subtree that cascading eviction frees; *whole says whether
 * all of the subtree goes (so that n itself can, once its children have). */
static int evictable_in(const struct radix_tree *t, const struct radix_node *n, int *whole)
{
    int count = 0, all = 1;
    for (int i = 0; i < n->n_children; i++) {
        int w;
        count += evictable_in(t, n->children[i], &w);
        all &= w;
    }
    if (n != t->root) {
        all &= t->pool->refs[n->block] == 1;
        count += all;
    }
    *whole = all;
    return count;
}

int radix_evictable(const struct radix_tree *t)
{
    int whole;
    return evictable_in(t, t->root, &whole);
}

static void count_in(const struct radix_node *n, int32_t *counts)
{
    for (int i = 0; i < n->n_children; i++) {
        counts[n->children[i]->block]++;
        count_in(n->children[i], counts);
    }
}

void radix_count_blocks(const struct radix_tree *t, int32_t *counts) { count_in(t->root, counts); }

static int check_node(const struct radix_tree *t, const struct radix_node *n, uint8_t *seen,
                      const uint8_t *in_heap, int *count, struct err *e)
{
    for (int i = 0; i < n->n_children; i++) {
        const struct radix_node *c = n->children[i];
        if (c->parent != n)
            return err_set(e, "radix: a child's parent link is wrong");
        if (c->block < t->pool->n_reserved || c->block >= t->pool->n_blocks)
            return err_set(e, "radix: node holds invalid block %d", c->block);
        if (seen[c->block]++)
            return err_set(e, "radix: block %d is owned by two nodes", c->block);
        if (t->pool->refs[c->block] < 1)
            return err_set(e, "radix: cached block %d has no reference", c->block);
        if (t->node_of[c->block] != c || !t->pool->cached[c->block])
            return err_set(e, "radix: block %d is not indexed as the tree's", c->block);
        if (n->child_first[i] != c->tokens[0])
            return err_set(e, "radix: a child's first token is indexed wrong");
        if (is_evictable_leaf(t, c) && !in_heap[c->block])
            return err_set(e, "radix: evictable leaf (block %d) is missing from the LRU heap", c->block);
        for (int j = 0; j < i; j++)
            if (!memcmp(n->children[j]->tokens, c->tokens, (size_t)t->block_size * sizeof(int32_t)))
                return err_set(e, "radix: two children share the same tokens");
        (*count)++;
        if (check_node(t, c, seen, in_heap, count, e))
            return -1;
    }
    return 0;
}

int radix_check(const struct radix_tree *t, struct err *e)
{
    uint8_t *seen = xcalloc((size_t)t->pool->n_blocks, 1);
    uint8_t *in_heap = xcalloc((size_t)t->pool->n_blocks, 1); /* a current entry, not a stale one */
    int rc = 0, count = 0, flagged = 0;
    for (int i = 0; i < t->heap_n && !rc; i++) {
        const struct radix_node *n = t->node_of[t->heap[i].block];
        if (i > 0 && entry_less(t->heap[i], t->heap[(i - 1) / 2]))
            rc = err_set(e, "radix: the LRU heap is out of order at %d", i);
        in_heap[t->heap[i].block] |= n && n->last_used == t->heap[i].last_used;
    }
    if (!rc)
        rc = check_node(t, t->root, seen, in_heap, &count, e);
    if (!rc && count != t->n_nodes)
        rc = err_set(e, "radix: %d nodes reachable, %d counted", count, t->n_nodes);
    for (int b = 0; b < t->pool->n_blocks && !rc; b++)
        flagged += t->pool->cached[b];
    if (!rc && flagged != t->n_nodes)
        rc = err_set(e, "radix: %d blocks flagged as cached, %d nodes", flagged, t->n_nodes);
    free(seen);
    free(in_heap);
    return rc;
}
