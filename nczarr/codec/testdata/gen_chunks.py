"""Encode test chunks with numcodecs, the reference implementation.

Usage: /usr/bin/python3 gen_chunks.py OUTDIR GROUP...

GROUP is one of blosc, compressors, filters, chains, fletcher32, hdf5, bench
or all (every group but bench). fletcher32 needs python3-h5py; hdf5 also
needs the hdf5-filter-plugin package (HDF5's LZ4 and bzip2 plugins).
For every case it writes OUTDIR/NAME.enc (the encoded chunk) and
OUTDIR/NAME.raw (what numcodecs decodes it to, which is what zarr-python
would hand back as the chunk's bytes), and lists the cases in
OUTDIR/manifest.json with the codec configurations as get_config() gives them.
"""

import json
import lzma
import os
import sys

import numpy as np
import numcodecs
from numcodecs import (
    Adler32, AsType, BZ2, Base64, BitRound, Blosc, CRC32, Categorize, Delta,
    FixedScaleOffset, GZip, LZ4, LZMA, PackBits, Quantize, Shuffle, Zlib, Zstd,
)
from numcodecs.compat import ensure_bytes, ensure_ndarray

OUT = sys.argv[1]
GROUPS = set(sys.argv[2:]) or {"all"}
cases = []
rng = np.random.default_rng(20240611)


def want(group):
    return ("all" in GROUPS and group != "bench") or group in GROUPS


def dtname(dt):
    """A dtype string made safe for a file name: <f4 -> f4, >f4 -> bf4."""
    return ("b" if dt[0] == ">" else "") + dt[1:]


def emit(name, group, data, filters=(), compressor=None):
    assert all(c["name"] != name for c in cases), name
    data = np.ascontiguousarray(data)
    enc = data
    for f in filters:
        enc = f.encode(enc)
    if compressor is not None:
        enc = compressor.encode(enc)
    enc = ensure_bytes(enc) if not isinstance(enc, bytes) else enc
    dec = compressor.decode(enc) if compressor is not None else enc
    for f in reversed(filters):
        dec = f.decode(dec)
    raw = ensure_ndarray(dec).tobytes()
    assert len(raw) == data.nbytes, (name, len(raw), data.nbytes)
    with open(os.path.join(OUT, name + ".enc"), "wb") as fh:
        fh.write(enc)
    with open(os.path.join(OUT, name + ".raw"), "wb") as fh:
        fh.write(raw)
    cases.append({
        "name": name,
        "group": group,
        "filters": [f.get_config() for f in filters],
        "compressor": compressor.get_config() if compressor is not None else None,
        "size": len(raw),
    })


def emit_stored(name, group, enc, filters):
    """A case from stored bytes that no encoder produces but a decoder must
    still handle, such as out-of-range values for a narrowing astype."""
    assert all(c["name"] != name for c in cases), name
    enc = ensure_bytes(enc)
    dec = enc
    for f in reversed(filters):
        dec = f.decode(dec)
    raw = ensure_ndarray(dec).tobytes()
    with open(os.path.join(OUT, name + ".enc"), "wb") as fh:
        fh.write(enc)
    with open(os.path.join(OUT, name + ".raw"), "wb") as fh:
        fh.write(raw)
    cases.append({"name": name, "group": group, "filters": [f.get_config() for f in filters],
                  "compressor": None, "size": len(raw)})


def sample(dtype, n, kind="smooth"):
    """Deterministic test data of n elements."""
    dt = np.dtype(dtype)
    if kind == "random":
        return np.frombuffer(rng.bytes(n * dt.itemsize), dtype=dt).copy()
    if dt.kind == "f":
        return (np.sin(np.arange(n) / 50.0) * 1000).astype(dt)
    if dt.kind == "c":
        x = np.sin(np.arange(n) / 50.0) * 1000
        return (x + 1j * x[::-1]).astype(dt)
    if dt.kind in "iu":
        return (np.arange(n) * 7 % 1000).astype(dt)
    if dt.kind == "b":
        return (np.arange(n) % 3 == 0)
    if dt.kind == "S":
        return np.array([b"x%d" % (i % 97) for i in range(n)], dtype=dt)
    raise ValueError(dtype)


