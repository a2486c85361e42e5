"""`python -m sqlwin` is the `sqlwin` command."""

import sys

from sqlwin.cli import main

sys.exit(main())
