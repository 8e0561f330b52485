"""zarr-python (2.x) over S3 with boto3, and uploads to the benchmark's MinIO.

Debian has no python3-s3fs, so fsspec's "s3://" (what zarr's FSStore would
use) is not available. S3Store is the same thing written on boto3: a
read-only zarr store whose getitems fetches the chunks of a selection
PARALLEL at a time, which is what zarr 2.x does through FSStore and s3fs
(Array._chunk_getitems calls getitems when the store has it), then decodes
them one after another in the calling thread.

The endpoint and credentials come from the environment the driver sets:
AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION.
"""

import os
from collections.abc import MutableMapping
from concurrent.futures import ThreadPoolExecutor

import boto3
import botocore.config

PARALLEL = 16


def client():
    """An S3 client for the MinIO at $AWS_ENDPOINT_URL, with connections
    for PARALLEL requests at a time."""
    return boto3.client(
        "s3",
        endpoint_url=os.environ["AWS_ENDPOINT_URL"],
        config=botocore.config.Config(
            max_pool_connections=2 * PARALLEL,
            s3={"addressing_style": "path"},
            retries={"max_attempts": 3},
        ),
    )


class S3Store(MutableMapping):
    """A read-only zarr store over the objects under bucket/prefix."""

    def __init__(self, bucket, prefix):
        self.s3 = client()
        self.bucket = bucket
        self.prefix = prefix.strip("/") + "/"
        self.pool = ThreadPoolExecutor(PARALLEL)

    def _get(self, key):
        try:
            r = self.s3.get_object(Bucket=self.bucket, Key=self.prefix + key)
        except self.s3.exceptions.NoSuchKey:
            raise KeyError(key)
        return r["Body"].read()

    def __getitem__(self, key):
        return self._get(key)

    def getitems(self, keys, on_error="omit"):
        """The objects of keys that exist, fetched PARALLEL at a time."""
        def get(key):
            try:
                return key, self._get(key)
            except KeyError:
                return key, None
        return {k: v for k, v in self.pool.map(get, keys) if v is not None}

    def __contains__(self, key):
        try:
            self.s3.head_object(Bucket=self.bucket, Key=self.prefix + key)
            return True
        except self.s3.exceptions.ClientError:
            return False

    def __iter__(self):
        pages = self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=self.prefix)
        for page in pages:
            for obj in page.get("Contents", []):
                yield obj["Key"][len(self.prefix):]

    def __len__(self):
        return sum(1 for _ in self)

    def __setitem__(self, key, value):
        raise PermissionError("S3Store is read-only")

    def __delitem__(self, key):
        raise PermissionError("S3Store is read-only")


def upload(src, bucket, prefix, workers=32):
    """Uploads the directory tree src to bucket/prefix/, workers at a time."""
    s3 = client()
    try:
        s3.create_bucket(Bucket=bucket)
    except (s3.exceptions.BucketAlreadyOwnedByYou, s3.exceptions.BucketAlreadyExists):
        pass
    files = []
    for root, _, names in os.walk(src):
        files += [os.path.join(root, n) for n in names]

    def put(path):
        key = prefix + "/" + os.path.relpath(path, src).replace(os.sep, "/")
        with open(path, "rb") as f:
            s3.put_object(Bucket=bucket, Key=key, Body=f.read())

    with ThreadPoolExecutor(workers) as pool:
        for _ in pool.map(put, files):
            pass
    return len(files)
