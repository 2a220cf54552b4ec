#!/usr/bin/env bash
# Run in the project's root on a Debian bookworm machine with registry access and an installed
# DirectML stack (`onnx-dml-bench setup dml`). Builds .gpu-dml/ (git-ignored) for an offline Linux GPU
# machine that has no Wine, no Vulkan loader, no xkbcomp and no Mesa, and that receives at most ~64 MiB
# (the working tree included) per call:
#   .gpu-dml/s/           stage.sh, install.sh, run.sh, SUMS, the package list
#   .gpu-dml/c1 .. cN     one chunk each of payload.tar = debs/ (Wine, Xvfb, Mesa GL for the X server,
#                         the Vulkan loader, vulkan-tools, xkb; with their libraries, not libc) +
#                         stack.tar.xz (Windows Node.js, onnxruntime-node win32, the direct harness built
#                         from this checkout's sources, and the DirectML.dll builds installed side by side
#                         with `setup dml --directml-dll`, e.g. 1.13.1 for scripts/gpu/dml_perf.sh)
# The packages are resolved against an empty package database with a private apt state: the system's
# sources and lists are never changed. CHUNK_MB (default 34) = 64 MiB minus the working tree, with room.
set -euo pipefail
CHUNK_MB=${CHUNK_MB:-34}
CACHE=${ONNX_DML_BENCH_CACHE:-$HOME/.cache/onnx-dml-bench/dml}
PKGS="wine wine64 libwine xvfb xauth libvulkan1 vulkan-tools libgl1-mesa-dri libglx-mesa0 libgl1 xkb-data x11-xkb-utils"
# the GPU machine's own C/C++ runtime and base tools stay in use
EXCLUDE='^(libc6|gcc-12-base|libgcc-s1|libstdc\+\+6|sysvinit-utils|debconf|lsb-base|libcap2-bin|iso-codes)$'
here=$(cd "$(dirname "$0")" && pwd)
out=$PWD/.gpu-dml
tmp=${TMPDIR:-/tmp}/gpu-dml-prep
for f in "$CACHE/stack.json" "$CACHE/node/bin/node.exe" "$CACHE/app/node_modules/onnxruntime-node/package.json"; do
  [ -e "$f" ] || { echo "missing $f: run \`onnx-dml-bench setup dml\` first" >&2; exit 2; }
done
rm -rf "$out" "$tmp" && mkdir -p "$out/s" "$tmp/apt/lists/partial" "$tmp/apt/cache/archives/partial" "$tmp/debs" "$tmp/payload"
: > "$tmp/status"
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
py=python3; [ -x .venv/bin/python ] && py=.venv/bin/python
uri=$($py -c 'from onnx_dml_bench.dml.install.debian import debian_mirror; print(debian_mirror()[0])' 2>/dev/null || true)
uri=${uri:-http://deb.debian.org/debian}
key=/usr/share/keyrings/debian-archive-keyring.gpg
echo "deb [signed-by=$key] ${uri%/} $codename main" > "$tmp/sources.list"
O=(-o "Dir::State::Lists=$tmp/apt/lists" -o "Dir::Cache=$tmp/apt/cache" -o "Dir::Etc::SourceList=$tmp/sources.list"
   -o Dir::Etc::SourceParts=/dev/null -o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null
   -o "Dir::State::status=$tmp/status" -o Debug::NoLocking=1 -o "APT::Sandbox::User=$(id -un)"
   -o Acquire::Languages=none -o APT::Architecture=amd64 -o APT::Architectures=amd64)
apt-get "${O[@]}" update -qq
LC_ALL=C apt-get "${O[@]}" -s install --no-install-recommends $PKGS > "$tmp/sim.txt"
sed -nE 's/^Inst (\S+) (\[[^]]*\] )?\((\S+) .*/\1 \3/p' "$tmp/sim.txt" | awk -v ex="$EXCLUDE" '$1 !~ ex' > "$out/s/PACKAGES"
(cd "$tmp/debs" && apt-get "${O[@]}" download $(awk '{print $1"="$2}' "$out/s/PACKAGES") > /dev/null)
echo "$(wc -l < "$out/s/PACKAGES") packages, $(du -sh "$tmp/debs" | cut -f1)"
mkdir -p "$tmp/stack/direct"
cp -a "$CACHE/node" "$CACHE/app" "$tmp/stack/"
# the direct lane's harness of this checkout's sources (the GPU machine has no compiler: it takes the
# prebuilt executable whose .json names the same sources), and the side-by-side DirectML.dll builds
exe=$(ONNX_DML_BENCH_CACHE=$CACHE $py -c 'from onnx_dml_bench.dml.select import find_stack
from onnx_dml_bench.dml.direct.build import ensure_built
print(ensure_built(find_stack(), log=lambda m: None))')
cp -a "$exe" "${exe%.exe}.json" "$tmp/stack/direct/"
[ -d "$CACHE/directml" ] && cp -a "$CACHE/directml" "$tmp/stack/"
echo "direct harness: $(basename "$exe"); DirectML.dll builds: $(ls "$CACHE/directml" 2>/dev/null | tr '\n' ' ')"
tar -C "$tmp/stack" -cf - . | xz -6 -T0 -c > "$tmp/payload/stack.tar.xz"
mv "$tmp/debs" "$tmp/payload/debs"
tar -C "$tmp/payload" -cf "$tmp/payload.tar" .
(cd "$tmp" && split -b "${CHUNK_MB}M" -d -a 2 payload.tar part && sha256sum part?? > SUMS)
n=0
for p in "$tmp"/part??; do n=$((n+1)); mkdir -p "$out/c$n"; mv "$p" "$out/c$n/"; done
cp "$tmp/SUMS" "$out/s/SUMS"
cp "$here/stage.sh" "$here/install.sh" "$here/run.sh" "$out/s/"
rm -rf "$tmp"
du -sh "$out"/*
echo "ready: $n chunks; on the GPU machine, back to back: stage.sh 1 .. stage.sh $((n-1)) (one chunk carried per call), then install.sh + run.sh with chunk $n"
