/* grammar_compile: the IR's rules as DFAs over byte classes.
 *
 * A rule that is not recursive and not large is inlined into its callers,
 * so that most of a JSON schema's structure becomes one automaton (a token
 * that closes a string and opens the next key is then decided without a
 * stack). The rules left (the start rule, the recursive ones, the large
 * ones) each get a Thompson NFA, determinized by subset construction; a
 * reference to another such rule is a call edge (rule, return state).
 * Then the checks that keep matching finite: every used rule defined, no
 * left recursion; and each rule's FOLLOW bytes, which let the token tables
 * reject early what cannot come after a rule. */
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar_impl.h"

/* --- the rule graph ------------------------------------------------------ */

struct rule_info {
    int used;      /* reachable from the root */
    int recursive; /* in a cycle of references */
    long size;     /* NFA states of its body with the inlinable rules inlined (capped) */
    int inline_it;
    int index;     /* compiled index, or -1 when inlined */
};

static void collect_refs(const struct gir *g, int x, int *out, int *n, int cap)
{
    const struct gx_node *e = &g->nodes[x];
    if (e->kind == GX_REF) {
        if (*n < cap)
            out[(*n)++] = e->arg;
        return;
    }
    if (e->kind == GX_SEQ || e->kind == GX_ALT || e->kind == GX_REPEAT)
        for (int i = 0; i < e->n; i++)
            collect_refs(g, g->kids[e->first + i], out, n, cap);
}

struct graph {
    int n;
    int **adj;
    int *n_adj;
};

static void graph_build(const struct gir *g, struct graph *gr)
{
    gr->n = g->n_rules;
    gr->adj = xcalloc((size_t)gr->n, sizeof(int *));
    gr->n_adj = xcalloc((size_t)gr->n, sizeof(int));
    int cap = g->n_nodes + 1;
    int *tmp = xmalloc((size_t)cap * sizeof(int));
    for (int r = 0; r < gr->n; r++) {
        int n = 0;
        if (g->rules[r].body >= 0)
            collect_refs(g, g->rules[r].body, tmp, &n, cap);
        gr->adj[r] = xmalloc((size_t)(n + 1) * sizeof(int));
        memcpy(gr->adj[r], tmp, (size_t)n * sizeof(int));
        gr->n_adj[r] = n;
    }
    free(tmp);
}

static void graph_free(struct graph *gr)
{
    for (int r = 0; r < gr->n; r++)
        free(gr->adj[r]);
    free(gr->adj);
    free(gr->n_adj);
}

/* Tarjan's SCCs, iteratively (rule graphs can be deep); marks rules in a
 * cycle (an SCC of two or more, or a self reference). */
static void mark_recursive(const struct graph *gr, struct rule_info *info)
{
    int n = gr->n, counter = 0, sp = 0, cs = 0;
    int *index = xmalloc((size_t)n * sizeof(int)), *low = xmalloc((size_t)n * sizeof(int));
    int *on = xcalloc((size_t)n, sizeof(int)), *stack = xmalloc((size_t)n * sizeof(int));
    int *call_v = xmalloc((size_t)n * sizeof(int)), *call_i = xmalloc((size_t)n * sizeof(int));
    for (int i = 0; i < n; i++)
        index[i] = -1;
    for (int root = 0; root < n; root++) {
        if (index[root] >= 0)
            continue;
        call_v[cs] = root, call_i[cs] = 0, cs++;
        index[root] = low[root] = counter++;
        stack[sp++] = root, on[root] = 1;
        while (cs > 0) {
            int v = call_v[cs - 1];
            if (call_i[cs - 1] < gr->n_adj[v]) {
                int w = gr->adj[v][call_i[cs - 1]++];
                if (w == v)
                    info[v].recursive = 1;
                if (index[w] < 0) {
                    index[w] = low[w] = counter++;
                    stack[sp++] = w, on[w] = 1;
                    call_v[cs] = w, call_i[cs] = 0, cs++;
                } else if (on[w] && index[w] < low[v]) {
                    low[v] = index[w];
                }
                continue;
            }
            cs--;
            if (cs > 0 && low[v] < low[call_v[cs - 1]])
                low[call_v[cs - 1]] = low[v];
            if (low[v] == index[v]) {
                int size = 0, w;
                int top = sp;
                do {
                    w = stack[--sp];
                    on[w] = 0;
                    size++;
                } while (w != v);
                if (size > 1)
                    for (int k = sp; k < top; k++)
                        info[stack[k]].recursive = 1;
            }
        }
    }
    free(index), free(low), free(on), free(stack), free(call_v), free(call_i);
}

static const long SIZE_CAP = 1L << 40;

static long cap_add(long a, long b) { return a + b > SIZE_CAP ? SIZE_CAP : a + b; }
static long cap_mul(long a, long b) { return b != 0 && a > SIZE_CAP / b ? SIZE_CAP : a * b; }

