#!/usr/bin/env bash
# The wheels bench/gpu_check.sh installs on the accelerator machine, which reaches no network: the pure-Python
# packages headlab imports that its image lacks (gguf; its own needs, numpy, pyyaml, requests and tqdm, are there).
# Run here, where PyPI is reachable (make test does, as it builds the venv): they land in .whl-gpu/ (git-ignored),
# the folder a device run carries. The version is the one this venv runs, so both machines import the same code.
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=${DEST:-.whl-gpu}
PY=${PY:-.venv/bin/python}
mkdir -p "$DEST"
for pkg in gguf; do
    version=$($PY -c "import importlib.metadata as m; print(m.version('$pkg'))")
    ls "$DEST"/"$pkg"-"$version"-*.whl > /dev/null 2>&1 && continue
    $PY -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 -d "$DEST" "$pkg==$version"
done
ls "$DEST"
