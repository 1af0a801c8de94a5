#!/usr/bin/env python3
"""`mvrt classify` gives the same top-K on another backend as on the CPU:
the same classes in the same order and the same probabilities (printed
to 6 decimals: within 3e-6), fp32, on the project's sample photos and the
decoder fixtures (JPEG 4:2:0, grayscale, palette PNG), two per graph run
so a batch holds different images; with seeded MambaVision-T weights and
with the golden mini model (its config and weights from
mv_mini_model.safetensors: --config FILE.json, --weights, --prefix).

Also: every class index is below the model's class count, and the
ImageNet names are printed for the 1000-class model only (the mini model
has 10 classes: indices only). With --backend cpu the CPU is compared with
itself (run to run) and those checks run in CI.

usage: test_classify_backends.py --mvrt PATH --backend NAME --golden-dir DIR FILE...
Exit 77 (skip) when the backend is unavailable.
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile


def classify(mvrt, backend, files, model_args, labels):
    cmd = [mvrt, "classify", "--backend", backend, "--top", "5", "--json", "--batch", "2"] + model_args + files
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode == 77:
        print("%s: backend unavailable" % backend)
        sys.exit(77)
    if run.returncode != 0:
        sys.exit("%s failed (%d): %s" % (" ".join(cmd), run.returncode, run.stderr.strip()))
    out = {}
    for line in run.stdout.splitlines():
        obj = json.loads(line)
        out[obj["file"]] = [(t["class"], t["prob"]) for t in obj["top"]]
        labels.extend(t["label"] for t in obj["top"])
    return out


def safetensors_metadata(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return json.loads(f.read(n)).get("__metadata__", {})


def compare(a, what, model_args, classes):
    """Top-K on the CPU and on a.backend; classes: how many the model has
    (the ImageNet names are printed only for a model of 1000)."""
    print("%s:" % what)
    labels = []
    got = classify(a.mvrt, a.backend, a.files, model_args, labels)  # first: exits 77 if unavailable
    ref = classify(a.mvrt, "cpu", a.files, model_args, labels)
    failures = 0
    bad = [c for top in list(ref.values()) + list(got.values()) for c, _ in top if not 0 <= c < classes]
    named = sum(1 for n in labels if n is not None)
    if bad or named != (len(labels) if classes == 1000 else 0):
        print("FAIL: class indices outside [0, %d): %s; %d of %d labels named" % (classes, bad, named, len(labels)))
        failures += 1
    if sorted(ref) != sorted(got) or len(ref) != len(a.files):
        print("FAIL: files classified differ: cpu %s, %s %s" % (sorted(ref), a.backend, sorted(got)))
        failures += 1
    for f in sorted(set(ref) & set(got)):
        classes_ref, classes_got = [c for c, _ in ref[f]], [c for c, _ in got[f]]
        worst = max(abs(p - q) for (_, p), (_, q) in zip(ref[f], got[f]))
        same = classes_ref == classes_got and worst <= 3e-6
        print("%s %s: cpu %s, %s %s, max |prob diff| %.1e" % ("ok  " if same else "FAIL", f, ref[f][:3],
                                                              a.backend, got[f][:3], worst))
        failures += not same
    print("%d of %d files differ" % (failures, len(ref)))
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mvrt", required=True)
    ap.add_argument("--backend", required=True)
    ap.add_argument("--golden-dir", required=True)
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    failures = compare(a, "MambaVision-T, seeded weights", [], 1000)
    golden = os.path.join(a.golden_dir, "mv_mini_model.safetensors")
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "mini_model.json")
        meta = safetensors_metadata(golden)["mini_model"]
        with open(config, "w") as f:
            f.write(meta)
        failures += compare(a, "golden mini model", ["--config", config, "--weights", golden,
                                                     "--prefix", "mini_model.weights."], json.loads(meta)["num_classes"])
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
