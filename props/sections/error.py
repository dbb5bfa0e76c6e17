"""The ``error.*`` section (properties.md §10.4): what happens to a message that cannot be parsed."""

from __future__ import annotations

from props.reader import Reader
from props.sections.jms import broker_destination
from props.settings import ErrorSettings

_ERROR = ErrorSettings()  # the defaults of unset properties


def error_settings(r: Reader, *, jvm: bool = False) -> ErrorSettings:
    """``jvm``: a JMS provider's own client, where ``error.destination`` is a JNDI name."""
    policy = r.choice("error.policy", ("abend", "discard"), _ERROR.policy)
    destination = r.text("error.destination")
    if destination is not None and jvm:
        if policy != "discard":
            raise r.error("error.destination", "needs error.policy=discard")
    elif destination is not None:
        destination = broker_destination(r, destination, "error.destination")
        if destination.startswith("/topic/"):
            raise r.error("error.destination", "a topic keeps a message only for the "
                          "subscribers it has at that moment: use a /queue/")
        if policy != "discard":
            raise r.error("error.destination", "needs error.policy=discard")
        url = r.text("jms.url") or ""
        if not url or url.startswith("dir:"):
            raise r.error("error.destination", "needs a broker in jms.url")
    return ErrorSettings(
        policy=policy, destination=destination,
        file=r.path("error.file") or _ERROR.file)
