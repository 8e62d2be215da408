/* text_lines.h: stepping through a text buffer line by line, for the files
 * the tokenizer library reads (merges.txt, prompt sets). */
#ifndef BPE_TEXT_LINES_H
#define BPE_TEXT_LINES_H

#include <stddef.h>
#include <string.h>

/* The line of text[0..len) that starts at *pos: *line and *n (without its
 * '\n', nor a '\r' before it); *pos moves past it. Returns 0, setting
 * nothing, once *pos is at the end. */
static inline int bpe_next_line(const char *text, size_t len, size_t *pos, const char **line, size_t *n) {
    if (*pos >= len) return 0;
    const char *s = text + *pos;
    const char *nl = memchr(s, '\n', len - *pos);
    size_t k = nl ? (size_t)(nl - s) : len - *pos;
    *pos += k + 1;
    if (k && s[k - 1] == '\r') k--;
    *line = s;
    *n = k;
    return 1;
}

#endif
