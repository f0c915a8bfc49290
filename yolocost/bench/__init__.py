"""The reference Ultralytics benchmark runner: labeled YOLO trainings for cost accounting.

`yolocost bench run` trains a model from a model yaml on a user's data yaml or a seeded
synthetic dataset, serves the job-info and training-progress series of
docs/prometheus-inputs.md for Prometheus, optionally samples its GPUs through NVML in
dcgm-exporter names, resumes a stopped run from its last.pt, and leaves a JSON run record
that `yolocost import-results` can load without Prometheus.

Torch and Ultralytics come with the `bench` extra and are imported only inside the
functions that train, so the rest of yolocost never needs them.
"""
