/* The unit the encoding pipeline passes between stages: a list of text
 * pieces in one byte buffer, each either still text (id < 0) or already
 * resolved to a token id (an added token found in the input). */
#ifndef INFER_TOKENIZER_PIECES_H
#define INFER_TOKENIZER_PIECES_H

#include <stddef.h>
#include <stdint.h>

struct piece {
    size_t off;
    size_t len;
    int32_t id; /* -1 = text still to be processed */
};

struct pieces {
    char *buf;
    size_t len, cap;
    struct piece *v;
    int n, cap_v;
};

void pieces_clear(struct pieces *p);
void pieces_free(struct pieces *p);
/* Appends a piece with a copy of the bytes. Empty text pieces are dropped. */
void pieces_push(struct pieces *p, const char *s, size_t len, int32_t id);
/* Appends a text piece even when empty (decoders keep empty tokens). */
void pieces_push_kept(struct pieces *p, const char *s, size_t len);
/* Extends the last piece with more bytes (it must be text). */
void pieces_extend_last(struct pieces *p, const char *s, size_t len);

static inline const char *piece_str(const struct pieces *p, int i) { return p->buf + p->v[i].off; }

#endif
