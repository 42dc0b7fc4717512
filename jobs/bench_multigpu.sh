#!/usr/bin/env bash
# Device-resident distributed runs on the GPUs of one host, one job, table last.
#   jobs/bench_multigpu.sh ["f32 sizes"] ["f64 sizes"]            (MODE=gpus, the default)
#   MODE=scaling jobs/bench_multigpu.sh                            (4 and 8 GPUs)
# MODE=gpus (the GPU-resident multi-GPU issue's benchmark), for each dtype and size:
#   - `distmm gpu-bench` on one GPU (cuBLAS, and gpu-winograd at levels 1-4: its best row);
#   - `distmm run --algo $ALGO` on 1, 2, 4, 8 ranks (as many as there are GPUs; one GPU per
#     rank, NCCL between them) with cublas and gpu-winograd (levels auto), data on the GPUs;
#   - the same on all GPUs with --from-host and --algo $HOST_ALGO (inputs copied from host
#     memory, C copied back: load and store counted; streamed in panels, --stages auto) beside
#     cuBLASXt (`distmm xt-bench`) on all GPUs with the same host inputs in pinned memory.
# MODE=scaling (issue 42, items 1, 2 and 5: every engine on 1, 2, 4 (8) GPUs, one job per machine):
#   - `distmm calibrate --device` first on all the GPUs, so that --algo auto prices with this
#     machine's measured model (skipped where DISTMM_MACHINE_FILE names a file already);
#   - for f64 n in SCALING_F64 ("32768 49152") and f32 n in SCALING_F32 ("32768 65536"; empty: none): gpu-bench
#     on one GPU (cuBLAS and every engine: the one-GPU rates), then on every rank count each
#     engine of SCALING_ENGINES (cublas gpu-winograd gpu-ozaki gpu-winograd-ozaki) with --algo
#     auto, summa and cuboid (each run verified, Freivalds), and, where JAX imports with GPUs,
#     JAX's sharded jit(jnp.matmul) on the first P GPUs (jobs/bench_jax_matmul.py, 2-D blocks,
#     f32 at precision HIGHEST);
#   - CAPS with one BFS step on 7 ranks (when there are 7 or more GPUs), gpu-winograd leaves, f32
#     65536: effective TFLOP/s (2 n^3 / t) against 7 x one GPU's cuBLAS rate;
#   - weak scaling: each GPU's block of C and its flops fixed (m = n = 16384 sqrt(P), k =
#     16384, f64; WEAK_BLOCK), time per multiply from 1 to 8 GPUs;
#   - the table last: per dtype, n, engine and GPUs the fastest of auto, SUMMA and cuboid, auto's
#     choice, the efficiency against the engine's own one-GPU rate (target >= 0.93 on 4 GPUs),
#     JAX's time beside cuBLAS's (target distmm >= 1.05x JAX on 2 and 4 GPUs), and f64 49152 on 4
#     GPUs against one GPU's cuBLAS DGEMM (target >= 6.0x).
#   SCALING_RANKS (default 1 2 4 (8), the GPUs there are) picks the rank counts.
#   The JSON lines go to BENCH_JSON, by default docs/results/multigpu_scaling_YYYYMMDD.jsonl
#   (appended to: a second job adds rounds). HOST_SMOKE=1: the plumbing on the emulated device
#   (blas and winograd for the engines, n = 128, no gpu-bench or JAX: the one-rank run is the
#   reference).
# Efficiency = rate on N GPUs / (N x one-GPU gpu-bench rate of the same engine). Environment:
# DISTMM_BIN (default build/distmm), REPEAT (10, and always even: see below), ROUNDS (1: MODE=gpus runs each size's rows, gpu-bench
# and cuBLASXt included, this many times in turn; a table row is the median of its rounds'
# medians), ALGO (summa), HOST_ALGO (the --from-host rows' algorithm: auto), CAPS_STEPS (X: gpu-winograd on
# 2+ GPUs also as `--algo caps --caps-steps X --formula winograd`, Strassen's top level dealt
# over the GPUs; empty: not), BENCH_JSON (JSON lines, default a
# temporary file), MPIRUN (default: mpirun with root and oversubscription allowed), TABLE_ONLY=1
# (run nothing: print the tables of BENCH_JSON's lines).
# MODE=network (issue 42, item 4: a network between the GPUs), on NETWORK_RANKS (4, at most the
# GPUs) GPUs, f32 and f64 at the sizes given (default 32768 each), REPEAT 4 by default:
#   - every row twice, alternating: NCCL as it is (NVLink/P2P inside the host) and NCCL with its
#     peer-to-peer and shared-memory transports off (NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1, and
#     NCCL_NET=$NETWORK_NET, default Socket: NCCL's socket transport, as between nodes without
#     NVLink or InfiniBand); the rows: cublas with summa, cuboid, cannon (square counts) and
#     --algo auto (the report's choice shown), gpu-winograd as CAPS (--caps-steps $CAPS_STEPS
#     --formula winograd), so that the choice under the network is visible beside the rest;
#   - before them, one small run per transport with NCCL_DEBUG=INFO: the transports NCCL reported
#     ("via P2P/CUMEM", "via NET/Socket/0", ...) go into the table, so a row labelled network that
#     did not go through the network is seen as such;
#   - gpu-bench on one GPU (the efficiency's reference), as in MODE=gpus.
#   DISTMM_MACHINE_FILE and NETWORK_MACHINE_FILE: the machine files (`distmm calibrate --device`
#   with NCCL as it is, and with the network settings above) that --algo auto reads on each
#   transport; without NETWORK_MACHINE_FILE both transports read DISTMM_MACHINE_FILE.
#   The table gives per row the words the busiest rank sent (comm.hpp's count, x the element's
#   bytes) and the achieved rate they imply: GB/s over the communication phases' time where the
#   run timed them (host runs of cuboid and CAPS), else over the whole multiply's time: a LOWER
#   BOUND on the link's rate (the time includes the products the transfers overlap with).
#   Steps that would start after BUDGET_S (400) seconds are skipped (the log says which), and each
#   run is stopped after STEP_TIMEOUT (120) seconds, so one call stays within ~9 minutes; a run
#   that fails or is stopped is reported (FAILED), the table is printed, and the script exits 1.
# NETWORK=1 (any MODE): every distmm run through NCCL's network transport as above, its rows
# labelled "network" (the residency column) and kept apart from the others'.
# HOST_SMOKE=1 (MODE=network): this script's plumbing without GPUs: the emulated device (host
# memory, --emulate-device) with blas and winograd for cublas and gpu-winograd, n = 256, no
# gpu-bench or NCCL probe (between ranks the emulated device uses MPI, whatever NCCL_* says).
# Through the device tool: build here into a folder, carry it and .device, and run
#   source .device/env.sh && DISTMM_BIN=.bin/distmm bash jobs/bench_multigpu.sh
#   source .device/env.sh && MODE=network DISTMM_BIN=.bin/distmm bash jobs/bench_multigpu.sh
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${MODE:-gpus}
smoke=${HOST_SMOKE:-}
case $mode in gpus | scaling | network) ;; *) echo "bench_multigpu.sh: MODE=gpus|scaling|network, not '$mode'" >&2; exit 2 ;; esac
[ -z "$smoke" ] || [ "$mode" != gpus ] || { echo "bench_multigpu.sh: HOST_SMOKE=1 is for MODE=network or MODE=scaling" >&2; exit 2; }
if [ "$mode" = network ]; then
  f32_sizes=${1:-$([ -n "$smoke" ] && echo 256 || echo 32768)}
  f64_sizes=${2:-$([ -n "$smoke" ] && echo 256 || echo 32768)}
