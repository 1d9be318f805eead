"""``python -m nx_gsm``: the ``nx-gsm`` command (:mod:`nx_gsm.cli`)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
