#!/usr/bin/env python3
"""tools/convert_checkpoint.py without PyTorch: builds checkpoints in the
zip format torch.save writes (a pickle whose tensors are
torch._utils._rebuild_tensor_v2 calls over persistent storages data/<key>),
converts them, and checks every tensor's bytes, shape and dtype, the
non-contiguous and shared-storage cases, the state-dict lookup, that a
hostile global in the pickle is never called, the errors on bad files, and
end to end: the golden mini model's weights wrapped as a checkpoint,
converted, and run by `mvrt check` against the golden output.

usage: test_convert_checkpoint.py --mvrt PATH --golden-dir DIR
"""
import argparse
import collections
import io
import json
import os
import pickle
import struct
import subprocess
import sys
import tempfile
import types
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import convert_checkpoint as cc  # noqa: E402

failures = 0
checks = 0


def check(cond, what):
    global failures, checks
    checks += 1
    if not cond:
        failures += 1
        print("FAIL:", what)


# ---- a stand-in for the parts of torch that pickles refer to ---------------
torch_mod = types.ModuleType("torch")
utils_mod = types.ModuleType("torch._utils")
for name in ("FloatStorage", "HalfStorage", "BFloat16Storage", "LongStorage"):
    setattr(torch_mod, name, type(name, (), {"__module__": "torch"}))


def _rebuild_tensor_v2(*args):
    raise AssertionError("never called while writing")


_rebuild_tensor_v2.__module__ = "torch._utils"
utils_mod._rebuild_tensor_v2 = _rebuild_tensor_v2
sys.modules["torch"], sys.modules["torch._utils"] = torch_mod, utils_mod
hostile_calls = []


def hostile(*args):  # stands for os.system & co.: must never run on load
    hostile_calls.append(args)


# Importable by a plain unpickler in this process, so a converter that
# called pickled globals would call it and fail the check below.
hostile_mod = types.ModuleType("mvrt_test_hostile")
hostile.__module__ = "mvrt_test_hostile"
hostile_mod.hostile = hostile
sys.modules["mvrt_test_hostile"] = hostile_mod


class FakeStorage:
    def __init__(self, key, stype, data):
        self.key, self.stype, self.data = key, stype, data


class FakeTensor:
    def __init__(self, storage, offset, size, stride):
        self.args = (storage, offset, tuple(size), tuple(stride), False, collections.OrderedDict())

    def __reduce__(self):
        return (_rebuild_tensor_v2, self.args)


class Hostile:
    def __reduce__(self):
        return (hostile, ("echo pwned",))


