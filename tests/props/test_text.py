"""Outside text made printable (props.text): escaped, bounded with its size, URLs redacted; and
the two places that apply it to everything: every MsgcapError and every log line."""

from __future__ import annotations

from props.errors import MessageError, PropertyError, SourceError
from props.loader import settings_from_text
from props.text import LINE_CHARS, VALUE_CHARS, escape, quoted, redact_urls, shown

FORGED = "0001\n2026-11-23 10:00:00 ERROR msgcap.run: FORGED LINE\x1b[31m.msg"


def _printable(text: str) -> bool:
    return not any(ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f or c in "\u2028\u2029\u202e"
                   for c in text)


def test_control_characters_become_escapes() -> None:
    assert escape("a\nb\rc\td\x1b[31m\x00\x7f\x85\u2028\u202e") == (
        "a\\nb\\rc\\td\\x1b[31m\\x00\\x7f\\x85\\u2028\\u202e")
    assert escape("plain ü text") == "plain ü text"


def test_long_text_is_cut_to_the_limit_and_states_its_size() -> None:
    text = shown("y" * 50_000_000)
    assert len(text) == VALUE_CHARS and text.endswith("… (50000000 characters)")
    assert shown(b"\xff" * 1000).endswith("… (1000 bytes)")
    assert shown(b"ok\xff") == "ok\\xff"
    assert quoted("a'b") == "'a'b'"


def test_shown_is_idempotent() -> None:
    for text in ("short", FORGED, "z" * 10_000, "\x1b" * 500):
        once = shown(text)
        assert shown(once) == once and _printable(once)


def test_user_information_of_urls_is_redacted() -> None:
    assert redact_urls("stomp://user:SE@CRET@mq1:61613,stomp://mq2:61613") == (
        "stomp://***@mq1:61613,stomp://mq2:61613")
    assert redact_urls("see stomp+ssl://u@h:1/x and http://a:b@c/") == (
        "see stomp+ssl://***@h:1/x and http://***@c/")
    assert redact_urls("mail me@example.com") == "mail me@example.com"


def test_every_error_line_is_printable_and_bounded() -> None:
    error = MessageError("value " + quoted("v" * 5_000_000) + " is not a number",
                         source=FORGED, position="field\nX")
    text = str(error)
    assert _printable(text) and len(text) < LINE_CHARS
    assert "(5000000 characters)" in text and "\\n2026-11-23" in text
    assert _printable(error.source) and error.position == "field\\nX"
    assert "SECRET" not in str(SourceError("refused", url="stomp://u:SECRET@h:1"))


def test_a_url_with_user_information_is_refused_without_showing_it() -> None:
    text = "parser.type=delim\ndelim.header=a\ndelim.sourcedefs=x\njms.destination=q\n"
    try:
        settings_from_text(text + "jms.url=stomp://user:SECRET@mq:61613\n", "p.properties")
    except PropertyError as exc:
        message = str(exc)
    assert message.startswith("p.properties:5: jms.url: ")
    assert "SECRET" not in message and "user information" in message and "***@mq" in message


def test_msgcap_send_never_prints_the_secret_of_a_url(tmp_path, capsys) -> None:
    from msgcap.cli import main

    prop = tmp_path / "p.properties"
    prop.write_text("parser.type=delim\ndelim.header=a\ndelim.sourcedefs=x\n"
                    "jms.destination=q\njms.url=stomp://user:SECRET@mq:61613\n")
    (tmp_path / "in.jsonl").write_text('{"id": "1", "body": "x"}\n')
    assert main(["send", "--prop", str(prop), str(tmp_path / "in.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "SECRET" not in err and "stomp://***@mq:61613" in err
