"""The nczarrfs throughput benchmark: bench/run.sh (make bench) runs it.

    /usr/bin/python3 bench/run.py NCZARRFS INPROC [--docs docs/performance.md]

NCZARRFS is the nczarrfs binary, INPROC bench/inproc built. It writes the
datasets (bench/gen.py) into ${NCZARRFS_CACHE:-~/.cache/nczarrfs}/bench,
starts a MinIO on 127.0.0.1 over a data directory kept there too, uploads
what the bucket lacks, measures, stops MinIO, prints the tables and writes
them, with the machine they were measured on, into the docs file. The
datasets are kept for the next run (about 3 GiB with MinIO's copies);
--prepare only writes and uploads them, which takes the first run's extra
minutes out of the measuring.

Every cold run starts with `sync; echo 3 > /proc/sys/vm/drop_caches` (so
each tool reads from disk, MinIO's included) and a fresh mount or a fresh
process. Each figure is the median of BENCH_RUNS runs (default 5) that
alternate the order of the tools. BENCH_QUICK=1 checks the harness in a few
minutes: small datasets (bench/gen.py) kept in bench-quick/, one run of
each, no 4 GiB memory measurement, and the docs file left alone.

Environment: MINIO_BIN (default $NCZARRFS_CACHE/bin/minio), BENCH_RUNS,
BENCH_QUICK, BENCH_ONLY (some of throughput,slice,preview,readers,memory,
metadata,netcdf,distant,walks,codecs; the docs file is then left alone), NCZARRFS_CACHE.
BENCH_ONLY=codecs runs the decoder benchmark alone (pcodec beside zstd).
BENCH_ONLY=distant runs the distant S3 table alone: MinIO behind
internal/cmd/netem at a 20 ms round trip, with rclone mount beside it where
rclone is installed. BENCH_ONLY=walks runs the walks table alone: time
series and a column read by 4-byte preads, 20 ms away, against
zarr-python; BENCH_BASELINE=BINARY adds another nczarrfs binary (an older
build) to its runs, alternating with the others.
"""

import argparse
import contextlib
import ctypes
import datetime
import json
import math
import os
import platform
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
PY = "/usr/bin/python3"
MiB = 1 << 20

CODECS = ["none", "zstd", "blosc_lz4"]
# Target ratio of zarr-python's time to nczarrfs's, by codec.
RATIO_TARGET = {"none": 2.0, "zstd": 1.6, "blosc_lz4": 2.0}
BUCKET = "bench"
SLICE_T = 101  # the 2-D slice of the random-access read (of 256), inside chunk row 25

# Bench-only credentials of the MinIO the benchmark starts; not secrets.
S3_USER, S3_PASSWORD, S3_REGION = "nczarrfs-bench", "nczarrfs-bench-secret", "us-east-1"

CLK_TCK = os.sysconf("SC_CLK_TCK")


def log(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def die_with_parent():
    """preexec_fn: the child gets SIGKILL when the benchmark dies."""
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def drop_caches():
    """Empties the page cache so that the next read comes from disk."""
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def median(xs):
    return statistics.median(xs)


def mark(ok, target):
    """A target with whether this run met it."""
    return f"{target} {'✓' if ok else '✗'}"


# ---------------------------------------------------------------- MinIO

class MinIO:
    """A MinIO server on 127.0.0.1 over a kept data directory."""

    def __init__(self, binary, data):
        self.binary, self.data = binary, data
        self.addr = f"127.0.0.1:{free_port()}"
        self.endpoint = f"http://{self.addr}"
        self.env = {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": S3_USER,
            "AWS_SECRET_ACCESS_KEY": S3_PASSWORD,
            "AWS_REGION": S3_REGION,
            "AWS_EC2_METADATA_DISABLED": "true",
        }

    def __enter__(self):
        os.makedirs(self.data, exist_ok=True)
        self.logf = open(os.path.join(os.path.dirname(self.data), "minio.log"), "ab")
        env = {
            "PATH": os.environ["PATH"], "HOME": os.path.dirname(self.data),
            "MINIO_ROOT_USER": S3_USER, "MINIO_ROOT_PASSWORD": S3_PASSWORD,
            "MINIO_BROWSER": "off", "MINIO_UPDATE": "off", "MINIO_CI_CD": "1",
        }
        self.proc = subprocess.Popen(
            [self.binary, "server", "--quiet", "--address", self.addr,
             "--console-address", f"127.0.0.1:{free_port()}", self.data],
            env=env, stdout=self.logf, stderr=self.logf, preexec_fn=die_with_parent)
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(self.endpoint + "/minio/health/live", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"MinIO did not start; see {self.logf.name}")
            time.sleep(0.05)

    def __exit__(self, *exc):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.logf.close()

    def source(self, prefix):
        """The nczarrfs SOURCE of the dataset under prefix."""
        return f"{self.endpoint}/{BUCKET}/{prefix}#mode=zarr,s3"

    def ensure(self, local, prefix):
        """Uploads the local dataset directory to prefix unless the bucket
        holds the same version of it (its done-marker object)."""
        sys.path.insert(0, HERE)
        os.environ.update(self.env)
        import s3store
        s3 = s3store.client()
        version = open(local + ".done").read()
        marker = f"_done/{prefix}"
        try:
            got = s3.get_object(Bucket=BUCKET, Key=marker)["Body"].read().decode()
            if got == version:
                return
        except Exception:
            pass
        log(f"uploading {local} to MinIO")
        t = time.monotonic()
        n = s3store.upload(local, BUCKET, prefix)
        s3.put_object(Bucket=BUCKET, Key=marker, Body=version.encode())
        log(f"uploaded {n} objects in {time.monotonic() - t:.0f}s")


# ---------------------------------------------------------------- mounts

def mounted(mnt):
    """Whether mnt is an nczarrfs mount, from /proc/self/mountinfo."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            pre, _, post = line.partition(" - ")
            if pre.split(" ")[4] == mnt and post.startswith("fuse.nczarrfs "):
                return True
    return False


class Mount:
    """A fresh nczarrfs daemon serving source at a new temporary mountpoint.

    ready is the seconds from starting the daemon to the mount showing in
    /proc/self/mountinfo (polled every millisecond)."""

    def __init__(self, binary, source, env=None, flags=(), prefix=()):
        self.cmd = [*prefix, binary, "mount", *flags, source]
        self.env = {**os.environ, **(env or {})}

    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="nczarrfs-bench-")
        self.logf = tempfile.TemporaryFile()
        start = time.perf_counter()
        self.proc = subprocess.Popen(self.cmd + [self.dir], env=self.env,
                                     stdout=self.logf, stderr=self.logf, preexec_fn=die_with_parent)
        while not mounted(self.dir):
            if self.proc.poll() is not None:
                self.logf.seek(0)
                raise RuntimeError(f"{' '.join(self.cmd)} failed:\n{self.logf.read().decode()}")
            time.sleep(0.001)
        self.ready = time.perf_counter() - start
        self.pid = self.proc.pid
        return self

    def __exit__(self, exc_type, *exc):
        subprocess.run(["fusermount3", "-u", self.dir], stderr=subprocess.DEVNULL)
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            subprocess.run(["fusermount3", "-uz", self.dir], stderr=subprocess.DEVNULL)
        if exc_type is not None:  # what the daemon said about it
            self.logf.seek(0)
            tail = self.logf.read().decode(errors="replace").splitlines()[-20:]
            log(f"{' '.join(self.cmd)} logged:\n" + "\n".join(tail))
        self.logf.close()
        os.rmdir(self.dir)

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def cpu(self):
        """CPU seconds (user + system) the daemon has used so far."""
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime

    def hwm(self):
        """The daemon's peak resident set size, in bytes (VmHWM)."""
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        raise RuntimeError("no VmHWM")


def timed(cmd, **kw):
    """Runs cmd with stdout discarded; its wall-clock seconds."""
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True, **kw)
    return time.perf_counter() - start


