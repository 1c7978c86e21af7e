"""A config file nothing trusts (issue 27, design 1): whatever it holds, every hook starts inside its
guard, says `config_invalid` in one bounded line and runs with the last good config; commands refuse
it in one line (exit 2); a damaged JSON cache or last good copy is a miss, never a crash.

The hostile files run through the real entry points (prolog, epilog and epilog_slurmctld `main`)
in a child with RLIMIT_AS and a timeout: an alias bomb or /dev/zero that regressed would hit the
limit, not eat the machine; a FIFO that regressed would hit the timeout. Under `make reliability`
($RELIABILITY_OUT set) each case is a row of docs/reliability.md.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from slurm_hooks.config import Budgets, Config, ConfigError, hook_config, last_good_path, load_config
from slurm_hooks.config.parse import parse_config
from slurm_hooks.config.records import MESSAGE_MAX
from slurm_hooks.config.strict_yaml import MAX_DEPTH
from slurm_hooks.hooks import prolog, task_prolog
from slurm_hooks.hooks.guard import run_hook
from tests.fakes import GB200, RecordedGpu
from tests.reliability import Row, record

ROOT = Path(__file__).resolve().parent.parent
HOSTS = ROOT / "tests" / "fixtures" / "hosts"
AS_LIMIT = 1 << 30  # the child's address space: the interpreter and its imports need ~300 MB
CHILD_TIMEOUT_S = 60
JOB = "77"
# What the child runs: each hook's real `main`, one after the other, timed; then its own peak RSS.
HOOKS = f"""
import json, re, resource, sys, time
from slurm_hooks.config import hook_config
from slurm_hooks.hooks import epilog, epilog_slurmctld, prolog
from tests.fakes import GB200, RecordedGpu
if not hook_config()[1]:
    sys.exit("the case loads: the hooks would run with it, and write where it says")
runs = []
for name, call in (
    ("prolog", lambda: prolog.main({{"SLURM_JOB_ID": "{JOB}"}}, gpu=RecordedGpu(GB200))),
    ("epilog", lambda: epilog.main({{"SLURM_JOB_ID": "{JOB}", "SLURM_JOB_COMMENT": "slurm-hooks=off"}})),
    ("epilog_slurmctld", lambda: epilog_slurmctld.main({{"SLURM_JOB_ID": "{JOB}"}})),
):
    t0 = time.monotonic()
    runs.append((name, call(), time.monotonic() - t0))
