"""gg.log.level / gg.log.file handling shared by gendef and the msgcap commands."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from gendef.logsetup import configure_logging
from props.errors import PropertyError
from props.settings import LogSettings, Settings, TrailSettings

pytestmark = pytest.mark.usefixtures("restore_logging")


def _settings(level: str = "INFO", file: str | None = None) -> Settings:
    return Settings(file="p.properties", log=LogSettings(level=level, file=file),
                    trail=TrailSettings(extract="JMSVAM"), lines={"gg.log.file": 5})


def test_stderr_at_the_configured_level(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(_settings("DEBUG"), command="gendef", log_to_file=False)
    logging.getLogger("gendef.x").debug("deep detail")
    logging.getLogger("parsers").warning("careful")
    err = capsys.readouterr().err
    assert "gendef: DEBUG: deep detail" in err
    assert "gendef: WARNING: careful" in err


@pytest.mark.parametrize(("level", "shown"), [("WARN", False), ("INFO", True), ("trace", True)])
def test_level_names(capsys: pytest.CaptureFixture[str], level: str, shown: bool) -> None:
    configure_logging(_settings(level), command="msgcap", log_to_file=False)
    logging.getLogger("msgcap").info("started")
    assert ("started" in capsys.readouterr().err) is shown


def test_default_is_info_and_reconfiguring_does_not_duplicate(
        capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(None, command="gendef", log_to_file=False)
    configure_logging(None, command="gendef", log_to_file=False)
    logging.getLogger("gendef").info("once")
    logging.getLogger("gendef").debug("hidden")
    assert capsys.readouterr().err.count("once") == 1


def test_other_libraries_only_warn(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(_settings("DEBUG"), command="msgcap", log_to_file=False)
    logging.getLogger("stomp.py").info("chatter")
    logging.getLogger("stomp.py").warning("trouble")
    err = capsys.readouterr().err
    assert "chatter" not in err and "trouble" in err


def test_log_file_default_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    configure_logging(_settings("INFO"), command="msgcap run", log_to_file=True)
    logging.getLogger("msgcap.run").info("capture started")
    logging.getLogger("msgcap.run").error("broker gone")
    for h in logging.getLogger().handlers:
        h.flush()
    text = (tmp_path / "dirrpt" / "JMSVAM.log").read_text()
    assert "INFO" in text and "msgcap.run: capture started" in text and "broker gone" in text
    assert text.split(" ", 1)[0].count("-") == 2  # starts with a UTC date
    err = capsys.readouterr().err
    assert "capture started" not in err and "broker gone" in err


def test_log_file_property(tmp_path: Path) -> None:
    target = tmp_path / "logs" / "x.log"
    configure_logging(_settings("DEBUG", str(target)), command="msgcap", log_to_file=True)
    logging.getLogger("msgcap").debug("fine")
    for h in logging.getLogger().handlers:
        h.flush()
    assert "fine" in target.read_text()


def test_unopenable_log_file(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(PropertyError, match=r"^p.properties:5: gg.log.file: cannot open"):
        configure_logging(_settings("INFO", str(blocker / "x.log")), command="msgcap",
                          log_to_file=True)


def test_log_lines_cannot_be_forged(capsys: pytest.CaptureFixture[str]) -> None:
    """A name from outside with a newline and an ANSI escape stays on its line, escaped."""
    configure_logging(None, command="msgcap test", log_to_file=False)
    forged = "0001\n2026-11-23 10:00:00 ERROR msgcap.run: FORGED LINE\x1b[31m.msg"
    logging.getLogger("msgcap.test").warning("message %s: duplicate", forged)
    logging.getLogger("msgcap.test").warning("value %s", "w" * 100_000)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and not any("\x1b" in line for line in lines)
    assert lines[0] == ("msgcap test: WARNING: message 0001\\n2026-11-23 10:00:00 ERROR "
                        "msgcap.run: FORGED LINE\\x1b[31m.msg: duplicate")
    assert len(lines[1]) < 2100 and lines[1].endswith("… (100006 characters)")
