# One (config, batch, mode) of shared/anchors/torch_mambavision.py (same model code, modes and timing),
# run beside other jobs on one GPU: the compile and warm-up hold /tmp/d/gpu.lock shared (HOLD=1:
# exclusive, for max-autotune, whose compile benchmarks kernels), the timing holds it exclusive.
# Adds peak_mib (max_memory_allocated from model creation) and setup_s. JSON: /tmp/d/tj/<key>.json
import fcntl, json, os, sys, time, torch
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))); here = os.path.join(root, ".anchor")
for p in (here, os.path.join(here, "shim"), os.path.join(here, "mv")): sys.path.insert(0, p)
from anchor_common import median_ms
import mambavision.models.mamba_vision as mvm
torch.backends.cuda.matmul.allow_tf32 = False
ctor = {"T": mvm.mamba_vision_T, "T2": mvm.mamba_vision_T2, "S": mvm.mamba_vision_S, "B": mvm.mamba_vision_B,
        "L": mvm.mamba_vision_L, "L2": mvm.mamba_vision_L2}
MODES = {"eager-fp32": (None, None), "eager-bf16": (None, torch.bfloat16), "eager-fp16": (None, torch.float16),
         "compile-fp32": ("default", None), "compile-bf16": ("default", torch.bfloat16), "compile-fp16": ("default", torch.float16),
         "autotune-bf16": ("max-autotune-no-cudagraphs", torch.bfloat16), "autotune-fp16": ("max-autotune-no-cudagraphs", torch.float16),
         "graphs-fp32": ("reduce-overhead", None), "graphs-bf16": ("reduce-overhead", torch.bfloat16),
         "graphs-fp16": ("reduce-overhead", torch.float16)}
cfg, bs, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
hold = os.environ.get("HOLD") == "1"
lock = open("/tmp/d/gpu.lock", "a")
key = "%s b%d %s" % (cfg, bs, mode)
def log(msg): print("[%s %.0f] %s: %s" % (time.strftime("%H:%M:%S"), time.time() - T0, key, msg), flush=True)
T0 = time.time()
fcntl.flock(lock, fcntl.LOCK_EX if hold else fcntl.LOCK_SH); log("compile lock")
torch.cuda.reset_peak_memory_stats()
m = ctor[cfg]().cuda().eval(); x = torch.randn(bs, 3, 224, 224, device="cuda")
cmode, amp = MODES[mode]
f = torch.compile(m, mode=cmode) if cmode else m
t0 = time.time()
with torch.no_grad(), torch.autocast("cuda", dtype=amp or torch.float32, enabled=amp is not None):
    for _ in range(3): f(x)
    torch.cuda.synchronize(); setup = time.time() - t0
    if not hold:
        fcntl.flock(lock, fcntl.LOCK_UN); log("compiled in %.0f s, waiting" % setup); fcntl.flock(lock, fcntl.LOCK_EX)
    log("timing")
    ms = median_ms(lambda: f(x), n=20 if bs > 8 else 50, warm=3)
peak = torch.cuda.max_memory_allocated() / 2**20
fcntl.flock(lock, fcntl.LOCK_UN)
res = {key: {"img_s": round(bs / ms * 1e3, 1), "ms": round(ms, 4), "peak_mib": round(peak, 1), "setup_s": round(setup)}}
os.makedirs("/tmp/d/tj", exist_ok=True)
json.dump(res, open("/tmp/d/tj/%s.json" % key.replace(" ", "_"), "w"))
print("%-28s %10.1f img/s  %9.3f ms/batch  peak %.0f MiB  (setup %.0f s)" % (key, bs / ms * 1e3, ms, peak, setup), flush=True)
