"""Java-style properties, ${ENV} substitution, typed settings and value expressions."""
