"""Each rule family matches the real line formats of log-signatures.md, and only those."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slurm_hooks.rules import RulePackError, load_rule_pack
from slurm_hooks.rules.pattern import any_of
from slurm_hooks.timeline.prefixes import strip_prefixes


def matches(pack, line: str, source: str = "log") -> dict[str, dict[str, str]]:
    """rule name -> captured fields, for every rule that fires on `line`."""
    body = strip_prefixes(line).body if source == "log" else line
    out = {}
    for rule in pack.rules:
        if rule.applies_to(source) and any(k in line for k in rule.keywords) and (got := rule.search(body)) is not None:
            out[rule.name] = got
    return out


@pytest.mark.parametrize(
    ("line", "source", "rule", "fields"),
    [
        # segfault evidence (§2)
        (
            "python3.14[25398]: segfault at 0 ip 0000790e37558a40 sp 00007ffc5bb5cea0 error 4 in libtorch_cpu.so[8558a40,790e2fd82000+c88e000]",
            "kernel",
            "kernel_segfault_x86",
            {"comm": "python3.14", "pid": "25398", "obj": "libtorch_cpu.so"},
        ),
        (
            "hvm[29181]: segfault at 0 ip 000055fee441d902 sp 00007ffc33889d48 error 6 in hvm[55fee43eb000+143000] likely on CPU 0 (core 0, socket 0)",
            "kernel",
            "kernel_segfault_x86",
            {"pid": "29181"},
        ),
        (
            "mte_test[2263]: unhandled exception: DABT (lower EL), ESR 0x0000000092000051, synchronous tag check fault in mte_test[b847a9c80000+1000]",
            "kernel",
            "kernel_segfault_arm64",
            {"comm": "mte_test", "esr": "0x0000000092000051"},
        ),
        (
            "detect_demo[2510]: unhandled level 2 translation fault (11) at 0x00000010, esr 0x92000006",
            "kernel",
            "kernel_segfault_arm64_old",
            {"sig": "11"},
        ),
        (
            "traps: python3[4411] general protection fault ip:7f3b2a1c4a40 sp:7ffc5bb5cea0 error:0",
            "kernel",
            "kernel_general_protection",
            {"pid": "4411"},
        ),
        ("Fatal Python error: Segmentation fault", "log", "faulthandler_segfault", {}),
        (" 93: !!!!!!! Segfault encountered !!!!!!!", "log", "tvmffi_segfault_banner", {}),
        (
            "[c608-061:2760180:0:2760180] Caught signal 11 (Segmentation fault: address not mapped to object at address 0x400581d86000)",
            "log",
            "ucx_caught_sigsegv",
            {"host": "c608-061"},
        ),
        (
            "[default0]:[megatron_cicd:1610 :0:1610] Caught signal 11 (Segmentation fault: address not mapped to object at address (nil))",
            "log",
            "ucx_caught_sigsegv",
            {"host": "megatron_cicd"},
        ),
        (
            "srun: error: nid006549: task 0: Segmentation fault (core dumped)",
            "log",
            "srun_task_segfault",
            {"node": "nid006549", "tasks": "0"},
        ),
        (
            "srun: error: jade751: tasks 580,588,596: Segmentation fault",
            "log",
            "srun_task_segfault",
            {"tasks": "580,588,596"},
        ),
        (
            "/var/spool/slurmd/job00191/slurm_script: line 31: 86298 Segmentation fault      (core dumped) regenie222",
            "log",
            "batch_shell_segfault",
            {"pid": "86298"},
        ),
        (
            "E1223 05:18:02.971000 3304089 site-packages/torch/distributed/elastic/multiprocessing/api.py:882] failed (exitcode: -11) local_rank: 0 (pid: 3304209) of binary: /usr/bin/python3.12",
            "log",
            "torchrun_child_sigsegv",
            {"local_rank": "0", "pid": "3304209"},
        ),
        (
            "  traceback : Signal 11 (SIGSEGV) received by PID 3304209",
            "log",
            "torchrun_child_sigsegv",
            {"spid": "3304209"},
        ),
        # crash location (§0)
        (
            '93:   File "<unknown>", line 0, in crc32_16bytes(void const*, unsigned long, unsigned int)',
            "log",
            "crc_chain_frame",
            {"func": "crc32_16bytes"},
        ),
        (
            " 6  /usr/local/lib/python3.12/dist-packages/torch/lib/libtorch_cpu.so(mz_zip_writer_add_mem_ex_v2+0x3c8) [0x40003ed9e308]",
            "log",
            "crc_chain_frame",
            {"func": "mz_zip_writer_add_mem_ex_v2"},
        ),
        (
            '  File "/opt/conda/lib/python3.8/site-packages/torch/serialization.py", line 853 in _save',
            "log",
            "crc_chain_frame",
            {},
        ),
        (
            '  File "/workspace/megatron/training/checkpointing.py", line 402 in save_checkpoint',
            "log",
            "checkpoint_writer_frame",
            {"func": "save_checkpoint"},
        ),
        # checkpoint markers
        (
            " 0: saving checkpoint at iteration    2000 to /lustre/ckpt in torch format",
            "log",
            "checkpoint_save_start",
            {},
        ),
        (
            " 0:   successfully saved checkpoint from iteration    2000 to /lustre/ckpt",
            "log",
            "checkpoint_save_end",
            {},
        ),
        # NCCL (§1)
        (
            "[rank7]:[E816 01:45:40.183009389 ProcessGroupNCCL.cpp:607] [Rank 7] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=80078, OpType=BROADCAST, NumelIn=5056, NumelOut=5056, Timeout(ms)=600000) ran for 600026 milliseconds before timing out.",
            "log",
            "nccl_watchdog_timeout",
            {"pg_rank": "7", "timeout_ms": "600000", "ran_for_ms": "600026", "seq": "80078"},
        ),
        (
            "[E ProcessGroupNCCL.cpp:737] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=469508, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1802212 milliseconds before timing out.",
            "log",
            "nccl_watchdog_timeout",
            {"pg_rank": "1", "ran_for_ms": "1802212"},
        ),
        (
            "[rank144]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 144] Heartbeat monitor timed out! Process will be terminated after dumping debug info. workMetaList_.size()=1",
            "log",
            "nccl_heartbeat_timeout",
            {"pg_rank": "144"},
        ),
        (
            "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
            "log",
            "nccl_error_code",
            {"code": "ncclRemoteError"},
        ),
        (
            "a100-st-p4d24xlarge-22:183006:183220 [1] misc/socket.cc:538 NCCL WARN Net : Connection closed by remote peer a100.x<47861>",
            "log",
            "nccl_socket_peer_gone",
            {},
        ),
        (
            "[rank0]:[E122 07:39:51.324142902 ProcessGroupNCCL.cpp:1515] [PG 3 Rank 0] Process group watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered",
            "log",
            "cuda_error",
            {},
        ),
        # fabric
        (
            "...-48:34050:34121 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : port error",
            "log",
            "ib_port_error",
            {},
        ),
        (
            "[2025-12-15 09:30:52] gb-r09-c03:1402720:1403031 [0] transport/net_ib.cc:101 NCCL WARN NET/IB : mlx5_2:1 Got async event : port error",
            "log",
            "ib_port_error",
            {"node": "gb-r09-c03", "dev": "mlx5_2:1"},
        ),
        (
            "kp-ddp-worker-0:3468:3905 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer 10.216.210.236<54862> with status=12 opcode=0 len=0 vendor err 129 (Recv)",
            "log",
            "ib_completion_error",
            {"peer": "10.216.210.236", "node": "kp-ddp-worker-0"},
        ),
        (
            "node201:127799:127863 [0] transport/net_ib.cc:101 NCCL WARN NET/IB : mlx5_0:1 Got async event : local access violation work queue error",
            "log",
            "ib_async_event",
            {"dev": "mlx5_0:1"},
        ),
        ("mlx5_core 0010:03:00.0 mlx5_2: Port: 1 Link DOWN", "kernel", "kernel_ib_link_down", {}),
        (
            "nvidia-nvswitch3: SXid (PCI:0000:4e:00.0): 12028, Fatal, Link 32 egress",
            "kernel",
            "nvswitch_sxid_fatal",
            {"sxid": "12028"},
        ),
        # Xid (§3)
        (
            "NVRM: Xid (PCI:0000:91:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
            "kernel",
            "nvrm_xid",
            {"xid": "79", "bdf": "0000:91:00"},
        ),
        (
            "NVRM: Xid (PCI:0008:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)",
            "kernel",
            "nvrm_xid",
            {"xid": "154"},
        ),
        (
            "NVRM: Xid (PCI:0000:01:00): 94, pid=7062, Contained: CE User Channel (0x9). RST: No, D-RST: No",
            "kernel",
            "nvrm_xid",
            {"xid": "94", "pid": "7062"},
        ),
        ("NVRM: GPU 0000:91:00.0: GPU has fallen off the bus.", "kernel", "gpu_fallen_off_bus", {"xid": "79"}),
        # OOM (§4)
        (
            "Memory cgroup out of memory: Killed process 19289 (memcg_process) total-vm:2676kB, anon-rss:84kB, file-rss:1468kB, shmem-rss:4kB, UID:0 pgtables:40kB oom_score_adj:0",
            "kernel",
            "kernel_oom_kill",
            {"pid": "19289", "comm": "memcg_process"},
        ),
        (
            "slurmstepd: error: Detected 1 oom_kill event in StepId=440575.0. Some of the step tasks have been OOM Killed.",
            "log",
            "slurm_oom_event",
            {"step": "440575.0"},
        ),
        (
            "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=191.batch cgroup.",
            "log",
            "slurm_oom_event",
            {"step": "191.batch"},
        ),
        ("srun: error: nid001277: tasks 1-3: Out Of Memory", "log", "srun_task_oom", {"tasks": "1-3"}),
        (
            "slurmstepd: Job 6398 exceeded memory limit (50385312 > 49152000), being killed",
            "log",
            "slurm_memory_limit",
            {},
        ),
        # Slurm ended the job (§2.6)
        (
            "slurmstepd: error: *** JOB 494583 ON n1 CANCELLED AT 2024-04-20T09:09:37 DUE TO TIME LIMIT ***",
            "log",
            "slurm_time_limit",
            {},
        ),
        (
            "slurmstepd: *** JOB 830329 CANCELLED AT 2018-08-06T17:21:44 DUE TO TIME LIMIT on n447 ***",
            "log",
            "slurm_time_limit",
            {},
        ),
        (
            "slurmstepd: error: *** STEP 557341.0 ON c4-n12 CANCELLED AT 2025-03-11T13:26:25 DUE TO PREEMPTION ***",
            "log",
            "slurm_preemption",
            {},
        ),
        (
            "slurmstepd: error: *** JOB 123 ON h1 CANCELLED AT 2025-12-20T04:11:02 DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***",
            "log",
            "slurm_node_failure",
            {"on": "h1"},
        ),
        ("srun: error: Node failure on gb-r03-c07", "log", "srun_node_failure", {"node": "gb-r03-c07"}),
        (
            "slurmstepd: error: *** STEP 3.0 ON c1 CANCELLED AT 2025-02-13T15:47:35 ***",
            "log",
            "slurm_cancelled",
            {"node": "c1"},
        ),
        # context
        (
            "srun: error: gb-r03-c07: tasks 8,10-11: Aborted (core dumped)",
            "log",
            "srun_task_exit",
            {"tasks": "8,10-11"},
        ),
        ("INFO: task python3:66001 blocked for more than 122 seconds.", "kernel", "kernel_hung_task", {"secs": "122"}),
        ("nfs: server filer01 not responding, still trying", "kernel", "kernel_storage_timeout", {"server": "filer01"}),
    ],
)
def test_rule_matches_real_line(pack, line, source, rule, fields) -> None:
    found = matches(pack, line, source)
    assert rule in found, f"{rule} did not match; matched {sorted(found)}"
    for key, value in fields.items():
        assert found[rule].get(key) == value


@pytest.mark.parametrize(
    "line",
    [
        "config: segfault_handler=True crash_on_segfault=False",
        "gb-r06-c03:1520100:1520100 [0] NCCL INFO NCCL_IB_TIMEOUT set by environment to 22.",
        "[ft] heartbeat watchdog: last step 0.76s ago (hang threshold 900s, NCCL timeout 600s)",
        "slurmstepd: error: *** STEP 2243671.21 ON nid006549 CANCELLED AT 2025-12-17T12:59:34 DUE TO TASK FAILURE ***",
        "srun: error: nid006550: task 3: Terminated",
        "mlx5_core 0000:03:00.0 mlx5_0: Port: 1 Link ACTIVE",
        "nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context, skipping further processing",
        "[1235733.431527] nvidia-nvswitch3: SXid (PCI:0000:4e:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error (First)",
    ],
)
def test_harmless_lines_are_no_fault(pack, line) -> None:
    faults = [
        name
        for name in matches(pack, line, "log") | matches(pack, line, "kernel")
        if next(r for r in pack.rules if r.name == name).role in ("primary", "symptom")
    ]
    assert faults == []


def test_operator_rules_replace_disable_and_add(tmp_path: Path) -> None:
    extra = tmp_path / "site.yaml"
    extra.write_text("""
