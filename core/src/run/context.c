/* context.c: the run context, built in one place (see context.h): the
 * config and its plugins, the backends' setting axes and instances, the
 * cases and their plan, the run's header. A plugin's settings are resolved
 * by context_settings.c. */
#define _GNU_SOURCE
#include "context.h"

#include <libconfig.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "matrix.h"
#include "output.h"
#include "plan.h"
#include "selection.h"
#include "settings.h"

/* snprintf for messages that may be cut short on purpose. */
static void text(char *buf, size_t n, const char *fmt, ...) BC_PRINTF(3, 4);
static void text(char *buf, size_t n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, n, fmt, ap);
    va_end(ap);
}

void bc_context_describe_case(const bc_case *c, char *buf, size_t n) {
    char prompt[32];
    if (c->prompt_length) snprintf(prompt, sizeof prompt, "%u", c->prompt_length);
    else snprintf(prompt, sizeof prompt, "from the prompts");
    int used = snprintf(buf, n, "%s %s, batch %u x %u samples, prompt %s, response %u", c->precision,
                        c->cache_policy, c->batch_size, c->samples_per_prompt, prompt, c->response_length);
    for (uint32_t i = 0; BC_HAS(c, bc_case, n_settings) && c->setting_values && i < c->n_settings; i++) {
        if (used < 0 || (size_t)used >= n) return;
        int more = snprintf(buf + used, n - (size_t)used, ", %s %s", c->setting_names[i], c->setting_values[i]);
        used = more < 0 ? more : used + more;
    }
}

/* Loads the plugin spec names, of kind want, resolves its settings and runs
 * its check_settings. */
static bc_status load_plugin(bc_context *ctx, const bc_plugin_spec *spec, bc_plugin_kind want, bc_context_plugin *out,
                             bc_error *err) {
    /* a backend whose settings the matrix varies is checked once per
     * combination instead (resolve_setting_axes) */
    int check = want != BC_KIND_BACKEND || ctx->cfg.n_setting_axes == 0;
    bc_config_spec_location(&ctx->cfg, spec, out->where, sizeof out->where); /* "bench.cfg:5", "--reporter" */
    char label[sizeof out->where + 300];
    text(label, sizeof label, "%s: %s", out->where, spec->where ? spec->where : "");
    /* no wanted_by: the label names where and which setting, as for every
     * other error ("bench.cfg:3: backend: 'json' is a reporter plugin, not a
     * backend") */
    bc_status st = bc_loader_load(&ctx->loader, spec->name, want, NULL, &out->plugin, err);
    if (st != BC_OK) {
        /* a near name beats the loader's general hint */
        if (st == BC_ERR_NOT_FOUND) bc_loader_hint_near_name(&ctx->loader, spec->name, err);
        return bc_context_prefix_error(err, label);
    }
    const bc_plugin_desc *d = out->plugin->desc;
    if (bc_host_log_level() >= BC_LOG_INFO)
        fprintf(stderr, "benchctl: %s: %s plugin %s %s from %s\n", out->where, bc_kind_name(d->kind), d->name,
                d->version ? d->version : "?", out->plugin->path);
    char prefix[sizeof label + 64];
    text(prefix, sizeof prefix, "%s: %s '%s'", label, bc_kind_name(d->kind), d->name);
    if ((st = bc_context_resolve_settings(&ctx->cfg, spec, out, prefix, err)) != BC_OK) return st;
    bc_output_claims_owner(prefix); /* the output files it checks are its own */
    if (check && d->check_settings && (st = d->check_settings(&out->plugin->host, &out->settings, err)) != BC_OK)
        return bc_context_prefix_error(err, prefix);
    return BC_OK;
}

/* A distributed rank picks its GPU by its local rank (context.h), for each
 * backend (spec, b) of the run: every INT setting the backend marks
 * BC_SETTING_LOCAL_RANK (since 2.4) that bench.cfg does not give. */
static void device_index_from_local_rank(const bc_plugin_spec *spec, bc_context_plugin *b, int32_t local_rank) {
    const bc_plugin_desc *d = b->plugin->desc; /* host-size rows (loader.h) */
    for (uint32_t i = 0; i < d->n_settings; i++)
        if (d->settings[i].type == BC_SETTING_INT && (d->settings[i].flags & BC_SETTING_LOCAL_RANK) &&
            !bc_settings_given(spec, d->settings[i].name))
            b->values[i].i = local_rank;
}

static bc_status load_scorer(bc_context *ctx, const bc_context_args *a, bc_error *err);
static bc_status check_stage_hooks(bc_context *ctx, bc_error *err);