/* NFA states expr needs, with the sizes of inlined rules counted in. */
static long expr_size(const struct gir *g, int x, const struct rule_info *info)
{
    const struct gx_node *e = &g->nodes[x];
    switch (e->kind) {
    case GX_NOTHING:
    case GX_EMPTY:
    case GX_BYTES: return 1;
    case GX_REF: return info[e->arg].inline_it ? info[e->arg].size : 1;
    case GX_SEQ:
    case GX_ALT: {
        long s = 1;
        for (int i = 0; i < e->n; i++)
            s = cap_add(s, expr_size(g, g->kids[e->first + i], info) + 1);
        return s;
    }
    case GX_REPEAT: {
        long c = expr_size(g, g->kids[e->first], info);
        long copies = e->max < 0 ? e->min + 1 : e->max;
        return cap_add(cap_mul(c + 2, copies), 2);
    }
    }
    return 1;
}

/* Sizes bottom-up (callees first: a post-order over the non-recursive part). */
static void size_rules(const struct gir *g, const struct graph *gr, struct rule_info *info, int root)
{
    int n = gr->n;
    int *state = xcalloc((size_t)n, sizeof(int)); /* 0 new, 1 open, 2 done */
    int *stack_v = xmalloc((size_t)n * sizeof(int)), *stack_i = xmalloc((size_t)n * sizeof(int));
    for (int start = 0; start < n; start++) {
        if (state[start])
            continue;
        int sp = 0;
        stack_v[sp] = start, stack_i[sp] = 0, sp++;
        state[start] = 1;
        while (sp > 0) {
            int v = stack_v[sp - 1];
            if (stack_i[sp - 1] < gr->n_adj[v]) {
                int w = gr->adj[v][stack_i[sp - 1]++];
                if (!state[w]) {
                    state[w] = 1;
                    stack_v[sp] = w, stack_i[sp] = 0, sp++;
                }
                continue;
            }
            sp--;
            state[v] = 2;
            if (g->rules[v].body < 0)
                continue;
            info[v].size = expr_size(g, g->rules[v].body, info);
            info[v].inline_it = v != root && !info[v].recursive && info[v].size <= GRAMMAR_INLINE_MAX;
        }
    }
    free(state), free(stack_v), free(stack_i);
}

/* --- NFA ----------------------------------------------------------------- */

enum { NE_EPS, NE_BYTES, NE_CALL };

struct nedge {
    uint8_t kind;
    int32_t arg; /* BYTES: the IR set; CALL: the compiled rule */
    int32_t to;
};

struct nfa {
    int n;                /* states */
    struct nedge *edges;  /* all edges, with their source */
    int32_t *from;
    int n_edges, cap_edges;
    int over;             /* passed GRAMMAR_MAX_NFA */
};

static int nfa_state(struct nfa *a)
{
    if (a->n >= GRAMMAR_MAX_NFA) {
        a->over = 1;
        return 0;
    }
    return a->n++;
}

static void nfa_edge(struct nfa *a, int from, int kind, int arg, int to)
{
    if (a->over)
        return;
    if (a->n_edges == a->cap_edges) {
        a->cap_edges = a->cap_edges ? a->cap_edges * 2 : 256;
        a->edges = xrealloc(a->edges, (size_t)a->cap_edges * sizeof(*a->edges));
        a->from = xrealloc(a->from, (size_t)a->cap_edges * sizeof(*a->from));
    }
    a->edges[a->n_edges] = (struct nedge){(uint8_t)kind, arg, to};
    a->from[a->n_edges] = from;
    a->n_edges++;
}

/* Thompson's construction from state s; returns the end state. Fragments
 * never loop back to their start (loops get fresh states), so a sequence
 * may chain at the previous fragment's end. */
static int nfa_build(const struct gir *g, const struct rule_info *info, struct nfa *a, int x, int s)
{
    if (a->over)
        return s;
    const struct gx_node *e = &g->nodes[x];
    switch (e->kind) {
    case GX_NOTHING: return nfa_state(a);
    case GX_EMPTY: return s;
    case GX_BYTES: {
        int t = nfa_state(a);
        nfa_edge(a, s, NE_BYTES, e->arg, t);
        return t;
    }
    case GX_SEQ: {
        int cur = s;
        for (int i = 0; i < e->n; i++)
            cur = nfa_build(g, info, a, g->kids[e->first + i], cur);
        return cur;
    }
    case GX_ALT: {
        int end = nfa_state(a);
        for (int i = 0; i < e->n; i++) {
            int b = nfa_state(a);
            nfa_edge(a, s, NE_EPS, 0, b);
            nfa_edge(a, nfa_build(g, info, a, g->kids[e->first + i], b), NE_EPS, 0, end);
        }
        return end;
    }
    case GX_REPEAT: {
        int child = g->kids[e->first], cur = s;
        for (int i = 0; i < e->min; i++) {
            int b = nfa_state(a);
            nfa_edge(a, cur, NE_EPS, 0, b);
            cur = nfa_build(g, info, a, child, b);
        }
        if (e->max < 0) {
            int loop = nfa_state(a), b = nfa_state(a);
            nfa_edge(a, cur, NE_EPS, 0, loop);
            nfa_edge(a, loop, NE_EPS, 0, b);
            nfa_edge(a, nfa_build(g, info, a, child, b), NE_EPS, 0, loop);
            return loop;
        }
        int end = nfa_state(a);
        nfa_edge(a, cur, NE_EPS, 0, end);
        for (int i = e->min; i < e->max && !a->over; i++) {
            int b = nfa_state(a);
            nfa_edge(a, cur, NE_EPS, 0, b);
            cur = nfa_build(g, info, a, child, b);
            nfa_edge(a, cur, NE_EPS, 0, end);
        }
        return end;
    }
    case GX_REF:
        if (info[e->arg].inline_it)
            return nfa_build(g, info, a, g->rules[e->arg].body, s);
        int t = nfa_state(a);
        nfa_edge(a, s, NE_CALL, info[e->arg].index, t);
        return t;
    }
    return s;
}