if want("blosc"):
    typed = {1: "|u1", 2: "<i2", 4: "<f4", 8: "<f8", 16: "<c16", 3: "|S3", 32: "|S32", 300: "|S300"}
    for cname in ["blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd"]:
        for shuffle in [Blosc.NOSHUFFLE, Blosc.SHUFFLE, Blosc.BITSHUFFLE]:
            for ts in [1, 2, 4, 8, 16, 3, 32]:
                # One block of ~20 kB, split or not by type size; an element
                # count that is not a multiple of 8 (for most type sizes)
                # exercises bit shuffle's leftovers.
                n = 20001 // ts
                for clevel, blocksize, kind in [(0, 0, "smooth"), (5, 0, "smooth"), (9, 0, "smooth"),
                                                (5, 0, "random"), (5, 4096, "smooth")]:
                    codec = Blosc(cname=cname, clevel=clevel, shuffle=shuffle, blocksize=blocksize)
                    emit(f"blosc-{cname}-s{shuffle}-t{ts}-c{clevel}-b{blocksize}-{kind}", "blosc",
                         sample(typed[ts], n, kind), compressor=codec)
            for ts in [1, 4, 16]:
                # clevel 1 picks small blocks: several, with a partial last one.
                emit(f"blosc-{cname}-s{shuffle}-t{ts}-multi", "blosc", sample(typed[ts], 150001 // ts),
                     compressor=Blosc(cname=cname, clevel=1, shuffle=shuffle))
            # Tiny buffers (memcpyed) and a single element.
            emit(f"blosc-{cname}-s{shuffle}-tiny", "blosc", sample("<i4", 20), compressor=Blosc(cname=cname, shuffle=shuffle))
            emit(f"blosc-{cname}-s{shuffle}-one", "blosc", sample("<f8", 1), compressor=Blosc(cname=cname, shuffle=shuffle))
        emit(f"blosc-{cname}-t300", "blosc", sample("|S300", 300), compressor=Blosc(cname=cname, shuffle=Blosc.SHUFFLE))

if want("compressors"):
    datasets = {
        "small": sample("<i4", 10),
        "mid": sample("<f8", 12345),
        "random": sample("|u1", 50000, "random"),
        "big": sample("<i8", 100000),
    }
    codecs = {
        "zlib1": Zlib(1), "zlib9": Zlib(9),
        "gzip1": GZip(1), "gzip9": GZip(9),
        "bz21": BZ2(1), "bz29": BZ2(9),
        "zstd1": Zstd(1), "zstd9": Zstd(9), "zstd22": Zstd(22), "zstdneg": Zstd(-5),
        "lz4": LZ4(), "lz4a10": LZ4(10),
        "lzma": LZMA(),
        "lzma-check0": LZMA(check=lzma.CHECK_NONE), "lzma-crc32": LZMA(check=lzma.CHECK_CRC32),
        "lzma-sha256": LZMA(check=lzma.CHECK_SHA256), "lzma-preset9": LZMA(preset=9),
        "lzma-alone": LZMA(format=lzma.FORMAT_ALONE),
        "lzma-raw2": LZMA(format=lzma.FORMAT_RAW, filters=[{"id": lzma.FILTER_LZMA2, "preset": 1}]),
        "lzma-raw1": LZMA(format=lzma.FORMAT_RAW, filters=[{"id": lzma.FILTER_LZMA1, "preset": 6}]),
        "base64": Base64(),
    }
    for cn, codec in codecs.items():
        for dn, data in datasets.items():
            if dn == "big" and cn.startswith(("lzma", "bz2", "zstd22")):
                continue
            emit(f"{cn}-{dn}", "compressors", data, compressor=codec)

if want("filters"):
    for es, dt in [(2, "<i2"), (4, "<f4"), (8, "<f8"), (3, "|S3"), (1, "|u1"), (16, "<c16")]:
        emit(f"shuffle-{es}", "filters", sample(dt, 1001), filters=[Shuffle(es)])
    for dt, at in [("<i1", None), ("<i2", None), ("<i4", None), ("<i8", None), ("<u2", None),
                   ("<u8", None), (">i4", None), ("<i8", "<i2"), ("<i4", "<i1"), ("<u1", "<i1"),
                   ("<f8", None), ("<f4", None), (">f8", None), ("<f2", None), ("<i4", ">i4")]:
        data = sample(dt, 2000)
        if np.dtype(dt).kind == "i":
            data = data - 300
        emit(f"delta-{dtname(dt)}-{dtname(at or dt)}",
             "filters", data, filters=[Delta(dt, at)])
    emit("delta-random-i4", "filters", sample("<i4", 999, "random"), filters=[Delta("<i4")])
    for dt, at, scale, offset in [("<f8", "<u1", 10, 1000), ("<f8", "<i2", 10.0, 0.5), ("<f4", "<u2", 100, -1000.25),
                                  ("<f8", "<f4", 3.0, 2.5), ("<f4", "<f2", 0.5, 10.0), (">f8", "<i4", 1000, 0),
                                  ("<f8", ">u2", 7, -1000), ("<i4", "<u1", 1, 1000), ("<f8", "<i8", 1e6, 0.0)]:
        data = sample(dt, 1500)
        if dt == "<i4":
            data = (np.arange(1500) % 200 + 900).astype(dt)
        if at == "<u1":
            data = (np.arange(1500) % 25).astype(dt) + 1000
        emit(f"fso-{dtname(dt)}-{dtname(at)}-{scale}-{offset}", "filters", data,
             filters=[FixedScaleOffset(offset=offset, scale=scale, dtype=dt, astype=at)])
    for digits, dt, at in [(1, "<f8", None), (3, "<f4", None), (2, "<f8", "<f4"), (5, ">f8", "<f8"), (2, "<f4", "<f2")]:
        emit(f"quantize-{digits}-{dtname(dt)}-{dtname(at or dt)}", "filters", sample(dt, 1200), filters=[Quantize(digits, dt, at)])
    for keep, dt in [(3, "<f4"), (10, "<f8"), (0, "<f4"), (23, "<f4")]:
        emit(f"bitround-{keep}-{dt[1:]}", "filters", sample(dt, 1000), filters=[BitRound(keep)])
    for enc, dec in [("<f4", "<f8"), ("<i2", "<i8"), ("<u1", "<f8"), ("<f8", "<f4"), ("<i4", "<f8"),
                     ("<f8", "<i4"), ("<f8", "<u1"), ("<i8", "<i2"), (">f4", "<f8"), ("<f2", "<f4"),
                     ("<f4", "<f2"), ("<f8", "<f2"), ("|b1", "<i4"), ("<i4", "|b1"), ("<f8", "<u8")]:
        data = sample(dec, 777)
        if np.dtype(dec).kind in "iuf" and dec not in ("<f2",):
            data = data.astype(dec)
        emit(f"astype-{dtname(enc)}-{dtname(dec)}", "filters", data, filters=[AsType(enc, dec)])
    # Casts of values out of the target's range, NaN and infinities follow
    # numpy on x86-64.
    wild = np.array([0, -0.0, 1.5, -1.5, 2.5, -2.5, 127.9, 128.0, -129.0, 255.9, 256.0, 300.7, -300.7, 32767.5,
                     65535.9, 65536.0, 2.0**31, -2.0**31 - 1, 2.0**32, 2.0**63, -2.0**63, 2.0**64, 1e20, -1e20,
                     np.nan, np.inf, -np.inf, 65504.0, 65520.0, 1e-8, 6e-8, 3e-5, 0.1, -7.0e4], dtype="<f8")
    with np.errstate(all="ignore"):
        for src in ["<f8", "<f4", ">f8", "<f2"]:
            for dst in ["|u1", "|i1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8", "<f2", "<f4", "|b1"]:
                if src == dst:
                    continue
                emit_stored(f"astype-wild-{dtname(src)}-{dtname(dst)}", "filters", wild.astype(src),
                            [AsType(src, dst)])
        ints = np.array([0, 1, -1, 127, 128, -129, 255, 256, 65535, 65536, 2**31 - 1, -2**31, 2**40 + 3,
                         -2**40 - 3, 2**53 + 1, 2**63 - 1, -2**63, 2049, 4097, 65519, 65521], dtype="<i8")
        for src in ["<i8", "<u8", ">i4", "<u2"]:
            for dst in ["|u1", "|i1", "<i2", "<u4", "<f2", "<f4", "<f8", "|b1"]:
                emit_stored(f"astype-wild-{dtname(src)}-{dtname(dst)}", "filters", ints.astype(src),
                            [AsType(src, dst)])
    for n in [1, 7, 8, 9, 1000, 1003]:
        emit(f"packbits-{n}", "filters", sample("|b1", n), filters=[PackBits()])
    labels = ["apple", "banana", "kiwi", "été", "日本語の文"]
    arr = np.array([labels[i % 5] if i % 7 else "" for i in range(500)], dtype="<U5")
    emit("categorize-U5-u1", "filters", arr, filters=[Categorize(labels, "<U5")])
    emit("categorize-U7-u2", "filters", arr.astype("<U7"), filters=[Categorize(labels, "<U7", astype="<u2")])
    emit("categorize-bigU5", "filters", arr.astype(">U5"), filters=[Categorize(labels, ">U5")])
    for name, codec in [("crc32", CRC32()), ("adler32", Adler32())]:
        for n in [0, 1, 1000, 65537]:
            emit(f"{name}-{n}", "filters", sample("|u1", n, "random"), filters=[codec])

if want("chains"):
    x = sample("<i4", 20000)
    emit("chain-delta-shuffle-zstd", "chains", x, filters=[Delta("<i4"), Shuffle(4)], compressor=Zstd(3))
    emit("chain-fso-zstd", "chains", sample("<f8", 5000),
         filters=[FixedScaleOffset(offset=0, scale=100, dtype="<f8", astype="<i4")], compressor=Zstd(1))
    emit("chain-quantize-blosc", "chains", sample("<f8", 5000), filters=[Quantize(2, "<f8")],
         compressor=Blosc("lz4", 5, Blosc.BITSHUFFLE))
    emit("chain-astype-zlib", "chains", sample("<f8", 3000), filters=[AsType("<f4", "<f8")], compressor=Zlib(5))
    emit("chain-packbits-bz2", "chains", sample("|b1", 9999), filters=[PackBits()], compressor=BZ2(9))
    labels = ["a", "bb", "ccc"]
    emit("chain-categorize-blosc", "chains", np.array([labels[i % 3] for i in range(3000)], dtype="<U3"),
         filters=[Categorize(labels, "<U3")], compressor=Blosc("zstd", 5, Blosc.SHUFFLE))
    emit("chain-crc32-delta-lz4", "chains", x, filters=[Delta("<i4", "<i2"), CRC32()], compressor=LZ4())
    emit("chain-bitround-gzip", "chains", sample("<f4", 4000), filters=[BitRound(8)], compressor=GZip(5))
    emit("chain-adler32-lzma", "chains", x, filters=[Adler32()], compressor=LZMA())
    emit("chain-fso-delta-blosc", "chains", sample("<f8", 8000),
         filters=[FixedScaleOffset(offset=0, scale=10, dtype="<f8", astype="<i4"), Delta("<i4", "<i2")],
         compressor=Blosc("zstd", 9, Blosc.SHUFFLE))
    emit("chain-none", "chains", x)

if want("fletcher32"):
    # numcodecs 0.11 has no fletcher32: HDF5 (through h5py) is the reference.
    import h5py
    path = os.path.join(OUT, "fletcher.h5")
    for n, dt in [(1000, "<i4"), (777, "|u1"), (1, "<f8"), (4097, "<i2")]:
        data = sample(dt, n, "random") if dt != "<f8" else sample(dt, n)
        with h5py.File(path, "w") as f:
            ds = f.create_dataset("v", data=data, chunks=(n,), fletcher32=True)
            mask, chunk = ds.id.read_direct_chunk((0,))
        name = f"fletcher32-{n}-{dt[1:]}"
        with open(os.path.join(OUT, name + ".enc"), "wb") as fh:
            fh.write(chunk)
        with open(os.path.join(OUT, name + ".raw"), "wb") as fh:
            fh.write(data.tobytes())
        cases.append({"name": name, "group": "fletcher32", "filters": [{"id": "fletcher32"}],
                      "compressor": None, "size": data.nbytes})
    os.remove(path)

if want("hdf5"):
    # Chunks written by HDF5 itself (h5py, and the hdf5-filter-plugin
    # package for LZ4 and bzip2), described by HDF5 filter ids and
    # parameters in pipeline order, as NCZarr may name them.
    import h5py
    path = os.path.join(OUT, "hdf5.h5")
    specs = [
        ("hdf5-lz4", sample("<i4", 100000), dict(compression=32004)),
        ("hdf5-lz4-blocks", sample("<f8", 50001), dict(compression=32004, compression_opts=(1 << 16,))),
        ("hdf5-lz4-random", sample("|u1", 70000, "random"), dict(compression=32004, compression_opts=(1 << 14,))),
        ("hdf5-bzip2", sample("<f8", 20000), dict(compression=307, compression_opts=(9,))),
        ("hdf5-deflate", sample("<i2", 30000), dict(compression="gzip", compression_opts=4)),
        ("hdf5-shuffle-deflate", sample("<f4", 30000), dict(compression="gzip", shuffle=True)),
        ("hdf5-shuffle-deflate-fletcher32", sample("<f8", 12345), dict(compression="gzip", shuffle=True, fletcher32=True)),
        ("hdf5-shuffle-lz4", sample("<i8", 9999), dict(compression=32004, shuffle=True)),
    ]
    for name, data, kw in specs:
        with h5py.File(path, "w") as f:
            ds = f.create_dataset("v", data=data, chunks=data.shape, **kw)
            plist = ds.id.get_create_plist()
            filters = []
            for i in range(plist.get_nfilters()):
                code, _flags, values, _name = plist.get_filter(i)
                filters.append({"id": int(code), "parameters": [int(v) for v in values]})
            _mask, chunk = ds.id.read_direct_chunk((0,))
            assert np.array_equal(ds[...], data), name
        with open(os.path.join(OUT, name + ".enc"), "wb") as fh:
            fh.write(chunk)
        with open(os.path.join(OUT, name + ".raw"), "wb") as fh:
            fh.write(data.tobytes())
        cases.append({"name": name, "group": "hdf5", "filters": filters, "compressor": None, "size": data.nbytes})
    os.remove(path)

if want("bench"):
    # Realistic 1 MiB chunks, and numcodecs' own decode speed on them
    # (best of several runs, blosc on one thread) for docs/codecs.md.
    import timeit
    numcodecs.blosc.set_nthreads(1)
    n = 1 << 17
    x = np.arange(n)
    temp = np.round(280 + 10 * np.sin(x / 100.0) + rng.normal(0, 0.5, n), 2)  # float64 like a model field
    counts = (1000 + np.cumsum(rng.integers(-3, 4, n))).astype("<i4")

    def bench(name, group, data, filters=(), compressor=None):
        emit(name, group, data, filters, compressor)
        case = cases[-1]
        with open(os.path.join(OUT, name + ".enc"), "rb") as fh:
            enc = fh.read()
        codec = compressor if compressor is not None else filters[0]
        loops = max(1, int(2e7 // max(case["size"], 1)))
        best = min(timeit.repeat(lambda: codec.decode(enc), number=loops, repeat=5)) / loops
        case["numcodecs_mbps"] = case["size"] / best / 1e6

    for cname in ["blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd"]:
        for shuffle in [Blosc.SHUFFLE, Blosc.BITSHUFFLE]:
            bench(f"bench-blosc-{cname}-s{shuffle}", "bench-blosc", temp,
                  compressor=Blosc(cname=cname, clevel=5, shuffle=shuffle))
    for name, codec in [("zlib", Zlib(1)), ("gzip", GZip(1)), ("bz2", BZ2(1)), ("lzma", LZMA()),
                        ("zstd", Zstd(1)), ("lz4", LZ4()), ("base64", Base64())]:
        bench(f"bench-{name}", "bench-compressors", temp, compressor=codec)
    bench("bench-shuffle", "bench-filters", temp, filters=[Shuffle(8)])
    bench("bench-delta", "bench-filters", counts, filters=[Delta("<i4")])
    bench("bench-fixedscaleoffset", "bench-filters", temp,
          filters=[FixedScaleOffset(offset=280, scale=100, dtype="<f8", astype="<i4")])
    bench("bench-quantize", "bench-filters", temp, filters=[Quantize(3, "<f8", "<f4")])
    bench("bench-astype", "bench-filters", temp, filters=[AsType("<f4", "<f8")])
    bench("bench-bitround", "bench-filters", temp.astype("<f4"), filters=[BitRound(10)])
    bench("bench-packbits", "bench-filters", (counts % 3 == 0), filters=[PackBits()])
    labels = ["low", "medium", "high"]
    bench("bench-categorize", "bench-filters", np.array(labels, dtype="<U6")[counts % 3],
          filters=[Categorize(labels, "<U6")])
    bench("bench-crc32", "bench-filters", temp, filters=[CRC32()])
    bench("bench-adler32", "bench-filters", temp, filters=[Adler32()])

with open(os.path.join(OUT, "manifest.json"), "w") as fh:
    json.dump({"cases": cases}, fh, indent=1)
