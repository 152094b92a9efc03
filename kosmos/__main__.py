"""`python -m kosmos` runs the command line."""

from kosmos.cli import main

raise SystemExit(main())
