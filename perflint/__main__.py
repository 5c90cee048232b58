import sys

from perflint.cli import main

sys.exit(main())
