#!/usr/bin/env python3
"""Interop client: send N records to a Fluentd forward server with the
official Python logger (PyPI `fluent-logger`, module fluent.sender).

Record i (0-based) = {"message": f"{prefix}-{i}", "seq": i, "client": "python"}.
Exit 0 only if every record was emitted and the final flush succeeded.
"""
import argparse
import sys

from fluent.sender import FluentSender


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--host", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--tag", required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--prefix", default="py")
    ap.add_argument("--nanosecond", action="store_true",
                    help="send EventTime (msgpack ext type 0) instead of integer seconds")
    args = ap.parse_args()

    # The full tag goes into the sender and emit() gets label=None, so the
    # wire tag is exactly TAG (a label would be appended as "TAG.label").
    sender = FluentSender(args.tag, host=args.host, port=args.port,
                          timeout=10.0, nanosecond_precision=args.nanosecond)
    try:
        for i in range(args.count):
            record = {"message": f"{args.prefix}-{i}", "seq": i, "client": "python"}
            if not sender.emit(None, record):
                # emit() swallows socket errors; last_error holds the cause.
                print(f"send.py: emit of seq {i} failed: {sender.last_error!r}",
                      file=sys.stderr)
                return 1
    finally:
        # close() flushes anything still pending (it is only pending if a
        # send failed, and then we already return 1 above).
        sender.close()
    print(f"send.py: sent {args.count} records to {args.host}:{args.port} tag={args.tag}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
