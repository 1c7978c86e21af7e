"""`make accuracy`: how often diagnosis is right on the corpus, side by side with NVIDIA's restart agent.

Every case of tests/corpus (README there: an evidence bundle v1 with expected.json and corpus.json)
is diagnosed the way `slurm-hooks diagnose BUNDLE --json` does it (the bundle opened with the
default limits and diagnosed with the shipped rules in a bounded child, core/sandbox.py; no site
config, no site rules), and, where its venv exists (bench/nvrx_venv.sh), by nvidia-resiliency-ext's
restart agent in its deterministic mode on the same logs (bench/nvrx_adapter.py). Sets: public
seen, real seen, held-out public, held-out real. Per-case lines only for the seen sets: of a
held-out case only its id is ever printed, and only when it was not fully right.

    python -m bench.accuracy [--corpus tests/corpus] [--doc docs/accuracy.md] [--check]
    python -m bench.accuracy --dir tests/bundles     # any directory of bundles, as one seen set

Exit 0 always (a measurement); --check: 1 when slurm-hooks was confidently wrong on any case.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bench import nvrx_adapter
from bench.accuracy_doc import markdown
from bench.accuracy_report import text
from bench.accuracy_score import MATRIX_KEYS, SEEN, Answer, Case, Scored, Truth, answer_details, mark

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "corpus"
PER_CASE_S = 120  # one diagnosis's CPU and wall bound (the CLI's own is 600 s; a corpus case is small)


def _matrix(case: Path) -> dict[str, tuple[str, ...]]:
    """corpus.json's matrix, each field as a tuple of values (a field may hold one value or a list)."""
    try:
        doc = json.loads((case / "corpus.json").read_text())
    except (OSError, ValueError):
        return {}
    out: dict[str, tuple[str, ...]] = {}
    for key in MATRIX_KEYS:
        value = (doc.get("matrix") or {}).get(key)
        values = value if isinstance(value, list) else [] if value in (None, "") else [value]
        out[key] = tuple(str(v) for v in values)
    return out


def _case_dirs(root: Path) -> list[Path]:
    """Case directories (holding expected.json) at root's first or second level."""
    if not root.is_dir():
        return []
    found: list[Path] = []
    for child in sorted(p for p in root.iterdir() if p.is_dir()):
        if (child / "expected.json").is_file():
            found.append(child)
        else:
            found += sorted(p for p in child.iterdir() if p.is_dir() and (p / "expected.json").is_file())
    return found


def _case(path: Path, base: Path, set_name: str) -> Case:
    return Case(path.relative_to(base).as_posix(), set_name, path, Truth.read(path), _matrix(path))


def discover(root: Path) -> tuple[list[Case], list[str]]:
    """The corpus's cases by set, and notes on what was left out (a held-out group of no known kind)."""
    cases = [_case(p, root, name) for name in SEEN for p in _case_dirs(root / name)]
    notes: list[str] = []
    heldout = root / "heldout"
    for group in sorted(p for p in heldout.iterdir() if p.is_dir()) if heldout.is_dir() else []:
        kind = next((k for k in ("public", "real") if group.name.startswith(k)), None)
        if kind is None:
            notes.append(f"heldout/{group.name}: neither public-* nor real-*, not scored")
            continue
        dirs = [group] if (group / "expected.json").is_file() else _case_dirs(group)
        cases += [_case(p, root, f"heldout-{kind}") for p in dirs]
    return cases, notes


def diagnose_cases(cases: list[Case]) -> dict[str, Answer]:
    """slurm-hooks' answer per case, through the package's diagnosis entry point in a bounded child."""
    from slurm_hooks.bundle import open_bundle
    from slurm_hooks.config import Config
    from slurm_hooks.core.sandbox import Bounds, run_parse
    from slurm_hooks.diagnose import diagnose
    from slurm_hooks.rules import load_rule_pack

    pack = load_rule_pack()  # loaded once here; each child inherits it
    limits = Config().limits
    answers: dict[str, Answer] = {}
    for case in cases:

        def parse(path: Path = case.path) -> object:
            with open_bundle(path, limits) as bundle:
                d = diagnose(bundle, pack)
            level = (d.details.get("confidence") or {}).get("level")
            extra = answer_details(d.details)
            return {"label": d.label, "node": d.root_node, "rank": d.root_rank, "level": level, "details": extra}

        parsed = run_parse(parse, Bounds(4096, PER_CASE_S, PER_CASE_S, 1 << 20))
        v = parsed.value
        if parsed.ok and isinstance(v, dict):
            details = tuple((str(k), x) for k, x in v["details"])
            answers[case.id] = Answer(
                v["label"], v["node"], v["rank"], v["level"] == "low", "", v["level"] or "", details
            )
        else:
            answers[case.id] = Answer(None, None, None, error=parsed.reason or "no answer")
    return answers


def score(cases: list[Case], nvrx_venv: Path | None) -> tuple[list[Scored], str | None]:
    """Every case scored for slurm-hooks and, where NVRx's venv is there, for NVRx; and NVRx's version
    line (None: its column is skipped, and why is said on stderr; `nvrx_venv` None: not asked for)."""
    ours = diagnose_cases(cases)
    nvrx: dict[str, Answer] = {}
    version: str | None = None
    if nvrx_venv is not None:
        version, reason = nvrx_adapter.available(nvrx_venv)
        if version is None:
            print(f"accuracy: NVRx column skipped: {reason}", file=sys.stderr)
        else:
            nvrx = nvrx_adapter.answers([(c.id, c.path) for c in cases], nvrx_venv)
    scored = []
    for c in cases:
        theirs = nvrx.get(c.id)
        scored.append(
            Scored(c, ours[c.id], mark(c.truth, ours[c.id]), theirs, mark(c.truth, theirs) if theirs else None)
        )
    return scored, version


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.accuracy", description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=CORPUS, help="the corpus root (default tests/corpus)")
    ap.add_argument("--dir", type=Path, help="score every bundle under DIR as one seen set instead")
    ap.add_argument("--doc", type=Path, help="write the report as Markdown here (docs/accuracy.md)")
    ap.add_argument("--no-nvrx", action="store_true", help="leave NVRx's column out")
    ap.add_argument("--check", action="store_true", help="exit 1 when slurm-hooks was confidently wrong")
    args = ap.parse_args(argv)
    notes: list[str] = []
    if args.dir:
        root = args.dir
        cases = [_case(p, root, root.name) for p in _case_dirs(root)]
    else:
        root = args.corpus
        cases, notes = discover(root)
    for note in notes:
        print(f"accuracy: {note}", file=sys.stderr)
    scored, version = score(cases, None if args.no_nvrx else nvrx_adapter.VENV)
    sys.stdout.write(text(scored, root, version))
    if args.doc:
        args.doc.write_text(markdown(scored, root, version))
        print(f"accuracy: wrote {args.doc}", file=sys.stderr)
    confidently_wrong = sum(s.ours_marks.confidently_wrong for s in scored)
    return 1 if args.check and confidently_wrong else 0


if __name__ == "__main__":
    sys.exit(main())