else
  f32_sizes=${1:-"32768 49152"}
  f64_sizes=${2:-"16384 32768"}
fi
bin=${DISTMM_BIN:-build/distmm}
table_only=${TABLE_ONLY:-}
[ -z "$table_only" ] || [ -s "${BENCH_JSON:-}" ] || { echo "bench_multigpu.sh: TABLE_ONLY=1 needs BENCH_JSON=FILE (the JSON lines to tabulate)" >&2; exit 2; }
[ -n "$table_only" ] || [ -x "$bin" ] || [ -n "$smoke" ] || bash jobs/build.sh -DDISTMM_CUDA=ON
[ -n "$table_only" ] || [ -x "$bin" ] || { echo "bench_multigpu.sh: no $bin (DISTMM_BIN)" >&2; exit 2; }
# An even number of timed runs, ten by default. GPUs held at their 700 W power cap throttle in
# swings of about 1 s (docs/performance.md, session 21). f64 32768 on two GPUs takes about 0.5 s
# a run, so its runs go slow, fast, slow, ... from the first run after the warm-up. With an odd
# count the median is always a slow run; with an even count it lies between the two, at the
# rate the GPUs sustain (the mean of the runs, within 0.5%). One GPU's 1 s run spans a whole swing.
repeat=${REPEAT:-$([ "$mode" = network ] && echo 4 || echo 10)}
repeat=$(( repeat + repeat % 2 ))
rounds=${ROUNDS:-1}  # MODE=gpus: each size's rows run this many times, interleaved
algo=${ALGO:-summa}
host_algo=${HOST_ALGO:-auto}  # --from-host rows: the default, chosen for the streamed stages' products
caps_steps=${CAPS_STEPS-X}  # gpu-winograd on 2+ GPUs also as CAPS (winograd) with these steps ("": not)
default_json=$(mktemp --suffix=.jsonl)
[ "$mode" = scaling ] && [ -z "$smoke" ] && default_json=docs/results/multigpu_scaling_$(date +%Y%m%d).jsonl
out=${BENCH_JSON:-$default_json}
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}  # NVLink multicast off (it misbehaves on these hosts)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun=${MPIRUN:-"mpirun --oversubscribe --bind-to none"}
# NCCL's network transport for a run (NETWORK=1, and MODE=network's second row of each pair):
# no P2P (NVLink, PCIe peer copies) and no shared host memory between the ranks of this host,
# NCCL_NET (default Socket; NETWORK_NET= lets NCCL pick, e.g. InfiniBand where the host has it).
network_net=${NETWORK_NET-Socket}
network_env=(NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1)
[ -z "$network_net" ] || network_env+=("NCCL_NET=$network_net")
transport=default  # the transport of the runs that follow: default or network
[ "${NETWORK:-0}" = 1 ] && transport=network
step_timeout=${STEP_TIMEOUT:-$([ "$mode" = network ] && echo 120 || echo 0)}  # 0: none
budget=${BUDGET_S:-$([ "$mode" = network ] && echo 400 || echo 0)}             # 0: none
engines=(cublas gpu-winograd)
emulate=()
[ -n "$smoke" ] && engines=(blas winograd) emulate=(--emulate-device)
start=$SECONDS
failed=0
if [ -z "$table_only" ]; then
  if [ -n "$smoke" ]; then
    gpus=${NETWORK_RANKS:-4}
    echo "HOST_SMOKE: the emulated device on $gpus ranks (host memory; MPI between the ranks)"
  else
    gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
    [ "$gpus" -ge 1 ] || { echo "bench_multigpu.sh: no GPU visible (nvidia-smi -L)" >&2; exit 1; }
  fi
  ranks=""
  for p in 1 2 4 8; do [ "$p" -le "$gpus" ] && ranks="$ranks $p"; done
  echo "GPUs: $gpus; ranks:$ranks; algorithm: $algo (--from-host: $host_algo); transport: $transport; JSON lines: $out"
  [ "$transport" = default ] || echo "NCCL's network transport: ${network_env[*]}"
  "$bin" info | grep -iE "nccl|gpu" || true
