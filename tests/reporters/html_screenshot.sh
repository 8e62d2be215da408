#!/bin/sh
# html_screenshot.sh: the html reporter's screenshot test. Renders the golden
# page (tests/reporters/golden/report.html, which test_reporter_html keeps
# equal to what the reporter writes) in headless Chromium, once light and
# once dark (--force-dark-mode: prefers-color-scheme is dark), and checks
# each PNG with png_check: a real page (size, colours, background), and
# charts drawn: the five stage colours of the stacked bars and the first two
# series colours, each on more pixels than its legend swatch has, so on
# filled shapes of the charts. The thresholds are about a third of what
# Chromium 156 drew on Debian 12.
#
#   html_screenshot.sh PNG_CHECK PAGE.html OUT_DIR
#
# Exits 77 (ctest: skipped) only when no Chromium is installed (Debian:
# apt-get install chromium; tools/install-deps installs it). The
# screenshots stay in OUT_DIR for a look.
set -eu
. "$(dirname "$0")/../lib/testlib.sh"
png_check=$1
page=$2
out=$3

browser=""
for b in chromium chromium-browser google-chrome-stable google-chrome; do
  if command -v "$b" >/dev/null 2>&1; then
    browser=$b
    break
  fi
done
if [ -z "$browser" ]; then
  bc_test_skip "no Chromium installed (apt-get install chromium; tools/install-deps installs it)"
fi
mkdir -p "$out"

# shoot NAME [FLAG]: PAGE -> OUT_DIR/NAME.png, 1280 px wide, 5000 px tall (the whole golden page).
shoot() {
  rm -rf "$out/$1.png" "$out/profile-$1"
  if ! timeout 120 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
      --disable-dev-shm-usage --user-data-dir="$out/profile-$1" ${2:-} --screenshot="$out/$1.png" \
      --window-size=1280,5000 "file://$page" >"$out/$1.log" 2>&1 || [ ! -s "$out/$1.png" ]; then
    echo "html_screenshot: $browser did not write $out/$1.png:"
    cat "$out/$1.log"
    exit 1
  fi
  rm -rf "$out/profile-$1"
}

shoot light
shoot dark --force-dark-mode

# Stage colours --g0..--g4 and series colour --c0 of the page's style sheet.
"$png_check" "$out/light.png" --min-bytes 60000 --min-colours 400 --background ffffff --min-ink 0.03 \
  --colour 8e6bd8:500 --colour 2f7fd8:1000 --colour 1f9e70:5000 --colour e2a31f:500 --colour d9557a:500 \
  --colour 2563c9:1000 --colour e07b12:300
"$png_check" "$out/dark.png" --min-bytes 60000 --min-colours 400 --background 111418 --min-ink 0.03 \
  --colour a98bff:500 --colour 5b9cff:1000 --colour 3ccf91:5000 --colour f2c14e:500 --colour f07fa0:500 \
  --colour ff9f43:300
echo "html_screenshot: both screenshots show the page and its charts ($out)"
