"""Owner and job labels from kube-state-metrics 2.x as it really is.

The label sets are those of kube-state-metrics' internal/store/pod.go: every pod series carries
`namespace`, `pod`, `uid`; `kube_pod_container_info` adds `container`, `image_spec` (what the pod
spec asked for), `image` (what the runtime reports), `image_id` (the runtime's digest) and
`container_id`; `kube_pod_labels` adds `label_<key>` only for the keys of
`--metric-labels-allowlist=pods=[...]`, each key sanitized to [a-zA-Z0-9_] and snake-cased,
keys that then collide numbered `_conflict1`, `_conflict2`, ... in their sorted order.
dcgm-exporter's pod series carry `namespace`, `pod`, `container` and, with
--kubernetes-enable-pod-uid, `pod_uid`.
"""

from __future__ import annotations

from yolocost.attribution import Attribution, image_of, ksm_label
from yolocost.config import Labels

DIGEST_A, DIGEST_B = "sha256:" + "a" * 64, "sha256:" + "b" * 64
POD = {"namespace": "ml", "pod": "trainer-0"}
GPU = {"UUID": "GPU-1", "gpu": "0", "modelName": "NVIDIA A100-SXM4-80GB", "hostname": "n1"}


def pod_labels(uid: str, **labels: str) -> dict[str, str]:
    return {"__name__": "kube_pod_labels", **POD, "uid": uid, **labels}


def container_info(uid: str, image_spec: str, image: str, image_id: str, container: str = "train") -> dict:
    return {"__name__": "kube_pod_container_info", **POD, "uid": uid, "container": container,
            "image_spec": image_spec, "image": image, "image_id": image_id,
            "container_id": f"containerd://{uid}-{container}"}


def dcgm(**extra: str) -> dict[str, str]:
    return {**GPU, **POD, "container": "train", **extra}


# ---- finding 5: the tag the pod asked for, the digest the runtime pulled


def test_the_tag_is_the_pods_and_the_digest_the_runtimes():
    """containerd reports another tag of the same digest (`:latest`): the pod asked for
    train-yolov8-small-cu121, which is what the tag policy judges."""
    a = Attribution(Labels())
    a.add_pod_labels([pod_labels("u1", label_project="vision")])
    a.add_container_info([container_info("u1", "reg.io/yolo:train-yolov8-small-cu121", "reg.io/yolo:latest",
                                         f"reg.io/yolo@{DIGEST_A}")])
    assert a.owner(dcgm()) == "ml/trainer-0"
    job = a.jobs["ml/trainer-0"]
    assert (job.project, job.image_tag, job.image_digest) == ("vision", "train-yolov8-small-cu121", DIGEST_A)


def test_image_labels_each_where_the_other_is_missing():
    # no image_spec (an older kube-state-metrics) or an empty one: the runtime's image
    assert image_of({"image": "reg/yolo:t1", "image_id": f"reg/yolo@{DIGEST_A}"}) == ("t1", DIGEST_A)
    assert image_of({"image_spec": "", "image": "reg/yolo:t1", "image_id": f"reg/yolo@{DIGEST_A}"}) == ("t1", DIGEST_A)
    # a spec pinned by digest: its tag; its digest only where the runtime names none
    pinned = f"reg/yolo:t2@{DIGEST_B}"
    assert image_of({"image_spec": pinned, "image": "reg/yolo:latest", "image_id": f"reg/yolo@{DIGEST_A}"}) == (
        "t2", DIGEST_A)
    assert image_of({"image_spec": pinned, "image": "reg/yolo:latest", "image_id": ""}) == ("t2", DIGEST_B)
    # digest-only spec: no tag (a tag-policy violation), whatever tag the runtime shows
    assert image_of({"image_spec": f"reg/yolo@{DIGEST_B}", "image": "reg/yolo:latest",
                     "image_id": f"reg/yolo@{DIGEST_A}"}) == (None, DIGEST_A)
    # no tag at all in the spec: the runtime pulls latest
    assert image_of({"image_spec": "reg/yolo", "image": "reg/yolo:latest", "image_id": ""}) == ("latest", None)


