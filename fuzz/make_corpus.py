#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz targets (fuzz/corpus/<target>/).

The seeds are small valid inputs (plus a few near-misses) that start each
target deep inside the code it fuzzes:
  fuzz_safetensors   file images of every dtype, rank 0..8, escapes,
                     metadata, and the headers of the golden files in
                     ../shared/golden with every tensor shrunk to a few values;
  fuzz_model_config  config JSON, NUL, then a .safetensors image holding every
                     weight of that (tiny) model, for each model kind; the
                     golden files' config JSON alone;
  fuzz_scan_args     valid call descriptions (sizes, flags, dtypes, groups,
                     layouts) and a few with corruptions (see fuzz_scan_args.c).

Deterministic (fixed random seed): running it again rewrites the same bytes.
Usage: fuzz/make_corpus.py [--golden-dir DIR] [--out DIR]
"""
import argparse
import json
import math
import os
import random
import struct

DTYPE_SIZE = {"F32": 4, "F16": 2, "BF16": 2, "F64": 8, "I32": 4, "I64": 8, "U8": 1}


def encode(rng, dtype, values):
    out = bytearray()
    for v in values:
        if dtype == "F32":
            out += struct.pack("<f", v)
        elif dtype == "F64":
            out += struct.pack("<d", v)
        elif dtype == "F16":
            out += struct.pack("<e", v)
        elif dtype == "BF16":
            out += struct.pack("<f", v)[2:4]
        elif dtype == "I32":
            out += struct.pack("<i", int(v * 100))
        elif dtype == "I64":
            out += struct.pack("<q", int(v * 100))
        else:
            out += struct.pack("<B", int(abs(v) * 100) % 256)
    return bytes(out)


def safetensors(tensors, metadata=None, pad=True):
    """tensors: list of (name, dtype, shape, raw bytes) -> file image."""
    header = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    data = bytearray()
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": list(shape),
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + bytes(data)


def tensor(rng, name, dtype, shape, lo=-0.5, hi=0.5):
    n = math.prod(shape)
    vals = [rng.uniform(lo, hi) for _ in range(n)]
    return (name, dtype, shape, encode(rng, dtype, vals))


# ---- fuzz_safetensors --------------------------------------------------------

def safetensors_seeds(rng, golden_dir):
    seeds = {}
    seeds["empty_object"] = struct.pack("<Q", 2) + b"{}"
    seeds["metadata_only"] = safetensors([], {"cases": "1", "config": "{\"kind\": \"mixer\"}"})
    seeds["every_dtype"] = safetensors(
        [tensor(rng, n, d, s) for n, d, s in [
            ("f32", "F32", (2, 3)), ("f16", "F16", (4,)), ("bf16", "BF16", ()),
            ("f64", "F64", (1, 2)), ("i32", "I32", (3,)), ("i64", "I64", (1,)),
            ("u8", "U8", (5,)), ("empty", "F32", (0, 7)), ("rank8", "F32", (1,) * 8)]],
        {"semantics": "seed"})
    # Escapes in names and metadata, unknown keys, whitespace, no padding.
    hdr = ('{ "__metadata__" : {"k\\u00e9y": "v\\n\\"q\\"", "case0": "\\ud83d\\ude00"},\n'
           ' "a\\/b\\\\c": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8], '
           '"extra": [1, {"x": null}, true, -1.5e3]},\n'
           ' "z": {"data_offsets": [8, 10], "shape": [1], "dtype": "F16"}}').encode()
    seeds["escapes"] = struct.pack("<Q", len(hdr)) + hdr + bytes(range(10))
    # Near misses: one byte short of data, offsets that overlap.
    good = safetensors([tensor(rng, "w", "F32", (3,))])
    seeds["short_data"] = good[:-1]
    hdr = b'{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}'
    seeds["overlap"] = struct.pack("<Q", len(hdr)) + hdr + bytes(8)

    # The golden files' headers, every tensor shrunk to at most 2 per dim.
    for fname in sorted(os.listdir(golden_dir)) if os.path.isdir(golden_dir) else []:
        if not fname.endswith(".safetensors"):
            continue
        with open(os.path.join(golden_dir, fname), "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
            header = json.loads(f.read(n))
        meta = header.pop("__metadata__", None)
        names = sorted(header)
        if len(names) > 40:  # keep each seed small: a spread of the names
            names = names[:: max(1, len(names) // 40)]
        ts = []
        for name in names:
            e = header[name]
            shape = tuple(min(d, 2) for d in e["shape"])
            ts.append(tensor(rng, name, e["dtype"], shape))
        seeds["golden_" + fname.replace(".safetensors", "")] = safetensors(ts, meta)
    return seeds


# ---- fuzz_model_config -------------------------------------------------------

class Weights:
    """Every parameter model.c reads, under its PyTorch name."""

    def __init__(self, rng, dtypes=("F32",)):
        self.rng, self.dtypes, self.items = rng, dtypes, []

    def add(self, name, shape, lo=-0.3, hi=0.3):
        dtype = self.dtypes[len(self.items) % len(self.dtypes)]
        self.items.append(tensor(self.rng, name, dtype, shape, lo, hi))

    def bn(self, p, c):
        self.add(p + "weight", (c,), 0.5, 1.5)
        self.add(p + "bias", (c,))
        self.add(p + "running_mean", (c,))
        self.add(p + "running_var", (c,), 0.5, 2.0)

    def block(self, p, C, attention, cfg):
        r = cfg.get("mlp_ratio", 4)
        if cfg.get("layer_scale"):
            self.add(p + "gamma_1", (C,))
            self.add(p + "gamma_2", (C,))
        self.add(p + "norm1.weight", (C,), 0.5, 1.5)
        self.add(p + "norm1.bias", (C,))
        if attention:
            self.add(p + "mixer.qkv.weight", (3 * C, C))
            if cfg.get("qkv_bias", True):
                self.add(p + "mixer.qkv.bias", (3 * C,))
            self.add(p + "mixer.proj.weight", (C, C))
            self.add(p + "mixer.proj.bias", (C,))
        else:
            h, N, d_conv = C // 2, cfg.get("d_state", 8), cfg.get("d_conv", 3)
            R = (C + 15) // 16
            self.add(p + "mixer.in_proj.weight", (C, C))
            self.add(p + "mixer.conv1d_x.weight", (h, 1, d_conv))
            self.add(p + "mixer.conv1d_z.weight", (h, 1, d_conv))
            self.add(p + "mixer.x_proj.weight", (R + 2 * N, h))
            self.add(p + "mixer.dt_proj.weight", (h, R))
            self.add(p + "mixer.dt_proj.bias", (h,), -4.0, -2.0)
            self.add(p + "mixer.A_log", (h, N), 0.0, 2.0)
            self.add(p + "mixer.D", (h,), 0.5, 1.5)
            self.add(p + "mixer.out_proj.weight", (C, C))
        self.add(p + "norm2.weight", (C,), 0.5, 1.5)
        self.add(p + "norm2.bias", (C,))
        self.add(p + "mlp.fc1.weight", (r * C, C))
        self.add(p + "mlp.fc1.bias", (r * C,))
        self.add(p + "mlp.fc2.weight", (C, r * C))
        self.add(p + "mlp.fc2.bias", (C,))

    def conv_block(self, p, C):
        for i in (1, 2):
            self.add(p + f"conv{i}.weight", (C, C, 3, 3))
            self.add(p + f"conv{i}.bias", (C,))
            self.bn(p + f"norm{i}.", C)

    def stage(self, p, dim, depth, conv, first_attention, downsample, cfg):
        for i in range(depth):
            q = f"{p}blocks.{i}."
            if conv:
                self.conv_block(q, dim)
            else:
                self.block(q, dim, i >= first_attention, cfg)
        if downsample:
            self.add(p + "downsample.reduction.0.weight", (2 * dim, dim, 3, 3))

    def image(self, cfg):
        return safetensors(self.items)


def model_seeds(rng, golden_dir):
    seeds = {}

    def put(name, cfg, build, dtypes=("F32",)):
        w = Weights(rng, dtypes)
        build(w, cfg)
        seeds[name] = json.dumps(cfg).encode() + b"\0" + w.image(cfg)

    mixer = {"kind": "mixer", "dim": 8, "tokens": 5, "batch": 2, "d_state": 4, "d_conv": 3,
             "mlp_ratio": 2}
    put("mixer", mixer, lambda w, c: w.block("", c["dim"], False, c))
    put("mixer_f16_bf16_f64", dict(mixer, dim=6, tokens=1),
        lambda w, c: w.block("", c["dim"], False, c), ("F16", "BF16", "F64", "F32"))
    attn = {"kind": "attention", "dim": 8, "heads": 2, "tokens": 7, "batch": 1, "mlp_ratio": 2,
            "qkv_bias": True, "layer_scale": 1e-5}
    put("attention", attn, lambda w, c: w.block("", c["dim"], True, c))
    stage = {"kind": "stage", "dim": 8, "depth": 3, "heads": 2, "window": 2, "layer_scale": None,
             "transformer_blocks": [2], "downsample": True, "input": [1, 8, 5, 3], "d_state": 4,
             "mlp_ratio": 2}
    put("stage_hybrid", stage, lambda w, c: w.stage("", 8, 3, False, 2, True, c))
    conv = {"kind": "stage", "dim": 4, "depth": 1, "conv": 1, "downsample": True,
            "input": [2, 4, 6, 6]}
    put("stage_conv", conv, lambda w, c: w.stage("", 4, 1, True, 1, True, c))
    net = {"kind": "model", "dim": 2, "in_dim": 4, "in_chans": 3, "depths": [1, 1, 2, 2],
           "window_size": [2, 2, 2, 1], "mlp_ratio": 1, "num_heads": [1, 1, 2, 2],
           "num_classes": 3, "image": [32, 32], "batch": 1, "d_state": 4, "qkv_bias": True,
           "layer_scale": None}

    def network(w, c):
        dim, in_dim = c["dim"], c["in_dim"]
        w.add("patch_embed.conv_down.0.weight", (in_dim, c["in_chans"], 3, 3))
        w.bn("patch_embed.conv_down.1.", in_dim)
        w.add("patch_embed.conv_down.3.weight", (dim, in_dim, 3, 3))
        w.bn("patch_embed.conv_down.4.", dim)
        for lv in range(4):
            d = c["depths"][lv]
            conv_level = lv < 2
            w.stage(f"levels.{lv}.", dim << lv, d, conv_level, d if conv_level else (d + 1) // 2,
                    lv < 3, c)
        C = dim << 3
        w.bn("norm.", C)
        w.add("head.weight", (c["num_classes"], C))
        w.add("head.bias", (c["num_classes"],))
    put("network", net, network)

    # Config JSON alone: weights from a seed (mvrt_model_init_random).
    seeds["json_mixer_random"] = json.dumps(dict(mixer, dim=4)).encode()
    seeds["json_attention_random"] = json.dumps(dict(attn, layer_scale=None)).encode()
    seeds["json_edge"] = (b' { "kind" : "stage", "dim": 4, "depth": 1, "heads": 1, '
                          b'"window": 1, "unknown": {"a": [1, "x", {"b": null}]}, '
                          b'"transformer_blocks": [], "image": [3, 5], "batch": 2 } ')
    # The golden files' configs (too large to load here: parsing only).
    for fname in sorted(os.listdir(golden_dir)) if os.path.isdir(golden_dir) else []:
        if not fname.startswith("mv_") or not fname.endswith(".safetensors"):
            continue
        with open(os.path.join(golden_dir, fname), "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
            meta = json.loads(f.read(n)).get("__metadata__", {})
        for key, value in sorted(meta.items()):
            if value.lstrip().startswith("{"):
                seeds["golden_json_" + key] = value.encode()
    return seeds


# ---- fuzz_scan_args ----------------------------------------------------------

# Flag bits of the 5th byte and mode bits of the 6th (see fuzz_scan_args.c).
BVAR, CVAR, GROUPED, HAS_D, HAS_Z, HAS_BIAS, SOFTPLUS, LAST = (1 << i for i in range(8))
F32, F16, BF16 = 0, 1, 2


def scan_seed(Bt=1, Dm=1, L=1, N=1, flags=0, dtype=F32, threads=1, long_l=False, big_n=False,
              special=False, stream=False, g=0, layouts=None, corruptions=()):
    mode = dtype | ((threads - 1) << 2) | (long_l << 4) | (big_n << 5) | (special << 6) | (stream << 7)
    b = bytes([Bt - 1, Dm - 1, L - 1, N - 1, flags, mode, g])
    layouts = list(layouts or [])
    b += bytes((layouts + [0] * 19)[:19])
    for c in corruptions:
        b += bytes(c)
    return b


def scan_seeds():
    mv = BVAR | CVAR | HAS_D | HAS_BIAS | SOFTPLUS | LAST
    s = {
        "minimal": scan_seed(),
        "mambavision_f32": scan_seed(2, 8, 49, 8, mv, threads=2),
        "mambavision_bf16": scan_seed(2, 8, 49, 8, mv, dtype=BF16, stream=True),
        "lm_with_z_f16": scan_seed(1, 6, 33, 16, BVAR | CVAR | HAS_D | HAS_Z | SOFTPLUS,
                                   dtype=F16),
        "groups": scan_seed(3, 8, 17, 5, BVAR | CVAR | GROUPED | HAS_Z | LAST, g=2),
        "constant_bc": scan_seed(2, 3, 20, 4, HAS_D | HAS_BIAS),
        "constant_b_variable_c": scan_seed(1, 5, 65, 3, CVAR | HAS_Z | LAST, threads=3),
        "long_rows": scan_seed(1, 2, 5, 4, BVAR | CVAR | HAS_D, long_l=True),
        "many_states": scan_seed(1, 3, 100, 3, BVAR | CVAR | LAST, big_n=True),
        "column_major": scan_seed(2, 4, 9, 3, mv | HAS_Z, layouts=[1] * 19),
        "padded_offsets": scan_seed(2, 4, 9, 3, mv | HAS_Z, dtype=F16,
                                    layouts=[2 | (k % 4) << 2 | (k % 16) << 4 for k in range(19)]),
        "broadcast_inputs": scan_seed(2, 4, 9, 3, mv | HAS_Z, dtype=BF16,
                                      layouts=[3 | (k % 3) << 4 for k in range(19)]),
        "special_values": scan_seed(2, 4, 30, 4, mv | HAS_Z, special=True),
    }
    # Corruptions: (tensor slot 0..18 or 19 = whole call, field, value).
    base = dict(Bt=2, Dm=4, L=9, N=3, flags=mv | HAS_Z)
    cor = {
        "bad_rank_u": [(0, 1, 3)],
        "bad_dtype_A": [(2, 2, 2)],
        "shape_mismatch_delta": [(1, 3 | (2 << 4), 9)],
        "huge_stride_B": [(3, 4 | (1 << 4), 18)],
        "negative_stride_out": [(8, 4, 4)],
        "odd_offset_z": [(6, 5, 1)],
        "short_buffer_C": [(4, 6, 0)],
        "other_backend_dA": [(13, 7, 0)],
        "misaligned_du": [(11, 8, 0)],
        "output_stride0": [(9, 10, 0)],
        "missing_dD": [(16, 0, 0)],
        "softplus_2": [(19, 0, 2)],
        "null_args": [(19, 1, 0)],
        "workspace_short": [(19, 3, 2)],
        "workspace_misaligned": [(19, 3, 3)],
        "workspace_other_backend": [(19, 3, 4)],
        "workspace_exact": [(19, 3, 1)],
        "stream_other_backend": [(19, 4, 2)],
        "query_null_backend": [(19, 5, 2)],
    }
    for name, c in cor.items():
        s["corrupt_" + name] = scan_seed(**base, corruptions=c)
    return s


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--golden-dir", default=os.path.join(here, "..", "..", "shared", "golden"))
    ap.add_argument("--out", default=os.path.join(here, "corpus"))
    a = ap.parse_args()
    rng = random.Random(20240611)
    sets = {
        "fuzz_safetensors": safetensors_seeds(rng, a.golden_dir),
        "fuzz_model_config": model_seeds(rng, a.golden_dir),
        "fuzz_scan_args": scan_seeds(),
    }
    total = 0
    for target, seeds in sets.items():
        d = os.path.join(a.out, target)
        os.makedirs(d, exist_ok=True)
        for name, data in seeds.items():
            with open(os.path.join(d, "seed_" + name), "wb") as f:
                f.write(data)
            total += len(data)
        print(f"{target}: {len(seeds)} seeds, {sum(map(len, seeds.values()))} bytes")
    print(f"total {total} bytes")


if __name__ == "__main__":
    main()
