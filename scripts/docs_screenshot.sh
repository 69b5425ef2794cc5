#!/usr/bin/env bash
# Build the documentation site and take a screenshot of a rule page with headless Chromium, to
# look at how the built site renders.
#
# Needs mkdocs and mkdocs-material (the dev extra) and Debian's chromium package
# (`apt-get install chromium`). Usage: scripts/docs_screenshot.sh [PAGE] [OUT.png]
#   PAGE defaults to rules/AMP003 (a page of site/), OUT to docs-screenshot.png.
set -euo pipefail
page=${1:-rules/AMP003}
out=${2:-docs-screenshot.png}
python -m mkdocs build --strict --quiet
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
# The background-networking flags keep Chromium from dialling out on a closed network.
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$profile" --hide-scrollbars --window-size=1280,1400 \
  --screenshot="$out" "file://$PWD/site/$page/index.html" 2>/dev/null
echo "wrote $out"
