"""``python -m tenantflow.lab.konduktor``: the lab's konduktor stand-in. ``--version`` alone is answered before the
stand-in's client libraries load (a second, not three, on a busy machine), as a CLI's eager version option is."""

import sys

from tenantflow.lab.konduktor.facts import VERSION

if sys.argv[1:] == ["--version"]:
    print(VERSION)
else:
    from tenantflow.lab.konduktor.cli import main

    main()
