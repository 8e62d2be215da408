/* fake_worker.c: a worker for the `worker` backend's tests, in C, with no
 * engine behind it: it speaks the worker protocol (docs/plugins.md, "Worker
 * protocol") and can misbehave on purpose at one request.
 *
 *   fake_worker [--fail MODE --at OP [--when-batch N]] [--delay-ms MS] [--code CODE]
 *               [--continuous N] [--strict-release 1] [--extra-settings N] [--dup-setting 1]
 *               [--orphan PIDFILE]
 *
 * MODE, at request OP ("hello" for the start; with --when-batch only in
 * cases of that batch size):
 *   crash     writes a line to stderr, then kills itself with SIGSEGV
 *   exit      writes a line to stderr, then exits with status 3
 *   hang      writes a line to stderr, then sleeps forever
 *   garbage   writes a line that is not JSON to stdout
 *   wrong-id  replies with another id
 *   version   (hello only) says protocol 2
 *   bare      (hello only) says only {"op":"hello","protocol":1}
 *   reserved  (hello only) declares a setting called "command", the plugin's own
 *   badmetric (hello only) declares a metric called "generation_ms", a profile
 *             key the plugin reads itself
 *   hostile   (generate) sends fake_queue_depth = 1e300, beyond its declared max
 *   error     replies ok:false with error code CODE (default "unsupported")
 *   slow      sleeps --delay-ms before replying (within the timeout)
 *
 * --extra-settings N: the hello declares N more settings (x0, x1, ...; ints);
 * --dup-setting 1: and the last of them is called "model" again.
 * --orphan PIDFILE: before its hello it starts a child that leaves its
 * session (setsid), keeps stdout open and sleeps; the child's pid goes to
 * PIDFILE. With --fail exit, the fake's exit leaves that child holding stdout.
 *
 * --continuous N: its profile also has DeepSpeed's continuous-batching fields,
 * as a continuous batch of N rows would (num_prefill_forwards = ceil(rows / N),
 * scheduler_overhead_ms 0.5, cache_management_overhead_ms 0.25,
 * active_batch_size N, continuous_batch_size N). --strict-release 1: a case
 * must say release_cache (a bool), and a release_cache request in a case whose
 * release_cache is false fails (internal).
 *
 * Its settings: model ("tiny"|"small"), threads (int >= 0; configure refuses
 * > 64 with a setting error), scale (double), chatty (bool: a stderr line per
 * request). Its metrics (the hello's "metrics"): fake_queue_depth (requests,
 * lower is better, [0, 1000]; the rows of the rollout) and occupancy (the
 * host's field: 1, higher, [0, 1]; always 1). Its "rollout": every row's token t is (its prompt's token
 * t % prompt_length + t) % vocab, so two runs agree token for token.
 */
#define _GNU_SOURCE
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define VOCAB 50272

