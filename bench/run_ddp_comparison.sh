#!/usr/bin/env bash
# scratchgrad's data-parallel training against PyTorch's DistributedDataParallel (gloo, its CPU
# backend) on the copy task, two processes on this machine, side by side in one run:
#   bench/run_ddp_comparison.sh                                # medium, 20 steps, 5 rounds
#   bench/run_ddp_comparison.sh --configs "medium annotated" --steps 30 --rounds 7 --json out.json
#
# The same model, data and global batch on both sides (bench/torch_ddp_copy_task.py imports
# bench/torch_copy_task.py's Transformer): `mpirun -np 2 copy_task train --distributed` against
# `torch_ddp_copy_task.py --world-size 2`, each rank on its half of every global batch.
#   1. Settings: each side runs once with every combination of --threads-options (intra-op threads
#      per rank) and --bucket-options (MiB per all-reduce bucket: --bucket-mb / bucket_cap_mb); the
#      fastest is each side's setting for the rounds.
#   2. Rounds: one run of each side per round, alternating which goes first, so that a busy moment
#      of this shared machine hits both alike; each round gives its own ratio.
# Reported per config: each side's median over rounds of its median ms per step (rank 0's), the
# ratio sg / PyTorch (below 1: scratchgrad faster; the goal is <= 0.8), and the spread of the
# rounds' ratios. The PyTorch 2.x environment comes from bench/torch2_venv.sh (made once).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

build=build
configs=medium
steps=20
rounds=5
threads_options="1 2"
bucket_options="25 1"
json=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --configs) configs=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --threads-options) threads_options=$2; shift 2 ;;
    --bucket-options) bucket_options=$2; shift 2 ;;
    --json) json=$2; shift 2 ;;
    *) echo "usage: $0 [--build DIR] [--configs \"medium annotated\"] [--steps N] [--rounds N]" \
            "[--threads-options \"1 2\"] [--bucket-options \"25 1\"] [--json FILE]" >&2
       exit 2 ;;
  esac
done
copy_task=$build/examples/copy_task/copy_task
[[ -x $copy_task ]] || { echo "no $copy_task: build copy_task first" >&2; exit 1; }
command -v mpirun >/dev/null || { echo "no mpirun: apt-get install openmpi-bin" >&2; exit 1; }
python=$(bash bench/torch2_venv.sh)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=PASSIVE
# Containers without ptrace rights break Open MPI's single-copy transfers of large messages (the
# broadcast of the parameters at the start); its own buffers work everywhere.
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

field() { "$python" -c "import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"; }

# ms per step of one run: side (sg | torch), config, threads per rank, bucket MiB.
run() {
  local side=$1 config=$2 threads=$3 bucket=$4 out=$tmp/run.json
  rm -f "$out"
  if [[ $side == sg ]]; then
    OPENBLAS_NUM_THREADS=$threads mpirun -np 2 --oversubscribe -x OPENBLAS_NUM_THREADS \
      -x OMP_WAIT_POLICY "$copy_task" train --preset "$config" --distributed --threads "$threads" \
      --bucket-mb "$bucket" --steps "$steps" --eval-every 1000000 --eval-samples 2 \
      --final-samples 2 --checkpoint-every 0 --quiet --out "$tmp/sg_run" --overwrite \
      --metrics-json "$out" >/dev/null
    field "$out" median_ms_per_step
  else
    "$python" bench/torch_ddp_copy_task.py --config "$config" --world-size 2 --threads "$threads" \
      --bucket-cap-mb "$bucket" --steps "$steps" --json "$out" >/dev/null
    field "$out" median_ms
  fi
}

echo "sg against PyTorch $("$python" -c 'import torch; print(torch.__version__)') DDP (gloo), 2 ranks," \
     "$steps steps per run, $rounds rounds, $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
results=()
for config in $configs; do
  declare -A best_ms=() best=()
  for side in sg torch; do
    for threads in $threads_options; do
      for bucket in $bucket_options; do
        ms=$(run "$side" "$config" "$threads" "$bucket")
        echo "  settings $config $side: $threads thread(s) per rank, $bucket MiB buckets: $ms ms/step"
        if [[ -z ${best_ms[$side]:-} ]] || awk -v a="$ms" -v b="${best_ms[$side]}" 'BEGIN { exit !(a < b) }'; then
          best_ms[$side]=$ms
          best[$side]="$threads $bucket"
        fi
      done
    done
  done
  sg_ms=() torch_ms=()
  for r in $(seq 1 "$rounds"); do
    order="sg torch"
    (( r % 2 == 0 )) && order="torch sg"
    for side in $order; do
      read -r threads bucket <<<"${best[$side]}"
      ms=$(run "$side" "$config" "$threads" "$bucket")
      if [[ $side == sg ]]; then sg_ms+=("$ms"); else torch_ms+=("$ms"); fi
    done
    echo "  round $r $config: sg ${sg_ms[-1]} ms, PyTorch ${torch_ms[-1]} ms," \
         "ratio $(awk -v a="${sg_ms[-1]}" -v b="${torch_ms[-1]}" 'BEGIN { printf "%.3f", a / b }')"
  done
  results+=("$("$python" - "$config" "${best[sg]}" "${best[torch]}" "${sg_ms[*]}" "${torch_ms[*]}" <<'EOF'
import json, statistics, sys
config, sg_best, torch_best, sg, torch = sys.argv[1:]
sg, torch = [float(x) for x in sg.split()], [float(x) for x in torch.split()]
ratios = sorted(a / b for a, b in zip(sg, torch))
print(json.dumps({"config": config,
                  "sg_settings": dict(zip(["threads_per_rank", "bucket_mb"], sg_best.split())),
                  "torch_settings": dict(zip(["threads_per_rank", "bucket_cap_mb"], torch_best.split())),
                  "sg_ms": sg, "torch_ms": torch,
                  "sg_median_ms": statistics.median(sg), "torch_median_ms": statistics.median(torch),
                  "ratio_median": statistics.median(ratios), "ratio_min": ratios[0], "ratio_max": ratios[-1]}))
EOF
)")
  unset best_ms best
done

echo
echo "| config | sg settings (threads/rank, MiB) | PyTorch settings | sg ms/step | PyTorch ms/step | sg / PyTorch (rounds: min / median / max) |"
echo "|---|---|---|---|---|---|"
printf '%s\n' "${results[@]}" | "$python" -c '
import json, sys
for line in sys.stdin:
    r = json.loads(line)
    s, t = r["sg_settings"], r["torch_settings"]
    print("| {} | {}, {} | {}, {} | {:.1f} | {:.1f} | {:.2f} / {:.2f} / {:.2f} |".format(
        r["config"], s["threads_per_rank"], s["bucket_mb"], t["threads_per_rank"],
        t["bucket_cap_mb"], r["sg_median_ms"], r["torch_median_ms"], r["ratio_min"],
        r["ratio_median"], r["ratio_max"]))'
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
if [[ -n $json ]]; then
  printf '%s\n' "${results[@]}" | "$python" -c '
import json, sys
json.dump({"benchmark": "ddp_copy_task", "rounds": [json.loads(l) for l in sys.stdin]}, open(sys.argv[1], "w"), indent=1)' "$json"
fi