/* Steps 1 and 2: the config and its plugins. */
static bc_status load_config_and_plugins(bc_context *ctx, const bc_context_args *a, bc_error *err) {
    if (!a->file) return bc_error_set(err, BC_ERR_INVALID, "missing FILE");
    bc_status st = bc_config_load_text(&ctx->cfg, a->file, a->file_text, a->file_text_len, a->sets, a->n_sets,
                                       a->reporters, err);
    if (st != BC_OK) return st;
    bc_output_claims_begin(); /* no two plugins' outputs on one file */
    /* plugin_path entries, like every relative path in bench.cfg, are relative
     * to the directory benchctl runs in (docs/config.md) */
    st = bc_loader_init(&ctx->loader, NULL, 0, (const char *const *)ctx->cfg.plugin_paths, ctx->cfg.n_plugin_paths,
                        err);
    if (st != BC_OK) return st;
    if ((st = load_plugin(ctx, &ctx->cfg.backend, BC_KIND_BACKEND, &ctx->backend, err)) != BC_OK) return st;
    if (a->local_rank) device_index_from_local_rank(&ctx->cfg.backend, &ctx->backend, *a->local_rank);
    size_t nb = ctx->cfg.n_more_backends;
    ctx->more_backends = calloc(nb + 1, sizeof *ctx->more_backends);
    if (!ctx->more_backends) return bc_error_set(err, BC_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < nb; i++)
        if ((st = load_plugin(ctx, &ctx->cfg.more_backends[i], BC_KIND_BACKEND, &ctx->more_backends[i], err)) != BC_OK)
            return st;
    for (size_t i = 0; a->local_rank && i < nb; i++)
        device_index_from_local_rank(&ctx->cfg.more_backends[i], &ctx->more_backends[i], *a->local_rank);
    size_t np = ctx->cfg.n_precisions, nc = ctx->cfg.n_cache_policies, nr = ctx->cfg.n_reporters;
    ctx->precisions = calloc(np + 1, sizeof *ctx->precisions);
    ctx->caches = calloc(nc + 1, sizeof *ctx->caches);
    ctx->reporters = calloc(nr + 1, sizeof *ctx->reporters);
    ctx->precision_names = calloc(np + 1, sizeof *ctx->precision_names);
    ctx->cache_names = calloc(nc + 1, sizeof *ctx->cache_names);
    if (!ctx->precisions || !ctx->caches || !ctx->reporters || !ctx->precision_names || !ctx->cache_names)
        return bc_error_set(err, BC_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < np; i++) {
        st = load_plugin(ctx, &ctx->cfg.precisions[i], BC_KIND_PRECISION, &ctx->precisions[i], err);
        if (st != BC_OK) return st;
        ctx->precision_names[i] = ctx->precisions[i].plugin->desc->name;
    }
    for (size_t i = 0; i < nc; i++) {
        st = load_plugin(ctx, &ctx->cfg.cache_policies[i], BC_KIND_CACHE, &ctx->caches[i], err);
        if (st != BC_OK) return st;
        ctx->cache_names[i] = ctx->caches[i].plugin->desc->name;
    }
    for (size_t i = 0; i < nr; i++)
        if ((st = load_plugin(ctx, &ctx->cfg.reporters[i], BC_KIND_REPORTER, &ctx->reporters[i], err)) != BC_OK)
            return st;
    if ((st = load_scorer(ctx, a, err)) != BC_OK) return st;
    return check_stage_hooks(ctx, err);
}

/* Backend i's label, as cases and reports name it (0: the first). */
static const char *backend_label(const bc_context *ctx, size_t i) {
    const bc_plugin_spec *spec = i == 0 ? &ctx->cfg.backend : &ctx->cfg.more_backends[i - 1];
    const bc_context_plugin *cp = i == 0 ? &ctx->backend : &ctx->more_backends[i - 1];
    return spec->label ? spec->label : cp->plugin->desc->name;
}

static size_t n_backends(const bc_context *ctx) { return 1 + ctx->cfg.n_more_backends; }

/* Entry b of the backends list: its spec and resolved plugin. */
static const bc_plugin_spec *entry_spec(const bc_context *ctx, size_t b) {
    return b == 0 ? &ctx->cfg.backend : &ctx->cfg.more_backends[b - 1];
}
static bc_context_plugin *entry_plugin(bc_context *ctx, size_t b) {
    return b == 0 ? &ctx->backend : &ctx->more_backends[b - 1];
}

/* Step 2, the score group: the scorer named by score.backend (a backends
 * entry's label: that entry's plugin, with score.settings or else the
 * entry's own; another name: that backend plugin, with score.settings;
 * none: the run's one backend with its settings), and the score
 * precision (one of precisions, or loaded for the scorer). */
