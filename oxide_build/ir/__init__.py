"""The typed kernel IR: a structured tree of typed statements and expressions."""
