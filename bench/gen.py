"""Writes the benchmark datasets with zarr-python (2.x) and numcodecs.

    /usr/bin/python3 bench/gen.py DIR NAME...

NAME is one of the datasets below; each is written to DIR/NAME (a zip file
or a directory store) and marked done with DIR/NAME.done, so that it is
written only when missing. Bump VERSION when a dataset changes. With
BENCH_QUICK=1 (give it a DIR of its own) the sizes are the small ones in
brackets.

arrays.zarr       one group, three 256 MiB [32 MiB] float32 arrays of shape
                  (256 [32], 512, 512), chunks (4, 256, 256): "none", "zstd"
                  (numcodecs Zstd, level 1), "blosc_lz4" (Blosc lz4,
                  clevel 5, byte shuffle). The same values in each: a smooth
                  field plus noise with 11 mantissa bits kept (numcodecs
                  BitRound), so the compressors see realistic data.
arrays.zip        arrays.zarr in a zip file, entries stored (not deflated).
big.zarr          one 4 GiB [512 MiB] float32 array "big" of shape (4096
                  [512], 512, 512), chunks (4, 256, 256), zstd, a ramp that
                  compresses well; for the memory measurement.
manyarrays.zarr   one group of 1,000 [100] small int32 arrays, no .zmetadata.
manyarraysc.zarr  the same with a consolidated .zmetadata.
manychunks.zarr   one uncompressed float32 array "a" of shape (3200 [800],
                  2000 [800]), chunks (8, 8): 100,000 [10,000] chunk objects.
walks.zarr        the arrays that readers walk across their chunks, float32
                  zstd (level 1), a smooth field plus noise as arrays.zarr's:
                  "ts" (2000 [200], 256, 256) chunked (10, 64, 64), "ts1"
                  (400 [40], 256, 256) chunked (1, 256, 256), and "col"
                  (4096 [1024], 4096 [1024]) chunked (128, 512).
"""

import os
import shutil
import sys
import zipfile

import numpy as np
import numcodecs
import zarr

VERSION = 1
QUICK = os.environ.get("BENCH_QUICK", "") not in ("", "0")

T, Y, X = (32 if QUICK else 256), 512, 512
N_ARRAYS = 100 if QUICK else 1000
N_ARRAYS_LARGE = 1000 if QUICK else 10000
MANY_CHUNKS = (800, 800) if QUICK else (3200, 2000)
BIG_T = 512 if QUICK else 4096
CHUNKS = (4, 256, 256)
KEEPBITS = 11


def compressors():
    """The codecs measured, by array name."""
    return {
        "none": None,
        "zstd": numcodecs.Zstd(level=1),
        "blosc_lz4": numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE),
    }


def field(t0, n, rng):
    """Time steps t0..t0+n of a smooth temperature-like field plus noise,
    rounded to KEEPBITS mantissa bits."""
    t = np.arange(t0, t0 + n, dtype=np.float32)[:, None, None]
    y = np.linspace(0, 2 * np.pi, Y, dtype=np.float32)[None, :, None]
    x = np.linspace(0, 4 * np.pi, X, dtype=np.float32)[None, None, :]
    v = 280 + 15 * np.cos(y) + 5 * np.sin(x + 0.05 * t) * np.cos(3 * y - 0.02 * t)
    v = v + rng.normal(0, 0.3, size=(n, Y, X)).astype(np.float32)
    return numcodecs.BitRound(keepbits=KEEPBITS).encode(v.astype("<f4")).reshape(n, Y, X)


def gen_arrays(path):
    g = zarr.open_group(zarr.DirectoryStore(path), mode="w")
    arrays = [
        g.create_dataset(name, shape=(T, Y, X), chunks=CHUNKS, dtype="<f4", compressor=c)
        for name, c in compressors().items()
    ]
    rng = np.random.default_rng(0)
    step = 16
    for t0 in range(0, T, step):
        v = field(t0, step, rng)
        for a in arrays:
            a[t0:t0 + step] = v


WALK_T = 200 if QUICK else 2000
WALK_T1 = 40 if QUICK else 400
WALK_N = 1024 if QUICK else 4096


