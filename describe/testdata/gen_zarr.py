#!/usr/bin/python3
"""Write the pure Zarr datasets the describe tests compare against
ncdump -h, numpy.load and gdalinfo.

Usage: /usr/bin/python3 gen_zarr.py OUTDIR

zarr-python 2.x writes them; every attribute is of a kind netcdf-c 4.9.0
reads (it fails on lists of strings and crashes on bool, string and
datetime arrays, so those are left out of "cdl" and kept in "types").
Deterministic: no clocks, no unseeded randomness.
"""

import os
import sys

import numcodecs
import numpy as np
import zarr

out = sys.argv[1]

# cdl: what ncdump -h must agree with.
g = zarr.open_group(os.path.join(out, "cdl.file"), mode="w")
g.attrs.update({
    "title": "describe fixture",
    "byte": 1, "ubyte": 200, "short": -300, "ushort": 40000, "int": 70000,
    "uint": 4294967295, "int64": -(2**40), "uint64": 2**63,
    "double": 0.1, "whole": 2.0, "tiny": 1e-5, "big": 1e300,
    "digits": 0.12345678901234567, "neg_zero": -0.0,
    "list": [300, 1], "mixed": [1, 2.5], "floats": [1.5, 2],
    "flag": True, "flags": [True, False],
    "nested": {"a": [1, 2], "b": "x", "c": {"d": None}},
    "escapes": "it's \"quoted\"\tand\\slashed\nnext line",
    "empty": "",
    "markup": "a<b && c>d", "markup_json": {"<k>": ["x&y", 1]},
})
t = g.create_dataset("temp", shape=(3, 4, 5), chunks=(2, 3, 2), dtype="<f4",
                     fill_value=np.nan, compressor=numcodecs.Zlib(level=3))
t.attrs.update({"_ARRAY_DIMENSIONS": ["time", "lat", "lon"], "units": "K", "scale": 0.5})
t[:] = np.arange(60, dtype="<f4").reshape(3, 4, 5) / 4
t[1, 2, 3] = np.nan
lat = g.create_dataset("lat", shape=(4,), chunks=(3,), dtype=">f8")
lat.attrs["_ARRAY_DIMENSIONS"] = ["lat"]
lat[:] = np.linspace(-45, 45, 4)
anon = g.create_dataset("anon", shape=(6, 2), chunks=(4, 2), dtype=">i2", fill_value=-9)
anon[:4] = np.arange(8, dtype=">i2").reshape(4, 2) - 3
sub = g.create_group("sub")
sub.attrs["level"] = 1
deep = sub.create_group("deeper")
v = sub.create_dataset("v", shape=(2, 6), chunks=(1, 6), dtype="<u4", order="F")
v.attrs["_ARRAY_DIMENSIONS"] = ["two", "six"]
v[:] = np.arange(12, dtype="<u4").reshape(2, 6) * 1000
w = deep.create_dataset("w", shape=(6,), chunks=(6,), dtype="<i8")
w[:] = np.arange(6) - 2**40
g.create_group("empty")
zarr.consolidate_metadata(zarr.DirectoryStore(os.path.join(out, "cdl.file")))

# types: arrays of every kind for the .npy and VRT checks.
g = zarr.open_group(os.path.join(out, "types.file"), mode="w")
kinds = [
    ("b1", "|b1", lambda s: (np.arange(int(np.prod(s))) % 3 == 0).reshape(s)),
    ("i1", "|i1", lambda s: (np.arange(int(np.prod(s))) - 60).astype("i1").reshape(s)),
    ("u1", "|u1", lambda s: (np.arange(int(np.prod(s))) * 7).astype("u1").reshape(s)),
    ("i2be", ">i2", lambda s: (np.arange(int(np.prod(s))) * -301).astype(">i2").reshape(s)),
    ("u2", "<u2", lambda s: (np.arange(int(np.prod(s))) * 1000).astype("<u2").reshape(s)),
    ("i4", "<i4", lambda s: (np.arange(int(np.prod(s))) * -70001).astype("<i4").reshape(s)),
    ("u4be", ">u4", lambda s: (np.arange(int(np.prod(s))) * 123457).astype(">u4").reshape(s)),
    ("i8", "<i8", lambda s: (np.arange(int(np.prod(s))) - 2**50).astype("<i8").reshape(s)),
    ("u8be", ">u8", lambda s: (np.arange(int(np.prod(s))) + 2**63).astype(">u8").reshape(s)),
    ("f2", "<f2", lambda s: (np.arange(int(np.prod(s))) / 8).astype("<f2").reshape(s)),
    ("f4be", ">f4", lambda s: (np.arange(int(np.prod(s))) / 3).astype(">f4").reshape(s)),
    ("f8", "<f8", lambda s: (np.arange(int(np.prod(s))) * np.pi).reshape(s)),
    ("c8", "<c8", lambda s: (np.arange(int(np.prod(s))) * (1 - 2j)).astype("<c8").reshape(s)),
    ("c16be", ">c16", lambda s: (np.arange(int(np.prod(s))) * (0.5 + 1j)).astype(">c16").reshape(s)),
    ("m8", "<m8[s]", lambda s: (np.arange(int(np.prod(s))) * 3600).astype("<m8[s]").reshape(s)),
    ("s3", "|S3", lambda s: np.array([b"ab%d" % (i % 10) for i in range(int(np.prod(s)))]).reshape(s)),
    ("u3be", ">U3", lambda s: np.array(["x\u00e9%d" % (i % 10) for i in range(int(np.prod(s)))], dtype=">U3").reshape(s)),
]
for shape in [(), (5,), (4, 6), (3, 4, 5)]:
    for name, dt, make in kinds:
        chunks = tuple(max(1, n // 2) for n in shape) or None
        a = g.create_dataset("d%d/%s" % (len(shape), name), shape=shape, chunks=chunks, dtype=dt)
        a[...] = make(shape)