fi

quiet() { grep -v pmix || true; }
# The environment of a run on the current transport (env's arguments).
transport_env() {
  echo NCCL_NVLS_ENABLE="$NCCL_NVLS_ENABLE"
  [ "$transport" = default ] || printf '%s\n' "${network_env[@]}"
  # --algo auto prices with the machine file of the transport it runs on (calibrate --device
  # measured under the same NCCL settings), so that its choice can follow the link
  [ "$transport" = default ] || [ -z "${NETWORK_MACHINE_FILE:-}" ] || echo DISTMM_MACHINE_FILE="$NETWORK_MACHINE_FILE"
}
over_budget() { [ "$budget" -gt 0 ] && [ $((SECONDS - start)) -ge "$budget" ]; }
runs() {  # runs P ENGINE DTYPE ALGO [run options]: one distmm run, its JSON line appended
  local p=$1 e=$2 dt=$3 a=$4
  shift 4
  if over_budget; then
    echo "skipped (past BUDGET_S=$budget s): $p ranks $e $dt $a $* ($transport)"
    return 0
  fi
  local tmp rc=0 envs=()
  tmp=$(mktemp --suffix=.jsonl)
  mapfile -t envs < <(transport_env)
  local limit=()
  [ "$step_timeout" -gt 0 ] && limit=(timeout --kill-after=15 "$step_timeout")
  # shellcheck disable=SC2086  # $mpirun: the launcher's words
  "${limit[@]}" env "${envs[@]}" $mpirun -np "$p" "$bin" run --algo "$a" --engine "$e" --dtype "$dt" \
    --warmup 1 --repeat "$repeat" --quiet --json "$tmp" "${emulate[@]}" "$@" 2>&1 | quiet || rc=$?
  if [ "$rc" -ne 0 ] || [ ! -s "$tmp" ]; then
    failed=$((failed + 1))
    echo "FAILED (exit $rc$([ "$rc" = 124 ] && echo ", past STEP_TIMEOUT=$step_timeout s")): $p ranks $e $dt $a $* ($transport)"
  fi
  # each JSON line labelled with the transport it ran on (the table keeps the two apart)
  python3 -c 'import json, sys
for l in open(sys.argv[1]):
    if l.strip():
        print(json.dumps({"bench_mode": sys.argv[4], "bench_transport": sys.argv[2], "bench_nccl_env": sys.argv[3],
                          **json.loads(l)}))' "$tmp" "$transport" "$(transport_env | xargs)" "$mode" >> "$out"
  rm -f "$tmp"
}
# nccl_probe P: a small run with NCCL_DEBUG=INFO on the current transport; the transports NCCL
# reported ("via P2P/CUMEM/read", "via NET/Socket/0", "via SHM/direct/direct", ...) and the network
# it named become one JSON line (command "nccl-probe") for the table.
nccl_probe() {
  local p=$1 envs=() log
  mapfile -t envs < <(transport_env)
  log=$(mktemp)
  # shellcheck disable=SC2086  # $mpirun: the launcher's words
  timeout --kill-after=15 120 env "${envs[@]}" NCCL_DEBUG=INFO $mpirun -np "$p" "$bin" run --algo summa \
    --engine "${engines[0]}" --dtype f32 --size 4096 --repeat 1 --warmup 0 --verify none --quiet > "$log" 2>&1 || true
  python3 - "$log" "$transport" "$(transport_env | xargs)" "$p" >> "$out" <<'PY'
import json, re, sys
from collections import Counter
log = open(sys.argv[1], errors="replace").read()
via = Counter(m.group(1) for m in re.finditer(r" via ([A-Za-z0-9_/]+)", log))
nets = sorted(set(re.findall(r"Using network (\w+)", log)))
ver = re.search(r"NCCL version ([0-9][^\s]*)", log)
print(json.dumps({"command": "nccl-probe", "bench_transport": sys.argv[2], "bench_nccl_env": sys.argv[3],
                  "ranks": int(sys.argv[4]), "via": dict(via), "networks": nets,
                  "nccl_version": ver.group(1) if ver else ""}))
PY
  echo "NCCL probe ($transport): $(tail -1 "$out")"
  grep -E "NCCL WARN" "$log" | head -5 || true
  rm -f "$log"
}
if [ -n "$table_only" ]; then
  :  # the tables of the JSON lines already in BENCH_JSON (e.g. several jobs' lines joined)
