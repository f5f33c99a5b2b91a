/* tokenizer.json post-processors that change ids: TemplateProcessing (the
 * "single" template: special tokens around the sequence, e.g. BOS), plus
 * ByteLevel (offsets only: no effect on ids) and Sequence. */
#ifndef INFER_TOKENIZER_POST_PROCESSOR_H
#define INFER_TOKENIZER_POST_PROCESSOR_H

#include <jansson.h>
#include <stdint.h>

#include "core/error.h"

struct post_processor {
    int32_t *prefix; /* ids before the sequence */
    int n_prefix;
    int32_t *suffix; /* ids after it */
    int n_suffix;
};

/* Reads the processor (NULL json = none) into p. Returns -1 with e set when
 * it is unsupported or malformed. */
int post_processor_parse(const json_t *j, struct post_processor *p, struct err *e);
void post_processor_free(struct post_processor *p);

#endif
