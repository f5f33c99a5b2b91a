/* Sets of code points for the grammar front ends (regex, JSON Schema,
 * GBNF): a list of inclusive [lo, hi] ranges. cpset_add appends in any
 * order; cpset_norm makes the list sorted, merged (disjoint, not adjacent)
 * and limited to the Unicode scalar values (no surrogates, nothing past
 * U+10FFFF: what UTF-8 text and JSON strings decode to). The operations
 * other than add and free expect normalized sets. A zeroed struct is the
 * empty set. */
#ifndef INFER_GRAMMAR_CPSET_H
#define INFER_GRAMMAR_CPSET_H

#include <stdint.h>

enum { CP_MAX = 0x10FFFF, CP_SUR_LO = 0xD800, CP_SUR_HI = 0xDFFF };

struct cpset {
    uint32_t *r; /* range i is [r[2 * i], r[2 * i + 1]], the layout gx_codepoints takes */
    int n, cap;
};

void cpset_add(struct cpset *s, uint32_t lo, uint32_t hi);
void cpset_free(struct cpset *s);
void cpset_norm(struct cpset *s);
/* s becomes its complement among the scalar values. */
void cpset_invert(struct cpset *s);
/* s ∩ [lo, hi], added to out. */
void cpset_clip(const struct cpset *s, uint32_t lo, uint32_t hi, struct cpset *out);
int cpset_has(const struct cpset *s, uint32_t c);

#endif
