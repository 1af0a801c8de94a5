#!/bin/bash
# One device lease as one background job (started by watch.sh in its own session, so it outlives
# the call): build mvrt and mamba's forward kernels, time PyTorch and mvrt, run ctest -L cuda.
# Logs and state in /tmp/d. Needs .anchor (shared/anchors/README.md), .cutlass/include, .golden.
# What it times (session 58's choice by default; "CONFIG BATCH MODE" items, ';'-separated):
#   LEASE_FIRST  max-autotune runs compiled during mvrt's build, one after another
#   LEASE_SPECS  default-mode / eager / CUDA-graph runs, compiled beside ctest
#   LEASE_LAST   max-autotune runs after mvrt's second rows, while the job is younger than T_AUTO_BEFORE s
#   LEASE_ROWS1  mvrt bench model --only text of the first rows (default: every GPU row, ~145 s)
#   LEASE_ROWS   mvrt bench model --only text of the second rows
#   LEASE_ROWS3  --only text of the rows after LEASE_LAST (default: LEASE_ROWS; e.g. only the rows
#                whose max-autotune LAST timed, to keep the lease short)
#   (FIRST, SPECS, LAST: "none" for no runs; unset or empty, session 58's)
#   LEASE_AFTER  a command line run after the first rows with the GPU alone (e.g. the same rows
#                under a test switch, or --profile), its output in $D/after.log; B is the build dir
#   LEASE_CTEST  ctest's selection (default "-L cuda": ~420 s on one H200; "-L cuda -E cuda_ops": ~80 s)
#   LEASE_SAVE_CACHE  1: the last watch.sh call returns PyTorch's compile caches as $OUT/tcache.part-*
#                (copy them to .dev/tcache/ for the next lease)
FIRST=${LEASE_FIRST:-"B 256 autotune-bf16"}
SPECS=${LEASE_SPECS:-"L 256 compile-bf16;L 256 eager-bf16;T 256 compile-bf16;T 256 eager-bf16;B 256 compile-bf16;B 256 eager-bf16;T 1 graphs-bf16;B 1 graphs-bf16;L 1 graphs-bf16;T 256 eager-fp32;S 256 compile-bf16;L2 256 compile-bf16"}
LAST=${LEASE_LAST:-"T 256 autotune-bf16"}
ROWS=${LEASE_ROWS:-", bf16"}
[ "$FIRST" = none ] && FIRST=""; [ "$SPECS" = none ] && SPECS=""; [ "$LAST" = none ] && LAST=""
D=/tmp/d; export B=build-dev; L=$D/gpu.lock; T0=$(date +%s)
log() { echo "=== [$(( $(date +%s) - T0 ))s] $*" | tee -a $D/pipe.log; }
el() { echo $(( $(date +%s) - T0 )); }
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
# PyTorch's compile caches at known paths: watch.sh returns them (LEASE_SAVE_CACHE=1) and a later
# lease that carries them in .dev/tcache starts from them (README: a max-autotune compile of B takes
# ~500 s cold)
export TORCHINDUCTOR_CACHE_DIR=/tmp/torchinductor_cache TRITON_CACHE_DIR=/tmp/triton_cache
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader > $D/gpu.txt
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" >> $D/gpu.txt 2>&1
log start; cat $D/gpu.txt >> $D/pipe.log
[ -d .dev/tcache ] && log "$(python3 bench/anchors/compile_cache.py unpack .dev/tcache 2>&1 | tail -1)"
( python3 bench/anchors/build_mamba_fwd.py > $D/ext.log 2>&1; echo $? > $D/ext.rc ) &
# Ninja when the machine has it: its object rules wait only for other targets' generated files, so the
# backend's own .cu files compile beside the CUTLASS object libraries (make ran them after those: a
# 477 s build, session 60)
GEN=""; command -v ninja > /dev/null && GEN="-G Ninja"
( cmake $GEN -S . -B $B -DMVRT_GOLDEN_DIR=$PWD/.golden -DMVRT_CUTLASS_INCLUDE_DIR=$PWD/.cutlass/include -DMVRT_CUDA_ARCHS=90 \
    -DMVRT_WITH_HIP=OFF -DCMAKE_BUILD_TYPE=Release > $D/build.log 2>&1 && cmake --build $B -j16 >> $D/build.log 2>&1; echo $? > $D/build.rc ) &
while [ ! -f $D/ext.rc ]; do sleep 2; done; log "ext rc $(cat $D/ext.rc): $(tail -1 $D/ext.log)"
# max-autotune compiles while mvrt builds (CPU only): the GPU is its alone
autotune() { local IFS=';'; for spec in $1; do IFS=' '; set -- $spec
  HOLD=1 python3 bench/anchors/torch_mambavision_one.py $1 $2 $3 > $D/t_$1_$2_$3.log 2>&1; log "$(tail -1 $D/t_$1_$2_$3.log)"; done; }
autotune "$FIRST"
while [ ! -f $D/build.rc ]; do sleep 2; done; log "build rc $(cat $D/build.rc)"; grep -E "error|mvrt:" $D/build.log | head -20 >> $D/pipe.log
merge() { python3 -c "
import json,glob; r={}
for f in sorted(glob.glob('/tmp/d/tj/*.json')): r.update(json.load(open(f)))
json.dump(r, open('/tmp/d/torch_mambavision.json','w'), indent=1)"; }
merge
log "mvrt rows 1"
python3 bench/anchors/gpu_lock.py -x $L $B/bin/mvrt bench model --backend cuda ${LEASE_ROWS1:+--only "$LEASE_ROWS1"} --anchor $D/torch_mambavision.json > $D/bench1.log 2>&1; log "bench1 rc $?"
if [ -n "$LEASE_AFTER" ]; then
  python3 bench/anchors/gpu_lock.py -x $L bash -c "$LEASE_AFTER" > $D/after.log 2>&1; log "after rc $?"
fi
log "ctest + PyTorch default modes"
( python3 bench/anchors/gpu_lock.py -s $L bash -c "cd $B && ctest ${LEASE_CTEST:--L cuda} -j8 --timeout 900 --output-on-failure > $D/ctest.log 2>&1"; echo $? > $D/ctest.rc ) &
IFS=';' read -ra LIST <<< "$SPECS"
for spec in "${LIST[@]}"; do
  set -- $spec; TORCHINDUCTOR_COMPILE_THREADS=4 python3 bench/anchors/torch_mambavision_one.py $1 $2 $3 > $D/t_$1_$2_$3.log 2>&1 &
  sleep 1
done
wait
log "ctest rc $(cat $D/ctest.rc)"; grep -E "tests passed|Failed|\*\*\*|Not Run|Total Test" $D/ctest.log >> $D/pipe.log
for f in $D/t_*.log; do tail -1 $f >> $D/pipe.log; done
merge
log "mvrt rows 2"
python3 bench/anchors/gpu_lock.py -x $L $B/bin/mvrt bench model --backend cuda --only "$ROWS" --anchor $D/torch_mambavision.json > $D/bench2.log 2>&1; log "bench2 rc $?"
if [ $(el) -lt ${T_AUTO_BEFORE:-1200} ]; then
  autotune "$LAST"; merge
  python3 bench/anchors/gpu_lock.py -x $L $B/bin/mvrt bench model --backend cuda --only "${LEASE_ROWS3:-$ROWS}" --anchor $D/torch_mambavision.json > $D/bench3.log 2>&1
else log "$LAST skipped (elapsed $(el) s)"; fi
log done; touch $D/all.done
