"""The forensic story end to end: remedies on findings, the HTML report in a real browser, the damaged sample."""
import json
import os
import re

import pytest

from kafkaforensics.analyzer import AnalyzeOptions, analyze
from kafkaforensics.damaged_sample import TXN_PID, make_damaged_logdir

NOW = 1_800_000_000_000


@pytest.fixture(scope="module")
def damaged(tmp_path_factory):
    d = tmp_path_factory.mktemp("damaged")
    planted = make_damaged_logdir(str(d / "logs"))
    return str(d / "logs"), planted


def _copy(damaged, tmp_path):
    import shutil
    dst = tmp_path / "logs"
    shutil.copytree(damaged[0], dst)
    return str(dst)


def test_remedies_in_json_and_text(damaged, kfx):
    logdir, planted = damaged
    r = kfx("analyze", logdir, "--json", "--now", NOW)
    assert r.exit_code == 1
    fs = json.loads(r.stdout)["findings"]
    by_kind = {}
    for f in fs:
        assert f["remedy"], f
        by_kind.setdefault(f["kind"], []).append(f)
    hang = by_kind["hanging-transaction"][0]
    first = planted["hanging-transaction"]["firstOffset"]
    assert hang["offsetRange"][0] == first and hang["position"] is not None
    assert (f"kafka-transactions.sh --bootstrap-server HOST:PORT abort --topic payments --partition 0 "
            f"--start-offset {first}") in hang["remedy"]
    idx = by_kind["index-mismatch"][0]
    assert idx["remedy"].startswith("kfx reindex " + planted["corrupt-index"]["file"][:-len(".index")] + ".log")
    torn = by_kind["truncated-batch"][0]
    assert torn["position"] == planted["torn-tail"]["position"] and torn["offsetRange"] == [404, 404]
    assert f"kfx recover --dry-run {os.path.join(logdir, 'orders-0')}" in torn["remedy"]
    swap = [f for f in by_kind["leftover-file"] if f["file"] == planted["leftover-swap"]["file"]][0]
    assert ".swap" in swap["remedy"] and "kfx recover" in swap["remedy"]
    gap = by_kind["sequence-gap"][0]
    assert "kfx diff" in gap["remedy"] and "17 to 23" in gap["explanation"]
    text = kfx("analyze", logdir, "--now", NOW).stdout
    assert "None" not in text
    assert text.count("remedy: ") == len(fs)
    assert f"--start-offset {first}" in text.replace("\n", " ")


def test_findings_without_offsets_print_none_of_them(damaged):
    rep = analyze([damaged[0]], AnalyzeOptions(now=NOW))
    swap = [f for f in rep.findings if f.kind == "leftover-file"][0]
    assert swap.first_offset is None and swap.offsets_text() == ""
    hang = [f for f in rep.findings if f.kind == "hanging-transaction"][0]
    assert hang.offsets_text() == f"offsets {hang.first_offset}..{hang.last_offset}"
    p = [p for p in rep.partitions if p.partition == "payments-0"][0]
    assert [t["producerId"] for t in p.txns if t["state"] == "open"] == [TXN_PID]
