#!/usr/bin/env bash
# CPU latency and peak memory of `seam run` against ONNX Runtime's CPU
# provider (npm onnxruntime-node, bench/ort), batch 1, 2 threads. The two
# alternate, ROUNDS times each, in one process group; each side's best
# median is kept, since the machine is shared and noisy. Peak memory is the
# process's max RSS (for ONNX Runtime that includes node itself, about
# 45 MB; the table reports it as measured). "ready" is the time from
# reading the file to a session that can run: for seam, loading,
# partitioning and making the session (backend compiles, memory plan), as
# `seam run --repeat` prints it; for ONNX Runtime, InferenceSession.create;
# the best of the rounds, like the latencies.
#
# usage: bench/runtime_bench.sh [BUILD_DIR] [ROUNDS] [MODELS...]
#        (models come from tests/models/gen_models.py, in BUILD_DIR/models)
#        SEAM_ARGS adds arguments to seam run, e.g. SEAM_ARGS="--target dnnl";
#        BENCH_PAUSE sets the pause between models (default 15 s).
#
#        bench/runtime_bench.sh --set [DIR] [ROUNDS]
#        runs issue 11's benchmark set instead (bench/bench_models.py's 24
#        models, exported into DIR, default build/bench-models): seam
#        --target dnnl against ONNX Runtime, latency ratios, GFLOP/s against
#        the machine's measured peak, and the outputs of fusion on and off
#        against seam's CPU kernels (bench/dnnl_bench.py --check).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--set" ]; then
  exec /usr/bin/python3 bench/dnnl_bench.py --models "${2:-build/bench-models}" --rounds "${3:-3}" --repeat 20 \
    --pause 3 --check
fi
B=${1:-build}
ROUNDS=${2:-3}
shift $(( $# > 2 ? 2 : $# ))
MODELS=${*:-resnet18 mobilenet_v2 transformer_encoder}
[ -d bench/ort/node_modules/onnxruntime-node ] || (cd bench/ort && npm install --ignore-scripts >/dev/null)
/usr/bin/python3 tests/models/gen_models.py "$B/models" --only "$(echo $MODELS | tr ' ' ,)" >/dev/null
median() { sed -n 's/.*median \([0-9.]*\) ms.*/\1/p' | head -1; }
echo "| model | seam ms | ORT ms | seam / ORT | seam peak MB | ORT peak MB | seam ready ms | ORT ready ms |"
echo "|---|---|---|---|---|---|---|---|"
for m in $MODELS; do
  # a pause between models (BENCH_PAUSE seconds): on this VM a model
  # measured within seconds of a big one (resnet18, resnet50) ran up to 1.9x
  # slower (mobilenet_v2 8.3 ms instead of 5.1; the transformer on dnnl
  # 0.275 ms instead of 0.148); 15 s of quiet removes that (bench/RESULTS.md)
  sleep "${BENCH_PAUSE:-15}"
  model="$B/models/$m.onnx" input="$B/models/$m.input.npy"
  s_best=999999 o_best=999999 s_mem=0 o_mem=0 s_rbest=999999 o_rbest=999999
  for _ in $(seq "$ROUNDS"); do
    # shellcheck disable=SC2086
    out=$(/usr/bin/time -f 'maxrss %M' "$B/seam" run "$model" --input "input=$input" --repeat 20 --threads 2 ${SEAM_ARGS:-} 2>&1)
    s=$(echo "$out" | median); s_mem=$(echo "$out" | sed -n 's/maxrss //p')
    s_ready=$(echo "$out" | sed -n 's/.*ready in \([0-9.]*\) ms.*/\1/p' | head -1)
    out=$(/usr/bin/time -f 'maxrss %M' node bench/ort/ort_run.js "$model" "$input" --repeat 20 --threads 2 2>&1)
    o=$(echo "$out" | median); o_mem=$(echo "$out" | sed -n 's/maxrss //p')
    o_ready=$(echo "$out" | sed -n 's/.*ready in \([0-9.]*\) ms.*/\1/p' | head -1)
    s_best=$(echo "$s $s_best" | awk '{print ($1 < $2) ? $1 : $2}')
    s_rbest=$(echo "$s_ready $s_rbest" | awk '{print ($1 < $2) ? $1 : $2}')
    o_rbest=$(echo "$o_ready $o_rbest" | awk '{print ($1 < $2) ? $1 : $2}')
    o_best=$(echo "$o $o_best" | awk '{print ($1 < $2) ? $1 : $2}')
  done
  echo "| $m | $s_best | $o_best | $(echo "$s_best $o_best" | awk '{printf "%.2f", $1 / $2}') | $((s_mem / 1024)) | $((o_mem / 1024)) | $s_rbest | $o_rbest |"
done
