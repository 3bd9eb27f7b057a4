"""``python guard_failpoint.py POINT -- GUARD ARGS``: the guard's own command line, halted at one moment of its quota
change so that a test can SIGKILL it exactly there.

POINT is ``<request>:<moment>``: request ``validate`` (the validate-only AlterClientQuotas) or ``apply`` (the one
that applies); moment ``before`` (nothing of it written), ``partial`` (half of its bytes written) or ``sent`` (all
written, the answer not read). At that moment the process prints ``halted at POINT`` on stdout and waits to be
killed; nothing in the guard's code changes, only what its socket writes.
"""

import os
import socket
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ALTER_CLIENT_QUOTAS = 49  # the request's api key
REQUESTS = ("validate", "apply")
MOMENTS = ("before", "partial", "sent")


def api_key(data):
    """The api key of the request ``data`` starts (size, then api key), or None."""
    view = memoryview(data)
    return int.from_bytes(view[4:6], "big") if len(view) >= 8 else None


def halt(point):
    print(f"halted at {point}", flush=True)
    while True:
        time.sleep(60)


def install(point):
    request, moment = point.split(":")
    if request not in REQUESTS or moment not in MOMENTS:
        raise SystemExit(f"POINT must be <{'|'.join(REQUESTS)}>:<{'|'.join(MOMENTS)}> (got {point})")
    wanted = REQUESTS.index(request) + 1  # the validate-only request comes first
    real_send = socket.socket.send
    seen = [0]

    def send(sock, data, *flags):
        if api_key(data) != ALTER_CLIENT_QUOTAS:
            return real_send(sock, data, *flags)
        seen[0] += 1
        if seen[0] != wanted:
            return real_send(sock, data, *flags)
        view = memoryview(data)
        if moment == "before":
            halt(point)
        if moment == "partial":
            view = view[: len(view) // 2]
        written = 0
        while written < len(view):  # a blocking write of the whole slice: the moment must be reached for sure
            sock.setblocking(True)
            written += real_send(sock, view[written:], *flags)
        halt(point)

    socket.socket.send = send


def main(argv):
    if len(argv) < 3 or argv[1] != "--":
        raise SystemExit(__doc__)
    install(argv[0])
    sys.path.insert(0, ROOT)
    from headroom_guard.cli import main as guard_main  # pylint: disable=import-outside-toplevel

    return guard_main(argv[2:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
