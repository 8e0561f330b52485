"""One timed zarr-python read, the reference side of the benchmark.

    /usr/bin/python3 bench/zarrread.py KIND WHERE ARRAY [T | SELECTION]

KIND is dir (WHERE a directory store), zip (WHERE a zip file) or s3 (WHERE
bucket/prefix on the MinIO of $AWS_ENDPOINT_URL, read through S3Store).
Without T it reads the whole array and writes it to /dev/null, as
zarr.open_group(...)[ARRAY][...].tofile('/dev/null'); with T it reads the
2-D slice ARRAY[T]; with a SELECTION of indices and colons such as ":,40,7"
it reads ARRAY[:, 40, 7] (a time series at a point). Prints the seconds from just before open_group to the
end of the read: interpreter start-up and imports are not counted.
"""

import sys
import time

import zarr


def main():
    kind, where, name = sys.argv[1:4]
    t = sys.argv[4] if len(sys.argv) > 4 else None
    if t is not None:
        t = tuple(slice(None) if i == ":" else int(i) for i in t.split(",")) if "," in t else int(t)
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
