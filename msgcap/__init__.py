"""msgcap: JMS/STOMP change-message capture into GoldenGate trail files."""

__version__ = "0.1.0"
