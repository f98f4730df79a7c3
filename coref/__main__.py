import sys

from coref.cli import main

sys.exit(main())
