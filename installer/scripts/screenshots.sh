#!/usr/bin/env bash
# Pictures of the studio's main views for the README: runs `crucible-studio --demo` on a virtual
# X server (Xvfb, software rendering as in an RDP session) and writes one PNG per tab (dataset,
# run monitor with its curves, annotation editor, run setup, run table, predict preview with
# weights the headless demo trains, welcome page) and one of the class editor into
# resources/screenshots.
#
#   bash installer/scripts/screenshots.sh [BUILD_DIR]     (default: build)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
studio="$build/app/studio/crucible-studio"
[ -x "$studio" ] || { echo "no $studio: build the studio first (bash installer/setup.sh)" >&2; exit 1; }
command -v xvfb-run >/dev/null || { echo "xvfb-run is missing (apt-get install xvfb xauth)" >&2; exit 1; }
out=resources/screenshots
demo=$(mktemp -d)
trap 'rm -rf "$demo"' EXIT
rm -f "$out"/*.png
# The predict preview needs trained weights: the headless demo trains YOLOv8n on the same kind of
# synthetic shapes (about 2 minutes on 2 cores) when the command line is built.
cli="$build/app/cli/crucible"
weights=""
if [ -x "$cli" ]; then
    "$cli" demo dir="$demo/trained" > "$demo/trained.log" 2>&1 || cat "$demo/trained.log" >&2
    weights=$(find "$demo/trained" -name best.safetensors | head -1)
fi
# A fresh settings folder, so recent projects and the theme of this machine do not show.
CRUCIBLE_PREVIEW_WEIGHTS="$weights" XDG_CONFIG_HOME="$demo/config" QT_QPA_PLATFORM=xcb \
    xvfb-run -a -s "-screen 0 1600x1000x24" "$studio" --demo --demo-dir "$demo/project" \
    --theme light --screenshots "$out"
ls -l "$out"
