"""`yolocost bench run` offline, killed after its first epoch and rerun: it resumes from last.pt.

The runs happen in a fresh network namespace (`unshare -n`, loopback only) where the machine
allows it, and always under helpers/netguard.py, which logs any socket call that would leave
loopback: both must show no request. HOME is an empty temporary folder that must stay empty.
"""

from __future__ import annotations

import json
import subprocess

import pytest
from helpers.benchkit import GPU_UUID, TINY, bench_env, can_unshare_net, files_under, yolocost_cmd

from yolocost.results_import import read_results_csv


@pytest.fixture(scope="module")
def resumed(bench_ready, tmp_path_factory):
    """Attempt 1 killed (SIGKILL, as a preempted job) after epoch 1; attempt 2 with the same job id."""
    root = tmp_path_factory.mktemp("resume")
    home, out, netlog = root / "home", root / "runs", root / "network.log"
    home.mkdir()
    netlog.touch()
    offline = can_unshare_net()
    env = bench_env(home, CUDA_VISIBLE_DEVICES=GPU_UUID)
    args = ("bench", "run", "--job-id", "resume-1", "--out", str(out), "--metrics-port", "0", "--project", "vision",
            "--user", "alice", *TINY)
    runs = []
    for extra in (("--stop-after-epoch", "1"), ("--gpu-sampler",)):
        # subprocess.run of yolocost_cmd, not the cli fixture: the run goes through netguard.py and unshare -n
        cmd = yolocost_cmd(*args, *extra, netlog=netlog, no_network=offline)
        runs.append(subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600))
    return runs, out / "resume-1", home, netlog, offline


def test_first_attempt_was_killed_after_epoch_one(resumed):
    first = resumed[0][0]
    assert first.returncode == -9, first.stderr  # SIGKILL: nothing ran after epoch 1
    assert "epoch 1/3" in first.stderr and "epoch 2/3" not in first.stderr


def test_rerun_resumes_at_epoch_two_and_counts_two_attempts(resumed):
    (_, second), run_dir = resumed[0], resumed[1]
    assert second.returncode == 0, second.stderr
    assert "resuming from" in second.stderr and "epoch 1/3" not in second.stderr
    assert "epoch 2/3" in second.stderr and "epoch 3/3" in second.stderr
    record = json.loads((run_dir / "yolocost-run.json").read_text())
    assert record["status"] == "finished"
    attempts = record["attempts"]
    assert [a["number"] for a in attempts] == [1, 2]
    assert attempts[0]["status"] == "interrupted" and attempts[0]["last_epoch"] == 1
    assert attempts[1]["start_epoch"] == 2 and attempts[1]["last_epoch"] == 3
    assert [r["epoch"] for r in read_results_csv(run_dir / "results.csv")] == [1, 2, 3]
    assert sorted(record["epoch_end_times"]) == ["1", "2", "3"]
    assert record["epoch_end_times"]["1"] < attempts[1]["started_at"] < record["epoch_end_times"]["2"]
    assert (run_dir / "weights" / "best.pt").is_file() and (run_dir / "args.yaml").is_file()
    assert "job resume-1 finished" in second.stdout and "2 attempt(s)" in second.stdout


def test_no_network_and_nothing_in_home(resumed):
    runs, _, home, netlog, offline = resumed
    assert netlog.read_text() == ""  # not one socket call left loopback
    assert files_under(home) == []
    if not offline:
        pytest.skip("no unshare -n here (needs root): shown by the audit hook only")


def test_gpu_sampler_without_driver_is_one_line_and_training_goes_on(resumed):
    from yolocost.bench.nvml import Nvml, NvmlUnavailable

    try:
        Nvml.open().close()
    except NvmlUnavailable:
        pass
    else:
        pytest.skip("an NVIDIA driver is present: the sampler does not fail here")
    second = resumed[0][1]
    lines = [line for line in second.stderr.splitlines() if "--gpu-sampler" in line]
    assert len(lines) == 1, second.stderr
    assert "no NVIDIA driver" in lines[0] and "training goes on" in lines[0]
    assert second.returncode == 0 and "Traceback" not in second.stderr
