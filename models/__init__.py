"""Pydantic v2 models only, no I/O: contracts, plans, gate payloads and results.

Everything that crosses a workflow boundary (inputs, activity arguments and
results, update and signal payloads, query answers) is defined here so that it
has one JSON Schema, shared by the worker, the CLI and other services.
"""
