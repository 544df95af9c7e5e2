"""``tenantflow doctor``: read-only probes of every assumption tenantflow makes about an estate, one module each.

:mod:`starter.doctor.report` holds the result of one check and runs them; every other module is one check (or
two of one system), named for what it checks, reading through the product's own clients in ``activities``.
Nothing here writes: only GETs (the Weka login excepted, which makes a session, not state), pod execs of
read-only commands, and ``konduktor --version``.
"""
