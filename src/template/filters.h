/* Filter implementations shared between filters.c (scalar and string
 * filters, the dispatch table) and filters_seq.c (filters over sequences). */
#ifndef INFER_TEMPLATE_FILTERS_H
#define INFER_TEMPLATE_FILTERS_H

#include "template/internal.h"

#define FILTER(name)                                                                                         \
    int name(struct rctx *c, int line, struct tval v, const struct targs *a, struct tval *out)

/* str(v) as a new string value (Undefined -> "") */
struct tval tmpl_soft_str(struct tval v);

#define MAX_PATH 16

struct attrpath {
    int n;
    struct tval part[MAX_PATH]; /* owned */
};

/* Attribute paths as jinja2's make_attrgetter: "a.b.0" -> ["a", "b", 0]
 * (given as s/n, or taken from attr: a string, an int, or none for no path). */
int tmpl_path_parse(struct rctx *c, int line, struct tval attr, const char *s, size_t n, struct attrpath *p);
void tmpl_path_free(struct attrpath *p);
/* item[part][part]...; an Undefined step becomes dflt (unless missing/none);
 * lower: lowercase a string result (case-insensitive sorting). */
int tmpl_path_get(struct rctx *c, int line, struct tval item, const struct attrpath *p, struct tval dflt,
                  int lower, struct tval *out);
struct tval tmpl_list_val(struct tlist *l);              /* wraps a list reference as a value */
struct tval tmpl_new_iter(const char *what, size_t cap); /* a one-shot iterator (generator) */

FILTER(tfilt_first);
FILTER(tfilt_last);
FILTER(tfilt_length);
FILTER(tfilt_list);
FILTER(tfilt_join);
FILTER(tfilt_map);
FILTER(tfilt_select);
FILTER(tfilt_reject);
FILTER(tfilt_selectattr);
FILTER(tfilt_rejectattr);
FILTER(tfilt_sort);
FILTER(tfilt_unique);
FILTER(tfilt_min);
FILTER(tfilt_max);
FILTER(tfilt_sum);
FILTER(tfilt_reverse);
FILTER(tfilt_items);
FILTER(tfilt_dictsort);
FILTER(tfilt_batch);
FILTER(tfilt_slice);

#endif
