"""Configuration: every key has a default; a bad file names itself, the key and what was expected."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurm_hooks.config import Config, ConfigError, load_config
from slurm_hooks.config.parse import parse_config

EXAMPLE = Path(__file__).parent.parent / "deploy" / "config.example.yaml"


def test_defaults() -> None:
    cfg = Config()
    assert (cfg.host_root, cfg.state_dir) == ("/", "/run/slurm-hooks")
    assert cfg.annotation.field == "admin_comment"


def test_documented_example_is_the_defaults() -> None:
    """deploy/config.example.yaml documents every key with its default value."""
    cfg = load_config(EXAMPLE)
    assert cfg == Config(source=str(EXAMPLE))


def test_full_file(tmp_path: Path) -> None:
    site = tmp_path / "site-rules.yaml"
    site.write_text("rules: []\n")
    cfg = parse_config(
        """
host_root: /host
state_dir: /tmp/state
ncore_sources:
  - {type: file, path: /etc/ncore-release}
  - {type: command, argv: [/usr/local/bin/ncore, --version]}
budgets: {prolog_s: 4, nvml_call_s: 0.5}
annotation: {field: comment, mode: shadow}
rule_files: [SITE]
""".replace("SITE", str(site)),
        "t.yaml",
    )
    assert cfg.host_root == "/host" and cfg.budgets.prolog_s == 4.0 and cfg.budgets.epilog_s == 30.0
    assert cfg.ncore_sources[1].argv == ("/usr/local/bin/ncore", "--version")
    assert cfg.annotation.mode == "shadow" and cfg.rule_files == (str(site),)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("hostroot: /x", "unknown key 'hostroot'"),
        ("budgets: {prolog: 3}", "unknown key 'budgets.prolog'"),
        ("budgets: {prolog_s: soon}", "key 'budgets.prolog_s' must be float"),
        ("budgets: {prolog_s: -1}", "must not be negative"),
        ("annotation: {field: notes}", "key 'annotation.field' must be one of admin_comment, comment"),
        ("slurm: {backend: rest}", "key 'slurm.backend' must be one of auto, cli, pyslurm"),
        ("slurm: {backnd: cli}", "unknown key 'slurm.backnd'"),
        ("state_dir: 5", "key 'state_dir' must be str"),
        ("ncore_sources: [{type: url}]", "key 'ncore_sources.type' must be one of file, env, command"),
        ("ncore_sources: [{type: command}]", "key 'ncore_sources[0].argv' is required"),
        ("retention_days: true", "key 'retention_days' must be int"),
        ("[1, 2]", "top level must be a mapping"),
        ("a: [", "not valid YAML"),
    ],
)
def test_errors_name_file_and_key(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(text, "/etc/slurm-hooks/config.yaml")
    assert str(err.value).startswith("/etc/slurm-hooks/config.yaml: ") and message in str(err.value)


def test_env_override_and_missing_file(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("state_dir: /tmp/x\n")
    monkeypatch.setenv("SLURM_HOOKS_CONFIG", str(path))
    assert load_config().state_dir == "/tmp/x"
    monkeypatch.setenv("SLURM_HOOKS_CONFIG", str(tmp_path / "gone.yaml"))
    with pytest.raises(ConfigError, match=r"gone\.yaml: configuration file not found"):
        load_config()


def test_cache_follows_edits(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("state_dir: /tmp/one\n")
    assert load_config(path).state_dir == "/tmp/one"
    assert load_config(path).state_dir == "/tmp/one"  # second read from the JSON cache
    path.write_text("state_dir: /tmp/two-longer\n")
    assert load_config(path).state_dir == "/tmp/two-longer"
    path.write_text("budgets: {prolog_s: x}\n")
    with pytest.raises(ConfigError):
        load_config(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("budgets: {epilog_s: .nan}", "key 'budgets.epilog_s' must be a finite number"),
        ("budgets: {prolog_s: .inf}", "key 'budgets.prolog_s' must be a finite number"),
        ("budgets: {merge_wait_s: -.inf}", "key 'budgets.merge_wait_s' must be a finite number"),
        ("limits: {tar_mb: .inf}", "key 'limits.tar_mb' must be int"),
        ("limits: {line_bytes: -1}", "key 'limits.line_bytes' must not be negative"),
        ("limits: {hits: 5}", "unknown key 'limits.hits'"),
        ("budgets: " + "[" * 5000 + "]" * 5000, "not valid YAML"),
    ],
)
def test_numbers_that_are_not_numbers_are_refused(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(path) in str(err.value) and message in str(err.value)


def test_non_utf8_config_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes("log_timezone: Europe/Z\xfcrich\n".encode("latin-1"))
    with pytest.raises(ConfigError, match=r"latin1\.yaml: configuration is not UTF-8"):
        load_config(path)


def test_limits_are_read_and_cached(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("limits: {hits_per_family: 50, tar_mb: 8}\n")
    first, cached = load_config(path), load_config(path)
    assert first.limits.hits_per_family == 50 and first.limits.tar_mb == 8 and first.limits.bundle_files == 1000
    assert cached == first


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # budgets: finite, positive, bounded, and the annotator's wait inside the Epilog's budget
        ("budgets: {prolog_s: 1.0e+300}", "key 'budgets.prolog_s' must be more than 0 and at most 3600 seconds"),
        ("budgets: {epilog_s: 0}", "key 'budgets.epilog_s' must be more than 0"),
        ("budgets: {merge_wait_s: 40}", "key 'budgets.merge_wait_s' must be less than budgets.epilog_s (30)"),
        # counts and sizes: from 1
        ("limits: {line_bytes: 0}", "key 'limits.line_bytes' must be a whole number from 1"),
        ("retention_days: 0", "key 'retention_days' must be a whole number from 1"),
        ("report: {repeat_root_min: 0}", "key 'report.repeat_root_min' must be a whole number from 1"),
        # paths: absolute
        ("spool_dir: spool", "key 'spool_dir' must be an absolute path, got 'spool'"),
        ("log_file: hooks.log", "key 'log_file' must be an absolute path or empty"),
        ("ncore_sources: [{type: command, argv: [ncore]}]", "key 'ncore_sources[0].argv' must start with an absolute"),
        # files: exist and regular
        ("kernel_log_file: /dev/zero", "key 'kernel_log_file' names /dev/zero, which is not a regular file"),
        (
            "rule_files: [/nonexistent/site.yaml]",
            "key 'rule_files[0]' names /nonexistent/site.yaml, which cannot be read",
        ),
        ("rule_files: [site.yaml]", "key 'rule_files[0]' must be an absolute path"),
        # patterns compile, zones exist, keys are given once
        ("report: {rack_pattern: 'gb-r(?P<rack>'}", "key 'report.rack_pattern' is not a regular expression"),
        ("log_timezone: Mars/Olympus_Mons", "key 'log_timezone' names no known time zone"),
        ("spool_dir: /a\nspool_dir: /b", "key 'spool_dir' appears twice"),
        ("budgets: {epilog_s: 20, epilog_s: 30}", "key 'epilog_s' appears twice"),
    ],
)
def test_every_value_class_has_bounds(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(text, "/etc/slurm-hooks/config.yaml")
    assert str(err.value).startswith("/etc/slurm-hooks/config.yaml: ") and message in str(err.value)


def test_a_bad_file_falls_back_to_the_last_good_copy(tmp_path: Path, monkeypatch) -> None:
    from slurm_hooks.config import hook_config

    monkeypatch.setenv("SLURM_HOOKS_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "c.yaml"
    path.write_text("annotation: {mode: failures}\nspool_dir: /srv/spool\n")
    assert hook_config(str(path)) == (load_config(path), "")
    path.write_text("annotation: {mode: failures}\nspool_dir: /srv/spool\nbudgets: {prolog_s: 1.0e+300}\n")
    config, error = hook_config(str(path))
    assert "budgets.prolog_s" in error and str(path) in error
    assert (config.annotation.mode, config.spool_dir) == ("failures", "/srv/spool")
    assert config.source.startswith(f"{path} (last good copy, loaded ")


def test_a_bad_file_with_no_good_copy_runs_in_shadow_mode(tmp_path: Path, monkeypatch) -> None:
    from slurm_hooks.config import hook_config

    monkeypatch.setenv("SLURM_HOOKS_CACHE_DIR", str(tmp_path / "cache"))
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text("annotation: {mode: all}\n")
    load_config(good)  # another file's good copy is not this one's
    bad.write_text("annotaton: {mode: all}\n")
    config, error = hook_config(str(bad))
    assert "unknown key 'annotaton'" in error
    assert config.annotation.mode == "shadow" and "shadow" in config.source


def test_a_kernel_log_file_not_there_yet_is_accepted(tmp_path: Path) -> None:
    """kmsg-follow creates it; until then the Epilog finds no kernel lines and says so in `skipped`."""
    cfg = parse_config(f"kernel_log_file: {tmp_path / 'kernel.log'}\n", "c.yaml")
    assert cfg.kernel_log_file == str(tmp_path / "kernel.log")
