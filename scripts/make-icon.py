#!/usr/bin/env python3
"""Draw the plugin's icon: plugins/local-llm-delegator/assets/icon.png (512 x 512 RGBA PNG).

Standard library only (zlib for the PNG): a dark rounded square holding a small diff, one line removed (red, with
its minus) and one added (green, with its plus) between lines of context, and the approval tick. Every shape is a
rounded rectangle or a capsule drawn by its signed distance, so edges are anti-aliased without supersampling.
The output is byte-for-byte reproducible: `python3 scripts/make-icon.py [OUT]`.
"""

import math
import struct
import sys
import zlib
from pathlib import Path

SIZE = 512
BACKGROUND = (24, 32, 48)
CONTEXT = (148, 163, 184)
REMOVED = (239, 83, 80)
ADDED = (76, 175, 80)
TICK = (255, 255, 255)


def rounded_rect(x0, y0, x1, y1, r):
    """The signed distance to a rounded rectangle (negative inside)."""
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    hx, hy = (x1 - x0) / 2 - r, (y1 - y0) / 2 - r

    def sdf(x, y):
        qx, qy = abs(x - cx) - hx, abs(y - cy) - hy
        outside = math.hypot(max(qx, 0.0), max(qy, 0.0))
        return outside + min(max(qx, qy), 0.0) - r

    return sdf


def capsule(ax, ay, bx, by, r):
    """The signed distance to a thick line from (ax, ay) to (bx, by) with round ends."""
    dx, dy = bx - ax, by - ay
    length2 = dx * dx + dy * dy

    def sdf(x, y):
        t = max(0.0, min(1.0, ((x - ax) * dx + (y - ay) * dy) / length2))
        return math.hypot(x - ax - t * dx, y - ay - t * dy) - r

    return sdf


def shapes():
    """(distance function, colour, bounding box) in drawing order."""
    out = [(rounded_rect(16, 16, 496, 496, 96), BACKGROUND)]
    bar = 26  # line height
    rows = [(118, 300, CONTEXT), (182, 380, REMOVED), (246, 340, ADDED), (310, 250, CONTEXT)]
    for y, right, colour in rows:
        out.append((rounded_rect(136, y, right, y + bar, bar / 2), colour))
    # The markers in the gutter: a minus on the removed line, a plus on the added one.
    out.append((capsule(84, 195, 112, 195, 7), REMOVED))
    out.append((capsule(84, 259, 112, 259, 7), ADDED))
    out.append((capsule(98, 245, 98, 273, 7), ADDED))
    # The tick: the approved bytes.
    out.append((capsule(300, 392, 340, 430, 14), TICK))
    out.append((capsule(340, 430, 420, 344, 14), TICK))
    return out


def render():
    layers = shapes()
    rows = []
    for py in range(SIZE):
        row = bytearray([0])  # PNG filter type 0 (none)
        y = py + 0.5
        for px in range(SIZE):
            x = px + 0.5
            r = g = b = 0.0
            a = 0.0
            for sdf, colour in layers:
                cover = max(0.0, min(1.0, 0.5 - sdf(x, y)))
                if cover == 0.0:
                    continue
                # "Over" compositing, premultiplied.
                r = colour[0] * cover + r * (1 - cover)
                g = colour[1] * cover + g * (1 - cover)
                b = colour[2] * cover + b * (1 - cover)
                a = cover + a * (1 - cover)
            if a > 0:
                row += bytes((round(r / a), round(g / a), round(b / a), round(a * 255)))
            else:
                row += b"\0\0\0\0"
        rows.append(bytes(row))
    return b"".join(rows)


def png(raw):
    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", SIZE, SIZE, 8, 6, 0, 0, 0)  # 8-bit RGBA
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def main():
    root = Path(__file__).resolve().parent.parent
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else root / "plugins/local-llm-delegator/assets/icon.png"
    out.write_bytes(png(render()))
    print(f"wrote {out} ({SIZE}x{SIZE})")


if __name__ == "__main__":
    main()
