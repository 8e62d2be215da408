/* tok_error.h: the tokenizer's own status codes and error record, so that
 * tokenizer/ includes nothing of benchctl. A failing call fills a tok_error
 * (a code, one line of message, optionally one line of hint) and returns
 * its code; callers in core and engine turn it into a bc_error with
 * tok_to_bc.h. */
#ifndef TOK_ERROR_H
#define TOK_ERROR_H

#include <stdarg.h>
#include <stdio.h>

#if defined(__GNUC__)
#define TOK_PRINTF(fmt_index, first_arg) __attribute__((format(printf, fmt_index, first_arg)))
#else
#define TOK_PRINTF(fmt_index, first_arg)
#endif

typedef enum tok_status {
    TOK_OK = 0,
    TOK_ERR_INVALID,     /* bad argument */
    TOK_ERR_UNSUPPORTED, /* a valid tokenizer of a kind this one does not run */
    TOK_ERR_NOMEM,       /* out of memory */
    TOK_ERR_IO,          /* a file could not be read (the caller's reader) */
    TOK_ERR_FORMAT,      /* a file's contents are malformed */
    TOK_ERR_NOT_FOUND    /* a file does not exist */
} tok_status;

/* Filled by whoever fails; hint is "" when there is none. */
typedef struct tok_error {
    tok_status code;
    char message[512];
    char hint[256];
} tok_error;

/* Sets err's code and message (if err is non-NULL), clears its hint and
 * returns code. */
static inline tok_status tok_error_set(tok_error *err, tok_status code, const char *fmt, ...) TOK_PRINTF(3, 4);
static inline tok_status tok_error_set(tok_error *err, tok_status code, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->code = code;
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        err->hint[0] = '\0';
    }
    return code;
}

/* Sets err's hint (after tok_error_set) and returns err's code. */
static inline tok_status tok_error_hint(tok_error *err, const char *fmt, ...) TOK_PRINTF(2, 3);
static inline tok_status tok_error_hint(tok_error *err, const char *fmt, ...) {
    if (!err) return TOK_OK;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->hint, sizeof err->hint, fmt, ap);
    va_end(ap);
    return err->code;
}

#endif
