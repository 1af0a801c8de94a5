#!/bin/bash
# One-call check of the CUDA backend on a GPU machine: configure + build for
# the local GPU only, benchmark (default paths, then variants side by side
# on the MambaVision rows: the paths the staged forward and backward
# replaced, other lane counts and chunk lengths, the row kernels; f32 and
# bf16), ncu on the staged forward and the backward kernels (stall
# reasons, pipes, DRAM bytes), ctest -L cuda (conformance, golden, random
# incl. every forced path/variant),
# compute-sanitizer memcheck
# and racecheck on small cases of each path, then the 64-bit test.
# Logs go to $OUT.
# usage: backends/cuda/device_check.sh [arch, default 90]
#   MVRT_CHECK_QUICK=1: skip the sanitizer and the 64-bit test
#   MVRT_CHECK_NCU=0: skip ncu
#   MVRT_GOLDEN_DIR: folder holding scan_cases.safetensors (golden tests)
set -o pipefail
OUT=${OUT:-/tmp/mvrt_out}
mkdir -p "$OUT"
ARCH=${1:-90}
B=build-dev
T0=$(date +%s)
log() { echo "=== [$(( $(date +%s) - T0 ))s] $*"; }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem --format=csv 2>&1 | tee /tmp/mvrt_gpu.txt
log configure
rm -f $B/CMakeCache.txt
GOLD=${MVRT_GOLDEN_DIR:+-DMVRT_GOLDEN_DIR=$MVRT_GOLDEN_DIR}
cmake -S . -B $B $GOLD -DMVRT_CUDA_ARCHS=$ARCH -DMVRT_WITH_HIP=OFF -DCMAKE_BUILD_TYPE=Release > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
log build
cmake --build $B -j16 --target mvrt_backend_cuda test_cuda_scan test_cuda_plugin test_cuda_scan_large bench_cuda_scan >> "$OUT/build.log" 2>&1 || { grep -E "error" "$OUT/build.log" | head -30; tail -20 "$OUT/build.log"; exit 1; }
log test_cuda_scan, default paths
timeout 120 $B/bin/test_cuda_scan $B/lib/libmvrt_backend_cuda.so 2>&1 | tee "$OUT/test_scan_default.log" | grep -v "^ok" | tail -40
# the rest of the project (mvrt check etc.) for ctest, in the background
( nice cmake --build $B -j8 >> "$OUT/build_all.log" 2>&1; echo $? > "/tmp/mvrt_build_all.rc" ) &
BGPID=$!
P=$B/lib/libmvrt_backend_cuda.so
BENCH=$B/bin/bench_cuda_scan
log bench f32 default
timeout 120 $BENCH $P f32 30 2>&1 | tee "$OUT/bench.log"
# variants on the MambaVision rows: "NAME ENV..." (one env assignment list each)
VARIANTS=${MVRT_CHECK_VARIANTS:-"bwd-lpr1:MVRT_CUDA_SCAN_BWD_LPR=1 bwd-t8:MVRT_CUDA_SCAN_BWD_T=8 lpr1:MVRT_CUDA_SCAN_LPR=1 rows64:MVRT_CUDA_SCAN_ROWS=64"}
for V in $VARIANTS; do
  NAME=${V%%:*}; ENVS=${V#*:}
  log "bench f32 variant $NAME ($ENVS)"
  echo "# variant $NAME ($ENVS)" >> "$OUT/bench.log"
  env ${ENVS//,/ } MVRT_BENCH_ROWS=0,1,2,3,4 timeout 60 $BENCH $P f32 20 2>&1 | grep -v "^case" | tee -a "$OUT/bench.log" | grep -v "^device"
done
log bench bf16 default
echo "# bf16 default" >> "$OUT/bench.log"
timeout 100 $BENCH $P bf16 20 2>&1 | grep -v "^case" | tee -a "$OUT/bench.log" | grep -v "^device"
for V in ${MVRT_CHECK_VARIANTS16:-}; do
  NAME=${V%%:*}; ENVS=${V#*:}
  log "bench bf16 variant $NAME ($ENVS)"
  echo "# bf16 variant $NAME ($ENVS)" >> "$OUT/bench.log"
  env ${ENVS//,/ } MVRT_BENCH_ROWS=0,1,4 timeout 60 $BENCH $P bf16 20 2>&1 | grep -v "^case" | tee -a "$OUT/bench.log" | grep -v "^device"
done
if [ "${MVRT_CHECK_NCU:-1}" != 0 ] && command -v ncu > /dev/null; then
  NCU="ncu --clock-control none --launch-skip 2 --launch-count 1 --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis --metrics dram__bytes_read.sum,dram__bytes_write.sum,smsp__inst_executed_pipe_xu.sum,smsp__inst_executed.sum"
  log ncu fwd f32
  MVRT_BENCH_ROWS=0 timeout 60 $NCU -k regex:scan_fwd_staged $BENCH $P f32 2 > "$OUT/ncu.txt" 2>&1
  log ncu bwd f32 staged
  MVRT_BENCH_ROWS=0 timeout 60 $NCU -k regex:scan_bwd_staged $BENCH $P f32 2 >> "$OUT/ncu.txt" 2>&1
  log ncu bwd f32 lanes
  MVRT_CUDA_SCAN_PATH=lanes MVRT_BENCH_ROWS=0 timeout 60 $NCU -k regex:scan_bwd_lanes $BENCH $P f32 2 >> "$OUT/ncu.txt" 2>&1
  log ncu bwd f32 row
  MVRT_BENCH_ROWS=0 timeout 60 $NCU -k regex:scan_bwd_row $BENCH $P f32 2 >> "$OUT/ncu.txt" 2>&1
  log ncu bwd f32 lanes, executed instructions per SASS line
  MVRT_CUDA_SCAN_PATH=lanes MVRT_BENCH_ROWS=0 timeout 90 ncu --clock-control none --launch-skip 2 --launch-count 1 \
    -k regex:scan_bwd_lanes --section SourceCounters --page source --print-source sass --csv $BENCH $P f32 2 \
    > "$OUT/ncu_bwd_lanes_sass.csv" 2>&1
  echo "ncu SASS source page: $(wc -l < "$OUT/ncu_bwd_lanes_sass.csv") lines"
  grep -E "^  [a-z_]+.*scan_|Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Issue Slots Busy|No Eligible|dram__bytes|pipe_xu|inst_executed.sum|Stall|Memory Throughput|Compute \(SM\)" "$OUT/ncu.txt" | head -60
fi
wait $BGPID
log ctest -L cuda "(build_all rc $(cat /tmp/mvrt_build_all.rc))"
(cd $B && timeout 240 ctest -L cuda -E cuda_scan_64bit --output-on-failure --timeout 150) > "$OUT/ctest.log" 2>&1
grep -E "tests passed|tests failed|Failed|\*\*\*|Passed|Skipped" "$OUT/ctest.log" | tail -25
if [ -z "$MVRT_CHECK_QUICK" ]; then
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
T=$B/bin/test_cuda_scan
log memcheck
for c in groups_tiles N130 L1 lm_like; do timeout 60 $CS --tool memcheck --error-exitcode 9 $T $P $c >> "$OUT/sanitizer.log" 2>&1; echo "memcheck $c rc=$?" | tee -a "$OUT/sanitizer_rc.txt"; done
for c in groups_tiles odd_L bf16_mv f16_z; do MVRT_CUDA_SCAN_ROWS=64 timeout 60 $CS --tool memcheck --error-exitcode 9 $T $P $c >> "$OUT/sanitizer.log" 2>&1; echo "memcheck row64 $c rc=$?" | tee -a "$OUT/sanitizer_rc.txt"; done
for c in N5 lm_like; do MVRT_CUDA_SCAN_ROWS=32 timeout 60 $CS --tool memcheck --error-exitcode 9 $T $P $c >> "$OUT/sanitizer.log" 2>&1; echo "memcheck row32 $c rc=$?" | tee -a "$OUT/sanitizer_rc.txt"; done
for m in staged-chunks staged-whole; do for c in mambavision_like bf16_z_L49 bf16_odd_padded odd_L_padded groups_tiles; do MVRT_CUDA_SCAN_PATH=$m timeout 60 $CS --tool memcheck --error-exitcode 9 $T $P $c >> "$OUT/sanitizer.log" 2>&1; echo "memcheck $m $c rc=$?" | tee -a "$OUT/sanitizer_rc.txt"; done; done
for c in mambavision_like groups_tiles f16_z_long N1_Lstrided; do MVRT_CUDA_SCAN_PATH=lanes timeout 60 $CS --tool memcheck --error-exitcode 9 $T $P $c >> "$OUT/sanitizer.log" 2>&1; echo "memcheck lanes $c rc=$?" | tee -a "$OUT/sanitizer_rc.txt"; done
# the 3xTF32 GEMMs (every layout, fused bias/GELU/residual, a conv) and the SGEMM / builtin passes of the
# same cases; the 3xTF32 attention (and its SIMT pass), the small-patch convs, the window transposes
for c in linear_3xtf32_nt linear_3xtf32_t linear_M1_head conv2d_mv_28x28x160_b40 attention_L conv2d_smallk window_pad; do timeout 150 $CS --tool memcheck --error-exitcode 9 $B/bin/test_cuda_ops $P $c >> "$OUT/sanitizer.log" 2>&1; echo "memcheck ops $c rc=$?" | tee -a "$OUT/sanitizer_rc.txt"; done
MVRT_CUDA_CONV=implicit MVRT_CUDA_CONV_CHUNK_MB=1 timeout 150 $CS --tool memcheck --error-exitcode 9 $B/bin/test_cuda_ops $P conv2d_implicit >> "$OUT/sanitizer.log" 2>&1; echo "memcheck ops implicit conv chunks rc=$?" | tee -a "$OUT/sanitizer_rc.txt"
# the cluster GEMM, the key-split attention, the batch-1 dwconv1d staging
for c in linear_cluster attention_keysplit dwconv; do timeout 150 $CS --tool memcheck --error-exitcode 9 $B/bin/test_cuda_ops $P $c >> "$OUT/sanitizer.log" 2>&1; echo "memcheck ops $c rc=$?" | tee -a "$OUT/sanitizer_rc.txt"; done
for c in attention_L65 attention_L196 window_pad linear_cluster attention_keysplit; do timeout 150 $CS --tool racecheck --error-exitcode 9 $B/bin/test_cuda_ops $P $c >> "$OUT/sanitizer.log" 2>&1; echo "racecheck ops $c rc=$?" | tee -a "$OUT/sanitizer_rc.txt"; done
log racecheck
for v in staged-chunks,1 staged-chunks,2 staged-chunks,4 staged-whole,2; do for c in mambavision_like f16_z_long bf16_odd_padded groups_tiles L1; do MVRT_CUDA_SCAN_PATH=${v%,*} MVRT_CUDA_SCAN_LPR=${v#*,} timeout 60 $CS --tool racecheck --error-exitcode 9 $T $P $c >> "$OUT/sanitizer.log" 2>&1; echo "racecheck $v $c rc=$?" | tee -a "$OUT/sanitizer_rc.txt"; done; done
for v in 2,16 1,8 4,32; do for c in mambavision_like f16_z_long groups_tiles many_rows_L49; do MVRT_CUDA_SCAN_PATH=staged MVRT_CUDA_SCAN_BWD_LPR=${v%,*} MVRT_CUDA_SCAN_BWD_T=${v#*,} timeout 60 $CS --tool racecheck --error-exitcode 9 $T $P $c >> "$OUT/sanitizer.log" 2>&1; echo "racecheck staged-bwd $v $c rc=$?" | tee -a "$OUT/sanitizer_rc.txt"; MVRT_CUDA_SCAN_PATH=staged MVRT_CUDA_SCAN_BWD_LPR=${v%,*} MVRT_CUDA_SCAN_BWD_T=${v#*,} timeout 60 $CS --tool memcheck --error-exitcode 9 $T $P $c >> "$OUT/sanitizer.log" 2>&1; echo "memcheck staged-bwd $v $c rc=$?" | tee -a "$OUT/sanitizer_rc.txt"; done; done
for c in odd_L groups_tiles f16_z_long; do MVRT_CUDA_SCAN_PATH=lanes timeout 60 $CS --tool racecheck --error-exitcode 9 $T $P $c >> "$OUT/sanitizer.log" 2>&1; echo "racecheck lanes $c rc=$?" | tee -a "$OUT/sanitizer_rc.txt"; done
for c in odd_L N5; do timeout 60 $CS --tool racecheck --error-exitcode 9 $T $P $c >> "$OUT/sanitizer.log" 2>&1; echo "racecheck $c rc=$?" | tee -a "$OUT/sanitizer_rc.txt"; done
for c in odd_L groups_tiles f16_z; do MVRT_CUDA_SCAN_ROWS=64 timeout 60 $CS --tool racecheck --error-exitcode 9 $T $P $c >> "$OUT/sanitizer.log" 2>&1; echo "racecheck row64 $c rc=$?" | tee -a "$OUT/sanitizer_rc.txt"; done
for c in groups_tiles; do MVRT_CUDA_SCAN_ROWS=32 timeout 60 $CS --tool racecheck --error-exitcode 9 $T $P $c >> "$OUT/sanitizer.log" 2>&1; echo "racecheck row32 $c rc=$?" | tee -a "$OUT/sanitizer_rc.txt"; done
grep -m3 -A6 "Warning\|Error" "$OUT/sanitizer.log" | head -20
log 64-bit test
timeout 150 $B/bin/test_cuda_scan_large $P 2>&1 | tee "$OUT/large.log" | tail -6
log 64-bit test, general kernels
MVRT_CUDA_SCAN_PATH=general timeout 150 $B/bin/test_cuda_scan_large $P 2>&1 | tee "$OUT/large_general.log" | tail -6
fi
log done
echo "---- summary ----"; grep -E "tests passed|tests failed" "$OUT/ctest.log"; grep -h "rc=" "$OUT/sanitizer_rc.txt" 2>/dev/null | grep -vc "rc=0" | sed 's/^/sanitizer runs not clean: /'; cat "$OUT/bench.log" | cut -c1-110
