import sys

from quicknat.cli import main

sys.exit(main())
