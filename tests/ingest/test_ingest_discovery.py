"""The ingest discovers the window's series a chunk at a time, so its memory does not grow with
the window's length: every `/api/v1/series` request spans one chunk of the grain queries
(`[prometheus] chunk_hours`), the chunks are asked one after the other, and the rows stored
are those of an ingest that reads the whole window at once. And the owner lookup, which now
keeps only the labels it reads and takes label sets in parts, resolves every owner as before.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import random
from collections import Counter
from pathlib import Path

import duckdb
import pytest
from helpers.builders import sample_config

from yolocost.attribution import Attribution, pod_of
from yolocost.config import Labels, load_config
from yolocost.ingest import ingest
from yolocost.promclient import PrometheusClient

UTC = dt.timezone.utc
SMALL_HOURS = 7  # does not divide a day: chunks start at every hour of the day
TABLES = ("gpu_usage", "jobs", "training_progress", "job_results")


def _ingest(served, folder: Path, chunk_hours: int, monkeypatch) -> tuple[list[tuple[int, int]], Path]:
    """Ingest the sample's window with `chunk_hours`, in-process; returns the (start, end) of
    every series request in the order sent, and the database."""
    sample = served[0]
    folder.mkdir()
    config = load_config(sample_config(served, folder)).with_database(folder / "yc.duckdb")
    config = dataclasses.replace(config, prometheus=dataclasses.replace(config.prometheus, chunk_hours=chunk_hours))
    log = folder / "series-requests.txt"  # a file: the fetch runs in a child process
    real = PrometheusClient.series

    def series(client, match, start, end):
        with log.open("a") as fh:
            fh.write(f"{round(start)} {round(end)}\n")
        return real(client, match, start, end)

    monkeypatch.setattr(PrometheusClient, "series", series)
    sc = sample.scenario
    ingest(config, dt.datetime.fromtimestamp(sc["start"], UTC), dt.datetime.fromtimestamp(sc["end"], UTC))
    monkeypatch.undo()
    asked = [tuple(map(int, line.split())) for line in log.read_text().splitlines()]
    return asked, config.database


def _tables(db: Path) -> dict[str, list[tuple]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {t: con.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall() for t in TABLES}
    finally:
        con.close()


@pytest.mark.parametrize("store", ["prometheus", "victoriametrics"])
def test_series_are_read_a_chunk_at_a_time_and_the_rows_stay_the_same(store, request, tmp_path, monkeypatch):
    served = request.getfixturevalue("prom_sample" if store == "prometheus" else "vm_sample")
    sc = served[0].scenario
    start, end = sc["start"], sc["end"]
    size = SMALL_HOURS * 3600
    chunks = [(a, min(a + size, end)) for a in range(start, end, size)]
    assert len(chunks) > (end - start) // 86400  # more chunks than days

    asked, small = _ingest(served, tmp_path / "small", SMALL_HOURS, monkeypatch)
    assert set(asked) == set(chunks)  # no request spans more than one chunk, and every chunk is read
    per_chunk = Counter(asked)
    assert len(set(per_chunk.values())) == 1  # the same metrics for every chunk
    assert asked == sorted(asked)  # one chunk after the other: a chunk's answers go before the next is asked

    whole, big = _ingest(served, tmp_path / "big", 4 * 24, monkeypatch)
    assert set(whole) == {(start, end)}  # one chunk: the window at once, as before
    small_rows, big_rows = _tables(small), _tables(big)
    assert small_rows == big_rows
    assert len(small_rows["gpu_usage"]) == served[0].usage_rows and small_rows["jobs"]


# ---- the owner lookup: trimmed, and fed in parts


def _incarnation(s: dict) -> tuple[str, str, str]:
    return s.get("namespace", ""), s.get("pod", ""), s.get("uid", "")


class _Whole(Attribution):
    """The owner lookup as it was: every label set kept whole, the window's series at once
    (Prometheus answers in label-set order), later series' labels winning."""

    def add_pod_labels(self, series):
        for s in series:
            self.pod_labels.setdefault(_incarnation(s), {}).update(s)

    def add_container_info(self, series):
        for s in series:
            self.containers.setdefault(_incarnation(s), {})[s.get("container", "")] = s

    def add_job_info(self, series):
        for s in sorted(series, key=lambda s: sorted(s.items())):
            if s.get("job_id"):
                self.job_info.setdefault(s["job_id"], {}).update(s)


