"""The one error type the CLI turns into a clean one-line message and exit code 2."""


class YolocostError(Exception):
    """A problem the user can fix (bad config, bad data, unreachable server).

    The message is a single line that names what is wrong and where; the CLI prints it
    as `error: <message>` and exits with status 2, never with a traceback.
    """

    exit_code = 2

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))


class ConfigError(YolocostError):
    """The configuration file is missing, malformed or holds a bad value."""


class DataError(YolocostError):
    """Input data would make a figure wrong (NaN, duplicates, unpriced GPU model, ...)."""
