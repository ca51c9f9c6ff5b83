"""`python -m codeloop`."""

from codeloop.cli import main

raise SystemExit(main())
