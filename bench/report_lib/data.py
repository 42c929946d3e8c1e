"""bench/report_lib/data.py: loading and aggregation: the samples of a bench/run document grouped
by what they measured (Data), medians and ratios, and how numbers are printed."""
import json
import statistics
import sys


def die(msg):
    print(f"bench/report: {msg}", file=sys.stderr)
    sys.exit(1)


def med(xs):
    return statistics.median(xs) if xs else None


def fmt(x, digits=0):
    if x is None:
        return "–"
    if digits == 0:
        return f"{x:,.0f}"
    return f"{x:,.{digits}f}"


def fmt_range(xs, digits=0):
    if not xs:
        return "–"
    m = fmt(med(xs), digits)
    if len(xs) == 1:
        return m
    return f"{m} ({fmt(min(xs), digits)}–{fmt(max(xs), digits)})"


# the paths whose parameters are key arrays, sent as text or binary (a sample's "params", default text)
PARAM_PATHS = {"sql", "mget", "mget_json", "fdw", "parse"}


class Data:
    """The samples of one key type (bench/loadgen --keys; documents without the field: int) whose
    SQL paths send their key arrays in the format params ("params"; documents without it: text),
    measured on one build: this tree's (build None), or a tail run's baseline ("baseline")."""

    def __init__(self, doc, keys="int", params="text", build=None):
        self.doc = doc
        self.groups = {}
        for s in doc["samples"]:
            if s.get("keys", "int") != keys or s.get("build") != build:
                continue
            if s["path"] in PARAM_PATHS and s.get("params", "text") != params:
                continue
            key = (s["mode"], s["client"], s["path"], s.get("variant"), s["connections"], s["batch"],
                   s.get("pipeline", 1))
            self.groups.setdefault(key, []).append(s)

    def get(self, mode, client, path, conns, batch, variant=None, pipeline=1):
        return self.groups.get((mode, client, path, variant, conns, batch, pipeline), [])

    def pipelines(self):
        return sorted({k[6] for k in self.groups})

    def values(self, field, *args, **kw):
        out = []
        for s in self.get(*args, **kw):
            v = s
            for part in field.split("."):
                v = v.get(part) if isinstance(v, dict) else None
            if v is not None:
                out.append(v)
        return out

    def median(self, field, *args, **kw):
        return med(self.values(field, *args, **kw))


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def judged(r, goal, higher=True, digits=2):
    """A ratio against its target, as a cell: the value with ✓ or ✗ ("–" without a value)."""
    if r is None:
        return "–"
    return f"{r:.{digits}f} " + ("✓" if (r >= goal if higher else r <= goal) else "✗")


def section_start(title, doc, src, run):
    """The heading of a section measured by a run of its own (bench/run RUN, document src) and the
    line saying which run: its command, when, which commit, how long each sample (when it has samples)."""
    g = doc.get("git", {})
    return [f"## {title}", "",
            f"From `{src}`: `{doc.get('command') or 'bench/run ' + run}`, run from {doc['started_at']} to "
            f"{doc.get('finished_at', '?')}, local_cache git {g.get('head')}"
            f"{' (working tree modified)' if g.get('dirty') else ''}"
            + (f"; each sample {doc['config']['duration_seconds']:g} s." if "duration_seconds" in doc["config"] else "."),
            ""]


def change(a, b):
    if a is None or b is None or a == 0:
        return None
    return (b - a) / a * 100


def fmt_pct(x):
    return "–" if x is None else f"{x:+.0f} %"


def fmt_us(x):
    if x is None:
        return "–"
    return f"{x / 1000:,.1f} ms" if x >= 10000 else f"{x:,.0f} µs"


def load(path):
    """The JSON document of a bench/run result (callers refuse the partial ones, each in its words)."""
    with open(path) as f:
        return json.load(f)
