"""Java-style properties, ${ENV} substitution, typed settings and value expressions."""

from props.loader import load_settings, settings_from_text
from props.settings import Settings

__all__ = ["Settings", "load_settings", "settings_from_text"]
