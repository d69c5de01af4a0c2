# Shared by the scripts: `. scripts/lib.sh` (from the repository root), not run on its own.

# bench_venv [PIP_SPEC...]: the benchmarks' virtualenv ($XDG_CACHE_HOME/ingle/bench-venv, kept
# between runs) with maturin, the packages named, and this checkout's wheel, built in the
# workspace's target dir (nothing is compiled a second time). Sets $venv.
bench_venv() {
  venv="${XDG_CACHE_HOME:-$HOME/.cache}/ingle/bench-venv"
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check maturin==1.16.0 "$@"
  (
    wheels="$(mktemp -d)"
    trap 'rm -rf "$wheels"' EXIT
    MATURIN="$venv/bin/maturin" scripts/build-wheel "$wheels"
    "$venv/bin/pip" install -q --disable-pip-version-check --force-reinstall --no-deps "$wheels"/ingle-*.whl
  )
}