static const char *fail_mode = "", *fail_at = "", *error_code = "unsupported";
static long when_batch = -1, delay_ms = 0;
static long case_batch = 0, case_samples = 0, case_prompt = 0, case_response = 0;
static int return_tokens = 0, chatty = 0, strict_release = 0, case_release = 0;
static long continuous = 0, extra_settings = 0, dup_setting = 0;
static const char *orphan_file = NULL;
static const char *device = ""; /* --device: describe's device (the hello's stays "cpu") */
static json_t *prompts;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static void sleep_ms(long ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static void send_obj(json_t *o) {
    char *text = json_dumps(o, JSON_COMPACT);
    fputs(text, stdout);
    fputc('\n', stdout);
    fflush(stdout);
    free(text);
    json_decref(o);
}

/* Misbehaves when asked to at op; returns 1 when the request must not be
 * answered normally (already answered). */
static int misbehave(const char *op, json_int_t id) {
    if (strcmp(fail_at, op) != 0) return 0;
    if (when_batch >= 0 && case_batch != when_batch) return 0;
    fprintf(stderr, "fake_worker: failing on purpose (%s at %s)\n", fail_mode, op);
    fflush(stderr);
    if (strcmp(fail_mode, "crash") == 0) {
        signal(SIGSEGV, SIG_DFL);
        raise(SIGSEGV);
    } else if (strcmp(fail_mode, "exit") == 0) {
        exit(3);
    } else if (strcmp(fail_mode, "hang") == 0) {
        for (;;) pause();
    } else if (strcmp(fail_mode, "garbage") == 0) {
        fputs("Traceback (most recent call last): this is not JSON\n", stdout);
        fflush(stdout);
        return 1;
    } else if (strcmp(fail_mode, "wrong-id") == 0) {
        send_obj(json_pack("{s:I, s:b}", "id", id + 7, "ok", 1));
        return 1;
    } else if (strcmp(fail_mode, "error") == 0) {
        send_obj(json_pack("{s:I, s:b, s:{s:s, s:s}}", "id", id, "ok", 0, "error", "code", error_code, "message",
                           "the fake engine refuses this on purpose"));
        return 1;
    } else if (strcmp(fail_mode, "slow") == 0) {
        sleep_ms(delay_ms);
    }
    return 0;
}

static void hello(void) {
    if (strcmp(fail_mode, "bare") == 0) {
        send_obj(json_pack("{s:s, s:i}", "op", "hello", "protocol", 1));
        return;
    }
    if (strcmp(fail_mode, "reserved") == 0) {
        send_obj(json_pack("{s:s, s:i, s:s, s:s, s:s, s:[{s:s, s:s, s:s, s:s}]}", "op", "hello", "protocol", 1,
                           "engine", "fake", "engine_version", "1.0", "device", "cpu", "settings", "name", "command",
                           "type", "string", "default", "", "help", "clashes"));
        return;
    }
    if (strcmp(fail_mode, "badmetric") == 0) {
        send_obj(json_pack("{s:s, s:i, s:s, s:s, s:s, s:[], s:[{s:s, s:s, s:s}]}", "op", "hello", "protocol", 1,
                           "engine", "fake", "engine_version", "1.0", "device", "cpu", "settings", "metrics", "name",
                           "generation_ms", "unit", "ms", "better", "lower"));
        return;
    }
    if (strcmp(fail_at, "hello") == 0 && strcmp(fail_mode, "version") != 0 && misbehave("hello", 0)) return;
    json_t *settings = json_pack(
        "[{s:s, s:s, s:s, s:[s,s], s:s}, {s:s, s:s, s:i, s:i, s:s}, {s:s, s:s, s:f, s:s}, {s:s, s:s, s:b, s:s}]",
        "name", "model", "type", "string", "default", "tiny", "choices", "tiny", "small", "help", "the fake model",
        "name", "threads", "type", "int", "default", 0, "min", 0, "help", "threads (0 = all)",
        "name", "scale", "type", "double", "default", 1.0, "help", "a number it ignores",
        "name", "chatty", "type", "bool", "default", 0, "help", "log every request to stderr");
    for (long i = 0; i < extra_settings; i++) {
        char name[32];
        snprintf(name, sizeof name, "x%ld", i);
        json_array_append_new(settings, json_pack("{s:s, s:s, s:i, s:s}", "name",
                                                  dup_setting && i == extra_settings - 1 ? "model" : name, "type",
                                                  "int", "default", 0, "help", "one of many"));
    }
    json_t *metrics = json_pack("[{s:s, s:s, s:s, s:i, s:i, s:s}, {s:s, s:s, s:s, s:i, s:i}]", "name",
                                "fake_queue_depth", "unit", "requests", "better", "lower", "min", 0, "max", 1000,
                                "help", "requests the fake engine queued", "name", "occupancy", "unit", "1",
                                "better", "higher", "min", 0, "max", 1);
    send_obj(json_pack("{s:s, s:i, s:s, s:s, s:s, s:o, s:o}", "op", "hello", "protocol",
                       strcmp(fail_mode, "version") == 0 ? 2 : 1, "engine", "fake", "engine_version", "1.0", "device",
                       "cpu", "settings", settings, "metrics", metrics));
}

static json_t *ok(json_int_t id) { return json_pack("{s:I, s:b}", "id", id, "ok", 1); }

static json_t *fail(json_int_t id, const char *code, const char *message) {
    return json_pack("{s:I, s:b, s:{s:s, s:s}}", "id", id, "ok", 0, "error", "code", code, "message", message);
}

static json_t *configure(json_int_t id, const json_t *req) {
    json_t *s = json_object_get(req, "settings");
    const char *names[] = {"model", "threads", "scale", "chatty"};
    for (size_t i = 0; i < 4; i++)
        if (!json_object_get(s, names[i])) return fail(id, "setting", "configure lacks a setting");
    if (json_integer_value(json_object_get(s, "threads")) > 64) return fail(id, "setting", "threads > 64");
    chatty = json_is_true(json_object_get(s, "chatty"));
    return ok(id);
}

static json_t *begin_case(json_int_t id, const json_t *req) {
    json_t *c = json_object_get(req, "case");
    case_batch = (long)json_integer_value(json_object_get(c, "batch_size"));
    case_samples = (long)json_integer_value(json_object_get(c, "samples_per_prompt"));
    case_prompt = (long)json_integer_value(json_object_get(c, "prompt_length"));
    case_response = (long)json_integer_value(json_object_get(c, "response_length"));
    return_tokens = json_is_true(json_object_get(c, "return_tokens"));
    json_t *release = json_object_get(c, "release_cache");
    if (strict_release && !json_is_boolean(release)) return fail(id, "internal", "the case has no release_cache bool");
    case_release = json_is_true(release);
    json_decref(prompts);
    prompts = json_incref(json_object_get(req, "prompt_ids"));
    if ((long)json_array_size(prompts) != case_batch) return fail(id, "internal", "prompt_ids has the wrong row count");
    size_t i;
    json_t *row;
    json_array_foreach(prompts, i, row) {
        if ((long)json_array_size(row) != case_prompt) return fail(id, "internal", "a prompt has the wrong length");
    }
    return ok(id);
}

static json_t *generate(json_int_t id) {
    double t0 = now_ms();
    long rows = case_batch * case_samples;
    json_t *tokens = json_array();
    for (long r = 0; return_tokens && r < rows; r++) {
        json_t *prompt = json_array_get(prompts, (size_t)(r / case_samples)), *out = json_array();
        for (long t = 0; t < case_response; t++) {
            json_int_t p = json_integer_value(json_array_get(prompt, (size_t)(t % case_prompt)));
            json_array_append_new(out, json_integer((p + t) % VOCAB));
        }
        json_array_append_new(tokens, out);
    }
    double gen = now_ms() - t0;
    json_t *steps = json_array();
    for (long t = 1; t < case_response; t++) json_array_append_new(steps, json_real(0.001));
    json_t *profile = json_pack(
        "{s:f, s:f, s:f, s:f, s:f, s:I, s:I, s:f, s:I, s:o}", "prompt_expansion_ms", 0.0, "generation_ms", gen,
        "post_processing_ms", 0.0, "prefill_forward_ms", 0.01, "decode_forward_ms", 0.01, "num_decode_forwards",
        (json_int_t)(case_response - 1), "num_generated_tokens", (json_int_t)(rows * case_response),
        "time_to_first_token_ms", 0.02, "peak_memory_bytes", (json_int_t)(1 << 20), "decode_step_ms", steps);
    int hostile = strcmp(fail_mode, "hostile") == 0 && strcmp(fail_at, "generate") == 0 &&
                  (when_batch < 0 || when_batch == case_batch);
    json_object_set_new(profile, "fake_queue_depth", json_real(hostile ? 1e300 : (double)rows));
    json_object_set_new(profile, "occupancy", json_real(1.0));
    if (continuous > 0) {
        json_object_set_new(profile, "num_prefill_forwards", json_integer((rows + continuous - 1) / continuous));
        json_object_set_new(profile, "scheduler_overhead_ms", json_real(0.5));
        json_object_set_new(profile, "cache_management_overhead_ms", json_real(0.25));
        json_object_set_new(profile, "active_batch_size", json_integer(continuous));
        json_object_set_new(profile, "continuous_batch_size", json_integer(continuous));
    }
    json_t *reply = json_pack("{s:I, s:b, s:o}", "id", id, "ok", 1, "profile", profile);
    if (return_tokens) json_object_set(reply, "tokens", tokens);
    json_decref(tokens);
    return reply;
}

int main(int argc, char **argv) {
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--fail") == 0) fail_mode = argv[i + 1];
        else if (strcmp(argv[i], "--at") == 0) fail_at = argv[i + 1];
        else if (strcmp(argv[i], "--when-batch") == 0) when_batch = atol(argv[i + 1]);
        else if (strcmp(argv[i], "--delay-ms") == 0) delay_ms = atol(argv[i + 1]);
        else if (strcmp(argv[i], "--code") == 0) error_code = argv[i + 1];
        else if (strcmp(argv[i], "--continuous") == 0) continuous = atol(argv[i + 1]);
        else if (strcmp(argv[i], "--strict-release") == 0) strict_release = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--device") == 0) device = argv[i + 1];
        else if (strcmp(argv[i], "--extra-settings") == 0) extra_settings = atol(argv[i + 1]);
        else if (strcmp(argv[i], "--dup-setting") == 0) dup_setting = atol(argv[i + 1]);
        else if (strcmp(argv[i], "--orphan") == 0) orphan_file = argv[i + 1];
        else {
            fprintf(stderr, "fake_worker: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (orphan_file) {
        fflush(stdout);
        int ready[2];
        if (pipe(ready) != 0) return 2;
        pid_t child = fork();
        if (child == 0) { /* out of our session and group, stdout still open */
            close(ready[0]);
            setsid();
            (void)!write(ready[1], "s", 1); /* the pid is written only once it left */
            close(ready[1]);
            for (;;) pause();
        }
        close(ready[1]);
        char b;
        const int left = child > 0 && read(ready[0], &b, 1) == 1;
        close(ready[0]);
        FILE *f = left ? fopen(orphan_file, "w") : NULL;
        if (!f) return 2;
        fprintf(f, "%ld\n", (long)child);
        fclose(f);
    }
    hello();
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, stdin)) > 0) {
        json_error_t je;
        json_t *req = json_loadb(line, (size_t)n, 0, &je);
        const char *op = json_string_value(json_object_get(req, "op"));
        json_int_t id = json_integer_value(json_object_get(req, "id"));
        if (!op) {
            fprintf(stderr, "fake_worker: not a request: %s", line);
            return 2;
        }
        if (chatty) fprintf(stderr, "fake_worker: %s %lld\n", op, (long long)id);
        if (strcmp(op, "begin_case") == 0) /* --when-batch looks at the case being begun */
            case_batch = (long)json_integer_value(json_object_get(json_object_get(req, "case"), "batch_size"));
        if (misbehave(op, id)) {
            json_decref(req);
            continue;
        }
        json_t *reply;
        if (strcmp(op, "configure") == 0) reply = configure(id, req);
        else if (strcmp(op, "describe") == 0) {
            reply = json_pack("{s:I, s:b, s:s, s:I, s:[s,s], s:I, s:I, s:s, s:I, s:I, s:I, s:I}", "id", id, "ok", 1,
                              "model", "fake model", "parameters", (json_int_t)1000, "dtypes", "float32", "bfloat16",
                              "vocab_size", (json_int_t)VOCAB, "max_positions", (json_int_t)2048, "model_family", "opt",
                              "n_layers", (json_int_t)2, "hidden_size", (json_int_t)8, "n_heads", (json_int_t)2,
                              "ffn_size", (json_int_t)32);
            if (reply && device[0]) json_object_set_new(reply, "device", json_string(device));
        }
        else if (strcmp(op, "begin_case") == 0) reply = begin_case(id, req);
        else if (strcmp(op, "generate") == 0) reply = generate(id);
        else if (strcmp(op, "release_cache") == 0 && strict_release && !case_release)
            reply = fail(id, "internal", "release_cache in a case whose release_cache is false");
        else if (strcmp(op, "release_cache") == 0 || strcmp(op, "acquire_cache") == 0 || strcmp(op, "end_case") == 0)
            reply = ok(id);
        else if (strcmp(op, "shutdown") == 0) {
            send_obj(ok(id));
            json_decref(req);
            break;
        } else reply = fail(id, "internal", "unknown op");
        send_obj(reply);
        json_decref(req);
    }
    free(line);
    json_decref(prompts);
    return 0;
}
