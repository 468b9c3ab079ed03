"""`python -m engine.cli`: the same as the `searchgrade` command."""

import sys

from engine.cli import main

sys.exit(main())
