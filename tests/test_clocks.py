"""Each timestamp family of log-signatures §6.2 lands on the right UTC instant."""

from __future__ import annotations

from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import pytest

from slurm_hooks.timeline.clocks import ClockContext, kernel_time, log_time

UTC = timezone.utc
REF = datetime(2025, 11, 18, 1, 58, tzinfo=UTC)
CTX = ClockContext(reference=REF)


def at(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("[E1118 02:52:10.929249286 ProcessGroupNCCL.cpp:685] [Rank 0] x", at(2025, 11, 18, 2, 52, 10)),
        (
            "W1118 05:17:58.996000 3304089 site-packages/torch/api.py:908] Sending process",
            at(2025, 11, 18, 5, 17, 58, 996000),
        ),
        (
            "[2024-05-08 08:47:31,261] torch.distributed.elastic.multiprocessing.api: [WARNING] x",
            at(2024, 5, 8, 8, 47, 31, 261000),
        ),
        (" [2025-11-18 02:31:07] iteration      200/  50000 |", at(2025, 11, 18, 2, 31, 7)),
        ("[NeMo I 2025-10-08 23:27:54 nemo_logging:393] saving", at(2025, 10, 8, 23, 27, 54)),
        ("[2025-11-18 02:42:31] host:1:2 [2] transport/net_ib.cc:1 NCCL WARN x", at(2025, 11, 18, 2, 42, 31)),
        ("  time      : 2025-12-23_05:17:58", at(2025, 12, 23, 5, 17, 58)),
        ("[launcher] srun finished rc=139 at 2025-11-18T02:52:28Z", at(2025, 11, 18, 2, 52, 28)),
        ("[E ProcessGroupNCCL.cpp:737] [Rank 1] Watchdog caught", None),
        ("host:1:2 [0] NCCL INFO Bootstrap", None),
    ],
)
def test_log_families(body: str, expected: datetime | None) -> None:
    assert log_time(body, CTX) == expected


def test_c10_month_is_not_zero_padded() -> None:
    # E321 = March 21; the 9-digit fraction is CLOCK_MONOTONIC ns and is ignored
    ctx = ClockContext(reference=at(2025, 3, 20))
    assert log_time("[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] x", ctx) == at(2025, 3, 21, 2, 7, 8)


def test_year_rollover_dec_to_jan() -> None:
    ctx = ClockContext(reference=at(2025, 12, 31, 22, 0))
    assert log_time("[E101 00:08:40.1 ProcessGroupNCCL.cpp:1] x", ctx) == at(2026, 1, 1, 0, 8, 40)
    assert log_time("[E1231 23:58:40.1 ProcessGroupNCCL.cpp:1] x", ctx) == at(2025, 12, 31, 23, 58, 40)
    assert kernel_time("Jan  1 00:08:45 n1 kernel: x", ctx)[0] == at(2026, 1, 1, 0, 8, 45)


def test_log_zone_and_slurm_zone_differ() -> None:
    ny = ZoneInfo("America/New_York")
    ctx = ClockContext(reference=at(2026, 3, 10, 12), log_zone=UTC, slurm_zone=ny)
    stepd = "slurmstepd: error: *** JOB 7 ON n1 CANCELLED AT 2026-03-10T09:06:00 DUE TO TIME LIMIT ***"
    assert log_time(stepd, ctx) == at(2026, 3, 10, 13, 6)
    assert log_time("[2026-03-10 09:06:00] iteration 5", ctx) == at(2026, 3, 10, 9, 6)
    # LogTimeFormat-style stepd prefix is also Slurm's zone
    assert log_time(
        "[2025-12-17T12:59:34.342] error: *** STEP 1.2 ON n CANCELLED AT 2025-12-17T12:59:34 ***",
        ClockContext(reference=REF, slurm_zone=ny),
    ) == at(2025, 12, 17, 17, 59, 34, 342000)


def test_a_date_deep_inside_a_message_is_not_the_line_time() -> None:
    body = "loading checkpoint written by a run whose config says " + "x" * 40 + " created 2020-01-01 00:00:00"
    assert log_time(body, CTX) is None


@pytest.mark.parametrize(
    ("line", "boot", "zone", "expected", "message"),
    [
        (
            "[ 7063.247407] Memory cgroup out of memory: Killed",
            at(2025, 11, 18),
            UTC,
            at(2025, 11, 18, 1, 57, 43, 247407),
            "Memory cgroup out of memory: Killed",
        ),
        (
            "[  119.156884@1] detect_demo[2510]: unhandled",
            at(2025, 11, 18),
            UTC,
            at(2025, 11, 18, 0, 1, 59, 156884),
            "detect_demo[2510]: unhandled",
        ),
        ("[ 7063.247407] x", None, UTC, None, "x"),
        (
            "4,1234,5678901,-;NVRM: Xid (PCI:0000:01:00): 79",
            at(2025, 11, 18),
            UTC,
            at(2025, 11, 18, 0, 0, 5, 678901),
            "NVRM: Xid (PCI:0000:01:00): 79",
        ),
        (
            "[Thu Oct 10 03:06:53 2024] pt_main_thread[1]: segfault at",
            None,
            ZoneInfo("Europe/Berlin"),
            at(2024, 10, 10, 1, 6, 53),
            "pt_main_thread[1]: segfault at",
        ),
        ("Nov 18 02:10:00 gb-1 kernel: NVRM: Xid", None, ZoneInfo("Asia/Tokyo"), at(2025, 11, 17, 17, 10), "NVRM: Xid"),
        (
            "Nov 15 23:09:30 host kernel: [  518.050606] Out of memory: Killed",
            None,
            UTC,
            at(2025, 11, 15, 23, 9, 30),
            "Out of memory: Killed",
        ),
        (
            "2026-07-08T10:01:32+0000 kernel: mte_test[2263]: unhandled",
            None,
            UTC,
            at(2026, 7, 8, 10, 1, 32),
            "mte_test[2263]: unhandled",
        ),
        (
            "2025-12-15T09:30:52.967224+00:00 gb-r09-c03 kernel: mlx5_core x: Link DOWN",
            None,
            UTC,
            at(2025, 12, 15, 9, 30, 52, 967224),
            "mlx5_core x: Link DOWN",
        ),
    ],
)
def test_kernel_families(line, boot, zone, expected, message) -> None:
    ctx = ClockContext(reference=REF, node_zone=zone, boot_time=boot)
    assert kernel_time(line, ctx) == (expected, message)
