"""No keyword can undo the scan's prefilter (issue 31).

A rule's keywords decide which lines reach Python; one in what every rank prints each iteration
(`python_exception` had "."; `NCCL`, `INFO`, `loss`) hands Python most of a dense log. The loader
refuses such a set, shipped or operator's, naming the rule; the shipped pack is measured here on
a dense log the way the scan sees it (the real scanner, the real keyword index).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from slurm_hooks.rules import RulePackError, load_rule_pack
from slurm_hooks.rules.chatter import healthy_lines
from slurm_hooks.timeline.hits import KeywordIndex
from slurm_hooks.timeline.scan import ResilientScanner, find_rg

MAX_RULE_RATE = 0.02  # of a dense log's lines one rule's keywords may be in
MAX_ALL_RATE = 0.05  # ... and all the rules' together

# Shapes chatter.py does not have, so the measure is not the loader's own yardstick.
OTHERS = (
    "[2026-11-27 03:10:11,123] torch.distributed.elastic.agent.server.api: [INFO] [default] Starting worker group",
    " 12%|#2        | 1200/10000 [10:00<1:13:20,  2.00it/s]",
    "INFO:root:Epoch 3 step 1200: loss=2.01 lr=3.0e-04 tokens/s=1.2e+06",
    "wandb: logging run metrics to https://wandb.example.com/team/proj/runs/abc123 (step 1200)",
    "[rank12]:[I1127 03:10:11.123456 ProcessGroupNCCL.cpp:2190] [PG ID 0 PG GUID 0 Rank 12] ProcessGroupNCCL created",
    "0: [2026-11-27 03:10:11] validation loss at iteration 1200 | lm loss value: 2.01 | lm loss PPL: 7.46 |",
)


def _dense_log(path: Path, lines: int) -> int:
    """A 4,096-rank job's log under NCCL_DEBUG=INFO; one line in 64 an init line with a keyword."""
    with open(path, "w") as out:
        for n, line in enumerate(healthy_lines(lines, seed=987_654)):
            out.write(line + "\n")
            if n % 16 == 0:
                out.write(f"{n % 4096}: {OTHERS[n // 16 % len(OTHERS)]}\n")
            if n % 64 == 0:
                out.write(
                    f"{n % 4096}: gb-r01-c02:1520:1520 [0] NCCL INFO comm 0x55d4 rank {n % 4096} - Init COMPLETE\n"
                )
    with open(path, "rb") as fh:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))


def _candidates(path: Path, pack, kind: str = "log") -> Counter[str]:
    """How many lines the scan hands Python for each rule (the keyword index's candidates)."""
    index = KeywordIndex([r for r in pack.rules if r.applies_to(kind)])
    per_rule: Counter[str] = Counter()
    with open(path, "rb") as fh:
        for hit in ResilientScanner(find_rg(), small_bytes=0).scan(fh, index.keywords, []):
            per_rule.update(r.name for r in index.rules_in(hit.text))
            per_rule["(any)"] += 1
    return per_rule


def test_each_shipped_rule_passes_few_lines_of_a_dense_log(tmp_path: Path, pack) -> None:
    log = tmp_path / "dense.out"
    total = _dense_log(log, 40_000)
    rates = {name: n / total for name, n in _candidates(log, pack).items()}
    common = {name: round(rate, 3) for name, rate in rates.items() if rate > MAX_RULE_RATE and name != "(any)"}
    assert not common, f"rules whose keywords are in too many lines of a healthy dense log: {common}"
    assert rates.get("(any)", 0) <= MAX_ALL_RATE, rates


def test_the_measure_sees_a_keyword_that_undoes_the_prefilter(tmp_path: Path) -> None:
    """The measure above on the keyword python_exception had: most lines."""
    log = tmp_path / "dense.out"
    total = _dense_log(log, 4_000)
    with open(log, "rb") as fh:
        hits = sum(1 for _ in ResilientScanner(find_rg(), small_bytes=0).scan(fh, ["."], []))
    assert hits / total > 0.5


@pytest.mark.parametrize(
    ("source", "keywords", "said"),
    [
        ("any", '["."]', "'.' is shorter than 3 characters"),  # python_exception's, as a scanned rule
        ("exception", '["Error", "."]', "'.' is shorter than 3 characters"),  # ... and where it was
        ("log", '["  x  "]', "shorter than 3 characters"),  # blanks do not count
        ("log", '["NCCL"]', "'NCCL' is in"),
        ("log", '["INFO"]', "'INFO' is in"),
        ("kernel", '[" loss"]', "' loss' is in"),
        (
            "log",
            '["Channel", "Trees", "Ring "]',
            "of the lines a healthy training job prints",
        ),  # rare each, common together
    ],
)
def test_a_keyword_set_that_is_not_selective_is_refused_naming_the_rule(
    tmp_path: Path, source: str, keywords: str, said: str
) -> None:
    path = tmp_path / "site.yaml"
    path.write_text(
        f"rules:\n  - {{name: site_chatty, family: segfault, role: primary, source: {source}, "
        f"keywords: {keywords}, pattern: 'x'}}\n"
    )
    with pytest.raises(RulePackError) as err:
        load_rule_pack([path], strict=True)
    assert str(path) in str(err.value) and "rule 'site_chatty'" in str(err.value) and said in str(err.value)
    pack = load_rule_pack([path])  # the hooks: the file left out, said; the shipped pack whole
    assert "site_chatty" not in {r.name for r in pack.rules} and len(pack.skipped) == 1


def test_selective_operator_keywords_are_taken(tmp_path: Path) -> None:
    path = tmp_path / "site.yaml"
    path.write_text(
        "rules:\n  - {name: site_fault, family: segfault, role: primary, source: log, "
        'keywords: ["SITE-FAULT", "Xid"], pattern: "SITE-FAULT|Xid"}\n'
    )
    assert "site_fault" in {r.name for r in load_rule_pack([path], strict=True).rules}
