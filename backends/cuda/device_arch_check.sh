#!/bin/bash
# The T4 (sm_75) and A100 (sm_80) code paths on whatever NVIDIA GPU is
# here, in one go: for each of 75-virtual and 80-virtual, a build whose
# only code is that architecture's PTX (the driver JIT-compiles it, so
# __CUDA_ARCH__ is 750 / 800 exactly as on those GPUs), then `mvrt info`,
# `mvrt check` of every MambaVision golden file (fp32, fp16; bf16 at sm_80,
# refused at sm_75) and,
# unless MVRT_ARCH_CHECK_QUICK=1, `ctest -L cuda` of that build (every
# CUDA test in that code). Logs go to $OUT (default /tmp/mvrt_out).
# usage: backends/cuda/device_arch_check.sh [75 80]
#   MVRT_GOLDEN_DIR: folder of the golden files (default ../shared/golden)
#   MVRT_CUTLASS_INCLUDE_DIR: CUTLASS headers (sm_80 build's 3xTF32 paths)
set -o pipefail
OUT=${OUT:-/tmp/mvrt_out}
mkdir -p "$OUT"
GOLDEN=${MVRT_GOLDEN_DIR:-$PWD/../shared/golden}
ARCHS=${*:-75 80}
T0=$(date +%s)
log() { echo "=== [$(( $(date +%s) - T0 ))s] $*"; }
CUT=${MVRT_CUTLASS_INCLUDE_DIR:+-DMVRT_CUTLASS_INCLUDE_DIR=$MVRT_CUTLASS_INCLUDE_DIR}
GEN=$(command -v ninja > /dev/null && echo "-G Ninja")
TARGETS="mvrt_tool mvrt_backend_cuda"
[ "${MVRT_ARCH_CHECK_QUICK:-0}" = 1 ] || TARGETS=all
status=0
for A in $ARCHS; do
  B=build-arch$A
  log "configure + build $A-virtual"
  cmake -S . -B $B $GEN $CUT -DMVRT_GOLDEN_DIR="$GOLDEN" -DMVRT_CUDA_ARCHS=$A-virtual -DMVRT_WITH_HIP=OFF \
    -DCMAKE_BUILD_TYPE=Release > "$OUT/arch$A-build.log" 2>&1 &&
  cmake --build $B -j"$(nproc)" --target $TARGETS >> "$OUT/arch$A-build.log" 2>&1 ||
    { grep -E "error" "$OUT/arch$A-build.log" | head -20; status=1; continue; }
  $B/bin/mvrt info 2>&1 | grep -E "device|features"
  for f in "$GOLDEN"/mv_*.safetensors; do
    for p in fp32 fp16 $([ "$A" -ge 80 ] && echo bf16); do
      if timeout 300 $B/bin/mvrt check "$f" --backend cuda --precision $p > "$OUT/arch$A-check.log" 2>&1; then
        echo "sm_$A $p $(basename "$f"): passed"
      else
        echo "sm_$A $p $(basename "$f"): FAILED"; tail -5 "$OUT/arch$A-check.log"; status=1
      fi
    done
    # no bf16 tensor cores below sm_80: a bf16 graph is refused, with a message
    if [ "$A" -lt 80 ]; then
      if $B/bin/mvrt check "$f" --backend cuda --precision bf16 > "$OUT/arch$A-check.log" 2>&1 ||
         ! grep -q "bf16 tensor cores" "$OUT/arch$A-check.log"; then
        echo "sm_$A bf16 $(basename "$f"): NOT REFUSED"; tail -3 "$OUT/arch$A-check.log"; status=1
      else
        echo "sm_$A bf16 $(basename "$f"): refused as required"
      fi
    fi
  done
  if [ "${MVRT_ARCH_CHECK_QUICK:-0}" != 1 ]; then
    log "ctest -L cuda ($A-virtual)"
    (cd $B && ctest -L cuda -j4 --output-on-failure > "$OUT/arch$A-ctest.log" 2>&1) || status=1
    grep -E "tests passed|\*\*\*Failed" "$OUT/arch$A-ctest.log"
  fi
done
log "done (status $status)"
exit $status
