#!/usr/bin/env bash
# make test-python: builds the execfarm wheel, installs it into a fresh venv
# of Debian's /usr/bin/python3 with its system site packages (python3-grpcio,
# python3-protobuf, python3-pytest; no PyPI), checks that those meet the
# wheel's declared dependency ranges, and runs the tests there against a
# real `execfarm serve` (bin/execfarm; root). The README snippet runs from
# the installed wheel (tests/test_client.py, test_readme_*).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
py=/usr/bin/python3
for m in grpc google.protobuf pytest venv setuptools wheel; do
  "$py" -c "import $m" 2>/dev/null || {
    echo "test-python: $py lacks $m: apt-get install python3-grpcio python3-protobuf python3-pytest python3-venv python3-setuptools python3-wheel"; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"  # test_embedded_needs_root runs the venv as nobody
# A copy: building in the source tree would leave build/ and egg-info there.
cp -r "$here" "$work/src"
rm -rf "$work/src/build" "$work/src/dist" "$work/src"/src/*.egg-info
"$py" -m venv --system-site-packages "$work/venv"
pip=("$work/venv/bin/python" -m pip --disable-pip-version-check -q)
"${pip[@]}" wheel --no-deps --no-build-isolation --no-index -w "$work/dist" "$work/src"
"${pip[@]}" install --no-deps --no-build-isolation --no-index "$work"/dist/execfarm-*.whl
# pip check judges every system package too (some of Debian's lack
# optional dependencies); only execfarm's own line counts here.
if "${pip[@]}" check | grep -i '^execfarm '; then exit 1; fi
where=$(cd "$work" && "$work/venv/bin/python" -c 'import execfarm; print(execfarm.__file__)')
case $where in "$work/venv/"*) ;; *) echo "test-python: execfarm imported from $where, not the venv"; exit 1;; esac
cd "$work/src"
EXECFARM_BIN=${EXECFARM_BIN:-$repo/bin/execfarm} "$work/venv/bin/python" -m pytest -q -p no:cacheprovider tests
