"""Reads, for each (dtype, fill_value) case, what zarr-python fills an array with.

Usage: gen_fills.py < cases.json > results.json

cases.json is a list of [dtype, fill_value_json_text]. For each case a
.zarray with shape [1] and no stored chunk is written to a fresh directory
store and read back with zarr.open; the single element, converted to the
form of nczarrfs' `data` file (little-endian, UTF-32 for unicode, int64 for
datetimes), is reported as hex, or the error zarr-python raised.
"""
import json
import sys
import tempfile
import warnings

import numpy as np
import zarr

warnings.simplefilter("ignore")


def element_bytes(a):
    dt = a.dtype
    if dt.kind in "Mm":
        a = a.astype(dt.newbyteorder("<")).view("<i8")
    elif dt.kind in "iufcU" and dt.byteorder not in ("<", "|", "="):
        a = a.astype(dt.newbyteorder("<"))
    elif dt.kind in "iufc" and dt.byteorder == "=" and sys.byteorder != "little":
        a = a.astype(dt.newbyteorder("<"))
    return a.tobytes()


def main():
    out = []
    for dtype, fill in json.load(sys.stdin):
        with tempfile.TemporaryDirectory() as d:
            zarray = ('{"zarr_format": 2, "shape": [1], "chunks": [1], "dtype": %s, '
                      '"compressor": null, "filters": null, "order": "C", "fill_value": %s}'
                      % (json.dumps(dtype), fill))
            with open(d + "/.zarray", "w", encoding="utf-8") as f:
                f.write(zarray)
            try:
                a = zarr.open(d, mode="r")[...]
                out.append({"hex": element_bytes(np.asarray(a)).hex()})
            except Exception as e:  # zarr refuses the metadata or the fill
                out.append({"error": "%s: %s" % (type(e).__name__, e)})
    json.dump(out, sys.stdout)


main()
