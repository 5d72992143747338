"""The typed IR between the frontend and the lowering: ``nodes`` (the data), ``ops`` (its
operators), ``types``, ``printer`` (its text) and ``verify`` (its contract)."""