elif [ "$mode" = gpus ]; then
  for dt in f32 f64; do
    sizes=$f32_sizes
    [ "$dt" = f64 ] && sizes=$f64_sizes
    for n in $sizes; do
     for round in $(seq "$rounds"); do  # interleaved: every row of this size once per round
      echo "$dt $n: round $round of $rounds"
      # (timings only: the f32 reference needs 3 n^2 doubles more on the GPU, 58 GB at 49152;
      # every distmm run below is verified)
      "$bin" gpu-bench --dtype "$dt" --sizes "$n" --engines gpu-winograd --levels 1 2 3 4 \
        --repeat "$repeat" --no-error --json "$out" 2>&1 | grep '^|' | quiet
      for p in $ranks; do
        for e in cublas gpu-winograd; do runs "$p" "$e" "$dt" "$algo" --size "$n"; done
        # Strassen's top levels dealt across the GPUs (CAPS dealt steps): whole subproblems per GPU
        if [ "$p" -ge 2 ] && [ -n "$caps_steps" ]; then
          runs "$p" gpu-winograd "$dt" caps --caps-steps "$caps_steps" --formula winograd --size "$n"
        fi
      done
      for e in cublas gpu-winograd; do runs "$gpus" "$e" "$dt" "$host_algo" --size "$n" --from-host; done
      if [ "$gpus" -ge 2 ] && [ -n "$caps_steps" ]; then
        runs "$gpus" gpu-winograd "$dt" caps --caps-steps "$caps_steps" --formula winograd --size "$n" --from-host
      fi
      "$bin" xt-bench --dtype "$dt" --sizes "$n" --gpus "$gpus" --repeat "$repeat" --json "$out" 2>&1 | grep '^|' | quiet
     done
    done
  done
elif [ "$mode" = network ]; then
  p=${NETWORK_RANKS:-4}
  [ "$p" -le "$gpus" ] || p=$gpus
  [ "$p" -ge 2 ] || { echo "bench_multigpu.sh: MODE=network needs 2 or more GPUs ($gpus visible)" >&2; exit 1; }
  algos="summa cuboid"
  r=$(python3 -c "import math; print(math.isqrt($p))")
  [ $((r * r)) -eq "$p" ] && algos="$algos cannon"
  algos="$algos auto"
  if [ -z "$smoke" ]; then
    for transport in default network; do nccl_probe "$p"; done
  fi
  for dt in f32 f64; do
    sizes=$f32_sizes
    [ "$dt" = f64 ] && sizes=$f64_sizes
    for n in $sizes; do
     for round in $(seq "$rounds"); do
      echo "$dt $n on $p GPUs: round $round of $rounds (+$((SECONDS - start)) s)"
      if [ -z "$smoke" ] && ! over_budget; then
        "$bin" gpu-bench --dtype "$dt" --sizes "$n" --engines gpu-winograd --levels 1 2 3 4 \
          --repeat "$repeat" --no-error --json "$out" 2>&1 | grep '^|' | quiet
      fi
      for a in $algos; do
        for transport in default network; do runs "$p" "${engines[0]}" "$dt" "$a" --size "$n"; done
      done
      if [ -n "$caps_steps" ]; then
        for transport in default network; do
          runs "$p" "${engines[1]}" "$dt" caps --caps-steps "$caps_steps" --formula winograd --size "$n"
        done
      fi
     done
    done
  done
  transport=default
