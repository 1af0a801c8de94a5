#!/usr/bin/env python3
"""Convert an official MambaVision checkpoint to .safetensors with the NVlabs
parameter names, for `mvrt run --weights` and mvrt_model_load(). Reads the
NVlabs .pth.tar / .pth and the Hugging Face layout of nvidia/MambaVision-*-1K
(pytorch_model.bin or model.safetensors, the transformers wrapper's names).

    python3 tools/convert_checkpoint.py mambavision_tiny_1k.pth.tar mambavision_t.safetensors
    python3 tools/convert_checkpoint.py MambaVision-T-1K/model.safetensors mambavision_t.safetensors

Hugging Face layout: the transformers classes (MambaVisionModel,
MambaVisionModelForImageClassification) hold the NVlabs network as
`self.model`, so every name carries a "model." prefix; when all of them do,
it is removed. A .safetensors input (recognized by its header) is copied
tensor by tensor with that renaming; nothing else in it is interpreted.

PyTorch is NOT needed: the checkpoint is read as what torch.save writes (a
zip archive holding a pickle, data.pkl, whose tensors point at raw storages
data/<key>), with an unpickler that only rebuilds tensors and plain
containers and refuses to call anything else, so a checkpoint cannot run
code. The state dict is taken from the key "state_dict" (or "model",
"model_state", "ema") or the top level; a "module." prefix (DataParallel) is
removed. Tensors are written under their PyTorch names, in their own dtype
(F32, F16, BF16, F64, I64, ...), made contiguous. Entries the runtime does
not use (num_batches_tracked) are dropped unless --keep-all is given.
"""
import argparse
import io
import json
import pickle
import struct
import sys
import zipfile

# PyTorch storage type names -> (safetensors dtype, bytes per element)
STORAGE_DTYPES = {
    "FloatStorage": ("F32", 4), "DoubleStorage": ("F64", 8), "HalfStorage": ("F16", 2),
    "BFloat16Storage": ("BF16", 2), "LongStorage": ("I64", 8), "IntStorage": ("I32", 4),
    "ShortStorage": ("I16", 2), "CharStorage": ("I8", 1), "ByteStorage": ("U8", 1),
    "BoolStorage": ("BOOL", 1),
}
# torch.<dtype> names, for checkpoints that pickle dtypes (typed storages)
TORCH_DTYPES = {
    "float32": ("F32", 4), "float": ("F32", 4), "float64": ("F64", 8), "double": ("F64", 8),
    "float16": ("F16", 2), "half": ("F16", 2), "bfloat16": ("BF16", 2), "int64": ("I64", 8),
    "long": ("I64", 8), "int32": ("I32", 4), "int": ("I32", 4), "int16": ("I16", 2),
    "int8": ("I8", 1), "uint8": ("U8", 1), "bool": ("BOOL", 1),
}


class ConvertError(Exception):
    pass


class StorageType:
    def __init__(self, name):
        self.name = name


class DType:
    def __init__(self, name):
        self.name = name


class Storage:
    """A raw storage in the archive: dtype, element size, bytes."""

    def __init__(self, dtype, itemsize, data):
        self.dtype, self.itemsize, self.data = dtype, itemsize, data


class Tensor:
    def __init__(self, storage, offset, size, stride):
        self.storage, self.offset = storage, offset
        self.size, self.stride = tuple(size), tuple(stride)

    def contiguous_bytes(self):
        s, n = self.storage, 1
        for d in self.size:
            n *= d
        item = s.itemsize
        expected, acc = [], 1
        for d in reversed(self.size):
            expected.append(acc)
            acc *= d
        expected.reverse()
        if n == 0:
            return b""
        if all(st == ex or sz == 1 for st, ex, sz in zip(self.stride, expected, self.size)):
            start = self.offset * item
            return bytes(s.data[start:start + n * item])
        # Non-contiguous view: gather element by element (rare in state dicts).
        out = bytearray(n * item)
        idx = [0] * len(self.size)
        for k in range(n):
            src = self.offset + sum(i * st for i, st in zip(idx, self.stride))
            out[k * item:(k + 1) * item] = s.data[src * item:(src + 1) * item]
            for ax in range(len(idx) - 1, -1, -1):
                idx[ax] += 1
                if idx[ax] < self.size[ax]:
                    break
                idx[ax] = 0
        return bytes(out)


def _rebuild_tensor(storage, storage_offset, size, stride, *unused):
    if not isinstance(storage, Storage):
        raise ConvertError("a tensor refers to something that is not a storage")
    return Tensor(storage, storage_offset, size, stride)


def _rebuild_parameter(data, *unused):
    return data


class Opaque:
    """Stands for any other pickled object (optimizer state, argparse args):
    kept inert, never called into."""

    def __init__(self, *args, **kwargs):
        pass

    def __setstate__(self, state):
        pass


def _opaque_factory(*args, **kwargs):
    return Opaque()