static bc_status load_scorer(bc_context *ctx, const bc_context_args *a, bc_error *err) {
    const bc_config *cfg = &ctx->cfg;
    if (!cfg->score_given) return BC_OK;
    bc_plugin_spec spec = cfg->score; /* borrows cfg's strings */
    size_t entry = SIZE_MAX;
    char where[PATH_MAX + 64];
    bc_config_spec_location(cfg, &cfg->score, where, sizeof where);
    if (!spec.name) {
        if (n_backends(ctx) > 1)
            return bc_error_set(err, BC_ERR_SETTING,
                                "%s: score.backend: the run has %zu backends: name the scorer (a backend plugin, or "
                                "the label of an entry of backends)",
                                where, n_backends(ctx));
        entry = 0;
    }
    for (size_t b = 0; spec.name && b < n_backends(ctx) && entry == SIZE_MAX; b++)
        if (strcmp(backend_label(ctx, b), spec.name) == 0) entry = b;
    if (entry != SIZE_MAX) {
        const bc_plugin_spec *es = entry_spec(ctx, entry);
        spec.name = es->name;
        if (!spec.settings) spec.settings = es->settings;
    }
    ctx->scorer_label = entry != SIZE_MAX ? backend_label(ctx, entry) : cfg->score.name;
    bc_status st = load_plugin(ctx, &spec, BC_KIND_BACKEND, &ctx->scorer, err);
    if (st != BC_OK) return st;
    const bc_plugin_desc *d = ctx->scorer.plugin->desc;
    if (cfg->n_setting_axes && d->check_settings && /* load_plugin left it to the axes */
        (st = d->check_settings(&ctx->scorer.plugin->host, &ctx->scorer.settings, err)) != BC_OK) {
        char prefix[sizeof where + 128];
        text(prefix, sizeof prefix, "%s: score: backend '%s'", where, d->name);
        return bc_context_prefix_error(err, prefix);
    }
    if (a->local_rank) device_index_from_local_rank(&spec, &ctx->scorer, *a->local_rank);
    for (size_t i = 0; i < cfg->n_precisions; i++)
        if (strcmp(cfg->precisions[i].name, cfg->score_precision.name) == 0 ||
            strcmp(ctx->precision_names[i], cfg->score_precision.name) == 0) {
            ctx->score_precision_name = ctx->precision_names[i];
            ctx->score_precision_ops = &ctx->precisions[i].plugin->precision;
            return BC_OK;
        }
    st = load_plugin(ctx, &cfg->score_precision, BC_KIND_PRECISION, &ctx->score_precision_own, err);
    if (st != BC_OK) return st;
    ctx->score_precision_name = ctx->score_precision_own.plugin->desc->name;
    ctx->score_precision_ops = &ctx->score_precision_own.plugin->precision;
    return BC_OK;
}

/* Step 2, last: the hooks the score stage and run.refit call, refused
 * before any case when a plugin lacks one. */
static bc_status check_stage_hooks(bc_context *ctx, bc_error *err) {
    const bc_config *cfg = &ctx->cfg;
    if (cfg->score_given && !ctx->scorer.plugin->backend.score)
        return bc_error_set(err, BC_ERR_UNSUPPORTED,
                            "%s: score: backend '%s' has no score hook (ABI 2.6): it cannot be the scorer",
                            ctx->scorer.where, ctx->scorer.plugin->desc->name);
    for (size_t b = 0; b < n_backends(ctx); b++) {
        const bc_context_plugin *cp = entry_plugin(ctx, b);
        if (cfg->score_given && !cp->plugin->backend.read_rollout)
            return bc_error_set(err, BC_ERR_UNSUPPORTED,
                                "%s: %s: backend '%s' has no read_rollout hook (ABI 2.6): the score group needs the "
                                "rollout's tokens",
                                cp->where, entry_spec(ctx, b)->where, cp->plugin->desc->name);
        if (cfg->refit != BC_CFG_REFIT_OFF && !cp->plugin->backend.refit) {
            char where[PATH_MAX + 64];
            bc_config_setting_location(cfg, "run.refit", where, sizeof where);
            int named = strstr(where, "run.refit") != NULL; /* "--set run.refit" */
            return bc_error_set(err, BC_ERR_UNSUPPORTED,
                                "%s%s: backend '%s' (%s) has no refit hook (ABI 2.6): it cannot load new weights "
                                "between rollouts",
                                where, named ? "" : ": run.refit", cp->plugin->desc->name, cp->where);
        }
    }
    return BC_OK;
}

/* The index of combination s's value of axis a (the first axis outermost). */
static size_t combo_value(const bc_config *cfg, size_t s, size_t a) {
    size_t inner = 1;
    for (size_t q = a + 1; q < cfg->n_setting_axes; q++) inner *= cfg->setting_axes[q].n_values;
    return s / inner % cfg->setting_axes[a].n_values;
}

/* Writes combination s of the setting axes as "batching = static, kv_layout = paged". */
static void describe_combo(const bc_context *ctx, size_t s, char *buf, size_t n) {
    size_t used = 0, na = ctx->cfg.n_setting_axes;
    buf[0] = '\0';
    for (size_t a = 0; a < na && used < n; a++) {
        text(buf + used, n - used, "%s%s = %s", a ? ", " : "", ctx->axis_names[a], ctx->combo_texts[s * na + a]);
        used += strlen(buf + used);
    }
}

/* Step 2, for the axes over backend settings: every value checked against
 * every backend's table (values[b][a][j]: backend b's value j of axis a),
 * the combinations enumerated (first axis outermost), and each backend's
 * settings for each combination built and put through its check_settings. */