def smooth(shape, t0, rng):
    """Rows t0.. of a smooth field of shape plus noise, rounded to
    KEEPBITS mantissa bits: an array of shape with its first axis from t0."""
    axes = np.meshgrid(*[np.arange(n, dtype=np.float32) + (t0 if d == 0 else 0)
                         for d, n in enumerate(shape)], indexing="ij", sparse=True)
    v = 280 + sum(5 * np.sin(a * (0.01 + 0.02 * d)) for d, a in enumerate(axes))
    v = v + rng.normal(0, 0.3, size=shape).astype(np.float32)
    return numcodecs.BitRound(keepbits=KEEPBITS).encode(v.astype("<f4")).reshape(shape)


def gen_walks(path):
    g = zarr.open_group(zarr.DirectoryStore(path), mode="w")
    rng = np.random.default_rng(1)
    for name, shape, chunks in [("ts", (WALK_T, 256, 256), (10, 64, 64)),
                                ("ts1", (WALK_T1, 256, 256), (1, 256, 256)),
                                ("col", (WALK_N, WALK_N), (128, 512))]:
        a = g.create_dataset(name, shape=shape, chunks=chunks, dtype="<f4",
                             compressor=numcodecs.Zstd(level=1))
        step = 200 if len(shape) == 3 else 512
        for t0 in range(0, shape[0], step):
            a[t0:t0 + step] = smooth((min(step, shape[0] - t0),) + shape[1:], t0, rng)


def gen_zip(path, src):
    """Zips the directory store src with stored (uncompressed) entries."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as z:
        for root, dirs, files in os.walk(src):
            dirs.sort()
            for f in sorted(files):
                full = os.path.join(root, f)
                z.write(full, os.path.relpath(full, src))


def gen_big(path):
    g = zarr.open_group(zarr.DirectoryStore(path), mode="w")
    shape = (BIG_T, Y, X)
    a = g.create_dataset("big", shape=shape, chunks=CHUNKS, dtype="<f4",
                         compressor=numcodecs.Zstd(level=1))
    step = 64
    ramp = (np.arange(Y * X, dtype=np.float32) % 1000).reshape(1, Y, X)
    for t0 in range(0, shape[0], step):
        a[t0:t0 + step] = np.broadcast_to(ramp + t0, (step, Y, X))


def gen_meta(path, consolidated, n=N_ARRAYS, dims=False):
    """n arrays of 10 int32; with dims, each has xarray's _ARRAY_DIMENSIONS
    (one dimension "x" for all), which xarray.open_zarr needs."""
    store = zarr.DirectoryStore(path)
    g = zarr.open_group(store, mode="w")
    for i in range(n):
        a = g.create_dataset(f"v{i:04d}", shape=(10,), chunks=(10,), dtype="<i4")
        a[:] = np.arange(i, i + 10, dtype="<i4")
        if dims:
            a.attrs["_ARRAY_DIMENSIONS"] = ["x"]
    if consolidated:
        zarr.consolidate_metadata(store)


def gen_many_chunks(path):
    g = zarr.open_group(zarr.DirectoryStore(path), mode="w")
    a = g.create_dataset("a", shape=MANY_CHUNKS, chunks=(8, 8), dtype="<f4", compressor=None)
    a[:] = np.arange(MANY_CHUNKS[0] * MANY_CHUNKS[1], dtype="<f4").reshape(MANY_CHUNKS)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    makers = {
        "arrays.zarr": gen_arrays,
        "arrays.zip": lambda p: gen_zip(p, ensure(out, "arrays.zarr", makers)),
        "big.zarr": gen_big,
        "manyarrays.zarr": lambda p: gen_meta(p, False),
        "manyarraysc.zarr": lambda p: gen_meta(p, True),
        "manychunks.zarr": gen_many_chunks,
        "manyarrays10k.zarr": lambda p: gen_meta(p, False, N_ARRAYS_LARGE),
        "xarrays.zarr": lambda p: gen_meta(p, False, dims=True),
        "xarraysc.zarr": lambda p: gen_meta(p, True, dims=True),
        "walks.zarr": gen_walks,
    }
    for name in sys.argv[2:]:
        ensure(out, name, makers)


def ensure(out, name, makers):
    """Writes out/name unless its done-marker says this VERSION wrote it."""
    path = os.path.join(out, name)
    marker = path + ".done"
    if os.path.exists(marker) and open(marker).read().strip() == str(VERSION):
        return path
    print(f"bench: writing {path}", file=sys.stderr, flush=True)
    if os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.exists(path):
        os.remove(path)
    makers[name](path)
    with open(marker, "w") as f:
        f.write(f"{VERSION}\n")
    return path


if __name__ == "__main__":
    main()
