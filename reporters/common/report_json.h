/* report_json.h: the pieces of the benchctl JSON report that both the json
 * reporter (one document) and the jsonl journal (one record per line) write:
 * run metadata, one case object, and the run-level values derived from the
 * cases. The schema is documented in docs/reporters.md; bump
 * BC_REPORT_SCHEMA_VERSION when a key is removed or changes meaning.
 */
#ifndef BENCHCTL_REPORTERS_REPORT_JSON_H
#define BENCHCTL_REPORTERS_REPORT_JSON_H

#include "benchctl/plugin.h"
#include "jsonw.h"

/* The schema this code writes; the host's run->schema_version is written
 * as given, and this is used only when the host leaves it 0. */
#define BC_REPORT_SCHEMA_VERSION 1

/* "ok", "failed" or "skipped". */
const char *bc_case_status_name(bc_case_status s);

/* The dtype a case ran in: its precision's dtype name ("bfloat16"), else the
 * precision plugin's name, else NULL. */
const char *bc_case_dtype(const bc_case *c);

/* Index of field name in run->field_names, or -1. */
int bc_run_field_index(const bc_run_report *run, const char *name);

/* schema_version to write: the host's, or BC_REPORT_SCHEMA_VERSION if 0. */
uint32_t bc_rj_schema_version(const bc_run_report *run);

/* Writes, as keys of the object being written, the seed's run keys that do
 * not depend on the cases: model, device, warmup, iterations, temperature,
 * top_p. */
void bc_rj_seed_keys(bc_jw *w, const bc_run_report *run);

/* Writes, as keys of the object being written, the extended run metadata:
 * benchctl_version, git_commit, backend, gpu, driver, cpu_model, hostname,
 * config_path, config_sha256, start_time, sampling{}, precisions[],
 * cache_policies[], fields[], plugins[]. */
void bc_rj_run_metadata(bc_jw *w, const bc_run_report *run);

/* Writes one case object (see docs/reporters.md). with_profiles = 0 leaves
 * out the per-iteration "profiles" list. record, if non-NULL, is written
 * first as "record": record (the journal's record type). */
void bc_rj_case(bc_jw *w, const bc_run_report *run, const bc_case_report *cr, int with_profiles,
                const char *record);

#endif
