#!/usr/bin/env bash
# The SLURM scripts in jobs/ against a real one-node Slurm cluster started here: installs
# slurm-wlm and munge when missing, creates a munge key, starts munged, slurmctld and slurmd with
# a generated slurm.conf (enough CPUs declared for 9 tasks), submits each CPU script with small
# sizes, waits with a bounded timeout, and checks the job state, the exit code and the verified
# result; the GPU script is checked with `sbatch --test-only` (--gpus-per-node, --gres,
# --gpus-per-task) and, before anything needs root, by its launch lines for 2 nodes x 4 GPUs
# (DRY_RUN=1). Runs as root; the daemons are stopped by their pids at the end, also when a check
# fails.
# usage: slurm_test.sh SOURCE_DIR DISTMM
set -uo pipefail
src=$(cd "$1" && pwd) distmm=$(readlink -f "$2")
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok: $1"; }
bad() { fail=$((fail + 1)); echo "FAILED: $1"; }

# gpu.sbatch's launch lines for 2 nodes x 4 GPUs (DRY_RUN=1 prints them; no Slurm or GPU needed):
# one rank per GPU on every node, the NCCL settings exported (and passed on by mpirun's -x).
sim=(env SLURM_JOB_NUM_NODES=2 SLURM_NTASKS=8 SLURM_NTASKS_PER_NODE=4 SLURM_GPUS_ON_NODE=4
     SLURM_CPUS_PER_TASK=2 SLURM_JOB_ID=1 DRY_RUN=1 DISTMM=/bin/true NCCL_SOCKET_IFNAME=eth0)
dry=$("${sim[@]}" bash "$src/jobs/gpu.sbatch" 2>&1)
if grep -q "^srun --mpi=pmix --cpu-bind=cores /bin/true run " <<< "$dry" && grep -q "NCCL_NVLS_ENABLE=0" <<< "$dry" &&
   grep -q "2 node(s) x 4 rank(s), 4 GPU(s) per node" <<< "$dry" && ! grep -q "^note:" <<< "$dry"; then
  ok "gpu.sbatch on 2 nodes x 4 GPUs (dry run): srun, NCCL_NVLS_ENABLE=0"
else bad "gpu.sbatch dry run (srun): $dry"; fi
dry=$("${sim[@]}" LAUNCHER=mpirun bash "$src/jobs/gpu.sbatch" 2>&1)
if grep -q "^mpirun -n 8 --map-by ppr:4:node:PE=2 --bind-to core .*-x NCCL_SOCKET_IFNAME .*/bin/true run " <<< "$dry" &&
   grep -q -- "-x NCCL_NVLS_ENABLE" <<< "$dry"; then
  ok "gpu.sbatch on 2 nodes x 4 GPUs (dry run): mpirun -n 8 --map-by ppr:4:node, NCCL_* passed with -x"
else bad "gpu.sbatch dry run (mpirun): $dry"; fi
dry=$("${sim[@]}" SLURM_NTASKS_PER_NODE=8 bash "$src/jobs/gpu.sbatch" 2>&1)
if grep -q "^note: 8 ranks per node on 4 GPUs" <<< "$dry"; then ok "gpu.sbatch warns of more ranks than GPUs per node"
else bad "gpu.sbatch dry run, 8 ranks on 4 GPUs: $dry"; fi

if [ "$(id -u)" -ne 0 ]; then
  echo "skipped: the Slurm test starts daemons and must run as root ($pass passed, $fail failed before)"
  [ "$fail" -eq 0 ] && exit 77
  exit 1
fi
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  echo "installing slurm-wlm and munge"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null ||
    { echo "could not install slurm-wlm and munge"; exit 1; }
fi

work=$(mktemp -d /tmp/distmm-slurm.XXXXXX)
chmod 755 "$work"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  sleep 1
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  [ -f "$work/munged.pid" ] && kill "$(cat "$work/munged.pid")" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# munge: a fresh key and a private socket, so a system munged (if any) is left alone.
mkdir -p "$work/munge"
dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 2>/dev/null
chmod 400 "$work/munge/munge.key"
sock="$work/munge/munge.socket"
munged --force --key-file="$work/munge/munge.key" --socket="$sock" --pid-file="$work/munged.pid" \
  --log-file="$work/munge/munged.log" --seed-file="$work/munge/seed" || { echo "munged failed to start"; exit 1; }

host=$(hostname -s)
ncpu=16
mkdir -p "$work/state" "$work/spool"
cat > "$work/slurm.conf" <<CONF
ClusterName=distmmtest
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
SlurmctldPort=16817
SlurmdPort=16818
AuthType=auth/munge
AuthInfo=socket=$sock
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MinJobAge=600
GresTypes=gpu
NodeName=$host CPUs=$ncpu Boards=1 SocketsPerBoard=1 CoresPerSocket=$ncpu ThreadsPerCore=1 RealMemory=4000 Gres=gpu:4 State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
# A GPU count declared for `sbatch --test-only` (no GPU is used): four stand-in device files.
for i in 0 1 2 3; do touch "$work/gpu$i"; done
echo "NodeName=$host Name=gpu File=$work/gpu[0-3]" > "$work/gres.conf"
export SLURM_CONF="$work/slurm.conf"