peak = int(re.search(r"VmHWM:\\s+(\\d+)", open("/proc/self/status").read())[1]) / 1024
print(json.dumps({{"runs": runs, "peak_mb": peak}}))
"""


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))


def _bomb(levels: int = 9) -> str:
    """The billion laughs inside a key the config has: 9**9 strings to whoever expands the aliases."""
    anchors = ["&l0 [x, x, x, x, x, x, x, x, x]"]
    anchors += [f"&l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "log_file: [" + ", ".join(anchors) + "]\n"


def _write(text: str | bytes) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        path.unlink()
        path.write_bytes(text if isinstance(text, bytes) else text.encode())

    return make


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _dev_zero(path: Path) -> None:
    path.unlink()
    path.symlink_to("/dev/zero")  # operators link configs, so links are followed: what they reach is checked


def _sparse(path: Path) -> None:
    with path.open("r+b") as fh:
        fh.truncate(10 << 30)  # 10 GB of NUL bytes that take no disk


# (case, how the good file turns hostile, what its one line says)
CASES = [
    ("impossible date `retention_days: 2026-02-31`", _write("retention_days: 2026-02-31\n"), "retention_days"),
    ("`!!int zz`", _write("retention_days: !!int zz\n"), "line 1, column 17: not a valid !!int value"),
    ("`!!float soon` in a section", _write("budgets: {prolog_s: !!float soon}\n"), "not a valid !!float value"),
    (
        "a bad timestamp `!!timestamp 2026-13-45T99:00`",
        _write("retention_days: !!timestamp 2026-13-45T99:00\n"),
        "tag !!timestamp",
    ),
    ("`!!python/object:os.system`", _write("host_root: !!python/object:os.system {}\n"), "is not allowed"),
    ("`!!binary zz`", _write("log_file: !!binary zz\n"), "tag !!binary is not allowed"),
    ("a list as a mapping key", _write("? [a, b]\n: 1\n"), "keys must be strings"),
    ("alias bomb (9 anchors of 9 aliases, 9**9 strings)", _write(_bomb()), "aliases (*name) are not allowed"),
    ("10,000 nested lists", _write("x: " + "[" * 10_000 + "]" * 10_000 + "\n"), f"deeper than {MAX_DEPTH}"),
    ("10,000 nested mappings", _write("x: " + "{a: " * 10_000 + "1" + "}" * 10_000 + "\n"), "deeper than"),
    ("a 60 KB scalar", _write("state_dir: " + "a" * 60_000 + "\n"), "key 'state_dir'"),
    ("a 60 KB value quoted in the error", _write("log_file: [" + "'x', " * 12_000 + "]\n"), "key 'log_file'"),
    (
        "rack_pattern of 5,000 nested groups",
        _write("report: {rack_pattern: '" + "(" * 5000 + ")" * 5000 + "'}\n"),
        "rack_pattern",
    ),
    ("rack_pattern `a{4294967296}`", _write("report: {rack_pattern: '(?P<rack>a{4294967296})'}\n"), "rack_pattern"),
    ("not UTF-8", _write(b"state_dir: /srv/\xff\xfe\n"), "not UTF-8"),
    ("a NUL byte", _write(b"state_dir: /a\x00b\n"), "#x0000"),
    ("a 10 GB (sparse) file", _sparse, "larger than 64 KiB"),
    ("a FIFO", _fifo, "not a regular file"),
    ("a symlink to /dev/zero", _dev_zero, "not a regular file"),
]


@pytest.fixture
def good(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A site config that loaded once (so its last good copy exists), named by SLURM_HOOKS_CONFIG."""
    path = tmp_path / "config.yaml"
    path.write_text(
        f"log_file: {tmp_path / 'hooks.log'}\nstate_dir: {tmp_path / 'state'}\nspool_dir: {tmp_path / 'spool'}\n"
        f"metrics_file: ''\nhost_root: {HOSTS / 'gb200-cdmm-driver'}\nannotation: {{mode: failures}}\n"
    )
    monkeypatch.setenv("SLURM_HOOKS_CONFIG", str(path))
    assert load_config(path).annotation.mode == "failures"
    return path


def _log(tmp_path: Path) -> list[dict]:
    return [json.loads(line) for line in (tmp_path / "hooks.log").read_text().splitlines()]


@pytest.mark.parametrize(("case", "make", "says"), CASES, ids=[c[0] for c in CASES])
def test_every_hook_starts_with_the_last_good_config(
    tmp_path: Path, good: Path, case: str, make: Callable[[Path], None], says: str
) -> None:
    make(good)
    child = subprocess.run(
        [sys.executable, "-c", HOOKS],
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT_S,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        preexec_fn=_limited,
    )
    assert child.returncode == 0 and "Traceback" not in child.stderr, child.stderr[-3000:]
    result = json.loads(child.stdout)
    runs, slowest = result["runs"], max(r[2] for r in result["runs"])
    if os.environ.get("RELIABILITY_OUT"):
        checked = "prolog, epilog, epilog_slurmctld `main`: exit 0, one bounded `config_invalid` each, last good config"
        codes = [r[1] for r in runs] + [child.returncode]
        record(
            Row(
                f"config: {case}",
                checked,
                slowest,
                Budgets().prolog_s,
                codes,
                0,
                0,
                result["peak_mb"],
                where="unit",
                annotated="-",
            )
        )
    assert [r[1] for r in runs] == [0, 0, 0] and slowest < Budgets().prolog_s
    lines = _log(tmp_path)
    invalid = [line for line in lines if line["event"] == "config_invalid"]
    assert [line["hook"] for line in invalid] == ["prolog", "epilog", "epilog_slurmctld"]
    for line in invalid:
        assert line["error"].startswith(f"{good}: ") and says in line["error"], line["error"]
        assert len(line["error"]) <= MESSAGE_MAX + 40 and line["error"].isprintable()
        assert line["using"].startswith(f"{good} (last good copy, loaded ")
    events = [line["event"] for line in lines]
    assert "facts_recorded" in events and "opted_out" in events  # the last good config's files, not the defaults'
    assert "hook_failed" not in events and "budget_exceeded" not in events
    assert (tmp_path / "hooks.log").stat().st_size < 16 * 1024  # a few bounded lines, never the input


