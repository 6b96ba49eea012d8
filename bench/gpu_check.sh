#!/usr/bin/env bash
# The prepared GPU check (bench/gpu_check.py says what it runs): under 8 minutes on one
# H100, its table and JSON in $CROQVM_GPU_CHECK_OUT (default: gpu-check/). Without a GPU it
# writes the machine's facts and skips the GPU steps with the reason.
#
# A GPU machine without network lacks some of croqvm's packages: fetch them as wheels here
# first (where pip works), into .whl/, which this script installs from:
#   bench/gpu_check.sh --fetch-wheels [PYTHON-VERSION, default 3.12]
# Set CROQTILE=<a Croqtile checkout> to also run its kernels on the GPU.
set -u
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--fetch-wheels" ]; then
  version=${2:-3.12}
  platforms=""
  for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 \
           manylinux2014_x86_64; do platforms="$platforms --platform $p"; done
  for pkg in cffi pycparser ml_dtypes hypothesis sortedcontainers attrs; do
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$version" \
      --implementation cp $platforms -d .whl "$pkg" ||
    python3 -m pip download -q --no-deps --only-binary=:all: -d .whl "$pkg" || exit 2
  done
  # the typer croqvm needs (a machine's own is often older) with what it needs in turn
  python3 -m pip download -q --only-binary=:all: --python-version "$version" \
    --implementation cp $platforms -d .whl "typer>=0.29" || exit 2
  echo "wheels in .whl/: $(ls .whl | tr '\n' ' ')"
  exit 0
fi

if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/croqvm-site .whl/*.whl || exit 2
  export PYTHONPATH=/tmp/croqvm-site${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
if ! python3 -c "import croqvm._native" 2>/dev/null; then
  python3 setup.py -q build_ext --inplace >/dev/null 2>&1 ||
    echo "gpu_check: the native engine did not build; the Python engine is the reference"
fi
exec timeout 470 python3 bench/gpu_check.py --out "${CROQVM_GPU_CHECK_OUT:-gpu-check}" "$@"
