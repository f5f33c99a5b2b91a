#include "kvcache/radix.h"

#include <stdlib.h>
#include <string.h>

struct radix_node {
    int32_t *tokens; /* the block_size token ids of the edge from the parent */
    int32_t block;   /* KV block holding them; -1 for the root */
    struct radix_node *parent;
    struct radix_node **children;
    int n_children, cap_children;
    uint64_t last_used;
};

static struct radix_node *node_new(struct radix_tree *t, struct radix_node *parent, const int32_t *tokens,
                                   int32_t block)
{
    struct radix_node *n = xcalloc(1, sizeof *n);
    n->parent = parent;
    n->block = block;
    if (tokens) {
        n->tokens = xmalloc((size_t)t->block_size * sizeof(int32_t));
        memcpy(n->tokens, tokens, (size_t)t->block_size * sizeof(int32_t));
    }
    if (parent) {
        if (parent->n_children == parent->cap_children) {
            parent->cap_children = parent->cap_children ? 2 * parent->cap_children : 4;
            parent->children = xrealloc(parent->children, (size_t)parent->cap_children * sizeof *parent->children);
        }
        parent->children[parent->n_children++] = n;
    }
    return n;
}

static void node_free_subtree(struct radix_tree *t, struct radix_node *n)
{
    for (int i = 0; i < n->n_children; i++)
        node_free_subtree(t, n->children[i]);
    if (n->block >= 0)
        block_pool_unref(t->pool, n->block);
    free(n->children);
    free(n->tokens);
    free(n);
}

void radix_init(struct radix_tree *t, struct block_pool *pool, int block_size)
{
    memset(t, 0, sizeof *t);
    CHECK(block_size > 0);
    t->pool = pool;
    t->block_size = block_size;
    t->root = node_new(t, NULL, NULL, -1);
}

void radix_free(struct radix_tree *t)
{
    if (t->root)
        node_free_subtree(t, t->root);
    memset(t, 0, sizeof *t);
}

static struct radix_node *child_with(const struct radix_tree *t, const struct radix_node *n, const int32_t *tokens)
{
    for (int i = 0; i < n->n_children; i++) {
        struct radix_node *c = n->children[i];
        if (c->tokens[0] == tokens[0] && !memcmp(c->tokens, tokens, (size_t)t->block_size * sizeof(int32_t)))
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
        block_pool_ref(t->pool, c->block);
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
            t->n_nodes++;
            added++;
        }
        c->last_used = now;
        node = c;
    }
    t->stats.inserted += added;
    return added;
}

/* The least recently used leaf whose block only the tree holds. */
static void find_victim(const struct radix_tree *t, struct radix_node *n, struct radix_node **best)
{
    for (int i = 0; i < n->n_children; i++)
        find_victim(t, n->children[i], best);
    if (n != t->root && n->n_children == 0 && t->pool->refs[n->block] == 1 &&
        (!*best || n->last_used < (*best)->last_used))
        *best = n;
}

int radix_evict(struct radix_tree *t, int n)
{
    int freed = 0;
    while (freed < n) {
        struct radix_node *v = NULL;
        find_victim(t, t->root, &v);
        if (!v)
            break;
        struct radix_node *p = v->parent;
        for (int i = 0; i < p->n_children; i++)
            if (p->children[i] == v) {
                p->children[i] = p->children[--p->n_children];
                break;
            }
        node_free_subtree(t, v); /* a leaf: unrefs its block, which frees it */
        t->n_nodes--;
        t->stats.evicted++;
        freed++;
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

static int check_node(const struct radix_tree *t, const struct radix_node *n, uint8_t *seen, int *count,
                      struct err *e)
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
        for (int j = 0; j < i; j++)
            if (!memcmp(n->children[j]->tokens, c->tokens, (size_t)t->block_size * sizeof(int32_t)))
                return err_set(e, "radix: two children share the same tokens");
        (*count)++;
        if (check_node(t, c, seen, count, e))
            return -1;
    }
    return 0;
}

int radix_check(const struct radix_tree *t, struct err *e)
{
    uint8_t *seen = xcalloc((size_t)t->pool->n_blocks, 1);
    int count = 0;
    int rc = check_node(t, t->root, seen, &count, e);
    if (!rc && count != t->n_nodes)
        rc = err_set(e, "radix: %d nodes reachable, %d counted", count, t->n_nodes);
    free(seen);
    return rc;
}