class CkptPickler(pickle.Pickler):
    def persistent_id(self, obj):
        if isinstance(obj, FakeStorage):
            item = {"FloatStorage": 4, "HalfStorage": 2, "BFloat16Storage": 2, "LongStorage": 8}[obj.stype.__name__]
            return ("storage", obj.stype, obj.key, "cpu", len(obj.data) // item)
        return None


def write_checkpoint(path, obj, storages):
    buf = io.BytesIO()
    CkptPickler(buf, protocol=2).dump(obj)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", buf.getvalue())
        z.writestr("archive/version", "3\n")
        for s in storages:
            z.writestr("archive/data/%s" % s.key, s.data)


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    out = {}
    for name, h in header.items():
        a, b = h["data_offsets"]
        out[name] = (h["dtype"], tuple(h["shape"]), raw[8 + n + a:8 + n + b])
    return out, meta


def f32(values):
    return struct.pack("<%df" % len(values), *values)


def unit_cases(tmp):
    s0 = FakeStorage("0", torch_mod.FloatStorage, f32([float(i) for i in range(12)]))
    s1 = FakeStorage("1", torch_mod.HalfStorage, struct.pack("<4H", 0x3C00, 0x4000, 0xC000, 0x0001))
    s2 = FakeStorage("2", torch_mod.LongStorage, struct.pack("<q", 7))
    sd = collections.OrderedDict()
    sd["module.a.weight"] = FakeTensor(s0, 0, (3, 4), (4, 1))           # contiguous
    sd["module.a.weight_t"] = FakeTensor(s0, 0, (4, 3), (1, 4))         # transposed view
    sd["module.a.tail"] = FakeTensor(s0, 8, (4,), (1,))                 # shared storage, offset
    sd["module.b.half"] = FakeTensor(s1, 0, (2, 2), (2, 1))
    sd["module.bn.num_batches_tracked"] = FakeTensor(s2, 0, (), ())
    ckpt = {"state_dict": sd, "epoch": 300, "optimizer": {"junk": Hostile()}, "args": Hostile()}
    src, dst = os.path.join(tmp, "unit.pth.tar"), os.path.join(tmp, "unit.safetensors")
    write_checkpoint(src, ckpt, [s0, s1, s2])
    rc = cc.main([src, dst])
    check(rc == 0, "conversion succeeds")
    check(not hostile_calls, "a hostile global in the pickle is never called")
    t, meta = read_safetensors(dst)
    check(set(t) == {"a.weight", "a.weight_t", "a.tail", "b.half"},
          "names without 'module.', num_batches_tracked dropped: %s" % sorted(t))
    check(t["a.weight"] == ("F32", (3, 4), f32([float(i) for i in range(12)])), "contiguous f32 tensor")
    want_t = [float(4 * j + i) for i in range(4) for j in range(3)]
    check(t["a.weight_t"] == ("F32", (4, 3), f32(want_t)), "a transposed view is made contiguous")
    check(t["a.tail"] == ("F32", (4,), f32([8.0, 9.0, 10.0, 11.0])), "offset into a shared storage")
    check(t["b.half"][0] == "F16" and t["b.half"][2] == s1.data, "f16 kept as f16, bytes unchanged")
    check("source" in meta, "metadata names the source")
    # --keep-all keeps the counter
    check(cc.main([src, dst, "--keep-all"]) == 0 and "bn.num_batches_tracked" in read_safetensors(dst)[0],
          "--keep-all keeps num_batches_tracked")
    # errors: not a zip, no data.pkl, no tensors
    bad = os.path.join(tmp, "bad.pth")
    with open(bad, "wb") as f:
        f.write(b"\x80\x02not a zip")
    check(cc.main([bad, dst]) == 1, "a non-zip file is refused")
    with zipfile.ZipFile(bad, "w") as z:
        z.writestr("archive/version", "3\n")
    check(cc.main([bad, dst]) == 1, "a zip without data.pkl is refused")
    write_checkpoint(bad, {"epoch": 1}, [])
    check(cc.main([bad, dst]) == 1, "a checkpoint without tensors is refused")
    with zipfile.ZipFile(bad, "w") as z:
        z.writestr("archive/data.pkl", b"\x80\x02garbage")
    check(cc.main([bad, dst]) == 1, "a malformed pickle is refused")


def write_safetensors_file(path, items, metadata=None):
    """items: [(name, (dtype, shape, bytes))]"""
    header, blobs, off = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name, (dtype, shape, data) in items:
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def hf_cases(tmp):
    """The Hugging Face layout (nvidia/MambaVision-*-1K): pytorch_model.bin
    and model.safetensors with every name under "model."."""
    dst = os.path.join(tmp, "hf_out.safetensors")
    # pytorch_model.bin: a plain state dict of "model."-prefixed tensors
    s0 = FakeStorage("0", torch_mod.FloatStorage, f32([1.0, 2.0, 3.0, 4.0]))
    s1 = FakeStorage("1", torch_mod.LongStorage, struct.pack("<q", 3))
    sd = collections.OrderedDict()
    sd["model.levels.0.blocks.0.conv1.weight"] = FakeTensor(s0, 0, (2, 2), (2, 1))
    sd["model.levels.0.blocks.0.norm1.num_batches_tracked"] = FakeTensor(s1, 0, (), ())
    src = os.path.join(tmp, "pytorch_model.bin")
    write_checkpoint(src, sd, [s0, s1])
    check(cc.main([src, dst]) == 0, "an HF pytorch_model.bin converts")
    t, _ = read_safetensors(dst)
    check(set(t) == {"levels.0.blocks.0.conv1.weight"}, "HF .bin: 'model.' removed, counter dropped: %s" % sorted(t))
    check(t["levels.0.blocks.0.conv1.weight"] == ("F32", (2, 2), f32([1.0, 2.0, 3.0, 4.0])), "HF .bin: bytes kept")
    # model.safetensors, dtypes kept
    items = [("model.head.weight", ("F32", (1, 3), f32([0.5, -1.0, 2.0]))),
             ("model.head.bias", ("BF16", (2,), struct.pack("<2H", 0x3F80, 0xC000))),
             ("model.norm.num_batches_tracked", ("I64", (), struct.pack("<q", 9)))]
    src = os.path.join(tmp, "model.safetensors")
    write_safetensors_file(src, items, {"format": "pt"})
    check(cc.main([src, dst]) == 0, "an HF model.safetensors converts")
    t, _ = read_safetensors(dst)
    check(set(t) == {"head.weight", "head.bias"}, "HF safetensors: names without 'model.': %s" % sorted(t))
    check(t["head.bias"] == ("BF16", (2,), struct.pack("<2H", 0x3F80, 0xC000)), "HF safetensors: bf16 kept")
    # names not all under "model.": left as they are
    write_safetensors_file(src, [("model.x", ("F32", (1,), f32([1.0]))), ("head.weight", ("F32", (1,), f32([2.0])))])
    check(cc.main([src, dst]) == 0 and set(read_safetensors(dst)[0]) == {"model.x", "head.weight"},
          "mixed names are not renamed")
    # malformed safetensors: refused with a message, no crash
    with open(src, "wb") as f:
        f.write(struct.pack("<Q", 1000) + b"{}")
    check(cc.main([src, dst]) == 1, "a safetensors header past the end is refused")
    write_safetensors_file(src, [("model.x", ("F32", (4,), f32([1.0])))])
    with open(src, "r+b") as f:  # offsets past the data
        raw = f.read()
        f.seek(0)
        f.write(raw.replace(b'"data_offsets": [0, 4]', b'"data_offsets": [0, 99]'))
    check(cc.main([src, dst]) == 1, "a tensor outside the file is refused")


def end_to_end(tmp, mvrt, golden_dir):
    gold = os.path.join(golden_dir, "mv_mini_model.safetensors")
    if not os.path.exists(gold):
        print("note: %s missing: end-to-end case skipped" % gold)
        return
    tensors, meta = read_safetensors(gold)
    prefix = "mini_model.weights."
    storages, sd = [], collections.OrderedDict()
    for name, (dtype, shape, data) in tensors.items():
        if not name.startswith(prefix):
            continue
        s = FakeStorage(str(len(storages)), torch_mod.FloatStorage, data)
        storages.append(s)
        strides, acc = [], 1
        for d in reversed(shape):
            strides.append(acc)
            acc *= d
        sd[name[len(prefix):]] = FakeTensor(s, 0, shape, tuple(reversed(strides)))
    src, conv = os.path.join(tmp, "mini.pth.tar"), os.path.join(tmp, "mini.safetensors")
    write_checkpoint(src, {"model": sd}, storages)
    check(cc.main([src, conv]) == 0, "mini model converts")
    got, _ = read_safetensors(conv)
    check(len(got) == len(sd) and all(got[k][2] == tensors[prefix + k][2] for k in got),
          "every converted tensor has the golden bytes")
    run_converted(tmp, mvrt, tensors, meta, prefix, got, "NVlabs .pth.tar")
    # the same weights in the Hugging Face layout (model.safetensors)
    hf, conv_hf = os.path.join(tmp, "model.safetensors"), os.path.join(tmp, "mini_hf.safetensors")
    write_safetensors_file(hf, [("model." + k, tensors[prefix + k]) for k in sd], {"format": "pt"})
    check(cc.main([hf, conv_hf]) == 0, "mini model converts from the HF layout")
    got_hf, _ = read_safetensors(conv_hf)
    check(set(got_hf) == set(got) and all(got_hf[k] == got[k] for k in got),
          "HF layout: the same tensors as from the .pth.tar")
    run_converted(tmp, mvrt, tensors, meta, prefix, got_hf, "HF model.safetensors")


def run_converted(tmp, mvrt, tensors, meta, prefix, got, what):
    """A golden-format file around the converted weights: mvrt checks it."""
    items = [("mini_model.input", tensors["mini_model.input"]), ("mini_model.output", tensors["mini_model.output"])]
    items += [(prefix + k, v) for k, v in got.items()]
    check_file = os.path.join(tmp, "mini_check.safetensors")
    write_safetensors_file(check_file, items, {"mini_model": meta["mini_model"]})
    r = subprocess.run([mvrt, "check", check_file, "--backend", "cpu"], capture_output=True, text=True)
    print(r.stdout.strip())
    check(r.returncode == 0, "mvrt check passes on the weights converted from the %s (%s)" % (what, r.stderr.strip()))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mvrt")
    ap.add_argument("--golden-dir")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        unit_cases(tmp)
        hf_cases(tmp)
        if args.mvrt and args.golden_dir:
            end_to_end(tmp, args.mvrt, args.golden_dir)
    print("%d checks, %d failed" % (checks, failures))
    return 1 if failures or not checks else 0


if __name__ == "__main__":
    sys.exit(main())
