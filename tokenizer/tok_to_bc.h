/* tok_to_bc.h: the one bridge between the tokenizer's tok_error and
 * benchctl's bc_error, for the tokenizer's callers in core, engine, tools
 * and tests (tokenizer/ itself never includes it). Codes map one to one;
 * message and hint are kept as they are. */
#ifndef TOK_TO_BC_H
#define TOK_TO_BC_H

#include <stdint.h>
#include <string.h>

#include "benchctl/plugin.h"
#include "tok_error.h"

static inline bc_status tok_status_to_bc(tok_status st) {
    switch (st) {
    case TOK_OK: return BC_OK;
    case TOK_ERR_INVALID: return BC_ERR_INVALID;
    case TOK_ERR_UNSUPPORTED: return BC_ERR_UNSUPPORTED;
    case TOK_ERR_NOMEM: return BC_ERR_NOMEM;
    case TOK_ERR_IO: return BC_ERR_IO;
    case TOK_ERR_FORMAT: return BC_ERR_FORMAT;
    case TOK_ERR_NOT_FOUND: return BC_ERR_NOT_FOUND;
    }
    return BC_ERR_INTERNAL;
}

/* Copies te (code, message, hint) into err when st is an error; returns
 * st as a bc_status. */
static inline bc_status tok_error_to_bc(tok_status st, const tok_error *te, bc_error *err) {
    bc_status bst = tok_status_to_bc(st);
    if (bst != BC_OK && err) {
        err->code = bst;
        memcpy(err->message, te->message, sizeof err->message);
        memcpy(err->hint, te->hint, sizeof err->hint);
    }
    return bst;
}

/* The other way, for a benchctl reader handed to the tokenizer: a code the
 * tokenizer has no name for (a reader only fails with i/o, format, memory
 * or not-found) becomes TOK_ERR_IO. */
static inline tok_status tok_error_from_bc(bc_status st, const bc_error *err, tok_error *te) {
    tok_status tst;
    switch (st) {
    case BC_OK: return TOK_OK;
    case BC_ERR_INVALID: tst = TOK_ERR_INVALID; break;
    case BC_ERR_UNSUPPORTED: tst = TOK_ERR_UNSUPPORTED; break;
    case BC_ERR_NOMEM: tst = TOK_ERR_NOMEM; break;
    case BC_ERR_FORMAT: tst = TOK_ERR_FORMAT; break;
    case BC_ERR_NOT_FOUND: tst = TOK_ERR_NOT_FOUND; break;
    default: tst = TOK_ERR_IO; break;
    }
    if (te) {
        te->code = tst;
        memcpy(te->message, err->message, sizeof te->message);
        memcpy(te->hint, err->hint, sizeof te->hint);
    }
    return tst;
}

/* Defines `static tok_status name(...)`, a bpe_read_fn that runs the
 * benchctl reader bc_read (bc_read_regular, eng_read_regular). */
#define TOK_READER_FROM_BC(name, bc_read)                                                                        \
    static tok_status name(const char *path, const char *what, uint64_t max_bytes, char **out, size_t *out_len, \
                           tok_error *te) {                                                                      \
        bc_error e = {0};                                                                                        \
        return tok_error_from_bc(bc_read(path, what, max_bytes, out, out_len, &e), &e, te);                     \
    }

#endif