else
  # MODE=scaling
  if [ -n "$smoke" ]; then
    scaling_engines=${SCALING_ENGINES:-"blas winograd"} f32_sizes=${SCALING_F32:-128} f64_sizes=${SCALING_F64:-128}
  else
    scaling_engines=${SCALING_ENGINES:-"cublas gpu-winograd gpu-ozaki gpu-winograd-ozaki"}
    f32_sizes=${SCALING_F32-"32768 65536"} f64_sizes=${SCALING_F64-"32768 49152"}  # (empty: none)
  fi
  if [ -z "${DISTMM_MACHINE_FILE:-}" ] || [ ! -s "$DISTMM_MACHINE_FILE" ]; then
    model_dir=$(mktemp -d)
    export DISTMM_MACHINE_FILE=${DISTMM_MACHINE_FILE:-$model_dir/machine.json}
    cal=(--device --file "$DISTMM_MACHINE_FILE")
    for e in $scaling_engines; do cal+=(--engine "$e"); done
    [ -n "$smoke" ] && cal+=(--emulate-device --sizes 64 128)
    echo "calibrate --device on $gpus GPUs into $DISTMM_MACHINE_FILE"
    # shellcheck disable=SC2086  # $mpirun: the launcher's words
    env NCCL_NVLS_ENABLE="$NCCL_NVLS_ENABLE" $mpirun -np "$gpus" "$bin" calibrate "${cal[@]}" 2>&1 | quiet | grep -v '^ *saved' || true
  fi
  jax_ok=""
  if [ -z "$smoke" ] && python3 -c "import jax, sys; sys.exit(0 if any(d.platform == 'gpu' for d in jax.devices()) else 1)" 2>/dev/null; then
    jax_ok=1
  else
    echo "JAX rows: skipped (no JAX with GPUs in python3)"
  fi
  ranks=${SCALING_RANKS:-$ranks}  # e.g. "2 4": the one-rank runs left out (gpu-bench is the reference)
  gpu_engines=""
  for e in $scaling_engines; do [ "$e" = cublas ] || gpu_engines="$gpu_engines $e"; done
  for spec in "f64 $f64_sizes" "f32 $f32_sizes"; do
    read -r dt sizes <<< "$spec"
    for n in $sizes; do
      echo "$dt $n (+$((SECONDS - start)) s)"
      if [ -z "$smoke" ]; then
        # shellcheck disable=SC2086  # the engines' words
        "$bin" gpu-bench --dtype "$dt" --sizes "$n" --engines $gpu_engines --levels 1 2 3 4 --no-error \
          --repeat "$repeat" --json "$out" 2>&1 | grep '^|' | quiet
      fi
      for p in $ranks; do
        for e in $scaling_engines; do
          for a in auto summa cuboid; do runs "$p" "$e" "$dt" "$a" --size "$n"; done
        done
        if [ -n "$jax_ok" ]; then
          CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((p - 1))) XLA_PYTHON_CLIENT_PREALLOCATE=false python3 jobs/bench_jax_matmul.py \
            --gpus "$p" --n "$n" --dtypes "$dt" --layouts blocks --warmup 1 --repeat "$repeat" --json "$out" 2>&1 |
            grep -E '^jax ' || echo "JAX on $p GPUs, $dt $n: no result"
        fi
      done
    done
  done
  if [ "$gpus" -ge 7 ]; then
    runs 7 gpu-winograd f32 caps --size "${SCALING_F32:-65536}" --caps-steps B --formula winograd
  fi
  block=${WEAK_BLOCK:-$([ -n "$smoke" ] && echo 64 || echo 16384)}
  weak_engines="cublas gpu-winograd"
  [ -n "$smoke" ] && weak_engines="blas winograd"
  export WEAK_BLOCK=$block
  for p in $ranks; do
    mn=$(python3 -c "import math; print(int(round($block * math.sqrt($p))))")
    for e in $weak_engines; do runs "$p" "$e" f64 summa --m "$mn" --n "$mn" --k "$block"; done
  done
fi

python3 - "$out" <<'PY'
import json, sys
from statistics import median
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def algo_of(r):  # "summa", or "caps XX" with the CAPS steps that ran
    if r["algo"] != "caps":
        return r["algo"]
    lay = r.get("layout", "")
    return "caps " + (lay.split("steps ")[1].split(",")[0] if "steps " in lay else "")
# Rows of one configuration from several rounds (ROUNDS, or jobs' lines joined) become one: the
# median of their medians (load and store likewise), with the number of rounds.
def merged(group):
    r = dict(group[0])
    for f in ("time_median", "load_seconds", "store_seconds"):
        if f in r:
            r[f] = median(g[f] for g in group)
    r["rounds"] = len(group)
    r["all_times"] = [t for g in group for t in g.get("times", [])]  # every round's runs, for the spread
    return r
def grouped(items, key):
    by = {}
    for r in items:
        by.setdefault(key(r), []).append(r)
    return {k: merged(g) for k, g in by.items()}
gb = grouped((r for r in rows if r.get("command") == "gpu-bench"),
             lambda r: (r["dtype"], r["n"], r["engine"], r.get("levels")))
bench = {}  # (dtype, n, engine) -> one-GPU gpu-bench seconds (gpu-winograd: its best level)
for (dt, n, e, _), r in gb.items():
    bench[(dt, n, e)] = min(bench.get((dt, n, e), 1e30), r["time_median"])
# (the transport a row ran on and whether auto chose its algorithm keep rows apart)
runs = list(grouped((r for r in rows if "algo" in r),
                    lambda r: (r["dtype"], r["m"], r["n"], r["k"], r["engine"], r["ranks"], algo_of(r),
                               bool(r.get("from_host")), r.get("layout", ""), r.get("bench_transport", "default"),
                               r.get("bench_mode", ""), r.get("selection", "").startswith("auto"))).values())
