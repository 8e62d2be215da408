/* fields.h: the run's per-iteration fields as a table of metric descriptors
 * (benchctl/plugin.h, bc_metric_desc): the host's own, BC_N_FIELDS rows in
 * bc_field order, then every backend's declared metrics (its descriptor's
 * table, then its instance's more_metrics rows), one column per name.
 *
 * A backend row whose name is already a column (another backend's, or one
 * of the host's that hold backend figures: engine_total_ms and the 2.3
 * fields from padded_token_slots to lora_unfuse_ms, but not
 * protocol_overhead_ms or padding_waste, which the host derives) fills that
 * column when unit, better and scope agree; otherwise, and for a field the
 * host times or derives (total_ms, ..., the row fields from row_ttft_ms_p50
 * on, rowlat.h), the run cannot start, with a message naming the backend
 * and the metric. So
 * a backend that declares "lora_fuse_ms" (ms, lower, iteration) reports in
 * the host's 2.3 column of that name, and two backends of a backends list
 * that declare the same metric share one column.
 *
 * Ownership: a bc_fields owns its arrays and a copy of every string (so the
 * table outlives the plugin rows it was built from); bc_fields_free frees
 * them. Nothing here prints or exits. */
#ifndef BENCHCTL_FIELDS_H
#define BENCHCTL_FIELDS_H

#include <stddef.h>
#include <stdint.h>

#include "benchctl/plugin.h"

/* The most columns a run has (host fields and declared metrics), and the
 * most metric rows one backend declares. */
enum { BC_FIELDS_MAX = 512, BC_METRICS_MAX_PER_BACKEND = 256, BC_METRIC_NAME_MAX = 63 };

/* One backend's metric rows: rows n_rows, in its table order (the
 * descriptor's, then more_metrics'), each with its column and scope. */
typedef struct bc_fields_backend {
    uint32_t n_rows;
    uint32_t *column;       /* n_rows */
    bc_metric_scope *scope; /* n_rows */
} bc_fields_backend;

typedef struct bc_fields {
    uint32_t n;               /* columns */
    const char **names;       /* n: descs[i].name, the run report's field_names */
    bc_metric_desc *descs;    /* n, host-size rows; strings owned */
    bc_fields_backend *backends; /* n_backends */
    size_t n_backends;
} bc_fields;

/* The host's descriptors, indexed by bc_field (runner.h). */
extern const bc_metric_desc bc_host_field_descs[];

/* The host's descriptor of the field called name, or NULL. */
const bc_metric_desc *bc_host_field_desc(const char *name);

/* 0 when row d is well formed (name [a-z0-9_]{1,63}, a unit, better and
 * scope of this minor); else 1 with why (one line) filled. */
int bc_metric_desc_invalid(const bc_metric_desc *d, char *why, size_t cap);

/* The host's fields only. */
bc_status bc_fields_init(bc_fields *f, bc_error *err);

/* Starts the rows of the next backend (its index is f->n_backends - 1). */
bc_status bc_fields_begin_backend(bc_fields *f, bc_error *err);

/* Adds n_rows rows (row_size bytes apart) to the last backend begun; who
 * ("backend 'opt'") prefixes errors. */
bc_status bc_fields_add_rows(bc_fields *f, const char *who, const bc_metric_desc *rows, uint32_t n_rows,
                             uint32_t row_size, bc_error *err);

/* Column of the field called name, -1 if none. */
int bc_fields_index(const bc_fields *f, const char *name);

void bc_fields_free(bc_fields *f);

#endif
