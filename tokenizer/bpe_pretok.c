/* bpe_pretok.c: UTF-8 decoding, character classes and the GPT-2
 * pre-tokenizer split (bpe_unicode.h). Works on bytes; any byte string is
 * split, invalid UTF-8 included (each invalid byte is an "other"). */
#include "bpe_unicode.h"

/* Classes of the ASCII characters, filled from the generated ranges on
 * first use would need a lock; the table is small enough to write out. */
static uint8_t ascii_class(uint8_t c) {
    if (c >= 'a' && c <= 'z') return BPE_CLASS_LETTER;
    if (c >= 'A' && c <= 'Z') return BPE_CLASS_LETTER;
    if (c >= '0' && c <= '9') return BPE_CLASS_NUMBER;
    if (c == ' ' || (c >= 0x09 && c <= 0x0D)) return BPE_CLASS_SPACE;
    return BPE_CLASS_OTHER;
}

bpe_class bpe_char_class(uint32_t cp) {
    if (cp < 0x80) return (bpe_class)ascii_class((uint8_t)cp);
    size_t lo = 0, hi = bpe_class_range_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp < bpe_class_ranges[mid].first) hi = mid;
        else if (cp > bpe_class_ranges[mid].last) lo = mid + 1;
        else return (bpe_class)bpe_class_ranges[mid].cls;
    }
    return BPE_CLASS_OTHER;
}

static int is_cont(uint8_t b) { return (b & 0xC0) == 0x80; }

size_t bpe_utf8_char(const uint8_t *s, size_t n, bpe_class *cls) {
    uint8_t b0 = s[0];
    if (b0 < 0x80) {
        *cls = (bpe_class)ascii_class(b0);
        return 1;
    }
    uint32_t cp;
    size_t len;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        len = 2;
        cp = b0 & 0x1Fu;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        len = 3;
        cp = b0 & 0x0Fu;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        len = 4;
        cp = b0 & 0x07u;
    } else {
        *cls = BPE_CLASS_OTHER; /* a continuation byte, C0/C1 or F5..FF */
        return 1;
    }
    if (n < len) {
        *cls = BPE_CLASS_OTHER;
        return 1;
    }
    for (size_t k = 1; k < len; k++) {
        if (!is_cont(s[k])) {
            *cls = BPE_CLASS_OTHER;
            return 1;
        }
        cp = (cp << 6) | (s[k] & 0x3Fu);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF))) {
        *cls = BPE_CLASS_OTHER; /* overlong, surrogate, or past U+10FFFF */
        return 1;
    }
    *cls = bpe_char_class(cp);
    return len;
}

/* The end of the run of class cls that starts at i (whose first character,
 * of that class, is already known to be there). */
static size_t run_end(const uint8_t *s, size_t n, size_t i, bpe_class cls) {
    while (i < n) {
        bpe_class c;
        size_t l = bpe_utf8_char(s + i, n - i, &c);
        if (c != cls) break;
        i += l;
    }
    return i;
}

size_t bpe_piece_end(const uint8_t *s, size_t n, size_t i) {
    if (s[i] == '\'' && i + 1 < n) { /* 's 't 'm 'd 're 've 'll (case-sensitive, as in GPT-2) */
        uint8_t a = s[i + 1];
        if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
        if (i + 2 < n) {
            uint8_t b = s[i + 2];
            if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
        }
    }
    bpe_class cls;
    size_t j = i;
    size_t len = bpe_utf8_char(s + j, n - j, &cls);
    if (s[i] == ' ' && i + 1 < n) { /* " ?X+": one ASCII space may lead a run that is not white space */
        bpe_class next;
        (void)bpe_utf8_char(s + i + 1, n - i - 1, &next);
        if (next != BPE_CLASS_SPACE) {
            j = i + 1;
            cls = next;
        }
    }
    if (cls != BPE_CLASS_SPACE) return run_end(s, n, j, cls);
    /* white space: the whole run at the end of the text; before anything
     * else, the run less its last character (\s+(?!\S)), unless the run is
     * that one character (\s+) */
    size_t last = i, e = i + len;
    while (e < n) {
        bpe_class c;
        size_t l = bpe_utf8_char(s + e, n - e, &c);
        if (c != BPE_CLASS_SPACE) break;
        last = e;
        e += l;
    }
    if (e == n || last == i) return e;
    return last;
}