def _cache(tmp_path: Path) -> Path:
    return Path(os.environ["SLURM_HOOKS_CACHE_DIR"]) / "config-cache.json"


def _retyped(text: str) -> str:
    """The cache as written, under its own valid key, with a budget that is a string."""
    doc = json.loads(text)
    doc["config"]["budgets"]["prolog_s"] = "10"
    return json.dumps(doc)


@pytest.mark.parametrize(
    ("case", "damage"),
    [
        ("a JSON list", lambda _: "[]"),
        ("JSON nested 30,000 deep", lambda _: "[" * 30_000 + "]" * 30_000),
        ("a string budget under the file's own key", _retyped),
        ("a config of another layout", lambda t: t.replace('"budgets"', '"budget"')),
    ],
)
def test_a_damaged_cache_is_a_miss_never_a_crash(
    tmp_path: Path, good: Path, case: str, damage: Callable[[str], str]
) -> None:
    cache = _cache(tmp_path)
    cache.write_text(damage(cache.read_text()))
    t0 = time.monotonic()
    rc = prolog.main({"SLURM_JOB_ID": JOB}, gpu=RecordedGpu(GB200))
    seconds = time.monotonic() - t0
    if os.environ.get("RELIABILITY_OUT"):
        checked = (
            "Prolog `main`: exit 0; the cache a miss (the file parsed again, the cache rewritten), no `config_invalid`"
        )
        record(
            Row(
                f"config cache: {case}",
                checked,
                seconds,
                Budgets().prolog_s,
                [rc],
                0,
                0,
                0.0,
                where="unit",
                annotated="-",
            )
        )
    assert rc == 0
    events = [line["event"] for line in _log(tmp_path)]
    assert events == ["facts_recorded"], events  # the file itself is good: no config_invalid
    assert json.loads(cache.read_text())["config"]["budgets"]["prolog_s"] == 10.0  # parsed again, rewritten


@pytest.mark.parametrize(
    ("case", "damage"),
    [
        ("JSON nested 30,000 deep", lambda _: "[" * 30_000 + "]" * 30_000),
        ("a string budget", lambda t: t.replace('"prolog_s": 10.0', '"prolog_s": "10"')),
        ("a list", lambda _: "[1]"),
    ],
)
def test_a_damaged_last_good_copy_means_shadow_mode(good: Path, case: str, damage: Callable[[str], str]) -> None:
    kept = Path(last_good_path(str(good)))
    kept.write_text(damage(kept.read_text()))
    good.write_text("annotaton: {mode: all}\n")  # a typo: the last good copy is what the hooks would use
    config, error = hook_config(str(good))
    assert "unknown key 'annotaton'" in error and config.annotation.mode == "shadow"
    assert isinstance(config.budgets.prolog_s, float)