/* --- subset construction ------------------------------------------------- */

struct dfa_builder {
    struct grammar *out;
    int cap_states, n_calls, cap_calls;
    struct gcall *pending; /* call edges of the states being built, with their source */
    int32_t *pending_from;
    int n_pending, cap_pending;
};

struct set_table { /* NFA state sets -> DFA state, open addressing */
    int32_t **sets;
    int *lens;
    int32_t *ids;
    int cap, n;
};

static uint64_t hash_set(const int32_t *s, int n)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++)
        h = (h ^ (uint32_t)s[i]) * 1099511628211ull;
    return h;
}

/* The slot of s[0..n): its own, or the empty one where it would go. */
static uint64_t set_slot(const struct set_table *t, const int32_t *s, int n)
{
    uint64_t h = hash_set(s, n) & (uint64_t)(t->cap - 1);
    while (t->sets[h] && !(t->lens[h] == n && memcmp(t->sets[h], s, (size_t)n * sizeof(int32_t)) == 0))
        h = (h + 1) & (uint64_t)(t->cap - 1);
    return h;
}

/* s's DFA state, or -1 when the table has no such set. */
static int32_t set_lookup(const struct set_table *t, const int32_t *s, int n)
{
    if (t->cap == 0)
        return -1;
    uint64_t h = set_slot(t, s, n);
    return t->sets[h] ? t->ids[h] : -1;
}

/* Adds s (not in the table) as DFA state id; returns the table's copy. */
static const int32_t *set_insert(struct set_table *t, const int32_t *s, int n, int32_t id)
{
    if (t->n * 2 >= t->cap) {
        struct set_table old = *t;
        t->cap = old.cap ? old.cap * 2 : 64;
        t->sets = xcalloc((size_t)t->cap, sizeof(*t->sets));
        t->lens = xcalloc((size_t)t->cap, sizeof(int));
        t->ids = xcalloc((size_t)t->cap, sizeof(int32_t));
        for (int i = 0; i < old.cap; i++)
            if (old.sets[i]) {
                uint64_t h = set_slot(t, old.sets[i], old.lens[i]);
                t->sets[h] = old.sets[i], t->lens[h] = old.lens[i], t->ids[h] = old.ids[i];
            }
        free(old.sets), free(old.lens), free(old.ids);
    }
    uint64_t h = set_slot(t, s, n);
    t->sets[h] = xmalloc((size_t)(n + 1) * sizeof(int32_t));
    memcpy(t->sets[h], s, (size_t)n * sizeof(int32_t));
    t->lens[h] = n;
    t->ids[h] = id;
    t->n++;
    return t->sets[h];
}

static void set_table_free(struct set_table *t)
{
    for (int i = 0; i < t->cap; i++)
        free(t->sets[i]);
    free(t->sets), free(t->lens), free(t->ids);
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return x < y ? -1 : x > y;
}

/* Per NFA state, its out edges (CSR), for closures. */
struct nfa_index {
    int32_t *off;
    int32_t *edge;
};

static void nfa_index(const struct nfa *a, struct nfa_index *ix)
{
    ix->off = xcalloc((size_t)a->n + 1, sizeof(int32_t));
    ix->edge = xmalloc((size_t)(a->n_edges + 1) * sizeof(int32_t));
    for (int i = 0; i < a->n_edges; i++)
        ix->off[a->from[i] + 1]++;
    for (int s = 0; s < a->n; s++)
        ix->off[s + 1] += ix->off[s];
    int32_t *fill = xmalloc((size_t)(a->n + 1) * sizeof(int32_t));
    memcpy(fill, ix->off, (size_t)(a->n + 1) * sizeof(int32_t));
    for (int i = 0; i < a->n_edges; i++)
        ix->edge[fill[a->from[i]]++] = i;
    free(fill);
}