slurmctld -D -f "$SLURM_CONF" >"$work/ctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" >"$work/slurmd.out" 2>&1 &
pids+=($!)

up=0
for _ in $(seq 1 60); do
  if sinfo -h -o "%T" 2>/dev/null | grep -qE "idle|mixed"; then up=1; break; fi
  sleep 1
done
if [ $up -ne 1 ]; then
  echo "the test cluster did not come up; logs:"; tail -20 "$work"/*.log "$work"/*.out
  exit 1
fi
ok "one-node cluster up ($(sinfo -h -o '%N %c CPUs %T'))"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
# submit NAME SCRIPT [sbatch options] : runs the job to completion (bounded), checks it.
submit() {
  local name=$1 script=$2
  shift 2
  local id
  id=$(cd "$work" && sbatch --parsable --output="$work/$name-%j.out" "$@" "$script") || { bad "$name: sbatch refused"; return; }
  local state=""
  for _ in $(seq 1 240); do
    state=$(scontrol show job "$id" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2)
    case $state in COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY) break ;; esac
    # A job that can never start says why at once: do not wait out the timeout for it.
    if scontrol show job "$id" | grep -qE "Reason=(PartitionTimeLimit|PartitionNodeLimit|BadConstraints|ReqNodeNotAvail)"; then break; fi
    sleep 1
  done
  local code
  code=$(scontrol show job "$id" | grep -o 'ExitCode=[0-9:]*' | head -1 | cut -d= -f2)
  local out="$work/$name-$id.out"
  if [ "$state" = COMPLETED ] && [ "$code" = "0:0" ] && grep -q "PASSED" "$out"; then
    ok "$name: job $id $state, exit $code, $(grep -c PASSED "$out") verified run(s)"
  else
    bad "$name: job $id state '$state' exit '$code'"; tail -20 "$out" 2>/dev/null
    scontrol show job "$id" | grep -E "Reason|JobState"
    [ "$state" = COMPLETED ] || scancel "$id" 2>/dev/null
  fi
}

export DISTMM=$distmm
submit cpu-srun "$src/jobs/cpu.sbatch" --ntasks-per-node=4 --export=ALL,SIZE=96,ALGO=cannon,REPEAT=1
submit cpu-threads "$src/jobs/cpu.sbatch" --ntasks-per-node=2 --cpus-per-task=2 --export=ALL,SIZE=120,ALGO=summa,ENGINE=winograd,REPEAT=1
submit cpu-mpirun "$src/jobs/cpu.sbatch" --ntasks-per-node=9 --export=ALL,SIZE=90,ALGO=auto,REPEAT=1,LAUNCHER=mpirun,BIND=none,MPIRUN_ARGS=--oversubscribe
submit sweep "$src/jobs/sweep.sbatch" --ntasks=9 --time=10 --export=ALL,SIZE=64,RANKS="1 2 4 7 8 9",ALGOS="summa cannon dns caps"
sweep_json=$(ls "$work"/distmm-sweep-*.jsonl 2>/dev/null | head -1)
if [ -n "$sweep_json" ] && [ "$(wc -l < "$sweep_json")" -ge 10 ] &&
   /usr/bin/python3 "$src/jobs/plot.py" "$sweep_json" --out "$work/sweep" >/dev/null; then
  ok "sweep: $(wc -l < "$sweep_json") JSON lines, plotted"
else bad "sweep JSON: ${sweep_json:-none}"; fi

if (cd "$work" && sbatch --test-only "$src/jobs/gpu.sbatch") 2>&1 | grep -q "to start at"; then ok "gpu.sbatch accepted by --test-only"
else bad "gpu.sbatch --test-only: $( (cd "$work" && sbatch --test-only "$src/jobs/gpu.sbatch") 2>&1)"; fi
if (cd "$work" && sbatch --test-only --gpus-per-node=4 --ntasks-per-node=4 "$src/jobs/gpu.sbatch") 2>&1 | grep -q "to start at"; then
  ok "gpu.sbatch with --gpus-per-node accepted by --test-only"
else bad "gpu.sbatch --gpus-per-node --test-only"; fi
if (cd "$work" && sbatch --test-only --gpus-per-node=0 --gres=gpu:4 --ntasks-per-node=4 "$src/jobs/gpu.sbatch") 2>&1 | grep -q "to start at"; then
  ok "gpu.sbatch with --gres=gpu:4 accepted by --test-only"
else bad "gpu.sbatch --gres=gpu:4 --test-only: $( (cd "$work" && sbatch --test-only --gpus-per-node=0 --gres=gpu:4 --ntasks-per-node=4 "$src/jobs/gpu.sbatch") 2>&1)"; fi
if (cd "$work" && sbatch --test-only --gpus-per-node=0 --gpus-per-task=1 "$src/jobs/gpu.sbatch") 2>&1 | grep -q "to start at"; then
  ok "gpu.sbatch with --gpus-per-task=1 accepted by --test-only"
else bad "gpu.sbatch --gpus-per-task=1 --test-only: $( (cd "$work" && sbatch --test-only --gpus-per-node=0 --gpus-per-task=1 "$src/jobs/gpu.sbatch") 2>&1)"; fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
