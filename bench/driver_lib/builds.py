"""bench/driver_lib/builds.py: the tail mode's "no loss" check within one sitting (bench/run's
BENCH_BASELINE_DIR): this tree's extension and a baseline commit's, both built by bench/run, take
turns in blocks of samples (matrix.py), because this VM's figures move more between sittings than
the loss being looked for. Switching puts the other build's shared library in place of the
installed one (a rename, so running processes keep theirs) and restarts the cluster; bench/run
refuses builds whose SQL differs, so the catalog fits both. The baseline's samples carry
"build": "baseline"; the run ends with this tree's library installed again (bench/run)."""
import os
import subprocess

from driver_lib import measure, tls
from driver_lib.env import BUILDS_DIR, INSTALLED_LIBRARY, log

_state = {"build": "current"}  # bench/run installs this tree's build


def install(build):
    """Puts build's local_cache.so where PostgreSQL loads it from."""
    staged = os.path.join(os.path.dirname(INSTALLED_LIBRARY), ".local_cache.so.bench")
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    subprocess.run(sudo + ["install", "-m", "0755", os.path.join(BUILDS_DIR, build, "local_cache.so"), staged],
                   check=True)
    subprocess.run(sudo + ["mv", "-f", staged, INSTALLED_LIBRARY], check=True)


def switch(spec):
    """Runs the cluster with the build spec names (its "build", or this tree's), restarting it when
    the other one runs."""
    build = spec.get("build") or "current"
    if build == _state["build"]:
        return
    log(f"installing the {build} build's library: restarting the cluster")
    install(build)
    measure.restart_cluster()
    tls.wait_for_resp(False)
    _state["build"] = build
