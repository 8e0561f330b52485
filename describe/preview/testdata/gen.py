"""Writes the arrays the preview tests draw, with zarr-python 2, and the
pictures they must give, drawn by numpy and matplotlib's viridis from the
values zarr-python reads back.

    /usr/bin/python3 testdata/gen.py DIR

DIR/ds.zarr is the dataset; DIR/NAME.rgba the picture of each case, its
RGBA bytes row by row; DIR/cases.json lists the cases:
{"NAME": {"path", "index", "size", "height", "width", "vmin", "vmax"}}.
"""

import json
import os
import sys

import matplotlib
import numpy as np
import zarr
from matplotlib import colors

out = sys.argv[1]
g = zarr.open_group(zarr.DirectoryStore(os.path.join(out, "ds.zarr")), mode="w")
rng = np.random.default_rng(7)

# float32 with NaN, fill_value NaN, and a _FillValue of its own.
f = g.create_dataset("float", shape=(3, 40, 50), chunks=(1, 16, 16), dtype="<f4", fill_value=float("nan"))
v = rng.normal(280, 10, size=(3, 40, 50)).astype("<f4")
v[:, 5, 7] = np.nan
v[:, 10:12, 20:30] = -999
v[1, 0, 0] = 1e4
f[:] = v
f.attrs["_FillValue"] = -999.0

# int16, big-endian, one chunk never written (fill), and fill values.
i = g.create_dataset("int", shape=(30, 20), chunks=(7, 9), dtype=">i2", fill_value=-1)
iv = rng.integers(-300, 300, size=(30, 20)).astype(">i2")
iv[3, 3] = -1
iv[4, 4] = 32767
i[0:21, :] = iv[0:21, :]
i[21:, 9:] = iv[21:, 9:]
i.attrs["missing_value"] = [32767]

# A latitude that increases: north up means the picture is flipped.
lat = g.create_dataset("lat", data=np.linspace(-85, 85, 18), chunks=(18,))
lat.attrs["_ARRAY_DIMENSIONS"] = ["lat"]
lat.attrs["units"] = "degrees_north"
lon = g.create_dataset("lon", data=np.linspace(0, 350, 36), chunks=(36,))
lon.attrs["_ARRAY_DIMENSIONS"] = ["lon"]
t = g.create_dataset("lat_up", shape=(2, 18, 36), chunks=(1, 9, 36), dtype="<f8")
t[:] = np.linspace(-85, 85, 18)[None, :, None] + np.linspace(0, 10, 36)[None, None, :] + np.arange(2)[:, None, None]
t.attrs["_ARRAY_DIMENSIONS"] = ["time", "lat", "lon"]

# In a sub-group, a latitude that decreases (standard_name): not flipped.
d = g.create_group("down")
dl = d.create_dataset("lat", data=np.linspace(85, -85, 18), chunks=(18,))
dl.attrs["_ARRAY_DIMENSIONS"] = ["lat"]
dl.attrs["standard_name"] = "latitude"
dt = d.create_dataset("t", shape=(18, 36), chunks=(18, 18), dtype="<f4")
dt[:] = (np.linspace(85, -85, 18)[:, None] + np.linspace(0, 10, 36)[None, :]).astype("<f4")
dt.attrs["_ARRAY_DIMENSIONS"] = ["lat", "lon"]

# A valid range and a missing value given as a list.
vr = g.create_dataset("valid", shape=(10, 12), chunks=(5, 5), dtype="<f8")
vr[:] = np.round(np.linspace(0, 1, 120).reshape(10, 12) * 20) / 20
vr.attrs["valid_range"] = [0.2, 0.8]
vr.attrs["missing_value"] = [0.5]

# Every value the same.
g.create_dataset("flat", data=np.full((4, 5), 7, dtype="<f4"), chunks=(4, 5))

# Wider than the picture: sampled.
w = g.create_dataset("wide", shape=(300, 2000), chunks=(100, 100), dtype="u1")
w[:] = (np.arange(300)[:, None] + np.arange(2000)[None, :]) % 251

# Rows of one-row chunks: a picture of 100 rows decodes 100 chunks only.
tall = g.create_dataset("tall", shape=(2000, 30), chunks=(1, 30), dtype="<i4")
tall[:] = np.arange(60000, dtype="<i4").reshape(2000, 30)

cases = {
    "float": ("float", [0], 1024),
    "float_2": ("float", [2], 1024),
    "float_1_small": ("float", [1], 20),
    "int": ("int", [], 1024),
    "lat_up": ("lat_up", [1], 1024),
    "lat_down": ("down/t", [], 1024),
    "valid": ("valid", [], 1024),
    "flat": ("flat", [], 1024),
    "wide": ("wide", [], 100),
    "tall": ("tall", [], 100),
}
cmap = matplotlib.colormaps["viridis"]
meta = {}
for name, (path, index, size) in cases.items():
    a = zarr.open_group(zarr.DirectoryStore(os.path.join(out, "ds.zarr")), mode="r")[path]
    v = a[tuple(index) + (slice(None), slice(None))].astype(np.float64)
    h, w_ = v.shape
    oh, ow = h, w_
    if max(h, w_) > size:
        long = max(h, w_)
        oh, ow = max(h * size // long, 1), max(w_ * size // long, 1)
    rows = [(2 * k + 1) * h // (2 * oh) for k in range(oh)]
    cols = [(2 * k + 1) * w_ // (2 * ow) for k in range(ow)]
    v = v[np.ix_(rows, cols)]
    bad = ~np.isfinite(v)
    fills = [a.fill_value]
    for key in ("_FillValue", "missing_value"):
        if key in a.attrs:
            fills += list(np.atleast_1d(a.attrs[key]))
    for fv in fills:
        if fv is not None:
            bad |= v == np.array(fv).astype(a.dtype).astype(np.float64)
    lo, hi = a.attrs.get("valid_range", [-np.inf, np.inf])
    bad |= (v < lo) | (v > hi)
    vmin, vmax = v[~bad].min(), v[~bad].max()
    rgba = cmap(colors.Normalize(vmin, vmax)(np.ma.masked_array(v, bad)), bytes=True)
    dims = a.attrs.get("_ARRAY_DIMENSIONS", [])
    parent = path.rpartition("/")[0]
    if len(dims) >= 2:
        coord = zarr.open_group(zarr.DirectoryStore(os.path.join(out, "ds.zarr")), mode="r")[
            (parent + "/" if parent else "") + dims[-2]]
        if coord[-1] > coord[0]:
            rgba = np.flipud(rgba)
    with open(os.path.join(out, name + ".rgba"), "wb") as fh:
        fh.write(np.ascontiguousarray(rgba, dtype=np.uint8).tobytes())
    meta[name] = {"path": path, "index": index, "size": size, "height": oh, "width": ow,
                  "vmin": float(vmin), "vmax": float(vmax)}
with open(os.path.join(out, "cases.json"), "w") as fh:
    json.dump(meta, fh, indent=1)
