"""Pydantic v2 models and the step catalogue, no I/O: contracts, plans, gate payloads, results, runbook steps.

Everything that crosses a workflow boundary (inputs, activity arguments and
results, update and signal payloads, query answers) is defined here so that it
has one JSON Schema, shared by the worker, the CLI and other services. The
catalogue (``runbook.py``, the enrollment runs' steps in ``enrollment_steps.py``, each a ``step.Step``) names
every activity with its input and result types.
"""