@pytest.mark.parametrize(
    ("command", "make"),
    [
        (["kmsg-follow"], _write(_bomb())),
        (["install-hooks", "--dest", "DEST"], _write("retention_days: 2026-02-31\n")),
        (["install-hooks", "--dest", "DEST"], _fifo),
    ],
)
def test_commands_refuse_a_hostile_config_in_one_line(
    tmp_path: Path, good: Path, command: list[str], make: Callable[[Path], None]
) -> None:
    make(good)
    argv = [a.replace("DEST", str(tmp_path / "dest")) for a in command]
    child = subprocess.run(
        [sys.executable, "-m", "slurm_hooks", *argv, "--config", str(good)],
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT_S,
        cwd=ROOT,
        preexec_fn=_limited,
    )
    assert child.returncode == 2, child.stderr[-3000:]
    assert len(child.stderr.splitlines()) == 1 and child.stderr.startswith(f"slurm-hooks: {good}: ")
    assert len(child.stderr) <= MESSAGE_MAX + 80


def test_the_task_prolog_starts_the_task_whatever_state_dir_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "config.yaml"
    path.write_bytes(b"state_dir: /tmp/a\x00b\n")  # its one-line reader takes the NUL into the path
    monkeypatch.setenv("SLURM_HOOKS_CONFIG", str(path))
    monkeypatch.setenv("SLURM_JOB_ID", JOB)
    assert task_prolog.main() == 0


def _never_returns() -> tuple[Config, str]:
    time.sleep(CHILD_TIMEOUT_S)
    return Config(), ""


def test_loading_the_config_is_inside_the_budget(tmp_path: Path) -> None:
    """A stat or read of the config that hangs (a dead NFS server) ends at the defaults' budget, said."""
    code = (
        "import sys; from slurm_hooks.config import Budgets, SHADOW_DEFAULTS; from slurm_hooks.hooks.guard import run_hook;"
        "from tests.test_config_hostile import _never_returns;"
        f"fallback = SHADOW_DEFAULTS._replace(log_file={str(tmp_path / 'hooks.log')!r}, budgets=Budgets(prolog_s=1.0));"
        "sys.exit(run_hook('prolog', {}, lambda *_: None, load=_never_returns, fallback=fallback))"
    )
    t0 = time.monotonic()
    child = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, timeout=CHILD_TIMEOUT_S, capture_output=True, text=True
    )
    assert child.returncode == 0 and time.monotonic() - t0 < CHILD_TIMEOUT_S / 2, child.stderr[-2000:]
    (line,) = _log(tmp_path)
    assert (line["event"], line["during"], line["budget_s"]) == ("budget_exceeded", "config", 1.0)


def test_a_loader_that_breaks_its_promise_still_runs_the_hook_with_the_fallback(tmp_path: Path) -> None:
    def broken() -> tuple[Config, str]:
        raise MemoryError("while saying why")

    seen: list[Config] = []
    fallback = Config(log_file=str(tmp_path / "hooks.log"), metrics_file="", state_dir=str(tmp_path / "state"))
    assert run_hook("prolog", {"SLURM_JOB_ID": JOB}, lambda config, *_: seen.append(config), broken, fallback) == 0
    assert seen == [fallback]
    (line,) = _log(tmp_path)
    assert line["event"] == "config_invalid" and line["error"] == "MemoryError: while saying why"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("host_root: !!set {a, b}\n", "tag !!set is not allowed"),
        ("host_root: !!omap [a: 1]\n", "tag !!omap is not allowed"),
        ("host_root: !local 1\n", "tag !local is not allowed"),
        ("<<: {host_root: /x}\n", "unknown key '<<'"),  # a merge key is text: no merges without aliases
        ("=: 1\n", "unknown key '='"),
        ("state_dir: !!str 5\n", "key 'state_dir' must be an absolute path, got '5'"),  # core tags are fine
        ("budgets: {prolog_s: !!bool maybe}\n", "not a valid !!bool value"),
        ("x: [&a 1, &a 2]\n", "duplicate anchor"),
        ("a: 1\n---\nb: 2\n", "expected a single document"),
    ],
)
def test_only_plain_data_is_read(text: str, says: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(text, "/etc/slurm-hooks/config.yaml")
    assert says in str(err.value) and "\n" not in str(err.value)