def _window(rng: random.Random, agree: bool) -> tuple[list[dict], list[dict], list[dict], list[dict]]:
    """Pods (some with two or three kube_pod_labels and container-info series, from as many
    kube-state-metrics instances; some with none of the configured labels), job-info series
    (two a job) and the dcgm label sets that name them. Unless `agree`, a pod's, container's or
    job's series disagree on their labels (each draws its own)."""
    pods, containers, infos, dcgm = [], [], [], []

    def draw(choices, memo: dict, key):
        return memo.setdefault(key, rng.choice(choices)) if agree else rng.choice(choices)

    memo: dict = {}
    for n in range(40):
        ns, pod = f"ns{n % 3}", f"pod-{n}"
        for ksm in range(1 + n % 3):  # a second and third kube-state-metrics instance
            labels = {"__name__": "kube_pod_labels", "namespace": ns, "pod": pod, "instance": f"ksm-{ksm}",
                      "uid": f"uid-{n}"}
            if n % 5:
                labels |= {"label_team": draw(["a", "b", ""], memo, ("team", n)),
                           "label_batch_kubernetes_io_job_name": f"job-{n}",
                           "label_image_tag": draw(["v1", "v2"], memo, ("tag", n))}
            labels = {k: v for k, v in labels.items() if v}
            pods.append(labels)
            for container in ("trainer", "sidecar")[: 1 + n % 2]:
                image = draw(["reg/yolo:t1", "reg/yolo:t2", "reg/yolo"], memo, ("image", n, container))
                digest = draw("ab", memo, ("digest", n, container))
                containers.append({"__name__": "kube_pod_container_info", "namespace": ns, "pod": pod,
                                   "container": container, "image": image, "instance": f"ksm-{ksm}",
                                   "image_id": f"reg/yolo@sha256:{digest * 64}"})
        dcgm.append({"UUID": f"GPU-{n}", "namespace": ns, "pod": pod, "container": rng.choice(["trainer", "other"])})
    for n in range(10):
        for copy in range(2):
            infos.append({"__name__": "yolocost_job_info", "job_id": f"slurm-{n}", "UUID": f"GPU-s{copy}",
                          "team": draw(["x", "y\0z", "y"], memo, ("jteam", n)), "owner": "ann",
                          "epochs": str(n + (copy if not agree else 0)),
                          "image_tag": draw(["", "t3"], memo, ("jtag", n)), "image_digest": "sha256:" + "c" * 64})
        dcgm.append({"UUID": f"GPU-s{n}", "hpc_job": f"slurm-{n}"})
        dcgm.append({"UUID": f"GPU-j{n}", "yolocost_owner": "job_info", "job_id": f"slurm-{n}", "batch": "16"})
    return pods, containers, [{k: v for k, v in s.items() if v} for s in infos], dcgm


def _owners(attribution: Attribution, dcgm: list[dict]) -> tuple[list, dict]:
    return [attribution.owner(labels) for labels in dcgm], attribution.jobs


def _parts(series: list[dict], rng: random.Random, parts: int) -> list[list[dict]]:
    """The series over `parts` chunks in shuffled order, each in one chunk or more (a series
    lives across chunks), each chunk in shuffled order."""
    chunks: list[list[dict]] = [[] for _ in range(parts)]
    for s in series:
        first = rng.randrange(parts)
        for k in range(first, rng.randrange(first, parts) + 1):
            chunks[k].append(s)
    for chunk in chunks:
        rng.shuffle(chunk)
    rng.shuffle(chunks)
    return chunks


LABELS = Labels(project="team", user="owner", job_id="batch.kubernetes.io/job-name")


def _in_parts(window, rng: random.Random) -> Attribution:
    pods, containers, infos, _ = window
    parted = Attribution(LABELS)
    for p, c, j in itertools.zip_longest(*(_parts(s, rng, 6) for s in (pods, containers, infos)), fillvalue=[]):
        parted.add_pod_labels(p)
        parted.add_container_info(c)
        parted.add_job_info(j)
    return parted


@pytest.mark.parametrize("seed", range(5))
def test_owners_from_trimmed_labels_in_parts_are_those_of_the_whole_window(seed):
    rng = random.Random(seed)
    window = _window(rng, agree=True)
    pods, containers, infos, dcgm = window
    assert any(pod_of(d, frozenset()) for d in dcgm)
    whole = _Whole(LABELS)
    key = lambda s: sorted(s.items())  # noqa: E731
    whole.add_pod_labels(sorted(pods, key=key))
    whole.add_container_info(sorted(containers, key=key))
    whole.add_job_info(infos)
    want = _owners(whole, dcgm)

    parted = _in_parts(window, rng)
    assert _owners(parted, dcgm) == want
    assert len(set(want[0])) > 40 and len(want[1]) > 40
    # the kept labels: what the lookup reads, nothing more
    assert {k for d in parted.pod_labels.values() for k in d} <= {"label_team", "label_owner", "label_model_type",
                                                                 "label_image_tag", "label_batch_kubernetes_io_job_name"}
    assert {k for c in parted.containers.values() for d in c.values() for k in d} == {"image", "image_id"}
    assert "__name__" not in {k for d in parted.job_info.values() for k in d}


@pytest.mark.parametrize("seed", range(5))
def test_disagreeing_series_give_the_same_owners_in_any_order(seed):
    rng = random.Random(seed)
    window = _window(rng, agree=False)
    first = _owners(_in_parts(window, rng), window[3])
    again = _owners(_in_parts(window, rng), window[3])  # other parts, another order
    assert first == again


def test_where_series_disagree_the_greatest_value_is_kept():
    parted = Attribution(LABELS)
    pod = {"namespace": "ns", "pod": "p", "label_batch_kubernetes_io_job_name": "j1"}
    parted.add_pod_labels([{**pod, "label_team": "b", "instance": "ksm-0"}])
    parted.add_pod_labels([{**pod, "label_team": "a", "instance": "ksm-1"}, {**pod, "instance": "ksm-2"}])
    container = {"namespace": "ns", "pod": "p", "container": "trainer"}
    parted.add_container_info([{**container, "image": "reg/yolo:t2", "image_id": "reg/yolo@sha256:" + "a" * 64}])
    parted.add_container_info([{**container, "image": "reg/yolo:t1", "image_id": "reg/yolo@sha256:" + "b" * 64}])
    parted.add_job_info([{"job_id": "s1", "owner": "bo", "epochs": "3"}, {"job_id": "s1", "owner": "al"}])
    assert parted.owner({"UUID": "GPU-1", "namespace": "ns", "pod": "p", "container": "trainer"}) == "j1"
    job = parted.jobs["j1"]
    assert (job.project, job.image_tag) == ("b", "t2")  # "b" > "a"; ("reg/yolo:t2", ...) > ("reg/yolo:t1", ...)
    assert parted.owner({"UUID": "GPU-2", "hpc_job": "s1"}) == "s1"
    assert (parted.jobs["s1"].user_name, parted.jobs["s1"].epochs) == ("bo", 3)
