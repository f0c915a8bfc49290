"""`python -m yolocost`."""

from .cli import main

main()
