"""docs/brokers.md's ActiveMQ OpenWire properties name the client jars the JMS source really
needs: the class path scripts/jms-providers.sh gives and the tests run with (a jar missing from
the documented list failed to load the connection factory)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.jms_providers import classpath

BROKERS_MD = Path(__file__).resolve().parents[2] / "docs" / "brokers.md"


def test_activemq_openwire_class_path_is_the_one_the_tests_run():
    text = BROKERS_MD.read_text(encoding="utf-8")
    section = text[text.index("### ActiveMQ Classic over OpenWire"):]
    section = section[:section.index("\n### ")]
    found = re.findall(r"^jvm\.bootoptions=-Djava\.class\.path=(\S+)", section, re.MULTILINE)
    assert found == [classpath("activemq")]
