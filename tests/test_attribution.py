"""Pieces of rank and node attribution (log-signatures §8.18-§8.24): host names, launcher prefixes,
noisy lines, the pid map."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slurm_hooks.diagnose.pidmap import build_pid_map, rank_of
from slurm_hooks.diagnose.render import to_text
from slurm_hooks.rules import RulePack
from slurm_hooks.timeline.events import Event
from slurm_hooks.timeline.hosts import NodeNames
from slurm_hooks.timeline.noise import _CONTROL, printable, segments, strip_ansi
from slurm_hooks.timeline.prefixes import strip_prefixes


def event(rule_name: str, text: str, pack: RulePack, node: str | None = None, rank: int | None = None) -> Event:
    """One log line as the timeline gives it: the named rule's fields, its node (from the line if it says)."""
    rule = next(r for r in pack.rules if r.name == rule_name)
    fields = rule.search(text)
    assert fields is not None, (rule_name, text)
    return Event(rule, "logs/job.out", 1, text, None, rank, fields.get("node") or node, None, fields)


def test_host_names_become_the_jobs_slurm_names() -> None:
    names = NodeNames(("gb-r02-c03", "gb-r02-c04"))
    assert names.canonical("gb-r02-c03.cluster.local") == "gb-r02-c03"
    assert names.canonical("GB-R02-C04") == "gb-r02-c04"
    assert names.canonical("gb-r02-c04.trainer-0.svc.cluster.local") == "gb-r02-c04"
    assert names.canonical("localhost") is None  # two nodes: localhost is either
    assert names.canonical("login-07") is None and names.canonical("10.0.0.9") is None
    names.learn_address("10.0.0.9", "gb-r02-c04.cluster.local")
    assert names.canonical("10.0.0.9") == "gb-r02-c04"
    one = NodeNames(("n1",))
    assert one.canonical("localhost") == one.canonical("127.0.0.1") == "n1"
    assert NodeNames(()).canonical("anything") == "anything"  # no node list: nothing to check against


def test_launcher_prefixes_are_stripped_only_for_the_jobs_hosts(pack: RulePack) -> None:
    hosts = NodeNames(("ds-a01", "ds-a02")).canonical
    pre = strip_prefixes("ds-a02: [launch.py:256:main] process 5 spawned", pack.launchers, hosts)
    assert (pre.host, pre.body) == ("ds-a02", "[launch.py:256:main] process 5 spawned")
    pre = strip_prefixes("srun: error: ds-a02: task 3: Segmentation fault", pack.launchers, hosts)
    assert pre.host is None and pre.body.startswith("srun: error: ")  # `srun` is no host of the job
    pre = strip_prefixes("RuntimeError: boom", pack.launchers, hosts)
    assert pre.body == "RuntimeError: boom"
    pre = strip_prefixes("[1,5]<stderr>:Fatal Python error: Segmentation fault", pack.launchers, hosts)
    assert (pre.rank, pre.body) == (5, "Fatal Python error: Segmentation fault")
    pre = strip_prefixes("[1,5]<stdout>:[rank9]:x", pack.launchers, hosts)
    assert pre.rank == 9  # torch's own [rankN] is the more specific


@given(
    st.text(alphabet=st.characters(codec="utf-8"))
    | st.sampled_from(["plain", "é∂ ok", "a\x1b[31mb", "\x9b1mx", "\u2028"])
)
def test_a_line_with_no_control_character_is_shown_as_it_is_and_any_other_cleaned_in_full(text: str) -> None:
    full = "".join(c if c.isprintable() or c == "\t" else "?" for c in _CONTROL.sub("?", strip_ansi(text)))
    assert printable(text) == full


@pytest.mark.parametrize("invisible", ["\u202e", "\u2066", "\u2069", "\u200b", "\u200f", "\u2028", "\ufeff"])
def test_unicode_format_characters_cannot_reorder_or_hide_what_is_shown(invisible: str) -> None:
    """Trojan Source (CVE-2021-42574): a bidi override or a zero-width mark in a log line would
    reorder or hide evidence on the operator's terminal; each is shown as `?`."""
    assert printable(f"saving checkpoint {invisible}edon tooR\tok") == "saving checkpoint ?edon tooR\tok"


