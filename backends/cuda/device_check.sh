#!/bin/bash
# One-call check of the CUDA backend on a GPU machine: configure + build for
# the local GPU only, plugin/scan tests, benchmark (f32 auto + TPR variants,
# f16/bf16), ctest -L cuda (conformance + golden), compute-sanitizer memcheck
# and racecheck on small scan cases, then the 64-bit test. Logs go to $OUT.
# usage: backends/cuda/device_check.sh [arch, default 90]
set -o pipefail
OUT=${OUT:-/tmp/mvrt_out}
mkdir -p "$OUT"
ARCH=${1:-90}
B=build-dev
T0=$(date +%s)
log() { echo "=== [$(( $(date +%s) - T0 ))s] $*"; }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem --format=csv 2>&1 | tee "$OUT/gpu.txt"
log configure
rm -f $B/CMakeCache.txt
GOLD=${MVRT_GOLDEN_DIR:+-DMVRT_GOLDEN_DIR=$MVRT_GOLDEN_DIR}
cmake -S . -B $B $GOLD -DMVRT_CUDA_ARCHS=$ARCH -DMVRT_WITH_HIP=OFF -DCMAKE_BUILD_TYPE=Release > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
log build
cmake --build $B -j16 >> "$OUT/build.log" 2>&1 || { grep -E "error" "$OUT/build.log" | head -30; tail -20 "$OUT/build.log"; exit 1; }
P=$B/lib/libmvrt_backend_cuda.so
log plugin test
timeout 60 $B/bin/test_cuda_plugin $P 2>&1 | tee "$OUT/tests.log" | tail -5
log scan tests
timeout 120 $B/bin/test_cuda_scan $P 2>&1 | tee -a "$OUT/tests.log"
log bench f32 auto
timeout 120 $B/bin/bench_cuda_scan $P f32 50 2>&1 | tee "$OUT/bench.log"
log bench f16 bf16 auto
( timeout 90 $B/bin/bench_cuda_scan $P f16 30; timeout 90 $B/bin/bench_cuda_scan $P bf16 30 ) 2>&1 | grep -v "^case" | tee -a "$OUT/bench.log" | grep -v "^device"
log ctest -L cuda
(cd $B && timeout 200 ctest -L cuda -E cuda_scan_64bit --output-on-failure --timeout 120) > "$OUT/ctest.log" 2>&1
grep -E "tests passed|tests failed|Failed|\*\*\*|Passed|Skipped" "$OUT/ctest.log" | tail -25
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
log memcheck
timeout 120 $CS --tool memcheck --error-exitcode 9 $B/bin/test_cuda_scan $P groups_tiles > "$OUT/sanitizer.log" 2>&1; echo "memcheck rc=$?"; tail -3 "$OUT/sanitizer.log"
for c in N130 L1 N1_Lstrided; do timeout 60 $CS --tool memcheck --error-exitcode 9 $B/bin/test_cuda_scan $P $c >> "$OUT/sanitizer.log" 2>&1; echo "memcheck $c rc=$?"; done
log racecheck
for c in odd_L groups; do timeout 100 $CS --tool racecheck --error-exitcode 9 $B/bin/test_cuda_scan $P $c >> "$OUT/sanitizer.log" 2>&1; echo "racecheck $c rc=$?"; done; tail -3 "$OUT/sanitizer.log"; grep -m3 -A6 "Warning\|Error" "$OUT/sanitizer.log" | head -20
log 64-bit test
timeout 200 $B/bin/test_cuda_scan_large $P 2>&1 | tee "$OUT/large.log" | tail -6
log done
echo "---- summary ----"; grep -E "^(ok|FAIL)|cases failed" "$OUT/tests.log" | grep -v "^ok" ; grep -E "tests passed|tests failed" "$OUT/ctest.log"; cat "$OUT/bench.log"
