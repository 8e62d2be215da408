/* skeleton_reporter.c: a minimal, complete benchctl reporter, to copy from.
 *
 * Every hook of bc_reporter_ops, and the descriptor's check_settings, is
 * here, with a comment saying what it must do and whether it is required.
 * At the end of the run it writes one line per case, in requested order,
 * with every statistic the host computes for one chosen field:
 *
 *   # skeleton_reporter: facebook/opt-125m on cpu, field total_ms
 *   case 0 ok: n=3 mean=4.9 stddev=0.83 cv=0.17 min=3.8 p50=4.9 p95=6.1 p99=6.1 max=6.1 tok/s=6500
 *   case 1 failed (out of memory): generate: ...
 *
 * It shows the two ways to read results, both by name (a reporter never
 * hard-codes the fields or the statistics, so a host that adds one needs
 * no reporter change, and an older host that lacks one gives "-"):
 *   - walk the tables: run->field_names[0..n_fields), run->stat_names[0..n_stats)
 *     and bc_case_stat(run, cr, field, stat);
 *   - look one up: bc_run_field_index(run, "tokens_per_second"),
 *     bc_run_stat_index(run, "mean"); -1 when the host has no such name,
 *     and bc_case_stat() then gives NAN.
 *
 * Build it out of tree against an installed benchctl (docs/plugins.md):
 *   find_package(benchctl 0.1 REQUIRED)
 *   benchctl_add_plugin(skeleton_reporter SOURCES skeleton_reporter.c)
 * or by hand:
 *   cc $(pkg-config --cflags benchctl-plugin) -std=c11 -shared -fPIC \
 *      -fvisibility=hidden -o benchctl-skeleton_reporter.so skeleton_reporter.c
 * and name it in bench.cfg by path:
 *   reporters = ( { name = "/path/to/benchctl-skeleton_reporter.so";
 *                   settings = { path = "out/summary.txt"; field = "total_ms"; }; } );
 *
 * Rules that hold for every hook (benchctl/plugin.h): never exit() or
 * abort(), never write to stdout yourself (the path "-" goes through the
 * host); report failures as a bc_status plus bc_error_set(); host->log for
 * diagnostics. Arrays from the host are walked with their element size
 * (bc_run_case, bc_setting_at), never indexed with this file's sizeof.
 * Everything allocated here is freed here.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <benchctl/plugin.h>

/* ------------------------------------------------------------- settings */

/* The settings table: what bench.cfg may give in the reporter's settings
 * group. The host validates types and ranges against it and fills in
 * defaults; `benchctl plugins skeleton_reporter` prints it. Values arrive in
 * check_settings and open in this order (bc_setting_at(settings, SET_...)). */
enum { SET_PATH = 0, SET_FIELD, N_SETTINGS };

static const bc_setting_desc skeleton_settings[N_SETTINGS] = {
    [SET_PATH] = {
        .name = "path",
        .type = BC_SETTING_STRING,
        .default_string = "skeleton.txt",
        .help = "output file; \"-\" is stdout, a .gz suffix means gzip",
    },
    [SET_FIELD] = {
        .name = "field",
        .type = BC_SETTING_STRING,
        .default_string = "total_ms",
        .help = "the per-iteration field whose statistics each case line shows",
    },
};

/* ------------------------------------------------------------- instance */

/* Everything one instance owns. The host sees only a void *. */
typedef struct skeleton {
    const bc_host *host; /* host services; valid until destroy */
    const char *path;    /* host-owned setting strings; valid until destroy */
    const char *field;
    uint32_t n_finished; /* cases finished so far (case_finished) */
    uint64_t n_measured; /* measured iterations seen (iteration_finished) */
} skeleton;

/* -------------------------------------------------------------- helpers */

/* Writes "name=value" (or "name=-" when value was not measured). */
static bc_status put_value(const bc_host *host, bc_output *out, const char *name, double value, bc_error *err) {
    if (!bc_is_measured(value)) return host->output_printf(out, err, " %s=-", name);
    return host->output_printf(out, err, " %s=%.6g", name, value);
}

/* One line for case cr: its status, then every statistic of the run's
 * table for the chosen field, then one statistic looked up by name. */