/* The epsilon closure of set[0..n) (room for every NFA state), sorted. */
static int closure(const struct nfa *a, const struct nfa_index *ix, int32_t *set, int n, uint32_t *mark,
                   uint32_t stamp)
{
    for (int i = 0; i < n; i++)
        mark[set[i]] = stamp;
    for (int i = 0; i < n; i++) {
        int s = set[i];
        for (int k = ix->off[s]; k < ix->off[s + 1]; k++) {
            const struct nedge *e = &a->edges[ix->edge[k]];
            if (e->kind == NE_EPS && mark[e->to] != stamp) {
                mark[e->to] = stamp;
                set[n++] = e->to;
            }
        }
    }
    qsort(set, (size_t)n, sizeof(int32_t), cmp_i32);
    return n;
}

static void grow_states(struct grammar *o, int *cap, int need)
{
    if (need <= *cap)
        return;
    while (*cap < need)
        *cap = *cap ? *cap * 2 : 256;
    o->next = xrealloc(o->next, (size_t)*cap * (size_t)o->n_classes * sizeof(int32_t));
    o->flags = xrealloc(o->flags, (size_t)*cap);
    o->state_rule = xrealloc(o->state_rule, (size_t)*cap * sizeof(int32_t));
}

/* The rule's DFA states in the order they were made, with their NFA sets
 * (the table's copies): the subset construction's work list. */
struct subset_list {
    const int32_t **sets;
    int *lens;
    int n, cap;
};

/* The DFA state of the closed NFA set[0..n): found in the table, or a new
 * state listed for processing; -1 past GRAMMAR_MAX_STATES. */
static int32_t dfa_state_of(struct dfa_builder *b, struct set_table *t, struct subset_list *l, const int32_t *set,
                            int n)
{
    struct grammar *o = b->out;
    int32_t id = set_lookup(t, set, n);
    if (id >= 0)
        return id;
    if (o->n_states >= GRAMMAR_MAX_STATES)
        return -1;
    id = o->n_states;
    grow_states(o, &b->cap_states, o->n_states + 1);
    o->n_states++;
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->sets = xrealloc(l->sets, (size_t)l->cap * sizeof(*l->sets));
        l->lens = xrealloc(l->lens, (size_t)l->cap * sizeof(int));
    }
    l->sets[l->n] = set_insert(t, set, n, id);
    l->lens[l->n++] = n;
    return id;
}

/* Determinizes the rule's NFA into o's states; returns its start state or
 * -1 past the limit. class_of_set[i]: the classes of IR set i (bitset). */
static int determinize(struct dfa_builder *b, const struct nfa *a, int start, int final, int rule,
                       const uint64_t *class_of_set, int words, struct err *e)
{
    struct grammar *o = b->out;
    struct nfa_index ix;
    nfa_index(a, &ix);
    uint32_t *mark = xcalloc((size_t)a->n, sizeof(uint32_t));
    uint32_t stamp = 0;
    int32_t *buf = xmalloc((size_t)a->n * sizeof(int32_t) + 4);
    struct set_table table = {0};
    struct subset_list list = {0};
    int first = o->n_states, failed = 0;
    buf[0] = start;
    dfa_state_of(b, &table, &list, buf, closure(a, &ix, buf, 1, mark, ++stamp));
    for (int q = 0; q < list.n && !failed; q++) {
        const int32_t *set = list.sets[q];
        int len = list.lens[q];
        int me = first + q;
        uint8_t flags = 0;
        int my_calls = b->n_pending; /* this state's call edges start here */
        for (int i = 0; i < len; i++)
            if (set[i] == final)
                flags |= GS_FINAL;
        /* byte classes */
        for (int c = 0; c < o->n_classes && !failed; c++) {
            int m = 0;
            ++stamp;
            for (int i = 0; i < len; i++) {
                int s = set[i];
                for (int k = ix.off[s]; k < ix.off[s + 1]; k++) {
                    const struct nedge *ed = &a->edges[ix.edge[k]];
                    if (ed->kind == NE_BYTES && (class_of_set[(size_t)ed->arg * words + (c >> 6)] >> (c & 63) & 1) &&
                        mark[ed->to] != stamp) {
                        mark[ed->to] = stamp;
                        buf[m++] = ed->to;
                    }
                }
            }
            int32_t target = -1;
            if (m > 0) {
                target = dfa_state_of(b, &table, &list, buf, closure(a, &ix, buf, m, mark, ++stamp));
                if (target < 0) {
                    failed = 1;
                    break;
                }
                flags |= GS_BYTES;
            }
            o->next[(size_t)me * (size_t)o->n_classes + c] = target;
        }
        /* call edges, one per called rule */
        for (int i = 0; i < len && !failed; i++) {
            int s = set[i];
            for (int k = ix.off[s]; k < ix.off[s + 1]; k++) {
                const struct nedge *ed = &a->edges[ix.edge[k]];
                if (ed->kind != NE_CALL)
                    continue;
                int dup = 0;
                for (int p = my_calls; p < b->n_pending; p++)
                    dup |= b->pending[p].rule == ed->arg;
                if (dup)
                    continue;
                /* every NFA state of the set with a call to this rule */
                int m = 0;
                ++stamp;
                for (int i2 = 0; i2 < len; i2++)
                    for (int k2 = ix.off[set[i2]]; k2 < ix.off[set[i2] + 1]; k2++) {
                        const struct nedge *e2 = &a->edges[ix.edge[k2]];
                        if (e2->kind == NE_CALL && e2->arg == ed->arg && mark[e2->to] != stamp) {
                            mark[e2->to] = stamp;
                            buf[m++] = e2->to;
                        }
                    }
                int32_t target = dfa_state_of(b, &table, &list, buf, closure(a, &ix, buf, m, mark, ++stamp));
                if (target < 0) {
                    failed = 1;
                    break;
                }
                if (b->n_pending == b->cap_pending) {
                    b->cap_pending = b->cap_pending ? b->cap_pending * 2 : 64;
                    b->pending = xrealloc(b->pending, (size_t)b->cap_pending * sizeof(*b->pending));
                    b->pending_from = xrealloc(b->pending_from, (size_t)b->cap_pending * sizeof(int32_t));
                }
                b->pending[b->n_pending] = (struct gcall){ed->arg, target};
                b->pending_from[b->n_pending++] = me;
                flags |= GS_CALLS;
            }
        }
        o->flags[me] = flags;
        o->state_rule[me] = rule;
    }
    free(list.sets), free(list.lens);
    set_table_free(&table);
    free(buf), free(mark), free(ix.off), free(ix.edge);
    if (failed)
        return err_set(e, "the grammar needs more than %d automaton states", GRAMMAR_MAX_STATES);
    return first;
}

