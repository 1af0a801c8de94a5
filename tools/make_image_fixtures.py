#!/usr/bin/env python3
"""Image files and Pillow's decoding of them for mvrt's decoder test
(tests/runtime/test_image_decode.c): small seeded JPEGs (colour 4:2:0,
grayscale) and PNGs (RGB, RGBA, palette with transparency, 16-bit
grayscale), each with np.asarray(Image.open(f).convert("RGB"))
in expected.safetensors, plus two files whose headers claim huge sizes
(checked from the header, before any allocation).

usage: python3 tools/make_image_fixtures.py OUTDIR
needs: pillow, numpy
"""
import io
import os
import struct
import sys
import zlib

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_preprocess_fixtures import write_safetensors  # noqa: E402


def pattern(rng, w, h):
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    img = np.stack([127 + 120 * np.sin(xx / (2.0 + c) + yy / (3.0 + c)) for c in range(3)], axis=-1)
    img += rng.normal(0, 12, size=img.shape)
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def png_with_size(data, w, h):
    """The same PNG with IHDR claiming w x h (CRC recomputed)."""
    ihdr = bytearray(data[8:8 + 25])
    ihdr[8:16] = struct.pack(">II", w, h)
    ihdr[21:25] = struct.pack(">I", zlib.crc32(bytes(ihdr[4:21])) & 0xFFFFFFFF)
    return data[:8] + bytes(ihdr) + data[33:]


def jpeg_with_size(data, w, h):
    """The same JPEG with its SOF0 frame header claiming w x h."""
    i = data.index(b"\xff\xc0")
    return data[:i + 5] + struct.pack(">HH", h, w) + data[i + 9:]


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(20261127)
    files = {}
    rgb = Image.fromarray(pattern(rng, 37, 29), "RGB")
    buf = io.BytesIO(); rgb.save(buf, "JPEG", quality=90); files["rgb420.jpg"] = buf.getvalue()
    buf = io.BytesIO(); rgb.convert("L").save(buf, "JPEG", quality=85); files["gray.jpg"] = buf.getvalue()
    buf = io.BytesIO(); rgb.save(buf, "PNG"); files["rgb.png"] = buf.getvalue()
    rgba = Image.fromarray(np.dstack([pattern(rng, 23, 31), rng.integers(0, 256, (31, 23), dtype=np.uint8)]), "RGBA")
    buf = io.BytesIO(); rgba.save(buf, "PNG"); files["rgba.png"] = buf.getvalue()
    pal = rgb.convert("P", palette=Image.Palette.ADAPTIVE, colors=16)
    buf = io.BytesIO(); pal.save(buf, "PNG", transparency=3); files["palette.png"] = buf.getvalue()
    g16 = Image.fromarray((rng.integers(0, 1000, (13, 17))).astype(np.uint16))
    buf = io.BytesIO(); g16.save(buf, "PNG"); files["gray16.png"] = buf.getvalue()
    tensors = []
    for name, data in sorted(files.items()):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
        tensors.append((name, np.asarray(Image.open(io.BytesIO(data)).convert("RGB"), dtype=np.uint8)))
    with open(os.path.join(out, "huge.png"), "wb") as f:
        f.write(png_with_size(files["rgb.png"], 100000, 100000))
    with open(os.path.join(out, "huge.jpg"), "wb") as f:
        f.write(jpeg_with_size(files["rgb420.jpg"], 60000, 60000))
    write_safetensors(os.path.join(out, "expected.safetensors"), tensors,
                      {"made_with": "Pillow %s" % Image.__version__})


if __name__ == "__main__":
    main()
