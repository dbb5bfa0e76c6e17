"""Files whose names must survive a crash have their directory fsynced (gendef.durable)."""

from __future__ import annotations

import os

from msgcap.batch.driver import Outputs
from msgcap.commands.send import send_to_spool
from msgcap.pipeline import DiscardFile
from parsers.model import Message
from props.errors import MessageError


def _record_fsyncs(monkeypatch) -> list[str]:
    synced: list[str] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync",
                        lambda fd: (synced.append(os.readlink(f"/proc/self/fd/{fd}")), real(fd)))
    return synced


def test_sent_spool_files_and_their_names_are_durable(tmp_path, monkeypatch):
    synced = _record_fsyncs(monkeypatch)
    spool = tmp_path / "spool"
    assert send_to_spool(str(spool), [Message("a", {}, "x"), Message("b", {}, b"\xff")]) == 2
    names = sorted(os.listdir(spool))
    assert len(names) == 2 and all(n.endswith(".msg.json") for n in names)
    assert synced[-1] == str(spool)  # once, after every file was fsynced
    assert len(synced) == 3


def test_a_synced_discard_file_syncs_its_new_name(tmp_path, monkeypatch):
    synced = _record_fsyncs(monkeypatch)
    path = tmp_path / "rpt" / "x.dsc"
    discard = DiscardFile(str(path), sync=True)
    discard.write(Message("m", {}, "body"), MessageError("bad"))
    discard.close()
    assert synced == [str(path.parent), str(path)]


def test_batch_outputs_are_renamed_durably(tmp_path, monkeypatch):
    outputs = Outputs(str(tmp_path / "out"), ("trail",), None)
    os.makedirs(outputs.trail_dir)
    synced = _record_fsyncs(monkeypatch)
    outputs.commit(trail=True)
    assert os.path.isdir(tmp_path / "out" / "trail")
    assert synced == [str(tmp_path / "out")]
