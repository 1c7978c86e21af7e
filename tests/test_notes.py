"""`skipped` stays a few lines whatever the bundle's size: one line per reason, with a count and examples."""

from __future__ import annotations

from slurm_hooks.diagnose.notes import summarise


def test_many_files_with_one_reason_become_one_line() -> None:
    notes = [f"kernel/n{i:04}.log: {i % 7} matching lines outside the job's time window ignored" for i in range(1152)]
    notes += ["logs/job.out: 3 untimed lines left unplaced", "nodes/n0001.json: missing"]
    got = summarise(notes)
    assert got[0].startswith("kernel/n0000.log: 0 matching lines outside the job's time window ignored (and 1,151 more")
    assert "kernel/n0001.log, kernel/n0002.log, …" in got[0]
    assert got[1:] == ["logs/job.out: 3 untimed lines left unplaced", "nodes/n0001.json: missing"]


def test_a_few_notes_stay_as_they_are_and_free_text_is_never_merged() -> None:
    notes = [f"kernel/n{i}.log: not read: more than 9 files in kernel/ (limits.bundle_files)" for i in range(4)]
    notes += ["ripgrep failed (x)", "ripgrep failed (y)"]
    assert summarise(notes) == notes
