#!/usr/bin/env python3
"""Reference outputs of timm's evaluation transform for mvrt's preprocessing
test (tests/runtime/test_preprocess.c), made with Pillow itself.

timm's transforms_imagenet_eval(img_size, crop_pct, interpolation="bicubic")
is Resize(floor(img_size / crop_pct)) + CenterCrop(img_size) + ToTensor +
Normalize. On a PIL image torchvision's Resize(int) computes the shorter side
= size, longer side = int(size * long / short) and calls
img.resize((w, h), Image.BICUBIC); CenterCrop crops at
(round((w - s) / 2), round((h - s) / 2)). This script makes exactly those
Pillow calls (without importing torch) on seeded images and stores the 8-bit
crops; the test compares mvrt_preprocess_rgb8's crop byte for byte and its
normalized output with (x / 255 - mean) / std.

usage: python3 tools/make_preprocess_fixtures.py OUT.safetensors
needs: pillow, numpy (pip install pillow numpy)
"""
import json
import math
import struct
import sys

import numpy as np
from PIL import Image

# (width, height, image_size, crop_pct, kind): downscales by several factors,
# upscales, odd sizes, portrait and landscape, the identity size, a crop
# whose offset is a half-integer (round half to even), MambaVision's crop_pcts
CASES = [
    (150, 100, 112, 0.98, "noise"),
    (97, 131, 32, 0.93, "noise"),
    (50, 50, 50, 1.0, "smooth"),
    (250, 188, 64, 0.875, "smooth"),
    (64, 48, 120, 0.875, "noise"),
    (1, 1, 8, 1.0, "noise"),
    (33, 17, 16, 0.93, "smooth"),
    (200, 133, 56, 0.93, "mixed"),
    (45, 302, 40, 1.0, "mixed"),
    (240, 180, 224, 1.0, "mixed"),
]


def make_image(rng, w, h, kind):
    if kind == "noise":
        return rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    img = np.stack([127.5 + 127.5 * np.sin(xx / (3.0 + c) + yy / (5.0 + 2 * c) + c) for c in range(3)], axis=-1)
    if kind == "mixed":  # edges and saturated areas: the filter's negative lobes clip
        img[(xx.astype(int) // 7 + yy.astype(int) // 5) % 2 == 0] = 255.0
        img[: h // 3, : w // 4] = 0.0
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def reference(img, size, crop_pct):
    h, w = img.shape[:2]
    s = math.floor(size / crop_pct)
    short, long = (w, h) if w <= h else (h, w)
    new_short, new_long = s, int(s * long / short)
    new_w, new_h = (new_short, new_long) if w <= h else (new_long, new_short)
    pil = Image.fromarray(img, "RGB").resize((new_w, new_h), Image.BICUBIC)
    top, left = int(round((new_h - size) / 2.0)), int(round((new_w - size) / 2.0))
    return np.asarray(pil.crop((left, top, left + size, top + size)), dtype=np.uint8)


def write_safetensors(path, tensors, metadata):
    header, blobs, offset = {"__metadata__": metadata}, [], 0
    for name, arr in tensors:
        data = np.ascontiguousarray(arr).tobytes()
        header[name] = {"dtype": "U8", "shape": list(arr.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)))
        f.write(head)
        for b in blobs:
            f.write(b)


def main():
    rng = np.random.default_rng(20261127)
    tensors, meta = [], {"cases": str(len(CASES)), "made_with": "Pillow %s" % Image.__version__}
    for i, (w, h, size, crop_pct, kind) in enumerate(CASES):
        img = make_image(rng, w, h, kind)
        tensors.append(("case%d.input" % i, img))
        tensors.append(("case%d.expected" % i, reference(img, size, crop_pct)))
        meta["case%d" % i] = json.dumps({"image_size": size, "crop_pct": crop_pct})
    write_safetensors(sys.argv[1], tensors, meta)


if __name__ == "__main__":
    main()
