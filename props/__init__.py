"""Java-style properties, ${ENV} substitution, typed settings and value expressions."""

from props.settings import Settings, load_settings, settings_from_text

__all__ = ["Settings", "load_settings", "settings_from_text"]
