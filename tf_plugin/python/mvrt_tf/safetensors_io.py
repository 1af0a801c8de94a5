"""A small numpy reader for the .safetensors format (no extra dependency).

Format: 8-byte little-endian header length, a JSON header
{"name": {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}},
then the raw little-endian tensor bytes. Offsets are checked against the file.
"""
import json
import struct

import numpy as np

_DTYPES = {
    "F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "F16": np.dtype("<f2"),
    "I64": np.dtype("<i8"), "I32": np.dtype("<i4"), "I16": np.dtype("<i2"),
    "I8": np.dtype("i1"), "U8": np.dtype("u1"), "BOOL": np.dtype("?"),
    "BF16": np.dtype("<u2"),  # converted to float32 below
}


def load_safetensors(path):
    """Returns (tensors: dict name -> numpy array, metadata: dict str -> str).
    BF16 tensors are returned as float32 (exactly)."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise ValueError("%s: too short for a safetensors file" % path)
    (header_len,) = struct.unpack("<Q", blob[:8])
    if header_len > len(blob) - 8:
        raise ValueError("%s: header length %d exceeds the file" % (path, header_len))
    header = json.loads(blob[8:8 + header_len].decode("utf-8"))
    data = memoryview(blob)[8 + header_len:]
    metadata = header.pop("__metadata__", {}) or {}
    tensors = {}
    for name, info in header.items():
        dtype = info["dtype"]
        if dtype not in _DTYPES:
            raise ValueError("%s: tensor %s has unsupported dtype %s" % (path, name, dtype))
        begin, end = info["data_offsets"]
        shape = tuple(int(d) for d in info["shape"])
        nbytes = int(np.prod(shape, dtype=np.int64)) * _DTYPES[dtype].itemsize
        if not (0 <= begin <= end <= len(data)) or end - begin != nbytes:
            raise ValueError("%s: tensor %s has bad data_offsets %s" % (path, name, (begin, end)))
        arr = np.frombuffer(data[begin:end], dtype=_DTYPES[dtype]).reshape(shape)
        if dtype == "BF16":
            arr = (arr.astype(np.uint32) << 16).view(np.float32)
        tensors[name] = np.array(arr)  # own the memory
    return tensors, metadata
