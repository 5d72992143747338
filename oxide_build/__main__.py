"""``python -m oxide_build``: the ``oxide`` command."""
from __future__ import annotations

from oxide_build.cli import main

raise SystemExit(main())
