"""`python -m yolocost.cli`, the same as `python -m yolocost`."""

from . import main

main()
