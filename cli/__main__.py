"""`python -m searchgrade.cli`: the same as the `searchgrade` command."""

import sys

from searchgrade.cli import main

sys.exit(main())
