#!/usr/bin/env bash
# Build the documentation site and take screenshots of its pages with headless Chromium, to
# look at how the built site renders: by default a rule page, the verify page and the
# configuration section of the user guide.
#
# Needs mkdocs and mkdocs-material (the dev extra) and Debian's chromium package
# (`apt-get install chromium`).
# Usage: scripts/docs_screenshot.sh [OUT_DIR [PAGE ...]]
#   OUT_DIR defaults to docs-screenshots/. A PAGE is a page of the site, with an optional
#   #anchor to scroll to (rules/AMP003, verify, index#configuration); each is written to
#   OUT_DIR/<PAGE with / and # as ->.png.
set -euo pipefail
out_dir=${1:-docs-screenshots}
shift || true
pages=("$@")
if [ ${#pages[@]} -eq 0 ]; then
  pages=(rules/AMP003 verify index#configuration)
fi
mkdir -p "$out_dir"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# mkdocs-material prints an end-of-life banner on every build unless this is set.
NO_MKDOCS_2_WARNING=1 python -m mkdocs build --strict --quiet --site-dir "$work/site"
for page in "${pages[@]}"; do
  path=${page%%#*}
  anchor=
  if [ "$path" != "$page" ]; then anchor="#${page#*#}"; fi
  file="$work/site/$path/index.html"
  if [ "$path" = index ]; then file="$work/site/index.html"; fi
  [ -f "$file" ] || { echo "no page $page in the built site" >&2; exit 1; }
  png="$out_dir/$(printf '%s' "$page" | tr '/#' '--').png"
  url="file://$file"
  if [ -n "$anchor" ]; then
    # Headless Chromium shoots a blank page when the address itself has a #fragment; a page
    # that frames it, at the window's size, shows the section scrolled to.
    printf '<!doctype html><body style="margin:0"><iframe src="%s" style="border:0;width:1280px;height:1400px"></iframe>\n' \
      "file://$file$anchor" >"$work/frame.html"
    url="file://$work/frame.html"
  fi
  # The background-networking flags keep Chromium from dialling out on a closed network.
  chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$work/profile" --hide-scrollbars --window-size=1280,1400 \
    --screenshot="$png" "$url" 2>/dev/null
  [ -s "$png" ] || { echo "chromium wrote no screenshot of $page" >&2; exit 1; }
  echo "wrote $png"
done
