#!/usr/bin/env python3
"""Draws the toolbar and store icons (16, 32, 48, 128 px) in brand.json's colour.

Usage: python3 scripts/icons.py   (needs Pillow: pip install pillow)
A white-label build can instead put its own PNGs at the paths brand.json names.
"""
import json
from pathlib import Path

from PIL import Image, ImageDraw

ROOT = Path(__file__).resolve().parent.parent
brand = json.loads((ROOT / "brand.json").read_text())
color = brand.get("iconColor", brand["badgeColor"])

S = 512  # drawn large, then scaled down for smooth edges
img = Image.new("RGBA", (S, S), (0, 0, 0, 0))
d = ImageDraw.Draw(img)
d.rounded_rectangle((16, 16, S - 16, S - 16), radius=112, fill=color)
# A browser window: a bar with three dots and a pane.
white = (255, 255, 255, 255)
d.rounded_rectangle((96, 120, S - 96, S - 120), radius=36, outline=white, width=28)
d.line((110, 196, S - 110, 196), fill=white, width=24)
for i in range(3):
    x = 150 + i * 44
    d.ellipse((x - 12, 146, x + 12, 170), fill=white)
# A pointer: the operator acting in the page.
d.polygon([(236, 236), (236, 392), (276, 352), (306, 414), (336, 400), (306, 340), (360, 340)], fill=white)

for size, rel in brand["icons"].items():
    out = ROOT / rel
    out.parent.mkdir(parents=True, exist_ok=True)
    img.resize((int(size), int(size)), Image.LANCZOS).save(out, optimize=True)
    print(f"{out.relative_to(ROOT)} ({size}x{size})")