static bc_status put_case(const skeleton *sk, bc_output *out, const bc_run_report *run, const bc_case_report *cr,
                          bc_error *err) {
    const bc_host *host = sk->host;
    if (cr->status != BC_CASE_OK)
        return host->output_printf(out, err, "case %u %s (%s): %s\n", cr->c->index,
                                   cr->status == BC_CASE_FAILED ? "failed" : "skipped",
                                   bc_status_name(cr->error_code), cr->message ? cr->message : "");
    bc_status st = host->output_printf(out, err, "case %u ok:", cr->c->index);
    int field = bc_run_field_index(run, sk->field);
    for (uint32_t s = 0; st == BC_OK && s < run->n_stats; s++)
        st = put_value(host, out, run->stat_names[s], bc_case_stat(run, cr, field, (int)s), err);
    if (st != BC_OK) return st;
    double tps = bc_case_stat(run, cr, bc_run_field_index(run, "tokens_per_second"), bc_run_stat_index(run, "mean"));
    st = put_value(host, out, "tok/s", tps, err);
    if (st != BC_OK) return st;
    return host->output_printf(out, err, "\n");
}

/* The whole report: a title line, then one line per case. */
static bc_status put_report(const skeleton *sk, bc_output *out, const bc_run_report *run, bc_error *err) {
    /* run->backend may be NULL (the host could not describe the backend),
     * and a field is read only when the host's struct holds it. */
    const bc_backend_info *b = run->backend;
    const char *model = b && BC_HAS(b, bc_backend_info, model) && b->model ? b->model : "?";
    const char *device = b && BC_HAS(b, bc_backend_info, device) && b->device ? b->device : "?";
    bc_status st = sk->host->output_printf(out, err, "# skeleton_reporter: %s on %s, field %s\n", model, device,
                                           sk->field);
    /* Cases in requested order, walked with the host's element size. */
    for (uint32_t i = 0; st == BC_OK && i < run->n_cases; i++) st = put_case(sk, out, run, bc_run_case(run, i), err);
    return st;
}

/* ---------------------------------------------------------------- hooks */

/* check_settings: OPTIONAL (in the descriptor, for any plugin kind). Checks
 * the resolved settings beyond their type and range, quickly and without
 * side effects. `benchctl validate` and `benchctl run` call it before any
 * other hook, so a report path that cannot be created fails the run before
 * its first case instead of after its last. host->output_check is a 2.0
 * service: BC_HAS says whether the host table holds it. */
static bc_status skeleton_check_settings(const bc_host *host, const bc_settings *settings, bc_error *err) {
    const char *path = bc_setting_at(settings, SET_PATH)->s;
    const char *field = bc_setting_at(settings, SET_FIELD)->s;
    if (!path || !*path) return bc_error_set(err, BC_ERR_SETTING, "skeleton_reporter: setting path is empty");
    if (!field || !*field) return bc_error_set(err, BC_ERR_SETTING, "skeleton_reporter: setting field is empty");
    if (BC_HAS(host, bc_host, output_check) && host->output_check) return host->output_check(host, path, err);
    return BC_OK;
}

/* open: REQUIRED. Called once, before the first case. run holds the run's
 * metadata and its tables of fields and statistics, but no cases yet. Make
 * the instance; refuse what cannot work here (so nothing runs for nothing).
 * On failure, free what was allocated, set err and return non-BC_OK,
 * leaving *out_instance alone; the host then runs without this reporter. */
static bc_status skeleton_open(const bc_host *host, const bc_settings *settings, const bc_run_report *run,
                               void **out_instance, bc_error *err) {
    const char *field = bc_setting_at(settings, SET_FIELD)->s;
    if (bc_run_field_index(run, field) < 0)
        return bc_error_set(err, BC_ERR_SETTING, "skeleton_reporter: field '%s' is not one this benchctl measures",
                            field);
    skeleton *sk = calloc(1, sizeof *sk);
    if (!sk) return bc_error_set(err, BC_ERR_NOMEM, "skeleton_reporter: out of memory");
    sk->host = host;
    sk->path = bc_setting_at(settings, SET_PATH)->s;
    sk->field = field;
    *out_instance = sk;
    return BC_OK;
}

/* case_started: OPTIONAL (NULL: not called). A case is about to run: the
 * i-th of n in execution order (largest batch first, not requested order),
 * with the host's estimate of the time left (NAN until it has one). For
 * progress displays; c is valid only during the call. */