static bc_status resolve_setting_axes(bc_context *ctx, bc_error *err) {
    const bc_config *cfg = &ctx->cfg;
    size_t na = cfg->n_setting_axes, nb = n_backends(ctx), nc = 1;
    for (size_t a = 0; a < na; a++) {
        if (nc > UINT32_MAX / cfg->setting_axes[a].n_values)
            return bc_error_set(err, BC_ERR_INVALID, "%s: matrix.backend_settings: too many combinations", cfg->path);
        nc *= cfg->setting_axes[a].n_values;
    }
    if (nb > UINT32_MAX / nc)
        return bc_error_set(err, BC_ERR_INVALID, "%s: matrix.backend_settings: too many backend instances", cfg->path);
    ctx->n_combos = nc;
    ctx->n_instances = nb * nc;
    ctx->axis_names = calloc(na + 1, sizeof *ctx->axis_names);
    ctx->combo_texts = calloc(nc * na + 1, sizeof *ctx->combo_texts);
    ctx->instance_settings = calloc(ctx->n_instances, sizeof *ctx->instance_settings);
    ctx->instance_values = calloc(ctx->n_instances, sizeof *ctx->instance_values);
    uint32_t *rows = calloc(na + 1, sizeof *rows);
    size_t total = 0;
    for (size_t a = 0; a < na; a++) total += cfg->setting_axes[a].n_values;
    bc_setting_value *axis_values = calloc(total + 1, sizeof *axis_values); /* one backend's, scratch */
    bc_status st = BC_OK;
    if (!ctx->axis_names || !ctx->combo_texts || !ctx->instance_settings || !ctx->instance_values || !rows ||
        !axis_values) {
        st = bc_error_set(err, BC_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (size_t a = 0; a < na; a++) ctx->axis_names[a] = cfg->setting_axes[a].name;
    for (size_t s = 0; s < nc; s++)
        for (size_t a = 0; a < na; a++)
            ctx->combo_texts[s * na + a] = cfg->setting_axes[a].texts[combo_value(cfg, s, a)];
    for (size_t b = 0; b < nb && st == BC_OK; b++) {
        bc_context_plugin *cp = entry_plugin(ctx, b);
        const bc_plugin_spec *spec = entry_spec(ctx, b);
        for (size_t i = 0; i < nc; i++) ctx->instance_settings[b * nc + i] = cp->settings;
        if (na == 0) continue;
        char where[PATH_MAX + 64];
        bc_config_setting_location(cfg, "matrix.backend_settings", where, sizeof where);
        for (size_t a = 0, off = 0; a < na && st == BC_OK; off += cfg->setting_axes[a].n_values, a++) {
            const bc_setting_axis *axis = &cfg->setting_axes[a];
            st = bc_settings_resolve_axis(cfg, axis, &cp->desc, cp->plugin->desc->name, &rows[a], axis_values + off,
                                          err);
            if (st != BC_OK && nb > 1) {
                size_t len = strlen(err->message);
                text(err->message + len, sizeof err->message - len, " (%s)", spec->where);
            }
            if (st == BC_OK && bc_settings_given(spec, axis->name)) {
                char here[PATH_MAX + 64], there[PATH_MAX + 64], path[300], axis_path[300];
                text(path, sizeof path, "%s.settings.%s", spec->where, axis->name);
                text(axis_path, sizeof axis_path, "matrix.backend_settings.%s", axis->name);
                bc_config_setting_location(cfg, path, here, sizeof here);
                bc_config_setting_location(cfg, axis_path, there, sizeof there);
                int named = strstr(there, axis_path) != NULL; /* "--set matrix.backend_settings.x" */
                st = bc_error_set(err, BC_ERR_SETTING,
                                  "%s%s%s: also set in %s (%s): the matrix varies it, so give it in one place", there,
                                  named ? "" : ": ", named ? "" : axis_path, path, here);
            }
        }
        for (size_t i = 0; i < nc && st == BC_OK; i++) {
            size_t inst = b * nc + i;
            bc_setting_value *v = malloc(((size_t)cp->settings.count + 1) * sizeof *v);
            if (!v) {
                st = bc_error_set(err, BC_ERR_NOMEM, "out of memory");
                break;
            }
            memcpy(v, cp->values, (size_t)cp->settings.count * sizeof *v);
            for (size_t a = 0, off = 0; a < na; off += cfg->setting_axes[a].n_values, a++)
                v[rows[a]] = axis_values[off + combo_value(cfg, i, a)];
            ctx->instance_values[inst] = v;
            ctx->instance_settings[inst].values = v;
            const bc_plugin_desc *d = cp->plugin->desc;
            if (!d->check_settings) continue;
            bc_error cerr = {0};
            if (d->check_settings(&cp->plugin->host, &ctx->instance_settings[inst], &cerr) == BC_OK) continue;
            char combo[512];
            describe_combo(ctx, i, combo, sizeof combo);
            *err = cerr;
            text(err->message, sizeof err->message, "%.300s: matrix.backend_settings: %.100s '%.100s' refuses %.300s: %s",
                 where, spec->where, cp->plugin->desc->name, combo, cerr.message);
            st = cerr.code ? cerr.code : BC_ERR_SETTING;
        }
    }
done:
    free(rows);
    free(axis_values);
    return st;
}

/* The backends axis, outermost, then the setting axes: the matrix's cases
 * once per instance (entry and combination), instance i's case k at index
 * i * n + k, each naming its backend and setting values. */
static bc_status add_backend_axis(bc_context *ctx, bc_error *err) {
    size_t n = ctx->n_cases, ni = ctx->n_instances, na = ctx->cfg.n_setting_axes;
    if (ni > 1) {
        if (n > UINT32_MAX / ni) return bc_error_set(err, BC_ERR_INVALID, "%s: matrix: too many cases", ctx->cfg.path);
        bc_case *all = realloc(ctx->cases, (n * ni + 1) * sizeof *all);
        if (!all) return bc_error_set(err, BC_ERR_NOMEM, "out of memory");
        ctx->cases = all;
        for (size_t b = 1; b < ni; b++) memcpy(all + b * n, all, n * sizeof *all);
        ctx->n_cases = n * ni;
    }
    for (size_t k = 0; k < ctx->n_cases; k++) {
        bc_case *c = &ctx->cases[k];
        size_t inst = k / n;
        c->index = (uint32_t)k;
        c->backend = backend_label(ctx, inst / ctx->n_combos);
        c->setting_names = na ? ctx->axis_names : NULL;
        c->setting_values = na ? ctx->combo_texts + (inst % ctx->n_combos) * na : NULL;
        c->n_settings = (uint32_t)na;
    }
    return BC_OK;
}

const bc_runner_backend *bc_context_backend_of(const bc_context *ctx, size_t k) {
    return &ctx->runner_backends[ctx->plan.instance[k]];
}

/* Step 3, last: the plan (plan.h). Case k of the whole matrix runs on
 * instance k / (cases per instance) (add_backend_axis), which its index
 * still says after the selection; each instance rebuilds on its own
 * backend's axes. */
static bc_status build_plan(bc_context *ctx, bc_error *err) {
    size_t ni = ctx->n_instances, per = ctx->n_matrix_cases / ni;
    size_t *instance = calloc(ctx->n_cases + 1, sizeof *instance);
    uint32_t *axes = calloc(ni + 1, sizeof *axes);
    bc_status st = BC_OK;
    if (!instance || !axes) st = bc_error_set(err, BC_ERR_NOMEM, "out of memory");
    for (size_t k = 0; st == BC_OK && k < ctx->n_cases; k++) instance[k] = ctx->cases[k].index / per;
    for (size_t i = 0; st == BC_OK && i < ni; i++)
        axes[i] = bc_matrix_rebuild_axes(entry_plugin(ctx, i / ctx->n_combos)->plugin->backend.rebuild_axes);
    if (st == BC_OK) st = bc_plan_build(&ctx->plan, ctx->cases, ctx->n_cases, instance, axes, ni, err);
    free(instance);
    free(axes);
    return st;
}

/* Step 3: the matrix, and the cases the command line selects. */
static bc_status build_cases(bc_context *ctx, const bc_context_args *a, bc_error *err) {
    size_t np = ctx->cfg.n_precisions, nc = ctx->cfg.n_cache_policies;
    const bc_precision_ops **pops = calloc(np + 1, sizeof *pops);
    const bc_cache_ops **cops = calloc(nc + 1, sizeof *cops);
    if (!pops || !cops) {
        free(pops), free(cops);
        return bc_error_set(err, BC_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < np; i++) pops[i] = &ctx->precisions[i].plugin->precision;
    for (size_t i = 0; i < nc; i++) cops[i] = &ctx->caches[i].plugin->cache;
    const bc_config *c = &ctx->cfg;
    bc_matrix_axes axes = {
        .precisions = ctx->precision_names, .precision_ops = pops, .n_precisions = np,
        .cache_policies = ctx->cache_names, .cache_ops = cops, .n_cache_policies = nc,
        .batch_sizes = c->batch_sizes, .n_batch_sizes = c->n_batch_sizes,
        .samples_per_prompt = c->samples_per_prompt, .n_samples_per_prompt = c->n_samples_per_prompt,
        .prompt_lengths = c->prompt_lengths, .n_prompt_lengths = c->n_prompt_lengths,
        .response_lengths = c->response_lengths, .n_response_lengths = c->n_response_lengths,
        .sampling = &c->sampling,
    };
    bc_status st = bc_matrix_build(&axes, &ctx->cases, &ctx->n_cases, err);
    free(pops), free(cops);
    if (st != BC_OK) return bc_context_prefix_error(err, ctx->cfg.path);
    if ((st = add_backend_axis(ctx, err)) != BC_OK) return st;
    ctx->n_matrix_cases = ctx->n_cases;
    if ((st = bc_selection_apply(ctx->cases, &ctx->n_cases, a->cases, a->only, err)) != BC_OK) return st;
    if ((st = build_plan(ctx, err)) != BC_OK) return st;
    ctx->checks = calloc(ctx->n_cases + 1, sizeof *ctx->checks);
    if (!ctx->checks) return bc_error_set(err, BC_ERR_NOMEM, "out of memory");
    return BC_OK;
}

/* One backend instance, with settings, created light and described. */
static bc_status create_one_backend(const bc_context_plugin *cp, const bc_settings *settings, void **instance,
                                    bc_backend_info *info, bc_error *err) {
    const bc_plugin *be = cp->plugin;
    char prefix[sizeof cp->where + 128];
    text(prefix, sizeof prefix, "%s: backend '%s'", cp->where, be->desc->name);
    bc_status st = be->backend.create(&be->host, settings, instance, err);
    if (st != BC_OK) return bc_context_prefix_error(err, prefix);
    *info = (bc_backend_info){.struct_size = sizeof *info};
    info->n_parameters = info->n_layers = info->hidden_size = info->n_heads = -1;
    info->ffn_size = info->vocab_size = info->max_positions = info->cpu_threads = -1;
    if ((st = be->backend.describe(*instance, info, err)) != BC_OK) return bc_context_prefix_error(err, prefix);
    return BC_OK;
}

/* Step 4: every instance (backends entry and combination), created light
 * and described. */
static bc_status create_backend(bc_context *ctx, bc_error *err) {
    size_t ni = ctx->n_instances, na = ctx->cfg.n_setting_axes;
    ctx->more_instances = calloc(ni, sizeof *ctx->more_instances);
    ctx->more_infos = calloc(ni, sizeof *ctx->more_infos);
    ctx->runner_backends = calloc(ni, sizeof *ctx->runner_backends);
    if (!ctx->more_instances || !ctx->more_infos || !ctx->runner_backends)
        return bc_error_set(err, BC_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < ni; i++) {
        size_t b = i / ctx->n_combos;
        const bc_context_plugin *cp = entry_plugin(ctx, b);
        void **inst = i == 0 ? &ctx->backend_instance : &ctx->more_instances[i - 1];
        bc_backend_info *info = i == 0 ? &ctx->backend_info : &ctx->more_infos[i - 1];
        bc_status st = create_one_backend(cp, &ctx->instance_settings[i], inst, info, err);
        if (st != BC_OK) return st;
        ctx->runner_backends[i] = (bc_runner_backend){
            .label = backend_label(ctx, b), .plugin = cp->plugin, .instance = *inst, .where = cp->where,
            .setting_values = na ? ctx->combo_texts + (i % ctx->n_combos) * na : NULL, .n_settings = na,
            .info = info};
    }
    if (!ctx->scorer.plugin) return BC_OK;
    bc_status st = create_one_backend(&ctx->scorer, &ctx->scorer.settings, &ctx->scorer_instance, &ctx->scorer_info,
                                      err);
    if (st != BC_OK) return st;
    ctx->scorer_backend = (bc_runner_backend){.label = ctx->scorer_label, .plugin = ctx->scorer.plugin,
                                              .instance = ctx->scorer_instance, .where = ctx->scorer.where,
                                              .info = &ctx->scorer_info};
    /* the gap is over token ids: a scorer of another vocabulary would score
     * other tokens (or fail on ids past its own), so it is refused here */
    const int64_t sv = ctx->scorer_info.vocab_size;
    for (size_t i = 0; i < ni && sv > 0; i++) {
        const bc_runner_backend *rb = &ctx->runner_backends[i];
        const int64_t rv = rb->info ? rb->info->vocab_size : -1;
        if (rv > 0 && rv != sv)
            return bc_error_set(err, BC_ERR_SETTING,
                                "%s: score: the scorer ('%s', %s) has %lld token ids, the rollout's backend '%s' (%s) "
                                "%lld: a scorer scores the rollout's own token ids, so both need one vocabulary",
                                ctx->scorer.where, ctx->scorer.plugin->desc->name,
                                ctx->scorer_info.model ? ctx->scorer_info.model : "?", (long long)sv, rb->label,
                                rb->info->model ? rb->info->model : "?", (long long)rv);
    }
    return BC_OK;
}

/* Where the config sets what a case check failed on. */
static void locate_case_error(const bc_context *ctx, const bc_case *c, bc_status code, char *buf, size_t n) {
    if (code == BC_ERR_UNSUPPORTED) {
        for (size_t i = 0; i < ctx->cfg.n_precisions; i++)
            if (strcmp(ctx->precision_names[i], c->precision) == 0) {
                text(buf, n, "%s: %s", ctx->precisions[i].where, ctx->cfg.precisions[i].where);
                return;
            }
    }
    if (code == BC_ERR_INFEASIBLE) {
        bc_config_setting_location(&ctx->cfg, "matrix.response_lengths", buf, n);
        size_t used = strlen(buf);
        text(buf + used, n - used, ": matrix");
        return;
    }
    size_t b = ctx->plan.instance[c - ctx->cases] / ctx->n_combos;
    text(buf, n, "%s: %s", b == 0 ? ctx->backend.where : ctx->more_backends[b - 1].where,
         b == 0 ? ctx->cfg.backend.where : ctx->cfg.more_backends[b - 1].where);
}

/* Step 5: every case through check_case. */
static bc_status check_cases(bc_context *ctx, int allow_infeasible, bc_error *err) {
    size_t first = ctx->n_cases;
    for (size_t k = 0; k < ctx->n_cases; k++) {
        const bc_runner_backend *rb = bc_context_backend_of(ctx, k);
        bc_error cerr = {0};
        bc_status st = rb->plugin->backend.check_case ? rb->plugin->backend.check_case(rb->instance, &ctx->cases[k], &cerr)
                                                      : BC_OK;
        const char *who = "";
        if (st == BC_OK && ctx->scorer_instance && ctx->scorer.plugin->backend.check_case) {
            bc_case sc = ctx->cases[k]; /* the scorer's case: the rollout's shape in the score precision */
            sc.precision = ctx->score_precision_name;
            sc.precision_ops = ctx->score_precision_ops;
            st = ctx->scorer.plugin->backend.check_case(ctx->scorer_instance, &sc, &cerr);
            who = "the scorer: ";
        }
        ctx->checks[k].code = st;
        if (st == BC_OK) continue;
        text(ctx->checks[k].message, sizeof ctx->checks[k].message, "%s%s", who, cerr.message);
        text(cerr.message, sizeof cerr.message, "%s", ctx->checks[k].message);
        if (ctx->n_infeasible++ == 0) {
            first = k;
            *err = cerr;
        }
    }
    if (!ctx->n_infeasible || allow_infeasible) return BC_OK;
    const bc_case *c = &ctx->cases[first];
    char where[PATH_MAX + 64], desc[256], more[64] = "";
    locate_case_error(ctx, c, err->code, where, sizeof where);
    bc_context_describe_case(c, desc, sizeof desc);
    if (ctx->n_infeasible > 1) text(more, sizeof more, " (and %zu more cases)", ctx->n_infeasible - 1);
    char msg[sizeof err->message];
    text(msg, sizeof msg, "%s", err->message);
    text(err->message, sizeof err->message, "%.200s: case %u (%.150s) cannot run: %s%s", where, c->index, desc,
             msg, more);
    if (!err->hint[0]) bc_error_hint(err, "'benchctl plan %s' lists every case and what its check said", ctx->cfg.path);
    return err->code;
}

/* Step 6: the run report's header. */
static bc_status fill_header(bc_context *ctx, const bc_context_args *a, bc_error *err) {
    size_t n_all = n_backends(ctx) + ctx->cfg.n_precisions + ctx->cfg.n_cache_policies + ctx->cfg.n_reporters + 2,
           k = 0;
    const bc_plugin **all = calloc(n_all, sizeof *all);
    if (!all) return bc_error_set(err, BC_ERR_NOMEM, "out of memory");
    all[k++] = ctx->backend.plugin;
    for (size_t i = 0; i < ctx->cfg.n_more_backends; i++) all[k++] = ctx->more_backends[i].plugin;
    for (size_t i = 0; i < ctx->cfg.n_precisions; i++) all[k++] = ctx->precisions[i].plugin;
    for (size_t i = 0; i < ctx->cfg.n_cache_policies; i++) all[k++] = ctx->caches[i].plugin;
    for (size_t i = 0; i < ctx->cfg.n_reporters; i++) all[k++] = ctx->reporters[i].plugin;
    const bc_plugin *extra[2] = {ctx->scorer.plugin, ctx->score_precision_own.plugin}; /* listed once each */
    for (size_t e = 0; e < 2; e++) {
        int listed = !extra[e];
        for (size_t j = 0; j < k && !listed; j++) listed = all[j] == extra[e];
        if (!listed) all[k++] = extra[e];
    }
    bc_status st = bc_run_meta_init(&ctx->meta, all, k, err);
    free(all);
    if (st != BC_OK) return st;
    bc_run_report *run = &ctx->run;
    bc_run_meta_fill(&ctx->meta, ctx->cfg.path, ctx->cfg.sha256, run);
    const bc_plugin_desc *bd = &ctx->backend.desc; /* with the rows more_settings added */
    run->backend_name = bd->name;
    run->backend = &ctx->backend_info;
    run->backend_settings = bd->settings;
    run->n_backend_settings = bd->n_settings;
    run->backend_setting_size = sizeof(bc_setting_desc);
    run->backend_values = &ctx->instance_settings[0]; /* the first instance's: combination 0 */
    run->warmup = ctx->cfg.warmup;
    run->iterations = ctx->cfg.iterations;
    run->min_iterations = ctx->cfg.min_iterations;
    run->max_iterations = ctx->cfg.max_iterations;
    run->target_rel_ci = ctx->cfg.target_rel_ci;
    run->max_seconds_per_case = ctx->cfg.max_seconds_per_case;
    run->n_matrix_cases = (uint32_t)ctx->n_matrix_cases;
    run->selected_cases = a->cases;
    run->selected_only = a->only;
    run->sampling = &ctx->cfg.sampling;
    run->precisions = ctx->precision_names;
    run->n_precisions = (uint32_t)ctx->cfg.n_precisions;
    run->cache_policies = ctx->cache_names;
    run->n_cache_policies = (uint32_t)ctx->cfg.n_cache_policies;
    static const char *const refit_names[] = {"off", "per_rollout", "per_case"};
    run->refit = refit_names[ctx->cfg.refit];
    run->memcpy_gb_per_s = NAN; /* the runner measures it, with refit on */
    if (ctx->scorer_instance) {
        run->scorer_name = ctx->scorer_label;
        run->scorer = &ctx->scorer_info;
        run->scorer_precision = ctx->score_precision_name;
    }
    return BC_OK;
}

bc_status bc_context_open(bc_context *ctx, const bc_context_args *args, bc_error *err) {
    *ctx = (bc_context){0};
    bc_status st = load_config_and_plugins(ctx, args, err);
    bc_output_claims_end(); /* every output was checked; forget the claims */
    if (st == BC_OK) st = resolve_setting_axes(ctx, err);
    if (st == BC_OK) st = build_cases(ctx, args, err);
    if (st == BC_OK) st = create_backend(ctx, err);
    if (st == BC_OK) st = check_cases(ctx, args->allow_infeasible, err);
    if (st == BC_OK) st = fill_header(ctx, args, err);
    return st;
}

void bc_context_runner_config(const bc_context *ctx, bc_runner_config *rc, bc_runner_reporter *reps) {
    for (size_t i = 0; i < ctx->cfg.n_reporters; i++)
        reps[i] = (bc_runner_reporter){.plugin = ctx->reporters[i].plugin,
                                       .settings = &ctx->reporters[i].settings,
                                       .where = ctx->reporters[i].where};
    *rc = (bc_runner_config){
        .backend = ctx->backend.plugin,
        .backend_instance = ctx->backend_instance,
        .backend_where = ctx->backend.where,
        .backends = ctx->runner_backends,
        .n_backends = ctx->runner_backends ? ctx->n_instances : 0,
        .plan = &ctx->plan,
        .cases = ctx->cases,
        .n_cases = ctx->n_cases,
        .warmup = ctx->cfg.warmup,
        .iterations = ctx->cfg.iterations,
        .min_iterations = ctx->cfg.adaptive ? ctx->cfg.min_iterations : 0,
        .max_iterations = ctx->cfg.adaptive ? ctx->cfg.max_iterations : 0,
        .target_rel_ci = isnan(ctx->cfg.target_rel_ci) ? 0.0 : ctx->cfg.target_rel_ci,
        .max_seconds_per_case = isnan(ctx->cfg.max_seconds_per_case) ? 0.0 : ctx->cfg.max_seconds_per_case,
        .isolation = ctx->cfg.isolation,
        .case_timeout_s = isnan(ctx->cfg.case_timeout_s) ? 0.0 : ctx->cfg.case_timeout_s,
        .reporters = reps,
        .n_reporters = ctx->cfg.n_reporters,
        .run = ctx->run,
        .scorer = ctx->scorer_instance ? &ctx->scorer_backend : NULL,
        .score_precision = ctx->score_precision_name,
        .score_precision_ops = ctx->score_precision_ops,
        .refit = ctx->cfg.refit, /* BC_CFG_REFIT_* == BC_RUN_REFIT_* */
    };
}

static void free_plugins(bc_context_plugin *p, size_t n) {
    for (size_t i = 0; p && i < n; i++) bc_context_free_settings(&p[i]);
    free(p);
}

void bc_context_free(bc_context *ctx) {
    if (ctx->backend_instance) ctx->backend.plugin->backend.destroy(ctx->backend_instance);
    ctx->backend_instance = NULL;
    if (ctx->scorer_instance) ctx->scorer.plugin->backend.destroy(ctx->scorer_instance);
    ctx->scorer_instance = NULL;
    bc_context_free_settings(&ctx->scorer);
    bc_context_free_settings(&ctx->score_precision_own);
    for (size_t i = 1; ctx->more_instances && i < ctx->n_instances; i++)
        if (ctx->more_instances[i - 1])
            entry_plugin(ctx, i / ctx->n_combos)->plugin->backend.destroy(ctx->more_instances[i - 1]);
    for (size_t i = 0; ctx->instance_values && i < ctx->n_instances; i++) free(ctx->instance_values[i]);
    free(ctx->instance_values);
    free(ctx->instance_settings);
    free(ctx->axis_names);
    free(ctx->combo_texts);
    bc_context_free_settings(&ctx->backend);
    free_plugins(ctx->more_backends, ctx->more_backends ? ctx->cfg.n_more_backends : 0);
    free(ctx->more_instances);
    free(ctx->more_infos);
    free(ctx->runner_backends);
    free_plugins(ctx->precisions, ctx->cfg.n_precisions);
    free_plugins(ctx->caches, ctx->cfg.n_cache_policies);
    free_plugins(ctx->reporters, ctx->cfg.n_reporters);
    free(ctx->precision_names);
    free(ctx->cache_names);
    free(ctx->cases);
    free(ctx->checks);
    bc_plan_free(&ctx->plan);
    bc_run_meta_free(&ctx->meta);
    bc_loader_free(&ctx->loader); /* after every instance is gone */
    bc_config_free(&ctx->cfg);
    *ctx = (bc_context){0};
}

_Static_assert((int)BC_CFG_REFIT_OFF == (int)BC_RUN_REFIT_OFF &&
                   (int)BC_CFG_REFIT_PER_ROLLOUT == (int)BC_RUN_REFIT_PER_ROLLOUT &&
                   (int)BC_CFG_REFIT_PER_CASE == (int)BC_RUN_REFIT_PER_CASE,
               "run.refit: config.h's values are runner.h's");
