/* report_json.h: the pieces of the benchctl JSON report that both the json
 * reporter (one document) and the jsonl journal (one record per line) write:
 * run metadata, one case object. Fields and statistics are written from the
 * run's tables (run->field_names, run->stat_names), never from a fixed list,
 * so a field or statistic the host adds appears without a change here. The
 * schema is documented in docs/reporters.md; the host's run->schema_version
 * says which one it is (bump it when a key is removed or changes meaning).
 */
#ifndef BENCHCTL_REPORTERS_REPORT_JSON_H
#define BENCHCTL_REPORTERS_REPORT_JSON_H

#include "benchctl/plugin.h"
#include "jsonw.h"
#include "report.h"

/* The schema this code writes, used only when the host leaves
 * run->schema_version 0. */
#define BC_RJ_SCHEMA_VERSION 2

/* schema_version to write: the host's, or BC_RJ_SCHEMA_VERSION if 0. */
uint32_t bc_rj_schema_version(const bc_run_report *run);

/* Writes, as keys of the object being written, the seed's run keys that do
 * not depend on the cases: model, device, warmup, iterations, temperature,
 * top_p. */
void bc_rj_seed_keys(bc_jw *w, const bc_run_report *run);

/* Writes, as keys of the object being written, the extended run metadata:
 * benchctl_version, git_commit, backend, backend_settings, gpu, driver,
 * cpu_model, hostname, environment{}, model_shape{}, config_path,
 * config_sha256, start_time, sampling{}, precisions[], cache_policies[],
 * fields[], metrics[] (each field's descriptor: name, unit, better, scope,
 * help; from a 2.4 host), stats[], plugins[]. */
void bc_rj_run_metadata(bc_jw *w, const bc_run_report *run);

/* Writes one case object (see docs/reporters.md). with_profiles = 0 leaves
 * out the per-iteration "profiles" list. record, if non-NULL, is written
 * first as "record": record (the journal's record type). */
void bc_rj_case(bc_jw *w, const bc_run_report *run, const bc_case_report *cr, int with_profiles,
                const char *record);

#endif
