#!/usr/bin/env bash
# Creates (or completes) the reference Python environment: torch 2.11.0 plus the real
# implementations (transformers, peft, diffusers, ultralytics, onnxruntime) pinned in
# requirements.txt beside this script. Used by tests/fixtures/make_golden.py and the benchmark
# reference scripts; never by the test suite or installer/setup.sh.
#
#   bash tests/bench/reference/setup_venv.sh
#   VENV=${CRUCIBLE_REFERENCE_VENV:-$HOME/.cache/crucible/reference-2.11.0}
#   "$VENV/bin/python" tests/fixtures/make_golden.py
#
# Idempotent: an existing environment is kept and only what is missing or at another version is
# installed. torch comes from /tmp/torchdl/torch-2.11.0-*.whl when that wheel is there (no second
# download), else from PyPI.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${CRUCIBLE_REFERENCE_VENV:-$HOME/.cache/crucible/reference-2.11.0}"
requirements="$here/requirements.txt"
python=/usr/bin/python3

say() { echo "setup_venv: $*"; }

if [[ ! -x "$python" ]]; then
    say "$python not found (Debian: apt-get install python3 python3-venv)"
    exit 1
fi
if [[ -x "$venv/bin/python" ]]; then
    say "using the existing environment $venv"
else
    say "creating $venv with $($python --version 2>&1)"
    mkdir -p "$(dirname "$venv")"
    "$python" -m venv "$venv"
fi
pip=("$venv/bin/python" -m pip --disable-pip-version-check)

installed_torch="$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("torch"))' \
    2>/dev/null || true)"
if [[ "$installed_torch" == 2.11.0* ]]; then
    say "torch $installed_torch already installed"
else
    shopt -s nullglob
    wheels=(/tmp/torchdl/torch-2.11.0-*.whl)
    shopt -u nullglob
    if ((${#wheels[@]} > 0)); then
        say "installing torch from ${wheels[0]}"
        "${pip[@]}" install "${wheels[0]}"
    else
        say "installing torch==2.11.0 from PyPI"
        "${pip[@]}" install torch==2.11.0
    fi
fi

say "installing the pinned packages of $requirements"
"${pip[@]}" install -r "$requirements"
say "checking that the installed packages are consistent"
"${pip[@]}" check
"$venv/bin/python" - <<'PY'
import importlib.metadata as m
for name in ("torch", "torchvision", "transformers", "peft", "diffusers", "safetensors", "numpy",
             "ultralytics", "onnxruntime", "bitsandbytes"):
    print(f"setup_venv: {name} {m.version(name)}")
PY
say "done: $venv/bin/python"
