#!/usr/bin/env bash
# Data-parallel scaling of the copy task from 1 to 2 ranks (docs/15-distributed.md):
#   bench/run_distributed_bench.sh                       # medium preset, 30 steps, build "build"
#   bench/run_distributed_bench.sh --preset tiny --steps 200 --repeats 3
#
# One BLAS thread per rank, so 1 rank uses one core and 2 ranks use two. For each repeat it runs,
# one after the other:
#   1 rank  : copy_task train (no --distributed), global batch B
#   2 ranks : mpirun -np 2 copy_task train --distributed, global batch B (B/2 per rank)
#   2 ranks : the same with global batch 2B (B per rank: weak scaling)
#   2 ranks : global batch B with 1 MiB buckets instead of 25 MiB (more, earlier all-reduces:
#             more overlap with backward, more per-call overhead)
# and reads each run's median ms per step from its metrics JSON (the first steps, warm-up of the
# allocator, do not move a median). Reported: time per step, speed-up and efficiency
#   strong: speed-up = t1(B) / t2(B),        efficiency = speed-up / 2
#   weak:   efficiency = t1(B) / t2(2B)      (the same work per rank; 1.0 = perfect)
# and the gradient bytes each rank all-reduces per step, with the ring's traffic 2 (N-1)/N of it,
# and (where bench/bench_allreduce is built) the time of one all-reduce of that many bytes alone,
# Open MPI's own MPI_Allreduce beside ours, with each one's share of the 2-rank step.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

build=build
preset=medium
steps=30
repeats=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --preset) preset=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
copy_task=$build/examples/copy_task/copy_task
[[ -x $copy_task ]] || { echo "no $copy_task: build copy_task first" >&2; exit 1; }
command -v mpirun >/dev/null || { echo "no mpirun: apt-get install openmpi-bin" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
export OMP_WAIT_POLICY=PASSIVE
# Containers without ptrace rights break Open MPI's single-copy transfers of large messages.
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

case $preset in tiny | annotated) batch=80 ;; medium) batch=32 ;; esac
common=(train --preset "$preset" --steps "$steps" --eval-every 1000000 --eval-samples 2
        --final-samples 2 --checkpoint-every 0 --threads 1 --quiet)
median_ms() { sed -n 's/.*"median_ms_per_step": \([0-9.e+-]*\).*/\1/p' "$1"; }

echo "preset $preset, $steps steps, global batch $batch, one BLAS thread per rank, $(nproc) cores"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$repeats"); do
  "$copy_task" "${common[@]}" --batch "$batch" --out "$tmp/one" --metrics-json "$tmp/one.json" >/dev/null
  mpirun -np 2 --oversubscribe "$copy_task" "${common[@]}" --distributed --batch "$batch" \
    --out "$tmp/two" --metrics-json "$tmp/two.json" >/dev/null
  mpirun -np 2 --oversubscribe "$copy_task" "${common[@]}" --distributed --batch $((2 * batch)) \
    --out "$tmp/weak" --metrics-json "$tmp/weak.json" >/dev/null
  mpirun -np 2 --oversubscribe "$copy_task" "${common[@]}" --distributed --batch "$batch" \
    --bucket-mb 1 --out "$tmp/small" --metrics-json "$tmp/small.json" >/dev/null
  t1=$(median_ms "$tmp/one.json") t2=$(median_ms "$tmp/two.json") tw=$(median_ms "$tmp/weak.json")
  ts=$(median_ms "$tmp/small.json")
  bytes=$(sed -n 's/.*"gradient_bytes_per_step": \([0-9]*\).*/\1/p' "$tmp/two.json")
  if [[ -x $build/bench/bench_allreduce ]]; then  # MPI_Allreduce, ours through MPI and shm
    mpirun -np 2 --oversubscribe "$build/bench/bench_allreduce" --bytes "$bytes" --step-ms "$t2" |
      sed 's/^/  /'
  fi
  awk -v r="$r" -v ts="$ts" -v t1="$t1" -v t2="$t2" -v tw="$tw" -v b="$bytes" -v batch="$batch" 'BEGIN {
    printf "repeat %d: 1 rank %.1f ms/step | 2 ranks, batch %d: %.1f ms/step, speed-up %.2fx, " \
           "efficiency %.0f%% | 2 ranks, batch %d: %.1f ms/step, weak efficiency %.0f%%\n",
           r, t1, batch, t2, t1 / t2, 50 * t1 / t2, 2 * batch, tw, 100 * t1 / tw
    printf "  2 ranks, batch %d, 1 MiB buckets: %.1f ms/step (25 MiB buckets: %.1f)\n", batch, ts, t2
    printf "  gradients all-reduced per step: %.2f MB per rank; ring traffic 2(N-1)/N x that = " \
           "%.2f MB sent and received per rank (N=2), %.2f MB at N=8\n",
           b / 1e6, b / 1e6, 2 * 7 / 8 * b / 1e6
  }'
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
