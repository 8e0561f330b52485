"""Writes object arrays (dtype "|O") with zarr-python, and what it reads back.

Usage: gen_vlen.py OUTDIR

OUTDIR/ds is a zarr-python 2 group holding arrays of variable-length
strings, bytes and JSON/MessagePack objects (and an xarray dataset with
string coordinates under xr/). OUTDIR/expected.json maps each array path to
the array as zarr-python reads it, in the form nczarrfs' data.json gives it:
nested lists by shape, str as JSON strings, bytes as base64 strings, NaN and
infinities as the strings "NaN", "Infinity" and "-Infinity". OUTDIR/bad.json
maps the arrays nczarrfs must refuse to why: "corrupt" (a chunk whose
item count is wrong) or "unsupported" (the pickle object codec).
"""
import base64
import json
import math
import os
import sys
import warnings

import numpy as np
import pandas as pd
import xarray as xr
import zarr
from numcodecs import JSON, VLenUTF8, MsgPack, Pickle, Zlib

warnings.simplefilter("ignore")


def plain(v):
    if isinstance(v, np.ndarray):
        return [plain(x) for x in v]
    if isinstance(v, list):
        return [plain(x) for x in v]
    if isinstance(v, (bytes, np.bytes_)):
        return base64.b64encode(bytes(v)).decode("ascii")
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
    return v


def main():
    out = sys.argv[1]
    path = os.path.join(out, "ds")
    g = zarr.open_group(path, mode="w")
    words = ["", "a", "bé", "中文", "\U0001F600 x", "<&>", 'q"\\', "\n\t\x01"]

    # dtype=str: vlen-utf8, fill "0" as zarr-python writes it; the last
    # chunk is partial and the tail is never written (fill).
    a = g.create_dataset("str1", shape=(11,), chunks=(4,), dtype=str)
    a[:7] = words[:7]
    # Two dimensions, edge chunks, one chunk missing, a fill of its own.
    a = g.create_dataset("str2", shape=(5, 7), chunks=(2, 3), dtype=object,
                         object_codec=VLenUTF8(), fill_value="fill")
    v = np.array([[words[(i * 7 + j) % len(words)] for j in range(7)] for i in range(5)], dtype=object)
    a[:4, :] = v[:4, :]
    a[4, :3] = v[4, :3]
    # Fortran order: vlen codecs store a chunk in its memory order.
    for codec, name in [(VLenUTF8(), "strF"), (JSON(), "jsonF"), (MsgPack(), "msgpackF")]:
        a = g.create_dataset(name, shape=(4, 5), chunks=(3, 2), dtype=object,
                             object_codec=codec, order="F", fill_value=None)
        a[...] = np.array([["r%dc%d" % (i, j) for j in range(5)] for i in range(4)], dtype=object)
    # Bytes, with a compressor after the object codec; fill null.
    a = g.create_dataset("bytes", shape=(6,), chunks=(4,), dtype=bytes,
                         fill_value=None, compressor=Zlib(level=1))
    a[:5] = [b"", b"\x00\xff", b"abc", bytes(range(256)), b"x" * 3]
    # Mixed objects through JSON and MsgPack, fill null.
    mixed = np.empty(7, dtype=object)
    mixed[:] = ["s", 1, 2.5, None, True, [1, "two"], {"k": [False], "a": -(2 ** 40)}]
    for codec, name in [(JSON(), "json"), (MsgPack(), "msgpack")]:
        a = g.create_dataset(name, shape=(9,), chunks=(4,), dtype=object,
                             object_codec=codec, fill_value=None)
        a[:7] = mixed
    nonfinite = np.empty(3, dtype=object)
    nonfinite[:] = [float("nan"), float("inf"), -float("inf")]
    a = g.create_dataset("json_nonfinite", shape=(3,), chunks=(3,), dtype=object,
                         object_codec=JSON(), fill_value=None)
    a[:] = nonfinite
    # Zero-dimensional.
    a = g.create_dataset("scalar", shape=(), dtype=str, fill_value=None)
    a[...] = "only"
    # Nothing written: every element is the fill.
    g.create_dataset("empty", shape=(2, 2), chunks=(1, 2), dtype=str, fill_value="none")
    # A zero-length dimension.
    g.create_dataset("zerolen", shape=(0, 3), chunks=(1, 3), dtype=str)
    # Nested chunk keys.
    a = g.create_dataset("nested", shape=(3, 2), chunks=(2, 2), dtype=str,
                         dimension_separator="/", fill_value=None)
    a[...] = np.array([["a", "b"], ["c", "d"], ["e", "f"]], dtype=object)
    # A corrupted chunk.
    a = g.create_dataset("corrupt", shape=(4,), chunks=(2,), dtype=str, compressor=None)
    a[...] = ["a", "b", "c", "d"]
    with open(os.path.join(path, "corrupt", "1"), "r+b") as f:
        f.write(b"\x07")  # item count 7 instead of 2
    # An object codec nczarrfs does not decode.
    a = g.create_dataset("pickled", shape=(2,), chunks=(2,), dtype=object,
                         object_codec=Pickle(), fill_value=None)
    a[...] = ["a", "b"]

    # xarray string coordinates and variables.
    ds = xr.Dataset({"v": (("name",), np.arange(3.0)),
                     "label": (("name",), np.array(["x", "yy", "zzz"], dtype=object))},
                    coords={"name": pd.Index(["a", "bé", "c"], dtype=object)})
    ds.to_zarr(os.path.join(path, "xr"), mode="w")

    expected = {}
    root = zarr.open_group(path, mode="r")
    for p, arr in root.arrays(recurse=True):
        p = arr.path
        if arr.dtype != object or p in ("corrupt", "pickled"):
            continue
        v = arr[...]
        expected[p] = plain(v.tolist() if v.ndim else v[()])
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f)
    with open(os.path.join(out, "bad.json"), "w") as f:
        json.dump({"corrupt": "corrupt", "pickled": "unsupported"}, f)


main()
