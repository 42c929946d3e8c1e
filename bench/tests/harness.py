"""bench/tests/harness.py: what the bench tests share: the bench modules importable without a run
(bench/run's environment stubbed, overrides on top), and checks counted into the summary line
tools/test.sh reads."""
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree (the tests set it before importing this)
BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, BENCH)
for name in ("BENCH_CONNINFO", "BENCH_RESP_PORT", "BENCH_REDIS_PORT", "BENCH_PG_PID", "BENCH_REDIS_PID", "BENCH_STATE",
             "BENCH_LOADGEN", "BENCH_NODE_DIR"):
    os.environ.setdefault(name, "0")

results = []


def check(name, ok, detail=""):
    results.append(ok)
    print(f"{'ok' if ok else 'not ok'} - {name}{'' if ok else ': ' + detail}")


def summary():
    """Prints "N passed, M failed"; the exit status."""
    passed = sum(results)
    print(f"{passed} passed, {len(results) - passed} failed")
    return 0 if passed == len(results) else 1


def table_rows(text, start):
    """The Markdown table rows of text starting with start, split into cells."""
    return [line.split(" | ") for line in text.splitlines() if line.startswith(start)]
