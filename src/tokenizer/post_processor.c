#include "tokenizer/post_processor.h"

#include <stdlib.h>
#include <string.h>

static void append(int32_t **v, int *n, int32_t id)
{
    *v = xrealloc(*v, (size_t)(*n + 1) * sizeof **v);
    (*v)[(*n)++] = id;
}

static int parse_template(const json_t *j, struct post_processor *p, struct err *e)
{
    const json_t *single = json_object_get(j, "single"), *specials = json_object_get(j, "special_tokens");
    if (!json_is_array(single))
        return err_set(e, "post-processor TemplateProcessing: 'single' must be a list");
    int seen_sequence = 0;
    size_t i;
    const json_t *item;
    json_array_foreach(single, i, item)
    {
        const json_t *sp = json_object_get(item, "SpecialToken");
        if (json_object_get(item, "Sequence")) {
            if (seen_sequence++)
                return err_set(e, "post-processor TemplateProcessing: 'single' holds two sequences");
            continue;
        }
        const char *name = json_string_value(json_object_get(sp, "id"));
        const json_t *ids = json_object_get(json_object_get(specials, name ? name : ""), "ids");
        if (!name || !json_is_array(ids))
            return err_set(e, "post-processor TemplateProcessing: special token '%s' has no ids in 'special_tokens'",
                           name ? name : "(unnamed)");
        size_t k;
        const json_t *id;
        json_array_foreach(ids, k, id)
        {
            if (!json_is_integer(id))
                return err_set(e, "post-processor TemplateProcessing: ids of '%s' must be integers", name);
            if (seen_sequence)
                append(&p->suffix, &p->n_suffix, (int32_t)json_integer_value(id));
            else
                append(&p->prefix, &p->n_prefix, (int32_t)json_integer_value(id));
        }
    }
    return 0;
}

int post_processor_parse(const json_t *j, struct post_processor *p, struct err *e)
{
    if (!j || json_is_null(j))
        return 0;
    const char *type = json_string_value(json_object_get(j, "type"));
    if (type && !strcmp(type, "TemplateProcessing"))
        return parse_template(j, p, e);
    if (type && !strcmp(type, "ByteLevel"))
        return 0;
    if (type && !strcmp(type, "Sequence")) {
        size_t i;
        const json_t *c;
        json_array_foreach(json_object_get(j, "processors"), i, c)
        {
            if (post_processor_parse(c, p, e))
                return -1;
        }
        return 0;
    }
    return err_set(e, "post-processor '%s' is not supported (TemplateProcessing, ByteLevel, Sequence are)",
                   type ? type : "(no type)");
}

void post_processor_free(struct post_processor *p)
{
    free(p->prefix);
    free(p->suffix);
    memset(p, 0, sizeof *p);
}
