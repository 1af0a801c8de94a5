# mamba_ssm's selective-scan kernel with a complex A, at the rows of `bench_cuda_scan PLUGIN c64`
# (tests/cuda/bench_cuda_scan.c: same names, shapes and flags), so the two print side by side in one
# device call (issue #32). fp32 inputs, A complex64 (D, N), variable B / C given as real tensors
# (batch, 1, N, 2L) of interleaved (re, im) pairs, as mamba_ssm's kernel takes them; D, delta_bias,
# softplus, z where the row has it. Needs the whole extension (shared/anchors/build_mamba_ext.py:
# the forward-only build has no backward). ms, median of CUDA events; JSON to $OUT/scan_mamba_complex.json.
# usage: python3 bench/anchors/scan_mamba_complex.py   (env ROWS="0,6": only those rows, by index)
import json, os, sys, torch
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(root, ".anchor"))
from anchor_common import ext, median_ms
E = ext(); torch.manual_seed(0)
# name, batch, channels, L, N, z: bench_cuda_scan.c's rows, in its order (MVRT_BENCH_ROWS indexes them alike)
rows = [("MV-T s3 b256", 256, 160, 196, 8, 0), ("MV-T s4 b256", 256, 320, 49, 8, 0),
        ("MV-B s3 b256", 256, 256, 196, 8, 0), ("MV-B s4 b256", 256, 512, 49, 8, 0),
        ("MV-L s3 b64", 64, 392, 196, 8, 0), ("MV-T s3 b1", 1, 160, 196, 8, 0),
        ("LM 8x1536x2048x16 z", 8, 1536, 2048, 16, 1), ("16x64x256x64 z", 16, 64, 256, 64, 1),
        ("LM 1x1536x4096x16 z", 1, 1536, 4096, 16, 1)]
want = {int(v) for v in os.environ.get("ROWS", "").split(",") if v.strip()}
res = {}
for i, (name, b, d, l, n, hz) in enumerate(rows):
    if want and i not in want:
        continue
    dev = "cuda"
    u = torch.randn(b, d, l, device=dev); delta = torch.rand(b, d, l, device=dev) * 0.5
    # Re(A) < 0 keeps the recurrence stable; Im(A) spreads phases over a turn
    A = torch.complex(-torch.rand(d, n, device=dev) - 0.1, (torch.rand(d, n, device=dev) - 0.5) * 6.283)
    B = torch.randn(b, 1, n, 2 * l, device=dev); C = torch.randn(b, 1, n, 2 * l, device=dev)
    D = torch.randn(d, device=dev); bias = torch.rand(d, device=dev) * 0.5
    z = torch.randn(b, d, l, device=dev) if hz else None
    dout = torch.randn(b, d, l, device=dev)
    fwd = lambda: E.fwd(u, delta, A, B, C, D, z, bias, True)
    out, x, *rest = fwd()
    if not torch.isfinite(out).all():
        sys.exit("%s: mamba_ssm's complex forward gave a non-finite output" % name)
    f = median_ms(fwd)
    bw = median_ms(lambda: E.bwd(u, delta, A, B, C, D, z, bias, dout, x, out, None, True, False), n=30)
    res[name + " c64"] = {"fwd_ms": round(f, 4), "bwd_ms": round(bw, 4)}
    print("%-22s c64   fwd %.4f ms  bwd %.4f ms" % (name, f, bw), flush=True)
json.dump(res, open(os.path.join(os.environ.get("OUT", "/tmp"), "scan_mamba_complex.json"), "w"), indent=1)