static void skeleton_case_started(void *instance, const bc_case *c, uint32_t i, uint32_t n, double eta_s) {
    skeleton *sk = instance;
    (void)eta_s;
    sk->host->log(sk->host, BC_LOG_DEBUG, "case %u (%u of %u) starts", c->index, i + 1, n);
}

/* case_finished: OPTIONAL (NULL: not called). A case finished, ok, failed
 * or skipped; run->cases holds the cases finished so far, in requested
 * order. For journals, which write each case as soon as it is known (see
 * reporters/jsonl). A failure is reported by the host; the other reporters
 * carry on. */
static bc_status skeleton_case_finished(void *instance, const bc_run_report *run, const bc_case_report *cr,
                                        bc_error *err) {
    skeleton *sk = instance;
    (void)run;
    (void)cr;
    (void)err;
    sk->n_finished++;
    return BC_OK;
}

/* iteration_finished: OPTIONAL (since ABI 2.1; NULL: not called, and a
 * host older than 2.1 never calls it). One iteration of the running case
 * finished, warmup ones included (ev->warmup): ev->values holds its
 * run->n_fields values, ev->n_min / n_max the fewest and most measured
 * iterations the host's stop rule may run, ev->rel_ci the rule's figure so
 * far, ev->eta_s the host's estimate of the time left. For progress
 * displays; it runs between timed iterations, so it must be quick. Fields
 * added to the event after 2.1 are read only under BC_HAS(ev,
 * bc_iteration_event, field). A failure is reported by the host, which then
 * stops calling this hook. */
static bc_status skeleton_iteration_finished(void *instance, const bc_run_report *run, const bc_iteration_event *ev,
                                             bc_error *err) {
    skeleton *sk = instance;
    (void)run;
    (void)err;
    if (!ev->warmup) sk->n_measured++;
    return BC_OK;
}

/* close: REQUIRED. Every case is done (or skipped after an interrupt);
 * run->cases holds all of them in requested order. Write the output here,
 * through the host's output files: output_open writes to a temporary file
 * renamed into place by output_commit (".gz" compresses, "-" is stdout),
 * and every output_open ends with exactly one output_commit or
 * output_abort. */
static bc_status skeleton_close(void *instance, const bc_run_report *run, bc_error *err) {
    skeleton *sk = instance;
    bc_output *out = sk->host->output_open(sk->host, sk->path, err);
    if (!out) return err->code != BC_OK ? err->code : BC_ERR_IO;
    bc_status st = put_report(sk, out, run, err);
    if (st != BC_OK) {
        sk->host->output_abort(out); /* leaves any earlier file at path as it was */
        return st;
    }
    return sk->host->output_commit(out, err);
}

/* destroy: REQUIRED. Frees everything the instance owns. Called exactly
 * once per successful open, also when close was never called (an error,
 * an interrupt). */
static void skeleton_destroy(void *instance) { free(instance); }

/* ----------------------------------------------------------- descriptor */

/* The ops table: designated initializers, so a hook added to the ABI later
 * is NULL here and the host knows this reporter does not have it. */
static const bc_reporter_ops skeleton_ops = {
    .struct_size = sizeof(bc_reporter_ops),
    .open = skeleton_open,
    .case_started = skeleton_case_started,
    .case_finished = skeleton_case_finished,
    .close = skeleton_close,
    .destroy = skeleton_destroy,
    .iteration_finished = skeleton_iteration_finished,
};

/* The descriptor: BC_PLUGIN_DESC_HEADER fills magic, ABI version and size,
 * which the host checks before calling anything else; BC_SETTINGS_TABLE
 * fills the table, its length and its element size. name is what bench.cfg
 * uses when the plugin is found along the search path. */
static const bc_plugin_desc skeleton_desc = {
    BC_PLUGIN_DESC_HEADER,
    .kind = BC_KIND_REPORTER,
    .name = "skeleton_reporter",
    .version = "0.1.0",
    .description = "a minimal example reporter: every statistic of one field, one line per case",
    BC_SETTINGS_TABLE(skeleton_settings),
    .ops = &skeleton_ops,
    .check_settings = skeleton_check_settings,
};

/* The one exported symbol, benchctl_plugin_entry, returning the descriptor. */
BC_PLUGIN_DEFINE(skeleton_desc)
