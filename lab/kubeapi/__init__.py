"""Kubernetes API emulator of the lab: a stateful in-memory apiserver over real HTTP.

Import from the modules themselves: the package imports nothing, so that a process needing one small module (the
konduktor stand-in's media types) does not load the whole server. See :mod:`lab.kubeapi.store` for the store (and
its dump/restore across a lab restart), :mod:`lab.kubeapi.events` for the subscription contract and
:mod:`lab.kubeapi.server` for the HTTP app.
"""
