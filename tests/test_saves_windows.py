"""Save windows close (issue 28 item 3, log-signatures §8.31): by the framework's end marker, by
training going on after the start (every framework's progress line, progress bars that go up, in
whichever of the job's files), or by the pack's bound; a crash inside an open window still is a
checkpoint crash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from slurm_hooks.bundle import load_bundle
from slurm_hooks.diagnose import diagnose
from slurm_hooks.rules import load_rule_pack
from tests.conftest import BUNDLES, write_bundle

OURS = sorted(p for p in BUNDLES.glob("p0*") if (p / "expected.json").exists())

JOB = {
    "job_id": "31",
    "state": "FAILED",
    "exit_code": "139:0",
    "derived_exit_code": "0:11",
    "start_time": "2026-05-01T09:00:00+00:00",
    "end_time": "2026-05-01T11:00:00+00:00",
    "nodes": ["w-n01"],
    "batch_host": "w-n01",
}
CRASH = "0: Fatal Python error: Segmentation fault\n0: \n0: Current thread 0x1 (most recent call first):\n"
CRASH += '0:   File "/w/model.py", line 8 in forward\nsrun: error: w-n01: task 0: Segmentation fault\n'

# Each framework's save line and the progress it logs next, in the words of its source
# (docs/log-signatures.md §8.31 cites where each is printed).
FRAMEWORKS = {
    "megatron": (
        "[2026-05-01 10:00:00] saving checkpoint at iteration    1500 to /ckpt in torch_dist format",
        [" [2026-05-01 10:00:40] iteration     1510/  100000 | consumed samples: 1546240 | lm loss: 2.3E+00 |"],
    ),
    "nemo2": (
        "[NeMo I 2026-05-01 10:00:00 nemo_logging:393] Saving checkpoint /ckpt/step=1000",
        ["Training epoch 0, iteration 1001/99999 | lr: 1.5e-04 | global_step: 1001 | reduced_train_loss: 2.31"],
    ),
    "torchtitan": (
        "[titan] 2026-05-01 10:00:00,000 - root - INFO - Saving the checkpoint (or staging if async is enabled).",
        ["[titan] 2026-05-01 10:00:12,000 - root - INFO - step: 101  loss:  3.2000  memory: 60.10GiB(76.02%)"],
    ),
    "deepspeed": (
        "[2026-05-01 10:00:00,000] [INFO] [logging.py:128:log_dist] [Rank 0] [Torch] Checkpoint global_step100 "
        "is about to be saved!",
        ["[2026-05-01 10:00:30,000] [INFO] [logging.py:128:log_dist] [Rank 0] step=110, skipped=0, lr=[0.0001]"],
    ),
    "deepspeed_timer": (
        "[2026-05-01 10:00:00,000] [INFO] [logging.py:128:log_dist] [Rank 0] Saving model checkpoint: /c/mp_rank_00.pt",
        [
            "[2026-05-01 10:00:30,000] [INFO] [timer.py:264:stop] epoch=0/micro_step=110/global_step=110, "
            "RunningAvgSamplesPerSec=220.6, CurrSamplesPerSec=222.8"
        ],
    ),
    "hf_trainer_dict": (
        "[INFO|trainer.py:3984] 2026-05-01 10:00:00,000 >> Saving model checkpoint to /out/checkpoint-500",
        ["{'loss': 1.9, 'grad_norm': 0.41, 'learning_rate': 1e-05, 'epoch': 0.5}"],
    ),
    "hf_trainer_bar": (
        "[INFO|trainer.py:3984] 2026-05-01 10:00:00,000 >> Saving model checkpoint to /out/checkpoint-500",
        [" 50%|█████     | 501/1000 [10:00<09:59,  1.20s/it]\r 50%|█████     | 502/1000 [10:01<09:58,  1.20s/it]"],
    ),
    "accelerate": (
        "2026-05-01 10:00:00,100 - INFO - accelerate.accelerator - Saving current state to /ckpt/step_500",
        [" 10%|█         | 51it [00:30,  1.70it/s]", " 10%|█         | 52it [00:31,  1.70it/s]"],
    ),
    "lightning": (
        "Epoch 2, global step 750: 'val_loss' reached 1.23450 (best 1.23450), saving model to "
        "'/ckpt/epoch=2-step=750.ckpt' as top 1",
        [
            "Epoch 3:   1%|▏         | 2/250 [00:01<02:30,  1.65it/s, v_num=0]",
            "Epoch 3:   2%|▏         | 4/250 [00:02<02:28,  1.66it/s, v_num=0]",
        ],
    ),
}
BARS = {"hf_trainer_bar", "accelerate", "lightning"}  # tqdm: one reading of a bar is its re-draw, not progress


def _diagnose(tmp_path: Path, logs: dict[str, str], pack) -> dict:
    d = diagnose(load_bundle(write_bundle(tmp_path, JOB, logs)), pack)
    return {"label": d.label, **d.details}


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
def test_every_frameworks_progress_closes_its_save(tmp_path: Path, pack, framework: str) -> None:
    start, progress = FRAMEWORKS[framework]
    log = f"0: {start}\n" + "".join(f"0: {line}\n" for line in progress) + CRASH
    got = _diagnose(tmp_path, {"job.out": log}, pack)
    assert got["in_save_window"] is False and got["label"] == "app_segfault", (framework, got)


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
def test_without_progress_the_crash_is_inside_the_save(tmp_path: Path, pack, framework: str) -> None:
    """The sibling: the same save line and no progress after it (a bar's single re-draw is none)."""
    start, progress = FRAMEWORKS[framework]
    redraw = progress[0].split("\r")[0] if framework in BARS else "waiting"
    got = _diagnose(tmp_path, {"job.out": f"0: {start}\n0: {redraw}\n{CRASH}"}, pack)
    assert got["in_save_window"] is True and got["label"] == "checkpoint_segfault", (framework, got)


def test_progress_in_the_other_file_of_the_same_task_closes_it(tmp_path: Path, pack) -> None:
    """stdout and stderr apart: the save on stderr, its task's stamped steps on stdout."""
    err = "0: 2026-05-01 10:00:00,100 - INFO - accelerate.accelerator - Saving current state to /ckpt/step_500\n"
    err += CRASH.replace("0: Fatal", "0: [2026-05-01 10:05:00] about to crash\n0: Fatal")
    out = "".join(f"0: [2026-05-01 10:0{m}:30] step {500 + m} loss 1.9\n" for m in range(3))
    assert _diagnose(tmp_path / "a", {"job.err": err, "job.out": out}, pack)["in_save_window"] is False
    other = out.replace("0: [", "1: [")  # another task's steps: not the saving task's
    assert _diagnose(tmp_path / "b", {"job.err": err, "job.out": other}, pack)["in_save_window"] is True
    late = out.replace("10:0", "10:1")  # after the crash: nothing between the save and it
    assert _diagnose(tmp_path / "c", {"job.err": err, "job.out": late}, pack)["in_save_window"] is True


def test_the_bound_is_the_packs(tmp_path: Path) -> None:
    """A save open past `ordering.save_window_s` with no end is over; an operator may widen it."""
    bundle = load_bundle(BUNDLES / "p01-megatron-save-long-before-the-crash-closed-by-the-bound")
    assert diagnose(bundle, load_rule_pack()).label == "app_segfault"
    wider = tmp_path / "wider.yaml"
    wider.write_text("ordering:\n  save_window_s: 36000\n")
    pack = load_rule_pack([wider], strict=True)
    assert pack.ordering.save_window_s == 36000
    assert diagnose(load_bundle(bundle.root), pack).label == "checkpoint_segfault"


@pytest.mark.parametrize("path", OURS, ids=[p.name for p in OURS])
def test_save_window_bundles(path: Path, pack) -> None:
    expected = json.loads((path / "expected.json").read_text())
    got = diagnose(load_bundle(path), pack)
    assert (got.label, got.root_node, got.root_rank) == (
        expected["label"],
        expected["root_node"],
        expected["root_rank"],
    ), got.summary
    assert got.details["in_save_window"] is expected["in_save_window"], got.details