rules:
  - name: checkpoint_save_start
    family: checkpoint_start
    role: marker
    source: log
    keywords: ["CKPT-BEGIN"]
    pattern: 'CKPT-BEGIN'
  - name: nccl_error_code
    enabled: false
  - name: site_gpu_health
    family: xid
    role: primary
    source: kernel
    keywords: ["gpu-health: FAIL"]
    pattern: 'gpu-health: FAIL xid=(?P<xid>\\d+)'
advice:
  gpu_xid: ["call the site GPU team for {node}"]
""")
    pack = load_rule_pack([extra])
    names = {r.name for r in pack.rules}
    assert "nccl_error_code" not in names and "site_gpu_health" in names
    assert matches(pack, "CKPT-BEGIN step 5")["checkpoint_save_start"] == {}
    assert "checkpoint_save_start" not in matches(pack, "saving checkpoint at iteration 5")
    assert matches(pack, "gpu-health: FAIL xid=79", "kernel")["site_gpu_health"] == {"xid": "79"}
    assert [a.text for a in pack.advice["gpu_xid"]] == ["call the site GPU team for {node}"]
    assert pack.advice["cancelled"]  # untouched labels keep the shipped advice


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("rules: [ {name: x, family: segfault, role: boss, keywords: [a], pattern: a} ]", "key 'role' must be one of"),
        ("rules: [ {name: x, family: segfault, role: primary, keywords: [], pattern: a} ]", "key 'keywords'"),
        (
            "rules: [ {name: x, family: segfault, role: primary, keywords: [a], pattern: '(' } ]",
            "key 'pattern' is not a valid regex",
        ),
        ("rules: {name: x}", "key 'rules' must be a list"),
        (
            "rules: [ {name: x, family: segfault, role: primary, keywords: [a], pattern: a, priority: high} ]",
            "key 'priority'",
        ),
        ("- just a list", "top level must be a mapping"),
        ("rules: [", "not valid YAML"),
        # hostile values (issue 8 class 3)
        ("advice: {gpu_xid: ['{0}']}", "advice.gpu_xid[0]': unknown placeholder {0}"),
        ("advice: {gpu_xid: ['{node.__class__}']}", "unknown placeholder {node.__class__}"),
        ("advice: {gpu_xid: ['{node:>99999999}']}", "unknown placeholder {node:>99999999}"),
        ("advice: [a, b]", "key 'advice' must be a mapping"),
        ("advice: {gpu_xid: [[nested]]}", "key 'advice.gpu_xid[0]' must be a string or a mapping"),
        ("xid: {fatal_at_or_above: lots}", "key 'xid.fatal_at_or_above' must be an integer"),
        ("xid: {fatal: [1, two]}", "key 'xid.fatal' must be a list of integers"),
        ("ordering: {simultaneous_s: .nan}", "key 'ordering.simultaneous_s' must be a number"),
        ("ordering: {crash_merge_s: 1e300}", "key 'ordering.crash_merge_s' must be a number"),
        ("ordering: {frame_lines: .inf}", "key 'ordering.frame_lines' must be a number"),
        ("ordering: {frame_lines: -1}", "key 'ordering.frame_lines' must be a number"),
        ("ordering: {nope: 1}", "unknown key 'ordering.nope'"),
        (
            "rules: [ {name: x, family: segfault, role: primary, keywords: [a], pattern: 'a(?!b)'} ]",
            "key 'pattern' is not a valid regex: invalid perl operator",
        ),
        (
            "rules: [ {name: x, family: segfault, role: primary, keywords: [a], pattern: 'a', unless: '(b'} ]",
            "key 'unless'",
        ),
        ('rules: [ {name: x, family: segfault, role: primary, keywords: ["a\\nb"], pattern: a} ]', "one-line strings"),
        (
            "rules: [ {name: x, family: segfault, role: primary, keywords: [a], pattern: a, priority: true} ]",
            "key 'priority'",
        ),
        ("rules: [ {family: segfault} ]", "key 'name' must be a str"),
    ],
)
def test_bad_rule_file_names_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    with pytest.raises(RulePackError) as err:
        load_rule_pack([bad], strict=True)
    assert str(bad) in str(err.value) and message in str(err.value)


def test_missing_rule_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(RulePackError, match=r"nope\.yaml: cannot read rule file"):
        load_rule_pack([tmp_path / "nope.yaml"], strict=True)


# ------------------------------------------------------------- hostile rule files (issue 8 class 3)
RULE = "rules: [ {name: x, family: segfault, role: primary, keywords: [abc], pattern: 'abc'} ]\n"


def test_non_utf8_rule_file_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes("advice: {gpu_xid: ['caf\xe9']}".encode("latin-1"))
    with pytest.raises(RulePackError, match=r"latin1\.yaml: rule file is not UTF-8"):
        load_rule_pack([bad], strict=True)


def test_hooks_leave_a_bad_file_out_whole_and_say_so(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(RULE + "ordering: {simultaneous_s: .nan}\n")
    good = tmp_path / "good.yaml"
    good.write_text("advice: {gpu_xid: ['site advice for {node}']}\n")
    pack = load_rule_pack([bad, good])  # the hooks' default: never raise
    assert "x" not in {r.name for r in pack.rules}  # nothing of the bad file, not even its valid rule
    assert pack.ordering.simultaneous_s == 2.0
    assert [a.text for a in pack.advice["gpu_xid"]] == ["site advice for {node}"]
    assert pack.sources[-1] == str(good) and len(pack.skipped) == 1 and str(bad) in pack.skipped[0]


def test_catastrophic_operator_pattern_is_accepted_and_fast(tmp_path: Path) -> None:
    extra = tmp_path / "site.yaml"
    extra.write_text(
        "rules: [ {name: evil, family: task_host, role: context, keywords: [ZZZ], pattern: '^(.*)*(.*)*ZZZ$'} ]\n"
    )
    rule = next(r for r in load_rule_pack([extra], strict=True).rules if r.name == "evil")
    assert rule.search("a" * 8192 + "ZZZ") == {} and rule.search("a" * 100_000) is None  # instant with RE2


def test_unless_excludes_what_the_pattern_would_take(pack) -> None:
    assert "ib_async_event" in matches(
        pack, "host:1:2 [0] NCCL WARN NET/IB : mlx5_0:1 Got async event : GID table change"
    )
    got = matches(pack, "host:1:2 [0] NCCL WARN NET/IB : mlx5_0:1 Got async event : port error")
    assert "ib_port_error" in got and "ib_async_event" not in got


def test_advice_fills_names_only() -> None:
    from slurm_hooks.rules.advice import MAX_VALUE, fill

    assert (
        fill("on {node}, rank {rank}; {0} {node.__class__} {node:>99999999} {{x}}", {"node": "n1", "rank": 3})
        == "on n1, rank 3; {0} {node.__class__} {node:>99999999} {{x}}"
    )
    assert fill("{driver}", {}) == "unknown"
    assert fill("{node}", {"node": "x" * 10_000}) == "x" * MAX_VALUE


def test_a_left_out_rule_file_shows_in_the_diagnosis(tmp_path: Path) -> None:
    from slurm_hooks.bundle import load_bundle
    from slurm_hooks.diagnose import diagnose

    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"\xff\xfe not utf-8")
    pack = load_rule_pack([bad])
    got = diagnose(load_bundle(Path(__file__).parent.parent / "slurm_hooks/examples/cdmm-checkpoint-segfault"), pack)
    assert got.label == "cdmm_checkpoint_segfault"
    assert any("bad.yaml: rule file is not UTF-8" in s for s in got.skipped)


_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=12),
    st.sampled_from(["{0}", "{node.__class__}", "a(?!b)", "(", "^(.*)*$", "primary", "log", "xid"]),
)
_KEYS = st.sampled_from(
    [
        "rules",
        "advice",
        "xid",
        "ordering",
        "name",
        "family",
        "role",
        "source",
        "keywords",
        "pattern",
        "unless",
        "fields",
        "priority",
        "enabled",
        "fatal",
        "fatal_at_or_above",
        "simultaneous_s",
        "frame_lines",
        "gpu_xid",
        "version",
    ]
)
_DOCS = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_KEYS, inner, max_size=5)),
    max_leaves=25,
)


# Each example loads the whole shipped pack (~40 ms): a tenth of the profile's budget, at least 30.
@settings(max_examples=max(30, settings.default.max_examples // 10))
@given(_DOCS)
def test_any_rule_file_loads_or_is_refused_by_name(tmp_path_factory, doc) -> None:
    import yaml

    path = tmp_path_factory.mktemp("r") / "site.yaml"
    path.write_text(yaml.safe_dump(doc))
    try:
        load_rule_pack([path], strict=True)
    except RulePackError as exc:
        assert str(path) in str(exc)
    pack = load_rule_pack([path])  # the hooks' way never raises
    assert pack.rules


def _bundle_lines() -> list[str]:
    """Every 3rd line of the test bundles' logs and kernel logs, and a few with non-ASCII text
    before, inside and after what the rules look for (offsets differ between bytes and characters)."""
    root = Path(__file__).parent / "bundles"
    lines = [
        line
        for path in sorted([*root.glob("*/logs/*"), *root.glob("*/kernel/*")])
        for line in path.read_text(errors="replace").splitlines()[::3]
    ]
    return [
        *lines,
        "ünï: python[48213]: segfault at 0 ip 00007f ip sp 00007f error 4 in libc.so.6[7f+19]",
        "gpu-ü1: [rank3]:  NCCL WARN Ω",
        "[1,5]<stdout>: é Traceback (most recent call last):",
        "h\u00e9te-01: NCCL INFO rank 3 nranks 8 Init COMPLETE",
    ]


def test_rule_patterns_answer_as_pyre2s_own_str_search() -> None:
    """compile_linear runs RE2 on a line's UTF-8 bytes (rules/pattern.py) for speed: the same lines
    match, with the same groups and the same end, as through pyre2's own str search; and the
    public-API path it falls back to on another pyre2 gives the same spans as the direct one."""
    import re2

    from slurm_hooks.rules import pattern as rp

    pack = load_rule_pack()
    patterns = {
        *(r.regex.pattern for r in pack.rules),
        *(r.unless.pattern for r in pack.rules if r.unless is not None),
        *(p.pattern for p in (*pack.launchers, *pack.progress)),
    }
    lines = _bundle_lines()
    matched = 0
    for text in sorted(patterns):
        ours, theirs = rp.compile_linear(text), re2.compile(text)
        compiled = re2.compile(text.encode())
        public = rp._span_finder(SimpleNamespace(search=compiled.search, groups=compiled.groups))
        direct = rp._span_finder(compiled)
        assert direct.__name__ == "direct" and public.__name__ == "public"
        for line in lines:
            got, want = ours.search(line), theirs.search(line)
            assert (got is None) == (want is None), (text, line)
            if got is not None:
                matched += 1
                assert (got.groupdict(), got.end()) == (want.groupdict(), want.end()), (text, line)
            data = line.encode()
            assert direct(data) == public(data), (text, line)
    assert matched > 200  # the lines exercise the rules, not only their misses


_PROGRESS_LIKE = [
    " iteration   500/ 100000 | ",
    "step=3 ",
    " loss",
    "LOSS",
    "{'loss': ",
    "=== 3 passed in 1.2s",
    "Ran 4 tests in 0.3s",
    "Ran ",
    "===",
]


_PROGRESS = load_rule_pack().progress


@given(st.lists(st.sampled_from(_PROGRESS_LIKE) | st.text(max_size=8), max_size=6).map("".join))
def test_any_progress_pattern_in_one_pass_is_any_of_them_searched_one_by_one(text: str) -> None:
    assert len(_PROGRESS) >= 5
    assert any_of(_PROGRESS)(text) == any(p.search(text) is not None for p in _PROGRESS)
