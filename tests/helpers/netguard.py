"""Run `yolocost ARGS` with an audit hook that logs every network call to LOGFILE.

    python netguard.py LOGFILE ARGS...

Python raises an audit event before each socket connect, sendto and name lookup; the hook
writes the ones that leave loopback to LOGFILE, one per line, so a test can show a run made
no request even where it cannot take the network away (no root for `unshare -n`).
"""

import ipaddress
import sys

LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1", ""}


def _local(address) -> bool:
    if not isinstance(address, tuple) or not address:
        return True  # AF_UNIX paths and the like
    host = str(address[0])
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def main() -> None:
    log_path, args = sys.argv[1], sys.argv[2:]
    log = open(log_path, "a", encoding="utf-8", buffering=1)

    def hook(event: str, payload) -> None:
        if event in ("socket.connect", "socket.sendto", "socket.sendmsg") and not _local(payload[1]):
            log.write(f"{event} {payload[1]!r}\n")
        elif event in ("socket.getaddrinfo", "socket.gethostbyname") and str(payload[0]) not in LOOPBACK_NAMES:
            log.write(f"{event} {payload[0]!r}\n")

    sys.addaudithook(hook)
    from yolocost.cli import main as cli

    sys.argv = ["yolocost", *args]
    cli()


if __name__ == "__main__":
    main()
