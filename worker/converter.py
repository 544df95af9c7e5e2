"""The payload converter: pydantic JSON, with a payload that fails validation refused by field name.

The SDK's pydantic converter raises a bare ``ValidationError`` when a payload
does not fit its type, which the worker reports as "Failed decoding arguments"
(an update), drops with a log line (a signal) or retries forever (a workflow
task). Raising a non-retryable ``ApplicationError`` instead lets Temporal carry
the message to the caller: an update is rejected naming each bad field and what
to do, before any handler runs, so nothing is written.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from temporalio.api.common.v1 import Payload
from temporalio.contrib.pydantic import PydanticJSONPlainPayloadConverter
from temporalio.converter import CompositePayloadConverter, DefaultPayloadConverter, JSONPlainPayloadConverter
from temporalio.exceptions import ApplicationError

from tenantflow.models.explain import format_validation_error


class ExplainingJSONConverter(PydanticJSONPlainPayloadConverter):
    def from_payload(self, payload: Payload, type_hint: type | None = None) -> Any:
        try:
            return super().from_payload(payload, type_hint)
        except ValidationError as exc:
            source = getattr(type_hint, "__name__", None) or str(type_hint)
            raise ApplicationError(
                format_validation_error(source, exc), type="ValidationError", non_retryable=True
            ) from None


class ExplainingPayloadConverter(CompositePayloadConverter):
    """The SDK's default converters with JSON handled by :class:`ExplainingJSONConverter`."""

    def __init__(self) -> None:
        super().__init__(
            *(
                ExplainingJSONConverter() if isinstance(c, JSONPlainPayloadConverter) else c
                for c in DefaultPayloadConverter.default_encoding_payload_converters
            )
        )
