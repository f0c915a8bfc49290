"""Make Ultralytics touch no network and write nothing outside the run folder.

Ultralytics reads its switches from the environment when it is imported, so `prepare`
sets them first and then imports it: YOLO_OFFLINE=1 (no online checks), YOLO_AUTOINSTALL=0
(no pip installs), YOLO_CONFIG_DIR and MPLCONFIGDIR (settings and caches) inside the run
folder, a TrueType font where the font check looks (it downloads Arial.ttf otherwise, offline
flag or not), and settings with sync and every logging integration off. Training must also
pass amp=False: the AMP check downloads weights (see runner.train_args).

`require_extra` checks that the bench extra is installed before a run writes anything; every
module of it is imported only after that check, here or in the functions that train.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path

from ..errors import YolocostError

# settings keys that phone home or load an integration that may
INTEGRATIONS = ("sync", "clearml", "comet", "dvc", "mlflow", "raytune", "tensorboard", "wandb",
                "vscode_msg", "openvino_msg")
FONTS = ("Arial.ttf", "Arial.Unicode.ttf")  # what ultralytics' check_font asks for
# what the runner imports that only the bench extra brings (matplotlib comes with ultralytics;
# nvidia-ml-py is imported as pynvml)
EXTRA_MODULES = ("torch", "torchvision", "ultralytics", "matplotlib", "prometheus_client", "pynvml")


def require_extra() -> None:
    """Stop with one line where a module of the bench extra is missing (a core install),
    before a run creates its folder: the modules are looked up, not imported."""
    missing = [name for name in EXTRA_MODULES if not _installed(name)]
    if missing:
        raise needs_extra(f"not installed: {', '.join(missing)}")


def needs_extra(why: str) -> YolocostError:
    """The one line for a missing or broken bench extra."""
    return YolocostError(f"the benchmark runner needs the bench extra: pip install 'yolocost[bench]' ({why})")


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a finder that refuses it; a module without a spec
        return False


def environment(run_dir: Path, verbose: bool) -> dict[str, str]:
    """The variables Ultralytics, torch and matplotlib read at import, all inside run_dir."""
    cache = run_dir / ".cache"
    return {
        "YOLO_OFFLINE": "1",
        "YOLO_AUTOINSTALL": "0",
        "YOLO_VERBOSE": "True" if verbose else "False",
        "YOLO_CONFIG_DIR": str(cache / "yolo"),
        "MPLCONFIGDIR": str(cache / "matplotlib"),
        "TORCH_HOME": str(cache / "torch"),
        "XDG_CACHE_HOME": str(cache / "xdg"),
    }


def place_fonts(config_dir: Path) -> None:
    """Copy matplotlib's DejaVu Sans to where check_font looks first, under the names it asks for."""
    import matplotlib

    source = Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf"
    target = config_dir / "Ultralytics"
    target.mkdir(parents=True, exist_ok=True)
    for name in FONTS:
        if not (target / name).is_file():
            shutil.copyfile(source, target / name)


def prepare(run_dir: Path, verbose: bool = False):
    """Set the offline switches, import ultralytics, turn its settings off; returns the module."""
    require_extra()
    if "ultralytics" in sys.modules and os.environ.get("YOLO_OFFLINE") != "1":
        raise YolocostError("ultralytics was imported before the offline switches were set; run the bench "
                            "in a fresh process (`yolocost bench run`)")
    env = environment(run_dir, verbose)
    for path in (env["YOLO_CONFIG_DIR"], env["MPLCONFIGDIR"], env["TORCH_HOME"], env["XDG_CACHE_HOME"]):
        Path(path).mkdir(parents=True, exist_ok=True)
    os.environ.update(env)
    try:  # installed (require_extra) but broken: the same line
        place_fonts(Path(env["YOLO_CONFIG_DIR"]))
        import ultralytics
        from ultralytics import YOLO  # noqa: F401  (loads torch now)
        from ultralytics.utils import LOGGER, SETTINGS
    except ImportError as exc:
        raise needs_extra(str(exc)) from None
    SETTINGS.update({key: False for key in INTEGRATIONS if key in SETTINGS})
    for handler in LOGGER.handlers:  # Ultralytics logs to stdout; ours is for results only
        if hasattr(handler, "setStream"):
            handler.setStream(sys.stderr)
    return ultralytics
