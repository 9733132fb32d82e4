"""`python -m embodied_ros.cli` (and `torchrun -m embodied_ros.cli train`): the same command line as `embodied-ros`."""

import sys

from . import main

sys.exit(main())