class CheckpointUnpickler(pickle.Unpickler):
    def __init__(self, data, zf, root):
        super().__init__(io.BytesIO(data))
        self.zf, self.root, self.cache = zf, root, {}

    def find_class(self, module, name):
        if module == "torch._utils" and name in ("_rebuild_tensor_v2", "_rebuild_tensor"):
            return _rebuild_tensor
        if module == "torch._utils" and name == "_rebuild_parameter":
            return _rebuild_parameter
        if module == "torch" and name in STORAGE_DTYPES:
            return StorageType(name)
        if module == "torch" and name in TORCH_DTYPES:
            return DType(name)
        if module == "collections" and name == "OrderedDict":
            import collections
            return collections.OrderedDict
        if module == "torch.storage" and name == "UntypedStorage":
            return StorageType("ByteStorage")
        # Anything else (argparse.Namespace, numpy scalars, optimizer classes):
        # an inert stand-in. Nothing from the file is ever executed.
        return _opaque_factory

    def persistent_load(self, pid):
        if not isinstance(pid, tuple) or not pid or pid[0] != "storage":
            raise ConvertError("unsupported persistent id in the checkpoint: %r" % (pid,))
        _, stype, key, _location, _numel = pid[:5]
        if isinstance(stype, StorageType):
            dtype, item = STORAGE_DTYPES[stype.name]
        elif isinstance(stype, DType):
            dtype, item = TORCH_DTYPES[stype.name]
        else:
            raise ConvertError("unsupported storage type in the checkpoint: %r" % (stype,))
        if key not in self.cache:
            try:
                data = self.zf.read("%s/data/%s" % (self.root, key))
            except KeyError:
                raise ConvertError("the archive has no storage data/%s" % key)
            self.cache[key] = Storage(dtype, item, data)
        return self.cache[key]


def load_checkpoint(path):
    try:
        zf = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise ConvertError("%s is not a zip-format PyTorch checkpoint (torch.save since PyTorch 1.6); "
                           "re-save it with torch.save(torch.load(path), new_path)" % path)
    with zf:
        pkls = [n for n in zf.namelist() if n.endswith("/data.pkl") or n == "data.pkl"]
        if not pkls:
            raise ConvertError("%s has no data.pkl: not a PyTorch checkpoint" % path)
        root = pkls[0][: -len("/data.pkl")] if "/" in pkls[0] else ""
        try:
            return CheckpointUnpickler(zf.read(pkls[0]), zf, root).load()
        except ConvertError:
            raise
        except Exception as e:  # malformed pickle: say so, don't crash
            raise ConvertError("cannot read %s: %s: %s" % (path, type(e).__name__, e))


def state_dict_of(obj):
    if isinstance(obj, dict):
        for key in ("state_dict", "model", "model_state", "ema", "state_dict_ema"):
            if key in obj and isinstance(obj[key], dict) and any(
                    isinstance(v, Tensor) for v in obj[key].values()):
                return obj[key]
        if any(isinstance(v, Tensor) for v in obj.values()):
            return obj
    raise ConvertError("no state dict found (looked for state_dict, model, model_state, ema and tensors "
                       "at the top level)")


def is_safetensors(path):
    """A safetensors file starts with a little-endian u64 header length and
    a JSON object."""
    try:
        with open(path, "rb") as f:
            head = f.read(9)
    except OSError:
        return False
    return len(head) == 9 and head[8:9] == b"{" and struct.unpack("<Q", head[:8])[0] < (1 << 31)


def read_safetensors(path):
    """{name: (dtype, shape, bytes)} of a safetensors file, checked against
    its size (a truncated or malformed file is an error, never a crash)."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ConvertError("%s: too short for a safetensors header" % path)
    n = struct.unpack("<Q", raw[:8])[0]
    if n > len(raw) - 8:
        raise ConvertError("%s: header of %d bytes runs past the end of the file" % (path, n))
    try:
        header = json.loads(raw[8:8 + n])
    except ValueError as e:
        raise ConvertError("%s: header is not JSON: %s" % (path, e))
    if not isinstance(header, dict):
        raise ConvertError("%s: header is not a JSON object" % path)
    header.pop("__metadata__", None)
    data, out = raw[8 + n:], {}
    for name, h in header.items():
        try:
            dtype, shape, (a, b) = h["dtype"], [int(d) for d in h["shape"]], h["data_offsets"]
        except (TypeError, KeyError, ValueError):
            raise ConvertError("%s: tensor %r has a malformed entry" % (path, name))
        if not (0 <= a <= b <= len(data)):
            raise ConvertError("%s: tensor %r lies outside the file" % (path, name))
        out[name] = (str(dtype), tuple(shape), data[a:b])
    return out


def hf_names(names):
    """The Hugging Face layout: every name under "model." (see the module
    docstring)."""
    names = list(names)
    return bool(names) and all(n.startswith("model.") for n in names)


def write_safetensors(path, tensors, metadata):
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name, (dtype, shape, data) in tensors.items():
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def convert(src, dst, keep_all=False):
    if is_safetensors(src):
        found = read_safetensors(src)
    else:
        sd = state_dict_of(load_checkpoint(src))
        found = {}
        for name, t in sd.items():
            if isinstance(t, Tensor):
                found[name[len("module."):] if name.startswith("module.") else name] = (
                    t.storage.dtype, t.size, t.contiguous_bytes())
    strip = "model." if hf_names(found) else ""
    out = {}
    for name, v in found.items():
        name = name[len(strip):]
        if not keep_all and name.endswith("num_batches_tracked"):
            continue
        out[name] = v
    if not out:
        raise ConvertError("the checkpoint holds no tensors")
    write_safetensors(dst, out, {"source": "converted from %s by mvrt tools/convert_checkpoint.py" %
                                 src.split("/")[-1]})
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint", help="NVlabs .pth.tar / .pth, or Hugging Face pytorch_model.bin / model.safetensors")
    ap.add_argument("output", help=".safetensors to write")
    ap.add_argument("--keep-all", action="store_true", help="keep num_batches_tracked entries too")
    args = ap.parse_args(argv)
    try:
        out = convert(args.checkpoint, args.output, args.keep_all)
    except (ConvertError, OSError) as e:
        print("convert_checkpoint: %s" % e, file=sys.stderr)
        return 1
    n = sum(1 for _ in out)
    params = 0
    for dtype, shape, _ in out.values():
        k = 1
        for d in shape:
            k *= d
        params += k
    print("wrote %s: %d tensors, %.2f M values" % (args.output, n, params / 1e6))
    return 0


if __name__ == "__main__":
    sys.exit(main())