net_rows = [r for r in runs if r.get("bench_mode") == "network"]  # MODE=network's: their own table
runs = [r for r in runs if r.get("bench_mode") != "network"]
xt = {(k[0], k[1]): r for k, r in grouped((r for r in rows if r.get("command") == "xt-bench"),
                                         lambda r: (r["dtype"], r["n"])).items()}
rounds = max([r["rounds"] for r in runs] + [1])
if rounds > 1:
    print(f"\n(each row: the median of up to {rounds} rounds' medians; its runs and their spread pool the rounds)")
if any(not r.get("from_host") for r in runs):
    print("\n| dtype | n | engine | GPUs (ranks) | algorithm | residency | time s | runs, fastest-slowest s | TFLOP/s | vs one-GPU gpu-bench | efficiency | target |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
square = [r for r in runs if not r.get("from_host") and r["m"] == r["n"] == r["k"]]  # (the weak scaling's rows apart)
for r in sorted(square, key=lambda r: (r["dtype"], r["m"], r["engine"], r["ranks"], r["algo"])):
    k = (r["dtype"], r["m"], r["engine"])
    t, p = r["time_median"], r["ranks"]
    tflops = 2 * r["m"] * r["n"] * r["k"] / t / 1e12
    ref = bench.get(k)
    speed = ref / t if ref else float("nan")  # rate over one GPU's rate
    eff = speed / p
    target = ""
    if p == 1:
        target = ">= 0.97x: " + ("met" if speed >= 0.97 else "NOT met")
    elif p == 2 and ((r["dtype"] == "f32" and r["m"] >= 32768) or (r["dtype"] == "f64" and r["m"] == 32768)):
        target = ">= 1.85x one GPU: " + ("met" if speed >= 1.85 else "NOT met")
    if not ref and target:
        target = "no one-GPU gpu-bench of this size and engine"
    # "device (...; between GPUs: NCCL 2.28.3 (path))" -> "device, NCCL"; one rank: "device"; the
    # fallback without NCCL: "device, MPI via host"
    full = r.get("residency", "")
    res = ("device, NCCL" if "NCCL" in full else "device" if "none (one rank)" in full
           else "device, MPI via host" if full.startswith("device") and "MPI" in full else full[:40])
    if r.get("bench_transport") == "network":
        res += " (network)"  # NETWORK=1: NCCL without P2P and shared memory
    ts = r["all_times"]
    spread = f"{len(ts)}, {min(ts):.3f}-{max(ts):.3f}" if ts else "-"
    print(f"| {r['dtype']} | {r['m']} | {r['engine']} | {p} | {algo_of(r)} | {res} | {t:.3f} | {spread} | {tflops:.1f} | {speed:.3f}x | {eff:.3f} | {target} |")
if any(r.get("from_host") for r in runs):
    print("\n| dtype | n | engine | GPUs | algorithm | load s | multiply s | store s | host to host s | cuBLASXt s | speedup over cuBLASXt | target |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for r in sorted((r for r in runs if r.get("from_host")), key=lambda r: (r["dtype"], r["m"], r["engine"], r["algo"])):
    # streamed runs (stages > 1) time host to host; unstreamed ones load, multiply, store in turn
    total = r["time_median"] if r.get("stages", 1) > 1 else r["load_seconds"] + r["time_median"] + r["store_seconds"]
    x = xt.get((r["dtype"], r["m"]))
    xs = x["time_median"] if x else float("nan")
    sp = xs / total
    target = ">= 1.2x: " + ("met" if sp >= 1.2 else "NOT met") if r["ranks"] >= 2 else ""
    if r.get("stages", 1) > 1:
        parts = f"streamed in {r['stages']} panels | - | -"
    else:
        parts = f"{r['load_seconds']:.3f} | {r['time_median']:.3f} | {r['store_seconds']:.3f}"
    print(f"| {r['dtype']} | {r['m']} | {r['engine']} | {r['ranks']} | {algo_of(r)} | {parts} | {total:.3f} | {xs:.3f} | {sp:.3f}x | {target} |")
for r in (r for r in runs if r["algo"] == "caps" and r["ranks"] == 7):
    cub = bench.get((r["dtype"], r["m"], "cublas"))
    eff_tf = 2 * r["m"] ** 3 / r["time_median"] / 1e12
    need = 1.3 * 7 * (2 * r["m"] ** 3 / cub / 1e12) if cub else float("nan")
    print(f"\nCAPS on {r['ranks']} GPUs ({r['residency']}): {r['time_median']:.3f} s, {eff_tf:.1f} effective TFLOP/s; "
          f"target 1.3 x 7 x one GPU's cuBLAS = {need:.1f}: " + ("met" if eff_tf >= need else "NOT met"))
import os
wb = int(os.environ.get("WEAK_BLOCK", "16384"))
weak = sorted((r for r in runs if os.environ.get("MODE") == "scaling" and r["k"] == wb and r["m"] == r["n"]
               and r["dtype"] == "f64" and r["algo"] == "summa"), key=lambda r: (r["engine"], r["ranks"]))
if weak:
    print("\n| engine | GPUs | m = n | k | time s | vs 1 GPU |")
    print("|---|---|---|---|---|---|")
    one = {r["engine"]: r["time_median"] for r in weak if r["ranks"] == 1}
    for r in weak:
        base = one.get(r["engine"])
        print(f"| {r['engine']} | {r['ranks']} | {r['m']} | {r['k']} | {r['time_median']:.3f} | "
              f"{(r['time_median'] / base if base else float('nan')):.3f} |")
# MODE=scaling (issue 42): per dtype, n, engine and GPUs the fastest of auto, SUMMA and cuboid,
# its efficiency against the engine's own one-GPU rate, JAX beside cuBLAS, f64 49152 against DGEMM.
# (CAPS only where auto chose it: the 7-rank CAPS row is apart; the weak scaling's one-GPU row is
# square too)
scal = [r for r in runs if r.get("bench_mode") == "scaling" and not r.get("from_host") and r["m"] == r["n"] == r["k"]
        and (r["algo"] != "caps" or r.get("selection", "").startswith("auto")) and r["k"] != wb]
jax = {}
for r in rows:
    if r.get("bench") == "jax" and r.get("layout") == "blocks":
        jax.setdefault((r["dtype"], r["n"], r["ranks"]), []).append(r["time_median"])
jax = {k: median(v) for k, v in jax.items()}
if scal:
    best, autos = {}, {}
    for r in scal:
        key = (r["dtype"], r["m"], r["engine"], r["ranks"])
        if r.get("selection", "").startswith("auto"):
            autos[key] = r
        if key not in best or r["time_median"] < best[key]["time_median"]:
            best[key] = r
    def one_gpu(dt, n, e):  # gpu-bench on one GPU, else (HOST_SMOKE) the fastest one-rank run
        if (dt, n, e) in bench:
            return bench[(dt, n, e)], "gpu-bench"
        b1 = best.get((dt, n, e, 1))
        return (b1["time_median"], "1 rank") if b1 else (None, "-")
    print("\nScaling: the fastest of --algo auto, summa and cuboid per row (auto's own choice beside it); "
          "efficiency = one GPU's time / (GPUs x time); JAX = jit(jnp.matmul) on 2-D blocks, the same GPUs.")
    print("\n| dtype | n | engine | GPUs | fastest | auto chose | time s | TFLOP/s | one GPU s | efficiency | "
          "target (4 GPUs >= 0.93) | JAX s | distmm / JAX speed | target (>= 1.05x) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (dt, n, e, p), r in sorted(best.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2], kv[0][3])):
        t = r["time_median"]
        ref, src = one_gpu(dt, n, e)
        eff = ref / t / p if ref else float("nan")
        target = (">= 0.93: " + ("met" if eff >= 0.93 else "NOT met")) if p == 4 and ref else ""
        a = autos.get((dt, n, e, p))
        jx = jax.get((dt, n, p)) if e in ("cublas", "blas") else None
        jt = (">= 1.05x: " + ("met" if jx / t >= 1.05 else "NOT met")) if jx and p in (2, 4) else ""
        auto_txt = f"{algo_of(a)} ({a['time_median']:.3f} s)" if a else "-"
        print(f"| {dt} | {n} | {e} | {p} | {algo_of(r)} | {auto_txt} | "
              f"{t:.3f} | {2 * n ** 3 / t / 1e12:.1f} | " + (f"{ref:.3f} ({src})" if ref else "-") + f" | {eff:.3f} | {target} | "
              + (f"{jx:.3f} | {jx / t:.3f}x | {jt}" if jx else "- | - | ") + " |")
    for (dt, n, p) in sorted({(k[0], k[1], k[3]) for k in best if k[0] == "f64" and k[3] == 4}):
        fastest = min((r for k, r in best.items() if (k[0], k[1], k[3]) == (dt, n, p)), key=lambda r: r["time_median"])
        cub = bench.get((dt, n, "cublas"))
        if cub:
            sp = cub / fastest["time_median"]
            mark = (" (target >= 6.0x at 49152: " + ("met" if sp >= 6.0 else "NOT met") + ")") if n == 49152 else ""
            print(f"\nf64 {n} on 4 GPUs: fastest {fastest['engine']} {algo_of(fastest)} {fastest['time_median']:.3f} s, "
                  f"{sp:.2f}x one GPU's cuBLAS DGEMM ({cub:.3f} s); verification {fastest.get('verify', '?')}: "
                  f"{'PASSED' if fastest.get('passed') else 'NOT passed'}, rel. Frobenius {fastest.get('rel_frobenius', float('nan')):.2e}{mark}")
# MODE=network: each row on NCCL as it is ("direct": NVLink/P2P inside the host) and on NCCL's
# network transport (P2P and SHM off), with the words the busiest rank sent and the rate they imply.
if net_rows:
    elem = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "c32": 8, "c64": 16}
    comm_words = ("gather", "reduce-scatter", "exchange", "broadcast", "shift", "reduction")
    probes = {r["bench_transport"]: r for r in rows if r.get("command") == "nccl-probe"}
    def seen(tr):  # the transports NCCL reported in this transport's probe run
        pr = probes.get(tr)
        if not pr:
            return "not probed"
        via = sorted(pr.get("via", {}).items(), key=lambda x: -x[1])
        nets = ("; network " + "/".join(pr["networks"])) if pr.get("networks") else ""
        return (", ".join(f"{k} x{v}" for k, v in via[:2]) or "no channel lines") + nets
    def label(r):
        a = algo_of(r)
        return f"auto: {a}" if r.get("selection", "").startswith("auto") else a
    def key(r):
        return (r["dtype"], r["m"], r["n"], r["k"], r["ranks"], r["engine"], label(r))
    direct = {key(r): r["time_median"] for r in net_rows if r.get("bench_transport") != "network"}
    order = {"summa": 0, "cuboid": 1, "cannon": 2, "dns": 3}
    print("\nBetween the GPUs: direct = NCCL as it is (NVLink/P2P inside the host); network = NCCL with "
          "P2P and SHM off (" + (probes.get("network", {}).get("bench_nccl_env") or "NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1") + ").")
    print("GB moved = the busiest rank's counted words (mpi/runtime/comm.hpp: point-to-point by the sender, "
          "collectives by each non-root member) x the element's bytes, one multiply.")
    print("GB/s >= = GB moved / the multiply's median time: a LOWER BOUND on the rate the link gave (the time "
          "includes the products the transfers overlap with). GB/s comm = GB moved / the communication "
          "phases' seconds (each phase's max over the ranks, summed; the last run), where the run timed them "
          "(host runs of cuboid and CAPS; GPU runs do not).")
    for tr in ("default", "network"):
        if tr in probes:
            print(f"NCCL probe, {'direct' if tr == 'default' else 'network'}: {seen(tr)} (NCCL {probes[tr].get('nccl_version') or '?'})")
    print("\n| dtype | n | GPUs | engine | algorithm (layout) | between GPUs | time s | TFLOP/s | vs one-GPU gpu-bench | network / direct time | GB moved per rank | GB/s >= (moved / time) | GB/s comm (moved / comm phases) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    rows_sorted = sorted(net_rows, key=lambda r: (r["dtype"], r["m"], r["engine"] != "cublas" and r["engine"] != "blas",
                                                   label(r).startswith("auto"), order.get(r["algo"], 9),
                                                   r.get("bench_transport") == "network"))
    for r in rows_sorted:
        t, p = r["time_median"], r["ranks"]
        nw = r.get("bench_transport") == "network"
        moved = r.get("words_max", 0) * elem.get(r["dtype"], 8) / 1e9
        comm_t = sum(v.get("max", 0) for name, v in (r.get("phases") or {}).items()
                     if any(w in name for w in comm_words))
        ref = bench.get((r["dtype"], r["m"], r["engine"]))
        d = direct.get(key(r))
        lay = r.get("layout", "").split(",")[0]
        full = r.get("residency", "")
        via = (("NCCL, " + ("network" if nw else "direct")) if "NCCL" in full
               else "MPI via host" + (" (NCCL_* set, unused)" if nw else "") if "MPI" in full else full[:30])
        print(f"| {r['dtype']} | {r['m']} | {p} | {r['engine']} | {label(r)} ({lay}) | {via} | {t:.3f} | "
              f"{2 * r['m'] * r['n'] * r['k'] / t / 1e12:.1f} | " + (f"{ref / t:.3f}x" if ref else "-") + " | "
              + (f"{t / d:.2f}x" if nw and d else "-") + f" | {moved:.3g} | {moved / t:.3g} | "
              + (f"{moved / comm_t:.3g}" if comm_t > 0 else "-") + " |")
    # auto's choice against the fastest classical row measured on the same transport
    print()
    for tr in ("default", "network"):
        cfgs = sorted({(r["dtype"], r["m"], r["ranks"]) for r in net_rows})
        for cfg in cfgs:
            same = [r for r in net_rows if (r["dtype"], r["m"], r["ranks"]) == cfg
                    and r.get("bench_transport", "default") == tr and r["engine"] in ("cublas", "blas")]
            auto = [r for r in same if label(r).startswith("auto")]
            fixed = [r for r in same if not label(r).startswith("auto")]
            if auto and fixed:
                best = min(fixed, key=lambda r: r["time_median"])
                print(f"{'direct' if tr == 'default' else 'network'} {cfg[0]} {cfg[1]} on {cfg[2]} GPUs: auto chose "
                      f"{algo_of(auto[0])} ({auto[0]['time_median']:.3f} s); fastest explicit row: {best['algo']} "
                      f"({best['time_median']:.3f} s)")
PY
[ "$failed" -eq 0 ] || { echo "bench_multigpu.sh: $failed run(s) failed (FAILED lines above)" >&2; exit 1; }
