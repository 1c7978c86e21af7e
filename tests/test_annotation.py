"""The accounting record: what sacctmgr 22.05 does to it, what log text cannot do to it, reading it back."""

from __future__ import annotations

import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slurm_hooks.slurm.annotation import KEYS, MARK, decode, encode, find_records, merged_value

DIAG = {
    "label": "cdmm_checkpoint_segfault",
    "root_node": "GB-R03-C07",
    "root_rank": 9,
    "facts": {"driver_version": "580.95.05", "cdmm": "on", "ncore_version": "3.6.2", "gpu_model": "NVIDIA GB200"},
    "details": {},
}


def test_round_trip_survives_sacctmgr_lowercasing() -> None:
    record = encode(DIAG, exit_code="139:0", state="FAILED")
    assert record == record.lower() and record.startswith(MARK)
    assert "|" not in record and "\n" not in record and '"' not in record and "'" not in record
    fields = decode(record.lower())
    assert decode(record.upper()) == fields  # sacctmgr 24.11 keeps case: whatever a store did, one reading
    assert fields == {
        "label": "cdmm_checkpoint_segfault",
        "node": "gb-r03-c07",
        "rank": "9",
        "driver": "580.95.05",
        "cdmm": "on",
        "ncore": "3.6.2",
        "gpu": "nvidia_gb200",
        "exit": "139:0",
        "state": "failed",
    }


def test_app_exception_records_its_kind_and_only_a_checked_one() -> None:
    diag = {**DIAG, "label": "app_exception", "details": {"exception": {"kind": "disk_full", "points_at_node": True}}}
    fields = decode(encode(diag, state="FAILED"))
    assert fields is not None and (fields["label"], fields["exc"], fields["excnode"]) == (
        "app_exception",
        "disk_full",
        "1",
    )
    forged = {"kind": "x excnode=1 label=success", "message": "exc=cuda_error", "points_at_node": "yes"}
    fields = decode(encode({**diag, "details": {"exception": forged}}))
    assert (
        fields is not None
        and fields["exc"] == "other"
        and "excnode" not in fields
        and fields["label"] == "app_exception"
    )
    assert "exc" not in (decode(encode(DIAG)) or {})  # other labels carry no kind


def test_hostile_values_cannot_break_the_record() -> None:
    diag = {**DIAG, "root_node": "evil|node\nslurm-hooks/v1 label=success", "facts": {"ncore_version": "'; drop"}}
    record = encode(diag)
    assert "|" not in record and "\n" not in record and record.count(MARK) == 1
    assert decode(record)["label"] == "cdmm_checkpoint_segfault"
    assert len(encode({**DIAG, "root_node": "x" * 5000})) <= 512


@pytest.mark.parametrize(
    ("field", "current", "expected"),
    [
        ("admin_comment", "", "REC"),
        ("admin_comment", f"{MARK} label=unknown", "REC"),  # ours: replaced, so re-delivery is harmless
        ("admin_comment", "JS1:eyJqb2JzdGF0cyI6MX0=", None),  # jobstats owns it
        ("comment", "", "REC"),
        ("comment", "alice own comment", "alice own comment REC"),
        ("comment", f"alice own comment {MARK} label=unknown", "alice own comment REC"),
    ],
)
def test_merge_rules(field: str, current: str, expected: str | None) -> None:
    assert merged_value(field, current, "REC") == expected


def test_decode_finds_our_record_after_user_text_and_ignores_others() -> None:
    assert decode("JS1:abc") is None
    assert decode(f"my run 3 {MARK} label=oom_killed node=n1 bogus=1")["label"] == "oom_killed"
    assert "bogus" not in decode(f"{MARK} label=x bogus=1")


@pytest.mark.parametrize(
    ("field", "current", "expected"),
    [
        # user text after our mark is kept, and a bare mark in it is the user's text, not a record
        ("comment", f"my notes {MARK} are here", f"my notes {MARK} are here REC"),
        ("comment", f"before {MARK} label=x node=n1 after", "before after REC"),
        # ours inside another tool's value, or after a \x1f a comment smuggled in: not ours to replace
        ("admin_comment", f"JS1:abc\x1f{MARK} label=x", None),
        ("admin_comment", f"{MARK} label=x\x1fJS1:abc", None),
        ("admin_comment", f"{MARK} label=x JS1:abc", None),
    ],
)
def test_merge_keeps_what_is_not_ours(field: str, current: str, expected: str | None) -> None:
    assert merged_value(field, current, "REC") == expected


