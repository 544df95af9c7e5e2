"""``python -m tenantflow.lab.konduktor``: the lab's konduktor stand-in. ``--version`` and ``--help`` are answered
before the stand-in's client libraries load (a second of CPU each, and tenantflow reads both before every bootstrap),
as a CLI's eager options are."""

import sys

from tenantflow.lab.konduktor.args import parser

if {"--version", "--help", "-h"} & set(sys.argv[1:]):
    parser().parse_args()
else:
    from tenantflow.lab.konduktor.cli import main

    main()
