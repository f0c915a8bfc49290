"""yolocost: GPU cost accounting for YOLO training on shared clusters."""

__version__ = "0.1.0"
