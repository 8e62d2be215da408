#!/usr/bin/env python3
"""make_runfile_corpus.py: writes the seed corpus of fuzz_runfile
(tests/fuzz/corpus/runfile/) from a journal and a JSON report that benchctl
wrote (any small run: e.g. tests/e2e/good.cfg with --cases 0-1 and
--reporter json,jsonl). Each seed is cut to a few kB (the fuzzer's -max_len):
the run's fields and metrics to their first few, two profiles per case, no
summary; then one seed per hostile shape the reader must take or refuse
(records marked ok without measurements, numbers beyond any integer type,
a torn last line, a .gz, the seed format, distributed and schedule blocks).
Plain Python, no dependencies.
Usage: python3 tests/fuzz/make_runfile_corpus.py JOURNAL.jsonl REPORT.json"""
import gzip
import json
import os
import sys

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "runfile")
KEEP_FIELDS = ["prompt_expansion_ms", "generation_ms", "post_processing_ms", "total_ms", "num_generated_tokens"]


def trim_run(run):
    run = dict(run)
    run["fields"] = [f for f in run.get("fields", []) if f in KEEP_FIELDS]
    run["metrics"] = [m for m in run.get("metrics", []) if m.get("name") in KEEP_FIELDS][:3]
    for k in ("environment", "plugins", "stats"):
        run.pop(k, None)
    return run


def trim_case(case):
    case = dict(case)
    case.pop("summary", None)
    case["profiles"] = [{k: v for k, v in p.items() if k in KEEP_FIELDS} for p in case.get("profiles", [])[:2]]
    ext = case.get("extended")
    if isinstance(ext, dict):
        case["extended"] = {k: v for k, v in ext.items() if k in ("wall_ms", "host_load", "total_ms_rel_ci")}
    return case


def dumps(obj):
    return json.dumps(obj, separators=(",", ":"))


def main():
    lines = [json.loads(line) for line in open(sys.argv[1])]
    run = trim_run(lines[0])
    cases = [trim_case(c) for c in lines if c.get("record") == "case"][:2]
    report = json.load(open(sys.argv[2]))
    rep = trim_run(report)
    rep["cases"] = [trim_case(c) for c in report["cases"][:2]]
    journal = "\n".join(dumps(r) for r in [run] + cases + [{"record": "end"}]) + "\n"
    seeds = {
        "journal.jsonl": journal,
        "journal_torn.jsonl": journal[: len(journal) - 40],
        "journal_no_run.jsonl": "\n".join(dumps(c) for c in cases) + "\n",
        "report.json": dumps(rep),
        "report_indented.json": json.dumps(rep, indent=1),
        "report_top_array.json": "[1,2,3]",
        "empty": "",
        "newlines": "\n\n\n",
    }
    c0 = cases[0]

    def journal_with(case):
        return "\n".join(dumps(r) for r in [run, case]) + "\n"

    hostile = {
        "ok_no_profiles": dict(c0, profiles=[]),
        "ok_profiles_string": dict(c0, profiles="x"),
        "ok_no_total": dict(c0, profiles=[{"generation_ms": 1.0}]),
        "ok_huge_negative": dict(c0, profiles=[dict(p, total_ms=-1e308) for p in c0["profiles"]]),
        "int_beyond_int64": dict(c0, batch_size=18446744073709551616, index=9223372036854775807),
        "real_beyond_int64": dict(c0, batch_size=1e300, prompt_length=-1e300, index=1e19),
        "schedule_huge": dict(c0, extended={"schedule": {"step_active_rows": [1e12, -5e11, 3],
                                                         "row_first_token_ms": [0.5, None],
                                                         "row_done_step": [1e20, 2]}}),
        "distributed": dict(c0, distributed={"n_ranks": 3, "rank_time_ms": [1, 2], "rank": 1, "host": "h",
                                             "slowest_rank": 1e30, "rank_tokens_per_second": "x"}),
        "distributed_huge_ranks": dict(c0, distributed={"n_ranks": 4294967296}),
        "settings_odd": dict(c0, backend_settings={"a": [1, {"b": None}], "c": 1e308, "d": "x=y"}),
    }
    for name, case in hostile.items():
        seeds["journal_" + name + ".jsonl"] = journal_with(case)
    seeds["report_seed_format.json"] = dumps({"cases": [{"batch_size": 2, "profiles": [{"total_ms": 1.5, "x": 2}]}]})
    os.makedirs(OUT, exist_ok=True)
    for name, text in seeds.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(text.encode())
    with open(os.path.join(OUT, "journal.jsonl.gz"), "wb") as f:
        f.write(gzip.compress(journal.encode(), mtime=0))
    for name in sorted(os.listdir(OUT)):
        print(name, os.path.getsize(os.path.join(OUT, name)))


if __name__ == "__main__":
    main()
