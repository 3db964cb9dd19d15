#!/bin/sh
# make-assets.sh — regenerate the binary assets of the example packages.
#
# The outputs are committed, so building or testing Satchel does NOT need
# these tools. Run this only when you want to change an asset:
#
#   apt-get install -y ffmpeg wabt woff2 imagemagick fonts-dejavu-core
#   pip install fonttools
#   sh packages/make-assets.sh
#
# Everything is written into packages/shop and packages/docs; the sources
# (packages/src/pricing.wat, this script) stay outside the app folders so the
# shipped packages contain only web assets.
set -eu

cd "$(dirname "$0")"
SHOP=shop
DOCS=docs
FONT_DIR=/usr/share/fonts/truetype/dejavu
LABEL_FONT=$FONT_DIR/DejaVuSans-Bold.ttf
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# PNG/JPEG/WebP: strip metadata and timestamps so reruns give stable bytes.
IM_OUT="-strip -define png:exclude-chunks=date,time"

# ---------------------------------------------------------------- wasm
wat2wasm src/pricing.wat -o $SHOP/wasm/pricing.wasm
wasm-validate $SHOP/wasm/pricing.wasm

# ---------------------------------------------------------------- fonts
# DejaVu Sans subset to Basic Latin + Latin-1 + a few typographic marks
# (dashes, quotes, bullet, ellipsis, euro, arrow), then WOFF2.
UNICODES="U+0020-007E,U+00A0-00FF,U+0152-0153,U+2013-2014,U+2018-201E,U+2022,U+2026,U+20AC,U+2122,U+2192"
for style in "" "-Bold"; do
  pyftsubset "$FONT_DIR/DejaVuSans$style.ttf" \
    --unicodes="$UNICODES" --layout-features='kern,liga' --no-hinting \
    --desubroutinize --drop-tables+=FFTM \
    --output-file="$TMP/DejaVuSans$style-Latin.ttf"
  woff2_compress "$TMP/DejaVuSans$style-Latin.ttf" >/dev/null 2>&1
  mv "$TMP/DejaVuSans$style-Latin.woff2" $SHOP/fonts/
done

# ---------------------------------------------------------------- product images
# bag NAME EXT BACKGROUND BODY ACCENT — a simple flat-colour bag, 200x200.
bag() {
  name=$1 ext=$2 bg=$3 body=$4 accent=$5
  convert -size 200x200 "xc:$bg" \
    -fill none -stroke "$accent" -strokewidth 9 -draw "arc 62,28 138,112 180,360" \
    -stroke "#2b2320" -strokewidth 3 -fill "$body" -draw "roundrectangle 34,68 166,176 16,16" \
    -fill "$accent" -draw "roundrectangle 34,68 166,104 16,16" \
    -stroke none -fill "#f2d27a" -draw "roundrectangle 92,96 108,116 3,3" \
    -fill "#00000022" -draw "rectangle 40,172 160,176" \
    -alpha off -depth 8 $IM_OUT -quality 82 "$SHOP/img/products/$name.$ext"
}
bag cafe-tote        png  "#f6efe4" "#c8a27a" "#7a5230"
bag trail-backpack   jpg  "#e7f0ea" "#4f7a5a" "#2f4a36"
bag messenger        webp "#eceff6" "#5a6d9a" "#2f3b5c"
bag weekender        png  "#f7ebe8" "#a8483c" "#6b2a22"
bag zurich-roll-top  jpg  "#eeeeee" "#3d3d3d" "#d64b2a"
bag kyoto-sling      webp "#f3f0f7" "#8a6fb0" "#4b3a66"