/* --- minimization ------------------------------------------------------ */

struct sig_table {
    uint64_t *hash;
    int32_t *first; /* a state of the class */
    int32_t *id;
    int cap;
};

/* States that no byte, call or end tells apart become one (Moore's
 * refinement over the whole grammar, rules kept apart): fewer states to
 * precompute tokens for, and a loop entered the first time is the same
 * state as the loop after one more character (what slices need). */
static void minimize(struct dfa_builder *b)
{
    struct grammar *o = b->out;
    int n = o->n_states, nc = o->n_classes;
    if (n == 0)
        return;
    /* the calls of each state, grouped (pending is in source order) */
    int32_t *coff = xcalloc((size_t)n + 1, sizeof(int32_t));
    for (int p = 0; p < b->n_pending; p++)
        coff[b->pending_from[p] + 1]++;
    for (int s2 = 0; s2 < n; s2++)
        coff[s2 + 1] += coff[s2];
    int32_t *cidx = xmalloc((size_t)(b->n_pending + 1) * sizeof(int32_t)), *fill = xmalloc((size_t)(n + 1) * 4);
    memcpy(fill, coff, (size_t)(n + 1) * sizeof(int32_t));
    for (int p = 0; p < b->n_pending; p++)
        cidx[fill[b->pending_from[p]]++] = p;
    free(fill);
    int32_t *cls = xmalloc((size_t)n * sizeof(int32_t)), *next_cls = xmalloc((size_t)n * sizeof(int32_t));
    for (int s2 = 0; s2 < n; s2++) /* start: rule and end flag */
        cls[s2] = o->state_rule[s2] * 2 + ((o->flags[s2] & GS_FINAL) != 0);
    int n_cls = -1;
    int cap = 1;
    while (cap < 2 * n)
        cap *= 2;
    struct sig_table t = {xmalloc((size_t)cap * 8), xmalloc((size_t)cap * 4), xmalloc((size_t)cap * 4), cap};
    uint64_t *sig_of = xmalloc((size_t)n * 8);
    for (;;) {
        for (int s2 = 0; s2 < n; s2++) {
            uint64_t h = 1469598103934665603ull ^ (uint64_t)(uint32_t)cls[s2];
            for (int c = 0; c < nc; c++) {
                int32_t x = o->next[(size_t)s2 * nc + c];
                h = (h ^ (uint64_t)(uint32_t)(x < 0 ? -1 : cls[x])) * 1099511628211ull;
            }
            for (int k = coff[s2]; k < coff[s2 + 1]; k++) {
                const struct gcall *cl = &b->pending[cidx[k]];
                h = (h ^ (uint64_t)(uint32_t)cl->rule * 0x9E3779B97F4A7C15ull ^ (uint64_t)(uint32_t)cls[cl->ret]) *
                    1099511628211ull;
            }
            sig_of[s2] = h;
        }
        memset(t.first, 0xff, (size_t)cap * 4);
        int m = 0;
        for (int s2 = 0; s2 < n; s2++) {
            uint32_t hp = (uint32_t)(sig_of[s2] >> 32) & (uint32_t)(cap - 1);
            for (;;) {
                if (t.first[hp] < 0) {
                    t.first[hp] = s2, t.hash[hp] = sig_of[s2], t.id[hp] = m++;
                    next_cls[s2] = t.id[hp];
                    break;
                }
                /* same class only if the signatures agree exactly (checked, not trusted to the hash) */
                int r = t.first[hp];
                int same = t.hash[hp] == sig_of[s2] && cls[r] == cls[s2] && coff[r + 1] - coff[r] == coff[s2 + 1] - coff[s2];
                for (int c = 0; same && c < nc; c++) {
                    int32_t x = o->next[(size_t)s2 * nc + c], y = o->next[(size_t)r * nc + c];
                    same = (x < 0 ? -1 : cls[x]) == (y < 0 ? -1 : cls[y]);
                }
                for (int k = 0; same && k < coff[s2 + 1] - coff[s2]; k++) {
                    const struct gcall *p1 = &b->pending[cidx[coff[s2] + k]], *p2 = &b->pending[cidx[coff[r] + k]];
                    same = p1->rule == p2->rule && cls[p1->ret] == cls[p2->ret];
                }
                if (same) {
                    next_cls[s2] = t.id[hp];
                    break;
                }
                hp = (hp + 1) & (uint32_t)(cap - 1);
            }
        }
        int32_t *sw = cls;
        cls = next_cls;
        next_cls = sw;
        if (m == n_cls)
            break;
        n_cls = m;
    }
    if (n_cls < n) { /* rebuild with one state per class, in order of first appearance */
        int32_t *rep = xmalloc((size_t)n_cls * sizeof(int32_t));
        for (int c = 0; c < n_cls; c++)
            rep[c] = -1;
        for (int s2 = 0; s2 < n; s2++)
            if (rep[cls[s2]] < 0)
                rep[cls[s2]] = s2;
        int32_t *nx = xmalloc((size_t)n_cls * nc * sizeof(int32_t));
        uint8_t *fl = xmalloc((size_t)n_cls);
        int32_t *sr = xmalloc((size_t)n_cls * sizeof(int32_t));
        for (int c = 0; c < n_cls; c++) {
            int r = rep[c];
            for (int k = 0; k < nc; k++) {
                int32_t x = o->next[(size_t)r * nc + k];
                nx[(size_t)c * nc + k] = x < 0 ? -1 : cls[x];
            }
            fl[c] = o->flags[r];
            sr[c] = o->state_rule[r];
        }
        int np = 0;
        for (int p = 0; p < b->n_pending; p++) {
            int from = b->pending_from[p];
            if (rep[cls[from]] != from)
                continue; /* the representative's calls stand for the class */
            b->pending[np] = (struct gcall){b->pending[p].rule, cls[b->pending[p].ret]};
            b->pending_from[np++] = cls[from];
        }
        b->n_pending = np;
        for (int r = 0; r < o->n_rules; r++)
            o->rule_start[r] = cls[o->rule_start[r]];
        free(o->next), free(o->flags), free(o->state_rule);
        o->next = nx, o->flags = fl, o->state_rule = sr;
        o->n_states = n_cls;
        b->cap_states = n_cls;
        free(rep);
    }
    free(t.hash), free(t.first), free(t.id), free(sig_of);
    free(cls), free(next_cls), free(coff), free(cidx);
}

