"""bench/report_lib/flamegraph.py: an SVG flame graph from folded stacks ({"root;...;leaf": samples},
bench/driver_lib/profile.py's): one box per frame, as wide as its samples, children above their
parent in name order; kernel frames (marked " [k]") orange, the rest by object (ours blue,
PostgreSQL's green, libraries yellow). Each box's tooltip has the frame's samples and share."""
from html import escape

WIDTH = 1200
ROW = 16
MIN_WIDTH = 0.5  # pixels: narrower boxes are left out (their samples stay in the parent)


def tree(stacks):
    root = {"name": "all", "value": 0, "children": {}}
    for key, n in stacks.items():
        node = root
        node["value"] += n
        for frame in key.split(";"):
            node = node["children"].setdefault(frame, {"name": frame, "value": 0, "children": {}})
            node["value"] += n
    return root


def depth(node):
    return 1 + max((depth(c) for c in node["children"].values()), default=0)


def color(name):
    if name.endswith(" [k]"):
        return "#f0a868"
    if "local_cache" in name or name.startswith("[local_cache"):
        return "#7ea6e0"
    if name.startswith("[") or "uv_" in name or name.startswith("__") or name in ("read", "write", "epoll_wait"):
        return "#e8d870"
    return "#9fd49f"


def flame_svg(stacks, title):
    """The SVG document (a string)."""
    root = tree(stacks)
    total = root["value"] or 1
    rows = depth(root)
    height = (rows + 2) * ROW
    scale = WIDTH / total
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
           f'font-family="monospace" font-size="11">',
           f'<text x="4" y="{ROW - 4}" font-size="13">{escape(title)} ({total} samples)</text>']

    def draw(node, x, level):
        w = node["value"] * scale
        if w < MIN_WIDTH:
            return
        y = height - (level + 1) * ROW
        share = 100.0 * node["value"] / total
        label = escape(node["name"])
        out.append(f'<g><title>{label}: {node["value"]} samples, {share:.1f} %</title>'
                   f'<rect x="{x:.2f}" y="{y}" width="{max(w - 0.5, 0.1):.2f}" height="{ROW - 1}" '
                   f'fill="{color(node["name"])}"/>')
        chars = int((w - 4) / 6.6)
        if chars >= 3:
            text = node["name"] if len(node["name"]) <= chars else node["name"][:chars - 2] + ".."
            out.append(f'<text x="{x + 2:.2f}" y="{y + ROW - 4}">{escape(text)}</text>')
        out.append("</g>")
        cx = x
        for child in sorted(node["children"].values(), key=lambda c: c["name"]):
            draw(child, cx, level + 1)
            cx += child["value"] * scale

    draw(root, 0.0, 0)
    out.append("</svg>")
    return "\n".join(out) + "\n"