# ---------------------------------------------------------------- icons
# icon SIZE OUT — app icon: rounded square with a satchel glyph.
icon() {
  s=$1 out=$2
  # Drawn at 512 px, then downsampled.
  convert -size 512x512 xc:none \
    -fill "#7a5230" -draw "roundrectangle 0,0 511,511 96,96" \
    -fill none -stroke "#f6efe4" -strokewidth 32 -draw "arc 176,80 336,272 180,360" \
    -stroke none -fill "#f6efe4" -draw "roundrectangle 96,176 416,416 48,48" \
    -fill "#c8a27a" -draw "roundrectangle 96,176 416,264 48,48" \
    -fill "#7a5230" -draw "rectangle 232,240 280,296" \
    -resize "${s}x${s}" -depth 8 $IM_OUT "$out"
}
icon 192 $SHOP/img/icon-192.png
icon 512 $SHOP/img/icon-512.png
icon 32 "$TMP/fav32.png"
icon 16 "$TMP/fav16.png"
convert "$TMP/fav16.png" "$TMP/fav32.png" $SHOP/img/favicon.ico

# ---------------------------------------------------------------- promo video
# 2.5 s, 160x90, 24 fps test pattern with a caption and a quiet 440 Hz tone.
# WebM (VP8 + Opus) is the primary source; MP4 (H.264 + AAC) is the fallback.
VF="drawbox=y=ih-22:w=iw:h=22:color=black@0.6:t=fill,drawtext=fontfile=$LABEL_FONT:text='SATCHEL SHOP':fontcolor=white:fontsize=12:x=(w-tw)/2:y=h-17"
ffmpeg -v error -y -f lavfi -i "testsrc=size=160x90:rate=24:duration=2.5" \
  -f lavfi -i "sine=frequency=440:sample_rate=48000:duration=2.5" \
  -vf "$VF" -af "volume=0.2" \
  -c:v libvpx -b:v 150k -auto-alt-ref 0 -c:a libopus -b:a 24k -ac 1 \
  -fflags +bitexact -flags:v +bitexact -flags:a +bitexact \
  $SHOP/media/promo.webm
ffmpeg -v error -y -f lavfi -i "testsrc=size=160x90:rate=24:duration=2.5" \
  -f lavfi -i "sine=frequency=440:sample_rate=48000:duration=2.5" \
  -vf "$VF" -af "volume=0.2" \
  -c:v libx264 -profile:v baseline -pix_fmt yuv420p -crf 30 -preset veryslow \
  -c:a aac -b:a 32k -ac 1 -movflags +faststart \
  -fflags +bitexact -flags:v +bitexact -flags:a +bitexact \
  $SHOP/media/promo.mp4
ffmpeg -v error -y -ss 1 -i $SHOP/media/promo.webm -frames:v 1 -q:v 4 \
  -fflags +bitexact -flags:v +bitexact $SHOP/media/promo-poster.jpg

# ---------------------------------------------------------------- docs diagram
# bundle-flow.png: "web folder -> satchel pack -> bundle -> app" diagram.
convert -size 520x140 xc:white -font "$FONT_DIR/DejaVuSans.ttf" -pointsize 13 \
  -stroke "#2b2320" -strokewidth 2 \
  -fill "#f6efe4" -draw "roundrectangle 10,40 110,100 10,10" \
  -fill "#e7f0ea" -draw "roundrectangle 140,40 240,100 10,10" \
  -fill "#eceff6" -draw "roundrectangle 270,40 370,100 10,10" \
  -fill "#f7ebe8" -draw "roundrectangle 400,40 500,100 10,10" \
  -draw "line 112,70 134,70" -draw "line 242,70 264,70" -draw "line 372,70 394,70" \
  -fill "#2b2320" -draw "polygon 134,65 134,75 139,70" \
  -draw "polygon 264,65 264,75 269,70" -draw "polygon 394,65 394,75 399,70" \
  -stroke none -gravity northwest \
  -annotate +22+64 "web folder" -annotate +146+64 "satchel pack" \
  -annotate +285+64 "bundle.zip" -annotate +407+64 "app web view" \
  -pointsize 15 -annotate +10+10 "How a package travels" \
  -pointsize 11 -fill "#6b6b6b" -annotate +140+112 "id, version, host, prefix" \
  +dither -colors 16 $IM_OUT PNG8:$DOCS/assets/bundle-flow.png

echo "assets regenerated"