/* --- checks and FOLLOW --------------------------------------------------- */

static void compute_nullable(const struct grammar *o, uint8_t *state_null, uint8_t *rule_null)
{
    memset(rule_null, 0, (size_t)o->n_rules);
    for (int s = 0; s < o->n_states; s++)
        state_null[s] = (o->flags[s] & GS_FINAL) != 0;
    for (int changed = 1; changed;) {
        changed = 0;
        for (int s = o->n_states - 1; s >= 0; s--) {
            if (state_null[s])
                continue;
            for (int k = o->call_off[s]; k < o->call_off[s + 1]; k++)
                if (rule_null[o->calls[k].rule] && state_null[o->calls[k].ret]) {
                    state_null[s] = 1;
                    changed = 1;
                    break;
                }
        }
        for (int r = 0; r < o->n_rules; r++)
            if (!rule_null[r] && state_null[o->rule_start[r]])
                rule_null[r] = 1, changed = 1;
    }
}

/* A rule that can call itself before consuming a byte would make the
 * matcher's closure infinite: refuse it, naming the rule. */
static int check_left_recursion(const struct grammar *o, const uint8_t *rule_null, struct err *e)
{
    int n = o->n_rules;
    uint8_t *left = xcalloc((size_t)n * (size_t)n, 1); /* left[r * n + q]: r calls q first */
    int32_t *stack = xmalloc((size_t)o->n_states * sizeof(int32_t));
    uint8_t *seen = xcalloc((size_t)o->n_states, 1);
    for (int r = 0; r < n; r++) {
        memset(seen, 0, (size_t)o->n_states);
        int sp = 0;
        stack[sp++] = o->rule_start[r];
        seen[o->rule_start[r]] = 1;
        while (sp > 0) {
            int s = stack[--sp];
            for (int k = o->call_off[s]; k < o->call_off[s + 1]; k++) {
                left[(size_t)r * n + o->calls[k].rule] = 1;
                int ret = o->calls[k].ret;
                if (rule_null[o->calls[k].rule] && !seen[ret])
                    seen[ret] = 1, stack[sp++] = ret;
            }
        }
    }
    /* transitive closure by DFS from each rule */
    int bad = -1;
    int32_t *st = xmalloc((size_t)n * sizeof(int32_t));
    uint8_t *vis = xmalloc((size_t)n);
    for (int r = 0; r < n && bad < 0; r++) {
        memset(vis, 0, (size_t)n);
        int sp = 0;
        for (int q = 0; q < n; q++)
            if (left[(size_t)r * n + q])
                st[sp++] = q, vis[q] = 1;
        while (sp > 0 && bad < 0) {
            int q = st[--sp];
            if (q == r)
                bad = r;
            for (int t = 0; t < n; t++)
                if (left[(size_t)q * n + t] && !vis[t])
                    vis[t] = 1, st[sp++] = t;
        }
    }
    free(st), free(vis), free(left), free(stack), free(seen);
    if (bad >= 0)
        return err_set(e, "rule '%s' is left-recursive (it can reach itself before matching a byte)",
                       o->rule_name[bad]);
    return 0;
}

