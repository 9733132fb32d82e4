"""`python -m embodied_ros.cli` (and `torchrun -m embodied_ros.cli train`): the same command line as `embodied-ros`."""

import sys

from . import main

if __name__ == "__main__":  # importing the module (e.g. walking the package) runs nothing
    sys.exit(main())
