#!/bin/bash
# One device lease for issue #32 as one background job (watch.sh starts it when LEASE_SCRIPT names
# it): build mvrt's scan targets and mamba_ssm's whole extension side by side, run the complex-A
# tests, then the same-call table: mamba_ssm's kernel (scan_mamba.py with docs/performance.md's
# EXTRA_ROWS, scan_mamba_complex.py), `mvrt bench scan --anchor` per dtype and bench_cuda_scan c64.
# Logs in /tmp/d. Needs .anchor (shared/anchors/README.md) and .golden; not .cutlass (no GEMMs here).
#   LEASE_SCAN_CTEST  ctest -R selection run while the extension builds (default: complex-A tests)
#   LEASE_SCAN_CX_ONLY  1: complex A only (mamba's f32 forward and complex backward: build_mamba_cx.py)
#   LEASE_PREBUILT    a build dir carried from the development machine (bin/, lib/): no build here
#   LEASE_GOLDEN_CX   the complex-A golden file (default .golden/complex_a_cases.safetensors)
#   LEASE_SCAN_AFTER  a command line run while the extension compiles (e.g. ncu on one row), in $D/after.log
#   LEASE_SCAN_VARIANTS  a carried folder of plugins built with other compile-time constants
#                     (libmvrt_backend_cuda_NAME.so, or *.tar.xz of them): `bench_cuda_scan c64` with each, before and
#                     after mamba's kernel, in $D/c64_NAME_1.log and _2.log (session 69 timed two so)
D=/tmp/d; export B=build-dev; T0=$(date +%s)
log() { echo "=== [$(( $(date +%s) - T0 ))s] $*" | tee -a $D/pipe.log; }
export PYTHONUNBUFFERED=1 OUT_JSON=$D
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader > $D/gpu.txt
log start; cat $D/gpu.txt >> $D/pipe.log
if [ -n "$LEASE_SCAN_CX_ONLY" ]; then EXT=bench/anchors/build_mamba_cx.py; else EXT=.anchor/build_mamba_ext.py; fi
( MAX_JOBS=10 python3 $EXT > $D/ext.log 2>&1; echo $? > $D/ext.rc ) &
if [ -n "$LEASE_PREBUILT" ]; then
  # mvrt built on the development machine (CUDA compiles there, nothing runs) and carried: its
  # bin/ and lib/ (RUNPATH points at that machine's build dir, so LD_LIBRARY_PATH finds lib/ here);
  # the complex-A tests run directly, without CTest's absolute paths
  B=$LEASE_PREBUILT; export LD_LIBRARY_PATH=$PWD/$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  PLUGIN=$B/lib/libmvrt_backend_cuda.so; ls -la $PLUGIN >> $D/pipe.log
  G=${LEASE_GOLDEN_CX:-.golden/complex_a_cases.safetensors}
  { $B/bin/test_scan_complex --backend cuda; echo "scan_complex_cuda rc $?"
    MVRT_CUDA_SCAN_CX_BC_MB=1 $B/bin/test_scan_complex --backend cuda; echo "scan_complex_cuda_subtiles rc $?"
    $B/bin/mvrt check $G --backend cuda; echo "golden_complex_cuda rc $?"
    $B/bin/mvrt check $G --backend cuda --strided; echo "golden_complex_cuda_strided rc $?"
  } > $D/ctest.log 2>&1
  grep -E " rc [0-9]+$" $D/ctest.log >> $D/pipe.log; log "tests done"
else
GEN=""; command -v ninja > /dev/null && GEN="-G Ninja"
cmake $GEN -S . -B $B -DMVRT_GOLDEN_DIR=$PWD/.golden -DMVRT_CUDA_ARCHS=90 -DMVRT_WITH_HIP=OFF \
  -DMVRT_WITH_TF=OFF -DCMAKE_BUILD_TYPE=Release > $D/build.log 2>&1 &&
  cmake --build $B -j8 --target mvrt_tool mvrt_backend_cuda bench_cuda_scan test_scan_complex \
    scan_conformance test_cuda_scan >> $D/build.log 2>&1
log "build rc $?"; grep -E "error" $D/build.log | head -20 >> $D/pipe.log
PLUGIN=$B/lib/libmvrt_backend_cuda.so; ls -la $PLUGIN >> $D/pipe.log
( cd $B && ctest -R "${LEASE_SCAN_CTEST:-complex}" -L cuda --timeout 600 --output-on-failure > $D/ctest.log 2>&1 )
log "ctest rc $?"; grep -E "tests passed|Failed|\*\*\*|Total Test" $D/ctest.log >> $D/pipe.log
fi
# the complex-A rows first (mvrt alone on the GPU while the extension compiles on the CPUs)
$B/bin/bench_cuda_scan $PLUGIN c64 > $D/bench_c64.log 2>&1; log "bench c64 rc $?"
variants() { # $1: run number
  [ -n "$LEASE_SCAN_VARIANTS" ] || return 0
  [ "$1" != 1 ] || for t in "$LEASE_SCAN_VARIANTS"/*.tar.xz; do [ -f "$t" ] && tar xJf "$t" -C "$LEASE_SCAN_VARIANTS"; done
  for v in "$LEASE_SCAN_VARIANTS"/libmvrt_backend_cuda_*.so; do
    [ -f "$v" ] || continue
    n=${v##*/libmvrt_backend_cuda_}; n=${n%.so}
    $B/bin/bench_cuda_scan "$v" c64 > $D/c64_${n}_$1.log 2>&1; log "bench c64 $n ($1) rc $?"
  done
}
variants 1
if [ -n "$LEASE_SCAN_AFTER" ]; then bash -c "$LEASE_SCAN_AFTER" > $D/after.log 2>&1; log "after rc $?"; fi
while [ ! -f $D/ext.rc ]; do sleep 2; done; log "ext rc $(cat $D/ext.rc): $(tail -1 $D/ext.log)"
OUT=$D python3 bench/anchors/scan_mamba_complex.py > $D/mamba_cx.log 2>&1; log "mamba complex rc $?"
$B/bin/bench_cuda_scan $PLUGIN c64 > $D/bench_c64_2.log 2>&1; log "bench c64 (again) rc $?"
variants 2
[ -n "$LEASE_SCAN_CX_ONLY" ] && { log done; touch $D/all.done; exit 0; }
OUT=$D EXTRA_ROWS="16x64x256x128 z:16:64:256:128:1,16x64x256x256 z:16:64:256:256:1,LM L4096 b1 z:1:1536:4096:16:1,LM L8192 b1 z:1:1536:8192:16:1,LM L4096 b8 z:8:1536:4096:16:1,LM L8192 b8 z:8:1536:8192:16:1" \
  python3 .anchor/scan_mamba.py > $D/mamba.log 2>&1; log "scan_mamba rc $?"
for dt in f32 bf16 f16; do
  $B/bin/mvrt bench scan --backend cuda --dtype $dt --anchor $D/scan_mamba.json > $D/bench_$dt.log 2>&1; log "bench $dt rc $?"
done
log done; touch $D/all.done