def test_decode_reads_only_a_mark_followed_by_our_fields() -> None:
    assert decode(f"my notes {MARK} are here") is None
    assert decode(f"{MARK}") is None
    assert decode(f"{MARK} label=x {MARK} label=y node=n2 tail")["label"] == "y"
    assert decode(f"{MARK} label=UPPER") == {"label": "upper"}  # 22.05 lowercases, 24.11 keeps case: both read


def test_decode_is_linear_on_long_runs() -> None:
    """A run of letters (quadratic for a findall of `[a-z_]+=`) or of records: 16x the input must
    cost well under the 256x a quadratic parser would (best of 3: the machine is shared)."""

    def cost(text: str) -> float:
        best = float("inf")
        for _ in range(3):
            started = time.perf_counter()
            decode(text)
            merged_value("comment", text, "REC")
            best = min(best, time.perf_counter() - started)
        return best

    for unit in ("a", f"{MARK} label=x ", "label=x " * 3, f"{MARK} "):
        small, large = (cost(f"{MARK} " + unit * (n // len(unit))) for n in (20_000, 320_000))
        assert large < 50 * small + 0.05, (unit, small, large)


_values = st.one_of(st.none(), st.text(max_size=80), st.integers(-(10**6), 10**6))
_diagnoses = st.fixed_dictionaries(
    {
        "label": st.text(min_size=1, max_size=40),
        "root_node": _values,
        "root_rank": _values,
        "facts": st.fixed_dictionaries(
            {"driver_version": _values, "cdmm": _values, "ncore_version": _values, "gpu_model": _values}
        ),
        "details": st.fixed_dictionaries({"xid": _values}),
    }
)
_free_text = st.text(st.characters(codec="utf-8"), max_size=200) | st.lists(
    st.sampled_from([MARK, "label=x", "node=n1", "bogus=1", "JS1:abc", "\x1f", "\n", " ", "a" * 30, "="]), max_size=30
).map("".join)


@given(_diagnoses, st.text(max_size=20), st.text(max_size=20))
def test_encode_then_decode_round_trips_whatever_the_values(diag: dict, exit_code: str, state: str) -> None:
    record = encode(diag, exit_code, state)
    assert len(record) <= 512 and "\n" not in record and "|" not in record and record.count(MARK) == 1
    fields = decode(record) or {}
    assert fields.get("label") == encode({"label": diag["label"]}).split("=", 1)[1][:64]
    assert decode(record.lower()) == fields  # sacctmgr's lowercasing changes nothing


@given(_free_text)
def test_decode_never_raises_and_returns_only_our_keys(text: str) -> None:
    fields = decode(text)
    assert fields is None or (fields and set(fields) <= set(KEYS))
    for found in find_records(text):
        assert text[found.start :].startswith(MARK)


@given(_free_text, _diagnoses)
def test_comment_merge_keeps_user_text_and_our_record_reads_back(user: str, diag: dict) -> None:
    record = encode(diag)
    merged = merged_value("comment", user, record)
    assert merged is not None and merged.endswith(record)
    assert decode(merged) == decode(record)
    # every word of the user's that is not part of an earlier record of ours survives
    ours = {i for f in find_records(user.strip()) for i in range(f.start, f.end)}
    kept = [w for w in user.strip().split() if w]
    assert merged_value("comment", merged, record) == merged  # re-delivery is harmless
    if not ours:
        assert merged.split() == kept + record.split()


@given(_free_text)
def test_admin_comment_of_another_tool_is_never_overwritten(current: str) -> None:
    merged = merged_value("admin_comment", current, "REC")
    stripped = current.strip()
    assert merged is None or not stripped or (decode(stripped) is not None and stripped.startswith(MARK))
