"""Reading Slurm's answers by structure: fields a job's own text cannot shift, and bounded patterns."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slurm_hooks.slurm.cli_backend import SlurmCli, split_rows, wait_status
from slurm_hooks.slurm.client import NotInAccountingYet, SlurmError, nodes_shared, settled_state
from slurm_hooks.slurm.patterns import MAX_PATH, expand

HOSTILE_NAME = "train BatchHost=nowhere ExitCode=0:0"


class Recorded:
    """Answers like squeue/sacct would: the fields a test sets, joined with the separator the
    client asked for (read back from its own argv, as the real commands do)."""

    def __init__(self, squeue: dict[str, str] | None, sacct: list[list[str]] | None) -> None:
        self.squeue, self.sacct = squeue, sacct
        self.calls: list[list[str]] = []

    def __call__(
        self, argv: Sequence[str], timeout_s: float, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        self.calls.append(list(argv))
        if argv[0] == "squeue":
            if self.squeue is None:
                return subprocess.CompletedProcess(argv, 1, b"", b"slurm_load_jobs error: Unable to contact")
            specs = argv[argv.index("-O") + 1].split(",")
            out = "".join(self.squeue.get(s.split(":", 1)[0], "") + s.split(":", 1)[1][1:] for s in specs) + "\n"
        else:
            sep = next(a for a in argv if a.startswith("--delimiter=")).split("=", 1)[1]
            out = "".join("".join(f + sep for f in row) + "\n" for row in self.sacct or [])
        return subprocess.CompletedProcess(argv, 0, out.encode(), b"")


def squeue_row(**over: str) -> dict[str, str]:
    row = {
        "JobID": "77",
        "State": "COMPLETING",
        "Reason": "NonZeroExitCode",
        "exit_code": "768",
        "DerivedEC": "0",
        "StartTime": "2026-11-30T10:00:00",
        "EndTime": "2026-11-30T10:05:00",
        "NodeList": "n[1-2]",
        "BatchHost": "n1",
        "STDOUT": "/home/alice/%x-%j.out",
        "STDERR": "/home/alice/%x-%j.out",
        "WorkDir": "/home/alice",
        "Comment": "",
        "admin_comment": "",
        "Name": "train",
        "UserName": "alice",
        "ArrayJobID": "N/A",
        "ArrayTaskID": "N/A",
        "NumTasks": "8",
        "OverSubscribe": "OK",
    }
    return {**row, **over}


def test_a_job_name_holding_key_value_text_moves_nothing() -> None:
    runner = Recorded(squeue_row(Name=HOSTILE_NAME, Comment=f"x {HOSTILE_NAME}\n NodeList=evil"), None)
    record = SlurmCli(5, runner=runner).job("77")
    assert (record.batch_host, record.node_list, record.exit_code, record.state) == ("n1", "n[1-2]", "3:0", "FAILED")
    assert record.std_out == f"/home/alice/{HOSTILE_NAME}-77.out"
    assert record.comment == f"x {HOSTILE_NAME}\n NodeList=evil"


def test_a_comment_holding_the_old_fixed_separator_shifts_no_field() -> None:
    runner = Recorded(squeue_row(), [["77", "a\x1fslurm-hooks/v1 label=x", "JS1:abc"]])
    assert SlurmCli(5, runner=runner).accounting_comments("77") == ("a\x1fslurm-hooks/v1 label=x", "JS1:abc")
    seps = {a.split("=", 1)[1] for c in runner.calls for a in c if a.startswith("--delimiter=")}
    assert len(seps) == 1 and len(next(iter(seps))) == 18  # \x1f + 16 random hex + \x1f
    SlurmCli(5, runner=runner).accounting_comments("77")
    assert len({a for c in runner.calls for a in c if a.startswith("--delimiter=")}) == 2  # fresh per call


def test_sacct_final_state_wins_and_a_missing_record_is_not_yet() -> None:
    record = SlurmCli(5, runner=Recorded(squeue_row(), [["77", "CANCELLED by 0", "0:11"]])).job("77")
    assert (record.state, record.derived_exit_code) == ("CANCELLED", "0:11")
    with pytest.raises(NotInAccountingYet):
        SlurmCli(5, runner=Recorded(squeue_row(), [])).accounting_comments("77")
    with pytest.raises(SlurmError):
        SlurmCli(5, runner=Recorded(None, [])).job("77")


def test_only_the_asked_job_counts() -> None:
    with pytest.raises(SlurmError, match="0 records"):
        SlurmCli(5, runner=Recorded(squeue_row(JobID="78"), None)).job("77")


@given(st.lists(st.lists(st.text(), min_size=3, max_size=3), max_size=5))
def test_rows_split_back_exactly_whatever_the_field_text(rows: list[list[str]]) -> None:
    sep = "\x1fdeadbeefdeadbeef\x1f"
    rows = [[f.replace(sep, "") for f in row] for row in rows]
    text = "".join("".join(f + sep for f in row) + "\n" for row in rows)
    assert split_rows(text, sep, 3) == rows


@pytest.mark.parametrize("text", ["a\x1fS\x1fb\n", "a\x1fS\x1f\n\x1fS\x1f", "a\x1fS\x1fb\x1fS\x1f"])
def test_output_of_the_wrong_shape_raises(text: str) -> None:
    with pytest.raises(SlurmError, match="shape"):
        split_rows(text, "\x1fS\x1f", 2)


@pytest.mark.parametrize(
    ("raw", "expected"), [("0", "0:0"), ("768", "3:0"), ("35584", "139:0"), ("11", "0:11"), ("3:0", "3:0"), ("N/A", "")]
)
def test_wait_status(raw: str, expected: str) -> None:
    assert wait_status(raw) == expected


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("/w/%x-%j.out", "/w/train-42.out"),
        ("/w/%100000000j.out", "/w/0000000042.out"),  # padded to at most 10, as sbatch(1) says
        ("/w/%99999999999999999999j", None),  # no width that long is a specifier at all
        ("/w/%x" * 2000, None),  # longer than PATH_MAX
        ("/w/\\%j.out", "/w/%j.out"),  # a backslash turns expansion off, as in Slurm
        ("/w/100%", "/w/100%"),
    ],
)
def test_pattern_expansion_is_bounded(pattern: str, expected: str | None) -> None:
    assert expand(pattern, {"j": "42", "x": "train"}) == expected


@given(st.text(max_size=300), st.text(max_size=300))
def test_pattern_expansion_never_exceeds_path_max(pattern: str, name: str) -> None:
    got = expand(pattern, {"j": "42", "x": name, "%": "%"})
    assert got is None or len(got) <= MAX_PATH


def test_accounting_state_counts_only_once_it_says_how_the_job_ended() -> None:
    assert settled_state("PENDING", "RUNNING") == "RUNNING"  # slurmdbd lags slurmctld
    assert settled_state("RUNNING", "TIMEOUT") == "TIMEOUT"  # the Epilog's COMPLETING job, read via its Reason
    assert settled_state("CANCELLED by 1001", "COMPLETING") == "CANCELLED"
    assert settled_state("", "FAILED") == "FAILED"


def test_no_error_file_means_stderr_goes_to_the_output_file() -> None:
    """squeue prints (null) for a job without --error; pyslurm 24.11 says the stdout path: both say the latter."""
    record = SlurmCli(5, runner=Recorded(squeue_row(STDERR="(null)"), None)).job("77")
    assert record.std_err == record.std_out == "/home/alice/train-77.out"
    record = SlurmCli(5, runner=Recorded(squeue_row(STDERR="/home/alice/%j.err"), None)).job("77")
    assert (record.std_out, record.std_err) == ("/home/alice/train-77.out", "/home/alice/77.err")


def sacctmgr_answering(rc: int, stdout: str, stderr: str) -> Recorded:
    class Sacctmgr(Recorded):
        def __call__(self, argv, timeout_s, env=None):  # type: ignore[no-untyped-def]
            self.calls.append(list(argv))
            return subprocess.CompletedProcess(argv, rc, stdout.encode(), stderr.encode())

    return Sacctmgr(None, None)


@pytest.mark.parametrize(
    ("rc", "stdout", "stderr"),
    [
        (0, " Nothing modified\n", ""),
        (1, "", "Request didn't affect anything\n"),  # 22.05
        (1, " Error with request: Data has not changed since time specified\n", " Request didn't affect anything\n"),
        (1, "", " Request didn't affect anything\n Error with request: Data has not changed since time specified\n"),
    ],
)
def test_a_modify_that_matched_no_job_is_not_yet(rc: int, stdout: str, stderr: str) -> None:
    """Slurm 24.11's sacctmgr ends `Data has not changed since time specified`: not yet, not accounting down."""
    with pytest.raises(NotInAccountingYet):
        SlurmCli(5, runner=sacctmgr_answering(rc, stdout, stderr)).set_job_field("77", "comment", "x")