static int byteset_or(struct byteset *a, const struct byteset *b)
{
    int changed = 0;
    for (int i = 0; i < 8; i++) {
        uint32_t w = a->w[i] | b->w[i];
        changed |= w != a->w[i];
        a->w[i] = w;
    }
    return changed;
}

static void compute_follow(struct grammar *o, const uint8_t *state_null, const uint8_t *rule_null)
{
    struct byteset *first = xcalloc((size_t)o->n_states, sizeof(*first));
    for (int s = 0; s < o->n_states; s++)
        for (int b = 0; b < 256; b++)
            if (grammar_next(o, s, (unsigned char)b) >= 0)
                byteset_add(&first[s], (unsigned)b);
    for (int changed = 1; changed;) {
        changed = 0;
        for (int s = 0; s < o->n_states; s++)
            for (int k = o->call_off[s]; k < o->call_off[s + 1]; k++) {
                changed |= byteset_or(&first[s], &first[o->rule_start[o->calls[k].rule]]);
                if (rule_null[o->calls[k].rule])
                    changed |= byteset_or(&first[s], &first[o->calls[k].ret]);
            }
    }
    o->follow = xcalloc((size_t)o->n_rules, sizeof(*o->follow));
    for (int changed = 1; changed;) {
        changed = 0;
        for (int s = 0; s < o->n_states; s++)
            for (int k = o->call_off[s]; k < o->call_off[s + 1]; k++) {
                const struct gcall *c = &o->calls[k];
                changed |= byteset_or(&o->follow[c->rule], &first[c->ret]);
                if (state_null[c->ret])
                    changed |= byteset_or(&o->follow[c->rule], &o->follow[o->state_rule[c->ret]]);
            }
    }
    free(first);
}

/* --- byte classes -------------------------------------------------------- */

/* Bytes no set tells apart share a class. */
static void byte_classes(const struct gir *g, struct grammar *o)
{
    uint8_t cls[256] = {0};
    int n = 1;
    for (int i = 0; i < g->n_sets; i++) {
        int map_in[256], map_out[256];
        for (int c = 0; c < 256; c++)
            map_in[c] = map_out[c] = -1;
        int m = 0;
        for (int b = 0; b < 256; b++) {
            int in = byteset_has(&g->sets[i], (unsigned)b);
            int *map = in ? map_in : map_out;
            if (map[cls[b]] < 0)
                map[cls[b]] = m++;
        }
        if (m == n)
            continue;
        for (int b = 0; b < 256; b++) {
            int in = byteset_has(&g->sets[i], (unsigned)b);
            cls[b] = (uint8_t)(in ? map_in[cls[b]] : map_out[cls[b]]);
        }
        n = m;
    }
    memcpy(o->cls, cls, 256);
    o->n_classes = n;
}

/* --- the whole --------------------------------------------------------- */

static int check_defined(const struct gir *g, const struct graph *gr, struct rule_info *info, struct err *e)
{
    int *stack = xmalloc((size_t)g->n_rules * sizeof(int)), sp = 0;
    stack[sp++] = g->root;
    info[g->root].used = 1;
    int bad = -1, from = -1;
    while (sp > 0 && bad < 0) {
        int r = stack[--sp];
        if (g->rules[r].body < 0) {
            bad = r;
            break;
        }
        for (int i = 0; i < gr->n_adj[r]; i++) {
            int q = gr->adj[r][i];
            if (!info[q].used) {
                info[q].used = 1;
                stack[sp++] = q;
                if (g->rules[q].body < 0)
                    from = r;
            }
        }
    }
    free(stack);
    if (bad >= 0) {
        if (from >= 0 && bad != g->root)
            return err_set(e, "rule '%s' is used (by '%s') but not defined", g->rules[bad].name,
                           g->rules[from].name);
        return err_set(e, "rule '%s' is not defined", g->rules[bad].name);
    }
    return 0;
}

