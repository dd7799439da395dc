"""`python -m funchost ...` is the `funchost` command."""

import sys

from funchost.cli import main

sys.exit(main())
