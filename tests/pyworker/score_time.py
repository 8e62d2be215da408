"""score_time.py: times a worker's score request, as the host does (the round
trip of the request: JSON both ways, the forward, the gather), on the
rollout the worker itself just made; run it with the peers' environment's
python (docs/pyworkers.md, "Rollouts, scoring and refit").

    score_time.py CHECKPOINT [ENGINE [DTYPE [B S P R [N]]]]

Defaults: transformers, float32, 4 x 4 rows, prompt 32, response 16, N = 10
score requests after one warm-up. Prints one JSON line: the case, the
round trips' median, min and max in ms, scored tokens per second at the
median, the generate round trip's median with the rollout (and its
log-probabilities, for an engine that keeps them) and without (N each,
alternating, in two cases of one worker), and the 1-minute load average
before and after.
"""

import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import harness  # noqa: E402


def main(argv):
    if len(argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    ckpt = argv[1]
    engine = argv[2] if len(argv) > 2 else "transformers"
    dtype = argv[3] if len(argv) > 3 else "float32"
    B, S, P, R = (int(x) for x in argv[4:8]) if len(argv) > 7 else (4, 4, 32, 16)
    N = int(argv[8]) if len(argv) > 8 else 10
    load0 = os.getloadavg()[0]
    with harness.Worker(harness.worker_command(sys.executable, engine), timeout_s=600) as w:
        w.request("configure", settings={"checkpoint": ckpt, "threads": 1})
        V = w.request("describe")["vocab_size"]
        prompts = [[3 + (b * 7919 + t * 104729) % (V - 3) for t in range(P)] for b in range(B)]
        case = harness.case(batch_size=B, samples_per_prompt=S, prompt_length=P, response_length=R, dtype=dtype,
                            return_tokens=False)
        case["return_rollout"] = True
        w.request("begin_case", case=case, prompt_ids=prompts)
        ro = w.request("generate", iteration=0, warmup=True)["rollout"]
        args = dict(prompt_ids=ro["prompt_ids"], response_ids=ro["response_ids"])
        w.request("score", **args)  # warm-up
        ms = []
        for _ in range(N):
            t0 = time.perf_counter()
            w.request("score", **args)
            ms.append((time.perf_counter() - t0) * 1e3)
        w.request("end_case")
        # generate with and without the rollout, alternating
        gen = {True: [], False: []}
        for i in range(2 * N + 2):
            want = i % 2 == 0
            c = dict(case, return_rollout=want)
            w.request("begin_case", case=c, prompt_ids=prompts)
            t0 = time.perf_counter()
            w.request("generate", iteration=0, warmup=False)
            if i >= 2:  # the first of each: warm-up
                gen[want].append((time.perf_counter() - t0) * 1e3)
            w.request("end_case")
        w.shutdown()
    med = statistics.median(ms)
    print(json.dumps({"engine": engine, "dtype": dtype, "rows": B * S, "prompt": P, "response": R, "n": N,
                      "score_ms_median": round(med, 2), "score_ms_min": round(min(ms), 2),
                      "score_ms_max": round(max(ms), 2),
                      "scored_tokens_per_s": round(B * S * R / med * 1e3, 1),
                      "generate_ms_median_with_rollout": round(statistics.median(gen[True]), 2),
                      "generate_ms_median_without": round(statistics.median(gen[False]), 2),
                      "load_before": load0, "load_after": os.getloadavg()[0]}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