struct grammar *grammar_compile(const struct gir *g, struct err *e)
{
    if (g->failed) {
        err_set(e, "%s", g->error.msg);
        return NULL;
    }
    if (g->root < 0) {
        err_set(e, "the grammar has no start rule");
        return NULL;
    }
    struct graph gr;
    graph_build(g, &gr);
    struct rule_info *info = xcalloc((size_t)g->n_rules + 1, sizeof(*info));
    struct grammar *o = xcalloc(1, sizeof(*o));
    struct dfa_builder b = {o, 0, 0, 0, NULL, NULL, 0, 0};
    uint64_t *class_of_set = NULL;
    int ok = check_defined(g, &gr, info, e) == 0;
    if (ok) {
        mark_recursive(&gr, info);
        size_rules(g, &gr, info, g->root);
        /* compiled rules: the used ones that are not inlined, root first */
        o->rule_name = xmalloc((size_t)g->n_rules * sizeof(char *));
        for (int r = 0; r < g->n_rules; r++)
            info[r].index = -1;
        int order_n = 0;
        int *order = xmalloc((size_t)g->n_rules * sizeof(int));
        order[order_n++] = g->root;
        for (int r = 0; r < g->n_rules; r++)
            if (r != g->root && info[r].used && !info[r].inline_it)
                order[order_n++] = r;
        for (int i = 0; i < order_n; i++) {
            info[order[i]].index = i;
            o->rule_name[i] = xstrdup(g->rules[order[i]].name);
        }
        o->n_rules = order_n;
        o->root = 0;
        byte_classes(g, o);
        int words = (o->n_classes + 63) / 64;
        class_of_set = xcalloc((size_t)(g->n_sets + 1) * (size_t)words, sizeof(uint64_t));
        for (int i = 0; i < g->n_sets; i++)
            for (int c = 0; c < 256; c++)
                if (byteset_has(&g->sets[i], (unsigned)c))
                    class_of_set[(size_t)i * words + (o->cls[c] >> 6)] |= 1ull << (o->cls[c] & 63);
        o->rule_start = xmalloc((size_t)order_n * sizeof(int32_t));
        for (int i = 0; i < order_n && ok; i++) {
            struct nfa a = {0};
            int s0 = nfa_state(&a);
            int end = nfa_build(g, info, &a, g->rules[order[i]].body, s0);
            if (a.over) {
                err_set(e, "rule '%s' needs more than %d NFA states", g->rules[order[i]].name, GRAMMAR_MAX_NFA);
                ok = 0;
            } else {
                int st = determinize(&b, &a, s0, end, i, class_of_set, words, e);
                if (st < 0)
                    ok = 0;
                o->rule_start[i] = st;
            }
            free(a.edges), free(a.from);
        }
        free(order);
    }
    if (ok) {
        minimize(&b);
        /* the calls, by source state */
        o->call_off = xcalloc((size_t)o->n_states + 1, sizeof(int32_t));
        for (int p = 0; p < b.n_pending; p++)
            o->call_off[b.pending_from[p] + 1]++;
        for (int s = 0; s < o->n_states; s++)
            o->call_off[s + 1] += o->call_off[s];
        o->calls = xmalloc((size_t)(b.n_pending + 1) * sizeof(*o->calls));
        int32_t *fill = xmalloc((size_t)(o->n_states + 1) * sizeof(int32_t));
        memcpy(fill, o->call_off, (size_t)(o->n_states + 1) * sizeof(int32_t));
        for (int p = 0; p < b.n_pending; p++)
            o->calls[fill[b.pending_from[p]]++] = b.pending[p];
        free(fill);
        for (int s = 0; s < o->n_states; s++)
            if ((o->flags[s] & (GS_FINAL | GS_BYTES | GS_CALLS)) == GS_FINAL)
                o->flags[s] |= GS_TAIL;
        uint8_t *state_null = xmalloc((size_t)o->n_states + 1), *rule_null = xmalloc((size_t)o->n_rules + 1);
        compute_nullable(o, state_null, rule_null);
        ok = check_left_recursion(o, rule_null, e) == 0;
        if (ok)
            compute_follow(o, state_null, rule_null);
        free(state_null), free(rule_null);
    }
    free(class_of_set);
    free(b.pending), free(b.pending_from);
    free(info);
    graph_free(&gr);
    if (!ok) {
        grammar_free(o);
        return NULL;
    }
    return o;
}

void grammar_free(struct grammar *g)
{
    if (!g)
        return;
    for (int r = 0; r < g->n_rules; r++)
        free(g->rule_name[r]);
    free(g->rule_name);
    free(g->next), free(g->flags), free(g->call_off), free(g->calls);
    free(g->state_rule), free(g->rule_start), free(g->follow);
    free(g);
}

int grammar_n_states(const struct grammar *g) { return g->n_states; }
int grammar_n_rules(const struct grammar *g) { return g->n_rules; }