def test_noisy_lines_are_read_per_segment_and_printed_without_control_bytes() -> None:
    line = " 2: 45%|\x1b[34m###\x1b[0m|\r 46%|###|\r\x1b[31mFatal Python error: Segmentation fault\x1b[0m"
    assert segments(line) == [" 2: 45%|###|", " 46%|###|", "Fatal Python error: Segmentation fault"]
    assert printable("a\x1b]0;title\x07b\x1b[2Jc\rd\x00e") == "abc?d?e"
    assert all(ord(c) >= 32 for c in printable("x\x1b[31mred\x1b[0m\r\x07\x7f"))
    many = "\r".join(["bar"] * 1000 + ["Fatal Python error: Segmentation fault"])
    parts = segments(many)
    assert len(parts) <= 64 and parts[-1] == "Fatal Python error: Segmentation fault"


def test_text_output_never_prints_a_raw_escape(pack: RulePack) -> None:
    from slurm_hooks.diagnose.result import Diagnosis

    d = Diagnosis("1", "unknown", "s\x1b[2J", None, None, None, [], ["a\x1b]0;x\x07"], {}, {}, ["logs/\x1b[31m.out"])
    assert "\x1b" not in to_text(d) and "\x07" not in to_text(d)


def test_every_source_of_the_pid_map(pack: RulePack) -> None:
    init = event("nccl_init_rank", "n2:8802:8902 [1] NCCL INFO comm 0x1 rank 5 nranks 8 x - Init COMPLETE", pack)
    sub = event("nccl_init_rank", "n2:8803:8903 [1] NCCL INFO comm 0x2 rank 1 nranks 4 x - Init COMPLETE", pack)
    layout = event("deepspeed_node_layout", "nnodes=2, num_local_procs=4, node_rank=1", pack, node="n2")
    spawn = event("deepspeed_spawned", "process 40546 spawned with command: ['p', '--local_rank=2']", pack, node="n2")
    shell = event("batch_shell_segfault", "bash: line 1: 61234 Segmentation fault  python x", pack, node="n1", rank=3)
    pids = build_pid_map([init, sub, layout, spawn, shell], pack, [("n1", 700, 0)])
    assert rank_of(pids, "n2", 8802) == 5
    assert rank_of(pids, "n2", 8803) is None  # a sub-communicator's rank is not global
    assert rank_of(pids, "n2", 40546) == 6  # node_rank 1 x 4 local + local rank 2
    assert rank_of(pids, "n1", 61234) == 3 and rank_of(pids, "n1", 700) == 0
    assert rank_of(pids, "n1", 8802) is None  # the same pid on another node is another process


def test_node_offsets_come_from_shared_moments_and_ignore_noise(pack: RulePack) -> None:
    from datetime import datetime, timedelta, timezone

    from slurm_hooks.diagnose.skew import node_offsets

    def init(node: str, pid: int, second: float, comm: str) -> Event:
        text = f"{node}:{pid}:1 [0] NCCL INFO comm 0x1 rank 0 nranks 4 cudaDev 0 commId {comm} - Init COMPLETE"
        ev = event("nccl_init_rank", text, pack)
        ev.time = datetime(2026, 4, 2, 9, 0, tzinfo=timezone.utc) + timedelta(seconds=second)
        return ev

    events = [init("a", 1, 0, "0x1"), init("b", 2, 30, "0x1"), init("c", 3, 1, "0x1"), init("a", 1, 60, "0x2")]
    events.append(init("b", 2, 91, "0x2"))
    offsets = node_offsets(events, pack, ("a", "b", "c"))
    assert offsets == {"b": timedelta(seconds=30.5)}  # c's 1 s is within simultaneous_s: noise


def test_launcher_prefixes_are_rule_data_an_operator_can_replace(tmp_path) -> None:
    import pytest

    from slurm_hooks.rules import RulePackError, load_rule_pack

    bad = tmp_path / "bad.yaml"
    bad.write_text("launchers: ['^(unclosed']\n")
    with pytest.raises(RulePackError, match="launchers"):
        load_rule_pack([bad], strict=True)
    own = tmp_path / "own.yaml"
    own.write_text("launchers: ['^<(?P<host>[a-z0-9-]+)> ']\n")
    pack = load_rule_pack([own], strict=True)
    pre = strip_prefixes("<n2> srun: error: x", pack.launchers, NodeNames(("n1", "n2")).canonical)
    assert (pre.host, pre.body) == ("n2", "srun: error: x")