def test_a_modify_refused_otherwise_is_a_slurm_error() -> None:
    with pytest.raises(SlurmError) as caught:
        SlurmCli(
            5, runner=sacctmgr_answering(1, "", "sacctmgr: error: Problem talking to the database\n")
        ).set_job_field("77", "comment", "x")
    assert not isinstance(caught.value, NotInAccountingYet)


def test_task_count_and_oversubscribe_come_from_squeue() -> None:
    record = SlurmCli(5, runner=Recorded(squeue_row(), None)).job("77")
    assert (record.ntasks, record.oversubscribe, nodes_shared(record.oversubscribe)) == (8, "OK", True)
    exclusive = SlurmCli(5, runner=Recorded(squeue_row(OverSubscribe="NO", NumTasks="N/A"), None)).job("77")
    assert (exclusive.ntasks, nodes_shared(exclusive.oversubscribe)) == (0, False)
    for odd in ("", "-1", "99999999999", "²"):  # nothing a job can have
        assert SlurmCli(5, runner=Recorded(squeue_row(NumTasks=odd), None)).job("77").ntasks == 0


@pytest.mark.parametrize(
    ("word", "shared"),
    [
        ("NO", False),
        ("no", False),
        ("OK", True),
        ("YES", True),
        ("USER", True),
        ("MCS", True),
        ("TOPO", True),
        ("", None),
    ],
)
def test_only_an_exclusive_job_has_its_nodes_alone(word: str, shared: bool | None) -> None:
    """squeue(1): NO is exclusive node access; OK is dedicated CPUs (other jobs on the node's other
    CPUs); USER/MCS leave the node to the user's or class's other jobs; "" is not known."""
    assert nodes_shared(word) is shared
