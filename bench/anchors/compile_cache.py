# PyTorch's compile caches carried between leases (lease.sh, watch.sh):
#   compile_cache.py pack OUT DIR...   DIRs -> OUT/tcache.part-a, -b, ... (tar + xz, <= 15 MiB each:
#                                       the most a file from $OUT may hold)
#   compile_cache.py unpack SRC        SRC/tcache.part-* -> the DIRs again (absolute paths)
# xz by Python's lzma (no xz binary needed), preset 1: ~20 MB/s on one core.
import glob, io, os, sys, tarfile, time
PART = 15 << 20
def pack(out, dirs):
    t0, buf = time.time(), io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz", preset=1) as tar:
        for d in dirs:
            if os.path.isdir(d):
                tar.add(d, arcname=d.lstrip("/"))
    data = buf.getvalue()
    for i in range(0, len(data), PART):
        with open(os.path.join(out, "tcache.part-%c" % chr(97 + i // PART)), "wb") as f:
            f.write(data[i:i + PART])
    print("compile caches: %.1f MiB in %d parts (%.0f s)" % (len(data) / 2**20, -(-len(data) // PART), time.time() - t0))
def unpack(src):
    parts = sorted(glob.glob(os.path.join(src, "tcache.part-*")))
    if not parts:
        return
    data = b"".join(open(p, "rb").read() for p in parts)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:xz") as tar:
        tar.extractall("/", filter="tar") if hasattr(tarfile, "tar_filter") else tar.extractall("/")
    print("compile caches restored from %d parts (%.1f MiB)" % (len(parts), len(data) / 2**20))
if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "pack":
        pack(sys.argv[2], sys.argv[3:])
    elif len(sys.argv) == 3 and sys.argv[1] == "unpack":
        unpack(sys.argv[2])
    else:
        sys.exit("usage: compile_cache.py pack OUT DIR... | unpack SRC")
