"""The corpus's real recordings: one batch script each, what it is built to end in, its matrix cell.

The held-out quarter is fixed by a rule chosen before recording: every case whose number is a
multiple of 4 (04, 08, ... 48), which the list's order spreads over launchers, forms, shapes and
failures. Those go to tests/corpus/heldout/real-<NN>-<slug>/, the rest to tests/corpus/real/; their
table rows and batch scripts live in tests/corpus/heldout/real-jobs/ (cases.txt), out of sight of
whoever works on the classifier, the others' here (TABLE, jobs/).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
JOBS_DIR = HERE / "jobs"
HELDOUT_JOBS = HERE.parents[1] / "corpus" / "heldout" / "real-jobs"


@dataclass(frozen=True)
class Case:
    name: str  # NN-slug: its batch script is <name>.sh
    ends: str  # truth.expected's `ends`: what the script is built to end in
    launcher: str
    framework: str
    form: str
    shape: str
    failure: str
    confounder: str = "none"
    requeue: bool = False  # the recorder requeues the job (scontrol requeue) once its first run ended
    cancel_after_s: float = 0.0  # the recorder cancels the job (scancel, as its user) this long into training

    @property
    def number(self) -> int:
        return int(self.name[:2])

    @property
    def heldout(self) -> bool:
        return self.number % 4 == 0

    @property
    def script(self) -> Path:
        return (HELDOUT_JOBS if self.heldout else JOBS_DIR) / f"{self.name}.sh"

    def matrix(self) -> dict[str, str]:
        return {
            "launcher": self.launcher,
            "framework": self.framework,
            "form": self.form,
            "shape": self.shape,
            "failure": self.failure,
            "confounder": self.confounder,
        }


# name, ends, launcher, framework, form, shape, failure, confounder (tests/corpus/README.md's
# vocabulary), act: what the recorder does to the job (requeue: `scontrol requeue` once its first
# run ended; cancel:S: `scancel` as its user S seconds into training; -: nothing)
TABLE = """
01-srun-python-segv-null-write                       crash      srun              torch      plain        many-nodes      sigsegv                  none           -
02-srun-label-bus-mmap-truncated                     crash      srun-label        torch      plain        many-nodes      sigbus                   none           -
03-srun-label-json-abort-one-node                    crash      srun-label        torch      json         one-node        sigabrt                  none           -
05-bash-exit-status-sigfpe-idiv                      crash      bash-wrapper      torch      plain        many-nodes      sigfpe                   none           -
06-bash-echo-done-bus-swallowed                      crash      bash-wrapper      torch      plain        many-nodes      sigbus                   none           -
07-srun-label-dataloader-worker-bus                  crash      srun-label        torch      plain        many-nodes      sigbus                   none           -
09-torchrun-standalone-hf-torch-terminate            crash      torchrun          hf-trainer plain        one-node        sigabrt                  none           -
10-srun-label-tqdm-sigill-kill                       crash      srun-label        torch      tqdm-ansi    many-nodes      sigill                   none           -
11-srun-json-sigfpe-kill                             crash      srun              torch      json         many-nodes      sigfpe                   none           -
13-srun-label-save-bus-r570-node                     crash      srun-label        torch      plain        one-node        sigbus                   none           -
14-srun-label-segv-long-after-save                   crash      srun-label        torch      plain        many-nodes      sigsegv                  save-long-ago  -
15-srun-label-deepspeed-segv-after-save-without-end  crash      srun-label        deepspeed  plain        many-nodes      sigsegv                  save-long-ago  -
17-srun-label-cgroup-oom-one-node                    oom        srun-label        torch      plain        one-node        cgroup-oom               none           -
18-srun-label-cgroup-oom-two-nodes                   oom        srun-label        torch      plain        many-nodes      cgroup-oom               none           -
19-srun-label-scancel-by-a-person                    cancelled  srun-label        torch      plain        many-nodes      cancelled                none           cancel:20
21-srun-kill-on-bad-exit-segv                        crash      srun-label        torch      plain        many-nodes      sigsegv                  teardown-crash -
22-srun-hang-gloo-timeout                            hang       srun-label        torch      plain        many-nodes      hang                     teardown-crash -
23-srun-label-hang-until-time-limit                  hang_limit srun-label        torch      plain        many-nodes      time-limit               none           -
25-requeue-append-segv-then-exception                exception  srun-label        torch      plain        requeued-append exception-file-not-found previous-run   requeue
26-requeue-append-exception-then-completes           success    srun-label        torch      plain        requeued-append none                     previous-run   requeue
27-requeue-self-bus-then-abort                       crash      srun-label        torch      plain        requeued-append sigabrt                  previous-run   -
29-steps-two-reuse-task-ids-segv-in-second           crash      srun-label        torch      plain        several-steps   sigsegv                  none           -
30-steps-two-exception-in-second-on-first-nodes      exception  srun-label        torch      plain        several-steps   exception-file-not-found none           -
31-steps-concurrent-one-fails-bus                    crash      srun-label        torch      plain        several-steps   sigbus                   none           -
33-torchrun-restart-survived-segv                    success    torchrun-restarts torch      plain        one-node        none                     survived-fault -
34-torchrun-restart-survived-bus-json                success    torchrun-restarts torch      json         one-node        none                     survived-fault -
35-torchrun-restart-abort-then-exception             exception  torchrun-restarts torch      plain        one-node        exception-other          previous-run   -
37-srun-label-permission-error                       exception  srun-label        torch      plain        many-nodes      exception-permission     none           -
38-srun-label-import-error-every-rank-4-nodes        exception  srun-label        torch      plain        many-nodes      exception-import-error   none           -
39-bash-exit-status-megatron-shape-error             exception  bash-wrapper      megatron   plain        many-nodes      exception-other          none           -
41-srun-label-json-chained-exception                 exception  srun-label        torch      json         many-nodes      exception-file-not-found none           -
42-srun-split-stderr-enospc-tmpfs                    exception  srun-label        torch      split-stderr many-nodes      exception-disk-full      none           -
43-srun-label-assertion-then-teardown-aborts         exception  srun-label        torch      plain        many-nodes      exception-other          teardown-crash -
45-srun-label-deepspeed-key-error-after-save         exception  srun-label        deepspeed  plain        many-nodes      exception-other          save-long-ago  -
46-srun-json-segv-every-rank-4-nodes                 crash      srun              torch      json         many-nodes      sigsegv                  none           -
47-bash-echo-done-torch-terminate-swallowed          crash      bash-wrapper      torch      plain        many-nodes      sigabrt                  none           -
49-srun-label-buffered-segv                          crash      srun-label        torch      buffered     many-nodes      sigsegv                  none           -
50-srun-one-rank-cgroup-oom                          oom        srun-label        torch      plain        one-node        cgroup-oom               none           -
51-srun-label-survived-io-error-then-key-error       exception  srun-label        torch      plain        many-nodes      exception-other          survived-fault -
53-torchrun-restart-exception-then-dataloader-bus    crash      torchrun-restarts torch      tqdm-ansi    one-node        sigbus                   previous-run   -
54-bash-exit-status-deepspeed-save-segv-r570-node    crash      bash-wrapper      deepspeed  plain        one-node        sigsegv                  none           -
55-srun-label-time-limit-then-teardown-segv          time_limit srun-label        torch      plain        many-nodes      time-limit               teardown-crash -
57-srun-exception-last-node-no-label                 exception  srun              torch      plain        many-nodes      exception-file-not-found none           -
"""


def parse(table: str) -> list[Case]:
    cases = []
    for line in table.strip().splitlines():
        if line.startswith("#"):
            continue
        name, ends, launcher, framework, form, shape, failure, confounder, act = line.split()
        cancel = float(act.split(":")[1]) if act.startswith("cancel:") else 0.0
        cases.append(Case(name, ends, launcher, framework, form, shape, failure, confounder, act == "requeue", cancel))
    return cases


def all_cases() -> list[Case]:
    """Every case in number order; the held-out ones only where their table is present."""
    heldout = HELDOUT_JOBS / "cases.txt"
    extra = parse(heldout.read_text()) if heldout.is_file() else []
    return sorted(parse(TABLE) + extra, key=lambda c: c.number)
