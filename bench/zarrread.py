"""One timed zarr-python read, the reference side of the benchmark.

    /usr/bin/python3 bench/zarrread.py KIND WHERE ARRAY [T]

KIND is dir (WHERE a directory store), zip (WHERE a zip file) or s3 (WHERE
bucket/prefix on the MinIO of $AWS_ENDPOINT_URL, read through S3Store).
Without T it reads the whole array and writes it to /dev/null, as
zarr.open_group(...)[ARRAY][...].tofile('/dev/null'); with T it reads the
2-D slice ARRAY[T]. Prints the seconds from just before open_group to the
end of the read: interpreter start-up and imports are not counted.
"""

import sys
import time

import zarr


def main():
    kind, where, name = sys.argv[1:4]
    t = int(sys.argv[4]) if len(sys.argv) > 4 else None
    if kind == "s3":
        from s3store import S3Store
        bucket, prefix = where.split("/", 1)
        store = S3Store(bucket, prefix)
    elif kind == "zip":
        store = zarr.ZipStore(where, mode="r")
    else:
        store = zarr.DirectoryStore(where)
    start = time.perf_counter()
    a = zarr.open_group(store, mode="r")[name]
    if t is None:
        a[...].tofile("/dev/null")
    else:
        a[t]
    print(f"{time.perf_counter() - start:.6f}")


if __name__ == "__main__":
    main()
