"""Watch events of one emulated cluster: the retained history, the subscribers, and in-order delivery.

The store records an event for every committed write under its lock and delivers the pending ones
once the lock is released. The contract callers rely on::

    def on_event(event_type: str, key: ObjectKey, obj: dict) -> None: ...
    unsubscribe = store.subscribe(on_event, replay=True)

``event_type`` is ``"ADDED"``, ``"MODIFIED"`` or ``"DELETED"``; ``obj`` is the object
after the write (for DELETED, its last state) and must not be mutated. With
``replay=True`` the callback first receives ``ADDED`` for every existing object
(like an informer's initial list); ``since=<resourceVersion>`` replays the
retained history after that version instead (410 Gone if it is too old). Events
arrive in resourceVersion order, each exactly once, after the write has
committed, on the thread that made the write (or the thread already
dispatching). Callbacks must be quick and must not block on other threads; they
may write to the store (those events are delivered after the current one).
Exceptions in a callback are logged and swallowed.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from tenantflow.lab.kubeapi.clone import clone
from tenantflow.lab.kubeapi.errors import ApiError
from tenantflow.lab.kubeapi.objects import Obj, ObjectKey

log = logging.getLogger(__name__)

EventCallback = Callable[[str, ObjectKey, Obj], None]


@dataclass
class Event:
    type: str
    key: ObjectKey
    obj: Obj
    rv: int


@dataclass
class Subscriber:
    callback: EventCallback
    start_rv: int


class EventLog:
    """History and subscribers of one store, guarded by the store's re-entrant ``lock``."""

    def __init__(self, lock: threading.RLock, history: int) -> None:
        self._lock = lock
        self._history: deque[Event] = deque(maxlen=history)
        self._pending: deque[Event] = deque()
        self._subscribers: list[Subscriber] = []
        self._dispatching = False

    def subscribe(
        self,
        callback: EventCallback,
        rv: int,
        current: Callable[[], Iterable[tuple[ObjectKey, Obj]]],
        *,
        replay: bool,
        since: int | None,
    ) -> Callable[[], None]:
        """Register ``callback`` at resourceVersion ``rv`` (call with the lock held); returns its unsubscribe.

        ``replay`` first delivers ``ADDED`` for every object ``current()`` yields; ``since`` replays the
        retained history after that version instead (410 Gone if it is too old).
        """
        if since is not None and since < rv:
            oldest = self._history[0].rv if self._history else rv + 1
            if since < oldest - 1:
                raise ApiError(410, "Expired", f"too old resource version: {since} ({oldest - 1})")
            for event in self._history:
                if event.rv > since:
                    callback(event.type, event.key, event.obj)
        elif replay:
            for key, obj in current():
                callback("ADDED", key, obj)
        sub = Subscriber(callback, rv)
        self._subscribers.append(sub)

        def unsubscribe() -> None:
            with self._lock:
                if sub in self._subscribers:
                    self._subscribers.remove(sub)

        return unsubscribe

    def emit(self, event_type: str, key: ObjectKey, obj: Obj, rv: int) -> None:
        """Record an event of a committed write (call with the lock held)."""
        event = Event(event_type, key, clone(obj), rv)
        self._history.append(event)
        self._pending.append(event)

    def drain(self) -> None:
        """Deliver pending events (call without the lock; a no-op while another thread dispatches)."""
        with self._lock:
            if self._dispatching:
                return
            self._dispatching = True
        while True:
            with self._lock:
                if not self._pending:
                    self._dispatching = False
                    return
                event = self._pending.popleft()
                subscribers = list(self._subscribers)
            for sub in subscribers:
                if event.rv <= sub.start_rv:
                    continue
                try:
                    sub.callback(event.type, event.key, event.obj)
                except Exception:
                    log.exception("store subscriber failed on %s %s", event.type, event.key)