def timed_in(m, cmd):
    """Runs cmd against mount m: (wall seconds, daemon CPU seconds)."""
    cpu = m.cpu()
    wall = timed(cmd)
    return wall, m.cpu() - cpu


# ---------------------------------------------------------------- the benchmark

class Bench:
    def __init__(self, args):
        self.bin, self.inproc = args.nczarrfs, args.inproc
        self.quick = os.environ.get("BENCH_QUICK", "") not in ("", "0")
        self.runs = 1 if self.quick else int(os.environ.get("BENCH_RUNS", "5"))
        cache = os.environ.get("NCZARRFS_CACHE") or os.path.expanduser("~/.cache/nczarrfs")
        self.dir = os.path.join(cache, "bench-quick" if self.quick else "bench")
        self.minio_bin = os.environ.get("MINIO_BIN") or os.path.join(cache, "bin", "minio")
        self.rows = []    # throughput table
        self.others = []  # further targets
        self.far = []     # the distant S3 table
        self.walk_rows = []  # the walks table

    def gen(self, *names):
        subprocess.run([PY, os.path.join(HERE, "gen.py"), self.dir, *names], check=True)
        return [os.path.join(self.dir, n) for n in names]

    def run(self, prepare_only=False):
        """Writes and uploads what is missing, then (unless prepare_only) measures."""
        if not prepare_only and os.environ.get("BENCH_ONLY", "") == "codecs":
            # The decoder benchmark alone needs no dataset and no MinIO.
            self.load = [os.getloadavg()[0]]
            self.codecs()
            self.load.append(os.getloadavg()[0])
            return
        meta = self.gen("manyarrays.zarr", "manyarraysc.zarr", "manychunks.zarr", "manyarrays10k.zarr",
                        "xarrays.zarr", "xarraysc.zarr") if os.environ.get("BENCH_ONLY") != "walks" else []
        # The distant table alone needs only the metadata datasets.
        reads = prepare_only or any(self.wants(p) for p in ["throughput", "slice", "preview", "readers", "memory", "netcdf"])
        if reads:
            arrays, arrays_zip = self.gen("arrays.zarr", "arrays.zip")
            if prepare_only or self.wants("memory"):
                (big,) = self.gen("big.zarr")
        walks = self.gen("walks.zarr") if prepare_only or self.wants("walks") else []
        with MinIO(self.minio_bin, os.path.join(self.dir, "minio")) as s3:
            self.s3 = s3
            for local in ([arrays] if reads else []) + meta + walks:
                s3.ensure(local, os.path.basename(local))
            if prepare_only:
                return
            self.load = [os.getloadavg()[0]]
            if not reads:
                if self.wants("metadata"):
                    self.metadata()
                if self.wants("distant"):
                    self.distant()
                if walks:
                    self.walks(walks[0])
                if self.wants("codecs"):
                    self.codecs()
                self.load.append(os.getloadavg()[0])
                return
            sources = [
                ("directory", arrays, "dir", arrays),
                ("zip", arrays_zip, "zip", arrays_zip),
                ("MinIO", s3.source("arrays.zarr"), "s3", f"{BUCKET}/arrays.zarr"),
            ]
            with open(os.path.join(arrays, "none", ".zarray")) as f:
                self.shape = "×".join(map(str, json.load(f)["shape"]))
            decode = {c: self.decode(arrays, c) for c in CODECS}
            self.array_bytes = decode["none"]["bytes"]
            if self.wants("throughput"):
                for name, src, kind, where in sources:
                    for codec in CODECS:
                        self.throughput(name, src, kind, where, codec, decode[codec])
            if self.wants("slice"):
                for codec in CODECS:
                    self.random_access(arrays, codec, decode[codec])
            if self.wants("preview"):
                self.preview(arrays)
            if self.wants("readers"):
                self.two_readers(arrays, "zstd", decode["zstd"]["bytes"])
            if self.wants("memory"):
                self.memory(big)
            if self.wants("netcdf"):
                self.netcdf(arrays)
            if self.wants("metadata"):
                self.metadata()
            if self.wants("distant"):
                self.distant()
            if walks:
                self.walks(walks[0])
            if self.wants("codecs"):
                self.codecs()
            self.load.append(os.getloadavg()[0])

    def wants(self, part):
        """Whether BENCH_ONLY (a comma-separated list of throughput, slice,
        preview, readers, memory, metadata, netcdf, distant, walks, codecs; default all)
        names part."""
        only = os.environ.get("BENCH_ONLY", "")
        return not only or part in only.split(",")

    def codecs(self):
        """pcodec's decoding speed beside zstd's on the same bytes: go test
        -bench in nczarr/codec/pcodec, on 1 MiB chunks its test encoder makes
        (no pcodec encoder is installed). One goroutine; median of the runs."""
        out = subprocess.run(
            ["go", "test", "-run", "^$", "-bench", "BenchmarkDecode", "-benchtime", "50x",
             "-count", str(self.runs), "./nczarr/codec/pcodec"],
            cwd=os.path.dirname(HERE), capture_output=True, text=True, check=True).stdout
        speeds = {}
        for m in re.finditer(r"BenchmarkDecode/(\S+)/(pcodec|zstd)-\d+\s+\d+\s+[\d.]+ ns/op\s+([\d.]+) MB/s", out):
            speeds.setdefault((m[1], m[2]), []).append(float(m[3]))
        for case in sorted({c for c, _ in speeds}):
            p, z = median(speeds[(case, "pcodec")]), median(speeds[(case, "zstd")])
            log(f"pcodec {case}: {p:.0f} MB/s, zstd {z:.0f} MB/s")
            self.others.append([f"decode 1 MiB of {case} with pcodec, one core", f"{p:.0f} MB/s",
                                f"zstd: {z:.0f} MB/s on the same bytes",
                                "reported (pco in Rust: about 1 GB/s per core)"])

    # Each tool's cold read of a whole array.

    def nczarrfs_read(self, src, codec):
        drop_caches()
        with Mount(self.bin, src, env=self.s3.env) as m:
            wall, cpu = timed_in(m, ["cat", m.path(codec, "data")])
        return wall, cpu

    def zarr_read(self, kind, where, codec, t=None):
        drop_caches()
        cmd = [PY, os.path.join(HERE, "zarrread.py"), kind, where, codec]
        if t is not None:
            cmd.append(str(t))
        out = subprocess.run(cmd, capture_output=True, text=True, check=True,
                             env={**os.environ, **self.s3.env, "PYTHONPATH": HERE})
        return float(out.stdout)

    def inproc_run(self, mode, src, codec, *extra):
        drop_caches()
        # Two cores for the decoders, whatever the machine has.
        env = {**os.environ, **self.s3.env, "GOMAXPROCS": "2"}
        out = subprocess.run([self.inproc, mode, src, codec, *extra], capture_output=True,
                             text=True, check=True, env=env)
        return json.loads(out.stdout)

    def decode(self, arrays, codec):
        runs = [self.inproc_run("decode", arrays, codec) for _ in range(self.runs)]
        r = sorted(runs, key=lambda r: r["seconds"])[len(runs) // 2]  # the median run
        log(f"decode {codec}: {r['seconds']:.3f}s")
        return r

    def throughput(self, name, src, kind, where, codec, decode):
        ncz, cpu, zarr, inproc = [], [], [], []

        def measure(tool):
            if tool == "nczarrfs":
                wall, daemon = self.nczarrfs_read(src, codec)
                ncz.append(wall)
                cpu.append(daemon / wall)
            elif tool == "zarr-python":
                zarr.append(self.zarr_read(kind, where, codec))
            else:
                inproc.append(self.inproc_run("read", src, codec)["seconds"])

        order = ["nczarrfs", "zarr-python", "in-process"]
        for i in range(self.runs):
            for tool in order if i % 2 == 0 else order[::-1]:
                measure(tool)
        t_ncz, t_zarr, t_in = median(ncz), median(zarr), median(inproc)
        log(f"{name} {codec}: nczarrfs {t_ncz:.3f}s zarr-python {t_zarr:.3f}s in-process {t_in:.3f}s")
        size = decode["bytes"] / MiB
        ratio, target = t_zarr / t_ncz, RATIO_TARGET[codec]
        self.rows.append([
            name, codec.replace("_", "-"),
            f"{size / t_ncz:.0f}", f"{size / t_zarr:.0f}",
            f"{ratio:.2f} ({mark(ratio >= target, f'≥ {target}')})",
            f"{size / t_in:.0f}", f"{100 * t_in / t_ncz:.0f}% ({mark(t_in / t_ncz >= 0.75, '≥ 75%')})",
            f"{size / decode['seconds']:.0f}",
            f"{100 * decode['seconds'] / t_in:.0f}% ({mark(decode['seconds'] / t_in >= 0.85, '≥ 85%')})",
            f"{median(cpu):.2f}",
        ])

    # Further targets.

    def random_access(self, arrays, codec, decode):
        """Reads one 2-D slice a[t] from the middle of chunk row t // 4:
        nczarrfs with one dd read on a fresh mount, zarr-python's a[t], the
        in-process ReadAt, next to the cost of decoding one chunk row."""
        with open(os.path.join(arrays, codec, ".zarray")) as f:
            shape = json.load(f)["shape"]
        t = shape[0] * SLICE_T // 256
        slice_bytes = 4 * shape[1] * shape[2]
        ncz, cpu, zarr, inproc = [], [], [], []
        for _ in range(self.runs):
            drop_caches()
            with Mount(self.bin, arrays) as m:
                w, c = timed_in(m, ["dd", f"if={m.path(codec, 'data')}", "of=/dev/null", f"bs={slice_bytes}",
                                    f"skip={t}", "count=1", "status=none"])
            ncz.append(w)
            cpu.append(c)
            zarr.append(self.zarr_read("dir", arrays, codec, t))
            inproc.append(self.inproc_run("slice", arrays, codec, str(t))["seconds"])
        row_cpu = decode["chunk_seconds"] / decode["chunks"] * decode["row_chunks"]
        self.others.append([
            f"read one 2-D slice a[{t}] ({slice_bytes // MiB} MiB), cold, directory, {codec.replace('_', '-')}",
            f"{1000 * median(ncz):.1f} ms with dd, daemon CPU {1000 * median(cpu):.1f} ms",
            f"zarr-python a[t] {1000 * median(zarr):.1f} ms; in-process {1000 * median(inproc):.1f} ms; "
            f"one chunk row = {decode['row_chunks']} decodes = {1000 * row_cpu:.1f} ms CPU",
            "about one chunk row of decodes",
        ])

    def preview(self, arrays, codec="zstd"):
        """cat of preview.png on a fresh mount, cold: the picture of the
        first 2-D slice, drawn at the first open (four chunks of the
        4x256x256 grid), next to zarr-python's read of that slice."""
        with open(os.path.join(arrays, codec, ".zarray")) as f:
            shape = json.load(f)["shape"]
        ncz, cpu, zarr = [], [], []
        for _ in range(self.runs):
            drop_caches()
            with Mount(self.bin, arrays) as m:
                w, c = timed_in(m, ["cat", m.path(codec, "preview.png")])
            ncz.append(w)
            cpu.append(c)
            zarr.append(self.zarr_read("dir", arrays, codec, 0))
        self.others.append([
            f"preview.png of a {'×'.join(map(str, shape))} float32 {codec} array "
            f"(its first 2-D slice, {shape[2]}×{shape[1]} px), fresh mount, cold, directory",
            f"{1000 * median(ncz):.0f} ms with cat, daemon CPU {1000 * median(cpu):.0f} ms",
            f"zarr-python reads that slice, a[0], in {1000 * median(zarr):.0f} ms",
            mark(median(ncz) < 0.5, "< 0.5 s"),
        ])

    def two_readers(self, arrays, codec, nbytes):
        """Two cats of the same data at once on one fresh mount, against one
        alone on a mount whose daemon has one core (taskset -c 0)."""
        alone, each = [], []
        for _ in range(self.runs):
            drop_caches()
            with Mount(self.bin, arrays, prefix=["taskset", "-c", "0"]) as m:
                alone.append(timed(["cat", m.path(codec, "data")]))
            drop_caches()
            with Mount(self.bin, arrays) as m:
                data = m.path(codec, "data")
                start = time.perf_counter()
                procs = [subprocess.Popen(["cat", data], stdout=subprocess.DEVNULL) for _ in range(2)]
                ends = []
                for p in procs:
                    if p.wait() != 0:
                        raise RuntimeError("cat failed")
                    ends.append(time.perf_counter() - start)
                each.append(max(ends))
        size = nbytes / MiB
        self.others.append([
            f"two cats of the same data at once, fresh mount, directory, {codec}",
            f"each {size / median(each):.0f} MiB/s (the slower one)",
            f"one alone, daemon on 1 core (taskset -c 0): {size / median(alone):.0f} MiB/s",
            mark(median(each) <= median(alone) / 0.8, "each about as fast as one alone on a 1-core share (≥ 80%)"),
        ])

    def memory(self, big):
        """Peak RSS of a daemon with --cache-size 128MiB reading the big array
        once (one run: it is a memory figure, not a time)."""
        drop_caches()
        with Mount(self.bin, big, flags=["--cache-size", "128MiB"]) as m:
            size = os.path.getsize(m.path("big", "data"))
            wall, cpu = timed_in(m, ["cat", m.path("big", "data")])
            hwm = m.hwm()
        self.others.append([
            f"peak RSS (VmHWM) of the daemon reading a {size / (1 << 30):.1f} GiB zstd array, "
            "--cache-size 128MiB, directory",
            f"{hwm / MiB:.0f} MiB",
            f"the cat took {wall:.1f} s ({size / MiB / wall:.0f} MiB/s, daemon CPU / wall {cpu / wall:.2f})",
            mark(hwm / MiB < 400, "< 400 MiB"),
        ])

    def netcdf(self, arrays, codec="zstd"):
        """dataset.nc: ncks -v of the 256 MiB float32 zstd variable against a
        cat of its data, each on a fresh mount, cold, alternating; and
        ncdump -h of a group of 1,000 arrays on a fresh mount, with the
        store requests it makes (.nczarrfs/stats), local directory."""
        out_dir = "/dev/shm" if os.path.isdir("/dev/shm") else None
        ncks, cat, local = [], [], []
        with tempfile.TemporaryDirectory(dir=out_dir) as tmp:
            out, again = os.path.join(tmp, "out.nc"), os.path.join(tmp, "again.nc")
            for i in range(self.runs):
                for tool in (["ncks", "cat"] if i % 2 == 0 else ["cat", "ncks"]):
                    drop_caches()
                    with Mount(self.bin, arrays) as m:
                        if tool == "cat":
                            cat.append(timed(["cat", m.path(codec, "data")]))
                        else:
                            ncks.append(timed(["ncks", "-O", "-v", codec, m.path("dataset.nc"), out]))
                # ncks's own work: the same copy from the file it wrote.
                local.append(timed(["ncks", "-O", "-v", codec, out, again]))
        ratio = median(ncks) / median(cat)
        log(f"netcdf: ncks {median(ncks):.3f}s cat {median(cat):.3f}s ncks from tmpfs {median(local):.3f}s")
        self.others.append([
            f"ncks -O -v {codec} dataset.nc out.nc (256 MiB float32 {codec} variable, out.nc in /dev/shm), "
            "fresh mount, cold, directory",
            f"{median(ncks):.2f} s, {ratio:.2f}x the cat",
            f"cat of {codec}/data on a fresh mount: {median(cat):.2f} s; the same ncks from a file in "
            f"/dev/shm (its own work): {median(local):.2f} s",
            mark(ratio <= 1.3, "≤ 1.3x cat"),
        ])
        for name, what in [("manyarraysc.zarr", "with .zmetadata"), ("manyarrays.zarr", "without .zmetadata")]:
            src = os.path.join(self.dir, name)
            walls, reqs, reads = [], [], []
            for _ in range(self.runs):
                with Mount(self.bin, src) as m:
                    before = self.store_counters(m)
                    walls.append(timed(["ncdump", "-h", m.path("dataset.nc")]))
                    after = self.store_counters(m)
                    reqs.append(sum(after["requests"].values()) - sum(before["requests"].values()))
                    reads.append(after["read_at"]["requests"] - before["read_at"]["requests"])
            self.others.append([
                f"ncdump -h dataset.nc of a group of 1,000 arrays {what}, fresh mount (the header is made "
                "at this first lookup), page cache warm, directory",
                f"{1000 * median(walls):.0f} ms",
                f"store requests during it: {max(reqs)}, of which ranged reads (chunks): {max(reads)}",
                mark(median(walls) <= 0.05 and max(reads) == 0, "≤ 50 ms, no data request"),
            ])

    @staticmethod
    def store_counters(m):
        """The store counters of mount m so far."""
        with open(m.path(".nczarrfs", "stats")) as f:
            return json.load(f)["store"]

    def metadata(self):
        """Mount time of 1,000 arrays; ls and first byte of 100,000 chunks; from MinIO."""
        for prefix, what in [("manyarrays.zarr", "without .zmetadata"), ("manyarraysc.zarr", "with .zmetadata")]:
            ready = []
            for _ in range(self.runs):
                drop_caches()
                with Mount(self.bin, self.s3.source(prefix), env=self.s3.env) as m:
                    ready.append(m.ready)
                    n = sum(e.is_dir() and not e.name.startswith(".") for e in os.scandir(m.dir))
            self.others.append([f"mount a group of {n:,} arrays {what}, MinIO", f"{median(ready):.2f} s",
                                "from starting the daemon to the mount in /proc/self/mountinfo",
                                mark(median(ready) < 2, "< 2 s")])
        src = self.s3.source("manychunks.zarr")
        first, ls, entries, failed = [], [], 0, []
        for _ in range(self.runs):
            drop_caches()
            with Mount(self.bin, src, env=self.s3.env) as m:
                start = time.perf_counter()
                with open(m.path("a", "data"), "rb", buffering=0) as f:
                    if len(f.read(1)) != 1:
                        raise RuntimeError("no first byte")
                first.append(time.perf_counter() - start)
            wall, n, err = self.ls(src)
            ls.append(wall)
            if err:
                failed.append(err)
            else:
                entries = n
        # What MinIO itself takes to list them, 1,000 keys a page: cold, then
        # warm (MinIO's files in the page cache, as a server's would be),
        # and a fresh mount's ls with MinIO warm: what nczarrfs adds.
        import s3store

        def listing():
            start = time.perf_counter()
            pages = s3store.client().get_paginator("list_objects_v2").paginate(
                Bucket=BUCKET, Prefix="manychunks.zarr/a/", Delimiter="/")
            keys = sum(len(p.get("Contents", [])) for p in pages)
            return time.perf_counter() - start, keys
        drop_caches()
        cold, keys = listing()
        warm, _ = listing()
        warm_ls, _, err = self.ls(src, drop=False)
        compare = (f"boto3 ListObjectsV2 of the {keys:,} keys: cold {cold:.1f} s, warm {warm:.1f} s; "
                   f"ls with MinIO warm: {warm_ls:.1f} s" + (f" (failed: {err})" if err else ""))
        if failed:  # how long it takes when it is let finish
            wall, n, err = self.ls(src, ["--s3-timeout", "10m"])
            compare += f"; nczarrfs with --s3-timeout 10m: {wall:.1f} s" + (f", failed too: {err}" if err else "")
            entries = entries or n
        with open(os.path.join(self.dir, "manychunks.zarr", "a", ".zarray")) as f:
            z = json.load(f)
        chunks = math.prod(-(-n // c) for n, c in zip(z["shape"], z["chunks"]))
        got = f"{median(ls):.2f} s"
        if failed:
            got += f"; {len(failed)} of {len(ls)} failed: {failed[0]}"
        self.others.append([f"ls of an array directory of {chunks:,} chunks ({entries:,} entries), "
                            "fresh mount, MinIO", got, compare,
                            mark(median(ls) < 5 and not failed, "< 5 s")])
        self.others.append(["first byte of that array's data after the mount is ready, MinIO",
                            f"{1000 * median(first):.1f} ms", "open and read(1) on a fresh mount",
                            mark(median(first) < 0.1, "< 100 ms")])


    # Browsing MinIO through internal/cmd/netem: a 20 ms round trip.

    def distant(self):
        """The distant S3 table: browsing, mounting and reading the metadata
        datasets through a proxy that delays each direction by 10 ms."""
        netem = os.path.join(os.path.dirname(os.path.abspath(self.bin)), "netem")
        if not os.path.exists(netem):
            subprocess.run(["go", "build", "-o", netem, "./internal/cmd/netem"], check=True,
                           cwd=os.path.dirname(HERE))
        proxy = subprocess.Popen([netem, "-target", self.s3.addr, "-delay", "10ms"],
                                 stdout=subprocess.PIPE, preexec_fn=die_with_parent)
        try:
            addr = proxy.stdout.readline().decode().strip()
            self.far_env = {**self.s3.env, "AWS_ENDPOINT_URL": f"http://{addr}"}
            self.far_src = lambda prefix: f"http://{addr}/{BUCKET}/{prefix}#mode=zarr,s3"
            self.distant_rows()
            self.rclone_rows(addr)
        finally:
            proxy.terminate()
            proxy.wait()

    def far_mount(self, prefix, flags=()):
        return Mount(self.bin, self.far_src(prefix), env=self.far_env, flags=flags)

    @staticmethod
    def requests(m):
        with open(m.path(".nczarrfs", "stats")) as f:
            r = json.load(f)["store"]["requests"]
        return r

    @staticmethod
    def fmt_requests(before, after):
        d = {k: after[k] - before[k] for k in after}
        parts = [f"{v} {k.replace('_', ' ')}" for k, v in d.items() if v]
        return ", ".join(parts) or "no request"

    def far_op(self, m, cmd):
        """Runs cmd in mount m: (seconds, the requests it made)."""
        before = self.requests(m)
        wall = timed(cmd)
        return wall, self.fmt_requests(before, self.requests(m))

    def far_row(self, what, runs, target, limit, note=""):
        """Adds a row from runs, a list of (seconds, requests)."""
        wall = median([r[0] for r in runs])
        self.far.append([what, f"{wall:.2f} s", runs[-1][1] + (f"; {note}" if note else ""),
                         mark(wall <= limit, target)])

    def distant_rows(self):
        n = min(self.runs, 3)
        for prefix, what in [("manyarrays.zarr", "without"), ("manyarraysc.zarr", "with")]:
            ls_l, mount, lsr1, lsr2 = [], [], [], []
            for _ in range(n):
                with self.far_mount(prefix) as m:
                    mount.append((m.ready, self.fmt_requests({k: 0 for k in self.requests(m)}, self.requests(m))))
                    ls_l.append(self.far_op(m, ["ls", "-l", m.dir]))
                    lsr1.append(self.far_op(m, ["ls", "-lR", m.dir]))
                    lsr2.append(self.far_op(m, ["ls", "-lR", m.dir]))
            self.far_row(f"mount of the 1,000-array group, {what} .zmetadata", mount, "-", math.inf)
            self.far_row(f"ls -l of its root, {what} .zmetadata", ls_l, "≤ 0.3 s", 0.3)
            self.far_row(f"ls -lR of it, {what} .zmetadata", lsr1, "≤ 3 s", 3)
            self.far_row(f"ls -lR again, {what} .zmetadata", lsr2, "≤ 0.5 s", 0.5)
            hdr = []
            for _ in range(n):
                start = time.perf_counter()
                subprocess.run([self.bin, "header", self.far_src(prefix)], env={**os.environ, **self.far_env},
                               stdout=subprocess.DEVNULL, check=True)
                hdr.append((time.perf_counter() - start, "no mount"))
            limit = 0.5 if what == "with" else 3
            self.far_row(f"nczarrfs header of it, {what} .zmetadata", hdr, f"≤ {limit} s", limit)
            # The same group with xarray's _ARRAY_DIMENSIONS, which
            # open_zarr needs; the time includes the mount's.
            xr = []
            for _ in range(n):
                start = time.perf_counter()
                with self.far_mount(prefix.replace("manyarrays", "xarrays")) as m:
                    subprocess.run([PY, "-W", "ignore", "-c", f"import xarray; xarray.open_zarr({m.dir!r})"],
                                   stdout=subprocess.DEVNULL, check=True)
                    xr.append((time.perf_counter() - start,
                               "mount and open: " + self.fmt_requests({k: 0 for k in self.requests(m)}, self.requests(m))))
            self.far_row(f"mount and xarray.open_zarr of the 1,000-array group, {what} .zmetadata "
                         "(with _ARRAY_DIMENSIONS)", xr, "≤ 5 s", 5)
        mount, ls_l = [], []
        for _ in range(n):
            with self.far_mount("manyarrays10k.zarr") as m:
                mount.append((m.ready, self.fmt_requests({k: 0 for k in self.requests(m)}, self.requests(m))))
                ls_l.append(self.far_op(m, ["ls", "-l", m.dir]))
        self.far_row("mount of a 10,000-array group without .zmetadata", mount, "≤ 1 s", 1)
        self.far_row("ls -l of its root", ls_l, "≤ 3 s", 3)
        ls1, ls2, first, mount = [], [], [], []
        for _ in range(n):
            with self.far_mount("manychunks.zarr") as m:
                mount.append((m.ready, self.fmt_requests({k: 0 for k in self.requests(m)}, self.requests(m))))
                before = self.requests(m)
                start = time.perf_counter()
                with open(m.path("a", "data"), "rb", buffering=0) as f:
                    if len(f.read(1)) != 1:
                        raise RuntimeError("no first byte")
                first.append((time.perf_counter() - start, self.fmt_requests(before, self.requests(m))))
            with self.far_mount("manychunks.zarr") as m:
                ls1.append(self.far_op(m, ["ls", m.path("a")]))
                ls2.append(self.far_op(m, ["ls", m.path("a")]))
        self.far_row("mount of the 100,000-chunk array (its keys listed flat)", mount, "-", math.inf)
        self.far_row("first byte of its data", first, "≤ 60 ms", 0.06)
        self.far_row("ls of the 100,000-chunk array, after the mount", ls1, "≤ 4 s", 4)
        self.far_row("ls of it again", ls2, "≤ 0.3 s", 0.3)

    # Readers that walk across the chunks, 20 ms away.

    def walks(self, local):
        """The walks table: a time series at one point read by 4-byte preads
        down axis 0 of the data file, and a column read the same way, on a
        fresh mount of MinIO behind internal/cmd/netem (10 ms each way),
        against zarr-python's read of the same selection (boto3, 16
        requests at a time) through the same link. MinIO's files stay in
        the page cache. With BENCH_BASELINE, another nczarrfs binary runs
        too, in the same alternation."""
        netem = os.path.join(os.path.dirname(os.path.abspath(self.bin)), "netem")
        if not os.path.exists(netem):
            subprocess.run(["go", "build", "-o", netem, "./internal/cmd/netem"], check=True,
                           cwd=os.path.dirname(HERE))
        proxy = subprocess.Popen([netem, "-target", self.s3.addr, "-delay", "10ms"],
                                 stdout=subprocess.PIPE, preexec_fn=die_with_parent)
        try:
            addr = proxy.stdout.readline().decode().strip()
            env = {**self.s3.env, "AWS_ENDPOINT_URL": f"http://{addr}"}
            src = f"http://{addr}/{BUCKET}/walks.zarr#mode=zarr,s3"
            baseline = os.environ.get("BENCH_BASELINE")
            for name, sel, goal in [("ts", (None, 100, 37), 2.0), ("ts1", (None, 100, 37), 2.0),
                                    ("col", (None, 1000), 0.32)]:
                with open(os.path.join(local, name, ".zarray")) as f:
                    meta = json.load(f)
                shape, chunks = meta["shape"], meta["chunks"]
                # Element (i, sel[1:]) of a C-order array: off0 + i * stride.
                strides = [math.prod(shape[d + 1:]) * 4 for d in range(len(shape))]
                off0 = sum(i * s for i, s in zip(sel[1:], strides[1:]))
                tools = [("nczarrfs", self.bin), ("zarr-python", None)]
                if baseline:
                    tools.append(("baseline", baseline))
                times = {t: [] for t, _ in tools}
                reqs = ""
                for run in range(self.runs):
                    for tool, binary in tools[run % len(tools):] + tools[:run % len(tools)]:
                        if binary is None:
                            selection = ",".join(":" if i is None else str(i) for i in sel)
                            out = subprocess.run([PY, os.path.join(HERE, "zarrread.py"), "s3", f"{BUCKET}/walks.zarr",
                                                  name, selection], capture_output=True, text=True, check=True,
                                                 env={**os.environ, **env, "PYTHONPATH": HERE})
                            times[tool].append(float(out.stdout))
                            continue
                        with Mount(binary, src, env=env) as m:
                            before = self.requests(m) if tool == "nczarrfs" else None
                            start = time.perf_counter()
                            fd = os.open(m.path(name, "data"), os.O_RDONLY)
                            try:
                                for i in range(shape[0]):
                                    if len(os.pread(fd, 4, off0 + i * strides[0])) != 4:
                                        raise RuntimeError(f"short read of {name}/data")
                            finally:
                                os.close(fd)
                            times[tool].append(time.perf_counter() - start)
                            if before is not None:
                                reqs = self.fmt_requests(before, self.requests(m))
                ncz, zp = median(times["nczarrfs"]), median(times["zarr-python"])
                touched = math.ceil(shape[0] / chunks[0])
                what = (f"{'time series at a point' if len(shape) == 3 else 'column'} by {shape[0]:,} 4-byte preads, "
                        f"{'×'.join(map(str, shape))} float32 zstd, chunks {'×'.join(map(str, chunks))} "
                        f"({touched} chunks)")
                compare = f"zarr-python a[{','.join(':' if i is None else str(i) for i in sel)}] {zp:.2f} s: {zp / ncz:.2f}x"
                if baseline:
                    compare += f"; baseline binary {median(times['baseline']):.2f} s"
                ok = zp / ncz >= goal if goal >= 1 else ncz <= goal
                target = f"≥ {goal:g}x zarr-python" if goal >= 1 else f"≤ {goal:g} s"
                self.walk_rows.append([what, f"{ncz:.2f} s", compare, reqs, mark(ok, target)])
        finally:
            proxy.terminate()
            proxy.wait()

    def rclone_rows(self, addr):
        """rclone mount of the same bucket beside it, where rclone is installed."""
        import shutil
        if not shutil.which("rclone"):
            self.far.append(["rclone mount", "-", "rclone is not installed", "-"])
            return
        env = {**os.environ, "RCLONE_CONFIG_FAR_TYPE": "s3", "RCLONE_CONFIG_FAR_PROVIDER": "Minio",
               "RCLONE_CONFIG_FAR_ACCESS_KEY_ID": S3_USER, "RCLONE_CONFIG_FAR_SECRET_ACCESS_KEY": S3_PASSWORD,
               "RCLONE_CONFIG_FAR_ENDPOINT": f"http://{addr}", "RCLONE_CONFIG_FAR_REGION": S3_REGION}
        env.pop("AWS_CA_BUNDLE", None)  # rclone refuses to start with it set
        for prefix, what in [("manyarrays.zarr", "ls -l of the 1,000-array group"),
                             ("manychunks.zarr/a", "ls of the 100,000-chunk array")]:
            d = tempfile.mkdtemp(prefix="rclone-bench-")
            proc = subprocess.Popen(["rclone", "mount", "--read-only", "--dir-cache-time", "1h",
                                     f"far:{BUCKET}/{prefix}", d], env=env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    preexec_fn=die_with_parent)
            try:
                deadline = time.monotonic() + 30
                while not os.path.ismount(d):
                    if proc.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError("rclone mount did not come up")
                    time.sleep(0.01)
                cmd = ["ls", "-l", d] if "group" in what else ["ls", d]
                first, again = timed(cmd), timed(cmd)
                self.far.append([f"rclone mount: {what}", f"{first:.2f} s, again {again:.2f} s",
                                 "--dir-cache-time 1h, raw objects", "-"])
            finally:
                subprocess.run(["fusermount3", "-u", d], stderr=subprocess.DEVNULL)
                proc.wait(20)
                os.rmdir(d)

    def ls(self, src, flags=(), drop=True):
        """ls of the array directory "a" on a fresh mount of src, cold unless
        not drop: (seconds, entries listed, why it failed or "")."""
        if drop:
            drop_caches()
        with Mount(self.bin, src, env=self.s3.env, flags=flags) as m:
            start = time.perf_counter()
            r = subprocess.run(["ls", m.path("a")], capture_output=True)
            wall = time.perf_counter() - start
        err = r.stderr.decode(errors="replace").strip().rpartition(": ")[2]
        if r.returncode != 0:
            log(f"ls failed after {wall:.1f}s: {err}")
            return wall, 0, err or f"exit status {r.returncode}"
        return wall, r.stdout.count(b"\n"), ""


# ---------------------------------------------------------------- output

def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def machine():
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem = int(re.search(r"MemTotal:\s+(\d+)", f.read()).group(1)) * 1024
    go = subprocess.run(["go", "version"], capture_output=True, text=True).stdout.strip()
    commit = subprocess.run(["git", "-C", HERE, "describe", "--always", "--dirty"],
                            capture_output=True, text=True).stdout.strip()
    return (f"{os.cpu_count()} CPUs ({cpu}), {mem / (1 << 30):.1f} GiB memory, "
            f"Linux {platform.release()}, {go}, commit {commit}, "
            f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")


def report(b, seconds):
    mode = "BENCH_QUICK=1, one run each" if b.quick else f"median of {b.runs} alternating runs"
    if os.environ.get("BENCH_ONLY"):
        mode += f", BENCH_ONLY={os.environ['BENCH_ONLY']}"
    head = [
        f"Measured on {machine()}; {mode}; every run cold (page cache dropped first); "
        f"the benchmark took {seconds / 60:.1f} min; load average (1 min) "
        f"{b.load[0]:.1f} at the start and {b.load[1]:.1f} at the end, on {os.cpu_count()} CPUs.",
    ]
    walks = [
        "",
        "Walks across the chunks, 20 ms away (MinIO behind internal/cmd/netem, its files in the page cache): "
        "a fresh mount, open and 4-byte preads down the first axis of data, against zarr-python's read of the "
        "same selection through the same link (boto3, 16 requests at a time); requests from .nczarrfs/stats:",
        "",
        table(["read", "nczarrfs", "for comparison", "requests", "target"], b.walk_rows),
    ] if b.walk_rows else []
    if not b.rows:
        # A BENCH_ONLY run without the throughput table.
        parts = list(head)
        if b.others:
            parts += ["", "Further targets:", "", table(["measure", "nczarrfs", "for comparison", "target"], b.others)]
        if b.far:
            parts += ["", "Distant S3: MinIO behind internal/cmd/netem, 10 ms each way (a 20 ms "
                      "round trip), MinIO's files in the page cache; requests from .nczarrfs/stats:",
                      "", table(["operation", "nczarrfs", "requests", "target"], b.far)]
        return "\n".join(parts + walks)
    return "\n".join(head + [
        "",
        f"Reading a whole {b.array_bytes // MiB} MiB float32 array ({b.shape}, chunks 4×256×256, "
        "11 mantissa bits kept), MiB/s:",
        "",
        table(["source", "codec", "nczarrfs cat", "zarr-python", "zarr-python time / nczarrfs time",
               "in-process", "mount / in-process", "decoders, 2 cores", "in-process / decoders",
               "daemon CPU / wall"], b.rows),
        "",
        "Further targets:",
        "",
        table(["measure", "nczarrfs", "for comparison", "target"], b.others),
    ] + ([
        "",
        "Distant S3: MinIO behind internal/cmd/netem, 10 ms each way (a 20 ms round trip), "
        "MinIO's files in the page cache; requests from .nczarrfs/stats:",
        "",
        table(["operation", "nczarrfs", "requests", "target"], b.far),
    ] if b.far else []) + walks)


def update_docs(path, text):
    begin, end = "<!-- bench:begin -->", "<!-- bench:end -->"
    with open(path) as f:
        doc = f.read()
    i, j = doc.index(begin) + len(begin), doc.index(end)
    with open(path, "w") as f:
        f.write(doc[:i] + "\n" + text + "\n" + doc[j:])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("nczarrfs")
    p.add_argument("inproc")
    p.add_argument("--docs", help="file whose bench:begin/bench:end section gets the tables")
    p.add_argument("--prepare", action="store_true", help="only write and upload the datasets")
    args = p.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench: run as root (it drops the page cache before every cold run)")
    start = time.monotonic()
    b = Bench(args)
    b.run(prepare_only=args.prepare)
    if args.prepare:
        log(f"datasets ready in {b.dir}")
        return
    text = report(b, time.monotonic() - start)
    print(text)
    if args.docs and (b.quick or os.environ.get("BENCH_ONLY")):
        log(f"BENCH_QUICK or BENCH_ONLY: {args.docs} left alone")
    elif args.docs:
        update_docs(args.docs, text)
        log(f"wrote the tables to {args.docs}")


if __name__ == "__main__":
    main()