# ---- finding 6: a pod recreated under the same name is another pod


def _recreated() -> Attribution:
    """ml/trainer-0 twice in the window: uid u1 (project vision, ann, tag t1), then u2 (project
    speech, bob, tag t2)."""
    a = Attribution(Labels())
    a.add_pod_labels([pod_labels("u1", label_project="vision", label_user="ann"),
                      pod_labels("u2", label_project="speech", label_user="bob")])
    a.add_container_info([container_info("u1", "reg/yolo:t1", "reg/yolo:t1", f"reg/yolo@{DIGEST_A}"),
                          container_info("u2", "reg/yolo:t2", "reg/yolo:t2", f"reg/yolo@{DIGEST_B}")])
    return a


def test_a_series_naming_its_pod_uid_gets_that_incarnation_and_a_job_of_its_own():
    a = _recreated()
    assert a.owner(dcgm(pod_uid="u1")) == "ml/trainer-0/u1"
    assert a.owner(dcgm(pod_uid="u2")) == "ml/trainer-0/u2"
    first, second = a.jobs["ml/trainer-0/u1"], a.jobs["ml/trainer-0/u2"]
    assert (first.project, first.user_name, first.image_tag, first.image_digest) == ("vision", "ann", "t1", DIGEST_A)
    assert (second.project, second.user_name, second.image_tag, second.image_digest) == ("speech", "bob", "t2",
                                                                                         DIGEST_B)
    assert a.warnings() == []


def test_without_pod_uid_only_the_labels_every_incarnation_shares_are_read_and_said():
    a = _recreated()
    a.add_pod_labels([pod_labels("u1", label_model_type="yolov8s"), pod_labels("u2", label_model_type="yolov8s")])
    assert a.owner(dcgm()) == "ml/trainer-0"
    job = a.jobs["ml/trainer-0"]
    # not the predecessor's project mixed with the successor's: unknown (the unlabeled bucket), and said
    assert (job.project, job.user_name, job.model_type, job.tag_known) == (None, None, "yolov8s", False)
    [line] = a.warnings()
    assert "ml/trainer-0" in line and "--kubernetes-enable-pod-uid" in line


def test_incarnations_that_agree_bill_as_before_without_a_word():
    """A StatefulSet pod recreated from the same template: one job, the job id it always had."""
    a = Attribution(Labels())
    a.add_pod_labels([pod_labels(u, label_project="vision") for u in ("u1", "u2")])
    a.add_container_info([container_info(u, "reg/yolo:t1", "reg/yolo:latest", f"reg/yolo@{DIGEST_A}")
                          for u in ("u1", "u2")])
    assert a.owner(dcgm()) == "ml/trainer-0"
    assert (a.jobs["ml/trainer-0"].project, a.jobs["ml/trainer-0"].image_tag) == ("vision", "t1")
    assert a.warnings() == []


def test_one_incarnation_keeps_its_job_id_with_or_without_pod_uid():
    for extra in ({}, {"pod_uid": "u1"}):
        a = Attribution(Labels())
        a.add_pod_labels([pod_labels("u1", label_project="vision")])
        assert a.owner(dcgm(**extra)) == "ml/trainer-0"
        assert a.jobs["ml/trainer-0"].project == "vision"


def test_the_job_id_label_still_names_the_job_of_each_incarnation():
    a = Attribution(Labels(job_id="batch.kubernetes.io/job-name"))
    a.add_pod_labels([pod_labels("u1", label_batch_kubernetes_io_job_name="run-1", label_project="vision"),
                      pod_labels("u2", label_batch_kubernetes_io_job_name="run-2", label_project="speech")])
    assert a.owner(dcgm(pod_uid="u1")) == "run-1" and a.owner(dcgm(pod_uid="u2")) == "run-2"
    assert (a.jobs["run-1"].project, a.jobs["run-2"].project) == ("vision", "speech")


