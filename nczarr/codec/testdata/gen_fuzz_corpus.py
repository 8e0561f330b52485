"""Write the seed corpora of the codec fuzz targets, encoded by numcodecs.

Usage: /usr/bin/python3 gen_fuzz_corpus.py   (from anywhere)

Each seed is a small chunk that numcodecs (or HDF5, for hdf5-lz4) encoded,
written in Go's corpus format under nczarr/codec/<package>/testdata/fuzz/.
The fuzz targets read these instead of running Python in every fuzzing
worker. Re-run after changing a target's inputs; the files are committed.
"""

import os
import shutil
import struct

import numpy as np
from numcodecs import (
    BZ2, LZ4, LZMA, Adler32, AsType, Base64, Blosc, CRC32, Categorize, Delta,
    FixedScaleOffset, GZip, PackBits, Quantize, Shuffle, Zlib, Zstd,
)
from numcodecs.compat import ensure_bytes

HERE = os.path.dirname(os.path.abspath(__file__))
CODEC = os.path.dirname(HERE)
rng = np.random.default_rng(7)


def go_bytes(b):
    """A Go []byte conversion of a string literal holding b."""
    out = []
    for c in b:
        if 0x20 <= c < 0x7f and c not in (0x22, 0x5c):
            out.append(chr(c))
        else:
            out.append("\\x%02x" % c)
    return '[]byte("' + "".join(out) + '")'


def corpus(pkg, target, seeds):
    d = os.path.join(CODEC, pkg, "testdata", "fuzz", target)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for name, data in seeds:
        assert len(data) <= 4096, (target, name, len(data))
        with open(os.path.join(d, "seed-" + name), "w") as f:
            f.write("go test fuzz v1\n" + go_bytes(data) + "\n")


def enc(codec, data, filters=()):
    for f in filters:
        data = f.encode(data)
    return ensure_bytes(codec.encode(data) if codec is not None else data)


ramp = (np.arange(600) * 7 % 1000).astype("<i4")
smooth = (np.sin(np.arange(300) / 20.0) * 100).astype("<f8")
noise = np.frombuffer(rng.bytes(700), dtype="u1")

# blosc frames and the BloscLZ streams inside single-block ones.
frames, streams = [], []
for cname in ["blosclz", "lz4", "snappy", "zlib", "zstd"]:
    for shuffle in [0, 1, 2]:
        for name, data in [("ramp", ramp), ("bytes", (np.arange(999) % 13).astype("u1"))]:
            b = enc(Blosc(cname=cname, clevel=5, shuffle=shuffle), data)
            if len(b) <= 4096:
                frames.append((f"{cname}-s{shuffle}-{name}", b))
            flags = b[2]
            if cname == "blosclz" and shuffle == 0 and not flags & 2 and b[3] == 1:
                start = struct.unpack("<I", b[16:20])[0]
                n = struct.unpack("<I", b[start:start + 4])[0]
                streams.append((name, b[start + 4:start + 4 + n]))
frames.append(("memcpyed", enc(Blosc(cname="lz4", clevel=0), ramp[:50])))
corpus("blosc", "FuzzDecode", frames)
corpus(os.path.join("blosc", "blosclz"), "FuzzDecode", streams)

for target, codecs in [
    ("FuzzZlib", [Zlib(1), Zlib(9)]), ("FuzzGzip", [GZip(1)]), ("FuzzBZ2", [BZ2(9)]),
    ("FuzzZstd", [Zstd(1), Zstd(19)]), ("FuzzLZ4", [LZ4()]), ("FuzzLZMA", [LZMA()]),
    ("FuzzBase64", [Base64()]),
]:
    seeds = []
    for i, codec in enumerate(codecs):
        for name, data in [("ramp", ramp), ("smooth", smooth), ("noise", noise)]:
            b = enc(codec, data)
            if len(b) <= 4096:
                seeds.append((f"{i}-{name}", b))
    corpus("compressors", target, seeds)

try:
    import h5py
except ImportError:
    h5py = None
if h5py is not None:
    path = os.path.join(HERE, "fuzz.h5")
    seeds = []
    for name, data, opts in [("ramp", ramp, ()), ("smooth", smooth, (512,)), ("noise", noise, (256,))]:
        with h5py.File(path, "w") as f:
            ds = f.create_dataset("v", data=data, chunks=data.shape, compression=32004, compression_opts=opts or None)
            seeds.append((name, ds.id.read_direct_chunk((0,))[1]))
    os.remove(path)
    corpus("compressors", "FuzzHDF5LZ4", seeds)

# Filters: every filter target decodes each input with every configuration
# in filters_test.go, so any filter's encoding is a useful seed.
labels = ["a", "bb", "ccc"]
corpus("filters", "FuzzFilters", [
    ("shuffle", enc(None, smooth, [Shuffle(8)])),
    ("delta", enc(None, ramp, [Delta("<i4")])),
    ("delta-narrow", enc(None, ramp, [Delta("<i4", "<i2")])),
    ("fso", enc(None, smooth, [FixedScaleOffset(0, 10, "<f8", "<i2")])),
    ("quantize", enc(None, smooth, [Quantize(2, "<f8", "<f4")])),
    ("astype", enc(None, smooth, [AsType("<f2", "<f8")])),
    ("packbits", enc(None, ramp % 3 == 0, [PackBits()])),
    ("categorize", enc(None, np.array(labels * 50, dtype="<U3"), [Categorize(labels, "<U3")])),
    ("crc32", enc(None, noise, [CRC32()])),
    ("adler32", enc(None, noise, [Adler32()])),
])

# Chains: FuzzChain runs every chain of all_test.go on each input.
corpus("all", "FuzzChain", [
    ("delta-shuffle-zstd", enc(Zstd(3), ramp, [Delta("<i4"), Shuffle(4)])),
    ("fso-blosc", enc(Blosc("lz4", 5, 1), smooth, [FixedScaleOffset(0, 100, "<f8", "<i4")])),
    ("crc32-zlib", enc(Zlib(1), ramp, [CRC32()])),
    ("packbits-bz2", enc(BZ2(1), ramp % 2 == 0, [PackBits()])),
    ("astype-lz4", enc(LZ4(), smooth, [AsType("<f4", "<f8")])),
])
