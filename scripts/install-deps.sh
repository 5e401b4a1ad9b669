#!/usr/bin/env bash
# Installs every Debian package avbench needs to build, test and analyse.
# Idempotent: packages already present are not fetched again, and apt-get update
# runs only when something is missing.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  ninja-build  # the presets' generator: compiles a target's objects while its libraries link
  libopenmpi-dev openmpi-bin
  libsimgrid-dev
  libeigen3-dev libhdf5-dev hdf5-tools libcli11-dev librandom123-dev
  libgtest-dev libbenchmark-dev
  libexpat1-dev  # the sequential engine's reader of SimGrid platform files
  # The sanitized build with the fuzz targets (preset asan, tests/fuzz) needs clang
  # and its libFuzzer runtime.
  clang libclang-rt-14-dev
  python3 python3-h5py python3-numpy python3-pandas python3-matplotlib python3-xarray python3-h5netcdf python3-scipy
  python3-venv python3-pip python3-setuptools  # pip install ./python into a venv (docs/analysis.md)
  python3-nbformat python3-nbconvert python3-ipykernel jupyter-nbconvert
  # avbench.run in-process (the module avbench._engine over the sequential engine)
  # and its progress bar in Jupyter.
  pybind11-dev python3-dev python3-tqdm
  # The Slurm templates' test (tests/scripts/test_slurm.sh) runs a private Slurm:
  # slurm-wlm brings slurmctld, slurmd, the clients and the mpi/pmix plugin
  # (slurm-wlm-basic-plugins), munge its authentication. The plugin dlopens the
  # unversioned pmix2/lib/libpmix.so, which only libpmix-dev ships (libopenmpi-dev
  # pulls it in too; named here because `srun --mpi=pmix` needs it).
  slurm-wlm munge libpmix-dev
  # The wall-clock study's time-to-accuracy part trains on Fashion-MNIST (7 against 9).
  dataset-fashion-mnist
  # sgd_bench --objective softmax reads those gzipped IDX files through zlib.
  zlib1g-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
