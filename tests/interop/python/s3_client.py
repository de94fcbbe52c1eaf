#!/usr/bin/env python3
"""S3 client for tests, with boto3 (PyPI): signed (SigV4) requests to an
S3-compatible endpoint, path-style. Credentials come from the environment
(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY; region AWS_REGION, default
us-east-1).

  s3_client.py ENDPOINT create-bucket BUCKET
  s3_client.py ENDPOINT put BUCKET KEY FILE         (FILE's bytes; - is stdin)
  s3_client.py ENDPOINT get BUCKET KEY              (the bytes to stdout)
  s3_client.py ENDPOINT list BUCKET PREFIX          (one key a line)
  s3_client.py ENDPOINT start-upload BUCKET KEY     (a multipart upload left
                                                    incomplete; prints its id)
  s3_client.py ENDPOINT abort-upload BUCKET KEY ID
  s3_client.py ENDPOINT multipart-put BUCKET KEY FILE PARTS
                                                   (FILE in PARTS parts, completed)

Exits 0 on success; on an S3 error prints `error CODE` to stderr and exits 3.
"""
import os
import sys

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError


def main() -> int:
    endpoint, cmd, *args = sys.argv[1:]
    s3 = boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name=os.environ.get("AWS_REGION", "us-east-1"),
        config=Config(s3={"addressing_style": "path"},
                      retries={"max_attempts": 1}),
    )
    try:
        if cmd == "create-bucket":
            s3.create_bucket(Bucket=args[0])
        elif cmd == "put":
            bucket, key, path = args
            data = sys.stdin.buffer.read() if path == "-" else open(path, "rb").read()
            s3.put_object(Bucket=bucket, Key=key, Body=data)
        elif cmd == "get":
            bucket, key = args
            sys.stdout.buffer.write(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
        elif cmd == "list":
            bucket, prefix = args
            for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
                for o in page.get("Contents", []):
                    print(o["Key"])
        elif cmd == "start-upload":
            bucket, key = args
            print(s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"])
        elif cmd == "abort-upload":
            bucket, key, upload_id = args
            s3.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id)
        elif cmd == "multipart-put":
            bucket, key, path, parts = args
            data = open(path, "rb").read()
            n = int(parts)
            size = -(-len(data) // n)
            upload_id = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
            done = []
            for i in range(n):
                etag = s3.upload_part(Bucket=bucket, Key=key, UploadId=upload_id,
                                      PartNumber=i + 1,
                                      Body=data[i * size:(i + 1) * size])["ETag"]
                done.append({"PartNumber": i + 1, "ETag": etag})
            out = s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id,
                                               MultipartUpload={"Parts": done})
            print(out["ETag"])
        else:
            print(f"s3_client: unknown command {cmd}", file=sys.stderr)
            return 2
    except ClientError as e:
        print(f"error {e.response['Error']['Code']}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
