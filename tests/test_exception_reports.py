"""A parent's report of its child's failure is not a cause (log-signatures §8.26): accelerate's or a
script's `subprocess.CalledProcessError`, a harness's `failed with returncode 1`. The child's own
traceback, printed into the same stream before it, is the root, rich's boxed form included
(accelerate#1473's and diffusers' text); with no child traceback nothing is known."""

from __future__ import annotations

from pathlib import Path

from tests.test_verdict_witness import _diagnose

RICH = (
    "╭─────────────────────────────── Traceback (most recent call last) ────────────────────────────────╮\n"
    "│ /home/user/train_dreambooth.py:802 in main                                                       │\n"
    "│ ❱  629 │   │   attention_probs = attention_scores.softmax(dim=-1)                                │\n"
    "╰──────────────────────────────────────────────────────────────────────────────────────────────────╯\n"
    "OutOfMemoryError: CUDA out of memory. Tried to allocate 1024.00 MiB (GPU 0; 8.00 GiB total capacity)\n"
)
PLAIN = (
    "Traceback (most recent call last):\n"
    '  File "/home/user/train.py", line 41, in <module>\n'
    "    shard = shards[9]\n"
    "IndexError: list index out of range\n"
)
PARENT = (
    "Traceback (most recent call last):\n"
    '  File "/usr/local/bin/accelerate", line 8, in <module>\n'
    "    sys.exit(main())\n"
    '  File "/usr/local/lib/python3.10/dist-packages/accelerate/commands/launch.py", line 580, in simple_launcher\n'
    "    raise subprocess.CalledProcessError(returncode=process.returncode, cmd=cmd)\n"
    "subprocess.CalledProcessError: Command '['/usr/bin/python3', 'train.py']' returned non-zero exit status 1.\n"
)
END = "srun: error: n1: task 0: Exited with exit code 1\n"


def test_the_childs_rich_traceback_is_the_root_not_the_parents_report(tmp_path: Path, pack) -> None:
    got = _diagnose(tmp_path, "Steps:   0%|  | 2/800\n" + RICH + PARENT + END, pack, nodes=["n1"], ntasks=1)
    assert (got.label, got.root_node, got.root_rank) == ("app_exception", "n1", 0), got.summary
    assert got.details["exception"]["type"] == "OutOfMemoryError"


def test_the_childs_plain_traceback_is_the_root_not_the_parents_report(tmp_path: Path, pack) -> None:
    got = _diagnose(tmp_path, PLAIN + PARENT + END, pack, nodes=["n1"], ntasks=1)
    assert (got.label, got.details["exception"]["type"]) == ("app_exception", "IndexError"), got.summary


def test_a_parents_report_alone_names_no_cause(tmp_path: Path, pack) -> None:
    got = _diagnose(tmp_path, PARENT + END, pack, nodes=["n1"], ntasks=1)
    assert (got.label, got.root_rank) == ("unknown", None), got.summary
