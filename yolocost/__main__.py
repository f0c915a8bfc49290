"""`python -m yolocost`."""

from . import interrupts

interrupts.install()  # before the imports below: Ctrl-C during start-up is an interrupt too

from .cli import main  # noqa: E402

main()
