"""Helpers shared by the real-client tests."""


def npm_install(prefix: str, packages, timeout: float, what: str) -> None:
    """Install ``packages`` under ``prefix`` with npm (``make install`` has usually done it), or
    skip the calling test: without npm or a registry the client cannot run on this machine."""
    import os
    import shutil
    import subprocess

    import pytest
    if shutil.which("npm") is None:
        pytest.skip(f"npm is needed to install {what} (apt-get install npm)")
    os.makedirs(prefix, exist_ok=True)
    r = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--silent", "--prefix", prefix, *packages],
                       capture_output=True, text=True, timeout=timeout)
    if r.returncode:
        pytest.skip(f"{what} could not be installed (no npm registry?): {r.stderr[-300:]}")


def drain(consumer, idle_polls: int = 3, timeout: float = 1.0):
    """Every message a confluent-kafka consumer delivers until ``idle_polls`` polls come back empty."""
    out, idle = [], 0
    while idle < idle_polls:
        m = consumer.poll(timeout)
        if m is None:
            idle += 1
            continue
        assert not m.error(), m.error()
        out.append(m)
    return out