# ---- finding 7: the allowlist, the label names, _conflictN


def test_label_names_as_kube_state_metrics_writes_them():
    assert ksm_label("project") == "label_project"
    assert ksm_label("batch.kubernetes.io/job-name") == "label_batch_kubernetes_io_job_name"
    assert ksm_label("app.kubernetes.io/teamName") == "label_app_kubernetes_io_team_name"  # snake case
    assert ksm_label("CostCenter") == "label_cost_center"
    assert ksm_label("GPUType") == "label_gputype"  # `_` only after a lower-case letter or digit
    assert ksm_label("v2Model") == "label_v2_model"


def test_a_camel_case_key_is_read_under_its_snake_case_name():
    a = Attribution(Labels(project="costCenter"))
    a.add_pod_labels([pod_labels("u1", label_cost_center="cc-17")])
    a.owner(dcgm())
    assert a.jobs["ml/trainer-0"].project == "cc-17"


def test_configured_keys_that_collide_are_read_from_their_conflict_suffix():
    """`team.name` and `team_name` both sanitize to team_name; sorted, `team.name` comes first
    ('.' < '_'), so kube-state-metrics writes it as label_team_name_conflict1."""
    a = Attribution(Labels(project="team_name", user="team.name"))
    a.add_pod_labels([pod_labels("u1", label_team_name_conflict1="ann", label_team_name_conflict2="vision")])
    a.owner(dcgm())
    job = a.jobs["ml/trainer-0"]
    assert (job.project, job.user_name) == ("vision", "ann")
    assert a.warnings() == []


def test_conflicts_yolocost_cannot_number_are_left_unread_and_said():
    # a key nobody configured collides with the configured one: which suffix is ours is unknowable
    a = Attribution(Labels(project="team.name"))
    a.add_pod_labels([pod_labels("u1", label_team_name_conflict1="x", label_team_name_conflict2="y")])
    a.owner(dcgm())
    assert a.jobs["ml/trainer-0"].project is None
    [line] = a.warnings()
    assert "label_team_name_conflictN" in line and "--metric-labels-allowlist=pods=[" in line
    # two configured keys share a name and the pod carries only one of them: which one?
    b = Attribution(Labels(project="team_name", user="team.name"))
    b.add_pod_labels([pod_labels("u1", label_team_name="vision")])
    b.owner(dcgm())
    assert (b.jobs["ml/trainer-0"].project, b.jobs["ml/trainer-0"].user_name) == (None, None)
    assert len(b.warnings()) == 1


def test_pods_without_any_configured_label_say_to_start_kube_state_metrics_with_the_allowlist():
    a = Attribution(Labels())
    a.add_pod_labels([pod_labels("u1"), {**pod_labels("u2"), "pod": "other"}])  # what 2.x exports by default
    a.owner(dcgm())
    message = a.missing_allowlist()
    assert message is not None and message in a.warnings()
    assert "--metric-labels-allowlist=pods=[project,user,model_type,image_tag]" in message
    # with a job id key it is allowlisted too
    b = Attribution(Labels(job_id="batch.kubernetes.io/job-name"))
    b.add_pod_labels([pod_labels("u1")])
    assert "pods=[batch.kubernetes.io/job-name,project,user,model_type,image_tag]" in b.missing_allowlist()


def test_no_allowlist_warning_where_some_pod_is_labelled_or_labels_come_another_way():
    some = Attribution(Labels())
    some.add_pod_labels([pod_labels("u1"), {**pod_labels("u2", label_project="vision"), "pod": "other"}])
    assert some.missing_allowlist() is None
    no_ksm = Attribution(Labels())  # no kube-state-metrics at all (job-info, Slurm)
    assert no_ksm.missing_allowlist() is None
    copied = Attribution(Labels())  # dcgm-exporter copies the pod labels onto its series
    copied.add_pod_labels([pod_labels("u1")])
    copied.owner(dcgm(project="vision"))
    assert copied.missing_allowlist() is None and copied.jobs["ml/trainer-0"].project == "vision"
