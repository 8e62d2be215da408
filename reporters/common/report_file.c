/* report_file.c: see report_file.h. */
#include "report_file.h"

bc_status bc_report_check_output(const bc_host *host, const char *who, const char *path, bc_error *err) {
    if (!path || !*path) return bc_error_set(err, BC_ERR_SETTING, "%s: setting path is empty", who);
    if (!BC_HAS(host, bc_host, output_check) || !host->output_check) return BC_OK;
    return host->output_check(host, path, err);
}

bc_status bc_report_write_file(const bc_host *host, const char *path, const char *buf, size_t len, bc_error *err) {
    bc_output *out = host->output_open(host, path, err);
    if (!out) return err && err->code ? err->code : BC_ERR_IO;
    bc_status st = host->output_write(out, buf, len, err);
    if (st != BC_OK) {
        host->output_abort(out);
        return st;
    }
    return host->output_commit(out, err);
}
