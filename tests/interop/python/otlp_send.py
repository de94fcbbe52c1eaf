#!/usr/bin/env python3
"""Interop client: send N numbered log records over OTLP with the
OpenTelemetry Python SDK and its exporters (PyPI `opentelemetry-sdk`,
`opentelemetry-exporter-otlp-proto-http`, `opentelemetry-exporter-otlp-proto-grpc`).

Record i (0-based): body "n=<i>", attribute n=i (an int), severity INFO,
resource service.name=SERVICE.
  --protocol http: ENDPOINT is the OTLP/HTTP base URL (http://host:port);
                   the records go to ENDPOINT/v1/logs as protobuf.
  --protocol grpc: ENDPOINT is host:port, plaintext.
Exit 0 only if every export request succeeded after the final flush.
"""
import argparse
import sys
import time

from opentelemetry._logs import SeverityNumber
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import (
    BatchLogRecordProcessor,
    LogRecordExporter,
    LogRecordExportResult,
)
from opentelemetry.sdk.resources import Resource


class Checked(LogRecordExporter):
    """Passes batches to the real exporter and remembers any failure: the
    batch processor only logs them, and this script's exit code must tell."""

    def __init__(self, inner):
        self.inner = inner
        self.failed = 0
        self.sent = 0

    def export(self, batch):
        result = self.inner.export(batch)
        if result == LogRecordExportResult.SUCCESS:
            self.sent += len(batch)
        else:
            self.failed += len(batch)
        return result

    def shutdown(self):
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


def exporter(protocol: str, endpoint: str):
    if protocol == "http":
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        return OTLPLogExporter(endpoint=endpoint.rstrip("/") + "/v1/logs", timeout=10)
    from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
    return OTLPLogExporter(endpoint=endpoint, insecure=True, timeout=10)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--protocol", choices=["http", "grpc"], required=True)
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--service", required=True, help="resource service.name")
    ap.add_argument("--count", type=int, required=True)
    args = ap.parse_args()

    checked = Checked(exporter(args.protocol, args.endpoint))
    provider = LoggerProvider(resource=Resource.create({"service.name": args.service}))
    provider.add_log_record_processor(BatchLogRecordProcessor(checked))
    logger = provider.get_logger("logferry.interop.otlp_send")
    for i in range(args.count):
        logger.emit(
            timestamp=time.time_ns(),
            severity_number=SeverityNumber.INFO,
            severity_text="INFO",
            body=f"n={i}",
            attributes={"n": i},
        )
    flushed = provider.force_flush()
    provider.shutdown()
    if not flushed or checked.failed or checked.sent != args.count:
        print(f"otlp_send: sent {checked.sent} of {args.count}, {checked.failed} failed "
              f"(flushed: {flushed})", file=sys.stderr)
        return 1
    print(f"otlp_send: sent {checked.sent} records over {args.protocol}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
